// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_audit.c - the audit ring.
 *
 * A fixed-size ring of struct rof_audit_record, written from any context
 * (the data path audits from completion handlers) and consumed by one
 * reader, rofd, through an fd from ROF_IOC_AUDIT_OPEN.  When the ring is
 * full the oldest record is overwritten and counted as an overrun; the
 * reader also sees the loss as a gap in seq.  Records written while no
 * reader is open stay in the ring, so a restarted rofd drains what its
 * predecessor left.
 *
 * A quarter of the ring is a reserve that invocation records, the
 * kind one tenant can produce by the million, never take: an INVOKE
 * record that finds ring_size - reserve records pending is dropped and
 * counted (globally and for its tenant) instead of being queued.  Every
 * other kind may fill the whole ring.  So when the ring is full, its
 * newest "reserve" records are all of other kinds, and an error, reject,
 * close or destroy record is only ever overwritten after "reserve" newer
 * ones of those kinds: no flood of invocations can push one out.
 *
 * The same holds for the records anyone who reaches the port can cause:
 * a connect refused before its ticket's MAC vouched for anything (no
 * ticket, bad version, no key, bad MAC).  They never take the reserve,
 * and past ROF_AUDIT_ANON_BURST a second they are dropped; counted
 * either way (rof_audit_log_anon).
 *
 * Not every INVOKE need take the ring (ABI 0.10): its tenant's
 * invoke_records may leave those that end with status 0 unrecorded
 * (errors) or record every Nth of a session (sample:N).  One left out is
 * counted for its tenant and in its session's count (struct
 * rof_audit_skip), without this lock; the session's next record, of any
 * kind, carries the count and resets it under this lock, and so does a
 * ROF_AUDIT_INVOKE_SKIPPED record that the reaper writes once a count has
 * waited a second (rof_audit_flush_skip), so a count reaches the ring
 * within about two seconds, and a session's records up to its close
 * carry every one.  A status-0 INVOKE record dropped for the reserve is
 * added to the count too.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "rof_core.h"

#define ROF_AUDIT_RING_MIN	64
#define ROF_AUDIT_RING_MAX	(1U << 20)
#define ROF_AUDIT_READ_BATCH	16	/* records copied per lock hold */
#define ROF_AUDIT_RESERVE_SHIFT	2	/* reserve: 1/4 of the ring */
#define ROF_AUDIT_ANON_BURST	64	/* unauthenticated rejects audited per second */

static unsigned int audit_ring_size = 4096;
module_param(audit_ring_size, uint, 0444);
MODULE_PARM_DESC(audit_ring_size,
		 "audit ring records (64 .. 1048576, rounded up to a power of 2)");

static unsigned int audit_wake_us = 1000;
module_param(audit_wake_us, uint, 0644);
MODULE_PARM_DESC(audit_wake_us,
		 "wake the audit reader this long after the ring stops being empty (0: at once)");

static struct {
	spinlock_t lock;	/* recs, head, tail, overruns, dropped */
	struct rof_audit_record *recs;
	u32 mask;
	u32 invoke_max;		/* droppable records queue below this many pending */
	u64 head;		/* seq of the next record written */
	u64 tail;		/* seq of the oldest unread record */
	u64 overruns;
	u64 dropped;		/* droppable records not queued */
	u32 wake_at;		/* pending records that wake the reader at once */
	struct hrtimer wake_timer;	/* the reader's coalesced wake-up */
	wait_queue_head_t wq;
	atomic_t reader;	/* 1 while an audit fd is open */
} rof_audit = {
	.lock = __SPIN_LOCK_UNLOCKED(rof_audit.lock),
	.wq = __WAIT_QUEUE_HEAD_INITIALIZER(rof_audit.wq),
};

/* Unauthenticated rejects audited: a burst a second, then dropped. */
static DEFINE_RATELIMIT_STATE(rof_audit_anon_rs, HZ, ROF_AUDIT_ANON_BURST);

static void rof_audit_wake(void)
{
	wake_up_interruptible_poll(&rof_audit.wq, EPOLLIN | EPOLLRDNORM);
}

static enum hrtimer_restart rof_audit_wake_timer(struct hrtimer *t)
{
	rof_audit_wake();
	return HRTIMER_NORESTART;
}

/*
 * Wake the reader only when the ring stops being empty: until it has read
 * everything, read() and poll() see records pending and do not sleep, so
 * a wake-up per record (per INVOKE) would only cost.  And not at once:
 * audit_wake_us later, so that the records of that interval are read in
 * one wake-up, not one each when the reader keeps up (it did: ~1400
 * wake-ups per 3000 INVOKEs).  A ring filling up wakes it at once, far
 * below the reserve, so the delay never costs a record.
 */
static void rof_audit_kick(bool was_empty, u64 pending)
{
	unsigned int us = READ_ONCE(audit_wake_us);

	if (pending == rof_audit.wake_at || (was_empty && !us)) {
		rof_audit_wake();
		return;
	}
	if (was_empty && !hrtimer_active(&rof_audit.wake_timer))
		hrtimer_start(&rof_audit.wake_timer,
			      ns_to_ktime((u64)us * NSEC_PER_USEC),
			      HRTIMER_MODE_REL_SOFT);
}

/*
 * Queue @rec.  A record of a session gives its @skip: the record carries
 * the session's count of INVOKEs with no record (rof_audit_record.skipped),
 * taken under the lock that orders the ring, so the counts follow seq.  A
 * droppable record that is dropped carries nothing: the count waits for
 * the session's next record, and a dropped INVOKE of status 0 adds itself
 * to it.  With @flush (ROF_AUDIT_INVOKE_SKIPPED) a record is written only
 * if there is a count to carry.
 */
static void rof_audit_write(const struct rof_audit_record *rec, bool droppable,
			    struct rof_audit_skip *skip, bool flush)
{
	struct rof_audit_record *slot;
	unsigned long flags;
	bool was_empty;
	u64 pending, skipped = 0;

	spin_lock_irqsave(&rof_audit.lock, flags);
	if (droppable &&
	    rof_audit.head - rof_audit.tail >= rof_audit.invoke_max) {
		if (flush) {
			/* Nothing lost: the count waits for the next record. */
			spin_unlock_irqrestore(&rof_audit.lock, flags);
			return;
		}
		rof_audit.dropped++;
		if (skip && rec->kind == ROF_AUDIT_INVOKE && !rec->status)
			atomic64_inc(&skip->count);
		spin_unlock_irqrestore(&rof_audit.lock, flags);
		/* The tenant's counters stay exact: they count it anyway. */
		rof_tenant_account(rec);
		if (rec->tenant)
			rof_tenant_count_audit_drop(rec->tenant);
		return;
	}
	if (skip) {
		skipped = atomic64_xchg(&skip->count, 0);
		if (flush && !skipped) {
			spin_unlock_irqrestore(&rof_audit.lock, flags);
			return;
		}
		WRITE_ONCE(skip->carried, jiffies);
	}
	if (rof_audit.head - rof_audit.tail > rof_audit.mask) {
		rof_audit.tail++;
		rof_audit.overruns++;
	}
	was_empty = rof_audit.head == rof_audit.tail;
	slot = &rof_audit.recs[rof_audit.head & rof_audit.mask];
	*slot = *rec;
	slot->seq = rof_audit.head++;
	slot->time_ns = ktime_get_real_ns();
	slot->skipped = skipped;
	pending = rof_audit.head - rof_audit.tail;
	spin_unlock_irqrestore(&rof_audit.lock, flags);

	rof_tenant_account(rec);
	rof_audit_kick(was_empty, pending);
}

void rof_audit_log(const struct rof_audit_record *rec)
{
	rof_audit_write(rec, rec->kind == ROF_AUDIT_INVOKE, NULL, false);
}

void rof_audit_log_skip(const struct rof_audit_record *rec,
			struct rof_audit_skip *skip)
{
	rof_audit_write(rec, rec->kind == ROF_AUDIT_INVOKE, skip, false);
}

/*
 * Not the ring's lock, nor its cache lines: the tenant's counters and
 * the session's count only.  The record that carries the count is
 * ordered after this INVOKE's increment by the lock it takes.
 */
void rof_audit_skip_invoke(const struct rof_audit_record *rec,
			   struct rof_audit_skip *skip)
{
	atomic64_inc(&skip->count);
	rof_tenant_account(rec);
}

void rof_audit_flush_skip(u32 tenant, u32 session, struct rof_audit_skip *skip)
{
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_INVOKE_SKIPPED,
		.tenant = tenant,
		.session = session,
	};

	if (!atomic64_read(&skip->count) ||
	    time_before(jiffies, READ_ONCE(skip->carried) + HZ))
		return;
	rof_audit_write(&rec, true, skip, true);
}

void rof_audit_log_anon(const struct rof_audit_record *rec)
{
	unsigned long flags;

	if (!__ratelimit(&rof_audit_anon_rs)) {
		spin_lock_irqsave(&rof_audit.lock, flags);
		rof_audit.dropped++;
		spin_unlock_irqrestore(&rof_audit.lock, flags);
		return;
	}
	rof_audit_write(rec, true, NULL, false);
}

static bool rof_audit_pending(void)
{
	return READ_ONCE(rof_audit.head) != READ_ONCE(rof_audit.tail);
}

static ssize_t rof_audit_read(struct file *file, char __user *buf,
			      size_t len, loff_t *ppos)
{
	struct rof_audit_record *batch;
	size_t want = len / sizeof(*batch);
	size_t done = 0;
	int ret;

	if (!want)
		return -EINVAL;

	batch = kmalloc_array(ROF_AUDIT_READ_BATCH, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;

	while (!rof_audit_pending()) {
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			goto out;
		}
		ret = wait_event_interruptible(rof_audit.wq,
					       rof_audit_pending());
		if (ret)
			goto out;
	}

	while (done < want) {
		unsigned long flags;
		size_t n = 0;

		spin_lock_irqsave(&rof_audit.lock, flags);
		while (n < ROF_AUDIT_READ_BATCH && done + n < want &&
		       rof_audit.tail != rof_audit.head) {
			batch[n++] = rof_audit.recs[rof_audit.tail &
						    rof_audit.mask];
			rof_audit.tail++;
		}
		spin_unlock_irqrestore(&rof_audit.lock, flags);
		if (!n)
			break;
		/*
		 * Records already taken off the ring are lost on a fault;
		 * the next record's seq shows the gap.
		 */
		if (copy_to_user(buf + done * sizeof(*batch), batch,
				 n * sizeof(*batch))) {
			ret = done ? 0 : -EFAULT;
			goto out;
		}
		done += n;
	}
	ret = 0;
out:
	kfree(batch);
	return done ? done * sizeof(*batch) : ret;
}

static __poll_t rof_audit_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &rof_audit.wq, wait);
	return rof_audit_pending() ? EPOLLIN | EPOLLRDNORM : 0;
}

static int rof_audit_release(struct inode *inode, struct file *file)
{
	atomic_set(&rof_audit.reader, 0);
	return 0;
}

static const struct file_operations rof_audit_fops = {
	.owner		= THIS_MODULE,
	.read		= rof_audit_read,
	.poll		= rof_audit_poll,
	.release	= rof_audit_release,
	.llseek		= noop_llseek,
};

static long rof_audit_open(void __user *uarg)
{
	struct rof_audit_open req;
	struct file *f;
	int fd, ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_AUDIT_NONBLOCK || req.reserved)
		return -EINVAL;
	if (atomic_cmpxchg(&rof_audit.reader, 0, 1))
		return -EBUSY;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_reader;
	}
	f = anon_inode_getfile("[rof-audit]", &rof_audit_fops, NULL,
			       O_RDONLY | (req.flags & ROF_AUDIT_NONBLOCK ?
					   O_NONBLOCK : 0));
	if (IS_ERR(f)) {
		ret = PTR_ERR(f);
		goto err_fd;
	}
	req.fd = fd;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		ret = -EFAULT;
		goto err_file;
	}
	/* Nothing can fail any more: publish the fd. */
	fd_install(fd, f);
	return 0;

err_file:
	fput(f);	/* its release clears the reader flag */
	put_unused_fd(fd);
	return ret;
err_fd:
	put_unused_fd(fd);
err_reader:
	atomic_set(&rof_audit.reader, 0);
	return ret;
}

static long rof_audit_stats(void __user *uarg)
{
	struct rof_audit_stats st;
	unsigned long flags;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return -EFAULT;
	if (st.flags || st.reserved || st.reserved2)
		return -EINVAL;
	spin_lock_irqsave(&rof_audit.lock, flags);
	st.next_seq = rof_audit.head;
	st.overruns = rof_audit.overruns;
	st.pending = rof_audit.head - rof_audit.tail;
	st.dropped = rof_audit.dropped;
	spin_unlock_irqrestore(&rof_audit.lock, flags);
	st.ring_size = rof_audit.mask + 1;
	st.reserve = st.ring_size - rof_audit.invoke_max;
	if (copy_to_user(uarg, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

long rof_audit_ioctl(unsigned int cmd, void __user *uarg)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	switch (cmd) {
	case ROF_IOC_AUDIT_OPEN:
		return rof_audit_open(uarg);
	case ROF_IOC_AUDIT_STATS:
		return rof_audit_stats(uarg);
	default:
		return -ENOTTY;
	}
}

int rof_audit_init(void)
{
	unsigned int n = audit_ring_size;

	if (n < ROF_AUDIT_RING_MIN || n > ROF_AUDIT_RING_MAX) {
		pr_err("audit_ring_size=%u outside %u .. %u\n", n,
		       ROF_AUDIT_RING_MIN, ROF_AUDIT_RING_MAX);
		return -EINVAL;
	}
	n = roundup_pow_of_two(n);
	rof_audit.recs = kvcalloc(n, sizeof(*rof_audit.recs), GFP_KERNEL);
	if (!rof_audit.recs)
		return -ENOMEM;
	rof_audit.mask = n - 1;
	rof_audit.invoke_max = n - (n >> ROF_AUDIT_RESERVE_SHIFT);
	/* An eighth of the ring, a sixth of what invocations may fill. */
	rof_audit.wake_at = n >> 3;
	hrtimer_init(&rof_audit.wake_timer, CLOCK_MONOTONIC,
		     HRTIMER_MODE_REL_SOFT);
	rof_audit.wake_timer.function = rof_audit_wake_timer;
	rof_audit.head = 1;
	rof_audit.tail = 1;
	/* Counted in ->dropped: no "callbacks suppressed" in the log. */
	ratelimit_set_flags(&rof_audit_anon_rs, RATELIMIT_MSG_ON_RELEASE);
	return 0;
}

void rof_audit_exit(void)
{
	hrtimer_cancel(&rof_audit.wake_timer);
	kvfree(rof_audit.recs);
	rof_audit.recs = NULL;
}
