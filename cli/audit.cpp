// SPDX-License-Identifier: MIT
// rofctl audit tail [-f] [--tenant T] [-n N], audit stats.
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "commands.h"

namespace rofctl {
namespace {

struct AuditOpts {
    std::string tenant;
    std::uint32_t session = 0;
    bool follow = false;
    bool errors_only = false;
    std::uint64_t count = 10;
    unsigned wait_ms = 1000;
};

// The audit stream is live only: records drained from now on.  Without -f,
// tail prints up to N records that arrive within --wait ms, then ends.
int tail(Context& ctx, const AuditOpts& o) {
    if (o.follow && ctx.in_batch) {
        throw UsageError(
            "audit tail -f: runs until interrupted, not in a batch (without -f it ends)");
    }
    rof::v1::TailAuditRequest req;
    req.set_tenant(o.tenant);
    req.set_session(o.session);
    req.set_errors_only(o.errors_only);
    // -f ends on SIGINT or SIGTERM after the record being printed, so that
    // what it wrote ends with a whole line.  Blocked before gRPC starts its
    // threads (ctx.client() creates the channel), so that they inherit the
    // mask and only the stopper takes the signal.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    if (o.follow) {
        pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    }
    rof::AuditTail stream = ctx.client().tail_audit(req);
    std::atomic<bool> ended{false};
    std::jthread stopper;
    if (o.follow) {
        stopper = std::jthread([&stream, &ended, stop_signals] {
            int sig = 0;
            sigwait(&stop_signals, &sig);
            if (!ended.load()) {
                stream.cancel();
            }
        });
    }

    std::jthread timer;
    if (!o.follow) {
        timer = std::jthread([&stream, ms = o.wait_ms](const std::stop_token& st) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
            while (!st.stop_requested() && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            stream.cancel();
        });
    }
    rof::v1::AuditRecord rec;
    std::uint64_t n = 0;
    while ((o.follow || n < o.count) && stream.next(rec)) {
        ctx.printer.record(rec);
        n++;
    }
    if (stopper.joinable()) {
        // The stream ended without a signal (rofd went away): wake the stopper.
        ended.store(true);
        pthread_kill(stopper.native_handle(), SIGTERM);
        stopper.join();
    }
    if (n < o.count || o.follow) {
        stream.finish();  // throws unless cancelled
    } else {
        stream.cancel();
    }
    return exit_ok;
}

}  // namespace

void add_audit_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("audit", "the module's audit records, as rofd drains them");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<AuditOpts>();

    auto* t = obj->add_subcommand(
        "tail",
        "records as they arrive, one JSON object per line with -j; without -f, up to N records "
        "that arrive within --wait ms");
    t->add_flag("-f,--follow", o->follow, "keep printing until interrupted");
    t->add_option("-n,--count", o->count, "without -f: at most N records (default 10)");
    t->add_option("--wait", o->wait_ms, "without -f: stop after this many ms (default 1000)");
    t->add_option("--tenant", o->tenant, "this tenant's (admin; default: the caller's own)");
    t->add_option("--session", o->session, "only this session's");
    t->add_flag("--errors", o->errors_only, "only failures");
    t->callback([&selected, o] { selected = [o](Context& ctx) { return tail(ctx, *o); }; });

    obj->add_subcommand("stats", "the audit ring's counters and rofd's drain")
        ->callback([&selected] {
            selected = [](Context& ctx) {
                ctx.printer.print(ctx.client().get_audit_stats());
                return exit_ok;
            };
        });
}

}  // namespace rofctl
