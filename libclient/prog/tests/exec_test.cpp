// Semantics of every instruction on the userspace build of kmod/rof_exec.c,
// and the run-time checks that hold when the verifier is bypassed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "rof/prog/builder.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

using test::Env;
using test::must_assemble;

const char* kPrelude =
    ".args 160, 256\n.scratch 64\n.resp 64\n"
    ".region data, rwa, 256\n"
    ".region ro, r, 64\n"
    ".region heap, rwa, 1024, freelist\n";

// Assembles prelude + body, checks that the verifier accepts it, runs it.
struct Case {
    Program p;
    Env env;
    int status;
    explicit Case(const std::string& body, uint32_t args_len = 160, bool verified = true)
        : p(must_assemble(kPrelude + body)), env(p, args_len), status(0) {
        if (verified) {
            VerifyResult v = verify(p);
            EXPECT_TRUE(v.ok) << v.log;
        }
        env.freelist(2, 64, 64, 15);
    }
    int go(uint64_t budget = 100000) {
        status = env.run(p, budget);
        return status;
    }
    uint64_t r(int i) const { return env.ctx.regs[i]; }
};

uint64_t reg_after(const std::string& body, int reg) {
    Case t(body + "\texit 0\n");
    EXPECT_EQ(t.go(), ROF_ISA_OK) << rof_exec_status_name(t.status);
    return t.r(reg);
}

TEST(ExecAlu, Arith64) {
    EXPECT_EQ(reg_after("mov64 r2, 7\nadd64 r2, 5\n", 2), 12u);
    EXPECT_EQ(reg_after("mov64 r2, 7\nsub64 r2, 9\n", 2), uint64_t(-2));
    EXPECT_EQ(reg_after("mov64 r2, 7\nmul64 r2, -3\n", 2), uint64_t(-21));
    EXPECT_EQ(reg_after("mov64 r2, 100\ndiv64 r2, 7\n", 2), 14u);
    EXPECT_EQ(reg_after("mov64 r2, 100\nmod64 r2, 7\n", 2), 2u);
    EXPECT_EQ(reg_after("mov64 r2, 12\nand64 r2, 10\n", 2), 8u);
    EXPECT_EQ(reg_after("mov64 r2, 12\nor64 r2, 3\n", 2), 15u);
    EXPECT_EQ(reg_after("mov64 r2, 12\nxor64 r2, 10\n", 2), 6u);
    EXPECT_EQ(reg_after("mov64 r2, 1\nlsh64 r2, 63\n", 2), 1ull << 63);
    EXPECT_EQ(reg_after("mov64 r2, -16\nrsh64 r2, 60\n", 2), 15u);
    EXPECT_EQ(reg_after("mov64 r2, -16\narsh64 r2, 2\n", 2), uint64_t(-4));
    EXPECT_EQ(reg_after("mov64 r2, 5\nneg64 r2\n", 2), uint64_t(-5));
}

TEST(ExecAlu, Registers64) {
    EXPECT_EQ(reg_after("mov64 r2, 7\nmov64 r3, 5\nadd64 r2, r3\n", 2), 12u);
    EXPECT_EQ(reg_after("mov64 r2, 100\nmov64 r3, 7\ndiv64 r2, r3\n", 2), 14u);
    EXPECT_EQ(reg_after("mov64 r2, 3\nmov64 r3, 65\nlsh64 r2, r3\n", 2), 6u)
        << "shift counts are taken modulo 64";
    EXPECT_EQ(reg_after("mov64 r3, -1\nmov64 r2, r3\n", 2), ~0ull);
}

TEST(ExecAlu, ThirtyTwoBitZeroExtends) {
    EXPECT_EQ(reg_after("mov32 r2, -1\n", 2), 0xffffffffull);
    EXPECT_EQ(reg_after("mov64 r2, -1\n", 2), ~0ull) << "imm sign-extends";
    EXPECT_EQ(reg_after("mov64 r2, -1\nadd32 r2, 1\n", 2), 0u);
    EXPECT_EQ(reg_after("mov64 r2, -1\nadd32 r2, 0\n", 2), 0xffffffffull);
    EXPECT_EQ(reg_after("mov32 r2, -16\narsh32 r2, 2\n", 2), 0xfffffffcull);
    EXPECT_EQ(reg_after("mov64 r2, 3\nmov64 r3, 33\nlsh32 r2, r3\n", 2), 6u);
    EXPECT_EQ(reg_after("mov64 r2, 5\nneg32 r2\n", 2), 0xfffffffbull);
    EXPECT_EQ(reg_after("ldimm64 r3, 0x100000007\nmov32 r2, r3\n", 2), 7u);
    EXPECT_EQ(reg_after("mov64 r2, 7\nmul32 r2, 0x40000000\n", 2), 0xc0000000ull);
}

TEST(ExecAlu, LdImm64) {
    EXPECT_EQ(reg_after("ldimm64 r9, 0x123456789abcdef0\n", 9), 0x123456789abcdef0ull);
}

TEST(ExecAlu, DivisionByZeroRegisterFaults) {
    Case t("mov64 r2, 1\nmov64 r3, 0\ndiv64 r2, r3\nexit 0\n", 160, false);
    EXPECT_EQ(t.go(), ROF_ISA_EDIVZERO);
    EXPECT_EQ(t.env.ctx.fault_pc, 2u);
    Case u("mov64 r2, 1\nldimm64 r3, 0x100000000\nmod32 r2, r3\nexit 0\n", 160, false);
    EXPECT_EQ(u.go(), ROF_ISA_EDIVZERO) << "32-bit divisor is the low half";
}

TEST(ExecMem, LoadStoreLittleEndian) {
    Case t(
        "ldimm64 r2, 0x0807060504030201\n"
        "st64 data[8], r2\n"
        "ld8 r3, data[8]\nld16 r4, data[8]\nld32 r5, data[8]\nld64 r6, data[8]\n"
        "ld16 r7, data[13]\n"
        "st8 scratch[0], r2\nst16 scratch[8], r2\nst32 resp[4], r2\n"
        "exit 0\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(3), 0x01u);
    EXPECT_EQ(t.r(4), 0x0201u);
    EXPECT_EQ(t.r(5), 0x04030201u);
    EXPECT_EQ(t.r(6), 0x0807060504030201ull);
    EXPECT_EQ(t.r(7), 0x0706u) << "unaligned loads are fine";
    EXPECT_EQ(t.env.scratch[0], 1);
    EXPECT_EQ(t.env.scratch[8], 1);
    EXPECT_EQ(t.env.scratch[9], 2);
    EXPECT_EQ(t.env.resp[4], 1);
    EXPECT_EQ(t.env.ctx.resp_len, 8u) << "response is the high-water mark";
}

TEST(ExecMem, ArgsAndEntryRegister) {
    Case t("ld64 r2, args[8]\nexit 0\n");
    t.env.put64(t.env.args, 8, 0xfeedull);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(2), 0xfeedu);
    EXPECT_EQ(t.r(1), 160u) << "r1 holds the args length at entry";
}

TEST(ExecMem, BoundsChecksAtRunTime) {
    // data is 256 bytes: the last 8-byte word is at 248
    Case ok("ld64 r2, args[0]\nld64 r3, data[r2]\nexit 0\n");
    ok.env.put64(ok.env.args, 0, 248);
    EXPECT_EQ(ok.go(), ROF_ISA_OK);
    Case off_by_one("ld64 r2, args[0]\nld64 r3, data[r2]\nexit 0\n");
    off_by_one.env.put64(off_by_one.env.args, 0, 249);
    EXPECT_EQ(off_by_one.go(), ROF_ISA_EBOUNDS);
    Case wrap("ld64 r2, args[0]\nld64 r3, data[r2+16]\nexit 0\n");
    wrap.env.put64(wrap.env.args, 0, ~0ull - 8);
    EXPECT_EQ(wrap.go(), ROF_ISA_EBOUNDS) << "base+off wraps: no wrap-around";
    Case neg("ld64 r2, args[0]\nld64 r3, data[r2-8]\nexit 0\n");
    neg.env.put64(neg.env.args, 0, 4);
    EXPECT_EQ(neg.go(), ROF_ISA_EBOUNDS);
    Case args("mov64 r2, 12\nld64 r3, args[r2]\nexit 0\n", 16, false);
    EXPECT_EQ(args.go(), ROF_ISA_EBOUNDS) << "args is only args_len long";
}

// A program without scratch, args or resp runs with NULL buffers (the module
// passes a NULL scratch when scratch_size is 0): zero-length accesses to
// them are in bounds and must not compute an address from NULL (undefined
// behaviour in C, which the UBSan build of this test turns into a failure).
TEST(ExecMem, ZeroLengthAccessesToEmptyBuffers) {
    Program p = must_assemble(
        ".args 0, 0\n.scratch 0\n.resp 0\n.region data, rw, 8\n"
        "mov64 r2, 0\nmov64 r4, 0\n"
        "copy scratch[0], data[0], r2 max 8 -> r3\n"
        "copy data[0], scratch[0], r2 max 8\n"
        "copy resp[0], args[0], r2 max 8\n"
        "crc64 r4, scratch[0], r2\n"
        "hash r4, args[0], r2\n"
        "crc64 r4, resp[0], r2\n"
        "respond r2, 7\n");
    VerifyResult v = verify(p);
    ASSERT_TRUE(v.ok) << v.log;
    Env e(p, 0);
    ASSERT_TRUE(e.scratch.empty() && e.args.empty() && e.resp.empty());
    int st = e.run(p);
    ASSERT_EQ(st, ROF_ISA_OK) << rof_exec_status_name(st) << " at insn " << e.ctx.fault_pc;
    EXPECT_EQ(e.ctx.scratch, nullptr);
    EXPECT_EQ(e.ctx.prog_status, 7u);
    EXPECT_EQ(e.ctx.resp_len, 0u);
    EXPECT_EQ(e.ctx.bytes, 0u);
    EXPECT_EQ(e.ctx.regs[3], 0u);
    // One byte is out of bounds of an empty buffer, NULL or not.
    Program q = must_assemble(
        ".scratch 0\n.region data, rw, 8\nmov64 r2, 1\n"
        "copy scratch[0], data[0], r2 max 8\nexit 0\n");
    Env f(q, 0);
    EXPECT_EQ(f.run(q), ROF_ISA_EBOUNDS);
    EXPECT_EQ(f.ctx.fault_pc, 1u);
}

TEST(ExecMem, AccessAndSlotsAtRunTime) {
    // Bypass the verifier: the executor alone must refuse.
    Case t("mov64 r2, 1\nst64 data[0], r2\nexit 0\n");
    t.env.regions[0].access = ROF_ACCESS_READ;
    EXPECT_EQ(t.go(), ROF_ISA_EACCESS);
    Case u("ld64 r2, data[0]\nexit 0\n");
    u.env.regions[0].base = nullptr;
    EXPECT_EQ(u.go(), ROF_ISA_ESLOT);
    Case v("ld64 r2, heap[0]\nexit 0\n");
    v.env.regions.resize(2);
    EXPECT_EQ(v.go(), ROF_ISA_ESLOT) << "slot beyond the bound table";
}

TEST(ExecJump, AllConditions) {
    struct C {
        const char* op;
        int64_t a, b;
        bool taken;
    } cases[] = {
        {"jeq", 5, 5, true},    {"jeq", 5, 6, false}, {"jne", 5, 6, true},    {"jgt", -1, 1, true},
        {"jgt", 1, 1, false},   {"jge", 1, 1, true},  {"jlt", 1, -1, true},   {"jle", 2, 1, false},
        {"jsgt", -1, 1, false}, {"jsgt", 2, 1, true}, {"jsge", -1, -1, true}, {"jslt", -1, 1, true},
        {"jsle", 1, -1, false}, {"jset", 6, 4, true}, {"jset", 6, 1, false},
    };
    for (const C& c : cases) {
        for (bool reg : {false, true}) {
            std::string b = std::to_string(c.b);
            std::string body = "ldimm64 r2, " + std::to_string(c.a) + "\nldimm64 r3, " + b + "\n" +
                               c.op + " r2, " + (reg ? std::string("r3") : b) +
                               ", yes\nexit 0\nyes: exit 1\n";
            Case t(body);
            ASSERT_EQ(t.go(), ROF_ISA_OK) << body;
            EXPECT_EQ(t.env.ctx.prog_status, c.taken ? 1u : 0u) << body;
        }
    }
}

TEST(ExecJump, ThirtyTwoBitComparesLowHalf) {
    Case t("ldimm64 r2, 0x100000005\njeq32 r2, 5, yes\nexit 0\nyes: exit 1\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.env.ctx.prog_status, 1u);
    Case u("ldimm64 r2, 0x100000005\njeq r2, 5, yes\nexit 0\nyes: exit 1\n");
    ASSERT_EQ(u.go(), ROF_ISA_OK);
    EXPECT_EQ(u.env.ctx.prog_status, 0u);
    Case s("mov32 r2, -1\njslt32 r2, 0, yes\nexit 0\nyes: exit 1\n");
    ASSERT_EQ(s.go(), ROF_ISA_OK);
    EXPECT_EQ(s.env.ctx.prog_status, 1u) << "0xffffffff is -1 as s32";
    Case v("mov32 r2, -1\njslt r2, 0, yes\nexit 0\nyes: exit 1\n");
    ASSERT_EQ(v.go(), ROF_ISA_OK);
    EXPECT_EQ(v.env.ctx.prog_status, 0u) << "but positive as s64";
}

TEST(ExecLoop, RunsExactlyTripTimesFromZero) {
    Case t(
        "mov64 r2, 0\nmov64 r3, 0\ntop: add64 r2, 1\nloop r3, top, 10\n"
        "exit 0\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(2), 10u);
    EXPECT_EQ(t.r(3), 9u);
    EXPECT_EQ(t.env.ctx.executed, 2u + 20u + 1u);
}

TEST(ExecLoop, AtMostTripTimesWhateverTheStart) {
    for (int64_t start : {-1, 0, 5, 9, 10, 1000}) {
        Case t(
            "ld64 r3, args[0]\nmov64 r2, 0\ntop: add64 r2, 1\n"
            "loop r3, top, 10\nexit 0\n");
        t.env.put64(t.env.args, 0, static_cast<uint64_t>(start));
        ASSERT_EQ(t.go(), ROF_ISA_OK);
        uint64_t s = static_cast<uint64_t>(start);
        EXPECT_EQ(t.r(2), s < 9 ? 10 - s : 1) << start;
    }
}

TEST(ExecLoop, BreakLeavesEarly) {
    Case t(
        "mov64 r2, 0\nmov64 r3, 0\ntop: add64 r2, 1\njeq r2, 4, out\n"
        "loop r3, top, 100\nout: exit r2\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.env.ctx.prog_status, 4u);
}

TEST(ExecExit, StatusesAndRespond) {
    Case t("mov64 r2, 77\nexit r2\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.env.ctx.prog_status, 77u);
    Case u("mov64 r2, 0x0101\nst16 resp[0], r2\nmov64 r3, 10\nrespond r3, 3\n");
    std::memset(u.env.resp.data(), 0xee, u.env.resp.size());
    ASSERT_EQ(u.go(), ROF_ISA_OK);
    EXPECT_EQ(u.env.ctx.prog_status, 3u);
    EXPECT_EQ(u.env.ctx.resp_len, 10u);
    EXPECT_EQ(u.env.resp[1], 1);
    EXPECT_EQ(u.env.resp[2], 0) << "unwritten bytes read as zero";
    EXPECT_EQ(u.env.resp[9], 0);
    Case v("mov64 r3, 65\nrespond r3, 0\n", 160, false);
    EXPECT_EQ(v.go(), ROF_ISA_ELEN);
    EXPECT_EQ(v.env.ctx.resp_len, 0u);
}

TEST(ExecCopy, DirectAndLengthRegister) {
    Case t("mov64 r2, 5\ncopy resp[2], args[1], r2 max 8 -> r3\nexit 0\n");
    for (int i = 0; i < 16; i++)
        t.env.args[i] = static_cast<uint8_t>(i + 1);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(3), 5u);
    EXPECT_EQ(t.env.resp[2], 2);
    EXPECT_EQ(t.env.resp[6], 6);
    EXPECT_EQ(t.env.resp[7], 0);
    EXPECT_EQ(t.env.ctx.resp_len, 7u);
    Case u("mov64 r2, 9\ncopy resp[0], args[0], r2 max 8\nexit 0\n", 160, false);
    EXPECT_EQ(u.go(), ROF_ISA_ELEN);
}

TEST(ExecCopy, OverlappingIsMemmove) {
    Case t("copy data[2], data[0], 8\nexit 0\n");
    for (int i = 0; i < 10; i++)
        t.env.mem[0].data()[i] = static_cast<uint8_t>(i);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    for (int i = 0; i < 8; i++)
        EXPECT_EQ(t.env.mem[0].data()[i + 2], i);
}

TEST(ExecCopy, IndirectBothLevelsChecked) {
    Case t("copy resp[0], data[*ro[8]], 16\nexit 0\n");
    std::memcpy(t.env.mem[1].data() + 8, "\x40\0\0\0\0\0\0\0", 8);
    std::memcpy(t.env.mem[0].data() + 0x40, "indirection ok!!", 16);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(std::memcmp(t.env.resp.data(), "indirection ok!!", 16), 0);
    Case far("copy resp[0], data[*ro[8]], 16\nexit 0\n");
    far.env.set_region64(1, 8, 250);  // 250 + 16 > 256
    EXPECT_EQ(far.go(), ROF_ISA_EPTR) << "second level checked";
    Case first("mov64 r2, 60\ncopy resp[0], data[*ro[r2]], 16\nexit 0\n", 160, false);
    EXPECT_EQ(first.go(), ROF_ISA_EBOUNDS) << "first level checked";
}

TEST(ExecCopy, BoundedTakesTheStoredLength) {
    Case t("copy resp[0], data[*ro[16], bounded], 32 -> r4\nexit 0\n");
    t.env.set_region64(1, 16, 100);  // ptr
    t.env.set_region64(1, 24, 6);    // bound
    std::memcpy(t.env.mem[0].data() + 100, "abcdefghij", 10);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(4), 6u);
    EXPECT_EQ(t.env.ctx.resp_len, 6u);
    EXPECT_EQ(std::memcmp(t.env.resp.data(), "abcdef", 6), 0);
    Case cap("copy resp[0], data[*ro[16], bounded], 4 -> r4\nexit 0\n");
    cap.env.set_region64(1, 16, 100);
    cap.env.set_region64(1, 24, 6000);
    ASSERT_EQ(cap.go(), ROF_ISA_OK);
    EXPECT_EQ(cap.r(4), 4u) << "the request's length caps the stored bound";
}

TEST(ExecCopy, IndirectDestination) {
    Case t("copy data[*data[0]], args[0], 8\nexit 0\n");
    t.env.set_region64(0, 0, 128);
    t.env.put64(t.env.args, 0, 0xabcdefull);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.env.region64(0, 128), 0xabcdefull);
    Case bad("copy data[*data[0]], args[0], 8\nexit 0\n");
    bad.env.set_region64(0, 0, 1ull << 40);
    EXPECT_EQ(bad.go(), ROF_ISA_EPTR);
}

// The CAS operand block: compare, swap, compare mask, swap mask.
void cas_block(Env& e, size_t off, uint64_t c, uint64_t s, uint64_t cm, uint64_t sm) {
    e.put64(e.args, off, c);
    e.put64(e.args, off + 8, s);
    e.put64(e.args, off + 16, cm);
    e.put64(e.args, off + 24, sm);
}

TEST(ExecCas, ClassicEqual) {
    for (bool match : {true, false}) {
        Case t("cas64 r2, data[8], args[0], eq\nexit 0\n");
        t.env.set_region64(0, 8, match ? 10 : 11);
        cas_block(t.env, 0, 10, 20, ~0ull, ~0ull);
        ASSERT_EQ(t.go(), ROF_ISA_OK);
        EXPECT_EQ(t.r(2), match ? 1u : 0u);
        EXPECT_EQ(t.env.region64(0, 8), match ? 20u : 11u);
    }
}

TEST(ExecCas, ModesCompareMaskedMemoryWithOperand) {
    struct C {
        const char* mode;
        uint64_t mem, cmp;
        bool swap;
    } cases[] = {{"ne", 1, 2, true},  {"ne", 2, 2, false}, {"lt", 1, 2, true},
                 {"lt", 2, 2, false}, {"le", 2, 2, true},  {"gt", 3, 2, true},
                 {"gt", 2, 2, false}, {"ge", 2, 2, true},  {"ge", 1, 2, false}};
    for (const C& c : cases) {
        Case t(std::string("cas64 r2, data[0], args[0], ") + c.mode + "\nexit 0\n", 32);
        t.env.set_region64(0, 0, c.mem);
        cas_block(t.env, 0, c.cmp, 99, ~0ull, ~0ull);
        ASSERT_EQ(t.go(), ROF_ISA_OK);
        EXPECT_EQ(t.r(2), c.swap ? 1u : 0u) << c.mode << " " << c.mem;
        EXPECT_EQ(t.env.region64(0, 0), c.swap ? 99u : c.mem) << c.mode;
    }
}

TEST(ExecCas, MasksSelectFields) {
    // version in the low 16 bits, pointer above: swap if stored version < new
    Case t("cas64 r2, data[0], args[0], lt\nexit 0\n");
    t.env.set_region64(0, 0, (0x1234ull << 16) | 5);
    // compare: version 7; swap: new pointer 0xbeef, new version 7
    cas_block(t.env, 0, 7, (0xbeefull << 16) | 7, 0xffff, ~0ull);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(2), 1u);
    EXPECT_EQ(t.env.region64(0, 0), (0xbeefull << 16) | 7);
}

TEST(ExecCas, OldValueAndPartialSwapMask) {
    Case t("mov64 r3, 0\ncas64 r2, data[16], scratch[r3], eq, old\nexit 0\n");
    t.env.set_region64(0, 16, 0xaaaa5555ull);
    t.env.put64(t.env.scratch, 0, 0x5555);          // compare low half
    t.env.put64(t.env.scratch, 8, 0x11112222ull);   // swap
    t.env.put64(t.env.scratch, 16, 0xffff);         // compare mask
    t.env.put64(t.env.scratch, 24, 0xffff0000ull);  // swap mask: high half
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(2), 1u);
    EXPECT_EQ(t.env.region64(0, 16), 0x11115555ull);
    EXPECT_EQ(t.env.get64(t.env.scratch.data() + 32), 0xaaaa5555ull);
}

TEST(ExecCas, WideUnderLock) {
    Case t("cas256 r2, data[32], args[0], eq, old\nexit 0\n", 160, false);
    for (int i = 0; i < 4; i++) {
        t.env.set_region64(0, 32 + 8 * i, 100 + i);
        t.env.put64(t.env.args, 8 * i, 100 + i);       // compare
        t.env.put64(t.env.args, 32 + 8 * i, 200 + i);  // swap
        t.env.put64(t.env.args, 64 + 8 * i, ~0ull);    // cmask
        t.env.put64(t.env.args, 96 + 8 * i, ~0ull);    // smask
    }
    // "old" needs a writable block: args is not; the fault comes before the
    // swap, so memory is untouched
    EXPECT_EQ(t.go(), ROF_ISA_EACCESS);
    EXPECT_EQ(t.env.region64(0, 32), 100u);
    Case u("cas192 r2, data[32], args[0], gt\nexit 0\n", 160);
    // 192-bit little-endian compare: the top word decides
    u.env.set_region64(0, 32, 0);
    u.env.set_region64(0, 40, 0);
    u.env.set_region64(0, 48, 2);
    u.env.put64(u.env.args, 0, ~0ull);
    u.env.put64(u.env.args, 8, ~0ull);
    u.env.put64(u.env.args, 16, 1);
    for (int i = 0; i < 3; i++) {
        u.env.put64(u.env.args, 24 + 8 * i, 7);
        u.env.put64(u.env.args, 48 + 8 * i, ~0ull);
        u.env.put64(u.env.args, 72 + 8 * i, ~0ull);
    }
    ASSERT_EQ(u.go(), ROF_ISA_OK);
    EXPECT_EQ(u.r(2), 1u);
    EXPECT_EQ(u.env.region64(0, 48), 7u);
    Case v("cas128 r2, data[32], args[0], eq\nexit 0\n", 160);
    v.env.regions[0].lock = nullptr;
    EXPECT_EQ(v.go(), ROF_ISA_ENOLOCK);
}

TEST(ExecCas, AlignmentAndAccess) {
    Case t("mov64 r3, 4\ncas64 r2, data[r3], args[0], eq\nexit 0\n", 160, false);
    EXPECT_EQ(t.go(), ROF_ISA_EALIGN);
    Case u("cas64 r2, data[0], args[0], eq\nexit 0\n");
    u.env.regions[0].access = ROF_ACCESS_READ | ROF_ACCESS_WRITE;
    EXPECT_EQ(u.go(), ROF_ISA_EACCESS);
}

TEST(ExecFaa, AddsAndReturnsOld) {
    Case t("mov64 r2, 5\nfaa r3, data[24], r2\nfaa r4, data[24], r2\nexit 0\n");
    t.env.set_region64(0, 24, 10);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(3), 10u);
    EXPECT_EQ(t.r(4), 15u);
    EXPECT_EQ(t.env.region64(0, 24), 20u);
    Case u("mov64 r2, 5\nmov64 r5, 3\nfaa r3, data[r5], r2\nexit 0\n", 160, false);
    EXPECT_EQ(u.go(), ROF_ISA_EALIGN);
}

TEST(ExecAlloc, PopsPushesAndEmpties) {
    Case t(
        "alloc r2, heap\nalloc r3, heap\nfree heap, r2\nalloc r4, heap\n"
        "exit 0\n");
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(2), 64u);
    EXPECT_EQ(t.r(3), 128u);
    EXPECT_EQ(t.r(4), 64u) << "LIFO";
    Case e("alloc r2, heap\nexit 0\n");
    e.env.freelist(2, 64, 64, 0);
    ASSERT_EQ(e.go(), ROF_ISA_OK);
    EXPECT_EQ(e.r(2), ROF_ISA_NULL) << "empty is not a fault";
}

TEST(ExecAlloc, BadFreeAndCorruptLists) {
    Case t("mov64 r2, 70\nfree heap, r2\nexit 0\n");
    EXPECT_EQ(t.go(), ROF_ISA_EFREE) << "not on a block boundary";
    Case u("mov64 r2, 32\nfree heap, r2\nexit 0\n");
    EXPECT_EQ(u.go(), ROF_ISA_EFREE) << "before the first block";
    Case v("alloc r2, heap\nexit 0\n");
    v.env.set_region64(2, 0, 0);  // magic
    EXPECT_EQ(v.go(), ROF_ISA_EFREELIST);
    Case w("alloc r2, heap\nexit 0\n");
    w.env.set_region64(2, 32, 1000);  // nblocks beyond the region
    EXPECT_EQ(w.go(), ROF_ISA_EFREELIST);
    Case x("alloc r2, heap\nalloc r3, heap\nexit 0\n");
    x.env.set_region64(2, 64, 99);  // block 1's next index is garbage
    EXPECT_EQ(x.go(), ROF_ISA_EFREELIST);
    Case y("alloc r2, heap\nexit 0\n");
    y.env.regions[2].freelist = ROF_ISA_NULL;
    EXPECT_EQ(y.go(), ROF_ISA_EFREELIST);
}

// Programs that ALLOC a block and write its first 8 bytes, from several
// threads: a pop that reads the next index of a block another thread has
// just taken and overwritten has lost a race, not found a corrupt list.
// Only ECONTENDED (64 lost races in a row) may end a run early; at the end
// every block is back on the list but those whose FREE gave up.
TEST(ExecAlloc, ConcurrentPopsOfOverwrittenBlocksAreRaces) {
    const Program p = must_assemble(
        ".region heap, rwa, 1024, freelist\n"
        "alloc r2, heap\njeq r2, -1, empty\nmov64 r3, -1\nst64 heap[r2], r3\n"
        "free heap, r2\nexit 0\nempty: exit 1\n");
    Env env(p);
    env.freelist(0, 64, 64, 3);
    std::vector<rof_exec_op> code(ROF_EXEC_CODE_LEN(p.insns.size()));
    ASSERT_EQ(rof_exec_decode(p.insns.data(), static_cast<uint32_t>(p.insns.size()), code.data()),
              0);
    constexpr int kThreads = 4, kRuns = 20000;
    std::atomic<int> ready{0}, bad{0}, kept{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&] {
            ready++;
            while (ready.load() < kThreads) {
            }
            for (int i = 0; i < kRuns; i++) {
                rof_exec_ctx c{};
                c.insns = p.insns.data();
                c.code = code.data();
                c.insn_cnt = static_cast<uint32_t>(p.insns.size());
                c.regions = env.regions.data();
                c.region_cnt = 1;
                c.budget = 100;
                const int st = rof_exec_run(&c);
                if (st == ROF_ISA_ECONTENDED && c.fault_pc == 4)
                    kept++;  // the free gave up: the block stays taken
                else if (st != ROF_ISA_OK && st != ROF_ISA_ECONTENDED)
                    bad++;
            }
        });
    }
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(bad.load(), 0) << "runs that faulted with something else than ECONTENDED";
    rof_isa_freelist h;
    std::memcpy(&h, env.mem[0].data(), sizeof(h));
    std::vector<bool> seen(4);
    int n = 0;
    for (uint64_t i = h.head & 0xffffffff; i != 0; i = env.region64(0, 64 + (i - 1) * 64)) {
        ASSERT_LE(i, 3u);
        ASSERT_FALSE(seen[i]) << "block " << i << " twice on the list";
        seen[i] = true;
        n++;
    }
    EXPECT_EQ(n + kept.load(), 3);
}

// resp holds an earlier reply (the module's send slot is not cleared): the executor zeroes what
// a run reaches of it, so a skipped byte reads and goes out as 0, and nothing past what the
// run reached is touched.
TEST(ExecResp, WhatARunReachesIsZeroedAsItReachesIt) {
    const Program p = must_assemble(
        ".resp 256\n"
        "ld64 r2, resp[40]\n"  // a read past anything written: 0
        "mov64 r3, 7\n"
        "st64 resp[64], r3\n"  // a write past a gap: the gap reads 0
        "ld64 r4, resp[8]\n"   // inside the gap
        "copy resp[96], resp[0], 16\n"
        "add64 r2, r4\n"
        "st64 resp[120], r2\n"
        "mov64 r5, 160\n"
        "respond r5, 3\n");  // the length past the last write: zeroed
    Env env(p);
    env.resp.assign(256, 0xaa);
    ASSERT_EQ(env.run(p), ROF_ISA_OK);
    EXPECT_EQ(env.ctx.prog_status, 3u);
    ASSERT_EQ(env.ctx.resp_len, 160u);
    for (size_t i = 0; i < 160; i++) {
        const uint8_t want = i == 64 ? 7 : 0;
        ASSERT_EQ(env.resp[i], want) << "resp[" << i << "]";
    }
    for (size_t i = 160; i < 256; i++) {
        ASSERT_EQ(env.resp[i], 0xaa) << "resp[" << i << "] is past the run: left alone";
    }
}

// A COPY into resp writes its bytes over the earlier reply without zeroing them first: what it
// skips is still zeroed, and a copy from resp to resp reads what the run made of it.
TEST(ExecResp, ACopyIntoRespZeroesOnlyTheGapBeforeIt) {
    const Program p = must_assemble(
        ".resp 256\n"
        "copy resp[24], args[0], 40\n"   // [0, 24) zeroed, [24, 64) the args
        "copy resp[60], resp[16], 16\n"  // overlapping, out of resp itself
        "mov64 r5, 96\n"
        "respond r5, 0\n");
    Env env(p, 40);
    env.resp.assign(256, 0xaa);
    for (size_t i = 0; i < 40; i++) {
        env.args[i] = static_cast<uint8_t>(i + 1);
    }
    ASSERT_EQ(env.run(p), ROF_ISA_OK);
    ASSERT_EQ(env.ctx.resp_len, 96u);
    std::vector<uint8_t> want(96, 0);
    for (size_t i = 0; i < 40; i++) {
        want[24 + i] = static_cast<uint8_t>(i + 1);
    }
    std::vector<uint8_t> from(want.begin() + 16, want.begin() + 32);
    std::copy(from.begin(), from.end(), want.begin() + 60);
    EXPECT_EQ(std::vector<uint8_t>(env.resp.begin(), env.resp.begin() + 96), want);
    for (size_t i = 96; i < 256; i++) {
        ASSERT_EQ(env.resp[i], 0xaa) << "resp[" << i << "] is past the run: left alone";
    }
}

TEST(ExecHelpers, Crc64CheckValueAndChaining) {
    Case t(
        "mov64 r2, 9\nmov64 r3, 0\ncrc64 r3, args[0], r2\n"
        "mov64 r4, 4\nmov64 r5, 0\ncrc64 r5, args[0], r4\n"
        "mov64 r6, 5\ncrc64 r5, args[4], r6\nexit 0\n");
    std::memcpy(t.env.args.data(), "123456789", 9);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    EXPECT_EQ(t.r(3), 0x995dc9bbdf1939faull);
    EXPECT_EQ(t.r(5), t.r(3));
}

TEST(ExecHelpers, HashMatchesTheSpecification) {
    Case t("mov64 r2, 11\nmov64 r3, 42\nhash r3, args[0], r2\nexit 0\n");
    std::memcpy(t.env.args.data(), "hello world", 11);
    ASSERT_EQ(t.go(), ROF_ISA_OK);
    // docs/isa.md 4 (FNV-1a seeded, then fmix64), computed from the text
    // of the specification, not from the executor
    EXPECT_EQ(t.r(3), 0x65bdda9321cdcb7eull);
    Case big("ldimm64 r2, 0x100001\nmov64 r3, 0\nhash r3, args[0], r2\nexit 0\n", 160, false);
    EXPECT_EQ(big.go(), ROF_ISA_ELEN);
}

TEST(ExecBudget, InstructionAndByteBudgets) {
    Case t("mov64 r3, 0\ntop: loop r3, top, 1000\nexit 0\n");
    EXPECT_EQ(t.go(500), ROF_ISA_EBUDGET);
    EXPECT_EQ(t.env.ctx.executed, 500u);
    EXPECT_EQ(t.go(1002), ROF_ISA_OK);
    Case b("copy resp[0], args[0], 16\ncopy resp[16], args[0], 16\nexit 0\n");
    EXPECT_EQ(b.env.run(b.p, 100, 20), ROF_ISA_EBUDGET);
    EXPECT_EQ(b.env.ctx.fault_pc, 2u);
}

// ctx.executed, the `insns` of the INVOKE result and of the audit record,
// counts every instruction that started, the faulting one included; a fault
// raised before an instruction starts (instruction budget spent, control
// left the program) counts none (docs/isa.md section 7).
TEST(ExecBudget, ExecutedCountsTheFaultingInstruction) {
    Case ok("mov64 r2, 1\nexit 0\n");
    EXPECT_EQ(ok.go(), ROF_ISA_OK);
    EXPECT_EQ(ok.env.ctx.executed, 2u) << "exit counts";
    Case div("mov64 r2, 1\nmov64 r3, 0\ndiv64 r2, r3\nexit 0\n", 160, false);
    EXPECT_EQ(div.go(), ROF_ISA_EDIVZERO);
    EXPECT_EQ(div.env.ctx.fault_pc, 2u);
    EXPECT_EQ(div.env.ctx.executed, 3u) << "the division that faulted";
    Case bytes("copy resp[0], args[0], 16\ncopy resp[16], args[0], 16\nexit 0\n");
    EXPECT_EQ(bytes.env.run(bytes.p, 100, 20), ROF_ISA_EBUDGET);
    EXPECT_EQ(bytes.env.ctx.fault_pc, 2u);
    EXPECT_EQ(bytes.env.ctx.executed, 2u) << "the copy that spent the byte budget";
    Case budget("mov64 r2, 1\nmov64 r2, 2\nmov64 r2, 3\nexit 0\n");
    EXPECT_EQ(budget.go(2), ROF_ISA_EBUDGET);
    EXPECT_EQ(budget.env.ctx.fault_pc, 2u);
    EXPECT_EQ(budget.env.ctx.executed, 2u) << "the instruction past the budget never started";
    Program bad = must_assemble(std::string(kPrelude) + "mov64 r2, 1\n.raw 0xff\n");
    Env e(bad, 160);
    EXPECT_EQ(e.run(bad), ROF_ISA_EINSN);
    EXPECT_EQ(e.ctx.fault_pc, 1u);
    EXPECT_EQ(e.ctx.executed, 2u) << "the malformed instruction";
    Program off = must_assemble(std::string(kPrelude) + "mov64 r2, 1\n");
    Env f(off, 160);
    EXPECT_EQ(f.run(off), ROF_ISA_EPC);
    EXPECT_EQ(f.ctx.fault_pc, 1u);
    EXPECT_EQ(f.ctx.executed, 1u) << "nothing at the pc control left the program for";
}

TEST(ExecUnverified, GarbageAndFallingOff) {
    Program p = must_assemble(std::string(kPrelude) + "mov64 r2, 1\n.raw 0xff\n");
    Env e(p, 16);
    EXPECT_EQ(e.run(p), ROF_ISA_EINSN);
    Program q = must_assemble(std::string(kPrelude) + "mov64 r2, 1\n");
    Env f(q, 16);
    EXPECT_EQ(f.run(q), ROF_ISA_EPC);
    // a jump into the second slot of ldimm64 is refused, not executed
    Program r = must_assemble(std::string(kPrelude) + "ja L\nL: ldimm64 r2, 5\nexit 0\n");
    r.insns[0].off = 1;  // into the EXT slot
    Env g(r, 16);
    EXPECT_EQ(g.run(r), ROF_ISA_EINSN);
}

// The run reads each slot as rof_exec_decode() left it: a register-form ALU or
// JMP runs as the immediate form with the register as its operand, the
// immediate widened as its row says.  Every operation and condition, both
// widths and both forms, over edge values, against rof_exec_alu/rof_exec_jmp.
TEST(ExecDecode, EveryAluAndJumpFormRunsAsItsOperationSays) {
    const uint64_t vals[] = {0,          1,          7,          0x7fffffffULL,
                             0x80000000, 0xffffffff, 1ULL << 32, 0x8000000000000000ULL,
                             ~0ULL,      ~0ULL - 6};
    const int32_t imms[] = {0, 1, 7, -1, -7, INT32_MIN, INT32_MAX};
    const char* alus[] = ROF_ISA_ALU_NAMES;
    const char* jmps[] = ROF_ISA_JMP_NAMES;
    int runs = 0;
    for (int is32 = 0; is32 < 2; is32++) {
        for (int reg = 0; reg < 2; reg++) {
            std::vector<uint64_t> bs(std::begin(vals), std::end(vals));
            if (!reg) {
                bs.clear();
                for (int32_t i : imms) {
                    bs.push_back(static_cast<uint64_t>(static_cast<int64_t>(i)));
                }
            }
            for (uint64_t a : vals) {
                for (uint64_t b : bs) {
                    const std::string operand =
                        reg ? "r3" : std::to_string(static_cast<int64_t>(b));
                    const std::string load = "ldimm64 r2, " + std::to_string(a) + "\nldimm64 r3, " +
                                             std::to_string(b) + "\n";
                    for (uint32_t k = 0; k < ROF_ALU_COUNT; k++) {
                        if (k == ROF_ALU_NEG && (reg || b)) {
                            continue;  // one encoding: the immediate form, imm 0
                        }
                        std::string insn = std::string(alus[k]) + (is32 ? "32" : "64") + " r2";
                        if (k != ROF_ALU_NEG) {
                            insn += ", " + operand;
                        }
                        Case t(load + insn + "\nexit 0\n", 160, false);
                        u64 want = a;
                        const int err = rof_exec_alu(k, is32, &want, b);
                        ASSERT_EQ(t.go(), err ? err : ROF_ISA_OK) << insn << " on " << a;
                        if (!err) {
                            EXPECT_EQ(t.r(2), want) << insn << " on " << a;
                        }
                        runs++;
                    }
                    for (uint32_t k = 0; k < ROF_JMP_COUNT; k++) {
                        const std::string insn =
                            std::string(jmps[k]) + (is32 ? "32" : "") + " r2, " + operand + ", yes";
                        Case t(load + insn + "\nexit 0\nyes: exit 1\n", 160, false);
                        ASSERT_EQ(t.go(), ROF_ISA_OK) << insn << " on " << a;
                        EXPECT_EQ(t.env.ctx.prog_status, rof_exec_jmp(k, is32, a, b) ? 1u : 0u)
                            << insn << " on " << a;
                        runs++;
                    }
                }
            }
        }
    }
    EXPECT_GT(runs, 6000);
}

// A slot that fails its check is decoded to a fault where it stands: the
// program runs while nothing reaches it.  A run needs the decoded form.
TEST(ExecDecode, ABadSlotFaultsOnlyWhenReached) {
    Program p = must_assemble(std::string(kPrelude) + "ja L\n.raw 0xff\nL: exit 7\n");
    Env e(p, 160);
    EXPECT_EQ(e.run(p), ROF_ISA_OK);
    EXPECT_EQ(e.ctx.prog_status, 7u);
    EXPECT_EQ(e.ctx.executed, 2u);
    p.insns[0].off = 0;  // now the jump lands on it
    EXPECT_EQ(e.run(p), ROF_ISA_EINSN);
    EXPECT_EQ(e.ctx.fault_pc, 1u);
    e.ctx.code = nullptr;
    EXPECT_EQ(rof_exec_run(&e.ctx), ROF_ISA_EINVAL);
    std::vector<rof_exec_op> code(ROF_EXEC_CODE_LEN(ROF_ISA_MAX_INSNS + 1));
    EXPECT_EQ(rof_exec_decode(p.insns.data(), 0, code.data()), -EINVAL);
    EXPECT_EQ(rof_exec_decode(p.insns.data(), ROF_ISA_MAX_INSNS + 1, code.data()), -EINVAL);
}

TEST(ExecImage, LoadCheck) {
    Program p = must_assemble(std::string(kPrelude) + "exit 0\n");
    std::vector<uint8_t> img = p.encode();
    uint32_t bad = 0;
    EXPECT_EQ(rof_exec_check_image(img.data(), img.size(), &bad), 0);
    img.back() ^= 1;
    EXPECT_EQ(rof_exec_check_image(img.data(), img.size(), &bad), -EBADMSG);
    EXPECT_EQ(rof_exec_check_image(img.data(), img.size() - 1, &bad), -EINVAL);
    Program q = must_assemble(std::string(kPrelude) + "mov64 r2, 1\nst64 ro[0], r2\nexit 0\n");
    std::vector<uint8_t> qi = q.encode();
    EXPECT_EQ(rof_exec_check_image(qi.data(), qi.size(), &bad), -EACCES);
    EXPECT_EQ(bad, 1u);
}

TEST(ExecBuilder, BuildsWhatTheAssemblerBuilds) {
    Builder b;
    b.args(160, 256).scratch(64).resp(64);
    uint8_t data = b.region("data", ROF_ACCESS_ALL, 256);
    b.region("ro", ROF_ACCESS_READ, 64);
    b.region("heap", ROF_ACCESS_ALL, 1024, true);
    Label top = b.label(), out = b.label();
    b.movi(2, 0).movi(3, 0).bind(top).alui(ROF_ALU_ADD, 2, 1);
    b.jmpi(ROF_JMP_JEQ, 2, 4, out).loop(3, top, 100).bind(out);
    b.st(8, at(data, 0), 2).exit_reg(2);
    auto p = b.build();
    ASSERT_TRUE(p) << p.error;
    Program q = must_assemble(std::string(kPrelude) +
                              "mov64 r2, 0\nmov64 r3, 0\ntop: add64 r2, 1\n"
                              "jeq r2, 4, out\nloop r3, top, 100\n"
                              "out: st64 data[0], r2\nexit r2\n");
    EXPECT_EQ(p->encode(), q.encode());
    Builder bad;
    Label never = bad.label();
    bad.ja(never).exit(0);
    auto r = bad.build();
    EXPECT_FALSE(r);
    EXPECT_NE(r.error.find("never bound"), std::string::npos) << r.error;
}

}  // namespace

}  // namespace rof::prog
