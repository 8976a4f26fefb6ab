// The .rofs assembler and disassembler (docs/isa.md section 10).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rof/prog/program.h"

namespace rof::prog {

struct Diagnostic {
    std::string file;
    uint32_t line = 0;
    uint32_t col = 0;
    std::string message;
    // "file:line:col: message"
    std::string str() const;
};

struct AsmResult {
    std::optional<Program> program;  // set when there are no errors
    std::vector<Diagnostic> errors;
    bool ok() const { return program.has_value(); }
    // every error, one "file:line:col: message" per line
    std::string error_text() const;
};

// Assembles .rofs source.  Errors do not stop the scan of later lines, so
// one run reports them all (up to 100).
AsmResult assemble(std::string_view text, std::string_view file = "<input>");

// The canonical text of p.  Slots that do not decode, or whose operands
// cannot be named (a jump target off an instruction boundary, a slot not
// declared), come out as ".raw 0x...", so any image round-trips.
std::string disassemble(const Program& p);

// One instruction in canonical form; labels are printed as "L<index>".
std::string format_insn(const Program& p, uint32_t pc, const Insn& in);

}  // namespace rof::prog
