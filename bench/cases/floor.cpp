// B0, the floor, and B5, invocation throughput against the raw echo
// (docs/performance.md).
#include <array>
#include <stdexcept>

#include "../common.h"
#include "../raw.h"

namespace rofbench {

ROF_BENCH_CASE("B0", "the floor: raw READ and SEND/RECV echo, the offload's echo and READ") {
    raw::Conn rc(need(env.opt.raw_server, "--raw-server"));
    rof::Client client = connect_rofd(env.opt);
    const std::string t = bench_tenant(env.opt);
    ensure_region(client, t, "bench_data", 65536);
    std::uint64_t echo = load_program(client, t, "echo", kEchoProgram);
    rof::Session s = open_session(client, t, {"bench_data"});

    Histogram read =
        measure_latency(env, "raw READ 64 B", [&] { rc.read(rc.hello().heap_addr, 64); });
    Histogram raw_echo =
        measure_latency(env, "raw SEND/RECV echo 32 B", [&] { rc.echo(kEchoBytes); });
    std::array<std::byte, kEchoBytes> args{}, resp{};
    Histogram rof_echo = measure_latency(env, "offload echo 32 B", [&] {
        if (invoke_ok(s, echo, args, resp) != kEchoBytes) {
            throw std::runtime_error("echo: short response");
        }
    });
    Histogram rof_nop = measure_latency(env, "offload NOP", [&] { s.nop(); });
    std::array<std::byte, 64> buf{};
    Histogram rof_read =
        measure_latency(env, "READ 64 B of a rof region", [&] { s.read("bench_data", 0, buf); });

    auto& r = env.report;
    auto us = [](const Histogram& h) { return double(h.percentile(50)) / 1e3; };
    r.figure("raw_read_64B_us", us(read), "us");
    r.figure("raw_echo_32B_us", us(raw_echo), "us");
    r.figure("rof_echo_32B_us", us(rof_echo), "us", "raw_echo_32B_us", us(raw_echo),
             Target{Target::Cmp::le, 1.2});
    r.figure("rof_nop_us", us(rof_nop), "us", "raw_echo_32B_us", us(raw_echo));
    r.figure("rof_read_64B_us", us(rof_read), "us", "raw_read_64B_us", us(read));
    r.latency("raw_read_64B", read);
    r.latency("raw_echo_32B", raw_echo);
    r.latency("rof_echo_32B", rof_echo);
    r.latency("rof_nop", rof_nop);
    r.latency("rof_read_64B", rof_read);
    r.cdf("b0_cdf", "B0: round trips, one in flight",
          {{"raw READ 64 B", &read},
           {"raw echo 32 B", &raw_echo},
           {"offload echo 32 B", &rof_echo},
           {"module NOP", &rof_nop},
           {"READ of a rof region 64 B", &rof_read}});
    r.note(
        "medians of every recorded round trip; the offload's echo is an INVOKE of a program "
        "that copies its 32 bytes of arguments into the response; the NOP is the module's "
        "empty request (no program), the transport alone");
}

ROF_BENCH_CASE("B5", "invocation throughput vs the raw echo, 1..32 and a full window in flight") {
    raw::Conn rc(need(env.opt.raw_server, "--raw-server"));
    rof::Client client = connect_rofd(env.opt);
    const std::string t = bench_tenant(env.opt);
    std::uint64_t echo = load_program(client, t, "echo", kEchoProgram);
    rof::Session s = open_session(client, t);

    // 1..32 in flight (B5's batching), and the full window: the session's
    // credits (64 by default), the raw connection's receive depth the same.
    const std::size_t full = std::min<std::size_t>(s.credits(), raw::kDepth);
    std::vector<std::vector<double>> rows;
    double rof1 = 0, rof32 = 0, raw32 = 0;
    for (std::size_t w : {std::size_t(1), std::size_t(2), std::size_t(4), std::size_t(8),
                          std::size_t(16), std::size_t(32), full}) {
        double raw_rate =
            measure_rate(env, "raw echo, window " + std::to_string(w),
                         [&](std::uint64_t ns) { return rc.echo_window(kEchoBytes, w, ns); });
        double rof_rate =
            measure_rate(env, "offload echo, window " + std::to_string(w), [&](std::uint64_t ns) {
                return invoke_window({&s, 1}, echo, w, ns);
            });
        rows.push_back({double(w), raw_rate, rof_rate});
        if (w == 1) {
            rof1 = rof_rate;
        }
        if (w == 32) {
            rof32 = rof_rate;
            raw32 = raw_rate;
        }
        std::optional<Target> target;
        if (w == 32) {
            target = Target{Target::Cmp::ge, 0.8};  // B5
        } else if (w == full) {
            target = Target{Target::Cmp::ge, 0.9};  // ECHO with a full window
        }
        env.report.figure("rof_echo_ops_w" + std::to_string(w), rof_rate, "ops/s",
                          "raw_echo_ops_w" + std::to_string(w), raw_rate, target);
        if (w == full) {
            break;  // full may be below 32 with a smaller in-flight quota
        }
    }
    env.report.figure("rof_batching_gain_w32", rof32, "ops/s", "rof_echo_ops_w1", rof1);
    env.report.figure("raw_batching_gain_w32", raw32, "ops/s", "raw_echo_ops_w1", rows[0][1]);
    env.report.series("b5_throughput", "B5: echo throughput vs requests in flight",
                      "requests in flight", "operations/s",
                      {"in flight", "raw SEND/RECV echo", "offload echo (INVOKE)"}, rows, true);
    env.report.note(
        "one client thread, one session or connection; the VM has 2 vCPUs, shared by "
        "the client, the raw server's polling thread and the module's softirq work, so "
        "'per server core' is not separable here");
}

}  // namespace rofbench
