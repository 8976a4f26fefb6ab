// list-find.rofs on the userspace executor: every predicate, the mask,
// every status, the loop bound (a cycle ends), and a pointer out of the
// region.
#include "runner.h"

namespace list_test {
namespace {

using namespace rof::programs::test;

enum : uint64_t { EQ = 0, NE = 1, LT = 2, GT = 3 };
enum : uint32_t { FOUND = 0, MISS = 1, TOO_LONG = 2, BADARG = 3 };

class ListFind : public ::testing::Test {
  protected:
    Loaded prog = load("list-find");
    Memory mem;
    void SetUp() override { mem.add_region("list", 65536); }

    // Node {key, next, value[48]} at @off, its value 48 bytes of @fill.
    void node(uint64_t off, uint64_t key, uint64_t next, uint8_t fill) {
        mem.set_u64("list", off, key);
        mem.set_u64("list", off + 8, next);
        std::memset(mem.bytes("list").data() + off + 16, fill, 48);
    }
    // A list of @keys, node i at @stride * (i + 1), value filled with
    // i + 1 (a stride under 64 overlaps a node's value with the next node).
    uint64_t chain(const std::vector<uint64_t>& keys, uint64_t stride = 64) {
        for (size_t i = 0; i < keys.size(); i++)
            node(stride * (i + 1), keys[i], i + 1 < keys.size() ? stride * (i + 2) : 0,
                 static_cast<uint8_t>(i + 1));
        return keys.empty() ? 0 : stride;
    }
    Result find(uint64_t head, uint64_t key, uint64_t mask, uint64_t cmp) {
        std::vector<uint8_t> a(32);
        const uint64_t w[] = {head, key, mask, cmp};
        std::memcpy(a.data(), w, sizeof(w));
        return Invoker(prog, mem).run(a);
    }
};

TEST_F(ListFind, EachPredicateFindsTheFirstMatch) {
    const uint64_t head = chain({10, 20, 30, 20});
    struct Case {
        uint64_t cmp, key, off;
    };
    for (const Case c : {Case{EQ, 20, 128}, Case{NE, 10, 128}, Case{LT, 25, 64}, Case{GT, 10, 128},
                         Case{GT, 25, 192}, Case{LT, 11, 64}}) {
        const Result r = find(head, c.key, ~0ull, c.cmp);
        ASSERT_EQ(r.status, ROF_ISA_OK);
        ASSERT_EQ(r.prog_status, FOUND) << "cmp " << c.cmp << " key " << c.key;
        ASSERT_EQ(r.resp.size(), 64u);
        EXPECT_EQ(word(r, 0), c.off);
        EXPECT_EQ(word(r, 8), mem.u64("list", c.off));
        EXPECT_EQ(r.resp[16], c.off / 64);
        EXPECT_EQ(r.resp[63], c.off / 64);
    }
}

TEST_F(ListFind, MaskSelectsTheComparedBits) {
    const uint64_t head = chain({0x1111'0005, 0x2222'0007, 0x3333'0007});
    Result r = find(head, 0x7, 0xffff, EQ);
    ASSERT_EQ(r.prog_status, FOUND);
    EXPECT_EQ(word(r, 0), 128u);
    EXPECT_EQ(word(r, 8), 0x2222'0007u);  // the key is returned unmasked
    r = find(head, 0x3333'0000, 0xffff'0000, EQ);
    EXPECT_EQ(word(r, 0), 192u);
    r = find(head, 0x4444'0005, 0, EQ);  // mask 0: every node matches
    EXPECT_EQ(word(r, 0), 64u);
    EXPECT_EQ(find(head, 0x7, 0xffff, GT).prog_status, MISS);
    EXPECT_EQ(find(head, 0, 0, NE).prog_status, MISS);
}

TEST_F(ListFind, MissAndEmptyList) {
    const uint64_t head = chain({1, 2, 3});
    Result r = find(head, 4, ~0ull, EQ);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, MISS);
    EXPECT_TRUE(r.resp.empty());
    r = find(0, 4, ~0ull, NE);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, MISS);
}

TEST_F(ListFind, TheBoundIs1024Nodes) {
    std::vector<uint64_t> keys(1024, 5);
    uint64_t head = chain(keys, 32);
    EXPECT_EQ(find(head, 6, ~0ull, EQ).prog_status, MISS);
    Result r = find(head, 5, ~0ull, EQ);
    EXPECT_EQ(word(r, 0), 32u);
    keys.back() = 6;
    head = chain(keys, 32);
    r = find(head, 6, ~0ull, EQ);  // the last node within the bound
    ASSERT_EQ(r.prog_status, FOUND);
    EXPECT_EQ(word(r, 0), 32u * 1024);
    keys.push_back(7);
    head = chain(keys, 32);
    EXPECT_EQ(find(head, 7, ~0ull, EQ).prog_status, TOO_LONG);
}

TEST_F(ListFind, ACycleEndsAtTheBound) {
    node(64, 1, 128, 1);
    node(128, 2, 64, 2);
    const Result r = find(64, 3, ~0ull, EQ);
    EXPECT_EQ(r.status, ROF_ISA_OK);
    EXPECT_EQ(r.prog_status, TOO_LONG);
    EXPECT_LE(r.executed, prog.budget);
    node(64, 1, 64, 1);  // a node that points at itself
    EXPECT_EQ(find(64, 3, ~0ull, EQ).prog_status, TOO_LONG);
}

TEST_F(ListFind, BadArguments) {
    const uint64_t head = chain({1});
    EXPECT_EQ(find(head, 1, ~0ull, 4).prog_status, BADARG);
    EXPECT_EQ(find(head, 1, ~0ull, ~0ull).prog_status, BADARG);
    Invoker inv(prog, mem);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(24)).status, ROF_ISA_EARGS);
    EXPECT_EQ(inv.run(std::vector<uint8_t>(40)).status, ROF_ISA_EARGS);
}

TEST_F(ListFind, APointerOutOfTheRegionFaults) {
    node(64, 1, 65536 - 8, 1);
    EXPECT_EQ(find(64, 2, ~0ull, EQ).status, ROF_ISA_EBOUNDS);
    EXPECT_EQ(find(65530, 2, ~0ull, EQ).status, ROF_ISA_EBOUNDS);
}

}  // namespace
}  // namespace list_test
