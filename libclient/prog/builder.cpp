#include "rof/prog/builder.h"

#include "strf.h"

namespace rof::prog {

Builder& Builder::args(uint32_t min, uint32_t max) {
    prog_.args_min = min;
    prog_.args_max = max;
    return *this;
}

Builder& Builder::scratch(uint32_t size) {
    prog_.scratch_size = size;
    return *this;
}

Builder& Builder::resp(uint32_t size) {
    prog_.resp_max = size;
    return *this;
}

uint8_t Builder::region(std::string_view name, uint32_t rights, uint64_t len, bool freelist) {
    prog_.slots.push_back(Slot{std::string(name), rights, freelist ? ROF_SLOT_FREELIST : 0u, len});
    return static_cast<uint8_t>(prog_.slots.size() - 1);
}

Label Builder::label() {
    bound_.push_back(-1);
    return Label{static_cast<uint32_t>(bound_.size() - 1)};
}

Builder& Builder::bind(Label l) {
    if (l.id < bound_.size())
        bound_[l.id] = pc_;
    return *this;
}

Builder& Builder::add(const Insn& in, int label) {
    if (label >= 0)
        fixes_.push_back(Fix{insns_.size(), static_cast<uint32_t>(label)});
    insns_.push_back(in);
    pcs_.push_back(pc_);
    pc_ += in.slots();
    return *this;
}

Builder& Builder::ldimm64(uint8_t dst, uint64_t v) {
    Insn in;
    in.kind = Kind::LdImm64;
    in.dst = dst & 0xf;
    in.imm64 = v;
    return add(in);
}

Builder& Builder::alu(rof_alu op, uint8_t dst, uint8_t src, bool is32) {
    Insn in;
    in.kind = Kind::Alu;
    in.sub = static_cast<uint8_t>(op);
    in.is32 = is32;
    in.use_imm = op == ROF_ALU_NEG;  // neg's one encoding
    in.dst = dst & 0xf;
    in.src = op == ROF_ALU_NEG ? 0 : (src & 0xf);
    return add(in);
}

Builder& Builder::alui(rof_alu op, uint8_t dst, int32_t imm, bool is32) {
    Insn in;
    in.kind = Kind::Alu;
    in.sub = static_cast<uint8_t>(op);
    in.is32 = is32;
    in.use_imm = true;
    in.dst = dst & 0xf;
    in.imm = op == ROF_ALU_NEG ? 0 : imm;
    return add(in);
}

Builder& Builder::ld(unsigned bytes, uint8_t dst, Mem m) {
    Insn in;
    in.kind = Kind::Ld;
    in.size = bytes;
    in.dst = dst & 0xf;
    in.mem = m;
    return add(in);
}

Builder& Builder::st(unsigned bytes, Mem m, uint8_t src) {
    Insn in;
    in.kind = Kind::St;
    in.size = bytes;
    in.src = src & 0xf;
    in.mem = m;
    return add(in);
}

Builder& Builder::jmp(rof_jmp op, uint8_t a, uint8_t b, Label to, bool is32) {
    Insn in;
    in.kind = Kind::Jmp;
    in.sub = static_cast<uint8_t>(op);
    in.is32 = is32;
    in.dst = a & 0xf;
    in.src = b & 0xf;
    return add(in, static_cast<int>(to.id));
}

Builder& Builder::jmpi(rof_jmp op, uint8_t a, int32_t imm, Label to, bool is32) {
    Insn in;
    in.kind = Kind::Jmp;
    in.sub = static_cast<uint8_t>(op);
    in.is32 = is32;
    in.use_imm = true;
    in.dst = a & 0xf;
    in.imm = imm;
    return add(in, static_cast<int>(to.id));
}

Builder& Builder::ja(Label to) {
    Insn in;
    in.kind = Kind::Ja;
    return add(in, static_cast<int>(to.id));
}

Builder& Builder::loop(uint8_t counter, Label head, uint32_t trip) {
    Insn in;
    in.kind = Kind::Loop;
    in.dst = counter & 0xf;
    in.imm = static_cast<int32_t>(trip);
    return add(in, static_cast<int>(head.id));
}

Builder& Builder::faa(uint8_t old, Mem target, uint8_t addend) {
    Insn in;
    in.kind = Kind::Faa;
    in.aux = old & 0xf;
    in.mem = target;
    in.src = addend & 0xf;
    return add(in);
}

Builder& Builder::cas(uint8_t out, unsigned width, Mem target, Mem block, rof_cmp mode, bool old) {
    Insn in;
    in.kind = Kind::Cas;
    in.aux = out & 0xf;
    in.width = static_cast<uint8_t>(width);
    in.mem = target;
    in.blk = block;
    in.mode = static_cast<uint8_t>(mode);
    in.old = old;
    return add(in);
}

Builder& Builder::copy(Mem dst, Mem src, uint32_t len, int len_reg, int out) {
    Insn in;
    in.kind = Kind::Copy;
    in.mem = dst;
    in.src_mem = src;
    in.len = len;
    in.len_reg = len_reg >= 0;
    in.len_r = in.len_reg ? static_cast<uint8_t>(len_reg & 0xf) : 0;
    in.out = out >= 0;
    in.aux = in.out ? static_cast<uint8_t>(out & 0xf) : 0;
    return add(in);
}

Builder& Builder::copy_indirect(Mem dst, uint8_t tspace, Mem ptr, bool bounded, uint32_t len,
                                int len_reg, int out) {
    Insn in;
    in.kind = Kind::Copy;
    in.mem = dst;
    in.src_mem = ptr;
    in.src_mode = bounded ? 2 : 1;
    in.src_tspace = tspace;
    in.len = len;
    in.len_reg = len_reg >= 0;
    in.len_r = in.len_reg ? static_cast<uint8_t>(len_reg & 0xf) : 0;
    in.out = out >= 0;
    in.aux = in.out ? static_cast<uint8_t>(out & 0xf) : 0;
    return add(in);
}

Builder& Builder::crc64(uint8_t dst, Mem m, uint8_t len) {
    Insn in;
    in.kind = Kind::Crc64;
    in.dst = dst & 0xf;
    in.mem = m;
    in.aux = len & 0xf;
    return add(in);
}

Builder& Builder::hash(uint8_t dst, Mem m, uint8_t len) {
    Insn in;
    in.kind = Kind::Hash;
    in.dst = dst & 0xf;
    in.mem = m;
    in.aux = len & 0xf;
    return add(in);
}

Builder& Builder::alloc(uint8_t dst, uint8_t slot) {
    Insn in;
    in.kind = Kind::Alloc;
    in.dst = dst & 0xf;
    in.slot = slot;
    return add(in);
}

Builder& Builder::free(uint8_t slot, uint8_t src) {
    Insn in;
    in.kind = Kind::Free;
    in.slot = slot;
    in.src = src & 0xf;
    return add(in);
}

Builder& Builder::exit(int32_t status) {
    Insn in;
    in.kind = Kind::Exit;
    in.imm = status;
    return add(in);
}

Builder& Builder::exit_reg(uint8_t src) {
    Insn in;
    in.kind = Kind::ExitReg;
    in.src = src & 0xf;
    return add(in);
}

Builder& Builder::respond(uint8_t len, int32_t status) {
    Insn in;
    in.kind = Kind::Respond;
    in.src = len & 0xf;
    in.imm = status;
    return add(in);
}

Builder& Builder::insn(const Insn& in) {
    return add(in);
}

std::optional<Program> Builder::build(std::string& err) const {
    std::vector<Insn> ins = insns_;
    for (const Fix& f : fixes_) {
        if (f.label >= bound_.size() || bound_[f.label] < 0) {
            err =
                strf("instruction %u jumps to label %u, which is never bound", pcs_[f.at], f.label);
            return std::nullopt;
        }
        int64_t off = bound_[f.label] - (int64_t{pcs_[f.at]} + 1);
        if (off < INT16_MIN || off > INT16_MAX) {
            err = strf("instruction %u: jump of %lld slots does not fit 16 bits", pcs_[f.at],
                       static_cast<long long>(off));
            return std::nullopt;
        }
        ins[f.at].off = static_cast<int32_t>(off);
    }
    Program p = prog_;
    for (const Insn& in : ins)
        encode_insn(in, p.insns);
    return p;
}

}  // namespace rof::prog
