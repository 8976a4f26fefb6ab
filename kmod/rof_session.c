// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_session.c - the rdma_cm listener, sessions and their data path.
 *
 * rofd prepares a session (tenant, granted regions, rate limits, expiry)
 * and hands its ticket to a client; the client connects to the module's
 * listener with the ticket as private data.  An accepted session is an RC
 * QP in a protection domain of its own, with its own CQ, pre-posted
 * receives, a credit count and one fast-registration MR per granted
 * region: a session's QP can use no other session's keys, and closing one
 * session invalidates only its own.  docs/protocol.md is the wire format,
 * docs/kmod.md the lifetimes.
 *
 * Locking: rof_sess_lock (a mutex) guards the session table, each
 * session's state and device binding.  s->lock serialises building a
 * session's connection (in the CM handler) against tearing it down (in
 * its close work), and the ESTABLISHED handler against both.  The data
 * path runs in the completion's softirq, s->welcome_work or s->poll_work,
 * whichever owns it (ROF_SF_POLLING), so it needs no lock of its own.  No
 * rdma_cm call is made under rof_sess_lock.
 *
 * Two workqueues: the bulk of the data path (s->poll_work, s->throttle_work)
 * runs on rof_sess_wq at normal priority, so that busy sessions compete
 * for the CPUs as normal tasks do; what must stay prompt whatever the data
 * path's load, and is short, runs on rof_ctl_wq (WQ_HIGHPRI): the welcome
 * that completes a connect (s->welcome_work), closes (s->close_work) and
 * the reaper.  Each work item is only ever queued on its one workqueue:
 * a workqueue's guarantee that a work item never runs twice at once, and
 * flush_work()'s wait, hold within one workqueue only.
 *
 * Closing: ROF_SF_CLOSING is set first, and nothing queues the welcome,
 * poll or throttle work once it is set; the close work then cancels the
 * welcome work (which may have queued the poll), the poll work (which may
 * have armed the throttle or queued the welcome), the throttle work (which
 * may have queued either), destroys the QP and CQ (no completion callback
 * after that) and the cm_id (no CM handler after that), and cancels all
 * three again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/irq_poll.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "rof_core.h"
#include "rof_bucket.h"

static ushort cm_port = ROF_CM_PORT_DEFAULT;
module_param(cm_port, ushort, 0444);
MODULE_PARM_DESC(cm_port, "rdma_cm port the session listener binds (any address)");

static uint idle_timeout_ms = 300000;
module_param(idle_timeout_ms, uint, 0644);
MODULE_PARM_DESC(idle_timeout_ms, "close a session idle this long, unless it sets its own");

/*
 * Kalia's selective signalling: one send in this many asks for a
 * completion, which retires every send posted before it.
 */
static uint signal_every = 16;
module_param(signal_every, uint, 0444);
MODULE_PARM_DESC(signal_every, "request a send completion every N sends");

/*
 * Busy polling (NAPI's busy_poll for sessions): when a run finds the CQ
 * empty it keeps polling this long before it re-arms the CQ and sleeps.
 * A request that comes within the window is answered without the
 * completion event and the work item's wake-up, at the price of a CPU
 * spinning meanwhile.  0 turns it off.
 */
static uint poll_spin_us;
module_param(poll_spin_us, uint, 0644);
MODULE_PARM_DESC(poll_spin_us, "poll an idle session this long before sleeping (0: off)");

/*
 * Requests served from the completion's softirq (irq_poll), not a work
 * item's wake-up later: those whose run is short and sleeps nowhere.  The
 * rest, and whatever one softirq run leaves, go to the poll work.
 */
static bool poll_softirq = true;
module_param(poll_softirq, bool, 0644);
MODULE_PARM_DESC(poll_softirq, "serve short requests in the completion's softirq");

/*
 * Sessions of one tenant that may be prepared and not yet live at once:
 * a prepared session costs the module memory and a place in every LIST
 * for as long as its ticket goes unused (until it expires), so a tenant
 * (or a rofd bug) could otherwise fill the session table.  A prepare beyond it
 * fails with EMFILE; connecting or closing one makes room.
 */
static uint max_prepared_sessions = 64;
module_param(max_prepared_sessions, uint, 0644);
MODULE_PARM_DESC(max_prepared_sessions, "sessions of one tenant prepared and not yet live at most (0: no cap)");

#define ROF_POLL_BATCH		16	/* work completions per ib_poll_cq */
/* One softirq run: at most this many polls and program instructions. */
#define ROF_SIRQ_ROUNDS		4
#define ROF_SIRQ_INSNS		32768	/* below ROF_EXEC_YIELD_EVERY: no resched */
/*
 * irq_poll's weight of a session: one more than the work completions a
 * softirq run can take (ROF_SIRQ_ROUNDS polls of ROF_POLL_BATCH), so that
 * what a run returns is always below it (rof_iop_poll).
 */
#define ROF_SIRQ_WEIGHT		(ROF_SIRQ_ROUNDS * ROF_POLL_BATCH + 1)
/*
 * Bytes programs may move (COPY, CRC64, HASH) in one softirq run: a few
 * ms of CRC64 at worst.  A program whose byte budget exceeds what the
 * run has left goes to the poll work, as one with too many instructions.
 */
#define ROF_SIRQ_BYTES		(2ULL << 20)
#define ROF_POLL_ROUNDS		64	/* polls before yielding the worker */
/* Program instructions and bytes one poll work run may spend before it yields. */
#define ROF_POLL_INSNS		(2ULL * 1000 * 1000)
#define ROF_POLL_BYTES		(64ULL << 20)
#define ROF_INLINE_WANT		256	/* inline bytes asked of the QP */
#define ROF_REAP_PERIOD		HZ	/* idle and expiry scan */

#define ROF_WR_RECV		BIT_ULL(62)
#define ROF_WR_SEND		BIT_ULL(61)
#define ROF_WR_MASK		(ROF_WR_RECV | ROF_WR_SEND)

/* s->flags bits */
enum {
	ROF_SF_CLOSING,		/* close requested; the data path stops */
	ROF_SF_WELCOME,		/* established: register MRs, send regions */
	ROF_SF_OPENED,		/* established and audited: the data path may run */
	ROF_SF_ERR_AUDITED,	/* the error that closes it is audited */
	ROF_SF_POLLING,		/* the data path is owned: a work or the softirq */
	ROF_SF_KICKED,		/* a work found it owned: kick it after */
};

struct rof_sregion {
	struct rof_session *s;
	struct rof_region *r;
	struct rof_attach att;
	bool attached;
	struct sg_table sgt;
	int nents;		/* DMA-mapped entries; 0 when not mapped */
	struct ib_mr *mr;
	u32 access;		/* ROF_ACCESS_* actually granted */
	u64 len;
};

struct rof_slot {
	void *buf;
	u64 dma;
};

struct rof_pending {
	u32 slot;
	u32 len;
	u64 rx_ns;
};

struct rof_session {
	struct kref ref;
	u32 id;
	u32 tenant_id;
	u32 state;			/* enum rof_session_state; rof_sess_lock */
	unsigned long flags;		/* ROF_SF_* */
	u32 close_reason;

	/* What rofd prepared; constant. */
	u32 nregions;
	struct rof_session_grant grants[ROF_SESSION_MAX_REGIONS];
	struct rof_rate rate;
	u64 expires_ns;
	u32 idle_ms;
	__le64 nonce;			/* of the ticket prepare returned */

	/* The connection; built under ->lock, torn down by close_work. */
	struct mutex lock;
	struct rdma_cm_id *cm_id;
	struct rof_device *dev;		/* set under rof_sess_lock */
	struct rof_tenant *tenant;
	bool charged;
	bool prep_charged;		/* counts in max_prepared_sessions; rof_sess_lock */
	bool tenant_attached;
	struct rof_attach tatt;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct rof_sregion *regions;
	struct rof_tenant_rl *trl;
	u32 credits;
	u32 nrecv;			/* credits + 1: one more shows a violation */
	u32 sq_depth;
	u32 max_inline;
	u32 sig_every;
	struct rof_slot *rx;
	struct rof_slot *tx;
	struct ib_recv_wr *rx_wr;
	struct ib_sge *rx_sge;
	struct ib_send_wr *tx_wr;
	struct ib_sge *tx_sge;
	struct ib_reg_wr *reg_wr;
	struct rof_pending *pending;
	struct rof_prog_scratch *prog_scratch;	/* rof_prog.c; poll work only */

	/* Data path state: s->poll_work only. */
	u64 sq_posted;
	u64 sq_done;
	u32 pend_head;
	u32 pend_count;
	struct rof_bucket ops_b;
	struct rof_bucket bytes_b;

	struct work_struct poll_work;	/* rof_sess_wq */
	struct work_struct welcome_work; /* rof_ctl_wq */
	struct irq_poll iop;		/* the softirq side of the data path */
	atomic_t sirq_active;		/* rof_iop_poll runs under way */
	struct delayed_work throttle_work; /* rof_sess_wq */
	struct work_struct close_work;	/* rof_ctl_wq */

	u64 kick_ns;			/* local_clock of a completion event; xchg */
	u64 last_active_ns;		/* ktime_get_ns; READ/WRITE_ONCE */
	u64 connected_ns;
	u32 port_num;
	u32 qp_paced;
	char devname[ROF_NAME_MAX];
	struct sockaddr_storage peer;
	struct rof_session_counters cnt; /* written by poll work only */
};

/*
 * Data path counters for profiling, per CPU, summed when read
 * (debugfs rof/datapath).  Not ABI.  Each poll work run adds its own
 * tally once, at its end.
 */
struct rof_dp_stats {
	u64 kicks;		/* runs started by a completion event */
	u64 sched_ns;		/* completion event to the run's start (local_clock) */
	u64 sched_max_ns;
	u64 runs;
	u64 sirq_runs;		/* of which in softirq */
	u64 sirq_defers;	/* softirq runs that left work to the poll work */
	u64 run_ns;		/* time inside runs */
	u64 polls;		/* ib_poll_cq calls */
	u64 spin_polls;		/* of which busy polling an idle CQ */
	u64 wcs;		/* work completions they returned */
	u64 requests;		/* requests answered */
	u64 prog_bytes;		/* bytes programs moved (COPY, CRC64, HASH) */
	u64 sirq_bytes_max;	/* the most of them one softirq run moved */
	u64 doorbells;		/* ib_post_send calls carrying responses */
	u64 rx_posts;		/* ib_post_recv calls re-posting receives */
};
static DEFINE_PER_CPU(struct rof_dp_stats, rof_dp_stats);

static DEFINE_XARRAY(rof_sessions);
static DEFINE_MUTEX(rof_sess_lock);
static u32 rof_sess_next_id = 1;
static struct workqueue_struct *rof_sess_wq;	/* the data path: nice 0 */
static struct workqueue_struct *rof_ctl_wq;	/* welcome, close, reap: WQ_HIGHPRI */
static struct rdma_cm_id *rof_listen_id;
static struct delayed_work rof_reap_work;

static void rof_session_release(struct kref *ref)
{
	struct rof_session *s = container_of(ref, struct rof_session, ref);

	kfree(s);
}

static void rof_session_put(struct rof_session *s)
{
	kref_put(&s->ref, rof_session_release);
}

static void rof_sess_audit(struct rof_session *s, u32 kind, u32 reason,
			   s32 status)
{
	struct rof_audit_record rec = {
		.kind = kind,
		.tenant = s->tenant_id,
		.session = s->id,
		.status = status,
		.reason = reason,
	};

	rof_audit_log(&rec);
}

/*
 * Under rof_sess_lock.  A session counts against its tenant's
 * max_prepared_sessions from its prepare until it is live or closing.
 */
static void rof_sess_set_state(struct rof_session *s, u32 state)
{
	lockdep_assert_held(&rof_sess_lock);
	s->state = state;
	if (s->prep_charged &&
	    (state == ROF_SESSION_LIVE || state == ROF_SESSION_CLOSING)) {
		s->prep_charged = false;
		rof_tenant_uncharge_prepared(s->tenant);
	}
}

static void rof_session_close(struct rof_session *s, u32 reason)
{
	if (test_and_set_bit(ROF_SF_CLOSING, &s->flags))
		return;
	s->close_reason = reason;
	kref_get(&s->ref);		/* dropped by close_work */
	queue_work(rof_ctl_wq, &s->close_work);
}

/*
 * Run the data path soon; never once the session is closing.  While the
 * welcome is due, the welcome work (high priority) runs it: a connect is
 * complete only once the client has the welcome, and that must not wait
 * behind busy sessions' poll work at normal priority.  Once it is sent,
 * the poll work (normal priority).
 */
static void rof_kick(struct rof_session *s)
{
	if (test_bit(ROF_SF_CLOSING, &s->flags))
		return;
	if (test_bit(ROF_SF_WELCOME, &s->flags))
		queue_work(rof_ctl_wq, &s->welcome_work);
	else
		queue_work(rof_sess_wq, &s->poll_work);
}

/*
 * Audit an error of @s: @reason is an enum ib_wc_status, or
 * ROF_AUDIT_REASON_EVENT plus an async event.  A completion in error is
 * always audited; with @first_only (a flush, an async event) the record is
 * written only if it is the first sign of the error that ends a live
 * session: a peer's protection error, say, reaches us only as the QP
 * going to error.  Returns whether it wrote the record.
 */
static bool rof_audit_error(struct rof_session *s, u32 reason, bool first_only)
{
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_COMPLETION_ERROR,
		.tenant = s->tenant_id,
		.session = s->id,
		.status = -EIO,
		.reason = reason,
	};
	bool audited = test_and_set_bit(ROF_SF_ERR_AUDITED, &s->flags);

	if (first_only && (audited || test_bit(ROF_SF_CLOSING, &s->flags)))
		return false;
	rof_audit_log(&rec);
	return true;
}

/* ---- the data path ------------------------------------------------- */

static int rof_post_rx_chain(struct rof_session *s, struct ib_recv_wr *first)
{
	const struct ib_recv_wr *bad;

	return first ? ib_post_recv(s->qp, first, &bad) : 0;
}

static void rof_prep_rx(struct rof_session *s, u32 slot, struct ib_recv_wr ***tail)
{
	struct ib_recv_wr *wr = &s->rx_wr[slot];
	struct ib_sge *sge = &s->rx_sge[slot];

	ib_dma_sync_single_for_device(s->cq->device, s->rx[slot].dma,
				      ROF_MSG_SIZE, DMA_FROM_DEVICE);
	sge->addr = s->rx[slot].dma;
	sge->length = ROF_MSG_SIZE;
	sge->lkey = s->pd->local_dma_lkey;
	wr->wr_id = ROF_WR_RECV | slot;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->next = NULL;
	**tail = wr;
	*tail = &wr->next;
}

/*
 * Append a SEND of @len bytes already written to the next tx slot.  The
 * sequence number doubles as the slot index (mod sq_depth) and, on a
 * signalled send, tells how far the send queue has drained.
 */
static void rof_prep_tx(struct rof_session *s, u32 len, struct ib_send_wr ***tail)
{
	u64 seq = s->sq_posted++;
	u32 i = seq % s->sq_depth;
	struct ib_send_wr *wr = &s->tx_wr[i];
	struct ib_sge *sge = &s->tx_sge[i];

	memset(wr, 0, sizeof(*wr));
	sge->length = len;
	sge->lkey = s->pd->local_dma_lkey;
	if (len <= s->max_inline) {
		/* Inline data is copied by the CPU at post time: a kernel VA. */
		sge->addr = (uintptr_t)s->tx[i].buf;
		wr->send_flags |= IB_SEND_INLINE;
	} else {
		sge->addr = s->tx[i].dma;
		ib_dma_sync_single_for_device(s->cq->device, s->tx[i].dma, len,
					      DMA_TO_DEVICE);
	}
	wr->wr_id = ROF_WR_SEND | seq;
	wr->opcode = IB_WR_SEND;
	wr->sg_list = sge;
	wr->num_sge = 1;
	if ((seq + 1) % s->sig_every == 0)
		wr->send_flags |= IB_SEND_SIGNALED;
	**tail = wr;
	*tail = &wr->next;
}

static bool rof_sq_full(struct rof_session *s)
{
	return s->sq_posted - s->sq_done >= s->sq_depth;
}

/* The seam to the executor: the tenant's program @program, by its tag. */
static u32 rof_session_invoke(struct rof_session *s, u64 program,
			      const u8 *args, u32 args_len, u8 *resp,
			      u32 *resp_len, struct rof_audit_record *rec,
			      struct rof_run_budget *budget, bool atomic)
{
	return rof_prog_invoke(s->tenant, &s->prog_scratch, program, args,
			       args_len, resp,
			       ROF_MSG_SIZE - sizeof(struct rof_resp_hdr),
			       resp_len, rec, budget, atomic);
}

/*
 * Payload bytes a request's response will carry, as far as they are known
 * before it runs; for the byte buckets.  An INVOKE's response is charged
 * after the run (rof_charge_late).
 */
static u32 rof_resp_payload(const struct rof_req_hdr *h, u32 len)
{
	if (le16_to_cpu(h->opcode) == ROF_OP_ECHO && !h->flags &&
	    le32_to_cpu(h->len) == len - sizeof(*h))
		return len - sizeof(*h);
	return 0;
}

static void rof_charge_late(struct rof_session *s, u64 bytes)
{
	rof_bucket_charge(&s->bytes_b, bytes);
	rof_trl_charge(s->trl, bytes);	/* set while live, as for rof_admit */
}

/*
 * Returns the response length written into @out (header included), or 0
 * when in atomic context (@atomic, see rof_prog_invoke) the request must
 * wait for process context: then nothing happened.  A program's run takes
 * its instructions and bytes from @budget, the run's.
 */
static u32 rof_handle_request(struct rof_session *s, const u8 *in, u32 len,
			      u8 *out, u64 rx_ns, struct rof_run_budget *budget,
			      bool atomic)
{
	struct rof_resp_hdr *rh = (struct rof_resp_hdr *)out;
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_INVOKE,
		.tenant = s->tenant_id,
		.session = s->id,
	};
	struct rof_req_hdr h = {};
	u32 plen = 0, status = ROF_ST_OK, op, in_len = 0;

	memcpy(&h, in, min_t(u32, len, sizeof(h)));
	op = le16_to_cpu(h.opcode);
	if (len < sizeof(h) || le32_to_cpu(h.len) != len - sizeof(h)) {
		status = ROF_ST_BAD_LENGTH;
	} else if (h.flags) {
		status = ROF_ST_BAD_FLAGS;
	} else {
		const u8 *payload = in + sizeof(h);
		struct rof_invoke inv;

		in_len = len - sizeof(h);
		switch (op) {
		case ROF_OP_NOP:
			break;
		case ROF_OP_ECHO:
			memcpy(out + sizeof(*rh), payload, in_len);
			plen = in_len;
			break;
		case ROF_OP_INVOKE:
			if (in_len < sizeof(inv)) {
				status = ROF_ST_BAD_LENGTH;
				break;
			}
			memcpy(&inv, payload, sizeof(inv));
			rec.program = le64_to_cpu(inv.program);
			status = rof_session_invoke(s, rec.program,
						    payload + sizeof(inv),
						    in_len - sizeof(inv),
						    out + sizeof(*rh), &plen, &rec,
						    budget, atomic);
			if (status == ROF_PROG_DEFER)
				return 0;
			rof_charge_late(s, plen);
			break;
		default:
			status = ROF_ST_BAD_OPCODE;
			break;
		}
	}
	if (op == ROF_OP_INVOKE) {
		/* Every INVOKE is audited, the malformed ones too. */
		rec.opcode = op;
		rec.status = status;
		rec.bytes = in_len + plen;
		rec.latency_ns = ktime_get_ns() - rx_ns;
		rof_audit_log(&rec);
	}
	if (status != ROF_ST_OK)
		s->cnt.bad_requests++;
	rh->id = h.id;
	rh->status = cpu_to_le32(status);
	rh->len = cpu_to_le32(plen);
	s->cnt.requests++;
	s->cnt.bytes_in += len > sizeof(h) ? len - sizeof(h) : 0;
	s->cnt.bytes_out += plen;
	return sizeof(*rh) + plen;
}

/* 0 when one request of @bytes may run now, else nanoseconds to wait. */
static u64 rof_admit(struct rof_session *s, u64 bytes, u64 now)
{
	u64 wait, w;

	rof_bucket_refill(&s->ops_b, now);
	rof_bucket_refill(&s->bytes_b, now);
	wait = rof_bucket_wait_ns(&s->ops_b, 1);
	w = rof_bucket_wait_ns(&s->bytes_b, bytes);
	if (w > wait)
		wait = w;
	if (wait)
		return wait;
	wait = rof_trl_admit(s->trl, bytes, now);
	if (wait)
		return wait;
	rof_bucket_take(&s->ops_b, 1);
	rof_bucket_take(&s->bytes_b, bytes);
	return 0;
}

/* Undo rof_admit: the request of @bytes did not run after all. */
static void rof_unadmit(struct rof_session *s, u64 bytes)
{
	rof_bucket_untake(&s->ops_b, 1);
	rof_bucket_untake(&s->bytes_b, bytes);
	rof_trl_unadmit(s->trl, bytes);
}

/*
 * Answer the pending requests that tokens, send queue room and @budget
 * (program instructions and bytes this run may still spend) allow, and post all
 * their responses with one ib_post_send and all the receives they free
 * with one ib_post_recv (Kalia's doorbell batching).  Requests over the
 * rate wait here, their receive buffers (and so the client's credits)
 * held, until the throttle work wakes the poller.  In the softirq
 * (@atomic) it stops at the first request that needs process context and
 * sets *@defer.
 */
static int rof_process_pending(struct rof_session *s,
			       struct rof_run_budget *budget,
			       struct rof_dp_stats *st, bool atomic, bool *defer)
{
	struct ib_send_wr *tx_first = NULL, **tx_tail = &tx_first;
	struct ib_recv_wr *rx_first = NULL, **rx_tail = &rx_first;
	const struct ib_send_wr *bad;
	u64 now = ktime_get_ns();
	int ret;

	while (s->pend_count) {
		struct rof_pending *p = &s->pending[s->pend_head];
		const u8 *in = s->rx[p->slot].buf;
		struct rof_req_hdr h = {};
		u64 wait, bytes, moved;
		u32 rlen;

		if (rof_sq_full(s) || !budget->insns || !budget->bytes)
			break;
		memcpy(&h, in, min_t(u32, p->len, sizeof(h)));
		bytes = p->len - min_t(u32, p->len, sizeof(h)) +
			rof_resp_payload(&h, p->len);
		wait = rof_admit(s, bytes, now);
		if (wait) {
			/* Waiting for tokens is not idleness. */
			WRITE_ONCE(s->last_active_ns, now);
			s->cnt.deferred++;
			if (!test_bit(ROF_SF_CLOSING, &s->flags))
				mod_delayed_work(rof_sess_wq, &s->throttle_work,
						 nsecs_to_jiffies(wait) + 1);
			break;
		}
		moved = budget->moved;
		rlen = rof_handle_request(s, in, p->len,
					  s->tx[s->sq_posted % s->sq_depth].buf,
					  p->rx_ns, budget, atomic);
		st->prog_bytes += budget->moved - moved;
		if (!rlen) {
			/* For the poll work: it stays pending, uncharged. */
			rof_unadmit(s, bytes);
			*defer = true;
			break;
		}
		rof_prep_tx(s, rlen, &tx_tail);
		rof_prep_rx(s, p->slot, &rx_tail);
		s->pend_head = (s->pend_head + 1) % s->nrecv;
		s->pend_count--;
		/* Every request costs one; a program's run took its own. */
		budget->insns -= min_t(u64, budget->insns, 1);
		st->requests++;
		if (!atomic)
			cond_resched();
	}
	/*
	 * Receives first: a client may send again as soon as it has a reply.
	 * With bottom halves off: a software device (rxe) hands a kernel
	 * QP's sends to a tasklet, which would otherwise wake ksoftirqd from
	 * here; this way it runs at once, on this CPU, at local_bh_enable().
	 */
	local_bh_disable();
	ret = rof_post_rx_chain(s, rx_first);
	if (!ret && tx_first)
		ret = ib_post_send(s->qp, tx_first, &bad);
	local_bh_enable();
	st->rx_posts += !!rx_first;
	st->doorbells += !!tx_first;
	return ret;
}

static void rof_completion_error(struct rof_session *s, const struct ib_wc *wc)
{
	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/*
		 * A consequence of an error already reported, or of the QP
		 * being moved to error (e.g. by the peer's protection error,
		 * which the responder sees only so): audited if nothing
		 * else was, and the session is over.
		 */
		if (rof_audit_error(s, wc->status, true))
			s->cnt.completion_errors++;
		rof_session_close(s, ROF_CLOSE_QP_ERROR);
		return;
	}
	s->cnt.completion_errors++;
	rof_audit_error(s, wc->status, false);
	pr_info_ratelimited("session %u: %s completion error: %s (vendor 0x%x)\n",
			    s->id, (wc->wr_id & ROF_WR_RECV) ? "receive" : "send",
			    ib_wc_status_msg(wc->status), wc->vendor_err);
	rof_session_close(s, ROF_CLOSE_QP_ERROR);
}

/* Returns false when the session must stop. */
static bool rof_handle_wc(struct rof_session *s, const struct ib_wc *wc, u64 now)
{
	if (wc->status != IB_WC_SUCCESS) {
		rof_completion_error(s, wc);
		return false;
	}
	if (wc->wr_id & ROF_WR_SEND) {
		/* A signalled send retires every send before it too. */
		s->sq_done = (wc->wr_id & ~ROF_WR_MASK) + 1;
		return true;
	}
	if (wc->opcode != IB_WC_RECV || (wc->wc_flags & IB_WC_WITH_IMM) ||
	    s->pend_count >= s->credits) {
		/* More requests than credits, or a WRITE_WITH_IMM. */
		pr_info_ratelimited("session %u: protocol error (%u requests pending, %u credits)\n",
				    s->id, s->pend_count + 1, s->credits);
		rof_session_close(s, ROF_CLOSE_PROTOCOL);
		return false;
	}
	{
		u32 slot = wc->wr_id & ~ROF_WR_MASK;
		u32 tail = (s->pend_head + s->pend_count) % s->nrecv;

		ib_dma_sync_single_for_cpu(s->cq->device, s->rx[slot].dma,
					   ROF_MSG_SIZE, DMA_FROM_DEVICE);
		s->pending[tail].slot = slot;
		s->pending[tail].len = wc->byte_len;
		s->pending[tail].rx_ns = now;
		s->pend_count++;
	}
	return true;
}

static int rof_send_welcome(struct rof_session *s);

/*
 * The data path of one session.  One run is bounded: at most
 * ROF_POLL_ROUNDS polls and ROF_POLL_INSNS program instructions, with a
 * reschedule point between requests; then it queues itself again behind
 * the other sessions' work.  The workqueue is unbound: the scheduler, not
 * the CPU a completion came in on, decides where each session runs.
 */
static void rof_dp_account(const struct rof_dp_stats *st)
{
	struct rof_dp_stats *c = get_cpu_ptr(&rof_dp_stats);

	c->kicks += st->kicks;
	c->sched_ns += st->sched_ns;
	c->sched_max_ns = max(c->sched_max_ns, st->sched_max_ns);
	c->runs++;
	c->sirq_runs += st->sirq_runs;
	c->sirq_defers += st->sirq_defers;
	c->run_ns += st->run_ns;
	c->polls += st->polls;
	c->spin_polls += st->spin_polls;
	c->wcs += st->wcs;
	c->requests += st->requests;
	c->prog_bytes += st->prog_bytes;
	c->sirq_bytes_max = max(c->sirq_bytes_max, st->sirq_bytes_max);
	c->doorbells += st->doorbells;
	c->rx_posts += st->rx_posts;
	put_cpu_ptr(&rof_dp_stats);
}

/*
 * The data path of a session runs in its poll work, its welcome work or
 * the softirq of its completions (rof_iop_poll), never in two at once:
 * whoever runs it owns ROF_SF_POLLING.  A work that finds it owned leaves
 * ROF_SF_KICKED for the owner, which kicks again when it lets go: no kick
 * is lost.  The softirq that finds it owned kicks.
 */
static bool rof_dp_claim(struct rof_session *s)
{
	return !test_and_set_bit_lock(ROF_SF_POLLING, &s->flags);
}

static void rof_dp_release(struct rof_session *s)
{
	clear_bit_unlock(ROF_SF_POLLING, &s->flags);
	smp_mb__after_atomic();	/* POLLING clear before KICKED is read */
	if (test_and_clear_bit(ROF_SF_KICKED, &s->flags))
		rof_kick(s);
}

static bool rof_poll_run(struct rof_session *s, struct rof_dp_stats *st,
			 bool atomic);

/* Start a run's tally; the completion event's delay if it started one. */
static u64 rof_dp_start(struct rof_session *s, struct rof_dp_stats *st)
{
	u64 start = local_clock(), kick = xchg(&s->kick_ns, 0);

	if (kick && kick < start) {
		st->kicks = 1;
		st->sched_ns = start - kick;
		st->sched_max_ns = st->sched_ns;
	}
	return start;
}

/*
 * In process context (the poll or the welcome work): own the data path, or
 * leave ROF_SF_KICKED to its owner, which kicks again as it lets go.
 */
static bool rof_dp_claim_work(struct rof_session *s)
{
	if (rof_dp_claim(s))
		return true;
	set_bit(ROF_SF_KICKED, &s->flags);
	smp_mb__after_atomic();	/* KICKED set before POLLING is read */
	if (!rof_dp_claim(s))
		return false;		/* the owner sees KICKED as it lets go */
	clear_bit(ROF_SF_KICKED, &s->flags);
	return true;
}

/*
 * The welcome, by whoever owns the data path in process context first
 * once the session is open: the welcome work, or the poll work if it got
 * there first.  Returns 1 when this call sent it, 0 when there was none to
 * send, a negative error when it failed (the session is then closing).
 */
static int rof_welcome(struct rof_session *s)
{
	int ret;

	if (test_bit(ROF_SF_CLOSING, &s->flags) ||
	    !test_bit_acquire(ROF_SF_OPENED, &s->flags) ||
	    !test_and_clear_bit(ROF_SF_WELCOME, &s->flags))
		return 0;
	ret = rof_send_welcome(s);
	if (ret) {
		pr_info_ratelimited("session %u: cannot register regions: %d\n",
				    s->id, ret);
		rof_session_close(s, ROF_CLOSE_QP_ERROR);
		return ret;
	}
	return 1;
}

/*
 * The welcome work, on rof_ctl_wq (high priority): the welcome completes
 * the client's connect, so it must not wait behind busy sessions' poll
 * work at normal priority.  It is short (a REG_MR per granted region and
 * one SEND), so it takes little from normal tasks.  What came meanwhile
 * is the poll work's to serve, at normal priority: a connect that is
 * followed by a flood competes as any other busy session does.
 */
static void rof_welcome_work(struct work_struct *work)
{
	struct rof_session *s = container_of(work, struct rof_session,
					     welcome_work);
	int sent;

	if (!rof_dp_claim_work(s))
		return;
	sent = rof_welcome(s);
	rof_dp_release(s);
	/*
	 * Not kicked unless sent: with the welcome due but the session not
	 * open yet, a kick would only queue this work again, at once.
	 * ESTABLISHED kicks once it marked the session open.
	 */
	if (sent > 0)
		rof_kick(s);
}

static void rof_poll_work(struct work_struct *work)
{
	struct rof_session *s = container_of(work, struct rof_session, poll_work);
	struct rof_dp_stats st = {};
	u64 start;

	if (!rof_dp_claim_work(s))
		return;
	start = rof_dp_start(s, &st);
	rof_poll_run(s, &st, false);
	st.run_ns = local_clock() - start;
	rof_dp_release(s);
	rof_dp_account(&st);
}

/*
 * The completion's softirq (irq_poll): serve what is short here, without
 * the work item's wake-up, and leave the rest to the poll work.
 *
 * Returns the work completions it took, so that irq_poll's budget (shared
 * by every irq_poll instance on the CPU, ib_cq's included) shrinks by what
 * this run did and the softirq hands over to ksoftirqd when it is spent.
 * A run has always completed (irq_poll_complete) by then, and irq_poll
 * takes a return of @weight or more for "still scheduled, still mine":
 * what it returns stays below @weight (ROF_SIRQ_WEIGHT is chosen so).
 */
static int rof_iop_poll(struct irq_poll *iop, int weight)
{
	struct rof_session *s = container_of(iop, struct rof_session, iop);
	struct rof_dp_stats st = { .sirq_runs = 1 };
	u64 start;
	int work = 0;

	/*
	 * Counted before irq_poll_complete(), which lets irq_poll_disable()
	 * return: close work then waits for the count to drop to 0 before it
	 * destroys the CQ.  Completing first means no completion event is
	 * lost: the run re-arms the CQ itself.
	 */
	atomic_inc(&s->sirq_active);
	irq_poll_complete(iop);
	if (!rof_dp_claim(s)) {
		rof_kick(s);
		goto out;
	}
	/*
	 * Not before ESTABLISHED, and the welcome (it registers MRs) is
	 * the welcome work's: OPENED first, then WELCOME, the reverse of the
	 * order ESTABLISHED sets them in.  Owning the data path, nobody
	 * clears WELCOME meanwhile.
	 */
	if (!test_bit_acquire(ROF_SF_OPENED, &s->flags) ||
	    test_bit(ROF_SF_WELCOME, &s->flags)) {
		rof_dp_release(s);
		rof_kick(s);
		goto out;
	}
	start = rof_dp_start(s, &st);
	if (rof_poll_run(s, &st, true)) {
		st.sirq_defers = 1;
		rof_kick(s);
	}
	st.sirq_bytes_max = st.prog_bytes;
	st.run_ns = local_clock() - start;
	work = min_t(u64, st.wcs, max(weight - 1, 0));
	rof_dp_release(s);
	rof_dp_account(&st);
out:
	smp_mb__before_atomic();	/* every access to @s before the count drops */
	atomic_dec(&s->sirq_active);	/* the last one */
	return work;
}

/*
 * The data path of one session; its caller owns it (rof_dp_claim).  One
 * run is bounded: at most ROF_POLL_ROUNDS polls (those busy polling an
 * idle CQ apart: at most poll_spin_us each time it goes idle) and
 * ROF_POLL_INSNS program instructions, with a reschedule point between
 * requests; then it queues itself again behind the other sessions' work.
 * The workqueue is unbound: the scheduler, not the CPU a completion came
 * in on, decides where each session runs.
 *
 * In the softirq (@atomic) a run is shorter (ROF_SIRQ_ROUNDS polls,
 * ROF_SIRQ_INSNS instructions), never spins, and stops at the first
 * request that needs process context (a long program, or a scratch to
 * grow).  Returns true when it stopped with work left: the caller hands
 * it to the poll work.
 */
static bool rof_poll_run(struct rof_session *s, struct rof_dp_stats *st,
			 bool atomic)
{
	struct ib_wc wcs[ROF_POLL_BATCH];
	struct rof_run_budget budget = {
		.insns = atomic ? ROF_SIRQ_INSNS : ROF_POLL_INSNS,
		.bytes = atomic ? ROF_SIRQ_BYTES : ROF_POLL_BYTES,
	};
	u64 spin_until = 0;
	int rounds = 0, max_rounds = atomic ? ROF_SIRQ_ROUNDS : ROF_POLL_ROUNDS;
	int n, i, ret;
	bool spinning = false, defer = false;

	/* Not before ESTABLISHED (the welcome goes first), not after close. */
	if (test_bit(ROF_SF_CLOSING, &s->flags) ||
	    !test_bit(ROF_SF_OPENED, &s->flags))
		return false;
	if (!atomic && rof_welcome(s) < 0)
		return false;
	for (;;) {
		n = ib_poll_cq(s->cq, ROF_POLL_BATCH, wcs);
		st->polls++;
		if (n > 0) {
			u64 now = ktime_get_ns();

			st->wcs += n;
			for (i = 0; i < n; i++)
				if (!rof_handle_wc(s, &wcs[i], now))
					return false;
			WRITE_ONCE(s->last_active_ns, now);
			spinning = false;
		}
		if (n > 0 || s->pend_count) {
			ret = rof_process_pending(s, &budget, st, atomic, &defer);
			if (ret) {
				pr_info_ratelimited("session %u: post failed: %d\n",
						    s->id, ret);
				rof_session_close(s, ROF_CLOSE_QP_ERROR);
				return false;
			}
			if (defer)
				return true;
		}
		/* Busy polling an idle CQ is bounded by its time, not rounds. */
		if (!budget.insns || !budget.bytes ||
		    (!spinning && ++rounds >= max_rounds)) {
			if (atomic)
				return true;
			/* Let other sessions' work run; come back at once. */
			rof_kick(s);
			return false;
		}
		if (!atomic)
			cond_resched();
		if (n == ROF_POLL_BATCH)
			continue;
		/*
		 * Idle: busy poll a while if asked to (not in the softirq), and
		 * not while a rate limit holds requests back.
		 */
		if (!atomic && n == 0 && !s->pend_count &&
		    !test_bit(ROF_SF_CLOSING, &s->flags)) {
			u32 spin = READ_ONCE(poll_spin_us);
			/* The CPU's clock: cheap, unlike a clocksource read. */
			u64 now = spin ? local_clock() : 0;

			if (spin && !spinning) {
				spinning = true;
				spin_until = now + (u64)spin * NSEC_PER_USEC;
			}
			if (spin && now < spin_until) {
				st->spin_polls++;
				cpu_relax();
				continue;
			}
		}
		spinning = false;
		/* Empty: re-arm, and poll again if a completion slipped in. */
		if (ib_req_notify_cq(s->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) <= 0)
			return false;
	}
}

static void rof_throttle_work(struct work_struct *work)
{
	struct rof_session *s = container_of(to_delayed_work(work),
					     struct rof_session, throttle_work);

	rof_kick(s);
}

static void rof_cq_comp(struct ib_cq *cq, void *ctx)
{
	struct rof_session *s = ctx;

	/* When the event came, for the scheduling delay (rof_dp_stats). */
	cmpxchg64(&s->kick_ns, 0, local_clock());
	if (READ_ONCE(poll_softirq) && !test_bit(ROF_SF_CLOSING, &s->flags))
		irq_poll_sched(&s->iop);
	else
		rof_kick(s);
}

static void rof_cq_event(struct ib_event *ev, void *ctx)
{
	struct rof_session *s = ctx;

	pr_info_ratelimited("session %u: CQ event %s\n", s->id,
			    ib_event_msg(ev->event));
	rof_audit_error(s, ROF_AUDIT_REASON_EVENT + ev->event, true);
	rof_session_close(s, ROF_CLOSE_QP_ERROR);
}

static void rof_qp_event(struct ib_event *ev, void *ctx)
{
	struct rof_session *s = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		break;
	default:
		pr_info_ratelimited("session %u: QP event %s\n", s->id,
				    ib_event_msg(ev->event));
		rof_audit_error(s, ROF_AUDIT_REASON_EVENT + ev->event, true);
		rof_session_close(s, ROF_CLOSE_QP_ERROR);
		break;
	}
}

/* ---- regions: one FRWR per granted region ---------------------------- */

static u32 rof_ib_access(u32 access)
{
	u32 a = IB_ACCESS_LOCAL_WRITE;

	if (access & ROF_ACCESS_READ)
		a |= IB_ACCESS_REMOTE_READ;
	if (access & ROF_ACCESS_WRITE)
		a |= IB_ACCESS_REMOTE_WRITE;
	if (access & ROF_ACCESS_ATOMIC)
		a |= IB_ACCESS_REMOTE_ATOMIC;
	return a;
}

static void rof_region_revoked(struct rof_attach *a, const char *reason)
{
	struct rof_sregion *sr = container_of(a, struct rof_sregion, att);

	pr_info_ratelimited("session %u: region revoked (%s)\n", sr->s->id, reason);
	rof_session_close(sr->s, ROF_CLOSE_REVOKED);
}

static void rof_tenant_revoked(struct rof_attach *a, const char *reason)
{
	struct rof_session *s = container_of(a, struct rof_session, tatt);

	pr_info_ratelimited("session %u: tenant revoked (%s)\n", s->id, reason);
	rof_session_close(s, ROF_CLOSE_REVOKED);
}

static void rof_sregion_free(struct rof_session *s, struct rof_sregion *sr)
{
	if (sr->mr)
		ib_dereg_mr(sr->mr);	/* invalidates this session's rkey */
	if (sr->nents)
		ib_dma_unmap_sg(s->dev->ibdev, sr->sgt.sgl, sr->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
	sg_free_table(&sr->sgt);
	if (sr->attached)
		rof_region_detach(sr->r, &sr->att);
	if (sr->r)
		rof_region_put(sr->r);
	memset(sr, 0, sizeof(*sr));
}

/*
 * The cheap half of granting a region, done while the connect request
 * waits: the region must still be there and attachable.  Returns 0 or an
 * enum rof_reject_reason.
 */
static int rof_sregion_attach(struct rof_session *s, struct rof_sregion *sr,
			      const struct rof_session_grant *g)
{
	struct ib_device *ibdev = s->dev->ibdev;
	unsigned int npages;

	sr->s = s;
	sr->r = rof_region_get(s->tenant, g->region);
	if (!sr->r)
		return ROF_REJECT_NO_REGION;
	sr->access = g->access & rof_region_rights(sr->r);
	if (ibdev->attrs.atomic_cap == IB_ATOMIC_NONE)
		sr->access &= ~ROF_ACCESS_ATOMIC;
	if (!sr->access)
		return ROF_REJECT_NO_REGION;
	sr->att.revoke = rof_region_revoked;
	if (rof_region_attach(sr->r, &sr->att))
		return ROF_REJECT_NO_REGION;
	sr->attached = true;
	if (!rof_region_pages(sr->r, &npages) || !npages ||
	    npages > ibdev->attrs.max_fast_reg_page_list_len)
		return ROF_REJECT_RESOURCES;
	return 0;
}

/*
 * The costly half, in the session's own work (not in the rdma_cm's
 * handler, which every connect of the machine shares): an sg table over
 * the region's pages, their DMA mapping and a fast-registration MR.
 */
static int rof_sregion_map(struct rof_session *s, struct rof_sregion *sr)
{
	struct ib_device *ibdev = s->dev->ibdev;
	unsigned int npages;
	struct page **pages;
	int n;

	pages = rof_region_pages(sr->r, &npages);
	sr->len = rof_region_size(sr->r);
	if (sg_alloc_table_from_pages(&sr->sgt, pages, npages, 0, sr->len,
				      GFP_KERNEL))
		return -ENOMEM;
	sr->nents = ib_dma_map_sg(ibdev, sr->sgt.sgl, sr->sgt.orig_nents,
				  DMA_BIDIRECTIONAL);
	if (sr->nents <= 0) {
		sr->nents = 0;
		return -ENOMEM;
	}
	/* Never synced: a mapping that would need syncs is refused. */
	if (!rof_region_dma_ok(ibdev, sr->sgt.sgl, sr->nents))
		return -EOPNOTSUPP;
	sr->mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(sr->mr)) {
		n = PTR_ERR(sr->mr);
		sr->mr = NULL;
		return n;
	}
	n = ib_map_mr_sg(sr->mr, sr->sgt.sgl, sr->nents, NULL, PAGE_SIZE);
	if (n != sr->nents)
		return n < 0 ? n : -EINVAL;
	/*
	 * Zero-based: a client addresses the region by offset, and never
	 * learns a kernel address.  The region starts on a page boundary,
	 * so the first page's offset is 0 as the MR's page list assumes.
	 */
	sr->mr->iova = 0;
	ib_update_fast_reg_key(sr->mr, ib_inc_rkey(sr->mr->rkey));
	return 0;
}

/*
 * Map the regions, then post the REG_MRs and the welcome SEND carrying
 * the region table in one chain: the send queue executes in order, so by
 * the time the client reads an rkey the registration behind it is done.
 */
static int rof_send_welcome(struct rof_session *s)
{
	struct ib_send_wr *first = NULL, **tail = &first;
	const struct ib_send_wr *bad;
	struct rof_resp_hdr *rh;
	struct rof_wire_region *wr;
	u32 i, len;
	int ret;

	if (s->sq_depth - (s->sq_posted - s->sq_done) < s->nregions + 1)
		return -ENOSPC;	/* cannot happen: the queue is empty */
	for (i = 0; i < s->nregions; i++) {
		ret = rof_sregion_map(s, &s->regions[i]);
		if (ret)
			return ret;
		cond_resched();
	}
	for (i = 0; i < s->nregions; i++) {
		struct rof_sregion *sr = &s->regions[i];
		struct ib_reg_wr *reg = &s->reg_wr[i];
		u64 seq = s->sq_posted++;

		memset(reg, 0, sizeof(*reg));
		reg->wr.opcode = IB_WR_REG_MR;
		reg->wr.wr_id = ROF_WR_SEND | seq;
		reg->mr = sr->mr;
		reg->key = sr->mr->rkey;
		reg->access = rof_ib_access(sr->access);
		if ((seq + 1) % s->sig_every == 0)
			reg->wr.send_flags = IB_SEND_SIGNALED;
		*tail = &reg->wr;
		tail = &reg->wr.next;
	}
	rh = s->tx[s->sq_posted % s->sq_depth].buf;
	wr = (struct rof_wire_region *)(rh + 1);
	for (i = 0; i < s->nregions; i++) {
		struct rof_sregion *sr = &s->regions[i];

		wr[i].addr = cpu_to_le64(sr->mr->iova);
		wr[i].length = cpu_to_le64(sr->len);
		wr[i].rkey = cpu_to_le32(sr->mr->rkey);
		wr[i].region = cpu_to_le32(s->grants[i].region);
		wr[i].access = cpu_to_le32(sr->access);
		wr[i].reserved = 0;
	}
	len = s->nregions * sizeof(*wr);
	rh->id = cpu_to_le64(ROF_WELCOME_ID);
	rh->status = cpu_to_le32(ROF_ST_OK);
	rh->len = cpu_to_le32(len);
	rof_prep_tx(s, sizeof(*rh) + len, &tail);
	return ib_post_send(s->qp, first, &bad);
}

/* ---- building and tearing down a connection ------------------------ */

static void rof_slots_free(struct rof_session *s, struct rof_slot *slots,
			   u32 n, enum dma_data_direction dir)
{
	u32 i;

	if (!slots)
		return;
	for (i = 0; i < n; i++) {
		if (!slots[i].buf)
			continue;
		if (slots[i].dma)
			ib_dma_unmap_single(s->dev->ibdev, slots[i].dma,
					    ROF_MSG_SIZE, dir);
		kfree(slots[i].buf);
	}
	kfree(slots);
}

static struct rof_slot *rof_slots_alloc(struct rof_session *s, u32 n,
					enum dma_data_direction dir)
{
	struct rof_slot *slots = kcalloc(n, sizeof(*slots), GFP_KERNEL);
	u32 i;

	if (!slots)
		return NULL;
	for (i = 0; i < n; i++) {
		u64 dma;

		/* kmalloc memory is physically contiguous: one mapping. */
		slots[i].buf = kzalloc(ROF_MSG_SIZE, GFP_KERNEL);
		if (!slots[i].buf)
			goto err;
		dma = ib_dma_map_single(s->dev->ibdev, slots[i].buf,
					ROF_MSG_SIZE, dir);
		if (ib_dma_mapping_error(s->dev->ibdev, dma))
			goto err;
		slots[i].dma = dma;
	}
	return slots;
err:
	rof_slots_free(s, slots, n, dir);
	return NULL;
}

/*
 * Free everything the connection holds but the cm_id.  Called with
 * s->lock held, after the data path has stopped (or never started).
 */
static void rof_conn_release(struct rof_session *s)
{
	u32 i;

	if (s->qp) {
		rdma_destroy_qp(s->cm_id);
		s->qp = NULL;
	}
	if (s->cq) {
		ib_destroy_cq(s->cq);
		s->cq = NULL;
	}
	if (s->regions) {
		for (i = 0; i < s->nregions; i++)
			rof_sregion_free(s, &s->regions[i]);
		kfree(s->regions);
		s->regions = NULL;
	}
	rof_slots_free(s, s->rx, s->nrecv, DMA_FROM_DEVICE);
	s->rx = NULL;
	rof_slots_free(s, s->tx, s->sq_depth, DMA_TO_DEVICE);
	s->tx = NULL;
	kfree(s->rx_wr);
	kfree(s->rx_sge);
	kfree(s->tx_wr);
	kfree(s->tx_sge);
	kfree(s->reg_wr);
	kfree(s->pending);
	s->rx_wr = NULL;
	s->rx_sge = NULL;
	s->tx_wr = NULL;
	s->tx_sge = NULL;
	s->reg_wr = NULL;
	s->pending = NULL;
	rof_trl_put(s->trl);
	s->trl = NULL;
	if (s->pd) {
		/* Last: the QP and the MRs in it are gone. */
		ib_dealloc_pd(s->pd);
		s->pd = NULL;
	}
	if (s->charged) {
		rof_tenant_uncharge_session(s->tenant);
		s->charged = false;
	}
	if (s->dev) {
		rof_device_put(s->dev);
		mutex_lock(&rof_sess_lock);
		s->dev = NULL;
		mutex_unlock(&rof_sess_lock);
	}
}

static int rof_conn_alloc_arrays(struct rof_session *s)
{
	s->rx = rof_slots_alloc(s, s->nrecv, DMA_FROM_DEVICE);
	s->tx = rof_slots_alloc(s, s->sq_depth, DMA_TO_DEVICE);
	s->rx_wr = kcalloc(s->nrecv, sizeof(*s->rx_wr), GFP_KERNEL);
	s->rx_sge = kcalloc(s->nrecv, sizeof(*s->rx_sge), GFP_KERNEL);
	s->tx_wr = kcalloc(s->sq_depth, sizeof(*s->tx_wr), GFP_KERNEL);
	s->tx_sge = kcalloc(s->sq_depth, sizeof(*s->tx_sge), GFP_KERNEL);
	s->reg_wr = kcalloc(max_t(u32, s->nregions, 1), sizeof(*s->reg_wr),
			    GFP_KERNEL);
	s->pending = kcalloc(s->nrecv, sizeof(*s->pending), GFP_KERNEL);
	s->regions = kcalloc(max_t(u32, s->nregions, 1), sizeof(*s->regions),
			     GFP_KERNEL);
	if (!s->rx || !s->tx || !s->rx_wr || !s->rx_sge || !s->tx_wr ||
	    !s->tx_sge || !s->reg_wr || !s->pending || !s->regions)
		return -ENOMEM;
	return 0;
}

static int rof_conn_create_qp(struct rof_session *s, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {
		.event_handler	= rof_qp_event,
		.qp_context	= s,
		.send_cq	= s->cq,
		.recv_cq	= s->cq,
		.sq_sig_type	= IB_SIGNAL_REQ_WR,
		.qp_type	= IB_QPT_RC,
		.cap = {
			.max_send_wr	= s->sq_depth,
			.max_recv_wr	= s->nrecv,
			.max_send_sge	= 1,
			.max_recv_sge	= 1,
			.max_inline_data = ROF_INLINE_WANT,
		},
	};
	int ret;

	ret = rdma_create_qp(id, s->pd, &qa);
	if (ret) {
		/* Devices without inline sends refuse the request: go without. */
		qa.cap.max_inline_data = 0;
		ret = rdma_create_qp(id, s->pd, &qa);
	}
	if (ret)
		return ret;
	s->qp = id->qp;
	s->max_inline = min_t(u32, qa.cap.max_inline_data, ROF_MSG_SIZE);
	return 0;
}

/*
 * Build the session's connection on @id.  Returns 0 or an enum
 * rof_reject_reason; on failure everything built is released again.
 */
static int rof_conn_build(struct rof_session *s, struct rdma_cm_id *id,
			  struct rof_device *dev)
{
	struct ib_device *ibdev = dev->ibdev;
	struct ib_cq_init_attr ca = {};
	u32 i, max_wr, cq_lim;
	int reason, ret;

	s->dev = dev;			/* bound by the caller under rof_sess_lock */
	/* Attached to the tenant since prepare: it cannot be another one. */
	ret = rof_tenant_charge_session(s->tenant);
	if (ret)
		return ret == -EDQUOT ? ROF_REJECT_QUOTA : ROF_REJECT_NO_TENANT;
	s->charged = true;
	/*
	 * A protection domain per session, not per tenant: the MRs of one
	 * session are then out of reach of every other QP, the tenant's
	 * other sessions' included, whatever rkey they guess.
	 */
	s->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(s->pd)) {
		s->pd = NULL;
		return ROF_REJECT_RESOURCES;
	}
	s->trl = rof_trl_get(s->tenant);
	if (!s->trl)
		return ROF_REJECT_RESOURCES;

	/* Credits: the tenant's in-flight quota, within what the device takes. */
	max_wr = ibdev->attrs.max_qp_wr;
	cq_lim = ibdev->attrs.max_cqe;
	s->credits = min_t(u32, rof_tenant_inflight_quota(s->tenant),
			   ROF_SESSION_CREDITS_MAX);
	s->credits = min_t(u32, s->credits, (max_wr - s->nregions - 2) / 2);
	if (!s->credits || max_wr < s->nregions + 4)
		return ROF_REJECT_RESOURCES;
	s->nrecv = s->credits + 1;
	s->sq_depth = 2 * s->credits + s->nregions + 2;
	if (s->nrecv + s->sq_depth > cq_lim)
		return ROF_REJECT_RESOURCES;
	s->sig_every = clamp_t(u32, signal_every, 1, s->sq_depth / 2);

	if (rof_conn_alloc_arrays(s))
		return ROF_REJECT_RESOURCES;

	ca.cqe = s->nrecv + s->sq_depth;
	ca.comp_vector = s->id % ibdev->num_comp_vectors;
	s->cq = ib_create_cq(ibdev, rof_cq_comp, rof_cq_event, s, &ca);
	if (IS_ERR(s->cq)) {
		s->cq = NULL;
		return ROF_REJECT_RESOURCES;
	}
	if (rof_conn_create_qp(s, id))
		return ROF_REJECT_RESOURCES;

	for (i = 0; i < s->nregions; i++) {
		reason = rof_sregion_attach(s, &s->regions[i], &s->grants[i]);
		if (reason)
			return reason;
	}

	{
		struct ib_recv_wr *first = NULL, **tail = &first;

		for (i = 0; i < s->nrecv; i++)
			rof_prep_rx(s, i, &tail);
		if (rof_post_rx_chain(s, first))
			return ROF_REJECT_RESOURCES;
	}
	if (ib_req_notify_cq(s->cq, IB_CQ_NEXT_COMP) < 0)
		return ROF_REJECT_RESOURCES;

	rof_bucket_init(&s->ops_b, s->rate.ops_per_sec, 1, ktime_get_ns());
	rof_bucket_init(&s->bytes_b, s->rate.bytes_per_sec, 2 * ROF_MSG_SIZE,
			ktime_get_ns());
	s->cm_id = id;
	s->port_num = id->port_num;
	strscpy(s->devname, dev_name(&ibdev->dev), sizeof(s->devname));
	memcpy(&s->peer, &id->route.addr.dst_addr, sizeof(s->peer));
	WRITE_ONCE(s->last_active_ns, ktime_get_ns());
	return 0;
}

static void rof_cm_reject(struct rdma_cm_id *id, u32 reason)
{
	struct rof_reject rej = {
		.magic = cpu_to_le32(ROF_REJECT_MAGIC),
		.reason = cpu_to_le32(reason),
	};

	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * @vouched: a valid MAC named @tenant and @session.  Rejects without one
 * are anyone's to cause, by the thousand: droppable and rate-limited.
 */
static void rof_audit_reject(u32 tenant, u32 session, u32 reason,
			     bool vouched)
{
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_SESSION_REJECT,
		.tenant = tenant,
		.session = session,
		.reason = reason,
	};

	if (vouched)
		rof_audit_log(&rec);
	else
		rof_audit_log_anon(&rec);
}

/*
 * A connect request on the listener.  Returns non-zero to have the
 * rdma_cm destroy @id (after a reject, or a failed accept).
 */
static int rof_cm_connect(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct rdma_conn_param ap = {};
	struct rof_session *s = NULL;
	struct rof_device *dev = NULL;
	struct rof_accept acc = {};
	struct rof_ticket tk;
	u32 tenant = 0, sid = 0;
	bool vouched;
	int reason, ret;

	reason = rof_ticket_check(cp->private_data, cp->private_data_len, &tk);
	vouched = !reason || reason == ROF_REJECT_EXPIRED;
	if (vouched) {
		/* Only ids a valid MAC vouches for are used, or audited. */
		tenant = le32_to_cpu(tk.tenant);
		sid = le32_to_cpu(tk.session);
	}
	if (reason)
		goto reject;

	dev = rof_device_get_ib(id->device);
	if (!dev) {
		reason = ROF_REJECT_DEVICE;
		goto reject;
	}
	mutex_lock(&rof_sess_lock);
	s = xa_load(&rof_sessions, sid);
	if (!s || test_bit(ROF_SF_CLOSING, &s->flags))
		reason = ROF_REJECT_NO_SESSION;
	else if (s->tenant_id != tenant)
		reason = ROF_REJECT_WRONG_TENANT;
	else if (s->nonce != tk.nonce)
		/*
		 * Another instance's ticket: session ids start at 1 again
		 * after a reload, and the key may be the same.
		 */
		reason = ROF_REJECT_NO_SESSION;
	else if (s->state != ROF_SESSION_PREPARED)
		reason = ROF_REJECT_IN_USE;
	else if (dev->sessions_stopped)
		reason = ROF_REJECT_DEVICE;
	if (!reason) {
		kref_get(&s->ref);
		s->state = ROF_SESSION_CONNECTING;
		s->dev = dev;
	}
	mutex_unlock(&rof_sess_lock);
	if (reason) {
		s = NULL;
		goto reject;
	}

	mutex_lock(&s->lock);
	if (test_bit(ROF_SF_CLOSING, &s->flags)) {
		/*
		 * Closed (and maybe torn down) since the lookup; the device
		 * reference went to the session, its close work drops it.
		 */
		dev = NULL;
		mutex_unlock(&s->lock);
		rof_session_put(s);
		s = NULL;
		reason = ROF_REJECT_NO_SESSION;
		goto reject;
	}
	reason = rof_conn_build(s, id, dev);
	dev = NULL;			/* the session owns the reference now */
	if (reason)
		goto unbuild;

	id->context = s;
	acc.magic = cpu_to_le32(ROF_ACCEPT_MAGIC);
	acc.version = ROF_WIRE_VERSION;
	acc.nregions = s->nregions;
	acc.credits = cpu_to_le16(s->credits);
	acc.session = cpu_to_le32(s->id);
	acc.msg_size = cpu_to_le32(ROF_MSG_SIZE);
	ap.private_data = &acc;
	ap.private_data_len = sizeof(acc);
	/* ib_cm reports the REQ from our side: the peer's initiator depth. */
	ap.responder_resources = min_t(u32, cp->responder_resources,
				       s->dev->ibdev->attrs.max_qp_rd_atom);
	ap.initiator_depth = 0;
	/* The client's receives may lag a reply: retry RNR forever. */
	ap.rnr_retry_count = 7;
	ret = rdma_accept(id, &ap);
	if (ret) {
		pr_info_ratelimited("session %u: rdma_accept: %d\n", s->id, ret);
		id->context = NULL;
		rof_conn_release(s);
		s->cm_id = NULL;
		goto back_to_prepared;
	}
	mutex_unlock(&s->lock);
	rof_session_put(s);
	return 0;

unbuild:
	s->cm_id = id;		/* rdma_destroy_qp needs it */
	rof_conn_release(s);
	s->cm_id = NULL;
	/* Audited first: a client that sees the REJ finds the record. */
	rof_audit_reject(tenant, sid, reason, true);
	rof_cm_reject(id, reason);
back_to_prepared:
	/* A transient failure: the ticket may be tried again until it expires. */
	mutex_lock(&rof_sess_lock);
	if (s->state == ROF_SESSION_CONNECTING)
		s->state = ROF_SESSION_PREPARED;
	mutex_unlock(&rof_sess_lock);
	mutex_unlock(&s->lock);
	rof_session_put(s);
	return 1;

reject:
	if (dev)
		rof_device_put(dev);
	pr_info_ratelimited("connect refused: tenant %u session %u reason %d\n",
			    tenant, sid, reason);
	rof_audit_reject(tenant, sid, reason, vouched);
	rof_cm_reject(id, reason);
	return 1;
}

static void rof_cm_established(struct rof_session *s)
{
	struct ib_qp_attr qa = {};

	rof_fault_delay("ESTABLISHED of session", s->id);
	/*
	 * Under s->lock, the close work has either not started (and will
	 * cancel what is queued here) or torn the connection down already.
	 */
	mutex_lock(&s->lock);
	if (test_bit(ROF_SF_CLOSING, &s->flags) || !s->qp) {
		mutex_unlock(&s->lock);
		return;
	}
	mutex_lock(&rof_sess_lock);
	if (s->state == ROF_SESSION_CONNECTING)
		rof_sess_set_state(s, ROF_SESSION_LIVE);
	mutex_unlock(&rof_sess_lock);
	s->connected_ns = ktime_get_real_ns();
	WRITE_ONCE(s->last_active_ns, ktime_get_ns());

	/*
	 * Pace the QP in hardware where the device supports it for RC
	 * (Linux 6.1 drivers do not: rxe and siw refuse IB_QP_RATE_LIMIT,
	 * mlx5 takes it only on raw packet QPs); the token buckets hold
	 * either way.
	 */
	if (s->rate.bytes_per_sec) {
		qa.rate_limit = max_t(u64, div_u64(s->rate.bytes_per_sec * 8, 1000), 1);
		s->qp_paced = !ib_modify_qp(s->qp, &qa, IB_QP_RATE_LIMIT);
	}
	rof_sess_audit(s, ROF_AUDIT_SESSION_OPEN, 0, 0);
	set_bit(ROF_SF_WELCOME, &s->flags);
	/*
	 * WELCOME before OPENED: whoever sees OPENED (acquire) sees WELCOME
	 * too, and so never answers before the welcome (rof_iop_poll).
	 */
	smp_mb__before_atomic();
	set_bit(ROF_SF_OPENED, &s->flags);
	rof_kick(s);
	mutex_unlock(&s->lock);
}

/*
 * The peer disconnected.  A QP already in error was moved there by an error
 * of its own, typically a protection error its responder saw, which reaches
 * us only as flushed receives; the peer, told of it by the NAK, may
 * disconnect before those flushes are polled, and once the session is
 * closing a flush is not audited.  So audit it here, as the flush would
 * have: only if nothing else was.  Under s->lock, as the close work
 * destroys the QP under it.
 */
static void rof_cm_disconnected(struct rof_session *s)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;

	mutex_lock(&s->lock);
	if (!test_bit(ROF_SF_CLOSING, &s->flags) && s->qp &&
	    !ib_query_qp(s->qp, &attr, IB_QP_STATE, &init) &&
	    attr.qp_state == IB_QPS_ERR &&
	    rof_audit_error(s, IB_WC_WR_FLUSH_ERR, true))
		s->cnt.completion_errors++;
	mutex_unlock(&s->lock);
	rof_session_close(s, ROF_CLOSE_DISCONNECT);
}

static int rof_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rof_session *s = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rof_cm_connect(id, ev);
	if (!s) {
		/* The listener itself: it survives a device going away. */
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			pr_info("listener: device removed\n");
		return 0;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		rof_cm_established(s);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		rof_cm_disconnected(s);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		rof_session_close(s, ROF_CLOSE_QP_ERROR);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * Normally rof_session_device_removed() closed the session
		 * already; the close work destroys the id, not the rdma_cm.
		 */
		rof_session_close(s, ROF_CLOSE_DEVICE);
		break;
	default:
		break;
	}
	return 0;
}

static void rof_close_work(struct work_struct *work)
{
	struct rof_session *s = container_of(work, struct rof_session, close_work);
	struct rdma_cm_id *id;

	mutex_lock(&s->lock);
	mutex_lock(&rof_sess_lock);
	rof_sess_set_state(s, ROF_SESSION_CLOSING);
	mutex_unlock(&rof_sess_lock);

	if (s->cm_id && s->qp)
		rdma_disconnect(s->cm_id);	/* QP to error, DREQ to the peer */
	/*
	 * CLOSING is set: nothing queues any of the three works from now
	 * on.  A welcome still running may queue the poll, a poll still
	 * running may arm the throttle or (before the welcome) queue the
	 * welcome, and a throttle still running may queue either, so: the
	 * welcome, the poll, then the throttle, and all three again once
	 * the CQ and the cm_id, the last sources, are gone.  Each is only
	 * ever queued on its own workqueue, so cancel_work_sync() waits for
	 * the one run there can be.
	 */
	/* No softirq run is scheduled again; wait for one under way. */
	irq_poll_disable(&s->iop);
	while (atomic_read_acquire(&s->sirq_active))
		usleep_range(50, 100);
	cancel_work_sync(&s->welcome_work);
	cancel_work_sync(&s->poll_work);
	cancel_delayed_work_sync(&s->throttle_work);
	id = s->cm_id;
	rof_conn_release(s);
	if (s->tenant_attached) {
		rof_tenant_detach(s->tenant, &s->tatt);
		s->tenant_attached = false;
	}
	if (s->tenant) {
		rof_tenant_put(s->tenant);
		s->tenant = NULL;
	}
	s->cm_id = NULL;
	mutex_unlock(&s->lock);
	if (id)
		rdma_destroy_id(id);	/* no CM handler runs for it after this */
	cancel_work_sync(&s->welcome_work);
	cancel_work_sync(&s->poll_work);
	cancel_delayed_work_sync(&s->throttle_work);
	rof_prog_scratch_free(s->prog_scratch);
	s->prog_scratch = NULL;

	if (test_bit(ROF_SF_OPENED, &s->flags))
		rof_sess_audit(s, ROF_AUDIT_SESSION_CLOSE, s->close_reason, 0);
	mutex_lock(&rof_sess_lock);
	xa_erase(&rof_sessions, s->id);
	mutex_unlock(&rof_sess_lock);
	pr_info_ratelimited("session %u closed (reason %u)\n", s->id,
			    s->close_reason);
	rof_session_put(s);		/* the table's reference */
	rof_session_put(s);		/* rof_session_close()'s */
}

/* ---- reaping idle and expired sessions ------------------------------ */

static void rof_reap_fn(struct work_struct *work)
{
	u64 now = ktime_get_ns(), real = ktime_get_real_ns();
	struct rof_session *s;
	unsigned long idx;

	mutex_lock(&rof_sess_lock);
	xa_for_each(&rof_sessions, idx, s) {
		u64 idle = s->idle_ms ? s->idle_ms : READ_ONCE(idle_timeout_ms);
		/*
		 * The data path stamps last_active_ns without this lock, so it
		 * can be later than @now: that session is busy, not idle (an
		 * unsigned now - last would wrap and reap it).
		 */
		u64 last = READ_ONCE(s->last_active_ns);

		if (s->state == ROF_SESSION_PREPARED && s->expires_ns <= real)
			rof_session_close(s, ROF_CLOSE_EXPIRED);
		else if (s->state == ROF_SESSION_LIVE && idle && now > last &&
			 now - last > idle * NSEC_PER_MSEC)
			rof_session_close(s, ROF_CLOSE_IDLE);
	}
	mutex_unlock(&rof_sess_lock);
	queue_delayed_work(rof_ctl_wq, &rof_reap_work, ROF_REAP_PERIOD);
}

/* ---- closing many at once ------------------------------------------- */

/*
 * Close the sessions @match selects and wait until they are gone.  No
 * allocation: close them all first, then wait for one at a time.  A
 * closing session stays in the table until its close work erased it.
 */
static void rof_close_matching(bool (*match)(struct rof_session *s, void *arg),
			       void *arg, u32 reason)
{
	struct rof_session *s;
	unsigned long idx;

	mutex_lock(&rof_sess_lock);
	xa_for_each(&rof_sessions, idx, s)
		if (match(s, arg))
			rof_session_close(s, reason);
	mutex_unlock(&rof_sess_lock);

	for (;;) {
		struct rof_session *found = NULL;

		mutex_lock(&rof_sess_lock);
		xa_for_each(&rof_sessions, idx, s) {
			if (match(s, arg)) {
				found = s;
				kref_get(&s->ref);
				break;
			}
		}
		mutex_unlock(&rof_sess_lock);
		if (!found)
			break;
		/* Prepared after the first pass: close it too. */
		rof_session_close(found, reason);
		flush_work(&found->close_work);
		rof_session_put(found);
	}
}

static bool rof_match_dev(struct rof_session *s, void *arg)
{
	return s->dev == arg;
}

void rof_session_device_removed(struct rof_device *dev)
{
	mutex_lock(&rof_sess_lock);
	dev->sessions_stopped = true;	/* no new session binds to it */
	mutex_unlock(&rof_sess_lock);
	rof_close_matching(rof_match_dev, dev, ROF_CLOSE_DEVICE);
}

static bool rof_match_all(struct rof_session *s, void *arg)
{
	return true;
}

/* ---- ioctls ---------------------------------------------------------- */

static long rof_session_prepare(void __user *uarg)
{
	struct rof_session_prepare req;
	struct rof_tenant *t;
	struct rof_session *s;
	u32 i, j;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	if (req.nregions > ROF_SESSION_MAX_REGIONS)
		return -E2BIG;
	for (i = req.nregions; i < ROF_SESSION_MAX_REGIONS; i++)
		if (req.regions[i].region || req.regions[i].access)
			return -EINVAL;	/* unused grant slots must be zero */
	ret = rof_rate_check(&req.rate);
	if (ret)
		return ret;
	if (req.expires_ns <= ktime_get_real_ns())
		return -ETIME;
	if (req.idle_timeout_ms > ROF_SESSION_IDLE_MAX_MS)
		return -ERANGE;

	/* Before an id is taken: a key is never unset once set. */
	if (!rof_ticket_have_key())
		return -ENOKEY;

	t = rof_tenant_get(req.tenant);
	if (!t)
		return -ENOENT;
	for (i = 0; i < req.nregions; i++) {
		const struct rof_session_grant *g = &req.regions[i];
		struct rof_region *r;

		if (!g->access || (g->access & ~ROF_ACCESS_ALL)) {
			ret = -EINVAL;
			goto out_tenant;
		}
		for (j = 0; j < i; j++) {
			if (req.regions[j].region == g->region) {
				ret = -EEXIST;	/* one grant per region */
				goto out_tenant;
			}
		}
		r = rof_region_get(t, g->region);
		if (!r) {
			ret = -ENXIO;	/* no such region of this tenant */
			goto out_tenant;
		}
		if (g->access & ~rof_region_rights(r))
			ret = -EACCES;	/* more than the region allows */
		rof_region_put(r);
		if (ret)
			goto out_tenant;
	}

	/* Given back by the close work, or below if it is never published. */
	ret = rof_tenant_charge_prepared(t, READ_ONCE(max_prepared_sessions));
	if (ret)
		goto out_tenant;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		ret = -ENOMEM;
		goto out_prepared;
	}
	kref_init(&s->ref);
	mutex_init(&s->lock);
	INIT_WORK(&s->poll_work, rof_poll_work);
	INIT_WORK(&s->welcome_work, rof_welcome_work);
	irq_poll_init(&s->iop, ROF_SIRQ_WEIGHT, rof_iop_poll);
	INIT_DELAYED_WORK(&s->throttle_work, rof_throttle_work);
	INIT_WORK(&s->close_work, rof_close_work);
	s->tenant_id = req.tenant;
	/*
	 * The session keeps the tenant reference and attaches at once: any
	 * destroy of the tenant revokes it, so a ticket can never connect
	 * to a later tenant that reuses the id.
	 */
	s->tenant = t;
	s->tatt.revoke = rof_tenant_revoked;
	s->state = ROF_SESSION_PREPARED;
	s->prep_charged = true;
	s->nregions = req.nregions;
	memcpy(s->grants, req.regions, sizeof(s->grants));
	s->rate = req.rate;
	s->expires_ns = req.expires_ns;
	s->idle_ms = req.idle_timeout_ms;
	s->nonce = cpu_to_le64(get_random_u64());

	/*
	 * Once published, a SESSION_CLOSE (ids are sequential and listed)
	 * or the reaper may close it at once.  So prepare holds a reference
	 * of its own and s->lock, which the close work takes first: the
	 * session is attached to its tenant before anything can tear it down.
	 */
	kref_get(&s->ref);
	mutex_lock(&s->lock);
	mutex_lock(&rof_sess_lock);
	if (!rof_sess_next_id) {
		ret = -ENOSPC;		/* 2^32 sessions: reload the module */
	} else {
		s->id = rof_sess_next_id;
		ret = xa_insert(&rof_sessions, s->id, s, GFP_KERNEL);
		if (!ret)
			rof_sess_next_id++;
	}
	mutex_unlock(&rof_sess_lock);
	if (ret) {
		mutex_unlock(&s->lock);
		kfree(s);
		goto out_prepared;
	}
	/* In the table: from here on only the close work frees it. */
	rof_fault_delay("session prepare (published)", s->id);
	ret = rof_tenant_attach(t, &s->tatt);
	if (ret)
		ret = -ENOENT;		/* the tenant is being destroyed */
	else
		s->tenant_attached = true;
	if (!ret) {
		req.session = s->id;
		ret = rof_ticket_sign(&req.ticket, req.tenant, s->id,
				      req.expires_ns, s->nonce);
	}
	/* The close work detaches and drops the tenant. */
	if (ret)
		rof_session_close(s, ROF_CLOSE_ADMIN);
	mutex_unlock(&s->lock);
	if (!ret && copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller never learns the id: do not leave it dangling. */
		rof_session_close(s, ROF_CLOSE_ADMIN);
		ret = -EFAULT;
	}
	rof_session_put(s);
	return ret;

out_prepared:
	rof_tenant_uncharge_prepared(t);
out_tenant:
	rof_tenant_put(t);
	return ret;
}

static void rof_session_fill(struct rof_session *s, struct rof_session_info *si)
{
	lockdep_assert_held(&rof_sess_lock);
	memset(si, 0, sizeof(*si));
	si->id = s->id;
	si->tenant = s->tenant_id;
	/*
	 * A close is asynchronous (the close work): from the moment one is
	 * asked for (SESSION_CLOSE, a revoke by a destroy), the session is
	 * listed as closing, so no list shows a destroyed tenant's session
	 * as prepared or live.
	 */
	si->state = test_bit(ROF_SF_CLOSING, &s->flags) ? ROF_SESSION_CLOSING :
							   s->state;
	if (s->qp_paced)
		si->flags |= ROF_SESSION_QP_PACED;
	if (s->state != ROF_SESSION_PREPARED) {
		strscpy(si->device, s->devname, sizeof(si->device));
		si->port_num = s->port_num;
		si->credits = s->credits;
	}
	si->nregions = s->nregions;
	si->idle_timeout_ms = s->idle_ms ? s->idle_ms : READ_ONCE(idle_timeout_ms);
	memcpy(si->regions, s->grants, sizeof(si->regions));
	si->rate = s->rate;
	si->expires_ns = s->expires_ns;
	si->connected_ns = s->connected_ns;
	if (s->peer.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&s->peer;

		si->peer_addr[10] = 0xff;
		si->peer_addr[11] = 0xff;
		memcpy(&si->peer_addr[12], &a->sin_addr, 4);
		si->peer_port = ntohs(a->sin_port);
	} else if (s->peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&s->peer;

		memcpy(si->peer_addr, &a->sin6_addr, 16);
		si->peer_port = ntohs(a->sin6_port);
	}
	/* Counters move under the data path: a snapshot, field by field. */
	si->counters.requests = READ_ONCE(s->cnt.requests);
	si->counters.bytes_in = READ_ONCE(s->cnt.bytes_in);
	si->counters.bytes_out = READ_ONCE(s->cnt.bytes_out);
	si->counters.deferred = READ_ONCE(s->cnt.deferred);
	si->counters.completion_errors = READ_ONCE(s->cnt.completion_errors);
	si->counters.bad_requests = READ_ONCE(s->cnt.bad_requests);
}

static int rof_session_get_fill(void *buf)
{
	struct rof_session_info *si = buf;
	struct rof_session *s;

	if (si->flags)
		return -EINVAL;
	mutex_lock(&rof_sess_lock);
	s = xa_load(&rof_sessions, si->id);
	if (s)
		rof_session_fill(s, si);
	mutex_unlock(&rof_sess_lock);
	return s ? 0 : -ENOENT;
}

static u32 rof_session_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_session_info *si = buf;
	struct rof_session *s;
	unsigned long idx, start = *pos;
	u32 n = 0;

	mutex_lock(&rof_sess_lock);
	xa_for_each_start(&rof_sessions, idx, s, start)
		if (n++ < cap) {
			rof_session_fill(s, &si[n - 1]);
			*pos = idx + 1;
		}
	mutex_unlock(&rof_sess_lock);
	return n;
}

static long rof_session_close_ioctl(void __user *uarg)
{
	struct rof_session_close req;
	struct rof_session *s;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	mutex_lock(&rof_sess_lock);
	s = xa_load(&rof_sessions, req.session);
	if (s)
		kref_get(&s->ref);
	mutex_unlock(&rof_sess_lock);
	if (!s)
		return -ENOENT;
	rof_session_close(s, ROF_CLOSE_ADMIN);
	/* Synchronous: once this returns, the session's rkeys are dead. */
	flush_work(&s->close_work);
	rof_session_put(s);
	return 0;
}

long rof_session_ioctl(unsigned int cmd, void __user *uarg)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case ROF_IOC_SET_TICKET_KEY:
		return rof_ticket_set_key(uarg);
	case ROF_IOC_SESSION_PREPARE:
		return rof_session_prepare(uarg);
	case ROF_IOC_LIST_SESSIONS:
		return rof_list_ioctl(uarg, sizeof(struct rof_session_info),
				      rof_session_snap, NULL);
	case ROF_IOC_GET_SESSION:
		return rof_get_ioctl(uarg, sizeof(struct rof_session_info),
				     rof_session_get_fill);
	case ROF_IOC_SESSION_CLOSE:
		return rof_session_close_ioctl(uarg);
	case ROF_IOC_TENANT_SET_RATE:
		return rof_tenant_set_rate(uarg);
	default:
		return -ENOTTY;
	}
}

/* ---- init and exit --------------------------------------------------- */

void rof_session_flush(void)
{
	/* The data path's first: a run that fails queues a close work. */
	flush_workqueue(rof_sess_wq);
	flush_workqueue(rof_ctl_wq);	/* close works */
}

/*
 * Binds @id to the wildcard address of @family on cm_port.  AF_INET6 is
 * bound dual-stack (afonly 0, whatever net.ipv6.bindv6only says), so one
 * listener answers connects to IPv4 and to IPv6 addresses.
 */
static int rof_listen_bind(struct rdma_cm_id *id, sa_family_t family)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(cm_port),
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(cm_port),
	};
	int ret;

	if (family == AF_INET)
		return rdma_bind_addr(id, (struct sockaddr *)&sin);
	ret = rdma_set_afonly(id, 0);
	if (ret)
		return ret;
	return rdma_bind_addr(id, (struct sockaddr *)&sin6);
}

static struct rdma_cm_id *rof_listen_id_create(void)
{
	return rdma_create_id(&init_net, rof_cm_handler, NULL, RDMA_PS_TCP,
			      IB_QPT_RC);
}

/*
 * The listener: IPv6 and IPv4 on one dual-stack id; IPv4 only when the
 * IPv6 bind fails (IPv6 disabled or not built).
 */
static int rof_listen(void)
{
	struct rdma_cm_id *id;
	int ret;

	id = rof_listen_id_create();
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = rof_listen_bind(id, AF_INET6);
	if (ret) {
		pr_info("no IPv6 listener on port %u (%d): IPv4 only\n",
			cm_port, ret);
		/* A failed bind may leave the id half bound: start afresh. */
		rdma_destroy_id(id);
		id = rof_listen_id_create();
		if (IS_ERR(id))
			return PTR_ERR(id);
		ret = rof_listen_bind(id, AF_INET);
	}
	if (ret) {
		pr_err("cannot bind the listener to port %u: %d\n", cm_port, ret);
		goto err;
	}
	ret = rdma_listen(id, 128);
	if (ret) {
		pr_err("rdma_listen on port %u: %d\n", cm_port, ret);
		goto err;
	}
	rof_listen_id = id;
	pr_info("listening for sessions on port %u (%s)\n", cm_port,
		id->route.addr.src_addr.ss_family == AF_INET6 ?
		"IPv6 and IPv4" : "IPv4");
	return 0;
err:
	rdma_destroy_id(id);
	return ret;
}

/*
 * debugfs rof/datapath: the counters of rof_dp_stats summed over the
 * CPUs, one "name value" per line; writing anything zeroes them (a
 * profiling aid: an update racing the reset may survive it).
 */
static int rof_dp_show(struct seq_file *m, void *v)
{
	struct rof_dp_stats t = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct rof_dp_stats *c = per_cpu_ptr(&rof_dp_stats, cpu);

		t.kicks += c->kicks;
		t.sched_ns += c->sched_ns;
		t.sched_max_ns = max(t.sched_max_ns, c->sched_max_ns);
		t.runs += c->runs;
		t.sirq_runs += c->sirq_runs;
		t.sirq_defers += c->sirq_defers;
		t.run_ns += c->run_ns;
		t.polls += c->polls;
		t.spin_polls += c->spin_polls;
		t.wcs += c->wcs;
		t.requests += c->requests;
		t.prog_bytes += c->prog_bytes;
		t.sirq_bytes_max = max(t.sirq_bytes_max, c->sirq_bytes_max);
		t.doorbells += c->doorbells;
		t.rx_posts += c->rx_posts;
	}
	seq_printf(m, "kicks %llu\nsched_ns %llu\nsched_max_ns %llu\n",
		   t.kicks, t.sched_ns, t.sched_max_ns);
	seq_printf(m, "runs %llu\nsirq_runs %llu\nsirq_defers %llu\nrun_ns %llu\n",
		   t.runs, t.sirq_runs, t.sirq_defers, t.run_ns);
	seq_printf(m, "polls %llu\nspin_polls %llu\n", t.polls, t.spin_polls);
	seq_printf(m, "wcs %llu\nrequests %llu\ndoorbells %llu\nrx_posts %llu\n",
		   t.wcs, t.requests, t.doorbells, t.rx_posts);
	seq_printf(m, "prog_bytes %llu\nsirq_bytes_max %llu\n",
		   t.prog_bytes, t.sirq_bytes_max);
	return 0;
}

static int rof_dp_open(struct inode *inode, struct file *file)
{
	return single_open(file, rof_dp_show, NULL);
}

static ssize_t rof_dp_write(struct file *file, const char __user *buf,
			    size_t len, loff_t *ppos)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&rof_dp_stats, cpu), 0,
		       sizeof(struct rof_dp_stats));
	return len;
}

static const struct file_operations rof_dp_fops = {
	.owner		= THIS_MODULE,
	.open		= rof_dp_open,
	.read		= seq_read,
	.write		= rof_dp_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

void rof_session_debugfs(struct dentry *dir)
{
	debugfs_create_file("datapath", 0600, dir, NULL, &rof_dp_fops);
}

int rof_session_init(void)
{
	int ret;

	ret = rof_ticket_init();
	if (ret)
		return ret;
	/*
	 * Unbound: the scheduler spreads busy sessions over the CPUs, and
	 * one session's programs do not hold up the others bound to a CPU.
	 * Normal priority, not WQ_HIGHPRI: a busy session's poll work
	 * queues itself again at once, and at nice -20 N busy sessions
	 * would take nearly all of N CPUs from every normal task (rofd
	 * included).  At nice 0 each competes as one normal task does.
	 * WQ_SYSFS: an administrator may change its nice value and CPU
	 * mask (/sys/devices/virtual/workqueue/rof_sess/).
	 */
	rof_sess_wq = alloc_workqueue("rof_sess", WQ_UNBOUND | WQ_SYSFS, 0);
	if (!rof_sess_wq) {
		ret = -ENOMEM;
		goto err_ticket;
	}
	/*
	 * What must stay prompt under a busy data path, and is short: the
	 * welcome that completes a connect, closes, the reaper.  Also
	 * tunable (/sys/devices/virtual/workqueue/rof_sess_ctl/).
	 */
	rof_ctl_wq = alloc_workqueue("rof_sess_ctl",
				     WQ_UNBOUND | WQ_HIGHPRI | WQ_SYSFS, 0);
	if (!rof_ctl_wq) {
		ret = -ENOMEM;
		goto err_wq;
	}
	ret = rof_listen();
	if (ret)
		goto err_ctl_wq;
	INIT_DELAYED_WORK(&rof_reap_work, rof_reap_fn);
	queue_delayed_work(rof_ctl_wq, &rof_reap_work, ROF_REAP_PERIOD);
	return 0;

err_ctl_wq:
	destroy_workqueue(rof_ctl_wq);
err_wq:
	destroy_workqueue(rof_sess_wq);
err_ticket:
	rof_ticket_exit();
	return ret;
}

void rof_session_exit(void)
{
	/* No new connects, then close what is left. */
	rdma_destroy_id(rof_listen_id);
	rof_listen_id = NULL;
	cancel_delayed_work_sync(&rof_reap_work);
	rof_close_matching(rof_match_all, NULL, ROF_CLOSE_UNLOAD);
	destroy_workqueue(rof_ctl_wq);
	destroy_workqueue(rof_sess_wq);
	rof_trl_exit();
	rof_ticket_exit();
}
