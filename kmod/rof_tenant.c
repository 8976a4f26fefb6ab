// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_tenant.c - tenants: names, ids, quotas, usage, counters, and one
 * protection domain per tenant per device.
 *
 * A tenant is refcounted.  rof_tenants (an xarray keyed by id) holds one
 * reference from create to destroy; lookups take theirs under RCU, so
 * rof_tenant_get works from any context.  Every live tenant also holds a
 * module reference, which is what makes "rmmod rof" fail while objects
 * exist: ROF_IOC_DRAIN (or destroying every tenant) releases them.
 *
 * A forced destroy marks the tenant dying (no new session, PD or region
 * from then on), revokes its sessions' attachments (which closes them),
 * waits until every session has uncharged, destroys its regions (revoking their
 * attachments), frees its PDs and only then unlinks it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/ctype.h>
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
	ROF_CTR_NUM
};

struct rof_tenant {
	struct kref ref;
	struct rcu_head rcu;
	u32 id;
	char name[ROF_NAME_MAX];

	spinlock_t lock;		/* quota, usage, dying */
	struct rof_tenant_quota quota;
	struct rof_tenant_usage usage;
	bool dying;
	wait_queue_head_t idle_wq;	/* woken when usage.sessions hits 0 */
	struct list_head attachments;	/* sessions, under lock */
	struct list_head revoked;	/* revoked, not yet detached */
	struct rof_tenant_attach *revoking;
	struct task_struct *revoker;

	atomic64_t ctr[ROF_CTR_NUM];
};

/* One protection domain of one tenant on one device. */
struct rof_tenant_pd {
	struct list_head node;		/* on rof_pds */
	struct rof_tenant *tenant;	/* no reference: freed before it */
	struct rof_device *dev;		/* holds a reference */
	struct ib_pd *pd;
};

static DEFINE_XARRAY_ALLOC1(rof_tenants);
/* Serialises create, destroy, quota changes and listing of tenants. */
static DEFINE_MUTEX(rof_tenants_lock);

/*
 * rof_pd_lock protects rof_pds and every device's ->pds_closed.  A
 * device's PDs are freed by rof_tenant_device_removed, which also sets
 * ->pds_closed so that none is allocated on it afterwards (->removed is
 * only set later, by rof_device.c).
 */
static DEFINE_MUTEX(rof_pd_lock);
static LIST_HEAD(rof_pds);

static void rof_tenant_release(struct kref *ref)
{
	struct rof_tenant *t = container_of(ref, struct rof_tenant, ref);

	kfree_rcu(t, rcu);
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

u32 rof_tenant_inflight_quota(const struct rof_tenant *t)
{
	return READ_ONCE(t->quota.inflight);
}

static bool rof_quota_u32_full(u32 used, u32 quota)
{
	return quota != ROF_U32_UNLIMITED && used >= quota;
}

int rof_tenant_charge_session(struct rof_tenant *t)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying)
		ret = -ENOENT;
	else if (rof_quota_u32_full(t->usage.sessions, t->quota.sessions))
		ret = -EDQUOT;
	else
		t->usage.sessions++;
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_uncharge_session(struct rof_tenant *t)
{
	unsigned long flags;
	bool idle;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(!t->usage.sessions))
		t->usage.sessions--;
	idle = !t->usage.sessions;
	spin_unlock_irqrestore(&t->lock, flags);
	if (idle)
		wake_up_all(&t->idle_wq);
}

int rof_tenant_attach(struct rof_tenant *t, struct rof_tenant_attach *a)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying)
		ret = -ENOENT;
	else
		list_add_tail(&a->node, &t->attachments);
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_detach(struct rof_tenant *t, struct rof_tenant_attach *a)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	while (t->revoking == a && t->revoker != current) {
		spin_unlock_irqrestore(&t->lock, flags);
		wait_event(t->idle_wq, READ_ONCE(t->revoking) != a);
		spin_lock_irqsave(&t->lock, flags);
	}
	list_del_init(&a->node);
	spin_unlock_irqrestore(&t->lock, flags);
}

/* Call ->revoke for every attached session, one at a time, unlocked. */
static void rof_tenant_revoke_all(struct rof_tenant *t, const char *why)
{
	unsigned long flags;
	struct rof_tenant_attach *a;

	for (;;) {
		spin_lock_irqsave(&t->lock, flags);
		a = list_first_entry_or_null(&t->attachments,
					     struct rof_tenant_attach, node);
		if (a) {
			list_move_tail(&a->node, &t->revoked);
			t->revoking = a;
			t->revoker = current;
		}
		spin_unlock_irqrestore(&t->lock, flags);
		if (!a)
			break;

		a->revoke(a, why);

		spin_lock_irqsave(&t->lock, flags);
		t->revoking = NULL;
		t->revoker = NULL;
		spin_unlock_irqrestore(&t->lock, flags);
		wake_up_all(&t->idle_wq);
	}
}

int rof_tenant_charge_program(struct rof_tenant *t)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&t->lock, flags);
	if (t->dying)
		ret = -ENOENT;
	else if (rof_quota_u32_full(t->usage.programs, t->quota.programs))
		ret = -EDQUOT;
	else
		t->usage.programs++;
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

void rof_tenant_uncharge_program(struct rof_tenant *t)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(!t->usage.programs))
		t->usage.programs--;
	spin_unlock_irqrestore(&t->lock, flags);
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

void rof_tenant_uncharge_region(struct rof_tenant *t, u64 bytes)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	if (!WARN_ON_ONCE(t->usage.region_bytes < bytes || !t->usage.regions)) {
		t->usage.region_bytes -= bytes;
		t->usage.regions--;
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

struct ib_pd *rof_tenant_pd(struct rof_tenant *t, struct rof_device *dev)
{
	struct rof_tenant_pd *e;
	struct ib_pd *pd;

	mutex_lock(&rof_pd_lock);
	if (READ_ONCE(t->dying)) {
		pd = ERR_PTR(-ENOENT);
		goto out;
	}
	if (dev->pds_closed || READ_ONCE(dev->removed)) {
		pd = ERR_PTR(-ENODEV);
		goto out;
	}
	list_for_each_entry(e, &rof_pds, node) {
		if (e->tenant == t && e->dev == dev) {
			pd = e->pd;
			goto out;
		}
	}

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		pd = ERR_PTR(-ENOMEM);
		goto out;
	}
	/* ibdev stays valid: removal sweeps PDs under rof_pd_lock first. */
	pd = ib_alloc_pd(dev->ibdev, 0);
	if (IS_ERR(pd)) {
		kfree(e);
		goto out;
	}
	kref_get(&dev->ref);
	e->tenant = t;
	e->dev = dev;
	e->pd = pd;
	list_add_tail(&e->node, &rof_pds);
out:
	mutex_unlock(&rof_pd_lock);
	return pd;
}

static void rof_tenant_pd_free(struct rof_tenant_pd *e)
{
	list_del(&e->node);
	ib_dealloc_pd(e->pd);
	rof_device_put(e->dev);
	kfree(e);
}

/* Sessions on @dev are gone (rof_session_device_removed ran first). */
void rof_tenant_device_removed(struct rof_device *dev)
{
	struct rof_tenant_pd *e, *tmp;

	mutex_lock(&rof_pd_lock);
	dev->pds_closed = true;
	list_for_each_entry_safe(e, tmp, &rof_pds, node)
		if (e->dev == dev)
			rof_tenant_pd_free(e);
	mutex_unlock(&rof_pd_lock);
}

static void rof_tenant_free_pds(struct rof_tenant *t)
{
	struct rof_tenant_pd *e, *tmp;

	mutex_lock(&rof_pd_lock);
	list_for_each_entry_safe(e, tmp, &rof_pds, node)
		if (e->tenant == t)
			rof_tenant_pd_free(e);
	mutex_unlock(&rof_pd_lock);
}

/* Names: 1 .. ROF_NAME_MAX - 1 chars of [A-Za-z0-9._:-], NUL-terminated. */
int rof_name_check(const char *name)
{
	size_t len = strnlen(name, ROF_NAME_MAX);
	size_t i;

	if (!len || len == ROF_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!isalnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
			return -EINVAL;
	}
	return 0;
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
	unsigned long id;

	lockdep_assert_held(&rof_tenants_lock);
	xa_for_each(&rof_tenants, id, t)
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
	INIT_LIST_HEAD(&t->attachments);
	INIT_LIST_HEAD(&t->revoked);
	t->quota.region_bytes = ROF_QUOTA_UNLIMITED;
	t->quota.sessions = ROF_U32_UNLIMITED;
	t->quota.programs = ROF_U32_UNLIMITED;
	t->quota.inflight = ROF_INFLIGHT_DEFAULT;
	for (i = 0; i < ROF_CTR_NUM; i++)
		atomic64_set(&t->ctr[i], 0);
	return t;
}

/* Unlink @t (the caller holds a reference of its own). */
static void rof_tenant_unlink(struct rof_tenant *t)
{
	if (xa_cmpxchg(&rof_tenants, t->id, t, NULL, GFP_KERNEL) != t)
		return;		/* a concurrent destroy got there first */
	module_put(THIS_MODULE);
	rof_tenant_put(t);	/* the xarray's reference */
}

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
		ret = xa_alloc(&rof_tenants, &t->id, t,
			       XA_LIMIT(1, ROF_TENANT_ID_MAX), GFP_KERNEL);
		if (ret == -EBUSY)
			ret = -ENOSPC;
		id = t->id;
	}
	if (ret)
		goto err_unlock;
	/* The caller's open /dev/rof pins the module, so this is safe. */
	__module_get(THIS_MODULE);
	mutex_unlock(&rof_tenants_lock);

	req.id = id;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		mutex_lock(&rof_tenants_lock);
		rof_tenant_unlink(t);
		mutex_unlock(&rof_tenants_lock);
		return -EFAULT;
	}
	pr_debug("tenant %u (%s) created\n", id, t->name);
	return 0;

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
	spin_unlock_irqrestore(&t->lock, flags);

	if (force) {
		rof_tenant_audit_destroy(t, reason);
		pr_info_ratelimited("tenant %u (%s): forced destroy: %s\n",
				    t->id, t->name,
				    rof_destroy_reason_str(reason));
	}

	rof_tenant_revoke_all(t, rof_destroy_reason_str(reason));
	ret = wait_event_killable(t->idle_wq, !READ_ONCE(t->usage.sessions));
	if (ret)
		return ret;	/* stays dying; a later destroy resumes */

	rof_region_destroy_tenant(t, reason == ROF_DESTROY_ADMIN ?
				  ROF_DESTROY_TENANT : reason);
	rof_tenant_free_pds(t);

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
	if (req.flags || req.quota.reserved)
		return -EINVAL;
	if (!req.quota.inflight || req.quota.inflight > ROF_INFLIGHT_MAX)
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

static long rof_tenant_get_info(void __user *uarg)
{
	struct rof_tenant_info *info;
	struct rof_tenant *t;
	long ret = 0;

	info = kmalloc(sizeof(*info), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	if (copy_from_user(info, uarg, sizeof(*info))) {
		ret = -EFAULT;
		goto out;
	}
	if (info->flags) {
		ret = -EINVAL;
		goto out;
	}
	mutex_lock(&rof_tenants_lock);
	t = xa_load(&rof_tenants, info->id);
	if (t)
		rof_tenant_fill(t, info);
	else
		ret = -ENOENT;
	mutex_unlock(&rof_tenants_lock);
	if (!ret && copy_to_user(uarg, info, sizeof(*info)))
		ret = -EFAULT;
out:
	kfree(info);
	return ret;
}

/* Validate the common LIST header; every LIST command calls it. */
int rof_list_check(const struct rof_list *req, size_t elem_size)
{
	if (req->flags || req->reserved)
		return -EINVAL;
	if (req->elem_size != elem_size)
		return -EINVAL;
	if (req->capacity > ROF_LIST_MAX)
		return -E2BIG;
	return 0;
}

static long rof_tenant_list(void __user *uarg)
{
	struct rof_tenant_info __user *uelems;
	struct rof_tenant_info *info;
	struct rof_list req;
	struct rof_tenant *t;
	unsigned long id;
	u32 n = 0, total = 0;
	long ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = rof_list_check(&req, sizeof(*info));
	if (ret)
		return ret;
	uelems = u64_to_user_ptr(req.elems);

	info = kmalloc(sizeof(*info), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	mutex_lock(&rof_tenants_lock);
	xa_for_each(&rof_tenants, id, t) {
		total++;
		if (n >= req.capacity)
			continue;
		rof_tenant_fill(t, info);
		if (copy_to_user(&uelems[n], info, sizeof(*info))) {
			ret = -EFAULT;
			break;
		}
		n++;
	}
	mutex_unlock(&rof_tenants_lock);
	kfree(info);
	if (ret)
		return ret;

	req.count = n;
	req.total = total;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static long rof_drain(void __user *uarg)
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
	case ROF_IOC_GET_TENANT:
		return rof_tenant_get_info(uarg);
	case ROF_IOC_LIST_TENANTS:
		return rof_tenant_list(uarg);
	case ROF_IOC_DRAIN:
		return rof_drain(uarg);
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
	WARN_ON(!list_empty(&rof_pds));
	xa_destroy(&rof_tenants);
	/* kfree_rcu callbacks of released tenants must run before unload. */
	rcu_barrier();
}
