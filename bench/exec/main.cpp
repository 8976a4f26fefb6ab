// rof-bench-exec: case B9, the executor measured natively (docs/performance.md).
//
// On the build host, no VM: the userspace executor (rof_exec_user, kmod/rof_exec.c
// as rof.ko runs it) runs kv-get, list-find and crc-read (programs/*.rofs,
// assembled and verified as rofd loads them) over a warm table, against the same
// lookups written in plain C compiled with -O2 (ref/ref.c) over the same memory.  The
// memory and the bound slots are programs/tests' harness (runner.h).
//
// Before timing, every input runs through both and their answers (executor
// status, program status, response bytes) must be equal; a difference is a bug
// in one of them and the run fails (exit 1).  Timings are never checked.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <time.h>

#include "bench.h"
#include "ref.h"
#include "runner.h"

namespace {

using rof::programs::test::consts_disagree;
using rof::programs::test::consts_of;
using rof::programs::test::Invoker;
using rof::programs::test::load;
using rof::programs::test::Loaded;
using rof::programs::test::Memory;
using Bytes = std::vector<uint8_t>;

// What one invocation answered; status is the executor's (-1: the reference's fault).
struct Answer {
    int status = 0;
    uint32_t prog_status = 0;
    Bytes resp;
    bool operator==(const Answer&) const = default;
};

// One program over its memory, with the inputs it is timed on.
struct Workload {
    std::string name;
    Loaded prog;
    Memory mem;
    std::unique_ptr<Invoker> inv;
    std::vector<Bytes> inputs;
    // The reference on input @a: its status (-1: a fault), the response in @resp.
    std::function<int(const Bytes& a, uint8_t* resp, uint32_t* len)> ref;
};

template <typename T>
void put(Bytes& b, size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(v));
}

ref_mem mem_of(Memory& m, const std::string& region) {
    const auto s = m.bytes(region);
    return {s.data(), s.size()};
}

// kv-get over @keys keys of @vsize-byte values, SET with kv-put (in chunks, as KvClient does).
std::unique_ptr<Workload> kv_get(unsigned keys, unsigned vsize) {
    auto w = std::make_unique<Workload>();
    w->name = "kv-get";
    w->prog = load("kv-get");
    const auto c = consts_of("kv-get");
    if (const std::string n = consts_disagree(c, "kv-put"); !n.empty()) {
        throw std::runtime_error("kv-get.rofs and kv-put.rofs disagree on the geometry: " + n);
    }
    w->mem.add_region("kv_index", c.at("INDEX_LEN"));
    w->mem.add_region("kv_heap", c.at("HEAP_LEN"));
    w->mem.add_freelist("kv_heap", 0, 256, keys);
    w->mem.add_freelist("kv_heap", c.at("LARGE_AT"), 16 + 256 + c.at("MAXVAL"), keys);
    const Loaded putp = load("kv-put");
    Invoker putter(putp, w->mem, {{"", 0}, {"", 0}, {"kv_heap", 1}});
    for (unsigned i = 0; i < keys; i++) {
        char key[32];
        const int klen = std::snprintf(key, sizeof(key), "key:%08u", i);
        const size_t padded = (static_cast<size_t>(klen) + 7) & ~size_t{7};
        // In chunks of what one call's args hold after the header and the key, in order, as
        // librof's KvClient sets a value.
        const size_t room = putp.prog.args_max - 16 - padded;
        for (size_t voff = 0; voff == 0 || voff < vsize; voff += room) {
            const size_t n = std::min<size_t>(room, vsize - voff);
            Bytes a(16 + padded + n);
            put<uint32_t>(a, 0, static_cast<uint32_t>(klen));
            put<uint32_t>(a, 4, i);  // flags
            put<uint32_t>(a, 8, vsize);
            put<uint32_t>(a, 12, static_cast<uint32_t>(voff));
            std::memcpy(a.data() + 16, key, static_cast<size_t>(klen));
            for (size_t j = 0; j < n; j++) {
                a[16 + padded + j] = static_cast<uint8_t>(size_t{i} * 7 + voff + j);
            }
            const auto r = putter.run(a);
            if (r.status != ROF_ISA_OK || r.prog_status != 0) {
                throw std::runtime_error(
                    "kv-put of " + std::string(key) + " at " + std::to_string(voff) + ": status " +
                    std::to_string(r.status) + "/" + std::to_string(r.prog_status));
            }
        }
        Bytes g(8 + padded);
        put<uint32_t>(g, 0, static_cast<uint32_t>(klen));
        std::memcpy(g.data() + 8, key, static_cast<size_t>(klen));
        w->inputs.push_back(std::move(g));
    }
    Bytes miss(8 + 16);  // a key that is not there
    put<uint32_t>(miss, 0, 11);
    std::memcpy(miss.data() + 8, "key:missing", 11);
    w->inputs.push_back(std::move(miss));
    w->inv = std::make_unique<Invoker>(w->prog, w->mem);
    const ref_mem index = mem_of(w->mem, "kv_index"), heap = mem_of(w->mem, "kv_heap");
    const uint64_t mask = c.at("MASK");
    w->ref = [index, heap, mask](const Bytes& a, uint8_t* resp, uint32_t* len) {
        return ref_kv_get(index, heap, mask, a.data(), static_cast<uint32_t>(a.size()), resp, len);
    };
    return w;
}

// list-find over a list of @nodes nodes, looking for each node's key and for a missing one.
std::unique_ptr<Workload> list_find(unsigned nodes) {
    auto w = std::make_unique<Workload>();
    w->name = "list-find";
    w->prog = load("list-find");
    w->mem.add_region("list", 65536);
    nodes = std::clamp(nodes, 1u, 1000u);
    // Nodes 64 bytes apart, in a scattered order, as a list grown by inserts would be.
    auto at = [nodes](unsigned i) { return 64 * (1 + (i * 37) % nodes); };
    for (unsigned i = 0; i < nodes; i++) {
        w->mem.set_u64("list", at(i), 1000 + i);
        w->mem.set_u64("list", at(i) + 8, i + 1 < nodes ? at(i + 1) : 0);
        std::memset(w->mem.bytes("list").data() + at(i) + 16, static_cast<int>(i), 48);
    }
    for (unsigned i = 0; i <= nodes; i++) {
        Bytes a(32);
        put<uint64_t>(a, 0, at(0));
        put<uint64_t>(a, 8, 1000 + i);  // i == nodes: a miss, the whole list
        put<uint64_t>(a, 16, ~0ull);
        put<uint64_t>(a, 24, 0);  // EQ
        w->inputs.push_back(std::move(a));
    }
    w->inv = std::make_unique<Invoker>(w->prog, w->mem);
    const ref_mem list = mem_of(w->mem, "list");
    w->ref = [list](const Bytes& a, uint8_t* resp, uint32_t* len) {
        return ref_list_find(list, a.data(), resp, len);
    };
    return w;
}

// crc-read of each of the 1024 records, all written whole.
std::unique_ptr<Workload> crc_read() {
    auto w = std::make_unique<Workload>();
    w->name = "crc-read";
    w->prog = load("crc-read");
    w->mem.add_region("records", 65536);
    uint8_t* rec = w->mem.bytes("records").data();
    for (size_t i = 0; i < 1024; i++) {
        for (size_t j = 0; j < 56; j++) {
            rec[64 * i + j] = static_cast<uint8_t>(i * 13 + j);
        }
        const uint64_t crc = rof_exec_crc64(0, rec + 64 * i, 56);
        std::memcpy(rec + 64 * i + 56, &crc, 8);
        Bytes a(8);
        put<uint64_t>(a, 0, i);
        w->inputs.push_back(std::move(a));
    }
    w->inv = std::make_unique<Invoker>(w->prog, w->mem);
    const ref_mem records = mem_of(w->mem, "records");
    w->ref = [records](const Bytes& a, uint8_t* resp, uint32_t* len) {
        return ref_crc_read(records, a.data(), resp, len);
    };
    return w;
}

// One invocation as rof.ko makes it (rof_prog_invoke): a context on the stack, the
// session's scratch, a response buffer of resp_max.  Returns the executor's status.
struct Runner {
    Workload& w;
    Bytes resp;
    std::vector<rof_exec_op> code;  // decoded once, as rof.ko does at load
    explicit Runner(Workload& wl)
        : w(wl), resp(wl.prog.prog.resp_max), code(ROF_EXEC_CODE_LEN(wl.prog.prog.insns.size())) {
        const auto& p = w.prog.prog;
        rof_exec_decode(p.insns.data(), static_cast<uint32_t>(p.insns.size()), code.data());
    }
    int run(const Bytes& a, rof_exec_ctx& c) {
        const auto& p = w.prog.prog;
        const auto& regions = w.inv->regions();
        c = {};
        c.insns = p.insns.data();
        c.code = code.data();
        c.insn_cnt = static_cast<uint32_t>(p.insns.size());
        c.args = a.data();
        c.args_len = static_cast<uint32_t>(a.size());
        c.scratch = w.inv->scratch.empty() ? nullptr : w.inv->scratch.data();
        c.scratch_len = static_cast<uint32_t>(w.inv->scratch.size());
        c.resp = resp.empty() ? nullptr : resp.data();
        c.resp_cap = static_cast<uint32_t>(resp.size());
        c.regions = regions.empty() ? nullptr : regions.data();
        c.region_cnt = static_cast<uint32_t>(regions.size());
        c.budget = w.prog.budget;
        c.byte_budget = 1u << 20;  // rof.ko's default
        return rof_exec_run(&c);
    }
};

std::string describe(const Answer& a, int exec_status) {
    std::string s = a.status ? std::string("a fault (") + rof_exec_status_name(exec_status) + ")"
                             : "status " + std::to_string(a.prog_status);
    return s + " with " + std::to_string(a.resp.size()) + " bytes";
}

// Every input through the executor (as the timed loop runs it, and as the harness
// runs it) and the C reference: equal answers, or the run fails.  Returns the
// instructions the executor ran over one pass of the inputs.
uint64_t check(Workload& w) {
    Runner r(w);
    Bytes ref_resp(w.prog.prog.resp_max);
    uint64_t executed = 0;
    for (size_t i = 0; i < w.inputs.size(); i++) {
        const Bytes& a = w.inputs[i];
        const auto h = w.inv->run(a);
        const Answer harness{h.status == ROF_ISA_OK ? 0 : -1, h.prog_status, h.resp};
        std::fill(r.resp.begin(), r.resp.end(), 0);
        rof_exec_ctx c{};
        const int st = r.run(a, c);
        Answer e{st == ROF_ISA_OK ? 0 : -1, 0, {}};
        if (st == ROF_ISA_OK) {
            e.prog_status = c.prog_status;
            e.resp.assign(r.resp.begin(), r.resp.begin() + c.resp_len);
        }
        std::fill(ref_resp.begin(), ref_resp.end(), 0);
        uint32_t len = 0;
        const int rs = w.ref(a, ref_resp.data(), &len);
        Answer f{rs < 0 ? -1 : 0, rs < 0 ? 0u : static_cast<uint32_t>(rs), {}};
        if (rs >= 0) {
            f.resp.assign(ref_resp.begin(), ref_resp.begin() + len);
        }
        if (!(e == f) || !(e == harness)) {
            throw std::runtime_error(w.name + ": input " + std::to_string(i) +
                                     ": the executor answered " + describe(e, st) +
                                     ", the harness " + describe(harness, h.status) +
                                     ", the C reference " + describe(f, ROF_ISA_OK));
        }
        executed += c.executed;
    }
    return executed;
}

struct Timing {
    double exec_ns = 0, ref_ns = 0;  // per invocation, medians over the repetitions
};

// This thread's CPU time: the build host is shared, and time spent preempted is not the
// executor's.
uint64_t cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Passes over the inputs for @seconds, executor and reference in turn, @reps times.
Timing measure(Workload& w, double seconds, int reps) {
    Runner r(w);
    Bytes ref_resp(w.prog.prog.resp_max);
    uint64_t sink = 0;
    auto exec_pass = [&] {
        rof_exec_ctx c{};
        for (const Bytes& a : w.inputs) {
            sink += static_cast<uint64_t>(r.run(a, c)) + c.prog_status + c.resp_len;
        }
    };
    auto ref_pass = [&] {
        uint32_t len;
        for (const Bytes& a : w.inputs) {
            sink += static_cast<uint64_t>(w.ref(a, ref_resp.data(), &len)) + len;
        }
    };
    // Passes per repetition, from one timed pass of each.
    auto passes_for = [&](auto&& pass) {
        const uint64_t t0 = cpu_ns();
        pass();
        const double one = double(std::max<uint64_t>(cpu_ns() - t0, 1));
        return std::max<uint64_t>(1, static_cast<uint64_t>(seconds * 1e9 / one));
    };
    const uint64_t ne = passes_for(exec_pass), nr = passes_for(ref_pass);
    std::vector<double> e, f;
    const double n = double(w.inputs.size());
    for (int rep = 0; rep < reps; rep++) {
        uint64_t t0 = cpu_ns();
        for (uint64_t i = 0; i < ne; i++) {
            exec_pass();
        }
        e.push_back(double(cpu_ns() - t0) / (double(ne) * n));
        t0 = cpu_ns();
        for (uint64_t i = 0; i < nr; i++) {
            ref_pass();
        }
        f.push_back(double(cpu_ns() - t0) / (double(nr) * n));
    }
    if (sink == 42) {  // keeps both loops' results alive
        std::cerr << "";
    }
    return {median(e), median(f)};
}

}  // namespace

int run(int argc, char** argv) {
    CLI::App app{"rof-bench-exec: case B9, the userspace executor against the same lookups in C"};
    double seconds = 0.5;
    int reps = 5;
    bool smoke = false;
    unsigned keys = 1000, vsize = 64, nodes = 16;
    std::string json_out, only;
    app.add_option("--seconds", seconds, "time per repetition of each side (default 0.5)");
    app.add_option("--reps", reps, "repetitions; medians over them (default 5)");
    app.add_flag("--smoke", smoke, "a few passes: check the answers, keep the tool working");
    app.add_option("--keys", keys, "kv-get: keys in the table (default 1000)");
    app.add_option("--value-size", vsize, "kv-get: value bytes, 1..4096 (default 64)");
    app.add_option("--nodes", nodes, "list-find: nodes in the list (default 16)");
    app.add_option("--program", only, "only this program (kv-get, list-find, crc-read)");
    app.add_option("--json", json_out, "write the report (rof-bench's JSON) to this file");
    CLI11_PARSE(app, argc, argv);
    if (smoke) {
        seconds = 0.001;
        reps = 1;
    }
    if (vsize < 1 || vsize > 4096 || keys < 1 || keys > 1024 || reps < 1) {
        throw std::invalid_argument("--value-size 1..4096, --keys 1..1024, --reps >= 1");
    }

    rofbench::CaseReport rep("B9", "the executor natively: programs against the same C (-O2)");
    rep.note("host, no VM: rof_exec_user (kmod/rof_exec.c) against bench/exec/ref/ref.c");
    std::vector<std::unique_ptr<Workload>> ws;
    try {
        if (only.empty() || only == "kv-get") {
            ws.push_back(kv_get(keys, vsize));
        }
        if (only.empty() || only == "list-find") {
            ws.push_back(list_find(nodes));
        }
        if (only.empty() || only == "crc-read") {
            ws.push_back(crc_read());
        }
        if (ws.empty()) {
            throw std::invalid_argument("--program: kv-get, list-find or crc-read");
        }
        std::printf("%-10s %8s %10s %12s %12s %10s %7s %8s\n", "program", "inputs", "insns/inv",
                    "exec ns/inv", "exec ns/insn", "C ns/inv", "ratio", "target");
        for (auto& w : ws) {
            const uint64_t executed = check(*w);
            const double per_inv = double(executed) / double(w->inputs.size());
            rofbench::progress("B9", w->name);
            const Timing t = measure(*w, seconds, reps);
            const bool kv = w->name == "kv-get";
            std::printf("%-10s %8zu %10.1f %12.1f %12.2f %10.1f %6.2fx %8s\n", w->name.c_str(),
                        w->inputs.size(), per_inv, t.exec_ns, t.exec_ns / per_inv, t.ref_ns,
                        t.exec_ns / t.ref_ns, kv ? "<= 3x" : "");
            std::optional<rofbench::Target> target;
            if (kv) {
                target = rofbench::Target{rofbench::Target::Cmp::le, 3.0};
            }
            rep.figure(w->name + " per invocation", t.exec_ns, "ns", "the same in C -O2", t.ref_ns,
                       target);
            rep.figure(w->name + " per instruction", t.exec_ns / per_inv, "ns");
            rep.figure(w->name + " instructions per invocation", per_inv, "insns");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rof-bench-exec: %s\n", e.what());
        return 1;
    }
    if (!json_out.empty()) {
        nlohmann::json doc = {{"tool", "rof-bench-exec"},
                              {"smoke", smoke},
                              {"seconds", seconds},
                              {"reps", reps},
                              {"cases", nlohmann::json::array({rep.json()})}};
        std::ofstream(json_out) << doc.dump(2) << "\n";
    }
    return 0;
}

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rof-bench-exec: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "rof-bench-exec: an unknown exception\n");
    }
    return 1;
}
