/* kv-put: memcached-style SET of one key into the kvstore's hash table
 * (PRISM-KV 6: allocate, write, CAS; the assembly, with the full account of
 * why there are no duplicates, is kv-put.rofs; the layout is kv.h's).
 *
 * Slots: kv_index, which also holds one 8-byte insert lock per bucket from
 * LOCKS; kv_heap bound to the heap's free list 0 (256-byte blocks) and
 * kv_large to the same region's free list 1 (blocks of 16 + 256 + MAXVAL
 * bytes from LARGE_AT).
 * Args: klen (1..250), flags, vlen (0..MAXVAL), voff, the key zero-padded to
 * a multiple of 8, then the value's bytes [voff, voff + the rest of args).
 * A value longer than one call's args takes several calls of one session,
 * in order.  The first (voff 0) takes a block of the class the record
 * needs (16 + padded key + vlen <= 256: small) and writes the header, key
 * and chunk; a later one finds the block in the session's scratch and
 * writes its chunk.  A first chunk frees a block an unfinished earlier PUT
 * of the session left.  With the last chunk the PUT probes the key's 16
 * ways:
 *   - the key is there: CAS its entry to {new block, tag, version + 1} and,
 *     having won, free the old block;
 *   - it is not: take the insert lock of the key's first bucket (CAS 0 ->
 *     1), probe again under it, CAS the first empty way seen from what it
 *     held to {new block, tag, version + 1}, and release the lock.
 * A lost CAS probes again; after 32 attempts the PUT frees its own block.
 * Response: none.  Statuses: 0 stored (or chunk taken), 2 full (no block,
 * or no way free), 3 busy, 4 bad arguments (key length 0 or > 250, args
 * shorter than the key, vlen > MAXVAL, a chunk past vlen, a later chunk
 * without its first).
 */
#include <rof/offload.h>

#include "kv.h"

enum { STORED, FULL = 2, BUSY, BADARG };

struct put_args {
	uint32_t klen, flags, vlen, voff;
	uint64_t key[123]; /* the key, then the chunk */
};

struct session {
	uint64_t pending; /* the block of an unfinished PUT, 0: none */
};

ROF_ARGS(struct put_args, args, 16, 1000);
ROF_SCRATCH(struct session, session);
ROF_REGION(uint64_t, kv_index, ROF_RWA, INDEX_LEN);
ROF_REGION_FREELIST(uint8_t, kv_heap, ROF_RWA, HEAP_LEN);
ROF_REGION_FREELIST(uint8_t, kv_large, ROF_RWA, HEAP_LEN);

static inline void give_back(uint64_t at)
{
	if (at >= LARGE_AT)
		rof_free(kv_large, at);
	else
		rof_free(kv_heap, at);
}

/* The entry word of block `at` with `tag`, replacing `old`. */
static inline uint64_t entry_of(uint64_t at, uint64_t tag, uint64_t old)
{
	return ((old >> 48) + 1) << 48 | tag << 32 | at;
}

ROF_PROGRAM int kv_put(uint64_t args_len)
{
	uint64_t klen = args.klen, vlen = args.vlen, voff = args.voff;
	uint64_t padded = (klen + 7) & ~7ull;
	uint64_t start = 16 + padded; /* where the chunk starts in args */

	if (klen == 0 || klen > 250 || start > args_len)
		return BADARG;
	uint64_t chunk = args_len - start;
	if (vlen > MAXVAL || voff + chunk > vlen)
		return BADARG;

	uint64_t at;
	struct block *b;
	if (voff == 0) {
		if (session.pending != 0) {
			at = session.pending;
			session.pending = 0;
			give_back(at);
		}
		at = start + vlen > SMALL ? rof_alloc(kv_large) : rof_alloc(kv_heap);
		if (at == ROF_NULL)
			return FULL;
		b = ROF_AT(struct block, kv_heap, at);
		b->klen = klen;
		b->vlen = vlen;
		b->flags = args.flags;
		b->zero = 0;
		rof_copy(b->key, args.key, padded);
	} else {
		at = session.pending;
		if (at == 0)
			return BADARG;
		b = ROF_AT(struct block, kv_heap, at);
		if (b->klen != klen || b->vlen != vlen)
			return BADARG;
	}
	rof_copy(ROF_AT(uint8_t, kv_heap, at + start + voff),
		 (uint8_t *)args.key + padded, chunk);
	if (voff + chunk != vlen) {
		session.pending = at; /* more chunks to come */
		return STORED;
	}

	/* The last chunk: publish the block. */
	session.pending = 0;
	uint64_t h = rof_hash(0, args.key, klen);
	uint64_t tag = (h >> 24) & 0xffff;
	uint64_t *lock = &kv_index[LOCKS / 8 + (h & MASK)];
	int locked = 0, status = BUSY;

	for (int attempt = 0; attempt < 32; attempt++) {
		uint64_t way, entry = 0, empty = 0, empty_entry = 0;
		int found = 0, changed = 0;

		for (way = 0; way < 16; way++) {
			entry = kv_index[way_of(h, way)];
			uint32_t old = (uint32_t)entry;

			if (old == 0) {
				if (empty == 0) {
					empty = way_of(h, way);
					empty_entry = entry;
				}
				continue;
			}
			if (((entry >> 32) & 0xffff) != tag)
				continue;
			struct block *ob = ROF_AT(struct block, kv_heap, old);
			if (ob->klen == klen && same_key(ob, args.key, padded)) {
				found = 1;
				break;
			}
			if (ROF_READ_ONCE(kv_index[way_of(h, way)]) != entry) {
				changed = 1; /* another key, and the block was reused */
				break;
			}
		}
		if (changed)
			continue;
		if (found) {
			if (locked) {
				*lock = 0; /* no insert needed */
				locked = 0;
			}
			uint64_t *slot = &kv_index[way_of(h, way)];
			if (!__sync_bool_compare_and_swap(slot, entry, entry_of(at, tag, entry)))
				continue; /* the entry changed: probe again */
			give_back((uint32_t)entry); /* the replaced value */
			return STORED;
		}
		if (!locked) {
			/* not found: take the insert lock and probe again under it */
			locked = __sync_bool_compare_and_swap(lock, 0, 1);
			continue;
		}
		if (empty == 0) {
			status = FULL;
			break;
		}
		if (!__sync_bool_compare_and_swap(&kv_index[empty], empty_entry,
						  entry_of(at, tag, empty_entry)))
			continue; /* the way was taken meanwhile */
		*lock = 0;
		return STORED;
	}
	if (locked)
		*lock = 0;
	give_back(at); /* our block, never published */
	return status;
}
