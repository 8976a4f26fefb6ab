// SPDX-License-Identifier: MIT
// The connection of rof::Session (session_conn.h).
#include "session_conn.h"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "uapi/rof.h"

namespace rof::detail {

std::string errno_text(int e) {
    return std::generic_category().message(e);
}

void free_buffers(std::byte* p) {
    std::free(p);  // NOLINT(*-no-malloc,*-owning-memory)
}

Connection::~Connection() {
    disconnect();
}

void Connection::fail(Code c, const std::string& what) const {
    throw Error(c, head() + what);
}

void Connection::disconnect() noexcept {
    if (connected_ && id_) {
        rdma_disconnect(id_.get());
    }
    connected_ = false;  // once: a broken session's destructor does not disconnect it again
}

rdma_cm_event* Connection::cm_wait(Clock::time_point deadline) const {
    for (;;) {
        rdma_cm_event* ev = nullptr;
        if (rdma_get_cm_event(ec_.get(), &ev) == 0) {
            return ev;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            fail(Code::internal, "rdma_get_cm_event: " + errno_text(errno));
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            return nullptr;
        }
        pollfd p{ec_->fd, POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
    }
}

void Connection::cm_expect(rdma_cm_event_type want, Clock::time_point deadline,
                           const char* what) const {
    rdma_cm_event* ev = cm_wait(deadline);
    if (!ev) {
        fail(Code::deadline_exceeded, std::string(what) + " " + peer_ + ": timed out");
    }
    rdma_cm_event_type got = ev->event;
    int status = ev->status;
    rdma_ack_cm_event(ev);
    if (got != want) {
        fail(Code::unavailable, std::string(what) + " " + peer_ + ": " + rdma_event_str(got) +
                                    " (status " + std::to_string(status) + ")");
    }
}

void Connection::resolve(SockAddr& peer, Clock::time_point deadline, int ms) {
    peer_ = format_peer(peer);
    ec_.reset(rdma_create_event_channel());
    if (!ec_) {
        fail(Code::unavailable,
             "rdma_create_event_channel: " + errno_text(errno) + " (is rdma_ucm loaded?)");
    }
    fcntl(ec_->fd, F_SETFL, fcntl(ec_->fd, F_GETFL) | O_NONBLOCK);
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(ec_.get(), &raw, nullptr, RDMA_PS_TCP)) {
        fail(Code::unavailable, "rdma_create_id: " + errno_text(errno));
    }
    id_.reset(raw);
    if (rdma_resolve_addr(id_.get(), nullptr, reinterpret_cast<sockaddr*>(peer.storage), ms)) {
        fail(Code::unavailable, "resolve " + peer_ + ": " + errno_text(errno));
    }
    cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED, deadline, "resolve address");
    if (rdma_resolve_route(id_.get(), ms)) {
        fail(Code::unavailable, "resolve route to " + peer_ + ": " + errno_text(errno));
    }
    cm_expect(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, "resolve route to");
    if (ibv_query_device(id_->verbs, &device_)) {
        fail(Code::unavailable, "ibv_query_device: " + errno_text(errno));
    }
}

void Connection::create(const BufferLayout& layout) {
    layout_ = layout;
    stride_ = layout.msg;
    pd_.reset(ibv_alloc_pd(id_->verbs));
    if (!pd_) {
        fail(Code::unavailable, "ibv_alloc_pd: " + errno_text(errno));
    }
    comp_.reset(ibv_create_comp_channel(id_->verbs));
    if (!comp_) {
        fail(Code::unavailable, "ibv_create_comp_channel: " + errno_text(errno));
    }
    fcntl(comp_->fd, F_SETFL, fcntl(comp_->fd, F_GETFL) | O_NONBLOCK);
    cq_.reset(ibv_create_cq(id_->verbs, static_cast<int>(layout.send_depth + layout.receives),
                            nullptr, comp_.get(), 0));
    if (!cq_) {
        fail(Code::unavailable, "ibv_create_cq: " + errno_text(errno));
    }
    std::size_t bytes = (static_cast<std::size_t>(layout.receives) + layout.requests) * stride_ +
                        layout.one_sided * layout.transfer;
    bytes = (bytes + 4095) & ~static_cast<std::size_t>(4095);
    // Page-aligned, for the MR; freed by free_buffers().
    mem_.reset(static_cast<std::byte*>(
        std::aligned_alloc(4096, bytes)));  // NOLINT(*-no-malloc,*-owning-memory)
    if (!mem_) {
        fail(Code::resource_exhausted,
             "cannot allocate " + std::to_string(bytes) + " bytes of buffers");
    }
    std::memset(mem_.get(), 0, bytes);
    rx_base_ = mem_.get();
    req_base_ = rx_base_ + layout.receives * stride_;
    one_base_ = req_base_ + layout.requests * stride_;
    mr_.reset(ibv_reg_mr(pd_.get(), mem_.get(), bytes, IBV_ACCESS_LOCAL_WRITE));
    if (!mr_) {
        fail(Code::resource_exhausted,
             "ibv_reg_mr of " + std::to_string(bytes) + " bytes: " + errno_text(errno));
    }

    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq_.get();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = layout.send_depth;
    qa.cap.max_recv_wr = layout.receives;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = 256;
    if (rdma_create_qp(id_.get(), pd_.get(), &qa)) {
        qa.cap.max_inline_data = 0;
        if (rdma_create_qp(id_.get(), pd_.get(), &qa)) {
            fail(Code::unavailable, "rdma_create_qp: " + errno_text(errno));
        }
    }
    qp_guard_.reset(id_.get());
    qp_ = id_->qp;
    max_inline_ = qa.cap.max_inline_data;
}

Accepted Connection::connect(const std::string& ticket, std::uint8_t initiator_depth,
                             Clock::time_point deadline, std::chrono::milliseconds timeout) {
    rdma_conn_param cp{};
    cp.private_data = ticket.data();
    cp.private_data_len = static_cast<std::uint8_t>(ticket.size());
    cp.initiator_depth = initiator_depth;
    cp.responder_resources = 0;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    if (rdma_connect(id_.get(), &cp)) {
        fail(Code::unavailable, "rdma_connect to " + peer_ + ": " + errno_text(errno));
    }
    rdma_cm_event* ev = cm_wait(deadline);
    if (!ev) {
        fail(Code::deadline_exceeded,
             "connect to " + peer_ + ": no answer in " + std::to_string(timeout.count()) + " ms");
    }
    if (ev->event == RDMA_CM_EVENT_REJECTED) {
        const auto* rej = static_cast<const rof_reject*>(ev->param.conn.private_data);
        bool ours = rej && ev->param.conn.private_data_len >= sizeof(rof_reject) &&
                    le32toh(rej->magic) == ROF_REJECT_MAGIC;
        std::uint32_t reason = ours ? le32toh(rej->reason) : 0;
        int status = ev->status;
        rdma_ack_cm_event(ev);
        if (ours) {
            throw reject_error(session_, reason);
        }
        fail(Code::unavailable, "connect to " + peer_ + " refused (status " +
                                    std::to_string(status) + "): is rof.ko listening there?");
    }
    if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
        std::string what = rdma_event_str(ev->event);
        int status = ev->status;
        rdma_ack_cm_event(ev);
        fail(Code::unavailable,
             "connect to " + peer_ + ": " + what + " (status " + std::to_string(status) + ")");
    }
    const auto* acc = static_cast<const rof_accept*>(ev->param.conn.private_data);
    bool good = acc && ev->param.conn.private_data_len >= sizeof(rof_accept) &&
                le32toh(acc->magic) == ROF_ACCEPT_MAGIC && acc->version == ROF_WIRE_VERSION;
    Accepted a;
    if (good) {
        a.credits = le16toh(acc->credits);
        a.regions = acc->nregions;
        a.msg = le32toh(acc->msg_size);
        session_ = le32toh(acc->session);
    }
    rdma_ack_cm_event(ev);
    connected_ = true;
    if (!good) {
        fail(Code::internal, "the accept from " + peer_ + " is not rof.ko's");
    }
    if (!a.credits || a.regions > ROF_SESSION_MAX_REGIONS) {
        fail(Code::internal, "accept: " + std::to_string(a.credits) + " credits, " +
                                 std::to_string(a.regions) + " regions");
    }
    return a;
}

CmEvent Connection::next_cm_event() {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ec_.get(), &ev) != 0) {
        return CmEvent::none;
    }
    rdma_cm_event_type t = ev->event;
    rdma_ack_cm_event(ev);
    if (t == RDMA_CM_EVENT_DISCONNECTED) {
        return CmEvent::disconnected;
    }
    if (t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        return CmEvent::device_removed;
    }
    return CmEvent::other;
}

void Connection::consume_cq_events() noexcept {
    ibv_cq* ecq = nullptr;
    void* ctx = nullptr;
    while (ibv_get_cq_event(comp_.get(), &ecq, &ctx) == 0) {
        ibv_ack_cq_events(ecq, 1);
    }
}

}  // namespace rof::detail
