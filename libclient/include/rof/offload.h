/* SPDX-License-Identifier: MIT */
/*
 * rof/offload.h: offload programs written in C (docs/programs.md, "Offloads
 * in C").  Compile with clang's BPF target and translate the object:
 *
 *     clang -target bpf -mcpu=v3 -O2 -g -c inc.c -o inc.o
 *     rofctl prog verify inc.o
 *
 * A program is one function marked ROF_PROGRAM; it receives the length of
 * its arguments and returns its program status.  Its memory spaces are
 * declared with the ROF_ARGS, ROF_SCRATCH, ROF_RESP and ROF_REGION macros;
 * they are ordinary (extern) C objects, read and written with ordinary C.
 * Pointers into a space stay in that space: a pointer is the offset into its
 * space (docs/isa.md section 1), so a C pointer may be compared and
 * subtracted only with pointers into the same space, and an offset read from
 * memory becomes a pointer with ROF_AT(type, region, offset).
 *
 *     #include <rof/offload.h>
 *
 *     ROF_ARGS(struct { uint64_t idx; }, args, 8, 8);
 *     ROF_RESP(uint64_t, out, 8);
 *     ROF_REGION(uint64_t, counters, ROF_RA, 4096);
 *
 *     ROF_PROGRAM int inc(uint64_t args_len)
 *     {
 *             if (args.idx >= 512)
 *                     return 1;
 *             out = __sync_fetch_and_add(&counters[args.idx], 1) + 1;
 *             return 0;
 *     }
 *
 * The operations of the ISA that C has no operator for are functions here
 * (rof_copy, rof_crc64, rof_hash, rof_respond, rof_alloc, rof_free); 8-byte
 * atomics are the compiler's __sync builtins.  Loops need a bound the
 * translator can see: a counter that steps by a constant and is compared
 * with a constant, e.g. `for (i = 0; i < n && i < 64; i++)`.
 */
#ifndef ROF_OFFLOAD_H
#define ROF_OFFLOAD_H

#ifndef __bpf__
#error "rof/offload.h is for offload programs: compile with clang -target bpf"
#endif

typedef __UINT8_TYPE__ rof_u8;
typedef __UINT16_TYPE__ rof_u16;
typedef __UINT32_TYPE__ rof_u32;
typedef __UINT64_TYPE__ rof_u64;

/* <stdint.h>'s names, the same types (a repeated typedef is valid C11). */
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;

/* Region access (ROF_ACCESS_* of uapi/rof.h) and slot flags. */
#define ROF_READ 1u
#define ROF_WRITE 2u
#define ROF_ATOMIC 4u
#define ROF_R ROF_READ
#define ROF_RW (ROF_READ | ROF_WRITE)
#define ROF_RA (ROF_READ | ROF_ATOMIC)
#define ROF_RWA (ROF_READ | ROF_WRITE | ROF_ATOMIC)
#define ROF_FREELIST 1u /* ALLOC/FREE use this slot (needs ROF_ATOMIC) */

/* ALLOC's answer when the free list is empty (ROF_ISA_NULL). */
#define ROF_NULL 0xffffffffffffffffull

/*
 * The declarations the translator reads, one record per space, in section
 * ".rof.decl".  The layout is the translator's (libclient/prog/bpf.cpp).
 */
struct rof_decl {
    rof_u32 kind; /* ROF_DECL_* */
    rof_u32 access;
    rof_u32 flags;
    rof_u32 min;
    rof_u64 len;
    char name[32];
};

#define ROF_DECL_ARGS 1
#define ROF_DECL_SCRATCH 2
#define ROF_DECL_RESP 3
#define ROF_DECL_REGION 4

#define ROF__DECL(kind_, name_, access_, flags_, min_, len_)        \
    static const struct rof_decl __rof_decl_##name_ __attribute__(( \
        section(".rof.decl"), used)) = {(kind_), (access_), (flags_), (min_), (len_), #name_}

/* The request: a `type` object called `name`, min..max bytes long. */
#define ROF_ARGS(type, name, min, max) \
    extern type name;                  \
    ROF__DECL(ROF_DECL_ARGS, name, 0, 0, (min), (max))

/* The session's scratch, sizeof(type) bytes, kept across invocations. */
#define ROF_SCRATCH(type, name) \
    extern type name;           \
    ROF__DECL(ROF_DECL_SCRATCH, name, 0, 0, 0, sizeof(type))

/* The response buffer, max bytes; the response is what the program wrote. */
#define ROF_RESP(type, name, max) \
    extern type name;             \
    ROF__DECL(ROF_DECL_RESP, name, 0, 0, 0, (max))

/*
 * A region slot: an array of `type` called `name` (also the slot's name,
 * which the tenant's policy binds), a window of len bytes, with `access`
 * (ROF_R, ROF_RW, ROF_RA, ROF_RWA); ROF_REGION_FREELIST for ALLOC/FREE.
 */
#define ROF_REGION(type, name, access, len) \
    extern type name[];                     \
    ROF__DECL(ROF_DECL_REGION, name, (access), 0, 0, (len))
#define ROF_REGION_FREELIST(type, name, access, len) \
    extern type name[];                              \
    ROF__DECL(ROF_DECL_REGION, name, (access), ROF_FREELIST, 0, (len))

/* The object of `type` at byte offset `off` of a space. */
#define ROF_AT(type, space, off) ((type*)((char*)(space) + (off)))
/* The byte offset of a pointer into a space. */
#define ROF_OFF(space, ptr) ((rof_u64)((char*)(ptr) - (char*)(space)))

/*
 * A load the compiler must not merge with an earlier one of the same
 * place, as the kernel's READ_ONCE: to see whether another session changed
 * a word since the program read it (`if (ROF_READ_ONCE(*slot) != seen)`).
 */
#define ROF_READ_ONCE(x) (*(const volatile __typeof__(x)*)&(x))

/* The program: int name(uint64_t args_len), returning its status. */
#define ROF_PROGRAM __attribute__((section("rof"), used))

/*
 * The operations without a C operator: BPF helper calls with constant ids,
 * translated to one ISA instruction each (docs/isa.md section 4).
 */
#define ROF_HELPER_COPY 1
#define ROF_HELPER_CRC64 2
#define ROF_HELPER_HASH 3
#define ROF_HELPER_RESPOND 4
#define ROF_HELPER_ALLOC 5
#define ROF_HELPER_FREE 6
#define ROF_HELPER_COPY_BOUNDED 7

/* COPY: memmove of len bytes (at most the smaller space); returns len. */
static rof_u64 (*const rof_copy)(void* dst, const void* src, rof_u64 len) = (void*)ROF_HELPER_COPY;
/* CRC64: CRC-64/XZ of len bytes, chained from crc (start from 0). */
static rof_u64 (*const rof_crc64)(rof_u64 crc, const void* p,
                                  rof_u64 len) = (void*)ROF_HELPER_CRC64;
/* HASH: the ISA's hash64 of len bytes with seed. */
static rof_u64 (*const rof_hash)(rof_u64 seed, const void* p, rof_u64 len) = (void*)ROF_HELPER_HASH;
/*
 * RESPOND: ends the program with a response of exactly len bytes and the
 * constant status; write `return rof_respond(len, status);`.
 */
static int (*const rof_respond)(rof_u64 len, int status) = (void*)ROF_HELPER_RESPOND;
/* ALLOC: a block of the region's free list (its offset), or ROF_NULL. */
static rof_u64 (*const rof_alloc)(const void* region) = (void*)ROF_HELPER_ALLOC;
/* FREE: gives the block at offset off back to the region's free list. */
static void (*const rof_free)(const void* region, rof_u64 off) = (void*)ROF_HELPER_FREE;
/*
 * COPY, bounded source (PRISM's <ptr, bound>): pair points at two u64,
 * an offset into `region` and a length; copies min(len, bound) bytes of
 * region from that offset to dst, len a constant cap; returns the count.
 */
static rof_u64 (*const rof_copy_bounded)(void* dst, const void* region, const void* pair,
                                         rof_u64 len) = (void*)ROF_HELPER_COPY_BOUNDED;

/*
 * PRISM's enhanced CAS (docs/isa.md section 4, CAS) on `width` bytes (8,
 * 16, 24 or 32, a constant) of a region: with M those bytes of *target, as
 * one unsigned number, if (M & cmp_mask) MODE (cmp & cmp_mask) then
 * M = (M & ~swap_mask) | (swap & swap_mask).  `ops` points at the operand
 * block, a struct rof_cas64 or rof_cas128 (in scratch or a local); mode is
 * a constant ROF_CAS_EQ .. ROF_CAS_GE, or'ed with ROF_CAS_OLD to have the
 * bytes seen before the swap written to ops->old.  Returns 1 if it swapped,
 * else 0.  The target needs ROF_ATOMIC; a 16-byte CAS is atomic against
 * other wide CAS only (docs/isa.md section 5).
 */
#define ROF_HELPER_CAS 8
#define ROF_CAS_EQ 0
#define ROF_CAS_NE 1
#define ROF_CAS_LT 2
#define ROF_CAS_LE 3
#define ROF_CAS_GT 4
#define ROF_CAS_GE 5
#define ROF_CAS_OLD 0x100

/* Operand blocks; a 16-byte value's words are [0] low, [1] high. */
struct rof_cas64 {
    rof_u64 cmp, swap, cmp_mask, swap_mask, old;
};
struct rof_cas128 {
    rof_u64 cmp[2], swap[2], cmp_mask[2], swap_mask[2], old[2];
};

static int (*const rof_cas)(void* target, void* ops, rof_u64 width,
                            rof_u64 mode) = (void*)ROF_HELPER_CAS;

#endif /* ROF_OFFLOAD_H */
