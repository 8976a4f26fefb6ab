/* tx-prepare: PRISM-TX's prepare-phase validation of one key (PRISM 8.2;
 * the assembly is tx-prepare.rofs), with enhanced CAS on the key's
 * concurrency-control words.
 *
 * Region "tx" (read, atomic), 32768 bytes: 1024 entries of 32 bytes
 * {PR, PW, C, ptr}: the highest timestamp of a prepared transaction that
 * read the key, of one that writes it, the timestamp of the last committed
 * write, and the committed value (unused here).  Timestamps are PRISM's
 * <clock, cid> as clock << 8 | cid, unsigned.
 * Args (32 bytes): entry index (< 1024), op, TS, RC.
 *   op 0 READ:  if RC|TS > PW|PR (as one 128-bit number) then PR = TS,
 *               atomically; passes if that CAS succeeded or failed only
 *               because PR >= TS already (PW = RC); fails if PW > RC.
 *   op 1 WRITE: if TS > PW then PW = TS, atomically; passes if also
 *               TS > PR as seen by that same CAS (a failed check leaves PW
 *               raised: always safe).
 *   op 2 DONE:  C = TS if TS > C; RC unused.
 * Response (24 bytes): PR, PW, C as seen before this invocation's update
 * (PR and PW from one atomic snapshot).
 * Statuses: 0 OK; 1 CONFLICT (the check failed); 2 BADARG (index >= 1024
 * or op > 2).  PR and PW change only by 16-byte CAS, C only by 8-byte CAS.
 */
#include <rof/offload.h>

#define NKEYS 1024

enum { OK, CONFLICT, BADARG };
enum { READ, WRITE, DONE };

struct entry {
	uint64_t pr, pw, c, ptr;
};

struct tx_args {
	uint64_t index, op, ts, rc;
};

struct tx_resp {
	uint64_t pr, pw, c;
};

ROF_ARGS(struct tx_args, args, 32, 32);
ROF_RESP(struct tx_resp, out, 24);
ROF_REGION(struct entry, tx, ROF_RA, 32768);

ROF_PROGRAM int tx_prepare(uint64_t args_len)
{
	uint64_t ts = args.ts, rc = args.rc;
	int status = OK;

	if (args.index >= NKEYS)
		return BADARG;
	struct entry *e = &tx[args.index];

	if (args.op == READ) {
		/* PR = TS if PW|PR < RC|TS */
		struct rof_cas128 cas = {
			.cmp = {ts, rc},
			.swap = {ts, 0},
			.cmp_mask = {~0ull, ~0ull},
			.swap_mask = {~0ull, 0},
		};
		int won = rof_cas(e, &cas, 16, ROF_CAS_LT | ROF_CAS_OLD);
		out.pr = cas.old[0];
		out.pw = cas.old[1];
		out.c = e->c;
		if (!won && cas.old[1] > rc)
			status = CONFLICT;
	} else if (args.op == WRITE) {
		/* PW = TS if PW < TS */
		struct rof_cas128 cas = {
			.cmp = {0, ts},
			.swap = {0, ts},
			.cmp_mask = {0, ~0ull},
			.swap_mask = {0, ~0ull},
		};
		int won = rof_cas(e, &cas, 16, ROF_CAS_LT | ROF_CAS_OLD);
		out.pr = cas.old[0];
		out.pw = cas.old[1];
		out.c = e->c;
		if (!won || cas.old[0] >= ts)
			status = CONFLICT;
	} else if (args.op == DONE) {
		/* C = TS if C < TS */
		struct rof_cas64 cas = {
			.cmp = ts, .swap = ts, .cmp_mask = ~0ull, .swap_mask = ~0ull,
		};
		rof_cas(&e->c, &cas, 8, ROF_CAS_LT | ROF_CAS_OLD);
		out.pr = e->pr;
		out.pw = e->pw;
		out.c = cas.old;
	} else {
		return BADARG;
	}
	return status;
}
