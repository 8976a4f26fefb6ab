/* A linear lookup with a bounded loop: the index of key in table[0..n), n <= 64. */
#include <rof/offload.h>

struct lookup_args {
	uint64_t key;
	uint64_t n;
};

ROF_ARGS(struct lookup_args, args, 16, 16);
ROF_RESP(uint64_t, out, 8);
ROF_REGION(uint64_t, table, ROF_R, 512);

ROF_PROGRAM int lookup(uint64_t args_len)
{
	uint64_t key = args.key;
	uint64_t i;

	for (i = 0; i < args.n && i < 64; i++)
		if (table[i] == key)
			break;
	if (i == args.n || i == 64)
		return 1;
	out = i;
	return 0;
}
