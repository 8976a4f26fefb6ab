/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rof_session.h - what rof_session.c, rof_cm.c and rof_dp.c share: the
 * session object and the calls between the three (rxe's rxe_loc.h).  Not
 * for the module's other files, which see sessions through rof_core.h.
 */
#ifndef ROF_SESSION_H
#define ROF_SESSION_H

#include <linux/irq_poll.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rof_core.h"
#include "rof_bucket.h"

/* wr_id tags of the session's receives and sends. */
#define ROF_WR_RECV		BIT_ULL(62)
#define ROF_WR_SEND		BIT_ULL(61)
#define ROF_WR_MASK		(ROF_WR_RECV | ROF_WR_SEND)

/* s->flags bits */
enum {
	ROF_SF_CLOSING,		/* close requested; the data path stops */
	ROF_SF_WELCOME,		/* established: register MRs, send regions */
	ROF_SF_OPENED,		/* established and audited: the data path may run */
	ROF_SF_ERR_AUDITED,	/* the error that closes it is audited */
	ROF_SF_POLLING,		/* the data path is owned: a work, the softirq, a polling thread */
	ROF_SF_KICKED,		/* a work found it owned: kick it after */
	ROF_SF_DEFERRED,	/* its polling thread handed it to the poll work */
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

struct rof_poller;

/* What a polling thread's turns did (rof_dp_poll_turn). */
struct rof_poll_tally {
	u64 polls;
	u64 requests;
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
	u32 msg_size;			/* bytes of each rx and tx slot */
	__le64 nonce;			/* of the ticket prepare returned */

	/* The connection; built under ->lock, torn down by close_work. */
	struct mutex lock;
	struct rdma_cm_id *cm_id;
	struct rof_device *dev;		/* set under rof_sess_lock */
	struct rof_tenant *tenant;
	bool charged;
	u64 msg_charged;		/* slot bytes above ROF_MSG_SIZE charged */
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

	/*
	 * Its INVOKEs of status 0 with no record, which its next record
	 * carries (rof_audit.c); and, data path only, those since the last
	 * one recorded, for sample:N.
	 */
	struct rof_audit_skip askip;
	u32 audit_since;

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
	/*
	 * The polling thread serving the session (poll_cpus), or NULL: the
	 * completion event's path.  Set once the CQ exists, before any
	 * completion can come, and kept; poll_node is on its list while the
	 * thread may serve the session (rof_poll.c).
	 */
	struct rof_poller *poller;
	struct list_head poll_node;
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

/* rof_session.c: the session table and lifetimes. */
extern struct mutex rof_sess_lock;
extern struct workqueue_struct *rof_sess_wq;	/* the data path: nice 0 */
extern struct workqueue_struct *rof_ctl_wq;	/* welcome, close, reap: WQ_HIGHPRI */
struct rof_session *rof_session_lookup(u32 id);	/* rof_sess_lock */
void rof_session_put(struct rof_session *s);
void rof_session_close(struct rof_session *s, u32 reason);
void rof_sess_set_state(struct rof_session *s, u32 state);	/* rof_sess_lock */
void rof_sess_audit(struct rof_session *s, u32 kind, u32 reason, s32 status);

/* rof_cm.c: the listener, connects, a session's connection. */
int rof_cm_listen(void);
void rof_cm_unlisten(void);
void rof_conn_release(struct rof_session *s);
int rof_sregion_map(struct rof_session *s, struct rof_sregion *sr);
u32 rof_ib_access(u32 access);

/* rof_dp.c: the data path. */
void rof_dp_session_init(struct rof_session *s);
void rof_kick(struct rof_session *s);
bool rof_audit_error(struct rof_session *s, u32 reason, bool first_only);
int rof_post_rx_chain(struct rof_session *s, struct ib_recv_wr *first);
void rof_prep_rx(struct rof_session *s, u32 slot, struct ib_recv_wr ***tail);
void rof_cq_comp(struct ib_cq *cq, void *ctx);
void rof_cq_event(struct ib_event *ev, void *ctx);
void rof_qp_event(struct ib_event *ev, void *ctx);
bool rof_dp_poll_turn(struct rof_session *s, struct rof_poll_tally *t);
bool rof_dp_poll_arm(struct rof_session *s);

/* rof_poll.c: the polling threads (poll_cpus). */
int rof_poll_init(void);
void rof_poll_exit(void);
void rof_poll_attach(struct rof_session *s);
void rof_poll_detach(struct rof_session *s);
void rof_poll_wake(struct rof_poller *pt);
bool rof_poll_handoff(struct rof_poller *pt, u64 now);

#endif /* ROF_SESSION_H */
