// SPDX-License-Identifier: MIT
// rofd: the rof control-plane daemon.
//
// One sd_event loop on the main thread: signals (SIGTERM/SIGINT stop,
// SIGHUP reloads the policy), the unix listener, the audit ring, and the
// watchdog timer.  gRPC calls run on gRPC's threads and the Manager's
// worker (manager.h).
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>

#include "audit_drain.h"
#include "event_sources.h"
#include "kmod.h"
#include "listener.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "server.h"
#include "uapi/rof.h"

namespace {

constexpr auto shutdown_grace = std::chrono::seconds(5);

enum ExitCode { exit_ok = 0, exit_error = 1, exit_usage = 2 };

struct Options {
    std::string socket;  // empty: the policy's
    std::string device = ROF_DEVICE_PATH;
    rofd::ManagerOptions manager;
};

std::string open_hint(int err) {
    switch (err) {
        case ENOENT:
        case ENODEV:
        case ENXIO:
            return " (rof.ko not loaded? modprobe rof)";
        case EACCES:
        case EPERM:
            return " (rofd needs read-write access to it; run it as root)";
        default:
            return {};
    }
}

std::string socket_name(int fd) {
    sockaddr_un addr{};
    socklen_t len = sizeof(addr);

    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0 ||
        len <= offsetof(sockaddr_un, sun_path) || addr.sun_path[0] == '\0') {
        return "fd " + std::to_string(fd);
    }
    return std::string(addr.sun_path, strnlen(addr.sun_path, sizeof(addr.sun_path)));
}

// systemd socket activation when started by rofd.socket, else our own socket.
rofd::UnixListener make_listener(const std::string& path, bool path_given) {
    const int n = sd_listen_fds(1);

    if (n < 0) {
        throw std::system_error(-n, std::generic_category(), "sd_listen_fds");
    }
    if (n == 0) {
        return rofd::UnixListener::bind(path);
    }
    if (n > 1) {
        throw std::runtime_error("socket activation passed " + std::to_string(n) +
                                 " sockets; rofd takes one unix stream socket");
    }

    const int fd = SD_LISTEN_FDS_START;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
        throw std::runtime_error("socket activation passed fd " + std::to_string(fd) +
                                 ", which is not a listening unix stream socket");
    }
    if (path_given) {
        rofd::log::info("socket activated: ignoring --socket {}", path);
    }
    return rofd::UnixListener::adopt(fd, socket_name(fd));
}

struct EventDeleter {
    void operator()(sd_event* e) const { sd_event_unref(e); }
};
struct SourceDeleter {
    void operator()(sd_event_source* s) const { sd_event_source_disable_unref(s); }
};
using EventPtr = std::unique_ptr<sd_event, EventDeleter>;
using SourcePtr = std::unique_ptr<sd_event_source, SourceDeleter>;

void check(int r, const char* what) {
    if (r < 0) {
        throw std::system_error(-r, std::generic_category(), what);
    }
}

// What the event handlers reach.
struct Loop {
    rofd::Manager& manager;
    rofd::Server& server;
    const rofd::UnixListener& listener;
    sd_event* event = nullptr;
    std::uint64_t watchdog_usec = 0;
    int stop_signal = 0;
    std::uint64_t overruns = 0;  // of the audit ring, at the last check
    std::uint64_t dropped = 0;
};

int on_stop(sd_event_source*, const signalfd_siginfo* si, void* data) {
    auto* l = static_cast<Loop*>(data);
    l->stop_signal = static_cast<int>(si->ssi_signo);
    return sd_event_exit(l->event, 0);
}

int on_hup(sd_event_source*, const signalfd_siginfo*, void* data) {
    auto* l = static_cast<Loop*>(data);
    rofd::log::info("SIGHUP: reloading the policy");
    sd_notify(0, "RELOADING=1\nSTATUS=reloading the policy");
    try {
        l->manager.post([l] {
            std::string status;
            try {
                const auto notes = l->manager.reload_policy();
                status = fmt::format("policy generation {} loaded", l->manager.view()->generation);
            } catch (const std::exception& e) {
                rofd::log::error("{}", e.what());
                status = "policy reload failed; the previous policy stays";
            }
            sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
        });
    } catch (const std::exception& e) {
        rofd::log::error("SIGHUP: {}", e.what());
    }
    return 0;
}

int on_audit(sd_event_source*, int, std::uint32_t, void* data) {
    auto* l = static_cast<Loop*>(data);
    l->manager.audit().drain();
    return 0;
}

// Every stats_period: the module's ring statistics into the drain's
// counters (metrics), and a warning whenever records were lost.
constexpr std::uint64_t stats_period_usec = 10'000'000;

int on_stats(sd_event_source* s, std::uint64_t usec, void* data) {
    auto* l = static_cast<Loop*>(data);
    try {
        const rof_audit_stats st = l->manager.module().audit_stats();
        if (st.overruns > l->overruns || st.dropped > l->dropped) {
            rofd::log::warning(
                "audit ring: {} records overwritten unread and {} droppable records "
                "(invocations, unauthenticated rejects) dropped since the last check "
                "(ring of {}; module parameter audit_ring_size)",
                st.overruns - l->overruns, st.dropped - l->dropped, st.ring_size);
        }
        l->overruns = st.overruns;
        l->dropped = st.dropped;
        l->manager.audit().note_stats(st);
    } catch (const std::exception& e) {
        rofd::log::error("audit stats: {}", e.what());
    }
    sd_event_source_set_time(s, usec + stats_period_usec);
    return 0;
}

// The watchdog is fed only when the module answers and the gRPC server
// answers a health check through its own stack.
int on_watchdog(sd_event_source* s, std::uint64_t usec, void* data) {
    auto* l = static_cast<Loop*>(data);
    bool ok = false;
    try {
        l->manager.module().version();
        ok = l->server.alive();
    } catch (const std::exception& e) {
        rofd::log::error("watchdog: {}", e.what());
    }
    if (ok) {
        sd_notify(0, "WATCHDOG=1");
    } else {
        rofd::log::error("watchdog: not fed (the module or the gRPC server does not answer)");
    }
    sd_event_source_set_time(s, usec + l->watchdog_usec / 2);
    return 0;
}

int run(const Options& opt, bool socket_given) {
    const auto t0 = std::chrono::steady_clock::now();
    double parse_ms = 0;
    std::unique_ptr<rofd::Kmod> kmod;
    try {
        kmod = std::make_unique<rofd::Kmod>(opt.device);
    } catch (const rofd::KmodError& e) {
        rofd::log::error("{}{}", e.what(), open_hint(e.code().value()));
        return exit_error;
    }

    const rofd::ModuleVersion v = kmod->version();
    // Same major, and at least the oldest minor whose commands this rofd
    // uses (what later minors add, it uses only where the module has it).
    if (v.abi_major != ROF_ABI_MAJOR || v.abi_minor < rofd::abi_minor_min) {
        rofd::log::error(
            "{}: rof.ko {} speaks ABI {}.{}, rofd {} needs ABI {}.{} or a later minor; install "
            "matching versions",
            opt.device, v.version, v.abi_major, v.abi_minor, ROF_VERSION, ROF_ABI_MAJOR,
            rofd::abi_minor_min);
        return exit_error;
    }

    rofd::Manager manager(opt.manager, std::move(kmod));
    std::optional<rofd::UnixListener> bound;
    try {
        const auto p0 = std::chrono::steady_clock::now();
        manager.load_policy();
        parse_ms = rofd::log::ms_since(p0);
        // The socket first: a second rofd is refused before it touches
        // the module or the state.
        const std::string path = socket_given ? opt.socket : manager.view()->policy->daemon.socket;
        bound.emplace(make_listener(path, socket_given));
        sd_notify(0, "STATUS=reconciling with rof.ko");
        manager.start();
    } catch (const rofd::CallError& e) {
        rofd::log::error("{}", e.what());
        return exit_error;
    }
    const rofd::UnixListener& listener = *bound;
    rofd::Server server(manager);
    std::unique_ptr<rofd::MetricsExposer> metrics;
    if (const auto& mc = manager.view()->policy->daemon.metrics; mc.enabled) {
        metrics = std::make_unique<rofd::MetricsExposer>(
            mc.address, [&manager] { return manager.metrics(""); });
        rofd::log::info("metrics on http://{}/metrics", mc.address);
    }

    sd_event* raw = nullptr;
    check(sd_event_new(&raw), "sd_event_new");
    EventPtr event(raw);
    Loop loop{manager, server, listener, event.get()};

    sd_event_source* s = nullptr;
    std::vector<SourcePtr> sources;
    for (const int sig : {SIGTERM, SIGINT}) {
        check(sd_event_add_signal(event.get(), &s, sig, on_stop, &loop), "sd_event_add_signal");
        sources.emplace_back(s);
    }
    check(sd_event_add_signal(event.get(), &s, SIGHUP, on_hup, &loop), "sd_event_add_signal");
    sources.emplace_back(s);
    const rofd::AcceptSource accepting(
        event.get(), listener.fd(), [&] { return server.accept(listener); },
        rofd::accept_retry_usec);
    check(sd_event_add_io(event.get(), &s, manager.audit().fd(), EPOLLIN, on_audit, &loop),
          "sd_event_add_io(audit)");
    sources.emplace_back(s);
    std::uint64_t now = 0;
    check(sd_event_now(event.get(), CLOCK_MONOTONIC, &now), "sd_event_now");
    {
        const rof_audit_stats st = manager.module().audit_stats();
        loop.overruns = st.overruns;
        loop.dropped = st.dropped;
        manager.audit().note_stats(st);
    }
    check(sd_event_add_time(event.get(), &s, CLOCK_MONOTONIC, now + stats_period_usec, 0, on_stats,
                            &loop),
          "sd_event_add_time(stats)");
    sd_event_source_set_enabled(s, SD_EVENT_ON);
    sources.emplace_back(s);
    const rofd::PeriodicTimer removals(event.get(), rofd::removal_period_usec,
                                       [&manager] { manager.post_sweep(); });
    if (sd_watchdog_enabled(0, &loop.watchdog_usec) > 0 && loop.watchdog_usec > 0) {
        check(sd_event_add_time(event.get(), &s, CLOCK_MONOTONIC, now + loop.watchdog_usec / 2, 0,
                                on_watchdog, &loop),
              "sd_event_add_time(watchdog)");
        sd_event_source_set_enabled(s, SD_EVENT_ON);
        sources.emplace_back(s);
    }

    server.set_serving(true);
    const auto view = manager.view();
    const std::string status = fmt::format(
        "serving on {} (rof.ko {}, ABI {}.{}; {} tenants, {} reconciliation differences)",
        listener.description(), v.version, v.abi_major, v.abi_minor, view->policy->tenants.size(),
        view->drift.size());
    // What a restart's time went to (B8): the policy's files, then the state and the
    // reconciliation (their own line says how long that took); before
    // "serving on", which tests and people wait for.
    rofd::log::info("started in {:.0f} ms, the policy's files read and parsed in {:.0f} ms",
                    rofd::log::ms_since(t0), parse_ms);
    rofd::log::info("{}", status);
    sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());

    const int r = sd_event_loop(event.get());
    const char* sig = loop.stop_signal != 0 ? sigabbrev_np(loop.stop_signal) : nullptr;
    rofd::log::info("{}{}: shutting down", sig != nullptr ? "SIG" : "",
                    sig != nullptr ? sig : "event loop");
    sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
    server.shutdown(shutdown_grace);
    manager.stop();
    return r < 0 ? exit_error : exit_ok;
}

int rofd_main(int argc, char** argv) {
    // Blocked before gRPC starts any thread, so these are only ever seen
    // through sd_event's signalfd, by the main loop.
    sigset_t signals;
    sigemptyset(&signals);
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
        sigaddset(&signals, sig);
    }
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    Options opt;
    bool verbose = false;
    CLI::App app{"rofd - the rof control-plane daemon", "rofd"};
    app.add_option("--socket", opt.socket, "unix socket to serve gRPC on (default: the policy's)");
    app.add_option("--device", opt.device, "the rof.ko device")->default_str(ROF_DEVICE_PATH);
    app.add_option("--config", opt.manager.daemon_file, "the daemon's policy file")
        ->default_str(opt.manager.daemon_file);
    app.add_option("--tenants", opt.manager.tenants_dir, "the directory of tenant policy files")
        ->default_str(opt.manager.tenants_dir);
    app.add_option("--state-dir", opt.manager.state_dir,
                   "where rofd keeps its database (default: the policy's [state] dir)");
    app.add_flag("-v,--verbose", verbose, "log debug messages (connections, peers, calls)");
    app.set_version_flag("--version", ROF_VERSION);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return std::string("rofd: ") + e.what() + "\nRun 'rofd --help' for usage.\n";
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? exit_ok : exit_usage;
    }

    // Under systemd, ConfigurationDirectory= and StateDirectory= say where
    // the policy and the state are; a flag still wins.
    if (const char* dir = std::getenv("CONFIGURATION_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
        dir != nullptr && *dir != '\0') {
        const std::string first = std::string(dir).substr(0, std::string(dir).find(':'));
        if (app.count("--config") == 0) {
            opt.manager.daemon_file = first + "/rofd.toml";
        }
        if (app.count("--tenants") == 0) {
            opt.manager.tenants_dir = first + "/tenants.d";
        }
    }
    if (const char* dir = std::getenv("STATE_DIRECTORY");  // NOLINT(concurrency-mt-unsafe)
        dir != nullptr && *dir != '\0' && app.count("--state-dir") == 0) {
        opt.manager.state_dir = std::string(dir).substr(0, std::string(dir).find(':'));
    }

    rofd::log::set_verbose(verbose);
    rofd::log::capture_grpc_logs();

    try {
        return run(opt, app.count("--socket") > 0);
    } catch (const std::exception& e) {
        rofd::log::error("{}", e.what());
        return exit_error;
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return rofd_main(argc, argv);
    } catch (const std::exception& e) {
        rofd::log::error("{}", e.what());
    } catch (...) {
        rofd::log::error("unexpected exception");
    }
    return exit_error;
}
