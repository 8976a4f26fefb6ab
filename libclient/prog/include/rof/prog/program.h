// Programs in memory: the decoded instruction form shared by the
// assembler, disassembler, builder and verifier, and the image codec.
// docs/isa.md is the specification.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "uapi/rof.h"  // ROF_ACCESS_*: slot access
#include "uapi/rof_isa.h"

namespace rof::prog {

struct Slot {
    std::string name;
    uint32_t access = 0;  // ROF_ACCESS_*
    uint32_t flags = 0;   // ROF_SLOT_*
    uint64_t len = 0;
};

// A program: the header fields, the slot table and the instruction slots.
// `lines[i]` is the source line of slot i (0 when unknown), `file` the
// source name; `args_line`, `scratch_line`, `resp_line` and `slot_lines[s]`
// those of the .args, .scratch, .resp and .region directives (0 or absent
// when unknown).  These only serve messages and are not part of the image.
struct Program {
    uint32_t args_min = 0;
    uint32_t args_max = 65536;
    uint32_t scratch_size = 0;
    uint32_t resp_max = 0;
    std::vector<Slot> slots;
    std::vector<rof_insn> insns;
    std::vector<uint32_t> lines;
    std::string file;
    uint32_t args_line = 0, scratch_line = 0, resp_line = 0;
    std::vector<uint32_t> slot_lines;

    // The image bytes, tag included.
    std::vector<uint8_t> encode() const;
    uint64_t tag() const;
    // "file:line" for slot pc, or "" without source information.
    std::string where(uint32_t pc) const;
    // "file:line" for a source line, or "" for line 0.
    std::string where_line(uint32_t line) const;
    // The slot index of a region name.
    std::optional<uint32_t> find_slot(std::string_view name) const;
};

// A value, or the reason there is none: what decode_image, decode_insn
// and Builder::build return.  Like AsmResult, ok() says which; the value is
// reached as with std::optional (*r, r->).
template <typename T>
struct Result {
    std::optional<T> value;  // set on success
    std::string error;       // why not, on failure
    bool ok() const { return value.has_value(); }
    explicit operator bool() const { return ok(); }
    T& operator*() { return *value; }
    const T& operator*() const { return *value; }
    T* operator->() { return &*value; }
    const T* operator->() const { return &*value; }
};

// Parses an image; structural checks of the header and slot table only
// (the verifier does the rest).
Result<Program> decode_image(std::span<const uint8_t> image);

// A memory operand: space (ROF_SPACE_* or a slot), optional base register,
// signed displacement.
struct Mem {
    uint8_t space = 0;
    bool has_base = false;
    uint8_t base = 0;
    int16_t off = 0;
    bool operator==(const Mem&) const = default;
};

enum class Kind {
    LdImm64,
    Alu,
    Jmp,
    Ja,
    Loop,
    Ld,
    St,
    Faa,
    Crc64,
    Hash,
    Alloc,
    Free,
    Exit,
    ExitReg,
    Respond,
    Copy,
    Cas,
};

// One instruction, decoded.  Only the fields of its kind are meaningful.
struct Insn {
    Kind kind = Kind::Exit;
    uint8_t dst = 0, src = 0;
    bool is32 = false;     // ALU/JMP
    bool use_imm = false;  // ALU/JMP: immediate operand
    uint8_t sub = 0;       // enum rof_alu / rof_jmp
    int32_t imm = 0;       // ALU/JMP imm, exit/respond status, loop trip
    uint64_t imm64 = 0;    // ldimm64
    int32_t off = 0;       // jumps/loop: displacement in slots
    uint32_t size = 0;     // ld/st bytes
    Mem mem{};             // ld/st/faa/crc64/hash/cas target/copy dst
    uint8_t aux = 0;       // faa old reg, crc64/hash length reg, cas/copy out
    uint8_t slot = 0;      // alloc/free
    // copy
    Mem src_mem{};
    uint8_t src_mode = 0;  // 0 direct, 1 indirect, 2 bounded
    uint8_t src_tspace = 0;
    bool dst_indirect = false;
    bool len_reg = false;
    uint8_t len_r = 0;
    uint32_t len = 0;
    bool out = false;
    // cas
    Mem blk{};
    uint8_t width = 0;  // bytes
    uint8_t mode = 0;   // enum rof_cmp
    bool old = false;

    uint32_t slots() const {
        return (kind == Kind::LdImm64 || kind == Kind::Copy || kind == Kind::Cas) ? 2 : 1;
    }
    bool operator==(const Insn&) const = default;
};

// Decodes the instruction at pc; fails with a reason when the encoding is
// not valid ISA (unknown opcode, non-zero unused field, ...).  Jump targets
// are not checked here.
Result<Insn> decode_insn(std::span<const rof_insn> insns, uint32_t pc);

// Appends the encoding of in (1 or 2 slots).
void encode_insn(const Insn& in, std::vector<rof_insn>& out);

// Registers an instruction reads and writes, as bit masks.
uint16_t regs_read(const Insn& in);
uint16_t regs_written(const Insn& in);

const char* status_name(int status);  // enum rof_isa_status

// Lays out a free list in @region (docs/isa.md section 6): the header at
// @at, @count blocks of @block_size bytes from @first, all free, block 1 on
// top, as ROF_IOC_FREELIST_CREATE does in rof.ko.  False, and nothing
// written, when the geometry is invalid or does not fit the region.
bool lay_freelist(std::span<uint8_t> region, uint64_t at, uint64_t block_size, uint64_t first,
                  uint64_t count);

// A memory space by its .rofs name: "args", "scratch", "resp" or the slot's
// region name; nullopt for a slot the program does not declare.
std::optional<std::string> space_name(const Program& p, uint8_t space);

// ROF_ACCESS_* bits as the assembler writes them ("rwa"; a number when there
// are none or bits it does not know) or, with @words, as messages say them
// ("read,write"; "none").
std::string access_str(uint32_t access, bool words = false);

}  // namespace rof::prog
