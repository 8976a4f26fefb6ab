// SPDX-License-Identifier: MIT
// rof::Session: one data-path session with rof.ko (docs/protocol.md).
//
// Opened through rofd (a ticket), connected with librdmacm over IPv4 or
// IPv6.  One-sided verbs go straight at a granted region by name: read,
// write, cas, faa; invoke() runs a loaded program two-sided.  Each verb
// exists synchronous (blocks, returns the result or throws rof::Error) and
// asynchronous (post_*: queued, sent at the next flush() or when the batch
// is full, with one doorbell per batch; results come back from poll()).
//
// Fast path: every request buffer and every response buffer is registered
// once at connect; small requests go inline; only the last work request of
// a batch asks for a completion; credits from the module bound requests in
// flight, so a session never overruns the server; nothing is allocated per
// request.
//
// A session is used by one thread at a time (the keepalive is internal and
// does not need the caller).  Sessions belong to the module, not to rofd: a
// rofd restart does not disturb them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rof/client.h"
#include "rof/error.h"

namespace rof {

struct SessionRegionRequest {
    std::string name;
    std::uint32_t access = 0;  // v1::Access bits; 0: everything the region allows
};

struct SessionOptions {
    std::string tenant;  // empty: the caller's own
    std::vector<SessionRegionRequest> regions;
    // Where to connect: empty means the address rofd returned.  An IPv6
    // literal ("fd00::1", "fe80::1%eth0") or an IPv4 one.
    std::string address;
    std::uint32_t idle_timeout_ms = 0;  // 0: the policy's
    // Largest one-sided transfer that goes through the session's own
    // registered buffers (read/write of up to this many bytes).
    std::size_t max_transfer = 4096;
    // One-sided operations in flight at most (RDMA READ/atomics are also
    // bounded by the device's max_qp_rd_atom).
    std::uint32_t depth = 64;
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(10);
    // Deadline of a synchronous verb.
    std::chrono::milliseconds op_timeout = std::chrono::seconds(10);
    // For a caller that spins: a synchronous verb polls the completion
    // queue until its answer comes, instead of sleeping on the completion
    // channel after a short spin, and an empty poll() makes no system call
    // (it does not re-arm the channel: completion_fd() is not for such a
    // session).  The lowest latency, for a core busy while it waits.
    bool busy_poll = false;
};

struct GrantedRegion {
    std::string name;
    std::uint32_t id = 0;      // the module's region id
    std::uint32_t access = 0;  // as granted by the module (v1::Access bits)
    std::uint64_t size = 0;
};

enum class Verb : std::uint8_t { read, write, cas, faa, invoke, nop };

// What a program's INVOKE returned (struct rof_invoke_result) and its
// response bytes.
struct InvokeResult {
    std::uint32_t prog_status = 0;  // the program's exit/respond status
    std::uint32_t insns = 0;        // instructions executed
    std::size_t len = 0;            // response bytes written to the caller's buffer
};

// One finished asynchronous operation.
struct Completion {
    std::uint64_t user = 0;  // as passed to post_*
    Verb verb = Verb::nop;
    Code code = Code::ok;    // ok, or why it failed
    std::string_view error;  // "" when ok; valid until the next poll()
    // read: bytes read; invoke: response bytes; cas/faa: 8.
    std::size_t len = 0;
    std::uint64_t value = 0;  // cas/faa: the old value
    InvokeResult invoke;      // invoke only
};

class ROF_EXPORT Session {
  public:
    // OpenSession through @client, then connect.  The session does not keep
    // @client: program names are resolved through a client of its own,
    // made with @client's options when a name is first used.
    static Session open(Client& client, const SessionOptions& options);
    // Connect with a ticket prepared elsewhere (e.g. handed over by a
    // process that called Client::open_session()).
    static Session connect(const v1::OpenSessionResponse& prepared, const SessionOptions& options);

    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();  // disconnects; the module then closes the session

    std::uint32_t id() const noexcept;
    std::uint32_t credits() const noexcept;  // requests in flight the module allows
    // The session's largest message either way (the accept's msg_size: the
    // tenant policy's [sessions] message_bytes, 1024 .. 65536).  invoke()'s
    // arguments are at most msg_size() - 24 bytes (more is
    // rof::Error(invalid_argument)), and a program answers at most
    // msg_size() - 32; one whose resp_max is larger does not run on this
    // session (failed_precondition, ROF_ST_MSG_SIZE).
    std::uint32_t msg_size() const noexcept;
    const std::vector<GrantedRegion>& regions() const noexcept;
    // The peer as connected: "192.0.2.1:18515" or "[fd00::1]:18515".
    const std::string& peer() const noexcept;

    // Program names for invoke() and program_tag(): a name is looked up in
    // rofd (GetProgram) when first used, and again when the module answers
    // that its tag is not loaded (the program was replaced or reloaded
    // since): invoke() by name then runs the program of that name now.  A
    // session from connect() has no rofd to ask: learn_programs() lists
    // the tenant's programs into it (also a refresh for open()'s).
    void learn_programs(Client& client);
    std::uint64_t program_tag(std::string_view name) const;

    // Synchronous verbs.  Offsets are bytes from the region's start.
    void read(std::string_view region, std::uint64_t offset, std::span<std::byte> out);
    void write(std::string_view region, std::uint64_t offset, std::span<const std::byte> in);
    // Return the value found at @offset (8-byte aligned) before the op.
    std::uint64_t cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                      std::uint64_t desired);
    std::uint64_t faa(std::string_view region, std::uint64_t offset, std::uint64_t add);
    // A program's failure (prog_status != 0) is a result, not an error; an
    // executor fault is rof::Error(aborted) naming the fault and pc.
    InvokeResult invoke(std::string_view program, std::span<const std::byte> args,
                        std::span<std::byte> response);
    InvokeResult invoke(std::uint64_t tag, std::span<const std::byte> args,
                        std::span<std::byte> response);
    // A round trip through the module (the keepalive's request).
    void nop();

    // Asynchronous verbs.  @out buffers must stay valid until their
    // completion is polled.  A post that finds no free slot or credit
    // throws rof::Error(resource_exhausted): poll() first.
    void post_read(std::string_view region, std::uint64_t offset, std::span<std::byte> out,
                   std::uint64_t user);
    void post_write(std::string_view region, std::uint64_t offset, std::span<const std::byte> in,
                    std::uint64_t user);
    void post_cas(std::string_view region, std::uint64_t offset, std::uint64_t expected,
                  std::uint64_t desired, std::uint64_t user);
    void post_faa(std::string_view region, std::uint64_t offset, std::uint64_t add,
                  std::uint64_t user);
    void post_invoke(std::uint64_t tag, std::span<const std::byte> args,
                     std::span<std::byte> response, std::uint64_t user);
    // Rings the doorbell for everything posted since the last flush.
    void flush();
    // Operations posted and not yet polled.
    std::size_t outstanding() const noexcept;
    // Flushes, then returns up to out.size() completions; waits up to
    // @timeout for the first one (zero: does not wait).
    std::size_t poll(std::span<Completion> out,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
    // For an event loop: readable when poll() may return completions.
    // Call poll() until it returns 0 before waiting on it, and again each
    // time it polls readable (only an empty poll() re-arms it).
    int completion_fd() const noexcept;

    struct Impl;

  private:
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace rof
