/* Translates, but the verifier rejects it: word 80 is past the 512-byte
 * window of table; its message names the line below. */
#include <rof/offload.h>

ROF_RESP(uint64_t, out, 8);
ROF_REGION(uint64_t, table, ROF_R, 512);

ROF_PROGRAM int oob(uint64_t args_len)
{
	out = table[80];
	return 0;
}
