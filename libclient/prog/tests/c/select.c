/* One FREE in one of two free lists by a test: clang merges the two calls
 * into one whose region depends on the path. */
#include <rof/offload.h>

ROF_ARGS(uint64_t, block, 8, 8);
ROF_REGION_FREELIST(uint8_t, small, ROF_RWA, 4096);
ROF_REGION_FREELIST(uint8_t, large, ROF_RWA, 4096);

ROF_PROGRAM int give_back(uint64_t args_len)
{
	if (block >= 2048)
		rof_free(large, block);
	else
		rof_free(small, block);
	return 0;
}
