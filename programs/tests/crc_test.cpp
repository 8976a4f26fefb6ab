// crc-read.rofs (StRoM's CRC-consistent read) on the userspace executor:
// every status, and readers against a writer that tears the record: a read
// that says OK is always a whole record.
#include <array>
#include <atomic>
#include <barrier>
#include <thread>

#include "runner.h"

namespace crc_test {
namespace {

using namespace rof::programs::test;

enum : uint32_t { OK = 0, TORN = 1, BADARG = 2 };

// Record payload number @seq: its first 8 bytes are @seq, the rest follow
// from it, so a payload mixing two writes is recognisable.
std::array<uint8_t, 56> payload(uint64_t seq) {
    std::array<uint8_t, 56> p{};
    std::memcpy(p.data(), &seq, 8);
    for (size_t i = 8; i < p.size(); i++)
        p[i] = static_cast<uint8_t>(seq * 13 + i);
    return p;
}

uint64_t crc_of(const uint8_t* p) {
    return rof_exec_crc64(0, p, 56);
}

// Whether @rec (64 bytes) is payload(seq) for its own seq, with its CRC.
bool whole(const std::vector<uint8_t>& rec) {
    uint64_t seq, crc;
    std::memcpy(&seq, rec.data(), 8);
    std::memcpy(&crc, rec.data() + 56, 8);
    const auto p = payload(seq);
    return std::equal(p.begin(), p.end(), rec.begin()) && crc == crc_of(p.data());
}

std::vector<uint8_t> idx_args(uint64_t i) {
    std::vector<uint8_t> a(8);
    std::memcpy(a.data(), &i, 8);
    return a;
}

class Crc : public ::testing::Test {
  protected:
    Loaded prog = load("crc-read");
    Memory mem;
    void SetUp() override { mem.add_region("records", 65536); }
    void put(uint64_t i, uint64_t seq) {
        const auto p = payload(seq);
        std::memcpy(mem.bytes("records").data() + i * 64, p.data(), 56);
        mem.set_u64("records", i * 64 + 56, crc_of(p.data()));
    }
    Result read(uint64_t i) { return Invoker(prog, mem).run(idx_args(i)); }
};

TEST_F(Crc, AWholeRecordReadsOk) {
    put(0, 1);
    put(1023, 77);
    for (const uint64_t i : {0ull, 1023ull}) {
        const Result r = read(i);
        ASSERT_EQ(r.status, ROF_ISA_OK);
        EXPECT_EQ(r.prog_status, OK);
        ASSERT_EQ(r.resp.size(), 64u);
        EXPECT_TRUE(whole(r.resp));
        EXPECT_TRUE(std::equal(r.resp.begin(), r.resp.end(),
                               mem.bytes("records").begin() + static_cast<long>(i) * 64));
    }
}

TEST_F(Crc, ATornOrUnwrittenRecordIsTornAfterItsRetries) {
    put(5, 9);
    mem.bytes("records")[5 * 64 + 30] ^= 1;  // payload changed, CRC not yet
    Result r = read(5);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, TORN);
    EXPECT_TRUE(r.resp.size() == 64u || r.resp.empty());
    r = read(6);  // all zero: the CRC of 56 zero bytes is not 0
    EXPECT_EQ(r.prog_status, TORN);
    EXPECT_LE(r.executed, prog.budget);
}

TEST_F(Crc, BadArguments) {
    EXPECT_EQ(read(1024).prog_status, BADARG);
    EXPECT_EQ(read(~0ull).prog_status, BADARG);
    Invoker inv(prog, mem);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(4)).status, ROF_ISA_EARGS);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(16)).status, ROF_ISA_EARGS);
}

// A writer rewrites record 3 byte by byte, CRC last, as fast as it can,
// while readers read it: an OK read is always a whole record.
TEST_F(Crc, ReadersNeverSeeATornRecordAsOk) {
    constexpr int kReaders = 2, kReads = 20000;
    put(3, 0);
    uint8_t* rec = mem.bytes("records").data() + 3 * 64;
    std::barrier start(kReaders + 1);
    std::atomic<int> reading{kReaders};
    std::atomic<uint64_t> ok{0}, torn{0};
    std::thread writer([&] {
        start.arrive_and_wait();
        for (uint64_t seq = 1; reading > 0; seq++) {
            const auto p = payload(seq);
            for (size_t i = 0; i < p.size(); i++)
                __atomic_store_n(rec + i, p[i], __ATOMIC_RELAXED);
            __atomic_store_n(reinterpret_cast<uint64_t*>(rec + 56), crc_of(p.data()),
                             __ATOMIC_RELEASE);
        }
    });
    std::vector<std::thread> readers;
    for (int t = 0; t < kReaders; t++)
        readers.emplace_back([&] {
            Invoker inv(prog, mem);
            start.arrive_and_wait();
            [&] {
                for (int n = 0; n < kReads; n++) {
                    const Result r = inv.run(idx_args(3));
                    ASSERT_EQ(r.status, ROF_ISA_OK);
                    if (r.prog_status == TORN) {
                        torn++;
                        continue;
                    }
                    ASSERT_EQ(r.prog_status, OK);
                    ASSERT_TRUE(whole(r.resp));
                    ok++;
                }
            }();
            reading--;
        });
    for (auto& t : readers)
        t.join();
    writer.join();
    EXPECT_EQ(read(3).prog_status, OK);  // quiet again: whole
    RecordProperty("ok", std::to_string(ok.load()));
    RecordProperty("torn", std::to_string(torn.load()));
}

}  // namespace
}  // namespace crc_test
