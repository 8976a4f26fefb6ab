// The raw-verbs baselines of rof-bench: what a user would build without rof.
//
// rof-bench-server (server.cpp) is a HERD-style RPC server: one thread per
// connection busy-polls its receive queue; a request comes as a SEND, the
// reply goes back as a SEND.  It serves
//   - ECHO: the request's payload back (the raw echo of B0 and B5);
//   - GET: a hash lookup in its own table, the value back (B1/B2's RPC);
// and it registers the same table for remote READ, so that a client can do
// the lookup one-sided: READ the key's bucket, then READ the value
// (Pilaf/FaRM, B1's two-READ lookup), or READ a value it knows the address
// of (B0/B1's one READ).
//
// The wire format is this header, little-endian (the VM's and every
// supported host's order).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rofbench::raw {

inline constexpr std::uint64_t kHelloMagic = 0x6f6c6c6568666f72ULL;  // "rofhello"
inline constexpr std::uint32_t kOpEcho = 1, kOpGet = 2;
inline constexpr std::uint32_t kStatusOk = 0, kStatusNotFound = 1, kStatusBad = 2;
inline constexpr std::uint32_t kDepth = 64;        // receives per connection; client window cap
inline constexpr std::uint32_t kMaxEcho = 4096;    // largest echo payload
inline constexpr std::uint32_t kMaxValue = 65536;  // largest value (--vmax)
inline constexpr std::uint32_t kBucketSlots = 4;   // a key lies within 4 slots of its home
inline constexpr std::uint32_t kInline = 64;       // inline data asked of the QP
inline constexpr std::uint32_t kSqDepth = 2 * kDepth;
inline constexpr std::uint32_t kSignalEvery = 16;     // selective signalling of SENDs
inline constexpr std::uint64_t kWrRecv = 1ULL << 63;  // wr_id of a receive: this | slot

// The server's first message on a connection: where its table is.
struct Hello {
    std::uint64_t magic;
    std::uint64_t table_addr;  // slots of Slot, then kBucketSlots - 1 more
    std::uint64_t heap_addr;   // values, vmax bytes apart
    std::uint32_t rkey;        // of both
    std::uint32_t slots;       // a power of two
    std::uint32_t items;       // keys 1 .. items
    std::uint32_t vmax;        // bytes per value
};

struct Slot {
    std::uint64_t key = 0;   // 0: empty
    std::uint64_t voff = 0;  // the value's offset in the heap
};

struct Req {
    std::uint32_t op;
    std::uint32_t len;  // ECHO: payload bytes that follow; GET: value bytes wanted
    std::uint64_t key;  // GET
};

struct Rep {
    std::uint32_t status = 0;
    std::uint32_t len = 0;  // bytes that follow
};

// A message slot: any request, an echo reply, a GET reply of up to kMaxEcho bytes.  The server
// answers a GET of more from its table's own memory (a second SGE: no copy), into the larger
// receive slots of a client made for it (Conn's max_value).
inline constexpr std::size_t kMsgMax = sizeof(Req) + kMaxEcho;

// The table's hash (splitmix64's finaliser) and the value of a key: byte i
// of key k's value is (k * 131 + i) & 0xff, so a reader can check it.
std::uint64_t hash(std::uint64_t key);
inline std::uint8_t value_byte(std::uint64_t key, std::size_t i) {
    return static_cast<std::uint8_t>((key * 131 + i) & 0xff);
}

// ---- RAII for the verbs and rdma_cm handles ------------------------------

struct AddrinfoFree {
    void operator()(rdma_addrinfo* p) const { rdma_freeaddrinfo(p); }
};
struct MrFree {
    void operator()(ibv_mr* p) const { ibv_dereg_mr(p); }
};
struct EpFree {  // an id made by rdma_create_ep (with its QP)
    void operator()(rdma_cm_id* p) const { rdma_destroy_ep(p); }
};
using AddrinfoPtr = std::unique_ptr<rdma_addrinfo, AddrinfoFree>;
using MrPtr = std::unique_ptr<ibv_mr, MrFree>;
using EpPtr = std::unique_ptr<rdma_cm_id, EpFree>;

// "host:port" -> the two parts; throws std::runtime_error when malformed.
std::pair<std::string, std::string> split_host_port(const std::string& hp);

// Throws std::runtime_error("@what: strerror(@err)").
[[noreturn]] void fail(const std::string& what, int err = errno);
// @buf registered in @pd for local writes; throws on failure.
MrPtr register_buffer(ibv_pd* pd, std::vector<std::uint8_t>& buf);
// Posts receive slot @slot of @buf (@bytes per slot), wr_id kWrRecv | slot.
void post_recv(ibv_qp* qp, std::vector<std::uint8_t>& buf, const ibv_mr& mr, std::size_t slot,
               std::size_t bytes = kMsgMax);

// ---- the client side ---------------------------------------------------------

// One RC connection to rof-bench-server, busy-polled.  Requests and READs
// are posted with a window of up to kDepth in flight; every one is signalled
// (a completion per operation is what the latency figures time).
class Conn {
  public:
    // Connects (rdma_cm, synchronous) and reads the server's Hello.  Its receives hold
    // replies of up to @max_value bytes (GETs and READs of more throw): kDepth of them.
    explicit Conn(const std::string& host_port, std::size_t max_value = kMaxEcho);
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;
    ~Conn();

    const Hello& hello() const { return hello_; }

    // One operation, waited for; returns the bytes it brought back.
    void echo(std::size_t len);  // SEND, wait for the reply
    std::span<const std::uint8_t> get(std::uint64_t key, std::size_t len);    // RPC GET
    std::span<const std::uint8_t> read(std::uint64_t addr, std::size_t len);  // one READ
    // The Pilaf/FaRM lookup: READ the key's bucket, then READ its value.
    std::span<const std::uint8_t> lookup(std::uint64_t key, std::size_t len);

    // Echoes of @len bytes with @window in flight (at most kDepth) for @ns
    // nanoseconds; returns how many finished.
    std::uint64_t echo_window(std::size_t len, std::size_t window, std::uint64_t ns);

  private:
    // A SEND of tx slot @slot; every 16th is signalled (selective signalling).
    void post_send(std::size_t slot, std::size_t len);
    void post_read(std::uint64_t addr, std::size_t len);
    // Reaps send-queue completions; with @want_read, until a READ's.
    void reap_send(bool want_read);
    // Polls the receive queue for one reply; returns its slot, reposts none.
    std::size_t wait_recv();
    std::span<const std::uint8_t> reply(std::size_t slot, std::size_t want);

    EpPtr id_;
    std::size_t rx_slot_;  // bytes per receive slot
    Hello hello_{};
    std::vector<std::uint8_t> rx_, tx_, rd_;
    MrPtr rx_mr_, tx_mr_, rd_mr_;
    std::uint32_t sq_used_ = 0;      // send-queue entries not yet known retired
    std::uint32_t unsignalled_ = 0;  // posted since the last signalled one
};

}  // namespace rofbench::raw
