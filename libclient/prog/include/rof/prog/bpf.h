// Offloads written in C: an eBPF object from `clang -target bpf -O2 -g`
// (with <rof/offload.h>) translated to a rof program (docs/programs.md,
// "Offloads in C"; the ISA-level choices in docs/isa.md section 13).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rof/prog/program.h"
#include "rof/prog/verifier.h"

namespace rof::prog {

// A C source position, from the object's .BTF.ext line info.
struct SourceLoc {
    std::string file;  // as the compiler recorded it
    uint32_t line = 0;
    uint32_t col = 0;
    std::string text;  // the source line, when the object carries it
    // "file:line:col" ("file:line" without a column), "" when unknown
    std::string str() const;
};

// The program status of an invocation whose loop ran past the trip limit
// the translator derived (section 13 of docs/isa.md): the C loop would have
// run longer than its visible bound.
inline constexpr int32_t kBpfLoopLimitStatus = 0x7ffffff0;

struct BpfOptions {
    // The name messages use for the object when it carries no line info.
    std::string object_name = "<object>";
    // Verify the translation (with these options) before returning it.
    bool verify = true;
    VerifyOptions verify_options{};
};

struct BpfResult {
    std::optional<Program> program;  // set when translated (and verified)
    // Why not: "file:line:col: message" and the C line below it, or the
    // verifier's rejection with the C line of its instruction.
    std::string error;
    // The verifier's result when it ran (its log names C lines).
    std::optional<VerifyResult> verify;
    // Per instruction slot of the program: its C position (empty file when
    // the translator added it with no C counterpart).
    std::vector<SourceLoc> locs;
    // Per slot: the eBPF instruction (slot index) it came from, or
    // UINT32_MAX for the prologue.
    std::vector<uint32_t> bpf_insn;
    bool ok() const { return program.has_value(); }
};

// Translates an eBPF ELF object (one ROF_PROGRAM function) to a program and,
// unless options.verify is false, verifies it.  Never throws on bad input.
BpfResult translate_bpf(std::span<const uint8_t> object, const BpfOptions& options = {});

// Compiles a C offload with clang: `clang -target bpf -mcpu=v3 -O2 -g -c`,
// the include directories given as -I, each of @defines ("NAME" or
// "NAME=VALUE") as one -D argument (clang runs without a shell).  The object
// bytes, or clang's messages.
rof::prog::Result<std::vector<uint8_t>> compile_offload(
    const std::string& clang, const std::string& source,
    const std::vector<std::string>& include_dirs, const std::vector<std::string>& defines = {});

// The program's canonical text (disassemble) with each C line, as a
// `; file:line:col: text` comment, before the instructions translated from
// it, as `bpftool prog dump xlated linum`; it assembles to the same image.
std::string disassemble_with_source(const Program& p, const std::vector<SourceLoc>& locs);

}  // namespace rof::prog
