// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_tenant.c - tenants: names, ids, quotas, usage, counters, and one
 * protection domain per tenant per device.
 *
 * A tenant is refcounted.  rof_tenants (an xarray keyed by id) holds one
 * reference from create to destroy; lookups take theirs under RCU, so
 * rof_tenant_get works from any context.  Every live tenant also holds a
 * module reference, which is what makes "rmmod rof" fail while objects
 * exist: ROF_IOC_TENANT_DRAIN (or destroying every tenant) releases them.
 *
 * A forced destroy marks the tenant dying (no new session or region from
 * then on), revokes its sessions' attachments (which closes them), waits
 * until every session has uncharged, destroys its regions (revoking their
 * attachments and waiting for them to detach) and only then unlinks it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "rof_core.h"

#define ROF_U32_UNLIMITED	U32_MAX

enum {
	ROF_CTR_INVOCATIONS,
	ROF_CTR_INVOKE_ERRORS,
	ROF_CTR_COMPLETION_ERRORS,
	ROF_CTR_BYTES,
	ROF_CTR_INSNS,
	ROF_CTR_SESSIONS_OPENED,
	ROF_CTR_SESSIONS_CLOSED,
	ROF_CTR_SESSIONS_REJECTED,
	ROF_CTR_AUDIT_DROPPED,
	ROF_CTR_NUM
};

struct rof_tenant {
	struct kref ref;
	struct rcu_head rcu;
	u32 id;
	char name[ROF_NAME_MAX];
	struct hlist_node name_node;	/* in rof_tenant_names while in rof_tenants */

	spinlock_t lock;		/* quota, usage, dying */
	struct rof_tenant_quota quota;
	struct rof_tenant_usage usage;
	u32 prepared;			/* sessions prepared, not yet live */
	u64 msg_bytes;			/* its sessions' message slots */
	bool dying;
	wait_queue_head_t idle_wq;	/* woken when usage.sessions hits 0 */
	/* Sessions and programs; closed under ->lock as ->dying is set. */
	struct rof_attach_set users;

	atomic64_t ctr[ROF_CTR_NUM];
};

static DEFINE_XARRAY_ALLOC1(rof_tenants);
/* Assigned ids go round: a new tenant does not take a recent one's id. */
static u32 rof_tenant_next;
/* Serialises create, destroy, quota changes and listing of tenants. */
static DEFINE_MUTEX(rof_tenants_lock);
/*
 * The tenants of rof_tenants by name, under rof_tenants_lock: a create's
 * check for a taken name walks one bucket, not every tenant (a policy of
 * 10,000 tenants made them 50 million compares).
 */
static DEFINE_HASHTABLE(rof_tenant_names, 10);

static u32 rof_tenant_name_hash(const char *name)
{
	return jhash(name, strnlen(name, ROF_NAME_MAX), 0);
}

/* call_rcu, not kfree_rcu: rcu_barrier() waits for it (debugfs quiesce). */
static void rof_tenant_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rof_tenant, rcu));
}

static void rof_tenant_release(struct kref *ref)
{
	struct rof_tenant *t = container_of(ref, struct rof_tenant, ref);

	call_rcu(&t->rcu, rof_tenant_free_rcu);
}

struct rof_tenant *rof_tenant_get(u32 id)
{
	struct rof_tenant *t;

	rcu_read_lock();
	t = xa_load(&rof_tenants, id);
	if (t && (READ_ONCE(t->dying) || !kref_get_unless_zero(&t->ref)))
		t = NULL;
	rcu_read_unlock();
	return t;
}

void rof_tenant_put(struct rof_tenant *t)
{
	kref_put(&t->ref, rof_tenant_release);
}

u32 rof_tenant_id(const struct rof_tenant *t)
{
	return t->id;
}

/*
 * A destroy of @t has begun; once true, stays true.  It is set before the
 * destroy sweeps the tenant's regions under rof_regions_lock, so a region
 * create that sees it false under that lock is found by the sweep.
 */
bool rof_tenant_dying(const struct rof_tenant *t)
{
	return READ_ONCE(t->dying);
}

u32 rof_tenant_credits_quota(const struct rof_tenant *t)
{
	return READ_ONCE(t->quota.credits);
}

u32 rof_tenant_invoke_records(const struct rof_tenant *t)
{
	return READ_ONCE(t->quota.invoke_records);
}

static bool rof_quota_u32_full(u32 used, u32 quota)
{
	return quota != ROF_U32_UNLIMITED && used >= quota;
}

/* Charge one session or program: @used and @quota are fields of @t. */
static int rof_tenant_charge_u32(struct rof_tenant *t, u32 *used,
				 const u32 *quota)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying)
		ret = -ENOENT;
	else if (rof_quota_u32_full(*used, *quota))
		ret = -EDQUOT;
	else
		(*used)++;
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

/* Uncharge what rof_tenant_charge_u32 charged; returns what is left. */
static u32 rof_tenant_uncharge_u32(struct rof_tenant *t, u32 *used)
{
	unsigned long flags;
	u32 left;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(!*used))
		(*used)--;
	left = *used;
	spin_unlock_irqrestore(&t->lock, flags);
	return left;
}

int rof_tenant_charge_session(struct rof_tenant *t)
{
	return rof_tenant_charge_u32(t, &t->usage.sessions, &t->quota.sessions);
}

void rof_tenant_uncharge_session(struct rof_tenant *t)
{
	if (!rof_tenant_uncharge_u32(t, &t->usage.sessions))
		wake_up_all(&t->idle_wq);
}

int rof_tenant_charge_prepared(struct rof_tenant *t, u32 cap)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (cap && t->prepared >= cap)
		ret = -EMFILE;
	else
		t->prepared++;
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_uncharge_prepared(struct rof_tenant *t)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(!t->prepared))
		t->prepared--;
	spin_unlock_irqrestore(&t->lock, flags);
}

int rof_tenant_charge_msg(struct rof_tenant *t, u64 bytes, u64 cap)
{
	unsigned long flags;
	u64 total;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying)
		ret = -ENOENT;
	else if (check_add_overflow(t->msg_bytes, bytes, &total) ||
		 (cap && total > cap))
		ret = -EDQUOT;
	else
		t->msg_bytes = total;
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_uncharge_msg(struct rof_tenant *t, u64 bytes)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(t->msg_bytes < bytes))
		t->msg_bytes -= bytes;
	spin_unlock_irqrestore(&t->lock, flags);
}

int rof_tenant_attach(struct rof_tenant *t, struct rof_attach *a)
{
	return rof_attach(&t->users, a);
}

void rof_tenant_detach(struct rof_tenant *t, struct rof_attach *a)
{
	rof_detach(&t->users, a);
}

int rof_tenant_charge_program(struct rof_tenant *t)
{
	return rof_tenant_charge_u32(t, &t->usage.programs, &t->quota.programs);
}

void rof_tenant_uncharge_program(struct rof_tenant *t)
{
	rof_tenant_uncharge_u32(t, &t->usage.programs);
}

int rof_tenant_charge_region(struct rof_tenant *t, u64 bytes)
{
	unsigned long flags;
	u64 total;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying) {
		ret = -ENOENT;
	} else if (check_add_overflow(t->usage.region_bytes, bytes, &total) ||
		   (t->quota.region_bytes != ROF_QUOTA_UNLIMITED &&
		    total > t->quota.region_bytes) ||
		   t->usage.regions == U32_MAX) {
		ret = -EDQUOT;
	} else {
		t->usage.region_bytes = total;
		t->usage.regions++;
	}
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_uncharge_region(struct rof_tenant *t, u64 bytes, u32 regions)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(t->usage.region_bytes < bytes ||
			  t->usage.regions < regions)) {
		t->usage.region_bytes -= bytes;
		t->usage.regions -= regions;
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

void rof_tenant_count_freelists(struct rof_tenant *t, int delta)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	t->usage.freelists += delta;
	spin_unlock_irqrestore(&t->lock, flags);
}

/* Called by rof_audit_log for every record; any context. */
void rof_tenant_account(const struct rof_audit_record *rec)
{
	struct rof_tenant *t;

	if (!rec->tenant)
		return;
	rcu_read_lock();
	t = xa_load(&rof_tenants, rec->tenant);
	if (!t)
		goto out;
	switch (rec->kind) {
	case ROF_AUDIT_INVOKE:
		atomic64_inc(&t->ctr[ROF_CTR_INVOCATIONS]);
		if (rec->status)
			atomic64_inc(&t->ctr[ROF_CTR_INVOKE_ERRORS]);
		atomic64_add(rec->bytes, &t->ctr[ROF_CTR_BYTES]);
		atomic64_add(rec->insns, &t->ctr[ROF_CTR_INSNS]);
		break;
	case ROF_AUDIT_COMPLETION_ERROR:
		atomic64_inc(&t->ctr[ROF_CTR_COMPLETION_ERRORS]);
		break;
	case ROF_AUDIT_SESSION_OPEN:
		atomic64_inc(&t->ctr[ROF_CTR_SESSIONS_OPENED]);
		break;
	case ROF_AUDIT_SESSION_CLOSE:
		atomic64_inc(&t->ctr[ROF_CTR_SESSIONS_CLOSED]);
		break;
	case ROF_AUDIT_SESSION_REJECT:
		atomic64_inc(&t->ctr[ROF_CTR_SESSIONS_REJECTED]);
		break;
	}
out:
	rcu_read_unlock();
}

void rof_tenant_count_audit_drop(u32 tenant)
{
	struct rof_tenant *t;

	/* rof_tenant_fill copies ctr[] over the counters in order. */
	BUILD_BUG_ON(offsetof(struct rof_tenant_counters, audit_dropped) !=
		     ROF_CTR_AUDIT_DROPPED * sizeof(u64));
	rcu_read_lock();
	t = xa_load(&rof_tenants, tenant);
	if (t)
		atomic64_inc(&t->ctr[ROF_CTR_AUDIT_DROPPED]);
	rcu_read_unlock();
}

static void rof_tenant_fill(struct rof_tenant *t, struct rof_tenant_info *info)
{
	unsigned long flags;
	u64 *ctr = (u64 *)&info->counters;
	int i;

	BUILD_BUG_ON(sizeof(info->counters) < ROF_CTR_NUM * sizeof(u64));
	memset(info, 0, sizeof(*info));
	strscpy(info->name, t->name, sizeof(info->name));
	info->id = t->id;
	spin_lock_irqsave(&t->lock, flags);
	info->quota = t->quota;
	info->usage = t->usage;
	if (t->dying)
		info->flags |= ROF_TENANT_DYING;
	spin_unlock_irqrestore(&t->lock, flags);
	for (i = 0; i < ROF_CTR_NUM; i++)
		ctr[i] = atomic64_read(&t->ctr[i]);
}

static bool rof_tenant_name_taken(const char *name)
{
	struct rof_tenant *t;

	lockdep_assert_held(&rof_tenants_lock);
	hash_for_each_possible(rof_tenant_names, t, name_node,
			       rof_tenant_name_hash(name))
		if (!strcmp(t->name, name))
			return true;
	return false;
}

static struct rof_tenant *rof_tenant_alloc(const char *name)
{
	struct rof_tenant *t;
	int i;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return NULL;
	kref_init(&t->ref);
	strscpy(t->name, name, sizeof(t->name));
	spin_lock_init(&t->lock);
	init_waitqueue_head(&t->idle_wq);
	rof_attach_set_init(&t->users);
	t->quota.region_bytes = ROF_QUOTA_UNLIMITED;
	t->quota.sessions = ROF_U32_UNLIMITED;
	t->quota.programs = ROF_U32_UNLIMITED;
	t->quota.credits = ROF_CREDITS_DEFAULT;
	for (i = 0; i < ROF_CTR_NUM; i++)
		atomic64_set(&t->ctr[i], 0);
	return t;
}

/* Unlink @t (the caller holds a reference of its own and rof_tenants_lock). */
static void rof_tenant_unlink(struct rof_tenant *t)
{
	lockdep_assert_held(&rof_tenants_lock);
	if (xa_cmpxchg(&rof_tenants, t->id, t, NULL, GFP_KERNEL) != t)
		return;		/* a concurrent destroy got there first */
	hash_del(&t->name_node);
	module_put(THIS_MODULE);
	rof_tenant_put(t);	/* the xarray's reference */
}

static int rof_tenant_destroy_one(struct rof_tenant *t, bool force,
				  u32 reason);

static long rof_tenant_create(void __user *uarg)
{
	struct rof_tenant_create req;
	struct rof_tenant *t;
	u32 id;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_TENANT_CREATE_ID || req.reserved)
		return -EINVAL;
	if (rof_name_check(req.name))
		return -EINVAL;
	if (req.flags & ROF_TENANT_CREATE_ID) {
		if (!req.id || req.id > ROF_TENANT_ID_MAX)
			return -EINVAL;
	} else if (req.id) {
		return -EINVAL;
	}

	t = rof_tenant_alloc(req.name);
	if (!t)
		return -ENOMEM;

	mutex_lock(&rof_tenants_lock);
	if (rof_tenant_name_taken(req.name)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	if (req.flags & ROF_TENANT_CREATE_ID) {
		id = req.id;
		t->id = id;
		ret = xa_insert(&rof_tenants, id, t, GFP_KERNEL);
		if (ret == -EBUSY)
			ret = -EEXIST;
	} else {
		ret = xa_alloc_cyclic(&rof_tenants, &t->id, t,
				      XA_LIMIT(1, ROF_TENANT_ID_MAX),
				      &rof_tenant_next, GFP_KERNEL);
		if (ret == -EBUSY)
			ret = -ENOSPC;
		else if (ret > 0)
			ret = 0;	/* the ids wrapped around */
		id = t->id;
	}
	if (ret)
		goto err_unlock;
	hash_add(rof_tenant_names, &t->name_node, rof_tenant_name_hash(t->name));
	/* The caller's open /dev/rof pins the module, so this is safe. */
	__module_get(THIS_MODULE);
	/*
	 * Published: a destroy by id may drop the xarray's reference as soon
	 * as the lock is dropped.  Ours keeps @t valid until we are done.
	 */
	kref_get(&t->ref);
	mutex_unlock(&rof_tenants_lock);
	rof_fault_delay("tenant create", id);

	req.id = id;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/*
		 * Nobody learnt the id: destroy the tenant again, unless a
		 * destroy by id came first (a no-op then) or whoever guessed
		 * the id has put objects in it (then it is theirs to keep).
		 */
		rof_tenant_destroy_one(t, false, ROF_DESTROY_ADMIN);
		ret = -EFAULT;
	} else {
		pr_debug("tenant %u (%s) created\n", id, t->name);
	}
	rof_tenant_put(t);
	return ret;

err_unlock:
	mutex_unlock(&rof_tenants_lock);
	kfree(t);
	return ret;
}

static void rof_tenant_audit_destroy(struct rof_tenant *t, u32 reason)
{
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_TENANT_DESTROY,
		.tenant = t->id,
		.reason = reason,
	};

	rof_audit_log(&rec);
}

static const char *rof_destroy_reason_str(u32 reason)
{
	switch (reason) {
	case ROF_DESTROY_ADMIN:
		return "tenant destroyed by the administrator";
	case ROF_DESTROY_DRAIN:
		return "module drained";
	default:
		return "tenant destroyed";
	}
}

/*
 * Destroy @t.  Without @force, refuse (-ENOTEMPTY) while it owns
 * anything.  Called without rof_tenants_lock (a forced destroy sleeps
 * until its sessions are gone); the caller holds a reference.
 */
static int rof_tenant_destroy_one(struct rof_tenant *t, bool force, u32 reason)
{
	unsigned long flags;
	bool busy;
	int ret;

	spin_lock_irqsave(&t->lock, flags);
	busy = t->usage.sessions || t->usage.regions || t->usage.programs;
	if (busy && !force) {
		spin_unlock_irqrestore(&t->lock, flags);
		return -ENOTEMPTY;
	}
	/* From here on no session, PD or region can be added. */
	WRITE_ONCE(t->dying, true);
	rof_attach_close(&t->users, true, NULL);
	spin_unlock_irqrestore(&t->lock, flags);

	if (force) {
		rof_tenant_audit_destroy(t, reason);
		pr_info_ratelimited("tenant %u (%s): forced destroy: %s\n",
				    t->id, t->name,
				    rof_destroy_reason_str(reason));
	}

	rof_attach_revoke_all(&t->users, rof_destroy_reason_str(reason));
	ret = wait_event_killable(t->idle_wq, !READ_ONCE(t->usage.sessions));
	if (ret)
		return -EINTR;	/* stays dying; a later destroy resumes */

	ret = rof_region_destroy_tenant(t, reason == ROF_DESTROY_ADMIN ?
					ROF_DESTROY_TENANT : reason);
	if (ret)
		return ret;	/* -EINTR, the same */

	mutex_lock(&rof_tenants_lock);
	rof_tenant_unlink(t);
	mutex_unlock(&rof_tenants_lock);
	return 0;
}

static long rof_tenant_destroy(void __user *uarg)
{
	struct rof_destroy req;
	struct rof_tenant *t;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_DESTROY_FORCE || req.reserved)
		return -EINVAL;

	/* Not rof_tenant_get: a dying tenant can be destroyed again. */
	mutex_lock(&rof_tenants_lock);
	t = xa_load(&rof_tenants, req.id);
	if (t)
		kref_get(&t->ref);
	mutex_unlock(&rof_tenants_lock);
	if (!t)
		return -ENOENT;

	ret = rof_tenant_destroy_one(t, req.flags & ROF_DESTROY_FORCE,
				     ROF_DESTROY_ADMIN);
	rof_tenant_put(t);
	return ret;
}

static long rof_tenant_set_quota(void __user *uarg)
{
	unsigned long flags;
	struct rof_tenant_set_quota req;
	struct rof_tenant *t;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.quota.invoke_records > ROF_INVOKE_SAMPLE_MAX)
		return -EINVAL;
	if (!req.quota.credits || req.quota.credits > ROF_CREDITS_QUOTA_MAX)
		return -EINVAL;

	mutex_lock(&rof_tenants_lock);
	t = xa_load(&rof_tenants, req.id);
	if (!t) {
		ret = -ENOENT;
	} else {
		/* Lowering a quota below usage only refuses new charges. */
		spin_lock_irqsave(&t->lock, flags);
		t->quota = req.quota;
		spin_unlock_irqrestore(&t->lock, flags);
	}
	mutex_unlock(&rof_tenants_lock);
	return ret;
}

static int rof_tenant_get_fill(void *buf)
{
	struct rof_tenant_info *info = buf;
	struct rof_tenant *t;
	int ret = 0;

	if (info->flags)
		return -EINVAL;
	mutex_lock(&rof_tenants_lock);
	t = xa_load(&rof_tenants, info->id);
	if (t)
		rof_tenant_fill(t, info);
	else
		ret = -ENOENT;
	mutex_unlock(&rof_tenants_lock);
	return ret;
}

static long rof_tenant_get_info(void __user *uarg)
{
	return rof_get_ioctl(uarg, sizeof(struct rof_tenant_info),
			     rof_tenant_get_fill);
}

static u32 rof_tenant_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_tenant_info *info = buf;
	struct rof_tenant *t;
	unsigned long id, start = *pos;
	u32 n = 0;

	mutex_lock(&rof_tenants_lock);
	xa_for_each_start(&rof_tenants, id, t, start)
		if (n++ < cap) {
			rof_tenant_fill(t, &info[n - 1]);
			*pos = id + 1;
		}
	mutex_unlock(&rof_tenants_lock);
	return n;
}

static long rof_tenant_list(void __user *uarg)
{
	return rof_list_ioctl(uarg, sizeof(struct rof_tenant_info),
			      rof_tenant_snap, NULL);
}

static long rof_tenant_drain(void __user *uarg)
{
	struct rof_drain req;
	struct rof_tenant *t;
	unsigned long id;
	u32 done = 0, left = 0;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_DESTROY_FORCE || req.reserved)
		return -EINVAL;

	/*
	 * One tenant at a time, by increasing id, without holding the lock
	 * across the (sleeping) destroy; tenants created meanwhile are
	 * drained too if their id is higher.
	 */
	id = 0;
	for (;;) {
		mutex_lock(&rof_tenants_lock);
		t = xa_find_after(&rof_tenants, &id, ULONG_MAX, XA_PRESENT);
		if (t)
			kref_get(&t->ref);
		mutex_unlock(&rof_tenants_lock);
		if (!t)
			break;
		ret = rof_tenant_destroy_one(t, req.flags & ROF_DESTROY_FORCE,
					     ROF_DESTROY_DRAIN);
		rof_tenant_put(t);
		if (ret == -ENOTEMPTY) {
			left++;
			continue;
		}
		if (ret)
			return ret;
		done++;
	}

	req.tenants = done;
	req.remaining = left;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return left ? -ENOTEMPTY : 0;
}

long rof_tenant_ioctl(unsigned int cmd, void __user *uarg)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	switch (cmd) {
	case ROF_IOC_TENANT_CREATE:
		return rof_tenant_create(uarg);
	case ROF_IOC_TENANT_DESTROY:
		return rof_tenant_destroy(uarg);
	case ROF_IOC_TENANT_SET_QUOTA:
		return rof_tenant_set_quota(uarg);
	case ROF_IOC_TENANT_GET:
		return rof_tenant_get_info(uarg);
	case ROF_IOC_TENANT_LIST:
		return rof_tenant_list(uarg);
	case ROF_IOC_TENANT_SET_RATE:
		return rof_tenant_set_rate(uarg);
	case ROF_IOC_TENANT_DRAIN:
		return rof_tenant_drain(uarg);
	default:
		return -ENOTTY;
	}
}

int rof_tenant_init(void)
{
	return 0;
}

/* Every tenant holds a module reference, so none is left at exit. */
void rof_tenant_exit(void)
{
	WARN_ON(!xa_empty(&rof_tenants));
	xa_destroy(&rof_tenants);
	/* The call_rcu callbacks of released tenants run before unload. */
	rcu_barrier();
}
