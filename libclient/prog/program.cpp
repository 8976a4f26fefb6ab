#include "rof/prog/program.h"

#include <bit>
#include <cinttypes>
#include <cstring>

#include "rof_exec.h"
#include "strf.h"

namespace rof::prog {
namespace {

constexpr size_t kHdrSize = sizeof(rof_isa_hdr);
constexpr size_t kSlotSize = sizeof(rof_isa_slot);
static_assert(kHdrSize == 64 && kSlotSize == 48 && sizeof(rof_insn) == 8);
static_assert(sizeof(rof_insn_copy) == 16 && sizeof(rof_insn_cas) == 16);
static_assert(sizeof(rof_isa_freelist) == 64);

bool space_valid(uint32_t s) {
    return s < ROF_ISA_MAX_SLOTS || s == ROF_SPACE_ARGS || s == ROF_SPACE_SCRATCH ||
           s == ROF_SPACE_RESP;
}

// Decodes a LD/ST/FAA/CRC64/HASH memory reference from imm.
bool decode_memref(int32_t imm, uint8_t base, bool aux_used, Mem& m, uint8_t& aux,
                   std::string& err) {
    uint32_t v = static_cast<uint32_t>(imm);
    if (v & ~ROF_MEM_MASK) {
        err = strf("reserved bits set in memory reference 0x%x", v);
        return false;
    }
    if (!space_valid(ROF_MEM_SPACE(v))) {
        err = strf("invalid address space 0x%x", ROF_MEM_SPACE(v));
        return false;
    }
    m.space = static_cast<uint8_t>(ROF_MEM_SPACE(v));
    m.has_base = v & ROF_MEM_BASE;
    if (!m.has_base && base) {
        err = "base register field must be 0 without a base register";
        return false;
    }
    m.base = base;
    aux = static_cast<uint8_t>(ROF_MEM_AUX(v));
    if (!aux_used && aux) {
        err = "auxiliary register field must be 0";
        return false;
    }
    return true;
}

int32_t encode_memref(const Mem& m, uint8_t aux) {
    uint32_t v = m.space | (m.has_base ? ROF_MEM_BASE : 0) |
                 (static_cast<uint32_t>(aux & 0xf) << ROF_MEM_AUX_SHIFT);
    return static_cast<int32_t>(v);
}

}  // namespace

std::vector<uint8_t> Program::encode() const {
    std::vector<uint8_t> img(kHdrSize + slots.size() * kSlotSize + insns.size() * sizeof(rof_insn));
    rof_isa_hdr h{};
    h.magic = ROF_ISA_MAGIC;
    h.version = ROF_ISA_VERSION;
    h.hdr_size = kHdrSize;
    h.insn_cnt = static_cast<uint32_t>(insns.size());
    h.slot_cnt = static_cast<uint32_t>(slots.size());
    h.args_min = args_min;
    h.args_max = args_max;
    h.scratch_size = scratch_size;
    h.resp_max = resp_max;
    std::memcpy(img.data(), &h, kHdrSize);
    size_t o = kHdrSize;
    for (const Slot& s : slots) {
        rof_isa_slot e{};
        std::memcpy(e.name, s.name.data(), std::min(s.name.size(), sizeof(e.name) - 1));
        e.rights = s.rights;
        e.flags = s.flags;
        e.len = s.len;
        std::memcpy(img.data() + o, &e, kSlotSize);
        o += kSlotSize;
    }
    if (!insns.empty())
        std::memcpy(img.data() + o, insns.data(), insns.size() * sizeof(rof_insn));
    h.tag = rof_exec_image_tag(img.data(), img.size());
    std::memcpy(img.data(), &h, kHdrSize);
    return img;
}

uint64_t Program::tag() const {
    std::vector<uint8_t> img = encode();
    rof_isa_hdr h;
    std::memcpy(&h, img.data(), kHdrSize);
    return h.tag;
}

std::string Program::where(uint32_t pc) const {
    return where_line(pc < lines.size() ? lines[pc] : 0);
}

std::string Program::where_line(uint32_t line) const {
    if (line == 0)
        return "";
    return strf("%s:%u", file.empty() ? "<input>" : file.c_str(), line);
}

std::optional<uint32_t> Program::find_slot(std::string_view name) const {
    for (size_t i = 0; i < slots.size(); i++)
        if (slots[i].name == name)
            return static_cast<uint32_t>(i);
    return std::nullopt;
}

std::optional<Program> decode_image(std::span<const uint8_t> image, std::string& err) {
    if (image.size() < kHdrSize) {
        err =
            strf("image of %zu bytes is shorter than its %zu-byte header", image.size(), kHdrSize);
        return std::nullopt;
    }
    rof_isa_hdr h;
    std::memcpy(&h, image.data(), kHdrSize);
    if (h.magic != ROF_ISA_MAGIC) {
        err = strf("bad magic 0x%08x (want 0x%08x)", h.magic, ROF_ISA_MAGIC);
        return std::nullopt;
    }
    if (h.version != ROF_ISA_VERSION) {
        err = strf("unsupported ISA version %u (this is version %u)", h.version, ROF_ISA_VERSION);
        return std::nullopt;
    }
    if (h.hdr_size != kHdrSize) {
        err = strf("header size %u (want %zu)", h.hdr_size, kHdrSize);
        return std::nullopt;
    }
    if (h.flags || h.reserved0 || h.reserved[0] || h.reserved[1]) {
        err = "header flags or reserved fields are not zero";
        return std::nullopt;
    }
    if (h.insn_cnt < 1 || h.insn_cnt > ROF_ISA_MAX_INSNS) {
        err = strf("instruction count %u outside 1..%u", h.insn_cnt, ROF_ISA_MAX_INSNS);
        return std::nullopt;
    }
    if (h.slot_cnt > ROF_ISA_MAX_SLOTS) {
        err = strf("region slot count %u above %u", h.slot_cnt, ROF_ISA_MAX_SLOTS);
        return std::nullopt;
    }
    uint64_t want =
        kHdrSize + uint64_t{h.slot_cnt} * kSlotSize + uint64_t{h.insn_cnt} * sizeof(rof_insn);
    if (image.size() != want) {
        err = strf("image is %zu bytes, its header says %" PRIu64, image.size(), want);
        return std::nullopt;
    }
    if (h.args_min > h.args_max || h.args_max > ROF_ISA_MAX_ARGS) {
        err =
            strf("args range [%u, %u] invalid (max %u)", h.args_min, h.args_max, ROF_ISA_MAX_ARGS);
        return std::nullopt;
    }
    if (h.scratch_size > ROF_ISA_MAX_SCRATCH || h.resp_max > ROF_ISA_MAX_RESP) {
        err = "scratch or resp size above the ISA limit";
        return std::nullopt;
    }
    uint64_t tag = rof_exec_image_tag(image.data(), image.size());
    if (h.tag != tag) {
        err = strf("tag 0x%016" PRIx64 " does not match the content (0x%016" PRIx64 ")",
                   static_cast<uint64_t>(h.tag), tag);
        return std::nullopt;
    }
    Program p;
    p.args_min = h.args_min;
    p.args_max = h.args_max;
    p.scratch_size = h.scratch_size;
    p.resp_max = h.resp_max;
    size_t o = kHdrSize;
    for (uint32_t i = 0; i < h.slot_cnt; i++, o += kSlotSize) {
        rof_isa_slot e;
        std::memcpy(&e, image.data() + o, kSlotSize);
        size_t n = strnlen(e.name, sizeof(e.name));
        if (n == sizeof(e.name)) {
            err = strf("slot %u: name is not NUL-terminated", i);
            return std::nullopt;
        }
        for (size_t k = n; k < sizeof(e.name); k++)
            if (e.name[k]) {
                err = strf("slot %u: name padding is not zero", i);
                return std::nullopt;
            }
        p.slots.push_back(Slot{std::string(e.name, n), e.rights, e.flags, e.len});
    }
    p.insns.resize(h.insn_cnt);
    std::memcpy(p.insns.data(), image.data() + o, h.insn_cnt * sizeof(rof_insn));
    return p;
}

std::optional<Insn> decode_insn(std::span<const rof_insn> insns, uint32_t pc, std::string& err) {
    if (pc >= insns.size()) {
        err = "instruction index out of range";
        return std::nullopt;
    }
    const rof_insn& r = insns[pc];
    Insn in;
    uint8_t op = r.op;
    in.dst = ROF_INSN_DST(&r);
    in.src = ROF_INSN_SRC(&r);
    auto zero = [&](bool cond, const char* what) {
        if (!cond)
            err = strf("%s must be 0", what);
        return cond;
    };
    if (rof_exec_insn_wide(op)) {
        if (pc + 1 >= insns.size()) {
            err = "wide instruction truncated by the end of the program";
            return std::nullopt;
        }
        if (insns[pc + 1].op != ROF_OP_EXT) {
            err = "second slot of a wide instruction must start with opcode 0x00";
            return std::nullopt;
        }
    }
    switch (op) {
        case ROF_OP_EXT:
            err =
                "opcode 0x00 is the second slot of a wide instruction, not an "
                "instruction";
            return std::nullopt;
        case ROF_OP_LDIMM64:
            in.kind = Kind::LdImm64;
            if (!zero(in.src == 0, "ldimm64 src register") || !zero(r.off == 0, "ldimm64 offset") ||
                !zero(insns[pc + 1].regs == 0 && insns[pc + 1].off == 0,
                      "ldimm64 second slot regs/off"))
                return std::nullopt;
            in.imm64 = static_cast<uint32_t>(r.imm) |
                       (uint64_t{static_cast<uint32_t>(insns[pc + 1].imm)} << 32);
            return in;
        case ROF_OP_COPY: {
            rof_insn_copy c;
            std::memcpy(&c, &r, sizeof(c));
            in.kind = Kind::Copy;
            if (c.mode & ~ROF_COPY_MODE_MASK) {
                err = strf("copy mode 0x%x has reserved bits", c.mode);
                return std::nullopt;
            }
            in.src_mode = (c.mode & ROF_COPY_SRC_MASK) >> 2;
            if (in.src_mode == 3) {
                err = "copy source mode 3 is invalid";
                return std::nullopt;
            }
            if (!space_valid(c.dst_space) || !space_valid(c.src_space) ||
                (in.src_mode && !space_valid(c.src_tspace))) {
                err = "copy names an invalid address space";
                return std::nullopt;
            }
            if (!in.src_mode && c.src_tspace) {
                err = "copy target space must be 0 for a direct source";
                return std::nullopt;
            }
            in.mem = Mem{c.dst_space, bool(c.mode & ROF_COPY_DST_BASE),
                         static_cast<uint8_t>(c.regs & 0xf), c.dst_off};
            in.src_mem = Mem{c.src_space, bool(c.mode & ROF_COPY_SRC_BASE),
                             static_cast<uint8_t>(c.regs >> 4), c.src_off};
            if ((!in.mem.has_base && in.mem.base) || (!in.src_mem.has_base && in.src_mem.base)) {
                err = "copy base register field must be 0 without a base register";
                return std::nullopt;
            }
            in.src_tspace = c.src_tspace;
            in.dst_indirect = c.mode & ROF_COPY_DST_INDIRECT;
            in.len_reg = c.mode & ROF_COPY_LEN_REG;
            in.out = c.mode & ROF_COPY_OUT;
            in.len_r = c.lregs & 0xf;
            in.aux = c.lregs >> 4;
            in.len = c.len;
            if ((!in.len_reg && in.len_r) || (!in.out && in.aux)) {
                err = "copy length/out register field must be 0 when unused";
                return std::nullopt;
            }
            if (c.len > ROF_ISA_MAX_BULK) {
                err = strf("copy length %u above the ISA limit %u", c.len, ROF_ISA_MAX_BULK);
                return std::nullopt;
            }
            return in;
        }
        case ROF_OP_CAS: {
            rof_insn_cas c;
            std::memcpy(&c, &r, sizeof(c));
            in.kind = Kind::Cas;
            if (c.flags & ~ROF_CAS_FLAGS_MASK) {
                err = strf("cas flags 0x%x have reserved bits", c.flags);
                return std::nullopt;
            }
            if (c.mode >= ROF_CMP_COUNT) {
                err = strf("cas mode %u is invalid", c.mode);
                return std::nullopt;
            }
            if (c.width != 8 && c.width != 16 && c.width != 24 && c.width != 32) {
                err = strf("cas width %u is not 8, 16, 24 or 32 bytes", c.width);
                return std::nullopt;
            }
            if (c.space >= ROF_ISA_MAX_SLOTS) {
                err = "cas target must be a region slot";
                return std::nullopt;
            }
            if (!space_valid(c.op_space)) {
                err = "cas operand block names an invalid address space";
                return std::nullopt;
            }
            if (c.reserved[0] || c.reserved[1] || c.reserved[2] || (c.oregs >> 4)) {
                err = "cas reserved fields must be 0";
                return std::nullopt;
            }
            in.mem = Mem{c.space, bool(c.flags & ROF_CAS_BASE), static_cast<uint8_t>(c.regs & 0xf),
                         c.off};
            in.blk = Mem{c.op_space, bool(c.flags & ROF_CAS_OPBASE),
                         static_cast<uint8_t>(c.oregs & 0xf), c.op_off};
            if ((!in.mem.has_base && in.mem.base) || (!in.blk.has_base && in.blk.base)) {
                err = "cas base register field must be 0 without a base register";
                return std::nullopt;
            }
            in.aux = c.regs >> 4;
            in.width = c.width;
            in.mode = c.mode;
            in.old = c.flags & ROF_CAS_OLD;
            return in;
        }
        case ROF_OP_FAA:
            in.kind = Kind::Faa;
            if (!decode_memref(r.imm, in.dst, true, in.mem, in.aux, err))
                return std::nullopt;
            if (in.mem.space >= ROF_ISA_MAX_SLOTS) {
                err = "faa target must be a region slot";
                return std::nullopt;
            }
            in.mem.off = r.off;
            return in;
        case ROF_OP_CRC64:
        case ROF_OP_HASH:
            in.kind = op == ROF_OP_CRC64 ? Kind::Crc64 : Kind::Hash;
            if (!decode_memref(r.imm, in.src, true, in.mem, in.aux, err))
                return std::nullopt;
            in.mem.off = r.off;
            return in;
        case ROF_OP_ALLOC:
        case ROF_OP_FREE:
            in.kind = op == ROF_OP_ALLOC ? Kind::Alloc : Kind::Free;
            if (!zero(op == ROF_OP_ALLOC ? in.src == 0 : in.dst == 0, "unused register field") ||
                !zero(r.off == 0, "offset"))
                return std::nullopt;
            if (static_cast<uint32_t>(r.imm) >= ROF_ISA_MAX_SLOTS) {
                err = strf("slot number %u above %u", static_cast<uint32_t>(r.imm),
                           ROF_ISA_MAX_SLOTS - 1);
                return std::nullopt;
            }
            in.slot = static_cast<uint8_t>(r.imm);
            return in;
        case ROF_OP_EXIT:
            in.kind = Kind::Exit;
            if (!zero(r.regs == 0, "exit register fields") || !zero(r.off == 0, "exit offset"))
                return std::nullopt;
            in.imm = r.imm;
            return in;
        case ROF_OP_EXIT_REG:
            in.kind = Kind::ExitReg;
            if (!zero(in.dst == 0, "exit dst register") ||
                !zero(r.off == 0 && r.imm == 0, "exit offset/imm"))
                return std::nullopt;
            return in;
        case ROF_OP_RESPOND:
            in.kind = Kind::Respond;
            if (!zero(in.dst == 0, "respond dst register") || !zero(r.off == 0, "respond offset"))
                return std::nullopt;
            in.imm = r.imm;
            return in;
        case ROF_OP_LOOP:
            in.kind = Kind::Loop;
            if (!zero(in.src == 0, "loop src register"))
                return std::nullopt;
            in.off = r.off;
            in.imm = r.imm;
            return in;
        case ROF_OP_JA:
            in.kind = Kind::Ja;
            if (!zero(r.regs == 0 && r.imm == 0, "ja registers/imm"))
                return std::nullopt;
            in.off = r.off;
            return in;
        default:
            break;
    }
    if (op >= ROF_OP_LD && op < ROF_OP_LD + 4) {
        in.kind = Kind::Ld;
        in.size = 1u << (op - ROF_OP_LD);
        if (!decode_memref(r.imm, in.src, false, in.mem, in.aux, err))
            return std::nullopt;
        in.mem.off = r.off;
        return in;
    }
    if (op >= ROF_OP_ST && op < ROF_OP_ST + 4) {
        in.kind = Kind::St;
        in.size = 1u << (op - ROF_OP_ST);
        if (!decode_memref(r.imm, in.dst, false, in.mem, in.aux, err))
            return std::nullopt;
        in.mem.off = r.off;
        return in;
    }
    uint8_t cls = op & 0xf0, sub = op & 0x0f;
    bool neg_reg = sub == ROF_ALU_NEG && (cls == ROF_OP_ALU64_REG || cls == ROF_OP_ALU32_REG);
    if ((cls == ROF_OP_ALU64_IMM || cls == ROF_OP_ALU64_REG || cls == ROF_OP_ALU32_IMM ||
         cls == ROF_OP_ALU32_REG) &&
        sub < ROF_ALU_COUNT && !neg_reg) {
        in.kind = Kind::Alu;
        in.sub = sub;
        in.is32 = cls == ROF_OP_ALU32_IMM || cls == ROF_OP_ALU32_REG;
        in.use_imm = cls == ROF_OP_ALU64_IMM || cls == ROF_OP_ALU32_IMM;
        if (!zero(r.off == 0, "alu offset"))
            return std::nullopt;
        if (in.use_imm) {
            if (!zero(in.src == 0, "alu src register with an immediate"))
                return std::nullopt;
            if (sub == ROF_ALU_NEG && !zero(r.imm == 0, "neg immediate"))
                return std::nullopt;
        } else if (!zero(r.imm == 0, "alu immediate with a register operand")) {
            return std::nullopt;
        }
        in.imm = r.imm;
        return in;
    }
    if ((cls == ROF_OP_JMP64_IMM || cls == ROF_OP_JMP64_REG || cls == ROF_OP_JMP32_IMM ||
         cls == ROF_OP_JMP32_REG) &&
        sub < ROF_JMP_COUNT) {
        in.kind = Kind::Jmp;
        in.sub = sub;
        in.is32 = cls == ROF_OP_JMP32_IMM || cls == ROF_OP_JMP32_REG;
        in.use_imm = cls == ROF_OP_JMP64_IMM || cls == ROF_OP_JMP32_IMM;
        if (in.use_imm && !zero(in.src == 0, "jump src register with an immediate"))
            return std::nullopt;
        if (!in.use_imm && !zero(r.imm == 0, "jump immediate with a register operand"))
            return std::nullopt;
        in.imm = r.imm;
        in.off = r.off;
        return in;
    }
    err = strf("unknown opcode 0x%02x", op);
    return std::nullopt;
}

void encode_insn(const Insn& in, std::vector<rof_insn>& out) {
    rof_insn r{};
    rof_insn r2{};
    switch (in.kind) {
        case Kind::LdImm64:
            r.op = ROF_OP_LDIMM64;
            r.regs = ROF_REGS(in.dst, 0);
            r.imm = static_cast<int32_t>(static_cast<uint32_t>(in.imm64));
            r2.imm = static_cast<int32_t>(static_cast<uint32_t>(in.imm64 >> 32));
            out.push_back(r);
            out.push_back(r2);
            return;
        case Kind::Copy: {
            rof_insn_copy c{};
            c.op = ROF_OP_COPY;
            c.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0,
                              in.src_mem.has_base ? in.src_mem.base : 0);
            c.dst_off = in.mem.off;
            c.dst_space = in.mem.space;
            c.src_space = in.src_mem.space;
            c.mode = static_cast<uint8_t>(
                (in.mem.has_base ? ROF_COPY_DST_BASE : 0) |
                (in.src_mem.has_base ? ROF_COPY_SRC_BASE : 0) | ((in.src_mode & 3u) << 2) |
                (in.dst_indirect ? ROF_COPY_DST_INDIRECT : 0) |
                (in.len_reg ? ROF_COPY_LEN_REG : 0) | (in.out ? ROF_COPY_OUT : 0));
            c.lregs = ROF_REGS(in.len_reg ? in.len_r : 0, in.out ? in.aux : 0);
            c.src_tspace = in.src_mode ? in.src_tspace : 0;
            c.src_off = in.src_mem.off;
            c.len = in.len;
            std::memcpy(&r, &c, 8);
            std::memcpy(&r2, reinterpret_cast<const uint8_t*>(&c) + 8, 8);
            out.push_back(r);
            out.push_back(r2);
            return;
        }
        case Kind::Cas: {
            rof_insn_cas c{};
            c.op = ROF_OP_CAS;
            c.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0, in.aux);
            c.off = in.mem.off;
            c.space = in.mem.space;
            c.flags = static_cast<uint8_t>((in.mem.has_base ? ROF_CAS_BASE : 0) |
                                           (in.blk.has_base ? ROF_CAS_OPBASE : 0) |
                                           (in.old ? ROF_CAS_OLD : 0));
            c.width = in.width;
            c.mode = in.mode;
            c.oregs = in.blk.has_base ? (in.blk.base & 0xf) : 0;
            c.op_off = in.blk.off;
            c.op_space = in.blk.space;
            std::memcpy(&r, &c, 8);
            std::memcpy(&r2, reinterpret_cast<const uint8_t*>(&c) + 8, 8);
            out.push_back(r);
            out.push_back(r2);
            return;
        }
        case Kind::Faa:
            r.op = ROF_OP_FAA;
            r.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0, in.src);
            r.off = in.mem.off;
            r.imm = encode_memref(in.mem, in.aux);
            break;
        case Kind::Crc64:
        case Kind::Hash:
            r.op = in.kind == Kind::Crc64 ? ROF_OP_CRC64 : ROF_OP_HASH;
            r.regs = ROF_REGS(in.dst, in.mem.has_base ? in.mem.base : 0);
            r.off = in.mem.off;
            r.imm = encode_memref(in.mem, in.aux);
            break;
        case Kind::Ld:
            r.op = static_cast<uint8_t>(ROF_OP_LD + std::countr_zero(in.size));
            r.regs = ROF_REGS(in.dst, in.mem.has_base ? in.mem.base : 0);
            r.off = in.mem.off;
            r.imm = encode_memref(in.mem, 0);
            break;
        case Kind::St:
            r.op = static_cast<uint8_t>(ROF_OP_ST + std::countr_zero(in.size));
            r.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0, in.src);
            r.off = in.mem.off;
            r.imm = encode_memref(in.mem, 0);
            break;
        case Kind::Alloc:
            r.op = ROF_OP_ALLOC;
            r.regs = ROF_REGS(in.dst, 0);
            r.imm = in.slot;
            break;
        case Kind::Free:
            r.op = ROF_OP_FREE;
            r.regs = ROF_REGS(0, in.src);
            r.imm = in.slot;
            break;
        case Kind::Exit:
            r.op = ROF_OP_EXIT;
            r.imm = in.imm;
            break;
        case Kind::ExitReg:
            r.op = ROF_OP_EXIT_REG;
            r.regs = ROF_REGS(0, in.src);
            break;
        case Kind::Respond:
            r.op = ROF_OP_RESPOND;
            r.regs = ROF_REGS(0, in.src);
            r.imm = in.imm;
            break;
        case Kind::Loop:
            r.op = ROF_OP_LOOP;
            r.regs = ROF_REGS(in.dst, 0);
            r.off = static_cast<int16_t>(in.off);
            r.imm = in.imm;
            break;
        case Kind::Ja:
            r.op = ROF_OP_JA;
            r.off = static_cast<int16_t>(in.off);
            break;
        case Kind::Alu: {
            bool neg = in.sub == ROF_ALU_NEG;  // one encoding: the imm form
            bool imm = in.use_imm || neg;
            uint8_t cls = in.is32 ? (imm ? ROF_OP_ALU32_IMM : ROF_OP_ALU32_REG)
                                  : (imm ? ROF_OP_ALU64_IMM : ROF_OP_ALU64_REG);
            r.op = static_cast<uint8_t>(cls + in.sub);
            r.regs = ROF_REGS(in.dst, (in.use_imm || neg) ? 0 : in.src);
            r.imm = (in.use_imm && !neg) ? in.imm : 0;
            break;
        }
        case Kind::Jmp: {
            uint8_t cls = in.is32 ? (in.use_imm ? ROF_OP_JMP32_IMM : ROF_OP_JMP32_REG)
                                  : (in.use_imm ? ROF_OP_JMP64_IMM : ROF_OP_JMP64_REG);
            r.op = static_cast<uint8_t>(cls + in.sub);
            r.regs = ROF_REGS(in.dst, in.use_imm ? 0 : in.src);
            r.off = static_cast<int16_t>(in.off);
            r.imm = in.use_imm ? in.imm : 0;
            break;
        }
    }
    out.push_back(r);
}

uint16_t regs_read(const Insn& in) {
    auto bit = [](uint8_t r) { return static_cast<uint16_t>(1u << (r & 0xf)); };
    auto base = [&](const Mem& m) -> uint16_t { return m.has_base ? bit(m.base) : 0; };
    switch (in.kind) {
        case Kind::LdImm64:
        case Kind::Ja:
        case Kind::Exit:
        case Kind::Alloc:
            return 0;
        case Kind::Alu: {
            uint16_t m = 0;
            if (in.sub != ROF_ALU_MOV)
                m |= bit(in.dst);
            if (!in.use_imm && in.sub != ROF_ALU_NEG)
                m |= bit(in.src);
            return m;
        }
        case Kind::Jmp:
            return bit(in.dst) | (in.use_imm ? 0 : bit(in.src));
        case Kind::Loop:
            return bit(in.dst);
        case Kind::Ld:
            return base(in.mem);
        case Kind::St:
            return base(in.mem) | bit(in.src);
        case Kind::Faa:
            return base(in.mem) | bit(in.src);
        case Kind::Crc64:
        case Kind::Hash:
            return base(in.mem) | bit(in.dst) | bit(in.aux);
        case Kind::Free:
        case Kind::ExitReg:
        case Kind::Respond:
            return bit(in.src);
        case Kind::Copy:
            return base(in.mem) | base(in.src_mem) | (in.len_reg ? bit(in.len_r) : 0);
        case Kind::Cas:
            return base(in.mem) | base(in.blk);
    }
    return 0;
}

uint16_t regs_written(const Insn& in) {
    auto bit = [](uint8_t r) { return static_cast<uint16_t>(1u << (r & 0xf)); };
    switch (in.kind) {
        case Kind::LdImm64:
        case Kind::Alu:
        case Kind::Ld:
        case Kind::Crc64:
        case Kind::Hash:
        case Kind::Alloc:
            return bit(in.dst);
        case Kind::Loop:
            return bit(in.dst);
        case Kind::Faa:
        case Kind::Cas:
            return bit(in.aux);
        case Kind::Copy:
            return in.out ? bit(in.aux) : 0;
        default:
            return 0;
    }
}

const char* status_name(int status) {
    return rof_exec_status_name(status);
}

}  // namespace rof::prog
