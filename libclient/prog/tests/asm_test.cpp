// The .rofs assembler and disassembler: exact round trips, error messages.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "rof/prog/gen.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

// Canonical text: every instruction form, as the disassembler prints it.
const char* kCanonical =
    ".args 16, 256\n"
    ".scratch 64\n"
    ".resp 128\n"
    ".region table, rw, 4096\n"
    ".region index, r, 8192\n"
    ".region heap, rwa, 65536, freelist\n"
    "\tldimm64 r0, 0xfedcba9876543210\n"
    "\tadd64 r1, r2\n"
    "\tsub64 r1, -5\n"
    "\tmul32 r3, 7\n"
    "\tdiv64 r4, r5\n"
    "\tmod32 r4, r5\n"
    "\tand64 r6, 255\n"
    "\tor32 r6, r7\n"
    "\txor64 r8, -1\n"
    "\tlsh64 r9, 3\n"
    "\trsh32 r9, r10\n"
    "\tarsh64 r11, 63\n"
    "\tmov32 r12, -1\n"
    "\tmov64 r13, r14\n"
    "\tneg64 r15\n"
    "\tneg32 r15\n"
    "\tld8 r1, args[0]\n"
    "\tld16 r1, scratch[r2]\n"
    "\tld32 r1, table[r2+8]\n"
    "\tld64 r1, index[r3-8]\n"
    "\tst8 resp[0], r1\n"
    "\tst16 scratch[r2+2], r1\n"
    "\tst32 table[-4], r1\n"
    "\tst64 heap[r4+32767], r1\n"
    "\tcopy resp[0], table[r2+8], 64\n"
    "\tcopy resp[r3], heap[*index[r1], bounded], r4 max 4096 -> r5\n"
    "\tcopy table[*table[r2-16]], args[8], r6 max 8\n"
    "\tcopy scratch[0], heap[*index[8]], 16 -> r7\n"
    "\tcas64 r2, heap[r1], args[0], eq\n"
    "\tcas128 r2, heap[16], scratch[r3+8], ne, old\n"
    "\tcas192 r2, heap[r1+24], resp[0], lt\n"
    "\tcas256 r2, heap[-32], table[0], le\n"
    "\tcas64 r2, heap[0], args[0], gt\n"
    "\tcas64 r2, heap[0], args[0], ge\n"
    "\tfaa r3, heap[r1+8], r2\n"
    "\talloc r4, heap\n"
    "\tfree heap, r4\n"
    "\tcrc64 r5, table[r1], r6\n"
    "\thash r5, args[8], r1\n"
    "\tjeq r1, r2, L62\n"
    "\tjne32 r1, -7, L62\n"
    "\tjgt r1, 5, L62\n"
    "\tjge r1, r2, L62\n"
    "\tjlt r1, 5, L62\n"
    "\tjle32 r1, r2, L62\n"
    "\tjsgt r1, -1, L62\n"
    "\tjsge32 r1, r2, L62\n"
    "\tjslt r1, 5, L62\n"
    "\tjsle r1, r2, L62\n"
    "\tjset r1, 8, L62\n"
    "\tja L62\n"
    "L62:\n"
    "\tloop r9, L62, 16\n"
    "\trespond r3, 7\n"
    "\texit -1\n"
    "\texit r2\n"
    "\t.raw 0x00000000000000ff\n";

TEST(Asm, CanonicalTextRoundTripsExactly) {
    AsmResult a = assemble(kCanonical, "canon.rofs");
    ASSERT_TRUE(a.ok()) << a.error_text();
    EXPECT_EQ(disassemble(*a.program), kCanonical);
}

TEST(Asm, BinaryRoundTripsExactly) {
    AsmResult a = assemble(kCanonical);
    ASSERT_TRUE(a.ok()) << a.error_text();
    std::vector<uint8_t> img = a.program->encode();
    auto p = decode_image(img);
    ASSERT_TRUE(p) << p.error;
    AsmResult b = assemble(disassemble(*p));
    ASSERT_TRUE(b.ok()) << b.error_text();
    EXPECT_EQ(b.program->encode(), img);
}

TEST(Asm, GeneratedProgramsRoundTrip) {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 200; i++) {
        Program p = random_program(rng);
        std::string text = disassemble(p);
        AsmResult a = assemble(text);
        ASSERT_TRUE(a.ok()) << a.error_text() << text;
        EXPECT_EQ(a.program->encode(), p.encode()) << text;
        EXPECT_EQ(disassemble(*a.program), text);
    }
}

TEST(Asm, ArbitrarySlotsRoundTripThroughRaw) {
    std::mt19937_64 rng(2);
    for (int i = 0; i < 500; i++) {
        Program p;
        p.slots.push_back(Slot{"data", ROF_ACCESS_ALL, 0, 64});
        size_t n = 1 + rng() % 12;
        for (size_t k = 0; k < n; k++) {
            uint64_t v = rng();
            switch (rng() % 4) {  // bias towards plausible opcodes
                case 0:
                    v = (v & ~0xffull) | (rng() % 0x9b);
                    break;
                case 1:
                    v &= 0xffff00ffffffffffull;
                    break;
                default:
                    break;
            }
            rof_insn r;
            std::memcpy(&r, &v, 8);
            p.insns.push_back(r);
        }
        std::string text = disassemble(p);
        AsmResult a = assemble(text);
        ASSERT_TRUE(a.ok()) << a.error_text() << text;
        EXPECT_EQ(a.program->encode(), p.encode()) << text;
    }
}

TEST(Asm, LabelsConstantsCommentsAndSpacing) {
    AsmResult a = assemble(
        "; a comment line\n"
        ".const KEY, 8   # trailing comment\n"
        ".const NEG, -KEY\n"
        ".args KEY, 64\n"
        ".resp 16\n"
        ".region t, r, 0x40\n"
        "start:  ld64 r2,args[ KEY ]   ; spaces inside brackets\n"
        "        ld64 r3 , t[r2 - KEY]\n"
        "        jeq r3, NEG, done\n"
        "done: exit 0\n",
        "x.rofs");
    ASSERT_TRUE(a.ok()) << a.error_text();
    EXPECT_EQ(disassemble(*a.program),
              ".args 8, 64\n.scratch 0\n.resp 16\n.region t, r, 64\n"
              "\tld64 r2, args[8]\n\tld64 r3, t[r2-8]\n\tjeq r3, -8, L3\n"
              "L3:\n\texit 0\n");
    EXPECT_EQ(a.program->lines, (std::vector<uint32_t>{7, 8, 9, 10}));
    EXPECT_EQ(a.program->where(2), "x.rofs:9");
}

struct ErrCase {
    const char* text;
    const char* msg;  // the whole first diagnostic
};

const ErrCase kErrCases[] = {
    {"exit 0\nfoo r1\n", "e.rofs:2:1: unknown mnemonic 'foo'"},
    {"mov64 r16, 1\nexit 0\n", "e.rofs:1:7: no register 'r16': registers are r0..r15"},
    {"mov64 r1 1\nexit 0\n", "e.rofs:1:10: expected ',', found '1'"},
    {"ld64 r1, nowhere[0]\nexit 0\n",
     "e.rofs:1:10: unknown region 'nowhere' (declare it with .region first)"},
    {"ld64 r1, args[40000]\nexit 0\n", "e.rofs:1:15: offset 40000 out of range -32768..32767"},
    {"mov64 r1, 0x80000000\nexit 0\n",
     "e.rofs:1:11: immediate 2147483648 out of range for a 64-bit operation "
     "(a sign-extended 32-bit value); use ldimm64"},
    {"mov32 r1, 0x100000000\nexit 0\n",
     "e.rofs:1:11: immediate 4294967296 does not fit in 32 bits"},
    {"ja nowhere\nexit 0\n", "e.rofs:1:4: undefined label 'nowhere'"},
    {"a: exit 0\na: exit 1\n", "e.rofs:2:1: label 'a' already defined on line 1"},
    {".region args, r, 8\nexit 0\n", "e.rofs:1:9: 'args' is reserved and cannot name a region"},
    {".region t, rwx, 8\nexit 0\n", "e.rofs:1:12: access 'rwx': use each of r, w, a at most once"},
    {".region t, r, 8\n.region t, r, 8\nexit 0\n", "e.rofs:2:9: region 't' already declared"},
    {"copy args[0], args[8], 8\nexit 0\n",
     "e.rofs:1:6: args is read-only and cannot be a copy destination"},
    {".region t, rw, 8\ncopy t[*resp[0]], args[8], 8\nexit 0\n",
     "e.rofs:2:9: an indirect destination reads its pointer from its own "
     "space: write 'x[*x[...]]'"},
    {"faa r1, args[0], r2\nexit 0\n", "e.rofs:1:9: faa needs a region, not args, scratch or resp"},
    {".region t, rwa, 64\ncas64 r1, t[0], args[0], maybe\nexit 0\n",
     "e.rofs:2:26: expected a compare mode (eq ne lt le gt ge), found 'maybe'"},
    {"mov64 r1, 12abc\n", "e.rofs:1:11: malformed number '12a'"},
    {"mov64 r1, 99999999999999999999\n", "e.rofs:1:11: number does not fit in 64 bits"},
    {"mov64 r1, $\n", "e.rofs:1:11: unexpected character '$'"},
    {".bogus 1\nexit 0\n", "e.rofs:1:1: unknown directive '.bogus'"},
    {"exit 0 0\n", "e.rofs:1:8: unexpected '0' after the operands"},
    {"mov64 r1, UNDEF\nexit 0\n", "e.rofs:1:11: unknown constant 'UNDEF'"},
    {".args 10, 5\nexit 0\n", "e.rofs:1:1: args minimum is above the maximum"},
    {"copy resp[0], args[0], r1\nexit 0\n",
     "e.rofs:1:26: expected 'max CAP' after a length register at end of "
     "line"},
    {"; only a comment\n", "e.rofs:1:1: program has no instructions"},
};

// Each error names file, line and column; the test is named by the message.
class AsmErrors : public ::testing::TestWithParam<size_t> {};

TEST_P(AsmErrors, NameFileLineAndColumn) {
    const ErrCase& c = kErrCases[GetParam()];
    AsmResult a = assemble(c.text, "e.rofs");
    ASSERT_FALSE(a.ok()) << c.text;
    ASSERT_FALSE(a.errors.empty());
    EXPECT_EQ(a.errors[0].str(), c.msg) << c.text;
}

INSTANTIATE_TEST_SUITE_P(Asm, AsmErrors, ::testing::Range(size_t{0}, std::size(kErrCases)),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                             return test::case_name(
                                 [](size_t k) {
                                     // the message without "e.rofs:L:C: "
                                     std::string_view m = kErrCases[k].msg;
                                     return m.substr(m.find(": ") + 2);
                                 },
                                 i.param);
                         });

TEST(Asm, AllErrorsAreReported) {
    AsmResult a = assemble("foo\nbar\nexit 0\nbaz r1\n", "m.rofs");
    ASSERT_EQ(a.errors.size(), 3u);
    EXPECT_EQ(a.error_text(),
              "m.rofs:1:1: unknown mnemonic 'foo'\n"
              "m.rofs:2:1: unknown mnemonic 'bar'\n"
              "m.rofs:4:1: unknown mnemonic 'baz'\n");
}

TEST(Asm, ImageCodecRefusesDamage) {
    AsmResult a = assemble(".region t, r, 8\nexit 0\n");
    ASSERT_TRUE(a.ok());
    std::vector<uint8_t> img = a.program->encode();
    EXPECT_TRUE(decode_image(img));
    auto bad = img;
    bad[4] = 2;  // version
    auto r = decode_image(bad);
    EXPECT_FALSE(r);
    EXPECT_NE(r.error.find("unsupported ISA version 2"), std::string::npos) << r.error;
    bad = img;
    bad[64 + 31] = 'x';  // slot name no longer NUL-terminated
    EXPECT_FALSE(decode_image(bad));
    bad = img;
    bad.resize(10);
    r = decode_image(bad);
    EXPECT_FALSE(r);
    EXPECT_NE(r.error.find("shorter than its 64-byte header"), std::string::npos);
}

}  // namespace
}  // namespace rof::prog

namespace rof::prog {
namespace {

// Every complete program in docs/isa.md (a ``` block starting with .args)
// assembles and passes the verifier: the specification's examples work.
TEST(Asm, SpecificationExamplesVerify) {
    std::ifstream in(ROF_ISA_MD);
    ASSERT_TRUE(in) << "cannot open " << ROF_ISA_MD;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string doc = ss.str();
    size_t pos = 0, found = 0;
    while ((pos = doc.find("```\n.args", pos)) != std::string::npos) {
        size_t start = pos + 4, end = doc.find("```", start);
        ASSERT_NE(end, std::string::npos);
        std::string text = doc.substr(start, end - start);
        AsmResult a = assemble(text, "isa.md");
        ASSERT_TRUE(a.ok()) << a.error_text() << text;
        VerifyOptions o;
        o.log_level = 1;
        VerifyResult r = verify(*a.program, o);
        EXPECT_TRUE(r.ok) << r.log << text;
        found++;
        pos = end + 3;
    }
    EXPECT_GE(found, 5u);
}

}  // namespace
}  // namespace rof::prog
