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
    credits_ = inflight_ = 0;
    batch_n_ = fifo_head_ = fifo_n_ = 0;
    batch_has_req_ = false;
}

void SendPath::clear_in_flight() {
    inflight_ = 0;
    batch_n_ = 0;
    batch_has_req_ = false;
    fifo_n_ = 0;
    sq_.reset(sq_.depth(), 1);
}

std::uint32_t SendPath::acquire_request() noexcept {
    std::uint32_t slot = req_pool_.acquire();
    req_ops_[slot] = Op{};
    return slot;
}

std::uint32_t SendPath::answer_slot(std::uint64_t rid) const noexcept {
    std::uint32_t slot = static_cast<std::uint32_t>(rid & 0xffff) - 1;
    if (slot >= req_ops_.size() || req_ops_[slot].answered || inflight_ == 0) {
        return UINT32_MAX;
    }
    return slot;
}

void SendPath::answered(std::uint32_t slot) noexcept {
    req_ops_[slot].answered = true;
    inflight_--;
}

void SendPath::release_request(std::uint32_t slot) noexcept {
    req_ops_[slot] = Op{};
    req_pool_.release(slot);
}

std::uint32_t SendPath::acquire_one_sided() noexcept {
    std::uint32_t slot = one_pool_.acquire();
    one_ops_[slot] = Op{};
    return slot;
}

void SendPath::release_one_sided(std::uint32_t slot) noexcept {
    one_ops_[slot] = Op{};
    one_pool_.release(slot);
}

ibv_send_wr& SendPath::add(std::uint64_t id, std::byte* buf, std::uint32_t len) noexcept {
    ibv_send_wr& w = batch_[batch_n_];
    ibv_sge& s = batch_sge_[batch_n_];
    batch_n_++;
    s.addr = reinterpret_cast<std::uintptr_t>(buf);
    s.length = len;
    s.lkey = lkey_;
    w = ibv_send_wr{};
    w.wr_id = id;
    w.sg_list = &s;
    w.num_sge = 1;
    if (wr_kind(id) == WrKind::request) {
        inflight_++;
        batch_has_req_ = true;
    }
    return w;
}

void SendPath::push_fifo(std::uint64_t id) noexcept {
    std::uint32_t at = fifo_head_ + fifo_n_;
    if (at >= fifo_.size()) {
        at -= static_cast<std::uint32_t>(fifo_.size());
    }
    fifo_[at] = id & ~kWrRetireMask;
    fifo_n_++;
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
    inflight_++;
}

}  // namespace rof::detail
