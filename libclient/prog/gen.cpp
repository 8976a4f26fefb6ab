#include "rof/prog/gen.h"

#include "rof/prog/builder.h"

namespace rof::prog {
namespace {

// r0..r12 hold data, r13 is the address temporary, r14/r15 loop counters
// (one per nesting level), so no body ever writes its own counter.
constexpr uint8_t kData = 13;
constexpr uint8_t kAddr = 13;

class Gen {
  public:
    Gen(std::mt19937_64& rng, const GenOptions& o) : rng_(rng), o_(o) {}

    Program run() {
        b_.args(GenEnv::kArgs, GenEnv::kArgs).scratch(GenEnv::kScratch).resp(GenEnv::kResp);
        data_ = b_.region("data", ROF_ACCESS_ALL, GenEnv::kData);
        heap_ = b_.region("heap", ROF_ACCESS_ALL, GenEnv::kHeap, true);
        for (uint8_t r = 0; r < kData; r++) {
            b_.ldimm64(r, rng_());
        }
        block(o_.max_items, 0, nullptr);
        b_.exit_reg(pick());
        return *b_.build();  // labels are always bound below
    }

  private:
    uint32_t rnd(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
    uint8_t pick() { return static_cast<uint8_t>(rnd(kData)); }

    // Leaves in kAddr a value in [0, mask] aligned to align.
    void addr(uint32_t mask) {
        b_.mov(kAddr, pick()).alui(ROF_ALU_AND, kAddr, static_cast<int32_t>(mask));
    }

    Mem anywhere(uint32_t size, bool writable) {
        switch (rnd(writable ? 3 : 4)) {
            case 0:
                addr(0xff0);
                return at(data_, kAddr, static_cast<int16_t>(rnd(16 - size + 1)));
            case 1:
                addr(0xf0);
                return at(ROF_SPACE_SCRATCH, kAddr, static_cast<int16_t>(rnd(16 - size + 1)));
            case 2:
                addr(0x1f0);
                return at(ROF_SPACE_RESP, kAddr, static_cast<int16_t>(rnd(16 - size + 1)));
            default:
                return at(ROF_SPACE_ARGS, static_cast<int16_t>(rnd(GenEnv::kArgs - size + 1)));
        }
    }

    void simple() {
        static const unsigned sizes[] = {1, 2, 4, 8};
        switch (rnd(12)) {
            case 0:
            case 1:
            case 2: {
                auto op = static_cast<rof_alu>(rnd(ROF_ALU_COUNT));
                bool is32 = rnd(2);
                if (rnd(2)) {
                    auto imm = static_cast<int32_t>(rng_());
                    if (op == ROF_ALU_LSH || op == ROF_ALU_RSH || op == ROF_ALU_ARSH) {
                        imm = static_cast<int32_t>(rnd(is32 ? 32 : 64));
                    }
                    if ((op == ROF_ALU_DIV || op == ROF_ALU_MOD) && imm == 0) {
                        imm = 3;
                    }
                    b_.alui(op, pick(), imm, is32);
                } else {
                    uint8_t src = pick();
                    // a divisor the verifier can prove 0 is rejected: keep it odd
                    if (op == ROF_ALU_DIV || op == ROF_ALU_MOD) {
                        b_.alui(ROF_ALU_OR, src, 1);
                    }
                    b_.alu(op, pick(), src, is32);
                }
                return;
            }
            case 3: {
                unsigned s = sizes[rnd(4)];
                b_.ld(s, pick(), anywhere(s, false));
                return;
            }
            case 4: {
                unsigned s = sizes[rnd(4)];
                b_.st(s, anywhere(s, true), pick());
                return;
            }
            case 5: {
                addr(0xff8);
                uint8_t old = pick();
                b_.faa(old, at(data_, kAddr, 0), pick());
                return;
            }
            case 6: {
                unsigned w = 8 * (1 + rnd(4));
                addr(0xfc0);
                uint8_t out = pick();
                auto blk = static_cast<int16_t>(rnd(GenEnv::kArgs - 5 * w + 1));
                b_.cas(out, w, at(data_, kAddr, 0), at(ROF_SPACE_ARGS, blk),
                       static_cast<rof_cmp>(rnd(ROF_CMP_COUNT)));
                return;
            }
            case 7: {
                uint8_t len = pick();
                b_.mov(len, pick()).alui(ROF_ALU_AND, len, 63);
                addr(0x1c0);
                Mem src = rnd(2) ? at(ROF_SPACE_ARGS, static_cast<int16_t>(rnd(128)))
                                 : at(data_, static_cast<int16_t>(rnd(1024)));
                b_.copy(at(ROF_SPACE_RESP, kAddr, 0), src, 64, len, rnd(2) ? pick() : -1);
                return;
            }
            case 8: {
                uint8_t len = pick();
                b_.mov(len, pick()).alui(ROF_ALU_AND, len, 127);
                if (rnd(2)) {
                    b_.crc64(pick(), at(ROF_SPACE_ARGS, 0), len);
                } else {
                    uint8_t h = pick();
                    b_.hash(h, at(data_, static_cast<int16_t>(rnd(2048))), len);
                }
                return;
            }
            case 9: {
                uint8_t r = pick();
                Label skip = b_.label();
                b_.alloc(r, heap_).jmpi(ROF_JMP_JEQ, r, -1, skip);
                if (rnd(2)) {
                    b_.st(8, at(heap_, r, 8), pick());
                }
                b_.free(heap_, r).bind(skip);
                return;
            }
            case 10:
                b_.ldimm64(pick(), rng_());
                return;
            default: {
                uint8_t dst = pick();
                b_.mov(dst, pick());
                return;
            }
        }
    }

    void cond_jump(Label to) {
        auto op = static_cast<rof_jmp>(rnd(ROF_JMP_COUNT));
        bool is32 = rnd(2);
        uint8_t a = pick();
        if (rnd(2)) {
            b_.jmpi(op, a, static_cast<int32_t>(rng_() % 1000), to, is32);
        } else {
            b_.jmp(op, a, pick(), to, is32);
        }
    }

    // brk: the label after the innermost enclosing loop, for "break".
    void block(uint32_t items, uint32_t depth, const Label* brk) {
        uint32_t n = 1 + rnd(items);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = rnd(10);
            if (k == 0 && depth < o_.max_depth) {  // if
                Label skip = b_.label();
                cond_jump(skip);
                block(items / 2 + 1, depth + 1, brk);
                b_.bind(skip);
            } else if (k == 1 && depth < o_.max_depth && depth < 2) {  // loop
                auto c = static_cast<uint8_t>(14 + depth);
                Label head = b_.label(), out = b_.label();
                b_.movi(c, 0).bind(head);
                block(items / 2 + 1, depth + 1, &out);
                b_.loop(c, head, 1 + rnd(o_.max_trip)).bind(out);
                b_.mov(pick(), c);       // the label "out" must be on an instruction
            } else if (k == 2 && brk) {  // break
                cond_jump(*brk);
            } else {
                simple();
            }
        }
    }

    std::mt19937_64& rng_;
    GenOptions o_;
    Builder b_;
    uint8_t data_ = 0, heap_ = 1;
};

}  // namespace

Program random_program(std::mt19937_64& rng, const GenOptions& opt) {
    return Gen(rng, opt).run();
}

}  // namespace rof::prog
