// The instruction table of uapi/rof_isa.h (ROF_ISA_INSNS) as the program
// toolchain reads it: the decoder, encoder, assembler, disassembler and
// builder find an instruction's row here and handle it by its form.
#pragma once

#include <iterator>
#include <optional>
#include <string>

#include "rof/prog/program.h"
#include "rof_exec.h"

namespace rof::prog::isa {

inline constexpr const char* kAlu[] = ROF_ISA_ALU_NAMES;
inline constexpr const char* kJmp[] = ROF_ISA_JMP_NAMES;
inline constexpr const char* kCmp[] = ROF_ISA_CMP_NAMES;
static_assert(std::size(kAlu) == ROF_ALU_COUNT && std::size(kJmp) == ROF_JMP_COUNT &&
              std::size(kCmp) == ROF_CMP_COUNT);

using Row = struct rof_exec_insn_info;  // the function of that name hides it

// The jump taken exactly when @j is not taken; JSET has none.
std::optional<rof_jmp> inverse(rof_jmp j);

// The decoded kind of a row's instructions.
Kind kind_of(const Row& r);
// The row that encodes in (for ALU/JMP: by width and operand).
const Row& row_of(const Insn& in);
// The assembler name of in: "add64", "jne32", "ld16", "cas128", "exit".
std::string mnemonic(const Insn& in);
// One instruction of each mnemonic, its operands empty, for the assembler.
std::vector<Insn> mnemonic_templates();

}  // namespace rof::prog::isa
