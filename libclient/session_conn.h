// SPDX-License-Identifier: MIT
// The connection of rof::Session: rdma_cm and verbs resources, each owned
// by a handle that frees it, and the connect handshake with rof.ko (the
// ticket out, the accept or the reject back).  Everything the data path
// touches is allocated and registered here, once: one memory region holds
// the receive buffers, the request buffers and the one-sided transfer
// buffers.  The device calls of the data path (post, poll, arm) are inline
// forwards.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rof/error.h"
#include "session_internal.h"

namespace rof::detail {

using Clock = std::chrono::steady_clock;

std::string errno_text(int e);

// A unique_ptr deleter calling @Free (rdma_destroy_id, ibv_dealloc_pd, ...).
template <auto Free>
struct Deleter {
    template <typename T>
    void operator()(T* p) const {
        Free(p);
    }
};
void free_buffers(std::byte* p);

// The buffers and queues of a connection, fixed before it is made.
struct BufferLayout {
    std::uint32_t msg = 0;         // bytes of a receive or request buffer
    std::uint32_t receives = 0;    // receive buffers (= receive queue depth)
    std::uint32_t requests = 0;    // request buffers
    std::uint32_t one_sided = 0;   // one-sided transfer buffers
    std::size_t transfer = 0;      // bytes of a transfer buffer
    std::uint32_t send_depth = 0;  // send queue depth
};

// What rof.ko's accept said.
struct Accepted {
    std::uint32_t credits = 0;
    std::uint32_t regions = 0;  // in the welcome message
    std::uint32_t msg = 0;      // the largest message it takes
};

// What the CM said since last asked.
enum class CmEvent : std::uint8_t { none, disconnected, device_removed, other };

class Connection {
  public:
    Connection() = default;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection();

    // The session's number, heading every message (the ticket's, then the
    // accept's).
    void set_session(std::uint32_t s) noexcept { session_ = s; }
    std::uint32_t session() const noexcept { return session_; }
    std::string head() const { return "session " + std::to_string(session_) + ": "; }
    [[noreturn]] void fail(Code c, const std::string& what) const;

    // Creates the CM id, resolves @peer's address and route (@ms bounds
    // each step for rdma_cm, @deadline the whole) and queries the device.
    void resolve(SockAddr& peer, Clock::time_point deadline, int ms);
    const std::string& peer() const noexcept { return peer_; }
    const ibv_device_attr& device() const noexcept { return device_; }
    // The PD, the completion channel, the CQ, the buffers and their MR,
    // the QP.
    void create(const BufferLayout& layout);
    // Sends @ticket and waits for the accept until @deadline (@timeout
    // after the start, for the message); throws the reject's error.
    Accepted connect(const std::string& ticket, std::uint8_t initiator_depth,
                     Clock::time_point deadline, std::chrono::milliseconds timeout);
    bool connected() const noexcept { return connected_; }
    // rdma_disconnect if connected (once): the QP goes to error, no more DMA.
    void disconnect() noexcept;
    // One pending CM event, acknowledged; CmEvent::none if there is none.
    CmEvent next_cm_event();

    // ---- buffers ----
    std::byte* rx(std::uint32_t i) const noexcept { return rx_base_ + i * stride_; }
    std::byte* req(std::uint32_t i) const noexcept { return req_base_ + i * stride_; }
    std::byte* one(std::uint32_t i) const noexcept { return one_base_ + i * layout_.transfer; }
    std::uint32_t lkey() const noexcept { return mr_->lkey; }
    std::uint32_t max_inline() const noexcept { return max_inline_; }
    const BufferLayout& layout() const noexcept { return layout_; }

    // ---- the data path's device calls ----
    int post_send(ibv_send_wr* w) noexcept {
        ibv_send_wr* bad = nullptr;
        return ibv_post_send(qp_, w, &bad);
    }
    int post_recv(ibv_recv_wr* w) noexcept {
        ibv_recv_wr* bad = nullptr;
        return ibv_post_recv(qp_, w, &bad);
    }
    int poll_cq(int n, ibv_wc* wc) noexcept { return ibv_poll_cq(cq_.get(), n, wc); }
    void arm_cq() noexcept { ibv_req_notify_cq(cq_.get(), 0); }
    // Acknowledges what woke the completion channel.
    void consume_cq_events() noexcept;
    int completion_fd() const noexcept { return comp_ ? comp_->fd : -1; }
    int cm_fd() const noexcept { return ec_->fd; }

  private:
    rdma_cm_event* cm_wait(Clock::time_point deadline) const;
    void cm_expect(rdma_cm_event_type want, Clock::time_point deadline, const char* what) const;

    // Declared in construction order: destroyed in reverse (QP first).
    std::unique_ptr<rdma_event_channel, Deleter<rdma_destroy_event_channel>> ec_;
    std::unique_ptr<rdma_cm_id, Deleter<rdma_destroy_id>> id_;
    std::unique_ptr<ibv_pd, Deleter<ibv_dealloc_pd>> pd_;
    std::unique_ptr<ibv_comp_channel, Deleter<ibv_destroy_comp_channel>> comp_;
    std::unique_ptr<ibv_cq, Deleter<ibv_destroy_cq>> cq_;
    std::unique_ptr<std::byte, Deleter<free_buffers>> mem_;
    std::unique_ptr<ibv_mr, Deleter<ibv_dereg_mr>> mr_;
    std::unique_ptr<rdma_cm_id, Deleter<rdma_destroy_qp>> qp_guard_;  // the QP of id_
    ibv_qp* qp_ = nullptr;

    std::uint32_t session_ = 0;
    std::string peer_;
    ibv_device_attr device_{};
    BufferLayout layout_;
    std::size_t stride_ = 0;  // of receive and request buffers: layout_.msg
    std::byte* rx_base_ = nullptr;
    std::byte* req_base_ = nullptr;
    std::byte* one_base_ = nullptr;
    std::uint32_t max_inline_ = 0;
    bool connected_ = false;
};

}  // namespace rof::detail
