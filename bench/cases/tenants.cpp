// B4 (an aggressor tenant at its rate limit beside a well-behaved one) and B6
// (1 to 1024 sessions across 64 tenants; connect time against a raw rdma_cm
// connect).  docs/performance.md.
#include <array>
#include <atomic>
#include <stdexcept>
#include <thread>

#include "../common.h"
#include "../raw.h"

namespace rofbench {
namespace {

std::uint64_t tenant_ops_limit(rof::Client& c, const std::string& tenant) {
    rof::v1::GetTenantRequest req;
    req.set_name(tenant);
    return c.get_tenant(req).tenant_rate().ops_per_sec();
}

}  // namespace

ROF_BENCH_CASE("B4", "an aggressor tenant offering 10x its rate limit beside a victim tenant") {
    const std::string aggr = env.opt.param("aggressor", "aggressor");
    const std::string victim = env.opt.param("victim", "victim");
    rof::Client client = connect_rofd(env.opt);
    const std::uint64_t limit = tenant_ops_limit(client, aggr);
    if (!limit) {
        throw std::runtime_error("tenant " + aggr + " has no [rate.tenant] ops_per_sec");
    }
    std::uint64_t tag_a = load_program(client, aggr, "echo", kEchoProgram);
    std::uint64_t tag_v = load_program(client, victim, "echo", kEchoProgram);
    rof::Session as = open_session(client, aggr);
    rof::Session vs = open_session(client, victim);
    std::array<std::byte, kEchoBytes> args{}, resp{};
    auto victim_op = [&] { invoke_ok(vs, tag_v, args, resp); };

    // What a full window offers, unlimited: the victim's own rate.
    double offered = 0;
    {
        rof::Session full = open_session(client, victim);
        offered = measure_rate(env, "unlimited full-window rate", [&](std::uint64_t ns) {
            return invoke_window({&full, 1}, tag_v, 64, ns);
        });
    }

    Histogram alone = measure_latency(env, "victim alone", victim_op);
    std::atomic<bool> stop{false};
    std::uint64_t aggr_done = 0;
    std::uint64_t t0 = now_ns();
    const std::size_t window = std::size_t(env.opt.param_int("b4_window", 64));
    std::thread flood([&] {
        aggr_done = invoke_window({&as, 1}, tag_a, window, UINT64_MAX, &stop);
    });
    Histogram beside;
    try {
        beside = measure_latency(env, "victim beside the aggressor", victim_op);
    } catch (...) {
        stop = true;
        flood.join();
        throw;
    }
    stop = true;
    flood.join();
    double achieved = double(aggr_done) * 1e9 / double(now_ns() - t0);
    // The module's view of the aggressor's session: answered, and held back.
    rof::v1::GetSessionRequest gs;
    gs.set_id(as.id());
    const rof::v1::Session info = client.get_session(gs);

    auto& r = env.report;
    auto p99 = [](const Histogram& h) { return double(h.percentile(99)) / 1e3; };
    r.figure("aggressor_offered_vs_limit", offered, "ops/s", "limit", double(limit),
             Target{Target::Cmp::ge, 10});
    r.figure("aggressor_achieved_vs_limit", achieved, "ops/s", "limit", double(limit),
             Target{Target::Cmp::within, 0.05});
    r.figure("victim_p99_beside_vs_alone", p99(beside), "us", "victim_p99_alone", p99(alone),
             Target{Target::Cmp::le, 1.2});
    r.latency("victim_alone", alone);
    r.latency("victim_beside_aggressor", beside);
    r.cdf("b4_cdf", "B4: the victim's latency, alone and beside an aggressor at its limit",
          {{"victim alone", &alone}, {"victim beside the aggressor", &beside}});
    r.note("the aggressor keeps a full window (" + std::to_string(window) +
           ") of echo INVOKEs in flight for the whole measurement (warm-up included, in the "
           "achieved rate); what a full window offers "
           "unlimited is measured on the victim tenant. The limit is the aggressor's "
           "[rate.tenant] ops_per_sec, read from rofd. The module counted " +
           std::to_string(info.counters().requests()) + " requests answered and " +
           std::to_string(info.counters().deferred()) +
           " waits for tokens on the aggressor's "
           "session, " +
           std::to_string(aggr_done) + " completions seen by the client");
}

ROF_BENCH_CASE("B6", "1 to 1024 sessions across 64 tenants; connect time vs raw rdma_cm") {
    const std::size_t max_sessions =
        std::size_t(env.opt.param_int("b6_max", env.opt.smoke ? 16 : 1024));
    const std::size_t ntenants = std::size_t(env.opt.param_int("b6_tenants", 64));
    const std::size_t window = std::size_t(env.opt.param_int("b6_window", 4));
    const std::string prefix = env.opt.param("b6_prefix", "t");
    rof::Client client = connect_rofd(env.opt);
    auto tenant = [&](std::size_t i) {
        char b[32];
        std::snprintf(b, sizeof b, "%02zu", i % ntenants);
        return prefix + b;
    };
    std::vector<std::uint64_t> tags;
    for (std::size_t i = 0; i < std::min(ntenants, max_sessions); i++) {
        progress("B6", "loading echo for " + tenant(i));
        tags.push_back(load_program(client, tenant(i), "echo", kEchoProgram));
    }
    // Every tenant's echo is the same image: one tag serves them all.
    for (auto t : tags) {
        if (t != tags[0]) {
            throw std::runtime_error("echo has different tags in different tenants");
        }
    }

    // Raw rdma_cm connects (with the server's first message, as a session's
    // connect waits for the module's answer) against Session::open.
    const std::size_t nconn = env.opt.smoke ? 5 : 100;
    Histogram raw_connect, rof_connect;
    if (!env.opt.raw_server.empty()) {
        progress("B6", "raw rdma_cm connects");
        for (std::size_t i = 0; i < nconn; i++) {
            std::uint64_t t0 = now_ns();
            raw::Conn c(env.opt.raw_server);
            raw_connect.record(now_ns() - t0);
        }
    }

    std::vector<rof::Session> ss;
    std::vector<std::vector<double>> rows;
    double peak = 0, last = 0;
    rof::SessionOptions so;
    so.depth = std::uint32_t(window);
    so.max_transfer = 64;
    for (std::size_t n = 1; n <= max_sessions; n *= 4) {
        progress("B6", "opening sessions up to " + std::to_string(n));
        while (ss.size() < n) {
            so.tenant = tenant(ss.size());
            std::uint64_t t0 = now_ns();
            ss.push_back(rof::Session::open(client, so));
            rof_connect.record(now_ns() - t0);
        }
        double rate = measure_rate(env, std::to_string(n) + " sessions", [&](std::uint64_t ns) {
            return invoke_window(ss, tags[0], window, ns);
        });
        rows.push_back({double(n), rate});
        peak = std::max(peak, rate);
        last = rate;
        if (n * 4 > max_sessions && n != max_sessions) {
            n = max_sessions / 4;  // the last point is max_sessions itself
        }
    }
    auto& r = env.report;
    r.figure("throughput_at_" + std::to_string(ss.size()) + "_sessions", last, "ops/s", "peak",
             peak, Target{Target::Cmp::ge, 0.8});
    auto ms = [](const Histogram& h, double p) { return double(h.percentile(p)) / 1e6; };
    if (raw_connect.count()) {
        r.figure("connect_p50_ms", ms(rof_connect, 50), "ms", "raw_rdma_cm_connect_p50_ms",
                 ms(raw_connect, 50));
        r.figure("connect_p99_ms", ms(rof_connect, 99), "ms", "raw_rdma_cm_connect_p99_ms",
                 ms(raw_connect, 99));
        r.latency("raw_rdma_cm_connect", raw_connect);
    }
    r.latency("session_open", rof_connect);
    r.series("b6_throughput_vs_sessions", "B6: aggregate echo throughput vs sessions", "sessions",
             "operations/s", {"sessions", "offload echo (INVOKE)"}, rows, true);
    r.note(std::to_string(window) +
           " INVOKEs in flight per session, one client thread polling "
           "every session in turn; sessions spread over " +
           std::to_string(ntenants) +
           " tenants. Session::open is OpenSession through rofd, then the rdma_cm connect with "
           "its ticket; the raw connect is rdma_cm to rof-bench-server and its first message");
}

}  // namespace rofbench
