/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rof_core.h - rof.ko internal interfaces, grouped by the file that
 * implements them.
 */
#ifndef ROF_CORE_H
#define ROF_CORE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>

#include "include/uapi/rof.h"

#ifndef ROF_MODULE_VERSION	/* from Kbuild: the project's VERSION file */
#error "ROF_MODULE_VERSION is not defined: build with kmod/Kbuild"
#endif

/* rof_device.c */

/*
 * struct rof_device - one RDMA device the module serves.
 *
 * Created by the ib_client add callback, unlinked and released by its
 * remove callback.  Every user outside rof_device.c holds a reference
 * (rof_device_get/put); the ib_device itself is only touched while the
 * device is linked (rof_devices_lock held, or ->removed false seen under it).
 */
struct rof_device {
	struct kref ref;
	struct list_head node;		/* on rof_devices, under rof_devices_lock */
	struct ib_device *ibdev;	/* valid until the remove callback returns */
	bool removed;
	bool sessions_stopped;		/* rof_session.c: no new sessions on it */
};

int rof_device_init(void);
void rof_device_exit(void);
void rof_device_put(struct rof_device *dev);
/* The rof_device of @ibdev, +1 ref, or NULL once it is being removed. */
struct rof_device *rof_device_get_ib(struct ib_device *ibdev);
long rof_device_list(void __user *uarg);	/* ROF_IOC_DEVICE_LIST */

/*
 * Object model (issue 3).  Everything below is a contract between the
 * files that implement it; the owner of each function is the file named
 * in the banner.  All objects are refcounted and belong to the module,
 * never to a process: closing /dev/rof leaves them in place.
 */

struct rof_tenant;
struct rof_region;
struct rof_session;

/* rof_attach.c */
/*
 * struct rof_attach_set - the users attached to one object (a region, a
 * tenant), which the object can revoke when it is destroyed.
 *
 * - rof_attach adds @a, or fails with -ENOENT once the set is closed; any
 *   context.  @a->revoke must be set first.
 * - rof_attach_close closes the set: no attach succeeds from then on.
 *   Without @force it fails with -EBUSY (and closes nothing) while
 *   anything is attached.  *@count, if given, is the number attached.
 *   Any context; an owner may call it under its own spinlock, so that the
 *   set closes together with the owner's own "dying" state.
 * - rof_attach_revoke_all calls ->revoke for every attachment, one at a
 *   time, from process context and without the set's lock (the caller
 *   holds none of the owner's locks either).  ->revoke must not wait for
 *   the revoker: it detaches at once or queues work that does.  Revokers
 *   of one set are serialised.
 * - rof_detach removes @a; process context.  It may sleep: a detach that
 *   races a revoke of @a (->revoke running in another task) waits until
 *   that ->revoke has returned.  ->revoke itself may detach @a.
 * - rof_attach_wait_empty waits (killable: -EINTR on a fatal signal) until
 *   every attachment has detached.
 */
struct rof_attach {
	struct list_head node;		/* owned by rof_attach.c */
	void (*revoke)(struct rof_attach *a, const char *reason);
};

struct rof_attach_set {
	spinlock_t lock;		/* everything below */
	bool closed;
	unsigned int count;		/* read unlocked by a waiter */
	struct list_head attached;
	struct list_head revoked;	/* revoked, not yet detached */
	struct rof_attach *revoking;	/* ->revoke running, by ->revoker */
	struct task_struct *revoker;
	struct mutex revoke_lock;	/* one revoker at a time */
	wait_queue_head_t wq;		/* ->revoking cleared, ->count 0 */
};

void rof_attach_set_init(struct rof_attach_set *set);
int rof_attach(struct rof_attach_set *set, struct rof_attach *a);
void rof_detach(struct rof_attach_set *set, struct rof_attach *a);
int rof_attach_close(struct rof_attach_set *set, bool force,
		     unsigned int *count);
unsigned int rof_attach_count(struct rof_attach_set *set);
void rof_attach_revoke_all(struct rof_attach_set *set, const char *why);
int rof_attach_wait_empty(struct rof_attach_set *set);

/* rof_ioctl.c: what every command shares */
int rof_name_check(const char *name);	/* -EINVAL unless a valid name */
/*
 * The one LIST shape (issue 11), a whole LIST command: @snap takes its
 * lock, fills at most @cap elements of the kernel array @buf (NULL when
 * @cap is 0) with the objects of id >= *@pos in id order, sets *@pos one
 * past the last one filled, drops the lock and returns how many objects
 * of id >= *@pos (as given) exist; the copy to user space happens with no
 * lock held.
 */
long rof_list_ioctl(void __user *uarg, size_t elem_size,
		    u32 (*snap)(void *buf, u32 cap, u32 *pos, void *arg),
		    void *arg);
/*
 * The one GET shape, a whole GET command: @fill checks the info struct's
 * flags, takes its lock, fills @buf (a kernel copy of the user's struct)
 * from the object it names or fails (-ENOENT), and drops the lock; the
 * copy to user space happens with no lock held.
 */
long rof_get_ioctl(void __user *uarg, size_t size, int (*fill)(void *buf));
/*
 * Race tests' fault injection: with fault_delay_ms set (default 0: off),
 * logs "fault injection: @what @id delayed N ms", then sleeps N ms.
 */
void rof_fault_delay(const char *what, u32 id);

/* rof_tenant.c */
struct rof_tenant *rof_tenant_get(u32 id);	/* +1 ref, or NULL */
void rof_tenant_put(struct rof_tenant *t);
u32 rof_tenant_id(const struct rof_tenant *t);
bool rof_tenant_dying(const struct rof_tenant *t);	/* a destroy has begun */
/* Quota accounting; -EDQUOT when the tenant's quota would be exceeded. */
int rof_tenant_charge_session(struct rof_tenant *t);
void rof_tenant_uncharge_session(struct rof_tenant *t);
u32 rof_tenant_credits_quota(const struct rof_tenant *t);
/*
 * Sessions prepared and not yet live (rof_session.c's
 * max_prepared_sessions): -EMFILE when @t has @cap of them already;
 * a @cap of 0 is no cap.  Any context.
 */
int rof_tenant_charge_prepared(struct rof_tenant *t, u32 cap);
void rof_tenant_uncharge_prepared(struct rof_tenant *t);
/*
 * Bytes its live sessions' message slots (receive and send buffers) hold
 * above ROF_MSG_SIZE each (rof_cm.c's tenant_msg_bytes_max): -EDQUOT past
 * @cap (0: no cap),
 * -ENOENT when the tenant is being destroyed.  Any context.
 */
int rof_tenant_charge_msg(struct rof_tenant *t, u64 bytes, u64 cap);
void rof_tenant_uncharge_msg(struct rof_tenant *t, u64 bytes);
/*
 * Lifetime rules: rof_tenant_get/put work in any context.  Once a tenant
 * is being destroyed, rof_tenant_get returns NULL and
 * rof_tenant_charge_session and rof_tenant_attach fail with -ENOENT.
 * Protection domains are the sessions' own (rof_cm.c), one each.
 *
 * Sessions and programs attach to their tenant (struct rof_attach_set
 * rules) so that a forced tenant destroy or ROF_IOC_TENANT_DRAIN can close them;
 * a session must then detach and uncharge.  The destroy waits (killable)
 * until every session has uncharged.
 */
int rof_tenant_attach(struct rof_tenant *t, struct rof_attach *a);
void rof_tenant_detach(struct rof_tenant *t, struct rof_attach *a);
int rof_tenant_charge_program(struct rof_tenant *t);	/* -EDQUOT */
void rof_tenant_uncharge_program(struct rof_tenant *t);
int rof_tenant_init(void);
void rof_tenant_exit(void);
long rof_tenant_ioctl(unsigned int cmd, void __user *uarg);
/* Used by rof_region.c and rof_audit.c only. */
int rof_tenant_charge_region(struct rof_tenant *t, u64 bytes); /* -EDQUOT */
/*
 * @regions is 1 when the region goes, 0 when only its bytes do: those of a
 * destroyed region whose pages a mapping held, released with the pages.
 */
void rof_tenant_uncharge_region(struct rof_tenant *t, u64 bytes, u32 regions);
void rof_tenant_count_freelists(struct rof_tenant *t, int delta);
/* Its quota's invoke_records (ROF_INVOKE_RECORDS_*, or N); any context. */
u32 rof_tenant_invoke_records(const struct rof_tenant *t);
void rof_tenant_account(const struct rof_audit_record *rec);
/* An INVOKE record of @tenant that rof_audit_log dropped; any context. */
void rof_tenant_count_audit_drop(u32 tenant);

/* rof_region.c */
/*
 * Sessions and programs that use a region attach to it (struct
 * rof_attach_set rules); a forced region destroy revokes every
 * attachment and waits for them to detach.  Destroy without force fails
 * with -EBUSY while attachments exist.
 */
struct rof_region *rof_region_get(struct rof_tenant *t, u32 id); /* or NULL */
void rof_region_put(struct rof_region *r);
int rof_region_attach(struct rof_region *r, struct rof_attach *a);
void rof_region_detach(struct rof_region *r, struct rof_attach *a);
/* The region's memory: pages, a contiguous kernel mapping, size, access. */
struct page **rof_region_pages(struct rof_region *r, unsigned int *npages);
void *rof_region_vaddr(struct rof_region *r);
u64 rof_region_size(const struct rof_region *r);
u32 rof_region_access(const struct rof_region *r);	/* ROF_ACCESS_* */
/*
 * rof_region_get/put, attach and the accessors work in any context (the
 * memory is freed from a workqueue).  rof_region_attach fails with
 * -ENOENT once the region is being destroyed.  rof_region_detach is for
 * process context (it may sleep: racing a revoke of the same attachment,
 * or fault_delay_ms), by a caller that holds a region reference.
 */
/*
 * Region memory is shared live by the NIC, the executor and local
 * mappings, and never synced: after ib_dma_map_sg() of a region's pages
 * for @ibdev, false means the mapping needs syncs (swiotlb bounce
 * buffers, a non-coherent device) and the region must not be served.
 */
bool rof_region_dma_ok(struct ib_device *ibdev, struct scatterlist *sgl,
		       int nents);

/*
 * Free lists (rof_region.c): fixed-size blocks inside a region, in the
 * ISA's in-region layout; the executor's ALLOC/FREE work on the header at
 * rof_freelist_offset() (struct rof_exec_region.freelist).  get/put work
 * in any context.
 */
struct rof_freelist;
struct rof_freelist *rof_freelist_get(struct rof_tenant *t, u32 id); /* or NULL */
void rof_freelist_put(struct rof_freelist *fl);
struct rof_region *rof_freelist_region(const struct rof_freelist *fl);
u64 rof_freelist_offset(const struct rof_freelist *fl);	/* of the header */

int rof_region_init(void);
void rof_region_exit(void);
void rof_region_flush(void);	/* every queued region free has run */
long rof_region_ioctl(struct file *file, unsigned int cmd, void __user *uarg);
/* Destroy every region of @t (tenant destroy); @reason: ROF_DESTROY_*. */
int rof_region_destroy_tenant(struct rof_tenant *t, u32 reason); /* -EINTR */
/* /dev/rof file operations: the fd a ROF_IOC_REGION_MAP binds. */
int rof_region_fopen(struct inode *inode, struct file *file);
int rof_region_frelease(struct inode *inode, struct file *file);
int rof_region_mmap(struct file *file, struct vm_area_struct *vma);

/* rof_audit.c */
/*
 * Fills in seq and time_ns, queues the record for rofd and adds it to the
 * counters of rec->tenant.  Any context.  An INVOKE record that would
 * take the ring's reserve is dropped instead (docs/kmod.md, section 6).
 */
void rof_audit_log(const struct rof_audit_record *rec);	/* any context */
/*
 * A record anyone who reaches the port can cause (a connect refused before
 * a ticket's MAC was checked): never takes the reserve, and is dropped past
 * a rate; counted in the ring's dropped either way.  Any context.
 */
void rof_audit_log_anon(const struct rof_audit_record *rec);
/*
 * A session's INVOKEs that ended with status 0 and got no record (its
 * tenant's invoke_records, or the ring's reserve), until one of its
 * records carries them (rof_audit_record.skipped).  Zeroed with the
 * session.
 */
struct rof_audit_skip {
	atomic64_t count;
	unsigned long carried;	/* jiffies of the last record of the session */
};
/* rof_audit_log of a record of the session @skip is: it carries the count. */
void rof_audit_log_skip(const struct rof_audit_record *rec,
			struct rof_audit_skip *skip);
/* An INVOKE @rec with status 0 that gets no record: counted, not queued. */
void rof_audit_skip_invoke(const struct rof_audit_record *rec,
			   struct rof_audit_skip *skip);
/*
 * A ROF_AUDIT_INVOKE_SKIPPED record of the session (@tenant, @session) if
 * @skip holds a count that no record has carried for a second; process
 * context (the reaper).
 */
void rof_audit_flush_skip(u32 tenant, u32 session, struct rof_audit_skip *skip);
int rof_audit_init(void);
void rof_audit_exit(void);
long rof_audit_ioctl(unsigned int cmd, void __user *uarg);

/* rof_session.c */
void rof_session_device_removed(struct rof_device *dev);
void rof_session_flush(void);	/* every queued close work has run */
int rof_session_init(void);
void rof_session_exit(void);
long rof_session_ioctl(unsigned int cmd, void __user *uarg);

/* rof_dp.c: the sessions' data path (rof_session.h has the rest) */
struct dentry;
void rof_dp_debugfs(struct dentry *dir);	/* debugfs rof/datapath */
/* rof_poll.c */
void rof_poll_debugfs(struct dentry *dir);	/* debugfs rof/poll */

/* rof_ticket.c: the ticket MAC key; checks return enum rof_reject_reason. */
long rof_ticket_set_key(void __user *uarg);
/*
 * @nonce is the session instance's: a connect is accepted only with the
 * ticket of the session as prepared, not with an older one for the same
 * (tenant, id) after a reload.
 */
int rof_ticket_sign(struct rof_ticket *t, u32 tenant, u32 session,
		    u64 expires_ns, __le64 nonce);
bool rof_ticket_have_key(void);	/* a key, once set, stays set */
int rof_ticket_check(const void *data, u8 len, struct rof_ticket *out);
int rof_ticket_init(void);
void rof_ticket_exit(void);

/* rof_ratelimit.c: per-tenant aggregate token buckets. */
struct rof_tenant_rl;
struct rof_tenant_rl *rof_trl_get(struct rof_tenant *t);	/* +1 user, or NULL */
void rof_trl_put(struct rof_tenant_rl *rl);
/* 0 and tokens taken, or nanoseconds until one request of @bytes fits. */
u64 rof_trl_admit(struct rof_tenant_rl *rl, u64 bytes, u64 now_ns);
/* What rof_trl_admit took, back: the request did not run. */
void rof_trl_unadmit(struct rof_tenant_rl *rl, u64 bytes);
/* Bytes known only after admission (a response): a debt if short. */
void rof_trl_charge(struct rof_tenant_rl *rl, u64 bytes);
int rof_rate_check(const struct rof_rate *rate);	/* 0 or -ERANGE */
long rof_tenant_set_rate(void __user *uarg);
void rof_trl_exit(void);

/* rof_prog.c: offload programs, named by (tenant, tag) */
struct rof_prog_scratch;
/*
 * What one data path run may still spend on programs: instructions, and
 * bytes moved by COPY, CRC64 and HASH (up to 1 MiB each, so instructions
 * alone do not bound a run's time).
 */
struct rof_run_budget {
	u64 insns;
	u64 bytes;
	u64 moved;	/* out: bytes the runs moved, for the statistics */
};

/*
 * One INVOKE: returns an enum rof_status, writes the response payload
 * (struct rof_invoke_result, then the program's response) into @out of
 * @out_cap bytes, fills @rec's insns, reason and program (the tag of the
 * program found: a replacement's for a replaced tag), and takes what the
 * run spent from @budget.  *@scratch is the session's, grown here on demand
 * in process context; in atomic context (@atomic) a run that would sleep,
 * or could spend more than @budget holds, returns ROF_PROG_DEFER and does
 * nothing.  rof_prog_scratch_free(NULL) is a no-op.
 */
#define ROF_PROG_DEFER	U32_MAX	/* not a wire status: retry in process context */
u32 rof_prog_invoke(struct rof_tenant *t, struct rof_prog_scratch **scratch,
		    u64 tag, const u8 *args, u32 args_len, u8 *out,
		    u32 out_cap, u32 *out_len, struct rof_audit_record *rec,
		    struct rof_run_budget *budget, bool atomic);
void rof_prog_scratch_free(struct rof_prog_scratch *scratch);
long rof_prog_ioctl(unsigned int cmd, void __user *uarg);
int rof_prog_init(void);
void rof_prog_exit(void);

/* rof_ioctl.c */
long rof_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* ROF_CORE_H */
