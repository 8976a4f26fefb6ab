// SPDX-License-Identifier: MIT
// rofctl tenant list|show|create|delete|destroy.
//
// The API has no call that creates a tenant: tenants are what the policy
// files say (docs/policy.md).  `create` writes a validated
// tenants.d/NAME.toml and `delete` removes one, each followed by
// ReloadPolicy, which rofd applies atomically; a reload that fails undoes
// the file change.  A tenant removed from policy is destroyed by rofd
// when its last session closes or after [limits] tenant_removal_grace_ms;
// `destroy` (DestroyTenant), or `delete --grace MS`, sets that wait.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "commands.h"
#include "policy.h"

namespace rofctl {

std::string default_config_dir() {
    const char* env = std::getenv("ROF_CONFIG_DIR");
    return env != nullptr && *env != '\0' ? env : "/etc/rof";
}

namespace {

namespace fs = std::filesystem;

struct TenantOpts {
    std::string name;
    std::vector<std::uint32_t> uids, gids;
    std::vector<std::string> subjects, quota;
    std::string config_dir = default_config_dir();
    bool no_reload = false;
    std::optional<std::int64_t> grace_ms;  // --grace
    std::string output;                    // list -o
};

// The text of tenants.d/NAME.toml for @o.
std::string tenant_toml(const TenantOpts& o) {
    std::string t = "# written by rofctl tenant create\nname = \"" + o.name + "\"\n\n[identity]\n";
    auto list = [&t](const char* key, const auto& v, bool quote) {
        if (v.empty()) {
            return;
        }
        t += std::string(key) + " = [";
        for (std::size_t i = 0; i < v.size(); i++) {
            std::string item;
            if constexpr (std::is_same_v<std::decay_t<decltype(v[i])>, std::string>) {
                item = v[i];
            } else {
                item = std::to_string(v[i]);
            }
            t += (i ? ", " : "") + (quote ? "\"" + item + "\"" : item);
        }
        t += "]\n";
    };
    list("uids", o.uids, false);
    list("gids", o.gids, false);
    list("subjects", o.subjects, true);
    if (!o.quota.empty()) {
        t += "\n[quota]\n";
        for (const std::string& kv : o.quota) {
            const auto eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                throw UsageError("--quota \"" + kv + "\": want KEY=VALUE");
            }
            const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
            const bool digits =
                !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
            t += key + " = " + (digits ? value : "\"" + value + "\"") + "\n";
        }
    }
    return t;
}

// Validates the policy of @dir as it would be with @changed (file path ->
// text; an empty text leaves the file out).  rof::Error(invalid_argument)
// with every "file:line:col: message" when it is not valid.
void validate(const std::string& dir, const std::map<std::string, std::string>& changed) {
    const std::string daemon_file = dir + "/rofd.toml";
    std::string daemon_text;
    if (fs::exists(daemon_file)) {
        daemon_text = read_file(daemon_file);
    }
    std::vector<std::pair<std::string, std::string>> tenants;
    const fs::path tdir = fs::path(dir) / "tenants.d";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tdir, ec)) {
        const std::string p = e.path().string();
        if (e.path().extension() == ".toml" && !changed.contains(p)) {
            tenants.emplace_back(p, read_file(p));
        }
    }
    for (const auto& [p, text] : changed) {
        if (!text.empty()) {
            tenants.emplace_back(p, text);
        }
    }
    const auto r = rof::policy::parse(daemon_text, daemon_file, tenants);
    if (!r.errors.empty()) {
        std::string msg = "the policy would not be valid:";
        for (const auto& d : r.errors) {
            msg += "\n" + d.str();
        }
        throw rof::Error(rof::Code::invalid_argument, msg);
    }
}

std::string tenant_file(const std::string& dir, const std::string& name) {
    if (auto why = rof::policy::name_error(name)) {
        throw UsageError("tenant name: " + *why);
    }
    return dir + "/tenants.d/" + name + ".toml";
}

int reload_and_print(Context& ctx, const std::function<void()>& undo) {
    rof::v1::ReloadPolicyResponse resp;
    try {
        resp = ctx.client().reload_policy();
    } catch (const rof::Error& e) {
        undo();
        throw rof::Error(e.code(), std::string(e.what()) + " (the file change was undone)");
    }
    ctx.printer.print(resp);
    return exit_ok;
}

int create(Context& ctx, const TenantOpts& o) {
    if (o.uids.empty() && o.gids.empty() && o.subjects.empty()) {
        throw UsageError("tenant create: give at least one --uid, --gid or --subject");
    }
    const std::string path = tenant_file(o.config_dir, o.name);
    if (fs::exists(path)) {
        throw rof::Error(rof::Code::already_exists, path + " exists: not overwritten");
    }
    const std::string text = tenant_toml(o);
    validate(o.config_dir, {{path, text}});

    fs::create_directories(fs::path(path).parent_path());
    const std::string tmp = o.config_dir + "/tenants.d/." + o.name + ".toml.tmp";
    {
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            throw std::runtime_error(tmp + ": " + std::strerror(errno));
        }
        const bool ok =
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
        ::close(fd);
        if (!ok) {
            ::unlink(tmp.c_str());
            throw std::runtime_error(tmp + ": write failed");
        }
    }
    // link() fails on an existing target: never overwrites, even racing.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        if (err == EEXIST) {
            throw rof::Error(rof::Code::already_exists, path + " exists: not overwritten");
        }
        throw std::runtime_error(path + ": " + std::strerror(err));
    }
    ::unlink(tmp.c_str());
    ctx.printer.text("wrote " + path);
    if (o.no_reload) {
        ctx.printer.print(rof::v1::ReloadPolicyResponse{});
        return exit_ok;
    }
    return reload_and_print(ctx, [&path] { ::unlink(path.c_str()); });
}

int destroy(Context& ctx, const std::string& name, std::int64_t grace_ms) {
    rof::v1::DestroyTenantRequest req;
    req.set_name(name);
    req.set_grace_ms(grace_ms);
    ctx.printer.print(ctx.client().destroy_tenant(req));
    return exit_ok;
}

int remove(Context& ctx, const TenantOpts& o) {
    const std::string path = tenant_file(o.config_dir, o.name);
    if (!fs::exists(path)) {
        throw rof::Error(rof::Code::not_found, "tenant \"" + o.name + "\": no file " + path);
    }
    validate(o.config_dir, {{path, ""}});
    const std::string aside = o.config_dir + "/tenants.d/." + o.name + ".toml.deleted";
    fs::rename(path, aside);
    ctx.printer.text("removed " + path);
    if (o.no_reload) {
        fs::remove(aside);
        ctx.printer.print(rof::v1::ReloadPolicyResponse{});
        return exit_ok;
    }
    const int rc = reload_and_print(ctx, [&] { fs::rename(aside, path); });
    fs::remove(aside);
    if (rc != exit_ok || !o.grace_ms) {
        return rc;
    }
    try {
        return destroy(ctx, o.name, *o.grace_ms);
    } catch (const rof::Error& e) {
        if (e.code() == rof::Code::not_found) {
            // The reload destroyed it already: it had no session left.
            ctx.printer.text("tenant \"" + o.name + "\": destroyed by the reload");
            return exit_ok;
        }
        throw;
    }
}

}  // namespace

void add_tenant_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("tenant", "tenants (declared by policy files)");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<TenantOpts>();

    auto* list = obj->add_subcommand("list", "list tenants with quota, usage and counters");
    add_output_option(*list, o->output);
    list->callback([&selected, o] {
        selected = [o](Context& ctx) {
            ctx.printer.set_wide(o->output == "wide");
            ctx.printer.print(ctx.client().list_tenants());
            return exit_ok;
        };
    });

    auto* show = obj->add_subcommand("show", "one tenant (default: the caller's own)");
    show->add_option("name", o->name, "tenant name");
    show->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::GetTenantRequest req;
            req.set_name(o->name);
            ctx.printer.print(ctx.client().get_tenant(req));
            return exit_ok;
        };
    });

    auto* create_cmd = obj->add_subcommand(
        "create",
        "write a new tenants.d/NAME.toml, validated, then ReloadPolicy (there is no "
        "create call: tenants are policy files)");
    create_cmd->add_option("name", o->name, "tenant name")->required();
    create_cmd->add_option("--uid", o->uids, "a uid of the tenant (repeatable)");
    create_cmd->add_option("--gid", o->gids, "a gid of the tenant (repeatable)");
    create_cmd->add_option("--subject", o->subjects, "a TLS certificate subject (repeatable)");
    create_cmd->add_option("--quota", o->quota,
                           "KEY=VALUE of [quota]: region_bytes, regions, sessions, programs, "
                           "credits (repeatable)");
    create_cmd->add_option("--config-dir", o->config_dir,
                           "policy directory (default: $ROF_CONFIG_DIR, else /etc/rof)");
    create_cmd->add_flag("--no-reload", o->no_reload, "write the file only");
    create_cmd->callback(
        [&selected, o] { selected = [o](Context& ctx) { return create(ctx, *o); }; });

    auto* del = obj->add_subcommand(
        "delete", "remove tenants.d/NAME.toml, then ReloadPolicy (undone if the reload fails)");
    del->add_option("name", o->name, "tenant name")->required();
    del->add_option("--config-dir", o->config_dir,
                    "policy directory (default: $ROF_CONFIG_DIR, else /etc/rof)");
    del->add_flag("--no-reload", o->no_reload, "remove the file only");
    del->add_option("--grace", o->grace_ms,
                    "then DestroyTenant: destroy it after MS at the latest (0: now) instead of "
                    "[limits] tenant_removal_grace_ms")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{ROF_REMOVAL_GRACE_MAX_MS}))
        ->excludes("--no-reload");
    del->callback([&selected, o] { selected = [o](Context& ctx) { return remove(ctx, *o); }; });

    auto* destroy_cmd = obj->add_subcommand(
        "destroy",
        "DestroyTenant: destroy a tenant removed from policy (delete it first) after MS at the "
        "latest, closing its sessions");
    destroy_cmd->add_option("name", o->name, "tenant name")->required();
    destroy_cmd->add_option("--grace", o->grace_ms, "wait at most MS for its sessions (default 0)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{ROF_REMOVAL_GRACE_MAX_MS}));
    destroy_cmd->callback([&selected, o] {
        selected = [o](Context& ctx) { return destroy(ctx, o->name, o->grace_ms.value_or(0)); };
    });
}

}  // namespace rofctl
