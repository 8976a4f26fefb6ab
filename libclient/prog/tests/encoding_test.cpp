// Pins the encoding: images of known programs keep their bytes (their tags,
// a CRC-64 of every byte), and every slot pattern decodes, re-encodes,
// prints and load-checks as it did.  A refactor of the instruction table
// must leave these digests unchanged; a deliberate encoding change updates
// them.
#include <gtest/gtest.h>

#include <random>

#include "rof/prog/builder.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

uint64_t crc(const std::string& s) {
    return rof_exec_crc64(0, s.data(), s.size());
}

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(v));
    return b;
}

TEST(Encoding, ImagesKeepTheirBytes) {
    AsmResult a = assemble(
        ".args 16, 256\n.scratch 64\n.resp 128\n.region table, rw, 4096\n"
        ".region heap, rwa, 65536, freelist\n"
        "ldimm64 r0, 0xfedcba9876543210\nadd64 r1, r2\nsub32 r1, -5\nneg64 r3\n"
        "ld16 r1, scratch[r2+2]\nst64 heap[r4-8], r1\n"
        "copy resp[r3], heap[*table[r1], bounded], r4 max 4096 -> r5\n"
        "copy table[*table[r2-16]], args[8], r6 max 8\n"
        "cas128 r2, heap[16], scratch[r3+8], ne, old\nfaa r3, heap[r1+8], r2\n"
        "alloc r4, heap\nfree heap, r4\ncrc64 r5, table[r1], r6\nhash r5, args[8], r1\n"
        "jne32 r1, -7, L\njsle r1, r2, L\nja L\nL: mov64 r9, 0\nloop r9, L, 16\n"
        "respond r3, 7\nexit -1\nexit r2\n");
    ASSERT_TRUE(a.ok()) << a.error_text();
    EXPECT_EQ(hex(a.program->tag()), "6efca3d0ecfdf088");
}

// Every opcode with a spread of field values: decode's verdict and message,
// the re-encoding, the printed text and the executor's structural check.
TEST(Encoding, SlotPatternsDecodeAsBefore) {
    Program p;
    p.slots = {Slot{"a", ROF_ACCESS_ALL, 0, 64}, Slot{"b", ROF_ACCESS_READ, 0, 64}};
    std::mt19937_64 rng(11);
    bool sparse = false;
    auto byte = [&](bool space) -> uint8_t {
        if (sparse && rng() % 8)
            return 0;
        switch (rng() % 6) {
            case 0:
            case 1:
                return 0;
            case 2:
                return static_cast<uint8_t>(rng() % 4);
            case 3:
                return space ? static_cast<uint8_t>(0x80 + rng() % 3) : 1;
            default:
                return static_cast<uint8_t>(rng());
        }
    };
    std::string dump;
    for (int i = 0; i < 40000; i++) {
        uint8_t b[24];
        sparse = i % 4 != 0;
        for (int k = 0; k < 24; k++)
            b[k] = byte(k == 4 || k == 5 || k == 12 || k == 9);
        b[0] = static_cast<uint8_t>(i < 256 * 4 ? i / 4 : rng() % 0xa0);
        if (rng() % 4)
            b[8] = ROF_OP_EXT;
        b[16] = ROF_OP_EXIT;
        p.insns.resize(3);
        std::memcpy(p.insns.data(), b, 24);
        auto in = decode_insn(p.insns, 0);
        int check = rof_exec_check_insn(p.insns.data(), 3, 0);
        dump += std::to_string(check) + " ";
        // The decoder and the module's load check state the encoding rules
        // each in its own words; they must agree on every slot pattern (a
        // jump's target, which only the module's check looks at, aside).
        bool jumps =
            in && (in->kind == Kind::Ja || in->kind == Kind::Jmp || in->kind == Kind::Loop);
        if (!jumps) {
            EXPECT_EQ(in.ok(), check == 0) << "pattern " << i << ": " << in.error;
        }
        if (!in) {
            dump += "E " + in.error + "\n";
            continue;
        }
        std::vector<rof_insn> enc;
        encode_insn(*in, enc);
        for (const rof_insn& r : enc) {
            uint64_t v;
            std::memcpy(&v, &r, 8);
            dump += hex(v) + " ";
        }
        dump += format_insn(p, 0, *in) + " " + std::to_string(regs_read(*in)) + " " +
                std::to_string(regs_written(*in)) + "\n";
    }
    EXPECT_EQ(hex(crc(dump)), "9e72d9d979378899");
    if (const char* f = std::getenv("ROF_ENCODING_DUMP")) {
        FILE* o = std::fopen(f, "w");
        if (o) {
            std::fwrite(dump.data(), 1, dump.size(), o);
            std::fclose(o);
        }
    }
}

TEST(Encoding, BuilderImagesKeepTheirBytes) {
    Builder b;
    b.args(16, 64).scratch(32).resp(64);
    uint8_t t = b.region("t", ROF_ACCESS_ALL, 256);
    uint8_t h = b.region("h", ROF_ACCESS_ALL, 4096, true);
    Label top = b.label(), out = b.label();
    b.ldimm64(1, 0x123456789abcdefull).alu(ROF_ALU_XOR, 2, 3, true).alui(ROF_ALU_NEG, 4, 9);
    b.movi(5, 0).bind(top).ld(4, 6, at(t, 2, 8)).st(2, at(ROF_SPACE_SCRATCH, -2), 6);
    b.jmp(ROF_JMP_JSET, 6, 7, out, true).jmpi(ROF_JMP_JGE, 6, -3, out).loop(5, top, 9);
    b.faa(7, at(h, 1, 16), 2).cas(8, 24, at(h, 64), at(ROF_SPACE_ARGS, 0), ROF_CMP_GE, true);
    b.copy(at(ROF_SPACE_RESP, 0), at(t, 3, 4), 32, 9, 10);
    b.copy_indirect(at(t, 1, 0), ROF_SPACE_SCRATCH, at(ROF_SPACE_ARGS, 8), true, 16);
    b.crc64(11, at(t, 0), 12).hash(11, at(ROF_SPACE_ARGS, 1, 0), 12).alloc(13, h).free(h, 13);
    b.ja(out).bind(out).exit(3).exit_reg(4).respond(5, 6);
    auto prog = b.build();
    ASSERT_TRUE(prog) << prog.error;
    EXPECT_EQ(hex(prog->tag()), "1832f8cc6293b73d");
}

}  // namespace
}  // namespace rof::prog
