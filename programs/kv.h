/* kv.h: the kvstore's table, as kv-get.c, kv-put.c and kv-del.c see it (the
 * assembly's account of it is kv-get.rofs's header; rof-kvstore lays it out,
 * examples/kvstore/kv_layout.h).
 *
 * Region kv_index: a 64-byte header, then MASK + 1 buckets of 8 ways, each
 * way an entry word {block offset in kv_heap (bits 0-31, 0: empty), tag
 * (32-47), version (48-63)}; from LOCKS, one 8-byte insert lock per bucket.
 * Region kv_heap: value blocks {klen, vlen, flags, 0 (u32 each), the key
 * zero-padded to a multiple of 8, the value}, SMALL bytes each from free
 * list 0 and, from LARGE_AT, 16 + 256 + MAXVAL bytes each from free list 1
 * (4368 by default); a published
 * block is never written again.  A key's hash h is rof_hash(0, key, klen);
 * its buckets are h & MASK and (h >> 40) & MASK, its tag (h >> 24) & 0xffff.
 * The sizes are the .const defaults of kv-get.rofs, kv-put.rofs, kv-del.rofs;
 * -D NAME=VALUE on clang's command line overrides each (rof-kvstore
 * --programs c compiles them for its --items so, as it sets the .consts).
 */
#ifndef ROF_PROGRAMS_KV_H
#define ROF_PROGRAMS_KV_H

#ifndef INDEX_LEN
#define INDEX_LEN 593920
#endif
#ifndef HEAP_LEN
#define HEAP_LEN 17338368
#endif
#ifndef MASK
#define MASK 8191
#endif
#ifndef LOCKS
#define LOCKS 524352
#endif
#ifndef LARGE_AT
#define LARGE_AT 8388672
#endif
#ifndef SMALL
#define SMALL 256
#endif
#ifndef MAXVAL
#define MAXVAL 4096	/* the largest value */
#endif
#ifndef CHUNK
#define CHUNK 4096	/* the most of a value one kv-get response carries */
#endif
#ifndef RESP
#define RESP (16 + CHUNK)	/* kv-get's largest response */
#endif

struct block {
	uint32_t klen, vlen, flags, zero;
	uint64_t key[];
};

/* The index of way 0..15 of the key in kv_index: 8 in its first bucket,
 * then 8 in its second, after the 64-byte header. */
static inline uint64_t way_of(uint64_t h, uint64_t way)
{
	uint64_t bucket = way < 8 ? h & MASK : (h >> 40) & MASK;

	return 8 + bucket * 8 + (way & 7);
}

/* Whether block b holds key (padded bytes, zero-padded to a multiple of 8). */
static inline int same_key(const struct block *b, const uint64_t *key, uint64_t padded)
{
	for (uint64_t w = 0; w < padded / 8 && w < 32; w++)
		if (b->key[w] != key[w])
			return 0;
	return 1;
}

#endif
