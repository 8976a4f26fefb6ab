/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * rof.h - the ABI between rof.ko and userspace (rofd, rofctl, librof).
 *
 * This header is the one contract between the kernel module and every
 * userspace component; both sides compile this very file.  Rules, after
 * Documentation/driver-api/ioctl.rst:
 *  - only fixed-width fields, pointers passed as __u64, explicit padding;
 *  - every struct has "flags" and "reserved" fields; the module refuses
 *    unknown flag bits and non-zero reserved fields with -EINVAL, so they
 *    can be given a meaning later without breaking old binaries;
 *  - a command, once released, never changes: a new layout is a new number;
 *  - names are NUL-terminated within their fixed-size arrays.
 *
 * ROF_ABI_MAJOR changes when an existing command changes meaning;
 * ROF_ABI_MINOR when commands, flags or fields are added (docs/kmod.md,
 * section 1, says what each minor added).
 */
#ifndef _UAPI_ROF_H
#define _UAPI_ROF_H

#include <linux/types.h>
#include <linux/ioctl.h>

#include "rof_isa.h"	/* the offload program encoding (docs/isa.md) */

#define ROF_ABI_MAJOR		0
#define ROF_ABI_MINOR		11	/* 0.11: ROF_PROG_DEFERRED (docs/kmod.md) */

#define ROF_DEVICE_PATH		"/dev/rof"
#define ROF_NAME_MAX		64	/* includes the NUL; == IB_DEVICE_NAME_MAX */
#define ROF_VERSION_MAX		32
#define ROF_MAX_PORTS		4	/* ports reported per device */

/*
 * Names and bounds: the one definition of each that more than one of
 * rof.ko, rofd, the policy files and rofctl checks (docs/architecture.md,
 * "Names and bounds").
 *
 * The name rule, one for every named object (tenants, regions, free lists,
 * programs) and for everything that checks one: a name is 1 ..
 * ROF_NAME_MAX - 1 characters, each one for which rof_name_char() is true
 * (ROF_NAME_CHARSET, ASCII only); in an ABI struct it is NUL-terminated
 * within its char[ROF_NAME_MAX].  rof_name_fault() applies it.  (A
 * program's region slots have the ISA's rule instead: ROF_ISA_NAME_MAX,
 * rof_isa.h.)
 */
#define ROF_NAME_CHARSET	"[A-Za-z0-9._:-]"

static __inline__ int rof_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
	       c == '-';
}

/* What rof_name_fault() finds wrong with a name. */
enum rof_name_fault {
	ROF_NAME_OK		= 0,
	ROF_NAME_EMPTY		= 1,	/* no character */
	ROF_NAME_TOO_LONG	= 2,	/* ROF_NAME_MAX characters or more */
	ROF_NAME_BAD_CHAR	= 3,	/* one for which rof_name_char() is false */
};

/*
 * rof_name_fault - the name rule applied to the @len characters at @name
 * (no NUL needed; a NUL among them is a bad character).  Returns
 * ROF_NAME_OK or the first enum rof_name_fault found, in the order of the
 * enum.
 */
static __inline__ int rof_name_fault(const char *name, __u64 len)
{
	__u64 i;

	if (!len)
		return ROF_NAME_EMPTY;
	if (len >= ROF_NAME_MAX)
		return ROF_NAME_TOO_LONG;
	for (i = 0; i < len; i++)
		if (!rof_name_char(name[i]))
			return ROF_NAME_BAD_CHAR;
	return ROF_NAME_OK;
}

/*
 * Bounds checked in more than one place.  The module's own stand beside
 * their commands below (ROF_CREDITS_QUOTA_MAX, ROF_FREELIST_BLOCKS_MAX,
 * ROF_TOKEN_TTL_MAX_MS, ROF_SESSION_IDLE_MAX_MS, ...); these are the
 * others, which rofd, the policy files and rofctl share.
 */
#define ROF_MS_PER_DAY		86400000U	/* the longest duration in ms a setting takes */
#define ROF_S_PER_DAY		86400U		/* the same in seconds */
/* A session ticket's lifetime, s: [sessions] ticket_ttl_s, OpenSession. */
#define ROF_TICKET_TTL_MAX_S	3600U
/*
 * A tenant's removal grace, ms: [limits] tenant_removal_grace_ms,
 * DestroyTenant's grace_ms, rofctl tenant delete|destroy --grace.
 */
#define ROF_REMOVAL_GRACE_MAX_MS ROF_MS_PER_DAY
/* Module parameter idle_timeout_ms's default: a session prepared with 0. */
#define ROF_SESSION_IDLE_DEFAULT_MS 300000U

/* Port states, numerically equal to the kernel's enum ib_port_state. */
enum rof_port_state {
	ROF_PORT_NOP		= 0,
	ROF_PORT_DOWN		= 1,
	ROF_PORT_INIT		= 2,
	ROF_PORT_ARMED		= 3,
	ROF_PORT_ACTIVE		= 4,
	ROF_PORT_ACTIVE_DEFER	= 5,
};

/* ROF_IOC_VERSION: the module's ABI and release version. No capability. */
struct rof_version {
	__u32 abi_major;			/* out */
	__u32 abi_minor;			/* out */
	char module_version[ROF_VERSION_MAX];	/* out, NUL-terminated */
	__u32 flags;				/* in: must be 0 */
	__u32 reserved;				/* in: must be 0 */
};

struct rof_port_info {
	__u32 port_num;		/* 1-based, as in the verbs API */
	__u32 state;		/* enum rof_port_state */
	__u32 active_mtu;	/* bytes (256 .. 4096); 0 if unknown */
	__u32 reserved;
};

/* rof_device_info.flags */
#define ROF_DEVICE_PORTS_TRUNCATED	(1U << 0) /* num_ports > ROF_MAX_PORTS */

struct rof_device_info {
	char name[ROF_NAME_MAX];	/* e.g. "rxe0", NUL-terminated */
	__u64 node_guid;		/* host byte order */
	__u32 index;			/* the RDMA core's device index */
	__u32 num_ports;		/* ports on the device */
	__u32 flags;			/* ROF_DEVICE_* */
	__u32 reserved;
	struct rof_port_info ports[ROF_MAX_PORTS];
};

/*
 * struct rof_list - the one shape of every LIST command.
 *
 * userspace passes an array of @capacity elements at @elems; the module
 * fills min(@capacity, total) of them, sets @count to that number and
 * @total to how many objects exist.  Call with @capacity == 0 to size the
 * array.  Objects can appear between two calls: retry when total > count.
 *
 * Paging (ABI 0.3): with ROF_LIST_FROM in @flags, the command lists only
 * the objects whose id is at least @start, in increasing id order; @total
 * is how many such objects exist, and @start comes back as one past the
 * id of the last element written (unchanged when @count is 0).  Calling
 * again with that @start while @count < @total lists every object that
 * existed throughout exactly once, however many there are; objects
 * created or destroyed meanwhile may or may not be listed.  The id is
 * the object's id (tenants, regions, free lists, sessions), the RDMA
 * core's index (devices), or, for programs, an id the module keeps
 * internally (struct rof_prog_info has none).  Without the flag @start
 * must be 0.
 */
struct rof_list {
	__u64 elems;		/* in: user pointer to the element array */
	__u32 capacity;		/* in: elements the array holds */
	__u32 elem_size;	/* in: sizeof(element), checked by the module */
	__u32 count;		/* out: elements written */
	__u32 total;		/* out: objects that exist (from @start) */
	__u32 flags;		/* in: ROF_LIST_* */
	__u32 start;		/* in/out with ROF_LIST_FROM, else 0 */
};

/* rof_list.flags */
#define ROF_LIST_FROM		(1U << 0) /* ABI 0.3: page from @start */

#define ROF_LIST_MAX		65536	/* largest capacity accepted */

/* Access on a region, for remote one-sided verbs and program slots. */
#define ROF_ACCESS_READ		(1U << 0)
#define ROF_ACCESS_WRITE	(1U << 1)
#define ROF_ACCESS_ATOMIC	(1U << 2)
#define ROF_ACCESS_ALL		(ROF_ACCESS_READ | ROF_ACCESS_WRITE | \
				 ROF_ACCESS_ATOMIC)

/* What an audit record reports. */
enum rof_audit_kind {
	ROF_AUDIT_INVOKE		= 1,	/* one program invocation */
	ROF_AUDIT_COMPLETION_ERROR	= 2,	/* a work completion in error */
	ROF_AUDIT_SESSION_OPEN		= 3,
	ROF_AUDIT_SESSION_CLOSE		= 4,	/* reason says why */
	ROF_AUDIT_SESSION_REJECT	= 5,	/* connect refused; reason */
	/*
	 * ABI 0.10: only a count: @skipped successful INVOKEs of the session
	 * that got no record (rof_tenant_quota.invoke_records), written when
	 * no record of the session carried them for a second.
	 */
	ROF_AUDIT_INVOKE_SKIPPED	= 6,
};

/*
 * rof_audit_record.reason of ROF_AUDIT_COMPLETION_ERROR: an enum
 * ib_wc_status (below 0x100), or ROF_AUDIT_REASON_EVENT plus an enum
 * ib_event_type when an asynchronous QP or CQ event ended the session
 * (a peer's one-sided protection error can show only as one of these or
 * as a flush, IB_WC_WR_FLUSH_ERR, of the receives).
 */
#define ROF_AUDIT_REASON_EVENT	0x100

/*
 * struct rof_audit_record - one entry of the audit ring (64-bit aligned,
 * fixed size).  @seq increases by one per record written; a gap seen by
 * the reader is the number of records lost to overrun.  INVOKE records
 * and unauthenticated connect rejects dropped to keep the ring's reserve
 * (or, for those rejects, past their rate) get no seq
 * (rof_audit_stats.dropped).
 */
struct rof_audit_record {
	__u64 seq;
	__u64 time_ns;		/* CLOCK_REALTIME */
	__u32 kind;		/* enum rof_audit_kind */
	__u32 tenant;
	__u32 session;
	__u32 opcode;		/* request opcode, 0 if none */
	__u64 tag;		/* INVOKE: the program's tag; else 0 */
	__s32 status;		/* 0 or a negative errno / ROF status */
	__u32 reason;		/* kind-specific reason code */
	__u64 bytes;		/* payload bytes moved */
	__u64 latency_ns;	/* receive to response posted */
	__u64 insns;		/* instructions executed */
	__u64 object;		/* ABI 0.9: REGION_DESTROY: the region's id */
	/*
	 * ABI 0.10 (was reserved, 0): in a record of a session, its INVOKEs
	 * that ended with status 0 and got no record (invoke_records, or the
	 * ring's reserve) since the session's previous record: each record
	 * of the session carries the count and resets it, so the records of
	 * a session up to its SESSION_CLOSE count every such INVOKE once.
	 */
	__u64 skipped;
};

#define ROF_IOC_MAGIC		0xB7

#define ROF_IOC_VERSION		_IOWR(ROF_IOC_MAGIC, 0x00, struct rof_version)
#define ROF_IOC_DEVICE_LIST	_IOWR(ROF_IOC_MAGIC, 0x01, struct rof_list)

/*
 * Tenants, regions, audit (ioctl numbers 0x10-0x3f).
 * See docs/kmod.md for the object model, lifetimes and error codes.
 */

#define ROF_TENANT_ID_MAX	0xffffU	/* tenant ids are 1 .. this; 0 is "none" */
#define ROF_QUOTA_UNLIMITED	(~0ULL)	/* in a u32 quota field: 0xffffffff */
#define ROF_CREDITS_DEFAULT	64	/* requests in flight per session */
#define ROF_CREDITS_QUOTA_MAX	4096
#define ROF_REGION_SIZE_MAX	(1ULL << 34)	/* 16 GiB */
#define ROF_FREELIST_BLOCKS_MAX	(1U << 20)
#define ROF_REGION_FREELISTS_MAX 64	/* free lists one REGION_CREATE makes */
#define ROF_TOKEN_TTL_DEFAULT_MS 60000	/* access token lifetime if 0 given */
#define ROF_TOKEN_TTL_MAX_MS	3600000

/* More enum rof_audit_kind values, reported by the object files. */
enum {
	ROF_AUDIT_REGION_DESTROY	= 16,	/* forced; reason below */
	ROF_AUDIT_TENANT_DESTROY	= 17,	/* forced; reason below */
};

/* rof_audit_record.reason for ROF_AUDIT_REGION/TENANT_DESTROY. */
enum rof_destroy_reason {
	ROF_DESTROY_ADMIN	= 1,	/* a destroy command with ROF_DESTROY_FORCE */
	ROF_DESTROY_TENANT	= 2,	/* its tenant was destroyed */
	ROF_DESTROY_DRAIN	= 3,	/* ROF_IOC_TENANT_DRAIN */
};

/* Flag of every DESTROY command and of ROF_IOC_TENANT_DRAIN. */
#define ROF_DESTROY_FORCE	(1U << 0)	/* revoke users instead of -EBUSY */

/*
 * Limits of a tenant.  A u32 field set to 0xffffffff, or region_bytes to
 * ROF_QUOTA_UNLIMITED, is unlimited.  A new tenant starts unlimited, with
 * credits = ROF_CREDITS_DEFAULT.
 */
struct rof_tenant_quota {
	__u64 region_bytes;	/* bytes of all its regions together */
	__u32 sessions;		/* sessions open at once */
	__u32 programs;		/* programs loaded at once */
	__u32 credits;		/* requests in flight per session, 1 .. ROF_CREDITS_QUOTA_MAX */
	__u32 invoke_records;	/* ABI 0.10 (was reserved, 0): ROF_INVOKE_RECORDS_* */
};

/*
 * rof_tenant_quota.invoke_records: which of the tenant's INVOKEs that end
 * with status 0 get an audit record (one with an error status always
 * does).  Those without one are still counted: in the tenant's counters
 * and in rof_audit_record.skipped.  An older module refuses anything but
 * 0 (EINVAL: this was a reserved field).
 */
#define ROF_INVOKE_RECORDS_ALL		0	/* every one, as before 0.10 */
#define ROF_INVOKE_RECORDS_ERRORS	1	/* none of them */
/* 2 .. ROF_INVOKE_SAMPLE_MAX: N, every Nth of each session (sample:N) */
#define ROF_INVOKE_SAMPLE_MAX		65536

struct rof_tenant_usage {
	__u64 region_bytes;
	__u32 regions;
	__u32 sessions;
	__u32 programs;
	__u32 freelists;
};

/*
 * Monotonic per-tenant counters, accumulated from its audit records as
 * they are written, dropped or (INVOKEs, ABI 0.10) skipped: exact
 * whatever invoke_records says.
 */
struct rof_tenant_counters {
	__u64 invocations;		/* INVOKEs, with a record or not */
	__u64 invoke_errors;		/* ... of which status != 0 */
	__u64 completion_errors;	/* ROF_AUDIT_COMPLETION_ERROR records */
	__u64 bytes;			/* sum of bytes of every INVOKE */
	__u64 insns;			/* sum of insns of every INVOKE */
	__u64 sessions_opened;
	__u64 sessions_closed;
	__u64 sessions_rejected;
	__u64 audit_dropped;		/* ABI 0.2: ROF_AUDIT_INVOKE records not queued */
	__u64 reserved[3];
};

/* rof_tenant_info.flags */
#define ROF_TENANT_DYING	(1U << 0)	/* a forced destroy is under way */

/* Element of ROF_IOC_TENANT_LIST; in/out of ROF_IOC_TENANT_GET. */
struct rof_tenant_info {
	char name[ROF_NAME_MAX];
	__u32 id;		/* GET: in */
	__u32 flags;		/* GET: in, must be 0; out: ROF_TENANT_* */
	struct rof_tenant_quota quota;
	struct rof_tenant_usage usage;
	struct rof_tenant_counters counters;
};

/* rof_tenant_create.flags */
#define ROF_TENANT_CREATE_ID	(1U << 0)	/* use @id instead of assigning one */

/*
 * Names of tenants, regions: the name rule above, NUL-terminated within
 * the array.
 */
struct rof_tenant_create {
	char name[ROF_NAME_MAX];	/* in, unique among tenants */
	__u32 id;		/* in with ROF_TENANT_CREATE_ID, else out */
	__u32 flags;		/* in: ROF_TENANT_CREATE_* */
	__u64 reserved;		/* in: must be 0 */
};

/* Destroy of a tenant, region or free list, by id. */
struct rof_destroy {
	__u32 id;
	__u32 flags;		/* ROF_DESTROY_FORCE */
	__u64 reserved;
};

struct rof_tenant_set_quota {
	__u32 id;
	__u32 flags;		/* must be 0 */
	struct rof_tenant_quota quota;
};

/*
 * A free list that ROF_IOC_REGION_CREATE makes with its region (ABI 0.7):
 * the fields of struct rof_freelist_create, under the same rules.
 */
struct rof_freelist_spec {
	__u64 offset;		/* in: of the header, a multiple of 8 */
	__u32 block_size;	/* in: a multiple of 8, >= 8 */
	__u32 count;		/* in: 1 .. ROF_FREELIST_BLOCKS_MAX */
	__u32 id;		/* out */
	__u32 reserved;		/* in: must be 0 */
};

/* What rof_region_create.freelists points at. */
struct rof_region_freelists {
	__u32 count;		/* in: 0 .. ROF_REGION_FREELISTS_MAX */
	__u32 reserved;		/* in: must be 0 */
	struct rof_freelist_spec list[];
};

struct rof_region_create {
	char name[ROF_NAME_MAX];	/* in, unique within the tenant */
	__u64 size;		/* in: bytes, a multiple of the page size */
	__u32 tenant;		/* in: owner */
	__u32 access;		/* in: ROF_ACCESS_*, the most any grant may give */
	__u32 id;		/* out */
	__u32 flags;		/* in: must be 0 */
	/*
	 * in: 0, or (ABI 0.7) a pointer to a struct rof_region_freelists: the
	 * region is made with every one of them, or not at all; each list's
	 * id is written back.  A module older than 0.7 refuses it (EINVAL:
	 * this was a reserved field).
	 */
	__u64 freelists;
};

/* Element of ROF_IOC_REGION_LIST; in/out of ROF_IOC_REGION_GET. */
struct rof_region_info {
	char name[ROF_NAME_MAX];	/* GET with ROF_GET_BY_NAME: in */
	__u64 size;
	__u32 id;		/* GET: in (out with ROF_GET_BY_NAME) */
	__u32 flags;		/* GET: in, ROF_GET_* */
	__u32 tenant;		/* GET with ROF_GET_BY_NAME: in */
	__u32 access;
	__u32 attachments;	/* sessions/programs using it */
	__u32 mappings;		/* live mmaps and bound /dev/rof fds */
	__u32 freelists;
	__u32 chunks;		/* physically contiguous runs backing it */
};

/* rof_region_info.flags, REGION_GET's input */
#define ROF_GET_BY_NAME		(1U << 0) /* ABI 0.5: @tenant's region @name */

/*
 * ROF_IOC_REGION_TOKEN: mint a one-time token that lets a local process
 * bind its /dev/rof fd to the region (ROF_IOC_REGION_MAP) and mmap it.
 */
struct rof_region_token {
	__u32 region;		/* in */
	__u32 access;		/* in: ROF_ACCESS_READ, optionally | ROF_ACCESS_WRITE */
	__u32 ttl_ms;		/* in: 0 = ROF_TOKEN_TTL_DEFAULT_MS */
	__u32 flags;		/* in: must be 0 */
	__u64 token[2];		/* out: 128 random bits */
};

/* ROF_IOC_REGION_MAP: needs no capability; the token is the authority. */
struct rof_region_map {
	__u64 token[2];		/* in */
	__u32 flags;		/* in: must be 0 */
	__u32 region;		/* out */
	__u64 size;		/* out: bytes mmap may map from offset 0 */
	__u32 access;		/* out: as minted */
	__u32 reserved;		/* in: must be 0 */
};

/*
 * A free list in the ISA's in-region layout (include/uapi/rof_isa.h,
 * docs/isa.md): a struct rof_isa_freelist header (64 bytes) at @offset,
 * then @count blocks of @block_size bytes, block i (1-based) at
 * @offset + 64 + (i - 1) * @block_size.  Creating formats that range with
 * every block free (ALLOC hands them out in address order); destroying
 * clears the header's magic.  Program slots name the list by its id.
 */
struct rof_freelist_create {
	__u32 region;		/* in */
	__u32 block_size;	/* in: a multiple of 8, >= 8 */
	__u64 offset;		/* in: of the header, a multiple of 8 */
	__u32 count;		/* in: 1 .. ROF_FREELIST_BLOCKS_MAX */
	__u32 id;		/* out */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved;		/* in: must be 0 */
};

/* rof_freelist_info.flags */
#define ROF_FREELIST_CORRUPT	(1U << 0)	/* in-region chain is broken */

/* Element of ROF_IOC_FREELIST_LIST. */
struct rof_freelist_info {
	__u64 offset;
	__u32 id;
	__u32 region;
	__u32 tenant;
	__u32 block_size;
	__u32 count;
	__u32 free;		/* blocks on the in-region chain now */
	__u32 flags;		/* ROF_FREELIST_* */
	__u32 reserved;
};

/* rof_audit_open.flags */
#define ROF_AUDIT_NONBLOCK	(1U << 0)	/* the fd is O_NONBLOCK */

/*
 * ROF_IOC_AUDIT_OPEN returns a read-only fd (O_CLOEXEC) from which read()
 * consumes whole struct rof_audit_record entries, oldest first, and
 * poll() reports POLLIN while records are pending.  One reader at a
 * time (-EBUSY); records written while no reader is open are kept, up to
 * the ring size (module parameter audit_ring_size).
 */
struct rof_audit_open {
	__u32 flags;		/* in: ROF_AUDIT_* */
	__s32 fd;		/* out */
	__u64 reserved;		/* in: must be 0 */
};

/*
 * ROF_AUDIT_INVOKE records may fill the ring only up to ring_size -
 * reserve; beyond that they are dropped (counted here and in the tenant's
 * audit_dropped), so that the reserve is always there for every other
 * kind.  So may ROF_AUDIT_SESSION_REJECT records of connects no valid
 * ticket MAC vouched for, which are also dropped past a rate (counted
 * here).  docs/kmod.md, section 6.
 */
struct rof_audit_stats {
	__u64 next_seq;		/* seq the next record will get (first is 1) */
	__u64 overruns;		/* records overwritten before being read */
	__u32 ring_size;	/* records the ring holds */
	__u32 pending;		/* records not read yet */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved;		/* in: must be 0 */
	/* ABI 0.2 */
	__u64 dropped;		/* droppable records (above) dropped, not queued */
	__u32 reserve;		/* slots ROF_AUDIT_INVOKE records cannot take */
	__u32 reserved2;	/* in: must be 0 */
};

/* ROF_IOC_TENANT_DRAIN: destroy every tenant (and so everything) for unload. */
struct rof_drain {
	__u32 flags;		/* in: ROF_DESTROY_FORCE closes sessions too */
	__u32 tenants;		/* out: tenants destroyed */
	__u32 remaining;	/* out: tenants left (busy without FORCE) */
	__u32 reserved;		/* in: must be 0 */
};

#define ROF_IOC_TENANT_CREATE	_IOWR(ROF_IOC_MAGIC, 0x10, struct rof_tenant_create)
#define ROF_IOC_TENANT_DESTROY	_IOW(ROF_IOC_MAGIC, 0x11, struct rof_destroy)
#define ROF_IOC_TENANT_SET_QUOTA _IOW(ROF_IOC_MAGIC, 0x12, struct rof_tenant_set_quota)
#define ROF_IOC_TENANT_GET	_IOWR(ROF_IOC_MAGIC, 0x13, struct rof_tenant_info)
#define ROF_IOC_TENANT_LIST	_IOWR(ROF_IOC_MAGIC, 0x14, struct rof_list)
#define ROF_IOC_REGION_CREATE	_IOWR(ROF_IOC_MAGIC, 0x18, struct rof_region_create)
#define ROF_IOC_REGION_DESTROY	_IOW(ROF_IOC_MAGIC, 0x19, struct rof_destroy)
#define ROF_IOC_REGION_GET	_IOWR(ROF_IOC_MAGIC, 0x1a, struct rof_region_info)
#define ROF_IOC_REGION_LIST	_IOWR(ROF_IOC_MAGIC, 0x1b, struct rof_list)
#define ROF_IOC_REGION_TOKEN	_IOWR(ROF_IOC_MAGIC, 0x1c, struct rof_region_token)
#define ROF_IOC_REGION_MAP	_IOWR(ROF_IOC_MAGIC, 0x1d, struct rof_region_map)
#define ROF_IOC_FREELIST_CREATE	_IOWR(ROF_IOC_MAGIC, 0x20, struct rof_freelist_create)
#define ROF_IOC_FREELIST_DESTROY _IOW(ROF_IOC_MAGIC, 0x21, struct rof_destroy)
#define ROF_IOC_FREELIST_LIST	_IOWR(ROF_IOC_MAGIC, 0x22, struct rof_list)
#define ROF_IOC_AUDIT_OPEN	_IOWR(ROF_IOC_MAGIC, 0x28, struct rof_audit_open)
#define ROF_IOC_AUDIT_STATS	_IOWR(ROF_IOC_MAGIC, 0x29, struct rof_audit_stats)
#define ROF_IOC_TENANT_DRAIN	_IOWR(ROF_IOC_MAGIC, 0x30, struct rof_drain)

/* End of tenants, regions, audit. */

/*
 * Sessions (ioctl numbers 0x40-0x6f): the ticket key, session
 * preparation, the rdma_cm listener's sessions, rate limits.
 * docs/protocol.md specifies the wire format; docs/kmod.md the ioctls.
 */

#define ROF_CM_PORT_DEFAULT	18515	/* module parameter cm_port */
#define ROF_TICKET_KEY_LEN	32	/* HMAC-SHA256 key bytes */
#define ROF_TICKET_MAC_LEN	16	/* HMAC-SHA256 truncated to this */
#define ROF_TICKET_VERSION	1
#define ROF_SESSION_MAX_REGIONS	16	/* regions one session may be granted */
#define ROF_SESSION_CREDITS_MAX	512	/* credits a session gets at most */
#define ROF_RATE_MAX		100000000000ULL	/* ops/s or bytes/s; 0 = none */
#define ROF_MSG_SIZE		1024	/* a session's message size by default, and least */
#define ROF_MSG_SIZE_MAX	65536	/* ABI 0.8: a session's message size at most */
#define ROF_SESSION_IDLE_MAX_MS	ROF_MS_PER_DAY	/* idle_timeout_ms at most */

/*
 * struct rof_ticket - the connect private data of a session (48 bytes; an
 * RC connect request over IB CM carries 56 after the rdma_cm header).
 * Integers are little-endian.  @mac is the first ROF_TICKET_MAC_LEN bytes
 * of HMAC-SHA256 under the ticket key over bytes [0, offsetof(mac)).
 * A ticket is the one ROF_IOC_SESSION_PREPARE returns: its @nonce is
 * the prepared session's own, and a connect whose nonce differs from the
 * session's is refused (ROF_REJECT_NO_SESSION), so a ticket never outlives
 * the session instance it was issued for (ids restart after a reload).
 */
struct rof_ticket {
	__u8 version;		/* ROF_TICKET_VERSION */
	__u8 reserved[3];	/* 0 */
	__le32 tenant;
	__le32 session;
	__le32 reserved2;	/* 0 */
	__le64 expires_ns;	/* CLOCK_REALTIME; connect refused after it */
	__le64 nonce;		/* the session instance's, random */
	__u8 mac[ROF_TICKET_MAC_LEN];
};

#define ROF_TICKET_MAC_OFFSET	32	/* == offsetof(struct rof_ticket, mac) */

/* Why a connect was refused: the REJ private data and the audit reason. */
enum rof_reject_reason {
	ROF_REJECT_NO_TICKET	= 1,	/* no private data or version 0 */
	ROF_REJECT_VERSION	= 2,	/* unknown ticket version or reserved bits */
	ROF_REJECT_NO_KEY	= 3,	/* rofd has not set a ticket key yet */
	ROF_REJECT_BAD_MAC	= 4,	/* forged or corrupted */
	ROF_REJECT_EXPIRED	= 5,
	ROF_REJECT_NO_SESSION	= 6,	/* no prepared session with that id */
	ROF_REJECT_WRONG_TENANT	= 7,	/* session belongs to another tenant */
	ROF_REJECT_IN_USE	= 8,	/* the session is connected already */
	ROF_REJECT_NO_TENANT	= 9,	/* the tenant is gone */
	ROF_REJECT_QUOTA	= 10,	/* session quota or tenant_msg_bytes_max */
	ROF_REJECT_NO_REGION	= 11,	/* a granted region is gone */
	ROF_REJECT_RESOURCES	= 12,	/* QP, CQ, MR or memory allocation failed */
	ROF_REJECT_DEVICE	= 13,	/* the device is going away */
};

/* The private data of every REJ the module sends (8 bytes). */
struct rof_reject {
	__le32 magic;		/* ROF_REJECT_MAGIC */
	__le32 reason;		/* enum rof_reject_reason */
};

#define ROF_REJECT_MAGIC	0x4a455246U	/* "FREJ" little-endian */

/* Why a session ended: rof_audit_record.reason of ROF_AUDIT_SESSION_CLOSE. */
enum rof_close_reason {
	ROF_CLOSE_DISCONNECT	= 1,	/* the client disconnected */
	ROF_CLOSE_QP_ERROR	= 2,	/* a completion in error */
	ROF_CLOSE_IDLE		= 3,	/* idle timeout */
	ROF_CLOSE_ADMIN		= 4,	/* ROF_IOC_SESSION_CLOSE */
	ROF_CLOSE_REVOKED	= 5,	/* a granted region or its tenant was destroyed */
	ROF_CLOSE_DEVICE	= 6,	/* the RDMA device was removed */
	/*
	 * More requests waiting than credits, or a SEND or RDMA WRITE with
	 * immediate data.  A malformed request does not close the session:
	 * it is answered with a ROF_ST_BAD_* status.
	 */
	ROF_CLOSE_PROTOCOL	= 7,
	ROF_CLOSE_UNLOAD	= 8,	/* module unload */
	ROF_CLOSE_EXPIRED	= 9,	/* prepared, never connected, ticket expired */
};

/* ROF_IOC_TICKET_SET_KEY: the MAC key of every ticket from now on. */
struct rof_ticket_key {
	__u8 key[ROF_TICKET_KEY_LEN];	/* in: random bytes */
	__u32 flags;			/* in: must be 0 */
	__u32 reserved;			/* in: must be 0 */
};

/* One granted region; @access is a subset of the region's access. */
struct rof_session_grant {
	__u32 region;		/* region id, of the session's tenant */
	__u32 access;		/* ROF_ACCESS_*, not 0 */
};

/* Rate limits; 0 means unlimited, else 1 .. ROF_RATE_MAX. */
struct rof_rate {
	__u64 ops_per_sec;	/* requests answered per second */
	__u64 bytes_per_sec;	/* request + response payload bytes per second */
};

/*
 * ROF_IOC_SESSION_PREPARE: reserve a session for one connection and
 * return its id and a ticket for it.  The session waits, holding nothing,
 * until a client connects with the ticket or @expires_ns passes.  A
 * tenant may have at most the module parameter max_prepared_sessions
 * (default 64) prepared and not yet live (PREPARED or CONNECTING) at
 * once; a prepare beyond that fails with EMFILE until one of them is
 * live, closed or expired.  Other tenants are not affected.
 */
struct rof_session_prepare {
	__u32 tenant;		/* in */
	__u32 nregions;		/* in: 0 .. ROF_SESSION_MAX_REGIONS */
	struct rof_session_grant regions[ROF_SESSION_MAX_REGIONS]; /* in */
	struct rof_rate rate;	/* in */
	__u64 expires_ns;	/* in: CLOCK_REALTIME, in the future */
	__u32 idle_timeout_ms;	/* in: 0 = module parameter idle_timeout_ms */
	__u32 flags;		/* in: must be 0 */
	__u32 session;		/* out: session id, never reused while loaded */
	/*
	 * in (ABI 0.8; was reserved): the largest request or response of
	 * the session, bytes: 0 = ROF_MSG_SIZE, else a power of two from
	 * ROF_MSG_SIZE to ROF_MSG_SIZE_MAX (else EINVAL).  An older module
	 * refuses any non-zero value with EINVAL.
	 */
	__u32 msg_size;
	struct rof_ticket ticket; /* out: a ticket with a random nonce */
};

enum rof_session_state {
	ROF_SESSION_PREPARED	= 1,	/* waiting for its connect */
	ROF_SESSION_CONNECTING	= 2,	/* accepted, not established yet */
	ROF_SESSION_LIVE	= 3,
	ROF_SESSION_CLOSING	= 4,
};

/* rof_session_info.flags (out) */
#define ROF_SESSION_QP_PACED	(1U << 0) /* IB_QP_RATE_LIMIT pacing in use */

struct rof_session_counters {
	__u64 requests;		/* requests answered */
	__u64 bytes_in;		/* request payload bytes */
	__u64 bytes_out;	/* response payload bytes */
	__u64 deferred;		/* times processing waited for tokens */
	__u64 completion_errors;
	__u64 bad_requests;	/* answered with an error status */
	__u64 reserved[2];
};

/* Element of ROF_IOC_SESSION_LIST; in/out of ROF_IOC_SESSION_GET. */
struct rof_session_info {
	__u32 id;		/* GET: in */
	__u32 flags;		/* GET: in, must be 0; out: ROF_SESSION_* */
	__u32 tenant;
	__u32 state;		/* enum rof_session_state */
	char device[ROF_NAME_MAX]; /* RDMA device, "" until connected */
	__u32 port_num;
	__u32 credits;		/* requests in flight the client may have */
	__u32 nregions;
	__u32 idle_timeout_ms;
	struct rof_session_grant regions[ROF_SESSION_MAX_REGIONS];
	struct rof_rate rate;
	__u64 expires_ns;	/* ticket expiry */
	__u64 connected_ns;	/* CLOCK_REALTIME, 0 until established */
	__u8 peer_addr[16];	/* IPv6, or IPv4-mapped IPv6 */
	__u16 peer_port;	/* host byte order */
	__u16 reserved16;
	__u32 msg_size;		/* ABI 0.8: the session's message size (was reserved) */
	struct rof_session_counters counters;
};

struct rof_session_close {
	__u32 session;		/* in */
	__u32 flags;		/* in: must be 0 */
	__u64 reserved;		/* in: must be 0 */
};

/* ROF_IOC_TENANT_SET_RATE: the aggregate limit of all a tenant's sessions. */
struct rof_tenant_rate {
	__u32 tenant;		/* in */
	__u32 flags;		/* in: must be 0 */
	struct rof_rate rate;	/* in: 0 fields = unlimited */
};

#define ROF_IOC_TICKET_SET_KEY	_IOW(ROF_IOC_MAGIC, 0x40, struct rof_ticket_key)
#define ROF_IOC_SESSION_PREPARE	_IOWR(ROF_IOC_MAGIC, 0x41, struct rof_session_prepare)
#define ROF_IOC_SESSION_LIST	_IOWR(ROF_IOC_MAGIC, 0x42, struct rof_list)
#define ROF_IOC_SESSION_GET	_IOWR(ROF_IOC_MAGIC, 0x43, struct rof_session_info)
#define ROF_IOC_SESSION_CLOSE	_IOW(ROF_IOC_MAGIC, 0x44, struct rof_session_close)
#define ROF_IOC_TENANT_SET_RATE	_IOW(ROF_IOC_MAGIC, 0x45, struct rof_tenant_rate)

/*
 * Session wire format (docs/protocol.md).  All integers little-endian.
 * Every message, request or response, is one SEND of at most the
 * session's message size (rof_accept.msg_size: ROF_MSG_SIZE unless the
 * prepare chose a larger one) bytes: a 16-byte header and a payload of
 * header.len bytes.
 */
#define ROF_WIRE_VERSION	1
#define ROF_ACCEPT_MAGIC	0x43434146U	/* "FACC" little-endian */
#define ROF_WELCOME_ID		0	/* request id of the region table */

/* The private data of the module's REP (accept). */
struct rof_accept {
	__le32 magic;		/* ROF_ACCEPT_MAGIC */
	__u8 version;		/* ROF_WIRE_VERSION */
	__u8 nregions;		/* entries the welcome message will carry */
	__le16 credits;		/* requests the client may have outstanding */
	__le32 session;
	__le32 msg_size;	/* the session's: receive buffers must hold this */
};

enum rof_opcode {
	ROF_OP_NOP	= 1,	/* empty response */
	ROF_OP_ECHO	= 2,	/* response payload = request payload */
	ROF_OP_INVOKE	= 3,	/* payload: struct rof_invoke, then arguments */
};

/* enum rof_status: the status of a response. */
enum rof_status {
	ROF_ST_OK		= 0,
	ROF_ST_BAD_OPCODE	= 1,
	ROF_ST_BAD_LENGTH	= 2,	/* header.len disagrees with the message */
	ROF_ST_BAD_FLAGS	= 3,
	ROF_ST_NO_PROGRAM	= 4,	/* INVOKE of a program not loaded */
	/* INVOKE outcomes, docs/protocol.md section 5 and "Programs" below */
	ROF_ST_PROG_FAULT	= 5,	/* the executor stopped the program */
	ROF_ST_PROG_REVOKED	= 6,	/* a region it is bound to was destroyed */
	ROF_ST_BAD_ARGS		= 7,	/* args outside [args_min, args_max] */
	ROF_ST_NO_MEMORY	= 8,	/* the session's scratch: out of memory */
	/* The program's resp_max does not fit the session's messages. */
	ROF_ST_MSG_SIZE		= 9,
};

struct rof_req_hdr {
	__le64 id;		/* echoed in the response; not ROF_WELCOME_ID */
	__le16 opcode;		/* enum rof_opcode */
	__le16 flags;		/* must be 0 */
	__le32 len;		/* payload bytes after the header */
};

struct rof_resp_hdr {
	__le64 id;
	__le32 status;		/* enum rof_status */
	__le32 len;		/* payload bytes after the header */
};

struct rof_invoke {
	__le64 tag;		/* the program's tag (rof_isa_hdr.tag) */
};

/* The welcome message's payload: one entry per granted region. */
struct rof_wire_region {
	__le64 addr;		/* remote address of the region's first byte */
	__le64 length;
	__le32 rkey;		/* this session's key; dies with the session */
	__le32 region;		/* region id */
	__le32 access;		/* ROF_ACCESS_* granted */
	__le32 reserved;
};

/* End of sessions. */

/*
 * Programs (ioctl numbers 0x70-0x8f): verified offload programs
 * (docs/isa.md) loaded into the module, owned by a tenant and run by
 * INVOKE requests of that tenant's sessions.  A program is named by its
 * tenant and its tag (the image's content hash, rof_isa_hdr.tag), which
 * is what struct rof_invoke carries.  docs/kmod.md, "Programs".
 */

/* Largest image: header, 16 slots, ROF_ISA_MAX_INSNS instruction slots. */
#define ROF_PROG_IMAGE_MAX	(64 + 48 * ROF_ISA_MAX_SLOTS + 8 * ROF_ISA_MAX_INSNS)

/*
 * An INVOKE's arguments and a program's response live in one message of
 * the session: at most ROF_INVOKE_ARGS(msg_size) and ROF_INVOKE_RESP
 * (msg_size) bytes.  A program whose args_min or resp_max does not fit
 * the largest message is refused at load; an INVOKE of a program whose
 * resp_max does not fit the session's messages is answered
 * ROF_ST_MSG_SIZE (ABI 0.8; before, every session had ROF_MSG_SIZE and
 * these bounds were ROF_MSG_SIZE's).
 */
#define ROF_INVOKE_ARGS(msg)	((msg) - 16 - 8)
#define ROF_INVOKE_RESP(msg)	((msg) - 16 - 16)
#define ROF_INVOKE_ARGS_MAX	ROF_INVOKE_ARGS(ROF_MSG_SIZE_MAX)
#define ROF_INVOKE_RESP_MAX	ROF_INVOKE_RESP(ROF_MSG_SIZE_MAX)

/*
 * The payload of an INVOKE response with status ROF_ST_OK or
 * ROF_ST_PROG_FAULT; with OK the program's response bytes follow.
 */
struct rof_invoke_result {
	__le32 prog_status;	/* the program's exit/respond status; 0 on a fault */
	__le32 exec_status;	/* enum rof_isa_status: 0, or the fault */
	__le32 fault_pc;	/* slot index of the faulting instruction, else 0 */
	__le32 insns;		/* instructions executed */
};

/* Binds one region slot of an image (slot i: bind[i]). */
struct rof_prog_bind {
	__u32 region;		/* a region of the program's tenant */
	__u32 freelist;		/* ROF_SLOT_FREELIST slots: a free list in it; else 0 */
};

struct rof_prog_load {
	__u64 image;		/* in: user pointer to the image */
	__u32 image_len;	/* in: bytes, <= ROF_PROG_IMAGE_MAX */
	__u32 tenant;		/* in: the owner */
	__u64 budget;		/* in: instructions per run, the verifier's worst case */
	__u64 byte_budget;	/* in: bytes COPY/CRC64/HASH may move per run */
	char name[ROF_NAME_MAX]; /* in: a label, the names rule of tenants */
	__u32 nbind;		/* in: == the image's slot_cnt */
	__u32 flags;		/* in: must be 0 */
	struct rof_prog_bind bind[ROF_ISA_MAX_SLOTS]; /* in; unused entries 0 */
	__u64 tag;		/* out: the image's tag */
	__u32 error_insn;	/* out, with -ENOEXEC: failing slot, ~0 = header */
	__u32 reserved;		/* in: must be 0 */
};

/* Names one program: ROF_IOC_PROG_UNLOAD. */
struct rof_prog_id {
	__u64 tag;
	__u32 tenant;
	__u32 flags;		/* must be 0 */
	__u64 reserved;		/* must be 0 */
};

/* rof_prog_info.flags (out) */
#define ROF_PROG_REVOKED	(1U << 0) /* a bound region was destroyed */
/*
 * ABI 0.11: its worst case (budget or byte_budget) is over what one softirq
 * or polling-thread turn runs: every INVOKE of it runs in its session's poll
 * work, a workqueue wake-up each (docs/kmod.md 8.3).
 */
#define ROF_PROG_DEFERRED	(1U << 1)

/* Element of ROF_IOC_PROG_LIST; in/out of ROF_IOC_PROG_GET. */
struct rof_prog_info {
	char name[ROF_NAME_MAX];
	__u64 tag;		/* GET: in */
	__u32 tenant;		/* GET: in */
	__u32 flags;		/* GET: in, must be 0; out: ROF_PROG_* */
	__u64 budget;
	__u64 byte_budget;
	__u32 insn_cnt;		/* instruction slots */
	__u32 nbind;		/* region slots */
	__u32 args_min;
	__u32 args_max;
	__u32 scratch_size;
	__u32 resp_max;
	struct rof_prog_bind bind[ROF_ISA_MAX_SLOTS];
	__u64 loaded_ns;	/* CLOCK_REALTIME */
	__u64 invocations;	/* runs started */
	__u64 faults;		/* runs the executor stopped */
	__u64 insns;		/* instructions executed, all runs */
	__u32 aliases;		/* tags of replaced programs it serves */
	__u32 reserved0;
	__u64 reserved;
};

/*
 * ROF_IOC_PROG_REPLACE: load @load's image as ROF_IOC_PROG_LOAD does and,
 * in one step, make it serve every INVOKE that named the tenant's program
 * @old_tag or a tag that program served for (up to ROF_PROG_ALIASES_MAX;
 * past it, the tag an INVOKE named longest ago is let go first, so one in
 * use stays through any number of replaces); then unload the old program
 * once the runs under way in it have finished.  An INVOKE sees the old
 * program or the new one, never neither.  The new program takes over the old one's
 * charge against the tenant's program quota.  Only INVOKE follows a
 * replaced tag: PROG_GET, PROG_UNLOAD and a second REPLACE name programs
 * by their own tag.  -ENOENT: no program @old_tag of the tenant;
 * -EEXIST: the tenant has a program with the new image's tag (the old
 * one included); otherwise the errors of ROF_IOC_PROG_LOAD.
 */
struct rof_prog_replace {
	struct rof_prog_load load;	/* in/out, as ROF_IOC_PROG_LOAD's */
	__u64 old_tag;			/* in: the tenant's program to replace */
	__u64 reserved;			/* in: must be 0 */
};

/* Tags one program answers INVOKEs for besides its own. */
#define ROF_PROG_ALIASES_MAX	16

#define ROF_IOC_PROG_LOAD	_IOWR(ROF_IOC_MAGIC, 0x70, struct rof_prog_load)
#define ROF_IOC_PROG_UNLOAD	_IOW(ROF_IOC_MAGIC, 0x71, struct rof_prog_id)
#define ROF_IOC_PROG_GET	_IOWR(ROF_IOC_MAGIC, 0x72, struct rof_prog_info)
#define ROF_IOC_PROG_LIST	_IOWR(ROF_IOC_MAGIC, 0x73, struct rof_list)
#define ROF_IOC_PROG_REPLACE	_IOWR(ROF_IOC_MAGIC, 0x74, struct rof_prog_replace)

/* End of programs. */

#endif /* _UAPI_ROF_H */
