// The verifier, table-driven in the style of the kernel's test_verifier:
// each case is a program, ACCEPT or REJECT, and a substring the log must
// contain.  Programs are assembled after this prelude (lines 1-7):
//   slot 0 table rw 64 bytes, 1 ro r 64, 2 at rwa 64, 3 heap rwa 4096 +
//   free list; args 16..64 bytes, scratch 64, resp 64.
#include <gtest/gtest.h>

#include "rof/prog/builder.h"
#include "tests/harness.h"

namespace rof::prog {
namespace {

const char* kPrelude =
    ".args 16, 64\n"
    ".scratch 64\n"
    ".resp 64\n"
    ".region table, rw, 64\n"
    ".region ro, r, 64\n"
    ".region at, rwa, 64\n"
    ".region heap, rwa, 4096, freelist\n";

enum Opt : unsigned {
    NONE = 0,
    STRICT = 1u << 0,     // strict_bounds
    L1 = 1u << 1,         // log level 1
    L2 = 1u << 2,         // log level 2
    NOPRE = 1u << 3,      // no prelude
    LIM_INSNS = 1u << 4,  // max_insns 4
    LIM_TRIP = 1u << 5,   // max_trip 10
    LIM_DEPTH = 1u << 6,  // max_loop_depth 1
    LIM_W = 1u << 7,      // max_worst_case 100
    LIM_PROC = 1u << 8,   // max_processed 5
    LIM_COPY = 1u << 9,   // max_copy 32
    G_OK = 1u << 10,      // grants: everything as declared
    G_RO = 1u << 11,      // grants: table read-only
    G_MISS = 1u << 12,    // grants: heap missing
    G_SHORT = 1u << 13,   // grants: table region 32 bytes
};

enum Result { ACCEPT, REJECT };

struct VCase {
    const char* name;
    const char* text;
    Result result;
    const char* msg;  // substring of the log
    unsigned opt;
};

// clang-format off
const VCase kCases[] = {
// ---- structure and control flow ----
{"minimal", "exit 0\n", ACCEPT, "processed 2 insns (limit 1000000), worst-case path 1", NONE},
{"exit status from r1", "exit r1\n", ACCEPT, "worst-case path 1", NONE},
{"respond", "mov64 r2, 8\nrespond r2, 0\n", ACCEPT, "worst-case path 2", NONE},
{"fall off the end", "mov64 r2, 1\n", REJECT, "insn 0 (test.rofs:8): falls through past the end", NONE},
{"conditional at the end falls through", "jeq r1, 0, L\nL: jeq r1, 1, M\nM: mov64 r2, 1\n", REJECT, "falls through past the end", NONE},
{"ja at the end is fine", "ja L\nL: exit 0\n", ACCEPT, "", NONE},
{"unreachable after exit", "exit 0\nexit 1\n", REJECT, "insn 1 (test.rofs:9): unreachable instruction", NONE},
{"unreachable skipped by ja", "ja L\nmov64 r2, 1\nL: exit 0\n", REJECT, "insn 1 (test.rofs:9): unreachable", NONE},
{"both branch arms reachable", "jeq r1, 0, A\nexit 1\nA: exit 0\n", ACCEPT, "", NONE},
{"backward jeq", "L: mov64 r2, 1\njeq r2, 1, L\nexit 0\n", REJECT, "only loop may jump backwards", NONE},
{"backward ja", "mov64 r2, 1\nL: add64 r2, 1\nja L\n", REJECT, "only loop may jump backwards", NONE},
{"jump past the end", "mov64 r2, 1\n.raw 0x640160\nexit 0\n", REJECT, "is outside the program", NONE},
{"ja past the end", ".raw 0x5000d\nexit 0\n", REJECT, "jump to insn 6 is outside the program", NONE},
{"jump into the middle of ldimm64", ".raw 0x20160\nexit 0\nldimm64 r2, 5\nexit 0\n", REJECT, "lands in the middle of a wide instruction", NONE},
{"loop into the middle of ldimm64", "ldimm64 r2, 1\nmov64 r3, 0\n.raw 0x4fffd030c\nexit 0\n", REJECT, "lands in the middle of a wide instruction", NONE},
{"jump over a wide instruction", "jeq r1, 0, L\nldimm64 r2, 5\nL: exit 0\n", ACCEPT, "", NONE},
{"unknown opcode", ".raw 0xff\n", REJECT, "unknown opcode 0xff", NONE},
{"unknown alu sub-op", ".raw 0x22d\nexit 0\n", REJECT, "unknown opcode 0x2d", NONE},
{"EXT as an instruction", ".raw 0x0\nexit 0\n", REJECT, "opcode 0x00 is the second slot", NONE},
{"wide truncated by the end", "exit 0\n.raw 0x201\n", REJECT, "truncated by the end of the program", NONE},
{"wide second slot not EXT", ".raw 0x201\n.raw 0x9\nexit 0\n", REJECT, "second slot of a wide instruction must start with opcode 0x00", NONE},
{"unused src field set", ".raw 0x50000122b\nexit 0\n", REJECT, "alu src register with an immediate must be 0", NONE},
{"exit with register fields", ".raw 0x109\n", REJECT, "exit register fields must be 0", NONE},
{"memory reference reserved bits", ".raw 0x28000000213\nexit 0\n", REJECT, "reserved bits set in memory reference", NONE},
{"invalid address space", ".raw 0x9000000213\nexit 0\n", REJECT, "invalid address space 0x90", NONE},
{"base field without a base", ".raw 0x8000003213\nexit 0\n", REJECT, "base register field must be 0 without a base register", NONE},
{"cas width 12", "mov64 r2, 0\n.raw 0xc000200002003\n.raw 0x8000000000\nexit 0\n", REJECT, "cas width 12 is not 8, 16, 24 or 32 bytes", NONE},
{"copy source mode 3", ".raw 0xc808200000002\n.raw 0x800000000\nexit 0\n", REJECT, "copy source mode 3 is invalid", NONE},
{"faa on scratch", "mov64 r1, 1\n.raw 0x208100001004\nexit 0\n", REJECT, "faa target must be a region slot", NONE},
{"too many slots", "mov64 r2, 1\nmov64 r2, 2\nldimm64 r3, 4\nexit 0\n", REJECT, "has 5 instruction slots, limit 4", LIM_INSNS},
{"at the slot limit", "mov64 r2, 1\nldimm64 r3, 4\nexit 0\n", ACCEPT, "", LIM_INSNS},

// ---- registers ----
{"uninitialised r0", "add64 r0, 1\nexit 0\n", REJECT, "reads r0, which is not initialised", NONE},
{"mov does not read its destination", "mov64 r0, 1\nexit r0\n", ACCEPT, "", NONE},
{"mov32 does not read its destination", "mov32 r9, 1\nexit r9\n", ACCEPT, "", NONE},
{"uninitialised on one path", "jeq r1, 20, L\nmov64 r2, 1\nL: exit r2\n", REJECT, "insn 2 (test.rofs:10): reads r2, which is not initialised on every path", NONE},
{"initialised on both paths", "mov64 r2, 0\njeq r1, 0, L\nmov64 r2, 1\nL: exit r2\n", ACCEPT, "", NONE},
{"neg reads its operand", "neg64 r3\nexit 0\n", REJECT, "reads r3", NONE},
{"store of an uninitialised value", "st64 table[0], r4\nexit 0\n", REJECT, "reads r4", NONE},
{"uninitialised base", "ld64 r2, table[r5]\nexit 0\n", REJECT, "reads r5", NONE},
{"uninitialised jump operand", "jeq r1, r6, L\nL: exit 0\n", REJECT, "reads r6", NONE},
{"uninitialised copy length", "copy resp[0], table[0], r7 max 8\nexit 0\n", REJECT, "reads r7", NONE},
{"crc64 reads its accumulator", "mov64 r2, 8\ncrc64 r3, table[0], r2\nexit 0\n", REJECT, "reads r3", NONE},
{"hash reads its length", "mov64 r3, 0\nhash r3, table[0], r8\nexit 0\n", REJECT, "reads r8", NONE},
{"uninitialised loop counter", "L: loop r4, L, 3\nexit 0\n", REJECT, "reads r4", NONE},
{"load initialises", "ld64 r2, table[0]\nexit r2\n", ACCEPT, "", NONE},
{"alloc initialises", "alloc r2, heap\nexit r2\n", ACCEPT, "", NONE},
{"cas initialises its result", "cas64 r2, at[0], scratch[0], eq\nexit r2\n", ACCEPT, "", NONE},
{"faa initialises the old value", "mov64 r3, 1\nfaa r2, at[0], r3\nexit r2\n", ACCEPT, "", NONE},
{"faa addend uninitialised", "faa r2, at[0], r3\nexit 0\n", REJECT, "reads r3", NONE},
{"free of an uninitialised offset", "free heap, r9\nexit 0\n", REJECT, "reads r9", NONE},
{"respond length uninitialised", "respond r10, 0\n", REJECT, "reads r10", NONE},
{"exit register uninitialised", "exit r11\n", REJECT, "reads r11", NONE},
{"copy out initialises", "copy resp[0], table[0], 8 -> r12\nexit r12\n", ACCEPT, "", NONE},
{"r15 is a register", "mov64 r15, 1\nexit r15\n", ACCEPT, "", NONE},
{"join keeps only common registers", "jeq r1, 0, A\nmov64 r2, 1\nmov64 r3, 1\nja B\nA: mov64 r3, 2\nB: exit r3\n", ACCEPT, "", NONE},

// ---- ALU ----
{"add64 imm", "mov64 r2, 1\nadd64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"sub64 imm", "mov64 r2, 1\nsub64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"mul64 imm", "mov64 r2, 1\nmul64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"div64 imm", "mov64 r2, 1\ndiv64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"mod64 imm", "mov64 r2, 1\nmod64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"and64 imm", "mov64 r2, 1\nand64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"or64 imm", "mov64 r2, 1\nor64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"xor64 imm", "mov64 r2, 1\nxor64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"lsh64 imm", "mov64 r2, 1\nlsh64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"rsh64 imm", "mov64 r2, 1\nrsh64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"arsh64 imm", "mov64 r2, 1\narsh64 r2, 2\nexit r2\n", ACCEPT, "", NONE},
{"neg64", "mov64 r2, 1\nneg64 r2\nexit r2\n", ACCEPT, "", NONE},
{"add32 reg", "mov64 r2, 1\nadd32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"sub32 reg", "mov64 r2, 1\nsub32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"mul32 reg", "mov64 r2, 1\nmul32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"div32 reg (divisor non-zero)", "mov64 r2, 1\ndiv32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"mod32 reg", "mov64 r2, 1\nmod32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"and32 or32 xor32", "mov64 r2, 1\nand32 r2, r1\nor32 r2, r1\nxor32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"shifts by register", "mov64 r2, 1\nlsh32 r2, r1\nrsh64 r2, r1\narsh32 r2, r1\nexit r2\n", ACCEPT, "", NONE},
{"neg32", "mov64 r2, 1\nneg32 r2\nexit r2\n", ACCEPT, "", NONE},
{"ldimm64", "ldimm64 r2, 0xffffffffffffffff\nexit r2\n", ACCEPT, "", NONE},
{"div by immediate 0", "mov64 r2, 1\ndiv64 r2, 0\nexit 0\n", REJECT, "division by zero", NONE},
{"mod32 by immediate 0", "mov64 r2, 1\nmod32 r2, 0\nexit 0\n", REJECT, "division by zero", NONE},
{"div by a register that is always 0", "mov64 r2, 1\nmov64 r3, 0\ndiv64 r2, r3\nexit 0\n", REJECT, "division by zero: r3 is always 0", NONE},
{"div by a register that may be 0", "ld8 r3, args[0]\nmov64 r2, 1\ndiv64 r2, r3\nexit 0\n", ACCEPT, "divisor r3 may be 0: checked at run time", L1},
{"div32 by a register that may be 0", "ld8 r3, args[0]\nmov64 r2, 1\ndiv32 r2, r3\nexit 0\n", ACCEPT, "insn 2 (test.rofs:10): 32-bit divisor r3 may be 0: checked at run time", L1},
{"div32 by a range that crosses 2^32", "ld32 r3, args[0]\nadd64 r3, 1\nmov64 r2, 1\ndiv32 r2, r3\nexit 0\n", ACCEPT, "insn 3 (test.rofs:11): 32-bit divisor r3 may be 0: checked at run time", L1},
{"mod32 by 2^32", "ldimm64 r3, 0x100000000\nmov64 r2, 1\nmod32 r2, r3\nexit 0\n", ACCEPT, "32-bit divisor r3 may be 0: checked at run time", L1},
{"div32 by a register whose low half is 0", "mov64 r2, 1\nmov64 r3, 0\ndiv32 r2, r3\nexit 0\n", REJECT, "division by zero", NONE},
{"lsh64 by 64", "mov64 r2, 1\nlsh64 r2, 64\nexit 0\n", REJECT, "shift by 64 out of range 0..63", NONE},
{"lsh32 by 32", "mov64 r2, 1\nlsh32 r2, 32\nexit 0\n", REJECT, "shift by 32 out of range 0..31", NONE},
{"rsh64 by 63", "mov64 r2, 1\nrsh64 r2, 63\nexit r2\n", ACCEPT, "", NONE},
{"arsh32 by 31", "mov64 r2, 1\narsh32 r2, 31\nexit r2\n", ACCEPT, "", NONE},
{"shift by a negative immediate", "mov64 r2, 1\nrsh64 r2, -1\nexit 0\n", REJECT, "shift by -1 out of range", NONE},

// ---- jumps ----
{"jeq imm", "jeq r1, 3, L\nL: exit 0\n", ACCEPT, "", NONE},
{"jne reg", "mov64 r2, 1\njne r1, r2, L\nL: exit 0\n", ACCEPT, "", NONE},
{"jgt jge jlt jle", "jgt r1, 1, A\nA: jge r1, 1, B\nB: jlt r1, 1, C\nC: jle r1, 1, D\nD: exit 0\n", ACCEPT, "", NONE},
{"signed jumps", "jsgt r1, -1, A\nA: jsge r1, -1, B\nB: jslt r1, -1, C\nC: jsle r1, -1, D\nD: exit 0\n", ACCEPT, "", NONE},
{"jset", "jset r1, 4, A\nA: exit 0\n", ACCEPT, "", NONE},
{"32-bit jumps", "jeq32 r1, 3, A\nA: jne32 r1, r1, B\nB: jsgt32 r1, 2, C\nC: jset32 r1, 1, D\nD: exit 0\n", ACCEPT, "", NONE},
{"never-taken jump is logged", "mov64 r2, 5\njeq r2, 6, A\nexit 0\nA: exit 1\n", ACCEPT, "jump never taken", L2},

// ---- bounds: constants, region ends ----
{"last word of a region", "ld64 r2, table[56]\nexit 0\n", ACCEPT, "ld64 region 'table'[56] proven in bounds", L2},
{"one past the last word", "ld64 r2, table[57]\nexit 0\n", REJECT, "insn 0 (test.rofs:8): ld64 region 'table'[57] of 8 bytes is out of bounds of region 'table' (64 bytes)", NONE},
{"last byte", "ld8 r2, table[63]\nexit 0\n", ACCEPT, "", NONE},
{"byte at the end", "ld8 r2, table[64]\nexit 0\n", REJECT, "out of bounds of region 'table' (64 bytes)", NONE},
{"ld16 straddles the end", "ld16 r2, ro[63]\nexit 0\n", REJECT, "out of bounds of region 'ro'", NONE},
{"ld32 at the end", "ld32 r2, ro[60]\nexit 0\n", ACCEPT, "", NONE},
{"store at resp end", "mov64 r2, 1\nst32 resp[60], r2\nexit 0\n", ACCEPT, "", NONE},
{"store past resp end", "mov64 r2, 1\nst32 resp[61], r2\nexit 0\n", REJECT, "out of bounds of resp (64 bytes)", NONE},
{"scratch end", "mov64 r2, 1\nst8 scratch[64], r2\nexit 0\n", REJECT, "out of bounds of scratch (64 bytes)", NONE},
{"args within the minimum", "ld64 r2, args[8]\nexit 0\n", ACCEPT, "proven in bounds", L2},
{"args beyond the minimum is a run-time check", "ld64 r2, args[9]\nexit 0\n", ACCEPT, "checked at run time", L1},
{"args beyond the minimum, strict", "ld64 r2, args[9]\nexit 0\n", REJECT, "is not provably in bounds of args", STRICT},
{"args beyond the maximum", "ld8 r2, args[64]\nexit 0\n", REJECT, "out of bounds of args (64 bytes)", NONE},
{"negative offset without a base", "ld8 r2, table[-1]\nexit 0\n", REJECT, "offset arithmetic underflows for every value", NONE},
{"negative result from a base", "mov64 r2, 4\nld8 r3, table[r2-8]\nexit 0\n", REJECT, "underflows for every value of the base (4)", NONE},
{"negative offset that stays in bounds", "mov64 r2, 12\nld64 r3, table[r2-8]\nexit 0\n", ACCEPT, "proven in bounds", L2},
{"constant base out of bounds", "mov64 r2, 64\nld8 r3, table[r2]\nexit 0\n", REJECT, "out of bounds of region 'table' (64 bytes) with base 64", NONE},

// ---- bounds: ranges, refinement, bound confusion ----
{"and-mask proves bounds", "ld64 r2, args[0]\nand64 r2, 7\nld8 r3, table[r2+56]\nexit 0\n", ACCEPT, "proven in bounds", L2},
{"and-mask one too far: run time", "ld64 r2, args[0]\nand64 r2, 7\nld8 r3, table[r2+57]\nexit 0\n", ACCEPT, "checked at run time", L1},
{"and-mask one too far: strict", "ld64 r2, args[0]\nand64 r2, 7\nld8 r3, table[r2+57]\nexit 0\n", REJECT, "not provably in bounds of region 'table'", STRICT},
{"jlt bound proves", "ld64 r2, args[0]\njlt r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "proven in bounds", L2 | STRICT},
{"jlt bound off by one", "ld64 r2, args[0]\njlt r2, 58, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"jle bound", "ld64 r2, args[0]\njle r2, 56, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"jgt on the other edge", "ld64 r2, args[0]\njgt r2, 56, bad\nld64 r3, table[r2]\nexit 0\nbad: exit 1\n", ACCEPT, "", STRICT},
{"jge on the other edge", "ld64 r2, args[0]\njge r2, 57, bad\nld64 r3, table[r2]\nexit 0\nbad: exit 1\n", ACCEPT, "", STRICT},
{"jge off by one", "ld64 r2, args[0]\njge r2, 58, bad\nld64 r3, table[r2]\nexit 0\nbad: exit 1\n", REJECT, "not provably in bounds", STRICT},
{"jeq pins a value", "ld64 r2, args[0]\njeq r2, 8, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"jne pins the fall-through", "ld64 r2, args[0]\njne r2, 8, bad\nld64 r3, table[r2]\nexit 0\nbad: exit 1\n", ACCEPT, "", STRICT},
{"register-register bound", "ld64 r2, args[0]\nmov64 r4, 57\njlt r2, r4, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"32-bit compare does not bound 64 bits", "ld64 r2, args[0]\njlt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"32-bit compare, not strict: run time", "ld64 r2, args[0]\njlt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "checked at run time", L1},
{"32-bit compare bounds a 32-bit value", "ld32 r2, args[0]\njlt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"mov32 makes a value 32-bit", "ld64 r2, args[0]\nmov32 r2, r2\njlt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"signed compare of a maybe-negative value", "ld64 r2, args[0]\njslt r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"signed compare of a non-negative value", "ld32 r2, args[0]\njslt r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"signed 32-bit compare of a 32-bit value", "ld32 r2, args[0]\njslt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"signed 32-bit compare of a 31-bit value", "ld32 r2, args[0]\nrsh32 r2, 1\njslt32 r2, 57, ok\nexit 1\nok: ld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"sign-extended immediate is huge", "ld64 r2, args[0]\njlt r2, -1, ok\nexit 1\nok: ld8 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"mov32 -1 is 0xffffffff", "mov32 r2, -1\nld8 r3, table[r2]\nexit 0\n", REJECT, "with base 4294967295", NONE},
{"mov64 -1 plus one overflows", "mov64 r2, -1\nld8 r3, table[r2+1]\nexit 0\n", REJECT, "offset arithmetic overflows for every value of the base", NONE},
{"ldimm64 near the top overflows", "ldimm64 r2, 0xffffffffffffff00\nld8 r3, table[r2+256]\nexit 0\n", REJECT, "overflows for every value", NONE},
{"add keeps ranges", "ld64 r2, args[0]\nand64 r2, 15\nadd64 r2, 40\nld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"add past the end", "ld64 r2, args[0]\nand64 r2, 15\nadd64 r2, 48\nld64 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"add that may wrap loses the range", "ld64 r2, args[0]\nadd64 r2, 1\nand64 r2, 63\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"sub that may underflow", "ld8 r2, args[0]\nsub64 r2, 1\nld8 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"sub that cannot underflow", "ld8 r2, args[0]\nand64 r2, 15\nor64 r2, 16\nsub64 r2, 16\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"mul scales", "ld8 r2, args[0]\nand64 r2, 7\nmul64 r2, 8\nld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"lsh scales", "ld8 r2, args[0]\nand64 r2, 7\nlsh64 r2, 3\nld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"rsh shrinks", "ld8 r2, args[0]\nrsh64 r2, 2\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"mod bounds", "ld64 r2, args[0]\nmod64 r2, 57\nld64 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"div bounds", "ld8 r2, args[0]\ndiv64 r2, 4\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"or raises the floor", "ld8 r2, args[0]\nand64 r2, 7\nor64 r2, 8\nld8 r3, table[r2+48]\nexit 0\n", ACCEPT, "", STRICT},
{"add32 may wrap", "ld32 r2, args[0]\nadd32 r2, 1\nld8 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"32-bit result is below 2^32", "ld64 r2, args[0]\nadd32 r2, 0\nrsh64 r2, 26\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"64-bit value after rsh is not", "ld64 r2, args[0]\nrsh64 r2, 26\nld8 r3, table[r2]\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"ld16 is at most 65535", "ld16 r2, args[0]\nrsh64 r2, 10\nld8 r3, table[r2]\nexit 0\n", ACCEPT, "", STRICT},
{"loop-carried index is a run-time check", "mov64 r3, 0\nL: ld8 r4, table[r3]\nloop r3, L, 64\nexit 0\n", ACCEPT, "checked at run time", L1},
{"loop-carried index, strict", "mov64 r3, 0\nL: ld8 r4, table[r3]\nloop r3, L, 64\nexit 0\n", REJECT, "not provably in bounds", STRICT},

// ---- bounds of bulk and atomic operations ----
{"copy a whole region", "copy resp[0], table[0], 64\nexit 0\n", ACCEPT, "copy destination resp[0] proven in bounds", L2},
{"copy one byte too many into resp", "copy resp[1], table[0], 64\nexit 0\n", REJECT, "copy destination resp[1] of 64 bytes is out of bounds of resp", NONE},
{"copy from past the region", "copy resp[0], table[8], 64\nexit 0\n", REJECT, "copy source region 'table'[8] of 64 bytes is out of bounds", NONE},
{"copy with a length register", "ld8 r2, args[0]\ncopy resp[0], table[0], r2 max 64\nexit 0\n", ACCEPT, "", STRICT},
{"copy cap above the source", "ld8 r2, args[0]\ncopy resp[0], table[0], r2 max 65\nexit 0\n", REJECT, "not provably in bounds", STRICT},
{"copy length always above its cap", "mov64 r2, 70\ncopy resp[0], table[0], r2 max 64\nexit 0\n", REJECT, "copy length r2 (70) is always above its cap 64", NONE},
{"copy cap above the policy", "copy resp[0], table[0], 64\nexit 0\n", REJECT, "copy length 64 above the limit 32", LIM_COPY},
{"indirect copy: first level proven", "copy resp[0], heap[*table[56]], 64\nexit 0\n", ACCEPT, "copy source behind a pointer: checked at run time", L1},
{"indirect copy: pointer past the end", "copy resp[0], heap[*table[57]], 64\nexit 0\n", REJECT, "copy source pointer region 'table'[57] of 8 bytes is out of bounds", NONE},
{"bounded copy needs 16 bytes", "copy resp[0], heap[*table[56], bounded], 64\nexit 0\n", REJECT, "copy source pointer region 'table'[56] of 16 bytes is out of bounds", NONE},
{"bounded copy", "copy resp[0], heap[*table[48], bounded], 64 -> r2\nexit r2\n", ACCEPT, "", NONE},
{"indirect destination", "copy table[*table[0]], args[0], 8\nexit 0\n", ACCEPT, "copy destination behind a pointer", L1},
{"indirect destination pointer past the end", "copy table[*table[60]], args[0], 8\nexit 0\n", REJECT, "copy destination pointer region 'table'[60] of 8 bytes is out of bounds", NONE},
{"cas aligned", "cas64 r2, at[8], scratch[0], eq\nexit 0\n", ACCEPT, "", NONE},
{"cas misaligned", "cas64 r2, at[4], scratch[0], eq\nexit 0\n", REJECT, "cas target region 'at'[4]: offset 4 is not 8-byte aligned", NONE},
{"cas past the end", "cas128 r2, at[56], scratch[0], eq\nexit 0\n", REJECT, "cas target region 'at'[56] of 16 bytes is out of bounds", NONE},
{"cas256 operand block too big for args", "cas256 r2, at[0], args[0], eq\nexit 0\n", REJECT, "cas operand block args[0] of 128 bytes is out of bounds of args (64 bytes)", NONE},
{"cas64 with old in scratch", "cas64 r2, at[0], scratch[0], ge, old\nexit 0\n", ACCEPT, "", NONE},
{"cas128 with old does not fit scratch", "cas128 r2, at[0], scratch[0], le, old\nexit 0\n", REJECT, "cas operand block scratch[0] of 80 bytes is out of bounds", NONE},
{"cas192 and modes", "cas192 r2, at[0], heap[0], ne\ncas64 r3, at[0], resp[0], lt\ncas64 r3, at[0], resp[0], gt\nexit 0\n", ACCEPT, "", NONE},
{"cas with a base register", "ld8 r3, args[0]\nand64 r3, 0x38\ncas64 r2, at[r3], scratch[0], eq\nexit 0\n", ACCEPT, "", STRICT},
{"faa at the end", "mov64 r3, 1\nfaa r2, at[56], r3\nexit 0\n", ACCEPT, "", NONE},
{"faa past the end", "mov64 r3, 1\nfaa r2, at[60], r3\nexit 0\n", REJECT, "faa region 'at'[60] of 8 bytes is out of bounds", NONE},
{"faa misaligned", "mov64 r3, 1\nfaa r2, at[4], r3\nexit 0\n", REJECT, "not 8-byte aligned", NONE},
{"crc64 of a whole region", "mov64 r2, 64\nmov64 r3, 0\ncrc64 r3, table[0], r2\nexit 0\n", ACCEPT, "", STRICT},
{"crc64 past the end", "mov64 r2, 100\nmov64 r3, 0\ncrc64 r3, table[0], r2\nexit 0\n", REJECT, "crc64 region 'table'[0] of 100 bytes is out of bounds", NONE},
{"hash of args", "mov64 r3, 0\nhash r3, args[0], r1\nexit r3\n", ACCEPT, "", NONE},
{"hash length above the ISA limit", "ldimm64 r2, 0x200000\nmov64 r3, 0\nhash r3, args[0], r2\nexit 0\n", REJECT, "is always above 1048576", NONE},
{"respond within resp", "mov64 r2, 64\nrespond r2, 0\n", ACCEPT, "", NONE},
{"respond longer than resp", "mov64 r2, 65\nrespond r2, 0\n", REJECT, "response length r2 (65) is always above resp size 64", NONE},
{"respond with a run-time length", "ld8 r2, args[0]\nrespond r2, 0\n", ACCEPT, "response length checked at run time", L1},

// ---- access and slots ----
{"store into a read-only slot", "mov64 r2, 1\nst64 ro[0], r2\nexit 0\n", REJECT, "writes region 'ro' without the write right (declared read)", NONE},
{"load from a read-only slot", "ld64 r2, ro[0]\nexit 0\n", ACCEPT, "", NONE},
{"faa needs atomic", "mov64 r3, 1\nfaa r2, table[0], r3\nexit 0\n", REJECT, "faa on region 'table' without the atomic right (declared read,write)", NONE},
{"cas needs atomic", "cas64 r2, ro[0], scratch[0], eq\nexit 0\n", REJECT, "cas on region 'ro' without the atomic right", NONE},
{"copy into a read-only slot", "copy ro[0], args[0], 8\nexit 0\n", REJECT, "copies into region 'ro' without the write right", NONE},
{"copy from a read-only slot", "copy table[0], ro[0], 8\nexit 0\n", ACCEPT, "", NONE},
{"indirect destination needs read", "copy at[*at[0]], args[0], 8\nexit 0\n", ACCEPT, "", NONE},
{"alloc needs a free list", "alloc r2, at\nexit 0\n", REJECT, "region 'at' has no free list", NONE},
{"alloc from a read-only slot", "alloc r2, ro\nexit 0\n", REJECT, "alloc from region 'ro' without the atomic right", NONE},
{"alloc and free", "alloc r2, heap\njeq r2, -1, out\nfree heap, r2\nout: exit 0\n", ACCEPT, "", NONE},
{"undeclared slot", ".raw 0x900000213\nexit 0\n", REJECT, "uses region slot 9, which is not declared (4 declared)", NONE},
{"cas old into args", "cas64 r2, at[0], args[0], eq, old\nexit 0\n", REJECT, "writes the old value to args, which is read-only", NONE},
{"store into args", "mov64 r1, 1\n.raw 0x8000001017\nexit 0\n", REJECT, "writes args, which is read-only", NONE},
{"cas operand block in a slot needs read", "cas64 r2, at[0], table[0], eq\nexit 0\n", ACCEPT, "", NONE},
{"free list without atomic", ".region f, rw, 64, freelist\nexit 0\n", REJECT, ".region (test.rofs:1): region slot 'f' has a free list but no atomic right", NOPRE},
{"slot without access", ".region z, 0, 8\nexit 0\n", REJECT, ".region (test.rofs:1): region slot 'z' has invalid access 0x0", NOPRE},
{"slot with unknown flags", ".scratch 8\n.region y, r, 8, 4\nexit 0\n", REJECT, ".region (test.rofs:2): region slot 'y' has unknown flags 0x4", NOPRE},
{"policy grants everything", "ld64 r2, table[0]\nexit 0\n", ACCEPT, "", G_OK},
{"policy grants table read-only", "ld64 r2, table[0]\nexit 0\n", REJECT, ".region (test.rofs:4): region slot 'table' needs read,write but policy grants read", G_RO},
{"policy does not grant heap", "exit 0\n", REJECT, ".region (test.rofs:7): region slot 'heap' is not granted by policy", G_MISS},
{"granted region too short", "exit 0\n", REJECT, ".region (test.rofs:4): region slot 'table' needs 64 bytes, the granted region has 32", G_SHORT},
{"resp above the policy", ".resp 70000\nexit 0\n", REJECT, ".resp (test.rofs:1): response size 70000 above the limit", NOPRE},
{"scratch above the policy", ".scratch 70000\nexit 0\n", REJECT, ".scratch (test.rofs:1): scratch size 70000 above the limit", NOPRE},
{"args above the policy", ".args 0, 70000\nexit 0\n", REJECT, ".args (test.rofs:1): args maximum 70000 above the limit", NOPRE},
{"the last .args counts", ".args 0, 8\n.resp 8\n.args 0, 70000\nexit 0\n", REJECT, ".args (test.rofs:3): args maximum 70000", NOPRE},

// ---- loops ----
{"simple loop bound", "mov64 r3, 0\nL: add64 r1, 1\nloop r3, L, 10\nexit 0\n", ACCEPT, "worst-case path 22", NONE},
{"loop is logged", "mov64 r3, 0\nL: add64 r1, 1\nloop r3, L, 10\nexit 0\n", ACCEPT, "insn 2 (test.rofs:10): loop r3, body [1, 2], trip limit 10", L1},
{"self loop", "mov64 r3, 0\nL: loop r3, L, 5\nexit 0\n", ACCEPT, "worst-case path 7", NONE},
{"trip limit 0", "mov64 r3, 0\nL: loop r3, L, 0\nexit 0\n", REJECT, "loop trip limit 0: must be at least 1", NONE},
{"trip limit above the policy", "mov64 r3, 0\nL: loop r3, L, 11\nexit 0\n", REJECT, "loop trip limit 11 above the limit 10", LIM_TRIP},
{"trip limit at the policy", "mov64 r3, 0\nL: loop r3, L, 10\nexit 0\n", ACCEPT, "", LIM_TRIP},
{"counter written by alu", "mov64 r3, 0\nL: add64 r3, 1\nloop r3, L, 10\nexit 0\n", REJECT, "insn 1 (test.rofs:9): writes r3, the counter of the loop at insn 2", NONE},
{"counter written by mov", "mov64 r3, 0\nL: mov64 r3, 0\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by a load", "mov64 r3, 0\nL: ld64 r3, table[0]\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by faa", "mov64 r3, 0\nmov64 r4, 1\nL: faa r3, at[0], r4\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by alloc", "mov64 r3, 0\nL: alloc r3, heap\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by copy out", "mov64 r3, 0\nL: copy resp[0], table[0], 8 -> r3\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by cas", "mov64 r3, 0\nL: cas64 r3, at[0], scratch[0], eq\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written by ldimm64", "mov64 r3, 0\nL: ldimm64 r3, 0\nloop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter written under a branch", "mov64 r3, 0\nL: jeq r1, 0, S\nmov64 r3, 0\nS: loop r3, L, 10\nexit 0\n", REJECT, "writes r3, the counter", NONE},
{"counter read in the body", "mov64 r3, 0\nL: mov64 r4, r3\nloop r3, L, 10\nexit r4\n", ACCEPT, "", NONE},
{"counter reset before the loop", "ld64 r3, args[0]\nmov64 r3, 0\nL: loop r3, L, 10\nexit 0\n", ACCEPT, "", NONE},
{"nested loops", "mov64 r3, 0\nA: mov64 r4, 0\nB: loop r4, B, 3\nloop r3, A, 2\nexit 0\n", ACCEPT, "worst-case path 12", NONE},
{"nested loops share a counter", "mov64 r3, 0\nA: mov64 r5, 0\nB: loop r3, B, 3\nloop r3, A, 2\nexit 0\n", REJECT, "writes r3, the counter of the loop at insn 3", NONE},
{"nesting deeper than the policy", "mov64 r3, 0\nA: mov64 r4, 0\nB: loop r4, B, 3\nloop r3, A, 2\nexit 0\n", REJECT, "loop nesting depth 2 above the limit 1", LIM_DEPTH},
{"overlapping loops", "mov64 r3, 0\nmov64 r4, 0\nA: mov64 r5, 1\nB: mov64 r6, 1\nloop r3, A, 2\nloop r4, B, 2\nexit 0\n", REJECT, "overlaps the loop body", NONE},
{"jump into a loop body", "mov64 r3, 0\njeq r1, 0, In\nL: mov64 r2, 1\nIn: mov64 r2, 2\nloop r3, L, 4\nexit 0\n", REJECT, "jump to insn 3 enters the body of the loop at insn 4 (head 2)", NONE},
{"jump to a loop head", "mov64 r3, 0\njeq r1, 0, L\nmov64 r2, 1\nL: mov64 r2, 2\nloop r3, L, 4\nexit 0\n", ACCEPT, "", NONE},
{"break", "mov64 r3, 0\nL: jeq r1, 5, out\nadd64 r1, 1\nloop r3, L, 8\nout: exit 0\n", ACCEPT, "worst-case path 26", NONE},
{"continue", "mov64 r3, 0\nL: jeq r1, 5, next\nadd64 r1, 1\nnext: loop r3, L, 8\nexit 0\n", ACCEPT, "worst-case path 26", NONE},
{"break out of two loops", "mov64 r3, 0\nA: mov64 r4, 0\nB: jeq r1, 5, out\nloop r4, B, 3\nloop r3, A, 2\nout: exit 0\n", ACCEPT, "", NONE},
{"loop target after the loop", "mov64 r3, 0\n.raw 0x20000030c\nexit 0\n", REJECT, "is after the loop", NONE},
{"worst case above the policy", "mov64 r3, 0\nL: add64 r1, 1\nadd64 r1, 1\nloop r3, L, 50\nexit 0\n", REJECT, "insn 3 (test.rofs:11): worst-case path 152 instructions, limit 100: the costliest loop nest on it ends here (body [1, 3], trip limit 50, up to 150 instructions)", LIM_W},
{"worst case names the costliest nest", "mov64 r3, 0\nA: loop r3, A, 10\nmov64 r4, 0\nB: add64 r1, 1\nloop r4, B, 50\nmov64 r5, 0\nC: loop r5, C, 2\nexit 0\n", REJECT, "insn 4 (test.rofs:12): worst-case path 116 instructions, limit 100: the costliest loop nest on it ends here (body [3, 4], trip limit 50, up to 100 instructions)", LIM_W},
{"worst case names the outermost loop of a nest", "mov64 r3, 0\nA: mov64 r4, 0\nB: loop r4, B, 20\nloop r3, A, 5\nexit 0\n", REJECT, "insn 3 (test.rofs:11): worst-case path 112 instructions, limit 100: the costliest loop nest on it ends here (body [1, 3], trip limit 5, up to 110 instructions)", LIM_W},
{"worst case on the longer arm", "mov64 r3, 0\njeq r1, 0, S\nA: loop r3, A, 120\nexit 0\nS: mov64 r4, 0\nB: loop r4, B, 30\nexit 1\n", REJECT, "insn 2 (test.rofs:10): worst-case path 123 instructions, limit 100: the costliest loop nest on it ends here (body [2, 2], trip limit 120, up to 120 instructions)", LIM_W},
{"worst case takes the longer arm", "jeq r1, 0, A\nmov64 r2, 1\nmov64 r2, 2\nmov64 r2, 3\nexit 0\nA: exit 1\n", ACCEPT, "worst-case path 5", NONE},
{"verifier work limit", "mov64 r2, 1\nmov64 r2, 2\nmov64 r2, 3\nmov64 r2, 4\nmov64 r2, 5\nmov64 r2, 6\nexit 0\n", REJECT, "program too complex", LIM_PROC},
{"RedN while with break (isa.md 11.1)",
 "ld64 r2, args[0]\nld64 r3, args[8]\nmov64 r4, 0\ntop: ld64 r5, table[r3]\njeq r5, r2, found\nld64 r3, table[r3+8]\nloop r4, top, 16\nexit 1\nfound: st64 resp[0], r3\nexit 0\n",
 ACCEPT, "worst-case path 68", NONE},
};
// clang-format on

class VerifierTable : public ::testing::TestWithParam<size_t> {};

TEST_P(VerifierTable, Case) {
    const VCase& c = kCases[GetParam()];
    std::string text = (c.opt & NOPRE) ? std::string(c.text) : std::string(kPrelude) + c.text;
    AsmResult a = assemble(text, "test.rofs");
    ASSERT_TRUE(a.ok()) << a.error_text();
    VerifyOptions o;
    if (c.opt & STRICT)
        o.limits.strict_bounds = true;
    o.log_level = (c.opt & L2) ? 2 : (c.opt & L1) ? 1 : 0;
    if (c.opt & LIM_INSNS)
        o.limits.max_insns = 4;
    if (c.opt & LIM_TRIP)
        o.limits.max_trip = 10;
    if (c.opt & LIM_DEPTH)
        o.limits.max_loop_depth = 1;
    if (c.opt & LIM_W)
        o.limits.max_worst_case = 100;
    if (c.opt & LIM_PROC)
        o.limits.max_processed = 5;
    if (c.opt & LIM_COPY)
        o.limits.max_copy = 32;
    if (c.opt & (G_OK | G_RO | G_MISS | G_SHORT)) {
        std::vector<Grant> g = {{"table", ROF_ACCESS_READ | ROF_ACCESS_WRITE, 64},
                                {"ro", ROF_ACCESS_READ, 0},
                                {"at", ROF_ACCESS_ALL, 64},
                                {"heap", ROF_ACCESS_ALL, 4096}};
        if (c.opt & G_RO)
            g[0].access = ROF_ACCESS_READ;
        if (c.opt & G_SHORT)
            g[0].len = 32;
        if (c.opt & G_MISS)
            g.pop_back();
        o.grants = g;
    }
    VerifyResult r = verify(*a.program, o);
    EXPECT_EQ(r.ok, c.result == ACCEPT) << r.log;
    EXPECT_NE(r.log.find(c.msg), std::string::npos) << "want \"" << c.msg << "\" in:\n" << r.log;
    // Every log ends with the summary line.
    EXPECT_NE(r.log.find("processed "), std::string::npos) << r.log;
    EXPECT_EQ(r.log.back(), '\n');
    if (c.result == ACCEPT) {
        // What the verifier accepts, the module's load check accepts.
        std::vector<uint8_t> img = a.program->encode();
        uint32_t bad = 0;
        EXPECT_EQ(rof_exec_check_image(img.data(), img.size(), &bad), 0);
        EXPECT_GE(r.worst_case, 1u);
    }
}

INSTANTIATE_TEST_SUITE_P(Verifier, VerifierTable, ::testing::Range(size_t{0}, std::size(kCases)),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                             return test::case_name(
                                 [](size_t k) { return std::string_view(kCases[k].name); },
                                 i.param);
                         });

// The table keeps its breadth.
TEST(Verifier, TableCoversBothVerdicts) {
    size_t n = std::size(kCases), accepts = 0;
    for (const VCase& c : kCases)
        accepts += c.result == ACCEPT;
    EXPECT_GE(n, 150u);
    EXPECT_GE(accepts, 50u);
    EXPECT_GE(n - accepts, 50u);
}

TEST(Verifier, SummaryLineIsLast) {
    Program p = test::must_assemble(std::string(kPrelude) + "exit 0\n");
    VerifyOptions o;
    o.limits.max_processed = 1234;
    VerifyResult r = verify(p, o);
    ASSERT_TRUE(r.ok);
    std::string last = r.log.substr(r.log.rfind('\n', r.log.size() - 2) + 1);
    EXPECT_EQ(last, "processed 2 insns (limit 1234), worst-case path 1\n");
}

TEST(Verifier, LevelTwoTracesEveryInstruction) {
    Program p = test::must_assemble(std::string(kPrelude) + "mov64 r2, 5\nadd64 r2, r1\nexit r2\n");
    VerifyOptions o;
    o.log_level = 2;
    VerifyResult r = verify(p, o);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_NE(r.log.find("insn 1 (test.rofs:9): add64 r2, r1 ; r1=[16, 64] r2=5"),
              std::string::npos)
        << r.log;
    EXPECT_NE(r.log.find("insn 2 (test.rofs:10): exit r2 ; r1=[16, 64] r2=[21, 69]"),
              std::string::npos)
        << r.log;
}

// k sequential bounded loops, each "mov64 rC, 0; L: add64 r2, 1; loop rC,
// L, 50" (101 instructions), after "mov64 r2, 0" and before "exit r2".
std::string sequential_loops(int k) {
    std::string t = std::string(kPrelude) + "mov64 r2, 0\n";
    for (int i = 0; i < k; i++)
        t += "mov64 r3, 0\nL" + std::to_string(i) + ": add64 r2, 1\nloop r3, L" +
             std::to_string(i) + ", 50\n";
    return t + "exit r2\n";
}

// The analysis of a loop costs the same whatever precedes it: 600 loops in
// a row are accepted (when every round of the analysis revisited the whole
// program, 300 of them exceeded max_processed), and the verifier's work
// grows linearly with their number.
TEST(Verifier, SequentialLoopsCostLinearWork) {
    VerifyResult r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = verify(test::must_assemble(sequential_loops(300 * i)));
        ASSERT_TRUE(r[i].ok) << r[i].error;
        EXPECT_EQ(r[i].worst_case, 2u + 300u * i * 101u);
    }
    EXPECT_EQ(r[2].processed - r[1].processed, r[1].processed - r[0].processed)
        << r[0].processed << " " << r[1].processed << " " << r[2].processed;
    EXPECT_LT(r[2].processed, 20u * 600u);
}

// Level 1 names every division whose divisor may be 0 at run time, and no
// other: the 32-bit divisor is the low half of the register.
TEST(Verifier, DivisorsCheckedAtRunTimeAreLogged) {
    auto logged = [](const std::string& body) {
        VerifyOptions o;
        o.log_level = 1;
        VerifyResult r = verify(test::must_assemble(std::string(kPrelude) + body), o);
        EXPECT_TRUE(r.ok) << r.log;
        return r.log.find("may be 0: checked at run time") != std::string::npos;
    };
    EXPECT_FALSE(logged("mov64 r2, 1\ndiv32 r2, r1\nexit 0\n")) << "r1 is [16, 64]";
    EXPECT_FALSE(logged("mov64 r2, 1\ndiv64 r2, r1\nexit 0\n"));
    EXPECT_FALSE(logged("ld32 r3, args[0]\nadd64 r3, 1\nmov64 r2, 1\ndiv64 r2, r3\nexit 0\n"))
        << "[1, 2^32] is never 0 in 64 bits";
    EXPECT_FALSE(logged("ldimm64 r3, 0x100000001\nmov64 r2, 1\ndiv32 r2, r3\nexit 0\n"));
    EXPECT_TRUE(logged("ld32 r3, args[0]\nadd64 r3, 1\nmov64 r2, 1\nmod32 r2, r3\nexit 0\n"));
    EXPECT_TRUE(
        logged("ld64 r3, args[0]\njne r3, 0, nz\nexit 1\n"
               "nz: mov64 r2, 1\ndiv32 r2, r3\nexit 0\n"))
        << "a 64-bit test for 0 does not protect a 32-bit division: 2^32 passes it";
}

// Rejections without an instruction name their line all the same.
TEST(Verifier, WorstCaseWithoutLoopsNamesTheLongestPath) {
    VerifyOptions o;
    o.limits.max_worst_case = 3;
    VerifyResult r = verify(
        test::must_assemble(std::string(kPrelude) + "jeq r1, 0, A\nmov64 r2, 1\nmov64 r2, 2\n"
                                                    "exit 0\nA: exit 1\n"),
        o);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error,
              "insn 3 (test.rofs:11): worst-case path 4 instructions, limit 3: the longest path "
              "ends here");
    EXPECT_EQ(r.error_insn, 3u);
}

TEST(Verifier, BadImagesAreRefusedWithAReason) {
    Program p = test::must_assemble(std::string(kPrelude) + "exit 0\n");
    std::vector<uint8_t> img = p.encode();
    EXPECT_TRUE(verify_image(img).ok);
    std::vector<uint8_t> bad = img;
    bad[0] ^= 1;
    VerifyResult r = verify_image(bad);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("bad magic"), std::string::npos) << r.error;
    bad = img;
    bad.back() ^= 1;
    r = verify_image(bad);
    EXPECT_NE(r.error.find("does not match the content"), std::string::npos);
    bad = img;
    bad.pop_back();
    r = verify_image(bad);
    EXPECT_NE(r.error.find("its header says"), std::string::npos);
    EXPECT_NE(r.log.find("processed 0 insns"), std::string::npos);
}

}  // namespace
}  // namespace rof::prog

namespace rof::prog {
namespace {

// Rejections the assembler cannot produce: programs built directly.
TEST(Verifier, ReasonsOnlyReachableFromBuiltPrograms) {
    auto base = [] {
        Program p;
        std::vector<rof_insn> v;
        Insn e;
        e.kind = Kind::Exit;
        encode_insn(e, v);
        p.insns = v;
        return p;
    };
    auto reason = [](const Program& p, const VerifyOptions& o = {}) {
        VerifyResult r = verify(p, o);
        EXPECT_FALSE(r.ok);
        return r.error;
    };
    Program p = base();
    p.insns.clear();
    EXPECT_NE(reason(p).find("has no instructions"), std::string::npos);
    p = base();
    p.args_min = 10;
    p.args_max = 5;
    EXPECT_EQ(reason(p), "program: args minimum 10 is above its maximum 5") << "no source line";
    p = base();
    for (int i = 0; i < 17; i++)
        p.slots.push_back(Slot{"s" + std::to_string(i), ROF_ACCESS_READ, 0, 8});
    EXPECT_NE(reason(p).find("declares 17 region slots, limit 16"), std::string::npos);
    p = base();
    p.slots.push_back(Slot{"9lives", ROF_ACCESS_READ, 0, 8});
    EXPECT_NE(reason(p).find("'9lives' is not a valid name"), std::string::npos);
    p = base();
    p.slots.push_back(Slot{"a", ROF_ACCESS_READ, 0, 8});
    p.slots.push_back(Slot{"a", ROF_ACCESS_READ, 0, 8});
    EXPECT_NE(reason(p).find("region slot 'a' declared twice"), std::string::npos);
    p = base();
    p.slots.push_back(Slot{"a", ROF_ACCESS_READ, 0x10, 8});
    EXPECT_NE(reason(p).find("has unknown flags 0x10"), std::string::npos);

    // Four nested loops of 2^20 trips: the bound saturates, never wraps.
    Builder b;
    Label l[4];
    for (int i = 0; i < 4; i++) {
        l[i] = b.label();
        b.movi(static_cast<uint8_t>(2 + i), 0).bind(l[i]);
    }
    for (int i = 3; i >= 0; i--)
        b.loop(static_cast<uint8_t>(2 + i), l[i], ROF_ISA_MAX_TRIP);
    b.exit(0);
    auto big = b.build();
    ASSERT_TRUE(big) << big.error;
    VerifyOptions o;
    o.limits.max_trip = ROF_ISA_MAX_TRIP;
    o.limits.max_worst_case = UINT64_MAX;
    EXPECT_EQ(reason(*big, o),
              "insn 7: worst-case path overflows: the costliest loop nest on it ends here (body "
              "[1, 7], trip limit 1048576, too many instructions to count)");
}

}  // namespace
}  // namespace rof::prog
