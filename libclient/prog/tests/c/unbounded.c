/* Refused: the loop's only bound is the request's n, so no trip limit is
 * visible; the message names the loop's line. */
#include <rof/offload.h>

ROF_ARGS(uint64_t, n, 8, 8);
ROF_RESP(uint64_t, out, 8);
ROF_REGION(uint64_t, table, ROF_R, 512);

ROF_PROGRAM int sum_n(uint64_t args_len)
{
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += table[i & 63];
	out = s;
	return 0;
}
