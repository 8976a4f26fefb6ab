// SPDX-License-Identifier: MIT
#include "kv_layout.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace rofkv {

// kv_programs.cpp, generated from programs/kv-*.rofs (CMakeLists.txt).
extern const char* const kv_get_rofs;
extern const char* const kv_put_rofs;
extern const char* const kv_del_rofs;

namespace {

std::uint64_t page_up(std::uint64_t n) {
    return (n + 4095) & ~std::uint64_t{4095};
}

}  // namespace

Geometry Geometry::for_items(std::uint64_t items, std::uint64_t max_value) {
    if (items == 0 || items > kMaxItems) {
        throw std::invalid_argument("items: 1 .. " + std::to_string(kMaxItems));
    }
    if (max_value < kDefaultMaxValue || max_value > kMaxValueLimit ||
        (max_value & (max_value - 1)) != 0) {
        throw std::invalid_argument("max value: a power of two, " +
                                    std::to_string(kDefaultMaxValue) + " .. " +
                                    std::to_string(kMaxValueLimit));
    }
    Geometry g;
    g.items = items;
    g.max_value = max_value;
    g.chunk = std::min(max_value, kGetChunkLimit);
    g.msg_size = 8192;
    while (g.msg_size < 16 + g.chunk + 32) {  // ROF_INVOKE_RESP: msg_size - 32
        g.msg_size *= 2;
    }
    g.nbuckets = 16;
    while (g.nbuckets < items / 4) {
        g.nbuckets *= 2;
    }
    g.locks = kBucketsAt + g.nbuckets * 64;
    g.index_len = page_up(g.locks + g.nbuckets * 8);
    g.small_count = items;
    g.large_at = kFreeListHeader + items * kSmallBlock;
    g.large_block = kRecordHeader + max_value;
    g.large_count = std::max<std::uint64_t>(items / 16, 16);
    g.heap_len = page_up(g.large_at + kFreeListHeader + g.large_count * g.large_block);
    if (g.heap_len > (std::uint64_t{1} << 32)) {
        throw std::invalid_argument("items and max value: a heap of " + std::to_string(g.heap_len) +
                                    " bytes, past the 4 GiB an entry word's offset reaches");
    }
    return g;
}

IndexHeader header_of(const Geometry& g) {
    return {kIndexMagic, kLayoutVersion, g.nbuckets, g.items,
            g.large_at,  g.large_count,  g.heap_len, g.index_len};
}

std::vector<std::pair<std::string, std::uint64_t>> constants(const Geometry& g) {
    return {{"INDEX_LEN", g.index_len}, {"HEAP_LEN", g.heap_len}, {"MASK", g.nbuckets - 1},
            {"LOCKS", g.locks},         {"LARGE_AT", g.large_at}, {"MAXVAL", g.max_value},
            {"CHUNK", g.chunk},         {"RESP", 16 + g.chunk}};
}

std::string program_source(const std::string& name, const Geometry& g) {
    const char* text = name == "kv-get"   ? kv_get_rofs
                       : name == "kv-put" ? kv_put_rofs
                       : name == "kv-del" ? kv_del_rofs
                                          : nullptr;
    if (!text) {
        throw std::invalid_argument("no program " + name);
    }
    const auto consts = constants(g);
    std::istringstream in(text);
    std::string out, line;
    while (std::getline(in, line)) {
        for (const auto& [c, v] : consts) {
            const std::string head = ".const " + c + ",";
            if (line.rfind(head, 0) == 0) {
                line = head + " " + std::to_string(v);
            }
        }
        out += line;
        out += '\n';
    }
    return out;
}

}  // namespace rofkv
