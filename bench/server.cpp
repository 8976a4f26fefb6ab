// rof-bench-server: the raw-verbs side of rof-bench's baselines (raw.h): a
// HERD-style RPC server (ECHO and a hash GET, one busy-polling thread per
// connection, SEND request, SEND reply) over a table it also registers for
// one-sided READs.  Runs until SIGTERM or SIGINT.
//
//   rof-bench-server [--bind ADDR] [--port N] [--items N] [--vmax BYTES] [--cpu N]
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench.h"
#include "raw.h"

namespace {

using namespace rofbench::raw;

struct CqFree {
    void operator()(ibv_cq* p) const { ibv_destroy_cq(p); }
};
struct PdFree {
    void operator()(ibv_pd* p) const { ibv_dealloc_pd(p); }
};
struct IdFree {  // the id's QP first (rdma_create_qp), then the id
    void operator()(rdma_cm_id* p) const {
        if (p->qp) {
            rdma_destroy_qp(p);
        }
        rdma_destroy_id(p);
    }
};
struct ChannelFree {
    void operator()(rdma_event_channel* p) const { rdma_destroy_event_channel(p); }
};
struct CompChannelFree {
    void operator()(ibv_comp_channel* p) const { ibv_destroy_comp_channel(p); }
};

// A connection's thread spins while requests come; after this long without
// one it sleeps on its completion channel, so that an idle server leaves
// the CPUs to what else is measured in the same VM.
constexpr std::uint64_t kIdleNs = 2'000'000;
struct MapFree {
    std::size_t len;
    void operator()(void* p) const { munmap(p, len); }
};

// The table and its values, in one mapping registered once per device.
class Store {
  public:
    Store(std::uint32_t items, std::uint32_t vmax) : items_(items), vmax_(vmax) {
        for (;;) {  // grow the table until every key lies within kBucketSlots of its home
            slots_ = 1;
            while (slots_ < 4ULL * items) {
                slots_ <<= 1;
            }
            slots_ <<= grow_;
            if (fill()) {
                break;
            }
            grow_++;
        }
    }
    std::uint8_t* base() const { return static_cast<std::uint8_t*>(mem_.get()); }
    std::size_t len() const { return len_; }
    std::uint64_t table_off() const { return 0; }
    std::uint64_t heap_off() const { return heap_at_; }
    std::uint32_t slots() const { return static_cast<std::uint32_t>(slots_); }
    std::uint32_t items() const { return items_; }
    std::uint32_t vmax() const { return vmax_; }

    // The server's side of GET: the same probe a two-READ client makes.
    const std::uint8_t* find(std::uint64_t key) const {
        auto* t = reinterpret_cast<const Slot*>(base());
        std::uint64_t home = hash(key) & (slots_ - 1);
        for (std::uint32_t i = 0; i < kBucketSlots; i++) {
            if (key && t[home + i].key == key) {
                return base() + heap_at_ + t[home + i].voff;
            }
        }
        return nullptr;
    }

  private:
    bool fill() {
        std::size_t table = (slots_ + kBucketSlots - 1) * sizeof(Slot);
        heap_at_ = (table + 4095) & ~std::size_t(4095);
        len_ = heap_at_ + std::size_t(items_) * vmax_;
        void* p = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fail("mmap");
        }
        mem_ = std::unique_ptr<void, MapFree>(p, MapFree{len_});
        auto* t = reinterpret_cast<Slot*>(base());
        for (std::uint64_t k = 1; k <= items_; k++) {
            std::uint64_t home = hash(k) & (slots_ - 1);
            std::uint32_t i = 0;
            while (i < kBucketSlots && t[home + i].key) {
                i++;
            }
            if (i == kBucketSlots) {
                return false;
            }
            t[home + i] = Slot{k, (k - 1) * vmax_};
            std::uint8_t* v = base() + heap_at_ + (k - 1) * vmax_;
            for (std::size_t b = 0; b < vmax_; b++) {
                v[b] = value_byte(k, b);
            }
        }
        return true;
    }

    std::uint32_t items_, vmax_;
    std::uint64_t slots_ = 0;
    unsigned grow_ = 0;
    std::size_t heap_at_ = 0, len_ = 0;
    std::unique_ptr<void, MapFree> mem_;
};

// Per device: a PD and the store registered in it.
struct Device {
    std::unique_ptr<ibv_pd, PdFree> pd;
    MrPtr store_mr;
};

// One connection: its QP, buffers and polling thread.
class Connection {
  public:
    Connection(rdma_cm_id* id, Device& dev, const Store& store, int cpu)
        : id_(id), store_(store), store_lkey_(dev.store_mr->lkey), cpu_(cpu) {
        ibv_comp_channel* ch = ibv_create_comp_channel(id->verbs);
        if (!ch) {
            fail("ibv_create_comp_channel");
        }
        ch_.reset(ch);
        auto cq = [&](int n, ibv_comp_channel* channel) {
            ibv_cq* c = ibv_create_cq(id->verbs, n, nullptr, channel, 0);
            if (!c) {
                fail("ibv_create_cq");
            }
            return std::unique_ptr<ibv_cq, CqFree>(c);
        };
        scq_ = cq(kSqDepth, nullptr);
        rcq_ = cq(kDepth, ch_.get());
        ibv_qp_init_attr attr{};
        attr.send_cq = scq_.get();
        attr.recv_cq = rcq_.get();
        attr.cap.max_send_wr = kSqDepth;
        attr.cap.max_recv_wr = kDepth;
        attr.cap.max_send_sge = 2;  // a large GET's reply: its header, then the value
        attr.cap.max_recv_sge = 1;
        attr.cap.max_inline_data = kInline;
        attr.qp_type = IBV_QPT_RC;
        if (rdma_create_qp(id, dev.pd.get(), &attr)) {
            fail("rdma_create_qp");
        }
        rx_.resize(std::size_t(kDepth) * kMsgMax);
        tx_.resize(std::size_t(kSqDepth) * kMsgMax);
        rx_mr_ = register_buffer(dev.pd.get(), rx_);
        tx_mr_ = register_buffer(dev.pd.get(), tx_);
        for (std::size_t i = 0; i < kDepth; i++) {
            post_recv(id_->qp, rx_, *rx_mr_, i);
        }
        hello_ = Hello{kHelloMagic,
                       reinterpret_cast<std::uintptr_t>(store.base()) + store.table_off(),
                       reinterpret_cast<std::uintptr_t>(store.base()) + store.heap_off(),
                       dev.store_mr->rkey,
                       store.slots(),
                       store.items(),
                       store.vmax()};
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection() {
        stop();
        // The QP goes with the id, before the CQs and buffers it uses.
        id_.reset();
    }

    void start() {
        thread_ = std::thread([this] { run(); });
    }
    void stop() {
        stop_.store(true);
        if (thread_.joinable()) {
            thread_.join();
        }
    }

  private:
    // Reaps send completions; false when the queue is in error.
    bool reap() {
        ibv_wc wc[16];
        int n = ibv_poll_cq(scq_.get(), 16, wc);
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                return false;
            }
            sq_used_ -= static_cast<std::uint32_t>(wc[i].wr_id);
        }
        return n >= 0;
    }

    // Sends tx slot @slot, @len bytes, then @tail from the table (a large GET's value, not
    // copied); false when the connection is gone.
    bool send(std::size_t slot, std::size_t len, std::span<const std::uint8_t> tail = {}) {
        while (sq_used_ + 1 >= kSqDepth) {
            if (!reap() || stop_.load(std::memory_order_relaxed)) {
                return false;
            }
        }
        ibv_sge sge[2] = {{reinterpret_cast<std::uintptr_t>(&tx_[slot * kMsgMax]),
                           static_cast<std::uint32_t>(len), tx_mr_->lkey},
                          {reinterpret_cast<std::uintptr_t>(tail.data()),
                           static_cast<std::uint32_t>(tail.size()), store_lkey_}};
        len += tail.size();
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.sg_list = sge;
        wr.num_sge = tail.empty() ? 1 : 2;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = len <= kInline ? IBV_SEND_INLINE : 0;
        sq_used_++;
        if (++unsignalled_ == kSignalEvery) {
            wr.send_flags |= IBV_SEND_SIGNALED;
            wr.wr_id = unsignalled_;
            unsignalled_ = 0;
        }
        return ibv_post_send(id_->qp, &wr, &bad) == 0;
    }

    // The reply to the request in rx slot @slot, into tx slot @t; its length there, and in
    // @tail a GET's value of more than kMaxEcho bytes, sent from the table itself.
    std::size_t serve(std::size_t slot, std::size_t got, std::size_t t,
                      std::span<const std::uint8_t>& tail) {
        const std::uint8_t* m = &rx_[slot * kMsgMax];
        std::uint8_t* out = &tx_[t * kMsgMax];
        Req req{};
        Rep rep{kStatusBad, 0};
        if (got >= sizeof(req)) {
            std::memcpy(&req, m, sizeof(req));
        }
        if (got < sizeof(req)) {
        } else if (req.op == kOpEcho && req.len <= kMaxEcho && got == sizeof(req) + req.len) {
            rep = Rep{kStatusOk, req.len};
            std::memcpy(out + sizeof(rep), m + sizeof(req), req.len);
        } else if (req.op == kOpGet && req.len <= store_.vmax()) {
            const std::uint8_t* v = store_.find(req.key);
            rep = v ? Rep{kStatusOk, req.len} : Rep{kStatusNotFound, 0};
            if (v && req.len > kMaxEcho) {
                tail = {v, req.len};
                std::memcpy(out, &rep, sizeof(rep));
                return sizeof(rep);
            }
            if (v) {
                std::memcpy(out + sizeof(rep), v, req.len);
            }
        }
        std::memcpy(out, &rep, sizeof(rep));
        return sizeof(rep) + rep.len;
    }

    void run() {
        if (cpu_ >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu_, &set);
            sched_setaffinity(0, sizeof(set), &set);
        }
        std::size_t t = 0;
        std::memcpy(&tx_[0], &hello_, sizeof(hello_));
        if (!send(t++, sizeof(hello_))) {
            return;
        }
        std::uint64_t last = rofbench::now_ns();
        while (!stop_.load(std::memory_order_relaxed)) {
            ibv_wc wc[16];
            int n = ibv_poll_cq(rcq_.get(), 16, wc);
            if (n < 0) {
                return;
            }
            if (n > 0) {
                last = rofbench::now_ns();
            } else if (rofbench::now_ns() - last > kIdleNs) {
                sleep_idle();
                last = rofbench::now_ns();
                continue;
            }
            for (int i = 0; i < n; i++) {
                if (wc[i].status != IBV_WC_SUCCESS) {
                    return;  // flushed: the peer is gone
                }
                std::size_t slot = wc[i].wr_id & ~kWrRecv;
                std::size_t ts = t++ % kSqDepth;
                std::span<const std::uint8_t> tail;
                std::size_t len = serve(slot, wc[i].byte_len, ts, tail);
                post_recv(id_->qp, rx_, *rx_mr_, slot);
                if (!send(ts, len, tail)) {
                    return;
                }
            }
            if (sq_used_ >= kSqDepth / 2 && !reap()) {
                return;
            }
        }
    }

    // Arms the receive CQ and waits for its event (or 100 ms, to see stop_).
    void sleep_idle() {
        ibv_req_notify_cq(rcq_.get(), 0);
        pollfd p{ch_->fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
            ibv_cq* cq = nullptr;
            void* ctx = nullptr;
            if (ibv_get_cq_event(ch_.get(), &cq, &ctx) == 0) {
                ibv_ack_cq_events(cq, 1);
            }
        }
    }

    std::unique_ptr<rdma_cm_id, IdFree> id_;
    const Store& store_;
    std::uint32_t store_lkey_;
    int cpu_;
    std::unique_ptr<ibv_comp_channel, CompChannelFree> ch_;  // before the CQs: it outlives them
    std::unique_ptr<ibv_cq, CqFree> scq_, rcq_;
    std::vector<std::uint8_t> rx_, tx_;
    MrPtr rx_mr_, tx_mr_;
    Hello hello_{};
    std::uint32_t sq_used_ = 0, unsignalled_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

class Server {
  public:
    Server(const std::string& bind, const std::string& port, const Store& store, int cpu)
        : store_(store), cpu_(cpu) {
        rdma_event_channel* ch = rdma_create_event_channel();
        if (!ch) {
            fail("rdma_create_event_channel");
        }
        ch_.reset(ch);
        rdma_addrinfo hints{};
        hints.ai_flags = RAI_PASSIVE;
        hints.ai_port_space = RDMA_PS_TCP;
        rdma_addrinfo* res = nullptr;
        if (rdma_getaddrinfo(bind.c_str(), port.c_str(), &hints, &res)) {
            fail("rdma_getaddrinfo " + bind + ":" + port);
        }
        AddrinfoPtr ai(res);
        rdma_cm_id* id = nullptr;
        if (rdma_create_id(ch_.get(), &id, nullptr, RDMA_PS_TCP)) {
            fail("rdma_create_id");
        }
        listen_.reset(id);
        if (rdma_bind_addr(id, ai->ai_src_addr) || rdma_listen(id, 128)) {
            fail("listen on " + bind + ":" + port);
        }
    }

    // Serves until @stop_fd is readable.
    void run(int stop_fd) {
        for (;;) {
            pollfd p[2] = {{ch_->fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
            if (::poll(p, 2, -1) < 0 && errno != EINTR) {
                fail("poll");
            }
            if (p[1].revents) {
                return;
            }
            if (!(p[0].revents & POLLIN)) {
                continue;
            }
            rdma_cm_event* ev = nullptr;
            if (rdma_get_cm_event(ch_.get(), &ev)) {
                fail("rdma_get_cm_event");
            }
            handle(ev);
        }
    }

  private:
    Device& device(ibv_context* verbs) {
        Device& d = devices_[verbs];
        if (!d.pd) {
            ibv_pd* pd = ibv_alloc_pd(verbs);
            if (!pd) {
                fail("ibv_alloc_pd");
            }
            d.pd.reset(pd);
            ibv_mr* mr = ibv_reg_mr(pd, store_.base(), store_.len(),
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
            if (!mr) {
                fail("ibv_reg_mr (the table)");
            }
            d.store_mr.reset(mr);
        }
        return d;
    }

    void handle(rdma_cm_event* ev) {
        rdma_cm_id* id = ev->id;
        switch (ev->event) {
            case RDMA_CM_EVENT_CONNECT_REQUEST: {
                rdma_conn_param req = ev->param.conn;
                rdma_ack_cm_event(ev);
                try {
                    auto c = std::make_unique<Connection>(id, device(id->verbs), store_, cpu_);
                    ibv_device_attr dev{};
                    ibv_query_device(id->verbs, &dev);
                    rdma_conn_param cp{};
                    cp.responder_resources = static_cast<std::uint8_t>(
                        std::min<int>(req.initiator_depth, dev.max_qp_rd_atom));
                    cp.initiator_depth = static_cast<std::uint8_t>(
                        std::min<int>(req.responder_resources, dev.max_qp_init_rd_atom));
                    cp.rnr_retry_count = 7;
                    if (rdma_accept(id, &cp)) {
                        fail("rdma_accept");
                    }
                    conns_[id] = std::move(c);
                } catch (const std::exception& e) {
                    // The Connection, if made, destroyed the id with it.
                    std::fprintf(stderr, "rof-bench-server: connection refused: %s\n", e.what());
                }
                return;
            }
            case RDMA_CM_EVENT_ESTABLISHED:
                rdma_ack_cm_event(ev);
                if (auto it = conns_.find(id); it != conns_.end()) {
                    it->second->start();
                }
                return;
            case RDMA_CM_EVENT_DISCONNECTED:
            case RDMA_CM_EVENT_CONNECT_ERROR:
            case RDMA_CM_EVENT_UNREACHABLE:
            case RDMA_CM_EVENT_REJECTED:
                rdma_ack_cm_event(ev);
                if (auto it = conns_.find(id); it != conns_.end()) {
                    it->second->stop();
                    rdma_disconnect(id);
                    conns_.erase(it);
                }
                return;
            default:
                rdma_ack_cm_event(ev);
                return;
        }
    }

    const Store& store_;
    int cpu_;
    std::unique_ptr<rdma_event_channel, ChannelFree> ch_;
    // Declared before the connections: those go first, then the devices'
    // MRs and PDs, then the listener.
    std::unique_ptr<rdma_cm_id, IdFree> listen_;
    std::map<ibv_context*, Device> devices_;
    std::map<rdma_cm_id*, std::unique_ptr<Connection>> conns_;
};

}  // namespace

static int run(int argc, char** argv) {
    std::string bind = "0.0.0.0";
    std::string port = "18600";
    std::uint32_t items = 1024, vmax = 4096;
    int cpu = -1;
    CLI::App app{"rof-bench-server: the raw-verbs RPC and READ baselines of rof-bench"};
    app.add_option("--bind", bind, "address to listen on")->capture_default_str();
    app.add_option("--port", port, "rdma_cm port")->capture_default_str();
    app.add_option("--items", items, "keys 1..N in the table")
        ->check(CLI::Range(1u, 1u << 20))
        ->capture_default_str();
    app.add_option("--vmax", vmax, "bytes per value")
        ->check(CLI::Range(8u, kMaxValue))
        ->capture_default_str();
    app.add_option("--cpu", cpu, "pin the polling threads to this CPU");
    CLI11_PARSE(app, argc, argv);

    try {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, nullptr);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0) {
            fail("signalfd");
        }
        Store store(items, vmax);
        {
            Server server(bind, port, store, cpu);
            std::printf("rof-bench-server: ready on %s:%s, %u keys of %u bytes, %u slots\n",
                        bind.c_str(), port.c_str(), store.items(), store.vmax(), store.slots());
            std::fflush(stdout);
            server.run(sfd);
        }
        close(sfd);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rof-bench-server: %s\n", e.what());
        return 1;
    }
}

// What escapes run() is reported, not left to std::terminate.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", "rof-bench-server", e.what());
        return 1;
    }
}
