// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_attach.c - attachment sets: the one attach/detach/revoke mechanism
 * of regions and tenants.  The rules are at struct rof_attach_set
 * (rof_core.h).
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/wait.h>

#include "rof_core.h"

void rof_attach_set_init(struct rof_attach_set *set)
{
	spin_lock_init(&set->lock);
	set->closed = false;
	set->count = 0;
	INIT_LIST_HEAD(&set->attached);
	INIT_LIST_HEAD(&set->revoked);
	set->revoking = NULL;
	set->revoker = NULL;
	mutex_init(&set->revoke_lock);
	init_waitqueue_head(&set->wq);
}

int rof_attach(struct rof_attach_set *set, struct rof_attach *a)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&set->lock, flags);
	if (set->closed) {
		ret = -ENOENT;
	} else {
		list_add_tail(&a->node, &set->attached);
		WRITE_ONCE(set->count, set->count + 1);
	}
	spin_unlock_irqrestore(&set->lock, flags);
	return ret;
}

/*
 * Waits (process context) only if a revoke is calling @a->revoke right
 * now from another task; ->revoke itself may call detach.  The last
 * detach from a closed set wakes rof_attach_wait_empty.
 */
void rof_detach(struct rof_attach_set *set, struct rof_attach *a)
{
	unsigned long flags;
	bool wake;

	spin_lock_irqsave(&set->lock, flags);
	while (set->revoking == a && set->revoker != current) {
		spin_unlock_irqrestore(&set->lock, flags);
		wait_event(set->wq, READ_ONCE(set->revoking) != a);
		spin_lock_irqsave(&set->lock, flags);
	}
	list_del_init(&a->node);
	WRITE_ONCE(set->count, set->count - 1);
	wake = set->closed && !set->count;
	spin_unlock_irqrestore(&set->lock, flags);
	if (wake)
		wake_up_all(&set->wq);
}

int rof_attach_close(struct rof_attach_set *set, bool force,
		     unsigned int *count)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&set->lock, flags);
	if (set->count && !force)
		ret = -EBUSY;
	else
		set->closed = true;
	if (count)
		*count = set->count;
	spin_unlock_irqrestore(&set->lock, flags);
	return ret;
}

unsigned int rof_attach_count(struct rof_attach_set *set)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&set->lock, flags);
	n = set->count;
	spin_unlock_irqrestore(&set->lock, flags);
	return n;
}

/*
 * Call ->revoke for every attachment, one at a time, without the spinlock.
 * Two revokers of one set may run at once (TENANT_DESTROY and TENANT_DRAIN):
 * revoke_lock keeps them from overwriting each other's ->revoking, which
 * rof_detach relies on to keep @a alive during its ->revoke.
 */
void rof_attach_revoke_all(struct rof_attach_set *set, const char *why)
{
	unsigned long flags;
	struct rof_attach *a;

	mutex_lock(&set->revoke_lock);
	for (;;) {
		spin_lock_irqsave(&set->lock, flags);
		a = list_first_entry_or_null(&set->attached, struct rof_attach,
					     node);
		if (a) {
			list_move_tail(&a->node, &set->revoked);
			set->revoking = a;
			set->revoker = current;
		}
		spin_unlock_irqrestore(&set->lock, flags);
		if (!a)
			break;

		a->revoke(a, why);

		spin_lock_irqsave(&set->lock, flags);
		set->revoking = NULL;
		set->revoker = NULL;
		spin_unlock_irqrestore(&set->lock, flags);
		wake_up_all(&set->wq);
	}
	mutex_unlock(&set->revoke_lock);
}

int rof_attach_wait_empty(struct rof_attach_set *set)
{
	if (wait_event_killable(set->wq, !READ_ONCE(set->count)))
		return -EINTR;
	return 0;
}
