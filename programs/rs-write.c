/* rs-write: the write phase of PRISM-RS, multi-writer ABD on one replica
 * (PRISM 7.3; the assembly is rs-write.rofs): take a buffer, write the tag
 * and the value into it, and install {tag, buffer} in the register with an
 * enhanced CAS that succeeds only if the new tag is greater than the
 * installed one.  The winner frees the buffer it replaced; a loser frees
 * its own.
 *
 * Region "rs" (read, write, atomic), 65536 bytes, with a free list:
 *   [0, 61248)     the free list: its header at 0, 239 blocks of 256 bytes
 *                  from 64, each a buffer {link (the free list's while
 *                  free), tag, len (0..232), value[232]};
 *   [61440, 65536) 256 registers of 16 bytes {tag, buffer offset}; tag 0:
 *                  never written; PRISM's (ts, id) as ts << 8 | id.
 * Args (16 + len bytes, len 0..232): the register's index (< 256), the tag
 * (> 0), the value.
 * Response (8 bytes): the tag installed before (OK) or the tag that beat
 * this one (STALE).
 * Statuses: 0 OK (installed); 1 STALE (a tag >= this one is installed: for
 * ABD an acknowledgement too); 2 FULL (no free buffer); 3 BADARG (index >=
 * 256 or tag 0).  The install is one 16-byte CAS, so of concurrent writers
 * the highest tag ends installed and every replaced or losing buffer is
 * freed once, by the invocation whose CAS replaced it or lost.
 */
#include <rof/offload.h>

#define NREGS 256
#define REGS 61440
#define MAXVAL 232

enum { OK, STALE, FULL, BADARG };

struct reg {
	uint64_t tag;
	uint64_t buffer;
};

struct buffer {
	uint64_t link;
	uint64_t tag;
	uint64_t len;
	uint8_t value[MAXVAL];
};

struct write_args {
	uint64_t index;
	uint64_t tag;
	uint8_t value[MAXVAL];
};

ROF_ARGS(struct write_args, args, 16, 248);
ROF_RESP(uint64_t, out, 8);
ROF_REGION_FREELIST(uint8_t, rs, ROF_RWA, 65536);

ROF_PROGRAM int rs_write(uint64_t args_len)
{
	uint64_t tag = args.tag;
	uint64_t len = args_len - 16;

	if (args.index >= NREGS || tag == 0)
		return BADARG;
	struct reg *reg = ROF_AT(struct reg, rs, REGS + args.index * sizeof(struct reg));

	uint64_t installed = reg->tag;
	if (installed >= tag) {
		out = installed; /* no buffer for a stale write */
		return STALE;
	}
	uint64_t at = rof_alloc(rs);
	if (at == ROF_NULL)
		return FULL;
	struct buffer *buf = ROF_AT(struct buffer, rs, at);
	buf->tag = tag;
	buf->len = len;
	rof_copy(buf->value, args.value, len);

	/* install {tag, at} if the installed tag (the low word) is lower */
	struct rof_cas128 cas = {
		.cmp = {tag, 0},
		.swap = {tag, at},
		.cmp_mask = {~0ull, 0},
		.swap_mask = {~0ull, ~0ull},
	};
	int won = rof_cas(reg, &cas, 16, ROF_CAS_LT | ROF_CAS_OLD);
	out = cas.old[0];
	if (!won) {
		rof_free(rs, at);
		return STALE;
	}
	if (cas.old[0] != 0)
		rof_free(rs, cas.old[1]); /* the buffer it replaced */
	return OK;
}
