/* The lookup of lookup.c written the usual way, with a return inside the
 * loop: clang lays that loop out in pieces, which the translator reorders. */
#include <rof/offload.h>

struct find_args {
	uint64_t key;
	uint64_t n;
};

ROF_ARGS(struct find_args, args, 16, 16);
ROF_RESP(uint64_t, out, 8);
ROF_REGION(uint64_t, table, ROF_R, 512);

ROF_PROGRAM int find(uint64_t args_len)
{
	uint64_t key = args.key;

	for (uint64_t i = 0; i < args.n && i < 64; i++) {
		if (table[i] == key) {
			out = i;
			return 0;
		}
	}
	return 1;
}
