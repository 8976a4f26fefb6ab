// libFuzzer: the verifier on arbitrary instruction slots (and the image
// decoder on arbitrary bytes).  Whatever it accepts, the module's load
// check must accept too, and its log must end with the summary line.
#include "fuzz_env.h"
#include "rof/prog/asm.h"
#include "rof/prog/verifier.h"
#include "rof_exec.h"

using namespace rof::prog;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)verify_image(std::span<const uint8_t>(data, size));
    Program p = fuzz::program_from(data, size);
    for (int level = 0; level <= 2; level += 2) {
        VerifyOptions o;
        o.log_level = level;
        o.limits.strict_bounds = size & 1;
        VerifyResult r = verify(p, o);
        if (r.log.find("processed ") == std::string::npos)
            __builtin_trap();
        if (!r.ok)
            continue;
        std::vector<uint8_t> img = p.encode();
        uint32_t bad = 0;
        if (rof_exec_check_image(img.data(), img.size(), &bad))
            __builtin_trap();
        AsmResult a = assemble(disassemble(p));
        if (!a.ok() || a.program->encode() != img)
            __builtin_trap();
    }
    return 0;
}
