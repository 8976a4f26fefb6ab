/* kv-del: memcached-style DELETE of one key from the kvstore's hash table
 * (the assembly is kv-del.rofs; the layout is kv.h's).
 *
 * Slots: kv_index; kv_heap bound to the heap's free list 0 (256-byte
 * blocks) and kv_large to the same region's free list 1 (blocks of
 * 16 + 256 + MAXVAL bytes from LARGE_AT): a block is freed to its own list.
 * Args: klen (1..250), 0, the key zero-padded to a multiple of 8.
 * Probes the key's 16 ways as kv-get does; on a match it CASes the entry
 * to empty with version + 1 (an entry word never repeats) and, having won,
 * frees the block: only the CAS winner frees it.  A lost CAS, or a tag
 * match with another key while the entry changed, probes again, at most 8
 * times.
 * Response: none.  Statuses: 0 deleted, 1 not found, 3 busy, 4 bad
 * arguments.
 */
#include <rof/offload.h>

#include "kv.h"

enum { DELETED, NOT_FOUND, BUSY = 3, BADARG };

struct del_args {
	uint32_t klen, zero;
	uint64_t key[32];
};

ROF_ARGS(struct del_args, args, 16, 264);
ROF_REGION(uint64_t, kv_index, ROF_RWA, INDEX_LEN);
ROF_REGION_FREELIST(uint8_t, kv_heap, ROF_RWA, HEAP_LEN);
ROF_REGION_FREELIST(uint8_t, kv_large, ROF_RWA, HEAP_LEN);

ROF_PROGRAM int kv_del(uint64_t args_len)
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
			if (b->klen == klen && same_key(b, args.key, padded)) {
				uint64_t empty = ((entry >> 48) + 1) << 48;
				if (!__sync_bool_compare_and_swap(slot, entry, empty))
					break; /* the entry changed: probe again */
				if (at >= LARGE_AT)
					rof_free(kv_large, at);
				else
					rof_free(kv_heap, at);
				return DELETED;
			}
			if (ROF_READ_ONCE(*slot) != entry)
				break; /* another key, and the block was reused */
		}
		if (way == 16)
			return NOT_FOUND;
	}
	return BUSY;
}
