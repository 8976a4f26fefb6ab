// libFuzzer: the assembler.  Any text must be accepted or refused with
// diagnostics, never crash; what it accepts must round-trip exactly
// through the disassembler, and the verifier must not crash on it.
#include <string>

#include "rof/prog/asm.h"
#include "rof/prog/verifier.h"

using namespace rof::prog;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    AsmResult a = assemble(text, "fuzz.rofs");
    if (!a.ok()) {
        if (a.errors.empty())
            __builtin_trap();  // refused without a reason
        return 0;
    }
    std::vector<uint8_t> img = a.program->encode();
    std::string canon = disassemble(*a.program);
    AsmResult b = assemble(canon, "canon.rofs");
    if (!b.ok() || b.program->encode() != img)
        __builtin_trap();
    if (disassemble(*b.program) != canon)
        __builtin_trap();
    (void)verify(*a.program);
    return 0;
}
