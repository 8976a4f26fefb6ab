/* rs-read: the read phase of PRISM-RS, multi-writer ABD on one replica
 * (PRISM 7.3; the assembly is rs-read.rofs): the register's tag and the
 * value of its buffer, consistently, with rs-write.c's layout.
 *
 * Region "rs" (read), 65536 bytes: 256 registers {tag, buffer offset} of
 * 16 bytes from 61440; buffers {link, tag, len, value[232]} in the blocks
 * of the free list at 0.
 * Args (8 bytes): the register's index (< 256).
 * Response (16 + len bytes, OK only): tag, len and the value, copied from
 * the buffer, which carries its own tag.
 * Statuses: 0 OK; 1 EMPTY (tag 0: never written); 2 BUSY (8 tries in a
 * row raced with writers); 3 BADARG (index >= 256).
 * A buffer may be freed and reused by an rs-write while it is copied: the
 * copy counts only if the buffer's own tag is the register's tag t and
 * the register still holds t afterwards (tags only grow; t's buffer is
 * freed only after the register has moved past t).
 */
#include <rof/offload.h>

#define NREGS 256
#define REGS 61440
#define MAXVAL 232
#define TRIES 8

enum { OK, EMPTY, BUSY, BADARG };

struct reg {
	uint64_t tag;
	uint64_t buffer;
};

struct value {
	uint64_t tag;
	uint64_t len;
	uint8_t bytes[MAXVAL];
};

ROF_ARGS(uint64_t, idx, 8, 8);
ROF_RESP(struct value, out, 248);
ROF_REGION(uint8_t, rs, ROF_R, 65536);

ROF_PROGRAM int rs_read(uint64_t args_len)
{
	if (idx >= NREGS)
		return BADARG;
	struct reg *reg = ROF_AT(struct reg, rs, REGS + idx * sizeof(struct reg));

	for (int tries = 0; tries < TRIES; tries++) {
		uint64_t tag = reg->tag;

		if (tag == 0)
			return EMPTY;
		/* the buffer from its tag on: {link, tag, len, value} */
		rof_copy(&out, ROF_AT(struct value, rs, reg->buffer + 8), sizeof(out));
		if (out.tag != tag || reg->tag != tag || out.len > MAXVAL)
			continue;
		return rof_respond(16 + out.len, OK);
	}
	return BUSY;
}
