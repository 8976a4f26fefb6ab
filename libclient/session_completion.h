// SPDX-License-Identifier: MIT
// The completion path of rof::Session: what a response or a retired
// one-sided operation becomes.  A response is decoded (its header, an
// INVOKE's result, a status's code and message) into a Completion, which
// goes to the synchronous verb waiting for it or into the ring that poll()
// takes from; the receive buffers consumed are queued to be re-posted in
// one chain.  No device calls: the session polls the CQ and posts the
// receives (session.cpp), so all of it is tested without one
// (session_send_test.cpp).  Nothing here allocates after reset() except
// the message of a failed operation.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rof/session.h"
#include "session_send.h"

namespace rof::detail {

// A response as it arrived in a receive buffer.
struct Response {
    std::uint64_t id = 0;
    std::uint32_t status = 0;
    std::span<const std::byte> payload;  // bounded by what arrived
};
// False if @buf (@byte_len bytes received) is too short for a header.
bool parse_response(const std::byte* buf, std::uint32_t byte_len, Response* out) noexcept;

// The receive work requests to re-post, chained: one ibv_post_recv per
// drain of the CQ.
class RecvChain {
  public:
    void reset(std::uint32_t n);
    void add(std::uint64_t wr_id, const std::byte* buf, std::uint32_t len,
             std::uint32_t lkey) noexcept;
    // The head of the chain (nullptr if empty); clear() after posting it.
    ibv_recv_wr* head() noexcept { return n_ ? wr_.data() : nullptr; }
    std::uint32_t size() const noexcept { return n_; }
    void clear() noexcept { n_ = 0; }

  private:
    std::vector<ibv_recv_wr> wr_;
    std::vector<ibv_sge> sge_;
    std::uint32_t n_ = 0;
};

class CompletionPath {
  public:
    // Room for @capacity operations posted and not polled.
    void reset(std::uint32_t capacity);

    // ---- posting side ----
    // An async operation was posted: poll() will return it.
    void expect() noexcept { outstanding_++; }
    std::size_t outstanding() const noexcept { return outstanding_; }
    // No room for another async operation until poll().
    bool full() const noexcept { return outstanding_ >= ready_.size(); }
    std::size_t capacity() const noexcept { return ready_.size(); }
    // A synchronous verb is about to be posted.
    void begin_sync() noexcept { sync_done_ = false; }
    bool sync_done() const noexcept { return sync_done_; }
    const Completion& sync_result() const noexcept { return sync_c_; }
    const std::string& sync_error() const noexcept { return sync_err_; }

    // ---- completing side ----
    // @op completed with @code (its message in @err).  Counts progress.
    void deliver(const Op& op, Code code, std::string_view err, std::size_t len = 0,
                 std::uint64_t value = 0, const InvokeResult& inv = {});
    // The answer of request @op of session @session: decodes @r (an
    // INVOKE's result and response bytes into op.out) and delivers it.
    void answer(const Op& op, const Response& r, std::uint32_t session);
    // One-sided @op finished: a read's bytes are copied from @xfer, an
    // atomic's old value is read there.
    void complete_one_sided(const Op& op, const std::byte* xfer);
    // Something happened that a waiter should look at (the welcome, a
    // break).
    void bump() noexcept { progress_++; }
    std::uint64_t progress() const noexcept { return progress_; }

    // poll(): moves ready completions into @out; their error strings stay
    // valid until the next take().
    std::size_t take(std::span<Completion> out);

  private:
    struct Ready {
        Completion c;
        std::string err;
    };
    std::vector<Ready> ready_;
    std::uint32_t ready_head_ = 0, ready_n_ = 0;
    std::vector<std::string> poll_err_;  // what poll()'s string_views point at
    std::size_t outstanding_ = 0;        // async ops posted, not yet polled
    bool sync_done_ = false;
    Completion sync_c_;
    std::string sync_err_;
    std::uint64_t progress_ = 0;
};

}  // namespace rof::detail
