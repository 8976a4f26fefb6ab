/* Refused: a big-endian byte swap has no rof instruction. */
#include <rof/offload.h>

ROF_ARGS(uint64_t, args, 8, 8);
ROF_RESP(uint64_t, out, 8);

ROF_PROGRAM int swap(uint64_t args_len)
{
	out = __builtin_bswap64(args);
	return 0;
}
