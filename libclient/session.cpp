// SPDX-License-Identifier: MIT
// rof::Session: the data path of librof (docs/protocol.md, docs/librof.md).
//
// One RC connection to rof.ko.  Session::Impl owns the session's lock and
// composes four parts, each in its own file:
//   - Connection (session_conn.h): rdma_cm and verbs resources, the
//     connect handshake, the registered buffers: receive buffers (one per
//     credit and one spare), request buffers (one per credit and one for
//     the keepalive), one transfer buffer per one-sided slot;
//   - SendPath (session_send.h): slots, credits, the batch that flush()
//     chains into one ibv_post_send, selective signalling and the FIFO of
//     entries a signalled completion retires (RC completes a send queue in
//     order, which is also when unsignalled one-sided operations complete);
//   - CompletionPath (session_completion.h): responses (matched to
//     requests by id, the request slot in the low 16 bits) and one-sided
//     results decoded into completions for the waiting verb or poll();
//   - Keepalive (session_keepalive.h): a thread that has a NOP sent when
//     no request went out for a third of the idle timeout.
// The glue is here: the drain of the CQ, waiting for progress, the break of
// a session, the verbs.  Everything the fast path touches is allocated at
// connect.
#include <endian.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "rof/session.h"
#include "session_completion.h"
#include "session_conn.h"
#include "session_internal.h"
#include "session_keepalive.h"
#include "session_send.h"
#include "uapi/rof.h"

namespace rof {
namespace {

using namespace detail;

// rof.ko's idle_timeout_ms default: only for an older rofd that answers 0
// (rofd answers the timeout in force, the module parameter's included).
constexpr std::uint32_t kDefaultIdleMs = ROF_SESSION_IDLE_DEFAULT_MS;
constexpr std::uint32_t kPollBatch = 32;
constexpr int kSpin = 200;  // empty CQ polls before a blocking wait

// A request to rof.ko (a SEND the module answers) as post_request() takes
// it.
struct Request {
    std::uint16_t opcode = ROF_OP_NOP;
    Verb verb = Verb::nop;
    std::uint64_t tag = 0;  // INVOKE: the program
    std::span<const std::byte> args{};
    std::span<std::byte> out{};  // INVOKE: the response's destination
    std::uint64_t user = 0;
    Delivery delivery = Delivery::polled;
};

// A one-sided verb (RDMA READ/WRITE, atomics) as post_one_sided() takes it.
struct OneSided {
    Verb verb = Verb::read;
    std::string_view region;
    std::uint64_t offset = 0;
    std::span<std::byte> out{};       // read: the destination
    std::span<const std::byte> in{};  // write: the source
    std::uint64_t compare_add = 0;    // cas: expected; faa: the addend
    std::uint64_t swap = 0;           // cas: desired
    std::uint64_t user = 0;
    Delivery delivery = Delivery::polled;
};

}  // namespace

struct Session::Impl {
    // Declared in construction order: the keepalive thread stops first,
    // the connection goes last (it disconnects, then frees the QP, the
    // buffers, the CQ...).
    Connection conn;
    SendPath send;
    CompletionPath completions;
    RecvChain recv;

    SessionOptions opt;
    std::uint32_t credits = 0;  // as accepted, for credits()
    std::uint32_t msg = ROF_MSG_SIZE;
    std::vector<RegionEntry> regions;
    std::vector<GrantedRegion> granted;
    ProgramNames programs;

    bool welcome_pending = true;
    std::vector<rof_wire_region> welcome;
    bool broken = false;
    Code broken_code = Code::unavailable;
    std::string broken_msg;
    std::uint64_t empty_polls = 0;  // busy_poll: poll() calls that found nothing

    std::mutex mu;
    Keepalive keepalive;

    ~Impl() { keepalive.stop(); }

    std::uint32_t session() const noexcept { return conn.session(); }
    [[noreturn]] void fail(Code c, const std::string& what) const { conn.fail(c, what); }

    // ---- connect -------------------------------------------------------

    void connect(const v1::OpenSessionResponse& prep, const SessionOptions& o) {
        opt = o;
        const std::string& t = prep.ticket();
        if (t.size() >= 12) {
            std::uint32_t s;
            std::memcpy(&s, t.data() + 8, 4);
            conn.set_session(le32toh(s));
        }
        if (prep.session()) {
            conn.set_session(prep.session());
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
        auto deadline = Clock::now() + opt.connect_timeout;
        int ms = static_cast<int>(std::clamp<long long>(opt.connect_timeout.count(), 1, 60000));
        conn.resolve(sa, deadline, ms);

        const ibv_device_attr& da = conn.device();
        // Credits are known only from the accept, and receives go up before
        // the connect: size for the tenant's quota when rofd said it.
        std::uint32_t cap = prep.credits()
                                ? std::min<std::uint32_t>(prep.credits(), ROF_SESSION_CREDITS_MAX)
                                : ROF_SESSION_CREDITS_MAX;
        // Every buffer is one message of the session's size, which rofd's
        // answer says (ROF_MSG_SIZE from a rofd that did not say it).
        msg = std::max<std::uint32_t>(prep.msg_size(), ROF_MSG_SIZE);
        if (msg > ROF_MSG_SIZE_MAX) {
            fail(Code::invalid_argument, "the session's msg_size " + std::to_string(msg) +
                                             " is above ROF_MSG_SIZE_MAX (" +
                                             std::to_string(ROF_MSG_SIZE_MAX) + ")");
        }
        BufferLayout l;
        l.msg = msg;
        l.receives = cap + 1;
        l.requests = cap + 1;  // one for the keepalive
        l.one_sided = opt.depth;
        l.transfer = (opt.max_transfer + 63) & ~static_cast<std::size_t>(63);
        l.send_depth = l.requests + l.one_sided + 1;
        if (l.send_depth > static_cast<std::uint32_t>(da.max_qp_wr) ||
            l.receives > static_cast<std::uint32_t>(da.max_qp_wr)) {
            fail(Code::resource_exhausted, "the device allows " + std::to_string(da.max_qp_wr) +
                                               " work requests per queue, " +
                                               std::to_string(l.send_depth) + " needed");
        }
        conn.create(l);

        // Slots, the batch, the FIFO, the ready ring: all sized now.
        send.reset(SendLimits{l.requests, l.one_sided, l.send_depth, conn.lkey()});
        completions.reset(l.requests + l.one_sided);
        recv.reset(l.receives);
        for (std::uint32_t i = 0; i < l.receives; i++) {
            queue_rx(i);
        }
        post_rx();

        auto depth = static_cast<std::uint8_t>(
            std::min<int>({static_cast<int>(opt.depth), da.max_qp_init_rd_atom, 255}));
        Accepted acc = conn.connect(t, depth, deadline, opt.connect_timeout);
        if (acc.msg > msg) {
            // Its responses would not fit the receives posted.
            fail(Code::internal, "the accept's msg_size " + std::to_string(acc.msg) +
                                     " is larger than the session was opened with (" +
                                     std::to_string(msg) + ")");
        }
        msg = std::max<std::uint32_t>(acc.msg, sizeof(rof_req_hdr));
        // More credits than receives posted would overrun our receive
        // queue: use what we are ready for.
        credits = std::min(acc.credits, l.requests - 1);
        send.set_credits(credits);
        keepalive.touch(Clock::now());

        // The welcome message (request id 0) with the region table.
        {
            std::unique_lock lk(mu);
            while (welcome_pending && !broken) {
                if (!wait_progress(lk, deadline)) {
                    fail(Code::deadline_exceeded,
                         "no welcome message from " + conn.peer() + " in " +
                             std::to_string(opt.connect_timeout.count()) + " ms");
                }
            }
            if (broken) {
                throw Error(broken_code, broken_msg);
            }
        }
        learn_regions(prep, acc.regions);

        std::uint32_t idle = opt.idle_timeout_ms ? opt.idle_timeout_ms : kDefaultIdleMs;
        keepalive.start(std::chrono::milliseconds(std::max<std::uint32_t>(idle / 3, 1)), mu,
                        [this] { keepalive_tick(); });
    }

    // The welcome message's table against what rofd granted.
    void learn_regions(const v1::OpenSessionResponse& prep, std::uint32_t nregions) {
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
    }

    // ---- receives ------------------------------------------------------

    void queue_rx(std::uint32_t slot) {
        recv.add(wr_id(WrKind::recv, slot), conn.rx(slot), msg, conn.lkey());
    }

    void post_rx() {
        ibv_recv_wr* w = recv.head();
        if (!w) {
            return;
        }
        int rc = conn.post_recv(w);
        recv.clear();
        if (rc && !broken) {
            break_session(Code::unavailable, "ibv_post_recv: " + errno_text(rc));
        }
    }

    // ---- completions ---------------------------------------------------

    void on_response(std::uint32_t rslot, std::uint32_t byte_len) {
        Response r;
        if (!parse_response(conn.rx(rslot), byte_len, &r)) {
            queue_rx(rslot);
            return;
        }
        if (r.id == ROF_WELCOME_ID) {
            if (welcome_pending) {
                std::size_t n = r.payload.size() / sizeof(rof_wire_region);
                welcome.resize(n);
                std::memcpy(welcome.data(), r.payload.data(), n * sizeof(rof_wire_region));
                welcome_pending = false;
                completions.bump();
            }
            queue_rx(rslot);
            return;
        }
        std::uint32_t slot = send.answer_slot(r.id);
        if (slot == UINT32_MAX) {
            queue_rx(rslot);  // not ours: ignore
            return;
        }
        send.answered(slot);
        const Op& op = send.request(slot);
        if (op.delivery == Delivery::keepalive) {
            keepalive.done();
        }
        completions.answer(op, r, session());
        queue_rx(rslot);
        if (op.retired) {
            send.release_request(slot);
        }
    }

    void retire(std::uint32_t n) {
        send.retire(n, [this](std::uint32_t slot) {
            completions.complete_one_sided(send.one_sided(slot), conn.one(slot));
            send.release_one_sided(slot);
        });
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
        broken_msg = "session " + std::to_string(session()) + " closed by rof.ko" +
                     (why.empty() ? "" : ": " + why);
        conn.disconnect();  // the QP goes to error: no more DMA
        std::string first = code == Code::unavailable ? broken_msg : conn.head() + why;
        auto is_culprit = [&](WrKind k, std::uint32_t i) {
            return culprit && wr_kind(culprit) == k && wr_slot(culprit) == i;
        };
        // One-sided ops in flight: those whose slots are taken (slow path:
        // allocation is fine here).
        std::vector<bool> busy = send.one_sided_taken();
        for (std::uint32_t i = 0; i < busy.size(); i++) {
            if (busy[i]) {
                bool me = is_culprit(WrKind::one_sided, i);
                completions.deliver(send.one_sided(i), me ? code : Code::unavailable,
                                    me ? first : broken_msg);
                send.release_one_sided(i);
            }
        }
        busy = send.requests_taken();
        for (std::uint32_t i = 0; i < busy.size(); i++) {
            if (busy[i]) {
                if (!send.request(i).answered) {
                    bool me = is_culprit(WrKind::request, i);
                    completions.deliver(send.request(i), me ? code : Code::unavailable,
                                        me ? first : broken_msg);
                }
                send.release_request(i);
            }
        }
        send.clear_in_flight();
        keepalive.done();
        completions.bump();
    }

    // Polls the CQ once; returns the completions seen.
    int drain() {
        if (broken) {
            return 0;
        }
        ibv_wc wc[kPollBatch];
        int n = conn.poll_cq(kPollBatch, wc);
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
            if (wr_kind(w.wr_id) == WrKind::recv) {
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
        if (w.status == IBV_WC_REM_ACCESS_ERR && wr_kind(w.wr_id) == WrKind::one_sided) {
            break_session(Code::permission_denied,
                          "remote access error: rof.ko refused the key, range or access of a "
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
        for (CmEvent e; (e = conn.next_cm_event()) != CmEvent::none;) {
            if (e == CmEvent::disconnected) {
                break_session(Code::unavailable, "");
            } else if (e == CmEvent::device_removed) {
                break_session(Code::unavailable, "the RDMA device was removed");
            }
        }
    }

    // Waits for any progress (a completion or a CM event) until @deadline;
    // false on timeout.  Unlocks @lk while blocked so that the keepalive
    // runs.
    bool wait_progress(std::unique_lock<std::mutex>& lk, Clock::time_point deadline) {
        std::uint64_t p0 = completions.progress();
        auto moved = [&] { return completions.progress() != p0 || broken; };
        if (opt.busy_poll) {
            // Spin, holding the lock (no keepalive is due while a verb is
            // in flight); look at the clock and the CM now and then.
            for (unsigned i = 1;; i++) {
                drain();
                if (moved()) {
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
            if (moved()) {
                return true;
            }
        }
        for (;;) {
            conn.arm_cq();
            drain();
            if (moved()) {
                return true;
            }
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                return false;
            }
            pollfd p[2] = {{conn.completion_fd(), POLLIN, 0}, {conn.cm_fd(), POLLIN, 0}};
            lk.unlock();
            ::poll(p, 2, static_cast<int>(std::min<long long>(left.count() + 1, 100)));
            lk.lock();
            conn.consume_cq_events();
            check_cm();
            drain();
            if (moved()) {
                return true;
            }
        }
    }

    // ---- sends ---------------------------------------------------------

    void check_live() const {
        if (broken) {
            throw Error(Code::unavailable, broken_msg);
        }
    }

    void flush() {
        if (broken) {
            return;
        }
        bool had_request = false;
        ibv_send_wr* chain = send.seal(&had_request);
        if (!chain) {
            return;
        }
        int rc = conn.post_send(chain);
        if (had_request) {
            keepalive.touch(Clock::now());
        }
        if (rc) {
            break_session(Code::unavailable, "ibv_post_send: " + errno_text(rc));
        }
    }

    // Room for one more work request in the batch and the send queue.
    void make_room(std::unique_lock<std::mutex>& lk) {
        if (send.has_room()) {
            return;
        }
        flush();
        auto deadline = Clock::now() + opt.op_timeout;
        while (!broken && !send.has_room()) {
            if (!wait_progress(lk, deadline)) {
                fail(Code::deadline_exceeded, "the send queue did not drain");
            }
        }
        check_live();
    }

    void check_outstanding(Delivery d) const {
        if (d == Delivery::polled && completions.full()) {
            fail(Code::resource_exhausted, std::to_string(completions.outstanding()) +
                                               " operations not polled yet: poll() first");
        }
    }

    // A free request slot and a credit; waits only for what librof itself
    // holds (the keepalive's NOP, sends not yet retired) or, for a
    // synchronous verb, for the caller's own operations in flight.
    std::uint32_t acquire_request(std::unique_lock<std::mutex>& lk, Delivery d) {
        auto deadline = Clock::now() + opt.op_timeout;
        for (;;) {
            check_live();
            if (send.can_request()) {
                break;
            }
            bool ours = keepalive.in_flight() || (send.has_credit() && !send.request_free());
            if (d == Delivery::polled && !ours) {
                fail(Code::resource_exhausted,
                     "no credit: " + std::to_string(send.outstanding()) + " requests in flight, " +
                         std::to_string(send.credits()) + " allowed: poll() first");
            }
            flush();
            if (!wait_progress(lk, deadline)) {
                fail(Code::deadline_exceeded,
                     "no credit in " + std::to_string(opt.op_timeout.count()) + " ms");
            }
        }
        make_room(lk);
        return send.acquire_request();
    }

    // Batches @rq (posted by flush()).
    void post_request(std::unique_lock<std::mutex>& lk, const Request& rq) {
        check_live();
        std::uint32_t pre = rq.verb == Verb::invoke ? sizeof(struct rof_invoke) : 0;
        if (sizeof(rof_req_hdr) + pre + rq.args.size() > msg) {
            fail(Code::invalid_argument, "arguments of " + std::to_string(rq.args.size()) +
                                             " bytes: at most " +
                                             std::to_string(msg - sizeof(rof_req_hdr) - pre));
        }
        check_outstanding(rq.delivery);
        std::uint32_t slot = acquire_request(lk, rq.delivery);
        Op& op = send.request(slot);
        op.user = rq.user;
        op.verb = rq.verb;
        op.tag = rq.tag;
        op.out = rq.out;
        op.delivery = rq.delivery;
        std::byte* b = conn.req(slot);
        rof_req_hdr h{};
        h.id = htole64(send.request_id(slot));
        h.opcode = htole16(rq.opcode);
        h.flags = 0;
        h.len = htole32(static_cast<std::uint32_t>(pre + rq.args.size()));
        std::memcpy(b, &h, sizeof(h));
        if (pre) {
            struct rof_invoke inv = {htole64(rq.tag)};
            std::memcpy(b + sizeof(h), &inv, sizeof(inv));
        }
        if (!rq.args.empty()) {
            std::memcpy(b + sizeof(h) + pre, rq.args.data(), rq.args.size());
        }
        auto total = static_cast<std::uint32_t>(sizeof(h) + pre + rq.args.size());
        ibv_send_wr& w = send.add(wr_id(WrKind::request, slot), b, total);
        w.opcode = IBV_WR_SEND;
        if (total <= conn.max_inline()) {
            w.send_flags |= IBV_SEND_INLINE;
        }
        if (rq.delivery == Delivery::polled) {
            completions.expect();
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

    // Batches @o (posted by flush()).
    void post_one_sided(std::unique_lock<std::mutex>& lk, const OneSided& o) {
        check_live();
        const RegionEntry& r = region(o.region);
        const Verb verb = o.verb;
        std::uint64_t len = verb == Verb::read    ? o.out.size()
                            : verb == Verb::write ? o.in.size()
                                                  : 8;
        Access need = verb == Verb::read    ? Access::read
                      : verb == Verb::write ? Access::write
                                            : Access::atomic;
        std::string why;
        Code c = check_access(session(), r, o.offset, len, need, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
        if (len > conn.layout().transfer) {
            fail(Code::out_of_range, std::string(verb == Verb::read ? "read" : "write") + " of " +
                                         std::to_string(len) + " bytes: max_transfer is " +
                                         std::to_string(opt.max_transfer));
        }
        check_outstanding(o.delivery);
        if (!send.one_sided_free()) {
            if (o.delivery == Delivery::polled) {
                fail(Code::resource_exhausted, std::to_string(send.one_sided_slots()) +
                                                   " one-sided operations in flight: poll() first");
            }
            flush();
            auto deadline = Clock::now() + opt.op_timeout;
            while (!send.one_sided_free()) {
                check_live();
                if (!wait_progress(lk, deadline)) {
                    fail(Code::deadline_exceeded,
                         "no one-sided slot in " + std::to_string(opt.op_timeout.count()) + " ms");
                }
            }
        }
        make_room(lk);
        std::uint32_t slot = send.acquire_one_sided();
        Op& op = send.one_sided(slot);
        op.user = o.user;
        op.verb = verb;
        op.out = o.out;
        op.len = static_cast<std::uint32_t>(len);
        op.delivery = o.delivery;
        std::byte* buf = conn.one(slot);
        if (verb == Verb::write) {
            std::memcpy(buf, o.in.data(), len);
        }
        ibv_send_wr& w =
            send.add(wr_id(WrKind::one_sided, slot), buf, static_cast<std::uint32_t>(len));
        std::uint64_t raddr = r.addr + o.offset;
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
                if (len <= conn.max_inline()) {
                    w.send_flags |= IBV_SEND_INLINE;
                }
                break;
            case Verb::cas:
                w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
                w.wr.atomic.remote_addr = raddr;
                w.wr.atomic.rkey = r.rkey;
                w.wr.atomic.compare_add = o.compare_add;
                w.wr.atomic.swap = o.swap;
                break;
            default:
                w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
                w.wr.atomic.remote_addr = raddr;
                w.wr.atomic.rkey = r.rkey;
                w.wr.atomic.compare_add = o.compare_add;
                break;
        }
        if (o.delivery == Delivery::polled) {
            completions.expect();
        }
    }

    // Runs a synchronous verb posted by @post: flushes, waits for it.
    template <typename F>
    Completion run_posted(F&& post) {
        std::unique_lock lk(mu);
        completions.begin_sync();
        post(lk);
        flush();
        auto deadline = Clock::now() + opt.op_timeout;
        while (!completions.sync_done()) {
            if (!wait_progress(lk, deadline) && !completions.sync_done()) {
                // The operation still owns its slot; the session cannot
                // tell when it will finish, so it is unusable now.
                break_session(Code::unavailable, "no completion in op_timeout");
                fail(Code::deadline_exceeded, "no completion in " +
                                                  std::to_string(opt.op_timeout.count()) +
                                                  " ms: the session is closed");
            }
        }
        const Completion& c = completions.sync_result();
        if (c.code != Code::ok) {
            throw Error(c.code, completions.sync_error());
        }
        return c;
    }

    Completion run_sync(const Request& rq) {
        return run_posted([&](std::unique_lock<std::mutex>& lk) { post_request(lk, rq); });
    }
    Completion run_sync(const OneSided& o) {
        return run_posted([&](std::unique_lock<std::mutex>& lk) { post_one_sided(lk, o); });
    }

    std::size_t poll(std::span<Completion> out, std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu);
        flush();
        drain();
        std::size_t n = completions.take(out);
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
            conn.consume_cq_events();
            check_cm();
            conn.arm_cq();
            drain();
            n = completions.take(out);
        }
        if (n || timeout.count() <= 0) {
            return n;
        }
        auto deadline = Clock::now() + timeout;
        while (!(n = completions.take(out))) {
            if (!completions.outstanding() || !wait_progress(lk, deadline)) {
                break;
            }
        }
        if (!n && !opt.busy_poll) {
            conn.arm_cq();
        }
        return n;
    }

    // ---- keepalive -----------------------------------------------------

    // Every half interval, with mu held.
    void keepalive_tick() {
        if (broken) {
            return;
        }
        check_cm();
        drain();
        if (broken || !keepalive.due(Clock::now())) {
            return;
        }
        if (!send.can_request() || !send.has_room()) {
            return;  // requests are in flight anyway
        }
        // Posted alone, ahead of the caller's unflushed batch.
        std::uint32_t slot = send.acquire_request();
        Op& op = send.request(slot);
        op.verb = Verb::nop;
        op.delivery = Delivery::keepalive;
        std::byte* b = conn.req(slot);
        rof_req_hdr h{};
        h.id = htole64(send.request_id(slot));
        h.opcode = htole16(ROF_OP_NOP);
        std::memcpy(b, &h, sizeof(h));
        ibv_sge s{reinterpret_cast<std::uintptr_t>(b), sizeof(h), conn.lkey()};
        ibv_send_wr w{};
        w.wr_id = wr_id(WrKind::request, slot);
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = IBV_WR_SEND;
        w.send_flags = sizeof(h) <= conn.max_inline() ? IBV_SEND_INLINE : 0;
        send.add_alone(w);
        keepalive.sent(Clock::now());
        int rc = conn.post_send(&w);
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
    return impl_->session();
}
std::uint32_t Session::credits() const noexcept {
    return impl_->credits;
}
std::uint32_t Session::msg_size() const noexcept {
    return impl_->msg;
}
const std::vector<GrantedRegion>& Session::regions() const noexcept {
    return impl_->granted;
}
const std::string& Session::peer() const noexcept {
    return impl_->conn.peer();
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
    return impl_->programs.tag(impl_->session(), name);
}

void Session::read(std::string_view region, std::uint64_t offset, std::span<std::byte> out) {
    // Larger reads go through the transfer buffer in pieces.
    std::size_t step = impl_->opt.max_transfer;
    if (out.size() > step) {
        std::string why;  // check the whole range before any piece
        std::lock_guard lk(impl_->mu);
        const RegionEntry& r = impl_->region(region);
        Code c = check_access(impl_->session(), r, offset, out.size(), Access::read, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
    }
    for (std::size_t done = 0; done < out.size() || out.empty(); done += step) {
        std::size_t n = std::min(step, out.size() - done);
        auto piece = out.subspan(done, n);
        impl_->run_sync(OneSided{.verb = Verb::read,
                                 .region = region,
                                 .offset = offset + done,
                                 .out = piece,
                                 .delivery = Delivery::sync});
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
        Code c = check_access(impl_->session(), r, offset, in.size(), Access::write, &why);
        if (c != Code::ok) {
            throw Error(c, why);
        }
    }
    for (std::size_t done = 0; done < in.size() || in.empty(); done += step) {
        std::size_t n = std::min(step, in.size() - done);
        auto piece = in.subspan(done, n);
        impl_->run_sync(OneSided{.verb = Verb::write,
                                 .region = region,
                                 .offset = offset + done,
                                 .in = piece,
                                 .delivery = Delivery::sync});
        if (in.empty()) {
            break;
        }
    }
}

std::uint64_t Session::cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                           std::uint64_t desired) {
    return impl_
        ->run_sync(OneSided{.verb = Verb::cas,
                            .region = region,
                            .offset = offset,
                            .compare_add = expected,
                            .swap = desired,
                            .delivery = Delivery::sync})
        .value;
}

std::uint64_t Session::faa(std::string_view region, std::uint64_t offset, std::uint64_t add) {
    return impl_
        ->run_sync(OneSided{.verb = Verb::faa,
                            .region = region,
                            .offset = offset,
                            .compare_add = add,
                            .delivery = Delivery::sync})
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
        ->run_sync(Request{.opcode = ROF_OP_INVOKE,
                           .verb = Verb::invoke,
                           .tag = tag,
                           .args = args,
                           .out = response,
                           .delivery = Delivery::sync})
        .invoke;
}

void Session::nop() {
    impl_->run_sync(Request{.opcode = ROF_OP_NOP, .verb = Verb::nop, .delivery = Delivery::sync});
}

void Session::post_read(std::string_view region, std::uint64_t offset, std::span<std::byte> out,
                        std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one_sided(
        lk,
        OneSided{.verb = Verb::read, .region = region, .offset = offset, .out = out, .user = user});
}

void Session::post_write(std::string_view region, std::uint64_t offset,
                         std::span<const std::byte> in, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one_sided(
        lk,
        OneSided{.verb = Verb::write, .region = region, .offset = offset, .in = in, .user = user});
}

void Session::post_cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                       std::uint64_t desired, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one_sided(lk, OneSided{.verb = Verb::cas,
                                       .region = region,
                                       .offset = offset,
                                       .compare_add = expected,
                                       .swap = desired,
                                       .user = user});
}

void Session::post_faa(std::string_view region, std::uint64_t offset, std::uint64_t add,
                       std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_one_sided(lk, OneSided{.verb = Verb::faa,
                                       .region = region,
                                       .offset = offset,
                                       .compare_add = add,
                                       .user = user});
}

void Session::post_invoke(std::uint64_t tag, std::span<const std::byte> args,
                          std::span<std::byte> response, std::uint64_t user) {
    std::unique_lock lk(impl_->mu);
    impl_->post_request(lk, Request{.opcode = ROF_OP_INVOKE,
                                    .verb = Verb::invoke,
                                    .tag = tag,
                                    .args = args,
                                    .out = response,
                                    .user = user});
}

void Session::flush() {
    std::lock_guard lk(impl_->mu);
    impl_->flush();
}

std::size_t Session::outstanding() const noexcept {
    std::lock_guard lk(impl_->mu);
    return impl_->completions.outstanding();
}

std::size_t Session::poll(std::span<Completion> out, std::chrono::milliseconds timeout) {
    return impl_->poll(out, timeout);
}

int Session::completion_fd() const noexcept {
    return impl_->conn.completion_fd();
}

}  // namespace rof
