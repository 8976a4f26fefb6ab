// SPDX-License-Identifier: MIT
// The send path of rof::Session (session_send.h).
#include "session_send.h"

#include <algorithm>

namespace rof::detail {

void SlotPool::reset(std::uint32_t n) {
    free_.resize(n);
    for (std::uint32_t i = 0; i < n; i++) {
        free_[i] = n - 1 - i;  // slot 0 comes out first
    }
    top_ = n;
}

std::vector<bool> SlotPool::taken() const {
    std::vector<bool> busy(capacity(), true);
    for (std::uint32_t i = 0; i < top_; i++) {
        busy[free_[i]] = false;
    }
    return busy;
}

void SendQueue::reset(std::uint32_t depth, std::uint32_t every) {
    depth_ = depth;
    every_ = every ? every : 1;
    used_ = run_ = 0;
}

std::uint32_t SendQueue::add(bool last_of_batch) noexcept {
    used_++;
    run_++;
    if (!last_of_batch && run_ < every_) {
        return 0;
    }
    std::uint32_t n = run_;
    run_ = 0;
    return n;
}

void SendPath::reset(const SendLimits& limits) {
    req_ops_.assign(limits.requests, Op{});
    one_ops_.assign(limits.one_sided, Op{});
    req_pool_.reset(limits.requests);
    one_pool_.reset(limits.one_sided);
    sq_.reset(limits.sq_depth, std::max<std::uint32_t>(limits.sq_depth / 2, 1));
    batch_.assign(limits.sq_depth, ibv_send_wr{});
    batch_sge_.assign(limits.sq_depth, ibv_sge{});
    fifo_.assign(limits.sq_depth, 0);
    lkey_ = limits.lkey;
    credits_ = outstanding_ = 0;
    batch_n_ = fifo_head_ = fifo_n_ = 0;
    batch_has_req_ = false;
}

void SendPath::clear_in_flight() {
    outstanding_ = 0;
    batch_n_ = 0;
    batch_has_req_ = false;
    fifo_n_ = 0;
    sq_.reset(sq_.depth(), 1);
}

ibv_send_wr* SendPath::seal(bool* had_request) noexcept {
    *had_request = batch_has_req_;
    batch_has_req_ = false;
    if (!batch_n_) {
        return nullptr;
    }
    for (std::uint32_t i = 0; i < batch_n_; i++) {
        ibv_send_wr& w = batch_[i];
        if (std::uint32_t r = sq_.add(i + 1 == batch_n_)) {
            w.send_flags |= IBV_SEND_SIGNALED;
            w.wr_id |= static_cast<std::uint64_t>(r) << 32;
        }
        w.next = i + 1 < batch_n_ ? &batch_[i + 1] : nullptr;
        push_fifo(w.wr_id);
    }
    batch_n_ = 0;
    return batch_.data();
}

void SendPath::add_alone(ibv_send_wr& w) noexcept {
    std::uint32_t r = sq_.add(true);
    w.wr_id |= static_cast<std::uint64_t>(r) << 32;
    w.send_flags |= IBV_SEND_SIGNALED;
    push_fifo(w.wr_id);
    outstanding_++;
}

}  // namespace rof::detail
