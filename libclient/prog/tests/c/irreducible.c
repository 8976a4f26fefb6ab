/* Refused: the goto enters the loop in its middle, so the loop has two
 * entries (irreducible control flow), which no trip limit can bound. */
#include <rof/offload.h>

ROF_ARGS(uint64_t, n, 8, 8);
ROF_RESP(uint64_t, out, 8);

ROF_PROGRAM int twice(uint64_t args_len)
{
	uint64_t s = 0, i = 0;

	if (n & 1)
		goto inside;
	for (; i < 16; i++) {
		s += i * n;
inside:
		s ^= n >> (i & 7);
	}
	out = s;
	return 0;
}
