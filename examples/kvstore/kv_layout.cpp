// SPDX-License-Identifier: MIT
#include "kv_layout.h"

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

Geometry Geometry::for_items(std::uint64_t items) {
    if (items == 0 || items > kMaxItems) {
        throw std::invalid_argument("items: 1 .. " + std::to_string(kMaxItems));
    }
    Geometry g;
    g.items = items;
    g.nbuckets = 16;
    while (g.nbuckets < items / 4) {
        g.nbuckets *= 2;
    }
    g.locks = kBucketsAt + g.nbuckets * 64;
    g.index_len = page_up(g.locks + g.nbuckets * 8);
    g.small_count = items;
    g.large_at = kFreeListHeader + items * kSmallBlock;
    g.large_count = std::max<std::uint64_t>(items / 16, 16);
    g.heap_len = page_up(g.large_at + kFreeListHeader + g.large_count * kLargeBlock);
    return g;
}

IndexHeader header_of(const Geometry& g) {
    return {kIndexMagic, kLayoutVersion, g.nbuckets, g.items,
            g.large_at,  g.large_count,  g.heap_len, g.index_len};
}

std::string program_source(const std::string& name, const Geometry& g) {
    const char* text = name == "kv-get"   ? kv_get_rofs
                       : name == "kv-put" ? kv_put_rofs
                       : name == "kv-del" ? kv_del_rofs
                                          : nullptr;
    if (!text) {
        throw std::invalid_argument("no program " + name);
    }
    const std::pair<const char*, std::uint64_t> consts[] = {
        {"INDEX_LEN", g.index_len}, {"HEAP_LEN", g.heap_len}, {"MASK", g.nbuckets - 1},
        {"LOCKS", g.locks},         {"LARGE_AT", g.large_at},
    };
    std::istringstream in(text);
    std::string out, line;
    while (std::getline(in, line)) {
        for (const auto& [c, v] : consts) {
            const std::string head = std::string(".const ") + c + ",";
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
