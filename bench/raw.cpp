// The client side of the raw-verbs baselines: see raw.h.
#include "raw.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench.h"

namespace rofbench::raw {

namespace {

constexpr std::uint64_t kWrRead = 1ULL << 62;

}  // namespace

void fail(const std::string& what, int err) {
    throw std::runtime_error(what + ": " + std::strerror(err));
}

MrPtr register_buffer(ibv_pd* pd, std::vector<std::uint8_t>& buf) {
    ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
        fail("ibv_reg_mr");
    }
    return MrPtr(mr);
}

void post_recv(ibv_qp* qp, std::vector<std::uint8_t>& buf, const ibv_mr& mr, std::size_t slot,
               std::size_t bytes) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(&buf[slot * bytes]),
                static_cast<std::uint32_t>(bytes), mr.lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = kWrRecv | slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (int rc = ibv_post_recv(qp, &wr, &bad)) {
        fail("ibv_post_recv", rc);
    }
}

std::uint64_t hash(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::pair<std::string, std::string> split_host_port(const std::string& hp) {
    auto colon = hp.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == hp.size()) {
        throw std::runtime_error("\"" + hp + "\": want host:port");
    }
    std::string host = hp.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return {host, hp.substr(colon + 1)};
}

Conn::Conn(const std::string& host_port, std::size_t max_value)
    : rx_slot_(sizeof(Rep) + std::clamp<std::size_t>(max_value, kMaxEcho, kMaxValue)) {
    auto [host, port] = split_host_port(host_port);
    rdma_addrinfo hints{};
    hints.ai_port_space = RDMA_PS_TCP;
    rdma_addrinfo* res = nullptr;
    if (rdma_getaddrinfo(host.c_str(), port.c_str(), &hints, &res)) {
        fail("rdma_getaddrinfo " + host_port);
    }
    AddrinfoPtr ai(res);
    ibv_qp_init_attr attr{};
    attr.cap.max_send_wr = kSqDepth;
    attr.cap.max_recv_wr = kDepth;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = kInline;
    attr.qp_type = IBV_QPT_RC;
    rdma_cm_id* id = nullptr;
    if (rdma_create_ep(&id, ai.get(), nullptr, &attr)) {
        fail("rdma_create_ep " + host_port);
    }
    id_.reset(id);

    rx_.resize(std::size_t(kDepth) * rx_slot_);
    tx_.resize(std::size_t(kDepth) * kMsgMax);
    rd_.resize(rx_slot_ - sizeof(Rep) + kBucketSlots * sizeof(Slot));
    rx_mr_ = register_buffer(id_->pd, rx_);
    tx_mr_ = register_buffer(id_->pd, tx_);
    rd_mr_ = register_buffer(id_->pd, rd_);
    for (std::size_t i = 0; i < kDepth; i++) {
        post_recv(id_->qp, rx_, *rx_mr_, i, rx_slot_);
    }
    ibv_device_attr dev{};
    if (ibv_query_device(id_->verbs, &dev)) {
        fail("ibv_query_device");
    }
    rdma_conn_param cp{};
    cp.initiator_depth = static_cast<std::uint8_t>(std::min(dev.max_qp_init_rd_atom, 16));
    cp.responder_resources = static_cast<std::uint8_t>(std::min(dev.max_qp_rd_atom, 16));
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    if (rdma_connect(id_.get(), &cp)) {
        fail("rdma_connect " + host_port);
    }
    std::size_t slot = wait_recv();
    std::memcpy(&hello_, &rx_[slot * rx_slot_], sizeof(hello_));
    post_recv(id_->qp, rx_, *rx_mr_, slot, rx_slot_);
    if (hello_.magic != kHelloMagic) {
        throw std::runtime_error(host_port + ": not rof-bench-server");
    }
}

Conn::~Conn() {
    if (id_) {
        rdma_disconnect(id_.get());
    }
}

void Conn::reap_send(bool want_read) {
    for (;;) {
        ibv_wc wc[8];
        int n = ibv_poll_cq(id_->send_cq, 8, wc);
        if (n < 0) {
            fail("ibv_poll_cq", -n);
        }
        bool got_read = false;
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                throw std::runtime_error(std::string("raw connection: send queue: ") +
                                         ibv_wc_status_str(wc[i].status));
            }
            sq_used_ -= static_cast<std::uint32_t>(wc[i].wr_id & 0xffffffff);
            got_read = got_read || (wc[i].wr_id & kWrRead);
        }
        if (!want_read ? n == 0 : got_read) {
            return;
        }
    }
}

namespace {

// Posts @wr, signalled when @signal or every kSignalEvery-th; wr_id's low
// half says how many entries its completion retires.
void post(ibv_qp* qp, ibv_send_wr& wr, bool signal, std::uint32_t& unsignalled,
          std::uint32_t& sq_used) {
    unsignalled++;
    sq_used++;
    if (signal || unsignalled == kSignalEvery) {
        wr.send_flags |= IBV_SEND_SIGNALED;
        wr.wr_id |= unsignalled;
        unsignalled = 0;
    }
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp, &wr, &bad)) {
        fail("ibv_post_send", rc);
    }
}

}  // namespace

void Conn::post_send(std::size_t slot, std::size_t len) {
    while (sq_used_ + 1 >= kSqDepth - kSignalEvery) {
        reap_send(false);
    }
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(&tx_[slot * kMsgMax]),
                static_cast<std::uint32_t>(len), tx_mr_->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    if (len <= kInline) {
        wr.send_flags = IBV_SEND_INLINE;
    }
    post(id_->qp, wr, false, unsignalled_, sq_used_);
}

void Conn::post_read(std::uint64_t addr, std::size_t len) {
    while (sq_used_ + 1 >= kSqDepth - kSignalEvery) {
        reap_send(false);
    }
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(rd_.data()), static_cast<std::uint32_t>(len),
                rd_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kWrRead;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = hello_.rkey;
    post(id_->qp, wr, true, unsignalled_, sq_used_);
}

std::size_t Conn::wait_recv() {
    ibv_wc wc{};
    int n;
    while ((n = ibv_poll_cq(id_->recv_cq, 1, &wc)) == 0) {
    }
    if (n < 0) {
        fail("ibv_poll_cq", -n);
    }
    if (wc.status != IBV_WC_SUCCESS) {
        throw std::runtime_error(std::string("raw connection: receive: ") +
                                 ibv_wc_status_str(wc.status));
    }
    return wc.wr_id & ~kWrRecv;
}

std::span<const std::uint8_t> Conn::reply(std::size_t slot, std::size_t want) {
    Rep rep;
    const std::uint8_t* m = &rx_[slot * rx_slot_];
    std::memcpy(&rep, m, sizeof(rep));
    // Reposted at once: receives are consumed in order, so these bytes stay
    // until kDepth - 1 more replies have come, long after the caller read them.
    post_recv(id_->qp, rx_, *rx_mr_, slot, rx_slot_);
    if (rep.status != kStatusOk) {
        throw std::runtime_error("rof-bench-server: status " + std::to_string(rep.status));
    }
    if (rep.len != want) {
        throw std::runtime_error("rof-bench-server: " + std::to_string(rep.len) +
                                 " bytes back, want " + std::to_string(want));
    }
    return {m + sizeof(rep), rep.len};
}

void Conn::echo(std::size_t len) {
    if (len > kMaxEcho) {
        throw std::invalid_argument("echo of " + std::to_string(len) + " bytes: at most " +
                                    std::to_string(kMaxEcho));
    }
    Req req{kOpEcho, static_cast<std::uint32_t>(len), 0};
    std::memcpy(&tx_[0], &req, sizeof(req));
    post_send(0, sizeof(req) + len);
    reply(wait_recv(), len);
}

std::span<const std::uint8_t> Conn::get(std::uint64_t key, std::size_t len) {
    if (len > rx_slot_ - sizeof(Rep)) {
        throw std::invalid_argument("GET of " + std::to_string(len) +
                                    " bytes on a connection for " +
                                    std::to_string(rx_slot_ - sizeof(Rep)));
    }
    Req req{kOpGet, static_cast<std::uint32_t>(len), key};
    std::memcpy(&tx_[0], &req, sizeof(req));
    post_send(0, sizeof(req));
    auto v = reply(wait_recv(), len);
    if (len && (v[0] != value_byte(key, 0) || v[len - 1] != value_byte(key, len - 1))) {
        throw std::runtime_error("RPC GET: wrong value for key " + std::to_string(key));
    }
    return v;
}

std::span<const std::uint8_t> Conn::read(std::uint64_t addr, std::size_t len) {
    if (len > rd_.size()) {
        throw std::invalid_argument("READ of " + std::to_string(len) +
                                    " bytes on a connection for " + std::to_string(rd_.size()));
    }
    post_read(addr, len);
    reap_send(true);
    return {rd_.data(), len};
}

std::span<const std::uint8_t> Conn::lookup(std::uint64_t key, std::size_t len) {
    std::uint64_t home = hash(key) & (hello_.slots - 1);
    auto b = read(hello_.table_addr + home * sizeof(Slot), kBucketSlots * sizeof(Slot));
    for (std::uint32_t i = 0; i < kBucketSlots; i++) {
        Slot s;
        std::memcpy(&s, &b[i * sizeof(Slot)], sizeof(s));
        if (s.key == key) {
            auto v = read(hello_.heap_addr + s.voff, len);
            if (len && (v[0] != value_byte(key, 0) || v[len - 1] != value_byte(key, len - 1))) {
                throw std::runtime_error("two-READ lookup: wrong value for key " +
                                         std::to_string(key));
            }
            return v;
        }
    }
    throw std::runtime_error("two-READ lookup: key " + std::to_string(key) + " not found");
}

std::uint64_t Conn::echo_window(std::size_t len, std::size_t window, std::uint64_t ns) {
    if (len > kMaxEcho) {
        throw std::invalid_argument("echo of " + std::to_string(len) + " bytes: at most " +
                                    std::to_string(kMaxEcho));
    }
    window = std::clamp<std::size_t>(window, 1, kDepth);
    std::size_t next = 0;
    auto send_one = [&] {
        std::size_t slot = next++ % kDepth;
        Req req{kOpEcho, static_cast<std::uint32_t>(len), 0};
        std::memcpy(&tx_[slot * kMsgMax], &req, sizeof(req));
        post_send(slot, sizeof(req) + len);
    };
    for (std::size_t i = 0; i < window; i++) {
        send_one();
    }
    std::uint64_t done = 0, end = now_ns() + ns;
    for (;;) {
        reply(wait_recv(), len);
        done++;
        if (now_ns() >= end) {
            break;
        }
        send_one();
    }
    for (std::size_t left = window - 1; left; left--) {  // drain what is in flight
        reply(wait_recv(), len);
    }
    return done;
}

}  // namespace rofbench::raw
