// SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT)
/*
 * B9's reference lookups in plain C (ref.h).  They compute what the ISA's
 * HASH and CRC64 compute with the same algorithms (FNV-1a with the fmix64
 * finaliser; CRC-64/XZ a nibble at a time, as kmod/rof_exec.c does), so
 * the ratio to the executor is the interpreter's cost, not a better hash.
 */
#include "ref.h"

#include <string.h>

static const uint64_t crc64_nibble[16] = {
    0x0000000000000000ULL, 0x7d9ba13851336649ULL, 0xfb374270a266cc92ULL, 0x86ace348f355aadbULL,
    0x64b62bcaebc387a1ULL, 0x192d8af2baf0e1e8ULL, 0x9f8169ba49a54b33ULL, 0xe21ac88218962d7aULL,
    0xc96c5795d7870f42ULL, 0xb4f7f6ad86b4690bULL, 0x325b15e575e1c3d0ULL, 0x4fc0b4dd24d2a599ULL,
    0xadda7c5f3c4488e3ULL, 0xd041dd676d77eeaaULL, 0x56ed3e2f9e224471ULL, 0x2b769f17cf112238ULL,
};

static uint64_t crc64(const uint8_t* p, uint64_t len) {
    uint64_t crc = ~0ULL, i;

    for (i = 0; i < len; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ crc64_nibble[crc & 0xf];
        crc = (crc >> 4) ^ crc64_nibble[crc & 0xf];
    }
    return ~crc;
}

static uint64_t hash64(const uint8_t* p, uint64_t len) {
    uint64_t h = 0xcbf29ce484222325ULL, i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint64_t ld64(const uint8_t* p) {
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
}

static uint32_t ld32(const uint8_t* p) {
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* Whether [off, off + size) lies inside @m. */
static int in(struct ref_mem m, uint64_t off, uint64_t size) {
    return off <= m.len && size <= m.len - off;
}

int ref_kv_get(struct ref_mem index, struct ref_mem heap, uint64_t mask, const uint8_t* args,
               uint32_t args_len, uint8_t* resp, uint32_t* resp_len) {
    uint32_t klen = ld32(args), hw = 0;
    uint64_t padded, h, b1, b2, tag;
    int attempt, way;

    *resp_len = 0;
    if (klen == 0 || klen > 250)
        return 4;
    padded = (klen + 7) & ~7ULL;
    if (padded + 8 > args_len)
        return 4;
    h = hash64(args + 8, klen);
    b1 = ((h & mask) << 6) + 64;
    b2 = (((h >> 40) & mask) << 6) + 64;
    tag = (h >> 24) & 0xffff;
    for (attempt = 0; attempt < 8; attempt++) {
        for (way = 0; way < 16; way++) {
            uint64_t at = (way < 8 ? b1 : b2) + 8 * (way & 7);
            uint64_t e, blk, vlen, voff, n, k;

            if (!in(index, at, 8))
                return -1;
            e = ld64(index.base + at);
            blk = (uint32_t)e;
            if (!blk || ((e >> 32) & 0xffff) != tag)
                continue;
            if (!in(heap, blk, 16 + padded))
                return -1;
            if (ld32(heap.base + blk) != klen)
                goto mismatch;
            for (k = 0; k < padded; k += 8)
                if (ld64(args + 8 + k) != ld64(heap.base + blk + 16 + k))
                    goto mismatch;
            vlen = ld32(heap.base + blk + 4);
            if (vlen > 4096)
                break; /* torn: again */
            voff = ld32(args + 4);
            if (voff > vlen) {
                *resp_len = hw;
                return 4;
            }
            n = vlen - voff < 4096 ? vlen - voff : 4096;
            if (!in(heap, blk + padded + voff + 16, n))
                return -1;
            memcpy(resp + 16, heap.base + blk + padded + voff + 16, n);
            if (16 + n > hw)
                hw = (uint32_t)(16 + n);
            if (ld64(index.base + at) != e)
                break; /* changed under the copy: again */
            memcpy(resp, heap.base + blk + 8, 4);
            memcpy(resp + 4, &vlen, 4);
            memcpy(resp + 8, &e, 8);
            *resp_len = (uint32_t)(16 + n);
            return 0;
        mismatch:
            if (ld64(index.base + at) != e)
                break; /* the block was reused: again */
        }
        if (way == 16) {
            *resp_len = hw;
            return 1;
        }
    }
    *resp_len = hw;
    return 3;
}

int ref_list_find(struct ref_mem list, const uint8_t* args, uint8_t* resp, uint32_t* resp_len) {
    uint64_t node = ld64(args), key = ld64(args + 8);
    uint64_t mask = ld64(args + 16), cmp = ld64(args + 24);
    int trip;

    *resp_len = 0;
    if (cmp > 3)
        return 3;
    key &= mask;
    if (!node)
        return 1;
    for (trip = 0; trip < 1024; trip++) {
        uint64_t k;
        int hit;

        if (!in(list, node, 16))
            return -1;
        k = ld64(list.base + node) & mask;
        hit = cmp == 0 ? k == key : cmp == 1 ? k != key : cmp == 2 ? k < key : k > key;
        if (hit) {
            if (!in(list, node, 64))
                return -1;
            memcpy(resp, &node, 8);
            memcpy(resp + 8, list.base + node, 8);
            memcpy(resp + 16, list.base + node + 16, 48);
            *resp_len = 64;
            return 0;
        }
        node = ld64(list.base + node + 8);
        if (!node)
            return 1;
    }
    return 2;
}

int ref_crc_read(struct ref_mem records, const uint8_t* args, uint8_t* resp, uint32_t* resp_len) {
    uint64_t idx = ld64(args), off;
    int tries;

    *resp_len = 0;
    if (idx >= 1024)
        return 2;
    off = idx << 6;
    if (!in(records, off, 64))
        return -1;
    *resp_len = 64;
    for (tries = 0; tries < 8; tries++) {
        memcpy(resp, records.base + off, 64);
        if (crc64(resp, 56) == ld64(resp + 56))
            return 0;
    }
    return 1;
}
