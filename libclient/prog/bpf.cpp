// eBPF object -> rof program (include/rof/prog/bpf.h).
//
// The pieces, in order: a bounds-checked ELF64 reader (sections, symbols,
// relocations), the .BTF/.BTF.ext line info, the <rof/offload.h>
// declarations (.rof.decl), a forward data-flow analysis that gives every
// eBPF register at every instruction its space (a pointer into args,
// scratch, resp, a region or the stack, or a number), the loop structure,
// and the emission through the Builder.  The design decisions (stack in
// scratch, loops, helper calls) are docs/isa.md section 13.
#include "rof/prog/bpf.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "isa_table.h"
#include "rof/prog/asm.h"
#include "rof/prog/builder.h"
#include "rof_exec.h"

extern char** environ;

namespace rof::prog {

std::string SourceLoc::str() const {
    if (file.empty() || line == 0) {
        return "";
    }
    return col ? fmt::format("{}:{}:{}", file, line, col) : fmt::format("{}:{}", file, line);
}

// A named namespace: the unity build puts this file beside verifier.cpp,
// whose anonymous namespace has its own State and Loop.
namespace bpf_translate {

// ---- errors ----------------------------------------------------------------

struct Fail {
    std::string msg;
};

// ---- ELF64 ----------------------------------------------------------------

constexpr uint16_t kEmBpf = 247;
constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kShtRel = 9;
constexpr uint64_t kShfExec = 4;
constexpr uint8_t kSttSection = 3;
constexpr uint8_t kSttFunc = 2;
constexpr uint32_t kRBpf64_64 = 1;

template <typename T>
T rd(std::span<const uint8_t> b, uint64_t off) {
    T v{};
    if (off > b.size() || b.size() - off < sizeof(T)) {
        throw Fail{"truncated ELF object"};
    }
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

struct Section {
    std::string name;
    uint32_t type = 0;
    uint64_t flags = 0, offset = 0, size = 0;
    uint32_t link = 0, info = 0;
    uint64_t entsize = 0;
};

struct Symbol {
    std::string name;
    uint8_t type = 0;
    uint16_t shndx = 0;
    uint64_t value = 0, size = 0;
};

struct Reloc {
    uint32_t sym = 0;
    uint32_t type = 0;
};

class Elf {
  public:
    explicit Elf(std::span<const uint8_t> b) : b_(b) {
        if (b.size() < 64 || std::memcmp(b.data(),
                                         "\x7f"
                                         "ELF",
                                         4) != 0) {
            throw Fail{"not an ELF object"};
        }
        if (b[4] != 2 || b[5] != 1) {
            throw Fail{"not a little-endian ELF64 object"};
        }
        if (rd<uint16_t>(b, 18) != kEmBpf) {
            throw Fail{"not an eBPF object (compile with clang -target bpf)"};
        }
        uint64_t shoff = rd<uint64_t>(b, 40);
        uint16_t shentsize = rd<uint16_t>(b, 58);
        uint16_t shnum = rd<uint16_t>(b, 60);
        uint16_t shstrndx = rd<uint16_t>(b, 62);
        if (shentsize != 64 || shstrndx >= shnum) {
            throw Fail{"bad ELF section header table"};
        }
        std::vector<uint32_t> name_off;
        for (uint16_t i = 0; i < shnum; i++) {
            uint64_t o = shoff + uint64_t{i} * 64;
            Section s;
            name_off.push_back(rd<uint32_t>(b, o));
            s.type = rd<uint32_t>(b, o + 4);
            s.flags = rd<uint64_t>(b, o + 8);
            s.offset = rd<uint64_t>(b, o + 24);
            s.size = rd<uint64_t>(b, o + 32);
            s.link = rd<uint32_t>(b, o + 40);
            s.info = rd<uint32_t>(b, o + 44);
            s.entsize = rd<uint64_t>(b, o + 56);
            if (s.type != 8 /* NOBITS */ && (s.offset > b.size() || b.size() - s.offset < s.size)) {
                throw Fail{"ELF section outside the file"};
            }
            secs_.push_back(std::move(s));
        }
        for (size_t i = 0; i < secs_.size(); i++) {
            secs_[i].name = str(shstrndx, name_off[i]);
        }
        for (uint32_t i = 0; i < secs_.size(); i++) {
            if (secs_[i].type == kShtSymtab) {
                symtab_ = i;
            }
        }
        if (symtab_) {
            const Section& st = secs_[*symtab_];
            for (uint64_t o = 0; o + 24 <= st.size; o += 24) {
                uint64_t a = st.offset + o;
                Symbol sym;
                sym.name = str(st.link, rd<uint32_t>(b, a));
                sym.type = rd<uint8_t>(b, a + 4) & 0xf;
                sym.shndx = rd<uint16_t>(b, a + 6);
                sym.value = rd<uint64_t>(b, a + 8);
                sym.size = rd<uint64_t>(b, a + 16);
                syms_.push_back(std::move(sym));
            }
        }
    }

    const std::vector<Section>& sections() const { return secs_; }
    const std::vector<Symbol>& symbols() const { return syms_; }
    std::optional<uint32_t> find(std::string_view name) const {
        for (uint32_t i = 0; i < secs_.size(); i++) {
            if (secs_[i].name == name) {
                return i;
            }
        }
        return std::nullopt;
    }
    std::span<const uint8_t> data(uint32_t sec) const {
        const Section& s = secs_.at(sec);
        if (s.type == 8) {
            return {};
        }
        return b_.subspan(s.offset, s.size);
    }
    // The relocations that apply to section sec, by byte offset.
    std::map<uint64_t, Reloc> relocs(uint32_t sec) const {
        std::map<uint64_t, Reloc> out;
        for (const auto& s : secs_) {
            if (s.type != kShtRel || s.info != sec) {
                continue;
            }
            for (uint64_t o = 0; o + 16 <= s.size; o += 16) {
                uint64_t off = rd<uint64_t>(b_, s.offset + o);
                uint64_t info = rd<uint64_t>(b_, s.offset + o + 8);
                Reloc r{static_cast<uint32_t>(info >> 32), static_cast<uint32_t>(info)};
                if (r.sym >= syms_.size()) {
                    throw Fail{"relocation against a symbol that does not exist"};
                }
                out[off] = r;
            }
        }
        return out;
    }

  private:
    std::string str(uint32_t sec, uint64_t off) const {
        if (sec >= secs_.size()) {
            throw Fail{"bad ELF string table"};
        }
        const Section& s = secs_[sec];
        if (off >= s.size) {
            throw Fail{"bad ELF string offset"};
        }
        const char* p = reinterpret_cast<const char*>(b_.data() + s.offset + off);
        size_t n = strnlen(p, s.size - off);
        return std::string(p, n);
    }

    std::span<const uint8_t> b_;
    std::vector<Section> secs_;
    std::vector<Symbol> syms_;
    std::optional<uint32_t> symtab_;
};

// ---- BTF line info ---------------------------------------------------------

// Per eBPF instruction slot of section `sec_name`: its C position.
std::vector<SourceLoc> line_info(const Elf& elf, const std::string& sec_name, size_t nslots) {
    std::vector<SourceLoc> out(nslots);
    auto btf_i = elf.find(".BTF");
    auto ext_i = elf.find(".BTF.ext");
    if (!btf_i || !ext_i) {
        return out;
    }
    auto btf = elf.data(*btf_i);
    auto ext = elf.data(*ext_i);
    if (rd<uint16_t>(btf, 0) != 0xeb9f || rd<uint16_t>(ext, 0) != 0xeb9f) {
        throw Fail{".BTF or .BTF.ext has a bad magic"};
    }
    uint32_t hdr = rd<uint32_t>(btf, 4);
    uint64_t str_at = uint64_t{hdr} + rd<uint32_t>(btf, 16);
    uint32_t str_len = rd<uint32_t>(btf, 20);
    if (str_at > btf.size() || btf.size() - str_at < str_len) {
        throw Fail{".BTF string section outside .BTF"};
    }
    auto bstr = [&](uint32_t off) -> std::string {
        if (off >= str_len) {
            throw Fail{".BTF string offset out of range"};
        }
        const char* p = reinterpret_cast<const char*>(btf.data() + str_at + off);
        return std::string(p, strnlen(p, str_len - off));
    };
    uint32_t ehdr = rd<uint32_t>(ext, 4);
    uint64_t li_at = uint64_t{ehdr} + rd<uint32_t>(ext, 16);
    uint32_t li_len = rd<uint32_t>(ext, 20);
    if (li_len == 0) {
        return out;
    }
    if (li_at > ext.size() || ext.size() - li_at < li_len) {
        throw Fail{".BTF.ext line info outside .BTF.ext"};
    }
    uint64_t end = li_at + li_len;
    uint32_t rec = rd<uint32_t>(ext, li_at);
    if (rec < 16) {
        throw Fail{".BTF.ext line info records too short"};
    }
    uint64_t o = li_at + 4;
    std::string main_file;
    while (o + 8 <= end) {
        std::string sec = bstr(rd<uint32_t>(ext, o));
        uint32_t n = rd<uint32_t>(ext, o + 4);
        o += 8;
        if (n > (end - o) / rec) {
            throw Fail{".BTF.ext line info overruns its section"};
        }
        if (sec != sec_name) {
            o += uint64_t{n} * rec;
            continue;
        }
        // Records in instruction order; code inlined from a header keeps the
        // position of the last line of the program's own file.
        SourceLoc cur;
        uint64_t next_slot = 0;
        for (uint32_t i = 0; i < n; i++, o += rec) {
            uint32_t insn_off = rd<uint32_t>(ext, o);
            SourceLoc l;
            l.file = bstr(rd<uint32_t>(ext, o + 4));
            l.text = bstr(rd<uint32_t>(ext, o + 8));
            uint32_t lc = rd<uint32_t>(ext, o + 12);
            l.line = lc >> 10;
            l.col = lc & 0x3ff;
            uint64_t slot = insn_off / 8;
            for (; next_slot < slot && next_slot < nslots; next_slot++) {
                out[next_slot] = cur;
            }
            if (main_file.empty()) {
                main_file = l.file;
            }
            if (l.file == main_file && l.line != 0) {
                cur = l;
            }
        }
        for (; next_slot < nslots; next_slot++) {
            out[next_slot] = cur;
        }
    }
    return out;
}

// ---- eBPF instructions -------------------------------------------------------

struct BInsn {
    uint8_t code = 0, dst = 0, src = 0;
    int16_t off = 0;
    int32_t imm = 0;
    uint64_t imm64 = 0;  // ldimm64
    uint8_t cls() const { return code & 7; }
    uint8_t op() const { return code & 0xf0; }
    bool x() const { return code & 0x08; }
};

enum : uint8_t { kLd = 0, kLdx = 1, kSt = 2, kStx = 3, kAlu = 4, kJmp = 5, kJmp32 = 6, kAlu64 = 7 };
enum : uint8_t { kJa = 0x00, kCall = 0x80, kExit = 0x90 };
constexpr uint8_t kModeMem = 0x60, kModeAtomic = 0xc0, kModeImm = 0x00;

unsigned size_bytes(uint8_t code) {
    switch (code & 0x18) {
        case 0x00:
            return 4;
        case 0x08:
            return 2;
        case 0x10:
            return 1;
        default:
            return 8;
    }
}

std::optional<rof_alu> alu_op(uint8_t op) {
    switch (op) {
        case 0x00:
            return ROF_ALU_ADD;
        case 0x10:
            return ROF_ALU_SUB;
        case 0x20:
            return ROF_ALU_MUL;
        case 0x30:
            return ROF_ALU_DIV;
        case 0x40:
            return ROF_ALU_OR;
        case 0x50:
            return ROF_ALU_AND;
        case 0x60:
            return ROF_ALU_LSH;
        case 0x70:
            return ROF_ALU_RSH;
        case 0x80:
            return ROF_ALU_NEG;
        case 0x90:
            return ROF_ALU_MOD;
        case 0xa0:
            return ROF_ALU_XOR;
        case 0xb0:
            return ROF_ALU_MOV;
        case 0xc0:
            return ROF_ALU_ARSH;
        default:
            return std::nullopt;  // 0xd0 END is handled apart
    }
}

std::optional<rof_jmp> jmp_op(uint8_t op) {
    switch (op) {
        case 0x10:
            return ROF_JMP_JEQ;
        case 0x20:
            return ROF_JMP_JGT;
        case 0x30:
            return ROF_JMP_JGE;
        case 0x40:
            return ROF_JMP_JSET;
        case 0x50:
            return ROF_JMP_JNE;
        case 0x60:
            return ROF_JMP_JSGT;
        case 0x70:
            return ROF_JMP_JSGE;
        case 0xa0:
            return ROF_JMP_JLT;
        case 0xb0:
            return ROF_JMP_JLE;
        case 0xc0:
            return ROF_JMP_JSLT;
        case 0xd0:
            return ROF_JMP_JSLE;
        default:
            return std::nullopt;
    }
}

// ---- <rof/offload.h> declarations -----------------------------------------

// struct rof_decl of offload.h
constexpr size_t kDeclSize = 56;
enum : uint32_t { kDeclArgs = 1, kDeclScratch = 2, kDeclResp = 3, kDeclRegion = 4 };
enum : int32_t {
    kHelperCopy = 1,
    kHelperCrc64 = 2,
    kHelperHash = 3,
    kHelperRespond = 4,
    kHelperAlloc = 5,
    kHelperFree = 6,
    kHelperCopyBounded = 7,
    kHelperCas = 8
};
// rof_cas's mode: the ISA's rof_cmp, or'ed with this for `old`.
constexpr uint64_t kCasOld = 0x100;

// A pseudo-space for the eBPF stack (r10), which becomes the tail of scratch.
constexpr uint16_t kStack = 0x100;

// ---- the data-flow values ----------------------------------------------------

struct Val {
    enum K : uint8_t { Uninit, Scalar, Ptr, Mixed } k = Uninit;
    uint16_t space = 0;  // Ptr: ROF_SPACE_*, a slot, or kStack
    bool known = false;  // the number (Scalar) or offset (Ptr) is known
    uint64_t v = 0;
    bool operator==(const Val&) const = default;
    static Val scalar() { return Val{Scalar, 0, false, 0}; }
    static Val num(uint64_t x) { return Val{Scalar, 0, true, x}; }
    static Val ptr(uint16_t s, std::optional<uint64_t> off) {
        return Val{Ptr, s, off.has_value(), off.value_or(0)};
    }
};

Val join(const Val& a, const Val& b) {
    if (a == b) {
        return a;
    }
    if (a.k == Val::Uninit) {
        return b;
    }
    if (b.k == Val::Uninit) {
        return a;
    }
    if (a.k == Val::Scalar && b.k == Val::Scalar) {
        return Val::scalar();
    }
    if (a.k == Val::Ptr && b.k == Val::Ptr && a.space == b.space) {
        return Val::ptr(a.space, std::nullopt);
    }
    return Val{Val::Mixed, 0, false, 0};
}

struct State {
    Val r[11];
    // 4- and 8-byte spills: key (r10 offset) * 16 + size
    std::map<int64_t, Val> stack;
    bool operator==(const State&) const = default;
};

// A spill key's r10 offset and size.
int64_t spill_size(int64_t key) {
    return ((key % 16) + 16) % 16;
}
int64_t spill_off(int64_t key) {
    return (key - spill_size(key)) / 16;
}

State join(const State& a, const State& b) {
    State s;
    for (int i = 0; i < 11; i++) {
        s.r[i] = join(a.r[i], b.r[i]);
    }
    for (const auto& [k, v] : a.stack) {
        auto it = b.stack.find(k);
        if (it != b.stack.end()) {
            s.stack[k] = join(v, it->second);
        }
    }
    return s;
}

// ---- the translator ----------------------------------------------------------

struct Loop {
    uint32_t head = 0;
    uint32_t latch = 0;  // the last back edge's slot
    int depth = 0;
    uint8_t counter = 0;
    uint32_t trip = 0;
};

class Translator {
  public:
    Translator(std::span<const uint8_t> obj, const BpfOptions& opt) : elf_(obj), opt_(opt) {}

    BpfResult run() {
        BpfResult res;
        find_program();
        locs_ = line_info(elf_, elf_.sections()[sec_].name, ins_.size());
        read_decls();
        relocate();
        reachable();
        reorder();
        dataflow();
        loops();
        layout();
        emit();
        auto built = b_.build();
        if (!built.ok()) {
            throw Fail{"internal: " + built.error};
        }
        Program p = std::move(*built);
        // where() names one file: the program's own (header lines are mapped
        // to the program's line that used them, line_info above).
        for (const auto& l : locs_) {
            if (!l.file.empty()) {
                p.file = l.file;
                break;
            }
        }
        p.lines.clear();
        for (uint32_t s = 0; s < slot_src_.size(); s++) {
            uint32_t b = slot_src_[s];
            SourceLoc l = b < locs_.size() ? locs_[b] : SourceLoc{};
            p.lines.push_back(l.line);
            res.locs.push_back(std::move(l));
        }
        res.bpf_insn = slot_src_;
        if (opt_.verify) {
            VerifyResult v = verify(p, opt_.verify_options);
            if (!v.ok) {
                res.error = v.error;
                if (v.error_insn < res.locs.size() && !res.locs[v.error_insn].text.empty()) {
                    res.error += "\n    " + trim(res.locs[v.error_insn].text);
                }
                res.verify = std::move(v);
                return res;
            }
            res.verify = std::move(v);
        }
        res.program = std::move(p);
        return res;
    }

  private:
    // ---- messages ----
    static std::string trim(const std::string& s) {
        size_t a = s.find_first_not_of(" \t");
        size_t e = s.find_last_not_of(" \t\r\n");
        return a == std::string::npos ? std::string() : s.substr(a, e - a + 1);
    }
    [[noreturn]] void fail(uint32_t slot, const std::string& msg) const {
        SourceLoc l = slot < locs_.size() ? locs_[slot] : SourceLoc{};
        std::string where = l.str();
        if (where.empty()) {
            where = fmt::format("{}: eBPF insn {}", opt_.object_name, slot);
        }
        std::string out = where + ": " + msg;
        if (!l.text.empty()) {
            out += "\n    " + trim(l.text);
        }
        throw Fail{out};
    }
    [[noreturn]] void fail_obj(const std::string& msg) const {
        throw Fail{opt_.object_name + ": " + msg};
    }

    std::string space_str(uint16_t s) const {
        switch (s) {
            case ROF_SPACE_ARGS:
                return "args (" + names_.at(s) + ")";
            case ROF_SPACE_SCRATCH:
                return "scratch (" + names_.at(s) + ")";
            case ROF_SPACE_RESP:
                return "resp (" + names_.at(s) + ")";
            case kStack:
                return "the stack";
            default:
                return "region " + names_.at(s);
        }
    }
    std::string what(const Val& v) const {
        switch (v.k) {
            case Val::Uninit:
                return "not set";
            case Val::Scalar:
                return "a number, not a pointer into a rof space";
            case Val::Ptr:
                return "a pointer into " + space_str(v.space);
            default:
                return "a pointer into different spaces (or a number) on different paths";
        }
    }

    // ---- the object ----
    void find_program() {
        const auto& secs = elf_.sections();
        std::optional<uint32_t> sec = elf_.find("rof");
        if (!sec) {
            for (uint32_t i = 0; i < secs.size(); i++) {
                if ((secs[i].flags & kShfExec) && secs[i].size > 0) {
                    if (sec) {
                        fail_obj("more than one section of code: mark the program ROF_PROGRAM");
                    }
                    sec = i;
                }
            }
        }
        if (!sec || secs[*sec].size == 0) {
            fail_obj("no program: mark one function ROF_PROGRAM");
        }
        sec_ = *sec;
        int funcs = 0;
        for (const auto& s : elf_.symbols()) {
            if (s.shndx == sec_ && s.type == kSttFunc) {
                funcs++;
                if (s.value != 0) {
                    fail_obj(
                        fmt::format("function {} is not the program: one function per "
                                    "object (make helpers static inline)",
                                    s.name));
                }
            }
        }
        if (funcs > 1) {
            fail_obj("more than one function in the program's section");
        }
        auto d = elf_.data(sec_);
        if (d.size() % 8) {
            fail_obj("the program's section is not a whole number of instructions");
        }
        size_t n = d.size() / 8;
        ins_.resize(n);
        start_.assign(n, false);
        for (size_t i = 0; i < n; i++) {
            BInsn in;
            in.code = d[i * 8];
            in.dst = d[i * 8 + 1] & 0xf;
            in.src = d[i * 8 + 1] >> 4;
            in.off = rd<int16_t>(d, i * 8 + 2);
            in.imm = rd<int32_t>(d, i * 8 + 4);
            ins_[i] = in;
        }
        for (size_t i = 0; i < n; i++) {
            start_[i] = true;
            if (ins_[i].dst > 10 || ins_[i].src > 10) {
                fail(static_cast<uint32_t>(i), "register beyond r10: not a clang object");
            }
            if (ins_[i].code == (kLd | 0x18 | kModeImm)) {
                if (i + 1 >= n) {
                    fail_obj("truncated ld_imm64");
                }
                ins_[i].imm64 = static_cast<uint32_t>(ins_[i].imm) |
                                (uint64_t{static_cast<uint32_t>(ins_[i + 1].imm)} << 32);
                i++;
            }
        }
    }

    void read_decls() {
        names_[ROF_SPACE_ARGS] = "args";
        names_[ROF_SPACE_SCRATCH] = "scratch";
        names_[ROF_SPACE_RESP] = "resp";
        auto di = elf_.find(".rof.decl");
        if (!di) {
            return;
        }
        auto d = elf_.data(*di);
        if (d.size() % kDeclSize) {
            fail_obj(".rof.decl is not a whole number of declarations: another <rof/offload.h>?");
        }
        bool args = false, scr = false, resp = false;
        for (size_t o = 0; o < d.size(); o += kDeclSize) {
            uint32_t kind = rd<uint32_t>(d, o);
            uint32_t access = rd<uint32_t>(d, o + 4);
            uint32_t flags = rd<uint32_t>(d, o + 8);
            uint32_t min = rd<uint32_t>(d, o + 12);
            uint64_t len = rd<uint64_t>(d, o + 16);
            const char* np = reinterpret_cast<const char*>(d.data() + o + 24);
            std::string name(np, strnlen(np, 32));
            if (name.empty() || name.size() > 31 || sym_space_.count(name)) {
                fail_obj(fmt::format("bad or repeated declaration '{}'", name));
            }
            auto too_big = [&](uint64_t v) {
                if (v > (1u << 20)) {
                    fail_obj(fmt::format("{}: {} bytes is more than the ISA's 2^20", name, v));
                }
            };
            switch (kind) {
                case kDeclArgs:
                    if (args) {
                        fail_obj("two ROF_ARGS declarations");
                    }
                    too_big(len);
                    if (min > len) {
                        fail_obj(fmt::format("ROF_ARGS {}: min {} > max {}", name, min, len));
                    }
                    args = true;
                    args_min_ = min;
                    args_max_ = static_cast<uint32_t>(len);
                    sym_space_[name] = ROF_SPACE_ARGS;
                    names_[ROF_SPACE_ARGS] = name;
                    break;
                case kDeclScratch:
                    if (scr) {
                        fail_obj("two ROF_SCRATCH declarations");
                    }
                    too_big(len);
                    scr = true;
                    user_scratch_ = static_cast<uint32_t>(len);
                    sym_space_[name] = ROF_SPACE_SCRATCH;
                    names_[ROF_SPACE_SCRATCH] = name;
                    break;
                case kDeclResp:
                    if (resp) {
                        fail_obj("two ROF_RESP declarations");
                    }
                    too_big(len);
                    resp = true;
                    resp_max_ = static_cast<uint32_t>(len);
                    sym_space_[name] = ROF_SPACE_RESP;
                    names_[ROF_SPACE_RESP] = name;
                    break;
                case kDeclRegion: {
                    if (slots_.size() >= ROF_ISA_MAX_SLOTS) {
                        fail_obj("more than 16 regions");
                    }
                    uint16_t s = static_cast<uint16_t>(slots_.size());
                    slots_.push_back(Slot{name, access, flags, len});
                    sym_space_[name] = s;
                    names_[s] = name;
                    break;
                }
                default:
                    fail_obj(fmt::format("declaration '{}' of unknown kind {}", name, kind));
            }
        }
    }

    // ldimm64 relocations: the space each one points into.
    void relocate() {
        auto rel = elf_.relocs(sec_);
        for (const auto& [off, r] : rel) {
            uint64_t slot = off / 8;
            if (off % 8 || slot >= ins_.size() || !start_[slot]) {
                fail_obj("relocation off an instruction");
            }
            const BInsn& in = ins_[slot];
            const Symbol& sym = elf_.symbols()[r.sym];
            if (in.cls() == kJmp && in.op() == kCall) {
                fail(static_cast<uint32_t>(slot),
                     fmt::format("calls the function {}: functions other than the program must "
                                 "be static inline (__attribute__((always_inline)))",
                                 sym.name));
            }
            if (in.code != (kLd | 0x18) || r.type != kRBpf64_64) {
                fail(static_cast<uint32_t>(slot),
                     fmt::format("unsupported relocation (type {}) against {}", r.type, sym.name));
            }
            if (sym.type == kSttSection || sym.shndx != 0) {
                std::string where = sym.type == kSttSection && sym.shndx < elf_.sections().size()
                                        ? elf_.sections()[sym.shndx].name
                                        : sym.name;
                fail(static_cast<uint32_t>(slot),
                     fmt::format("uses {}: global and static variables, string literals and "
                                 "constant tables are not supported; declare memory with "
                                 "ROF_ARGS, ROF_SCRATCH, ROF_RESP or ROF_REGION",
                                 where));
            }
            auto it = sym_space_.find(sym.name);
            if (it == sym_space_.end()) {
                fail(static_cast<uint32_t>(slot),
                     fmt::format("'{}' is not declared with ROF_ARGS, ROF_SCRATCH, ROF_RESP or "
                                 "ROF_REGION",
                                 sym.name));
            }
            reloc_space_[static_cast<uint32_t>(slot)] = it->second;
        }
    }

    uint32_t width(uint32_t i) const { return ins_[i].code == (kLd | 0x18) ? 2 : 1; }

    bool is_respond(uint32_t i) const {
        const BInsn& in = ins_[i];
        return in.cls() == kJmp && in.op() == kCall && in.src == 0 && in.imm == kHelperRespond;
    }

    // Successors of eBPF instruction i (slot indexes).
    std::vector<uint32_t> succ(uint32_t i) const {
        const BInsn& in = ins_[i];
        uint32_t next = i + width(i);
        auto target = [&]() -> uint32_t {
            int64_t t = int64_t{i} + 1 + in.off;
            if (t < 0 || t >= static_cast<int64_t>(ins_.size()) || !start_[t]) {
                fail(i, "jump outside the program");
            }
            return static_cast<uint32_t>(t);
        };
        auto fall = [&]() {
            if (next >= ins_.size()) {
                fail(i, "control falls off the end of the program");
            }
            return next;
        };
        if (in.cls() == kJmp || in.cls() == kJmp32) {
            if (in.op() == kExit) {
                return {};
            }
            if (in.op() == kCall) {
                if (is_respond(i)) {
                    return {};
                }
                return {fall()};
            }
            if (in.op() == kJa) {
                return {target()};
            }
            return {fall(), target()};
        }
        return {fall()};
    }

    // ---- block layout ----
    // clang lays blocks out for eBPF, where any jump may go backwards; the
    // ISA wants every jump forward but the loop instruction, and each loop
    // contiguous behind its head.  So the blocks are put in an order where
    // that holds (loops from the dominator tree, each laid out as a unit,
    // the rest in topological order, ties in clang's order), with a `ja`
    // where a fall-through no longer falls through.  Irreducible control
    // flow (a loop with two entries) is refused.
    void reorder() {
        const uint32_t n = static_cast<uint32_t>(ins_.size());
        std::vector<bool> lead(n, false);
        lead[0] = true;
        for (uint32_t i = 0; i < n; i++) {
            if (!start_[i] || !live_[i]) {
                continue;
            }
            const BInsn& in = ins_[i];
            bool jmp = (in.cls() == kJmp || in.cls() == kJmp32) && in.op() != kCall;
            auto ss = succ(i);
            if (jmp || is_respond(i)) {
                for (uint32_t s : ss) {
                    lead[s] = true;
                }
                if (i + width(i) < n) {
                    lead[i + width(i)] = true;
                }
            }
        }
        struct Block {
            uint32_t first = 0, end = 0;  // slots [first, end)
            std::vector<uint32_t> succ;   // block ids
            std::optional<uint32_t> fall;
        };
        std::vector<Block> bl;
        std::vector<int32_t> block_of(n, -1);
        for (uint32_t i = 0; i < n;) {
            if (!live_[i]) {
                i++;
                continue;
            }
            Block b;
            b.first = i;
            uint32_t j = i;
            do {
                block_of[j] = static_cast<int32_t>(bl.size());
                if (width(j) == 2 && j + 1 < n) {
                    block_of[j + 1] = static_cast<int32_t>(bl.size());
                }
                j += width(j);
            } while (j < n && !lead[j] && live_[j]);
            b.end = j;
            bl.push_back(b);
            i = j;
        }
        const uint32_t nb = static_cast<uint32_t>(bl.size());
        for (auto& b : bl) {
            uint32_t last = b.first;
            for (uint32_t j = b.first; j < b.end; j += width(j)) {
                last = j;
            }
            for (uint32_t s : succ(last)) {
                b.succ.push_back(static_cast<uint32_t>(block_of[s]));
                if (s == b.end && !(ins_[last].cls() == kJmp && ins_[last].op() == kJa)) {
                    b.fall = static_cast<uint32_t>(block_of[s]);
                }
            }
        }
        // Reverse postorder and dominators (Cooper, Harvey, Kennedy).
        std::vector<uint32_t> order, rpo_at(nb, 0);
        {
            std::vector<uint8_t> seen(nb, 0);
            std::vector<std::pair<uint32_t, size_t>> stack{{0, 0}};
            seen[0] = 1;
            while (!stack.empty()) {
                auto& [b, k] = stack.back();
                if (k < bl[b].succ.size()) {
                    uint32_t s = bl[b].succ[k++];
                    if (!seen[s]) {
                        seen[s] = 1;
                        stack.push_back({s, 0});
                    }
                } else {
                    order.push_back(b);
                    stack.pop_back();
                }
            }
            std::reverse(order.begin(), order.end());
            for (uint32_t k = 0; k < order.size(); k++) {
                rpo_at[order[k]] = k;
            }
        }
        std::vector<std::vector<uint32_t>> preds(nb);
        for (uint32_t b = 0; b < nb; b++) {
            for (uint32_t s : bl[b].succ) {
                preds[s].push_back(b);
            }
        }
        std::vector<int64_t> idom(nb, -1);
        idom[0] = 0;
        for (bool changed = true; changed;) {
            changed = false;
            for (uint32_t b : order) {
                if (b == 0) {
                    continue;
                }
                int64_t d = -1;
                for (uint32_t p : preds[b]) {
                    if (idom[p] < 0) {
                        continue;
                    }
                    if (d < 0) {
                        d = p;
                        continue;
                    }
                    uint64_t x = static_cast<uint64_t>(d), y = p;
                    while (x != y) {
                        while (rpo_at[x] > rpo_at[y]) {
                            x = static_cast<uint64_t>(idom[x]);
                        }
                        while (rpo_at[y] > rpo_at[x]) {
                            y = static_cast<uint64_t>(idom[y]);
                        }
                    }
                    d = static_cast<int64_t>(x);
                }
                if (d != idom[b]) {
                    idom[b] = d;
                    changed = true;
                }
            }
        }
        auto dominates = [&](uint32_t a, uint32_t b) {
            for (;;) {
                if (a == b) {
                    return true;
                }
                if (b == 0) {
                    return false;
                }
                b = static_cast<uint32_t>(idom[b]);
            }
        };
        // Loops: a retreating edge (in reverse postorder) must go to a
        // dominator of its source, else the flow is irreducible.
        std::map<uint32_t, std::set<uint32_t>> body;  // header -> blocks
        for (uint32_t b = 0; b < nb; b++) {
            for (uint32_t s : bl[b].succ) {
                if (rpo_at[s] > rpo_at[b]) {
                    continue;
                }
                if (!dominates(s, b)) {
                    uint32_t last = bl[b].first;
                    for (uint32_t j = bl[b].first; j < bl[b].end; j += width(j)) {
                        last = j;
                    }
                    fail(last,
                         "this jump makes a loop with two entries (irreducible "
                         "control flow), which the ISA cannot bound");
                }
                auto& lb = body[s];
                lb.insert(s);
                std::vector<uint32_t> work{b};
                while (!work.empty()) {
                    uint32_t x = work.back();
                    work.pop_back();
                    if (lb.insert(x).second) {
                        for (uint32_t p : preds[x]) {
                            work.push_back(p);
                        }
                    }
                }
            }
        }
        // Layout, loop by loop.
        std::vector<uint32_t> out;
        std::function<void(const std::set<uint32_t>&, uint32_t, std::optional<uint32_t>)> lay =
            [&](const std::set<uint32_t>& region, uint32_t entry, std::optional<uint32_t> own) {
                // rep: the outermost loop inside the region holding a block
                auto rep = [&](uint32_t b) {
                    uint32_t best = b;
                    size_t size = 0;
                    for (const auto& [h, lb] : body) {
                        if (own && h == *own) {
                            continue;
                        }
                        if (region.count(h) && lb.count(b) && lb.size() > size &&
                            std::includes(region.begin(), region.end(), lb.begin(), lb.end())) {
                            best = h;
                            size = lb.size();
                        }
                    }
                    return best;
                };
                std::map<uint32_t, uint32_t> rep_of;
                std::set<uint32_t> reps;
                for (uint32_t b : region) {
                    rep_of[b] = rep(b);
                    reps.insert(rep_of[b]);
                }
                std::map<uint32_t, std::set<uint32_t>> dag;
                std::map<uint32_t, uint32_t> indeg;
                for (uint32_t r : reps) {
                    indeg[r] = 0;
                }
                for (uint32_t b : region) {
                    for (uint32_t s : bl[b].succ) {
                        if (!region.count(s) || (own && s == *own) || rep_of[s] == rep_of[b]) {
                            continue;
                        }
                        if (dag[rep_of[b]].insert(rep_of[s]).second) {
                            indeg[rep_of[s]]++;
                        }
                    }
                }
                // Ready reps by clang's order (their first slot).
                std::set<std::pair<uint32_t, uint32_t>> ready;
                for (uint32_t r : reps) {
                    if (indeg[r] == 0) {
                        ready.insert({r == entry ? 0 : bl[r].first + 1, r});
                    }
                }
                while (!ready.empty()) {
                    uint32_t r = ready.begin()->second;
                    ready.erase(ready.begin());
                    if (body.count(r) && (!own || r != *own)) {
                        lay(body[r], r, r);
                    } else {
                        out.push_back(r);
                    }
                    for (uint32_t s : dag[r]) {
                        if (--indeg[s] == 0) {
                            ready.insert({bl[s].first + 1, s});
                        }
                    }
                }
            };
        std::set<uint32_t> all;
        for (uint32_t b = 0; b < nb; b++) {
            if (rpo_at[b] < order.size() && (b == 0 || idom[b] >= 0)) {
                all.insert(b);
            }
        }
        lay(all, 0, std::nullopt);
        if (out.size() != all.size()) {
            fail_obj("internal: the block layout lost blocks");
        }
        // The new instruction stream.
        std::vector<BInsn> ni;
        std::vector<SourceLoc> nl;
        std::map<uint32_t, uint16_t> nr;
        std::vector<uint32_t> at(nb, 0);
        struct Fix {
            size_t at;
            uint32_t block;
        };
        std::vector<Fix> fixes;
        for (size_t k = 0; k < out.size(); k++) {
            const Block& b = bl[out[k]];
            at[out[k]] = static_cast<uint32_t>(ni.size());
            uint32_t last = b.first;
            for (uint32_t j = b.first; j < b.end; j++) {
                if (auto it = reloc_space_.find(j); it != reloc_space_.end()) {
                    nr[static_cast<uint32_t>(ni.size())] = it->second;
                }
                if (start_[j]) {
                    last = j;
                }
                BInsn in = ins_[j];
                if (j == last && (in.cls() == kJmp || in.cls() == kJmp32) && in.op() != kCall &&
                    in.op() != kExit) {
                    uint32_t t = static_cast<uint32_t>(int64_t{j} + 1 + in.off);
                    fixes.push_back({ni.size(), static_cast<uint32_t>(block_of[t])});
                }
                ni.push_back(in);
                nl.push_back(j < locs_.size() ? locs_[j] : SourceLoc{});
            }
            bool next_is_fall = k + 1 < out.size() && b.fall && out[k + 1] == *b.fall;
            if (b.fall && !next_is_fall) {
                BInsn ja;
                ja.code = kJmp;  // | kJa, which is 0
                fixes.push_back({ni.size(), *b.fall});
                ni.push_back(ja);
                nl.push_back(last < locs_.size() ? locs_[last] : SourceLoc{});
            }
        }
        for (const auto& f : fixes) {
            int64_t off = int64_t{at[f.block]} - int64_t(f.at) - 1;
            if (off < INT16_MIN || off > INT16_MAX) {
                fail_obj("program too long for its jumps after the block layout");
            }
            ni[f.at].off = static_cast<int16_t>(off);
        }
        ins_ = std::move(ni);
        locs_ = std::move(nl);
        reloc_space_ = std::move(nr);
        start_.assign(ins_.size(), false);
        for (size_t i = 0; i < ins_.size(); i += width(static_cast<uint32_t>(i))) {
            start_[i] = true;
        }
        reachable();
    }

    void reachable() {
        live_.assign(ins_.size(), false);
        std::vector<uint32_t> work{0};
        live_[0] = true;
        while (!work.empty()) {
            uint32_t i = work.back();
            work.pop_back();
            for (uint32_t s : succ(i)) {
                if (!live_[s]) {
                    live_[s] = true;
                    work.push_back(s);
                }
            }
        }
    }

    // ---- data flow ----
    Val alu(const BInsn& in, const Val& d, const Val& s, bool is32) const {
        uint8_t op = in.op();
        if (op == 0xb0) {  // mov
            if (!is32) {
                return s;
            }
            return s.k == Val::Scalar && s.known ? Val::num(s.v & 0xffffffff) : Val::scalar();
        }
        if (op == 0xd0) {
            return Val::scalar();
        }
        if (!is32 && (op == 0x00 || op == 0x10)) {  // pointer arithmetic
            if (d.k == Val::Ptr && s.k == Val::Scalar) {
                std::optional<uint64_t> off;
                if (d.known && s.known) {
                    off = op == 0x00 ? d.v + s.v : d.v - s.v;
                }
                return Val::ptr(d.space, off);
            }
            if (op == 0x00 && d.k == Val::Scalar && s.k == Val::Ptr) {
                std::optional<uint64_t> off;
                if (d.known && s.known) {
                    off = d.v + s.v;
                }
                return Val::ptr(s.space, off);
            }
        }
        if (d.k == Val::Scalar && s.k == Val::Scalar && d.known && s.known) {
            auto a = alu_op(op);
            u64 v = d.v;
            if (a && rof_exec_alu(*a, is32, &v, s.v) == 0) {
                return Val::num(v);
            }
        }
        return Val::scalar();
    }

    State step(uint32_t i, State st) const {
        const BInsn& in = ins_[i];
        auto src_val = [&]() {
            return in.x() ? st.r[in.src] : Val::num(uint64_t(int64_t{in.imm}));
        };
        switch (in.cls()) {
            case kAlu:
            case kAlu64: {
                if (in.dst > 10) {
                    break;
                }
                bool is32 = in.cls() == kAlu;
                Val s = src_val();
                if (is32 && !in.x() && s.k == Val::Scalar) {
                    s = Val::num(static_cast<uint32_t>(in.imm));
                }
                if (in.op() == 0x80) {
                    s = Val::num(0);
                }
                st.r[in.dst] = alu(in, st.r[in.dst], s, is32);
                break;
            }
            case kLd:
                if (in.dst <= 10) {
                    auto it = reloc_space_.find(i);
                    st.r[in.dst] = it != reloc_space_.end() ? Val::ptr(it->second, in.imm64)
                                                            : Val::num(in.imm64);
                }
                break;
            case kLdx: {
                Val v = Val::scalar();
                unsigned n = size_bytes(in.code);
                if (in.src == 10 && (n == 4 || n == 8)) {
                    auto it = st.stack.find(int64_t{in.off} * 16 + n);
                    if (it != st.stack.end()) {
                        v = it->second;
                    }
                }
                if (in.dst <= 10) {
                    st.r[in.dst] = v;
                }
                break;
            }
            case kSt:
            case kStx: {
                if ((in.code & 0xe0) == kModeAtomic) {
                    if (in.imm == 0xf1) {
                        st.r[0] = Val::scalar();
                    } else if (in.imm & 1) {
                        st.r[in.src] = Val::scalar();
                    }
                    break;
                }
                if (in.dst == 10) {
                    int64_t lo = in.off, hi = lo + size_bytes(in.code);
                    for (auto it = st.stack.begin(); it != st.stack.end();) {
                        if (spill_off(it->first) < hi &&
                            spill_off(it->first) + spill_size(it->first) > lo) {
                            it = st.stack.erase(it);
                        } else {
                            ++it;
                        }
                    }
                    unsigned n = size_bytes(in.code);
                    if (in.cls() == kStx && (n == 4 || n == 8)) {
                        Val v = st.r[in.src];
                        if (n == 4) {
                            v = v.k == Val::Scalar && v.known ? Val::num(v.v & 0xffffffff)
                                                              : Val::scalar();
                        }
                        st.stack[int64_t{in.off} * 16 + n] = v;
                    }
                }
                break;
            }
            case kJmp:
            case kJmp32:
                if (in.op() == kCall) {
                    st.r[0] = Val::scalar();
                    for (int r = 1; r <= 5; r++) {
                        st.r[r] = Val{};
                    }
                }
                break;
            default:
                break;
        }
        return st;
    }

    void dataflow() {
        in_.assign(ins_.size(), std::nullopt);
        State s0;
        s0.r[1] = Val::scalar();
        s0.r[10] = Val::ptr(kStack, 0);
        in_[0] = s0;
        bool changed = true;
        int rounds = 0;
        while (changed) {
            changed = false;
            if (++rounds > 1000) {
                fail_obj("internal: the data-flow analysis does not converge");
            }
            for (uint32_t i = 0; i < ins_.size(); i++) {
                if (!start_[i] || !in_[i]) {
                    continue;
                }
                State out = step(i, *in_[i]);
                for (uint32_t s : succ(i)) {
                    State n = in_[s] ? join(*in_[s], out) : out;
                    if (!in_[s] || !(n == *in_[s])) {
                        in_[s] = std::move(n);
                        changed = true;
                    }
                }
            }
        }
        // The stack's depth: the lowest byte any stack pointer reaches.
        int64_t low = 0;
        bool unknown = false;
        auto see = [&](const Val& v, int64_t extra) {
            if (v.k == Val::Ptr && v.space == kStack) {
                if (!v.known) {
                    unknown = true;
                } else {
                    low = std::min(low, static_cast<int64_t>(v.v) + extra);
                }
            }
        };
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (!in_[i]) {
                continue;
            }
            for (const auto& v : in_[i]->r) {
                see(v, 0);
            }
            const BInsn& in = ins_[i];
            if (in.cls() == kLdx) {
                see(in_[i]->r[in.src], in.off);
            } else if (in.cls() == kSt || in.cls() == kStx) {
                see(in_[i]->r[in.dst], in.off);
            }
        }
        stack_depth_ = unknown ? 512 : static_cast<uint32_t>((-low + 7) & ~int64_t{7});
        if (stack_depth_ > 512) {
            fail_obj("stack deeper than 512 bytes");
        }
    }

    // ---- loops ----
    void loops() {
        std::map<uint32_t, uint32_t> latch;  // head -> last back edge
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (!start_[i] || !live_[i]) {
                continue;
            }
            const BInsn& in = ins_[i];
            if ((in.cls() == kJmp || in.cls() == kJmp32) && in.op() != kCall && in.op() != kExit &&
                in.off < 0) {
                uint32_t h = static_cast<uint32_t>(int64_t{i} + 1 + in.off);
                latch[h] = std::max(latch[h], i);
            }
        }
        for (const auto& [h, l] : latch) {
            loops_.push_back(Loop{h, l, 0, 0, 0});
        }
        // Proper nesting, entries only at the head.
        for (auto& lp : loops_) {
            for (const auto& o : loops_) {
                if (&o == &lp) {
                    continue;
                }
                bool inside = o.head >= lp.head && o.latch <= lp.latch;
                bool around = lp.head >= o.head && lp.latch <= o.latch;
                bool apart = o.latch < lp.head || o.head > lp.latch;
                if (!inside && !around && !apart) {
                    fail(o.latch, "this loop overlaps another one without nesting in it");
                }
                if (around) {
                    lp.depth++;
                }
            }
            if (lp.depth > 3) {
                fail(lp.latch, "loops nest deeper than 4");
            }
            lp.counter = static_cast<uint8_t>(11 + lp.depth);
        }
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (!start_[i] || !live_[i]) {
                continue;
            }
            for (uint32_t s : succ(i)) {
                for (const auto& lp : loops_) {
                    bool from_out = i < lp.head || i > lp.latch;
                    if (from_out && s > lp.head && s <= lp.latch) {
                        fail(i,
                             "jumps into the middle of a loop (clang laid the loop out in a "
                             "shape the ISA has no form for; simplify its control flow)");
                    }
                }
            }
        }
        for (auto& lp : loops_) {
            lp.trip = trip(lp);
        }
    }

    // The trip limit of a loop: an exit test that runs on every iteration
    // compares a constant with a register that is (an induction variable,
    // stepped by a constant per iteration, from a known start) + a constant.
    // The ISA's loop instruction enforces the limit, so a wrong guess can
    // only end a run early (kBpfLoopLimitStatus), never make it unsafe.
    uint32_t trip(const Loop& lp) const {
        // Entry values at the head: the join over edges from outside.
        std::optional<State> entry;
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (!start_[i] || !live_[i] || !in_[i] || (i >= lp.head && i <= lp.latch)) {
                continue;
            }
            auto ss = succ(i);
            if (std::find(ss.begin(), ss.end(), lp.head) != ss.end()) {
                State o = step(i, *in_[i]);
                entry = entry ? join(*entry, o) : o;
            }
        }
        // One iteration, symbolically: every register as (its value at the
        // head of this iteration) + a constant, or unknown.  The body is
        // forward-only but for inner loops, whose registers become unknown.
        struct Aff {
            int32_t base = -1;  // -1: unknown; a register, or kSlot + a spill key
            int64_t d = 0;
            bool operator==(const Aff&) const = default;
        };
        constexpr int32_t kSlot = 1000000;  // bases of stack spills: kSlot + key (>= 16)
        struct AState {
            std::array<Aff, 16> r;      // r0-r9 used, the rest never set
            std::map<int64_t, Aff> st;  // spills, by key (offset * 16 + size)
            Aff& operator[](size_t i) { return r[i]; }
            const Aff& operator[](size_t i) const { return r[i]; }
        };
        auto ajoin = [](const AState& a, const AState& b) {
            AState s;
            for (size_t r = 0; r < s.r.size(); r++) {
                s[r] = a[r] == b[r] ? a[r] : Aff{};
            }
            for (const auto& [k, v] : a.st) {
                auto it = b.st.find(k);
                if (it != b.st.end() && it->second == v) {
                    s.st[k] = v;
                }
            }
            return s;
        };
        std::map<uint32_t, AState> ain;
        AState h;
        for (int32_t r = 0; r < 10; r++) {
            h[r] = Aff{r, 0};
        }
        for (uint32_t i = lp.head; i <= lp.latch; i++) {
            const BInsn& in = ins_[i];
            unsigned n = size_bytes(in.code);
            if (start_[i] && in.cls() == kStx && (in.code & 0xe0) == kModeMem && in.dst == 10 &&
                (n == 4 || n == 8)) {
                int64_t key = int64_t{in.off} * 16 + n;
                h.st[key] = Aff{kSlot + static_cast<int32_t>(key), 0};
            }
        }
        ain[lp.head] = h;
        std::optional<AState> at_back;   // joined over the back edges
        std::map<uint32_t, bool> every;  // insn -> runs on every iteration
        uint32_t skip_to = lp.head;      // a forward jump inside the body lands here at most
        bool cont_seen = false;          // a back edge before the latch
        std::vector<uint32_t> backs;     // the back edges (their jumps) of this loop
        for (uint32_t i = lp.head; i <= lp.latch; i++) {
            if (!start_[i] || !live_[i] || !ain.count(i)) {
                continue;
            }
            AState s = ain[i];
            const Loop* inner = nullptr;
            for (const auto& o : loops_) {
                if (&o != &lp && o.head == i && o.head >= lp.head && o.latch <= lp.latch) {
                    inner = &o;
                }
            }
            if (inner) {
                for (uint32_t k = inner->head; k <= inner->latch; k++) {
                    const BInsn& w = ins_[k];
                    if (start_[k] && w.dst < 10) {
                        s[w.dst] = Aff{};
                    }
                    if (start_[k] && w.cls() == kStx && (w.code & 0xe0) == kModeAtomic) {
                        s[w.src] = Aff{};
                        s[0] = Aff{};
                    }
                    if (start_[k] && (w.cls() == kJmp || w.cls() == kJmp32) && w.op() == kCall) {
                        for (int r = 0; r <= 5; r++) {
                            s[r] = Aff{};
                        }
                    }
                }
                ain[i] = s;
            }
            bool in_inner = false;
            for (const auto& o : loops_) {
                if (&o != &lp && i >= o.head && i <= o.latch && o.head >= lp.head &&
                    o.latch <= lp.latch) {
                    in_inner = true;
                }
            }
            every[i] = !in_inner && skip_to <= i && !cont_seen;
            const BInsn& in = ins_[i];
            AState o = s;
            auto set = [&](uint8_t r, Aff a) {
                if (r < 10) {
                    o[r] = a;
                }
            };
            switch (in.cls()) {
                case kAlu:
                case kAlu64:
                    if (in.op() == 0xb0 && in.x() && in.cls() == kAlu64 && in.src < 10) {
                        set(in.dst, s[in.src]);
                    } else if ((in.op() == 0x00 || in.op() == 0x10) && !in.x() &&
                               s[in.dst].base >= 0) {
                        int64_t c = in.op() == 0x00 ? int64_t{in.imm} : -int64_t{in.imm};
                        set(in.dst, Aff{s[in.dst].base, s[in.dst].d + c});
                    } else {
                        set(in.dst, Aff{});
                    }
                    break;
                case kLd:
                    set(in.dst, Aff{});
                    break;
                case kLdx: {
                    unsigned n = size_bytes(in.code);
                    auto it = s.st.find(int64_t{in.off} * 16 + n);
                    set(in.dst, in.src == 10 && it != s.st.end() ? it->second : Aff{});
                    break;
                }
                case kSt:
                case kStx:
                    if ((in.code & 0xe0) == kModeAtomic) {
                        set(in.src, Aff{});
                        set(0, Aff{});
                    } else if (in.dst == 10) {
                        unsigned n = size_bytes(in.code);
                        int64_t lo = in.off, hi = lo + n;
                        for (auto it = o.st.begin(); it != o.st.end();) {
                            if (spill_off(it->first) < hi &&
                                spill_off(it->first) + spill_size(it->first) > lo) {
                                it = o.st.erase(it);
                            } else {
                                ++it;
                            }
                        }
                        if (in.cls() == kStx && (n == 4 || n == 8)) {
                            o.st[lo * 16 + n] = s[in.src];
                        }
                    }
                    break;
                case kJmp:
                case kJmp32:
                    if (in.op() == kCall) {
                        for (uint8_t r = 0; r <= 5; r++) {
                            set(r, Aff{});
                        }
                    }
                    break;
                default:
                    break;
            }
            for (uint32_t t : succ(i)) {
                if (t == lp.head && t <= i) {
                    at_back = at_back ? ajoin(*at_back, o) : o;
                    if (i != lp.latch && !in_inner) {
                        cont_seen = true;
                    }
                    if (!in_inner) {
                        backs.push_back(i);
                    }
                } else if (t > i && t <= lp.latch) {
                    auto it = ain.find(t);
                    if (it == ain.end()) {
                        ain.emplace(t, o);
                    } else {
                        it->second = ajoin(it->second, o);
                    }
                    if (!in_inner && t > i + width(i)) {
                        skip_to = std::max(skip_to, t);
                    }
                }
            }
        }
        // The exit tests: x = (head value of `base`) + d compared with k;
        // the loop goes on while `x cont k`.
        struct Test {
            int32_t base;
            int64_t d, c, k;
            rof_jmp cont;
            bool is32;
        };
        // The test at i as a Test of the value it compares, when it is one:
        // a compare of an induction variable (+ a constant) with a constant.
        auto as_test = [&](uint32_t i, rof_jmp cont) -> std::optional<Test> {
            const BInsn& in = ins_[i];
            Aff x = ain[i][in.dst];
            if (x.base < 0 || in.imm < 0) {
                return std::nullopt;
            }
            Aff back;
            if (x.base < 16) {
                back = (*at_back)[static_cast<size_t>(x.base)];
            } else if (auto it = at_back->st.find(x.base - kSlot); it != at_back->st.end()) {
                back = it->second;
            }
            if (back.base != x.base || back.d == 0) {
                return std::nullopt;
            }
            return Test{x.base, x.d, back.d, in.imm, cont, in.cls() == kJmp32};
        };
        auto is_cond = [&](uint32_t i) {
            const BInsn& in = ins_[i];
            for (const auto& o : loops_) {
                if (&o != &lp && i >= o.head && i <= o.latch && o.head >= lp.head &&
                    o.latch <= lp.latch) {
                    return false;  // a test of an inner loop
                }
            }
            return start_[i] && live_[i] && ain.count(i) &&
                   (in.cls() == kJmp || in.cls() == kJmp32) && !in.x() && in.dst < 10 &&
                   in.op() != kJa && in.op() != kCall && in.op() != kExit && jmp_op(in.op());
        };
        std::vector<Test> tests;
        for (uint32_t i = lp.head; i <= lp.latch && at_back; i++) {
            if (!start_[i] || !live_[i] || !every.count(i) || !every[i]) {
                continue;
            }
            const BInsn& in = ins_[i];
            if (!(in.cls() == kJmp || in.cls() == kJmp32) || in.x() || in.dst >= 10 ||
                in.op() == kJa || in.op() == kCall || in.op() == kExit) {
                continue;
            }
            auto j = jmp_op(in.op());
            if (!j || !as_test(i, *j)) {
                continue;
            }
            int64_t t = int64_t{i} + 1 + in.off;
            auto outside = [&](int64_t to) { return to > lp.latch || to < lp.head; };
            // The fall-through leaves when it is a `ja` out (the layout
            // puts one where the fall-through block is elsewhere).
            if (i + 1 >= ins_.size()) {
                continue;
            }
            const BInsn& nx = ins_[i + 1];
            bool fall_leaves = i + 1 > lp.latch || (nx.cls() == kJmp && nx.op() == kJa &&
                                                    outside(int64_t{i} + 2 + nx.off));
            std::optional<rof_jmp> cont;
            if (outside(t)) {
                cont = isa::inverse(*j);
            } else if ((t == lp.head && i == lp.latch) || fall_leaves) {
                cont = *j;
            }
            if (cont) {
                tests.push_back(*as_test(i, *cont));
            }
        }
        auto unsigned_lt = [](rof_jmp j) { return j == ROF_JMP_JLT || j == ROF_JMP_JLE; };
        auto unsigned_gt = [](rof_jmp j) { return j == ROF_JMP_JGT || j == ROF_JMP_JGE; };
        // The trips the test te allows (with the other tests of its loop for
        // a bound on a decreasing value's start), UINT64_MAX if none.
        auto bound = [&](const Test& te, const std::vector<Test>& tests) -> uint64_t {
            uint64_t best = UINT64_MAX;
            int64_t c = te.c, k = te.k;
            const Val* v0v = nullptr;
            if (entry && te.base < 16) {
                v0v = &entry->r[te.base];
            } else if (entry) {
                auto it = entry->stack.find(te.base - kSlot);
                v0v = it != entry->stack.end() ? &it->second : nullptr;
            }
            bool known = v0v && v0v->k == Val::Scalar && v0v->known &&
                         static_cast<int64_t>(v0v->v) >= 0 &&
                         static_cast<int64_t>(v0v->v) <= (int64_t{1} << 40);
            // The value tested in iteration 0, or a bound on it: an
            // increasing unsigned value is at least 0; a decreasing one is
            // at most what another test lets through in iteration 0.
            std::optional<int64_t> u;
            if (known) {
                u = static_cast<int64_t>(v0v->v) + te.d;
            } else if (c > 0 && unsigned_lt(te.cont)) {
                u = 0;
            } else if (c < 0 && unsigned_gt(te.cont)) {
                for (const Test& o : tests) {
                    if (o.base == te.base && unsigned_lt(o.cont) && o.is32 == te.is32) {
                        int64_t hi = (o.cont == ROF_JMP_JLT ? o.k : o.k + 1) - 1 - o.d + te.d;
                        u = u ? std::min(*u, hi) : hi;
                    }
                }
            }
            if (c < 0 && unsigned_lt(te.cont)) {
                u = 0;  // whatever the start: see below
            }
            if (!u || *u < 0 || *u > (int64_t{1} << 40) ||
                (te.is32 && (*u > INT32_MAX || k > INT32_MAX))) {
                return best;
            }
            uint64_t n = UINT64_MAX;
            if (c < 0 && unsigned_lt(te.cont)) {
                // A decreasing value kept below a limit (clang's form of
                // `n > A && n < B`: n - A - 1 < B - A - 1): it leaves
                // [0, lim) within lim / |c| + 1 steps, down or by wrapping.
                int64_t lim = te.cont == ROF_JMP_JLT ? k : k + 1;
                return static_cast<uint64_t>((lim - 1) / -c) + 2;
            }
            if (c > 0) {
                int64_t lim = -1;  // goes on while the value < lim
                if (te.cont == ROF_JMP_JLT || (known && te.cont == ROF_JMP_JSLT)) {
                    lim = k;
                } else if (te.cont == ROF_JMP_JLE || (known && te.cont == ROF_JMP_JSLE)) {
                    lim = k + 1;
                } else if (known && te.cont == ROF_JMP_JNE && *u <= k && (k - *u) % c == 0) {
                    lim = k;
                }
                if (lim >= 0) {
                    n = lim > *u ? static_cast<uint64_t>((lim - 1 - *u) / c) + 2 : 1;
                }
            } else {
                int64_t m = -c;
                int64_t lim = -2;  // goes on while the value > lim
                if (te.cont == ROF_JMP_JGT || (known && te.cont == ROF_JMP_JSGT)) {
                    lim = k;
                } else if (te.cont == ROF_JMP_JGE || (known && te.cont == ROF_JMP_JSGE)) {
                    lim = k - 1;
                } else if (known && te.cont == ROF_JMP_JNE && *u >= k && (*u - k) % m == 0) {
                    lim = k;
                }
                if (lim >= -1) {
                    n = *u > lim ? static_cast<uint64_t>((*u - lim - 1) / m) + 2 : 1;
                }
            }
            return std::min(best, n);
        };
        uint64_t best = UINT64_MAX;
        for (const Test& te : tests) {
            best = std::min(best, bound(te, tests));
        }
        // No test runs on every iteration, but each back edge has its own,
        // just before it (clang duplicates the `i++; if (i < N)` latch of a
        // loop with several `continue`s): an iteration goes on only through
        // a test that passed, so the largest of their limits bounds it.
        if (best == UINT64_MAX && at_back && !backs.empty()) {
            std::vector<std::pair<uint32_t, rof_jmp>> guard;  // per back edge
            for (uint32_t b : backs) {
                const BInsn& bi = ins_[b];
                if (bi.op() != kJa && is_cond(b)) {
                    guard.emplace_back(b, *jmp_op(bi.op()));  // `if (x < N) goto head`
                    continue;
                }
                // `if (!(x < N)) goto out; goto head`, the `goto` reached only from the test
                bool only = b > lp.head && bi.op() == kJa && is_cond(b - 1);
                for (uint32_t k = lp.head; only && k <= lp.latch; k++) {
                    if (!start_[k] || !live_[k]) {
                        continue;
                    }
                    for (uint32_t t : succ(k)) {
                        only = only && (t != b || k == b - 1);
                    }
                }
                if (!only || ins_[b - 1].off == 0) {
                    guard.clear();
                    break;
                }
                auto inv = isa::inverse(*jmp_op(ins_[b - 1].op()));
                if (!inv) {
                    guard.clear();
                    break;
                }
                guard.emplace_back(b - 1, *inv);
            }
            std::vector<Test> gt;
            for (const auto& [g, cont] : guard) {
                auto te = as_test(g, cont);
                if (!te) {
                    gt.clear();
                    break;
                }
                gt.push_back(*te);
            }
            uint64_t most = 0;
            for (const Test& te : gt) {
                most = std::max(most, bound(te, gt));
            }
            if (!gt.empty() && gt.size() == backs.size()) {
                best = most;
            }
        }
        if (best == UINT64_MAX) {
            fail(lp.latch,
                 "cannot bound this loop: bound it with a counter that steps by a "
                 "constant and a constant limit, e.g. `i < n && i < 64`");
        }
        if (best > (1u << 20)) {
            fail(lp.latch,
                 fmt::format("this loop may run {} times, more than the ISA's 2^20", best));
        }
        return static_cast<uint32_t>(best);
    }

    const Loop* loop_of_head(uint32_t h) const {
        for (const auto& lp : loops_) {
            if (lp.head == h) {
                return &lp;
            }
        }
        return nullptr;
    }

    // ---- scratch layout ----
    void layout() {
        bool cas = false;
        for (uint32_t i = 0; i < ins_.size(); i++) {
            const BInsn& in = ins_[i];
            if (start_[i] && live_[i] && in.cls() == kStx && (in.code & 0xe0) == kModeAtomic &&
                (in.imm == 0xf1 || in.imm == 0xe1)) {
                cas = true;
            }
        }
        uint64_t at = (uint64_t{user_scratch_} + 7) & ~uint64_t{7};
        if (cas) {
            cas_block_ = static_cast<uint32_t>(at);
            at += 40;
        }
        stack_top_ = at + stack_depth_;
        if (stack_top_ > (1u << 20)) {
            fail_obj("scratch and stack exceed 2^20 bytes");
        }
        if (cas && cas_block_ + 40 > 32767) {
            fail_obj("scratch too large for the atomic operand block (32 KiB)");
        }
        scratch_size_ = static_cast<uint32_t>(stack_depth_ ? stack_top_ : at);
    }

    uint64_t space_len(uint16_t s) const {
        switch (s) {
            case ROF_SPACE_ARGS:
                return args_max_;
            case ROF_SPACE_SCRATCH:
            case kStack:
                return scratch_size_;
            case ROF_SPACE_RESP:
                return resp_max_;
            default:
                return slots_.at(s).len;
        }
    }

    // ---- emission ----
    void mark(uint32_t bpf, uint32_t nslots) {
        for (uint32_t k = 0; k < nslots; k++) {
            slot_src_.push_back(bpf);
        }
    }

    // The rof space of a pointer register, or an error naming what it is.
    uint8_t space_of(uint32_t i, uint8_t reg, const char* use) const {
        const Val& v = in_[i]->r[reg];
        if (v.k != Val::Ptr) {
            fail(i, fmt::format("{} through r{}, which is {}", use, reg, what(v)));
        }
        return v.space == kStack ? uint8_t{ROF_SPACE_SCRATCH} : static_cast<uint8_t>(v.space);
    }

    uint16_t raw_space(uint32_t i, uint8_t reg) const { return in_[i]->r[reg].space; }

    // clang merges `if (c) rof_free(a, x); else rof_free(b, x);` into one
    // call whose region is a or b by the path: a region argument that is
    // different regions on the two ways from one test.  When the call at i
    // has exactly two predecessors, each reached in a straight line (no
    // other joins, no calls) from the two outcomes of one conditional jump
    // whose operands nothing on the way writes, and r1 is one region on each,
    // the test can be repeated at the call.  The region per outcome, or none.
    struct RegionSelect {
        uint32_t branch = 0;
        uint8_t taken = 0, fall = 0;
    };
    std::optional<RegionSelect> region_select(uint32_t c) const {
        std::map<uint32_t, std::vector<uint32_t>> preds;
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (start_[i] && live_[i] && in_[i]) {
                for (uint32_t t : succ(i)) {
                    preds[t].push_back(i);
                }
            }
        }
        if (preds[c].size() != 2) {
            return std::nullopt;
        }
        RegionSelect out;
        std::optional<uint32_t> branch;
        bool got_taken = false, got_fall = false;
        for (uint32_t p : preds[c]) {
            const Val r1 = step(p, *in_[p]).r[1];
            if (r1.k != Val::Ptr || r1.space >= ROF_ISA_MAX_SLOTS) {
                return std::nullopt;
            }
            std::set<uint8_t> written;
            uint32_t next = c, cur = p;
            for (int steps = 0;; steps++) {
                const BInsn& in = ins_[cur];
                bool jmp = in.cls() == kJmp || in.cls() == kJmp32;
                if (jmp && in.op() != kJa && in.op() != kCall && in.op() != kExit) {
                    break;  // the conditional jump
                }
                if (steps > 64 || (jmp && (in.op() == kCall || in.op() == kExit)) ||
                    preds[cur].size() != 1) {
                    return std::nullopt;
                }
                if (!jmp && in.cls() != kSt && in.cls() != kStx) {
                    written.insert(in.dst);
                }
                next = cur;
                cur = preds[cur][0];
            }
            const BInsn& br = ins_[cur];
            if ((branch && *branch != cur) || written.count(br.dst) ||
                (br.x() && written.count(br.src)) || !jmp_op(br.op())) {
                return std::nullopt;
            }
            branch = cur;
            bool taken = int64_t{cur} + 1 + br.off == int64_t{next};
            bool fall = cur + width(cur) == next;
            if (taken == fall) {
                return std::nullopt;  // both ways lead here: no choice
            }
            (taken ? got_taken : got_fall) = true;
            (taken ? out.taken : out.fall) = static_cast<uint8_t>(r1.space);
        }
        if (!branch || !got_taken || !got_fall) {
            return std::nullopt;
        }
        out.branch = *branch;
        return out;
    }

    Label target_label(uint32_t from, uint32_t to) {
        const Loop* lp = loop_of_head(to);
        if (lp && (from < lp->head || from > lp->latch)) {
            return prehead_.at(to);
        }
        return label_.at(to);
    }

    void emit() {
        b_.args(args_min_, args_max_).scratch(scratch_size_).resp(resp_max_);
        for (const auto& s : slots_) {
            b_.region(s.name, s.access, s.len, s.flags & ROF_SLOT_FREELIST);
        }
        for (uint32_t i = 0; i < ins_.size(); i++) {
            label_.push_back(b_.label());
        }
        for (const auto& lp : loops_) {
            prehead_[lp.head] = b_.label();
            stub_[lp.head] = b_.label();
        }
        bool r10 = false;
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (start_[i] && live_[i]) {
                const BInsn& in = ins_[i];
                if (in.dst == 10 || in.src == 10) {
                    r10 = true;
                }
            }
        }
        if (r10) {
            b_.movi(10, static_cast<int32_t>(stack_top_));
            mark(UINT32_MAX, 1);
        }
        for (uint32_t i = 0; i < ins_.size(); i++) {
            if (!start_[i] || !live_[i]) {
                continue;
            }
            if (const Loop* lp = loop_of_head(i)) {
                b_.bind(prehead_.at(i));
                b_.movi(lp->counter, 0);
                mark(i, 1);
            }
            b_.bind(label_[i]);
            insn(i);
        }
    }

    void insn(uint32_t i) {
        const BInsn& in = ins_[i];
        const State& st = *in_[i];
        if (in.dst > 10 || in.src > 10) {
            fail(i, "register beyond r10");
        }
        switch (in.cls()) {
            case kAlu:
            case kAlu64:
                return alu_insn(i, in, st);
            case kLd:
                if (in.code != (kLd | 0x18)) {
                    fail(i, "legacy packet loads are not supported");
                }
                if (in.src != 0) {
                    fail(i,
                         "map and BTF pseudo-loads are not supported (rof has no maps: use "
                         "ROF_REGION)");
                }
                if (auto it = reloc_space_.find(i); it != reloc_space_.end()) {
                    uint64_t off = in.imm64;
                    if (off > INT32_MAX) {
                        fail(i, "offset too large");
                    }
                    b_.movi(in.dst, static_cast<int32_t>(off));
                    mark(i, 1);
                } else {
                    b_.ldimm64(in.dst, in.imm64);
                    mark(i, 2);
                }
                return;
            case kLdx: {
                if ((in.code & 0xe0) != kModeMem) {
                    fail(i, "sign-extending loads are not supported");
                }
                uint8_t s = space_of(i, in.src, "load");
                b_.ld(size_bytes(in.code), in.dst, at(s, in.src, in.off));
                mark(i, 1);
                return;
            }
            case kSt:
            case kStx:
                return store_insn(i, in, st);
            case kJmp:
            case kJmp32:
                return jmp_insn(i, in, st);
            default:
                fail(i, "unknown instruction class");
        }
    }

    void alu_insn(uint32_t i, const BInsn& in, const State& st) {
        bool is32 = in.cls() == kAlu;
        if (in.dst == 10) {
            fail(i, "writes the frame pointer r10");
        }
        if (in.op() == 0xd0) {
            if (in.x()) {
                fail(i, "byte swap to big endian (htons, bswap...) is not in the ISA");
            }
            if (in.imm == 16) {
                b_.alui(ROF_ALU_AND, in.dst, 0xffff);
                mark(i, 1);
            } else if (in.imm == 32) {
                b_.alu(ROF_ALU_MOV, in.dst, in.dst, true);
                mark(i, 1);
            } else if (in.imm == 64) {
                b_.alu(ROF_ALU_MOV, in.dst, in.dst);  // a no-op that keeps the label's target
                mark(i, 1);
            } else {
                fail(i, "bad byte-order width");
            }
            return;
        }
        auto op = alu_op(in.op());
        if (!op) {
            fail(i, fmt::format("unknown ALU op 0x{:02x}", in.code));
        }
        if (in.off != 0) {
            fail(i, "signed division and sign-extending moves are not supported (cpu v4)");
        }
        const Val& d = st.r[in.dst];
        const Val s = in.x() ? st.r[in.src] : Val::num(0);
        // Other arithmetic on a pointer uses its offset as a number (the
        // data flow makes the result a number).
        if (*op == ROF_ALU_SUB && d.k == Val::Ptr && s.k == Val::Ptr && d.space != s.space) {
            fail(i, "subtracts pointers into different spaces");
        }
        if (*op == ROF_ALU_NEG) {
            b_.alui(ROF_ALU_NEG, in.dst, 0, is32);
        } else if (in.x()) {
            b_.alu(*op, in.dst, in.src, is32);
        } else {
            b_.alui(*op, in.dst, in.imm, is32);
        }
        mark(i, 1);
    }

    void store_insn(uint32_t i, const BInsn& in, const State& st) {
        unsigned n = size_bytes(in.code);
        uint8_t mode = in.code & 0xe0;
        if (mode == kModeAtomic && in.cls() == kStx) {
            return atomic_insn(i, in, st);
        }
        if (mode != kModeMem) {
            fail(i, "unsupported store mode");
        }
        uint8_t s = space_of(i, in.dst, "store");
        if (s == ROF_SPACE_ARGS) {
            fail(i, "writes the arguments, which are read-only");
        }
        uint8_t v = in.src;
        if (in.cls() == kSt) {
            b_.movi(15, in.imm);
            mark(i, 1);
            v = 15;
        }
        b_.st(n, at(s, in.dst, in.off), v);
        mark(i, 1);
    }

    void atomic_insn(uint32_t i, const BInsn& in, const State& /*st*/) {
        if (size_bytes(in.code) != 8) {
            fail(i, "32-bit atomics are not in the ISA: use 64-bit operands");
        }
        uint8_t s = space_of(i, in.dst, "atomic operation");
        if (raw_space(i, in.dst) == kStack || s >= ROF_ISA_MAX_SLOTS) {
            fail(i, "atomic operation outside a region (only regions take atomics)");
        }
        Mem target = at(s, in.dst, in.off);
        switch (in.imm) {
            case 0x00:  // lock add
                b_.faa(15, target, in.src);
                mark(i, 1);
                return;
            case 0x01:  // fetch add
                b_.faa(in.src, target, in.src);
                mark(i, 1);
                return;
            case 0xe1:    // xchg: CAS with a compare mask of 0
            case 0xf1: {  // cmpxchg: r0 is the compare value
                bool xchg = in.imm == 0xe1;
                int16_t blk = static_cast<int16_t>(cas_block_);
                b_.st(8, prog::at(ROF_SPACE_SCRATCH, blk), xchg ? in.src : uint8_t{0});
                b_.st(8, prog::at(ROF_SPACE_SCRATCH, static_cast<int16_t>(blk + 8)), in.src);
                b_.movi(15, xchg ? 0 : -1);
                b_.st(8, prog::at(ROF_SPACE_SCRATCH, static_cast<int16_t>(blk + 16)), 15);
                b_.movi(15, -1);
                b_.st(8, prog::at(ROF_SPACE_SCRATCH, static_cast<int16_t>(blk + 24)), 15);
                b_.cas(15, 8, target, prog::at(ROF_SPACE_SCRATCH, blk), ROF_CMP_EQ, true);
                b_.ld(8, xchg ? in.src : uint8_t{0},
                      prog::at(ROF_SPACE_SCRATCH, static_cast<int16_t>(blk + 32)));
                mark(i, 6);
                mark(i, 2);  // cas is wide
                mark(i, 1);
                return;
            }
            default:
                fail(i,
                     "atomic and/or/xor are not supported: use __sync_val_compare_and_swap in a "
                     "loop, or __sync_fetch_and_add");
        }
    }

    void jmp_insn(uint32_t i, const BInsn& in, const State& st) {
        bool is32 = in.cls() == kJmp32;
        if (in.op() == kExit) {
            const Val& r0 = st.r[0];
            if (r0.k == Val::Scalar && r0.known) {
                b_.exit(static_cast<int32_t>(static_cast<uint32_t>(r0.v)));
            } else {
                if (r0.k != Val::Scalar) {
                    fail(i, "returns r0, which is " + what(r0));
                }
                b_.exit_reg(0);
            }
            mark(i, 1);
            return;
        }
        if (in.op() == kCall) {
            return call_insn(i, in, st);
        }
        bool back = in.off < 0;
        uint32_t t = static_cast<uint32_t>(int64_t{i} + 1 + in.off);
        if (in.op() == kJa) {
            if (!back) {
                b_.ja(target_label(i, t));
                mark(i, 1);
                return;
            }
            const Loop* lp = loop_of_head(t);
            if (i != lp->latch) {
                b_.ja(stub_.at(t));
                mark(i, 1);
                return;
            }
            b_.bind(stub_.at(t));
            b_.loop(lp->counter, label_[t], lp->trip);
            b_.exit(kBpfLoopLimitStatus);
            mark(i, 2);
            return;
        }
        auto j = jmp_op(in.op());
        if (!j) {
            fail(i, fmt::format("unknown jump 0x{:02x}", in.code));
        }
        const Val& a = st.r[in.dst];
        if (!in.x() && a.k == Val::Ptr) {
            fail(i,
                 "compares a pointer with a constant: a pointer is an offset into its space, "
                 "so NULL checks have no meaning; compare offsets instead");
        }
        if (in.x()) {
            const Val& bv = st.r[in.src];
            if ((a.k == Val::Ptr) != (bv.k == Val::Ptr) ||
                (a.k == Val::Ptr && a.space != bv.space)) {
                fail(i, fmt::format("compares r{} ({}) with r{} ({})", in.dst, what(a), in.src,
                                    what(bv)));
            }
        }
        auto cond = [&](rof_jmp op, Label to) {
            if (in.x()) {
                b_.jmp(op, in.dst, in.src, to, is32);
            } else {
                b_.jmpi(op, in.dst, in.imm, to, is32);
            }
            mark(i, 1);
        };
        if (!back) {
            cond(*j, target_label(i, t));
            return;
        }
        const Loop* lp = loop_of_head(t);
        if (i != lp->latch) {  // an earlier back edge: a forward jump to the loop insn
            cond(*j, stub_.at(t));
            return;
        }
        Label after = target_label(i, i + 1);
        if (auto inv = isa::inverse(*j)) {
            cond(*inv, after);
        } else {
            Label go = b_.label();
            cond(*j, go);
            b_.ja(after);
            mark(i, 1);
            b_.bind(go);
        }
        b_.bind(stub_.at(t));
        b_.loop(lp->counter, label_[t], lp->trip);
        b_.exit(kBpfLoopLimitStatus);
        mark(i, 2);
    }

    uint32_t len_cap(uint32_t i, uint64_t cap) const {
        cap = std::min<uint64_t>(cap, ROF_ISA_MAX_BULK);
        if (cap == 0) {
            fail(i, "copies from or to a space of 0 bytes");
        }
        return static_cast<uint32_t>(cap);
    }

    void call_insn(uint32_t i, const BInsn& in, const State& st) {
        if (in.src != 0) {
            fail(i, "calls a function: functions other than the program must be static inline");
        }
        auto known = [&](uint8_t r) -> std::optional<uint64_t> {
            const Val& v = st.r[r];
            if (v.k == Val::Scalar && v.known) {
                return v.v;
            }
            return std::nullopt;
        };
        switch (in.imm) {
            case kHelperCopy: {
                uint8_t d = space_of(i, 1, "rof_copy's destination");
                uint8_t s = space_of(i, 2, "rof_copy's source");
                if (d == ROF_SPACE_ARGS) {
                    fail(i, "rof_copy into the arguments, which are read-only");
                }
                if (auto k = known(3)) {
                    if (*k > ROF_ISA_MAX_BULK || *k == 0) {
                        fail(i, fmt::format("rof_copy of {} bytes (1 .. 2^20)", *k));
                    }
                    b_.copy(at(d, 1, 0), at(s, 2, 0), static_cast<uint32_t>(*k), -1, 0);
                } else {
                    uint64_t cap = std::min(space_len(raw_space(i, 1)), space_len(raw_space(i, 2)));
                    b_.copy(at(d, 1, 0), at(s, 2, 0), len_cap(i, cap), 3, 0);
                }
                mark(i, 2);
                return;
            }
            case kHelperCrc64:
            case kHelperHash: {
                uint8_t s = space_of(i, 2, in.imm == kHelperHash ? "rof_hash" : "rof_crc64");
                b_.mov(0, 1);
                if (in.imm == kHelperHash) {
                    b_.hash(0, at(s, 2, 0), 3);
                } else {
                    b_.crc64(0, at(s, 2, 0), 3);
                }
                mark(i, 2);
                return;
            }
            case kHelperRespond: {
                auto k = known(2);
                if (!k) {
                    fail(i, "rof_respond's status must be a constant");
                }
                b_.respond(1, static_cast<int32_t>(static_cast<uint32_t>(*k)));
                mark(i, 1);
                return;
            }
            case kHelperAlloc:
            case kHelperFree: {
                if (st.r[1].k == Val::Mixed) {
                    if (auto sel = region_select(i)) {
                        // The test that chose the region, again, then one
                        // ALLOC or FREE per region.
                        const BInsn& br = ins_[sel->branch];
                        Label taken = b_.label(), done = b_.label();
                        bool is32 = br.cls() == kJmp32;
                        if (br.x()) {
                            b_.jmp(*jmp_op(br.op()), br.dst, br.src, taken, is32);
                        } else {
                            b_.jmpi(*jmp_op(br.op()), br.dst, br.imm, taken, is32);
                        }
                        for (uint8_t slot : {sel->fall, sel->taken}) {
                            if (in.imm == kHelperAlloc) {
                                b_.alloc(0, slot);
                            } else {
                                b_.free(slot, 2);
                            }
                            if (slot == sel->fall) {
                                b_.ja(done);
                                b_.bind(taken);
                            }
                        }
                        b_.bind(done);
                        mark(i, 4);
                        return;
                    }
                }
                uint8_t s = space_of(i, 1, in.imm == kHelperAlloc ? "rof_alloc" : "rof_free");
                if (s >= ROF_ISA_MAX_SLOTS) {
                    fail(i, "rof_alloc and rof_free take a region");
                }
                if (in.imm == kHelperAlloc) {
                    b_.alloc(0, s);
                } else {
                    b_.free(s, 2);
                }
                mark(i, 1);
                return;
            }
            case kHelperCopyBounded: {
                uint8_t d = space_of(i, 1, "rof_copy_bounded's destination");
                uint8_t t = space_of(i, 2, "rof_copy_bounded's region");
                uint8_t p = space_of(i, 3, "rof_copy_bounded's <offset, length> pair");
                if (d == ROF_SPACE_ARGS) {
                    fail(i, "rof_copy_bounded into the arguments, which are read-only");
                }
                if (auto k = known(4)) {
                    if (*k > ROF_ISA_MAX_BULK || *k == 0) {
                        fail(i, fmt::format("rof_copy_bounded of {} bytes (1 .. 2^20)", *k));
                    }
                    b_.copy_indirect(at(d, 1, 0), t, at(p, 3, 0), true, static_cast<uint32_t>(*k),
                                     -1, 0);
                } else {
                    uint64_t cap = space_len(raw_space(i, 1));
                    b_.copy_indirect(at(d, 1, 0), t, at(p, 3, 0), true, len_cap(i, cap), 4, 0);
                }
                mark(i, 2);
                return;
            }
            case kHelperCas: {
                uint8_t t = space_of(i, 1, "rof_cas's target");
                uint8_t b = space_of(i, 2, "rof_cas's operand block");
                if (raw_space(i, 1) == kStack || t >= ROF_ISA_MAX_SLOTS) {
                    fail(i, "rof_cas outside a region (only regions take atomics)");
                }
                auto w = known(3);
                auto m = known(4);
                if (!w || (*w != 8 && *w != 16 && *w != 24 && *w != 32)) {
                    fail(i, "rof_cas's width must be a constant 8, 16, 24 or 32");
                }
                if (!m || (*m & ~uint64_t{kCasOld}) >= ROF_CMP_COUNT) {
                    fail(i,
                         "rof_cas's mode must be a constant ROF_CAS_EQ .. ROF_CAS_GE, "
                         "with ROF_CAS_OLD or not");
                }
                b_.cas(0, static_cast<unsigned>(*w), at(t, 1, 0), at(b, 2, 0),
                       static_cast<rof_cmp>(*m & ~uint64_t{kCasOld}), (*m & kCasOld) != 0);
                mark(i, 2);  // cas is wide
                return;
            }
            default:
                fail(i,
                     fmt::format("calls helper {}, which rof does not have (see <rof/offload.h>)",
                                 in.imm));
        }
    }

    Elf elf_;
    BpfOptions opt_;
    uint32_t sec_ = 0;
    std::vector<BInsn> ins_;
    std::vector<bool> start_, live_;
    std::vector<SourceLoc> locs_;
    std::map<std::string, uint16_t> sym_space_;
    std::map<uint16_t, std::string> names_;
    std::map<uint32_t, uint16_t> reloc_space_;
    std::vector<Slot> slots_;
    uint32_t args_min_ = 0, args_max_ = 0, user_scratch_ = 0, resp_max_ = 0;
    std::vector<std::optional<State>> in_;
    uint32_t stack_depth_ = 0;
    uint32_t cas_block_ = 0;
    uint64_t stack_top_ = 0;
    uint32_t scratch_size_ = 0;
    std::vector<Loop> loops_;
    Builder b_;
    std::vector<Label> label_;
    std::map<uint32_t, Label> prehead_, stub_;
    std::vector<uint32_t> slot_src_;
};

}  // namespace bpf_translate

BpfResult translate_bpf(std::span<const uint8_t> object, const BpfOptions& options) {
    try {
        bpf_translate::Translator t(object, options);
        return t.run();
    } catch (const bpf_translate::Fail& f) {
        BpfResult r;
        r.error = f.msg;
        return r;
    } catch (const std::exception& e) {  // std::stoul, bad_alloc, out_of_range
        BpfResult r;
        r.error = options.object_name + ": malformed object (" + e.what() + ")";
        return r;
    }
}

Result<std::vector<uint8_t>> compile_offload(const std::string& clang, const std::string& source,
                                             const std::vector<std::string>& include_dirs,
                                             const std::vector<std::string>& defines) {
    Result<std::vector<uint8_t>> res;
    for (const auto& d : defines) {
        // -D's operand is one argument: "-DNAME" or "-DNAME=VALUE", never an option.
        if (d.empty() || !(std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_')) {
            res.error = "define \"" + d + "\": not NAME or NAME=VALUE";
            return res;
        }
    }
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / "rof-cc-XXXXXX").string();
    std::vector<char> dir(tmpl.begin(), tmpl.end());
    dir.push_back('\0');
    if (!mkdtemp(dir.data())) {
        res.error = "cannot make a temporary directory";
        return res;
    }
    fs::path tmp(dir.data());
    fs::path obj = tmp / "out.o";
    fs::path err = tmp / "clang.err";
    std::vector<std::string> argv = {clang, "-target", "bpf", "-mcpu=v3", "-O2", "-g", "-Wall"};
    for (const auto& d : include_dirs) {
        argv.push_back("-I" + d);
    }
    for (const auto& d : defines) {
        argv.push_back("-D" + d);
    }
    argv.insert(argv.end(), {"-c", source, "-o", obj.string()});
    std::vector<char*> cargv;
    for (auto& a : argv) {
        cargv.push_back(a.data());
    }
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, clang.c_str(), &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    if (rc == 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    auto slurp = [](const fs::path& p) {
        std::ifstream f(p, std::ios::binary);
        return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                                    std::istreambuf_iterator<char>());
    };
    if (rc != 0) {
        res.error = fmt::format("cannot run {}: {}", clang, std::strerror(rc));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        auto e = slurp(err);
        res.error = std::string(e.begin(), e.end());
        if (res.error.empty()) {
            res.error = clang + " failed";
        }
    } else {
        res.value = slurp(obj);
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
    return res;
}

std::string disassemble_with_source(const Program& p, const std::vector<SourceLoc>& locs) {
    // The canonical text with a comment line before the first instruction
    // (and its labels) of each C line: it assembles to the same image.
    const std::string text = disassemble(p);
    std::string out, labels, last;
    uint32_t pc = 0;
    bool body = false;
    for (size_t at = 0; at < text.size();) {
        size_t nl = text.find('\n', at);
        if (nl == std::string::npos) {
            nl = text.size();
        }
        std::string line = text.substr(at, nl - at);
        at = nl + 1;
        if (!body && !line.empty() && line[0] == '.' && line.rfind(".raw", 0) != 0) {
            out += line + "\n";  // a directive
            continue;
        }
        body = true;
        if (!line.empty() && line.back() == ':' && line[0] != '\t') {
            labels += line + "\n";
            continue;
        }
        if (pc < locs.size()) {
            std::string w = locs[pc].str();
            if (!w.empty() && w != last) {
                const std::string& t = locs[pc].text;
                size_t a = t.find_first_not_of(" \t");
                out += fmt::format("; {}: {}\n", w, a == std::string::npos ? "" : t.substr(a));
                last = w;
            }
        }
        out += labels + line + "\n";
        labels.clear();
        auto in = decode_insn(p.insns, pc);
        pc += in.ok() ? in->slots() : 1;
    }
    return out + labels;
}

}  // namespace rof::prog
