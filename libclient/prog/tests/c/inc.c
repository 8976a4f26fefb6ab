/* The counter of docs/programs.md "Offloads in C": counters[idx] += 1, answers the new value. */
#include <rof/offload.h>

ROF_ARGS(struct { uint64_t idx; }, args, 8, 8);
ROF_RESP(uint64_t, out, 8);
ROF_REGION(uint64_t, counters, ROF_RA, 4096);

ROF_PROGRAM int inc(uint64_t args_len)
{
	if (args.idx >= 512)
		return 1;
	out = __sync_fetch_and_add(&counters[args.idx], 1) + 1;
	return 0;
}
