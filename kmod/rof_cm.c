// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_cm.c - the rdma_cm side of sessions: the listener; a connect checked
 * against its ticket and accepted, or rejected with a reason; building a
 * session's connection (its PD, CQ and QP, the receive and send slots, one
 * fast-registration MR per granted region) and tearing it down.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "rof_session.h"

static struct rdma_cm_id *rof_listen_id;

static ushort cm_port = ROF_CM_PORT_DEFAULT;
module_param(cm_port, ushort, 0444);
MODULE_PARM_DESC(cm_port, "rdma_cm port the session listener binds (any address)");

/*
 * Kalia's selective signalling: one send in this many asks for a
 * completion, which retires every send posted before it.
 */
static uint signal_every = 16;
module_param(signal_every, uint, 0444);
MODULE_PARM_DESC(signal_every, "request a send completion every N sends");

/*
 * A session's receive and send slots are kernel memory its tenant makes
 * the module allocate, msg_size each: (credits + 1 + 2 * credits +
 * regions + 2) of them.  What is bounded is what a message size above
 * ROF_MSG_SIZE adds to them: the 1 KiB slots every session had before
 * ABI 0.8 are bounded by the tenant's session and in-flight quotas as
 * they were (its session quota is unlimited by default, so no byte total
 * could be sized from it), and a tenant of default sessions is never
 * refused by this bound, however many it opens.  12.1 MiB for a 64 KiB
 * session of 64 credits and one region.
 */
static ulong tenant_msg_bytes_max = 256UL << 20;
module_param(tenant_msg_bytes_max, ulong, 0644);
MODULE_PARM_DESC(tenant_msg_bytes_max, "bytes of message buffers above 1 KiB a slot that one tenant's sessions may hold at once (0: no bound)");

#define ROF_INLINE_WANT		256	/* inline bytes asked of the QP */

/* ---- regions: one FRWR per granted region ---------------------------- */

u32 rof_ib_access(u32 access)
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
	sr->access = g->access & rof_region_access(sr->r);
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
int rof_sregion_map(struct rof_session *s, struct rof_sregion *sr)
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
					    s->msg_size, dir);
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

		/*
		 * kmalloc memory is physically contiguous: one mapping.  Up
		 * to ROF_MSG_SIZE_MAX, an order-4 allocation that may fail
		 * on a fragmented host: a clean refusal, not a warning.
		 */
		slots[i].buf = kzalloc(s->msg_size, GFP_KERNEL | __GFP_NOWARN);
		if (!slots[i].buf)
			goto err;
		dma = ib_dma_map_single(s->dev->ibdev, slots[i].buf,
					s->msg_size, dir);
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
void rof_conn_release(struct rof_session *s)
{
	u32 i;

	/* Its polling thread no longer touches it (the close work did it). */
	rof_poll_detach(s);
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
	if (s->msg_charged) {
		rof_tenant_uncharge_msg(s->tenant, s->msg_charged);
		s->msg_charged = 0;
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
	s->max_inline = min_t(u32, qa.cap.max_inline_data, s->msg_size);
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
	u64 charge;

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
	s->credits = min_t(u32, rof_tenant_credits_quota(s->tenant),
			   ROF_SESSION_CREDITS_MAX);
	s->credits = min_t(u32, s->credits, (max_wr - s->nregions - 2) / 2);
	if (!s->credits || max_wr < s->nregions + 4)
		return ROF_REJECT_RESOURCES;
	s->nrecv = s->credits + 1;
	s->sq_depth = 2 * s->credits + s->nregions + 2;
	if (s->nrecv + s->sq_depth > cq_lim)
		return ROF_REJECT_RESOURCES;
	s->sig_every = clamp_t(u32, signal_every, 1, s->sq_depth / 2);

	/*
	 * The bytes above ROF_MSG_SIZE, charged before they are allocated
	 * and released by rof_conn_release; none for a default session.
	 */
	charge = (u64)(s->nrecv + s->sq_depth) * (s->msg_size - ROF_MSG_SIZE);
	if (charge) {
		ret = rof_tenant_charge_msg(s->tenant, charge,
					    READ_ONCE(tenant_msg_bytes_max));
		if (ret)
			return ret == -EDQUOT ? ROF_REJECT_QUOTA :
						ROF_REJECT_NO_TENANT;
		s->msg_charged = charge;
	}

	if (rof_conn_alloc_arrays(s))
		return ROF_REJECT_RESOURCES;

	ca.cqe = s->nrecv + s->sq_depth;
	ca.comp_vector = s->id % ibdev->num_comp_vectors;
	s->cq = ib_create_cq(ibdev, rof_cq_comp, rof_cq_event, s, &ca);
	if (IS_ERR(s->cq)) {
		s->cq = NULL;
		return ROF_REJECT_RESOURCES;
	}
	/* To a polling thread, if any: before any completion can come. */
	rof_poll_attach(s);
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
	rof_bucket_init(&s->bytes_b, s->rate.bytes_per_sec, 2 * s->msg_size,
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
	s = rof_session_lookup(sid);
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
	acc.msg_size = cpu_to_le32(s->msg_size);
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
int rof_cm_listen(void)
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

/* No connect reaches the module after this. */
void rof_cm_unlisten(void)
{
	rdma_destroy_id(rof_listen_id);
	rof_listen_id = NULL;
}
