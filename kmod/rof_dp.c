// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_dp.c - the data path of sessions: completions polled, requests
 * admitted (rate limits, credits) and served (programs run through
 * rof_prog.c), responses posted; the welcome that completes a connect;
 * the data path's counters (debugfs rof/datapath).
 *
 * Two workqueues: the bulk of the data path (s->poll_work, s->throttle_work)
 * runs on rof_sess_wq at normal priority, so that busy sessions compete
 * for the CPUs as normal tasks do; what must stay prompt whatever the data
 * path's load, and is short, runs on rof_ctl_wq (WQ_HIGHPRI): the welcome
 * that completes a connect (s->welcome_work), closes (s->close_work) and
 * the reaper.  Each work item is only ever queued on its one workqueue:
 * a workqueue's guarantee that a work item never runs twice at once, and
 * flush_work()'s wait, hold within one workqueue only.  Short requests are
 * served in the completion's softirq (irq_poll), within a budget of
 * instructions and bytes, the rest by the poll work.  With poll_cpus
 * (rof_poll.c) a polling thread takes the softirq's place for the sessions
 * assigned to it: the completion event and rof_kick wake the thread.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "rof_exec.h"
#include "rof_session.h"

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

#define ROF_POLL_BATCH		16	/* work completions per ib_poll_cq */
/*
 * One softirq run: at most this many polls, ROF_EXEC_ATOMIC_INSNS program
 * instructions and ROF_EXEC_ATOMIC_BYTES bytes moved by programs (rof_exec.h).
 */
#define ROF_SIRQ_ROUNDS		4
/*
 * irq_poll's weight of a session: one more than the work completions a
 * softirq run can take (ROF_SIRQ_ROUNDS polls of ROF_POLL_BATCH), so that
 * what a run returns is always below it (rof_iop_poll).
 */
#define ROF_SIRQ_WEIGHT		(ROF_SIRQ_ROUNDS * ROF_POLL_BATCH + 1)
#define ROF_POLL_ROUNDS		64	/* polls before yielding the worker */
/* Program instructions and bytes one poll work run may spend before it yields. */
#define ROF_POLL_INSNS		(2ULL * 1000 * 1000)
#define ROF_POLL_BYTES		(64ULL << 20)

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

/*
 * Run the data path soon; never once the session is closing.  While the
 * welcome is due, the welcome work (high priority) runs it: a connect is
 * complete only once the client has the welcome, and that must not wait
 * behind busy sessions' poll work at normal priority.  Once it is sent,
 * the poll work (normal priority), or for a polled session its polling
 * thread, unless the thread handed the session to the poll work.
 */
void rof_kick(struct rof_session *s)
{
	if (test_bit(ROF_SF_CLOSING, &s->flags))
		return;
	if (test_bit(ROF_SF_WELCOME, &s->flags))
		queue_work(rof_ctl_wq, &s->welcome_work);
	else if (READ_ONCE(s->poller) &&
		 !test_bit(ROF_SF_DEFERRED, &s->flags))
		rof_poll_wake(READ_ONCE(s->poller));	/* a polled session */
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
bool rof_audit_error(struct rof_session *s, u32 reason, bool first_only)
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
	rof_audit_log_skip(&rec, &s->askip);
	return true;
}

/* ---- the data path ------------------------------------------------- */

int rof_post_rx_chain(struct rof_session *s, struct ib_recv_wr *first)
{
	const struct ib_recv_wr *bad;

	return first ? ib_post_recv(s->qp, first, &bad) : 0;
}

void rof_prep_rx(struct rof_session *s, u32 slot, struct ib_recv_wr ***tail)
{
	struct ib_recv_wr *wr = &s->rx_wr[slot];
	struct ib_sge *sge = &s->rx_sge[slot];

	ib_dma_sync_single_for_device(s->cq->device, s->rx[slot].dma,
				      s->msg_size, DMA_FROM_DEVICE);
	sge->addr = s->rx[slot].dma;
	sge->length = s->msg_size;
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
			       s->msg_size - sizeof(struct rof_resp_hdr),
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
 * The record of one INVOKE, as its tenant's invoke_records says: every
 * one with an error status; of those with status 0, every one (all), none
 * (errors) or the Nth since the last one recorded (sample:N).  One not
 * recorded costs no ring lock: it is counted for the tenant and in the
 * session's count, which its next record carries.
 */
static void rof_audit_invoke(struct rof_session *s,
			     struct rof_audit_record *rec, u64 rx_ns)
{
	u32 mode = rof_tenant_invoke_records(s->tenant);

	if (!rec->status && mode != ROF_INVOKE_RECORDS_ALL) {
		if (mode == ROF_INVOKE_RECORDS_ERRORS ||
		    ++s->audit_since < mode) {
			rof_audit_skip_invoke(rec, &s->askip);
			return;
		}
		s->audit_since = 0;
	}
	rec->latency_ns = ktime_get_ns() - rx_ns;
	rof_audit_log_skip(rec, &s->askip);
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
			rec.tag = le64_to_cpu(inv.tag);
			status = rof_session_invoke(s, rec.tag,
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
		/*
		 * Every INVOKE is audited, the malformed ones too: recorded
		 * or, with status 0, perhaps only counted.
		 */
		rec.opcode = op;
		rec.status = status;
		rec.bytes = in_len + plen;
		rof_audit_invoke(s, &rec, rx_ns);
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
					   s->msg_size, DMA_FROM_DEVICE);
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

/* Who runs the data path: the poll work, the softirq, a polling thread. */
enum rof_run_mode { ROF_RUN_WORK, ROF_RUN_SIRQ, ROF_RUN_THREAD };

static bool rof_poll_run(struct rof_session *s, struct rof_dp_stats *st,
			 enum rof_run_mode mode);

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

	struct rof_poller *pt = READ_ONCE(s->poller);
	bool handed;

	if (!rof_dp_claim_work(s))
		return;
	start = rof_dp_start(s, &st);
	rof_poll_run(s, &st, ROF_RUN_WORK);
	st.run_ns = local_clock() - start;
	/*
	 * A polled session its thread handed over (ROF_SF_DEFERRED): back
	 * to the thread once this run is over.  A run that stopped with
	 * work left kicked first, while DEFERRED still held, so that work
	 * is this work's again.
	 */
	handed = test_and_clear_bit(ROF_SF_DEFERRED, &s->flags);
	rof_dp_release(s);
	rof_dp_account(&st);
	if (handed && pt)
		rof_poll_wake(pt);
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
	if (rof_poll_run(s, &st, ROF_RUN_SIRQ)) {
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
 * ROF_EXEC_ATOMIC_INSNS instructions), never spins, and stops at the first
 * request that needs process context (a long program, or a scratch to
 * grow).  Returns true when it stopped with work left: the caller hands
 * it to the poll work.
 */
static bool rof_poll_run(struct rof_session *s, struct rof_dp_stats *st,
			 enum rof_run_mode mode)
{
	/* A polling thread serves what the softirq would, within its bounds. */
	bool atomic = mode != ROF_RUN_WORK, thread = mode == ROF_RUN_THREAD;
	struct ib_wc wcs[ROF_POLL_BATCH];
	struct rof_run_budget budget = {
		.insns = atomic ? ROF_EXEC_ATOMIC_INSNS : ROF_POLL_INSNS,
		.bytes = atomic ? ROF_EXEC_ATOMIC_BYTES : ROF_POLL_BYTES,
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
		/*
		 * A polling thread comes back at once, whatever it finds:
		 * requests waiting for tokens wait for the throttle work's
		 * kick, as on the event path, not for every pass.
		 */
		if (n > 0 || (s->pend_count &&
			      !(thread && delayed_work_pending(&s->throttle_work)))) {
			ret = rof_process_pending(s, &budget, st, atomic, &defer);
			if (ret) {
				pr_info_ratelimited("session %u: post failed: %d\n",
						    s->id, ret);
				rof_session_close(s, ROF_CLOSE_QP_ERROR);
				return false;
			}
			if (defer) {
				/* Its thread hands the session to the poll work. */
				if (thread)
					set_bit(ROF_SF_DEFERRED, &s->flags);
				return true;
			}
		}
		/* Busy polling an idle CQ is bounded by its time, not rounds. */
		if (!budget.insns || !budget.bytes ||
		    (!spinning && ++rounds >= max_rounds)) {
			if (mode != ROF_RUN_WORK)
				return true;
			/* Let other sessions' work run; come back at once. */
			rof_kick(s);
			return false;
		}
		if (!atomic)
			cond_resched();
		if (n == ROF_POLL_BATCH)
			continue;
		/* The polling thread re-arms the CQ only before it sleeps. */
		if (thread)
			return false;
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

/*
 * One turn of a polled session in its polling thread (rof_poll.c): the
 * softirq's run, in process context.  It owns the data path as a work
 * does (leaving ROF_SF_KICKED to an owner it finds, which kicks as it
 * lets go), does not run before ESTABLISHED nor before the welcome (the
 * welcome work's), serves within the softirq's bounds, and hands what the
 * softirq would leave to the poll work to it (ROF_SF_DEFERRED, until that
 * work's run is over).  It never re-arms the CQ: the thread does, before
 * it sleeps.  Adds its polls and requests to @t; returns true when it
 * found work.
 */
bool rof_dp_poll_turn(struct rof_session *s, struct rof_poll_tally *t)
{
	struct rof_dp_stats st = {};
	u64 start;
	bool more;

	/* Handed to its poll work, which gives it back when done. */
	if (test_bit(ROF_SF_DEFERRED, &s->flags) || !rof_dp_claim_work(s))
		return false;
	if (!test_bit_acquire(ROF_SF_OPENED, &s->flags) ||
	    test_bit(ROF_SF_WELCOME, &s->flags)) {
		rof_dp_release(s);
		return false;
	}
	start = rof_dp_start(s, &st);
	more = rof_poll_run(s, &st, ROF_RUN_THREAD);
	st.run_ns = local_clock() - start;
	rof_dp_release(s);
	/*
	 * A request that needs the poll work (a long program, a scratch to
	 * grow): queued once the data path is let go, so that the work
	 * does not find it owned.  Nothing is queued once closing.
	 */
	if (test_bit(ROF_SF_DEFERRED, &s->flags)) {
		st.sirq_defers = 1;
		if (!test_bit(ROF_SF_CLOSING, &s->flags))
			queue_work(rof_sess_wq, &s->poll_work);
	}
	t->polls += st.polls;
	t->requests += st.requests;
	if (!more && !st.wcs && !st.requests)
		return false;
	/* Only the turns that found work: an idle spin is the thread's. */
	rof_dp_account(&st);
	return true;
}

/*
 * Before its thread sleeps: re-arm a polled session's CQ, owning its data
 * path as a turn does.  Returns true when the thread must not sleep yet: a
 * completion came before the arm (IB_CQ_REPORT_MISSED_EVENTS), or another
 * owner (the welcome work) has the data path now.  A session handed to
 * its poll work is that work's to re-arm.
 */
bool rof_dp_poll_arm(struct rof_session *s)
{
	bool busy;

	if (!test_bit_acquire(ROF_SF_OPENED, &s->flags) ||
	    test_bit(ROF_SF_CLOSING, &s->flags) ||
	    test_bit(ROF_SF_DEFERRED, &s->flags))
		return false;
	if (!rof_dp_claim(s))
		return true;
	busy = ib_req_notify_cq(s->cq, IB_CQ_NEXT_COMP |
				IB_CQ_REPORT_MISSED_EVENTS) > 0;
	rof_dp_release(s);
	return busy;
}

static void rof_throttle_work(struct work_struct *work)
{
	struct rof_session *s = container_of(to_delayed_work(work),
					     struct rof_session, throttle_work);

	rof_kick(s);
}

void rof_cq_comp(struct ib_cq *cq, void *ctx)
{
	struct rof_session *s = ctx;

	struct rof_poller *pt = READ_ONCE(s->poller);
	u64 now = local_clock();
	bool sirq = READ_ONCE(poll_softirq) &&
		    !test_bit(ROF_SF_CLOSING, &s->flags);

	/* When the event came, for the scheduling delay (rof_dp_stats). */
	cmpxchg64(&s->kick_ns, 0, now);
	if (pt) {
		/*
		 * Its polling thread serves it, and the softirq meanwhile if
		 * the thread is not polling now (rof_poll_handoff).
		 */
		if (sirq && rof_poll_handoff(pt, now))
			irq_poll_sched(&s->iop);
		rof_poll_wake(pt);
	} else if (sirq) {
		irq_poll_sched(&s->iop);
	} else {
		rof_kick(s);
	}
}

void rof_cq_event(struct ib_event *ev, void *ctx)
{
	struct rof_session *s = ctx;

	pr_info_ratelimited("session %u: CQ event %s\n", s->id,
			    ib_event_msg(ev->event));
	rof_audit_error(s, ROF_AUDIT_REASON_EVENT + ev->event, true);
	rof_session_close(s, ROF_CLOSE_QP_ERROR);
}

void rof_qp_event(struct ib_event *ev, void *ctx)
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

/* A new session's data path: its works and its softirq side, idle. */
void rof_dp_session_init(struct rof_session *s)
{
	INIT_WORK(&s->poll_work, rof_poll_work);
	INIT_WORK(&s->welcome_work, rof_welcome_work);
	irq_poll_init(&s->iop, ROF_SIRQ_WEIGHT, rof_iop_poll);
	INIT_DELAYED_WORK(&s->throttle_work, rof_throttle_work);
	INIT_LIST_HEAD(&s->poll_node);
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

void rof_dp_debugfs(struct dentry *dir)
{
	debugfs_create_file("datapath", 0600, dir, NULL, &rof_dp_fops);
}
