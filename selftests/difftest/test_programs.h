// SPDX-License-Identifier: MIT
// Programs that more than one test against rof.ko loads (kprog-check,
// rof-session-check), and the assembling and loading both do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kprog.h"
#include "rof/prog/asm.h"

namespace kprog {

// Returns the first 8 bytes of the region "data".
inline constexpr const char* kReadWordProgram = R"(
.args 0, 8
.resp 8
.region data, rw, 4096
        ld64  r2, data[0]
        st64  resp[0], r2
        exit  0
)";

// An indirect read through a pointer the tenant stored at nodes[16]: EPTR
// when it is wild.
inline constexpr const char* kFaultProgram = R"(
.args 0, 0
.resp 8
.region nodes, r, 65536
        copy  resp[0], nodes[*nodes[16]], 8
        exit  0
)";

// Per-session scratch: a counter that survives between invocations; exits
// 7 (a program result, not an error).
inline constexpr const char* kCounterProgram = R"(
.args 0, 0
.scratch 8
.resp 8
        ld64  r2, scratch[0]
        add64 r2, 1
        st64  scratch[0], r2
        st64  resp[0], r2
        exit  7
)";

// @text assembled; throws Error with the assembler's message.
inline rof::prog::Program assemble(const std::string& text, const std::string& name) {
    rof::prog::AsmResult a = rof::prog::assemble(text, name);
    if (!a.ok()) {
        throw Error(a.error_text());
    }
    return *a.program;
}

// Loads @p into @tenant (binds: (region, freelist) per slot); the tag.
inline std::uint64_t load(Dev& dev, std::uint32_t tenant, const rof::prog::Program& p,
                          const std::vector<rof_prog_bind>& binds, std::uint64_t budget,
                          std::uint64_t byte_budget, const std::string& name) {
    std::vector<std::uint8_t> img = p.encode();
    rof_prog_load l = load_req(tenant, img, binds, budget, byte_budget, name);
    return dev.kmod().prog_load(l, img);
}

}  // namespace kprog
