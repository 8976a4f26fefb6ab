// The verifier of offload programs (docs/isa.md section 8).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rof/prog/program.h"

namespace rof::prog {

// What policy allows a tenant's programs.  Defaults are docs/isa.md §9.
struct Limits {
    uint32_t max_insns = 4096;          // instruction slots
    uint64_t max_worst_case = 1000000;  // instructions on the longest path
    uint32_t max_trip = 65536;          // trip limit of one loop
    uint32_t max_loop_depth = 4;
    uint32_t max_args = 65536 + 4096;
    uint32_t max_scratch = 65536 + 4096;
    uint32_t max_resp = 65536 + 4096;
    uint32_t max_copy = ROF_ISA_MAX_BULK;  // cap of one copy
    uint64_t max_processed = 1000000;      // verifier work
    bool strict_bounds = false;            // reject accesses not proven in bounds
};

// A region the tenant's policy lets a slot of this name bind to.
struct Grant {
    std::string slot;
    uint32_t access = 0;  // ROF_ACCESS_*
    uint64_t len = 0;     // region length, 0 when not known yet
};

struct VerifyOptions {
    Limits limits;
    // nullopt: check the program on its own (access is only checked against
    // the slot declarations), as `rofctl prog verify` does without a tenant.
    std::optional<std::vector<Grant>> grants;
    int log_level = 0;  // 0, 1 or 2
};

struct VerifyResult {
    bool ok = false;
    std::string error;  // the reason of a rejection, with insn and line
    uint32_t error_insn = UINT32_MAX;
    std::string log;          // ends with "processed N insns (limit L), ..."
    uint64_t worst_case = 0;  // instructions on the longest path
    uint64_t processed = 0;
};

VerifyResult verify(const Program& p, const VerifyOptions& opt = {});
VerifyResult verify_image(std::span<const uint8_t> image, const VerifyOptions& opt = {});

}  // namespace rof::prog
