/* kv-get: memcached-style GET of one key from the kvstore's cuckoo-style
 * hash table (RedN 5.2 over MemC3's table, PRISM-KV 6; the assembly, with
 * the full account of the layout, is kv-get.rofs).
 *
 * Region kv_index: a 64-byte header, then MASK + 1 buckets of 8 ways, each
 * way an entry word {block offset in kv_heap (bits 0-31, 0: empty), tag
 * (32-47), version (48-63)}.  Region kv_heap: value blocks {klen, vlen,
 * flags, 0 (u32 each), the key zero-padded to a multiple of 8, the value};
 * a published block is never written again.  A key's hash h is
 * rof_hash(0, key, klen); its buckets are h & MASK and (h >> 40) & MASK,
 * its tag (h >> 24) & 0xffff.
 * Args: klen (1..250), voff (where in the value the response starts), the
 * key zero-padded to a multiple of 8.
 * Response: flags, vlen, the entry word, then min(vlen - voff, 976) bytes
 * of the value from voff.  The entry is read again after the copy: if it
 * changed (the block may have been freed and reused), the lookup starts
 * again, as it does when a tag matched, the key did not and the entry
 * changed meanwhile; at most 8 attempts.
 * Statuses: 0 found, 1 not found, 3 busy, 4 bad arguments (key length,
 * args too short for the key, voff > vlen).
 */
#include <rof/offload.h>

#define INDEX_LEN 593920
#define HEAP_LEN 17338368
#define MASK 8191
#define MAXVAL 4096
#define CHUNK 976

enum { FOUND, NOT_FOUND, BUSY = 3, BADARG };

struct block {
	uint32_t klen, vlen, flags, zero;
	uint64_t key[];
};

struct get_args {
	uint32_t klen, voff;
	uint64_t key[32];
};

struct get_resp {
	uint32_t flags, vlen;
	uint64_t entry;
	uint8_t value[CHUNK];
};

ROF_ARGS(struct get_args, args, 16, 264);
ROF_RESP(struct get_resp, out, 992);
ROF_REGION(uint64_t, kv_index, ROF_R, INDEX_LEN);
ROF_REGION(uint8_t, kv_heap, ROF_R, HEAP_LEN);

/* The index of way 0..15 of the key in kv_index: 8 in its first bucket,
 * then 8 in its second, after the 64-byte header. */
static inline uint64_t way_of(uint64_t h, uint64_t way)
{
	uint64_t bucket = way < 8 ? h & MASK : (h >> 40) & MASK;

	return 8 + bucket * 8 + (way & 7);
}

static inline int same_key(const struct block *b, uint64_t padded)
{
	for (uint64_t w = 0; w < padded / 8 && w < 32; w++)
		if (b->key[w] != args.key[w])
			return 0;
	return 1;
}

ROF_PROGRAM int kv_get(uint64_t args_len)
{
	uint64_t klen = args.klen;
	uint64_t padded = (klen + 7) & ~7ull;

	if (klen == 0 || klen > 250 || 8 + padded > args_len)
		return BADARG;
	uint64_t h = rof_hash(0, args.key, klen);
	uint64_t tag = (h >> 24) & 0xffff;

	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t way;

		for (way = 0; way < 16; way++) {
			uint64_t *slot = &kv_index[way_of(h, way)];
			uint64_t entry = *slot;
			uint32_t at = (uint32_t)entry;

			if (at == 0 || ((entry >> 32) & 0xffff) != tag)
				continue;
			struct block *b = ROF_AT(struct block, kv_heap, at);
			if (b->klen == klen && same_key(b, padded)) {
				uint64_t vlen = b->vlen, voff = args.voff;
				if (vlen > MAXVAL)
					break; /* torn: the block was reused */
				if (voff > vlen)
					return BADARG;
				uint64_t n = vlen - voff;
				if (n > CHUNK)
					n = CHUNK;
				uint32_t flags = b->flags;
				rof_copy(out.value, (uint8_t *)b->key + padded + voff, n);
				if (ROF_READ_ONCE(*slot) != entry)
					break; /* the entry changed under the copy */
				out.flags = flags;
				out.vlen = vlen;
				out.entry = entry;
				return rof_respond(16 + n, FOUND);
			}
			if (ROF_READ_ONCE(*slot) != entry)
				break; /* another key, and the block was reused */
		}
		if (way == 16)
			return NOT_FOUND;
	}
	return BUSY;
}
