// SPDX-License-Identifier: MIT
// The completion path of rof::Session without a device
// (session_completion.h): responses decoded, results delivered to the
// synchronous verb or the ring poll() takes from, receives chained.
#include "session_completion.h"

#include <endian.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "uapi/rof.h"

namespace {

using rof::Code;
using rof::Completion;
using rof::Verb;
using namespace rof::detail;

// A response as rof.ko sends it: header, then @payload.
std::vector<std::byte> response(std::uint64_t id, std::uint32_t status,
                                const std::vector<std::byte>& payload) {
    rof_resp_hdr h{};
    h.id = htole64(id);
    h.status = htole32(status);
    h.len = htole32(static_cast<std::uint32_t>(payload.size()));
    std::vector<std::byte> b(sizeof(h));
    std::memcpy(b.data(), &h, sizeof(h));
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

// An INVOKE's payload: the result, then the program's response @out.
std::vector<std::byte> invoke_payload(std::uint32_t prog_status, std::uint32_t exec,
                                      std::uint32_t pc, const std::string& out) {
    rof_invoke_result r{};
    r.prog_status = htole32(prog_status);
    r.exec_status = htole32(exec);
    r.fault_pc = htole32(pc);
    r.insns = htole32(42);
    std::vector<std::byte> b(sizeof(r));
    std::memcpy(b.data(), &r, sizeof(r));
    for (char c : out) {
        b.push_back(static_cast<std::byte>(c));
    }
    return b;
}

Response parsed(const std::vector<std::byte>& b) {
    Response r;
    EXPECT_TRUE(parse_response(b.data(), static_cast<std::uint32_t>(b.size()), &r));
    return r;
}

TEST(ParseResponse, BoundsThePayloadByWhatArrived) {
    auto b = response(0x10001, ROF_ST_OK, std::vector<std::byte>(8));
    Response r;
    ASSERT_TRUE(parse_response(b.data(), static_cast<std::uint32_t>(b.size()) - 3, &r));
    EXPECT_EQ(r.id, 0x10001u);
    EXPECT_EQ(r.payload.size(), 5u);
    EXPECT_FALSE(parse_response(b.data(), sizeof(rof_resp_hdr) - 1, &r));
}

TEST(CompletionPath, AnInvokeAnswerCopiesTheResponseAndIsPolled) {
    CompletionPath c;
    c.reset(4);
    std::array<std::byte, 8> out{};
    Op op;
    op.user = 7;
    op.verb = Verb::invoke;
    op.out = out;
    c.expect();
    c.answer(op, parsed(response(0x10001, ROF_ST_OK, invoke_payload(3, 0, 0, "value"))), 5);
    std::array<Completion, 4> got;
    ASSERT_EQ(c.take(got), 1u);
    EXPECT_EQ(got[0].user, 7u);
    EXPECT_EQ(got[0].code, Code::ok);
    EXPECT_EQ(got[0].error, "");
    EXPECT_EQ(got[0].invoke.prog_status, 3u);
    EXPECT_EQ(got[0].invoke.insns, 42u);
    EXPECT_EQ(got[0].invoke.len, 5u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 5), "value");
    EXPECT_EQ(c.outstanding(), 0u);
    EXPECT_EQ(c.take(got), 0u);
}

TEST(CompletionPath, AResponseLargerThanTheBufferIsOutOfRange) {
    CompletionPath c;
    c.reset(1);
    std::array<std::byte, 2> out{};
    Op op;
    op.verb = Verb::invoke;
    op.out = out;
    op.delivery = Delivery::sync;
    c.begin_sync();
    c.answer(op, parsed(response(1, ROF_ST_OK, invoke_payload(0, 0, 0, "long"))), 5);
    ASSERT_TRUE(c.sync_done());
    EXPECT_EQ(c.sync_result().code, Code::out_of_range);
    EXPECT_EQ(c.sync_result().invoke.len, 2u);
    EXPECT_EQ(c.sync_error(),
              "session 5: the program's response of 4 bytes does not fit the 2-byte buffer");
}

TEST(CompletionPath, AFaultAndABadStatusCarryTheirMessages) {
    CompletionPath c;
    c.reset(2);
    Op op;
    op.verb = Verb::invoke;
    op.tag = 0xab;
    c.expect();
    c.expect();
    c.answer(op, parsed(response(1, ROF_ST_PROG_FAULT, invoke_payload(0, 2, 9, ""))), 5);
    c.answer(op, parsed(response(2, ROF_ST_NO_PROGRAM, {})), 5);
    std::array<Completion, 2> got;
    ASSERT_EQ(c.take(got), 2u);
    EXPECT_EQ(got[0].code, Code::aborted);
    EXPECT_EQ(got[0].error, status_message(5, ROF_ST_PROG_FAULT, 0xab, 2, 9));
    EXPECT_EQ(got[1].code, status_code(ROF_ST_NO_PROGRAM));
    EXPECT_EQ(got[1].error, status_message(5, ROF_ST_NO_PROGRAM, 0xab, 0, 0));
}

TEST(CompletionPath, OneSidedResultsComeFromTheTransferBuffer) {
    CompletionPath c;
    c.reset(2);
    std::array<std::byte, 4> dst{};
    const std::array<std::byte, 8> xfer{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    Op rd;
    rd.verb = Verb::read;
    rd.out = dst;
    rd.len = 4;
    Op faa;
    faa.verb = Verb::faa;
    faa.len = 8;
    c.expect();
    c.expect();
    c.complete_one_sided(rd, xfer.data());
    c.complete_one_sided(faa, xfer.data());
    std::array<Completion, 2> got;
    ASSERT_EQ(c.take(got), 2u);
    EXPECT_EQ(got[0].len, 4u);
    EXPECT_EQ(dst[3], std::byte{4});
    std::uint64_t v;
    std::memcpy(&v, xfer.data(), 8);
    EXPECT_EQ(got[1].value, v);
}

TEST(CompletionPath, TheKeepalivesAnswerCountsAsProgressOnly) {
    CompletionPath c;
    c.reset(1);
    Op op;
    op.delivery = Delivery::keepalive;
    std::uint64_t p = c.progress();
    c.answer(op, parsed(response(1, ROF_ST_OK, {})), 5);
    EXPECT_EQ(c.progress(), p + 1);
    std::array<Completion, 1> got;
    EXPECT_EQ(c.take(got), 0u);
    EXPECT_FALSE(c.sync_done());
}

TEST(CompletionPath, TheRingKeepsOrderAcrossItsEndAndErrorsUntilTheNextTake) {
    CompletionPath c;
    c.reset(3);
    EXPECT_EQ(c.capacity(), 3u);
    std::array<Completion, 2> got;
    std::uint64_t next = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 2; i++) {
            Op op;
            op.user = next + i;
            c.expect();
            c.deliver(op, Code::unavailable, "gone " + std::to_string(next + i));
        }
        ASSERT_EQ(c.take(got), 2u);
        for (int i = 0; i < 2; i++) {
            EXPECT_EQ(got[i].user, next + i);
            EXPECT_EQ(got[i].error, "gone " + std::to_string(next + i));
        }
        next += 2;
    }
    for (int i = 0; i < 3; i++) {
        c.expect();
    }
    EXPECT_TRUE(c.full());
}

TEST(RecvChain, ChainsWhatIsQueuedUntilCleared) {
    RecvChain r;
    r.reset(3);
    EXPECT_EQ(r.head(), nullptr);
    std::array<std::byte, 64> buf{};
    r.add(11, buf.data(), 32, 9);
    r.add(12, buf.data() + 32, 32, 9);
    ibv_recv_wr* w = r.head();
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->wr_id, 11u);
    ASSERT_NE(w->next, nullptr);
    EXPECT_EQ(w->next->wr_id, 12u);
    EXPECT_EQ(w->next->sg_list->addr, reinterpret_cast<std::uintptr_t>(buf.data() + 32));
    EXPECT_EQ(w->next->sg_list->lkey, 9u);
    EXPECT_EQ(w->next->next, nullptr);
    r.clear();
    EXPECT_EQ(r.head(), nullptr);
}

}  // namespace
