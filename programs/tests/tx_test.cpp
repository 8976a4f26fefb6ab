// tx-prepare.rofs (PRISM-TX prepare validation) on the userspace executor:
// read and write validation and the C update, every status, and races of
// conflicting prepares on one key.
#include <atomic>
#include <barrier>
#include <thread>

#include "runner.h"

namespace tx_test {
namespace {

using namespace rof::programs::test;

enum : uint64_t { READ = 0, WRITE = 1, DONE = 2 };
enum : uint32_t { OK = 0, CONFLICT = 1, BADARG = 2 };

std::vector<uint8_t> tx_args(uint64_t key, uint64_t op, uint64_t ts, uint64_t rc) {
    std::vector<uint8_t> a(32);
    const uint64_t w[] = {key, op, ts, rc};
    std::memcpy(a.data(), w, sizeof(w));
    return a;
}

// The entry's words before the invocation, as the response gives them.
struct Seen {
    uint64_t pr, pw, c;
};
Seen seen(const Result& r) {
    Seen s{};
    EXPECT_EQ(r.resp.size(), 24u);
    if (r.resp.size() == 24)
        std::memcpy(&s, r.resp.data(), 24);
    return s;
}

class Tx : public ::testing::Test {
  protected:
    Loaded prog = load("tx-prepare");
    Memory mem;
    void SetUp() override { mem.add_region("tx", 32768); }
    Result run(uint64_t key, uint64_t op, uint64_t ts, uint64_t rc = 0) {
        return Invoker(prog, mem).run(tx_args(key, op, ts, rc));
    }
    uint64_t pr(uint64_t key) { return mem.u64("tx", key * 32); }
    uint64_t pw(uint64_t key) { return mem.u64("tx", key * 32 + 8); }
    uint64_t c(uint64_t key) { return mem.u64("tx", key * 32 + 16); }
    void entry(uint64_t key, uint64_t pr_, uint64_t pw_, uint64_t c_) {
        mem.set_u64("tx", key * 32, pr_);
        mem.set_u64("tx", key * 32 + 8, pw_);
        mem.set_u64("tx", key * 32 + 16, c_);
    }
};

TEST_F(Tx, ReadValidationRecordsTheRead) {
    entry(5, 10, 20, 20);
    Result r = run(5, READ, 30, 20);
    ASSERT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, OK);
    const Seen s = seen(r);
    EXPECT_EQ(s.pr, 10u);
    EXPECT_EQ(s.pw, 20u);
    EXPECT_EQ(s.c, 20u);
    EXPECT_EQ(pr(5), 30u);
    EXPECT_EQ(pw(5), 20u);
    // an older reader passes without lowering PR
    r = run(5, READ, 25, 20);
    EXPECT_EQ(r.prog_status, OK);
    EXPECT_EQ(pr(5), 30u);
}

TEST_F(Tx, ReadValidationFailsAfterAPreparedWrite) {
    entry(5, 10, 40, 20);  // a write at 40 prepared since the read of C = 20
    const Result r = run(5, READ, 50, 20);
    ASSERT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, CONFLICT);
    EXPECT_EQ(seen(r).pw, 40u);
    EXPECT_EQ(pr(5), 10u);
}

TEST_F(Tx, WriteValidation) {
    entry(1, 10, 20, 20);
    Result r = run(1, WRITE, 30);
    EXPECT_EQ(r.prog_status, OK);
    EXPECT_EQ(pw(1), 30u);
    // not the most recent write: PW unchanged
    r = run(1, WRITE, 25);
    EXPECT_EQ(r.prog_status, CONFLICT);
    EXPECT_EQ(pw(1), 30u);
    r = run(1, WRITE, 30);
    EXPECT_EQ(r.prog_status, CONFLICT);
    // newer than PW but a later transaction read the key: PW stays raised
    entry(2, 50, 20, 20);
    r = run(2, WRITE, 40);
    EXPECT_EQ(r.prog_status, CONFLICT);
    EXPECT_EQ(seen(r).pr, 50u);
    EXPECT_EQ(pw(2), 40u);
    EXPECT_EQ(run(2, WRITE, 50).prog_status, CONFLICT);  // TS = PR
    EXPECT_EQ(run(2, WRITE, 51).prog_status, OK);
}

TEST_F(Tx, DoneRaisesCOnly) {
    entry(3, 10, 30, 20);
    Result r = run(3, DONE, 30);
    EXPECT_EQ(r.prog_status, OK);
    EXPECT_EQ(seen(r).c, 20u);
    EXPECT_EQ(c(3), 30u);
    r = run(3, DONE, 25);
    EXPECT_EQ(r.prog_status, OK);
    EXPECT_EQ(seen(r).c, 30u);
    EXPECT_EQ(c(3), 30u);
    EXPECT_EQ(pr(3), 10u);
    EXPECT_EQ(pw(3), 30u);
}

TEST_F(Tx, ATransactionReadThenWritesItsKeys) {
    // T1 (ts 0x101) read key 0 at C = 0 and writes key 1; both pass
    ASSERT_EQ(run(0, READ, 0x101, 0).prog_status, OK);
    ASSERT_EQ(run(1, WRITE, 0x101).prog_status, OK);
    ASSERT_EQ(run(1, DONE, 0x101).prog_status, OK);
    // T2 (ts 0x102) read key 1 before T1 committed (C = 0): conflict
    EXPECT_EQ(run(1, READ, 0x102, 0).prog_status, CONFLICT);
    // T3 read it after (C = 0x101) and passes; an older write now fails
    EXPECT_EQ(run(1, READ, 0x201, 0x101).prog_status, OK);
    EXPECT_EQ(run(1, WRITE, 0x1ff).prog_status, CONFLICT);
}

TEST_F(Tx, BadArguments) {
    EXPECT_EQ(run(1024, READ, 1).prog_status, BADARG);
    EXPECT_EQ(run(0, 3, 1).prog_status, BADARG);
    EXPECT_EQ(run(0, ~0ull, 1).prog_status, BADARG);
    Invoker inv(prog, mem);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(24)).status, ROF_ISA_EARGS);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(33)).status, ROF_ISA_EARGS);
    EXPECT_EQ(pr(0) | pw(0) | c(0), 0u);
}

// A reader at a later timestamp and a writer at an earlier one on a key the
// reader saw at C = 0 conflict: whichever prepares first, at most one wins
// (exactly one: the loser sees the winner's timestamp).
TEST_F(Tx, ConflictingReadAndWriteNeverBothWin) {
    constexpr uint64_t kKeys = 1024;
    std::barrier start(2);
    std::vector<uint32_t> reader(kKeys), writer(kKeys);
    std::thread r([&] {
        Invoker inv(prog, mem);
        for (uint64_t k = 0; k < kKeys; k++) {
            start.arrive_and_wait();
            reader[k] = inv.run(tx_args(k, READ, 2 * k + 3, 0)).prog_status;
        }
    });
    std::thread w([&] {
        Invoker inv(prog, mem);
        for (uint64_t k = 0; k < kKeys; k++) {
            start.arrive_and_wait();
            writer[k] = inv.run(tx_args(k, WRITE, 2 * k + 2, 0)).prog_status;
        }
    });
    r.join();
    w.join();
    for (uint64_t k = 0; k < kKeys; k++) {
        ASSERT_TRUE((reader[k] == OK) != (writer[k] == OK))
            << "key " << k << ": reader " << reader[k] << ", writer " << writer[k];
        EXPECT_EQ(pr(k), reader[k] == OK ? 2 * k + 3 : 0);
        EXPECT_EQ(pw(k), 2 * k + 2);  // a failed write check leaves it raised
    }
}

// Writers with distinct timestamps race for one key's PW: every winner saw
// a lower PW, every loser a PW at least its own, and PW ends at the top.
TEST_F(Tx, RacingWritersOnOneKey) {
    constexpr int kThreads = 4, kRounds = 3000;
    std::barrier start(kThreads);
    std::atomic<uint64_t> wins{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&, t] {
            Invoker inv(prog, mem);
            start.arrive_and_wait();
            for (uint64_t round = 1; round <= kRounds; round++) {
                const uint64_t ts = round << 8 | static_cast<uint64_t>(t + 1);
                const Result r = inv.run(tx_args(7, WRITE, ts, 0));
                ASSERT_EQ(r.status, ROF_ISA_OK);
                if (r.prog_status == OK) {
                    ASSERT_LT(seen(r).pw, ts);
                    wins++;
                } else {
                    ASSERT_EQ(r.prog_status, CONFLICT);
                    ASSERT_GE(seen(r).pw, ts);
                }
            }
        });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(pw(7), uint64_t{kRounds} << 8 | kThreads);
    EXPECT_GE(wins.load(), 1u);  // the top timestamp always wins
    EXPECT_EQ(pr(7), 0u);
}

}  // namespace
}  // namespace tx_test
