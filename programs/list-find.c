/* list-find: the first node of a linked list whose masked key satisfies a
 * predicate (StRoM Table 2's traversal with a predicate; RedN 5.3's
 * while-loop over a list; the assembly is list-find.rofs).
 *
 * Region "list" (read), 65536 bytes: nodes anywhere in it (no alignment),
 * each a key, the offset of the next node (0 ends the list, so no node
 * lives at offset 0) and 48 bytes of value.
 * Args (32 bytes): the offset of the first node (0: an empty list), a key,
 * a mask and a predicate: 0 EQ, 1 NE, 2 LT, 3 GT.  A node matches when
 * (node.key & mask) PREDICATE (key & mask), unsigned.
 * Response (64 bytes, FOUND only): the node's offset, its key (unmasked)
 * and its value.
 * Statuses: 0 FOUND; 1 MISS (the list ended without a match); 2 TOO_LONG
 * (1024 nodes visited without reaching the end: a longer list or a cycle);
 * 3 BADARG (predicate > 3).  A list changed while it is walked may be seen
 * half old, half new; a next offset outside the region faults.
 */
#include <rof/offload.h>

#define MAXNODES 1024

enum { FOUND, MISS, TOO_LONG, BADARG };
enum { EQ, NE, LT, GT };

struct node {
	uint64_t key;
	uint64_t next;
	uint8_t value[48];
};

struct find_args {
	uint64_t head, key, mask, cmp;
};

struct find_resp {
	uint64_t at, key;
	uint8_t value[48];
};

ROF_ARGS(struct find_args, args, 32, 32);
ROF_RESP(struct find_resp, out, 64);
ROF_REGION(uint8_t, list, ROF_R, 65536);

static inline int matches(uint64_t k, uint64_t key, uint64_t cmp)
{
	switch (cmp) {
	case EQ:
		return k == key;
	case NE:
		return k != key;
	case LT:
		return k < key;
	default:
		return k > key;
	}
}

ROF_PROGRAM int list_find(uint64_t args_len)
{
	uint64_t mask = args.mask, cmp = args.cmp;
	uint64_t key = args.key & mask;
	uint64_t at = args.head;

	if (cmp > GT)
		return BADARG;
	if (at == 0)
		return MISS;
	for (int n = 0; n < MAXNODES; n++) {
		struct node *node = ROF_AT(struct node, list, at);

		if (matches(node->key & mask, key, cmp)) {
			out.at = at;
			out.key = node->key;
			rof_copy(out.value, node->value, sizeof(out.value));
			return FOUND;
		}
		at = node->next;
		if (at == 0)
			return MISS;
	}
	return TOO_LONG;
}
