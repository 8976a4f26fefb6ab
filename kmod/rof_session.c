// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_session.c - sessions: the table, their lifetimes (prepare, close,
 * the reaper), the session ioctls, and the module's session side's init
 * and exit.  rof_cm.c connects them, rof_dp.c serves them.
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
 * Closing: ROF_SF_CLOSING is set first, and nothing queues the welcome,
 * poll or throttle work once it is set; the close work then cancels the
 * welcome work (which may have queued the poll), the poll work (which may
 * have armed the throttle or queued the welcome), the throttle work (which
 * may have queued either), destroys the QP and CQ (no completion callback
 * after that) and the cm_id (no CM handler after that), and cancels all
 * three again.  Before the first cancels it stops the softirq side and
 * takes the session off its polling thread (rof_poll_detach), either of
 * which may queue the poll work or arm the throttle as the poll work may.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "rof_session.h"

static uint idle_timeout_ms = ROF_SESSION_IDLE_DEFAULT_MS;
module_param(idle_timeout_ms, uint, 0644);
MODULE_PARM_DESC(idle_timeout_ms, "close a session idle this long, unless it sets its own");

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

#define ROF_REAP_PERIOD		HZ	/* idle and expiry scan */

static DEFINE_XARRAY(rof_sessions);
DEFINE_MUTEX(rof_sess_lock);
static u32 rof_sess_next_id = 1;
struct workqueue_struct *rof_sess_wq;
struct workqueue_struct *rof_ctl_wq;
static struct delayed_work rof_reap_work;

static void rof_session_release(struct kref *ref)
{
	struct rof_session *s = container_of(ref, struct rof_session, ref);

	kfree(s);
}

/* The session @id, or NULL; under rof_sess_lock, which keeps it there. */
struct rof_session *rof_session_lookup(u32 id)
{
	lockdep_assert_held(&rof_sess_lock);
	return xa_load(&rof_sessions, id);
}

void rof_session_put(struct rof_session *s)
{
	kref_put(&s->ref, rof_session_release);
}

void rof_sess_audit(struct rof_session *s, u32 kind, u32 reason,
			   s32 status)
{
	struct rof_audit_record rec = {
		.kind = kind,
		.tenant = s->tenant_id,
		.session = s->id,
		.status = status,
		.reason = reason,
	};

	rof_audit_log_skip(&rec, &s->askip);
}

/*
 * Under rof_sess_lock.  A session counts against its tenant's
 * max_prepared_sessions from its prepare until it is live or closing.
 */
void rof_sess_set_state(struct rof_session *s, u32 state)
{
	lockdep_assert_held(&rof_sess_lock);
	s->state = state;
	if (s->prep_charged &&
	    (state == ROF_SESSION_LIVE || state == ROF_SESSION_CLOSING)) {
		s->prep_charged = false;
		rof_tenant_uncharge_prepared(s->tenant);
	}
}

void rof_session_close(struct rof_session *s, u32 reason)
{
	if (test_and_set_bit(ROF_SF_CLOSING, &s->flags))
		return;
	s->close_reason = reason;
	kref_get(&s->ref);		/* dropped by close_work */
	queue_work(rof_ctl_wq, &s->close_work);
}

static void rof_tenant_revoked(struct rof_attach *a, const char *reason)
{
	struct rof_session *s = container_of(a, struct rof_session, tatt);

	pr_info_ratelimited("session %u: tenant revoked (%s)\n", s->id, reason);
	rof_session_close(s, ROF_CLOSE_REVOKED);
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
	/*
	 * Its polling thread, if any, as the softirq: off the thread's list,
	 * and no turn on it under way (a turn may arm the throttle or queue
	 * the welcome, as the poll work may).
	 */
	rof_poll_detach(s);
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
		else if (s->state == ROF_SESSION_LIVE &&
			 test_bit(ROF_SF_OPENED, &s->flags))
			/* Counts of unrecorded INVOKEs wait a second at most. */
			rof_audit_flush_skip(s->tenant_id, s->id, &s->askip);
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
	if (req.flags)
		return -EINVAL;
	if (!req.msg_size)
		req.msg_size = ROF_MSG_SIZE;
	if (req.msg_size < ROF_MSG_SIZE || req.msg_size > ROF_MSG_SIZE_MAX ||
	    !is_power_of_2(req.msg_size))
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
		if (g->access & ~rof_region_access(r))
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
	rof_dp_session_init(s);
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
	s->msg_size = req.msg_size;
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
	si->msg_size = s->msg_size;
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
	case ROF_IOC_SESSION_PREPARE:
		return rof_session_prepare(uarg);
	case ROF_IOC_SESSION_LIST:
		return rof_list_ioctl(uarg, sizeof(struct rof_session_info),
				      rof_session_snap, NULL);
	case ROF_IOC_SESSION_GET:
		return rof_get_ioctl(uarg, sizeof(struct rof_session_info),
				     rof_session_get_fill);
	case ROF_IOC_SESSION_CLOSE:
		return rof_session_close_ioctl(uarg);
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
	ret = rof_poll_init();
	if (ret)
		goto err_ctl_wq;
	ret = rof_cm_listen();
	if (ret)
		goto err_poll;
	INIT_DELAYED_WORK(&rof_reap_work, rof_reap_fn);
	queue_delayed_work(rof_ctl_wq, &rof_reap_work, ROF_REAP_PERIOD);
	return 0;

err_poll:
	rof_poll_exit();
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
	rof_cm_unlisten();
	cancel_delayed_work_sync(&rof_reap_work);
	rof_close_matching(rof_match_all, NULL, ROF_CLOSE_UNLOAD);
	rof_poll_exit();		/* no session left to poll */
	destroy_workqueue(rof_ctl_wq);
	destroy_workqueue(rof_sess_wq);
	rof_trl_exit();
	rof_ticket_exit();
}
