// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_prog.c - offload programs inside the module: load, unload, list,
 * and their runs on INVOKE requests.
 *
 * rofd verifies an image (libclient/prog) and loads it with the budget the
 * verifier proved; the module re-checks only what is cheap and what it
 * alone knows: the structure (rof_exec_check_image), its own limits, and
 * the slot bindings against the tenant's regions and free lists.  The
 * executor (rof_exec.c) enforces bounds, access and the budget at run
 * time, so a verifier bug becomes an error status, never a stray access.
 *
 * A program belongs to its tenant, not to a process: it is named by
 * (tenant, tag), holds a tenant reference and is attached to the tenant
 * (a forced tenant destroy or a drain unloads it) and to each bound
 * region (a forced region destroy revokes it: its runs answer
 * ROF_ST_PROG_REVOKED from then on, and it lets go of the region).
 *
 * Lifetimes: rof_progs (a hash table under rof_progs_lock, read under
 * RCU) holds one reference from load to unload; a run holds its own.
 * rof_prog_ids indexes the same programs by an id of their own, under
 * rof_progs_lock too, for PROG_LIST paging (ROF_LIST_FROM): it holds no
 * reference, a program is on both or on neither.
 * Before a program lets go of its regions it is stopped: ->stopped is
 * set and the runs under way (->active) are waited for, so no run ever
 * touches a region the program no longer holds.
 *
 * PROG_REPLACE swaps a new program in for an old one in one step under
 * rof_progs_lock: the new one is linked, the old one unlinked, and the
 * old one's own tag and the tags it served for become aliases of the new
 * one (struct rof_prog_alias, on rof_prog_aliases, owned by the program
 * they name), which INVOKE follows and nothing else does.  Then the old
 * one is stopped and let go as an unload would, but its quota charge
 * stays: the new one took it over (->charged).  For each (tenant, tag)
 * there is at most one entry, an own tag or an alias; rof_progs_seq
 * counts the swaps and loads that move a tag between the two tables, so
 * that an INVOKE that missed both while one ran looks again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "rof_core.h"
#include "rof_exec.h"

static ulong prog_max_budget = 1000000;
module_param(prog_max_budget, ulong, 0644);
MODULE_PARM_DESC(prog_max_budget, "largest instruction budget a program may be loaded with");

static ulong prog_max_bytes = 16UL << 20;
module_param(prog_max_bytes, ulong, 0644);
MODULE_PARM_DESC(prog_max_bytes, "largest byte budget (COPY/CRC64/HASH bytes per run)");

/* The verifier's default max_scratch: anything it accepts by default loads. */
static uint prog_scratch_max = 65536 + 4096;
module_param(prog_scratch_max, uint, 0644);
MODULE_PARM_DESC(prog_scratch_max, "largest scratch_size a program may declare (bytes per session)");

#define ROF_PROG_HASH_BITS	8
#define ROF_PROG_LOCK_BITS	6

/* Bit of rof_prog_slot.held: the region attachment and references. */
#define ROF_SLOT_HELD		0

struct rof_prog;

/*
 * A tag a program answers INVOKEs for besides its own: that of a program
 * it replaced, or one such a program served for.  On rof_prog_aliases
 * and on its program's ->aliases, both under rof_progs_lock; read under
 * RCU.  A replace moves it on (->p changes), an unload of ->p frees it.
 * Past ROF_PROG_ALIASES_MAX the one an INVOKE named longest ago goes
 * (->used), so a client that keeps invoking an old tag keeps it through
 * any number of replaces.
 */
struct rof_prog_alias {
	struct hlist_node hnode;	/* on rof_prog_aliases */
	struct list_head node;		/* on ->p's ->aliases, oldest first */
	struct rof_prog __rcu *p;
	const struct rof_tenant *tenant;	/* ->p's: compared, never used */
	u64 tag;
	unsigned long used;		/* jiffies: made, or last INVOKEd */
	struct rcu_head rcu;
};

struct rof_prog_slot {
	struct rof_prog *p;
	struct rof_region *region;	/* a reference while HELD */
	struct rof_freelist *fl;	/* a reference while HELD, or NULL */
	struct rof_attach att;
	unsigned long held;
	u32 region_id;
	u32 freelist_id;
};

struct rof_prog {
	struct kref ref;
	struct rcu_head rcu;
	struct hlist_node hnode;	/* on rof_progs while ->linked */
	bool linked;			/* rof_progs_lock */
	u32 id;				/* on rof_prog_ids while ->linked */
	struct rof_tenant *tenant;	/* holds a reference */
	u32 tenant_id;
	u64 tag;
	char name[ROF_NAME_MAX];
	void *image;			/* the whole image, kvmalloc'd */
	const struct rof_isa_hdr *hdr;	/* into ->image */
	const struct rof_insn *insns;	/* into ->image */
	struct rof_exec_op *code;	/* ->insns decoded, kvmalloc'd */
	u64 budget;
	u64 byte_budget;
	u64 loaded_ns;
	u32 nslots;
	struct rof_prog_slot slots[ROF_ISA_MAX_SLOTS];
	struct rof_exec_region xr[ROF_ISA_MAX_SLOTS];

	struct list_head aliases;	/* rof_prog_alias.node; rof_progs_lock */
	u32 naliases;			/* written under rof_progs_lock */
	bool charged;			/* holds one of the tenant's program quota */
	bool replaced;			/* unlinked by a replace; before ->stopped */

	bool stopped;			/* no run starts any more */
	bool revoked;			/* ... because a region was destroyed */
	atomic_t active;		/* runs under way */
	wait_queue_head_t idle_wq;	/* woken when ->active drops to 0 */

	struct rof_attach tatt;
	bool tattached;

	atomic64_t invocations;
	atomic64_t faults;
	atomic64_t insns_run;
};

/* A session's scratch: kept across its runs, grown on demand, zeroed new. */
struct rof_prog_scratch {
	u32 size;
	u8 data[];
};

static DEFINE_HASHTABLE(rof_progs, ROF_PROG_HASH_BITS);
static DEFINE_HASHTABLE(rof_prog_aliases, ROF_PROG_HASH_BITS);
/* Ids go round (xa_alloc_cyclic), so a page boundary rarely sees reuse. */
static DEFINE_XARRAY_ALLOC1(rof_prog_ids);
static u32 rof_prog_next_id;
static DEFINE_MUTEX(rof_progs_lock);
/*
 * Write sections (under rof_progs_lock, preemption off): a load or a
 * replace linking a program and moving tags between own and alias.
 * INVOKE reads it with raw_seqcount_begin, never waiting for a writer
 * (it may run in softirq on the writer's CPU): a write section under way
 * makes its check fail and it looks again (rof_prog_enter).
 */
static seqcount_mutex_t rof_progs_seq =
	SEQCNT_MUTEX_ZERO(rof_progs_seq, &rof_progs_lock);

/*
 * Wide CAS is atomic only against wide CAS on the same region
 * (docs/isa.md section 5): a stripe of locks, by region id, gives that
 * to every program bound to the region without a field in it.
 */
static struct rof_exec_lock rof_prog_locks[1 << ROF_PROG_LOCK_BITS];

static u32 rof_prog_key(u32 tenant, u64 tag)
{
	return hash_64(tag ^ ((u64)tenant << 32), 32);
}

/* call_rcu, not kfree_rcu: rcu_barrier() waits for it (debugfs quiesce). */
static void rof_prog_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rof_prog, rcu));
}

static void rof_prog_release(struct kref *ref)
{
	struct rof_prog *p = container_of(ref, struct rof_prog, ref);

	kvfree(p->code);
	kvfree(p->image);
	rof_tenant_put(p->tenant);
	call_rcu(&p->rcu, rof_prog_free_rcu);
}

static void rof_prog_put(struct rof_prog *p)
{
	kref_put(&p->ref, rof_prog_release);
}

/* No run starts after this returns, and none is under way. */
static void rof_prog_stop(struct rof_prog *p)
{
	/* ->revoked, ->replaced before ->stopped; pairs with rof_prog_enter */
	smp_wmb();
	WRITE_ONCE(p->stopped, true);
	smp_mb();	/* ->stopped before ->active; pairs with rof_prog_enter */
	wait_event(p->idle_wq, !atomic_read(&p->active));
}

/* ---- aliases (under rof_progs_lock) ------------------------------------ */

static struct rof_prog *rof_prog_alias_target(struct rof_prog_alias *a)
{
	return rcu_dereference_protected(a->p,
					 lockdep_is_held(&rof_progs_lock));
}

/* The linked program (@t, @tag) by its own tag, or NULL. */
static struct rof_prog *rof_prog_find(struct rof_tenant *t, u64 tag)
{
	u32 tid = rof_tenant_id(t);
	struct rof_prog *p;

	lockdep_assert_held(&rof_progs_lock);
	hash_for_each_possible(rof_progs, p, hnode, rof_prog_key(tid, tag))
		if (p->tenant == t && p->tag == tag)
			return p;
	return NULL;
}

static struct rof_prog_alias *rof_prog_alias_find(struct rof_tenant *t,
						  u64 tag)
{
	u32 tid = rof_tenant_id(t);
	struct rof_prog_alias *a;

	lockdep_assert_held(&rof_progs_lock);
	hash_for_each_possible(rof_prog_aliases, a, hnode,
			       rof_prog_key(tid, tag))
		if (a->tenant == t && a->tag == tag)
			return a;
	return NULL;
}

/* call_rcu, not kfree_rcu: rcu_barrier() waits for it (debugfs quiesce). */
static void rof_prog_alias_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rof_prog_alias, rcu));
}

/* Let go of @a; an INVOKE that found it may still read it (RCU). */
static void rof_prog_alias_del(struct rof_prog_alias *a)
{
	struct rof_prog *p = rof_prog_alias_target(a);

	hash_del_rcu(&a->hnode);
	list_del(&a->node);
	WRITE_ONCE(p->naliases, p->naliases - 1);
	call_rcu(&a->rcu, rof_prog_alias_free_rcu);
}

/* Make @a, unused, the newest alias of @p. */
static void rof_prog_alias_add(struct rof_prog *p, struct rof_prog_alias *a,
			       u64 tag)
{
	RCU_INIT_POINTER(a->p, p);
	a->tenant = p->tenant;
	a->tag = tag;
	a->used = jiffies;
	hash_add_rcu(rof_prog_aliases, &a->hnode,
		     rof_prog_key(p->tenant_id, tag));
	list_add_tail(&a->node, &p->aliases);
	WRITE_ONCE(p->naliases, p->naliases + 1);
}

/* An INVOKE named @a: a store only when the jiffy changed. */
static void rof_prog_alias_touch(struct rof_prog_alias *a)
{
	unsigned long now = jiffies;

	if (READ_ONCE(a->used) != now)
		WRITE_ONCE(a->used, now);
}

/*
 * The alias of @p to let go past ROF_PROG_ALIASES_MAX: the one an INVOKE
 * named longest ago; of those named in the same jiffy, the oldest.
 */
static struct rof_prog_alias *rof_prog_alias_lru(struct rof_prog *p)
{
	struct rof_prog_alias *a, *lru = NULL;

	list_for_each_entry(a, &p->aliases, node)
		if (!lru || time_before(READ_ONCE(a->used), READ_ONCE(lru->used)))
			lru = a;
	return lru;
}

/*
 * Off the tables, with its aliases: INVOKEs of its tags find nothing once
 * the lock is dropped (those under way in it finish: rof_prog_stop).
 */
static void rof_prog_unlink(struct rof_prog *p)
{
	struct rof_prog_alias *a, *next;

	lockdep_assert_held(&rof_progs_lock);
	hash_del_rcu(&p->hnode);
	xa_erase(&rof_prog_ids, p->id);
	p->linked = false;
	list_for_each_entry_safe(a, next, &p->aliases, node)
		rof_prog_alias_del(a);
}

/* Exactly once per slot, by whoever clears HELD; may sleep. */
static void rof_prog_slot_release(struct rof_prog_slot *sl)
{
	if (!test_and_clear_bit(ROF_SLOT_HELD, &sl->held))
		return;
	rof_region_detach(sl->region, &sl->att);
	if (sl->fl)
		rof_freelist_put(sl->fl);
	rof_region_put(sl->region);
}

static void rof_prog_region_revoked(struct rof_attach *a,
				    const char *reason)
{
	struct rof_prog_slot *sl = container_of(a, struct rof_prog_slot, att);
	struct rof_prog *p = sl->p;

	pr_info("program %016llx of tenant %u: region %u revoked (%s)\n",
		p->tag, p->tenant_id, sl->region_id, reason);
	WRITE_ONCE(p->revoked, true);
	rof_prog_stop(p);
	rof_prog_slot_release(sl);
}

/*
 * The rest of an unload or a replace, by whoever unlinked @p: stop it,
 * let go of its regions and tenant, and drop the table's reference.  The
 * quota charge goes too unless a replace passed it on.
 */
static void rof_prog_retire(struct rof_prog *p)
{
	u32 i;

	rof_prog_stop(p);
	for (i = 0; i < p->nslots; i++)
		rof_prog_slot_release(&p->slots[i]);
	if (p->tattached)
		rof_tenant_detach(p->tenant, &p->tatt);
	if (p->charged)
		rof_tenant_uncharge_program(p->tenant);
	rof_prog_put(p);	/* the table's reference */
}

/* Unload: from an ioctl or a tenant's revoke; process context. */
static void rof_prog_destroy(struct rof_prog *p)
{
	mutex_lock(&rof_progs_lock);
	if (!p->linked) {
		/* Another unloader (or a replace) got here first and finishes. */
		mutex_unlock(&rof_progs_lock);
		return;
	}
	rof_prog_unlink(p);
	mutex_unlock(&rof_progs_lock);
	rof_prog_retire(p);
}

static void rof_prog_tenant_revoked(struct rof_attach *a,
				    const char *reason)
{
	struct rof_prog *p = container_of(a, struct rof_prog, tatt);

	pr_info("program %016llx of tenant %u unloaded (%s)\n", p->tag,
		p->tenant_id, reason);
	rof_prog_destroy(p);
}

/*
 * The program (tenant @t, @tag) by its own tag, +1 reference, or NULL:
 * PROG_GET, PROG_UNLOAD.  Any context.
 */
static struct rof_prog *rof_prog_lookup(struct rof_tenant *t, u64 tag)
{
	u32 tid = rof_tenant_id(t);
	struct rof_prog *p, *found = NULL;

	rcu_read_lock();
	hash_for_each_possible_rcu(rof_progs, p, hnode, rof_prog_key(tid, tag)) {
		if (p->tenant == t && p->tag == tag &&
		    kref_get_unless_zero(&p->ref)) {
			found = p;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/*
 * INVOKE's lookup: the program that serves (@t, @tag), by its own tag or
 * an alias, +1 reference, or NULL.  Sets *@raced when it found an entry
 * for @tag whose program was being released (an unload or a replace is
 * under way): its memory is still there (freed after a grace period, and
 * the entry was reachable inside this read section), its reference not.
 */
static struct rof_prog *rof_prog_lookup_invoke(struct rof_tenant *t, u64 tag,
					       bool *raced)
{
	u32 key = rof_prog_key(rof_tenant_id(t), tag);
	struct rof_prog_alias *a;
	struct rof_prog *p, *found = NULL;

	rcu_read_lock();
	hash_for_each_possible_rcu(rof_progs, p, hnode, key) {
		if (p->tenant != t || p->tag != tag)
			continue;
		if (kref_get_unless_zero(&p->ref)) {
			found = p;
			goto out;
		}
		*raced = true;
	}
	hash_for_each_possible_rcu(rof_prog_aliases, a, hnode, key) {
		if (a->tenant != t || a->tag != tag)
			continue;
		p = rcu_dereference(a->p);
		if (kref_get_unless_zero(&p->ref)) {
			rof_prog_alias_touch(a);
			found = p;
			goto out;
		}
		*raced = true;
	}
out:
	rcu_read_unlock();
	return found;
}

/* ---- runs ------------------------------------------------------------ */

/* The end of rof_prog_enter's hold on @p; any context. */
static void rof_prog_leave(struct rof_prog *p)
{
	/* Full barrier: pairs with rof_prog_stop's smp_mb(). */
	if (atomic_dec_and_test(&p->active) && READ_ONCE(p->stopped))
		wake_up_all(&p->idle_wq);
	rof_prog_put(p);
}

/*
 * The lock-free tries kept losing races with writers: look under
 * rof_progs_lock, where the tables hold still.  ->active goes up while
 * the program is linked, so an unload or a replace, which unlinks it
 * under the lock first, stops it only afterwards and waits for this run;
 * only a region revoke can have stopped it already.  Process context.
 */
static struct rof_prog *rof_prog_enter_locked(struct rof_tenant *t, u64 tag,
					      u32 *status)
{
	struct rof_prog_alias *a;
	struct rof_prog *p;

	mutex_lock(&rof_progs_lock);
	p = rof_prog_find(t, tag);
	if (!p) {
		a = rof_prog_alias_find(t, tag);
		p = a ? rof_prog_alias_target(a) : NULL;
		if (a)
			rof_prog_alias_touch(a);
	}
	if (p) {
		kref_get(&p->ref);
		atomic_inc(&p->active);
	}
	mutex_unlock(&rof_progs_lock);
	if (!p) {
		*status = ROF_ST_NO_PROGRAM;
		return NULL;
	}
	smp_mb();	/* ->active before ->stopped; pairs with rof_prog_stop */
	*status = ROF_ST_OK;
	if (READ_ONCE(p->stopped)) {
		smp_rmb();	/* pairs with rof_prog_stop's smp_wmb() */
		if (READ_ONCE(p->revoked))
			*status = ROF_ST_PROG_REVOKED;
	}
	return p;
}

/*
 * Lock-free lookups an INVOKE tries before it falls back.  A try fails
 * only when a writer ran under rof_progs_lock meanwhile: the seqcount
 * moved, or the program found was replaced or being released.  Writers
 * are ioctls that copy and check an image, far slower than a lookup, so
 * the first retry nearly always succeeds; the bound is for a reader that
 * writers keep overtaking (a preempted one), which then takes the lock
 * (process context) or is retried from there (ROF_PROG_DEFER).
 */
#define ROF_PROG_LOOKUP_TRIES	4

/*
 * The program an INVOKE of (@t, @tag) runs: +1 reference and counted in
 * ->active (rof_prog_leave ends both), with *@status ROF_ST_OK when it
 * may run, or an answer (ROF_ST_PROG_REVOKED, ROF_ST_NO_PROGRAM: an
 * unload under way) that it gives.  NULL with *@status NO_PROGRAM, or
 * ROF_PROG_DEFER with @atomic.
 *
 * Across a replace an INVOKE finds the old program or the new one: the
 * tables change in one write section of rof_progs_seq, a miss that
 * overlapped one looks again, and so does a hit on a program the replace
 * has stopped (->replaced, seen before ->stopped).
 */
static struct rof_prog *rof_prog_enter(struct rof_tenant *t, u64 tag,
				       bool atomic, u32 *status)
{
	struct rof_prog *p;
	unsigned int seq;
	bool raced;
	int i;

	for (i = 0; i < ROF_PROG_LOOKUP_TRIES; i++) {
		raced = false;
		seq = raw_seqcount_begin(&rof_progs_seq);
		p = rof_prog_lookup_invoke(t, tag, &raced);
		if (!p) {
			if (raced || read_seqcount_retry(&rof_progs_seq, seq))
				continue;
			*status = ROF_ST_NO_PROGRAM;
			return NULL;
		}
		atomic_inc(&p->active);
		smp_mb__after_atomic();	/* ->active before ->stopped */
		if (!READ_ONCE(p->stopped)) {
			*status = ROF_ST_OK;
			return p;
		}
		smp_rmb();	/* pairs with rof_prog_stop's smp_wmb() */
		if (!READ_ONCE(p->replaced)) {
			*status = READ_ONCE(p->revoked) ? ROF_ST_PROG_REVOKED :
							  ROF_ST_NO_PROGRAM;
			return p;
		}
		/* Unlinked before it was stopped: the next try finds its heir. */
		rof_prog_leave(p);
	}
	if (atomic) {
		*status = ROF_PROG_DEFER;
		return NULL;
	}
	return rof_prog_enter_locked(t, tag, status);
}

void rof_prog_scratch_free(struct rof_prog_scratch *sc)
{
	kvfree(sc);
}

/* Grow *@scp to @want bytes, keeping its contents; the rest reads 0. */
static int rof_prog_scratch_get(struct rof_prog_scratch **scp, u32 want)
{
	struct rof_prog_scratch *old = *scp, *sc;

	if (!want || (old && old->size >= want))
		return 0;
	sc = kvzalloc(struct_size(sc, data, want), GFP_KERNEL);
	if (!sc)
		return -ENOMEM;
	sc->size = want;
	if (old)
		memcpy(sc->data, old->data, old->size);
	kvfree(old);
	*scp = sc;
	return 0;
}

static void rof_put_result(u8 *out, u32 prog_status, int exec_status,
			   u32 fault_pc, u64 insns)
{
	struct rof_invoke_result res = {
		.prog_status = cpu_to_le32(prog_status),
		.exec_status = cpu_to_le32(exec_status),
		.fault_pc = cpu_to_le32(fault_pc),
		.insns = cpu_to_le32(min_t(u64, insns, U32_MAX)),
	};

	memcpy(out, &res, sizeof(res));
}

/*
 * Run program @tag of tenant @t for one INVOKE of a session whose
 * scratch is *@scp.  Writes the response payload (struct
 * rof_invoke_result, then the program's response) into @out, which holds
 * @out_cap bytes, and returns an enum rof_status.  Fills @rec's insns,
 * reason (the executor status) and program (the tag of the program that
 * answered: a replacement's when @tag is an alias), and takes the
 * instructions and bytes the run spent from @budget.  Without @atomic:
 * process context (the session's poll work), which growing the scratch,
 * a long run's reschedule points and a contended lookup need.  With it,
 * any context but hardirq: a run that could take more instructions or
 * move more bytes than @budget holds, reach a reschedule point, grow the
 * scratch or take rof_progs_lock returns ROF_PROG_DEFER at once, with no
 * effect, for the caller to retry in process context.
 */
u32 rof_prog_invoke(struct rof_tenant *t, struct rof_prog_scratch **scp,
		    u64 tag, const u8 *args, u32 args_len, u8 *out,
		    u32 out_cap, u32 *out_len, struct rof_audit_record *rec,
		    struct rof_run_budget *budget, bool atomic)
{
	struct rof_exec_ctx ctx = {};
	const struct rof_isa_hdr *h;
	struct rof_prog *p;
	u32 status;
	int st;

	*out_len = 0;
	if (!t)
		return ROF_ST_NO_PROGRAM;
	p = rof_prog_enter(t, tag, atomic, &status);
	if (!p)
		return status;
	rec->tag = p->tag;
	if (status != ROF_ST_OK)
		goto out;
	h = p->hdr;
	if (atomic &&
	    (p->budget > budget->insns || p->budget >= ROF_EXEC_YIELD_EVERY ||
	     p->byte_budget > budget->bytes ||
	     (h->scratch_size && (!*scp || (*scp)->size < h->scratch_size)))) {
		status = ROF_PROG_DEFER;
		goto out;
	}
	if (args_len < h->args_min || args_len > h->args_max) {
		rec->reason = ROF_ISA_EARGS;
		status = ROF_ST_BAD_ARGS;
		goto out;
	}
	/*
	 * A program never writes past the message: one whose resp_max the
	 * session's messages cannot hold (loads check the largest) is not
	 * run on it.
	 */
	if (out_cap < sizeof(struct rof_invoke_result) ||
	    h->resp_max > out_cap - sizeof(struct rof_invoke_result)) {
		status = ROF_ST_MSG_SIZE;
		goto out;
	}
	if (rof_prog_scratch_get(scp, h->scratch_size)) {
		status = ROF_ST_NO_MEMORY;
		goto out;
	}

	/*
	 * Not zeroed here: the executor zeroes what the run reaches of it
	 * (rof_mem), so that no byte of an earlier reply goes out again.
	 */
	ctx.insns = p->insns;
	ctx.code = p->code;
	ctx.insn_cnt = h->insn_cnt;
	ctx.args = args;
	ctx.args_len = args_len;
	ctx.scratch = h->scratch_size ? (*scp)->data : NULL;
	ctx.scratch_len = h->scratch_size;
	ctx.resp = out + sizeof(struct rof_invoke_result);
	ctx.resp_cap = h->resp_max;
	ctx.regions = p->xr;
	ctx.region_cnt = p->nslots;
	ctx.budget = p->budget;
	ctx.byte_budget = p->byte_budget;
	st = rof_exec_run(&ctx);

	budget->insns -= min(budget->insns, ctx.executed);
	budget->bytes -= min(budget->bytes, ctx.bytes);
	budget->moved += ctx.bytes;
	atomic64_inc(&p->invocations);
	atomic64_add(ctx.executed, &p->insns_run);
	rec->insns = ctx.executed;
	rec->reason = st;
	if (st == ROF_ISA_OK) {
		rof_put_result(out, ctx.prog_status, 0, 0, ctx.executed);
		*out_len = sizeof(struct rof_invoke_result) + ctx.resp_len;
		status = ROF_ST_OK;
	} else {
		atomic64_inc(&p->faults);
		rof_put_result(out, 0, st, ctx.fault_pc, ctx.executed);
		*out_len = sizeof(struct rof_invoke_result);
		status = ROF_ST_PROG_FAULT;
	}
out:
	rof_prog_leave(p);
	return status;
}

/* ---- load ------------------------------------------------------------- */

/* Checks @b against slot @sl of the image and takes what it binds. */
static int rof_prog_bind_slot(struct rof_prog *p, u32 i,
			      const struct rof_isa_slot *is,
			      const struct rof_prog_bind *b)
{
	struct rof_prog_slot *sl = &p->slots[i];
	struct rof_exec_region *xr = &p->xr[i];
	bool want_fl = is->flags & ROF_SLOT_FREELIST;
	struct rof_region *r;
	int ret;

	if (want_fl != !!b->freelist)
		return -EINVAL;
	r = rof_region_get(p->tenant, b->region);
	if (!r)
		return -ENXIO;		/* no such region of this tenant */
	sl->p = p;
	sl->region = r;
	sl->region_id = b->region;
	sl->freelist_id = b->freelist;
	xr->freelist = ROF_ISA_NULL;
	if (is->access & ~rof_region_access(r)) {
		ret = -EACCES;		/* the image wants more than the region gives */
		goto err_region;
	}
	if (is->len > rof_region_size(r)) {
		ret = -ERANGE;
		goto err_region;
	}
	if (want_fl) {
		sl->fl = rof_freelist_get(p->tenant, b->freelist);
		if (!sl->fl) {
			ret = -ENXIO;
			goto err_region;
		}
		if (rof_freelist_region(sl->fl) != r) {
			ret = -EXDEV;	/* the list lives in another region */
			goto err_fl;
		}
		xr->freelist = rof_freelist_offset(sl->fl);
		if (xr->freelist > is->len ||
		    is->len - xr->freelist < sizeof(struct rof_isa_freelist)) {
			ret = -ERANGE;	/* its header is outside the window */
			goto err_fl;
		}
	}
	sl->att.revoke = rof_prog_region_revoked;
	if (rof_region_attach(r, &sl->att)) {
		ret = -ENXIO;		/* being destroyed */
		goto err_fl;
	}
	set_bit(ROF_SLOT_HELD, &sl->held);

	xr->base = rof_region_vaddr(r);
	xr->len = is->len;
	xr->access = is->access;
	xr->flags = 0;
	xr->lock = &rof_prog_locks[hash_32(b->region, ROF_PROG_LOCK_BITS)];
	return 0;

err_fl:
	if (sl->fl)
		rof_freelist_put(sl->fl);
	sl->fl = NULL;
err_region:
	rof_region_put(r);
	sl->region = NULL;
	return ret;
}

static int rof_prog_check_req(const struct rof_prog_load *req)
{
	u32 i;

	if (req->flags || req->reserved || req->error_insn || req->tag)
		return -EINVAL;
	if (rof_name_check(req->name))
		return -EINVAL;
	if (!req->budget || !req->byte_budget)
		return -EINVAL;
	if (req->nbind > ROF_ISA_MAX_SLOTS)
		return -EINVAL;
	for (i = req->nbind; i < ROF_ISA_MAX_SLOTS; i++)
		if (req->bind[i].region || req->bind[i].freelist)
			return -EINVAL;
	if (req->budget > READ_ONCE(prog_max_budget) ||
	    req->byte_budget > READ_ONCE(prog_max_bytes))
		return -E2BIG;
	if (!req->image_len || req->image_len > ROF_PROG_IMAGE_MAX)
		return -E2BIG;
	return 0;
}

/* Limits of the module, past the image's own: -EFBIG. */
static int rof_prog_check_hdr(const struct rof_isa_hdr *h)
{
	if (h->args_min > ROF_INVOKE_ARGS_MAX ||
	    h->resp_max > ROF_INVOKE_RESP_MAX ||
	    h->scratch_size > READ_ONCE(prog_scratch_max))
		return -EFBIG;
	return 0;
}

/*
 * Undo rof_prog_prepare: @p was never linked (nor attached to its
 * tenant).  Process context.
 */
static void rof_prog_abandon(struct rof_prog *p)
{
	u32 i;

	for (i = 0; i < p->nslots; i++)
		rof_prog_slot_release(&p->slots[i]);
	if (p->charged)
		rof_tenant_uncharge_program(p->tenant);
	if (p->tenant)
		rof_tenant_put(p->tenant);
	kvfree(p->code);
	kvfree(p->image);
	kfree(p);
}

/*
 * What PROG_LOAD and PROG_REPLACE share: @req checked, the image copied
 * in and checked (with -ENOEXEC or -EBADMSG, error_insn goes back to
 * @uarg, which starts with a struct rof_prog_load), the tenant taken,
 * charged one program when @charge, and the slots bound.  Not linked
 * yet: rof_prog_abandon undoes it.  The program or an ERR_PTR.
 */
static struct rof_prog *rof_prog_prepare(struct rof_prog_load *req,
					 void __user *uarg, bool charge)
{
	const struct rof_isa_slot *islots;
	struct rof_tenant *t;
	struct rof_prog *p;
	u32 i, bad = ~0U;
	int ret;

	ret = rof_prog_check_req(req);
	if (ret)
		return ERR_PTR(ret);

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	kref_init(&p->ref);
	INIT_LIST_HEAD(&p->aliases);
	atomic_set(&p->active, 0);
	init_waitqueue_head(&p->idle_wq);
	atomic64_set(&p->invocations, 0);
	atomic64_set(&p->faults, 0);
	atomic64_set(&p->insns_run, 0);
	p->tatt.revoke = rof_prog_tenant_revoked;
	p->image = kvmalloc(req->image_len, GFP_KERNEL);
	if (!p->image) {
		ret = -ENOMEM;
		goto err;
	}
	if (copy_from_user(p->image, u64_to_user_ptr(req->image),
			   req->image_len)) {
		ret = -EFAULT;
		goto err;
	}
	ret = rof_exec_check_image(p->image, req->image_len, &bad);
	if (ret) {
		/* The tag is wrong: corrupted, or edited after signing. */
		if (ret != -EBADMSG)
			ret = -ENOEXEC;
		req->error_insn = bad;
		if (copy_to_user(uarg, req, sizeof(*req)))
			ret = -EFAULT;
		goto err;
	}
	p->hdr = p->image;
	islots = p->image + sizeof(*p->hdr);
	p->insns = (const void *)(islots + p->hdr->slot_cnt);
	/* Checked and unpacked once here, not at every step of every run. */
	p->code = kvmalloc_array(ROF_EXEC_CODE_LEN(p->hdr->insn_cnt),
				 sizeof(*p->code), GFP_KERNEL);
	if (!p->code) {
		ret = -ENOMEM;
		goto err;
	}
	ret = rof_exec_decode(p->insns, p->hdr->insn_cnt, p->code);
	if (ret)
		goto err;
	if (p->hdr->slot_cnt != req->nbind) {
		ret = -EINVAL;
		goto err;
	}
	ret = rof_prog_check_hdr(p->hdr);
	if (ret)
		goto err;
	p->tag = p->hdr->tag;
	p->nslots = p->hdr->slot_cnt;
	p->budget = req->budget;
	p->byte_budget = req->byte_budget;
	strscpy(p->name, req->name, sizeof(p->name));
	p->loaded_ns = ktime_get_real_ns();

	t = rof_tenant_get(req->tenant);
	if (!t) {
		ret = -ENOENT;
		goto err;
	}
	p->tenant = t;
	p->tenant_id = req->tenant;
	if (charge) {
		ret = rof_tenant_charge_program(t); /* -EDQUOT, -ENOENT: dying */
		if (ret)
			goto err;
		p->charged = true;
	}
	for (i = 0; i < p->nslots; i++) {
		ret = rof_prog_bind_slot(p, i, &islots[i], &req->bind[i]);
		if (ret)
			goto err;
	}
	return p;

err:
	rof_prog_abandon(p);
	return ERR_PTR(ret);
}

/*
 * Under rof_progs_lock, what linking @p takes that can fail: an id, and
 * the attachment to its tenant.  The caller links @p before it drops the
 * lock, so a tenant revoke that sees the attachment also finds the
 * program linked, and one that started earlier makes the attach fail.
 */
static int rof_prog_reserve(struct rof_prog *p)
{
	int ret;

	lockdep_assert_held(&rof_progs_lock);
	ret = xa_alloc_cyclic(&rof_prog_ids, &p->id, p, xa_limit_31b,
			      &rof_prog_next_id, GFP_KERNEL);
	if (ret < 0)
		return ret;
	ret = rof_tenant_attach(p->tenant, &p->tatt);	/* -ENOENT: dying */
	if (ret) {
		xa_erase(&rof_prog_ids, p->id);
		return ret;
	}
	p->tattached = true;
	return 0;
}

/* Under rof_progs_lock and rof_progs_seq, after rof_prog_reserve. */
static void rof_prog_link(struct rof_prog *p)
{
	struct rof_prog_alias *a;

	hash_add_rcu(rof_progs, &p->hnode, rof_prog_key(p->tenant_id, p->tag));
	p->linked = true;
	/*
	 * An own tag shadows an alias (INVOKE looks at own tags first): drop
	 * the alias, so that no program counts a tag it does not serve.
	 */
	a = rof_prog_alias_find(p->tenant, p->tag);
	if (a)
		rof_prog_alias_del(a);
}

static long rof_prog_load(void __user *uarg)
{
	struct rof_prog_load *req;
	struct rof_prog *p;
	long ret;

	req = memdup_user(uarg, sizeof(*req));
	if (IS_ERR(req))
		return PTR_ERR(req);
	p = rof_prog_prepare(req, uarg, true);
	if (IS_ERR(p)) {
		ret = PTR_ERR(p);
		goto out_req;
	}

	mutex_lock(&rof_progs_lock);
	if (rof_prog_find(p->tenant, p->tag))
		ret = -EEXIST;
	else
		ret = rof_prog_reserve(p);
	if (ret) {
		mutex_unlock(&rof_progs_lock);
		rof_prog_abandon(p);
		goto out_req;
	}
	write_seqcount_begin(&rof_progs_seq);
	rof_prog_link(p);
	write_seqcount_end(&rof_progs_seq);
	/*
	 * Published: an unload by (tenant, tag) or a tenant destroy may drop
	 * the table's reference as soon as the lock is dropped.  Ours keeps
	 * @p valid until we are done with it.
	 */
	kref_get(&p->ref);
	mutex_unlock(&rof_progs_lock);
	rof_fault_delay("program load of tenant", p->tenant_id);

	req->tag = p->tag;
	if (copy_to_user(uarg, req, sizeof(*req))) {
		/* Nobody would learn it was loaded; a no-op if unloaded. */
		rof_prog_destroy(p);
		ret = -EFAULT;
	} else {
		pr_debug("program %016llx (%s) loaded for tenant %u\n", p->tag,
			 p->name, p->tenant_id);
		ret = 0;
	}
	rof_prog_put(p);
out_req:
	kfree(req);
	return ret;
}

/*
 * Under rof_progs_lock and rof_progs_seq, after rof_prog_reserve(@p):
 * @p takes @old's place.  @old's aliases move to @p (but the one @p's own
 * tag now shadows), @old's tag becomes @p's newest alias (@na), the least
 * recently used go beyond ROF_PROG_ALIASES_MAX, and @p takes over @old's
 * charge.
 * The caller retires @old.
 */
static void rof_prog_swap(struct rof_prog *old, struct rof_prog *p,
			  struct rof_prog_alias *na)
{
	struct rof_prog_alias *a;

	rof_prog_link(p);
	list_for_each_entry(a, &old->aliases, node)
		rcu_assign_pointer(a->p, p);
	list_splice_tail_init(&old->aliases, &p->aliases);
	WRITE_ONCE(p->naliases, old->naliases);
	WRITE_ONCE(old->naliases, 0);
	rof_prog_alias_add(p, na, old->tag);
	while (p->naliases > ROF_PROG_ALIASES_MAX)
		rof_prog_alias_del(rof_prog_alias_lru(p));
	p->charged = old->charged;
	old->charged = false;
	/* Before ->stopped (rof_prog_stop): a run that sees both looks again. */
	WRITE_ONCE(old->replaced, true);
	rof_prog_unlink(old);
}

static long rof_prog_replace(void __user *uarg)
{
	struct rof_prog_replace *req;
	struct rof_prog_alias *na;
	struct rof_prog *p, *old;
	long ret;

	req = memdup_user(uarg, sizeof(*req));
	if (IS_ERR(req))
		return PTR_ERR(req);
	if (req->reserved) {
		ret = -EINVAL;
		goto out_req;
	}
	na = kzalloc(sizeof(*na), GFP_KERNEL);
	if (!na) {
		ret = -ENOMEM;
		goto out_req;
	}
	/* No charge: the old program's passes to it in the swap. */
	p = rof_prog_prepare(&req->load, uarg, false);
	if (IS_ERR(p)) {
		ret = PTR_ERR(p);
		goto out_alias;
	}
	/*
	 * The tag goes out before the swap, so that once the swap is done
	 * nothing fails: the caller learns of every replace that happened.
	 */
	req->load.tag = p->tag;
	if (copy_to_user(uarg, req, sizeof(*req))) {
		ret = -EFAULT;
		goto out_prog;
	}

	mutex_lock(&rof_progs_lock);
	old = rof_prog_find(p->tenant, req->old_tag);
	if (!old)
		ret = -ENOENT;
	else if (rof_prog_find(p->tenant, p->tag))
		ret = -EEXIST;	/* the old program's own tag included */
	else
		ret = rof_prog_reserve(p);
	if (ret) {
		mutex_unlock(&rof_progs_lock);
		goto out_prog;
	}
	write_seqcount_begin(&rof_progs_seq);
	rof_prog_swap(old, p, na);
	write_seqcount_end(&rof_progs_seq);
	pr_debug("program %016llx (%s) replaced %016llx for tenant %u\n",
		 p->tag, p->name, old->tag, p->tenant_id);
	mutex_unlock(&rof_progs_lock);

	/* @old is ours alone: unlinked, with the table's reference. */
	rof_prog_retire(old);
	kfree(req);
	return 0;

out_prog:
	rof_prog_abandon(p);
out_alias:
	kfree(na);
out_req:
	kfree(req);
	return ret;
}

/* ---- unload, get, list ------------------------------------------------ */

static long rof_prog_unload(void __user *uarg)
{
	struct rof_prog_id req;
	struct rof_tenant *t;
	struct rof_prog *p;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	t = rof_tenant_get(req.tenant);
	if (!t)
		return -ENOENT;
	p = rof_prog_lookup(t, req.tag);
	rof_tenant_put(t);
	if (!p)
		return -ENOENT;
	rof_prog_destroy(p);
	rof_prog_put(p);
	return 0;
}

static void rof_prog_fill(const struct rof_prog *p, struct rof_prog_info *pi)
{
	u32 i;

	memset(pi, 0, sizeof(*pi));
	strscpy(pi->name, p->name, sizeof(pi->name));
	pi->tag = p->tag;
	pi->tenant = p->tenant_id;
	if (READ_ONCE(p->revoked))
		pi->flags |= ROF_PROG_REVOKED;
	if (p->budget > ROF_EXEC_ATOMIC_INSNS ||
	    p->byte_budget > ROF_EXEC_ATOMIC_BYTES)
		pi->flags |= ROF_PROG_DEFERRED;
	pi->budget = p->budget;
	pi->byte_budget = p->byte_budget;
	pi->insn_cnt = p->hdr->insn_cnt;
	pi->nbind = p->nslots;
	pi->args_min = p->hdr->args_min;
	pi->args_max = p->hdr->args_max;
	pi->scratch_size = p->hdr->scratch_size;
	pi->resp_max = p->hdr->resp_max;
	for (i = 0; i < p->nslots; i++) {
		pi->bind[i].region = p->slots[i].region_id;
		pi->bind[i].freelist = p->slots[i].freelist_id;
	}
	pi->loaded_ns = p->loaded_ns;
	pi->invocations = atomic64_read(&p->invocations);
	pi->faults = atomic64_read(&p->faults);
	pi->insns = atomic64_read(&p->insns_run);
	pi->aliases = READ_ONCE(p->naliases);
}

static int rof_prog_get_fill(void *buf)
{
	struct rof_prog_info *pi = buf;
	struct rof_tenant *t;
	struct rof_prog *p;

	if (pi->flags)
		return -EINVAL;
	t = rof_tenant_get(pi->tenant);
	p = t ? rof_prog_lookup(t, pi->tag) : NULL;
	if (t)
		rof_tenant_put(t);
	if (!p)
		return -ENOENT;
	rof_prog_fill(p, pi);
	rof_prog_put(p);
	return 0;
}

static long rof_prog_get(void __user *uarg)
{
	return rof_get_ioctl(uarg, sizeof(struct rof_prog_info),
			     rof_prog_get_fill);
}

static u32 rof_prog_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_prog_info *pi = buf;
	unsigned long id, start = *pos;
	struct rof_prog *p;
	u32 n = 0;

	mutex_lock(&rof_progs_lock);
	xa_for_each_start(&rof_prog_ids, id, p, start)
		if (n++ < cap) {
			rof_prog_fill(p, &pi[n - 1]);
			*pos = id + 1;
		}
	mutex_unlock(&rof_progs_lock);
	return n;
}

static long rof_prog_list(void __user *uarg)
{
	return rof_list_ioctl(uarg, sizeof(struct rof_prog_info),
			      rof_prog_snap, NULL);
}

long rof_prog_ioctl(unsigned int cmd, void __user *uarg)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case ROF_IOC_PROG_LOAD:
		return rof_prog_load(uarg);
	case ROF_IOC_PROG_UNLOAD:
		return rof_prog_unload(uarg);
	case ROF_IOC_PROG_GET:
		return rof_prog_get(uarg);
	case ROF_IOC_PROG_LIST:
		return rof_prog_list(uarg);
	case ROF_IOC_PROG_REPLACE:
		return rof_prog_replace(uarg);
	default:
		return -ENOTTY;
	}
}

int rof_prog_init(void)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(rof_prog_locks); i++)
		ROF_EXEC_LOCK_INIT(&rof_prog_locks[i]);
	return 0;
}

/*
 * Programs hold tenant references, tenants module references: none left,
 * nor their aliases.
 */
void rof_prog_exit(void)
{
	WARN_ON(!hash_empty(rof_progs));
	WARN_ON(!hash_empty(rof_prog_aliases));
	WARN_ON(!xa_empty(&rof_prog_ids));
	rcu_barrier();		/* call_rcu frees of programs and aliases */
}
