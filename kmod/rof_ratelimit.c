// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_ratelimit.c - the per-tenant aggregate token buckets.
 *
 * Session buckets live in their session and are only touched by its poll
 * work; a tenant's bucket is shared by all its sessions, so it has a
 * spinlock.  An entry exists while a rate is set or a session uses it,
 * so setting a rate before or after sessions connect both work.  It is
 * keyed by the tenant object, not its id, and holds a reference on it:
 * tenant ids can be reused, and a new tenant must not inherit the limit
 * of a destroyed one.  Entries of destroyed tenants are pruned whenever
 * the list is searched.  The arithmetic is rof_bucket.h's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "rof_core.h"
#include "rof_bucket.h"

struct rof_tenant_rl {
	struct list_head node;		/* on rof_trl_list */
	struct rof_tenant *tenant;	/* +1 reference */
	unsigned int users;		/* sessions; under rof_trl_mutex */
	spinlock_t lock;		/* the buckets and rate */
	bool limited;			/* a rate is set; written under ->lock */
	struct rof_rate rate;
	struct rof_bucket ops;
	struct rof_bucket bytes;
};

static LIST_HEAD(rof_trl_list);
static DEFINE_MUTEX(rof_trl_mutex);

static void rof_trl_free(struct rof_tenant_rl *rl)
{
	list_del(&rl->node);
	rof_tenant_put(rl->tenant);
	kfree(rl);
}

/* True when the tenant of @rl is gone or going (its id may be reused). */
static bool rof_trl_stale(struct rof_tenant_rl *rl)
{
	struct rof_tenant *t = rof_tenant_get(rof_tenant_id(rl->tenant));

	if (t)
		rof_tenant_put(t);
	return t != rl->tenant;
}

static struct rof_tenant_rl *rof_trl_find_or_add(struct rof_tenant *t)
{
	struct rof_tenant_rl *rl, *tmp, *found = NULL;

	lockdep_assert_held(&rof_trl_mutex);
	list_for_each_entry_safe(rl, tmp, &rof_trl_list, node) {
		if (rl->tenant == t)
			found = rl;
		else if (!rl->users && rof_trl_stale(rl))
			rof_trl_free(rl);
	}
	if (found)
		return found;
	rl = kzalloc(sizeof(*rl), GFP_KERNEL);
	if (!rl)
		return NULL;
	rl->tenant = rof_tenant_get(rof_tenant_id(t));
	if (rl->tenant != t) {
		/* @t is being destroyed: nothing to limit. */
		if (rl->tenant)
			rof_tenant_put(rl->tenant);
		kfree(rl);
		return NULL;
	}
	spin_lock_init(&rl->lock);
	list_add(&rl->node, &rof_trl_list);
	return rl;
}

static void rof_trl_maybe_free(struct rof_tenant_rl *rl)
{
	lockdep_assert_held(&rof_trl_mutex);
	if (rl->users || rl->rate.ops_per_sec || rl->rate.bytes_per_sec)
		return;
	rof_trl_free(rl);
}

static void rof_trl_set(struct rof_tenant_rl *rl, const struct rof_rate *rate)
{
	u64 now = ktime_get_ns();

	spin_lock_bh(&rl->lock);
	rl->rate = *rate;
	rof_bucket_init(&rl->ops, rate->ops_per_sec, 1, now);
	/* Any session's request and response: none charged less than its size. */
	rof_bucket_init(&rl->bytes, rate->bytes_per_sec, 2 * ROF_MSG_SIZE_MAX,
			now);
	WRITE_ONCE(rl->limited, rate->ops_per_sec || rate->bytes_per_sec);
	spin_unlock_bh(&rl->lock);
}

struct rof_tenant_rl *rof_trl_get(struct rof_tenant *t)
{
	struct rof_tenant_rl *rl;

	mutex_lock(&rof_trl_mutex);
	rl = rof_trl_find_or_add(t);
	if (rl)
		rl->users++;
	mutex_unlock(&rof_trl_mutex);
	return rl;
}

void rof_trl_put(struct rof_tenant_rl *rl)
{
	if (!rl)
		return;
	mutex_lock(&rof_trl_mutex);
	rl->users--;
	rof_trl_maybe_free(rl);
	mutex_unlock(&rof_trl_mutex);
}

u64 rof_trl_admit(struct rof_tenant_rl *rl, u64 bytes, u64 now_ns)
{
	u64 wait, w;

	/*
	 * An unlimited tenant (the common case) costs no lock: every session
	 * of the tenant would otherwise take it for every request.  A rate set
	 * meanwhile applies from the next request on.
	 */
	if (!READ_ONCE(rl->limited))
		return 0;
	spin_lock_bh(&rl->lock);
	rof_bucket_refill(&rl->ops, now_ns);
	rof_bucket_refill(&rl->bytes, now_ns);
	wait = rof_bucket_wait_ns(&rl->ops, 1);
	w = rof_bucket_wait_ns(&rl->bytes, bytes);
	if (w > wait)
		wait = w;
	if (!wait) {
		rof_bucket_take(&rl->ops, 1);
		rof_bucket_take(&rl->bytes, bytes);
	}
	spin_unlock_bh(&rl->lock);
	return wait;
}

void rof_trl_unadmit(struct rof_tenant_rl *rl, u64 bytes)
{
	if (!READ_ONCE(rl->limited))
		return;
	spin_lock_bh(&rl->lock);
	rof_bucket_untake(&rl->ops, 1);
	rof_bucket_untake(&rl->bytes, bytes);
	spin_unlock_bh(&rl->lock);
}

void rof_trl_charge(struct rof_tenant_rl *rl, u64 bytes)
{
	if (!READ_ONCE(rl->limited))
		return;
	spin_lock_bh(&rl->lock);
	rof_bucket_charge(&rl->bytes, bytes);
	spin_unlock_bh(&rl->lock);
}

int rof_rate_check(const struct rof_rate *rate)
{
	if (rate->ops_per_sec > ROF_RATE_MAX || rate->bytes_per_sec > ROF_RATE_MAX)
		return -ERANGE;
	return 0;
}

long rof_tenant_set_rate(void __user *uarg)
{
	struct rof_tenant_rate req;
	struct rof_tenant_rl *rl;
	struct rof_tenant *t;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EINVAL;
	ret = rof_rate_check(&req.rate);
	if (ret)
		return ret;
	t = rof_tenant_get(req.tenant);
	if (!t)
		return -ENOENT;

	mutex_lock(&rof_trl_mutex);
	rl = rof_trl_find_or_add(t);
	if (rl) {
		rof_trl_set(rl, &req.rate);
		rof_trl_maybe_free(rl);
	}
	mutex_unlock(&rof_trl_mutex);
	rof_tenant_put(t);
	return rl ? 0 : -ENOMEM;
}

void rof_trl_exit(void)
{
	struct rof_tenant_rl *rl, *tmp;

	/* Sessions are gone by now: only entries holding a rate remain. */
	mutex_lock(&rof_trl_mutex);
	list_for_each_entry_safe(rl, tmp, &rof_trl_list, node) {
		WARN_ON_ONCE(rl->users);
		rof_trl_free(rl);
	}
	mutex_unlock(&rof_trl_mutex);
}
