// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_region.c - regions (module-owned memory), their local mappings
 * through one-time access tokens, and free lists inside them.
 *
 * A region's pages are allocated in runs as large as the buddy allocator
 * gives cheaply (up to ROF_REGION_MAX_ORDER, a PMD-sized huge page on
 * x86), split into order-0 pages so that each can be mapped into user
 * space, and mapped contiguously into the kernel with vmap() for the
 * executor.  Sessions register their own MRs over rof_region_pages().
 *
 * References: rof_regions (the xarray) holds one from create to destroy;
 * lookups, attachments' owners, free lists, tokens, bound /dev/rof files
 * and every VMA hold theirs.  Destroy unlinks the region; the memory goes
 * with the last reference, so a mapping outlives the region's name.  The
 * final put may happen in any context, so the memory is freed from a
 * workqueue that module exit drains.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <crypto/algapi.h>

#include "rof_core.h"
#include "include/uapi/rof_isa.h"

/* Largest run allocated at once: 2 MiB with 4 KiB pages. */
#define ROF_REGION_MAX_ORDER	min_t(unsigned int, 9, MAX_ORDER - 1)
#define ROF_TOKENS_MAX		1024

struct rof_region {
	struct kref ref;
	struct rcu_head rcu;
	struct work_struct free_work;
	u32 id;
	u32 access;
	char name[ROF_NAME_MAX];
	struct hlist_node name_node;	/* in rof_region_names while in rof_regions */
	struct rof_tenant *tenant;	/* holds a reference */
	u64 size;
	struct page **pages;
	unsigned int npages;
	unsigned int chunks;
	void *vaddr;

	/*
	 * ->lock orders binding an fd (which counts in ->mappings) against
	 * a destroy setting ->dying: either the bind sees it dying, or the
	 * destroy sees the mapping and leaves the bytes charged to the
	 * tenant until the pages are freed (->bytes_charged).
	 */
	spinlock_t lock;
	bool dying;			/* set once ->users is closed */
	bool bytes_charged;		/* destroyed, bytes charged until freed */
	struct rof_attach_set users;	/* sessions and programs */

	atomic_t mappings;		/* bound fds and vmas */
	/* Its published free lists (rof_freelist.rnode); rof_regions_lock. */
	struct list_head freelists;
	unsigned int nfreelists;	/* under rof_regions_lock */
};

/*
 * A free list is formatted inside its region in the ISA's layout (struct
 * rof_isa_freelist at @offset, then @count blocks), so the executor's
 * ALLOC/FREE work on it directly; the module only creates, lists and
 * retires it.
 */
struct rof_freelist {
	struct kref ref;
	struct rcu_head rcu;
	u32 id;
	u32 block_size;
	u32 count;
	u64 offset;			/* of the header */
	struct rof_region *region;	/* holds a reference */
	struct list_head rnode;		/* on ->region->freelists while published */
};

struct rof_token {
	struct list_head node;
	u64 token[2];
	unsigned long expires;		/* jiffies */
	u32 access;
	struct rof_region *region;	/* holds a reference */
};

/* What a ROF_IOC_REGION_MAP bound a /dev/rof file to. */
struct rof_region_binding {
	struct rof_region *region;	/* holds a reference */
	u32 access;
};

static DEFINE_XARRAY_ALLOC1(rof_regions);
static DEFINE_XARRAY_ALLOC1(rof_freelists);
/*
 * Ids go round (xa_alloc_cyclic): a prepared session holds only its
 * regions' ids and a program's bindings name free lists, so a new object
 * must not take the id of one destroyed recently.
 */
static u32 rof_region_next, rof_freelist_next;
/* Serialises create/destroy/list of regions and free lists. */
static DEFINE_MUTEX(rof_regions_lock);
/*
 * The regions of rof_regions by tenant id and name, under rof_regions_lock:
 * a create's name check and a get by name walk one bucket.
 */
static DEFINE_HASHTABLE(rof_region_names, 10);

static u32 rof_region_name_hash(u32 tenant, const char *name)
{
	return jhash(name, strnlen(name, ROF_NAME_MAX), tenant);
}

static DEFINE_MUTEX(rof_tokens_lock);
static LIST_HEAD(rof_tokens);
static unsigned int rof_ntokens;

static struct workqueue_struct *rof_region_wq;

/* call_rcu, not kfree_rcu: rcu_barrier() waits for it (debugfs quiesce). */
static void rof_region_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rof_region, rcu));
}

static void rof_region_free_work(struct work_struct *work)
{
	struct rof_region *r = container_of(work, struct rof_region, free_work);
	unsigned int i;

	vunmap(r->vaddr);
	for (i = 0; i < r->npages; i++)
		__free_page(r->pages[i]);
	kvfree(r->pages);
	if (r->bytes_charged)
		rof_tenant_uncharge_region(r->tenant, r->size, 0);
	rof_tenant_put(r->tenant);
	call_rcu(&r->rcu, rof_region_free_rcu);
}

static void rof_region_release(struct kref *ref)
{
	struct rof_region *r = container_of(ref, struct rof_region, ref);

	/* vunmap sleeps; the last put may come from any context. */
	queue_work(rof_region_wq, &r->free_work);
}

void rof_region_put(struct rof_region *r)
{
	kref_put(&r->ref, rof_region_release);
}

struct rof_region *rof_region_get(struct rof_tenant *t, u32 id)
{
	struct rof_region *r;

	rcu_read_lock();
	r = xa_load(&rof_regions, id);
	if (r && (r->tenant != t || READ_ONCE(r->dying) ||
		  !kref_get_unless_zero(&r->ref)))
		r = NULL;
	rcu_read_unlock();
	return r;
}

struct page **rof_region_pages(struct rof_region *r, unsigned int *npages)
{
	*npages = r->npages;
	return r->pages;
}

void *rof_region_vaddr(struct rof_region *r)
{
	return r->vaddr;
}

u64 rof_region_size(const struct rof_region *r)
{
	return r->size;
}

u32 rof_region_access(const struct rof_region *r)
{
	return r->access;
}

/*
 * The module never syncs region memory (ib_dma_sync_*): the NIC, the
 * executor and local mappings use it at the same time, with no ownership
 * hand-over to sync at.  So a DMA mapping of it must need no syncs; one
 * that does (swiotlb bounce buffers, a non-coherent device) would serve
 * stale data, and the region is refused on that device.  @sgl, @nents:
 * the region's pages as ib_dma_map_sg() mapped them for @ibdev.
 */
bool rof_region_dma_ok(struct ib_device *ibdev, struct scatterlist *sgl,
		       int nents)
{
	struct scatterlist *sg;
	int i;

	if (ib_uses_virt_dma(ibdev))
		return true;	/* rxe, siw: the CPU copies, nothing is mapped */
	for_each_sg(sgl, sg, nents, i)
		if (dma_need_sync(ibdev->dma_device, sg_dma_address(sg)))
			return false;
	return true;
}

int rof_region_attach(struct rof_region *r, struct rof_attach *a)
{
	return rof_attach(&r->users, a);
}

void rof_region_detach(struct rof_region *r, struct rof_attach *a)
{
	rof_fault_delay("detach from region", r->id);	/* slow to let go */
	rof_detach(&r->users, a);
}

static void rof_region_audit_destroy(struct rof_region *r, u32 reason)
{
	struct rof_audit_record rec = {
		.kind = ROF_AUDIT_REGION_DESTROY,
		.tenant = rof_tenant_id(r->tenant),
		.object = r->id,
		.reason = reason,
		.bytes = r->size,
	};

	rof_audit_log(&rec);
}

static const char *rof_region_reason_str(u32 reason)
{
	switch (reason) {
	case ROF_DESTROY_ADMIN:
		return "region destroyed by the administrator";
	case ROF_DESTROY_TENANT:
		return "region's tenant destroyed";
	case ROF_DESTROY_DRAIN:
		return "module drained";
	default:
		return "region destroyed";
	}
}

static void rof_tokens_purge_region(struct rof_region *r)
{
	struct rof_token *tok, *tmp;

	mutex_lock(&rof_tokens_lock);
	list_for_each_entry_safe(tok, tmp, &rof_tokens, node) {
		if (tok->region != r)
			continue;
		list_del(&tok->node);
		rof_ntokens--;
		rof_region_put(tok->region);
		kfree_sensitive(tok);
	}
	mutex_unlock(&rof_tokens_lock);
}

static void rof_freelist_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rof_freelist, rcu));
}

static void rof_freelist_release(struct kref *ref)
{
	struct rof_freelist *fl = container_of(ref, struct rof_freelist, ref);

	rof_region_put(fl->region);
	call_rcu(&fl->rcu, rof_freelist_free_rcu);
}

void rof_freelist_put(struct rof_freelist *fl)
{
	kref_put(&fl->ref, rof_freelist_release);
}

static struct rof_isa_freelist *rof_freelist_hdr(const struct rof_freelist *fl)
{
	return fl->region->vaddr + fl->offset;
}

static void rof_freelist_unlink(struct rof_freelist *fl)
{
	lockdep_assert_held(&rof_regions_lock);
	/* Retire the in-region header: ALLOC/FREE now fail EFREELIST. */
	WRITE_ONCE(rof_freelist_hdr(fl)->magic, 0);
	xa_erase(&rof_freelists, fl->id);
	list_del(&fl->rnode);
	fl->region->nfreelists--;
	rof_tenant_count_freelists(fl->region->tenant, -1);
	rof_freelist_put(fl);
}

/*
 * Unlink @r and everything inside it.  Without @force, -EBUSY while
 * sessions or programs are attached.  Caller holds rof_regions_lock and
 * a reference; revocation happens after the caller drops the lock.
 */
static int rof_region_unlink(struct rof_region *r, bool force, bool *revoke)
{
	struct rof_freelist *fl, *tmp;
	unsigned int nattach;

	lockdep_assert_held(&rof_regions_lock);
	if (rof_attach_close(&r->users, force, &nattach))
		return -EBUSY;
	spin_lock(&r->lock);
	WRITE_ONCE(r->dying, true);
	/* No fd binds from now on; those bound may still mmap. */
	r->bytes_charged = atomic_read(&r->mappings) > 0;
	spin_unlock(&r->lock);
	*revoke = nattach;

	list_for_each_entry_safe(fl, tmp, &r->freelists, rnode)
		rof_freelist_unlink(fl);
	xa_erase(&rof_regions, r->id);
	hash_del(&r->name_node);
	rof_tenant_uncharge_region(r->tenant, r->bytes_charged ? 0 : r->size, 1);
	rof_region_put(r);	/* the xarray's reference */
	return 0;
}

/*
 * After rof_region_unlink, without rof_regions_lock.  Every forced
 * destroy is audited, whether or not it found users to revoke.  Returns
 * once every user has detached: a session detaches in its close work,
 * after deregistering its MR, so no key for the region is valid then.
 * ->revoke never waits for this destroy (it detaches or queues the close),
 * so the wait cannot deadlock.  A fatal signal ends it early with -EINTR:
 * the region is destroyed all the same and its users finish detaching on
 * their own.
 */
static int rof_region_finish_destroy(struct rof_region *r, bool forced,
				     bool revoke, u32 reason)
{
	if (forced) {
		rof_region_audit_destroy(r, reason);
		pr_info_ratelimited("region %u (%s): forced destroy: %s\n",
				    r->id, r->name, rof_region_reason_str(reason));
	}
	if (revoke)
		rof_attach_revoke_all(&r->users, rof_region_reason_str(reason));
	rof_tokens_purge_region(r);
	return rof_attach_wait_empty(&r->users);
}

/* Returns 0, or -EINTR (a fatal signal): the rest are left for later. */
int rof_region_destroy_tenant(struct rof_tenant *t, u32 reason)
{
	struct rof_region *r;
	unsigned long id = 0;
	bool revoke;
	int ret;

	for (;;) {
		mutex_lock(&rof_regions_lock);
		r = xa_find_after(&rof_regions, &id, ULONG_MAX, XA_PRESENT);
		while (r && r->tenant != t)
			r = xa_find_after(&rof_regions, &id, ULONG_MAX,
					  XA_PRESENT);
		if (r) {
			kref_get(&r->ref);
			rof_region_unlink(r, true, &revoke);
		}
		mutex_unlock(&rof_regions_lock);
		if (!r)
			return 0;
		ret = rof_region_finish_destroy(r, true, revoke, reason);
		rof_region_put(r);
		if (ret)
			return ret;
	}
}

static int rof_region_alloc_pages(struct rof_region *r)
{
	unsigned int order = ROF_REGION_MAX_ORDER;
	unsigned int i = 0, j;
	struct page *p;

	r->pages = kvcalloc(r->npages, sizeof(*r->pages), GFP_KERNEL);
	if (!r->pages)
		return -ENOMEM;

	while (i < r->npages) {
		gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN;

		order = min_t(unsigned int, order, ilog2(r->npages - i));
		/*
		 * Higher orders are an optimisation: fail fast, fall back.
		 * Order 0 tries hard but never invokes the OOM killer: a
		 * region too big for the machine is an error for rofd, not a
		 * reason to kill some other process.
		 */
		for (;;) {
			p = alloc_pages(gfp | (order ? __GFP_NORETRY :
					       __GFP_RETRY_MAYFAIL), order);
			if (p || !order)
				break;
			order--;
		}
		if (!p)
			return -ENOMEM;
		if (order)
			split_page(p, order);
		for (j = 0; j < (1U << order); j++)
			r->pages[i++] = p + j;
		r->chunks++;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}

	r->vaddr = vmap(r->pages, r->npages, VM_MAP, PAGE_KERNEL);
	return r->vaddr ? 0 : -ENOMEM;
}

static void rof_region_free_pages(struct rof_region *r)
{
	unsigned int i;

	if (r->vaddr)
		vunmap(r->vaddr);
	for (i = 0; i < r->npages && r->pages[i]; i++)
		__free_page(r->pages[i]);
	kvfree(r->pages);
}

/* @tenant's region called @name, or NULL; rof_regions_lock held. */
static struct rof_region *rof_region_by_name(u32 tenant, const char *name)
{
	struct rof_region *r;

	lockdep_assert_held(&rof_regions_lock);
	hash_for_each_possible(rof_region_names, r, name_node,
			       rof_region_name_hash(tenant, name))
		if (rof_tenant_id(r->tenant) == tenant && !strcmp(r->name, name))
			return r;
	return NULL;
}

static bool rof_region_name_taken(struct rof_tenant *t, const char *name)
{
	return rof_region_by_name(rof_tenant_id(t), name);
}

static int rof_freelist_check(u32 block_size, u64 offset, u32 count);
static int rof_freelist_end(u32 block_size, u64 offset, u32 count, u64 size,
			    u64 *end);
static struct rof_freelist *rof_freelist_alloc(u32 block_size, u64 offset,
					       u32 count);
static int rof_freelist_publish(struct rof_region *r, struct rof_freelist *fl);

/*
 * The free lists a REGION_CREATE makes with its region (ABI 0.7), read
 * from @uptr and checked as FREELIST_CREATE checks one, against the new
 * region's @size and each other.
 */
static struct rof_region_freelists *rof_region_freelists_read(u64 uptr,
							      u64 size)
{
	void __user *ufls = u64_to_user_ptr(uptr);
	struct rof_region_freelists hdr, *fls;
	u64 end, end_j;
	u32 i, j;
	int ret;

	if (copy_from_user(&hdr, ufls, sizeof(hdr)))
		return ERR_PTR(-EFAULT);
	if (hdr.reserved)
		return ERR_PTR(-EINVAL);
	if (hdr.count > ROF_REGION_FREELISTS_MAX)
		return ERR_PTR(-E2BIG);
	fls = memdup_user(ufls, struct_size(fls, list, hdr.count));
	if (IS_ERR(fls))
		return fls;
	ret = -EINVAL;
	if (fls->count != hdr.count)	/* changed between the two reads */
		goto err;
	for (i = 0; i < fls->count; i++) {
		const struct rof_freelist_spec *f = &fls->list[i];

		ret = -EINVAL;
		if (f->reserved)
			goto err;
		ret = rof_freelist_check(f->block_size, f->offset, f->count);
		if (!ret)
			ret = rof_freelist_end(f->block_size, f->offset,
					       f->count, size, &end);
		if (ret)
			goto err;
		for (j = 0; j < i; j++) {
			const struct rof_freelist_spec *g = &fls->list[j];

			rof_freelist_end(g->block_size, g->offset, g->count,
					 size, &end_j);
			if (f->offset < end_j && g->offset < end) {
				ret = -EADDRINUSE;
				goto err;
			}
		}
	}
	return fls;

err:
	kfree(fls);
	return ERR_PTR(ret);
}

static void rof_freelists_free(struct rof_freelist **fl, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		kfree(fl[i]);
	kfree(fl);
}

static long rof_region_create(void __user *uarg)
{
	struct rof_region_freelists *fls = NULL;
	struct rof_region_create req;
	struct rof_freelist **fl = NULL;
	struct rof_tenant *t;
	struct rof_region *r;
	bool revoke = false, mine;
	u32 i, nfl = 0;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.access & ~ROF_ACCESS_ALL)
		return -EINVAL;
	if (rof_name_check(req.name))
		return -EINVAL;
	if (!req.size || !PAGE_ALIGNED(req.size))
		return -EINVAL;
	if (req.size > ROF_REGION_SIZE_MAX)
		return -E2BIG;
	if (req.freelists) {
		fls = rof_region_freelists_read(req.freelists, req.size);
		if (IS_ERR(fls))
			return PTR_ERR(fls);
		nfl = fls->count;
	}

	ret = -ENOMEM;
	fl = kcalloc(nfl, sizeof(*fl), GFP_KERNEL);
	if (!fl && nfl)
		goto err_fls;
	for (i = 0; i < nfl; i++) {
		fl[i] = rof_freelist_alloc(fls->list[i].block_size,
					   fls->list[i].offset,
					   fls->list[i].count);
		if (!fl[i])
			goto err_fl;
	}
	t = rof_tenant_get(req.tenant);
	ret = -ENOENT;
	if (!t)
		goto err_fl;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		ret = -ENOMEM;
		goto err_tenant;
	}
	kref_init(&r->ref);
	spin_lock_init(&r->lock);
	INIT_WORK(&r->free_work, rof_region_free_work);
	rof_attach_set_init(&r->users);
	atomic_set(&r->mappings, 0);
	INIT_LIST_HEAD(&r->freelists);
	strscpy(r->name, req.name, sizeof(r->name));
	r->size = req.size;
	r->access = req.access;
	r->npages = req.size >> PAGE_SHIFT;
	r->tenant = t;

	/* Fail fast on a taken name, before allocating; rechecked below. */
	mutex_lock(&rof_regions_lock);
	ret = rof_region_name_taken(t, req.name) ? -EEXIST : 0;
	mutex_unlock(&rof_regions_lock);
	if (ret)
		goto err_free;
	ret = rof_tenant_charge_region(t, r->size);
	if (ret)
		goto err_free;
	ret = rof_region_alloc_pages(r);
	if (ret)
		goto err_uncharge;
	rof_fault_delay("region create (charged) of tenant", req.tenant);

	mutex_lock(&rof_regions_lock);
	/*
	 * The charge above saw the tenant alive, but a forced destroy may
	 * have begun since: it marks the tenant dying, then sweeps its
	 * regions under this lock.  Inserting after its sweep would orphan
	 * the region.
	 */
	if (rof_tenant_dying(t)) {
		ret = -ENOENT;
		goto err_unlock;
	}
	if (rof_region_name_taken(t, req.name)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	ret = xa_alloc_cyclic(&rof_regions, &r->id, r, xa_limit_31b,
			      &rof_region_next, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_unlock;
	}
	hash_add(rof_region_names, &r->name_node,
		 rof_region_name_hash(rof_tenant_id(t), r->name));
	/*
	 * Published: a destroy by id may drop the xarray's reference as soon
	 * as the lock is dropped.  Take the id and a reference of our own
	 * first.
	 */
	req.id = r->id;
	kref_get(&r->ref);
	/*
	 * Its free lists before the lock is dropped: no other command sees
	 * the region without them.  If one cannot be published (ids run
	 * out), the region goes with the ones that were.
	 */
	ret = 0;
	for (i = 0; i < nfl && !ret; i++) {
		ret = rof_freelist_publish(r, fl[i]);
		if (!ret) {
			fls->list[i].id = fl[i]->id;
			fl[i] = NULL;	/* the xarray's now */
		}
	}
	mine = ret && !rof_region_unlink(r, true, &revoke);
	mutex_unlock(&rof_regions_lock);
	if (ret)
		goto err_published;
	rof_fault_delay("region create (published)", req.id);

	if (copy_to_user(uarg, &req, sizeof(req)) ||
	    (fls && copy_to_user(u64_to_user_ptr(req.freelists), fls,
				 struct_size(fls, list, nfl)))) {
		/* Nobody learnt the id: undo, unless a destroy came first. */
		mutex_lock(&rof_regions_lock);
		mine = xa_load(&rof_regions, req.id) == r &&
		       !rof_region_unlink(r, true, &revoke);
		mutex_unlock(&rof_regions_lock);
		ret = -EFAULT;
		goto err_published;
	}
	rof_region_put(r);
	rof_freelists_free(fl, nfl);
	kfree(fls);
	return 0;

err_published:
	if (mine)
		rof_region_finish_destroy(r, false, revoke, ROF_DESTROY_ADMIN);
	rof_region_put(r);
	rof_freelists_free(fl, nfl);
	kfree(fls);
	return ret;

err_unlock:
	mutex_unlock(&rof_regions_lock);
err_uncharge:
	rof_tenant_uncharge_region(t, r->size, 1);
	rof_region_free_pages(r);
err_free:
	kfree(r);
err_tenant:
	rof_tenant_put(t);
err_fl:
	rof_freelists_free(fl, nfl);
err_fls:
	kfree(fls);
	return ret;
}

static long rof_region_destroy(void __user *uarg)
{
	struct rof_destroy req;
	struct rof_region *r;
	bool revoke = false;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_DESTROY_FORCE || req.reserved)
		return -EINVAL;

	mutex_lock(&rof_regions_lock);
	r = xa_load(&rof_regions, req.id);
	if (!r) {
		mutex_unlock(&rof_regions_lock);
		return -ENOENT;
	}
	kref_get(&r->ref);
	ret = rof_region_unlink(r, req.flags & ROF_DESTROY_FORCE, &revoke);
	mutex_unlock(&rof_regions_lock);
	if (!ret)
		ret = rof_region_finish_destroy(r, req.flags & ROF_DESTROY_FORCE,
						revoke, ROF_DESTROY_ADMIN);
	rof_region_put(r);
	return ret;
}

static void rof_region_fill(struct rof_region *r, struct rof_region_info *info)
{
	memset(info, 0, sizeof(*info));
	strscpy(info->name, r->name, sizeof(info->name));
	info->size = r->size;
	info->id = r->id;
	info->tenant = rof_tenant_id(r->tenant);
	info->access = r->access;
	info->attachments = rof_attach_count(&r->users);
	info->mappings = atomic_read(&r->mappings);
	info->freelists = r->nfreelists;
	info->chunks = r->chunks;
}

/*
 * By id, or with ROF_GET_BY_NAME by (tenant, name): what rofd looks a
 * region up by, without listing every tenant's regions.
 */
static int rof_region_get_fill(void *buf)
{
	struct rof_region_info *info = buf;
	struct rof_region *r;
	int ret = 0;

	if (info->flags & ~ROF_GET_BY_NAME)
		return -EINVAL;
	if ((info->flags & ROF_GET_BY_NAME) && rof_name_check(info->name))
		return -EINVAL;
	mutex_lock(&rof_regions_lock);
	if (info->flags & ROF_GET_BY_NAME)
		r = rof_region_by_name(info->tenant, info->name);
	else
		r = xa_load(&rof_regions, info->id);
	if (r)
		rof_region_fill(r, info);
	else
		ret = -ENOENT;
	mutex_unlock(&rof_regions_lock);
	return ret;
}

static long rof_region_get_info(void __user *uarg)
{
	return rof_get_ioctl(uarg, sizeof(struct rof_region_info),
			     rof_region_get_fill);
}

static u32 rof_region_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_region_info *info = buf;
	struct rof_region *r;
	unsigned long id, start = *pos;
	u32 n = 0;

	mutex_lock(&rof_regions_lock);
	xa_for_each_start(&rof_regions, id, r, start)
		if (n++ < cap) {
			rof_region_fill(r, &info[n - 1]);
			*pos = id + 1;
		}
	mutex_unlock(&rof_regions_lock);
	return n;
}

static long rof_region_list(void __user *uarg)
{
	return rof_list_ioctl(uarg, sizeof(struct rof_region_info),
			      rof_region_snap, NULL);
}

/* Drop expired tokens; rof_tokens_lock held. */
static void rof_tokens_expire(void)
{
	struct rof_token *tok, *tmp;

	lockdep_assert_held(&rof_tokens_lock);
	list_for_each_entry_safe(tok, tmp, &rof_tokens, node) {
		if (time_before(jiffies, tok->expires))
			continue;
		list_del(&tok->node);
		rof_ntokens--;
		rof_region_put(tok->region);
		kfree_sensitive(tok);
	}
}

static long rof_region_token(void __user *uarg)
{
	struct rof_region_token req;
	struct rof_region *r;
	struct rof_token *tok;
	u32 ttl;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EINVAL;
	if (req.access != ROF_ACCESS_READ &&
	    req.access != (ROF_ACCESS_READ | ROF_ACCESS_WRITE))
		return -EINVAL;
	if (req.ttl_ms > ROF_TOKEN_TTL_MAX_MS)
		return -EINVAL;
	ttl = req.ttl_ms ? req.ttl_ms : ROF_TOKEN_TTL_DEFAULT_MS;

	tok = kzalloc(sizeof(*tok), GFP_KERNEL);
	if (!tok)
		return -ENOMEM;
	get_random_bytes(tok->token, sizeof(tok->token));
	tok->access = req.access;
	tok->expires = jiffies + msecs_to_jiffies(ttl);

	mutex_lock(&rof_regions_lock);
	r = xa_load(&rof_regions, req.region);
	if (r)
		kref_get(&r->ref);
	mutex_unlock(&rof_regions_lock);
	if (!r) {
		kfree(tok);
		return -ENOENT;
	}
	tok->region = r;

	mutex_lock(&rof_tokens_lock);
	rof_tokens_expire();
	if (rof_ntokens >= ROF_TOKENS_MAX) {
		ret = -ENOSPC;
	} else if (READ_ONCE(r->dying)) {
		/* Destroyed meanwhile: its purge may already have run. */
		ret = -ENOENT;
	} else {
		list_add_tail(&tok->node, &rof_tokens);
		rof_ntokens++;
		memcpy(req.token, tok->token, sizeof(req.token));
	}
	mutex_unlock(&rof_tokens_lock);
	if (ret) {
		rof_region_put(r);
		kfree_sensitive(tok);
		return ret;
	}

	if (copy_to_user(uarg, &req, sizeof(req)))
		ret = -EFAULT;	/* the token just expires unused */
	memzero_explicit(&req, sizeof(req));
	return ret;
}

/* Takes the token off the list: it works once. */
static struct rof_token *rof_token_take(const u64 token[2])
{
	struct rof_token *tok, *found = NULL;

	mutex_lock(&rof_tokens_lock);
	rof_tokens_expire();
	list_for_each_entry(tok, &rof_tokens, node) {
		if (!crypto_memneq(tok->token, token, sizeof(tok->token))) {
			found = tok;
			list_del(&tok->node);
			rof_ntokens--;
			break;
		}
	}
	mutex_unlock(&rof_tokens_lock);
	return found;
}

/* No capability: the one-time token minted by rofd is the authority. */
static long rof_region_map(struct file *file, void __user *uarg)
{
	struct rof_region_binding *b;
	struct rof_region_map req;
	struct rof_token *tok;
	struct rof_region *r;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	if (READ_ONCE(file->private_data))
		return -EBUSY;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	tok = rof_token_take(req.token);
	memzero_explicit(req.token, sizeof(req.token));
	if (!tok) {
		kfree(b);
		return -EACCES;
	}
	r = tok->region;
	b->region = r;		/* the token's reference moves to @b */
	b->access = tok->access;
	kfree_sensitive(tok);
	spin_lock(&r->lock);
	if (r->dying)
		ret = -ENOENT;
	else if (cmpxchg(&file->private_data, NULL, b))
		ret = -EBUSY;	/* a concurrent MAP on this fd won */
	else
		atomic_inc(&r->mappings);
	spin_unlock(&r->lock);
	if (ret) {
		rof_region_put(r);
		kfree(b);
		return ret;
	}

	req.region = r->id;
	req.size = r->size;
	req.access = b->access;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;	/* bound anyway: closing the fd undoes it */
	return 0;
}

int rof_region_fopen(struct inode *inode, struct file *file)
{
	/* misc_open put the miscdevice here; the binding replaces NULL. */
	file->private_data = NULL;
	return 0;
}

int rof_region_frelease(struct inode *inode, struct file *file)
{
	struct rof_region_binding *b = file->private_data;

	if (b) {
		atomic_dec(&b->region->mappings);
		rof_region_put(b->region);
		kfree(b);
	}
	return 0;
}

static void rof_region_vm_open(struct vm_area_struct *vma)
{
	struct rof_region *r = vma->vm_private_data;

	kref_get(&r->ref);
	atomic_inc(&r->mappings);
}

static void rof_region_vm_close(struct vm_area_struct *vma)
{
	struct rof_region *r = vma->vm_private_data;

	atomic_dec(&r->mappings);
	rof_region_put(r);
}

static const struct vm_operations_struct rof_region_vm_ops = {
	.open	= rof_region_vm_open,
	.close	= rof_region_vm_close,
};

int rof_region_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rof_region_binding *b = READ_ONCE(file->private_data);
	struct rof_region *r;
	int ret;

	if (!b)
		return -ENODEV;
	r = b->region;
	/*
	 * Destroyed: no new mapping.  One that passed this check just
	 * before the destroy is fine: the destroy saw the fd's binding and
	 * left the region's bytes charged until its pages are freed.
	 */
	if (READ_ONCE(r->dying))
		return -ENOENT;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (!(b->access & ROF_ACCESS_WRITE)) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	/* Remote peers write this memory: never executable, now or later. */
	if (vma->vm_flags & VM_EXEC)
		return -EACCES;
	vma->vm_flags &= ~VM_MAYEXEC;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;

	/* Checks vm_pgoff and the length against the region: -ENXIO. */
	ret = vm_map_pages(vma, r->pages, r->npages);
	if (ret)
		return ret;
	vma->vm_ops = &rof_region_vm_ops;
	vma->vm_private_data = r;
	rof_region_vm_open(vma);
	return 0;
}

/* Free lists */

struct rof_freelist *rof_freelist_get(struct rof_tenant *t, u32 id)
{
	struct rof_freelist *fl;

	rcu_read_lock();
	fl = xa_load(&rof_freelists, id);
	if (fl && (fl->region->tenant != t ||
		   !kref_get_unless_zero(&fl->ref)))
		fl = NULL;
	rcu_read_unlock();
	return fl;
}

struct rof_region *rof_freelist_region(const struct rof_freelist *fl)
{
	return fl->region;
}

u64 rof_freelist_offset(const struct rof_freelist *fl)
{
	return fl->offset;
}

/* Format [offset, end) of the region as an empty-then-full free list. */
static void rof_freelist_format(struct rof_freelist *fl)
{
	struct rof_isa_freelist *h = rof_freelist_hdr(fl);
	u64 first = fl->offset + sizeof(*h);
	u8 *base = fl->region->vaddr;
	u32 i;

	/*
	 * The header's magic goes last, so no ALLOC sees a partial list:
	 * clear it first (ordered before the chain) and set it after.
	 */
	WRITE_ONCE(h->magic, 0);
	smp_wmb();	/* magic cleared before the blocks change */
	for (i = 1; i <= fl->count; i++) {
		u64 *next = (u64 *)(base + first + (u64)(i - 1) * fl->block_size);

		WRITE_ONCE(*next, i < fl->count ? i + 1 : 0);
	}
	h->block_size = fl->block_size;
	h->first = first;
	h->nblocks = fl->count;
	memset(h->reserved, 0, sizeof(h->reserved));
	WRITE_ONCE(h->head, 1);		/* generation 0, block 1 */
	smp_wmb();	/* the whole list visible before its magic */
	WRITE_ONCE(h->magic, ROF_FREELIST_MAGIC);
}

/*
 * Count the free blocks by walking the in-region chain, which the tenant
 * may have scribbled on: stop at anything out of bounds or a loop.
 */
static u32 rof_freelist_count_free(const struct rof_freelist *fl, bool *corrupt)
{
	const struct rof_isa_freelist *h = rof_freelist_hdr(fl);
	const u8 *base = fl->region->vaddr;
	u64 first = fl->offset + sizeof(*h);
	u64 idx;
	u32 n = 0;

	*corrupt = true;
	if (READ_ONCE(h->magic) != ROF_FREELIST_MAGIC ||
	    READ_ONCE(h->block_size) != fl->block_size ||
	    READ_ONCE(h->first) != first || READ_ONCE(h->nblocks) != fl->count)
		return 0;
	idx = READ_ONCE(h->head) & 0xffffffffULL;
	while (idx) {
		if (idx > fl->count || n == fl->count)
			return n;
		n++;
		idx = READ_ONCE(*(const u64 *)(base + first +
					       (idx - 1) * fl->block_size)) &
		      0xffffffffULL;
	}
	*corrupt = false;
	return n;
}

static bool rof_freelist_overlaps(struct rof_region *r, u64 start, u64 end)
{
	struct rof_freelist *fl;

	lockdep_assert_held(&rof_regions_lock);
	list_for_each_entry(fl, &r->freelists, rnode) {
		u64 fl_end = fl->offset + (u64)fl->block_size * fl->count;

		fl_end += sizeof(struct rof_isa_freelist);
		if (start < fl_end && fl->offset < end)
			return true;
	}
	return false;
}

/* The rules of a free list's fields. */
static int rof_freelist_check(u32 block_size, u64 offset, u32 count)
{
	if (block_size < 8 || block_size % 8 || offset % 8 || !count)
		return -EINVAL;
	if (count > ROF_FREELIST_BLOCKS_MAX)
		return -E2BIG;
	return 0;
}

/*
 * Where a checked free list ends: its header and blocks, which must fit
 * in a region of @size bytes (-ERANGE).
 */
static int rof_freelist_end(u32 block_size, u64 offset, u32 count, u64 size,
			    u64 *end)
{
	/* < 2^52 + 64: cannot overflow. */
	u64 len = sizeof(struct rof_isa_freelist) + (u64)block_size * count;

	if (check_add_overflow(offset, len, end) || *end > size)
		return -ERANGE;
	return 0;
}

static struct rof_freelist *rof_freelist_alloc(u32 block_size, u64 offset,
					       u32 count)
{
	struct rof_freelist *fl = kzalloc(sizeof(*fl), GFP_KERNEL);

	if (!fl)
		return NULL;
	kref_init(&fl->ref);
	fl->block_size = block_size;
	fl->count = count;
	fl->offset = offset;
	return fl;
}

/*
 * Format @fl inside @r and publish it; on failure @fl is left to the
 * caller to free.  Caller holds rof_regions_lock, has checked the range
 * and that no other list of @r overlaps it.
 */
static int rof_freelist_publish(struct rof_region *r, struct rof_freelist *fl)
{
	int ret;

	lockdep_assert_held(&rof_regions_lock);
	/* Complete before publishing: rof_freelist_get reads it locklessly. */
	kref_get(&r->ref);
	fl->region = r;
	rof_freelist_format(fl);
	ret = xa_alloc_cyclic(&rof_freelists, &fl->id, fl, xa_limit_31b,
			      &rof_freelist_next, GFP_KERNEL);
	if (ret < 0) {
		WRITE_ONCE(rof_freelist_hdr(fl)->magic, 0);
		fl->region = NULL;
		rof_region_put(r);	/* never the last: rof_regions has one */
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	list_add_tail(&fl->rnode, &r->freelists);
	r->nfreelists++;
	rof_tenant_count_freelists(r->tenant, 1);
	return 0;
}

static long rof_freelist_create(void __user *uarg)
{
	struct rof_freelist_create req;
	struct rof_freelist *fl;
	struct rof_region *r;
	u64 end;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	ret = rof_freelist_check(req.block_size, req.offset, req.count);
	if (ret)
		return ret;

	fl = rof_freelist_alloc(req.block_size, req.offset, req.count);
	if (!fl)
		return -ENOMEM;

	mutex_lock(&rof_regions_lock);
	r = xa_load(&rof_regions, req.region);
	if (!r) {
		ret = -ENOENT;
		goto err_unlock;
	}
	ret = rof_freelist_end(req.block_size, req.offset, req.count, r->size,
			       &end);
	if (ret)
		goto err_unlock;
	if (rof_freelist_overlaps(r, req.offset, end)) {
		ret = -EADDRINUSE;
		goto err_unlock;
	}
	ret = rof_freelist_publish(r, fl);
	if (ret)
		goto err_unlock;
	req.id = fl->id;
	mutex_unlock(&rof_regions_lock);

	/*
	 * @fl may be destroyed by id from here on: only compare it, under
	 * the lock (ids are not reused soon, so no other list has its id).
	 */
	if (copy_to_user(uarg, &req, sizeof(req))) {
		mutex_lock(&rof_regions_lock);
		if (xa_load(&rof_freelists, req.id) == fl)
			rof_freelist_unlink(fl);
		mutex_unlock(&rof_regions_lock);
		return -EFAULT;
	}
	return 0;

err_unlock:
	mutex_unlock(&rof_regions_lock);
	kfree(fl);
	return ret;
}

static long rof_freelist_destroy(void __user *uarg)
{
	struct rof_destroy req;
	struct rof_freelist *fl;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~ROF_DESTROY_FORCE || req.reserved)
		return -EINVAL;

	mutex_lock(&rof_regions_lock);
	fl = xa_load(&rof_freelists, req.id);
	if (!fl)
		ret = -ENOENT;
	else if (kref_read(&fl->ref) > 1 && !(req.flags & ROF_DESTROY_FORCE))
		ret = -EBUSY;	/* a program holds it */
	else
		rof_freelist_unlink(fl);
	mutex_unlock(&rof_regions_lock);
	return ret;
}

static u32 rof_freelist_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_freelist_info *info = buf;
	struct rof_freelist *fl;
	unsigned long id, start = *pos;
	bool corrupt;
	u32 n = 0;

	mutex_lock(&rof_regions_lock);
	xa_for_each_start(&rof_freelists, id, fl, start) {
		if (n++ >= cap)
			continue;
		info->offset = fl->offset;
		info->id = fl->id;
		info->region = fl->region->id;
		info->tenant = rof_tenant_id(fl->region->tenant);
		info->block_size = fl->block_size;
		info->count = fl->count;
		info->free = rof_freelist_count_free(fl, &corrupt);
		if (corrupt)
			info->flags |= ROF_FREELIST_CORRUPT;
		info++;
		*pos = id + 1;
		cond_resched();		/* the chain walk is up to 2^20 steps */
	}
	mutex_unlock(&rof_regions_lock);
	return n;
}

static long rof_freelist_list(void __user *uarg)
{
	return rof_list_ioctl(uarg, sizeof(struct rof_freelist_info),
			      rof_freelist_snap, NULL);
}

long rof_region_ioctl(struct file *file, unsigned int cmd, void __user *uarg)
{
	if (cmd == ROF_IOC_REGION_MAP)
		return rof_region_map(file, uarg);
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	switch (cmd) {
	case ROF_IOC_REGION_CREATE:
		return rof_region_create(uarg);
	case ROF_IOC_REGION_DESTROY:
		return rof_region_destroy(uarg);
	case ROF_IOC_REGION_GET:
		return rof_region_get_info(uarg);
	case ROF_IOC_REGION_LIST:
		return rof_region_list(uarg);
	case ROF_IOC_REGION_TOKEN:
		return rof_region_token(uarg);
	case ROF_IOC_FREELIST_CREATE:
		return rof_freelist_create(uarg);
	case ROF_IOC_FREELIST_DESTROY:
		return rof_freelist_destroy(uarg);
	case ROF_IOC_FREELIST_LIST:
		return rof_freelist_list(uarg);
	default:
		return -ENOTTY;
	}
}

int rof_region_init(void)
{
	rof_region_wq = alloc_workqueue("rof_region", WQ_UNBOUND, 0);
	return rof_region_wq ? 0 : -ENOMEM;
}

void rof_region_flush(void)
{
	flush_workqueue(rof_region_wq);
}

void rof_region_exit(void)
{
	struct rof_token *tok, *tmp;

	/* Tokens hold region references but no module reference. */
	mutex_lock(&rof_tokens_lock);
	list_for_each_entry_safe(tok, tmp, &rof_tokens, node) {
		list_del(&tok->node);
		rof_region_put(tok->region);
		kfree_sensitive(tok);
	}
	rof_ntokens = 0;
	mutex_unlock(&rof_tokens_lock);

	/* Runs the pending free works. */
	destroy_workqueue(rof_region_wq);
	WARN_ON(!xa_empty(&rof_regions));
	WARN_ON(!xa_empty(&rof_freelists));
	xa_destroy(&rof_regions);
	xa_destroy(&rof_freelists);
	rcu_barrier();
}
