// SPDX-License-Identifier: MIT
// rof::Session: the data path of librof (docs/protocol.md, docs/librof.md).
//
// One RC connection to rof.ko.  Everything the fast path touches is
// allocated and registered at connect: receive buffers (one per credit and
// one spare), request buffers (one per credit and one for the keepalive),
// and one transfer buffer per one-sided slot.  Posts go into a batch of
// work requests that flush() chains into one ibv_post_send; only the last
// request of a batch (and one in every sq_depth/2) is signalled, and a
// signalled completion retires every entry before it (RC completes a send
// queue in order), which is also when unsignalled one-sided operations
// complete.  Responses are matched to requests by id (the request slot in
// the low 16 bits).  A keepalive thread sends a NOP when no request went
// out for a third of the idle timeout; it shares the state under one mutex.
#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include "rof/session.h"
#include "session_internal.h"
#include "uapi/rof.h"

namespace rof {
namespace {

using namespace detail;
using Clock = std::chrono::steady_clock;

// ---- RAII for verbs and rdma_cm handles --------------------------------

struct EcDel {
    void operator()(rdma_event_channel* p) const { rdma_destroy_event_channel(p); }
};
struct IdDel {
    void operator()(rdma_cm_id* p) const { rdma_destroy_id(p); }
};
struct PdDel {
    void operator()(ibv_pd* p) const { ibv_dealloc_pd(p); }
};
struct CompDel {
    void operator()(ibv_comp_channel* p) const { ibv_destroy_comp_channel(p); }
};
struct CqDel {
    void operator()(ibv_cq* p) const { ibv_destroy_cq(p); }
};
struct MrDel {
    void operator()(ibv_mr* p) const { ibv_dereg_mr(p); }
};
struct QpDel {  // the QP of an rdma_cm id
    void operator()(rdma_cm_id* id) const { rdma_destroy_qp(id); }
};
struct FreeDel {
    void operator()(std::byte* p) const { std::free(p); }  // NOLINT(*-no-malloc,*-owning-memory)
};

// wr_id: kind in bits 60..63, for signalled sends the entries the
// completion retires in bits 32..59, the slot in bits 0..31.
enum Kind : std::uint64_t { kRecv = 1, kReq = 2, kOne = 3 };
constexpr std::uint64_t wr_id(Kind k, std::uint32_t slot) {
    return (static_cast<std::uint64_t>(k) << 60) | slot;
}
constexpr Kind wr_kind(std::uint64_t id) {
    return static_cast<Kind>(id >> 60);
}
constexpr std::uint32_t wr_slot(std::uint64_t id) {
    return static_cast<std::uint32_t>(id);
}
constexpr std::uint32_t wr_retire(std::uint64_t id) {
    return static_cast<std::uint32_t>((id >> 32) & 0xfffffff);
}

// rof.ko's idle_timeout_ms default: only for an older rofd that answers 0
// (rofd answers the timeout in force, the module parameter's included).
constexpr std::uint32_t kDefaultIdleMs = 300000;
constexpr std::uint32_t kPollBatch = 32;
constexpr int kSpin = 200;  // empty CQ polls before a blocking wait

std::string errno_text(int e) {
    return std::generic_category().message(e);
}

}  // namespace

struct Session::Impl {
    // Declared in construction order: destroyed in reverse (QP first).
    std::unique_ptr<rdma_event_channel, EcDel> ec;
    std::unique_ptr<rdma_cm_id, IdDel> id;
    std::unique_ptr<ibv_pd, PdDel> pd;
    std::unique_ptr<ibv_comp_channel, CompDel> comp;
    std::unique_ptr<ibv_cq, CqDel> cq;
    std::unique_ptr<std::byte, FreeDel> mem;
    std::unique_ptr<ibv_mr, MrDel> mr;
    std::unique_ptr<rdma_cm_id, QpDel> qp_guard;
    ibv_qp* qp = nullptr;

    SessionOptions opt;
    std::uint32_t session = 0;
    std::uint32_t credits = 0;
    std::uint32_t msg = ROF_MSG_SIZE;
    std::uint32_t max_inline = 0;
    std::uint32_t nrx = 0, nreq = 0, none = 0;
    std::size_t xfer = 0;
    std::string peer;
    std::vector<RegionEntry> regions;
    std::vector<GrantedRegion> granted;
    ProgramNames programs;
    bool connected = false;

    // Buffers inside mem.
    std::byte* rx_base = nullptr;
    std::byte* req_base = nullptr;
    std::byte* one_base = nullptr;
    std::byte* rx(std::uint32_t i) const { return rx_base + static_cast<std::size_t>(i) * msg; }
    std::byte* req(std::uint32_t i) const { return req_base + static_cast<std::size_t>(i) * msg; }
    std::byte* one(std::uint32_t i) const { return one_base + i * xfer; }

    struct Op {
        std::uint64_t user = 0;
        std::span<std::byte> out;  // read destination, invoke response
        std::uint64_t tag = 0;
        std::uint32_t len = 0;
        Verb verb = Verb::nop;
        bool sync = false;
        bool internal = false;  // the keepalive's NOP
        bool answered = false;
        bool retired = false;
    };
    std::vector<Op> req_ops, one_ops;
    SlotPool req_pool, one_pool;
    SendQueue sq;
    std::uint64_t seq = 0;

    // The batch flush() posts.
    std::vector<ibv_send_wr> batch;
    std::vector<ibv_sge> batch_sge;
    std::uint32_t batch_n = 0;
    bool batch_has_req = false;
    // Send queue entries posted and not retired, in order.
    std::vector<std::uint64_t> fifo;
    std::uint32_t fifo_head = 0, fifo_n = 0;
    // Receive buffers to re-post, one ibv_post_recv per drain.
    std::vector<ibv_recv_wr> rx_wr;
    std::vector<ibv_sge> rx_sge;
    std::uint32_t rx_n = 0;

    // Completions waiting for poll().
    struct Ready {
        Completion c;
        std::string err;
    };
    std::vector<Ready> ready;
    std::uint32_t ready_head = 0, ready_n = 0;
    std::vector<std::string> poll_err;  // what poll()'s string_views point at
    std::size_t outstanding = 0;        // async ops posted, not yet polled
    std::uint32_t inflight = 0;         // requests at the server
    // The synchronous verb's result.
    bool sync_done = false;
    Completion sync_c;
    std::string sync_err;
    std::uint64_t progress = 0;
    std::uint64_t empty_polls = 0;  // busy_poll: poll() calls that found nothing

    bool welcome_pending = true;
    std::vector<rof_wire_region> welcome;
    bool broken = false;
    Code broken_code = Code::unavailable;
    std::string broken_msg;

    // Keepalive.
    std::mutex mu;
    std::condition_variable cv;
    std::thread ka;
    bool stop = false;
    bool ka_inflight = false;
    std::chrono::milliseconds ka_interval{0};
    Clock::time_point last_req;
    std::uint64_t keepalives = 0;

    ~Impl() {
        {
            std::lock_guard lk(mu);
            stop = true;
        }
        cv.notify_all();
        if (ka.joinable()) {
            ka.join();
        }
        if (connected && id) {
            rdma_disconnect(id.get());
        }
    }

    std::string head() const { return "session " + std::to_string(session) + ": "; }

    [[noreturn]] void fail(Code c, const std::string& what) const { throw Error(c, head() + what); }

    // ---- connect -------------------------------------------------------

    rdma_cm_event* cm_wait(Clock::time_point deadline) const {
        for (;;) {
            rdma_cm_event* ev = nullptr;
            if (rdma_get_cm_event(ec.get(), &ev) == 0) {
                return ev;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fail(Code::internal, "rdma_get_cm_event: " + errno_text(errno));
            }
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                return nullptr;
            }
            pollfd p{ec->fd, POLLIN, 0};
            ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
        }
    }

    void cm_expect(rdma_cm_event_type want, Clock::time_point deadline, const char* what) const {
        rdma_cm_event* ev = cm_wait(deadline);
        if (!ev) {
            fail(Code::deadline_exceeded, std::string(what) + " " + peer + ": timed out");
        }
        rdma_cm_event_type got = ev->event;
        int status = ev->status;
        rdma_ack_cm_event(ev);
        if (got != want) {
            fail(Code::unavailable, std::string(what) + " " + peer + ": " + rdma_event_str(got) +
                                        " (status " + std::to_string(status) + ")");
        }
    }

    void connect(const v1::OpenSessionResponse& prep, const SessionOptions& o) {
        opt = o;
        const std::string& t = prep.ticket();
        if (t.size() >= 12) {
            std::uint32_t s;
            std::memcpy(&s, t.data() + 8, 4);
            session = le32toh(s);
        }
        if (prep.session()) {
            session = prep.session();
        }
        if (t.size() != sizeof(rof_ticket)) {
            fail(Code::invalid_argument, "the ticket has " + std::to_string(t.size()) +
                                             " bytes, not " + std::to_string(sizeof(rof_ticket)));
        }
        if (opt.max_transfer < 8) {
            opt.max_transfer = 8;
        }
        opt.depth = std::clamp<std::uint32_t>(opt.depth, 1, 4096);
        std::string address = opt.address.empty() ? prep.address() : opt.address;
        std::uint16_t port = prep.port() ? static_cast<std::uint16_t>(prep.port())
                                         : static_cast<std::uint16_t>(ROF_CM_PORT_DEFAULT);
        SockAddr sa;
        std::string why;
        if (!parse_address(address, port, &sa, &why)) {
            fail(Code::invalid_argument, why);
        }
        peer = format_peer(sa);
        auto deadline = Clock::now() + opt.connect_timeout;
        int ms = static_cast<int>(std::clamp<long long>(opt.connect_timeout.count(), 1, 60000));

        ec.reset(rdma_create_event_channel());
        if (!ec) {
            fail(Code::unavailable,
                 "rdma_create_event_channel: " + errno_text(errno) + " (is rdma_ucm loaded?)");
        }
        fcntl(ec->fd, F_SETFL, fcntl(ec->fd, F_GETFL) | O_NONBLOCK);
        rdma_cm_id* raw = nullptr;
        if (rdma_create_id(ec.get(), &raw, nullptr, RDMA_PS_TCP)) {
            fail(Code::unavailable, "rdma_create_id: " + errno_text(errno));
        }
        id.reset(raw);
        if (rdma_resolve_addr(id.get(), nullptr, reinterpret_cast<sockaddr*>(sa.storage), ms)) {
            fail(Code::unavailable, "resolve " + peer + ": " + errno_text(errno));
        }
        cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED, deadline, "resolve address");
        if (rdma_resolve_route(id.get(), ms)) {
            fail(Code::unavailable, "resolve route to " + peer + ": " + errno_text(errno));
        }
        cm_expect(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, "resolve route to");

        ibv_device_attr da{};
        if (ibv_query_device(id->verbs, &da)) {
            fail(Code::unavailable, "ibv_query_device: " + errno_text(errno));
        }
        // Credits are known only from the accept, and receives go up before
        // the connect: size for the tenant's quota when rofd said it.
        std::uint32_t cap = prep.inflight()
                                ? std::min<std::uint32_t>(prep.inflight(), ROF_SESSION_CREDITS_MAX)
                                : ROF_SESSION_CREDITS_MAX;
        msg = std::max<std::uint32_t>(prep.msg_size(), ROF_MSG_SIZE);
        nrx = cap + 1;
        nreq = cap + 1;  // one for the keepalive
        none = opt.depth;
        xfer = (opt.max_transfer + 63) & ~static_cast<std::size_t>(63);
        std::uint32_t sq_depth = nreq + none + 1;
        if (sq_depth > static_cast<std::uint32_t>(da.max_qp_wr) ||
            nrx > static_cast<std::uint32_t>(da.max_qp_wr)) {
            fail(Code::resource_exhausted, "the device allows " + std::to_string(da.max_qp_wr) +
                                               " work requests per queue, " +
                                               std::to_string(sq_depth) + " needed");
        }

        pd.reset(ibv_alloc_pd(id->verbs));
        if (!pd) {
            fail(Code::unavailable, "ibv_alloc_pd: " + errno_text(errno));
        }
        comp.reset(ibv_create_comp_channel(id->verbs));
        if (!comp) {
            fail(Code::unavailable, "ibv_create_comp_channel: " + errno_text(errno));
        }
        fcntl(comp->fd, F_SETFL, fcntl(comp->fd, F_GETFL) | O_NONBLOCK);
        cq.reset(
            ibv_create_cq(id->verbs, static_cast<int>(sq_depth + nrx), nullptr, comp.get(), 0));
        if (!cq) {
            fail(Code::unavailable, "ibv_create_cq: " + errno_text(errno));
        }
        std::size_t bytes = (static_cast<std::size_t>(nrx) + nreq) * msg + none * xfer;
        bytes = (bytes + 4095) & ~static_cast<std::size_t>(4095);
        // Page-aligned, for the MR; freed by FreeDel.
        mem.reset(static_cast<std::byte*>(
            std::aligned_alloc(4096, bytes)));  // NOLINT(*-no-malloc,*-owning-memory)
        if (!mem) {
            fail(Code::resource_exhausted,
                 "cannot allocate " + std::to_string(bytes) + " bytes of buffers");
        }
        std::memset(mem.get(), 0, bytes);
        rx_base = mem.get();
        req_base = rx_base + static_cast<std::size_t>(nrx) * msg;
        one_base = req_base + static_cast<std::size_t>(nreq) * msg;
        mr.reset(ibv_reg_mr(pd.get(), mem.get(), bytes, IBV_ACCESS_LOCAL_WRITE));
        if (!mr) {
            fail(Code::resource_exhausted,
                 "ibv_reg_mr of " + std::to_string(bytes) + " bytes: " + errno_text(errno));
        }

        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq.get();
        qa.qp_type = IBV_QPT_RC;
        qa.sq_sig_all = 0;
        qa.cap.max_send_wr = sq_depth;
        qa.cap.max_recv_wr = nrx;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        qa.cap.max_inline_data = 256;
        if (rdma_create_qp(id.get(), pd.get(), &qa)) {
            qa.cap.max_inline_data = 0;
            if (rdma_create_qp(id.get(), pd.get(), &qa)) {
                fail(Code::unavailable, "rdma_create_qp: " + errno_text(errno));
            }
        }
        qp_guard.reset(id.get());
        qp = id->qp;
        max_inline = qa.cap.max_inline_data;

        // Slots, the batch, the FIFO, the ready ring: all sized now.
        req_ops.assign(nreq, Op{});
        one_ops.assign(none, Op{});
        req_pool.reset(nreq);
        one_pool.reset(none);
        sq.reset(sq_depth, std::max<std::uint32_t>(sq_depth / 2, 1));
        batch.assign(sq_depth, ibv_send_wr{});
        batch_sge.assign(sq_depth, ibv_sge{});
        fifo.assign(sq_depth, 0);
        rx_wr.assign(nrx, ibv_recv_wr{});
        rx_sge.assign(nrx, ibv_sge{});
        ready.resize(nreq + none);
        poll_err.resize(nreq + none);
        for (auto& r : ready) {
            r.err.reserve(160);
        }

        for (std::uint32_t i = 0; i < nrx; i++) {
            queue_rx(i);
        }
        post_rx();

        rdma_conn_param cp{};
        cp.private_data = t.data();
        cp.private_data_len = static_cast<std::uint8_t>(t.size());
        cp.initiator_depth = static_cast<std::uint8_t>(
            std::min<int>({static_cast<int>(opt.depth), da.max_qp_init_rd_atom, 255}));
        cp.responder_resources = 0;
        cp.retry_count = 7;
        cp.rnr_retry_count = 7;
        if (rdma_connect(id.get(), &cp)) {
            fail(Code::unavailable, "rdma_connect to " + peer + ": " + errno_text(errno));
        }
        rdma_cm_event* ev = cm_wait(deadline);
        if (!ev) {
            fail(Code::deadline_exceeded, "connect to " + peer + ": no answer in " +
                                              std::to_string(opt.connect_timeout.count()) + " ms");
        }
        if (ev->event == RDMA_CM_EVENT_REJECTED) {
            const auto* rej = static_cast<const rof_reject*>(ev->param.conn.private_data);
            bool ours = rej && ev->param.conn.private_data_len >= sizeof(rof_reject) &&
                        le32toh(rej->magic) == ROF_REJECT_MAGIC;
            std::uint32_t reason = ours ? le32toh(rej->reason) : 0;
            int status = ev->status;
            rdma_ack_cm_event(ev);
            if (ours) {
                throw reject_error(session, reason);
            }
            fail(Code::unavailable, "connect to " + peer + " refused (status " +
                                        std::to_string(status) + "): is rof.ko listening there?");
        }
        if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
            std::string what = rdma_event_str(ev->event);
            int status = ev->status;
            rdma_ack_cm_event(ev);
            fail(Code::unavailable,
                 "connect to " + peer + ": " + what + " (status " + std::to_string(status) + ")");
        }
        const auto* acc = static_cast<const rof_accept*>(ev->param.conn.private_data);
        bool good = acc && ev->param.conn.private_data_len >= sizeof(rof_accept) &&
                    le32toh(acc->magic) == ROF_ACCEPT_MAGIC && acc->version == ROF_WIRE_VERSION;
        std::uint32_t acc_credits = good ? le16toh(acc->credits) : 0;
        std::uint32_t nregions = good ? acc->nregions : 0;
        if (good) {
            session = le32toh(acc->session);
            msg = std::min<std::uint32_t>(
                msg, std::max<std::uint32_t>(le32toh(acc->msg_size), sizeof(rof_req_hdr)));
        }
        rdma_ack_cm_event(ev);
        connected = true;
        if (!good) {
            fail(Code::internal, "the accept from " + peer + " is not rof.ko's");
        }
        if (!acc_credits || nregions > ROF_SESSION_MAX_REGIONS) {
            fail(Code::internal, "accept: " + std::to_string(acc_credits) + " credits, " +
                                     std::to_string(nregions) + " regions");
        }
        // More credits than receives posted would overrun our receive
        // queue: use what we are ready for.
        credits = std::min(acc_credits, nreq - 1);
        last_req = Clock::now();

        // The welcome message (request id 0) with the region table.
        {
            std::unique_lock lk(mu);
            while (welcome_pending && !broken) {
                if (!wait_progress(lk, deadline)) {
                    fail(Code::deadline_exceeded, "no welcome message from " + peer + " in " +
                                                      std::to_string(opt.connect_timeout.count()) +
                                                      " ms");
                }
            }
            if (broken) {
                throw Error(broken_code, broken_msg);
            }
        }
        if (welcome.size() != nregions) {
            fail(Code::internal, "the welcome message has " + std::to_string(welcome.size()) +
                                     " regions, the accept said " + std::to_string(nregions));
        }
        for (const rof_wire_region& w : welcome) {
            RegionEntry r;
            r.id = le32toh(w.region);
            r.addr = le64toh(w.addr);
            r.length = le64toh(w.length);
            r.rkey = le32toh(w.rkey);
            r.access = le32toh(w.access);
            r.name = "#" + std::to_string(r.id);
            for (const auto& g : prep.regions()) {
                if (g.region() == r.id && !g.name().empty()) {
                    r.name = g.name();
                }
            }
            regions.push_back(r);
            granted.push_back(GrantedRegion{r.name, r.id, r.access, r.length});
        }
        for (const auto& g : prep.regions()) {
            bool found = false;
            for (const auto& r : regions) {
                found |= r.id == g.region();
            }
            if (!found) {
                fail(Code::internal, "region '" + g.name() + "' (id " + std::to_string(g.region()) +
                                         ") is not in the welcome message");
            }
        }

        std::uint32_t idle = opt.idle_timeout_ms ? opt.idle_timeout_ms : kDefaultIdleMs;
        ka_interval = std::chrono::milliseconds(std::max<std::uint32_t>(idle / 3, 1));
        ka = std::thread([this] { keepalive_loop(); });
    }

    // ---- receives ------------------------------------------------------

    void queue_rx(std::uint32_t slot) {
        ibv_sge& s = rx_sge[rx_n];
        s.addr = reinterpret_cast<std::uintptr_t>(rx(slot));
        s.length = msg;
        s.lkey = mr->lkey;
        ibv_recv_wr& w = rx_wr[rx_n];
        w.wr_id = wr_id(kRecv, slot);
        w.sg_list = &s;
        w.num_sge = 1;
        w.next = nullptr;
        if (rx_n) {
            rx_wr[rx_n - 1].next = &w;
        }
        rx_n++;
    }

    void post_rx() {
        if (!rx_n) {
            return;
        }
        ibv_recv_wr* bad = nullptr;
        int rc = ibv_post_recv(qp, rx_wr.data(), &bad);
        rx_n = 0;
        if (rc && !broken) {
            break_session(Code::unavailable, "ibv_post_recv: " + errno_text(rc));
        }
    }

    // ---- completions ---------------------------------------------------

    void deliver(Op& op, Code code, const std::string& err, std::size_t len, std::uint64_t value,
                 const InvokeResult& inv) {
        progress++;
        if (op.internal) {
            return;
        }
        if (op.sync) {
            sync_done = true;
            sync_c = Completion{op.user, op.verb, code, {}, len, value, inv};
            sync_err = err;
            return;
        }
        Ready& r = ready[(ready_head + ready_n) % ready.size()];
        ready_n++;
        r.c = Completion{op.user, op.verb, code, {}, len, value, inv};
        r.err = err;
    }

    void free_req(std::uint32_t slot) {
        req_ops[slot] = Op{};
        req_pool.release(slot);
    }

    void on_response(std::uint32_t rslot, std::uint32_t byte_len) {
        const std::byte* b = rx(rslot);
        rof_resp_hdr h{};
        if (byte_len < sizeof(h)) {
            queue_rx(rslot);
            return;
        }
        std::memcpy(&h, b, sizeof(h));
        std::uint64_t rid = le64toh(h.id);
        std::uint32_t status = le32toh(h.status);
        std::uint32_t len = std::min<std::uint32_t>(le32toh(h.len), byte_len - sizeof(h));
        const std::byte* payload = b + sizeof(h);
        if (rid == ROF_WELCOME_ID) {
            if (welcome_pending) {
                std::size_t n = len / sizeof(rof_wire_region);
                welcome.resize(n);
                std::memcpy(welcome.data(), payload, n * sizeof(rof_wire_region));
                welcome_pending = false;
                progress++;
            }
            queue_rx(rslot);
            return;
        }
        std::uint32_t slot = static_cast<std::uint32_t>(rid & 0xffff) - 1;
        if (slot >= nreq || req_ops[slot].answered || inflight == 0) {
            queue_rx(rslot);  // not ours: ignore
            return;
        }
        Op& op = req_ops[slot];
        op.answered = true;
        inflight--;
        if (op.internal) {
            ka_inflight = false;
        }
        InvokeResult inv;
        Code code = Code::ok;
        std::string err;
        std::size_t out_len = 0;
        if (op.verb == Verb::invoke && (status == ROF_ST_OK || status == ROF_ST_PROG_FAULT) &&
            len >= 16) {
            rof_invoke_result r{};
            std::memcpy(&r, payload, sizeof(r));
            inv.prog_status = le32toh(r.prog_status);
            inv.insns = le32toh(r.insns);
            std::uint32_t exec = le32toh(r.exec_status);
            std::uint32_t pc = le32toh(r.fault_pc);
            if (status == ROF_ST_OK) {
                std::size_t n = len - sizeof(r);
                out_len = std::min(n, op.out.size());
                if (out_len) {
                    std::memcpy(op.out.data(), payload + sizeof(r), out_len);
                }
                inv.len = out_len;
                if (n > op.out.size()) {
                    code = Code::out_of_range;
                    err = head() + "the program's response of " + std::to_string(n) +
                          " bytes does not fit the " + std::to_string(op.out.size()) +
                          "-byte buffer";
                }
            } else {
                code = Code::aborted;
                err = status_message(session, status, op.tag, exec, pc);
            }
        } else if (status != ROF_ST_OK) {
            code = status_code(status);
            err = status_message(session, status, op.tag, 0, 0);
        }
        deliver(op, code, err, out_len, 0, inv);
        queue_rx(rslot);
        if (op.retired) {
            free_req(slot);
        }
    }

    void complete_one(std::uint32_t slot) {
        Op& op = one_ops[slot];
        std::uint64_t value = 0;
        std::size_t len = op.len;
        if (op.verb == Verb::read) {
            std::memcpy(op.out.data(), one(slot), op.len);
        } else if (op.verb == Verb::cas || op.verb == Verb::faa) {
            std::memcpy(&value, one(slot), 8);  // host order, as the HCA wrote it
        }
        deliver(op, Code::ok, {}, len, value, {});
        one_ops[slot] = Op{};
        one_pool.release(slot);
    }

    void retire(std::uint32_t n) {
        sq.retire(n);
        while (n-- && fifo_n) {
            std::uint64_t e = fifo[fifo_head];
            fifo_head = (fifo_head + 1) % fifo.size();
            fifo_n--;
            std::uint32_t slot = wr_slot(e);
            if (wr_kind(e) == kReq) {
                Op& op = req_ops[slot];
                op.retired = true;
                if (op.answered) {
                    free_req(slot);
                }
            } else {
                complete_one(slot);
            }
        }
    }

    // The QP failed or the server went away: every operation in flight
    // completes with an error, later ones throw.  The operation of
    // @culprit (a wr_id; 0: none) gets @code and @why, the others
    // unavailable.
    void break_session(Code code, const std::string& why, std::uint64_t culprit = 0) {
        if (broken) {
            return;
        }
        broken = true;
        broken_code = Code::unavailable;
        broken_msg = "session " + std::to_string(session) + " closed by rof.ko" +
                     (why.empty() ? "" : ": " + why);
        if (connected) {
            rdma_disconnect(id.get());  // the QP goes to error: no more DMA
        }
        std::string first = code == Code::unavailable ? broken_msg : head() + why;
        auto is_culprit = [&](Kind k, std::uint32_t i) {
            return culprit && wr_kind(culprit) == k && wr_slot(culprit) == i;
        };
        // One-sided ops in flight: those whose slots are taken.
        std::vector<bool> busy(none, true);
        // (slow path: allocation is fine here)
        SlotPool tmp = one_pool;
        while (!tmp.empty()) {
            busy[tmp.acquire()] = false;
        }
        for (std::uint32_t i = 0; i < none; i++) {
            if (busy[i]) {
                bool me = is_culprit(kOne, i);
                deliver(one_ops[i], me ? code : Code::unavailable, me ? first : broken_msg, 0, 0,
                        {});
                one_ops[i] = Op{};
                one_pool.release(i);
            }
        }
        std::vector<bool> rbusy(nreq, true);
        tmp = req_pool;
        while (!tmp.empty()) {
            rbusy[tmp.acquire()] = false;
        }
        for (std::uint32_t i = 0; i < nreq; i++) {
            if (rbusy[i]) {
                if (!req_ops[i].answered) {
                    bool me = is_culprit(kReq, i);
                    deliver(req_ops[i], me ? code : Code::unavailable, me ? first : broken_msg, 0,
                            0, {});
                }
                free_req(i);
            }
        }
        inflight = 0;
        ka_inflight = false;
        batch_n = 0;
        fifo_n = 0;
        sq.reset(sq.depth(), 1);
        progress++;
    }

    // Polls the CQ once; returns the completions seen.
    int drain() {
        if (broken) {
            return 0;
        }
        ibv_wc wc[kPollBatch];
        int n = ibv_poll_cq(cq.get(), kPollBatch, wc);
        if (n < 0) {
            break_session(Code::unavailable, "ibv_poll_cq failed");
            return 0;
        }
        for (int i = 0; i < n && !broken; i++) {
            const ibv_wc& w = wc[i];
            if (w.status != IBV_WC_SUCCESS) {
                handle_wc_error(w);
                continue;
            }
            Kind k = wr_kind(w.wr_id);
            if (k == kRecv) {
                on_response(wr_slot(w.wr_id), w.byte_len);
            } else if (std::uint32_t r = wr_retire(w.wr_id)) {
                retire(r);
            }
        }
        if (!broken) {
            post_rx();
        }
        return n;
    }

    void handle_wc_error(const ibv_wc& w) {
        std::string st = ibv_wc_status_str(w.status);
        if (w.status == IBV_WC_REM_ACCESS_ERR && wr_kind(w.wr_id) == kOne) {
            break_session(Code::permission_denied,
                          "remote access error: rof.ko refused the key, range or rights of a "
                          "one-sided operation (" +
                              st + "); the session is closed",
                          w.wr_id);
        } else if (w.status == IBV_WC_WR_FLUSH_ERR) {
            break_session(Code::unavailable, "");
        } else {
            break_session(Code::unavailable, "work request failed: " + st, w.wr_id);
        }
    }

    // The server disconnected (or the device went away)?
    void check_cm() {
        rdma_cm_event* ev = nullptr;
        while (rdma_get_cm_event(ec.get(), &ev) == 0) {
            rdma_cm_event_type t = ev->event;
            rdma_ack_cm_event(ev);
            if (t == RDMA_CM_EVENT_DISCONNECTED) {
                break_session(Code::unavailable, "");
            } else if (t == RDMA_CM_EVENT_DEVICE_REMOVAL) {
                break_session(Code::unavailable, "the RDMA device was removed");
            }
        }
    }

    // Waits for any progress (a completion or a CM event) until @deadline;
    // false on timeout.  Unlocks @lk while blocked so that the keepalive
    // runs.
    bool wait_progress(std::unique_lock<std::mutex>& lk, Clock::time_point deadline) {
        std::uint64_t p0 = progress;
        if (opt.busy_poll) {
            // Spin, holding the lock (no keepalive is due while a verb is
            // in flight); look at the clock and the CM now and then.
            for (unsigned i = 1;; i++) {
                drain();
                if (progress != p0 || broken) {
                    return true;
                }
                if (i % 1024 == 0) {
                    check_cm();
                    if (Clock::now() >= deadline) {
                        return false;
                    }
                }
            }
        }
        for (int i = 0; i < kSpin; i++) {
            drain();
            if (progress != p0 || broken) {
                return true;
            }
        }
        for (;;) {
            ibv_req_notify_cq(cq.get(), 0);
            drain();
            if (progress != p0 || broken) {
                return true;
            }
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                return false;
            }
            pollfd p[2] = {{comp->fd, POLLIN, 0}, {ec->fd, POLLIN, 0}};
            lk.unlock();
            ::poll(p, 2, static_cast<int>(std::min<long long>(left.count() + 1, 100)));
            lk.lock();
            consume_cq_events();
            check_cm();
            drain();
            if (progress != p0 || broken) {
                return true;
            }
        }
    }

    void consume_cq_events() const {
        ibv_cq* ecq = nullptr;
        void* ctx = nullptr;
        while (ibv_get_cq_event(comp.get(), &ecq, &ctx) == 0) {
            ibv_ack_cq_events(ecq, 1);
        }
    }

    // ---- sends ---------------------------------------------------------

    void check_live() const {
        if (broken) {
            throw Error(Code::unavailable, broken_msg);
        }
    }

    void flush() {
        if (!batch_n || broken) {
            return;
        }
        for (std::uint32_t i = 0; i < batch_n; i++) {
            ibv_send_wr& w = batch[i];
            std::uint32_t r = sq.add(i + 1 == batch_n);
            if (r) {
                w.send_flags |= IBV_SEND_SIGNALED;
                w.wr_id |= static_cast<std::uint64_t>(r) << 32;
            }
            w.next = i + 1 < batch_n ? &batch[i + 1] : nullptr;
            fifo[(fifo_head + fifo_n) % fifo.size()] = w.wr_id & ~(0xfffffffull << 32);
            fifo_n++;
        }
        ibv_send_wr* bad = nullptr;
        int rc = ibv_post_send(qp, batch.data(), &bad);
        batch_n = 0;
        if (batch_has_req) {
            last_req = Clock::now();
            batch_has_req = false;
        }
        if (rc) {
            break_session(Code::unavailable, "ibv_post_send: " + errno_text(rc));
        }
    }

    ibv_send_wr& next_wr(std::uint64_t id, std::byte* buf, std::uint32_t len) {
        ibv_send_wr& w = batch[batch_n];
        ibv_sge& s = batch_sge[batch_n];
        batch_n++;
        s.addr = reinterpret_cast<std::uintptr_t>(buf);
        s.length = len;
        s.lkey = mr->lkey;
        w = ibv_send_wr{};
        w.wr_id = id;
        w.sg_list = &s;
        w.num_sge = 1;
        return w;
    }

    // Room for one more work request in the batch and the send queue.
    void make_room(std::unique_lock<std::mutex>& lk) {
        if (sq.room() > batch_n) {
            return;
        }
        flush();
        auto deadline = Clock::now() + opt.op_timeout;
        while (!broken && sq.room() <= batch_n) {
            if (!wait_progress(lk, deadline)) {
                fail(Code::deadline_exceeded, "the send queue did not drain");
            }
        }
        check_live();
    }

    void check_outstanding(bool sync) const {
        if (!sync && outstanding >= ready.size()) {
            fail(Code::resource_exhausted,
                 std::to_string(outstanding) + " operations not polled yet: poll() first");
        }
    }

    // A free request slot and a credit; waits only for what librof itself
    // holds (the keepalive's NOP, sends not yet retired) or, for a
    // synchronous verb, for the caller's own operations in flight.
    std::uint32_t acquire_req(std::unique_lock<std::mutex>& lk, bool sync, bool internal) {
        auto deadline = Clock::now() + opt.op_timeout;
        for (;;) {
            check_live();
            bool credit = inflight < credits;
            if (credit && !req_pool.empty()) {
                break;
            }
            if (internal) {
                return UINT32_MAX;
            }
            bool ours = ka_inflight || (credit && req_pool.empty());
            if (!sync && !ours) {
                fail(Code::resource_exhausted,
                     "no credit: " + std::to_string(inflight) + " requests in flight, " +
                         std::to_string(credits) + " allowed: poll() first");
            }
            flush();
            if (!wait_progress(lk, deadline)) {
                fail(Code::deadline_exceeded,
                     "no credit in " + std::to_string(opt.op_timeout.count()) + " ms");
            }
        }
        make_room(lk);
        return req_pool.acquire();
    }

    void post_req(std::unique_lock<std::mutex>& lk, std::uint16_t opcode, Verb verb,
                  std::uint64_t tag, std::span<const std::byte> args, std::span<std::byte> out,
                  std::uint64_t user, bool sync, bool internal) {
        check_live();
        std::uint32_t pre = verb == Verb::invoke ? sizeof(struct rof_invoke) : 0;
        if (sizeof(rof_req_hdr) + pre + args.size() > msg) {
            fail(Code::invalid_argument, "arguments of " + std::to_string(args.size()) +
                                             " bytes: at most " +
                                             std::to_string(msg - sizeof(rof_req_hdr) - pre));
        }
        check_outstanding(sync || internal);
        std::uint32_t slot = acquire_req(lk, sync, internal);
        if (slot == UINT32_MAX) {
            return;
        }
        Op& op = req_ops[slot];
        op = Op{};
        op.user = user;
        op.verb = verb;
        op.tag = tag;
        op.out = out;
        op.sync = sync;
        op.internal = internal;
        std::byte* b = req(slot);
        std::uint64_t rid = (++seq << 16) | (slot + 1);
        rof_req_hdr h{};
        h.id = htole64(rid);
        h.opcode = htole16(opcode);
        h.flags = 0;
        h.len = htole32(static_cast<std::uint32_t>(pre + args.size()));
        std::memcpy(b, &h, sizeof(h));
        if (pre) {
            struct rof_invoke inv = {htole64(tag)};
            std::memcpy(b + sizeof(h), &inv, sizeof(inv));
        }
        if (!args.empty()) {
            std::memcpy(b + sizeof(h) + pre, args.data(), args.size());
        }
        auto total = static_cast<std::uint32_t>(sizeof(h) + pre + args.size());
        ibv_send_wr& w = next_wr(wr_id(kReq, slot), b, total);
        w.opcode = IBV_WR_SEND;
        if (total <= max_inline) {
            w.send_flags |= IBV_SEND_INLINE;
        }
        inflight++;
        batch_has_req = true;
        if (!sync && !internal) {
            outstanding++;
        }
        if (internal) {
            ka_inflight = true;
        }
    }

    const RegionEntry& region(std::string_view name) const {
        for (const auto& r : regions) {
            if (r.name == name) {
                return r;
            }
        }
        fail(Code::not_found, "no region '" + std::string(name) + "' granted to the session");
    }

    void post_one(std::unique_lock<std::mutex>& lk, Verb verb, std::string_view rname,
                  std::uint64_t offset, std::span<std::byte> out, std::span<const std::byte> in,
                  std::uint64_t a, std::uint64_t b, std::uint64_t user, bool sync) {
        check_live();
        const RegionEntry& r = region(rname);
        std::uint64_t len = verb == Verb::read ? out.size() : verb == Verb::write ? in.size() : 8;
        Access need = verb == Verb::read    ? Access::read
                      : verb == Verb::write ? Access::write
                                            : Access::atomic;
        std::string why;
        Code c = check_access(session, r, offset, len, need, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
        if (len > xfer) {
            fail(Code::out_of_range, std::string(verb == Verb::read ? "read" : "write") + " of " +
                                         std::to_string(len) + " bytes: max_transfer is " +
                                         std::to_string(opt.max_transfer));
        }
        check_outstanding(sync);
        if (one_pool.empty()) {
            if (!sync) {
                fail(Code::resource_exhausted,
                     std::to_string(none) + " one-sided operations in flight: poll() first");
            }
            flush();
            auto deadline = Clock::now() + opt.op_timeout;
            while (one_pool.empty()) {
                check_live();
                if (!wait_progress(lk, deadline)) {
                    fail(Code::deadline_exceeded,
                         "no one-sided slot in " + std::to_string(opt.op_timeout.count()) + " ms");
                }
            }
        }
        make_room(lk);
        std::uint32_t slot = one_pool.acquire();
        Op& op = one_ops[slot];
        op = Op{};
        op.user = user;
        op.verb = verb;
        op.out = out;
        op.len = static_cast<std::uint32_t>(len);
        op.sync = sync;
        std::byte* buf = one(slot);
        if (verb == Verb::write) {
            std::memcpy(buf, in.data(), len);
        }
        ibv_send_wr& w = next_wr(wr_id(kOne, slot), buf, static_cast<std::uint32_t>(len));
        std::uint64_t raddr = r.addr + offset;
        switch (verb) {
            case Verb::read:
                w.opcode = IBV_WR_RDMA_READ;
                w.wr.rdma.remote_addr = raddr;
                w.wr.rdma.rkey = r.rkey;
                break;
            case Verb::write:
                w.opcode = IBV_WR_RDMA_WRITE;
                w.wr.rdma.remote_addr = raddr;
                w.wr.rdma.rkey = r.rkey;
                if (len <= max_inline) {
                    w.send_flags |= IBV_SEND_INLINE;
                }
                break;
            case Verb::cas:
                w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
                w.wr.atomic.remote_addr = raddr;
                w.wr.atomic.rkey = r.rkey;
                w.wr.atomic.compare_add = a;
                w.wr.atomic.swap = b;
                break;
            default:
                w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
                w.wr.atomic.remote_addr = raddr;
                w.wr.atomic.rkey = r.rkey;
                w.wr.atomic.compare_add = a;
                break;
        }
        if (!sync) {
            outstanding++;
        }
    }

    // Runs a synchronous verb posted by @post: flushes, waits for it.
    template <typename F>
    Completion run_sync(F&& post) {
        std::unique_lock lk(mu);
        sync_done = false;
        post(lk);
        flush();
        auto deadline = Clock::now() + opt.op_timeout;
        while (!sync_done) {
            if (!wait_progress(lk, deadline) && !sync_done) {
                // The operation still owns its slot; the session cannot
                // tell when it will finish, so it is unusable now.
                break_session(Code::unavailable, "no completion in op_timeout");
                fail(Code::deadline_exceeded, "no completion in " +
                                                  std::to_string(opt.op_timeout.count()) +
                                                  " ms: the session is closed");
            }
        }
        if (sync_c.code != Code::ok) {
            throw Error(sync_c.code, sync_err);
        }
        return sync_c;
    }

    std::size_t poll(std::span<Completion> out, std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu);
        flush();
        drain();
        std::size_t n = take(out);
        if (n) {
            return n;
        }
        if (opt.busy_poll) {
            // Driven by spinning, not by completion_fd(): no syscall on
            // an empty poll, and the CM looked at now and then.
            if (++empty_polls % 1024 == 0) {
                check_cm();
            }
        } else {
            // Nothing: re-arm the completion channel so that
            // completion_fd() wakes for what comes next, then look once more.
            consume_cq_events();
            check_cm();
            ibv_req_notify_cq(cq.get(), 0);
            drain();
            n = take(out);
        }
        if (n || timeout.count() <= 0) {
            return n;
        }
        auto deadline = Clock::now() + timeout;
        while (!(n = take(out))) {
            if (!outstanding || !wait_progress(lk, deadline)) {
                break;
            }
        }
        if (!n && !opt.busy_poll) {
            ibv_req_notify_cq(cq.get(), 0);
        }
        return n;
    }

    std::size_t take(std::span<Completion> out) {
        std::size_t n = 0;
        while (n < out.size() && ready_n) {
            Ready& r = ready[ready_head];
            ready_head = (ready_head + 1) % ready.size();
            ready_n--;
            out[n] = r.c;
            poll_err[n] = r.err;
            out[n].error = poll_err[n];
            n++;
            outstanding--;
        }
        return n;
    }

    // ---- keepalive -----------------------------------------------------

    void keepalive_loop() {
        std::unique_lock lk(mu);
        while (!stop) {
            cv.wait_for(lk, ka_interval / 2);
            if (stop || broken) {
                if (stop) {
                    break;
                }
                continue;
            }
            check_cm();
            drain();
            if (broken || ka_inflight || Clock::now() - last_req < ka_interval) {
                continue;
            }
            if (inflight >= credits || req_pool.empty() || sq.room() <= batch_n) {
                continue;  // requests are in flight anyway
            }
            // Posted alone, ahead of the caller's unflushed batch.
            post_keepalive();
        }
    }

    void post_keepalive() {
        std::uint32_t slot = req_pool.acquire();
        Op& op = req_ops[slot];
        op = Op{};
        op.verb = Verb::nop;
        op.internal = true;
        std::byte* b = req(slot);
        rof_req_hdr h{};
        h.id = htole64((++seq << 16) | (slot + 1));
        h.opcode = htole16(ROF_OP_NOP);
        std::memcpy(b, &h, sizeof(h));
        ibv_sge s{reinterpret_cast<std::uintptr_t>(b), sizeof(h), mr->lkey};
        ibv_send_wr w{};
        std::uint32_t r = sq.add(true);
        w.wr_id = wr_id(kReq, slot) | (static_cast<std::uint64_t>(r) << 32);
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = IBV_WR_SEND;
        w.send_flags = IBV_SEND_SIGNALED | (sizeof(h) <= max_inline ? IBV_SEND_INLINE : 0);
        fifo[(fifo_head + fifo_n) % fifo.size()] = wr_id(kReq, slot);
        fifo_n++;
        inflight++;
        ka_inflight = true;
        keepalives++;
        last_req = Clock::now();
        ibv_send_wr* bad = nullptr;
        int rc = ibv_post_send(qp, &w, &bad);
        if (rc) {
            break_session(Code::unavailable, "ibv_post_send: " + errno_text(rc));
        }
    }
};

// ---- Session -------------------------------------------------------------

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::connect(const v1::OpenSessionResponse& prepared, const SessionOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->connect(prepared, options);
    return Session(std::move(impl));
}

Session Session::open(Client& client, const SessionOptions& options) {
    v1::OpenSessionRequest req;
    req.set_tenant(options.tenant);
    for (const auto& r : options.regions) {
        auto* sr = req.add_regions();
        sr->set_name(r.name);
        sr->set_access(r.access);
    }
    req.set_idle_timeout_ms(options.idle_timeout_ms);
    v1::OpenSessionResponse resp = client.open_session(req);
    SessionOptions o = options;
    if (!o.idle_timeout_ms && resp.idle_timeout_ms()) {
        o.idle_timeout_ms = resp.idle_timeout_ms();
    }
    Session s = connect(resp, o);
    // Program names are looked up when first used, through a client of the
    // same rofd made then (a session outlives the caller's client), not
    // here: a name used later then works even if rofd was restarting now.
    struct Lookup {
        ClientOptions options;
        std::string tenant;
        std::mutex mu;
        std::unique_ptr<Client> client;
    };
    auto l = std::make_shared<Lookup>();
    l->options = client.options();
    l->tenant = options.tenant;
    s.impl_->programs.set_lookup([l](const std::string& name) {
        std::lock_guard lk(l->mu);
        if (!l->client) {
            l->client = std::make_unique<Client>(l->options);
        }
        v1::GetProgramRequest req;
        req.set_tenant(l->tenant);
        req.set_name(name);
        return l->client->get_program(req).tag();
    });
    return s;
}

std::uint32_t Session::id() const noexcept {
    return impl_->session;
}
std::uint32_t Session::credits() const noexcept {
    return impl_->credits;
}
const std::vector<GrantedRegion>& Session::regions() const noexcept {
    return impl_->granted;
}
const std::string& Session::peer() const noexcept {
    return impl_->peer;
}

void Session::learn_programs(Client& client) {
    v1::ListProgramsRequest req;
    req.set_tenant(impl_->opt.tenant);
    v1::ListProgramsResponse resp = client.list_programs(req);
    std::vector<std::pair<std::string, std::uint64_t>> p;
    for (const auto& prog : resp.programs()) {
        p.emplace_back(prog.name(), prog.tag());
    }
    impl_->programs.learn(p);
}

std::uint64_t Session::program_tag(std::string_view name) const {
    return impl_->programs.tag(impl_->session, name);
}

void Session::read(std::string_view region, std::uint64_t offset, std::span<std::byte> out) {
    // Larger reads go through the transfer buffer in pieces.
    std::size_t step = impl_->opt.max_transfer;
    if (out.size() > step) {
        std::string why;  // check the whole range before any piece
        std::lock_guard lk(impl_->mu);
        const RegionEntry& r = impl_->region(region);
        Code c = check_access(impl_->session, r, offset, out.size(), Access::read, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
    }
    for (std::size_t done = 0; done < out.size() || out.empty(); done += step) {
        std::size_t n = std::min(step, out.size() - done);
        auto piece = out.subspan(done, n);
        impl_->run_sync([&](std::unique_lock<std::mutex>& lk) {
            impl_->post_one(lk, Verb::read, region, offset + done, piece, {}, 0, 0, 0, true);
        });
        if (out.empty()) {
            break;
        }
    }
}

void Session::write(std::string_view region, std::uint64_t offset, std::span<const std::byte> in) {
    std::size_t step = impl_->opt.max_transfer;
    if (in.size() > step) {
        std::string why;
        std::lock_guard lk(impl_->mu);
        const RegionEntry& r = impl_->region(region);
        Code c = check_access(impl_->session, r, offset, in.size(), Access::write, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
    }
    for (std::size_t done = 0; done < in.size() || in.empty(); done += step) {
        std::size_t n = std::min(step, in.size() - done);
        auto piece = in.subspan(done, n);
        impl_->run_sync([&](std::unique_lock<std::mutex>& lk) {
            impl_->post_one(lk, Verb::write, region, offset + done, {}, piece, 0, 0, 0, true);
        });
        if (in.empty()) {
            break;
        }
    }
}

std::uint64_t Session::cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                           std::uint64_t desired) {
    return impl_
        ->run_sync([&](std::unique_lock<std::mutex>& lk) {
            impl_->post_one(lk, Verb::cas, region, offset, {}, {}, expected, desired, 0, true);
        })
        .value;
}

std::uint64_t Session::faa(std::string_view region, std::uint64_t offset, std::uint64_t add) {
    return impl_
        ->run_sync([&](std::unique_lock<std::mutex>& lk) {
            impl_->post_one(lk, Verb::faa, region, offset, {}, {}, add, 0, 0, true);
        })
        .value;
}

InvokeResult Session::invoke(std::string_view program, std::span<const std::byte> args,
                             std::span<std::byte> response) {
    const std::uint64_t tag = program_tag(program);
    try {
        return invoke(tag, args, response);
    } catch (const Error& e) {
        // The module knows no program of that tag (ROF_ST_NO_PROGRAM; it
        // ran nothing): the name may be another program's now.
        if (e.code() != Code::not_found) {
            throw;
        }
        auto now = impl_->programs.relearn(program, tag);
        if (!now) {
            throw;
        }
        return invoke(*now, args, response);
    }
}

InvokeResult Session::invoke(std::uint64_t tag, std::span<const std::byte> args,
                             std::span<std::byte> response) {
    return impl_
        ->run_sync([&](std::unique_lock<std::mutex>& lk) {
            impl_->post_req(lk, ROF_OP_INVOKE, Verb::invoke, tag, args, response, 0, true, false);
        })
        .invoke;
}

void Session::nop() {
    impl_->run_sync([&](std::unique_lock<std::mutex>& lk) {
        impl_->post_req(lk, ROF_OP_NOP, Verb::nop, 0, {}, {}, 0, true, false);
    });
}

void Session::post_read(std::string_view region, std::uint64_t offset, std::span<std::byte> out,
                        std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one(lk, Verb::read, region, offset, out, {}, 0, 0, user, false);
}

void Session::post_write(std::string_view region, std::uint64_t offset,
                         std::span<const std::byte> in, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one(lk, Verb::write, region, offset, {}, in, 0, 0, user, false);
}

void Session::post_cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                       std::uint64_t desired, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one(lk, Verb::cas, region, offset, {}, {}, expected, desired, user, false);
}

void Session::post_faa(std::string_view region, std::uint64_t offset, std::uint64_t add,
                       std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one(lk, Verb::faa, region, offset, {}, {}, add, 0, user, false);
}

void Session::post_invoke(std::uint64_t tag, std::span<const std::byte> args,
                          std::span<std::byte> response, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_req(lk, ROF_OP_INVOKE, Verb::invoke, tag, args, response, user, false, false);
}

void Session::flush() {
    std::lock_guard lk(impl_->mu);
    impl_->flush();
}

std::size_t Session::outstanding() const noexcept {
    std::lock_guard lk(impl_->mu);
    return impl_->outstanding;
}

std::size_t Session::poll(std::span<Completion> out, std::chrono::milliseconds timeout) {
    return impl_->poll(out, timeout);
}

int Session::completion_fd() const noexcept {
    return impl_->comp ? impl_->comp->fd : -1;
}

}  // namespace rof
