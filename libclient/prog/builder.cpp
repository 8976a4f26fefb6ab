#include "rof/prog/builder.h"

#include <fmt/format.h>

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

uint8_t Builder::region(std::string_view name, uint32_t access, uint64_t len, bool freelist) {
    prog_.slots.push_back(Slot{std::string(name), access, freelist ? ROF_SLOT_FREELIST : 0u, len});
    return static_cast<uint8_t>(prog_.slots.size() - 1);
}

Label Builder::label() {
    bound_.push_back(-1);
    return Label{static_cast<uint32_t>(bound_.size() - 1)};
}

Builder& Builder::bind(Label l) {
    if (l.id < bound_.size()) {
        bound_[l.id] = pc_;
    }
    return *this;
}

Builder& Builder::add(const Insn& in, int label) {
    if (label >= 0) {
        fixes_.push_back(Fix{insns_.size(), static_cast<uint32_t>(label)});
    }
    insns_.push_back(in);
    pcs_.push_back(pc_);
    pc_ += in.slots();
    return *this;
}

namespace {

uint8_t r4(unsigned r) {
    return static_cast<uint8_t>(r & 0xf);
}

// A copy's length register and out register fields; < 0 for none.
void copy_regs(Insn& in, int len_reg, int out) {
    in.len_reg = len_reg >= 0;
    in.len_r = in.len_reg ? r4(static_cast<unsigned>(len_reg)) : 0;
    in.out = out >= 0;
    in.aux = in.out ? r4(static_cast<unsigned>(out)) : 0;
}

}  // namespace

Builder& Builder::ldimm64(uint8_t dst, uint64_t v) {
    return add(Insn{.kind = Kind::LdImm64, .dst = r4(dst), .imm64 = v});
}

Builder& Builder::alu(rof_alu op, uint8_t dst, uint8_t src, bool is32) {
    bool neg = op == ROF_ALU_NEG;  // neg's one encoding: the immediate form
    return add(Insn{.kind = Kind::Alu,
                    .dst = r4(dst),
                    .src = neg ? uint8_t{0} : r4(src),
                    .is32 = is32,
                    .use_imm = neg,
                    .sub = static_cast<uint8_t>(op)});
}

Builder& Builder::alui(rof_alu op, uint8_t dst, int32_t imm, bool is32) {
    return add(Insn{.kind = Kind::Alu,
                    .dst = r4(dst),
                    .is32 = is32,
                    .use_imm = true,
                    .sub = static_cast<uint8_t>(op),
                    .imm = op == ROF_ALU_NEG ? 0 : imm});
}

Builder& Builder::ld(unsigned bytes, uint8_t dst, Mem m) {
    return add(Insn{.kind = Kind::Ld, .dst = r4(dst), .size = bytes, .mem = m});
}

Builder& Builder::st(unsigned bytes, Mem m, uint8_t src) {
    return add(Insn{.kind = Kind::St, .src = r4(src), .size = bytes, .mem = m});
}

Builder& Builder::jmp(rof_jmp op, uint8_t a, uint8_t b, Label to, bool is32) {
    return add(Insn{.kind = Kind::Jmp,
                    .dst = r4(a),
                    .src = r4(b),
                    .is32 = is32,
                    .sub = static_cast<uint8_t>(op)},
               static_cast<int>(to.id));
}

Builder& Builder::jmpi(rof_jmp op, uint8_t a, int32_t imm, Label to, bool is32) {
    return add(Insn{.kind = Kind::Jmp,
                    .dst = r4(a),
                    .is32 = is32,
                    .use_imm = true,
                    .sub = static_cast<uint8_t>(op),
                    .imm = imm},
               static_cast<int>(to.id));
}

Builder& Builder::ja(Label to) {
    return add(Insn{.kind = Kind::Ja}, static_cast<int>(to.id));
}

Builder& Builder::loop(uint8_t counter, Label head, uint32_t trip) {
    return add(Insn{.kind = Kind::Loop, .dst = r4(counter), .imm = static_cast<int32_t>(trip)},
               static_cast<int>(head.id));
}

Builder& Builder::faa(uint8_t old, Mem target, uint8_t addend) {
    return add(Insn{.kind = Kind::Faa, .src = r4(addend), .mem = target, .aux = r4(old)});
}

Builder& Builder::cas(uint8_t out, unsigned width, Mem target, Mem block, rof_cmp mode, bool old) {
    return add(Insn{.kind = Kind::Cas,
                    .mem = target,
                    .aux = r4(out),
                    .blk = block,
                    .width = static_cast<uint8_t>(width),
                    .mode = static_cast<uint8_t>(mode),
                    .old = old});
}

Builder& Builder::copy(Mem dst, Mem src, uint32_t len, int len_reg, int out) {
    Insn in{.kind = Kind::Copy, .mem = dst, .src_mem = src, .len = len};
    copy_regs(in, len_reg, out);
    return add(in);
}

Builder& Builder::copy_indirect(Mem dst, uint8_t tspace, Mem ptr, bool bounded, uint32_t len,
                                int len_reg, int out) {
    Insn in{.kind = Kind::Copy,
            .mem = dst,
            .src_mem = ptr,
            .src_mode = static_cast<uint8_t>(bounded ? 2 : 1),
            .src_tspace = tspace,
            .len = len};
    copy_regs(in, len_reg, out);
    return add(in);
}

Builder& Builder::crc64(uint8_t dst, Mem m, uint8_t len) {
    return add(Insn{.kind = Kind::Crc64, .dst = r4(dst), .mem = m, .aux = r4(len)});
}

Builder& Builder::hash(uint8_t dst, Mem m, uint8_t len) {
    return add(Insn{.kind = Kind::Hash, .dst = r4(dst), .mem = m, .aux = r4(len)});
}

Builder& Builder::alloc(uint8_t dst, uint8_t slot) {
    return add(Insn{.kind = Kind::Alloc, .dst = r4(dst), .slot = slot});
}

Builder& Builder::free(uint8_t slot, uint8_t src) {
    return add(Insn{.kind = Kind::Free, .src = r4(src), .slot = slot});
}

Builder& Builder::exit(int32_t status) {
    return add(Insn{.kind = Kind::Exit, .imm = status});
}

Builder& Builder::exit_reg(uint8_t src) {
    return add(Insn{.kind = Kind::ExitReg, .src = r4(src)});
}

Builder& Builder::respond(uint8_t len, int32_t status) {
    return add(Insn{.kind = Kind::Respond, .src = r4(len), .imm = status});
}

Builder& Builder::insn(const Insn& in) {
    return add(in);
}

Result<Program> Builder::build() const {
    Result<Program> res;
    std::vector<Insn> ins = insns_;
    for (const Fix& f : fixes_) {
        if (f.label >= bound_.size() || bound_[f.label] < 0) {
            res.error = fmt::format("instruction {} jumps to label {}, which is never bound",
                                    pcs_[f.at], f.label);
            return res;
        }
        int64_t off = bound_[f.label] - (int64_t{pcs_[f.at]} + 1);
        if (off < INT16_MIN || off > INT16_MAX) {
            res.error = fmt::format("instruction {}: jump of {} slots does not fit 16 bits",
                                    pcs_[f.at], static_cast<long long>(off));
            return res;
        }
        ins[f.at].off = static_cast<int32_t>(off);
    }
    Program p = prog_;
    for (const Insn& in : ins) {
        encode_insn(in, p.insns);
    }
    res.value = std::move(p);
    return res;
}

}  // namespace rof::prog
