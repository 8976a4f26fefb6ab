// SPDX-License-Identifier: MIT
// The send path of rof::Session: what is posted and not yet done.  Request
// and one-sided slots (SlotPool), credits, the batch of work requests that
// flush() chains into one ibv_post_send, the send queue's selective
// signalling (SendQueue) and the FIFO of entries a signalled completion
// retires.  It builds ibv_send_wr structures but never calls the device:
// the session posts what seal() returns, so all of it is tested without one
// (session_send_test.cpp).  Nothing here allocates after reset().
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rof/session.h"

namespace rof::detail {

// A fixed set of slot indexes; acquire() and release() are O(1) and never
// allocate.
class SlotPool {
  public:
    void reset(std::uint32_t n);
    bool empty() const noexcept { return top_ == 0; }
    std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(free_.size()); }
    std::uint32_t in_use() const noexcept { return capacity() - top_; }
    std::uint32_t acquire() noexcept { return free_[--top_]; }
    void release(std::uint32_t i) noexcept { free_[top_++] = i; }
    // Every slot taken now, by index (slow path: allocates).
    std::vector<bool> taken() const;

  private:
    std::vector<std::uint32_t> free_;
    std::uint32_t top_ = 0;
};

// Send queue accounting with selective signalling.  Every posted work
// request holds a send queue entry until a signalled completion at or
// after it is polled; a signalled request carries how many entries its
// completion retires.  The caller signals the last request of each batch
// and at least one in every @every.
class SendQueue {
  public:
    void reset(std::uint32_t depth, std::uint32_t every);
    std::uint32_t depth() const noexcept { return depth_; }
    std::uint32_t used() const noexcept { return used_; }
    std::uint32_t room() const noexcept { return depth_ - used_; }
    // Accounts one request about to be posted; returns 0 if it goes
    // unsignalled, else the number of entries its completion retires.
    std::uint32_t add(bool last_of_batch) noexcept;
    // A signalled completion arrived.
    void retire(std::uint32_t n) noexcept { used_ -= n; }
    // Unretired requests since the last signalled one.
    std::uint32_t unsignalled() const noexcept { return run_; }

  private:
    std::uint32_t depth_ = 0, every_ = 1, used_ = 0, run_ = 0;
};

// wr_id: kind in bits 60..63, for signalled sends the entries the
// completion retires in bits 32..59, the slot in bits 0..31.
enum class WrKind : std::uint64_t { recv = 1, request = 2, one_sided = 3 };
constexpr std::uint64_t wr_id(WrKind k, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(k) << 60) | slot;
}
constexpr WrKind wr_kind(std::uint64_t id) {
    return static_cast<WrKind>(id >> 60);
}
constexpr std::uint32_t wr_slot(std::uint64_t id) {
    return static_cast<std::uint32_t>(id);
}
constexpr std::uint32_t wr_retire(std::uint64_t id) {
    return static_cast<std::uint32_t>((id >> 32) & 0xfffffff);
}
constexpr std::uint64_t kWrRetireMask = 0xfffffffull << 32;

// Who takes an operation's completion.
enum class Delivery : std::uint8_t {
    polled,     // poll(): an async post_*
    sync,       // the synchronous verb waiting for it
    keepalive,  // nobody: the keepalive's NOP
};

// What a slot's operation is, from its post to its completion.
struct Op {
    std::uint64_t user = 0;
    std::span<std::byte> out;  // read destination, invoke response
    std::uint64_t tag = 0;
    std::uint32_t len = 0;
    Verb verb = Verb::nop;
    Delivery delivery = Delivery::polled;
    bool answered = false;  // requests: the response arrived
    bool retired = false;   // requests: the send's entry was retired
};

// The sizes of a session's send path, fixed at connect.
struct SendLimits {
    std::uint32_t requests = 0;   // request slots (credits + the keepalive's)
    std::uint32_t one_sided = 0;  // one-sided slots (SessionOptions::depth)
    std::uint32_t sq_depth = 0;   // send queue entries
    std::uint32_t lkey = 0;       // of the registered buffers
};

class SendPath {
  public:
    // Sizes everything; the only allocation.
    void reset(const SendLimits& limits);
    // After the QP broke: nothing is in flight or batched any more; slots
    // stay taken until the caller releases them (it delivers their errors).
    void clear_in_flight();

    // ---- credits and request slots ----
    void set_credits(std::uint32_t n) noexcept { credits_ = n; }
    std::uint32_t credits() const noexcept { return credits_; }
    std::uint32_t outstanding() const noexcept { return outstanding_; }
    bool has_credit() const noexcept { return outstanding_ < credits_; }
    bool request_free() const noexcept { return !req_pool_.empty(); }
    // A credit and a request slot both free.
    bool can_request() const noexcept { return has_credit() && request_free(); }
    // Takes a request slot (can_request() first) and makes its Op fresh.
    std::uint32_t acquire_request() noexcept;
    // The request id of slot @slot's next request: a sequence number
    // above the slot + 1 in the low 16 bits (0 is the welcome message).
    std::uint64_t request_id(std::uint32_t slot) noexcept { return (++seq_ << 16) | (slot + 1); }
    // The slot of response id @rid, if it names a request in flight that
    // was not answered yet; else UINT32_MAX.
    std::uint32_t answer_slot(std::uint64_t rid) const noexcept;
    // The response of @slot arrived: its credit is back.
    void answered(std::uint32_t slot) noexcept;
    // Frees a request slot whose response and send entry are both done.
    void release_request(std::uint32_t slot) noexcept;
    Op& request(std::uint32_t slot) noexcept { return req_ops_[slot]; }
    std::uint32_t request_slots() const noexcept { return req_pool_.capacity(); }

    // ---- one-sided slots ----
    bool one_sided_free() const noexcept { return !one_pool_.empty(); }
    std::uint32_t acquire_one_sided() noexcept;
    void release_one_sided(std::uint32_t slot) noexcept;
    Op& one_sided(std::uint32_t slot) noexcept { return one_ops_[slot]; }
    std::uint32_t one_sided_slots() const noexcept { return one_pool_.capacity(); }
    // Taken slots, for failing them all (slow path: allocates).
    std::vector<bool> requests_taken() const { return req_pool_.taken(); }
    std::vector<bool> one_sided_taken() const { return one_pool_.taken(); }

    // ---- the batch ----
    // Room in the send queue for one more batched work request.
    bool has_room() const noexcept { return sq_.room() > batch_n_; }
    std::uint32_t batched() const noexcept { return batch_n_; }
    // Appends a work request of one SGE (@buf, @len) to the batch (has_room()
    // first); the caller sets its opcode and fields.  A request's send
    // (@id of WrKind::request) takes a credit.
    ibv_send_wr& add(std::uint64_t id, std::byte* buf, std::uint32_t len) noexcept;
    // Ends the batch: signals its last request and one in every
    // sq_depth/2, enters each in the FIFO and chains them.  Returns the
    // head of the chain to post, or nullptr if the batch was empty.
    // @had_request: whether a request's send was in it.
    ibv_send_wr* seal(bool* had_request) noexcept;
    // Accounts a work request posted alone and signalled, ahead of the
    // batch: @w's wr_id gets its retire count.  Takes a credit.
    void add_alone(ibv_send_wr& w) noexcept;

    // A signalled completion retiring @n entries: requests are marked
    // retired (and freed if answered); @one(slot) is called for each
    // one-sided operation, which completes now.  The callee releases the
    // one-sided slot.
    template <typename OnOneSided>
    void retire(std::uint32_t n, OnOneSided&& one) {
        sq_.retire(n);
        while (n-- && fifo_n_) {
            std::uint64_t e = fifo_[fifo_head_];
            fifo_head_ = fifo_head_ + 1 == fifo_.size() ? 0 : fifo_head_ + 1;
            fifo_n_--;
            std::uint32_t slot = wr_slot(e);
            if (wr_kind(e) == WrKind::request) {
                Op& op = req_ops_[slot];
                op.retired = true;
                if (op.answered) {
                    release_request(slot);
                }
            } else {
                one(slot);
            }
        }
    }

    const SendQueue& queue() const noexcept { return sq_; }
    std::uint32_t fifo_size() const noexcept { return fifo_n_; }

  private:
    void push_fifo(std::uint64_t id) noexcept;

    std::vector<Op> req_ops_, one_ops_;
    SlotPool req_pool_, one_pool_;
    SendQueue sq_;
    std::uint32_t credits_ = 0, outstanding_ = 0;
    std::uint64_t seq_ = 0;
    std::uint32_t lkey_ = 0;
    std::vector<ibv_send_wr> batch_;
    std::vector<ibv_sge> batch_sge_;
    std::uint32_t batch_n_ = 0;
    bool batch_has_req_ = false;
    // Send queue entries posted and not retired, in order.
    std::vector<std::uint64_t> fifo_;
    std::uint32_t fifo_head_ = 0, fifo_n_ = 0;
};

// ---- what every post and completion calls, inline ----

inline std::uint32_t SendPath::acquire_request() noexcept {
    std::uint32_t slot = req_pool_.acquire();
    req_ops_[slot] = Op{};
    return slot;
}

inline std::uint32_t SendPath::answer_slot(std::uint64_t rid) const noexcept {
    std::uint32_t slot = static_cast<std::uint32_t>(rid & 0xffff) - 1;
    if (slot >= req_ops_.size() || req_ops_[slot].answered || outstanding_ == 0) {
        return UINT32_MAX;
    }
    return slot;
}

inline void SendPath::answered(std::uint32_t slot) noexcept {
    req_ops_[slot].answered = true;
    outstanding_--;
}

inline void SendPath::release_request(std::uint32_t slot) noexcept {
    req_ops_[slot] = Op{};
    req_pool_.release(slot);
}

inline std::uint32_t SendPath::acquire_one_sided() noexcept {
    std::uint32_t slot = one_pool_.acquire();
    one_ops_[slot] = Op{};
    return slot;
}

inline void SendPath::release_one_sided(std::uint32_t slot) noexcept {
    one_ops_[slot] = Op{};
    one_pool_.release(slot);
}

inline ibv_send_wr& SendPath::add(std::uint64_t id, std::byte* buf, std::uint32_t len) noexcept {
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
        outstanding_++;
        batch_has_req_ = true;
    }
    return w;
}

inline void SendPath::push_fifo(std::uint64_t id) noexcept {
    std::uint32_t at = fifo_head_ + fifo_n_;
    if (at >= fifo_.size()) {
        at -= static_cast<std::uint32_t>(fifo_.size());
    }
    fifo_[at] = id & ~kWrRetireMask;
    fifo_n_++;
}

}  // namespace rof::detail
