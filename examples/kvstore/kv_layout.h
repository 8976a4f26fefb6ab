// SPDX-License-Identifier: MIT
// The kvstore's geometry (README.md, programs/kv-get.rofs): how big the regions are for a
// number of items, where the heap's free lists and the index's locks are, and the programs'
// text for it.  Used by rof-kvstore (to create, check and format the regions, and to load the
// programs) and by rof-kv (to find the free lists).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rofkv {

inline constexpr std::uint64_t kSmallBlock = 256;         // header + key + value <= 256
inline constexpr std::uint64_t kRecordHeader = 16 + 256;  // a record's header and key, at most
inline constexpr std::uint64_t kDefaultMaxValue = 4096;   // rof-kvstore --max-value
inline constexpr std::uint64_t kMaxValueLimit = 65536;    // --max-value at most
inline constexpr std::uint64_t kGetChunkLimit = 32768;    // kv-get's CHUNK at most
inline constexpr std::uint64_t kBucketsAt = 64;           // after the index header
inline constexpr std::uint64_t kFreeListHeader = 64;      // struct rof_isa_freelist
inline constexpr std::uint64_t kIndexMagic = 0x5844495f564b4f52;  // "ROKV_IDX"
inline constexpr std::uint64_t kLayoutVersion = 1;
inline constexpr std::uint64_t kDefaultItems = 32768;
inline constexpr std::uint64_t kMaxItems = 1048576;  // a free list's most blocks

struct Geometry {
    std::uint64_t items = 0;
    std::uint64_t max_value = 0;    // the largest value, a power of two
    std::uint64_t chunk = 0;        // the most of a value one kv-get response carries
    std::uint64_t msg_size = 0;     // the session message size kv-get's response needs
    std::uint64_t nbuckets = 0;     // a power of two
    std::uint64_t locks = 0;        // offset of the insert locks in kv_index
    std::uint64_t index_len = 0;    // kv_index's size
    std::uint64_t small_count = 0;  // free list 0: at 0, kSmallBlock blocks
    std::uint64_t large_at = 0;     // free list 1: its header's offset
    std::uint64_t large_block = 0;  // kRecordHeader + max_value: the largest record
    std::uint64_t large_count = 0;  // large_block blocks
    std::uint64_t heap_len = 0;     // kv_heap's size

    // For @items values (1 .. kMaxItems) of at most @max_value bytes (a power of two,
    // kDefaultMaxValue .. kMaxValueLimit): buckets for twice as many ways as items, a small
    // block per item and a large one per 16 items (at least 16).  kv-get answers up to
    // min(max_value, kGetChunkLimit) bytes of a value per call, in a response that needs
    // sessions of msg_size-byte messages: 8 KiB for 4096-byte values, 64 KiB from 32768.
    // Throws std::invalid_argument for an item count or a value size out of range, or a heap
    // past 4 GiB (an entry word holds a 32-bit offset: 1048576 items of 65536 bytes).
    static Geometry for_items(std::uint64_t items, std::uint64_t max_value = kDefaultMaxValue);
};

// The index region's header (64 bytes at 0), written last when formatting.  It holds no
// max_value: a table's value size shows in its heap (large_count blocks of kRecordHeader +
// max_value; two sizes differ by at least 16 * 4096 bytes, more than heap_len's rounding), so
// a store started with another --max-value finds kv_heap of another size and stops.
struct IndexHeader {
    std::uint64_t magic, version, nbuckets, items, large_at, large_count, heap_len, index_len;
};

IndexHeader header_of(const Geometry& g);

// The programs' sizes for @g, by the names of the .rofs' .const lines and kv.h's defines:
// INDEX_LEN, HEAP_LEN, MASK, LOCKS, LARGE_AT, MAXVAL, CHUNK, RESP (16 + CHUNK).
std::vector<std::pair<std::string, std::uint64_t>> constants(const Geometry& g);

// programs/NAME.rofs ("kv-get", "kv-put", "kv-del") with its .const lines set to constants(g).
std::string program_source(const std::string& name, const Geometry& g);

}  // namespace rofkv
