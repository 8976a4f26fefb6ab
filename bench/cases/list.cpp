// B7: list traversal by offload (programs/list-find.rofs) against one READ
// per hop from the client, lists of 1..16 nodes (docs/performance.md).
#include <cstring>
#include <stdexcept>

#include "../common.h"
#include "rof/mapping.h"

namespace rofbench {

extern const char* const kListFindProgram;  // programs.cpp, from programs/list-find.rofs

namespace {

constexpr std::size_t kNode = 64;  // list-find's node: key, next, 48 bytes of value
constexpr std::uint64_t kListBytes = 65536;

// The slope of the least-squares line through (x, y).
double slope(const std::vector<double>& x, const std::vector<double>& y) {
    double n = double(x.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < x.size(); i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    double d = n * sxx - sx * sx;
    return d == 0 ? 0 : (n * sxy - sx * sy) / d;
}

}  // namespace

ROF_BENCH_CASE("B7", "list traversal of 1..16 nodes: offload vs one READ per hop") {
    rof::Client client = connect_rofd(env.opt);
    const std::string t = bench_tenant(env.opt);
    ensure_region(client, t, "bench_list", kListBytes);
    std::uint64_t find =
        load_program(client, t, "list-find", kListFindProgram, {{"list", "bench_list"}});
    rof::RegionMapping list = rof::RegionMapping::map(client, t, "bench_list", true);
    rof::Session s = open_session(client, t, {"bench_list"});

    // One list of 16 nodes, node i (key i + 1) at offset (i + 1) * 64; a
    // walk to key L visits L nodes.
    constexpr std::size_t kMaxLen = 16;
    for (std::size_t i = 0; i < kMaxLen; i++) {
        std::byte* n = list.data() + (i + 1) * kNode;
        std::uint64_t key = i + 1, next = i + 1 < kMaxLen ? (i + 2) * kNode : 0;
        std::memcpy(n, &key, 8);
        std::memcpy(n + 8, &next, 8);
        std::memset(n + 16, int('a' + i), 48);
    }

    std::vector<double> xs, off_us, rd_us;
    std::vector<std::vector<double>> rows;
    for (std::size_t len : {1, 2, 4, 8, 16}) {
        std::uint64_t args[4] = {kNode, len, ~0ULL, 0};  // head, key, mask, EQ
        std::array<std::byte, 64> resp{};
        Histogram off = measure_latency(env, "offload walk of " + std::to_string(len), [&] {
            invoke_ok(s, find, std::as_bytes(std::span(args)), resp);
            std::uint64_t key;
            std::memcpy(&key, resp.data() + 8, 8);
            if (key != len) {
                throw std::runtime_error("list-find: found key " + std::to_string(key));
            }
        });
        std::array<std::byte, kNode> node{};
        Histogram rd = measure_latency(env, "READ per hop, " + std::to_string(len), [&] {
            std::uint64_t at = kNode, key = 0;
            for (;;) {
                s.read("bench_list", at, node);
                std::memcpy(&key, node.data(), 8);
                if (key == len) {
                    break;
                }
                std::memcpy(&at, node.data() + 8, 8);
                if (!at) {
                    throw std::runtime_error("READ per hop: key not found");
                }
            }
        });
        xs.push_back(double(len));
        off_us.push_back(double(off.percentile(50)) / 1e3);
        rd_us.push_back(double(rd.percentile(50)) / 1e3);
        rows.push_back({double(len), off_us.back(), rd_us.back()});
        env.report.latency("offload_" + std::to_string(len), off);
        env.report.latency("read_per_hop_" + std::to_string(len), rd);
    }
    double so = slope(xs, off_us), sr = slope(xs, rd_us);
    env.report.figure("offload_us_per_hop", so, "us/hop", "read_us_per_hop", sr,
                      Target{Target::Cmp::le, 0.3});
    env.report.figure("offload_16_vs_reads_16", off_us.back(), "us", "reads_16", rd_us.back());
    env.report.series("b7_latency_vs_length", "B7: latency (median) vs list length", "nodes",
                      "latency (us)", {"nodes", "offload (list-find)", "one READ per hop"}, rows);
    env.report.note(
        "per-hop slopes are least-squares fits through the medians at 1, 2, 4, 8 and "
        "16 nodes; the READs go through the same session's grant of the same region");
}

}  // namespace rofbench
