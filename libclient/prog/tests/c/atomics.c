/* The compiler's __sync atomics on a region: compare-and-swap, exchange and
 * fetch-and-add, translated to the ISA's cas64 (through an operand block in
 * scratch) and faa. */
#include <rof/offload.h>

struct atomics_args {
	uint64_t idx;
	uint64_t expect;
	uint64_t val;
};

struct atomics_resp {
	uint64_t cas_old;
	uint64_t xchg_old;
	uint64_t faa_old;
};

ROF_ARGS(struct atomics_args, args, 24, 24);
ROF_RESP(struct atomics_resp, out, 24);
ROF_REGION(uint64_t, words, ROF_RWA, 4096);

ROF_PROGRAM int atomics(uint64_t args_len)
{
	uint64_t i = args.idx;

	if (i >= 500)
		return 1;
	out.cas_old = __sync_val_compare_and_swap(&words[i], args.expect, args.val);
	out.xchg_old = __sync_lock_test_and_set(&words[i + 1], args.val);
	out.faa_old = __sync_fetch_and_add(&words[i + 2], args.val);
	return 0;
}
