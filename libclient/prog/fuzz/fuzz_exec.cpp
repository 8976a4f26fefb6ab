// libFuzzer: the executor.  Arbitrary slots go through the verifier; an
// accepted program must finish within its proven bound and fault only on
// run-time values.  Every input also runs unverified (and the structurally
// valid ones with a generous budget), to prove the run-time checks alone
// keep the executor inside its buffers: AddressSanitizer watches.
#include "fuzz_env.h"
#include "rof/prog/verifier.h"
#include "rof_exec.h"

using namespace rof::prog;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Program p = fuzz::program_from(data, size);
    if (p.insns.empty())
        return 0;
    test::Env env(p, 16 + (size % 113));
    fuzz::fill(env, data, size);

    VerifyResult v = verify(p);
    if (v.ok) {
        int st = env.run(p, v.worst_case);
        if (st == ROF_ISA_EBUDGET || env.ctx.executed > v.worst_case)
            __builtin_trap();  // the proven bound did not hold
        if (st == ROF_ISA_EINSN || st == ROF_ISA_EPC || st == ROF_ISA_EACCESS ||
            st == ROF_ISA_ESLOT || st == ROF_ISA_EINVAL)
            __builtin_trap();  // the verifier let a structural fault through
        if (st == ROF_ISA_OK && env.ctx.resp_len > p.resp_max)
            __builtin_trap();
        return 0;
    }
    std::vector<uint8_t> img = p.encode();
    uint32_t bad = 0;
    bool structural = rof_exec_check_image(img.data(), img.size(), &bad) == 0;
    test::Env raw(p, 16 + (size % 113));
    fuzz::fill(raw, data, size);
    int st = raw.run(p, structural ? 100000 : 2000, 1u << 16);
    if (st < 0 || st >= ROF_ISA_STATUS_COUNT)
        __builtin_trap();
    if (st == ROF_ISA_OK && raw.ctx.resp_len > raw.resp.size())
        __builtin_trap();
    return 0;
}
