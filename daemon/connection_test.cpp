// SPDX-License-Identifier: MIT
// Connection limits ([limits] handshake_timeout_ms, keepalive_ms,
// keepalive_timeout_ms, connection_idle_ms, connection_age_ms,
// connection_age_grace_ms, connections_per_uid) on rofd's unix socket: raw
// peers that are silent, stop after the HTTP/2 preface or half-way through
// a call (answering pings or not), and a TailAudit whose client went dead,
// are all closed by rofd; a uid past its connections is refused, others
// are not.
// The TCP listener's handshake timeout is in service_tls_test.cpp.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "service_harness.h"
#include "test_tenants.h"

namespace {

namespace v1 = rof::v1;
using rofd::UniqueFd;
using rofd::test::ServiceHarness;
using rofd::test::wait_closed;
using rofd::test::wait_until;
using rofd::test::Who;

const Who kv_user{"kv", 1001, 1001, {}};
const Who analytics_user{"analytics", 1002, 1002, {}};

// A harness whose [limits] are @limits (other limits at their defaults).
std::string daemon_toml(const std::string& limits) {
    return "[sessions]\naddress = \"10.0.0.1\"\n\n[limits]\n" + limits;
}

// Idle connections are closed after 1 s; no keepalive ping within a test.
const char* const idle_limits = "connection_idle_ms = 1000\n";
// Pings after 1 s of silence, unanswered for 1 s: closed; never idle.
const char* const keepalive_limits =
    "keepalive_ms = 1000\nkeepalive_timeout_ms = 1000\nconnection_idle_ms = 86400000\n";

// ---- raw HTTP/2, just enough to open a call --------------------------------

constexpr std::uint8_t frame_data = 0x0;
constexpr std::uint8_t frame_headers = 0x1;
constexpr std::uint8_t frame_settings = 0x4;
constexpr std::uint8_t frame_ping = 0x6;
constexpr std::uint8_t frame_goaway = 0x7;
constexpr std::uint8_t flag_ack = 0x1;
constexpr std::uint8_t flag_end_stream = 0x1;
constexpr std::uint8_t flag_end_headers = 0x4;

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  const std::string& payload) {
    const auto n = static_cast<std::uint32_t>(payload.size());
    std::string f{static_cast<char>(n >> 16),
                  static_cast<char>(n >> 8),
                  static_cast<char>(n),
                  static_cast<char>(type),
                  static_cast<char>(flags),
                  static_cast<char>(stream >> 24),
                  static_cast<char>(stream >> 16),
                  static_cast<char>(stream >> 8),
                  static_cast<char>(stream)};
    return f + payload;
}

// The client connection preface and an empty SETTINGS frame.
std::string preface() {
    return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(frame_settings, 0, 0, "");
}

// HPACK: each field a literal without indexing, new name (names and values
// shorter than 127 bytes).
std::string header_block(const std::vector<std::pair<std::string, std::string>>& fields) {
    std::string b;
    for (const auto& [name, value] : fields) {
        b += '\0';
        b += static_cast<char>(name.size());
        b += name;
        b += static_cast<char>(value.size());
        b += value;
    }
    return b;
}

// HEADERS of a gRPC call to @method on stream 1.
std::string call_headers(const std::string& method, std::uint8_t flags) {
    return frame(frame_headers, flags, 1,
                 header_block({{":method", "POST"},
                               {":scheme", "http"},
                               {":path", method},
                               {":authority", "rofd"},
                               {"content-type", "application/grpc"},
                               {"te", "trailers"}}));
}

// An empty request message, the last of the stream.
std::string empty_message() {
    return frame(frame_data, flag_end_stream, 1, std::string(5, '\0'));
}

void send_all(int fd, const std::string& bytes) {
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()))
        << std::strerror(errno);
}

// ---- idle: no call in progress ----------------------------------------------

TEST(Connections, SilentConnectionIsClosedWhenIdle) {
    ServiceHarness h(daemon_toml(idle_limits), {{"kv", rofd::test::kv_toml()}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    EXPECT_TRUE(wait_closed(fd.get()));
}

TEST(Connections, PrefaceThenSilenceIsClosedWhenIdle) {
    ServiceHarness h(daemon_toml(idle_limits), {{"kv", rofd::test::kv_toml()}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    send_all(fd.get(), preface());
    EXPECT_TRUE(wait_closed(fd.get()));
}

// ---- keepalive: a call in progress, a peer that answers no ping --------------

TEST(Connections, CallWithNoBodyIsClosedByKeepalive) {
    ServiceHarness h(daemon_toml(keepalive_limits), {{"kv", rofd::test::kv_toml()}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    send_all(fd.get(), preface() + call_headers("/rof.v1.Control/GetStatus", flag_end_headers));
    EXPECT_TRUE(wait_closed(fd.get()));
}

TEST(Connections, HeadersWithoutEndHeadersAreClosedByKeepalive) {
    ServiceHarness h(daemon_toml(keepalive_limits), {{"kv", rofd::test::kv_toml()}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    send_all(fd.get(), preface() + call_headers("/rof.v1.Control/GetStatus", 0));
    EXPECT_TRUE(wait_closed(fd.get()));
}

// A tenant's TailAudit whose client went dead (it answers nothing, not even
// a ping) is ended, and the tenant's stream slot freed.
TEST(Connections, DeadClientsAuditStreamIsEnded) {
    ServiceHarness h(daemon_toml(keepalive_limits), {{"kv", rofd::test::kv_toml()}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    send_all(fd.get(), preface() + call_headers("/rof.v1.Audit/TailAudit", flag_end_headers) +
                           empty_message());
    ASSERT_TRUE(wait_until([&] { return h.manager().audit_hub().streams() == 1; }));
    EXPECT_TRUE(wait_closed(fd.get()));
    EXPECT_TRUE(wait_until([&] { return h.manager().audit_hub().streams() == 0; }));
}

// ---- age: a peer that answers pings -------------------------------------------

// Pings after 1 s of silence (answered here), never idle; every connection
// told to go away after 2 s and closed 1 s later.
const char* const age_limits =
    "keepalive_ms = 1000\nkeepalive_timeout_ms = 1000\nconnection_idle_ms = 86400000\n"
    "connection_age_ms = 2000\nconnection_age_grace_ms = 1000\n";

// What a well-behaved HTTP/2 peer that never sends its request saw of rofd
// until rofd closed the connection (or 60 s passed, pings or not: closed
// false; a bound generous enough for the limits under test, not a timing
// assertion).
struct PeerLog {
    bool closed = false;
    int pings_answered = 0;
    std::vector<std::uint32_t> goaway_codes;
    std::string goaway_debug;  // every GOAWAY's debug data, joined
};

// Reads rofd's frames on @fd, acknowledging its SETTINGS and answering its
// PINGs as a live client would, until rofd closes the connection.
PeerLog answer_until_closed(int fd) {
    PeerLog log;
    std::string in;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return log;
        }
        pollfd p{fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return log;
        }
        char buf[4096];
        const ssize_t got = ::read(fd, buf, sizeof(buf));
        if (got == 0 || (got < 0 && errno == ECONNRESET)) {
            log.closed = true;
            return log;
        }
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return log;
        }
        in.append(buf, static_cast<std::size_t>(got));
        while (in.size() >= 9) {
            const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(in[i]); };
            const std::size_t len =
                (std::size_t{byte(0)} << 16) | (std::size_t{byte(1)} << 8) | std::size_t{byte(2)};
            if (in.size() < 9 + len) {
                break;
            }
            const std::uint8_t type = byte(3);
            const std::uint8_t flags = byte(4);
            const std::string payload = in.substr(9, len);
            in.erase(0, 9 + len);
            std::string reply;
            if (type == frame_settings && (flags & flag_ack) == 0) {
                reply = frame(frame_settings, flag_ack, 0, "");
            } else if (type == frame_ping && (flags & flag_ack) == 0) {
                reply = frame(frame_ping, flag_ack, 0, payload);
                log.pings_answered++;
            } else if (type == frame_goaway && payload.size() >= 8) {
                const auto code = (std::uint32_t{static_cast<std::uint8_t>(payload[4])} << 24) |
                                  (std::uint32_t{static_cast<std::uint8_t>(payload[5])} << 16) |
                                  (std::uint32_t{static_cast<std::uint8_t>(payload[6])} << 8) |
                                  std::uint32_t{static_cast<std::uint8_t>(payload[7])};
                log.goaway_codes.push_back(code);
                log.goaway_debug += payload.substr(8) + ";";
            }
            // rofd may have closed its end already: a failed reply is
            // seen as the close on the next read.
            if (!reply.empty() && ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) {
                continue;
            }
        }
    }
}

// A peer that answers every ping and every SETTINGS, and opens a unary
// call whose request it never sends: gRPC never hands such a call to rofd
// and keepalive never fails, so only the connection's age ends it.  A
// victim's calls meanwhile succeed.
TEST(Connections, CallWithNoBodyFromAPeerThatAnswersPingsIsClosedByAge) {
    // The victim calls as fast as it can: no control_rate in the way.
    ServiceHarness h(daemon_toml(age_limits),
                     {{"kv", rofd::test::kv_toml()},
                      {"analytics",
                       "name = \"analytics\"\ncontrol_rate = 0\n\n[identity]\n"
                       "uids = [1002]\n"}});
    const UniqueFd fd = rofd::test::connect_as(h.socket(), kv_user);
    send_all(fd.get(), preface() + call_headers("/rof.v1.Control/GetStatus", flag_end_headers));

    std::atomic<int> victim_ok{0};
    std::atomic<int> victim_failed{0};
    std::atomic<bool> stop{false};
    std::thread victim([&] {
        while (!stop) {
            // A channel made from a descriptor does not reconnect, and
            // the victim's connections age too: one per call.
            auto c = h.client(analytics_user);
            v1::GetStatusResponse resp;
            const grpc::Status st =
                rofd::test::rpc(*c->control, &v1::Control::Stub::GetStatus, {}, &resp);
            (st.ok() ? victim_ok : victim_failed)++;
        }
    });
    const PeerLog log = answer_until_closed(fd.get());
    stop = true;
    victim.join();

    EXPECT_TRUE(log.closed) << "the connection stayed open for 60 s";
    EXPECT_GE(log.pings_answered, 1) << "rofd never pinged: keepalive may have closed it";
    ASSERT_FALSE(log.goaway_codes.empty()) << "closed without a GOAWAY";
    for (const auto code : log.goaway_codes) {
        EXPECT_EQ(code, 0U) << "GOAWAY " << code << ": " << log.goaway_debug;
    }
    EXPECT_GE(victim_ok.load(), 1);
    EXPECT_EQ(victim_failed.load(), 0);
}

// ---- connections_per_uid -----------------------------------------------------

// Whether rofd serves a new raw connection: gRPC's server writes its
// SETTINGS frame at once; a connection refused is closed unread.
bool served(int fd) {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 60000) < 0 && errno == EINTR) {
    }
    char buf[256];
    return ::read(fd, buf, sizeof(buf)) > 0;
}

TEST(Connections, AUidPastItsConnectionsIsRefusedAndOthersAreNot) {
    ServiceHarness h(daemon_toml("connections_per_uid = 2\n"),
                     {{"kv", rofd::test::kv_toml()}, {"analytics", rofd::test::kAnalyticsToml}});
    UniqueFd first = rofd::test::connect_as(h.socket(), kv_user);
    const UniqueFd second = rofd::test::connect_as(h.socket(), kv_user);
    ASSERT_TRUE(served(first.get()));
    ASSERT_TRUE(served(second.get()));

    const UniqueFd third = rofd::test::connect_as(h.socket(), kv_user);
    EXPECT_FALSE(served(third.get())) << "kv's third connection";
    EXPECT_EQ(h.manager().connections_refused(), 1U);

    // Another uid has connections of its own, and root is not counted.
    const UniqueFd other = rofd::test::connect_as(h.socket(), analytics_user);
    EXPECT_TRUE(served(other.get())) << "analytics is not limited by kv's connections";
    const UniqueFd root = rofd::test::connect_as(h.socket(), Who{"root", 0, 0, {}});
    EXPECT_TRUE(served(root.get()));

    // kv closes one: once rofd has closed its end, kv connects again.
    first.reset();
    std::vector<UniqueFd> tries;
    EXPECT_TRUE(wait_until([&] {
        tries.push_back(rofd::test::connect_as(h.socket(), kv_user));
        return served(tries.back().get());
    }));
}

}  // namespace
