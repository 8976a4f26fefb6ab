#include "kprog.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace kprog {

std::string errno_name(int e) {
    if (e == 0)
        return "success";
    const char* n = strerrorname_np(e);
    return n ? n : std::to_string(e);
}

std::string server_addr() {
    const char* a = std::getenv("ROF_ADDR");
    return a ? a : "198.18.0.1";
}

static uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

Dev::Dev() : kmod_(ROF_DEVICE_PATH) {}

int Dev::ioc(unsigned long cmd, void* arg) const {
    return ioctl(fd(), cmd, arg) ? errno : 0;
}

void Dev::must(unsigned long cmd, void* arg, const std::string& what) const {
    int e = ioc(cmd, arg);
    if (e)
        throw Error(what + ": " + errno_name(e));
}

void Dev::tenant_destroy(uint32_t id) noexcept {
    try {
        kmod_.tenant_destroy(id, true);
    } catch (const rofd::KmodError&) {
    }
}

void Dev::set_random_key() {
    rofd::TicketKey k{};
    if (getrandom(k.data(), k.size(), 0) != static_cast<ssize_t>(k.size()))
        throw Error("getrandom failed");
    kmod_.set_ticket_key(k);
}

rof_ticket Dev::prepare(uint32_t tenant) {
    rof_session_prepare p{};
    p.tenant = tenant;
    p.expires_ns = realtime_ns() + 600ull * 1000000000ull;
    kmod_.session_prepare(p);
    return p.ticket;
}

Mapping::Mapping(Dev& dev, uint32_t region) {
    const rofd::RegionToken tok =
        dev.kmod().region_token(region, ROF_ACCESS_READ | ROF_ACCESS_WRITE, 0);
    fd_ = open(ROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    if (fd_ < 0)
        throw Error(std::string("open " ROF_DEVICE_PATH ": ") + strerror(errno));
    rof_region_map m{};
    std::memcpy(m.token, tok.data(), sizeof(m.token));
    if (ioctl(fd_, ROF_IOC_REGION_MAP, &m)) {
        int e = errno;
        close(fd_);
        throw Error("map region " + std::to_string(region) + ": " + errno_name(e));
    }
    size_ = m.size;
    addr_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (addr_ == MAP_FAILED) {
        int e = errno;
        close(fd_);
        throw Error("mmap region " + std::to_string(region) + ": " + errno_name(e));
    }
}

Mapping::~Mapping() {
    munmap(addr_, size_);
    close(fd_);
}

rof_prog_load load_req(uint32_t tenant, std::span<const uint8_t> image,
                       const std::vector<rof_prog_bind>& binds, uint64_t budget,
                       uint64_t byte_budget, const std::string& name) {
    rof_prog_load l{};
    l.image = reinterpret_cast<uintptr_t>(image.data());
    l.image_len = static_cast<uint32_t>(image.size());
    l.tenant = tenant;
    l.budget = budget;
    l.byte_budget = byte_budget;
    snprintf(l.name, sizeof(l.name), "%s", name.c_str());
    l.nbind = static_cast<uint32_t>(binds.size());
    for (size_t i = 0; i < binds.size() && i < ROF_ISA_MAX_SLOTS; i++)
        l.bind[i] = binds[i];
    return l;
}

// ---- the session client ------------------------------------------------

rdma_cm_event* Client::cm_wait(rdma_cm_event_type want) {
    pollfd pfd{ec_->fd, POLLIN, 0};
    if (poll(&pfd, 1, 20000) <= 0)
        throw Error(std::string("timed out waiting for ") + rdma_event_str(want));
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ec_, &ev))
        throw Error(std::string("rdma_get_cm_event: ") + strerror(errno));
    if (ev->event != want) {
        std::string msg = std::string("expected ") + rdma_event_str(want) + ", got " +
                          rdma_event_str(ev->event) + " status " + std::to_string(ev->status);
        if (ev->event == RDMA_CM_EVENT_REJECTED && ev->param.conn.private_data_len >= 8) {
            rof_reject rej;
            std::memcpy(&rej, ev->param.conn.private_data, sizeof(rej));
            msg += " reason " + std::to_string(le32toh(rej.reason));
        }
        rdma_ack_cm_event(ev);
        throw Error(msg);
    }
    return ev;
}

void Client::post_rx(int slot) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(buf_.data() + slot * ROF_MSG_SIZE);
    sge.length = ROF_MSG_SIZE;
    sge.lkey = mr_->lkey;
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(id_->qp, &wr, &bad))
        throw Error(std::string("ibv_post_recv: ") + strerror(errno));
}

Client::Client(const std::string& addr, const rof_ticket& ticket) {
    try {
        ec_ = rdma_create_event_channel();
        if (!ec_ || rdma_create_id(ec_, &id_, nullptr, RDMA_PS_TCP))
            throw Error(std::string("rdma_create_id: ") + strerror(errno));
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        const char* port = std::getenv("ROF_CM_PORT");
        sin.sin_port = htons(port ? static_cast<uint16_t>(std::atoi(port)) : ROF_CM_PORT_DEFAULT);
        if (inet_pton(AF_INET, addr.c_str(), &sin.sin_addr) != 1)
            throw Error("not an IPv4 address: " + addr);
        if (rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&sin), 5000))
            throw Error(std::string("rdma_resolve_addr: ") + strerror(errno));
        rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED));
        if (rdma_resolve_route(id_, 5000))
            throw Error(std::string("rdma_resolve_route: ") + strerror(errno));
        rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED));

        pd_ = ibv_alloc_pd(id_->verbs);
        cq_ = ibv_create_cq(id_->verbs, 4 * kRx, nullptr, nullptr, 0);
        if (!pd_ || !cq_)
            throw Error(std::string("PD/CQ: ") + strerror(errno));
        buf_.assign(static_cast<size_t>(kRx + 1) * ROF_MSG_SIZE, 0);
        mr_ = ibv_reg_mr(pd_, buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE);
        if (!mr_)
            throw Error(std::string("ibv_reg_mr: ") + strerror(errno));
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq_;
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = 8;
        qa.cap.max_recv_wr = kRx;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        if (rdma_create_qp(id_, pd_, &qa))
            throw Error(std::string("rdma_create_qp: ") + strerror(errno));
        qp_ = true;
        for (int i = 0; i < kRx; i++)
            post_rx(i);

        rdma_conn_param cp{};
        cp.private_data = &ticket;
        cp.private_data_len = sizeof(ticket);
        cp.initiator_depth = 1;
        cp.retry_count = 7;
        cp.rnr_retry_count = 7;
        if (rdma_connect(id_, &cp))
            throw Error(std::string("rdma_connect: ") + strerror(errno));
        rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ESTABLISHED));
        connected_ = true;
        // The welcome message (request id 0) comes first.
        ibv_wc wc = wait_wc(false);
        rof_resp_hdr h;
        std::memcpy(&h, buf_.data() + wc.wr_id * ROF_MSG_SIZE, sizeof(h));
        if (h.id != 0)
            throw Error("first message is not the welcome");
        post_rx(static_cast<int>(wc.wr_id));
    } catch (...) {
        teardown();
        throw;
    }
}

Client::~Client() {
    teardown();
}

void Client::teardown() {
    if (connected_)
        rdma_disconnect(id_);
    if (qp_)
        rdma_destroy_qp(id_);
    qp_ = false;
    connected_ = false;
    if (mr_)
        ibv_dereg_mr(mr_);
    mr_ = nullptr;
    if (cq_)
        ibv_destroy_cq(cq_);
    cq_ = nullptr;
    if (pd_)
        ibv_dealloc_pd(pd_);
    pd_ = nullptr;
    if (id_)
        rdma_destroy_id(id_);
    id_ = nullptr;
    if (ec_)
        rdma_destroy_event_channel(ec_);
    ec_ = nullptr;
}

// Polls until a receive completes; 30 s.  With @after_send, the request's
// send must complete too: the two come in either order (the response can
// overtake the acknowledgement of the request), so neither is dropped.
ibv_wc Client::wait_wc(bool after_send) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool sent = !after_send, received = false;
    ibv_wc recv{};
    while (!sent || !received) {
        ibv_wc wc{};
        int n = ibv_poll_cq(cq_, 1, &wc);
        if (n < 0)
            throw Error("ibv_poll_cq failed");
        if (n == 1) {
            if (wc.status != IBV_WC_SUCCESS)
                throw Error(std::string("completion error: ") + ibv_wc_status_str(wc.status));
            if (wc.opcode & IBV_WC_RECV) {
                recv = wc;
                received = true;
            } else {
                sent = true;
            }
            continue;
        }
        if (std::chrono::steady_clock::now() > deadline)
            throw Error(received ? "send did not complete" : "no response within 30 s");
        usleep(50);
    }
    return recv;
}

Response Client::request(uint16_t opcode, std::span<const uint8_t> payload) {
    if (payload.size() + sizeof(rof_req_hdr) > ROF_MSG_SIZE)
        throw Error("request too large");
    uint8_t* tx = buf_.data() + kRx * ROF_MSG_SIZE;
    rof_req_hdr h{};
    uint64_t id = next_id_++;
    h.id = htole64(id);
    h.opcode = htole16(opcode);
    h.len = htole32(static_cast<uint32_t>(payload.size()));
    std::memcpy(tx, &h, sizeof(h));
    if (!payload.empty())
        std::memcpy(tx + sizeof(h), payload.data(), payload.size());
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(tx);
    sge.length = static_cast<uint32_t>(sizeof(h) + payload.size());
    sge.lkey = mr_->lkey;
    ibv_send_wr wr{}, *bad = nullptr;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_send(id_->qp, &wr, &bad))
        throw Error(std::string("ibv_post_send: ") + strerror(errno));
    ibv_wc wc = wait_wc(true);
    const uint8_t* rx = buf_.data() + wc.wr_id * ROF_MSG_SIZE;
    rof_resp_hdr rh;
    std::memcpy(&rh, rx, sizeof(rh));
    Response r;
    r.status = le32toh(rh.status);
    uint32_t len = le32toh(rh.len);
    if (le64toh(rh.id) != id || len + sizeof(rh) != wc.byte_len)
        throw Error("malformed response");
    r.payload.assign(rx + sizeof(rh), rx + sizeof(rh) + len);
    post_rx(static_cast<int>(wc.wr_id));
    return r;
}

Response Client::invoke(uint64_t tag, std::span<const uint8_t> args) {
    std::vector<uint8_t> p(sizeof(rof_invoke) + args.size());
    uint64_t t = htole64(tag);
    std::memcpy(p.data(), &t, 8);
    if (!args.empty())
        std::memcpy(p.data() + 8, args.data(), args.size());
    return request(ROF_OP_INVOKE, p);
}

InvokeResult decode_invoke(const Response& r) {
    InvokeResult out;
    out.status = r.status;
    if (r.payload.size() >= sizeof(rof_invoke_result)) {
        rof_invoke_result res;
        std::memcpy(&res, r.payload.data(), sizeof(res));
        out.prog_status = le32toh(res.prog_status);
        out.exec_status = le32toh(res.exec_status);
        out.fault_pc = le32toh(res.fault_pc);
        out.insns = le32toh(res.insns);
        out.resp.assign(r.payload.begin() + sizeof(res), r.payload.end());
    }
    return out;
}

}  // namespace kprog
