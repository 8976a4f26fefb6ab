// SPDX-License-Identifier: MIT
#include "rofctl.h"

#include <string_view>

namespace rofctl {
namespace {

std::string names_of(const CLI::App& app) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!names.empty()) {
            names += ", ";
        }
        names += sub->get_name();
    }
    return names;
}

// An option of @app or, through fallthrough, of a parent.
const CLI::Option* find_option(const CLI::App* app, const std::string& name) {
    for (; app != nullptr; app = app->get_parent()) {
        if (const CLI::Option* o = app->get_option_no_throw(name)) {
            return o;
        }
    }
    return nullptr;
}

bool takes_value(const CLI::Option* o) {
    return o != nullptr && o->get_expected_max() > 0 && o->get_type_size_max() > 0;
}

// The deepest subcommand the parse selected.
const CLI::App* selected_leaf(const CLI::App& app) {
    const CLI::App* at = &app;
    for (;;) {
        const auto subs = at->get_subcommands();
        if (subs.empty()) {
            return at;
        }
        at = subs.front();
    }
}

std::string command_path(const CLI::App* app) {
    std::string path;
    for (; app != nullptr && app->get_parent() != nullptr; app = app->get_parent()) {
        path = app->get_name() + (path.empty() ? "" : " " + path);
    }
    return path;
}

// CLI11's messages, except where naming the objects or verbs helps more.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App* leaf = selected_leaf(app);
    const std::vector<std::string> extras = app.remaining(true);
    if (!leaf->get_subcommands({}).empty() && !extras.empty() && !extras[0].starts_with("-")) {
        if (leaf == &app) {
            return "unknown object \"" + extras[0] + "\" (objects: " + names_of(app) + ")";
        }
        return "unknown verb \"" + extras[0] + "\" for " + command_path(leaf) +
               " (verbs: " + names_of(*leaf) + ")";
    }
    return e.what();
}

}  // namespace

std::vector<std::string> expand_prefixes(const CLI::App& app, std::vector<std::string> args,
                                         std::string* ambiguous) {
    const CLI::App* at = &app;
    for (std::size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        if (a == "--") {
            break;
        }
        if (a.size() > 1 && a[0] == '-') {
            if (a.find('=') != std::string::npos) {
                continue;
            }
            // "--name VALUE", "-n VALUE"; "-nVALUE" and flag clusters carry no
            // separate value.
            const bool is_long = a.starts_with("--");
            if ((is_long || a.size() == 2) && takes_value(find_option(at, a))) {
                i++;
            }
            continue;
        }
        const auto subs = at->get_subcommands({});
        if (subs.empty()) {
            break;  // positionals of a verb from here on
        }
        std::vector<const CLI::App*> found;
        for (const CLI::App* s : subs) {
            if (s->get_name() == a) {
                found = {s};
                break;
            }
            // `top` is typed whole (three letters): no prefix expands to
            // it, so `t` stays `tenant`, as it was before top existed.
            if (s->get_name().starts_with(a) && s->get_name() != "top") {
                found.push_back(s);
            }
        }
        if (found.empty()) {
            break;  // CLI11 names the unknown word
        }
        if (found.size() > 1) {
            std::string names;
            for (const CLI::App* s : found) {
                names += (names.empty() ? "" : ", ") + s->get_name();
            }
            const std::string msg = "ambiguous " + std::string(at == &app ? "object" : "verb") +
                                    " \"" + a + "\": " + names;
            if (ambiguous == nullptr) {
                throw UsageError(msg);
            }
            *ambiguous = msg;  // reported after the parse, which knows -j
            break;
        }
        args[i] = found.front()->get_name();
        at = found.front();
    }
    return args;
}

void build_app(CLI::App& app, Globals& g, Handler& selected) {
    // Global options are accepted after the object and verb too.
    app.fallthrough();
    app.require_subcommand(0, 1);
    app.add_option("--socket", g.socket,
                   "rofd's unix socket (default: $ROF_SOCKET, else /run/rof/rofd.sock)");
    app.add_option("--connect", g.connect, "rofd's TLS listener HOST:PORT instead of the socket");
    app.add_option("--tls-ca", g.tls_ca, "with --connect: CA certificate (PEM) of rofd");
    app.add_option("--tls-cert", g.tls_cert, "with --connect: this client's certificate (PEM)");
    app.add_option("--tls-key", g.tls_key, "with --connect: this client's key (PEM)");
    app.add_option("--timeout", g.timeout_ms, "deadline of each call to rofd, in ms")
        ->check(CLI::PositiveNumber);
    app.add_flag("-j,--json", g.json, "print JSON");
    app.add_flag("-p,--pretty", g.pretty, "print indented JSON (implies --json)");
    app.footer(
        "Objects and verbs may be abbreviated to any unique prefix: `rofctl t l` is\n"
        "`rofctl tenant list`.  `rofctl OBJECT --help` lists an object's verbs.\n"
        "Exit status: 0 ok, 1 error, 2 usage, 3 rofd unreachable, 4 not found,\n"
        "5 permission denied, 6 conflict, 7 invalid argument, 8 resource exhausted,\n"
        "9 check failed.  See rofctl(8).");

    add_tenant_commands(app, selected);
    add_policy_commands(app, selected);
    add_region_commands(app, selected);
    add_prog_commands(app, selected);
    add_session_commands(app, selected);
    add_audit_commands(app, selected);
    add_status_commands(app, selected);
    add_top_commands(app, selected);
    add_batch_commands(app, selected);
}

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    return run_command({argv + (argc > 0 ? 1 : 0), argv + argc}, out, err);
}

int run_command(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
                const BatchLine* batch) {
    Globals g;
    Handler handler;
    CLI::App app{"rofctl - administer the rof RDMA offload service", "rofctl"};
    build_app(app, g, handler);
    Connection own(g);
    Connection& connection = batch != nullptr ? batch->connection : own;
    Captured* captured = batch != nullptr ? batch->captured : nullptr;

    auto printer_for = [&](bool as_json) {
        return captured != nullptr ? Printer(*captured) : Printer(out, err, as_json, g.pretty);
    };
    auto usage = [&](const std::string& msg) {
        const bool as_json =
            app.get_option("--json")->count() > 0 || app.get_option("--pretty")->count() > 0;
        Printer p = printer_for(as_json);
        p.error(msg, "USAGE");
        if (!p.json()) {
            const std::string path = command_path(selected_leaf(app));
            err << "Run 'rofctl " << (path.empty() ? "" : path + " ") << "--help' for usage.\n";
        }
        return exit_usage;
    };

    std::string ambiguous;
    try {
        std::vector<std::string> args = expand_prefixes(app, argv, &ambiguous);
        // CLI11 takes a reversed vector.
        std::vector<std::string> rev(args.rbegin(), args.rend());
        app.parse(rev);
        if (!ambiguous.empty()) {
            return usage(ambiguous);
        }
        if (batch != nullptr) {
            // The batch's one channel is made from the options before `batch`.
            for (const char* name :
                 {"--socket", "--connect", "--tls-ca", "--tls-cert", "--tls-key", "--timeout"}) {
                if (app.get_option(name)->count() > 0) {
                    return usage(std::string(name) +
                                 ": a connection option, for the whole batch: give it before "
                                 "`batch`");
                }
            }
        }
        if (!handler) {
            const CLI::App* leaf = selected_leaf(app);
            if (leaf == &app) {
                return usage("no object given (objects: " + names_of(app) + ")");
            }
            return usage("no verb given for " + command_path(leaf) + " (verbs: " + names_of(*leaf) +
                         ")");
        }
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            return app.exit(e, out, err);  // --help
        }
        return usage(ambiguous.empty() ? usage_message(app, e) : ambiguous);
    } catch (const UsageError& e) {
        return usage(e.what());
    }

    Printer printer = printer_for(g.json);
    Context ctx(printer, g, connection, out, err);
    ctx.in_batch = batch != nullptr;
    try {
        return handler(ctx);
    } catch (const UsageError& e) {
        return usage(e.what());
    } catch (const rof::Error& e) {
        printer.error(e.what(), rof::code_name(e.code()));
        return exit_status(e.code());
    } catch (const std::exception& e) {
        printer.error(e.what(), "UNKNOWN");
        return exit_error;
    }
}

}  // namespace rofctl
