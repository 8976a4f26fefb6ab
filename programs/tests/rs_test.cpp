// rs-write.rofs and rs-read.rofs (PRISM-RS, ABD on one replica) on the
// userspace executor: every status, the buffers' life cycle on the free
// list, and races of writers and readers over one register.
#include <atomic>
#include <barrier>
#include <thread>

#include "runner.h"

namespace rs_test {
namespace {

using namespace rof::programs::test;

enum : uint32_t { WR_OK = 0, WR_STALE = 1, WR_FULL = 2, WR_BADARG = 3 };
enum : uint32_t { RD_OK = 0, RD_EMPTY = 1, RD_BUSY = 2, RD_BADARG = 3 };
constexpr uint64_t kBlocks = 239;
constexpr uint64_t kRegs = 61440;  // register i at kRegs + 16 * i

// The value a test writes with @tag: its length and bytes follow from it.
std::string value_of(uint64_t tag) {
    std::string v(tag % 233, '\0');
    for (size_t i = 0; i < v.size(); i++)
        v[i] = static_cast<char>((tag * 31 + i) & 0xff);
    return v;
}

std::vector<uint8_t> write_args(uint64_t reg, uint64_t tag, const std::string& value) {
    std::vector<uint8_t> a(16 + value.size());
    std::memcpy(a.data(), &reg, 8);
    std::memcpy(a.data() + 8, &tag, 8);
    std::memcpy(a.data() + 16, value.data(), value.size());
    return a;
}

std::vector<uint8_t> read_args(uint64_t reg) {
    std::vector<uint8_t> a(8);
    std::memcpy(a.data(), &reg, 8);
    return a;
}

// An rs-read answer: {tag, len, value} and nothing more.
struct Read {
    uint64_t tag = 0;
    std::string value;
};
Read decode(const Result& r) {
    EXPECT_GE(r.resp.size(), 16u);
    Read out{word(r, 0), {}};
    EXPECT_EQ(word(r, 8), r.resp.size() - 16);
    out.value.assign(r.resp.begin() + 16, r.resp.end());
    return out;
}

class Rs : public ::testing::Test {
  protected:
    Loaded wprog = load("rs-write");
    Loaded rprog = load("rs-read");
    Memory mem;
    void SetUp() override {
        mem.add_region("rs", 65536);
        mem.add_freelist("rs", 0, 256, kBlocks);
    }
    Result write(uint64_t reg, uint64_t tag, const std::string& value) {
        return Invoker(wprog, mem).run(write_args(reg, tag, value));
    }
    Result read(uint64_t reg) { return Invoker(rprog, mem).run(read_args(reg)); }
    size_t free_count() { return mem.free_blocks("rs", 0).size(); }
};

TEST_F(Rs, ReadOfANeverWrittenRegisterIsEmpty) {
    const Result r = read(7);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, RD_EMPTY);
}

TEST_F(Rs, WriteThenReadReturnsTagAndValue) {
    Result w = write(3, 0x105, "hello");
    ASSERT_EQ(w.status, ROF_ISA_OK);
    EXPECT_EQ(w.prog_status, WR_OK);
    EXPECT_EQ(word(w, 0), 0u);  // nothing installed before
    EXPECT_EQ(free_count(), kBlocks - 1);
    const Result r = read(3);
    ASSERT_EQ(r.prog_status, RD_OK);
    const Read v = decode(r);
    EXPECT_EQ(v.tag, 0x105u);
    EXPECT_EQ(v.value, "hello");
    EXPECT_EQ(read(2).prog_status, RD_EMPTY);  // other registers untouched
}

TEST_F(Rs, ANewerTagReplacesAndFreesTheOldBuffer) {
    ASSERT_EQ(write(0, 0x101, "one").prog_status, WR_OK);
    const uint64_t old_buf = mem.u64("rs", kRegs + 8);
    const Result w = write(0, 0x201, "two");
    ASSERT_EQ(w.prog_status, WR_OK);
    EXPECT_EQ(word(w, 0), 0x101u);
    EXPECT_EQ(free_count(), kBlocks - 1);
    const auto blocks = mem.free_blocks("rs", 0);
    EXPECT_NE(std::find(blocks.begin(), blocks.end(), old_buf), blocks.end());
    EXPECT_EQ(decode(read(0)).value, "two");
}

TEST_F(Rs, AnOlderOrEqualTagIsStaleAndTakesNoBuffer) {
    ASSERT_EQ(write(0, 0x201, "new").prog_status, WR_OK);
    for (const uint64_t tag : {0x201ull, 0x1ffull, 0x101ull}) {
        const Result w = write(0, tag, "old");
        ASSERT_EQ(w.status, ROF_ISA_OK);
        EXPECT_EQ(w.prog_status, WR_STALE);
        EXPECT_EQ(word(w, 0), 0x201u);  // the tag that beat it
    }
    EXPECT_EQ(free_count(), kBlocks - 1);
    EXPECT_EQ(decode(read(0)).value, "new");
}

TEST_F(Rs, ValueLengths) {
    ASSERT_EQ(write(1, 0x101, "").prog_status, WR_OK);
    EXPECT_EQ(read(1).resp.size(), 16u);
    const std::string big(232, 'x');
    ASSERT_EQ(write(1, 0x201, big).prog_status, WR_OK);
    EXPECT_EQ(decode(read(1)).value, big);
    EXPECT_EQ(write(1, 0x301, std::string(233, 'y')).status, ROF_ISA_EARGS);
    EXPECT_EQ(free_count(), kBlocks - 1);
}

TEST_F(Rs, BadArguments) {
    EXPECT_EQ(write(256, 0x101, "v").prog_status, WR_BADARG);
    EXPECT_EQ(write(0, 0, "v").prog_status, WR_BADARG);
    EXPECT_EQ(read(256).prog_status, RD_BADARG);
    EXPECT_EQ(Invoker(wprog, mem).run(std::vector<uint8_t>(15)).status, ROF_ISA_EARGS);
    EXPECT_EQ(Invoker(rprog, mem).run(std::vector<uint8_t>(4)).status, ROF_ISA_EARGS);
    EXPECT_EQ(Invoker(rprog, mem).run(std::vector<uint8_t>(16)).status, ROF_ISA_EARGS);
    EXPECT_EQ(free_count(), kBlocks);
}

TEST(RsHeap, AFullHeapIsAStatusAndInstallsNothing) {
    Memory mem;
    mem.add_region("rs", 65536);
    mem.add_freelist("rs", 0, 256, 1);
    const auto w = load("rs-write");
    Invoker inv(w, mem);
    ASSERT_EQ(inv.run(write_args(0, 0x101, "a")).prog_status, WR_OK);
    const Result r = inv.run(write_args(1, 0x101, "b"));
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, WR_FULL);
    EXPECT_EQ(mem.u64("rs", kRegs + 16), 0u);
    EXPECT_TRUE(mem.free_blocks("rs", 0).empty());
}

TEST_F(Rs, ATornRegisterIsNotReturned) {
    ASSERT_EQ(write(0, 0x101, "one").prog_status, WR_OK);
    ASSERT_EQ(write(1, 0x201, "two").prog_status, WR_OK);
    // register 0's tag with register 1's buffer: as a read between the two
    // stores of a wide CAS would see it
    mem.set_u64("rs", kRegs + 8, mem.u64("rs", kRegs + 24));
    const Result r = read(0);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, RD_BUSY);
}

// Writers with distinct tags race on one register while readers read it:
// the highest tag ends installed with its value, every other buffer is
// back on the free list once, and every read that succeeds is a whole
// value that matches its tag.
TEST_F(Rs, RacingWritersAndReaders) {
    constexpr int kWriters = 4, kReaders = 2, kRounds = 2000;
    std::barrier start(kWriters + kReaders);
    std::atomic<int> writing{kWriters};
    std::atomic<uint64_t> reads_ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; t++)
        threads.emplace_back([&, t] {
            Invoker inv(wprog, mem);
            start.arrive_and_wait();
            [&] {
                for (uint64_t round = 1; round <= kRounds; round++) {
                    // odd writers go up, even ones down: winners and losers
                    const uint64_t ts = t % 2 ? round : kRounds + 1 - round;
                    const uint64_t tag = ts << 8 | static_cast<uint64_t>(t + 1);
                    const Result r = inv.run(write_args(0, tag, value_of(tag)));
                    ASSERT_EQ(r.status, ROF_ISA_OK) << "fault at " << r.fault_pc;
                    ASSERT_TRUE(r.prog_status == WR_OK || r.prog_status == WR_STALE);
                }
            }();
            writing--;
        });
    for (int t = 0; t < kReaders; t++)
        threads.emplace_back([&] {
            Invoker inv(rprog, mem);
            start.arrive_and_wait();
            while (writing > 0) {
                const Result r = inv.run(read_args(0));
                ASSERT_EQ(r.status, ROF_ISA_OK) << "fault at " << r.fault_pc;
                if (r.prog_status != RD_OK) {
                    ASSERT_TRUE(r.prog_status == RD_EMPTY || r.prog_status == RD_BUSY);
                    continue;
                }
                const Read v = decode(r);
                ASSERT_EQ(v.value, value_of(v.tag)) << "tag " << v.tag;
                reads_ok++;
            }
        });
    for (auto& t : threads)
        t.join();
    const uint64_t top = uint64_t{kRounds} << 8 | kWriters;
    EXPECT_EQ(mem.u64("rs", kRegs), top);
    const Result r = read(0);
    ASSERT_EQ(r.prog_status, RD_OK);
    const Read v = decode(r);
    EXPECT_EQ(v.tag, top);
    EXPECT_EQ(v.value, value_of(top));
    EXPECT_EQ(free_count(), kBlocks - 1);  // throws on a double free
    RecordProperty("reads_ok", std::to_string(reads_ok.load()));
}

// Writers on different registers share the heap: each register ends with
// its highest tag, and the heap holds exactly one buffer per register.
TEST_F(Rs, WritersOnManyRegistersShareTheHeap) {
    constexpr int kThreads = 4, kRegs = 16, kRounds = 300;
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&, t] {
            Invoker inv(wprog, mem);
            start.arrive_and_wait();
            for (uint64_t round = 1; round <= kRounds; round++)
                for (uint64_t reg = 0; reg < kRegs; reg++) {
                    const uint64_t tag = round << 8 | static_cast<uint64_t>(t + 1);
                    const Result r = inv.run(write_args(reg, tag, value_of(tag)));
                    ASSERT_EQ(r.status, ROF_ISA_OK);
                    ASSERT_TRUE(r.prog_status == WR_OK || r.prog_status == WR_STALE);
                }
        });
    for (auto& t : threads)
        t.join();
    for (uint64_t reg = 0; reg < kRegs; reg++) {
        const Read v = decode(read(reg));
        EXPECT_EQ(v.tag, uint64_t{kRounds} << 8 | kThreads);
        EXPECT_EQ(v.value, value_of(v.tag));
    }
    EXPECT_EQ(free_count(), kBlocks - kRegs);
}

}  // namespace
}  // namespace rs_test
