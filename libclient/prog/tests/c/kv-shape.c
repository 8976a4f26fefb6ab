/* kv-get's shape in C (programs/kv-get.rofs has the full protocol): three
 * nested loops; clang keeps the outer counter on the stack, which the
 * translator follows to find the trip limits 8, 16 and 32. */
#include <rof/offload.h>
struct get_args { uint32_t klen, voff; uint64_t key[32]; };
struct get_resp { uint32_t flags, vlen; uint64_t entry; uint8_t val[976]; };
ROF_ARGS(struct get_args, args, 16, 264);
ROF_RESP(struct get_resp, out, 992);
ROF_REGION(uint64_t, kv_index, ROF_R, 593920);
ROF_REGION(uint8_t, kv_heap, ROF_R, 17338368);
#define MASK 8191
ROF_PROGRAM int kv_get(uint64_t args_len)
{
	uint64_t klen = args.klen, padded = (klen + 7) & ~7ull;
	if (klen == 0 || klen > 250 || padded + 8 > args_len)
		return 4;
	uint64_t h = rof_hash(0, args.key, klen);
	uint64_t b1 = ((h & MASK) << 6) + 64, b2 = (((h >> 40) & MASK) << 6) + 64;
	uint64_t tag = (h >> 24) & 0xffff;
	for (int attempt = 0; attempt < 8; attempt++) {
		for (uint64_t way = 0; way < 16; way++) {
			uint64_t at = (way < 8 ? b1 : b2) + (way & 7) * 8;
			uint64_t e = *ROF_AT(uint64_t, kv_index, at);
			uint32_t blk = (uint32_t)e;
			if (blk == 0 || ((e >> 32) & 0xffff) != tag)
				continue;
			if (*ROF_AT(uint32_t, kv_heap, blk) != klen)
				continue;
			uint64_t w;
			for (w = 0; w < padded / 8 && w < 32; w++)
				if (*ROF_AT(uint64_t, kv_heap, blk + 16 + w * 8) != args.key[w])
					break;
			if (w * 8 < padded)
				continue;
			uint32_t vlen = *ROF_AT(uint32_t, kv_heap, blk + 4);
			if (vlen > 4096 || args.voff > vlen)
				return 4;
			uint64_t n = vlen - args.voff;
			if (n > 976) n = 976;
			out.flags = *ROF_AT(uint32_t, kv_heap, blk + 8);
			rof_copy(out.val, ROF_AT(uint8_t, kv_heap, blk + 16 + padded + args.voff), n);
			if (*ROF_AT(uint64_t, kv_index, at) != e)
				break;
			out.vlen = vlen;
			out.entry = e;
			return rof_respond(n + 16, 0);
		}
	}
	return 1;
}
