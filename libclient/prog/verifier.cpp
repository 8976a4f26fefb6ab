#include "rof/prog/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cinttypes>
#include <deque>
#include <numeric>
#include <set>

#include "isa_table.h"
#include "rof/prog/asm.h"
#include "rof_exec.h"

namespace rof::prog {
namespace {

using i128 = __int128;
constexpr uint64_t kMax = UINT64_MAX;
constexpr uint64_t kNone = UINT64_MAX;     // distance not reached
constexpr uint64_t kSat = UINT64_MAX / 4;  // saturated cost

uint64_t sat_add(uint64_t a, uint64_t b) {
    return (a >= kSat || b >= kSat || a + b >= kSat) ? kSat : a + b;
}
uint64_t sat_mul(uint64_t a, uint64_t b) {
    if (a == 0 || b == 0) {
        return 0;
    }
    if (a >= kSat || b >= kSat || a > kSat / b) {
        return kSat;
    }
    return a * b;
}

struct Range {
    bool init = false;
    uint64_t lo = 0, hi = kMax;
    bool operator==(const Range&) const = default;
    bool is_const() const { return lo == hi; }
};
Range full() {
    return Range{true, 0, kMax};
}
Range cnst(uint64_t v) {
    return Range{true, v, v};
}

struct State {
    bool live = false;
    Range r[ROF_ISA_NREGS];
    bool operator==(const State&) const = default;
};

// Join: a register is initialised only if it is on both paths.
State join(const State& a, const State& b) {
    if (!a.live) {
        return b;
    }
    if (!b.live) {
        return a;
    }
    State s;
    s.live = true;
    for (int i = 0; i < ROF_ISA_NREGS; i++) {
        s.r[i].init = a.r[i].init && b.r[i].init;
        s.r[i].lo = std::min(a.r[i].lo, b.r[i].lo);
        s.r[i].hi = std::max(a.r[i].hi, b.r[i].hi);
    }
    return s;
}

uint64_t mask_bits(uint64_t v) {  // smallest 2^k - 1 >= v
    uint64_t m = v;
    m |= m >> 1;
    m |= m >> 2;
    m |= m >> 4;
    m |= m >> 8;
    m |= m >> 16;
    m |= m >> 32;
    return m;
}

// The executor's exact ALU semantics on constants (docs/isa.md §4).
bool alu_exact(uint8_t op, bool is32, uint64_t d, uint64_t s, uint64_t& out) {
    u64 v = d;
    if (rof_exec_alu(op, is32, &v, s) != 0) {
        return false;
    }
    out = v;
    return true;
}

// Range of an ALU result, computed in 64 bits on ranges that already fit
// the operation's width; the caller clamps 32-bit results.
Range alu_range(uint8_t op, bool is32, Range a, Range b) {
    const uint64_t top = is32 ? 0xffffffffULL : kMax;
    if (op == ROF_ALU_MOV && b.is_const()) {
        return cnst(is32 ? static_cast<uint32_t>(b.lo) : b.lo);
    }
    if (a.is_const() && b.is_const()) {
        uint64_t v;
        if (alu_exact(op, is32, a.lo, b.lo, v)) {
            return cnst(v);
        }
        return Range{true, 0, top};
    }
    if (is32) {
        if (a.hi > top) {
            a = Range{true, 0, top};
        }
        if (b.hi > top) {
            b = Range{true, 0, top};
        }
    }
    Range all{true, 0, top};
    if (op == ROF_ALU_MOV) {
        return b;
    }
    switch (op) {
        case ROF_ALU_ADD:
            if (a.hi <= top - b.hi) {
                return Range{true, a.lo + b.lo, a.hi + b.hi};
            }
            return all;
        case ROF_ALU_SUB:
            if (a.lo >= b.hi) {
                return Range{true, a.lo - b.hi, a.hi - b.lo};
            }
            return all;
        case ROF_ALU_MUL:
            if (b.hi == 0 || a.hi <= top / b.hi) {
                return Range{true, a.lo * b.lo, a.hi * b.hi};
            }
            return all;
        case ROF_ALU_DIV:
            if (b.lo > 0) {
                return Range{true, a.lo / b.hi, a.hi / b.lo};
            }
            return Range{true, 0, a.hi};
        case ROF_ALU_MOD:
            if (b.hi == 0) {
                return all;
            }
            return Range{true, 0, std::min(a.hi, b.hi - 1)};
        case ROF_ALU_AND:
            return Range{true, 0, std::min(a.hi, b.hi)};
        case ROF_ALU_OR:
            return Range{true, std::max(a.lo, b.lo), mask_bits(std::max(a.hi, b.hi))};
        case ROF_ALU_XOR:
            return Range{true, 0, mask_bits(std::max(a.hi, b.hi))};
        case ROF_ALU_LSH:
            if (b.is_const()) {
                unsigned k = b.lo & (is32 ? 31 : 63);
                if (a.hi <= (top >> k)) {
                    return Range{true, a.lo << k, a.hi << k};
                }
            }
            return all;
        case ROF_ALU_RSH:
            if (b.is_const()) {
                unsigned k = b.lo & (is32 ? 31 : 63);
                return Range{true, a.lo >> k, a.hi >> k};
            }
            return Range{true, 0, a.hi};
        case ROF_ALU_ARSH:
            if (a.hi <= (top >> 1)) {  // non-negative: same as rsh
                if (b.is_const()) {
                    unsigned k = b.lo & (is32 ? 31 : 63);
                    return Range{true, a.lo >> k, a.hi >> k};
                }
                return Range{true, 0, a.hi};
            }
            return all;
        default:
            return all;
    }
}

bool jmp_exact(uint8_t op, bool is32, uint64_t a, uint64_t b) {
    return rof_exec_jmp(op, is32, a, b) != 0;
}

// Refines a and b assuming "a OP b" holds for unsigned OP; false when it
// cannot hold.
bool refine_unsigned(uint8_t op, Range& a, Range& b) {
    switch (op) {
        case ROF_JMP_JEQ: {
            uint64_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
            if (lo > hi) {
                return false;
            }
            a.lo = b.lo = lo;
            a.hi = b.hi = hi;
            return true;
        }
        case ROF_JMP_JNE:
            if (a.is_const() && b.is_const() && a.lo == b.lo) {
                return false;
            }
            if (b.is_const()) {
                if (a.lo == b.lo) {
                    a.lo++;
                } else if (a.hi == b.lo) {
                    a.hi--;
                }
            } else if (a.is_const()) {
                if (b.lo == a.lo) {
                    b.lo++;
                } else if (b.hi == a.lo) {
                    b.hi--;
                }
            }
            return true;
        case ROF_JMP_JGT:  // a > b
            if (b.lo == kMax || a.hi == 0) {
                return false;
            }
            a.lo = std::max(a.lo, b.lo + 1);
            b.hi = std::min(b.hi, a.hi - 1);
            return a.lo <= a.hi && b.lo <= b.hi;
        case ROF_JMP_JGE:
            a.lo = std::max(a.lo, b.lo);
            b.hi = std::min(b.hi, a.hi);
            return a.lo <= a.hi && b.lo <= b.hi;
        case ROF_JMP_JLT:
            return refine_unsigned(ROF_JMP_JGT, b, a);
        case ROF_JMP_JLE:
            return refine_unsigned(ROF_JMP_JGE, b, a);
        default:
            return true;
    }
}

// Refines for "a OP b" of a jump of the given width.  Ranges narrow only
// where the comparison the CPU does equals the 64-bit unsigned one: a
// 32-bit compare says nothing about the upper half of a wider register,
// and a signed compare nothing about a value that may be negative.
// The condition of a jump's fall-through edge; 0xff (no refinement) for JSET.
uint8_t negated(uint8_t op) {
    const auto inv = isa::inverse(static_cast<rof_jmp>(op));
    return inv ? static_cast<uint8_t>(*inv) : 0xff;
}

bool refine(uint8_t op, bool is32, Range& a, Range& b) {
    if (op == 0xff || op == ROF_JMP_JSET) {
        return true;
    }
    bool is_signed = op >= ROF_JMP_JSGT && op <= ROF_JMP_JSLE;
    uint64_t lim = is32 ? (is_signed ? 0x7fffffffULL : 0xffffffffULL)
                        : (is_signed ? 0x7fffffffffffffffULL : kMax);
    if (a.hi > lim || b.hi > lim) {
        // Only an exact constant test can still be decided.
        if (a.is_const() && b.is_const()) {
            return jmp_exact(op, is32, a.lo, b.lo);
        }
        return true;
    }
    if (is_signed) {
        op = static_cast<uint8_t>(op - ROF_JMP_JSGT + ROF_JMP_JGT);
    }
    return refine_unsigned(op, a, b);
}

struct Loop {
    uint32_t head, end, counter, trip;
};

class Verifier {
  public:
    Verifier(const Program& p, const VerifyOptions& o)
        : p_(p), o_(o), lim_(o.limits), n_(static_cast<uint32_t>(p.insns.size())) {}

    VerifyResult run() {
        bool ok = header() && decode_all() && reachability() && loops() && worst_case() &&
                  dataflow() && crosscheck();
        res_.ok = ok;
        res_.processed = processed_;
        log_ += fmt::format("processed {} insns (limit {}), ", processed_, lim_.max_processed);
        log_ += have_w_ ? fmt::format("worst-case path {}\n", res_.worst_case)
                        : std::string("worst-case path unknown\n");
        res_.log = std::move(log_);
        return std::move(res_);
    }

  private:
    // ---- messages ----
    std::string at(uint32_t pc) const {
        std::string w = p_.where(pc);
        return w.empty() ? fmt::format("insn {}", pc) : fmt::format("insn {} ({})", pc, w.c_str());
    }
    bool reject(uint32_t pc, const std::string& why) {
        return refuse(pc == UINT32_MAX ? std::string("program") : at(pc), pc, why);
    }
    // A header field or slot at fault: ".region (file:line): why", naming
    // the directive that set it, or "program: why" without source.
    bool reject_directive(const char* name, uint32_t line, const std::string& why) {
        std::string w = p_.where_line(line);
        return refuse(w.empty() ? std::string("program") : fmt::format("{} ({})", name, w.c_str()),
                      UINT32_MAX, why);
    }
    bool refuse(const std::string& where, uint32_t pc, const std::string& why) {
        res_.error = where + ": " + why;
        res_.error_insn = pc;
        log_ += res_.error + "\n";
        return false;
    }
    void log(int level, uint32_t pc, const std::string& msg) {
        if (o_.log_level >= level) {
            log_ += at(pc) + ": " + msg + "\n";
        }
    }
    std::string sname(uint8_t s) const {
        if (s < p_.slots.size()) {
            return "region '" + p_.slots[s].name + "'";
        }
        return space_name(p_, s).value_or(fmt::format("slot {}", s));
    }

    // ---- A: header and slots ----
    uint32_t slot_line(size_t i) const { return i < p_.slot_lines.size() ? p_.slot_lines[i] : 0; }
    bool header() {
        if (n_ == 0) {
            return reject(UINT32_MAX, "has no instructions");
        }
        if (n_ > lim_.max_insns || n_ > ROF_ISA_MAX_INSNS) {
            return reject(UINT32_MAX,
                          fmt::format("has {} instruction slots, limit {}", n_,
                                      std::min<uint32_t>(lim_.max_insns, ROF_ISA_MAX_INSNS)));
        }
        if (p_.args_min > p_.args_max) {
            return reject_directive(
                ".args", p_.args_line,
                fmt::format("args minimum {} is above its maximum {}", p_.args_min, p_.args_max));
        }
        if (p_.args_max > lim_.max_args || p_.args_max > ROF_ISA_MAX_ARGS) {
            return reject_directive(
                ".args", p_.args_line,
                fmt::format("args maximum {} above the limit {}", p_.args_max, lim_.max_args));
        }
        if (p_.scratch_size > lim_.max_scratch || p_.scratch_size > ROF_ISA_MAX_SCRATCH) {
            return reject_directive(".scratch", p_.scratch_line,
                                    fmt::format("scratch size {} above the limit {}",
                                                p_.scratch_size, lim_.max_scratch));
        }
        if (p_.resp_max > lim_.max_resp || p_.resp_max > ROF_ISA_MAX_RESP) {
            return reject_directive(
                ".resp", p_.resp_line,
                fmt::format("response size {} above the limit {}", p_.resp_max, lim_.max_resp));
        }
        if (p_.slots.size() > ROF_ISA_MAX_SLOTS) {
            return reject_directive(".region", slot_line(ROF_ISA_MAX_SLOTS),
                                    fmt::format("declares {} region slots, limit {}",
                                                p_.slots.size(), ROF_ISA_MAX_SLOTS));
        }
        std::set<std::string> names;
        for (size_t i = 0; i < p_.slots.size(); i++) {
            const Slot& s = p_.slots[i];
            auto bad = [&](const std::string& why) {
                return reject_directive(".region", slot_line(i), why);
            };
            bool good = !s.name.empty() && s.name.size() < ROF_ISA_NAME_MAX &&
                        !(s.name[0] >= '0' && s.name[0] <= '9');
            for (char c : s.name) {
                good = good && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                (c >= '0' && c <= '9') || c == '_');
            }
            if (!good) {
                return bad(
                    fmt::format("region slot name '{}' is not a valid name", s.name.c_str()));
            }
            if (!names.insert(s.name).second) {
                return bad(fmt::format("region slot '{}' declared twice", s.name.c_str()));
            }
            if (!s.access || (s.access & ~ROF_ACCESS_ALL)) {
                return bad(fmt::format("region slot '{}' has invalid access 0x{:x}", s.name.c_str(),
                                       s.access));
            }
            if (s.flags & ~ROF_SLOT_FREELIST) {
                return bad(fmt::format("region slot '{}' has unknown flags 0x{:x}", s.name.c_str(),
                                       s.flags));
            }
            if ((s.flags & ROF_SLOT_FREELIST) && !(s.access & ROF_ACCESS_ATOMIC)) {
                return bad(fmt::format("region slot '{}' has a free list but no atomic right",
                                       s.name.c_str()));
            }
            if (o_.grants) {
                const Grant* g = nullptr;
                for (const Grant& x : *o_.grants) {
                    if (x.slot == s.name) {
                        g = &x;
                    }
                }
                if (!g) {
                    return bad(
                        fmt::format("region slot '{}' is not granted by policy", s.name.c_str()));
                }
                if (s.access & ~g->access) {
                    return bad(fmt::format("region slot '{}' needs {} but policy grants {}",
                                           s.name.c_str(), access_str(s.access, true).c_str(),
                                           access_str(g->access, true).c_str()));
                }
                if (g->len && g->len < s.len) {
                    return bad(
                        fmt::format("region slot '{}' needs {} bytes, the granted region has {}",
                                    s.name.c_str(), s.len, g->len));
                }
            }
        }
        return true;
    }

    // ---- B: decoding and per-instruction rules ----
    bool need(uint32_t pc, uint8_t space, uint32_t right, const char* what) {
        if (space == ROF_SPACE_ARGS) {
            if (right != ROF_ACCESS_READ) {
                return reject(pc, fmt::format("{} args, which is read-only", what));
            }
            return true;
        }
        if (space >= ROF_ISA_MAX_SLOTS) {
            if (right == ROF_ACCESS_ATOMIC) {
                return reject(
                    pc, fmt::format("atomic on {}: atomics need a region", sname(space).c_str()));
            }
            return true;
        }
        if (space >= p_.slots.size()) {
            return reject(pc, fmt::format("uses region slot {}, which is not declared "
                                          "({} declared)",
                                          space, p_.slots.size()));
        }
        const Slot& s = p_.slots[space];
        if (!(s.access & right)) {
            return reject(pc, fmt::format("{} region '{}' without the {} right (declared "
                                          "{})",
                                          what, s.name.c_str(), access_str(right, true).c_str(),
                                          access_str(s.access, true).c_str()));
        }
        return true;
    }

    bool check_target(uint32_t pc, int32_t off, bool back) {
        int64_t t = int64_t{pc} + 1 + off;
        if (t < 0 || t >= n_) {
            return reject(pc, fmt::format("jump to insn {} is outside the program "
                                          "({} slots)",
                                          t, n_));
        }
        if (back && t > pc) {
            return reject(pc, fmt::format("loop target insn {} is after the loop; "
                                          "a loop jumps back",
                                          t));
        }
        if (!back && off < 0) {
            return reject(pc, fmt::format("jump back to insn {}: only loop may "
                                          "jump backwards",
                                          t));
        }
        if (p_.insns[t].op == ROF_OP_EXT) {
            return reject(pc, fmt::format("jump to insn {} lands in the middle of "
                                          "a wide instruction",
                                          t));
        }
        return true;
    }

    bool decode_all() {
        insn_.assign(n_, std::nullopt);
        for (uint32_t pc = 0; pc < n_;) {
            auto in = decode_insn(p_.insns, pc);
            if (!in) {
                return reject(pc, in.error);
            }
            insn_[pc] = in.value;
            if (!rules(pc, *in)) {
                return false;
            }
            uint32_t nx = pc + in->slots();
            bool ends = in->kind == Kind::Exit || in->kind == Kind::ExitReg ||
                        in->kind == Kind::Respond || in->kind == Kind::Ja;
            if (nx >= n_ && !ends) {
                return reject(pc, "falls through past the end of the program");
            }
            pc = nx;
        }
        return true;
    }

    bool rules(uint32_t pc, const Insn& in) {
        switch (in.kind) {
            case Kind::Alu:
                if (in.use_imm && (in.sub == ROF_ALU_DIV || in.sub == ROF_ALU_MOD) &&
                    (in.is32 ? static_cast<uint32_t>(in.imm) == 0 : in.imm == 0)) {
                    return reject(pc, "division by zero");
                }
                if (in.use_imm &&
                    (in.sub == ROF_ALU_LSH || in.sub == ROF_ALU_RSH || in.sub == ROF_ALU_ARSH)) {
                    uint32_t w = in.is32 ? 32 : 64;
                    if (in.imm < 0 || static_cast<uint32_t>(in.imm) >= w) {
                        return reject(pc,
                                      fmt::format("shift by {} out of range 0..{}", in.imm, w - 1));
                    }
                }
                return true;
            case Kind::Jmp:
            case Kind::Ja:
                return check_target(pc, in.off, false);
            case Kind::Loop:
                if (!check_target(pc, in.off, true)) {
                    return false;
                }
                if (in.imm < 1) {
                    return reject(pc,
                                  fmt::format("loop trip limit {}: must be at least 1", in.imm));
                }
                if (static_cast<uint32_t>(in.imm) > lim_.max_trip ||
                    static_cast<uint32_t>(in.imm) > ROF_ISA_MAX_TRIP) {
                    return reject(pc, fmt::format("loop trip limit {} above the limit {}", in.imm,
                                                  lim_.max_trip));
                }
                return true;
            case Kind::Ld:
            case Kind::Crc64:
            case Kind::Hash:
                return need(pc, in.mem.space, ROF_ACCESS_READ, "reads");
            case Kind::St:
                return need(pc, in.mem.space, ROF_ACCESS_WRITE, "writes");
            case Kind::Faa:
                return need(pc, in.mem.space, ROF_ACCESS_ATOMIC, "faa on");
            case Kind::Alloc:
            case Kind::Free:
                if (!need(pc, in.slot, ROF_ACCESS_ATOMIC,
                          in.kind == Kind::Alloc ? "alloc from" : "free to")) {
                    return false;
                }
                if (!(p_.slots[in.slot].flags & ROF_SLOT_FREELIST)) {
                    return reject(pc, fmt::format("region '{}' has no free list (declare it "
                                                  "with 'freelist')",
                                                  p_.slots[in.slot].name.c_str()));
                }
                return true;
            case Kind::Copy:
                if (in.len > lim_.max_copy) {
                    return reject(pc, fmt::format("copy length {} above the limit {}", in.len,
                                                  lim_.max_copy));
                }
                if (!need(pc, in.src_mem.space, ROF_ACCESS_READ, "copies from")) {
                    return false;
                }
                if (in.src_mode && !need(pc, in.src_tspace, ROF_ACCESS_READ, "copies from")) {
                    return false;
                }
                if (in.dst_indirect &&
                    !need(pc, in.mem.space, ROF_ACCESS_READ, "reads a pointer from")) {
                    return false;
                }
                return need(pc, in.mem.space, ROF_ACCESS_WRITE, "copies into");
            case Kind::Cas:
                if (!need(pc, in.mem.space, ROF_ACCESS_ATOMIC, "cas on")) {
                    return false;
                }
                if (!need(pc, in.blk.space, ROF_ACCESS_READ, "reads cas operands from")) {
                    return false;
                }
                if (in.old &&
                    !need(pc, in.blk.space, ROF_ACCESS_WRITE, "writes the old value to")) {
                    return false;
                }
                return true;
            default:
                return true;
        }
    }

    // Successors along control flow (without value knowledge).
    void succs(uint32_t pc, const Insn& in, std::vector<uint32_t>& out) const {
        out.clear();
        uint32_t nx = pc + in.slots();
        switch (in.kind) {
            case Kind::Exit:
            case Kind::ExitReg:
            case Kind::Respond:
                return;
            case Kind::Ja:
                out.push_back(pc + 1 + in.off);
                return;
            case Kind::Jmp:
            case Kind::Loop:
                out.push_back(nx);
                out.push_back(pc + 1 + in.off);
                return;
            default:
                out.push_back(nx);
        }
    }

    // ---- C: every instruction reachable ----
    bool reachability() {
        std::vector<bool> seen(n_, false);
        std::vector<uint32_t> work{0}, s;
        seen[0] = true;
        while (!work.empty()) {
            uint32_t pc = work.back();
            work.pop_back();
            succs(pc, *insn_[pc], s);
            for (uint32_t t : s) {
                if (t < n_ && !seen[t]) {
                    seen[t] = true;
                    work.push_back(t);
                }
            }
        }
        for (uint32_t pc = 0; pc < n_; pc++) {
            if (insn_[pc] && !seen[pc]) {
                return reject(pc, "unreachable instruction");
            }
        }
        return true;
    }

    // ---- D: loop structure ----
    bool loops() {
        for (uint32_t pc = 0; pc < n_; pc++) {
            if (insn_[pc] && insn_[pc]->kind == Kind::Loop) {
                loops_.push_back(Loop{pc + 1 + static_cast<uint32_t>(insn_[pc]->off), pc,
                                      insn_[pc]->dst, static_cast<uint32_t>(insn_[pc]->imm)});
            }
        }
        // Nesting in one pass over the loops by head, outer first, with the
        // bodies still open on a stack: the loops around a loop are exactly
        // those open when it starts, unless some body overlaps another.
        const size_t k = loops_.size();
        std::vector<uint32_t> order(k), depth(k, 1), open;
        parent_.assign(k, kNoLoop);
        std::iota(order.begin(), order.end(), 0u);
        std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
            const Loop &a = loops_[x], &b = loops_[y];
            return a.head != b.head ? a.head < b.head : a.end > b.end;
        });
        bool nested = true;
        for (uint32_t c : order) {
            while (!open.empty() && loops_[open.back()].end < loops_[c].head) {
                open.pop_back();
            }
            if (!open.empty() && loops_[open.back()].end < loops_[c].end) {
                nested = false;
                break;
            }
            parent_[c] = open.empty() ? kNoLoop : open.back();
            depth[c] = static_cast<uint32_t>(open.size()) + 1;
            open.push_back(c);
        }
        for (size_t i = 0; i < k; i++) {
            const Loop& a = loops_[i];
            if (!nested) {  // some bodies overlap: name the first pair, loop by loop
                depth[i] = 1;
                for (size_t j = 0; j < k; j++) {
                    if (i == j) {
                        continue;
                    }
                    const Loop& b = loops_[j];
                    bool disjoint = a.end < b.head || b.end < a.head;
                    bool a_in_b = b.head <= a.head && a.end <= b.end;
                    bool b_in_a = a.head <= b.head && b.end <= a.end;
                    if (!disjoint && !a_in_b && !b_in_a) {
                        return reject(a.end, fmt::format("loop body [{}, {}] overlaps the loop "
                                                         "body [{}, {}] without nesting",
                                                         a.head, a.end, b.head, b.end));
                    }
                    if (a_in_b) {
                        depth[i]++;
                    }
                }
            }
            if (depth[i] > lim_.max_loop_depth) {
                return reject(a.end, fmt::format("loop nesting depth {} above the limit {}",
                                                 depth[i], lim_.max_loop_depth));
            }
            for (uint32_t pc = a.head; pc < a.end; pc++) {
                if (insn_[pc] && (regs_written(*insn_[pc]) & (1u << a.counter))) {
                    return reject(pc, fmt::format("writes r{}, the counter of the loop at insn "
                                                  "{}: the trip bound would not hold",
                                                  a.counter, a.end));
                }
            }
        }
        // No edge enters a body except at its head.  The loops around an
        // instruction, innermost (lowest end) first: from inner_ up parent_.
        inner_.assign(n_, kNoLoop);
        for (uint32_t c : order) {
            for (uint32_t pc = loops_[c].head; pc <= loops_[c].end; pc++) {
                inner_[pc] = c;
            }
        }
        std::vector<uint32_t> s;
        for (uint32_t pc = 0; pc < n_; pc++) {
            if (!insn_[pc]) {
                continue;
            }
            succs(pc, *insn_[pc], s);
            for (uint32_t t : s) {
                for (uint32_t c = t < n_ ? inner_[t] : kNoLoop; c != kNoLoop; c = parent_[c]) {
                    const Loop& l = loops_[c];
                    if (t > l.head && (pc < l.head || pc > l.end)) {
                        return reject(pc, fmt::format("jump to insn {} enters the body of the "
                                                      "loop at insn {} (head {}) other than at "
                                                      "its head",
                                                      t, l.end, l.head));
                    }
                }
            }
        }
        for (const Loop& l : loops_) {
            log(1, l.end,
                fmt::format("loop r{}, body [{}, {}], trip limit {}", l.counter, l.head, l.end,
                            l.trip));
        }
        return true;
    }

    // ---- E: worst-case path ----
    // Most instructions executed before each pc starts, or kNone, with the
    // list of the entries set, so that expanding a loop costs its body, not
    // the program; one per level of expansion.  At level 0 nest[pc] is the
    // costliest loop nest on that longest path (kNoLoop: none).
    struct Dist {
        std::vector<uint64_t> v;
        std::vector<uint32_t> set, nest;
        bool raise(uint32_t t, uint64_t x) {
            if (v[t] == kNone) {
                set.push_back(t);
            } else if (x <= v[t]) {
                return false;
            }
            v[t] = x;
            return true;
        }
    };
    std::deque<Dist> dist_;       // grows at the end only: references stay valid
    std::vector<uint64_t> cost_;  // per outermost loop: instructions its nest runs

    void walk(size_t lvl, uint32_t lo, uint32_t hi, std::vector<bool>& expanded) {
        Dist& d = dist_[lvl];
        std::vector<uint32_t> s;
        for (uint32_t pc = lo; pc <= hi && pc < n_;) {
            const Insn& in = *insn_[pc];
            if (d.v[pc] == kNone) {
                pc += in.slots();
                continue;
            }
            // The outermost loop headed here that is not being expanded
            // already (the loops headed here are the innermost around it).
            uint32_t pick = kNoLoop;
            for (uint32_t c = inner_[pc]; c != kNoLoop && loops_[c].head == pc; c = parent_[c]) {
                if (!expanded[c]) {
                    pick = c;
                }
            }
            if (pick != kNoLoop) {
                const Loop& l = loops_[pick];
                if (dist_.size() == lvl + 1) {
                    dist_.push_back(Dist{std::vector<uint64_t>(n_ + 1, kNone), {}, {}});
                }
                Dist& d1 = dist_[lvl + 1];
                d1.raise(pc, 0);
                expanded[pick] = true;
                walk(lvl + 1, pc, l.end, expanded);
                expanded[pick] = false;
                uint64_t body = d1.v[l.end] == kNone ? 0 : sat_add(d1.v[l.end], 1);
                uint64_t extra = sat_mul(l.trip - 1, body);
                uint64_t base = sat_add(d.v[pc], extra);
                uint32_t nest = kNoLoop;
                if (lvl == 0) {
                    cost_[pick] = sat_add(extra, body);
                    nest = d.nest[pc] != kNoLoop && cost_[d.nest[pc]] >= cost_[pick] ? d.nest[pc]
                                                                                     : pick;
                }
                for (uint32_t t : d1.set) {
                    if (d.raise(t, sat_add(base, d1.v[t])) && lvl == 0) {
                        d.nest[t] = nest;
                    }
                    d1.v[t] = kNone;
                }
                d1.set.clear();
                pc = l.end + 1;
                continue;
            }
            if (in.kind == Kind::Loop) {
                s.assign(1, pc + 1);  // the back edge is accounted by the expansion
            } else {
                succs(pc, in, s);
            }
            for (uint32_t t : s) {
                if (d.raise(t, sat_add(d.v[pc], 1)) && lvl == 0) {
                    d.nest[t] = d.nest[pc];
                }
            }
            pc += in.slots();
        }
    }

    bool worst_case() {
        std::vector<bool> expanded(loops_.size(), false);
        cost_.assign(loops_.size(), 0);
        dist_.clear();
        dist_.push_back(
            Dist{std::vector<uint64_t>(n_ + 1, kNone), {}, std::vector<uint32_t>(n_ + 1, kNoLoop)});
        dist_[0].raise(0, 0);
        walk(0, 0, n_ - 1, expanded);
        const Dist& d = dist_[0];
        uint64_t w = 0;
        uint32_t last = UINT32_MAX;  // the exit of a longest path
        for (uint32_t pc = 0; pc < n_; pc++) {
            if (!insn_[pc] || d.v[pc] == kNone) {
                continue;
            }
            Kind k = insn_[pc]->kind;
            if ((k == Kind::Exit || k == Kind::ExitReg || k == Kind::Respond) &&
                (last == UINT32_MAX || sat_add(d.v[pc], 1) > w)) {
                w = sat_add(d.v[pc], 1);
                last = pc;
            }
        }
        res_.worst_case = w;
        have_w_ = true;
        if (w < kSat && w <= lim_.max_worst_case) {
            return true;
        }
        std::string why = w >= kSat ? std::string("worst-case path overflows")
                                    : fmt::format("worst-case path {} instructions, limit {}", w,
                                                  lim_.max_worst_case);
        uint32_t nest = last == UINT32_MAX ? kNoLoop : d.nest[last];
        if (nest == kNoLoop) {
            return reject(last, why + ": the longest path ends here");
        }
        const Loop& l = loops_[nest];
        std::string runs = cost_[nest] >= kSat ? std::string("too many instructions to count")
                                               : fmt::format("up to {} instructions", cost_[nest]);
        return reject(l.end,
                      why + fmt::format(": the costliest loop nest on it ends here (body [{}, {}], "
                                        "trip limit {}, {})",
                                        l.head, l.end, l.trip, runs.c_str()));
    }

    // ---- F: registers and bounds ----
    // The length an access can rely on (args: the shortest request) and the
    // length no access can exceed (args: the longest).
    uint64_t space_len_max(uint8_t s) const {
        return s == ROF_SPACE_ARGS ? p_.args_max : space_len(s);
    }
    uint64_t space_len(uint8_t s) const {
        if (s == ROF_SPACE_ARGS) {
            return p_.args_min;
        }
        if (s == ROF_SPACE_SCRATCH) {
            return p_.scratch_size;
        }
        if (s == ROF_SPACE_RESP) {
            return p_.resp_max;
        }
        return p_.slots[s].len;
    }
    std::string rstr(const Range& r) const {
        if (r.is_const()) {
            return fmt::format("{}", r.lo);
        }
        return fmt::format("[{}, {}]", r.lo, r.hi);
    }

    // Checks an access of [len_lo, len_hi] bytes at m under state st.
    // what: "ld64", "copy source" ...; aligned: atomic (8-byte) target.
    bool access(uint32_t pc, const State& st, const Mem& m, uint64_t len_lo, uint64_t len_hi,
                const char* what, bool aligned) {
        Range b = m.has_base ? st.r[m.base] : cnst(0);
        i128 lo = i128(b.lo) + m.off, hi = i128(b.hi) + m.off;
        uint64_t L = space_len(m.space), Lmax = space_len_max(m.space);
        std::string where =
            sname(m.space) + "[" +
            (m.has_base ? fmt::format("r{}{:+}", m.base, m.off) : fmt::format("{}", m.off)) + "]";
        if (hi < 0) {
            return reject(pc, fmt::format("{} {}: offset arithmetic underflows for every "
                                          "value of the base ({})",
                                          what, where.c_str(), rstr(b).c_str()));
        }
        if (lo > i128(kMax)) {
            return reject(pc, fmt::format("{} {}: offset arithmetic overflows for every "
                                          "value of the base ({})",
                                          what, where.c_str(), rstr(b).c_str()));
        }
        i128 first = lo < 0 ? 0 : lo;
        if (first + len_lo > i128(Lmax)) {
            return reject(pc, fmt::format("{} {} of {} bytes is out of bounds of "
                                          "{} ({} bytes){}",
                                          what, where.c_str(), len_lo, sname(m.space).c_str(), Lmax,
                                          m.has_base ? (" with base " + rstr(b)).c_str() : ""));
        }
        if (aligned && b.is_const() && (static_cast<uint64_t>(lo) & 7)) {
            return reject(pc, fmt::format("{} {}: offset {} is not 8-byte "
                                          "aligned",
                                          what, where.c_str(), static_cast<uint64_t>(lo)));
        }
        if (lo >= 0 && hi + len_hi <= i128(L)) {
            log(2, pc, fmt::format("{} {} proven in bounds", what, where.c_str()));
            return true;
        }
        if (lim_.strict_bounds) {
            return reject(
                pc,
                fmt::format(
                    "{} {} is not provably in bounds of {} ({} bytes; base {}, length up to {})",
                    what, where.c_str(), sname(m.space).c_str(), L, rstr(b).c_str(), len_hi));
        }
        log(1, pc,
            fmt::format("{} {} checked at run time (base {})", what, where.c_str(),
                        rstr(b).c_str()));
        return true;
    }

    Range operand(const State& st, const Insn& in) const {
        if (!in.use_imm) {
            return st.r[in.src];
        }
        if (in.is32) {
            return cnst(static_cast<uint32_t>(in.imm));
        }
        return cnst(static_cast<uint64_t>(static_cast<int64_t>(in.imm)));
    }

    // Applies in to st; fills up to two (target, state) successor pairs.
    // With check set, reports rule violations (only in the final pass).
    bool transfer(uint32_t pc, const Insn& in, State st,
                  std::vector<std::pair<uint32_t, State>>& out, bool check) {
        out.clear();
        uint16_t rd = regs_read(in);
        if (check) {
            for (int r = 0; r < ROF_ISA_NREGS; r++) {
                if ((rd & (1u << r)) && !st.r[r].init) {
                    return reject(pc, fmt::format("reads r{}, which is not initialised on "
                                                  "every path here",
                                                  r));
                }
            }
        }
        uint32_t nx = pc + in.slots();
        auto set = [&](uint8_t r, Range v) {
            v.init = true;
            st.r[r] = v;
        };
        switch (in.kind) {
            case Kind::LdImm64:
                set(in.dst, cnst(in.imm64));
                break;
            case Kind::Alu: {
                Range b = operand(st, in);
                if (check && (in.sub == ROF_ALU_DIV || in.sub == ROF_ALU_MOD) && !in.use_imm) {
                    if (b.hi == 0) {
                        return reject(pc, fmt::format("division by zero: r{} is always 0", in.src));
                    }
                    // A 32-bit divisor is the low half: 0 for any multiple
                    // of 2^32 in the range, not only for 0.
                    if (in.is32 && ((b.lo >> 32) != (b.hi >> 32) || !(b.lo & 0xffffffff))) {
                        log(1, pc,
                            fmt::format("32-bit divisor r{} may be 0: checked at run time",
                                        in.src));
                    } else if (!in.is32 && b.lo == 0) {
                        log(1, pc,
                            fmt::format("divisor r{} may be 0: checked at run time", in.src));
                    }
                }
                if (in.sub == ROF_ALU_NEG) {
                    b = cnst(0);
                }
                Range r = alu_range(in.sub, in.is32, st.r[in.dst], b);
                if (in.is32 && r.hi > 0xffffffff) {
                    r = Range{true, 0, 0xffffffff};
                }
                set(in.dst, r);
                break;
            }
            case Kind::Ld:
                if (check && !access(pc, st, in.mem, in.size, in.size,
                                     in.size == 8   ? "ld64"
                                     : in.size == 4 ? "ld32"
                                     : in.size == 2 ? "ld16"
                                                    : "ld8",
                                     false)) {
                    return false;
                }
                set(in.dst, in.size == 8 ? full() : Range{true, 0, (1ULL << (8 * in.size)) - 1});
                break;
            case Kind::St:
                if (check && !access(pc, st, in.mem, in.size, in.size, "store", false)) {
                    return false;
                }
                break;
            case Kind::Faa:
                if (check && !access(pc, st, in.mem, 8, 8, "faa", true)) {
                    return false;
                }
                set(in.aux, full());
                break;
            case Kind::Crc64:
            case Kind::Hash: {
                Range l = st.r[in.aux];
                if (check && l.lo > ROF_ISA_MAX_BULK) {
                    return reject(
                        pc, fmt::format("length r{} is always above {}", in.aux, ROF_ISA_MAX_BULK));
                }
                if (check &&
                    !access(pc, st, in.mem, l.lo, std::min<uint64_t>(l.hi, ROF_ISA_MAX_BULK),
                            in.kind == Kind::Hash ? "hash" : "crc64", false)) {
                    return false;
                }
                set(in.dst, full());
                break;
            }
            case Kind::Alloc:
                set(in.dst, full());
                break;
            case Kind::Free:
                break;
            case Kind::Copy: {
                uint64_t llo = in.len, lhi = in.len;
                if (in.len_reg) {
                    Range l = st.r[in.len_r];
                    if (check && l.lo > in.len) {
                        return reject(pc, fmt::format("copy length r{} ({}) is always above its "
                                                      "cap {}",
                                                      in.len_r, rstr(l).c_str(), in.len));
                    }
                    llo = l.lo;
                    lhi = std::min<uint64_t>(l.hi, in.len);
                }
                if (in.src_mode == 2) {
                    llo = 0;  // the stored bound may shorten it
                }
                if (check) {
                    if (in.src_mode) {
                        if (!access(pc, st, in.src_mem, in.src_mode == 2 ? 16 : 8,
                                    in.src_mode == 2 ? 16 : 8, "copy source pointer", false)) {
                            return false;
                        }
                        log(1, pc, "copy source behind a pointer: checked at run time");
                    } else if (!access(pc, st, in.src_mem, llo, lhi, "copy source", false)) {
                        return false;
                    }
                    if (in.dst_indirect) {
                        if (!access(pc, st, in.mem, 8, 8, "copy destination pointer", false)) {
                            return false;
                        }
                        log(1, pc,
                            "copy destination behind a pointer: checked at run "
                            "time");
                    } else if (!access(pc, st, in.mem, llo, lhi, "copy destination", false)) {
                        return false;
                    }
                }
                if (in.out) {
                    set(in.aux, Range{true, 0, lhi});
                }
                break;
            }
            case Kind::Cas:
                if (check) {
                    if (!access(pc, st, in.mem, in.width, in.width, "cas target", true)) {
                        return false;
                    }
                    uint64_t bl = 4u * in.width + (in.old ? in.width : 0);
                    if (!access(pc, st, in.blk, bl, bl, "cas operand block", false)) {
                        return false;
                    }
                }
                set(in.aux, Range{true, 0, 1});
                break;
            case Kind::Exit:
            case Kind::ExitReg:
                return true;
            case Kind::Respond: {
                Range l = st.r[in.src];
                if (check && l.lo > p_.resp_max) {
                    return reject(pc, fmt::format("response length r{} ({}) is always above "
                                                  "resp size {}",
                                                  in.src, rstr(l).c_str(), p_.resp_max));
                }
                if (check && l.hi > p_.resp_max) {
                    log(1, pc, "response length checked at run time");
                }
                return true;
            }
            case Kind::Ja:
                out.emplace_back(pc + 1 + in.off, st);
                return true;
            case Kind::Loop: {
                Range c = st.r[in.dst];
                uint64_t nm1 = static_cast<uint32_t>(in.imm) - 1ULL;
                if (c.lo < nm1) {  // back edge feasible
                    State t = st;
                    t.r[in.dst] = Range{true, c.lo + 1, std::min(c.hi, nm1 - 1) + 1};
                    out.emplace_back(pc + 1 + in.off, t);
                }
                if (c.hi >= nm1) {
                    State f = st;
                    f.r[in.dst] = Range{true, std::max(c.lo, nm1), c.hi};
                    out.emplace_back(nx, f);
                }
                return true;
            }
            case Kind::Jmp: {
                Range a = st.r[in.dst], b = operand(st, in);
                bool same = !in.use_imm && in.src == in.dst;
                Range ta = a, tb = b, fa = a, fb = b;
                bool t_ok = same ? true : refine(in.sub, in.is32, ta, tb);
                bool f_ok = same ? true : refine(negated(in.sub), in.is32, fa, fb);
                if (f_ok) {
                    State f = st;
                    f.r[in.dst] = fa;
                    if (!in.use_imm && !same) {
                        f.r[in.src] = fb;
                    }
                    out.emplace_back(nx, f);
                } else if (check) {
                    log(2, pc, "fall-through never taken");
                }
                if (t_ok) {
                    State t = st;
                    t.r[in.dst] = ta;
                    if (!in.use_imm && !same) {
                        t.r[in.src] = tb;
                    }
                    out.emplace_back(pc + 1 + in.off, t);
                } else if (check) {
                    log(2, pc, "jump never taken");
                }
                return true;
            }
        }
        out.emplace_back(nx, st);
        return true;
    }

    std::string state_str(const State& st) const {
        std::string s;
        for (int r = 0; r < ROF_ISA_NREGS; r++) {
            if (st.r[r].init) {
                s += fmt::format(" r{}={}", r, rstr(st.r[r]).c_str());
            }
        }
        return s;
    }

    // The fixpoint, in passes over the program in instruction order, as
    // chaotic iteration: a forward edge is followed in the same pass, a
    // back edge in the next.  Only instructions whose input changed since
    // they were last visited are visited (visiting another changes
    // nothing), so a loop costs the same whatever precedes it.
    bool dataflow() {
        std::vector<State> in(n_);
        std::vector<uint32_t> widen(n_, 0);
        in[0].live = true;
        in[0].r[1] = Range{true, p_.args_min, p_.args_max};
        std::vector<std::pair<uint32_t, State>> out;
        std::set<uint32_t> pass{0}, next;
        while (!pass.empty()) {
            uint32_t pc = *pass.begin();
            pass.erase(pass.begin());
            if (insn_[pc]) {
                if (++processed_ > lim_.max_processed) {
                    return reject(
                        pc, fmt::format("program too complex: more than {} instruction visits",
                                        lim_.max_processed));
                }
                transfer(pc, *insn_[pc], in[pc], out, false);
                for (auto& [t, s] : out) {
                    State j = join(in[t], s);
                    if (j == in[t]) {
                        continue;
                    }
                    if (t <= pc) {  // a back edge into a loop head
                        if (++widen[t] > 2) {
                            for (int r = 0; r < ROF_ISA_NREGS; r++) {
                                if (!(j.r[r].lo == in[t].r[r].lo && j.r[r].hi == in[t].r[r].hi)) {
                                    j.r[r].lo = 0, j.r[r].hi = kMax;
                                }
                            }
                        }
                        next.insert(t);
                    } else {
                        pass.insert(t);
                    }
                    in[t] = j;
                }
            }
            if (pass.empty()) {
                pass.swap(next);
            }
        }
        // Final pass: every rule, on the fixpoint.
        for (uint32_t pc = 0; pc < n_; pc++) {
            if (!insn_[pc]) {
                continue;
            }
            if (!in[pc].live) {
                log(2, pc, "never reached under the value analysis");
                continue;
            }
            processed_++;
            if (o_.log_level >= 2) {
                log(2, pc, format_insn(p_, pc, *insn_[pc]) + " ;" + state_str(in[pc]));
            }
            if (!transfer(pc, *insn_[pc], in[pc], out, true)) {
                return false;
            }
        }
        return true;
    }

    // The executor's own load check must accept whatever the verifier does.
    bool crosscheck() {
        std::vector<uint8_t> img = p_.encode();
        uint32_t bad = 0;
        int rc = rof_exec_check_image(img.data(), img.size(), &bad);
        if (rc) {
            return reject(bad, fmt::format("internal: the executor's load check refuses "
                                           "the image (error {})",
                                           rc));
        }
        return true;
    }

    const Program& p_;
    const VerifyOptions& o_;
    const Limits& lim_;
    uint32_t n_;
    std::vector<std::optional<Insn>> insn_;
    std::vector<Loop> loops_;
    static constexpr uint32_t kNoLoop = UINT32_MAX;
    std::vector<uint32_t> parent_;  // per loop: the innermost loop around it
    std::vector<uint32_t> inner_;   // per insn: the innermost loop around it
    VerifyResult res_;
    std::string log_;
    uint64_t processed_ = 0;
    bool have_w_ = false;
};

}  // namespace

VerifyResult verify(const Program& p, const VerifyOptions& opt) {
    return Verifier(p, opt).run();
}

VerifyResult verify_image(std::span<const uint8_t> image, const VerifyOptions& opt) {
    auto p = decode_image(image);
    if (!p) {
        VerifyResult r;
        r.error = "image: " + p.error;
        r.log = r.error + "\nprocessed 0 insns (limit " + std::to_string(opt.limits.max_processed) +
                "), worst-case path unknown\n";
        return r;
    }
    return verify(*p, opt);
}

}  // namespace rof::prog
