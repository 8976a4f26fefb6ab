#include "rof/prog/asm.h"

#include <fmt/format.h>

#include <cinttypes>
#include <cstring>
#include <map>

#include "isa_table.h"

namespace rof::prog {
namespace {

using isa::kCmp;

using i128 = __int128;

constexpr size_t kMaxErrors = 100;

struct Tok {
    enum Type { Ident, Num, Punct, End } type = End;
    std::string s;
    uint64_t num = 0;
    uint32_t col = 0;
};

// Thrown inside one line's parse; caught per line so scanning goes on.
struct LineError {
    uint32_t col;
    std::string msg;
};

bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}
bool is_ident_char(char c) {
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

std::vector<Tok> lex(std::string_view line) {
    std::vector<Tok> out;
    size_t i = 0;
    while (i < line.size()) {
        char c = line[i];
        auto col = static_cast<uint32_t>(i + 1);
        if (c == ' ' || c == '\t' || c == '\r') {
            i++;
            continue;
        }
        if (c == ';' || c == '#') {
            break;
        }
        if (is_ident_start(c)) {
            size_t j = i;
            while (j < line.size() && is_ident_char(line[j])) {
                j++;
            }
            out.push_back({Tok::Ident, std::string(line.substr(i, j - i)), 0, col});
            i = j;
            continue;
        }
        if (c >= '0' && c <= '9') {
            size_t j = i;
            uint64_t v = 0;
            unsigned base = 10;
            if (c == '0' && i + 1 < line.size() && (line[i + 1] == 'x' || line[i + 1] == 'X')) {
                base = 16;
                j += 2;
            }
            size_t digits = 0;
            for (; j < line.size(); j++) {
                char d = line[j];
                unsigned dv;
                if (d >= '0' && d <= '9') {
                    dv = d - '0';
                } else if (base == 16 && d >= 'a' && d <= 'f') {
                    dv = d - 'a' + 10;
                } else if (base == 16 && d >= 'A' && d <= 'F') {
                    dv = d - 'A' + 10;
                } else if (is_ident_char(d)) {
                    throw LineError{col,
                                    fmt::format("malformed number '{}'",
                                                std::string(line.substr(i, j + 1 - i)).c_str())};
                } else {
                    break;
                }
                if (v > (UINT64_MAX - dv) / base) {
                    throw LineError{col, "number does not fit in 64 bits"};
                }
                v = v * base + dv;
                digits++;
            }
            if (!digits) {
                throw LineError{col, "malformed number"};
            }
            out.push_back({Tok::Num, std::string(line.substr(i, j - i)), v, col});
            i = j;
            continue;
        }
        if (c == '-' && i + 1 < line.size() && line[i + 1] == '>') {
            out.push_back({Tok::Punct, "->", 0, col});
            i += 2;
            continue;
        }
        if (std::strchr(",[]+-*:", c)) {
            out.push_back({Tok::Punct, std::string(1, c), 0, col});
            i++;
            continue;
        }
        throw LineError{col, fmt::format("unexpected character '{}'", c)};
    }
    out.push_back({Tok::End, "", 0, static_cast<uint32_t>(line.size() + 1)});
    return out;
}

struct Fixup {
    size_t insn;  // index into Assembler::items
    std::string label;
    uint32_t line, col;
};

struct Item {
    Insn in;
    uint32_t pc;
    uint32_t line;
    bool raw = false;
    uint64_t raw_value = 0;
};

class Assembler {
  public:
    Assembler(std::string_view file) : file_(file) {}

    AsmResult run(std::string_view text) {
        uint32_t lineno = 0;
        size_t pos = 0;
        while (pos <= text.size() && errors_.size() < kMaxErrors) {
            size_t nl = text.find('\n', pos);
            std::string_view line =
                text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
            lineno++;
            try {
                line_ = lineno;
                toks_ = lex(line);
                at_ = 0;
                statement();
            } catch (const LineError& e) {
                error(lineno, e.col, e.msg);
            }
            if (nl == std::string_view::npos) {
                break;
            }
            pos = nl + 1;
        }
        resolve();
        AsmResult res;
        if (items_.empty() && errors_.empty()) {
            error(1, 1, "program has no instructions");
        }
        if (!errors_.empty()) {
            res.errors = std::move(errors_);
            return res;
        }
        if (prog_.insns.size() > ROF_ISA_MAX_INSNS) {
            error(items_.back().line, 1,
                  fmt::format("program has {} instruction slots, more than {}", prog_.insns.size(),
                              ROF_ISA_MAX_INSNS));
            res.errors = std::move(errors_);
            return res;
        }
        prog_.file = file_;
        res.program = std::move(prog_);
        return res;
    }

  private:
    void error(uint32_t line, uint32_t col, std::string msg) {
        if (errors_.size() < kMaxErrors) {
            errors_.push_back(Diagnostic{file_, line, col, std::move(msg)});
        }
    }

    const Tok& peek() const { return toks_[at_]; }
    const Tok& next() {
        const Tok& t = toks_[at_];
        if (t.type != Tok::End) {
            at_++;
        }
        return t;
    }
    [[noreturn]] void fail(const Tok& t, std::string msg) {
        throw LineError{t.col, std::move(msg)};
    }
    bool accept(const char* p) {
        if (peek().type == Tok::Punct && peek().s == p) {
            at_++;
            return true;
        }
        return false;
    }
    void expect(const char* p) {
        if (!accept(p)) {
            fail(peek(), fmt::format("expected '{}'{}", p, describe(peek()).c_str()));
        }
    }
    static std::string describe(const Tok& t) {
        if (t.type == Tok::End) {
            return " at end of line";
        }
        return fmt::format(", found '{}'", t.s.c_str());
    }
    bool accept_word(const char* w) {
        if (peek().type == Tok::Ident && peek().s == w) {
            at_++;
            return true;
        }
        return false;
    }
    void end() {
        if (peek().type != Tok::End) {
            fail(peek(), fmt::format("unexpected '{}' after the operands", peek().s.c_str()));
        }
    }

    static std::optional<uint8_t> reg_of(const std::string& s) {
        if (s.size() < 2 || s.size() > 3 || s[0] != 'r') {
            return std::nullopt;
        }
        for (size_t i = 1; i < s.size(); i++) {
            if (s[i] < '0' || s[i] > '9') {
                return std::nullopt;
            }
        }
        if (s.size() == 3 && s[1] == '0') {
            return std::nullopt;
        }
        int v = std::stoi(s.substr(1));
        if (v > 15) {
            return std::nullopt;
        }
        return static_cast<uint8_t>(v);
    }
    bool peek_reg() const { return peek().type == Tok::Ident && reg_of(peek().s).has_value(); }
    uint8_t reg() {
        const Tok& t = peek();
        if (t.type == Tok::Ident) {
            if (auto r = reg_of(t.s)) {
                at_++;
                return *r;
            }
            if (t.s.size() >= 2 && t.s[0] == 'r' && t.s[1] >= '0' && t.s[1] <= '9') {
                fail(t, fmt::format("no register '{}': registers are r0..r15", t.s.c_str()));
            }
        }
        fail(t, fmt::format("expected a register{}", describe(t).c_str()));
    }

    // A number, a constant name, optionally negated.
    i128 value() {
        const Tok& t = peek();
        bool neg = accept("-");
        const Tok& v = next();
        i128 r;
        if (v.type == Tok::Num) {
            r = v.num;
        } else if (v.type == Tok::Ident && consts_.count(v.s)) {
            r = consts_[v.s];
        } else if (v.type == Tok::Ident) {
            fail(v, fmt::format("unknown constant '{}'", v.s.c_str()));
        } else {
            fail(t, fmt::format("expected a number{}", describe(v).c_str()));
        }
        return neg ? -r : r;
    }
    int64_t ranged(i128 lo, i128 hi, const char* what) {
        const Tok& t = peek();
        i128 v = value();
        if (v < lo || v > hi) {
            fail(t, fmt::format("{} {} out of range {}..{}", what, str128(v).c_str(),
                                str128(lo).c_str(), str128(hi).c_str()));
        }
        return static_cast<int64_t>(v);
    }
    static std::string str128(i128 v) {
        if (v < 0) {
            return "-" + str128(-v);
        }
        if (v > UINT64_MAX) {
            return "huge";
        }
        return fmt::format("{}", static_cast<uint64_t>(v));
    }

    // A space name: args, scratch, resp or a declared region.
    uint8_t space() {
        const Tok& t = next();
        if (t.type != Tok::Ident) {
            fail(t, fmt::format("expected an address space{}", describe(t).c_str()));
        }
        if (t.s == "args") {
            return ROF_SPACE_ARGS;
        }
        if (t.s == "scratch") {
            return ROF_SPACE_SCRATCH;
        }
        if (t.s == "resp") {
            return ROF_SPACE_RESP;
        }
        if (auto s = prog_.find_slot(t.s)) {
            return static_cast<uint8_t>(*s);
        }
        fail(t, fmt::format("unknown region '{}' (declare it with .region first)", t.s.c_str()));
    }
    uint8_t region() {
        const Tok& t = peek();
        uint8_t s = space();
        if (s >= ROF_ISA_MAX_SLOTS) {
            fail(t, fmt::format("'{}' is not a region", t.s.c_str()));
        }
        return s;
    }

    // The inside of [...]: rB, rB+off, rB-off, off.
    void address(Mem& m) {
        if (peek_reg()) {
            m.has_base = true;
            m.base = reg();
            if (peek().type == Tok::Punct && (peek().s == "+" || peek().s == "-")) {
                bool minus = peek().s == "-";
                at_++;
                const Tok& t = peek();
                i128 v = value();
                if (minus) {
                    v = -v;
                }
                if (v < INT16_MIN || v > INT16_MAX) {
                    fail(t, fmt::format("offset {} out of range -32768..32767", str128(v).c_str()));
                }
                m.off = static_cast<int16_t>(v);
            }
        } else {
            m.off = static_cast<int16_t>(ranged(INT16_MIN, INT16_MAX, "offset"));
        }
    }
    Mem mem() {
        Mem m;
        m.space = space();
        expect("[");
        address(m);
        expect("]");
        return m;
    }

    void add(const Insn& in) {
        Item it{in, static_cast<uint32_t>(prog_.insns.size()), line_};
        encode_insn(in, prog_.insns);
        prog_.lines.resize(prog_.insns.size(), line_);
        items_.push_back(it);
    }
    void add_with_label(const Insn& in, const Tok& label) {
        if (label.type != Tok::Ident || reg_of(label.s)) {
            fail(label, fmt::format("expected a label{}", describe(label).c_str()));
        }
        fixups_.push_back(Fixup{items_.size(), label.s, line_, label.col});
        add(in);
    }

    void statement() {
        while (peek().type == Tok::Ident && toks_[at_ + 1].type == Tok::Punct &&
               toks_[at_ + 1].s == ":") {
            const Tok& t = next();
            at_++;
            if (t.s[0] == '.' || reg_of(t.s)) {
                fail(t, fmt::format("'{}' cannot be a label", t.s.c_str()));
            }
            if (labels_.count(t.s)) {
                fail(t, fmt::format("label '{}' already defined on line {}", t.s.c_str(),
                                    label_lines_[t.s]));
            }
            labels_[t.s] = static_cast<uint32_t>(prog_.insns.size());
            label_lines_[t.s] = line_;
        }
        if (peek().type == Tok::End) {
            return;
        }
        const Tok& m = next();
        if (m.type != Tok::Ident) {
            fail(m, fmt::format("expected a mnemonic or directive, found '{}'", m.s.c_str()));
        }
        if (m.s[0] == '.') {
            directive(m);
        } else {
            instruction(m);
        }
        end();
    }

    void directive(const Tok& d) {
        if (d.s == ".args") {
            prog_.args_line = line_;
            prog_.args_min = static_cast<uint32_t>(ranged(0, ROF_ISA_MAX_ARGS, "args minimum"));
            expect(",");
            prog_.args_max = static_cast<uint32_t>(ranged(0, ROF_ISA_MAX_ARGS, "args maximum"));
            if (prog_.args_min > prog_.args_max) {
                fail(d, "args minimum is above the maximum");
            }
        } else if (d.s == ".scratch") {
            prog_.scratch_line = line_;
            prog_.scratch_size =
                static_cast<uint32_t>(ranged(0, ROF_ISA_MAX_SCRATCH, "scratch size"));
        } else if (d.s == ".resp") {
            prog_.resp_line = line_;
            prog_.resp_max = static_cast<uint32_t>(ranged(0, ROF_ISA_MAX_RESP, "resp size"));
        } else if (d.s == ".const") {
            const Tok& n = next();
            if (n.type != Tok::Ident || n.s[0] == '.' || reg_of(n.s)) {
                fail(n, "expected a constant name");
            }
            if (consts_.count(n.s)) {
                fail(n, fmt::format("constant '{}' already defined", n.s.c_str()));
            }
            expect(",");
            consts_[n.s] = value();
        } else if (d.s == ".raw") {
            auto v = static_cast<uint64_t>(ranged(0, UINT64_MAX, "raw slot"));
            rof_insn r{};
            std::memcpy(&r, &v, 8);
            Item it{Insn{}, static_cast<uint32_t>(prog_.insns.size()), line_, true, v};
            prog_.insns.push_back(r);
            prog_.lines.push_back(line_);
            items_.push_back(it);
        } else if (d.s == ".region") {
            region_directive();
        } else {
            fail(d, fmt::format("unknown directive '{}'", d.s.c_str()));
        }
    }

    void region_directive() {
        const Tok& n = next();
        if (n.type != Tok::Ident || n.s[0] == '.') {
            fail(n, fmt::format("expected a region name{}", describe(n).c_str()));
        }
        if (n.s == "args" || n.s == "scratch" || n.s == "resp" || reg_of(n.s)) {
            fail(n, fmt::format("'{}' is reserved and cannot name a region", n.s.c_str()));
        }
        if (n.s.size() >= ROF_ISA_NAME_MAX) {
            fail(n, fmt::format("region name '{}' is longer than {} characters", n.s.c_str(),
                                ROF_ISA_NAME_MAX - 1));
        }
        if (prog_.find_slot(n.s)) {
            fail(n, fmt::format("region '{}' already declared", n.s.c_str()));
        }
        if (prog_.slots.size() >= ROF_ISA_MAX_SLOTS) {
            fail(n, fmt::format("more than {} regions", ROF_ISA_MAX_SLOTS));
        }
        Slot s;
        s.name = n.s;
        expect(",");
        const Tok& r = peek();
        if (r.type == Tok::Num) {
            s.access = static_cast<uint32_t>(ranged(0, UINT32_MAX, "access"));
        } else if (r.type == Tok::Ident) {
            at_++;
            for (char c : r.s) {
                uint32_t bit = c == 'r'   ? ROF_ACCESS_READ
                               : c == 'w' ? ROF_ACCESS_WRITE
                               : c == 'a' ? ROF_ACCESS_ATOMIC
                                          : 0;
                if (!bit || (s.access & bit)) {
                    fail(r,
                         fmt::format("access '{}': use each of r, w, a at most once", r.s.c_str()));
                }
                s.access |= bit;
            }
        } else {
            fail(r, "expected access (a subset of 'rwa')");
        }
        expect(",");
        s.len = static_cast<uint64_t>(ranged(0, UINT64_MAX, "minimum length"));
        while (accept(",")) {
            const Tok& f = next();
            if (f.type == Tok::Ident && f.s == "freelist") {
                s.flags |= ROF_SLOT_FREELIST;
            } else if (f.type == Tok::Num) {
                s.flags |= static_cast<uint32_t>(f.num);
            } else {
                fail(f, fmt::format("unknown region flag '{}'", f.s.c_str()));
            }
        }
        prog_.slots.push_back(s);
        prog_.slot_lines.resize(prog_.slots.size() - 1);
        prog_.slot_lines.push_back(line_);
    }

    // Every mnemonic of the ISA table, with its instruction's fixed fields
    // (kind, family member, width); a 64-bit jump may also say so ("jeq64").
    static const std::map<std::string, Insn>& mnemonics() {
        static const std::map<std::string, Insn> m = [] {
            std::map<std::string, Insn> t;
            for (const Insn& in : isa::mnemonic_templates()) {
                t.emplace(isa::mnemonic(in), in);
                if (in.kind == Kind::Jmp && !in.is32) {
                    t.emplace(isa::mnemonic(in) + "64", in);
                }
            }
            return t;
        }();
        return m;
    }

    // A register or an immediate second operand of an ALU op or a jump.
    void reg_or_imm(Insn& in) {
        if (peek_reg()) {
            in.src = reg();
            in.use_imm = false;
            return;
        }
        in.use_imm = true;
        const Tok& t = peek();
        i128 v = value();
        if (in.is32 ? (v < INT32_MIN || v > UINT32_MAX) : (v < INT32_MIN || v > INT32_MAX)) {
            if (in.kind == Kind::Jmp) {
                fail(t,
                     fmt::format("immediate {} out of range for a {} comparison", str128(v).c_str(),
                                 in.is32 ? "32-bit" : "64-bit (sign-extended 32-bit)"));
            }
            fail(t, in.is32 ? fmt::format("immediate {} does not fit in 32 bits", str128(v).c_str())
                            : fmt::format("immediate {} out of range for a 64-bit "
                                          "operation (a sign-extended 32-bit value); use "
                                          "ldimm64",
                                          str128(v).c_str()));
        }
        in.imm = static_cast<int32_t>(static_cast<uint32_t>(v));
    }

    // A memory operand that must be in a region.
    Mem region_mem(const char* what) {
        const Tok& t = peek();
        Mem m = mem();
        if (m.space >= ROF_ISA_MAX_SLOTS) {
            fail(t, fmt::format("{} needs a region, not args, scratch or resp", what));
        }
        return m;
    }

    int32_t status() {
        return static_cast<int32_t>(static_cast<uint32_t>(ranged(INT32_MIN, UINT32_MAX, "status")));
    }

    // The operands, by the instruction's form.
    void instruction(const Tok& m) {
        auto t = mnemonics().find(m.s);
        if (t == mnemonics().end()) {
            fail(m, fmt::format("unknown mnemonic '{}'", m.s.c_str()));
        }
        Insn in = t->second;
        switch (isa::row_of(in).form) {
            case ROF_FORM_LDIMM64:
                in.dst = reg();
                expect(",");
                in.imm64 = static_cast<uint64_t>(ranged(-(i128(1) << 63), UINT64_MAX, "immediate"));
                break;
            case ROF_FORM_ALU:
                in.dst = reg();
                if (in.sub == ROF_ALU_NEG) {  // neg's one encoding: the immediate form
                    break;
                }
                expect(",");
                reg_or_imm(in);
                break;
            case ROF_FORM_JMP: {
                in.dst = reg();
                expect(",");
                reg_or_imm(in);
                expect(",");
                add_with_label(in, next());
                return;
            }
            case ROF_FORM_JA:
                add_with_label(in, next());
                return;
            case ROF_FORM_LOOP: {
                in.dst = reg();
                expect(",");
                const Tok& label = next();
                expect(",");
                in.imm = static_cast<int32_t>(ranged(INT32_MIN, INT32_MAX, "trip limit"));
                add_with_label(in, label);
                return;
            }
            case ROF_FORM_LD:
                in.dst = reg();
                expect(",");
                in.mem = mem();
                break;
            case ROF_FORM_ST:
                in.mem = mem();
                expect(",");
                in.src = reg();
                break;
            case ROF_FORM_FAA:
                in.aux = reg();
                expect(",");
                in.mem = region_mem("faa");
                expect(",");
                in.src = reg();
                break;
            case ROF_FORM_DIGEST:
                in.dst = reg();
                expect(",");
                in.mem = mem();
                expect(",");
                in.aux = reg();
                break;
            case ROF_FORM_ALLOC:
                in.dst = reg();
                expect(",");
                in.slot = region();
                break;
            case ROF_FORM_FREE:
                in.slot = region();
                expect(",");
                in.src = reg();
                break;
            case ROF_FORM_EXIT:
            case ROF_FORM_EXIT_REG:
                if (peek_reg()) {
                    in.kind = Kind::ExitReg;
                    in.src = reg();
                } else {
                    in.kind = Kind::Exit;
                    in.imm = status();
                }
                break;
            case ROF_FORM_RESPOND:
                in.src = reg();
                expect(",");
                in.imm = status();
                break;
            case ROF_FORM_COPY:
                copy(in);
                break;
            case ROF_FORM_CAS:
                cas(in);
                break;
        }
        add(in);
    }

    void cas(Insn& in) {
        in.aux = reg();
        expect(",");
        in.mem = region_mem("cas");
        expect(",");
        in.blk = mem();
        expect(",");
        const Tok& md = next();
        bool found = false;
        for (int i = 0; i < ROF_CMP_COUNT; i++) {
            if (md.type == Tok::Ident && md.s == kCmp[i]) {
                in.mode = static_cast<uint8_t>(i);
                found = true;
            }
        }
        if (!found) {
            fail(md, fmt::format("expected a compare mode (eq ne lt le gt ge){}",
                                 describe(md).c_str()));
        }
        if (accept(",")) {
            const Tok& o = next();
            if (o.type != Tok::Ident || o.s != "old") {
                fail(o, fmt::format("expected 'old'{}", describe(o).c_str()));
            }
            in.old = true;
        }
    }

    void copy(Insn& in) {
        // destination
        const Tok& dt = peek();
        in.mem.space = space();
        expect("[");
        if (accept("*")) {
            const Tok& pt = peek();
            uint8_t ps = space();
            if (ps != in.mem.space) {
                fail(pt,
                     "an indirect destination reads its pointer from its own "
                     "space: write 'x[*x[...]]'");
            }
            in.dst_indirect = true;
            expect("[");
            address(in.mem);
            expect("]");
        } else {
            address(in.mem);
        }
        expect("]");
        if (in.mem.space == ROF_SPACE_ARGS) {
            fail(dt, "args is read-only and cannot be a copy destination");
        }
        expect(",");
        // source
        uint8_t t = space();
        expect("[");
        if (accept("*")) {
            in.src_tspace = t;
            in.src_mem.space = space();
            expect("[");
            address(in.src_mem);
            expect("]");
            in.src_mode = 1;
            if (accept(",")) {
                const Tok& b = next();
                if (b.type != Tok::Ident || b.s != "bounded") {
                    fail(b, fmt::format("expected 'bounded'{}", describe(b).c_str()));
                }
                in.src_mode = 2;
            }
        } else {
            in.src_mem.space = t;
            address(in.src_mem);
        }
        expect("]");
        expect(",");
        // length
        if (peek_reg()) {
            in.len_reg = true;
            in.len_r = reg();
            if (!accept_word("max")) {
                fail(peek(), fmt::format("expected 'max CAP' after a length register{}",
                                         describe(peek()).c_str()));
            }
        }
        in.len = static_cast<uint32_t>(ranged(0, ROF_ISA_MAX_BULK, "copy length"));
        if (accept("->")) {
            in.out = true;
            in.aux = reg();
        }
    }

    void resolve() {
        for (const Fixup& f : fixups_) {
            Item& it = items_[f.insn];
            auto l = labels_.find(f.label);
            if (l == labels_.end()) {
                error(f.line, f.col, fmt::format("undefined label '{}'", f.label.c_str()));
                continue;
            }
            int64_t off = int64_t{l->second} - (int64_t{it.pc} + 1);
            if (off < INT16_MIN || off > INT16_MAX) {
                error(f.line, f.col,
                      fmt::format("label '{}' is {} slots away, beyond the 16-bit "
                                  "jump offset",
                                  f.label.c_str(), off));
                continue;
            }
            it.in.off = static_cast<int32_t>(off);
            std::vector<rof_insn> enc;
            encode_insn(it.in, enc);
            prog_.insns[it.pc] = enc[0];
        }
    }

    std::string file_;
    uint32_t line_ = 0;
    std::vector<Tok> toks_;
    size_t at_ = 0;
    Program prog_;
    std::vector<Item> items_;
    std::vector<Fixup> fixups_;
    std::map<std::string, uint32_t> labels_;
    std::map<std::string, uint32_t> label_lines_;
    std::map<std::string, i128> consts_;
    std::vector<Diagnostic> errors_;
};

std::string addr_str(const Mem& m) {
    if (!m.has_base) {
        return fmt::format("{}", m.off);
    }
    if (m.off > 0) {
        return fmt::format("r{}+{}", m.base, m.off);
    }
    if (m.off < 0) {
        return fmt::format("r{}-{}", m.base, -int{m.off});
    }
    return fmt::format("r{}", m.base);
}

std::optional<std::string> mem_str(const Program& p, const Mem& m) {
    auto s = space_name(p, m.space);
    if (!s) {
        return std::nullopt;
    }
    return *s + "[" + addr_str(m) + "]";
}

bool target_ok(const Program& p, uint32_t pc, int32_t off) {
    int64_t t = int64_t{pc} + 1 + off;
    return t >= 0 && t < static_cast<int64_t>(p.insns.size()) && p.insns[t].op != ROF_OP_EXT;
}

std::optional<std::string> copy_str(const Program& p, const Insn& in) {
    auto ds = space_name(p, in.mem.space);
    auto ss = space_name(p, in.src_mem.space);
    if (!ds || !ss) {
        return std::nullopt;
    }
    std::string d = in.dst_indirect ? *ds + "[*" + *ds + "[" + addr_str(in.mem) + "]]"
                                    : *ds + "[" + addr_str(in.mem) + "]";
    std::string s;
    if (in.src_mode) {
        auto ts = space_name(p, in.src_tspace);
        if (!ts) {
            return std::nullopt;
        }
        s = *ts + "[*" + *ss + "[" + addr_str(in.src_mem) + "]" +
            (in.src_mode == 2 ? ", bounded]" : "]");
    } else {
        s = *ss + "[" + addr_str(in.src_mem) + "]";
    }
    std::string l =
        in.len_reg ? fmt::format("r{} max {}", in.len_r, in.len) : fmt::format("{}", in.len);
    std::string r = isa::mnemonic(in) + " " + d + ", " + s + ", " + l;
    if (in.out) {
        r += fmt::format(" -> r{}", in.aux);
    }
    return r;
}

// The instruction as text, by its form; nullopt when an operand cannot be
// named (an undeclared slot, a jump target off an instruction).
std::optional<std::string> format_opt(const Program& p, uint32_t pc, const Insn& in) {
    auto label = [&](int32_t off) { return fmt::format("L{}", int(pc) + 1 + off); };
    auto src = [&] { return in.use_imm ? fmt::format("{}", in.imm) : fmt::format("r{}", in.src); };
    std::string mn = isa::mnemonic(in);
    const char* m = mn.c_str();
    const isa::Row& row = isa::row_of(in);
    if ((row.form == ROF_FORM_JMP || row.form == ROF_FORM_JA || row.form == ROF_FORM_LOOP) &&
        !target_ok(p, pc, in.off)) {
        return std::nullopt;
    }
    std::optional<std::string> mem;
    if (row.form == ROF_FORM_LD || row.form == ROF_FORM_ST || row.form == ROF_FORM_FAA ||
        row.form == ROF_FORM_DIGEST) {
        mem = mem_str(p, in.mem);
        if (!mem) {
            return std::nullopt;
        }
    }
    std::optional<std::string> slot;
    if (row.form == ROF_FORM_ALLOC || row.form == ROF_FORM_FREE) {
        if (in.slot >= p.slots.size()) {
            return std::nullopt;
        }
        slot = p.slots[in.slot].name;
    }
    switch (row.form) {
        case ROF_FORM_LDIMM64:
            return fmt::format("{} r{}, 0x{:x}", m, in.dst, in.imm64);
        case ROF_FORM_ALU:
            if (in.sub == ROF_ALU_NEG) {
                return fmt::format("{} r{}", m, in.dst);
            }
            return fmt::format("{} r{}, {}", m, in.dst, src().c_str());
        case ROF_FORM_JMP:
            return fmt::format("{} r{}, {}, {}", m, in.dst, src().c_str(), label(in.off).c_str());
        case ROF_FORM_JA:
            return fmt::format("{} {}", m, label(in.off).c_str());
        case ROF_FORM_LOOP:
            return fmt::format("{} r{}, {}, {}", m, in.dst, label(in.off).c_str(), in.imm);
        case ROF_FORM_LD:
            return fmt::format("{} r{}, {}", m, in.dst, mem->c_str());
        case ROF_FORM_ST:
            return fmt::format("{} {}, r{}", m, mem->c_str(), in.src);
        case ROF_FORM_FAA:
            return fmt::format("{} r{}, {}, r{}", m, in.aux, mem->c_str(), in.src);
        case ROF_FORM_DIGEST:
            return fmt::format("{} r{}, {}, r{}", m, in.dst, mem->c_str(), in.aux);
        case ROF_FORM_ALLOC:
            return fmt::format("{} r{}, {}", m, in.dst, slot->c_str());
        case ROF_FORM_FREE:
            return fmt::format("{} {}, r{}", m, slot->c_str(), in.src);
        case ROF_FORM_EXIT:
            return fmt::format("{} {}", m, in.imm);
        case ROF_FORM_EXIT_REG:
            return fmt::format("{} r{}", m, in.src);
        case ROF_FORM_RESPOND:
            return fmt::format("{} r{}, {}", m, in.src, in.imm);
        case ROF_FORM_COPY:
            return copy_str(p, in);
        case ROF_FORM_CAS: {
            auto t = mem_str(p, in.mem);
            auto b = mem_str(p, in.blk);
            if (!t || !b) {
                return std::nullopt;
            }
            return fmt::format("{} r{}, {}, {}, {}{}", m, in.aux, t->c_str(), b->c_str(),
                               kCmp[in.mode % ROF_CMP_COUNT], in.old ? ", old" : "");
        }
    }
    return std::nullopt;
}

}  // namespace

std::string Diagnostic::str() const {
    return fmt::format("{}:{}:{}: {}", file.c_str(), line, col, message.c_str());
}

std::string AsmResult::error_text() const {
    std::string s;
    for (const Diagnostic& d : errors) {
        s += d.str() + "\n";
    }
    return s;
}

AsmResult assemble(std::string_view text, std::string_view file) {
    return Assembler(file).run(text);
}

std::string format_insn(const Program& p, uint32_t pc, const Insn& in) {
    auto s = format_opt(p, pc, in);
    return s ? *s : std::string("<unprintable>");
}

std::string disassemble(const Program& p) {
    std::string out;
    out += fmt::format(".args {}, {}\n", p.args_min, p.args_max);
    out += fmt::format(".scratch {}\n", p.scratch_size);
    out += fmt::format(".resp {}\n", p.resp_max);
    for (const Slot& s : p.slots) {
        out +=
            fmt::format(".region {}, {}, {}", s.name.c_str(), access_str(s.access).c_str(), s.len);
        if (s.flags & ROF_SLOT_FREELIST) {
            out += ", freelist";
        }
        if (s.flags & ~ROF_SLOT_FREELIST) {
            out += fmt::format(", {}", s.flags & ~ROF_SLOT_FREELIST);
        }
        out += "\n";
    }
    // First pass: what prints as an instruction, and which slots are targets.
    std::vector<std::string> text(p.insns.size());
    std::vector<uint32_t> width(p.insns.size(), 1);
    std::vector<bool> target(p.insns.size() + 1, false);
    for (uint32_t pc = 0; pc < p.insns.size();) {
        auto in = decode_insn(p.insns, pc);
        std::optional<std::string> s;
        if (in) {
            s = format_opt(p, pc, *in);
        }
        if (s) {
            text[pc] = "\t" + *s;
            width[pc] = in->slots();
            if (in->kind == Kind::Jmp || in->kind == Kind::Ja || in->kind == Kind::Loop) {
                target[pc + 1 + in->off] = true;
            }
        } else {
            uint64_t v;
            std::memcpy(&v, &p.insns[pc], 8);
            text[pc] = fmt::format("\t.raw 0x{:016x}", v);
        }
        pc += width[pc];
    }
    for (uint32_t pc = 0; pc < p.insns.size(); pc += width[pc]) {
        if (target[pc]) {
            out += fmt::format("L{}:\n", pc);
        }
        out += text[pc] + "\n";
    }
    return out;
}

}  // namespace rof::prog
