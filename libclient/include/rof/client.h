// SPDX-License-Identifier: MIT
// rof::Client: librof's connection to rofd's control plane.
//
// One typed call per RPC of rof.v1 (docs/api.md), taking and returning the
// generated protobuf messages: the messages are the API's documentation and
// its JSON spelling.  gRPC itself stays inside the library.  Every call has
// a deadline and throws rof::Error on failure.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "rof/error.h"
#include "rof/v1/audit.pb.h"
#include "rof/v1/control.pb.h"
#include "rof/v1/metrics.pb.h"
#include "rof/v1/policy.pb.h"
#include "rof/v1/program.pb.h"
#include "rof/v1/region.pb.h"
#include "rof/v1/session.pb.h"
#include "rof/v1/tenant.pb.h"

namespace rof {

inline constexpr const char* default_socket_path = "/run/rof/rofd.sock";

struct ClientOptions {
    // Where rofd listens: a unix socket path (absolute, or "unix:PATH"), or
    // "HOST:PORT" / "[V6ADDR]:PORT" for rofd's TCP listener, which is TLS
    // with client certificates only.  Empty: $ROF_SOCKET, else
    // default_socket_path.
    std::string target;
    // TCP only: PEM files of the CA that signed rofd's certificate, and of
    // this client's certificate and key.
    std::string tls_ca;
    std::string tls_cert;
    std::string tls_key;
    // TCP only: the name rofd's certificate must carry; empty: the host.
    std::string tls_server_name;
    // Every call's deadline, waiting for rofd included.
    std::chrono::milliseconds deadline = std::chrono::seconds(10);
    // A call that finds rofd unreachable waits for it until the deadline
    // (a restart costs milliseconds), instead of failing at once with
    // Code::unavailable.  An interactive tool that should say "rofd is not
    // running" at once sets this false.
    bool wait_for_ready = true;
};

// An audit stream (Audit.TailAudit).  next() blocks for the next record;
// false at the end of the stream (cancel(), or rofd went away: then
// finish() throws rof::Error saying why).  A stream that ends with its
// connection (rofd's limits.connection_age_ms, a restart) is opened again
// within the options' deadline, and next() reads on; records rofd
// published in between are not seen.  Movable, not copyable; the
// destructor cancels.
class ROF_EXPORT AuditTail {
  public:
    AuditTail(AuditTail&&) noexcept;
    AuditTail& operator=(AuditTail&&) noexcept;
    ~AuditTail();

    bool next(v1::AuditRecord& record);
    // Thread-safe: ends a next() blocked in another thread.
    void cancel();
    // After next() returned false: throws rof::Error unless the stream
    // ended by cancel().
    void finish();

    struct Impl;

  private:
    friend class Client;
    explicit AuditTail(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Calls are thread-safe.  Each Client has a connection to rofd of its own,
// which its calls share (two Clients in one process are two connections,
// each with rofd's per-connection limits).  Mutating calls that carry an
// idempotency_key field get a fresh one when the caller leaves it empty, so
// librof can resend them safely: a call that finds rofd restarting waits for it
// (within the deadline) instead of failing, and a call whose answer was
// lost with the connection is sent again with the same key.
class ROF_EXPORT Client {
  public:
    explicit Client(ClientOptions options = {});
    ~Client();
    Client(Client&&) noexcept;
    Client& operator=(Client&&) noexcept;

    // $ROF_SOCKET if set and non-empty, else default_socket_path.
    static std::string default_socket();
    // The target as resolved from the options: "unix:/run/rof/rofd.sock".
    const std::string& target() const noexcept;
    const ClientOptions& options() const noexcept;

    // grpc.health.v1.Health/Check of @service ("" is rofd as a whole):
    // "SERVING", "NOT_SERVING" or "SERVICE_UNKNOWN", as the protocol
    // spells them (HealthCheckResponse.status).
    std::string health(const std::string& service = {});

    // rof.v1.Control
    v1::GetStatusResponse get_status();
    void rotate_ticket_key();

    // rof.v1.Tenants
    v1::ListTenantsResponse list_tenants();
    v1::Tenant get_tenant(const v1::GetTenantRequest& req);
    // Admin only: a tenant removed from policy is destroyed after
    // req.grace_ms() at the latest (0: now).
    v1::DestroyTenantResponse destroy_tenant(const v1::DestroyTenantRequest& req);

    // rof.v1.Policy
    v1::GetPolicyResponse get_policy();
    v1::ReloadPolicyResponse reload_policy();

    // rof.v1.Regions
    v1::Region create_region(const v1::CreateRegionRequest& req);
    void delete_region(const v1::DeleteRegionRequest& req);
    v1::ListRegionsResponse list_regions(const v1::ListRegionsRequest& req = {});
    v1::Region get_region(const v1::GetRegionRequest& req);
    v1::CreateRegionTokenResponse create_region_token(const v1::CreateRegionTokenRequest& req);

    // rof.v1.Programs.  verify_program() returns the verdict: a rejected
    // program is ok() == false with the error and log, not an exception.
    v1::VerifyProgramResponse verify_program(const v1::VerifyProgramRequest& req);
    v1::Program load_program(const v1::LoadProgramRequest& req);
    // Puts a new image in the place of a loaded program in one step: the
    // tag a session invokes keeps working and runs the new image.
    v1::Program replace_program(const v1::ReplaceProgramRequest& req);
    void unload_program(const v1::UnloadProgramRequest& req);
    v1::ListProgramsResponse list_programs(const v1::ListProgramsRequest& req = {});
    v1::Program get_program(const v1::GetProgramRequest& req);

    // rof.v1.Sessions.  To connect a session use rof::Session::open()
    // (rof/session.h); open_session() only prepares one and returns its
    // ticket.
    v1::OpenSessionResponse open_session(const v1::OpenSessionRequest& req);
    v1::ListSessionsResponse list_sessions(const v1::ListSessionsRequest& req = {});
    v1::Session get_session(const v1::GetSessionRequest& req);
    void close_session(const v1::CloseSessionRequest& req);

    // rof.v1.Audit and rof.v1.Metrics
    AuditTail tail_audit(const v1::TailAuditRequest& req = {});
    v1::AuditStats get_audit_stats();
    v1::GetMetricsResponse get_metrics();

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace rof
