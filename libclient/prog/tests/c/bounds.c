/* Loop bounds from the request's values: a loop from a start the request
 * gives up to a constant, and one counting down between two constants. */
#include <rof/offload.h>

struct bounds_args {
	uint64_t start;
	uint64_t n;
};

struct bounds_resp {
	uint64_t sum;
	uint64_t steps;
};

ROF_ARGS(struct bounds_args, args, 16, 16);
ROF_RESP(struct bounds_resp, out, 16);
ROF_REGION(uint64_t, table, ROF_R, 512);

ROF_PROGRAM int bounds(uint64_t args_len)
{
	uint64_t s = 0, steps = 0, n = args.n;

	for (uint64_t i = args.start; i < 64; i++)
		s += table[i];
	while (n > 10 && n < 100) {
		n -= 3;
		steps++;
	}
	out.sum = s;
	out.steps = steps;
	return 0;
}
