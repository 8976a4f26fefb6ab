/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * The rof program executor, one source for both sides.
 *
 * rof_exec.c is compiled into rof.ko and, unchanged, into the userspace
 * library rof_exec_user (libclient/prog).  This header hides the few
 * differences: integer types, byte copies, 64-bit atomics and the lock
 * that serialises wide CAS.  docs/isa.md is the specification.
 */
#ifndef ROF_EXEC_H
#define ROF_EXEC_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#include <linux/string.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>
#include <asm/byteorder.h>
#include <linux/build_bug.h>	/* static_assert */
#include "include/uapi/rof.h"	/* ROF_ACCESS_*: the slot access */
#include "include/uapi/rof_isa.h"

#ifndef __LITTLE_ENDIAN
#error "rof programs address memory as little-endian"
#endif

/*
 * A run is process context with no lock held between instructions: it
 * lets other work on its CPU run every ROF_EXEC_YIELD_EVERY instructions,
 * so a program at the largest budget cannot hold a CPU for its whole run.
 */
#include <linux/sched.h>
#define rof_exec_yield()	cond_resched()

struct rof_exec_lock {
	spinlock_t lock;	/* serialises wide CAS on one region */
};

#define ROF_EXEC_LOCK_INIT(l)	spin_lock_init(&(l)->lock)
#define rof_exec_spin_lock(l, fl)	spin_lock_irqsave(&(l)->lock, fl)
#define rof_exec_spin_unlock(l, fl)	spin_unlock_irqrestore(&(l)->lock, fl)
#define rof_exec_load64(p)	READ_ONCE(*(p))
#define rof_exec_store64(p, v)	WRITE_ONCE(*(p), (v))
/* both return the value found at @p before the operation */
#define rof_exec_cmpxchg64(p, o, n)	cmpxchg64((p), (o), (n))
#define rof_exec_fetch_add64(p, v) \
	((u64)atomic64_fetch_add((s64)(v), (atomic64_t *)(p)))

#else /* userspace */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <assert.h>	/* static_assert */
#include <sys/cdefs.h>	/* __always_inline, as the kernel's */
#include "uapi/rof.h"	/* ROF_ACCESS_*: the slot access */
#include "uapi/rof_isa.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rof programs address memory as little-endian"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* the kernel's names, on the uapi types the ABI header uses */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* A test-and-set spinlock; wide CAS holds it for a few dozen bytes. */
struct rof_exec_lock {
	int locked;
};

#define ROF_EXEC_LOCK_INIT(l)	((l)->locked = 0)
#define rof_exec_spin_lock(l, fl) \
	do { \
		(void)(fl); \
		while (__atomic_exchange_n(&(l)->locked, 1, __ATOMIC_ACQUIRE)) \
			; \
	} while (0)
#define rof_exec_spin_unlock(l, fl) \
	__atomic_store_n(&(l)->locked, 0, __ATOMIC_RELEASE)
#define rof_exec_load64(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define rof_exec_store64(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)

static inline u64 rof_exec_cmpxchg64(u64 *p, u64 old, u64 new_val)
{
	__atomic_compare_exchange_n(p, &old, new_val, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	return old;
}

#define rof_exec_fetch_add64(p, v) \
	__atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define rof_exec_yield()	do { } while (0)

/* the kernel's, from <linux/compiler.h> */
#ifndef likely
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif
#define __annotate_jump_table
#endif /* __KERNEL__ */

#define ROF_EXEC_YIELD_EVERY	65536	/* instructions; a power of 2 */

/*
 * What one turn of a session in its completion's softirq or on a polling
 * thread runs at most (docs/kmod.md 8.3): program instructions, below
 * ROF_EXEC_YIELD_EVERY so that no turn reaches a reschedule point and as
 * close to it as that allows (kv-get's worst case is 36331: 8 tries of 16
 * ways of a 33-word key compare, where it runs about 100; at 32768 every GET
 * went to the poll work, a workqueue wake-up each), and bytes moved by
 * COPY, CRC64 and HASH (up to 1 MiB each: a few ms of CRC64 at worst).  An
 * INVOKE runs there only when its program's worst case (budget, byte
 * budget) fits in what the turn has left; a program over either limit runs
 * in its session's poll work every time (ROF_PROG_DEFERRED).
 */
#define ROF_EXEC_ATOMIC_INSNS	(ROF_EXEC_YIELD_EVERY - 1)
#define ROF_EXEC_ATOMIC_BYTES	(2ULL << 20)

/*
 * struct rof_exec_region - one region slot as bound for this invocation.
 *
 * @base points at @len bytes mapped contiguously (vmap'd pages in the
 * module).  @access is what policy granted, intersected with what the
 * image declared.  @freelist is the offset of the struct rof_isa_freelist
 * header inside the region, or ROF_ISA_NULL when the region has none.
 * @lock serialises wide CAS on this region; it may be NULL when the slot
 * has no ROF_ACCESS_ATOMIC.  A slot with @base NULL is unbound.
 */
struct rof_exec_region {
	u8 *base;
	u64 len;
	u32 access;
	u32 flags;		/* 0 */
	u64 freelist;
	struct rof_exec_lock *lock;
};

/*
 * struct rof_exec_op - one instruction slot as rof_exec_decode() wrote it:
 * checked once, its operands unpacked, so that a run does neither per step.
 * Written and read by rof_exec.c only; its size is here so that a caller can
 * keep the decoded form beside the image (rof.ko: per program, at load).
 */
struct rof_exec_op {
	u8 h;		/* the handler: the opcode, or one that faults */
	u8 dst;		/* the register written */
	u8 src;		/* the register read */
	u8 space;	/* a memory access's space */
	u32 x;		/* a jump's target, a memory access's base, a slot */
	u64 imm;	/* the immediate as the instruction reads it */
};

/* The entries rof_exec_decode() writes for @cnt slots: one per slot, one after. */
#define ROF_EXEC_CODE_LEN(cnt)	((u64)(cnt) + 1)

/*
 * Decodes the @cnt slots at @insns into @code, ROF_EXEC_CODE_LEN(@cnt)
 * entries.  Every slot is checked as rof_exec_check_insn() checks it; one
 * that fails (or the second slot of a wide instruction) decodes to a handler
 * that faults ROF_ISA_EINSN when a run reaches it, as an unchecked image
 * would.  0, or -EINVAL when @cnt is 0 or over ROF_ISA_MAX_INSNS.
 */
int rof_exec_decode(const struct rof_insn *insns, u32 cnt,
		    struct rof_exec_op *code);

/*
 * struct rof_exec_ctx - one invocation.
 *
 * In: the instruction array of an image that passed rof_exec_check_image()
 * (and, before that, the verifier; the executor trusts neither) and its
 * decoded form (rof_exec_decode() of the same array), the buffers with their
 * sizes, the bound slots and the budgets.
 * Out: the response length, the program's status (valid when the run
 * returned ROF_ISA_OK), the instructions executed, where a fault happened
 * and the final registers.
 */
struct rof_exec_ctx {
	const struct rof_insn *insns;
	const struct rof_exec_op *code;	/* ROF_EXEC_CODE_LEN(insn_cnt) */
	u32 insn_cnt;
	u32 args_len;
	const u8 *args;
	u8 *scratch;
	u8 *resp;
	u32 scratch_len;
	u32 resp_cap;
	const struct rof_exec_region *regions;
	u32 region_cnt;
	u32 pad;
	u64 budget;		/* instructions */
	u64 byte_budget;	/* bytes moved by COPY, CRC64 and HASH */

	/* out */
	u32 resp_len;
	u32 prog_status;
	u64 executed;
	u64 bytes;
	u32 fault_pc;		/* slot index of the faulting instruction */
	u32 pad2;
	u64 regs[ROF_ISA_NREGS];
};

/* Runs the program; returns an enum rof_isa_status. */
int rof_exec_run(struct rof_exec_ctx *ctx);

/*
 * Structural check of a whole image of @len bytes, as the module does at
 * load: header, sizes, tag, slot table, every instruction's encoding, every
 * jump target in range and on an instruction boundary.  Returns 0, or a
 * negative errno and the failing slot index in *@bad_insn (or ~0U when the
 * header or slot table is at fault).  It proves nothing about behaviour.
 */
int rof_exec_check_image(const void *image, u64 len, u32 *bad_insn);

/* Structural check of one instruction at @pc of @cnt; 0 or -EINVAL. */
int rof_exec_check_insn(const struct rof_insn *insns, u32 cnt, u32 pc);

/* 1 when @op takes two slots. */
int rof_exec_insn_wide(u8 op);

/* One row of the instruction table ROF_ISA_INSNS of uapi/rof_isa.h. */
struct rof_exec_insn_info {
	const char *mnemonic;
	u8 id;		/* enum rof_isa_insn */
	u8 op;		/* the row's first opcode */
	u8 count;	/* opcodes of the family: op .. op + count - 1 */
	u8 form;	/* enum rof_isa_form */
	u8 slots;	/* 1, or 2 for a wide instruction */
	u8 flags;	/* ROF_ISA_F_* */
};

/* The rows, indexed by enum rof_isa_insn; rof_exec_insn_count() of them. */
extern const struct rof_exec_insn_info rof_exec_insns[];
u32 rof_exec_insn_count(void);

/* The row of opcode @op, or NULL when @op starts no instruction. */
const struct rof_exec_insn_info *rof_exec_insn_info(u8 op);

/*
 * ALU op @aop (enum rof_alu) on *@dst and @src, 32-bit when @is32: 0, or
 * ROF_ISA_EDIVZERO / ROF_ISA_EINSN.  The verifier folds constants with it.
 */
int rof_exec_alu(u32 aop, int is32, u64 *dst, u64 src);

/* 1 when jump condition @jop (enum rof_jmp) holds for @a and @b. */
int rof_exec_jmp(u32 jop, int is32, u64 a, u64 b);

/* CRC-64/XZ (ECMA-182 reflected); pass 0 to start, chainable. */
u64 rof_exec_crc64(u64 crc, const void *buf, u64 len);

/* The ISA's HASH: FNV-1a 64 seeded, then the murmur3 fmix64 finaliser. */
u64 rof_exec_hash64(u64 seed, const void *buf, u64 len);

/* The image tag: CRC-64 of the image with hdr.tag read as zero. */
u64 rof_exec_image_tag(const void *image, u64 len);

/* A static name for an enum rof_isa_status, "EBOUNDS" style. */
const char *rof_exec_status_name(int status);

#if !defined(__KERNEL__) && defined(__cplusplus)
}
#endif

#endif /* ROF_EXEC_H */
