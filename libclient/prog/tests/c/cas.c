/* rof_cas: PRISM's enhanced CAS on 16 bytes {version, value}: install
 * {args.version, args.value} if the installed version is lower; the
 * response is the 16 bytes seen before.  Status 1 when a newer one was
 * there. */
#include <rof/offload.h>

struct versioned {
	uint64_t version, value;
};

ROF_ARGS(struct versioned, args, 16, 16);
ROF_RESP(struct versioned, out, 16);
ROF_REGION(struct versioned, cells, ROF_RA, 1024);

ROF_PROGRAM int install(uint64_t args_len)
{
	struct rof_cas128 cas = {
		.cmp = {args.version, 0},
		.swap = {args.version, args.value},
		.cmp_mask = {~0ull, 0},
		.swap_mask = {~0ull, ~0ull},
	};
	int won = rof_cas(&cells[3], &cas, 16, ROF_CAS_LT | ROF_CAS_OLD);

	out.version = cas.old[0];
	out.value = cas.old[1];
	return won ? 0 : 1;
}
