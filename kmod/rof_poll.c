// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_poll.c - the polling core: CPUs dedicated to the data path.
 *
 * With poll_cpus set (a CPU list, read at load), a kernel thread bound to
 * each listed CPU that is online then (rof-poll/N) serves the sessions
 * assigned to it: it busy-polls their CQs and answers their requests
 * through the same code as the softirq (rof_dp_poll_turn: the same claim
 * of the data path, bounds, rate limits and audit), one bounded turn per
 * session in a round robin.  What the softirq leaves to the poll work (a
 * long program, a scratch to grow), the thread does too (ROF_SF_DEFERRED):
 * one flooding session's programs do not hold up the thread's other
 * sessions.  A session is assigned at connect, to the thread with the
 * fewest sessions, and stays with it.
 *
 * After poll_idle_us with no work on any of its sessions, or sooner when
 * another task wants its CPU (need_resched) and it has nothing to do, a
 * thread re-arms their CQs, looks once more (a completion may have come
 * before the arm), and sleeps; a completion event (rof_cq_comp) or a kick
 * (rof_kick: the throttle work, the welcome work) wakes it.  An idle host
 * burns nothing.  Whenever a thread is not polling (after such a yield,
 * asleep, or preempted: no pass for ROF_POLL_STALE_NS), its sessions'
 * completions are also served in their softirq, as on the event path (a
 * handoff: the same claim of the data path arbitrates).  Without
 * poll_cpus there are no threads: sessions are served from their
 * completion's softirq and the poll work.
 *
 * Lifetimes: a session is on its thread's list from its connection's
 * build until its teardown (rof_conn_release) or close work, which take it
 * off and wait until the thread's turn on it, if one is under way, is
 * over (->cur); after that the thread never touches it again.  The
 * threads stop at unload, once every session is gone.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "rof_session.h"

static char *poll_cpus = "";
module_param(poll_cpus, charp, 0444);
MODULE_PARM_DESC(poll_cpus, "CPUs whose polling threads serve the sessions, a CPU list (empty: completion events only); read at load");

static uint poll_idle_us = 1000;
module_param(poll_idle_us, uint, 0644);
MODULE_PARM_DESC(poll_idle_us, "a polling thread with no work this long re-arms its CQs and sleeps");

#define ROF_PT_WOKEN	0	/* pt->woken: a wake-up since the thread last looked */

struct rof_poller {
	struct task_struct *task;
	unsigned int cpu;
	spinlock_t lock;		/* sessions, nsess, cur */
	struct list_head sessions;	/* rof_session.poll_node */
	u32 nsess;
	struct rof_session *cur;	/* the session of the turn under way */
	unsigned long woken;
	/* Counters (debugfs rof/poll); written by the thread only. */
	u64 passes;
	u64 busy_passes;
	u64 polls;
	u64 requests;
	u64 sleeps;
	u64 yields;			/* idle before poll_idle_us, CPU wanted */
	atomic64_t wakes;		/* wake-ups sent to it */
	atomic64_t handoffs;		/* completions its softirq served */
	u64 pass_ns;			/* local_clock() at its last pass; 0 yielded */
};

/*
 * A thread with no pass for this long is not polling now (asleep, or
 * preempted: it waits for its turn of the CPU), nor one that yielded its
 * CPU (pass_ns 0): its sessions' completions are served in their softirq
 * meanwhile (rof_poll_handoff).  Many times a pass over one session, even
 * under emulation.
 */
#define ROF_POLL_STALE_NS	(100 * NSEC_PER_USEC)

static struct rof_poller *rof_pollers;
static unsigned int rof_npollers;
static DEFINE_MUTEX(rof_poll_assign);	/* one assignment at a time */

/* Any context (rof_cq_comp may run in hard IRQ): the thread looks again. */
void rof_poll_wake(struct rof_poller *pt)
{
	if (!test_and_set_bit(ROF_PT_WOKEN, &pt->woken)) {
		atomic64_inc(&pt->wakes);
		wake_up_process(pt->task);
	}
}

/*
 * A completion event of a session of @pt's at @now (local_clock()), about
 * to be served in its softirq if this returns true: the thread is not
 * polling now, so the request would wait for its next turn of the CPU.
 * It gave the CPU up to another task (rof_poll_fn), or made no pass for
 * ROF_POLL_STALE_NS: asleep, or preempted.  Counted.  Another CPU's clock
 * may be a little behind the thread's: a pass "after" @now is recent.
 */
bool rof_poll_handoff(struct rof_poller *pt, u64 now)
{
	if ((s64)(now - READ_ONCE(pt->pass_ns)) < (s64)ROF_POLL_STALE_NS)
		return false;
	atomic64_inc(&pt->handoffs);
	return true;
}

/*
 * A new connection of @s, its CQ just created (no completion yet): to the
 * thread with the fewest sessions.  Nothing without polling threads.
 */
void rof_poll_attach(struct rof_session *s)
{
	struct rof_poller *best = NULL;
	unsigned int i;

	if (!rof_npollers || !list_empty(&s->poll_node))
		return;
	mutex_lock(&rof_poll_assign);
	for (i = 0; i < rof_npollers; i++)
		if (!best || READ_ONCE(rof_pollers[i].nsess) < READ_ONCE(best->nsess))
			best = &rof_pollers[i];
	spin_lock(&best->lock);
	list_add_tail(&s->poll_node, &best->sessions);
	best->nsess++;
	spin_unlock(&best->lock);
	WRITE_ONCE(s->poller, best);
	mutex_unlock(&rof_poll_assign);
}

/*
 * Take @s off its thread and wait until the thread's turn on it, if one is
 * under way, is over: no turn starts on it after that.  Process context;
 * before its QP and CQ go.  s->poller stays: a late completion event or
 * kick wakes the thread for nothing, and never queues the poll work.
 */
void rof_poll_detach(struct rof_session *s)
{
	struct rof_poller *pt = s->poller;

	if (!pt)
		return;
	spin_lock(&pt->lock);
	if (!list_empty(&s->poll_node)) {
		list_del_init(&s->poll_node);
		pt->nsess--;
	}
	while (pt->cur == s) {
		spin_unlock(&pt->lock);
		usleep_range(20, 50);
		spin_lock(&pt->lock);
	}
	spin_unlock(&pt->lock);
}

/*
 * One pass: a turn for each session on the list, the first moved to the
 * end each time (a round robin that survives sessions coming and going).
 * Returns true when one found work.
 */
static bool rof_poll_pass(struct rof_poller *pt)
{
	struct rof_poll_tally t = {};
	bool busy = false;
	u32 i, n = READ_ONCE(pt->nsess);

	for (i = 0; i < n; i++) {
		struct rof_session *s;

		spin_lock(&pt->lock);
		if (list_empty(&pt->sessions)) {
			spin_unlock(&pt->lock);
			break;
		}
		s = list_first_entry(&pt->sessions, struct rof_session,
				     poll_node);
		list_move_tail(&s->poll_node, &pt->sessions);
		pt->cur = s;
		spin_unlock(&pt->lock);

		if (rof_dp_poll_turn(s, &t))
			busy = true;

		spin_lock(&pt->lock);	/* every access to @s before */
		pt->cur = NULL;
		spin_unlock(&pt->lock);
	}
	WRITE_ONCE(pt->passes, pt->passes + 1);
	WRITE_ONCE(pt->busy_passes, pt->busy_passes + busy);
	WRITE_ONCE(pt->polls, pt->polls + t.polls);
	WRITE_ONCE(pt->requests, pt->requests + t.requests);
	return busy;
}

/*
 * Before sleeping: re-arm the CQ of every open session (rof_dp_poll_arm).
 * Returns true when a completion came before an arm, or a session's data
 * path was owned elsewhere: then the thread must not sleep yet.
 */
static bool rof_poll_arm(struct rof_poller *pt)
{
	struct rof_session *s;
	bool missed = false;

	spin_lock(&pt->lock);
	list_for_each_entry(s, &pt->sessions, poll_node)
		if (rof_dp_poll_arm(s))
			missed = true;
	spin_unlock(&pt->lock);
	return missed;
}

static int rof_poll_fn(void *arg)
{
	struct rof_poller *pt = arg;
	u64 idle_since = local_clock();

	while (!kthread_should_stop()) {
		u64 now = local_clock();

		WRITE_ONCE(pt->pass_ns, now);
		if (rof_poll_pass(pt)) {
			idle_since = local_clock();
			cond_resched();
			continue;
		}
		if (now - idle_since <
		    (u64)READ_ONCE(poll_idle_us) * NSEC_PER_USEC) {
			if (!need_resched()) {
				cpu_relax();
				continue;
			}
			/*
			 * Another task wants the CPU while we have nothing
			 * to do: give it up now, not spin out our share as
			 * a CPU hog and have the next request wait for our
			 * next turn of the scheduler.  Until we run again,
			 * the completions' softirq serves our sessions, as
			 * on the event path (rof_cq_comp).
			 */
			WRITE_ONCE(pt->yields, pt->yields + 1);
			WRITE_ONCE(pt->pass_ns, 0);	/* until the next pass */
		}
		/*
		 * Idle: forget the wake-ups so far, arm, and look once more,
		 * so that neither a completion before the arm nor a kick
		 * before the clear is lost; anything after wakes us.
		 */
		clear_bit(ROF_PT_WOKEN, &pt->woken);
		smp_mb__after_atomic();	/* WOKEN clear before the CQs are read */
		if (rof_poll_arm(pt) || rof_poll_pass(pt)) {
			idle_since = local_clock();
			continue;
		}
		set_current_state(TASK_INTERRUPTIBLE);
		if (!test_bit(ROF_PT_WOKEN, &pt->woken) &&
		    !kthread_should_stop()) {
			WRITE_ONCE(pt->sleeps, pt->sleeps + 1);
			schedule();
		}
		__set_current_state(TASK_RUNNING);
		idle_since = local_clock();
	}
	return 0;
}

static void rof_poll_stop(void)
{
	unsigned int i;

	for (i = 0; i < rof_npollers; i++)
		kthread_stop(rof_pollers[i].task);
	kfree(rof_pollers);
	rof_pollers = NULL;
	rof_npollers = 0;
}

/* Before the listener: no session exists yet. */
int rof_poll_init(void)
{
	cpumask_var_t mask;
	unsigned int cpu, n;
	int ret;

	if (!poll_cpus || !*poll_cpus)
		return 0;
	if (!zalloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = cpulist_parse(poll_cpus, mask);
	if (ret) {
		pr_err("poll_cpus=%s: not a CPU list\n", poll_cpus);
		goto out;
	}
	cpumask_and(mask, mask, cpu_online_mask);
	n = cpumask_weight(mask);
	if (!n) {
		pr_warn("poll_cpus=%s: no online CPU, completion events only\n",
			poll_cpus);
		goto out;
	}
	rof_pollers = kcalloc(n, sizeof(*rof_pollers), GFP_KERNEL);
	if (!rof_pollers) {
		ret = -ENOMEM;
		goto out;
	}
	for_each_cpu(cpu, mask) {
		struct rof_poller *pt = &rof_pollers[rof_npollers];

		pt->cpu = cpu;
		spin_lock_init(&pt->lock);
		INIT_LIST_HEAD(&pt->sessions);
		atomic64_set(&pt->wakes, 0);
		pt->task = kthread_create(rof_poll_fn, pt, "rof-poll/%u", cpu);
		if (IS_ERR(pt->task)) {
			ret = PTR_ERR(pt->task);
			rof_poll_stop();
			goto out;
		}
		kthread_bind(pt->task, cpu);
		rof_npollers++;
	}
	for (n = 0; n < rof_npollers; n++)
		wake_up_process(rof_pollers[n].task);
	pr_info("%u polling thread(s) on CPUs %*pbl\n", rof_npollers,
		cpumask_pr_args(mask));
out:
	free_cpumask_var(mask);
	return ret;
}

/* After every session is gone. */
void rof_poll_exit(void)
{
	rof_poll_stop();
}

/*
 * debugfs rof/poll: one line per polling thread.  Not ABI.  busy_passes
 * are the passes that found work; wakes the wake-ups sent to the thread
 * (at most one per sleep is more than a flag).
 */
static int rof_poll_show(struct seq_file *m, void *v)
{
	unsigned int i;

	seq_printf(m, "threads %u idle_us %u\n", rof_npollers,
		   READ_ONCE(poll_idle_us));
	for (i = 0; i < rof_npollers; i++) {
		struct rof_poller *pt = &rof_pollers[i];

		seq_printf(m, "cpu %u sessions %u passes %llu busy_passes %llu polls %llu requests %llu sleeps %llu yields %llu wakes %lld handoffs %lld\n",
			   pt->cpu, READ_ONCE(pt->nsess), READ_ONCE(pt->passes),
			   READ_ONCE(pt->busy_passes), READ_ONCE(pt->polls),
			   READ_ONCE(pt->requests), READ_ONCE(pt->sleeps),
			   READ_ONCE(pt->yields),
			   (long long)atomic64_read(&pt->wakes),
			   (long long)atomic64_read(&pt->handoffs));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rof_poll);

void rof_poll_debugfs(struct dentry *dir)
{
	debugfs_create_file("poll", 0400, dir, NULL, &rof_poll_fops);
}
