// Offloads in C: clang's BPF objects of tests/c/*.c translated, verified and
// run on the userspace executor; refusals name the C line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rof/prog/bpf.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

using test::Env;

// clang is a build dependency (packaging/build-deps): a build without it is
// a broken build, so these tests fail rather than skip.
std::vector<uint8_t> compile(const std::string& name) {
    std::string clang = ROF_CLANG;
    if (clang.empty()) {
        ADD_FAILURE() << "CMake found no clang: it is in packaging/build-deps";
        return {};
    }
    // A bare name is one of tests/c/; a path, any C file.
    const std::string path =
        name.find('/') == std::string::npos ? std::string(ROF_BPF_TESTS) + "/" + name : name;
    auto obj = compile_offload(clang, path, {ROF_OFFLOAD_INCLUDE});
    if (!obj.ok()) {
        ADD_FAILURE() << name << ": " << obj.error;
        return {};
    }
    return *obj;
}

BpfResult translate(const std::string& name) {
    auto obj = compile(name);
    BpfOptions o;
    o.object_name = name;
    return translate_bpf(obj, o);
}

Program must_translate(const std::string& name) {
    BpfResult r = translate(name);
    if (!r.ok()) {
        ADD_FAILURE() << r.error << "\n" << (r.verify ? r.verify->log : "");
        return Program{};
    }
    return *r.program;
}

void put64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
    std::memcpy(b.data() + off, &v, 8);
}
uint64_t get64(const std::vector<uint8_t>& b, size_t off) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, 8);
    return v;
}

TEST(Bpf, CounterIncrements) {
    Program p = must_translate("inc.c");
    ASSERT_FALSE(p.insns.empty());
    EXPECT_EQ(p.args_min, 8u);
    EXPECT_EQ(p.args_max, 8u);
    EXPECT_EQ(p.resp_max, 8u);
    ASSERT_EQ(p.slots.size(), 1u);
    EXPECT_EQ(p.slots[0].name, "counters");
    EXPECT_EQ(p.slots[0].access, uint32_t{ROF_ACCESS_READ | ROF_ACCESS_ATOMIC});
    EXPECT_EQ(p.slots[0].len, 4096u);
    Env env(p, 8);
    for (uint64_t round = 1; round <= 3; round++) {
        put64(env.args, 0, 5);
        int st = env.run(p);
        ASSERT_EQ(st, ROF_ISA_OK) << rof_exec_status_name(st);
        EXPECT_EQ(env.ctx.prog_status, 0u);
        ASSERT_EQ(env.ctx.resp_len, 8u);
        EXPECT_EQ(get64(env.resp, 0), round);
        EXPECT_EQ(env.region64(0, 5 * 8), round);
    }
    put64(env.args, 0, 512);  // out of the table: status 1, nothing written
    ASSERT_EQ(env.run(p), ROF_ISA_OK);
    EXPECT_EQ(env.ctx.prog_status, 1u);
}

class BpfLookup : public ::testing::TestWithParam<const char*> {};

// lookup.c breaks out of its loop, find.c returns from inside it (a loop
// clang lays out in pieces).
TEST_P(BpfLookup, BoundedLoop) {
    BpfResult r = translate(GetParam());
    ASSERT_TRUE(r.ok()) << r.error;
    const Program& p = *r.program;
    // The loop runs at most 64 times: the trip limit the translator derived
    // from `i < 64` is exactly that, and bounds the verifier's worst case.
    ASSERT_TRUE(r.verify);
    EXPECT_LT(r.verify->worst_case, 64u * 20u);
    std::string dump = disassemble_with_source(p, r.locs);
    EXPECT_TRUE(dump.find(", 64\n") != std::string::npos &&
                dump.find("loop r11") != std::string::npos)
        << dump;
    Env env(p, 16);
    for (uint64_t i = 0; i < 64; i++) {
        env.set_region64(0, i * 8, 1000 + i);
    }
    struct Case {
        uint64_t key, n;
        uint32_t status;
        uint64_t index;
    } cases[] = {{1000, 64, 0, 0}, {1037, 64, 0, 37}, {1063, 64, 0, 63},  {1037, 10, 1, 0},
                 {999, 64, 1, 0},  {1005, 0, 1, 0},   {1063, 1000, 0, 63}};
    for (const auto& c : cases) {
        put64(env.args, 0, c.key);
        put64(env.args, 8, c.n);
        std::fill(env.resp.begin(), env.resp.end(), 0);
        ASSERT_EQ(env.run(p), ROF_ISA_OK) << c.key << " " << c.n;
        EXPECT_EQ(env.ctx.prog_status, c.status) << c.key << " " << c.n;
        if (c.status == 0) {
            EXPECT_EQ(get64(env.resp, 0), c.index);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Bpf, BpfLookup, ::testing::Values("lookup.c", "find.c"),
                         [](const auto& info) {
                             return std::string(info.param).substr(0, std::strlen(info.param) - 2);
                         });

TEST(Bpf, StackHelpersAndRespond) {
    BpfResult r = translate("sum.c");
    ASSERT_TRUE(r.ok()) << r.error;
    const Program& p = *r.program;
    // scratch = the declared 16 bytes, then the stack (16 bytes used).
    EXPECT_GE(p.scratch_size, 32u);
    Env env(p, 24);
    put64(env.args, 0, 1);
    put64(env.args, 8, 2);
    put64(env.args, 16, 39);
    uint64_t last = 0;
    for (uint64_t call = 1; call <= 2; call++) {
        int st = env.run(p);
        ASSERT_EQ(st, ROF_ISA_OK) << rof_exec_status_name(st);
        EXPECT_EQ(env.ctx.prog_status, 7u);
        ASSERT_EQ(env.ctx.resp_len, 32u);
        EXPECT_EQ(get64(env.resp, 0), 42u);
        uint64_t buf[2] = {42, last};
        EXPECT_EQ(get64(env.resp, 8), rof_exec_hash64(0, buf, 16));
        EXPECT_EQ(get64(env.resp, 16), rof_exec_crc64(0, env.args.data(), 24));
        EXPECT_EQ(get64(env.resp, 24), call) << "scratch keeps the count across calls";
        last = 42;
    }
}

TEST(Bpf, UnsupportedConstructNamesTheLine) {
    BpfResult r = translate("bad_bswap.c");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("bad_bswap.c:9:"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("byte swap"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("__builtin_bswap64"), std::string::npos)
        << "the C line's text follows: " << r.error;
}

TEST(Bpf, LocationsMapEveryInstruction) {
    BpfResult r = translate("inc.c");
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.locs.size(), r.program->insns.size());
    ASSERT_EQ(r.program->lines.size(), r.program->insns.size());
    bool line11 = false;
    for (const auto& l : r.locs) {
        line11 |= l.line == 12 && l.file.find("inc.c") != std::string::npos;
    }
    EXPECT_TRUE(line11);
    std::string dump = disassemble_with_source(*r.program, r.locs);
    EXPECT_NE(dump.find("__sync_fetch_and_add"), std::string::npos) << dump;
    EXPECT_NE(dump.find("faa"), std::string::npos) << dump;
    AsmResult back = assemble(dump, "inc.rofs");
    ASSERT_TRUE(back.ok()) << back.error_text() << dump;
    EXPECT_EQ(back.program->encode(), r.program->encode()) << "the annotated text round-trips";
}

TEST(Bpf, AtomicsOnARegion) {
    Program p = must_translate("atomics.c");
    Env env(p, 24);
    env.set_region64(0, 10 * 8, 5);
    env.set_region64(0, 11 * 8, 6);
    env.set_region64(0, 12 * 8, 7);
    put64(env.args, 0, 10);
    put64(env.args, 8, 5);  // expected: matches, so the CAS swaps
    put64(env.args, 16, 100);
    int st = env.run(p);
    ASSERT_EQ(st, ROF_ISA_OK) << rof_exec_status_name(st);
    EXPECT_EQ(env.ctx.prog_status, 0u);
    EXPECT_EQ(get64(env.resp, 0), 5u);
    EXPECT_EQ(get64(env.resp, 8), 6u);
    EXPECT_EQ(get64(env.resp, 16), 7u);
    EXPECT_EQ(env.region64(0, 10 * 8), 100u);
    EXPECT_EQ(env.region64(0, 11 * 8), 100u);
    EXPECT_EQ(env.region64(0, 12 * 8), 107u);
    put64(env.args, 8, 5);  // expected 5, but the word is 100 now: no swap
    put64(env.args, 16, 1);
    ASSERT_EQ(env.run(p), ROF_ISA_OK);
    EXPECT_EQ(get64(env.resp, 0), 100u);
    EXPECT_EQ(env.region64(0, 10 * 8), 100u);
    EXPECT_EQ(env.region64(0, 11 * 8), 1u);
    EXPECT_EQ(env.region64(0, 12 * 8), 108u);
}

TEST(Bpf, VerifierRejectionNamesTheCLine) {
    BpfResult r = translate("oob.c");
    ASSERT_FALSE(r.ok());
    ASSERT_TRUE(r.verify) << "translated, then rejected by the verifier: " << r.error;
    EXPECT_NE(r.error.find("oob.c:10)"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("out of bounds"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("out = table[80];"), std::string::npos) << r.error;
    EXPECT_NE(r.verify->log.find("oob.c:10"), std::string::npos) << r.verify->log;
}

TEST(Bpf, UnboundedLoopNamesTheLoop) {
    BpfResult r = translate("unbounded.c");
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(r.verify) << "refused before the verifier";
    EXPECT_NE(r.error.find("unbounded.c:13:"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("cannot bound this loop"), std::string::npos) << r.error;
}

// Bounds the request sets: a start from the request, a range check.  The
// results are the C semantics' for every input (never the loop-limit status).
TEST(Bpf, LoopBoundsFromTheRequest) {
    Program p = must_translate("bounds.c");
    Env env(p, 16);
    for (uint64_t i = 0; i < 64; i++) {
        env.set_region64(0, i * 8, i * i + 1);
    }
    for (uint64_t start : {0ull, 1ull, 40ull, 63ull, 64ull, 1000ull, ~0ull}) {
        for (uint64_t n : {0ull, 10ull, 11ull, 12ull, 50ull, 99ull, 100ull, ~0ull}) {
            uint64_t sum = 0, steps = 0, m = n;
            for (uint64_t i = start; i < 64; i++) {
                sum += i * i + 1;
            }
            while (m > 10 && m < 100) {
                m -= 3;
                steps++;
            }
            put64(env.args, 0, start);
            put64(env.args, 8, n);
            int st = env.run(p);
            ASSERT_EQ(st, ROF_ISA_OK) << rof_exec_status_name(st);
            ASSERT_EQ(env.ctx.prog_status, 0u) << start << " " << n;
            EXPECT_EQ(get64(env.resp, 0), sum) << start << " " << n;
            EXPECT_EQ(get64(env.resp, 8), steps) << start << " " << n;
        }
    }
}

// Three nested loops, the outer counter spilled to the stack by clang.
TEST(Bpf, NestedLoopsWithASpilledCounter) {
    BpfResult r = translate("kv-shape.c");
    ASSERT_TRUE(r.ok()) << r.error;
    const Program& p = *r.program;
    std::string text = disassemble_with_source(p, r.locs);
    for (const char* trip : {", 8\n", ", 16\n", ", 32\n"}) {
        EXPECT_NE(text.find(trip), std::string::npos) << trip << text;
    }
    Env env(p, 16);
    put64(env.args, 0, 3);  // klen 3, voff 0; key "abc"
    std::memcpy(env.args.data() + 8, "abc", 3);
    ASSERT_EQ(env.run(p, r.verify->worst_case), ROF_ISA_OK);
    EXPECT_EQ(env.ctx.prog_status, 1u) << "an empty index: not found after 8 x 16 probes";
    put64(env.args, 0, 0);  // klen 0
    ASSERT_EQ(env.run(p, r.verify->worst_case), ROF_ISA_OK);
    EXPECT_EQ(env.ctx.prog_status, 4u);
}

// rof_cas: a 16-byte CAS, "less than" on the masked low word, with the old
// value written back into the operand block (a local: on the stack).
TEST(Bpf, EnhancedCas) {
    Program p = must_translate("cas.c");
    Env env(p);
    struct Case {
        uint64_t version, value;
        uint32_t status;
        uint64_t old_version, old_value;
    } cases[] = {{5, 50, 0, 0, 0},
                 {5, 51, 1, 5, 50},
                 {4, 40, 1, 5, 50},
                 {9, 90, 0, 5, 50},
                 {10, 100, 0, 9, 90}};
    for (const auto& c : cases) {
        put64(env.args, 0, c.version);
        put64(env.args, 8, c.value);
        ASSERT_EQ(env.run(p), ROF_ISA_OK) << c.version;
        EXPECT_EQ(env.ctx.prog_status, c.status) << c.version;
        EXPECT_EQ(get64(env.resp, 0), c.old_version) << c.version;
        EXPECT_EQ(get64(env.resp, 8), c.old_value) << c.version;
    }
    EXPECT_EQ(env.region64(0, 48), 10u);
    EXPECT_EQ(env.region64(0, 56), 100u);
}

// `if (c) rof_free(a, x); else rof_free(b, x);` is one call in clang's
// object, its region chosen by the path: the translator repeats the test.
TEST(Bpf, RegionChosenByATest) {
    Program p = must_translate("select.c");
    ASSERT_EQ(p.slots.size(), 2u);
    for (uint64_t block : {64ull + 128, 2048ull + 512, 64ull + 3 * 128, 2048ull}) {
        Env env(p);
        env.freelist(0, 64, 128, 15);   // small: 64 .. 1856
        env.freelist(1, 2048, 512, 4);  // large: 2048 .. 3584
        const auto small = env.mem[0].words, large = env.mem[1].words;
        put64(env.args, 0, block);
        ASSERT_EQ(env.run(p), ROF_ISA_OK) << block;
        // The block went back to its own list (a wrong list would be EFREE).
        EXPECT_EQ(env.mem[0].words != small, block < 2048) << block;
        EXPECT_EQ(env.mem[1].words != large, block >= 2048) << block;
    }
}

// The library's kv-put.c: clang gives each `continue` of its retry loop its
// own copy of the counter's step and test (no one test runs on every
// iteration); each back edge's own test bounds the loop, at 32 attempts
// (before, it was refused: "cannot bound this loop").
TEST(Bpf, RetryLoopWithATestBeforeEachBackEdge) {
    auto obj = compile_offload(ROF_CLANG, std::string(ROF_PROGRAMS_SRC) + "/kv-put.c",
                               {ROF_OFFLOAD_INCLUDE});
    ASSERT_TRUE(obj.ok()) << obj.error;
    BpfResult r = translate_bpf(*obj);
    ASSERT_TRUE(r.ok()) << r.error;
    std::string text = disassemble_with_source(*r.program, r.locs);
    // The outer loop (r11): 32 iterations, as kv-put.rofs's `loop r8, retry, 32`.
    const size_t at = text.find("loop r11, ");
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_EQ(text.substr(text.find(',', at + 10), 5), ", 32\n") << text;
}

// compile_offload's defines: each one -D argument (kv.h's sizes give way to them, as
// rof-kvstore --programs c sets them); anything but NAME or NAME=VALUE is refused before clang
// runs, so a define is never taken for another option.
TEST(Bpf, CompileOffloadDefines) {
    const std::string src = std::string(ROF_PROGRAMS_SRC) + "/kv-get.c";
    auto plain = compile_offload(ROF_CLANG, src, {ROF_OFFLOAD_INCLUDE});
    auto same = compile_offload(ROF_CLANG, src, {ROF_OFFLOAD_INCLUDE}, {"MASK=8191"});
    auto other = compile_offload(ROF_CLANG, src, {ROF_OFFLOAD_INCLUDE}, {"MASK=255", "UNUSED"});
    ASSERT_TRUE(plain.ok()) << plain.error;
    ASSERT_TRUE(same.ok()) << same.error;
    ASSERT_TRUE(other.ok()) << other.error;
    BpfResult a = translate_bpf(*plain), b = translate_bpf(*same), c = translate_bpf(*other);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.error << b.error << c.error;
    EXPECT_EQ(a.program->tag(), b.program->tag());
    EXPECT_NE(a.program->tag(), c.program->tag());
    for (const char* bad : {"", "-o/tmp/x", "=1", "1X=2", " MASK=1"}) {
        auto r = compile_offload("/nonexistent/clang", src, {ROF_OFFLOAD_INCLUDE}, {bad});
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error.find("not NAME or NAME=VALUE"), std::string::npos) << r.error;
    }
}

TEST(Bpf, IrreducibleLoopIsRefused) {
    BpfResult r = translate("irreducible.c");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.find("irreducible.c:"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("two entries"), std::string::npos) << r.error;
}

// Every ```c block of docs/programs.md translates and verifies.
TEST(Bpf, DocsExamplesTranslate) {
    std::ifstream in(ROF_PROGRAMS_MD);
    ASSERT_TRUE(in) << ROF_PROGRAMS_MD;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    size_t pos = 0, found = 0;
    while ((pos = doc.find("```c\n", pos)) != std::string::npos) {
        size_t start = pos + 5, end = doc.find("```", start);
        ASSERT_NE(end, std::string::npos);
        auto dir = std::filesystem::temp_directory_path() /
                   ("rof-doc-" + std::to_string(getpid()) + "-" + std::to_string(found));
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "doc.c") << doc.substr(start, end - start);
        auto obj = compile_offload(ROF_CLANG, (dir / "doc.c").string(), {ROF_OFFLOAD_INCLUDE});
        std::filesystem::remove_all(dir);
        ASSERT_TRUE(obj.ok()) << obj.error;
        BpfResult r = translate_bpf(*obj);
        EXPECT_TRUE(r.ok()) << r.error;
        found++;
        pos = end + 3;
    }
    EXPECT_GE(found, 1u);
}

TEST(Bpf, MalformedObjectsAreRefused) {
    std::vector<uint8_t> obj = compile("inc.c");
    ASSERT_FALSE(obj.empty());
    EXPECT_FALSE(translate_bpf({}).ok());
    std::vector<uint8_t> junk(100, 0x7f);
    EXPECT_NE(translate_bpf(junk).error.find("not an ELF"), std::string::npos);
    // Every truncation is refused or translated, never a crash.
    for (size_t n = 0; n < obj.size(); n += 7) {
        std::vector<uint8_t> cut(obj.begin(), obj.begin() + static_cast<long>(n));
        (void)translate_bpf(cut);
    }
    // And bit flips in the code and headers.
    for (size_t at = 0; at < obj.size(); at += 13) {
        std::vector<uint8_t> bad = obj;
        bad[at] ^= 0x5a;
        (void)translate_bpf(bad);
    }
}

// Random mutations of the code of every test object: each one is refused
// with a message, or translated into a program the verifier accepts and the
// executor runs to a status (never a crash; the sanitizer build checks the
// rest).
TEST(Bpf, MutatedCodeIsRefusedOrSafe) {
    std::mt19937_64 rng(2025);
    int translated = 0, refused = 0;
    for (const std::string& name :
         {std::string("inc.c"), std::string("lookup.c"), std::string("find.c"),
          std::string("sum.c"), std::string("atomics.c"), std::string("bounds.c"),
          std::string(ROF_PROGRAMS_SRC) + "/crc-read.c"}) {
        std::vector<uint8_t> obj = compile(name);
        ASSERT_FALSE(obj.empty());
        // The program's code: section "rof", found through the ELF header.
        uint64_t shoff;
        uint16_t shnum, shstrndx;
        std::memcpy(&shoff, obj.data() + 40, 8);
        std::memcpy(&shnum, obj.data() + 60, 2);
        std::memcpy(&shstrndx, obj.data() + 62, 2);
        uint64_t strs;
        std::memcpy(&strs, obj.data() + shoff + uint64_t{shstrndx} * 64 + 24, 8);
        uint64_t code = 0, code_len = 0;
        for (uint16_t i = 0; i < shnum; i++) {
            const uint8_t* sh = obj.data() + shoff + uint64_t{i} * 64;
            uint32_t nm;
            std::memcpy(&nm, sh, 4);
            if (std::strcmp(reinterpret_cast<const char*>(obj.data() + strs + nm), "rof") == 0) {
                std::memcpy(&code, sh + 24, 8);
                std::memcpy(&code_len, sh + 32, 8);
            }
        }
        ASSERT_GT(code_len, 0u) << name;
        for (int round = 0; round < 80; round++) {
            std::vector<uint8_t> bad = obj;
            for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; k++) {
                bad[code + rng() % code_len] = static_cast<uint8_t>(rng());
            }
            BpfResult r = translate_bpf(bad);
            if (!r.ok()) {
                EXPECT_FALSE(r.error.empty());
                refused++;
                continue;
            }
            translated++;
            Env env(*r.program, r.program->args_max);
            for (auto& b : env.args) {
                b = static_cast<uint8_t>(rng());
            }
            int st = env.run(*r.program, r.verify->worst_case);
            EXPECT_NE(st, ROF_ISA_EBUDGET) << "the verifier's worst case bounds every run";
            EXPECT_NE(st, ROF_ISA_EINSN);
            EXPECT_NE(st, ROF_ISA_EPC);
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(translated, 0);
}

}  // namespace
}  // namespace rof::prog
