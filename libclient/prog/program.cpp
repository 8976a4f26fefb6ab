#include "rof/prog/program.h"

#include <fmt/format.h>

#include <bit>
#include <cinttypes>
#include <cstring>

#include "isa_table.h"
#include "rof_exec.h"

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
    auto v = static_cast<uint32_t>(imm);
    if (v & ~ROF_MEM_MASK) {
        err = fmt::format("reserved bits set in memory reference 0x{:x}", v);
        return false;
    }
    if (!space_valid(ROF_MEM_SPACE(v))) {
        err = fmt::format("invalid address space 0x{:x}", ROF_MEM_SPACE(v));
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
        e.access = s.access;
        e.flags = s.flags;
        e.len = s.len;
        std::memcpy(img.data() + o, &e, kSlotSize);
        o += kSlotSize;
    }
    if (!insns.empty()) {
        std::memcpy(img.data() + o, insns.data(), insns.size() * sizeof(rof_insn));
    }
    h.tag = rof_exec_image_tag(img.data(), img.size());
    std::memcpy(img.data(), &h, kHdrSize);
    return img;
}

uint64_t Program::tag() const {
    std::vector<uint8_t> img = encode();
    rof_isa_hdr h{};
    std::memcpy(&h, img.data(), kHdrSize);
    return h.tag;
}

std::string Program::where(uint32_t pc) const {
    return where_line(pc < lines.size() ? lines[pc] : 0);
}

std::string Program::where_line(uint32_t line) const {
    if (line == 0) {
        return "";
    }
    return fmt::format("{}:{}", file.empty() ? "<input>" : file.c_str(), line);
}

std::optional<uint32_t> Program::find_slot(std::string_view name) const {
    for (size_t i = 0; i < slots.size(); i++) {
        if (slots[i].name == name) {
            return static_cast<uint32_t>(i);
        }
    }
    return std::nullopt;
}

namespace {

std::optional<Program> decode_image(std::span<const uint8_t> image, std::string& err) {
    if (image.size() < kHdrSize) {
        err = fmt::format("image of {} bytes is shorter than its {}-byte header", image.size(),
                          kHdrSize);
        return std::nullopt;
    }
    rof_isa_hdr h{};
    std::memcpy(&h, image.data(), kHdrSize);
    if (h.magic != ROF_ISA_MAGIC) {
        err = fmt::format("bad magic 0x{:08x} (want 0x{:08x})", h.magic, ROF_ISA_MAGIC);
        return std::nullopt;
    }
    if (h.version != ROF_ISA_VERSION) {
        err = fmt::format("unsupported ISA version {} (this is version {})", h.version,
                          ROF_ISA_VERSION);
        return std::nullopt;
    }
    if (h.hdr_size != kHdrSize) {
        err = fmt::format("header size {} (want {})", h.hdr_size, kHdrSize);
        return std::nullopt;
    }
    if (h.flags || h.reserved0 || h.reserved[0] || h.reserved[1]) {
        err = "header flags or reserved fields are not zero";
        return std::nullopt;
    }
    if (h.insn_cnt < 1 || h.insn_cnt > ROF_ISA_MAX_INSNS) {
        err = fmt::format("instruction count {} outside 1..{}", h.insn_cnt, ROF_ISA_MAX_INSNS);
        return std::nullopt;
    }
    if (h.slot_cnt > ROF_ISA_MAX_SLOTS) {
        err = fmt::format("region slot count {} above {}", h.slot_cnt, ROF_ISA_MAX_SLOTS);
        return std::nullopt;
    }
    uint64_t want =
        kHdrSize + uint64_t{h.slot_cnt} * kSlotSize + uint64_t{h.insn_cnt} * sizeof(rof_insn);
    if (image.size() != want) {
        err = fmt::format("image is {} bytes, its header says {}", image.size(), want);
        return std::nullopt;
    }
    if (h.args_min > h.args_max || h.args_max > ROF_ISA_MAX_ARGS) {
        err = fmt::format("args range [{}, {}] invalid (max {})", h.args_min, h.args_max,
                          ROF_ISA_MAX_ARGS);
        return std::nullopt;
    }
    if (h.scratch_size > ROF_ISA_MAX_SCRATCH || h.resp_max > ROF_ISA_MAX_RESP) {
        err = "scratch or resp size above the ISA limit";
        return std::nullopt;
    }
    uint64_t tag = rof_exec_image_tag(image.data(), image.size());
    if (h.tag != tag) {
        err = fmt::format("tag 0x{:016x} does not match the content (0x{:016x})",
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
        rof_isa_slot e{};
        std::memcpy(&e, image.data() + o, kSlotSize);
        size_t n = strnlen(e.name, sizeof(e.name));
        if (n == sizeof(e.name)) {
            err = fmt::format("slot {}: name is not NUL-terminated", i);
            return std::nullopt;
        }
        for (size_t k = n; k < sizeof(e.name); k++) {
            if (e.name[k]) {
                err = fmt::format("slot {}: name padding is not zero", i);
                return std::nullopt;
            }
        }
        p.slots.push_back(Slot{std::string(e.name, n), e.access, e.flags, e.len});
    }
    p.insns.resize(h.insn_cnt);
    std::memcpy(p.insns.data(), image.data() + o, h.insn_cnt * sizeof(rof_insn));
    return p;
}

}  // namespace

Result<Program> decode_image(std::span<const uint8_t> image) {
    Result<Program> r;
    r.value = decode_image(image, r.error);
    return r;
}

namespace isa {

std::optional<rof_jmp> inverse(rof_jmp j) {
    switch (j) {
        case ROF_JMP_JEQ:
            return ROF_JMP_JNE;
        case ROF_JMP_JNE:
            return ROF_JMP_JEQ;
        case ROF_JMP_JGT:
            return ROF_JMP_JLE;
        case ROF_JMP_JLE:
            return ROF_JMP_JGT;
        case ROF_JMP_JGE:
            return ROF_JMP_JLT;
        case ROF_JMP_JLT:
            return ROF_JMP_JGE;
        case ROF_JMP_JSGT:
            return ROF_JMP_JSLE;
        case ROF_JMP_JSLE:
            return ROF_JMP_JSGT;
        case ROF_JMP_JSGE:
            return ROF_JMP_JSLT;
        case ROF_JMP_JSLT:
            return ROF_JMP_JSGE;
        default:
            return std::nullopt;
    }
}

Kind kind_of(const Row& r) {
    switch (r.form) {
        case ROF_FORM_LDIMM64:
            return Kind::LdImm64;
        case ROF_FORM_COPY:
            return Kind::Copy;
        case ROF_FORM_CAS:
            return Kind::Cas;
        case ROF_FORM_FAA:
            return Kind::Faa;
        case ROF_FORM_DIGEST:
            return r.op == ROF_OP_CRC64 ? Kind::Crc64 : Kind::Hash;
        case ROF_FORM_ALLOC:
            return Kind::Alloc;
        case ROF_FORM_FREE:
            return Kind::Free;
        case ROF_FORM_EXIT:
            return Kind::Exit;
        case ROF_FORM_EXIT_REG:
            return Kind::ExitReg;
        case ROF_FORM_RESPOND:
            return Kind::Respond;
        case ROF_FORM_LOOP:
            return Kind::Loop;
        case ROF_FORM_JA:
            return Kind::Ja;
        case ROF_FORM_LD:
            return Kind::Ld;
        case ROF_FORM_ST:
            return Kind::St;
        case ROF_FORM_ALU:
            return Kind::Alu;
        default:
            return Kind::Jmp;
    }
}

const Row& row_of(const Insn& in) {
    // neg has one encoding: the immediate form
    bool imm = in.use_imm || (in.kind == Kind::Alu && in.sub == ROF_ALU_NEG);
    auto flags = static_cast<uint8_t>((imm ? ROF_ISA_F_IMM : 0) | (in.is32 ? ROF_ISA_F_32 : 0));
    uint32_t n = rof_exec_insn_count();
    for (uint32_t i = 0; i < n; i++) {
        const Row& r = rof_exec_insns[i];
        bool family = r.form == ROF_FORM_ALU || r.form == ROF_FORM_JMP;
        if (kind_of(r) == in.kind && (!family || r.flags == flags)) {
            return r;
        }
    }
    return rof_exec_insns[ROF_INSN_EXIT];  // unreachable: every Kind has a row
}

std::string mnemonic(const Insn& in) {
    const Row& r = row_of(in);
    switch (r.form) {
        case ROF_FORM_ALU:
            return std::string(kAlu[in.sub % ROF_ALU_COUNT]) + (in.is32 ? "32" : "64");
        case ROF_FORM_JMP:
            return std::string(kJmp[in.sub % ROF_JMP_COUNT]) + (in.is32 ? "32" : "");
        case ROF_FORM_LD:
        case ROF_FORM_ST:
            return r.mnemonic + std::to_string(in.size * 8);
        case ROF_FORM_CAS:
            return r.mnemonic + std::to_string(in.width * 8);
        default:
            return r.mnemonic;
    }
}

std::vector<Insn> mnemonic_templates() {
    std::vector<Insn> out;
    uint32_t n = rof_exec_insn_count();
    for (uint32_t i = 0; i < n; i++) {
        const Row& r = rof_exec_insns[i];
        Insn in;
        in.kind = kind_of(r);
        in.is32 = r.flags & ROF_ISA_F_32;
        in.use_imm = r.flags & ROF_ISA_F_IMM;
        uint32_t variants = r.form == ROF_FORM_CAS ? ROF_ISA_MAX_CAS_WIDTH / 8 : r.count;
        for (uint32_t v = 0; v < variants; v++) {
            if (r.form == ROF_FORM_ALU || r.form == ROF_FORM_JMP) {
                in.sub = static_cast<uint8_t>(v);
            } else if (r.form == ROF_FORM_LD || r.form == ROF_FORM_ST) {
                in.size = 1u << v;
            } else if (r.form == ROF_FORM_CAS) {
                in.width = static_cast<uint8_t>(8 * (v + 1));
            }
            out.push_back(in);
        }
    }
    return out;
}

}  // namespace isa

namespace {

// The fields a form does not use must be zero; these name them.
bool zero(bool cond, const char* what, std::string& err) {
    if (!cond) {
        err = fmt::format("{} must be 0", what);
    }
    return cond;
}

bool decode_copy(const rof_insn& r, Insn& in, std::string& err) {
    rof_insn_copy c{};
    std::memcpy(&c, &r, sizeof(c));
    if (c.mode & ~ROF_COPY_MODE_MASK) {
        err = fmt::format("copy mode 0x{:x} has reserved bits", c.mode);
        return false;
    }
    in.src_mode = (c.mode & ROF_COPY_SRC_MASK) >> 2;
    if (in.src_mode == 3) {
        err = "copy source mode 3 is invalid";
        return false;
    }
    if (!space_valid(c.dst_space) || !space_valid(c.src_space) ||
        (in.src_mode && !space_valid(c.src_tspace))) {
        err = "copy names an invalid address space";
        return false;
    }
    if (!in.src_mode && c.src_tspace) {
        err = "copy target space must be 0 for a direct source";
        return false;
    }
    in.mem = Mem{c.dst_space, bool(c.mode & ROF_COPY_DST_BASE), static_cast<uint8_t>(c.regs & 0xf),
                 c.dst_off};
    in.src_mem = Mem{c.src_space, bool(c.mode & ROF_COPY_SRC_BASE),
                     static_cast<uint8_t>(c.regs >> 4), c.src_off};
    if ((!in.mem.has_base && in.mem.base) || (!in.src_mem.has_base && in.src_mem.base)) {
        err = "copy base register field must be 0 without a base register";
        return false;
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
        return false;
    }
    if (c.len > ROF_ISA_MAX_BULK) {
        err = fmt::format("copy length {} above the ISA limit {}", c.len, ROF_ISA_MAX_BULK);
        return false;
    }
    return true;
}

bool decode_cas(const rof_insn& r, Insn& in, std::string& err) {
    rof_insn_cas c{};
    std::memcpy(&c, &r, sizeof(c));
    if (c.flags & ~ROF_CAS_FLAGS_MASK) {
        err = fmt::format("cas flags 0x{:x} have reserved bits", c.flags);
        return false;
    }
    if (c.mode >= ROF_CMP_COUNT) {
        err = fmt::format("cas mode {} is invalid", c.mode);
        return false;
    }
    if (c.width != 8 && c.width != 16 && c.width != 24 && c.width != 32) {
        err = fmt::format("cas width {} is not 8, 16, 24 or 32 bytes", c.width);
        return false;
    }
    if (c.space >= ROF_ISA_MAX_SLOTS) {
        err = "cas target must be a region slot";
        return false;
    }
    if (!space_valid(c.op_space)) {
        err = "cas operand block names an invalid address space";
        return false;
    }
    if (c.reserved[0] || c.reserved[1] || c.reserved[2] || (c.oregs >> 4)) {
        err = "cas reserved fields must be 0";
        return false;
    }
    in.mem = Mem{c.space, bool(c.flags & ROF_CAS_BASE), static_cast<uint8_t>(c.regs & 0xf), c.off};
    in.blk = Mem{c.op_space, bool(c.flags & ROF_CAS_OPBASE), static_cast<uint8_t>(c.oregs & 0xf),
                 c.op_off};
    if ((!in.mem.has_base && in.mem.base) || (!in.blk.has_base && in.blk.base)) {
        err = "cas base register field must be 0 without a base register";
        return false;
    }
    in.aux = c.regs >> 4;
    in.width = c.width;
    in.mode = c.mode;
    in.old = c.flags & ROF_CAS_OLD;
    return true;
}

// A memory operand in imm and off, its base register in the slot's base.
bool decode_mem(const rof_insn& r, uint8_t base, bool aux_used, Insn& in, std::string& err) {
    if (!decode_memref(r.imm, base, aux_used, in.mem, in.aux, err)) {
        return false;
    }
    in.mem.off = r.off;
    return true;
}

// By form: the operands of one instruction, its row found and its second
// slot (if wide) present.
bool decode_form(const isa::Row& row, std::span<const rof_insn> insns, uint32_t pc, Insn& in,
                 std::string& err) {
    const rof_insn& r = insns[pc];
    auto sub = static_cast<uint8_t>(r.op - row.op);
    switch (row.form) {
        case ROF_FORM_LDIMM64:
            if (!zero(in.src == 0, "ldimm64 src register", err) ||
                !zero(r.off == 0, "ldimm64 offset", err) ||
                !zero(insns[pc + 1].regs == 0 && insns[pc + 1].off == 0,
                      "ldimm64 second slot regs/off", err)) {
                return false;
            }
            in.imm64 = static_cast<uint32_t>(r.imm) |
                       (uint64_t{static_cast<uint32_t>(insns[pc + 1].imm)} << 32);
            return true;
        case ROF_FORM_COPY:
            return decode_copy(r, in, err);
        case ROF_FORM_CAS:
            return decode_cas(r, in, err);
        case ROF_FORM_FAA:
            if (!decode_mem(r, in.dst, true, in, err)) {
                return false;
            }
            if (in.mem.space >= ROF_ISA_MAX_SLOTS) {
                err = "faa target must be a region slot";
                return false;
            }
            return true;
        case ROF_FORM_DIGEST:
            return decode_mem(r, in.src, true, in, err);
        case ROF_FORM_ALLOC:
        case ROF_FORM_FREE:
            if (!zero(row.form == ROF_FORM_ALLOC ? in.src == 0 : in.dst == 0,
                      "unused register field", err) ||
                !zero(r.off == 0, "offset", err)) {
                return false;
            }
            if (static_cast<uint32_t>(r.imm) >= ROF_ISA_MAX_SLOTS) {
                err = fmt::format("slot number {} above {}", static_cast<uint32_t>(r.imm),
                                  ROF_ISA_MAX_SLOTS - 1);
                return false;
            }
            in.slot = static_cast<uint8_t>(r.imm);
            return true;
        case ROF_FORM_EXIT:
            in.imm = r.imm;
            return zero(r.regs == 0, "exit register fields", err) &&
                   zero(r.off == 0, "exit offset", err);
        case ROF_FORM_EXIT_REG:
            return zero(in.dst == 0, "exit dst register", err) &&
                   zero(r.off == 0 && r.imm == 0, "exit offset/imm", err);
        case ROF_FORM_RESPOND:
            in.imm = r.imm;
            return zero(in.dst == 0, "respond dst register", err) &&
                   zero(r.off == 0, "respond offset", err);
        case ROF_FORM_LOOP:
            in.off = r.off;
            in.imm = r.imm;
            return zero(in.src == 0, "loop src register", err);
        case ROF_FORM_JA:
            in.off = r.off;
            return zero(r.regs == 0 && r.imm == 0, "ja registers/imm", err);
        case ROF_FORM_LD:
        case ROF_FORM_ST:
            in.size = 1u << sub;
            return decode_mem(r, row.form == ROF_FORM_LD ? in.src : in.dst, false, in, err);
        case ROF_FORM_ALU:
            in.sub = sub;
            in.imm = r.imm;
            if (!zero(r.off == 0, "alu offset", err)) {
                return false;
            }
            if (in.use_imm) {
                return zero(in.src == 0, "alu src register with an immediate", err) &&
                       (sub != ROF_ALU_NEG || zero(r.imm == 0, "neg immediate", err));
            }
            return zero(r.imm == 0, "alu immediate with a register operand", err);
        default:  // ROF_FORM_JMP
            in.sub = sub;
            in.imm = r.imm;
            in.off = r.off;
            if (in.use_imm) {
                return zero(in.src == 0, "jump src register with an immediate", err);
            }
            return zero(r.imm == 0, "jump immediate with a register operand", err);
    }
}

}  // namespace

namespace {

std::optional<Insn> decode_one(std::span<const rof_insn> insns, uint32_t pc, std::string& err) {
    if (pc >= insns.size()) {
        err = "instruction index out of range";
        return std::nullopt;
    }
    const rof_insn& r = insns[pc];
    const isa::Row* row = rof_exec_insn_info(r.op);
    // neg has one encoding: the immediate form
    if (row && row->form == ROF_FORM_ALU && !(row->flags & ROF_ISA_F_IMM) &&
        r.op - row->op == ROF_ALU_NEG) {
        row = nullptr;
    }
    if (!row) {
        err = r.op == ROF_OP_EXT
                  ? "opcode 0x00 is the second slot of a wide instruction, not an instruction"
                  : fmt::format("unknown opcode 0x{:02x}", r.op);
        return std::nullopt;
    }
    if (row->slots == 2) {
        if (pc + 1 >= insns.size()) {
            err = "wide instruction truncated by the end of the program";
            return std::nullopt;
        }
        if (insns[pc + 1].op != ROF_OP_EXT) {
            err = "second slot of a wide instruction must start with opcode 0x00";
            return std::nullopt;
        }
    }
    Insn in;
    in.kind = isa::kind_of(*row);
    in.dst = ROF_INSN_DST(&r);
    in.src = ROF_INSN_SRC(&r);
    in.is32 = row->flags & ROF_ISA_F_32;
    in.use_imm = row->flags & ROF_ISA_F_IMM;
    if (!decode_form(*row, insns, pc, in, err)) {
        return std::nullopt;
    }
    return in;
}

}  // namespace

Result<Insn> decode_insn(std::span<const rof_insn> insns, uint32_t pc) {
    Result<Insn> r;
    r.value = decode_one(insns, pc, r.error);
    return r;
}

namespace {

void encode_copy(const Insn& in, rof_insn* r) {
    rof_insn_copy c{};
    c.op = ROF_OP_COPY;
    c.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0, in.src_mem.has_base ? in.src_mem.base : 0);
    c.dst_off = in.mem.off;
    c.dst_space = in.mem.space;
    c.src_space = in.src_mem.space;
    c.mode = static_cast<uint8_t>(
        (in.mem.has_base ? ROF_COPY_DST_BASE : 0) | (in.src_mem.has_base ? ROF_COPY_SRC_BASE : 0) |
        ((in.src_mode & 3u) << 2) | (in.dst_indirect ? ROF_COPY_DST_INDIRECT : 0) |
        (in.len_reg ? ROF_COPY_LEN_REG : 0) | (in.out ? ROF_COPY_OUT : 0));
    c.lregs = ROF_REGS(in.len_reg ? in.len_r : 0, in.out ? in.aux : 0);
    c.src_tspace = in.src_mode ? in.src_tspace : 0;
    c.src_off = in.src_mem.off;
    c.len = in.len;
    std::memcpy(r, &c, sizeof(c));
}

void encode_cas(const Insn& in, rof_insn* r) {
    rof_insn_cas c{};
    c.op = ROF_OP_CAS;
    c.regs = ROF_REGS(in.mem.has_base ? in.mem.base : 0, in.aux);
    c.off = in.mem.off;
    c.space = in.mem.space;
    c.flags =
        static_cast<uint8_t>((in.mem.has_base ? ROF_CAS_BASE : 0) |
                             (in.blk.has_base ? ROF_CAS_OPBASE : 0) | (in.old ? ROF_CAS_OLD : 0));
    c.width = in.width;
    c.mode = in.mode;
    c.oregs = in.blk.has_base ? (in.blk.base & 0xf) : 0;
    c.op_off = in.blk.off;
    c.op_space = in.blk.space;
    std::memcpy(r, &c, sizeof(c));
}

uint8_t base_of(const Mem& m) {
    return m.has_base ? m.base : 0;
}

}  // namespace

void encode_insn(const Insn& in, std::vector<rof_insn>& out) {
    const isa::Row& row = isa::row_of(in);
    rof_insn r[2] = {};
    r[0].op = row.op;
    switch (row.form) {
        case ROF_FORM_LDIMM64:
            r[0].regs = ROF_REGS(in.dst, 0);
            r[0].imm = static_cast<int32_t>(static_cast<uint32_t>(in.imm64));
            r[1].imm = static_cast<int32_t>(static_cast<uint32_t>(in.imm64 >> 32));
            break;
        case ROF_FORM_COPY:
            encode_copy(in, r);
            break;
        case ROF_FORM_CAS:
            encode_cas(in, r);
            break;
        case ROF_FORM_FAA:
            r[0].regs = ROF_REGS(base_of(in.mem), in.src);
            r[0].off = in.mem.off;
            r[0].imm = encode_memref(in.mem, in.aux);
            break;
        case ROF_FORM_DIGEST:
            r[0].regs = ROF_REGS(in.dst, base_of(in.mem));
            r[0].off = in.mem.off;
            r[0].imm = encode_memref(in.mem, in.aux);
            break;
        case ROF_FORM_LD:
        case ROF_FORM_ST:
            r[0].op = static_cast<uint8_t>(row.op + std::countr_zero(in.size));
            r[0].regs = row.form == ROF_FORM_LD ? ROF_REGS(in.dst, base_of(in.mem))
                                                : ROF_REGS(base_of(in.mem), in.src);
            r[0].off = in.mem.off;
            r[0].imm = encode_memref(in.mem, 0);
            break;
        case ROF_FORM_ALLOC:
            r[0].regs = ROF_REGS(in.dst, 0);
            r[0].imm = in.slot;
            break;
        case ROF_FORM_FREE:
            r[0].regs = ROF_REGS(0, in.src);
            r[0].imm = in.slot;
            break;
        case ROF_FORM_EXIT:
            r[0].imm = in.imm;
            break;
        case ROF_FORM_EXIT_REG:
        case ROF_FORM_RESPOND:
            r[0].regs = ROF_REGS(0, in.src);
            r[0].imm = row.form == ROF_FORM_RESPOND ? in.imm : 0;
            break;
        case ROF_FORM_LOOP:
            r[0].regs = ROF_REGS(in.dst, 0);
            r[0].off = static_cast<int16_t>(in.off);
            r[0].imm = in.imm;
            break;
        case ROF_FORM_JA:
            r[0].off = static_cast<int16_t>(in.off);
            break;
        default: {  // ALU, JMP: a family
            bool imm = row.flags & ROF_ISA_F_IMM;
            bool neg = row.form == ROF_FORM_ALU && in.sub == ROF_ALU_NEG;
            r[0].op = static_cast<uint8_t>(row.op + in.sub);
            r[0].regs = ROF_REGS(in.dst, imm ? 0 : in.src);
            r[0].off = row.form == ROF_FORM_JMP ? static_cast<int16_t>(in.off) : int16_t{0};
            r[0].imm = (imm && !neg) ? in.imm : 0;
            break;
        }
    }
    out.insert(out.end(), r, r + row.slots);
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
            if (in.sub != ROF_ALU_MOV) {
                m |= bit(in.dst);
            }
            if (!in.use_imm && in.sub != ROF_ALU_NEG) {
                m |= bit(in.src);
            }
            return m;
        }
        case Kind::Jmp:
            return bit(in.dst) | (in.use_imm ? 0 : bit(in.src));
        case Kind::Loop:
            return bit(in.dst);
        case Kind::Ld:
            return base(in.mem);
        case Kind::St:
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

std::optional<std::string> space_name(const Program& p, uint8_t s) {
    if (s == ROF_SPACE_ARGS) {
        return "args";
    }
    if (s == ROF_SPACE_SCRATCH) {
        return "scratch";
    }
    if (s == ROF_SPACE_RESP) {
        return "resp";
    }
    if (s < p.slots.size()) {
        return p.slots[s].name;
    }
    return std::nullopt;
}

std::string access_str(uint32_t access, bool words) {
    static constexpr struct {
        uint32_t bit;
        char letter;
        const char* word;
    } kAccess[] = {{ROF_ACCESS_READ, 'r', "read"},
                   {ROF_ACCESS_WRITE, 'w', "write"},
                   {ROF_ACCESS_ATOMIC, 'a', "atomic"}};
    if (!words && (access == 0 || (access & ~ROF_ACCESS_ALL))) {
        return fmt::format("{}", access);
    }
    std::string s;
    for (const auto& r : kAccess) {
        if (!(access & r.bit)) {
            continue;
        }
        if (!words) {
            s += r.letter;
        } else {
            s += s.empty() ? r.word : fmt::format(",{}", r.word);
        }
    }
    return s.empty() ? "none" : s;
}

const char* status_name(int status) {
    return rof_exec_status_name(status);
}

bool lay_freelist(std::span<uint8_t> region, uint64_t at, uint64_t block_size, uint64_t first,
                  uint64_t count) {
    const uint64_t len = region.size();
    if (block_size < 8 || block_size % 8 != 0 || at % 8 != 0 || first % 8 != 0 ||
        count >= (uint64_t{1} << 32) || at > len || len - at < sizeof(rof_isa_freelist) ||
        first > len || (count != 0 && (len - first) / count < block_size) ||
        (first < at + sizeof(rof_isa_freelist) && first + block_size * count > at)) {
        return false;
    }
    rof_isa_freelist h{};
    h.magic = ROF_FREELIST_MAGIC;
    h.block_size = block_size;
    h.first = first;
    h.nblocks = count;
    h.head = count != 0 ? 1 : 0;
    std::memcpy(region.data() + at, &h, sizeof(h));
    for (uint64_t i = 1; i <= count; i++) {
        const uint64_t next = i < count ? i + 1 : 0;
        std::memcpy(region.data() + first + (i - 1) * block_size, &next, 8);
    }
    return true;
}

}  // namespace rof::prog
