/* Sums the words of the arguments with a stack buffer, hashes and CRCs them,
 * and answers with rof_respond: exercises the stack (scratch), the helpers and
 * a loop whose bound is a constant. */
#include <rof/offload.h>

struct state {
	uint64_t calls;
	uint64_t last;
};

ROF_ARGS(uint64_t, args, 8, 64);
ROF_SCRATCH(struct state, st);
struct sum_resp {
	uint64_t w[4];
};

ROF_RESP(struct sum_resp, out, 32);

ROF_PROGRAM int sum(uint64_t args_len)
{
	uint64_t buf[2];
	uint64_t s = 0;
	uint64_t n = args_len / 8;

	for (uint64_t i = 0; i < 8; i++) {
		if (i >= n)
			break;
		s += (&args)[i];
	}
	st.calls++;
	buf[0] = s;
	buf[1] = st.last;
	st.last = s;
	out.w[0] = s;
	out.w[1] = rof_hash(0, buf, sizeof(buf));
	out.w[2] = rof_crc64(0, &args, args_len);
	out.w[3] = st.calls;
	return rof_respond(32, 7);
}
