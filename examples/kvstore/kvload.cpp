// SPDX-License-Identifier: MIT
// rof-kvload: a YCSB-like load client of the kvstore over rofkv::KvClient
// (GETs, SETs by offload, one rof::Session per thread).
//
// Every value it writes says whose it is (kvload.h), so every value it
// reads is checked: another key's value, a torn or corrupt value, a value
// of this thread older than its own last completed SET of the key, a value
// claiming a write that was never issued, or a miss of a key known stored
// (nothing deletes) is a wrong value.
//
// SIGINT or SIGTERM ends the run within a second; the report follows as
// usual.
//
// Exit status: 0 no errors and no wrong values; 1 errors (rof::Error,
// busy, full, too_big) but no wrong values; 3 wrong values; 2 usage or
// setup failure.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kv_client.h"
#include "kvload.h"
#include "rof/client.h"
#include "rof/error.h"
#include "rof/session.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string socket, tenant;
    std::uint32_t keys = 10000;
    std::size_t key_size = 16, value_min = 32, value_max = 4096;
    char workload = 'a';
    bool zipf = true, preload = false, json = false, progress = true;
    unsigned threads = 2;
    double seconds = 10;
    std::uint64_t ops = 0;   // 0: run for seconds
    std::uint64_t rate = 0;  // operations a second, all threads together; 0: as fast as they go
    std::chrono::milliseconds connect_timeout = rof::SessionOptions{}.connect_timeout;
};

// The options of every session the run opens.
rof::SessionOptions session_options(const Options& o) {
    rof::SessionOptions so = rofkv::KvClient::session_options(o.tenant);
    so.connect_timeout = o.connect_timeout;
    return so;
}

// With @why: the reason on stderr, then the usage, exit 2; without (--help):
// the usage on stdout, exit 0.
[[noreturn]] void usage(const std::string& why) {
    std::ostream& out = why.empty() ? std::cout : std::cerr;
    if (!why.empty()) {
        out << "rof-kvload: " << why << "\n";
    }
    out << "usage: rof-kvload [--socket PATH] [--tenant NAME] [--keys N] [--key-size N]\n"
           "         [--value-size B|MIN-MAX] [--workload a|b] [--dist uniform|zipf]\n"
           "         [--threads T] [--seconds S | --ops N] [--rate OPS] [--preload] [--json]\n"
           "         [--quiet] [--connect-timeout MS]\n"
           "See rof-kvload(1).\n";
    std::exit(why.empty() ? 0 : 2);
}

std::uint64_t number(const std::string& opt, const std::string& s) {
    try {
        std::size_t end = 0;
        auto v = std::stoull(s, &end);
        if (end == s.size()) {
            return v;
        }
    } catch (const std::exception&) {
    }
    usage(opt + ": not a number: " + s);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto arg = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage(a + " needs a value");
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage("");
        } else if (a == "--socket") {
            o.socket = arg();
        } else if (a == "--tenant") {
            o.tenant = arg();
        } else if (a == "--keys") {
            o.keys = static_cast<std::uint32_t>(number(a, arg()));
        } else if (a == "--key-size") {
            o.key_size = number(a, arg());
        } else if (a == "--value-size") {
            std::string v = arg();
            auto dash = v.find('-');
            o.value_min = number(a, v.substr(0, dash));
            o.value_max = dash == std::string::npos ? o.value_min : number(a, v.substr(dash + 1));
        } else if (a == "--workload") {
            std::string v = arg();
            if (v != "a" && v != "b") {
                usage("--workload: a or b");
            }
            o.workload = v[0];
        } else if (a == "--dist") {
            std::string v = arg();
            if (v != "uniform" && v != "zipf") {
                usage("--dist: uniform or zipf");
            }
            o.zipf = v == "zipf";
        } else if (a == "--threads") {
            o.threads = static_cast<unsigned>(number(a, arg()));
        } else if (a == "--seconds") {
            o.seconds = static_cast<double>(number(a, arg()));
        } else if (a == "--ops") {
            o.ops = number(a, arg());
        } else if (a == "--rate") {
            o.rate = number(a, arg());
        } else if (a == "--preload") {
            o.preload = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--quiet") {
            o.progress = false;
        } else if (a == "--connect-timeout") {
            std::uint64_t ms = number(a, arg());
            if (ms < 1 || ms > 600000) {
                usage("--connect-timeout: 1 to 600000 ms");
            }
            o.connect_timeout = std::chrono::milliseconds(ms);
        } else {
            usage("unknown option " + a);
        }
    }
    if (o.keys == 0 || o.threads == 0 || o.threads > 0xffff) {
        usage("--keys and --threads must be positive");
    }
    if (o.key_size < 8 || o.key_size > rofkv::kMaxKey) {
        usage("--key-size: 8 to " + std::to_string(rofkv::kMaxKey));
    }
    if (o.value_min < kvload::kMinValue || o.value_max > kvload::kMaxValue ||
        o.value_min > o.value_max || o.value_max > rofkv::kMaxValue) {
        usage(
            "--value-size: 32 to 65535 (the store's --max-value at most), MIN-MAX with MIN <= MAX");
    }
    if (o.key_size < kvload::key_name(o.keys - 1, 0).size()) {
        usage("--key-size too small for --keys");
    }
    return o;
}

enum Op { op_get, op_set, op_count };
constexpr const char* op_names[op_count] = {"get", "set"};

// What every thread shares.
struct Shared {
    explicit Shared(const Options& o) : opts(o), stored(o.keys), issued(o.threads) {
        for (auto& v : issued) {
            v = std::make_unique<std::vector<std::atomic<std::uint32_t>>>(o.keys);
        }
    }
    const Options& opts;
    rof::Client* client = nullptr;
    std::vector<std::atomic<bool>> stored;  // some SET of the key completed
    // issued[w][k]: the highest sequence writer w started for key k.
    std::vector<std::unique_ptr<std::vector<std::atomic<std::uint32_t>>>> issued;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> ops_left{0};
    std::atomic<std::uint64_t> done{0}, errors{0}, wrong{0}, reconnects{0};
    std::mutex mu;  // for the lines below
    std::map<std::string, std::uint64_t> error_codes;
    std::vector<std::string> wrong_samples;
};

struct Worker {
    Shared& sh;
    unsigned id;
    std::mt19937_64 rng;
    std::unique_ptr<rof::Session> session;
    std::unique_ptr<rofkv::KvClient> kv;
    std::vector<std::uint32_t> mine;  // last completed SET's sequence per key; 0 none
    std::uint32_t seq = 0;
    std::array<kvload::Histogram, op_count> lat;
    std::array<std::uint64_t, op_count> count{};
    std::uint64_t misses = 0;
    std::uint64_t restarts = 0;  // GETs started again: the value changed between chunks
    std::string value;

    Worker(Shared& s, unsigned i) : sh(s), id(i), rng(0x6b766c6f6164ull + i), mine(s.opts.keys) {}

    void error(const std::string& code, const std::string& what) {
        sh.errors.fetch_add(1);
        std::lock_guard lk(sh.mu);
        if (sh.error_codes[code]++ == 0 && sh.opts.progress) {
            std::cerr << "rof-kvload: thread " << id << ": " << code << ": " << what << "\n";
        }
    }
    void wrong(std::uint32_t key, const std::string& why) {
        sh.wrong.fetch_add(1);
        std::lock_guard lk(sh.mu);
        if (sh.wrong_samples.size() < 10) {
            sh.wrong_samples.push_back(kvload::key_name(key, sh.opts.key_size) + ": " + why);
        }
    }

    // (Re)opens the session; false if stopping first.  The sessions live in
    // rof.ko: a rofd or kvstore restart does not end them, but if one ends
    // (or was never opened) this waits for rofd and opens another.
    bool connect() {
        kv.reset();
        session.reset();
        while (!sh.stop.load()) {
            try {
                session = std::make_unique<rof::Session>(
                    rof::Session::open(*sh.client, session_options(sh.opts)));
                kv = std::make_unique<rofkv::KvClient>(*session);
                return true;
            } catch (const rof::Error& e) {
                error(std::string(rof::code_name(e.code())), e.what());
                session.reset();
                // Open waits for rofd within its deadline; a refusal is
                // not worth hammering.
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
        }
        return false;
    }

    void set(std::uint32_t key) {
        std::size_t len = sh.opts.value_min;
        if (sh.opts.value_max > len) {
            len = std::uniform_int_distribution<std::size_t>(sh.opts.value_min,
                                                             sh.opts.value_max)(rng);
        }
        std::uint32_t s = ++seq;
        (*sh.issued[id])[key].store(s);
        auto v = kvload::encode({key, s, static_cast<std::uint16_t>(id)}, len);
        auto t0 = Clock::now();
        auto st = kv->set(kvload::key_name(key, sh.opts.key_size), v);
        lat[op_set].record(static_cast<std::uint64_t>((Clock::now() - t0).count()));
        ++count[op_set];
        if (st == rofkv::Status::ok) {
            mine[key] = s;
            sh.stored[key].store(true);
        } else {
            error(std::string("kv ") + rofkv::status_name(st), "set");
        }
    }

    void get(std::uint32_t key) {
        bool known = sh.stored[key].load();
        std::uint32_t floor = mine[key];
        const std::uint64_t restarted = kv->get_restarts();
        auto t0 = Clock::now();
        auto st = kv->get(kvload::key_name(key, sh.opts.key_size), value);
        lat[op_get].record(static_cast<std::uint64_t>((Clock::now() - t0).count()));
        ++count[op_get];
        restarts += kv->get_restarts() - restarted;
        if (st == rofkv::Status::not_found) {
            ++misses;
            if (known) {
                wrong(key, "miss of a key stored before");
            }
            return;
        }
        if (st != rofkv::Status::ok) {
            error(std::string("kv ") + rofkv::status_name(st), "get");
            return;
        }
        kvload::Stamp got;
        auto c = kvload::check(value, key, got);
        if (c != kvload::Check::ok) {
            wrong(key, kvload::check_name(c));
            return;
        }
        if (got.writer >= sh.opts.threads || got.seq > (*sh.issued[got.writer])[key].load()) {
            // Not necessarily wrong: a previous run's value.  Only a value
            // claiming one of this run's writes that was never issued is.
            if (got.writer == id && got.seq > seq) {
                wrong(key, "a write never issued");
            }
            return;
        }
        if (got.writer == id && got.seq < floor) {
            wrong(key, "older than this thread's completed SET (seq " + std::to_string(got.seq) +
                           " < " + std::to_string(floor) + ")");
        }
    }

    void one(Op op, std::uint32_t key) {
        if (!kv && !connect()) {
            return;
        }
        try {
            if (op == op_get) {
                get(key);
            } else {
                set(key);
            }
        } catch (const rof::Error& e) {
            error(std::string(rof::code_name(e.code())), e.what());
            sh.reconnects.fetch_add(1);
            connect();
        }
        sh.done.fetch_add(1, std::memory_order_relaxed);
    }

    bool take() {
        if (sh.opts.ops == 0) {
            return !sh.stop.load(std::memory_order_relaxed);
        }
        std::uint64_t left = sh.ops_left.load();
        while (left > 0 && !sh.ops_left.compare_exchange_weak(left, left - 1)) {
        }
        return left > 0 && !sh.stop.load(std::memory_order_relaxed);
    }

    void preload() {
        for (std::uint32_t k = id; k < sh.opts.keys && !sh.stop.load(); k += sh.opts.threads) {
            one(op_set, k);
        }
    }

    // --rate: waits until this thread's @n-th operation is due, the run's
    // rate spread evenly over the threads (a thread that fell behind does
    // not wait); false if the run stops first.
    bool paced(Clock::time_point start, std::uint64_t n) const {
        auto due =
            start +
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                static_cast<double>(n) * sh.opts.threads / static_cast<double>(sh.opts.rate)));
        for (auto now = Clock::now(); now < due; now = Clock::now()) {
            if (sh.stop.load()) {
                return false;
            }
            std::this_thread::sleep_until(std::min(due, now + std::chrono::milliseconds(100)));
        }
        return true;
    }

    void run() {
        kvload::Zipf zipf(sh.opts.zipf ? sh.opts.keys : 1);
        std::uniform_int_distribution<std::uint32_t> uni(0, sh.opts.keys - 1);
        std::uniform_int_distribution<int> pct(0, 99);
        int get_pct = sh.opts.workload == 'a' ? 50 : 95;
        auto start = Clock::now();
        for (std::uint64_t n = 0; take() && (sh.opts.rate == 0 || paced(start, n)); ++n) {
            auto key = static_cast<std::uint32_t>(sh.opts.zipf ? zipf(rng) : uni(rng));
            one(pct(rng) < get_pct ? op_get : op_set, key);
        }
    }
};

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}
double us(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    // SIGINT and SIGTERM end the run early: blocked here, before any thread
    // starts, and taken by the ticker below, which stops the workers.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::unique_ptr<rof::Client> client;
    try {
        rof::ClientOptions co;
        co.target = o.socket;
        client = std::make_unique<rof::Client>(co);
    } catch (const rof::Error& e) {
        std::cerr << "rof-kvload: " << e.what() << "\n";
        return 2;
    }
    Shared sh(o);
    sh.client = client.get();
    sh.ops_left = o.ops;

    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned i = 0; i < o.threads; ++i) {
        workers.push_back(std::make_unique<Worker>(sh, i));
    }
    // The first sessions are opened before the clock starts; a refusal here
    // is a setup failure, not a load error.
    try {
        for (auto& w : workers) {
            w->session =
                std::make_unique<rof::Session>(rof::Session::open(*client, session_options(o)));
            w->kv = std::make_unique<rofkv::KvClient>(*w->session);
        }
    } catch (const rof::Error& e) {
        std::cerr << "rof-kvload: opening a session: " << e.what() << "\n";
        return 2;
    }

    auto parallel = [&](void (Worker::*fn)()) {
        std::vector<std::jthread> ts;
        ts.reserve(workers.size());
        for (auto& w : workers) {
            ts.emplace_back([&w, fn] { ((*w).*fn)(); });
        }
    };
    if (o.preload) {
        auto t0 = Clock::now();
        parallel(&Worker::preload);
        if (o.progress) {
            std::cerr << "rof-kvload: preloaded " << o.keys << " keys in "
                      << std::chrono::duration<double>(Clock::now() - t0).count() << " s\n";
        }
        for (auto& w : workers) {  // the run's figures start after the preload
            w->lat = {};
            w->count = {};
        }
    }
    std::uint64_t preload_done = sh.done.load();

    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    auto start = Clock::now();
    if (o.progress) {
        std::cerr << "rof-kvload: run started" << std::endl;
    }
    std::jthread ticker([&] {
        std::unique_lock lk(mu);
        std::uint64_t last = preload_done;
        auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.seconds));
        for (int sec = 1;; ++sec) {
            auto next = start + std::chrono::seconds(sec);
            bool timed = o.ops == 0;
            if (timed && deadline < next) {
                next = deadline;
            }
            if (cv.wait_until(lk, next, [&] { return finished; })) {
                return;
            }
            const timespec now{};
            if ((timed && Clock::now() >= deadline) ||
                sigtimedwait(&stop_signals, nullptr, &now) > 0) {
                sh.stop = true;
                return;
            }
            std::uint64_t d = sh.done.load();
            if (o.progress) {
                std::fprintf(stderr, "rof-kvload: %3ds %8llu ops/s  errors %llu  wrong %llu\n", sec,
                             static_cast<unsigned long long>(d - last),
                             static_cast<unsigned long long>(sh.errors.load()),
                             static_cast<unsigned long long>(sh.wrong.load()));
            }
            last = d;
        }
    });
    parallel(&Worker::run);
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    {
        std::lock_guard lk(mu);
        finished = true;
    }
    cv.notify_all();
    ticker.join();

    std::array<kvload::Histogram, op_count> lat;
    std::array<std::uint64_t, op_count> count{};
    std::uint64_t misses = 0, restarts = 0;
    for (auto& w : workers) {
        for (int i = 0; i < op_count; ++i) {
            lat[i].merge(w->lat[i]);
            count[i] += w->count[i];
        }
        misses += w->misses;
        restarts += w->restarts;
    }
    std::uint64_t ops = count[op_get] + count[op_set];
    double tput = elapsed > 0 ? static_cast<double>(ops) / elapsed : 0;
    std::uint64_t errors = sh.errors.load(), wrong = sh.wrong.load();

    if (o.json) {
        std::printf(
            "{\"ops\":%llu,\"seconds\":%.3f,\"ops_per_sec\":%.1f,\"threads\":%u,\"keys\":%u,"
            "\"workload\":\"%c\",\"dist\":\"%s\",\"misses\":%llu,\"errors\":%llu,\"wrong\":%llu,"
            "\"reconnects\":%llu,\"get_restarts\":%llu",
            static_cast<unsigned long long>(ops), elapsed, tput, o.threads, o.keys, o.workload,
            o.zipf ? "zipf" : "uniform", static_cast<unsigned long long>(misses),
            static_cast<unsigned long long>(errors), static_cast<unsigned long long>(wrong),
            static_cast<unsigned long long>(sh.reconnects.load()),
            static_cast<unsigned long long>(restarts));
        for (int i = 0; i < op_count; ++i) {
            std::printf(
                R"(,"%s":{"ops":%llu,"p50_us":%.1f,"p99_us":%.1f,"p999_us":%.1f,"max_us":%.1f})",
                op_names[i], static_cast<unsigned long long>(count[i]), us(lat[i].percentile(50)),
                us(lat[i].percentile(99)), us(lat[i].percentile(99.9)), us(lat[i].max()));
        }
        std::printf(",\"error_codes\":{");
        const char* sep = "";
        for (auto& [code, n] : sh.error_codes) {
            std::printf("%s\"%s\":%llu", sep, code.c_str(), static_cast<unsigned long long>(n));
            sep = ",";
        }
        std::printf("}}\n");
    } else {
        std::printf("ops %llu in %.1f s: %.0f ops/s (%u threads, %u keys, workload %c, %s)\n",
                    static_cast<unsigned long long>(ops), elapsed, tput, o.threads, o.keys,
                    o.workload == 'a' ? 'A' : 'B', o.zipf ? "zipf" : "uniform");
        for (int i = 0; i < op_count; ++i) {
            std::printf("  %-3s %10llu  p50 %8.1f us  p99 %8.1f us  p99.9 %8.1f us  max %8.2f ms\n",
                        op_names[i], static_cast<unsigned long long>(count[i]),
                        us(lat[i].percentile(50)), us(lat[i].percentile(99)),
                        us(lat[i].percentile(99.9)), ms(lat[i].max()));
        }
        std::printf(
            "misses %llu  errors %llu  wrong values %llu  reconnects %llu  get restarts %llu\n",
            static_cast<unsigned long long>(misses), static_cast<unsigned long long>(errors),
            static_cast<unsigned long long>(wrong),
            static_cast<unsigned long long>(sh.reconnects.load()),
            static_cast<unsigned long long>(restarts));
        for (auto& [code, n] : sh.error_codes) {
            std::printf("  error %s: %llu\n", code.c_str(), static_cast<unsigned long long>(n));
        }
    }
    for (auto& s : sh.wrong_samples) {
        std::cerr << "rof-kvload: wrong value: " << s << "\n";
    }
    std::fflush(stdout);
    return wrong ? 3 : errors ? 1 : 0;
}
