/* kv-get: memcached-style GET of one key from the kvstore's cuckoo-style
 * hash table (RedN 5.2 over MemC3's table, PRISM-KV 6; the assembly is
 * kv-get.rofs, the table's layout kv.h).
 *
 * Args: klen (1..250), voff (where in the value the response starts), the
 * key zero-padded to a multiple of 8.
 * Response: flags, vlen, the entry word, then min(vlen - voff, CHUNK) bytes
 * of the value from voff: by default the largest value in one response of
 * 4112 bytes, which needs sessions of 8 KiB messages (the tenant's [sessions]
 * message_bytes; on 1 KiB ones the module answers ROF_ST_MSG_SIZE; kv.h says
 * CHUNK for stores of larger values).  The
 * entry is read again after the copy: if it changed (the block may have been
 * freed and reused), the lookup starts again, as it does when a tag matched,
 * the key did not and the entry changed meanwhile; at most 8 attempts.
 * Statuses: 0 found, 1 not found, 3 busy, 4 bad arguments (key length,
 * args too short for the key, voff > vlen).
 */
#include <rof/offload.h>

#include "kv.h"

enum { FOUND, NOT_FOUND, BUSY = 3, BADARG };

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
ROF_RESP(struct get_resp, out, RESP);
ROF_REGION(uint64_t, kv_index, ROF_R, INDEX_LEN);
ROF_REGION(uint8_t, kv_heap, ROF_R, HEAP_LEN);

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
			if (b->klen == klen && same_key(b, args.key, padded)) {
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
