// SPDX-License-Identifier: MIT
#include "rofctl.h"

#include <string_view>

#include "commands.h"
#include "rof/client.h"

namespace rofctl {
namespace {

// Whether -j/-p appear on the command line, known even when CLI11 gives up
// before it stores the flags, so that usage errors follow the output mode.
bool wants_json(int argc, const char* const* argv) {
    for (int i = 1; i < argc; i++) {
        const std::string_view a = argv[i];
        if (a == "--") {
            break;
        }
        if (a == "--json" || a == "--pretty") {
            return true;
        }
        if (a.size() > 1 && a[0] == '-' && a[1] != '-' &&
            a.find_first_of("jp") != std::string_view::npos) {
            return true;
        }
    }
    return false;
}

std::string object_names(const CLI::App& app) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!names.empty()) {
            names += ", ";
        }
        names += sub->get_name();
    }
    return names;
}

// CLI11's messages, except where naming the objects helps more.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
    const std::vector<std::string> extras = app.remaining();

    if (app.get_subcommands().empty() && !extras.empty() && !extras[0].starts_with("-")) {
        return "unknown object \"" + extras[0] + "\" (objects: " + object_names(app) + ")";
    }
    return e.what();
}

class NoObject : public CLI::ParseError {
  public:
    explicit NoObject(const std::string& objects)
        : CLI::ParseError("NoObject", "no object given (objects: " + objects + ")",
                          CLI::ExitCodes::RequiredError) {}
};

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    std::string socket;
    bool json = false;
    bool pretty = false;
    Handler handler;

    CLI::App app{"rofctl - administer the rof RDMA offload service", "rofctl"};
    // Global options are accepted after the object too: `rofctl status -j`.
    app.fallthrough();
    app.require_subcommand(0, 1);
    app.add_option("--socket", socket,
                   "rofd's unix socket (default: $ROF_SOCKET, else /run/rof/rofd.sock)");
    app.add_flag("-j,--json", json, "print JSON");
    app.add_flag("-p,--pretty", pretty, "print indented JSON (implies --json)");

    add_status_command(app, handler);

    try {
        app.parse(argc, argv);
        if (!handler) {
            throw NoObject(object_names(app));
        }
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            return app.exit(e, out, err);  // --help
        }
        const bool as_json = json || pretty || wants_json(argc, argv);
        Printer p(out, err, as_json, pretty);
        p.error(usage_message(app, e));
        if (!as_json) {
            err << "Run 'rofctl --help' for usage.\n";
        }
        return exit_usage;
    }

    Printer printer(out, err, json, pretty);
    Context ctx{printer, socket};
    try {
        const int rc = handler(ctx);
        printer.finish();
        return rc;
    } catch (const rof::Error& e) {
        printer.error(e.what());
        return e.code() == rof::Code::unavailable ? exit_unreachable : exit_error;
    } catch (const std::exception& e) {
        printer.error(e.what());
        return exit_error;
    }
}

}  // namespace rofctl
