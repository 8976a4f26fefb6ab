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
 * ROF_ABI_MINOR when commands or flags are added.
 */
#ifndef _UAPI_ROF_H
#define _UAPI_ROF_H

#include <linux/types.h>
#include <linux/ioctl.h>

#include "rof_isa.h"	/* the offload program encoding (docs/isa.md) */

#define ROF_ABI_MAJOR		0
#define ROF_ABI_MINOR		1

#define ROF_DEVICE_PATH		"/dev/rof"
#define ROF_NAME_MAX		64	/* includes the NUL; == IB_DEVICE_NAME_MAX */
#define ROF_VERSION_MAX		32
#define ROF_MAX_PORTS		4	/* ports reported per device */

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
 */
struct rof_list {
	__u64 elems;		/* in: user pointer to the element array */
	__u32 capacity;		/* in: elements the array holds */
	__u32 elem_size;	/* in: sizeof(element), checked by the module */
	__u32 count;		/* out: elements written */
	__u32 total;		/* out: objects that exist */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved;		/* in: must be 0 */
};

#define ROF_LIST_MAX		65536	/* largest capacity accepted */

/* Rights on a region, for remote one-sided verbs and program slots. */
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
};

/*
 * struct rof_audit_record - one entry of the audit ring (64-bit aligned,
 * fixed size).  @seq increases by one per record written; a gap seen by
 * the reader is the number of records lost to overrun.
 */
struct rof_audit_record {
	__u64 seq;
	__u64 time_ns;		/* CLOCK_REALTIME */
	__u32 kind;		/* enum rof_audit_kind */
	__u32 tenant;
	__u32 session;
	__u32 opcode;		/* request opcode, 0 if none */
	__u64 program;		/* program tag, 0 if none */
	__s32 status;		/* 0 or a negative errno / ROF status */
	__u32 reason;		/* kind-specific reason code */
	__u64 bytes;		/* payload bytes moved */
	__u64 latency_ns;	/* receive to response posted */
	__u64 insns;		/* instructions executed */
	__u64 reserved[2];
};

#define ROF_IOC_MAGIC		0xB7

#define ROF_IOC_VERSION		_IOWR(ROF_IOC_MAGIC, 0x00, struct rof_version)
#define ROF_IOC_LIST_DEVICES	_IOWR(ROF_IOC_MAGIC, 0x01, struct rof_list)

#endif /* _UAPI_ROF_H */
