// SPDX-License-Identifier: MIT
// The kvstore's geometry (README.md, programs/kv-get.rofs): how big the regions are for a
// number of items, where the heap's free lists and the index's locks are, and the programs'
// text for it.  Used by rof-kvstore (to create, check and format the regions, and to load the
// programs) and by rof-kv (to find the free lists).
#pragma once

#include <cstdint>
#include <string>

namespace rofkv {

inline constexpr std::uint64_t kSmallBlock = 256;                 // header + key + value <= 256
inline constexpr std::uint64_t kLargeBlock = 16 + 256 + 4096;     // the largest record
inline constexpr std::uint64_t kBucketsAt = 64;                   // after the index header
inline constexpr std::uint64_t kFreeListHeader = 64;              // struct rof_isa_freelist
inline constexpr std::uint64_t kIndexMagic = 0x5844495f564b4f52;  // "ROKV_IDX"
inline constexpr std::uint64_t kLayoutVersion = 1;
inline constexpr std::uint64_t kDefaultItems = 32768;
inline constexpr std::uint64_t kMaxItems = 1048576;  // a free list's most blocks

struct Geometry {
    std::uint64_t items = 0;
    std::uint64_t nbuckets = 0;     // a power of two
    std::uint64_t locks = 0;        // offset of the insert locks in kv_index
    std::uint64_t index_len = 0;    // kv_index's size
    std::uint64_t small_count = 0;  // free list 0: at 0, kSmallBlock blocks
    std::uint64_t large_at = 0;     // free list 1: its header's offset
    std::uint64_t large_count = 0;  // kLargeBlock blocks
    std::uint64_t heap_len = 0;     // kv_heap's size

    // For @items values (1 .. kMaxItems): buckets for twice as many ways as items, a small
    // block per item and a large one per 16 items (at least 16).
    static Geometry for_items(std::uint64_t items);
};

// The index region's header (64 bytes at 0), written last when formatting.
struct IndexHeader {
    std::uint64_t magic, version, nbuckets, items, large_at, large_count, heap_len, index_len;
};

IndexHeader header_of(const Geometry& g);

// programs/NAME.rofs ("kv-get", "kv-put", "kv-del") with its .const lines set for @g.
std::string program_source(const std::string& name, const Geometry& g);

}  // namespace rofkv
