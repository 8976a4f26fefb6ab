/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * rof_isa.h - the binary encoding of rof offload programs.
 *
 * docs/isa.md is the specification; this header is its machine-readable
 * half and is compiled by rof.ko, rofd, rofctl and librof alike.
 *
 * An image is: struct rof_isa_hdr, then hdr.slot_cnt struct rof_isa_slot,
 * then hdr.insn_cnt 8-byte instruction slots.  Every multi-byte field is
 * little-endian (the host order of every supported target; rof_exec.h
 * refuses to build elsewhere).
 */
#ifndef _UAPI_ROF_ISA_H
#define _UAPI_ROF_ISA_H

#include <linux/types.h>

#define ROF_ISA_MAGIC		0x50464f52	/* "ROFP" read as LE */
#define ROF_ISA_VERSION		1

/* Hard limits of the encoding; policy may only lower them. */
#define ROF_ISA_MAX_INSNS	16384		/* instruction slots */
#define ROF_ISA_MAX_SLOTS	16		/* region slots */
#define ROF_ISA_NAME_MAX	32		/* slot name, with its NUL */
#define ROF_ISA_MAX_ARGS	(1U << 20)
#define ROF_ISA_MAX_SCRATCH	(1U << 20)
#define ROF_ISA_MAX_RESP	(1U << 20)
#define ROF_ISA_MAX_BULK	(1U << 20)	/* bytes per COPY/CRC64/HASH */
#define ROF_ISA_MAX_TRIP	(1U << 20)	/* trip limit of one LOOP */
#define ROF_ISA_MAX_CAS_WIDTH	32		/* bytes */
#define ROF_ISA_NREGS		16

/* The "no block / no pointer" value: ALLOC on an empty list returns it. */
#define ROF_ISA_NULL		(~(__u64)0)

/*
 * Access of a region slot, declared by the image and granted by policy,
 * are the ABI's region access bits: ROF_ACCESS_READ, ROF_ACCESS_WRITE and
 * ROF_ACCESS_ATOMIC of rof.h.
 */

struct rof_isa_hdr {
	__u32 magic;		/* ROF_ISA_MAGIC */
	__u16 version;		/* ROF_ISA_VERSION */
	__u16 hdr_size;		/* sizeof(struct rof_isa_hdr) == 64 */
	__u32 insn_cnt;		/* 8-byte instruction slots, >= 1 */
	__u32 slot_cnt;		/* region slots, <= ROF_ISA_MAX_SLOTS */
	__u32 args_min;		/* shorter requests are refused unrun */
	__u32 args_max;		/* longer requests are refused unrun */
	__u32 scratch_size;	/* bytes of per-session scratch */
	__u32 resp_max;		/* bytes the response buffer must hold */
	__u32 flags;		/* must be 0 */
	__u32 reserved0;	/* must be 0 */
	__u64 tag;		/* CRC-64/XZ of the image, this field as 0 */
	__u64 reserved[2];	/* must be 0 */
};

struct rof_isa_slot {
	char name[ROF_ISA_NAME_MAX];	/* NUL-terminated, [A-Za-z_][A-Za-z0-9_]* */
	__u32 access;			/* ROF_ACCESS_* the program uses */
	__u32 flags;			/* ROF_SLOT_* */
	__u64 len;			/* the slot's window: region bytes [0, len) */
};

/* rof_isa_slot.flags */
#define ROF_SLOT_FREELIST	(1U << 0)	/* ALLOC/FREE use this slot */

/* Address spaces named by the space byte of a memory operand. */
#define ROF_SPACE_ARGS		0x80	/* the request, read-only */
#define ROF_SPACE_SCRATCH	0x81	/* per session, kept across calls */
#define ROF_SPACE_RESP		0x82	/* the response */
/* 0 .. ROF_ISA_MAX_SLOTS - 1: region slot number */

/* The one 8-byte instruction slot. */
struct rof_insn {
	__u8 op;
	__u8 regs;	/* bits 0-3: dst register, bits 4-7: src register */
	__s16 off;
	__s32 imm;
};

#define ROF_INSN_DST(i)		((i)->regs & 0xf)
#define ROF_INSN_SRC(i)		(((i)->regs >> 4) & 0xf)
#define ROF_REGS(dst, src)	((__u8)(((dst) & 0xf) | (((src) & 0xf) << 4)))

/*
 * Memory reference carried in imm by LD, ST, FAA, CRC64 and HASH:
 * bits 0-7 space, bit 8 "a base register is used", bits 12-15 the
 * auxiliary register (FAA: old value; CRC64/HASH: length).  Other bits 0.
 */
#define ROF_MEM_SPACE(imm)	((__u32)(imm) & 0xff)
#define ROF_MEM_BASE		0x100
#define ROF_MEM_AUX(imm)	(((__u32)(imm) >> 12) & 0xf)
#define ROF_MEM_AUX_SHIFT	12
#define ROF_MEM_MASK		(0xffU | ROF_MEM_BASE | (0xfU << 12))

/* Opcodes.  The second slot of a wide instruction has op ROF_OP_EXT. */
enum rof_isa_op {
	ROF_OP_EXT	= 0x00,	/* never valid as the first slot */
	ROF_OP_LDIMM64	= 0x01,	/* wide */
	ROF_OP_COPY	= 0x02,	/* wide, struct rof_insn_copy */
	ROF_OP_CAS	= 0x03,	/* wide, struct rof_insn_cas */
	ROF_OP_FAA	= 0x04,
	ROF_OP_ALLOC	= 0x05,
	ROF_OP_FREE	= 0x06,
	ROF_OP_CRC64	= 0x07,
	ROF_OP_HASH	= 0x08,
	ROF_OP_EXIT	= 0x09,	/* status = imm */
	ROF_OP_EXIT_REG	= 0x0a,	/* status = low 32 bits of src */
	ROF_OP_RESPOND	= 0x0b,	/* length = src, status = imm */
	ROF_OP_LOOP	= 0x0c,
	ROF_OP_JA	= 0x0d,

	ROF_OP_LD	= 0x10,	/* + log2(size): 0x10 .. 0x13 */
	ROF_OP_ST	= 0x14,	/* + log2(size): 0x14 .. 0x17 */

	ROF_OP_ALU64_IMM = 0x20, /* + enum rof_alu */
	ROF_OP_ALU64_REG = 0x30,
	ROF_OP_ALU32_IMM = 0x40,
	ROF_OP_ALU32_REG = 0x50,

	ROF_OP_JMP64_IMM = 0x60, /* + enum rof_jmp */
	ROF_OP_JMP64_REG = 0x70,
	ROF_OP_JMP32_IMM = 0x80,
	ROF_OP_JMP32_REG = 0x90,
};

enum rof_alu {
	ROF_ALU_ADD	= 0,
	ROF_ALU_SUB	= 1,
	ROF_ALU_MUL	= 2,
	ROF_ALU_DIV	= 3,
	ROF_ALU_MOD	= 4,
	ROF_ALU_AND	= 5,
	ROF_ALU_OR	= 6,
	ROF_ALU_XOR	= 7,
	ROF_ALU_LSH	= 8,
	ROF_ALU_RSH	= 9,
	ROF_ALU_ARSH	= 10,
	ROF_ALU_MOV	= 11,
	ROF_ALU_NEG	= 12,	/* only as ALU64_IMM/ALU32_IMM, imm 0 */
	ROF_ALU_COUNT	= 13,
};

enum rof_jmp {
	ROF_JMP_JEQ	= 0,
	ROF_JMP_JNE	= 1,
	ROF_JMP_JGT	= 2,
	ROF_JMP_JGE	= 3,
	ROF_JMP_JLT	= 4,
	ROF_JMP_JLE	= 5,
	ROF_JMP_JSGT	= 6,
	ROF_JMP_JSGE	= 7,
	ROF_JMP_JSLT	= 8,
	ROF_JMP_JSLE	= 9,
	ROF_JMP_JSET	= 10,
	ROF_JMP_COUNT	= 11,
};

/*
 * The instruction table: every instruction once, in X-macro form, read by
 * the executor's structural check (rof_exec.c), the verifier's decoder,
 * the assembler, the disassembler and the builder (libclient/prog).
 *
 * ROF_ISA_INSNS(X) is a braced initializer list of rows
 * X(id, mnemonic, op, count, form, slots, flags):
 *  id       its name ROF_INSN_<id> in enum rof_isa_insn
 *  mnemonic its assembler name; a family adds a suffix: the ALU op and
 *           the width (add64, neg32), the JMP condition and 32 for the
 *           32-bit form (jeq, jne32), the size in bits (ld8, st64)
 *  op       its first opcode; count opcodes op .. op + count - 1 form the
 *           family (enum rof_alu, enum rof_jmp, log2 of the size)
 *  form     enum rof_isa_form: where its operands sit in the slot(s)
 *  slots    1, or 2 for a wide instruction (second slot: ROF_OP_EXT)
 *  flags    ROF_ISA_F_*
 * Adding an instruction is one row here plus its semantics in
 * rof_exec.c and its transfer function in the verifier (docs/isa.md 12).
 */
enum rof_isa_form {
	ROF_FORM_LDIMM64,	/* dst; imm: low half, second slot imm: high */
	ROF_FORM_COPY,		/* struct rof_insn_copy */
	ROF_FORM_CAS,		/* struct rof_insn_cas */
	ROF_FORM_FAA,		/* mem (base in dst), src addend, aux old */
	ROF_FORM_DIGEST,	/* dst, mem (base in src), aux length */
	ROF_FORM_ALLOC,		/* dst; imm: region slot */
	ROF_FORM_FREE,		/* src; imm: region slot */
	ROF_FORM_EXIT,		/* imm: status */
	ROF_FORM_EXIT_REG,	/* src: status */
	ROF_FORM_RESPOND,	/* src: length; imm: status */
	ROF_FORM_LOOP,		/* dst: counter; off: back to head; imm: trip */
	ROF_FORM_JA,		/* off: forward */
	ROF_FORM_LD,		/* dst, mem (base in src) */
	ROF_FORM_ST,		/* mem (base in dst), src */
	ROF_FORM_ALU,		/* dst, src or imm (ROF_ISA_F_IMM) */
	ROF_FORM_JMP,		/* dst, src or imm (ROF_ISA_F_IMM); off: fwd */
	ROF_FORM_COUNT,
};

#define ROF_ISA_F_IMM		(1U << 0)	/* ALU/JMP immediate operand */
#define ROF_ISA_F_32		(1U << 1)	/* ALU/JMP on the low 32 bits */

#define ROF_ISA_INSNS(X) {						\
	X(LDIMM64, "ldimm64", ROF_OP_LDIMM64, 1, ROF_FORM_LDIMM64, 2, 0) \
	X(COPY, "copy", ROF_OP_COPY, 1, ROF_FORM_COPY, 2, 0)		\
	X(CAS, "cas", ROF_OP_CAS, 1, ROF_FORM_CAS, 2, 0)		\
	X(FAA, "faa", ROF_OP_FAA, 1, ROF_FORM_FAA, 1, 0)		\
	X(ALLOC, "alloc", ROF_OP_ALLOC, 1, ROF_FORM_ALLOC, 1, 0)	\
	X(FREE, "free", ROF_OP_FREE, 1, ROF_FORM_FREE, 1, 0)		\
	X(CRC64, "crc64", ROF_OP_CRC64, 1, ROF_FORM_DIGEST, 1, 0)	\
	X(HASH, "hash", ROF_OP_HASH, 1, ROF_FORM_DIGEST, 1, 0)		\
	X(EXIT, "exit", ROF_OP_EXIT, 1, ROF_FORM_EXIT, 1, 0)		\
	X(EXIT_REG, "exit", ROF_OP_EXIT_REG, 1, ROF_FORM_EXIT_REG, 1, 0) \
	X(RESPOND, "respond", ROF_OP_RESPOND, 1, ROF_FORM_RESPOND, 1, 0) \
	X(LOOP, "loop", ROF_OP_LOOP, 1, ROF_FORM_LOOP, 1, 0)		\
	X(JA, "ja", ROF_OP_JA, 1, ROF_FORM_JA, 1, 0)			\
	X(LD, "ld", ROF_OP_LD, 4, ROF_FORM_LD, 1, 0)			\
	X(ST, "st", ROF_OP_ST, 4, ROF_FORM_ST, 1, 0)			\
	X(ALU64_IMM, "", ROF_OP_ALU64_IMM, ROF_ALU_COUNT, ROF_FORM_ALU, 1, \
	  ROF_ISA_F_IMM)						\
	X(ALU64_REG, "", ROF_OP_ALU64_REG, ROF_ALU_COUNT, ROF_FORM_ALU, 1, 0) \
	X(ALU32_IMM, "", ROF_OP_ALU32_IMM, ROF_ALU_COUNT, ROF_FORM_ALU, 1, \
	  ROF_ISA_F_IMM | ROF_ISA_F_32)					\
	X(ALU32_REG, "", ROF_OP_ALU32_REG, ROF_ALU_COUNT, ROF_FORM_ALU, 1, \
	  ROF_ISA_F_32)							\
	X(JMP64_IMM, "", ROF_OP_JMP64_IMM, ROF_JMP_COUNT, ROF_FORM_JMP, 1, \
	  ROF_ISA_F_IMM)						\
	X(JMP64_REG, "", ROF_OP_JMP64_REG, ROF_JMP_COUNT, ROF_FORM_JMP, 1, 0) \
	X(JMP32_IMM, "", ROF_OP_JMP32_IMM, ROF_JMP_COUNT, ROF_FORM_JMP, 1, \
	  ROF_ISA_F_IMM | ROF_ISA_F_32)					\
	X(JMP32_REG, "", ROF_OP_JMP32_REG, ROF_JMP_COUNT, ROF_FORM_JMP, 1, \
	  ROF_ISA_F_32)							\
}

/* The rows' names: ROF_INSN_LDIMM64 .. ROF_INSN_JMP32_REG. */
#define ROF_ISA_INSN_ID(id, mn, op, count, form, slots, flags) ROF_INSN_##id,
enum rof_isa_insn ROF_ISA_INSNS(ROF_ISA_INSN_ID);
#undef ROF_ISA_INSN_ID

/* Names of the ALU ops, JMP conditions and CAS compare modes, in order. */
#define ROF_ISA_ALU_NAMES {						\
	"add", "sub", "mul", "div", "mod", "and", "or", "xor", "lsh",	\
	"rsh", "arsh", "mov", "neg"					\
}
#define ROF_ISA_JMP_NAMES {						\
	"jeq", "jne", "jgt", "jge", "jlt", "jle", "jsgt", "jsge",	\
	"jslt", "jsle", "jset"						\
}
#define ROF_ISA_CMP_NAMES { "eq", "ne", "lt", "le", "gt", "ge" }

/* COPY: two slots. */
struct rof_insn_copy {
	__u8 op;		/* ROF_OP_COPY */
	__u8 regs;		/* bits 0-3 dst base, bits 4-7 src base */
	__s16 dst_off;
	__u8 dst_space;
	__u8 src_space;
	__u8 mode;		/* ROF_COPY_* */
	__u8 lregs;		/* bits 0-3 length register, 4-7 out register */
	__u8 ext;		/* ROF_OP_EXT */
	__u8 src_tspace;	/* target space of an indirect source */
	__s16 src_off;
	__u32 len;		/* length, or its cap with ROF_COPY_LEN_REG */
};

#define ROF_COPY_DST_BASE	(1U << 0)
#define ROF_COPY_SRC_BASE	(1U << 1)
#define ROF_COPY_SRC_MASK	(3U << 2)
#define ROF_COPY_SRC_DIRECT	(0U << 2)
#define ROF_COPY_SRC_INDIRECT	(1U << 2)	/* u64 pointer at src */
#define ROF_COPY_SRC_BOUNDED	(2U << 2)	/* u64 pointer, u64 bound */
#define ROF_COPY_DST_INDIRECT	(1U << 4)	/* u64 pointer at dst */
#define ROF_COPY_LEN_REG	(1U << 5)
#define ROF_COPY_OUT		(1U << 6)	/* bytes copied -> out reg */
#define ROF_COPY_MODE_MASK	0x7fU

/* CAS: two slots. */
struct rof_insn_cas {
	__u8 op;		/* ROF_OP_CAS */
	__u8 regs;		/* bits 0-3 target base, bits 4-7 out register */
	__s16 off;
	__u8 space;		/* target: a region slot */
	__u8 flags;		/* ROF_CAS_* */
	__u8 width;		/* 8, 16, 24 or 32 bytes */
	__u8 mode;		/* enum rof_cmp */
	__u8 ext;		/* ROF_OP_EXT */
	__u8 oregs;		/* bits 0-3 operand block base, bits 4-7 0 */
	__s16 op_off;
	__u8 op_space;		/* args, scratch or resp */
	__u8 reserved[3];	/* must be 0 */
};

#define ROF_CAS_BASE		(1U << 0)
#define ROF_CAS_OPBASE		(1U << 1)
#define ROF_CAS_OLD		(1U << 2)	/* old value -> block + 4w */
#define ROF_CAS_FLAGS_MASK	0x7U

enum rof_cmp {
	ROF_CMP_EQ	= 0,
	ROF_CMP_NE	= 1,
	ROF_CMP_LT	= 2,
	ROF_CMP_LE	= 3,
	ROF_CMP_GT	= 4,
	ROF_CMP_GE	= 5,
	ROF_CMP_COUNT	= 6,
};

/*
 * Free list header, inside a region with ROF_SLOT_FREELIST, at offset 0.
 * A LIFO of equal-sized blocks: head holds a generation (bits 32-63)
 * against ABA and the 1-based index of the first free block (bits 0-31,
 * 0 = empty); the first 8 bytes of a free block hold the 1-based index
 * of the next free block (0 = last).
 */
struct rof_isa_freelist {
	__u64 magic;		/* ROF_FREELIST_MAGIC */
	__u64 head;		/* generation << 32 | index; atomic */
	__u64 block_size;	/* multiple of 8, >= 8 */
	__u64 first;		/* offset of block 1, multiple of 8 */
	__u64 nblocks;		/* blocks in the pool, < 2^32 */
	__u64 reserved[3];
};

#define ROF_FREELIST_MAGIC	0x5453494c45455246ULL	/* "FREELIST" */

/* What the executor returns; program-chosen statuses are separate. */
enum rof_isa_status {
	ROF_ISA_OK		= 0,	/* EXIT or RESPOND reached */
	ROF_ISA_EINSN		= 1,	/* malformed instruction */
	ROF_ISA_EPC		= 2,	/* control left the program */
	ROF_ISA_EBUDGET		= 3,	/* instruction or byte budget spent */
	ROF_ISA_EBOUNDS		= 4,	/* access outside its buffer/region */
	ROF_ISA_EPTR		= 5,	/* loaded pointer outside its space */
	ROF_ISA_EACCESS		= 6,	/* slot lacks the right / args write */
	ROF_ISA_ESLOT		= 7,	/* slot not bound */
	ROF_ISA_EALIGN		= 8,	/* atomic not 8-byte aligned */
	ROF_ISA_EDIVZERO	= 9,	/* DIV or MOD by zero */
	ROF_ISA_ELEN		= 10,	/* length above its cap */
	ROF_ISA_EFREELIST	= 11,	/* no or corrupt free list */
	ROF_ISA_EFREE		= 12,	/* FREE of something not a block */
	ROF_ISA_ECONTENDED	= 13,	/* lock-free retry limit reached */
	ROF_ISA_ENOLOCK		= 14,	/* wide CAS on a slot without lock */
	ROF_ISA_EARGS		= 15,	/* args length outside the header's */
	ROF_ISA_EINVAL		= 16,	/* bad executor context */
	ROF_ISA_STATUS_COUNT	= 17,
};

#endif /* _UAPI_ROF_ISA_H */
