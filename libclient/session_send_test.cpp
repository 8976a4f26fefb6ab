// SPDX-License-Identifier: MIT
// The send path of rof::Session without a device (session_send.h): slots,
// credits, selective signalling, the batch and the FIFO of entries a
// signalled completion retires.
#include "session_send.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using namespace rof::detail;

TEST(SlotPool, HandsOutEachSlotOnceAndTakesThemBack) {
    SlotPool p;
    p.reset(3);
    EXPECT_EQ(p.capacity(), 3u);
    std::uint32_t a = p.acquire(), b = p.acquire(), c = p.acquire();
    EXPECT_TRUE(p.empty());
    EXPECT_EQ(p.in_use(), 3u);
    EXPECT_NE(a, b);
    EXPECT_NE(b, c);
    EXPECT_NE(a, c);
    p.release(b);
    EXPECT_EQ(p.acquire(), b);
    p.release(a);
    p.release(c);
    p.release(b);
    EXPECT_EQ(p.in_use(), 0u);
}

TEST(SendQueue, OnlyTheLastOfABatchIsSignalledAndRetiresTheBatch) {
    SendQueue q;
    q.reset(16, 8);
    EXPECT_EQ(q.add(false), 0u);
    EXPECT_EQ(q.add(false), 0u);
    EXPECT_EQ(q.add(true), 3u);
    EXPECT_EQ(q.used(), 3u);
    EXPECT_EQ(q.room(), 13u);
    q.retire(3);
    EXPECT_EQ(q.used(), 0u);
}

TEST(SendQueue, LongBatchesAreSignalledEveryNth) {
    SendQueue q;
    q.reset(16, 8);
    std::uint32_t retired = 0, signalled = 0;
    for (int i = 0; i < 12; i++) {
        std::uint32_t r = q.add(i == 11);
        retired += r;
        signalled += r != 0;
    }
    EXPECT_EQ(signalled, 2u);  // the 8th and the 12th
    EXPECT_EQ(retired, 12u);
    EXPECT_EQ(q.used(), 12u);
    EXPECT_EQ(q.unsignalled(), 0u);
}

TEST(SendQueue, NeverMoreUsedThanPostedMinusRetired) {
    // A model run: batches of 1..7 posted while room, completions retire
    // them in order; used never exceeds the depth.
    SendQueue q;
    q.reset(10, 5);
    std::uint32_t pending[64], np = 0, head = 0;
    for (int round = 0; round < 200; round++) {
        std::uint32_t n = 1 + round % 7;
        if (q.room() >= n) {
            for (std::uint32_t i = 0; i < n; i++) {
                if (std::uint32_t r = q.add(i + 1 == n)) {
                    pending[(head + np++) % 64] = r;
                }
            }
        } else {
            ASSERT_GT(np, 0u);
            q.retire(pending[head]);
            head = (head + 1) % 64;
            np--;
        }
        ASSERT_LE(q.used(), q.depth());
    }
}

// A send path of 3 request slots (2 credits), 2 one-sided slots and a send
// queue of 6, over a fake buffer.
class SendPathTest : public ::testing::Test {
  protected:
    void SetUp() override {
        send.reset(SendLimits{.requests = 3, .one_sided = 2, .sq_depth = 6, .lkey = 0x77});
        send.set_credits(2);
    }
    // Batches a request of slot @slot as the session does.
    ibv_send_wr& batch_request(std::uint32_t slot) {
        return send.add(wr_id(WrKind::request, slot), buf + slot * 64, 16);
    }
    SendPath send;
    std::byte buf[512]{};
};

TEST_F(SendPathTest, ACreditAndASlotPerRequest) {
    EXPECT_TRUE(send.can_request());
    std::uint32_t a = send.acquire_request();
    batch_request(a);
    std::uint32_t b = send.acquire_request();
    batch_request(b);
    EXPECT_EQ(send.outstanding(), 2u);
    EXPECT_FALSE(send.has_credit());
    EXPECT_TRUE(send.request_free());  // the keepalive's slot is left
    EXPECT_FALSE(send.can_request());
    send.answered(a);
    EXPECT_TRUE(send.can_request());
    EXPECT_EQ(send.outstanding(), 1u);
}

TEST_F(SendPathTest, ResponseIdsNameTheirSlotOnce) {
    std::uint32_t a = send.acquire_request();
    batch_request(a);
    std::uint64_t id1 = send.request_id(a);
    std::uint64_t id2 = send.request_id(a);
    EXPECT_NE(id1, id2);  // a sequence number above the slot
    EXPECT_EQ(id1 & 0xffff, a + 1);
    EXPECT_EQ(send.answer_slot(id2), a);
    send.answered(a);
    EXPECT_EQ(send.answer_slot(id2), UINT32_MAX);           // answered already
    EXPECT_EQ(send.answer_slot(0x10000 | 99), UINT32_MAX);  // no such slot
}

TEST_F(SendPathTest, SealChainsTheBatchAndSignalsItsLast) {
    std::uint32_t a = send.acquire_request();
    batch_request(a).opcode = IBV_WR_SEND;
    std::uint32_t o = send.acquire_one_sided();
    send.add(wr_id(WrKind::one_sided, o), buf + 256, 8).opcode = IBV_WR_RDMA_READ;
    EXPECT_EQ(send.batched(), 2u);
    bool had_request = false;
    ibv_send_wr* w = send.seal(&had_request);
    ASSERT_NE(w, nullptr);
    EXPECT_TRUE(had_request);
    EXPECT_EQ(send.batched(), 0u);
    EXPECT_EQ(w->sg_list->lkey, 0x77u);
    EXPECT_EQ(w->sg_list->addr, reinterpret_cast<std::uintptr_t>(buf + a * 64));
    EXPECT_FALSE(w->send_flags & IBV_SEND_SIGNALED);
    EXPECT_EQ(wr_retire(w->wr_id), 0u);
    ASSERT_NE(w->next, nullptr);
    EXPECT_TRUE(w->next->send_flags & IBV_SEND_SIGNALED);
    EXPECT_EQ(wr_retire(w->next->wr_id), 2u);
    EXPECT_EQ(wr_slot(w->next->wr_id), o);
    EXPECT_EQ(w->next->next, nullptr);
    EXPECT_EQ(send.queue().used(), 2u);
    EXPECT_EQ(send.fifo_size(), 2u);
    // Nothing batched: nothing to post.
    EXPECT_EQ(send.seal(&had_request), nullptr);
    EXPECT_FALSE(had_request);
}

TEST_F(SendPathTest, RetireCompletesOneSidedAndFreesAnsweredRequests) {
    std::uint32_t a = send.acquire_request();
    batch_request(a);
    std::uint32_t o = send.acquire_one_sided();
    send.add(wr_id(WrKind::one_sided, o), buf + 256, 8);
    bool had_request = false;
    ibv_send_wr* w = send.seal(&had_request);
    std::vector<std::uint32_t> done;
    auto one = [&](std::uint32_t slot) {
        done.push_back(slot);
        send.release_one_sided(slot);
    };
    // The request's response came first: the retire frees its slot.
    send.answered(a);
    send.retire(wr_retire(w->next->wr_id), one);
    EXPECT_EQ(done, std::vector<std::uint32_t>{o});
    EXPECT_EQ(send.queue().used(), 0u);
    EXPECT_EQ(send.fifo_size(), 0u);
    EXPECT_TRUE(send.one_sided_free());
    EXPECT_EQ(send.requests_taken(), (std::vector<bool>{false, false, false}));
}

TEST_F(SendPathTest, ARetiredRequestWaitsForItsResponse) {
    std::uint32_t a = send.acquire_request();
    batch_request(a);
    bool had_request = false;
    ibv_send_wr* w = send.seal(&had_request);
    send.retire(wr_retire(w->wr_id), [](std::uint32_t) { FAIL() << "no one-sided op"; });
    EXPECT_TRUE(send.request(a).retired);
    std::vector<bool> taken = send.requests_taken();
    EXPECT_TRUE(taken[a]);  // the response still owns the slot
    send.answered(a);
    send.release_request(a);
    EXPECT_FALSE(send.requests_taken()[a]);
}

TEST_F(SendPathTest, HasRoomCountsTheBatchAgainstTheSendQueue) {
    for (std::uint32_t i = 0; i < 6; i++) {
        ASSERT_TRUE(send.has_room()) << i;
        send.add(wr_id(WrKind::one_sided, 0), buf, 8);
    }
    EXPECT_FALSE(send.has_room());
    bool had_request = true;
    send.seal(&had_request);
    EXPECT_FALSE(had_request);
    EXPECT_FALSE(send.has_room());  // posted, not retired
    send.retire(6, [](std::uint32_t) {});
    EXPECT_TRUE(send.has_room());
}

TEST_F(SendPathTest, AKeepaliveGoesAloneSignalledAndRetiresInOrder) {
    std::uint32_t a = send.acquire_request();
    batch_request(a);  // the caller's, not flushed yet
    std::uint32_t k = send.acquire_request();
    ibv_send_wr w{};
    w.wr_id = wr_id(WrKind::request, k);
    send.add_alone(w);
    EXPECT_TRUE(w.send_flags & IBV_SEND_SIGNALED);
    EXPECT_EQ(wr_retire(w.wr_id), 1u);
    EXPECT_EQ(send.outstanding(), 2u);
    EXPECT_EQ(send.fifo_size(), 1u);
    send.retire(1, [](std::uint32_t) {});
    EXPECT_TRUE(send.request(k).retired);
    EXPECT_FALSE(send.request(a).retired);  // still in the batch
}

TEST_F(SendPathTest, ClearInFlightForgetsTheBatchAndTheQueue) {
    std::uint32_t a = send.acquire_request();
    batch_request(a);
    send.clear_in_flight();
    EXPECT_EQ(send.outstanding(), 0u);
    EXPECT_EQ(send.batched(), 0u);
    EXPECT_EQ(send.queue().used(), 0u);
    EXPECT_TRUE(send.requests_taken()[a]);  // the session releases it
    bool had_request = true;
    EXPECT_EQ(send.seal(&had_request), nullptr);
    EXPECT_FALSE(had_request);
}

TEST(SlotPool, TakenListsTheSlotsHandedOut) {
    SlotPool p;
    p.reset(4);
    std::uint32_t a = p.acquire();
    std::uint32_t b = p.acquire();
    p.release(a);
    std::vector<bool> t = p.taken();
    ASSERT_EQ(t.size(), 4u);
    EXPECT_FALSE(t[a]);
    EXPECT_TRUE(t[b]);
    EXPECT_EQ(std::count(t.begin(), t.end(), true), 1);
}

}  // namespace
