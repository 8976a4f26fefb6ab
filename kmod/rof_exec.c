// SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT)
/*
 * The interpreter of rof offload programs.
 *
 * The same file is built into rof.ko and into the userspace library
 * rof_exec_user; rof_exec.h hides the differences.  docs/isa.md is the
 * specification.  The verifier (libclient/prog) runs before this, but
 * nothing here relies on it: every instruction is decoded defensively,
 * every access is bounds- and access-checked, and the instruction budget
 * is enforced, so a verifier bug becomes an error status, never a stray
 * access.
 */
#include "rof_exec.h"

/* A cmpxchg that keeps failing means others make progress; give up. */
#define ROF_EXEC_RETRIES	64

#define ROF_SLOT_SIZE		sizeof(struct rof_isa_slot)
#define ROF_HDR_SIZE		sizeof(struct rof_isa_hdr)

/* CRC-64/XZ, reflected polynomial 0xC96C5795D7870F42, a nibble at a time */
static const u64 rof_crc64_nibble[16] = {
	0x0000000000000000ULL, 0x7d9ba13851336649ULL,
	0xfb374270a266cc92ULL, 0x86ace348f355aadbULL,
	0x64b62bcaebc387a1ULL, 0x192d8af2baf0e1e8ULL,
	0x9f8169ba49a54b33ULL, 0xe21ac88218962d7aULL,
	0xc96c5795d7870f42ULL, 0xb4f7f6ad86b4690bULL,
	0x325b15e575e1c3d0ULL, 0x4fc0b4dd24d2a599ULL,
	0xadda7c5f3c4488e3ULL, 0xd041dd676d77eeaaULL,
	0x56ed3e2f9e224471ULL, 0x2b769f17cf112238ULL,
};

u64 rof_exec_crc64(u64 crc, const void *buf, u64 len)
{
	const u8 *p = buf;
	u64 i;

	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ rof_crc64_nibble[crc & 0xf];
		crc = (crc >> 4) ^ rof_crc64_nibble[crc & 0xf];
	}
	return ~crc;
}

u64 rof_exec_hash64(u64 seed, const void *buf, u64 len)
{
	const u8 *p = buf;
	u64 h = 0xcbf29ce484222325ULL ^ seed;
	u64 i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

u64 rof_exec_image_tag(const void *image, u64 len)
{
	static const u8 zero[8];
	const u8 *p = image;
	u64 tag_off = 40;	/* offsetof(struct rof_isa_hdr, tag) */
	u64 crc;

	if (len < tag_off + 8)
		return rof_exec_crc64(0, p, len);
	crc = rof_exec_crc64(0, p, tag_off);
	crc = rof_exec_crc64(crc, zero, 8);
	return rof_exec_crc64(crc, p + tag_off + 8, len - tag_off - 8);
}

const char *rof_exec_status_name(int status)
{
	static const char * const names[ROF_ISA_STATUS_COUNT] = {
		[ROF_ISA_OK] = "OK",
		[ROF_ISA_EINSN] = "EINSN",
		[ROF_ISA_EPC] = "EPC",
		[ROF_ISA_EBUDGET] = "EBUDGET",
		[ROF_ISA_EBOUNDS] = "EBOUNDS",
		[ROF_ISA_EPTR] = "EPTR",
		[ROF_ISA_EACCESS] = "EACCESS",
		[ROF_ISA_ESLOT] = "ESLOT",
		[ROF_ISA_EALIGN] = "EALIGN",
		[ROF_ISA_EDIVZERO] = "EDIVZERO",
		[ROF_ISA_ELEN] = "ELEN",
		[ROF_ISA_EFREELIST] = "EFREELIST",
		[ROF_ISA_EFREE] = "EFREE",
		[ROF_ISA_ECONTENDED] = "ECONTENDED",
		[ROF_ISA_ENOLOCK] = "ENOLOCK",
		[ROF_ISA_EARGS] = "EARGS",
		[ROF_ISA_EINVAL] = "EINVAL",
	};

	if (status < 0 || status >= ROF_ISA_STATUS_COUNT)
		return "UNKNOWN";
	return names[status];
}

#define ROF_INSN_ROW(id, mn, op, count, form, slots, flags)		\
	[ROF_INSN_##id] = { mn, ROF_INSN_##id, op, count, form, slots, flags },
const struct rof_exec_insn_info rof_exec_insns[] = ROF_ISA_INSNS(ROF_INSN_ROW);

u32 rof_exec_insn_count(void)
{
	return ARRAY_SIZE(rof_exec_insns);
}

/* Opcode -> its row + 1; 0 where no instruction starts. */
#define ROF_INSN_OPS(id, mn, op, count, form, slots, flags)		\
	[(op) ... (op) + (count) - 1] = ROF_INSN_##id + 1,
static const u8 rof_op_row[256] = ROF_ISA_INSNS(ROF_INSN_OPS);

static inline const struct rof_exec_insn_info *rof_row(u8 op)
{
	return rof_op_row[op] ? &rof_exec_insns[rof_op_row[op] - 1] : NULL;
}

const struct rof_exec_insn_info *rof_exec_insn_info(u8 op)
{
	return rof_row(op);
}

int rof_exec_insn_wide(u8 op)
{
	const struct rof_exec_insn_info *ii = rof_row(op);

	return ii && ii->slots == 2;
}

static __always_inline int rof_space_valid(u32 space)
{
	return space < ROF_ISA_MAX_SLOTS || space == ROF_SPACE_ARGS ||
	       space == ROF_SPACE_SCRATCH || space == ROF_SPACE_RESP;
}

/* Checks a LD/ST/FAA/CRC64/HASH memory reference; @base is its base reg. */
static __always_inline int rof_memref_ok(s32 imm, u32 base, int aux_used)
{
	u32 m = (u32)imm;

	if (m & ~ROF_MEM_MASK)
		return 0;
	if (!rof_space_valid(ROF_MEM_SPACE(m)))
		return 0;
	if (!(m & ROF_MEM_BASE) && base)
		return 0;
	if (!aux_used && ROF_MEM_AUX(m))
		return 0;
	return 1;
}

/* A jump target must be inside the program and the first slot of an insn. */
static int rof_target_ok(const struct rof_insn *insns, u32 cnt, s64 t)
{
	return t >= 0 && t < cnt && insns[t].op != ROF_OP_EXT;
}

static int rof_check_copy(const struct rof_insn_copy *c)
{
	u32 sm = c->mode & ROF_COPY_SRC_MASK;

	if (c->mode & ~ROF_COPY_MODE_MASK || sm == (3U << 2))
		return -EINVAL;
	if (!rof_space_valid(c->dst_space) || !rof_space_valid(c->src_space))
		return -EINVAL;
	if (sm == ROF_COPY_SRC_DIRECT ? c->src_tspace != 0 :
	    !rof_space_valid(c->src_tspace))
		return -EINVAL;
	if (!(c->mode & ROF_COPY_DST_BASE) && (c->regs & 0xf))
		return -EINVAL;
	if (!(c->mode & ROF_COPY_SRC_BASE) && (c->regs >> 4))
		return -EINVAL;
	if (!(c->mode & ROF_COPY_LEN_REG) && (c->lregs & 0xf))
		return -EINVAL;
	if (!(c->mode & ROF_COPY_OUT) && (c->lregs >> 4))
		return -EINVAL;
	if (c->len > ROF_ISA_MAX_BULK)
		return -EINVAL;
	return 0;
}

static int rof_check_cas(const struct rof_insn_cas *c)
{
	if (c->flags & ~ROF_CAS_FLAGS_MASK || c->mode >= ROF_CMP_COUNT)
		return -EINVAL;
	if (c->width != 8 && c->width != 16 && c->width != 24 &&
	    c->width != 32)
		return -EINVAL;
	if (c->space >= ROF_ISA_MAX_SLOTS || !rof_space_valid(c->op_space))
		return -EINVAL;
	if (!(c->flags & ROF_CAS_BASE) && (c->regs & 0xf))
		return -EINVAL;
	if ((c->oregs >> 4) ||
	    (!(c->flags & ROF_CAS_OPBASE) && (c->oregs & 0xf)))
		return -EINVAL;
	if (c->reserved[0] || c->reserved[1] || c->reserved[2])
		return -EINVAL;
	return 0;
}

/* rof_exec_check_insn() once @pc < @cnt, @ii is the row of its opcode. */
static int rof_check_form(const struct rof_insn *insns, u32 cnt, u32 pc,
			  const struct rof_exec_insn_info *ii)
{
	const struct rof_insn *in = &insns[pc];
	u8 dst, src;
	s64 target;

	dst = ROF_INSN_DST(in);
	src = ROF_INSN_SRC(in);
	if (ii->slots == 2 &&
	    (pc + 1 >= cnt || insns[pc + 1].op != ROF_OP_EXT))
		return -EINVAL;
	target = (s64)pc + 1 + in->off;

	switch (ii->form) {
	case ROF_FORM_LDIMM64:
		if (src || in->off || insns[pc + 1].regs || insns[pc + 1].off)
			return -EINVAL;
		return 0;
	case ROF_FORM_COPY:
		return rof_check_copy((const void *)in);
	case ROF_FORM_CAS:
		return rof_check_cas((const void *)in);
	case ROF_FORM_FAA:
		if (!rof_memref_ok(in->imm, dst, 1) ||
		    ROF_MEM_SPACE(in->imm) >= ROF_ISA_MAX_SLOTS)
			return -EINVAL;
		return 0;
	case ROF_FORM_DIGEST:
		return rof_memref_ok(in->imm, src, 1) ? 0 : -EINVAL;
	case ROF_FORM_ALLOC:
		if (src || in->off || (u32)in->imm >= ROF_ISA_MAX_SLOTS)
			return -EINVAL;
		return 0;
	case ROF_FORM_FREE:
		if (dst || in->off || (u32)in->imm >= ROF_ISA_MAX_SLOTS)
			return -EINVAL;
		return 0;
	case ROF_FORM_EXIT:
		return (in->regs || in->off) ? -EINVAL : 0;
	case ROF_FORM_EXIT_REG:
		return (dst || in->off || in->imm) ? -EINVAL : 0;
	case ROF_FORM_RESPOND:
		return (dst || in->off) ? -EINVAL : 0;
	case ROF_FORM_LOOP:
		if (src || in->imm < 1 || (u32)in->imm > ROF_ISA_MAX_TRIP)
			return -EINVAL;
		if (in->off >= 0 || !rof_target_ok(insns, cnt, target))
			return -EINVAL;
		return 0;
	case ROF_FORM_JA:
		if (in->regs || in->imm || in->off < 0 ||
		    !rof_target_ok(insns, cnt, target))
			return -EINVAL;
		return 0;
	case ROF_FORM_LD:
		return rof_memref_ok(in->imm, src, 0) ? 0 : -EINVAL;
	case ROF_FORM_ST:
		return rof_memref_ok(in->imm, dst, 0) ? 0 : -EINVAL;
	case ROF_FORM_ALU:
		if (in->off)
			return -EINVAL;
		if (!(ii->flags & ROF_ISA_F_IMM))
			/* neg has one encoding: the immediate form */
			return (in->imm || in->op - ii->op == ROF_ALU_NEG) ?
			       -EINVAL : 0;
		if (src || (in->op - ii->op == ROF_ALU_NEG && in->imm))
			return -EINVAL;
		return 0;
	case ROF_FORM_JMP:
		if ((ii->flags & ROF_ISA_F_IMM) ? src : in->imm)
			return -EINVAL;
		if (in->off < 0 || !rof_target_ok(insns, cnt, target))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

int rof_exec_check_insn(const struct rof_insn *insns, u32 cnt, u32 pc)
{
	const struct rof_exec_insn_info *ii;

	if (pc >= cnt)
		return -EINVAL;
	ii = rof_row(insns[pc].op);
	if (!ii)
		return -EINVAL;
	return rof_check_form(insns, cnt, pc, ii);
}

static int rof_slot_name_ok(const char *name)
{
	u32 i;

	if (!((name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return 0;
	for (i = 1; i < ROF_ISA_NAME_MAX; i++) {
		char ch = name[i];

		if (!ch)
			break;
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return 0;
	}
	if (i == ROF_ISA_NAME_MAX)
		return 0;
	for (; i < ROF_ISA_NAME_MAX; i++)	/* padding is zero: one tag */
		if (name[i])
			return 0;
	return 1;
}

/* Access each memory operand of @in needs, as (space, right) pairs. */
static u32 rof_insn_uses(const struct rof_insn *in, u8 *space, u32 *right)
{
	u32 n = 0;

	switch (in->op) {
	case ROF_OP_LD ... ROF_OP_LD + 3:
	case ROF_OP_CRC64:
	case ROF_OP_HASH:
		space[n] = ROF_MEM_SPACE(in->imm);
		right[n++] = ROF_ACCESS_READ;
		break;
	case ROF_OP_ST ... ROF_OP_ST + 3:
		space[n] = ROF_MEM_SPACE(in->imm);
		right[n++] = ROF_ACCESS_WRITE;
		break;
	case ROF_OP_FAA:
		space[n] = ROF_MEM_SPACE(in->imm);
		right[n++] = ROF_ACCESS_ATOMIC;
		break;
	case ROF_OP_ALLOC:
	case ROF_OP_FREE:
		space[n] = (u8)in->imm;
		right[n++] = ROF_ACCESS_ATOMIC;
		break;
	case ROF_OP_COPY: {
		const struct rof_insn_copy *c = (const void *)in;

		space[n] = c->src_space;
		right[n++] = ROF_ACCESS_READ;
		if ((c->mode & ROF_COPY_SRC_MASK) != ROF_COPY_SRC_DIRECT) {
			space[n] = c->src_tspace;
			right[n++] = ROF_ACCESS_READ;
		}
		if (c->mode & ROF_COPY_DST_INDIRECT) {
			space[n] = c->dst_space;
			right[n++] = ROF_ACCESS_READ;
		}
		space[n] = c->dst_space;
		right[n++] = ROF_ACCESS_WRITE;
		break;
	}
	case ROF_OP_CAS: {
		const struct rof_insn_cas *c = (const void *)in;

		space[n] = c->space;
		right[n++] = ROF_ACCESS_ATOMIC;
		space[n] = c->op_space;
		right[n++] = ROF_ACCESS_READ;
		if (c->flags & ROF_CAS_OLD) {
			space[n] = c->op_space;
			right[n++] = ROF_ACCESS_WRITE;
		}
		break;
	}
	default:
		break;
	}
	return n;
}

int rof_exec_check_image(const void *image, u64 len, u32 *bad_insn)
{
	const struct rof_isa_hdr *h = image;
	const struct rof_isa_slot *slots;
	const struct rof_insn *insns;
	u32 i, j, pc;

	*bad_insn = ~0U;
	if (!image || len < ROF_HDR_SIZE)
		return -EINVAL;
	if (h->magic != ROF_ISA_MAGIC || h->version != ROF_ISA_VERSION ||
	    h->hdr_size != ROF_HDR_SIZE || h->flags || h->reserved0 ||
	    h->reserved[0] || h->reserved[1])
		return -EINVAL;
	if (h->insn_cnt < 1 || h->insn_cnt > ROF_ISA_MAX_INSNS ||
	    h->slot_cnt > ROF_ISA_MAX_SLOTS)
		return -EINVAL;
	if (len != ROF_HDR_SIZE + (u64)h->slot_cnt * ROF_SLOT_SIZE +
		   (u64)h->insn_cnt * sizeof(struct rof_insn))
		return -EINVAL;
	if (h->args_min > h->args_max || h->args_max > ROF_ISA_MAX_ARGS ||
	    h->scratch_size > ROF_ISA_MAX_SCRATCH ||
	    h->resp_max > ROF_ISA_MAX_RESP)
		return -EINVAL;
	if (h->tag != rof_exec_image_tag(image, len))
		return -EBADMSG;

	slots = (const void *)((const u8 *)image + ROF_HDR_SIZE);
	for (i = 0; i < h->slot_cnt; i++) {
		const struct rof_isa_slot *s = &slots[i];

		if (!rof_slot_name_ok(s->name))
			return -EINVAL;
		if (!s->access || (s->access & ~ROF_ACCESS_ALL))
			return -EINVAL;
		if (s->flags & ~ROF_SLOT_FREELIST)
			return -EINVAL;
		if ((s->flags & ROF_SLOT_FREELIST) &&
		    !(s->access & ROF_ACCESS_ATOMIC))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (!strncmp(s->name, slots[j].name, ROF_ISA_NAME_MAX))
				return -EINVAL;
	}

	insns = (const void *)(slots + h->slot_cnt);
	for (pc = 0; pc < h->insn_cnt;
	     pc += rof_exec_insn_wide(insns[pc].op) ? 2 : 1) {
		u8 space[4];
		u32 right[4], n;

		*bad_insn = pc;
		if (rof_exec_check_insn(insns, h->insn_cnt, pc))
			return -EINVAL;
		n = rof_insn_uses(&insns[pc], space, right);
		for (j = 0; j < n; j++) {
			if (space[j] == ROF_SPACE_ARGS &&
			    right[j] != ROF_ACCESS_READ)
				return -EACCES;
			if (space[j] >= ROF_ISA_MAX_SLOTS)
				continue;
			if (space[j] >= h->slot_cnt)
				return -ENOENT;
			if (!(slots[space[j]].access & right[j]))
				return -EACCES;
		}
		if ((insns[pc].op == ROF_OP_ALLOC ||
		     insns[pc].op == ROF_OP_FREE) &&
		    !(slots[insns[pc].imm].flags & ROF_SLOT_FREELIST))
			return -EACCES;
	}
	*bad_insn = ~0U;
	return 0;
}

/* ---- execution ---- */

struct rof_run {
	struct rof_exec_ctx *ctx;
	u64 *r;
	u32 resp_hw;		/* bytes of resp written so far, from 0 */
	u32 resp_zeroed;	/* resp below this is zero or written this run */
};

/*
 * A load or store of @size (1, 2, 4 or 8) bytes, unaligned, as a memcpy of
 * a constant size per case: one move each, where a memcpy of a variable
 * size is a call.  Little-endian host, see rof_exec.h.
 */
static __always_inline u64 rof_ld_le(const u8 *p, u32 size)
{
	u8 b;
	u16 h;
	u32 w;
	u64 d;

	switch (size) {
	case 1:
		b = *p;
		return b;
	case 2:
		memcpy(&h, p, 2);
		return h;
	case 4:
		memcpy(&w, p, 4);
		return w;
	default:
		memcpy(&d, p, 8);
		return d;
	}
}

static __always_inline void rof_st_le(u8 *p, u64 v, u32 size)
{
	u16 h = (u16)v;
	u32 w = (u32)v;

	switch (size) {
	case 1:
		*p = (u8)v;
		break;
	case 2:
		memcpy(p, &h, 2);
		break;
	case 4:
		memcpy(p, &w, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

/* base + sign-extended displacement, refusing wrap-around. */
static __always_inline int rof_ea(u64 base, s64 off, u64 *ea)
{
	if (off >= 0) {
		if (base + (u64)off < base)
			return ROF_ISA_EBOUNDS;
		*ea = base + (u64)off;
	} else {
		if (base < (u64)(-off))
			return ROF_ISA_EBOUNDS;
		*ea = base - (u64)(-off);
	}
	return 0;
}

/*
 * With ROF_ACCESS_WRITE to rof_mem: the caller writes every byte of the
 * range once nothing else fails, and then calls rof_resp_written(), so resp
 * is zeroed only up to the range's start, not under it as well (a COPY of a
 * value into the response: one pass over its bytes, not two).
 */
#define ROF_MEM_OVERWRITE	0x80000000U

/*
 * Resolves (space, off, size) to a pointer with @right checked.  @fault is
 * returned for a range outside the space: EBOUNDS for an address the
 * program computed, EPTR for one it read from memory.
 */
static __always_inline int rof_mem(struct rof_run *run, u32 space, u64 off,
				   u64 size, u32 how, int fault, u8 **out)
{
	struct rof_exec_ctx *ctx = run->ctx;
	u32 right = how & ROF_ACCESS_ALL;
	u8 *base;
	u64 len;

	if (space < ROF_ISA_MAX_SLOTS) {
		const struct rof_exec_region *rg;

		if (space >= ctx->region_cnt || !ctx->regions[space].base)
			return ROF_ISA_ESLOT;
		rg = &ctx->regions[space];
		if (!(rg->access & right))
			return ROF_ISA_EACCESS;
		base = rg->base;
		len = rg->len;
	} else if (space == ROF_SPACE_ARGS) {
		if (right != ROF_ACCESS_READ)
			return ROF_ISA_EACCESS;
		base = (u8 *)ctx->args;
		len = ctx->args_len;
	} else if (space == ROF_SPACE_SCRATCH) {
		if (right == ROF_ACCESS_ATOMIC)
			return ROF_ISA_EACCESS;
		base = ctx->scratch;
		len = ctx->scratch_len;
	} else if (space == ROF_SPACE_RESP) {
		if (right == ROF_ACCESS_ATOMIC)
			return ROF_ISA_EACCESS;
		base = ctx->resp;
		len = ctx->resp_cap;
	} else {
		return ROF_ISA_EINSN;
	}
	if (off > len || size > len - off)
		return fault;
	/*
	 * An empty buffer may have no storage (the module passes a NULL
	 * scratch when a program declares none).  NULL + 0 is undefined in C,
	 * so a zero-length access to it gets NULL, which its caller never
	 * dereferences: every access of zero bytes copies or hashes nothing.
	 */
	if (!base) {
		if (size)
			return fault;
		*out = NULL;
		return 0;
	}
	*out = base + off;
	if (space == ROF_SPACE_RESP) {
		u64 zero_to = how & ROF_MEM_OVERWRITE ? off : off + size;

		/*
		 * resp holds whatever the buffer held (the module's send slot:
		 * an earlier reply): what a run reaches is zeroed as it first
		 * reaches it, reads and writes alike, so that bytes a program
		 * skipped read and go out as 0 (docs/isa.md), for the cost of
		 * the bytes it uses, not of its resp_max.
		 */
		if (zero_to > run->resp_zeroed) {
			memset(base + run->resp_zeroed, 0,
			       zero_to - run->resp_zeroed);
			run->resp_zeroed = (u32)zero_to;
		}
		if (right == ROF_ACCESS_WRITE && off + size > run->resp_hw)
			run->resp_hw = (u32)(off + size);
	}
	return 0;
}

/* A ROF_MEM_OVERWRITE range of @space ending at @end is written. */
static __always_inline void rof_resp_written(struct rof_run *run, u32 space,
					     u64 end)
{
	if (space == ROF_SPACE_RESP && end > run->resp_zeroed)
		run->resp_zeroed = (u32)end;
}

static int rof_bytes(struct rof_run *run, u64 n)
{
	struct rof_exec_ctx *ctx = run->ctx;

	if (n > ROF_ISA_MAX_BULK)
		return ROF_ISA_ELEN;
	if (n > ctx->byte_budget - ctx->bytes)
		return ROF_ISA_EBUDGET;
	ctx->bytes += n;
	return 0;
}

static int rof_do_copy(struct rof_run *run, const struct rof_insn_copy *c)
{
	u64 *r = run->r;
	u32 sm = c->mode & ROF_COPY_SRC_MASK;
	u64 len = c->len, sa, da;
	u8 *src, *dst, *p;
	u32 sspace = c->src_space;
	int err, sfault = ROF_ISA_EBOUNDS, dfault = ROF_ISA_EBOUNDS;

	if (c->mode & ROF_COPY_LEN_REG) {
		len = r[c->lregs & 0xf];
		if (len > c->len)
			return ROF_ISA_ELEN;
	}
	err = rof_ea((c->mode & ROF_COPY_SRC_BASE) ? r[c->regs >> 4] : 0,
		     c->src_off, &sa);
	if (err)
		return err;
	if (sm != ROF_COPY_SRC_DIRECT) {
		u64 psize = sm == ROF_COPY_SRC_BOUNDED ? 16 : 8;

		err = rof_mem(run, sspace, sa, psize, ROF_ACCESS_READ,
			      ROF_ISA_EBOUNDS, &p);
		if (err)
			return err;
		sa = rof_ld_le(p, 8);
		if (sm == ROF_COPY_SRC_BOUNDED) {
			u64 bound = rof_ld_le(p + 8, 8);

			if (bound < len)
				len = bound;
		}
		sspace = c->src_tspace;
		sfault = ROF_ISA_EPTR;
	}
	err = rof_ea((c->mode & ROF_COPY_DST_BASE) ? r[c->regs & 0xf] : 0,
		     c->dst_off, &da);
	if (err)
		return err;
	if (c->mode & ROF_COPY_DST_INDIRECT) {
		err = rof_mem(run, c->dst_space, da, 8, ROF_ACCESS_READ,
			      ROF_ISA_EBOUNDS, &p);
		if (err)
			return err;
		da = rof_ld_le(p, 8);
		dfault = ROF_ISA_EPTR;
	}
	err = rof_mem(run, sspace, sa, len, ROF_ACCESS_READ, sfault, &src);
	if (err)
		return err;
	err = rof_mem(run, c->dst_space, da, len,
		      ROF_ACCESS_WRITE | ROF_MEM_OVERWRITE, dfault, &dst);
	if (err)
		return err;
	err = rof_bytes(run, len);
	if (err)
		return err;
	if (len)
		memmove(dst, src, len);
	rof_resp_written(run, c->dst_space, da + len);
	if (c->mode & ROF_COPY_OUT)
		r[c->lregs >> 4] = len;
	return 0;
}

/* Compares two little-endian integers of @words 64-bit words. */
static int rof_cmp_words(const u64 *a, const u64 *b, u32 words)
{
	while (words--) {
		if (a[words] != b[words])
			return a[words] < b[words] ? -1 : 1;
	}
	return 0;
}

static int rof_cmp_holds(u32 mode, int c)
{
	switch (mode) {
	case ROF_CMP_EQ:
		return c == 0;
	case ROF_CMP_NE:
		return c != 0;
	case ROF_CMP_LT:
		return c < 0;
	case ROF_CMP_LE:
		return c <= 0;
	case ROF_CMP_GT:
		return c > 0;
	default:
		return c >= 0;
	}
}

static int rof_do_cas(struct rof_run *run, const struct rof_insn_cas *c)
{
	struct rof_exec_ctx *ctx = run->ctx;
	u64 *r = run->r;
	u64 cmpv[4], swp[4], cm[4], smk[4], cur[4], mc[4], mv[4];
	u32 w = c->width / 8, i, tries;
	u64 ta, oa;
	u8 *t, *blk, *old = NULL;
	unsigned long fl = 0;
	int err, swapped = 0;

	err = rof_ea((c->flags & ROF_CAS_BASE) ? r[c->regs & 0xf] : 0,
		     c->off, &ta);
	if (err)
		return err;
	err = rof_ea((c->flags & ROF_CAS_OPBASE) ? r[c->oregs & 0xf] : 0,
		     c->op_off, &oa);
	if (err)
		return err;
	err = rof_mem(run, c->space, ta, c->width, ROF_ACCESS_ATOMIC,
		      ROF_ISA_EBOUNDS, &t);
	if (err)
		return err;
	if ((unsigned long)t & 7)
		return ROF_ISA_EALIGN;
	err = rof_mem(run, c->op_space, oa, 4U * c->width, ROF_ACCESS_READ,
		      ROF_ISA_EBOUNDS, &blk);
	if (err)
		return err;
	/* Resolved before the swap: a fault must leave memory untouched. */
	if (c->flags & ROF_CAS_OLD) {
		err = rof_mem(run, c->op_space, oa + 4U * c->width, c->width,
			      ROF_ACCESS_WRITE, ROF_ISA_EBOUNDS, &old);
		if (err)
			return err;
	}
	for (i = 0; i < w; i++) {
		cmpv[i] = rof_ld_le(blk + 8 * i, 8);
		swp[i] = rof_ld_le(blk + c->width + 8 * i, 8);
		cm[i] = rof_ld_le(blk + 2 * c->width + 8 * i, 8);
		smk[i] = rof_ld_le(blk + 3 * c->width + 8 * i, 8);
		mc[i] = cmpv[i] & cm[i];
	}

	if (w == 1) {
		u64 *word = (u64 *)t;

		cur[0] = rof_exec_load64(word);
		for (tries = 0;; tries++) {
			u64 seen, nv;

			mv[0] = cur[0] & cm[0];
			if (!rof_cmp_holds(c->mode, rof_cmp_words(mv, mc, 1)))
				break;
			nv = (cur[0] & ~smk[0]) | (swp[0] & smk[0]);
			seen = rof_exec_cmpxchg64(word, cur[0], nv);
			if (seen == cur[0]) {
				swapped = 1;
				break;
			}
			if (tries == ROF_EXEC_RETRIES)
				return ROF_ISA_ECONTENDED;
			cur[0] = seen;
		}
	} else {
		struct rof_exec_lock *lock;

		lock = ctx->regions[c->space].lock;
		if (!lock)
			return ROF_ISA_ENOLOCK;
		rof_exec_spin_lock(lock, fl);
		for (i = 0; i < w; i++) {
			cur[i] = rof_exec_load64((u64 *)t + i);
			mv[i] = cur[i] & cm[i];
		}
		if (rof_cmp_holds(c->mode, rof_cmp_words(mv, mc, w))) {
			for (i = 0; i < w; i++)
				rof_exec_store64((u64 *)t + i,
						 (cur[i] & ~smk[i]) |
						 (swp[i] & smk[i]));
			swapped = 1;
		}
		rof_exec_spin_unlock(lock, fl);
	}

	if (c->flags & ROF_CAS_OLD)
		for (i = 0; i < w; i++)
			rof_st_le(old + 8 * i, cur[i], 8);
	r[c->regs >> 4] = swapped;
	return 0;
}

struct rof_fl {
	u64 *head;
	u8 *base;
	u64 block_size, first, nblocks;
};

/* Reads the free-list header once; the tenant may scribble on it. */
static int rof_fl_get(struct rof_run *run, u32 slot, struct rof_fl *fl)
{
	struct rof_exec_ctx *ctx = run->ctx;
	const struct rof_exec_region *rg;
	struct rof_isa_freelist *h;
	u8 *p;
	int err;

	err = rof_mem(run, slot, 0, 0, ROF_ACCESS_ATOMIC, ROF_ISA_EBOUNDS, &p);
	if (err)
		return err;
	rg = &ctx->regions[slot];
	if (((unsigned long)rg->base & 7) || rg->freelist == ROF_ISA_NULL ||
	    rg->freelist > rg->len ||
	    rg->len - rg->freelist < sizeof(*h) || (rg->freelist & 7))
		return ROF_ISA_EFREELIST;
	h = (struct rof_isa_freelist *)(rg->base + rg->freelist);
	if ((unsigned long)h & 7)
		return ROF_ISA_EFREELIST;
	if (rof_exec_load64(&h->magic) != ROF_FREELIST_MAGIC)
		return ROF_ISA_EFREELIST;
	fl->head = &h->head;
	fl->base = rg->base;
	fl->block_size = rof_exec_load64(&h->block_size);
	fl->first = rof_exec_load64(&h->first);
	fl->nblocks = rof_exec_load64(&h->nblocks);
	if (fl->block_size < 8 || (fl->block_size & 7) || (fl->first & 7) ||
	    fl->nblocks >= (1ULL << 32) || fl->first > rg->len ||
	    fl->block_size > rg->len ||
	    fl->nblocks > (rg->len - fl->first) / fl->block_size)
		return ROF_ISA_EFREELIST;
	return 0;
}

static int rof_do_alloc(struct rof_run *run, u32 slot, u64 *dst)
{
	struct rof_fl fl;
	u32 tries;
	int err;

	err = rof_fl_get(run, slot, &fl);
	if (err)
		return err;
	for (tries = 0; tries <= ROF_EXEC_RETRIES; tries++) {
		u64 h = rof_exec_load64(fl.head);
		u64 idx = h & 0xffffffffULL, next, off;

		if (!idx) {
			*dst = ROF_ISA_NULL;
			return 0;
		}
		if (idx > fl.nblocks)
			return ROF_ISA_EFREELIST;
		off = fl.first + (idx - 1) * fl.block_size;
		next = rof_exec_load64((u64 *)(fl.base + off)) & 0xffffffffULL;
		if (next > fl.nblocks) {
			/*
			 * Another pop may have taken the block since h was
			 * read, and its owner written over the link: a lost
			 * race, unless the head is still h.
			 */
			if (rof_exec_load64(fl.head) != h)
				continue;
			return ROF_ISA_EFREELIST;
		}
		if (rof_exec_cmpxchg64(fl.head, h,
				       (((h >> 32) + 1) << 32) | next) == h) {
			*dst = off;
			return 0;
		}
	}
	return ROF_ISA_ECONTENDED;
}

static int rof_do_free(struct rof_run *run, u32 slot, u64 off)
{
	struct rof_fl fl;
	u64 idx;
	u32 tries;
	int err;

	err = rof_fl_get(run, slot, &fl);
	if (err)
		return err;
	if (off < fl.first || (off - fl.first) % fl.block_size)
		return ROF_ISA_EFREE;
	idx = (off - fl.first) / fl.block_size + 1;
	if (idx > fl.nblocks)
		return ROF_ISA_EFREE;
	for (tries = 0; tries <= ROF_EXEC_RETRIES; tries++) {
		u64 h = rof_exec_load64(fl.head);

		rof_exec_store64((u64 *)(fl.base + off), h & 0xffffffffULL);
		if (rof_exec_cmpxchg64(fl.head, h,
				       (((h >> 32) + 1) << 32) | idx) == h)
			return 0;
	}
	return ROF_ISA_ECONTENDED;
}

static __always_inline int rof_alu(u32 aop, int is32, u64 *dst, u64 src)
{
	u64 d = *dst;

	if (is32) {
		d = (u32)d;
		src = (u32)src;
	}
	switch (aop) {
	case ROF_ALU_ADD:
		d += src;
		break;
	case ROF_ALU_SUB:
		d -= src;
		break;
	case ROF_ALU_MUL:
		d *= src;
		break;
	case ROF_ALU_DIV:
		if (!src)
			return ROF_ISA_EDIVZERO;
		d /= src;
		break;
	case ROF_ALU_MOD:
		if (!src)
			return ROF_ISA_EDIVZERO;
		d %= src;
		break;
	case ROF_ALU_AND:
		d &= src;
		break;
	case ROF_ALU_OR:
		d |= src;
		break;
	case ROF_ALU_XOR:
		d ^= src;
		break;
	case ROF_ALU_LSH:
		d <<= src & (is32 ? 31 : 63);
		break;
	case ROF_ALU_RSH:
		d >>= src & (is32 ? 31 : 63);
		break;
	case ROF_ALU_ARSH:
		if (is32)
			d = (u32)((s32)d >> (src & 31));
		else
			d = (u64)((s64)d >> (src & 63));
		break;
	case ROF_ALU_MOV:
		d = src;
		break;
	case ROF_ALU_NEG:
		d = -d;
		break;
	default:
		return ROF_ISA_EINSN;
	}
	*dst = is32 ? (u32)d : d;
	return 0;
}

int rof_exec_alu(u32 aop, int is32, u64 *dst, u64 src)
{
	return rof_alu(aop, is32, dst, src);
}

static __always_inline int rof_jmp(u32 jop, int is32, u64 a, u64 b)
{
	s64 sa = (s64)a, sb = (s64)b;

	if (is32) {
		a = (u32)a;
		b = (u32)b;
		sa = (s32)a;
		sb = (s32)b;
	}
	switch (jop) {
	case ROF_JMP_JEQ:
		return a == b;
	case ROF_JMP_JNE:
		return a != b;
	case ROF_JMP_JGT:
		return a > b;
	case ROF_JMP_JGE:
		return a >= b;
	case ROF_JMP_JLT:
		return a < b;
	case ROF_JMP_JLE:
		return a <= b;
	case ROF_JMP_JSGT:
		return sa > sb;
	case ROF_JMP_JSGE:
		return sa >= sb;
	case ROF_JMP_JSLT:
		return sa < sb;
	case ROF_JMP_JSLE:
		return sa <= sb;
	default:
		return (a & b) != 0;
	}
}

int rof_exec_jmp(u32 jop, int is32, u64 a, u64 b)
{
	return rof_jmp(jop, is32, a, b);
}

/*
 * The decoded form.  A slot's handler is its opcode once the slot passed
 * rof_exec_check_insn() (for a register-form ALU or JMP, the opcode of its
 * immediate form: the two run alike once decoded); ROF_OP_EXT (never the
 * first slot of an instruction) for one that did not; and ROF_EXEC_END
 * after the last slot, where a run that falls off the end arrives.  A
 * memory access's base register is ROF_EXEC_RZERO when it has none, and so
 * is an immediate-form ALU or JMP's source: a register that reads 0, never
 * written (every register field of an instruction is 4 bits).
 */
#define ROF_EXEC_END		0xff
#define ROF_EXEC_RZERO		ROF_ISA_NREGS
static_assert(ROF_OP_JMP32_REG + ROF_JMP_COUNT <= ROF_EXEC_END,
	      "ROF_EXEC_END is no opcode");
static_assert(ROF_OP_ALU64_REG - ROF_OP_ALU64_IMM == 0x10 &&
	      ROF_OP_ALU32_REG - ROF_OP_ALU32_IMM == 0x10 &&
	      ROF_OP_JMP64_REG - ROF_OP_JMP64_IMM == 0x10 &&
	      ROF_OP_JMP32_REG - ROF_OP_JMP32_IMM == 0x10,
	      "each register form 0x10 after its immediate form");

static void rof_decode_one(const struct rof_insn *insns, u32 cnt, u32 pc,
			   struct rof_exec_op *d)
{
	const struct rof_insn *in = &insns[pc];
	const struct rof_exec_insn_info *ii = rof_row(in->op);
	u32 m = (u32)in->imm;
	u8 dst = ROF_INSN_DST(in), src = ROF_INSN_SRC(in);

	memset(d, 0, sizeof(*d));
	if (!ii || rof_check_form(insns, cnt, pc, ii)) {
		d->h = ROF_OP_EXT;
		return;
	}
	d->h = in->op;
	d->dst = dst;
	d->src = src;
	switch (ii->form) {
	case ROF_FORM_LDIMM64:
		d->imm = (u64)(u32)in->imm | ((u64)(u32)in[1].imm << 32);
		break;
	case ROF_FORM_LD:	/* dst = space[base + off], base = src */
	case ROF_FORM_ST:	/* space[base + off] = src, base = dst */
		d->x = !(m & ROF_MEM_BASE) ? ROF_EXEC_RZERO :
		       ii->form == ROF_FORM_LD ? src : dst;
		d->space = ROF_MEM_SPACE(m);
		d->imm = (u64)(s64)in->off;
		break;
	case ROF_FORM_FAA:	/* aux = space[base + off] += src, base = dst */
		d->dst = ROF_MEM_AUX(m);
		d->x = (m & ROF_MEM_BASE) ? dst : ROF_EXEC_RZERO;
		d->space = ROF_MEM_SPACE(m);
		d->imm = (u64)(s64)in->off;
		break;
	case ROF_FORM_DIGEST:	/* dst = f(dst, aux bytes at base + off) */
		d->src = ROF_MEM_AUX(m);
		d->x = (m & ROF_MEM_BASE) ? src : ROF_EXEC_RZERO;
		d->space = ROF_MEM_SPACE(m);
		d->imm = (u64)(s64)in->off;
		break;
	case ROF_FORM_ALLOC:
	case ROF_FORM_FREE:
		d->x = m;	/* the slot */
		break;
	case ROF_FORM_EXIT:
	case ROF_FORM_RESPOND:
		d->imm = m;	/* the status */
		break;
	case ROF_FORM_LOOP:	/* taken while dst < imm, here imm - 1 */
		d->imm = (u64)m - 1;
		d->x = pc + 1 + in->off;
		break;
	case ROF_FORM_JA:
		d->x = pc + 1 + in->off;
		break;
	case ROF_FORM_ALU:	/* dst = dst op (src + imm) */
	case ROF_FORM_JMP:	/* dst cond (src + imm): to x */
		if (ii->flags & ROF_ISA_F_IMM) {
			d->src = ROF_EXEC_RZERO;
			d->imm = (ii->flags & ROF_ISA_F_32) ? (u64)m :
				 (u64)(s64)in->imm;
		} else {
			/* the register form runs as the immediate one */
			d->h -= ROF_OP_ALU64_REG - ROF_OP_ALU64_IMM;
		}
		d->x = pc + 1 + in->off;
		break;
	default:		/* COPY, CAS: run from the slots themselves */
		break;
	}
}

int rof_exec_decode(const struct rof_insn *insns, u32 cnt,
		    struct rof_exec_op *code)
{
	u32 pc;

	if (!insns || !code || !cnt || cnt > ROF_ISA_MAX_INSNS)
		return -EINVAL;
	for (pc = 0; pc < cnt; pc++)
		rof_decode_one(insns, cnt, pc, &code[pc]);
	memset(&code[cnt], 0, sizeof(code[cnt]));
	code[cnt].h = ROF_EXEC_END;
	return 0;
}

/*
 * The step to the slot at @op, at the end of every handler of
 * rof_exec_run(): the budget, the kernel's reschedule point, then the
 * address of the slot's handler, or @stop when the budget is spent.
 * Inlined, so that each handler ends in its own indirect jump: the branch
 * predictor learns each handler's successors at its own site, not all of
 * them at one.  No check of where @op points: a decoded jump's target is a
 * slot of the program, and the slot after the last is ROF_EXEC_END.
 */
static __always_inline const void *rof_next(const void * const *jt,
					    const void *stop,
					    const struct rof_exec_op *op,
					    u64 *executed, u64 budget)
{
	if (unlikely(*executed >= budget))
		return stop;
	/* A reschedule point in a long run (the kernel's only). */
	if (unlikely(!(++*executed & (ROF_EXEC_YIELD_EVERY - 1))))
		rof_exec_yield();
	return jt[op->h];
}

/*
 * LD (@store 0) or ST (1) of @size bytes at r[op->x] + op->imm, inlined
 * into a handler per size and direction, where both are constants.
 */
static __always_inline int rof_do_ldst(struct rof_run *run, u64 *r,
				       const struct rof_exec_op *op, u32 size,
				       int store)
{
	u64 ea;
	u8 *p;
	int err;

	err = rof_ea(r[op->x], (s64)op->imm, &ea);
	if (unlikely(err))
		return err;
	err = rof_mem(run, op->space, ea, size,
		      store ? ROF_ACCESS_WRITE : ROF_ACCESS_READ,
		      ROF_ISA_EBOUNDS, &p);
	if (unlikely(err))
		return err;
	if (store)
		rof_st_le(p, r[op->src], size);
	else
		r[op->dst] = rof_ld_le(p, size);
	return 0;
}

/*
 * The run is threaded, as the kernel's BPF interpreter: a handler per
 * opcode, reached through a table indexed by the decoded slot's handler.
 * The checks of an instruction's encoding were made once, by
 * rof_exec_decode(); what depends on the run (addresses, bounds, access,
 * lengths, the budgets) is checked here, every time.  The registers and
 * the count live on the stack during the run, copied out at its end: in
 * @ctx, every store to a register could alias the fields the handlers read.
 */
static const u64 rof_zero_regs[ROF_ISA_NREGS + 1];

int rof_exec_run(struct rof_exec_ctx *ctx)
{
	static const void * const jt[256] __annotate_jump_table = {
		[0 ... 255] = &&op_bad,
		[ROF_OP_LDIMM64] = &&op_ldimm64,
		[ROF_OP_COPY] = &&op_copy,
		[ROF_OP_CAS] = &&op_cas,
		[ROF_OP_FAA] = &&op_faa,
		[ROF_OP_ALLOC] = &&op_alloc,
		[ROF_OP_FREE] = &&op_free,
		[ROF_OP_CRC64] = &&op_crc64,
		[ROF_OP_HASH] = &&op_hash,
		[ROF_OP_EXIT] = &&op_exit,
		[ROF_OP_EXIT_REG] = &&op_exit_reg,
		[ROF_OP_RESPOND] = &&op_respond,
		[ROF_OP_LOOP] = &&op_loop,
		[ROF_OP_JA] = &&op_ja,
		[ROF_OP_ALU64_IMM + ROF_ALU_ADD] = &&op_add64,
		[ROF_OP_ALU64_IMM + ROF_ALU_SUB] = &&op_sub64,
		[ROF_OP_ALU64_IMM + ROF_ALU_MUL] = &&op_mul64,
		[ROF_OP_ALU64_IMM + ROF_ALU_DIV] = &&op_div64,
		[ROF_OP_ALU64_IMM + ROF_ALU_MOD] = &&op_mod64,
		[ROF_OP_ALU64_IMM + ROF_ALU_AND] = &&op_and64,
		[ROF_OP_ALU64_IMM + ROF_ALU_OR] = &&op_or64,
		[ROF_OP_ALU64_IMM + ROF_ALU_XOR] = &&op_xor64,
		[ROF_OP_ALU64_IMM + ROF_ALU_LSH] = &&op_lsh64,
		[ROF_OP_ALU64_IMM + ROF_ALU_RSH] = &&op_rsh64,
		[ROF_OP_ALU64_IMM + ROF_ALU_ARSH] = &&op_arsh64,
		[ROF_OP_ALU64_IMM + ROF_ALU_MOV] = &&op_mov64,
		[ROF_OP_ALU64_IMM + ROF_ALU_NEG] = &&op_neg64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JEQ] = &&op_jeq64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JNE] = &&op_jne64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JGT] = &&op_jgt64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JGE] = &&op_jge64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JLT] = &&op_jlt64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JLE] = &&op_jle64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JSGT] = &&op_jsgt64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JSGE] = &&op_jsge64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JSLT] = &&op_jslt64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JSLE] = &&op_jsle64,
		[ROF_OP_JMP64_IMM + ROF_JMP_JSET] = &&op_jset64,
		[ROF_OP_ALU32_IMM ... ROF_OP_ALU32_IMM + ROF_ALU_COUNT - 1] = &&op_alu32,
		[ROF_OP_JMP32_IMM ... ROF_OP_JMP32_IMM + ROF_JMP_COUNT - 1] = &&op_jmp32,
		[ROF_OP_LD + 0] = &&op_ld8,
		[ROF_OP_LD + 1] = &&op_ld16,
		[ROF_OP_LD + 2] = &&op_ld32,
		[ROF_OP_LD + 3] = &&op_ld64,
		[ROF_OP_ST + 0] = &&op_st8,
		[ROF_OP_ST + 1] = &&op_st16,
		[ROF_OP_ST + 2] = &&op_st32,
		[ROF_OP_ST + 3] = &&op_st64,
		[ROF_EXEC_END] = &&op_end,
	};
	const struct rof_exec_op *code, *op;
	const struct rof_insn *insns;
	struct rof_run run;
	u64 r[ROF_ISA_NREGS + 1];
	u64 executed = 0, budget, ea, v;
	u8 *p;
	int err;

	if (!ctx)
		return ROF_ISA_EINVAL;
	ctx->resp_len = 0;
	ctx->prog_status = 0;
	ctx->executed = 0;
	ctx->bytes = 0;
	ctx->fault_pc = 0;
	if (!ctx->insns || !ctx->code || !ctx->insn_cnt ||
	    ctx->insn_cnt > ROF_ISA_MAX_INSNS ||
	    (!ctx->args && ctx->args_len) ||
	    (!ctx->scratch && ctx->scratch_len) ||
	    (!ctx->resp && ctx->resp_cap) ||
	    (!ctx->regions && ctx->region_cnt) ||
	    ctx->region_cnt > ROF_ISA_MAX_SLOTS) {
		memset(ctx->regs, 0, sizeof(ctx->regs));
		return ROF_ISA_EINVAL;
	}

	/*
	 * Every register starts at zero (docs/isa.md leaves them undefined to
	 * programs, but the stack's old contents must not reach one).  Copied
	 * from a constant block: gcc zeroes a local array with rep stos, whose
	 * start-up cost was 15-20% of a kv-get invocation.
	 */
	memcpy(r, rof_zero_regs, sizeof(r));
	run.ctx = ctx;
	run.r = r;
	run.resp_hw = 0;
	run.resp_zeroed = 0;
	r[1] = ctx->args_len;
	insns = ctx->insns;
	code = ctx->code;
	op = code;
	budget = ctx->budget;
	goto *rof_next(jt, &&stop, op, &executed, budget);

op_ldimm64:
	r[op->dst] = op->imm;
	op += 2;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_copy:
	err = rof_do_copy(&run, (const struct rof_insn_copy *)&insns[op - code]);
	if (err)
		goto out;
	op += 2;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_cas:
	err = rof_do_cas(&run, (const struct rof_insn_cas *)&insns[op - code]);
	if (err)
		goto out;
	op += 2;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_faa:
	err = rof_ea(r[op->x], (s64)op->imm, &ea);
	if (err)
		goto out;
	err = rof_mem(&run, op->space, ea, 8, ROF_ACCESS_ATOMIC,
		      ROF_ISA_EBOUNDS, &p);
	if (err)
		goto out;
	if ((unsigned long)p & 7) {
		err = ROF_ISA_EALIGN;
		goto out;
	}
	r[op->dst] = rof_exec_fetch_add64((u64 *)p, r[op->src]);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_crc64:
op_hash:
	v = r[op->src];
	err = rof_ea(r[op->x], (s64)op->imm, &ea);
	if (err)
		goto out;
	if (v > ROF_ISA_MAX_BULK) {
		err = ROF_ISA_ELEN;
		goto out;
	}
	err = rof_mem(&run, op->space, ea, v, ROF_ACCESS_READ,
		      ROF_ISA_EBOUNDS, &p);
	if (err)
		goto out;
	err = rof_bytes(&run, v);
	if (err)
		goto out;
	if (op->h == ROF_OP_CRC64)
		r[op->dst] = rof_exec_crc64(r[op->dst], p, v);
	else
		r[op->dst] = rof_exec_hash64(r[op->dst], p, v);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_alloc:
	err = rof_do_alloc(&run, op->x, &r[op->dst]);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_free:
	err = rof_do_free(&run, op->x, r[op->src]);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_exit:
	ctx->prog_status = (u32)op->imm;
	ctx->resp_len = run.resp_hw;
	err = 0;
	goto out;
op_exit_reg:
	ctx->prog_status = (u32)r[op->src];
	ctx->resp_len = run.resp_hw;
	err = 0;
	goto out;
op_respond:
	v = r[op->src];
	if (v > ctx->resp_cap) {
		err = ROF_ISA_ELEN;
		goto out;
	}
	if (v > run.resp_zeroed)
		memset(ctx->resp + run.resp_zeroed, 0, v - run.resp_zeroed);
	ctx->prog_status = (u32)op->imm;
	ctx->resp_len = (u32)v;
	err = 0;
	goto out;
op_loop:
	if (r[op->dst] < op->imm) {
		r[op->dst]++;
		op = &code[op->x];
	} else {
		op++;
	}
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_ja:
	op = &code[op->x];
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_ld8:
	err = rof_do_ldst(&run, r, op, 1, 0);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_ld16:
	err = rof_do_ldst(&run, r, op, 2, 0);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_ld32:
	err = rof_do_ldst(&run, r, op, 4, 0);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_ld64:
	err = rof_do_ldst(&run, r, op, 8, 0);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_st8:
	err = rof_do_ldst(&run, r, op, 1, 1);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_st16:
	err = rof_do_ldst(&run, r, op, 2, 1);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_st32:
	err = rof_do_ldst(&run, r, op, 4, 1);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_st64:
	err = rof_do_ldst(&run, r, op, 8, 1);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
	/*
	 * ALU and JMP: the second operand is r[op->src] + op->imm, as
	 * decoded: the register and 0, or ROF_EXEC_RZERO and the immediate.
	 * A handler per 64-bit operation and condition (rof_alu and rof_jmp
	 * on a constant fold to it); the 32-bit ones share one each.  Only
	 * DIV and MOD can fail.
	 */
op_add64:
	rof_alu(ROF_ALU_ADD, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_sub64:
	rof_alu(ROF_ALU_SUB, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_mul64:
	rof_alu(ROF_ALU_MUL, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_div64:
	err = rof_alu(ROF_ALU_DIV, 0, &r[op->dst], r[op->src] + op->imm);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_mod64:
	err = rof_alu(ROF_ALU_MOD, 0, &r[op->dst], r[op->src] + op->imm);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_and64:
	rof_alu(ROF_ALU_AND, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_or64:
	rof_alu(ROF_ALU_OR, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_xor64:
	rof_alu(ROF_ALU_XOR, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_lsh64:
	rof_alu(ROF_ALU_LSH, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_rsh64:
	rof_alu(ROF_ALU_RSH, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_arsh64:
	rof_alu(ROF_ALU_ARSH, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_mov64:
	rof_alu(ROF_ALU_MOV, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_neg64:
	rof_alu(ROF_ALU_NEG, 0, &r[op->dst], r[op->src] + op->imm);
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_alu32:
	err = rof_alu(op->h - ROF_OP_ALU32_IMM, 1, &r[op->dst],
		      r[op->src] + op->imm);
	if (err)
		goto out;
	op++;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jeq64:
	op = rof_jmp(ROF_JMP_JEQ, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jne64:
	op = rof_jmp(ROF_JMP_JNE, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jgt64:
	op = rof_jmp(ROF_JMP_JGT, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jge64:
	op = rof_jmp(ROF_JMP_JGE, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jlt64:
	op = rof_jmp(ROF_JMP_JLT, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jle64:
	op = rof_jmp(ROF_JMP_JLE, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jsgt64:
	op = rof_jmp(ROF_JMP_JSGT, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jsge64:
	op = rof_jmp(ROF_JMP_JSGE, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jslt64:
	op = rof_jmp(ROF_JMP_JSLT, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jsle64:
	op = rof_jmp(ROF_JMP_JSLE, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jset64:
	op = rof_jmp(ROF_JMP_JSET, 0, r[op->dst], r[op->src] + op->imm) ?
	     &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);
op_jmp32:
	op = rof_jmp(op->h - ROF_OP_JMP32_IMM, 1, r[op->dst],
		     r[op->src] + op->imm) ? &code[op->x] : op + 1;
	goto *rof_next(jt, &&stop, op, &executed, budget);

op_bad:
	err = ROF_ISA_EINSN;
	goto out;
op_end:
	/* fell off the end: not an instruction, not counted as one */
	executed--;
	err = ROF_ISA_EPC;
	goto out;
stop:
	err = op->h == ROF_EXEC_END ? ROF_ISA_EPC : ROF_ISA_EBUDGET;
out:
	memcpy(ctx->regs, r, sizeof(ctx->regs));
	ctx->executed = executed;
	if (err) {
		ctx->fault_pc = (u32)(op - code);
		ctx->resp_len = 0;
		ctx->prog_status = 0;
	}
	return err;
}
