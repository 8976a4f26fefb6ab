// Generated programs: the verifier accepts them, and the executor finishes
// each within its proven bound, whatever the inputs.
#include <gtest/gtest.h>

#include <random>

#include "rof/prog/gen.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

TEST(Gen, ProgramsVerifyAndStayWithinTheirBound) {
    std::mt19937_64 rng(42);
    int ok = 0;
    for (int i = 0; i < 300; i++) {
        Program p = random_program(rng);
        VerifyResult v = verify(p);
        ASSERT_TRUE(v.ok) << v.log << disassemble(p);
        test::Env env(p, GenEnv::kArgs);
        for (auto& b : env.args)
            b = static_cast<uint8_t>(rng());
        env.freelist(1, 64, GenEnv::kHeapBlock, (GenEnv::kHeap - 64) / GenEnv::kHeapBlock);
        int st = env.run(p, v.worst_case);
        EXPECT_NE(st, ROF_ISA_EBUDGET) << "ran past the proven bound\n" << disassemble(p);
        EXPECT_LE(env.ctx.executed, v.worst_case);
        // A verified program can only fault where the verifier said a run-time
        // check remains: values, never structure.
        EXPECT_TRUE(st == ROF_ISA_OK || st == ROF_ISA_EDIVZERO || st == ROF_ISA_EBOUNDS ||
                    st == ROF_ISA_EFREE)
            << rof_exec_status_name(st) << "\n"
            << disassemble(p);
        ok += st == ROF_ISA_OK;
    }
    EXPECT_GT(ok, 150) << "most generated programs should run to exit";
}

TEST(Gen, Deterministic) {
    std::mt19937_64 a(7), b(7);
    EXPECT_EQ(random_program(a).encode(), random_program(b).encode());
}

}  // namespace
}  // namespace rof::prog
