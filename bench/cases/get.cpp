// B1 (hash GET by offload against one READ, the two-READ lookup, a userspace
// RPC server and stock memcached), B2 (the same under CPU saturation of the
// server) and B3 (GETs while rofd and the kvstore's server are killed).
// docs/performance.md.
#include <sched.h>
#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

#include "../common.h"
#include "../raw.h"
#include "kv_client.h"

namespace rofbench {
namespace {

std::vector<std::size_t> sizes_of(const Options& o) {
    std::vector<std::size_t> out;
    std::stringstream ss(o.param("sizes", "64,256,1024,4096,16384,65536"));
    std::string x;
    while (std::getline(ss, x, ',')) {
        std::size_t n = std::stoul(x);
        if (n == 0 || n > rofkv::kMaxValue) {
            throw std::invalid_argument("--set sizes: " + x + " is not 1.." +
                                        std::to_string(rofkv::kMaxValue));
        }
        out.push_back(n);
    }
    return out;
}

// --set b1_ways=offload,rpc: the ways B1 measures (default all), so that a profile
// (bench/run --perf) shows one way, or two, at a time.  A figure is reported when both of its
// ways ran.
std::set<std::string> ways_of(const Options& o) {
    static const std::set<std::string> all = {"offload", "read", "two_reads", "rpc", "memcached"};
    std::set<std::string> out;
    std::stringstream ss(o.param("b1_ways", "offload,read,two_reads,rpc,memcached"));
    std::string x;
    while (std::getline(ss, x, ',')) {
        if (!all.count(x)) {
            throw std::invalid_argument("--set b1_ways: " + x +
                                        " is not offload, read, two_reads, rpc or memcached");
        }
        out.insert(x);
    }
    return out;
}

std::string value_of(std::size_t key, std::size_t len) {
    std::string v(len, '\0');
    for (std::size_t i = 0; i < len; i++) {
        v[i] = char('a' + (key * 7 + i) % 26);
    }
    return v;
}

// Every way of doing one GET of a value of @len bytes, each checking what it
// got; keys cycle through @keys of them, stored at set-up.
class Getters {
  public:
    Getters(const Env& env, std::size_t len)
        : len_(len),
          nkeys_(std::size_t(env.opt.param_int("keys", env.opt.smoke ? 8 : 64))),
          client_(connect_rofd(env.opt)),
          kvs_(open_kv(kv_tenant(env.opt))),
          kv_(kvs_),
          raw_(need(env.opt.raw_server, "--raw-server"), len) {
        // A second kvstore, on the C builds of the same programs (bench/run --kv-c).
        if (const std::string t = env.opt.param("kv_c_tenant", ""); !t.empty()) {
            kvcs_.emplace(open_kv(t));
            kvc_.emplace(*kvcs_);
        }
        if (raw_.hello().items < nkeys_ || raw_.hello().vmax < len) {
            throw std::runtime_error("rof-bench-server's table is too small for this case");
        }
        if (!env.opt.memcached.empty()) {
            mc_.emplace(env.opt.memcached);
        }
        for (std::size_t i = 0; i < nkeys_; i++) {
            keys_.push_back("bench:" + std::to_string(len) + ":" + std::to_string(i));
            values_.push_back(value_of(i, len));
            if (kv_.set(keys_[i], values_[i]) != rofkv::Status::ok ||
                (kvc_ && kvc_->set(keys_[i], values_[i]) != rofkv::Status::ok)) {
                throw std::runtime_error("kvstore: cannot store " + keys_[i]);
            }
            if (mc_) {
                mc_->set(keys_[i], values_[i]);
            }
        }
    }

    // The keys go with the case: the kvstore's large blocks (one per value over 256 bytes with
    // its key) are as many as B1's keys of four sizes, not of every size at once.
    ~Getters() {
        try {
            for (const std::string& k : keys_) {
                kv_.del(k);
                if (kvc_) {
                    kvc_->del(k);
                }
            }
        } catch (const std::exception& e) {
            progress("B1", std::string("could not delete the case's keys: ") + e.what());
        }
    }
    Getters(const Getters&) = delete;
    Getters& operator=(const Getters&) = delete;

    bool has_memcached() const { return mc_.has_value(); }
    bool has_c_build() const { return kvc_.has_value(); }

    // The offload: kv-get, one INVOKE per 32 KiB of the value (the kv tenant's 64 KiB messages:
    // one INVOKE up to 32768 bytes, two for 65536).
    void offload() { offload_on(kv_, "offload GET "); }
    // The same on the kvstore that runs the C builds of its programs.
    void offload_c() { offload_on(*kvc_, "offload GET (C build) "); }
    // One READ of the value, its address known.
    void read() {
        std::size_t i = next();
        raw_.read(raw_.hello().heap_addr + i * raw_.hello().vmax, len_);
    }
    void two_reads() { raw_.lookup(next() + 1, len_); }
    void rpc() { raw_.get(next() + 1, len_); }
    void memcached() {
        std::size_t i = next();
        if (mc_->get(keys_[i]) != len_) {
            throw std::runtime_error("memcached GET " + keys_[i] + ": wrong length");
        }
    }

  private:
    void offload_on(rofkv::KvClient& kv, const char* what) {
        std::size_t i = next();
        rofkv::Status st = kv.get(keys_[i], got_);
        if (st != rofkv::Status::ok || got_ != values_[i]) {
            throw std::runtime_error(what + keys_[i] + ": " + rofkv::status_name(st) +
                                     (st == rofkv::Status::ok ? " with a wrong value" : ""));
        }
    }
    rof::Session open_kv(const std::string& tenant) {
        rof::SessionOptions so = rofkv::KvClient::session_options(tenant);
        so.busy_poll = true;
        return rof::Session::open(client_, so);
    }
    std::size_t next() { return at_++ % nkeys_; }

    std::size_t len_, nkeys_, at_ = 0;
    rof::Client client_;
    rof::Session kvs_;
    rofkv::KvClient kv_;
    std::optional<rof::Session> kvcs_;
    std::optional<rofkv::KvClient> kvc_;
    raw::Conn raw_;
    std::optional<Memcached> mc_;
    std::vector<std::string> keys_, values_;
    std::string got_;
};

double p50_us(const Histogram& h) {
    return double(h.percentile(50)) / 1e3;
}
double p99_us(const Histogram& h) {
    return double(h.percentile(99)) / 1e3;
}

// Pins the calling thread to @cpu for its lifetime, then restores.
class Pin {
  public:
    explicit Pin(long cpu) {
        sched_getaffinity(0, sizeof(old_), &old_);
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(int(cpu), &set);
            sched_setaffinity(0, sizeof(set), &set);
        }
    }
    ~Pin() { sched_setaffinity(0, sizeof(old_), &old_); }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

  private:
    cpu_set_t old_{};
};

// stress-ng as a child, stopped (SIGTERM, reaped) when this goes.
class Stress {
  public:
    Stress(long workers, const std::string& cpus) {
        // Its temporary files where the caller's are: the VM's root is read-only.
        const char* tmp = std::getenv("TMPDIR");
        std::vector<std::string> a = {"stress-ng", "--cpu", std::to_string(workers), "--temp-path",
                                      tmp && *tmp ? tmp : "/tmp"};
        if (!cpus.empty()) {
            a.insert(a.end(), {"--taskset", cpus});
        }
        pid_ = spawn(std::move(a));
    }
    ~Stress() {
        kill(pid_, SIGTERM);
        int st = 0;
        waitpid(pid_, &st, 0);
    }
    // Throws unless stress-ng is still running: a load that died measured nothing.
    void check() const {
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == pid_) {
            throw std::runtime_error("stress-ng exited (wait status " + std::to_string(st) + ")");
        }
    }
    Stress(const Stress&) = delete;
    Stress& operator=(const Stress&) = delete;

  private:
    pid_t pid_ = -1;
};

}  // namespace

ROF_BENCH_CASE("B1", "hash GET: offload vs one READ, two READs, RPC, memcached, by value size") {
    std::vector<std::vector<double>> rows;
    auto& r = env.report;
    const std::set<std::string> ways = ways_of(env.opt);
    for (std::size_t len : sizes_of(env.opt)) {
        Getters g(env, len);
        std::string at = " " + std::to_string(len) + " B";
        std::map<std::string, Histogram> h;  // by way, those measured
        // With the C builds: each GET of the assembly's followed by one of the C's, so that
        // both see the same conditions.
        Histogram offc;
        if (ways.count("offload") && g.has_c_build()) {
            std::tie(h["offload"], offc) = measure_latency_pair(
                env, "offload GET, assembly and C builds" + at, [&] { g.offload(); },
                [&] { g.offload_c(); });
        } else if (ways.count("offload")) {
            h["offload"] = measure_latency(env, "offload GET" + at, [&] { g.offload(); });
        }
        if (ways.count("read")) {
            h["read"] = measure_latency(env, "one READ" + at, [&] { g.read(); });
        }
        if (ways.count("two_reads")) {
            h["two_reads"] = measure_latency(env, "two-READ lookup" + at, [&] { g.two_reads(); });
        }
        if (ways.count("rpc")) {
            h["rpc"] = measure_latency(env, "RPC GET" + at, [&] { g.rpc(); });
        }
        if (ways.count("memcached") && g.has_memcached()) {
            h["memcached"] = measure_latency(env, "memcached GET" + at, [&] { g.memcached(); });
        }
        const std::string sz = std::to_string(len) + "B";
        auto p50 = [&](const char* way) { return h.count(way) ? p50_us(h[way]) : 0.0; };
        // The offload's median against @way's, when both ran.
        auto against = [&](const char* way, std::optional<Target> t) {
            if (h.count("offload") && h.count(way)) {
                r.figure("get_" + sz + "_vs_" + way, p50("offload"), "us", way + ("_" + sz),
                         p50(way), t);
            }
        };
        against("read", Target{Target::Cmp::le, 1.5});
        against("two_reads", Target{Target::Cmp::le, 0.75});
        against("rpc", Target{Target::Cmp::le, 1.0});
        against("memcached", std::nullopt);
        if (g.has_c_build() && h.count("offload")) {
            r.figure("get_c_" + sz + "_vs_get", p50_us(offc), "us", "get_" + sz, p50("offload"));
            r.latency("offload_c_" + sz, offc);
        }
        for (const auto& [way, hist] : h) {
            r.latency(way + "_" + sz, hist);
        }
        rows.push_back({double(len), p50("offload"), p50("read"), p50("two_reads"), p50("rpc"),
                        p50("memcached")});
    }
    r.series("b1_latency_vs_size", "B1: GET latency (median) vs value size", "value bytes",
             "latency (us)",
             {"bytes", "offload GET", "one READ", "two-READ lookup", "RPC GET", "memcached GET"},
             rows, true, true);
    r.note(
        "the kvstore holds values of up to 64 KiB (rof-kvstore --max-value 65536): kv-get answers "
        "up to 32768 bytes an INVOKE on the kv tenant's 64 KiB messages, so a 65536-byte GET is "
        "two INVOKEs; the RPC server copies a value of up to 4096 bytes into its reply and sends "
        "a larger one from its table (a second SGE, no copy); one READ and the two-READ lookup "
        "read the value in one READ");
    if (env.opt.memcached.empty()) {
        r.note("memcached not measured: no --memcached");
    }
    if (env.opt.param("kv_c_tenant", "").empty()) {
        r.note(
            "the kvstore's programs are the assembly (programs/kv-*.rofs); bench/run --kv-c "
            "also measures their C builds (get_c_*)");
    }
}

ROF_BENCH_CASE("B2", "GET while the server's CPU is saturated: offload vs RPC, p99") {
    const std::size_t len = std::size_t(env.opt.param_int("b2_size", 64));
    Pin pin(env.opt.param_int("client_cpu", 0));
    Getters g(env, len);
    Histogram off_idle = measure_latency(env, "offload GET, idle", [&] { g.offload(); });
    Histogram rpc_idle = measure_latency(env, "RPC GET, idle", [&] { g.rpc(); });
    Histogram off_busy, rpc_busy;
    {
        Stress load(env.opt.param_int("stress_workers", 2), env.opt.param("stress_cpus", "1"));
        off_busy = measure_latency(env, "offload GET, CPU saturated", [&] { g.offload(); });
        rpc_busy = measure_latency(env, "RPC GET, CPU saturated", [&] { g.rpc(); });
        load.check();
    }
    auto& r = env.report;
    r.figure("p99_offload_vs_rpc_saturated", p99_us(off_busy), "us", "p99_rpc_saturated",
             p99_us(rpc_busy), Target{Target::Cmp::le, 0.1});
    r.figure("p50_offload_vs_rpc_saturated", p50_us(off_busy), "us", "p50_rpc_saturated",
             p50_us(rpc_busy));
    r.figure("p99_offload_saturated_vs_idle", p99_us(off_busy), "us", "p99_offload_idle",
             p99_us(off_idle));
    r.figure("p99_rpc_saturated_vs_idle", p99_us(rpc_busy), "us", "p99_rpc_idle", p99_us(rpc_idle));
    r.latency("offload_idle", off_idle);
    r.latency("rpc_idle", rpc_idle);
    r.latency("offload_saturated", off_busy);
    r.latency("rpc_saturated", rpc_busy);
    r.cdf("b2_cdf", "B2: GET latency with the server's CPU saturated (stress-ng)",
          {{"offload, idle", &off_idle},
           {"RPC, idle", &rpc_idle},
           {"offload, saturated", &off_busy},
           {"RPC, saturated", &rpc_busy}});
    r.note("stress-ng --cpu " + std::to_string(env.opt.param_int("stress_workers", 2)) +
           " on CPU " + env.opt.param("stress_cpus", "1") +
           ", where rof-bench-server's polling thread runs; the client is pinned to CPU " +
           std::to_string(env.opt.param_int("client_cpu", 0)) +
           ". Under soft-RoCE the module's work runs in the softirq of the CPU that received the "
           "packet, which here is the client's: the offload does not compete with the load the "
           "way the RPC server's thread does, as on a NIC it would not either");
}

ROF_BENCH_CASE("B3", "GETs while rofd and the kvstore's server are killed (kill -9), repeatedly") {
    const std::string cmd = need(env.opt.param("kill_cmd", ""), "--set kill_cmd=COMMAND");
    const double period = std::stod(env.opt.param("kill_period", env.opt.smoke ? "0.1" : "0.5"));
    const std::size_t len = std::size_t(env.opt.param_int("b3_size", 64));
    Getters g(env, len);
    std::uint64_t failed = 0, ok = 0;
    auto get = [&] {
        try {
            g.offload();
            ok++;
        } catch (const std::exception& e) {
            if (failed++ < 5) {
                progress("B3", std::string("GET failed: ") + e.what());
            }
        }
    };
    Histogram calm = measure_latency(env, "GET, no kills", get);
    std::uint64_t failed_calm = failed;
    failed = 0;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> kills{0}, kill_errors{0};
    std::thread killer([&] {
        for (std::uint64_t round = 0; !stop.load(); round++) {
            std::this_thread::sleep_for(std::chrono::duration<double>(period));
            std::string c = cmd + " " + std::to_string(round);
            (std::system(c.c_str()) == 0 ? kills : kill_errors)++;
        }
    });
    Histogram killed;
    try {
        killed = measure_latency(env, "GET, kill loop", get);
    } catch (...) {
        stop = true;
        killer.join();
        throw;
    }
    stop = true;
    killer.join();
    auto& r = env.report;
    r.bound("failed_or_lost_with_kills", double(failed), "requests", Target::Cmp::le, 0);
    r.bound("failed_or_lost_without_kills", double(failed_calm), "requests", Target::Cmp::le, 0);
    r.figure("p99_with_kills", p99_us(killed), "us", "p99_without_kills", p99_us(calm),
             Target{Target::Cmp::le, 1.5});
    r.figure("kills", double(kills.load()), "kills");
    r.latency("without_kills", calm);
    r.latency("with_kills", killed);
    r.cdf("b3_cdf", "B3: GET latency with and without kill -9 of rofd and rof-kvstore",
          {{"no kills", &calm}, {"kill loop", &killed}});
    r.note("kill command: '" + cmd + " ROUND' every " + std::to_string(period) + " s; " +
           std::to_string(kill_errors.load()) + " rounds failed; " + std::to_string(ok) +
           " GETs answered in all, every value checked");
}

}  // namespace rofbench
