// SPDX-License-Identifier: MIT
// rofctl session list|show|close.
#include "commands.h"

namespace rofctl {
namespace {

struct SessionOpts {
    std::string tenant;
    std::uint32_t id = 0;
    std::string output;  // list -o
};

}  // namespace

void add_session_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("session", "data-path sessions with the module");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<SessionOpts>();

    auto* list = obj->add_subcommand("list", "list sessions");
    list->add_option("--tenant", o->tenant, "only this tenant's");
    add_output_option(*list, o->output);
    list->callback([&selected, o] {
        selected = [o](Context& ctx) {
            ctx.printer.set_wide(o->output == "wide");
            rof::v1::ListSessionsRequest req;
            req.set_tenant(o->tenant);
            ctx.printer.print(ctx.client().list_sessions(req));
            return exit_ok;
        };
    });

    auto* show = obj->add_subcommand("show", "one session with its counters");
    show->add_option("id", o->id, "session id")->required();
    show->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::GetSessionRequest req;
            req.set_id(o->id);
            ctx.printer.print(ctx.client().get_session(req));
            return exit_ok;
        };
    });

    auto* close = obj->add_subcommand("close", "close a session");
    close->add_option("id", o->id, "session id")->required();
    close->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::CloseSessionRequest req;
            req.set_id(o->id);
            ctx.client().close_session(req);
            req.clear_idempotency_key();
            ctx.printer.print(req);
            return exit_ok;
        };
    });
}

}  // namespace rofctl
