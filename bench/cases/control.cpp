// B8: the control plane.  Verify and load of a 1000-instruction program,
// a policy reload with 10,000 tenants, rofd's restart to serving with them,
// rofd's resident memory, and rofctl's own start.  B10: control calls per
// second and their latency under 1, 16 and 200 clients, reads beside
// writes.  docs/performance.md.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <optional>
#include <stdexcept>
#include <thread>

#include "../common.h"

namespace rofbench {
namespace {

namespace fs = std::filesystem;

// .args 8; r2 = args[0] + 997 in 997 adds; 1000 instructions in all.
std::string long_program(std::size_t insns) {
    std::string s = "; rof-bench B8: a straight line of " + std::to_string(insns) +
                    " instructions\n.args 8, 8\n.resp 8\n        ld64  r2, args[0]\n";
    for (std::size_t i = 0; i + 3 < insns; i++) {
        s += "        add64 r2, 1\n";
    }
    s += "        st64  resp[0], r2\n        exit  0\n";
    return s;
}

// The first process named @comm that has not exited (a zombie has not): its pid, 0 if none.
pid_t find_process(const std::string& comm) {
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::ifstream stat(e.path() / "stat");
        std::string line;
        if (!std::getline(stat, line)) {
            continue;
        }
        // "pid (comm) S ...": the name is between the first '(' and the last ')'.
        const auto open = line.find('('), close = line.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close + 2 >= line.size() ||
            line.compare(open + 1, close - open - 1, comm) != 0 || line[close + 2] == 'Z') {
            continue;
        }
        return pid_t(std::stol(name));
    }
    return 0;
}

// The resident set of process @pid in KiB (0: gone).
std::uint64_t rss_kib(pid_t pid) {
    if (pid != 0) {
        std::ifstream st("/proc/" + std::to_string(pid) + "/status");
        std::string line;
        while (std::getline(st, line)) {
            if (line.rfind("VmRSS:", 0) == 0) {
                return std::stoull(line.substr(6));
            }
        }
    }
    return 0;
}

std::uint64_t rofd_rss_kib() {
    return rss_kib(find_process("rofd"));
}

// kill -9 of rofd, which the caller's supervisor (bench/guest.sh's respawn loop, systemd's
// Restart=always) starts again: ms from the kill until a new rofd answers Health.Check SERVING
// on @target, that is, until it has reconciled its policy with the module and serves.  rofd
// binds its socket before it reconciles, so a connection made meanwhile waits in the socket's
// backlog: each attempt is a client of its own that does not wait for rofd (a refused connect,
// the dead rofd's socket, fails at once and is tried again a millisecond later) but whose call,
// once connected, waits up to a minute for the answer.  Throws when there is no rofd, or none
// serves within 10 minutes.
double restart_to_serving_ms(const std::string& target) {
    const pid_t old = find_process("rofd");
    if (old == 0) {
        throw std::runtime_error("no process named rofd here to restart");
    }
    const std::uint64_t t0 = now_ns();
    if (kill(old, SIGKILL) != 0) {
        throw std::runtime_error(std::string("kill -9 rofd: ") + std::strerror(errno));
    }
    const std::uint64_t limit = 600'000'000'000ull;
    std::string last = "no new rofd";
    while (now_ns() - t0 < limit) {
        const pid_t now = find_process("rofd");
        if (now != 0 && now != old) {
            rof::ClientOptions co;
            co.target = target;
            co.deadline = std::chrono::seconds(60);
            co.wait_for_ready = false;
            try {
                last = rof::Client(co).health();
                if (last == "SERVING") {
                    return double(now_ns() - t0) / 1e6;
                }
            } catch (const rof::Error& e) {
                last = e.what();
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw std::runtime_error("rofd did not serve again within 10 minutes of kill -9: " + last);
}

// Runs @argv (a program on $PATH) to its end with its output discarded: ms from the spawn to
// the exit.  Throws when it cannot run or does not exit 0.
double run_ms(std::vector<std::string> argv) {
    const std::string what = argv[0] + " " + argv.back();
    const std::uint64_t t0 = now_ns();
    const pid_t pid = spawn(std::move(argv), true);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    const double ms = double(now_ns() - t0) / 1e6;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        throw std::runtime_error(what + " failed (wait status " + std::to_string(st) + ")");
    }
    return ms;
}

}  // namespace

ROF_BENCH_CASE("B8", "control plane: a 1000-instruction program, 10,000 tenants, rofd's memory") {
    rof::Client client = connect_rofd(env.opt);
    const std::string t = bench_tenant(env.opt);
    auto& r = env.report;

    // Verify + load, as LoadProgram does both; unloaded between repetitions.
    const std::size_t insns = std::size_t(env.opt.param_int("b8_insns", 1000));
    const std::string src = long_program(insns);
    std::vector<double> load_ms;
    std::uint64_t tag = 0;
    const int loads = env.opt.smoke ? 2 : 10;
    for (int i = 0; i < loads; i++) {
        progress("B8", "load " + std::to_string(i + 1) + "/" + std::to_string(loads));
        rof::v1::LoadProgramRequest l;
        l.set_tenant(t);
        l.set_name("b8-long");
        l.mutable_source()->set_text(src);
        l.mutable_source()->set_file("b8-long.rofs");
        std::uint64_t t0 = now_ns();
        tag = client.load_program(l).tag();
        load_ms.push_back(double(now_ns() - t0) / 1e6);
        if (i + 1 < loads) {
            rof::v1::UnloadProgramRequest u;
            u.set_tenant(t);
            u.set_tag(tag);
            client.unload_program(u);
        }
    }
    {
        rof::Session s = open_session(client, t);
        std::uint64_t arg = 5, out = 0;
        invoke_ok(s, tag, std::as_bytes(std::span(&arg, 1)),
                  std::as_writable_bytes(std::span(&out, 1)));
        if (out != arg + insns - 3) {
            throw std::runtime_error("the long program answered " + std::to_string(out));
        }
    }
    r.bound("load_" + std::to_string(insns) + "_insns_ms", median(load_ms), "ms", Target::Cmp::le,
            50);
    // rofctl's own cost: a process start, CLI11's parse and, for status, one connection and
    // one GetStatus; median of as many runs as loads.
    std::vector<double> help_ms, status_ms;
    for (int i = 0; i < loads; i++) {
        progress("B8", "rofctl " + std::to_string(i + 1) + "/" + std::to_string(loads));
        help_ms.push_back(run_ms({"rofctl", "--help"}));
        status_ms.push_back(run_ms({"rofctl", "--socket", env.opt.rofd, "status"}));
    }
    r.figure("rofctl_help_ms", median(help_ms), "ms");
    r.figure("rofctl_status_ms", median(status_ms), "ms");
    std::uint64_t idle_kib = rofd_rss_kib();
    if (idle_kib) {
        r.bound("rofd_idle_rss_mib", double(idle_kib) / 1024, "MiB", Target::Cmp::le, 64);
    } else {
        r.note("no process named rofd here: its memory is not measured");
    }

    // 10,000 tenants: their files written into rofd's tenants.d, one
    // ReloadPolicy timed; then removed and reloaded again.
    const std::string dir = env.opt.param("policy_dir", "");
    const std::size_t ntenants =
        std::size_t(env.opt.param_int("b8_tenants", env.opt.smoke ? 100 : 10000));
    if (dir.empty()) {
        r.note("policy reload not measured: no --set policy_dir=DIR (rofd's tenants.d)");
        return;
    }
    progress("B8", "writing " + std::to_string(ntenants) + " tenant files");
    std::vector<fs::path> files;
    for (std::size_t i = 0; i < ntenants; i++) {
        char name[40];
        std::snprintf(name, sizeof name, "b8t%05zu", i);
        fs::path p = fs::path(dir) / (std::string(name) + ".toml");
        std::ofstream f(p);
        f << "name = \"" << name << "\"\ncontrol_rate = 0\n[quota]\nsessions = 1\n";
        if (!f) {
            throw std::runtime_error("cannot write " + p.string());
        }
        files.push_back(p);
    }
    auto reload = [&](const char* what) {
        progress("B8", what);
        std::uint64_t t0 = now_ns();
        client.reload_policy();
        return double(now_ns() - t0) / 1e6;
    };
    double add_ms = reload("reload with the tenants added");
    std::uint64_t full_kib = rofd_rss_kib();
    std::size_t seen = std::size_t(client.list_tenants().tenants_size());
    // Its restart with them: the new rofd reconciles every tenant, region and program of its
    // policy and store with the module before it serves.
    progress("B8", "kill -9 of rofd with the tenants in its policy");
    const double restart_ms = restart_to_serving_ms(env.opt.rofd);
    // A new client for the new rofd: the old one's channel retries on gRPC's backoff, which
    // grows while rofd was away.
    client = connect_rofd(env.opt);
    for (const auto& p : files) {
        fs::remove(p);
    }
    double remove_ms = reload("reload with them removed");
    if (seen < ntenants) {
        throw std::runtime_error("rofd lists " + std::to_string(seen) +
                                 " tenants after the reload");
    }
    r.bound("reload_add_" + std::to_string(ntenants) + "_tenants_ms", add_ms, "ms", Target::Cmp::le,
            1000);
    r.figure("reload_remove_" + std::to_string(ntenants) + "_tenants_ms", remove_ms, "ms");
    r.bound("restart_" + std::to_string(ntenants) + "_tenants_ms", restart_ms, "ms",
            Target::Cmp::le, 1000);
    if (full_kib) {
        r.figure("rofd_rss_with_tenants_mib", double(full_kib) / 1024, "MiB", "rofd_idle_rss_mib",
                 double(idle_kib) / 1024);
    }
    r.note("the program is a straight line of adds (ld64, " + std::to_string(insns - 3) +
           " add64, st64, exit), loaded by LoadProgram (rofd's verifier, then the module's); "
           "median of " +
           std::to_string(loads) +
           " loads; rofctl's times are a process's start to its exit, the same number of "
           "runs. The reload is one ReloadPolicy call, "
           "timed by the caller, after the tenant files were written; removed from the policy, "
           "the tenants stay in the module (rofd leaves alone what is not in its policy). The "
           "restart is a kill -9 of rofd with the tenants in its policy, timed until a new rofd "
           "(its supervisor starts it) answers Health.Check SERVING, polled every ms");
}

}  // namespace rofbench

namespace rofbench {
namespace {

// B10's clients: each its own rof::Client (its own connection to rofd), on tenant t<NN> of
// B6's 64.  A writer creates a 4 KiB region and deletes it, two writes a turn; a reader gets its
// tenant (GetTenant, a read of rofd's view); with one client, it does both in turn.  Without
// @writers, only the readers run (the writers' clients are not made): the reads' baseline at
// the same count of readers.
struct ControlLoad {
    Histogram reads, writes;
    std::uint64_t errors = 0;
    std::string first_error;
};

ControlLoad control_load(const Env& env, std::size_t clients, double seconds, bool writers) {
    std::vector<ControlLoad> per(clients);
    std::vector<std::thread> ts;
    // Every client connects, then all start together.  They wait on latches (a futex), not in
    // a loop: 200 threads yielding in turn took the guest's two vCPUs from rofd and from the
    // clients still connecting, and 68 of 200 never connected within their minute.
    std::latch connected{std::ptrdiff_t(clients)}, go{1};
    std::atomic<std::uint64_t> end{0};
    for (std::size_t i = 0; i < clients; i++) {
        ts.emplace_back([&, i] {
            ControlLoad& me = per[i];
            char tenant[8];
            std::snprintf(tenant, sizeof tenant, "t%02zu", i % 64);
            const bool reader = clients == 1 || i % 2 == 1,
                       writer = writers && (clients == 1 || i % 2 == 0);
            std::optional<rof::Client> c;
            try {
                if (reader || writer) {
                    c.emplace(connect_rofd(env.opt));
                    c->health();  // connected before the clock starts
                }
            } catch (const std::exception& e) {
                me.errors++;
                me.first_error = e.what();
            }
            connected.count_down();
            go.wait();
            if (!c) {
                return;
            }
            auto timed = [&](Histogram& h, const std::function<void()>& call) {
                const std::uint64_t t0 = now_ns();
                try {
                    call();
                    h.record(now_ns() - t0);
                } catch (const std::exception& e) {
                    if (me.errors++ == 0) {
                        me.first_error = e.what();
                    }
                }
            };
            for (std::uint64_t n = 0; now_ns() < end.load(); n++) {
                if (reader) {
                    timed(me.reads, [&] {
                        rof::v1::GetTenantRequest g;
                        g.set_name(tenant);
                        c->get_tenant(g);
                    });
                }
                if (writer) {
                    const std::string name = "b10-" + std::to_string(i) + "-" + std::to_string(n);
                    timed(me.writes, [&] {
                        rof::v1::CreateRegionRequest r;
                        r.set_tenant(tenant);
                        r.set_name(name);
                        r.set_size(4096);
                        r.set_access(3);
                        c->create_region(r);
                    });
                    timed(me.writes, [&] {
                        rof::v1::DeleteRegionRequest d;
                        d.set_tenant(tenant);
                        d.set_name(name);
                        c->delete_region(d);
                    });
                }
            }
        });
    }
    connected.wait();
    end = now_ns() + std::uint64_t(seconds * 1e9);
    go.count_down();
    for (auto& t : ts) {
        t.join();
    }
    ControlLoad all;
    for (const auto& p : per) {
        all.reads.merge(p.reads);
        all.writes.merge(p.writes);
        if (all.errors == 0 && p.errors) {
            all.first_error = p.first_error;
        }
        all.errors += p.errors;
    }
    return all;
}

}  // namespace

ROF_BENCH_CASE("B10", "control calls under 1, 16 and 200 clients: reads beside writes") {
    auto& r = env.report;
    const auto seconds = double(env.opt.param_int("b10_seconds", env.opt.smoke ? 1 : 10));
    std::vector<std::size_t> levels = {1, 16, 200};
    if (env.opt.smoke) {
        levels = {1, 4};
    }
    auto ms = [](const Histogram& h, double p) { return double(h.percentile(p)) / 1e6; };
    std::vector<std::vector<double>> rows;
    for (std::size_t n : levels) {
        const std::string at = "_" + std::to_string(n) + "_clients";
        progress("B10", std::to_string(n) + " clients, the readers alone, for " +
                            std::to_string(int(seconds)) + " s");
        const ControlLoad alone = control_load(env, n, seconds, false);
        const double read_p99_alone = ms(alone.reads, 99);
        r.figure("read_p99" + at + "_alone_ms", read_p99_alone, "ms");
        progress("B10", std::to_string(n) + " clients for " + std::to_string(int(seconds)) + " s");
        ControlLoad l = control_load(env, n, seconds, true);
        l.errors += alone.errors;
        if (l.first_error.empty()) {
            l.first_error = alone.first_error;
        }
        const double reads_s = double(l.reads.count()) / seconds,
                     writes_s = double(l.writes.count()) / seconds;
        r.figure("calls_per_s" + at, reads_s + writes_s, "/s");
        r.figure("reads_per_s" + at, reads_s, "/s");
        r.figure("writes_per_s" + at, writes_s, "/s");
        r.figure("read_p50" + at + "_ms", ms(l.reads, 50), "ms");
        r.figure("read_p99" + at + "_ms", ms(l.reads, 99), "ms", "read_p99" + at + "_alone_ms",
                 read_p99_alone);
        r.figure("write_p50" + at + "_ms", ms(l.writes, 50), "ms");
        r.figure("write_p99" + at + "_ms", ms(l.writes, 99), "ms");
        r.bound("failed_calls" + at, double(l.errors), "calls", Target::Cmp::le, 0);
        if (l.errors) {
            r.note(std::to_string(n) + " clients: " + std::to_string(l.errors) +
                   " calls failed, the first: " + l.first_error);
        }
        rows.push_back(
            {double(n), reads_s, writes_s, read_p99_alone, ms(l.reads, 99), ms(l.writes, 99)});
    }
    r.series("b10_control", "B10: control calls vs clients", "clients", "calls/s; p99 ms",
             {"clients", "reads/s", "writes/s", "read p99, readers alone (ms)", "read p99 (ms)",
              "write p99 (ms)"},
             rows, true, true);
    r.note(
        "each client its own connection to rofd (rof::Client), on one of B6's 64 tenants; with "
        "more than one client, half of them (even) write (CreateRegion of 4 KiB, then its "
        "DeleteRegion: two writes a turn) and half read (GetTenant of their tenant), in closed "
        "loops, for " +
        std::to_string(int(seconds)) +
        " s a level after all connected; one client does both in turn. Each level runs first "
        "with its readers alone (read_p99_N_clients_alone_ms), then with the writers beside "
        "them. Reads are served on gRPC's threads, writes on rofd's one worker: "
        "read_p99_N_clients_ms against the readers alone says what the writers cost the "
        "reads, CPU included (the guest's two vCPUs serve rofd, the module and every client)");
}

}  // namespace rofbench
