// SPDX-License-Identifier: MIT
// rofctl policy check|reload|show.  `check` uses rof_policy, rofd's own
// parser and validator, with no server.
#include "policy.h"

#include <filesystem>
#include <map>

#include "commands.h"

namespace rofctl {
namespace {

namespace fs = std::filesystem;

struct PolicyOpts {
    std::vector<std::string> paths;
    std::string config_dir = default_config_dir();
};

bool is_daemon_file(const fs::path& p) {
    return p.extension() == ".toml" && p.stem().string().starts_with("rofd");
}

// The files to check as one policy: (daemon file, its text) and tenant
// files by path; context from @config_dir for what @paths leave out.
rof::policy::LoadResult check_paths(const PolicyOpts& o, std::vector<std::string>& checked) {
    if (o.paths.empty() || (o.paths.size() == 1 && fs::is_directory(o.paths[0]))) {
        const std::string dir = o.paths.empty() ? o.config_dir : o.paths[0];
        checked.push_back(dir);
        return rof::policy::load(dir + "/rofd.toml", dir + "/tenants.d");
    }
    std::string daemon_file, daemon_text;
    std::map<std::string, std::pair<std::string, std::string>> tenants;  // stem -> file, text
    for (const std::string& p : o.paths) {
        if (fs::is_directory(p)) {
            throw UsageError(p + ": a directory is checked on its own, give no other files");
        }
        if (is_daemon_file(p)) {
            if (!daemon_file.empty()) {
                throw UsageError("two daemon files: " + daemon_file + ", " + p);
            }
            daemon_file = p;
            daemon_text = read_file(p);
        } else {
            tenants[fs::path(p).stem().string()] = {p, read_file(p)};
        }
        checked.push_back(p);
    }
    // Context: the daemon file and the other tenants of --config-dir, since
    // identities and grants span tenants.
    const fs::path dir = o.config_dir;
    if (daemon_file.empty()) {
        daemon_file = (dir / "rofd.toml").string();
        std::error_code ec;
        if (fs::exists(daemon_file, ec)) {
            daemon_text = read_file(daemon_file);
        }
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "tenants.d", ec)) {
        if (e.path().extension() == ".toml" && !tenants.contains(e.path().stem().string())) {
            tenants[e.path().stem().string()] = {e.path().string(), read_file(e.path().string())};
        }
    }
    std::vector<std::pair<std::string, std::string>> list;
    list.reserve(tenants.size());
    for (auto& [stem, ft] : tenants) {
        list.push_back(ft);
    }
    return rof::policy::parse(daemon_text, daemon_file, list);
}

int check(Context& ctx, const PolicyOpts& o) {
    std::vector<std::string> checked;
    const auto r = check_paths(o, checked);
    Json tree = Json::object();
    tree["ok"] = r.errors.empty();
    tree["files"] = checked;
    tree["errors"] = Json::array();
    for (const auto& d : r.errors) {
        tree["errors"].push_back(d.str());
        ctx.printer.text(d.str());
    }
    if (ctx.printer.json()) {
        ctx.printer.print(tree);
    } else if (r.errors.empty()) {
        ctx.printer.text("ok: " + std::to_string(r.policy->tenants.size()) + " tenants");
    } else {
        ctx.printer.text(std::to_string(r.errors.size()) + " errors");
    }
    return r.errors.empty() ? exit_ok : exit_check_failed;
}

}  // namespace

void add_policy_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("policy", "the policy files rofd runs with");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<PolicyOpts>();

    auto* chk = obj->add_subcommand(
        "check",
        "validate policy files with rofd's own parser, no server needed; exit 0 when valid, 9 "
        "with one \"file:line:col: key: reason\" per error");
    chk->add_option("files", o->paths,
                    "a policy directory, or files: rofd*.toml is the daemon file, others tenant "
                    "files (default: --config-dir)");
    chk->add_option("--config-dir", o->config_dir,
                    "what FILEs are checked with: its rofd.toml and other tenants (default: "
                    "$ROF_CONFIG_DIR, else /etc/rof)");
    chk->callback([&selected, o] { selected = [o](Context& ctx) { return check(ctx, *o); }; });

    obj->add_subcommand("reload", "re-read the policy files now, as SIGHUP does (admin)")
        ->callback([&selected] {
            selected = [](Context& ctx) {
                ctx.printer.print(ctx.client().reload_policy());
                return exit_ok;
            };
        });
    obj->add_subcommand("show", "the files of the running policy and its generation (admin)")
        ->callback([&selected] {
            selected = [](Context& ctx) {
                ctx.printer.print(ctx.client().get_policy());
                return exit_ok;
            };
        });
}

}  // namespace rofctl
