// SPDX-License-Identifier: MIT
#include "rof/client.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "idempotency_key.h"
#include "rof/v1/audit.grpc.pb.h"
#include "rof/v1/control.grpc.pb.h"
#include "rof/v1/metrics.grpc.pb.h"
#include "rof/v1/policy.grpc.pb.h"
#include "rof/v1/program.grpc.pb.h"
#include "rof/v1/region.grpc.pb.h"
#include "rof/v1/session.grpc.pb.h"
#include "rof/v1/tenant.grpc.pb.h"
#include "stubs.h"
#include "unix_addr.h"

namespace rof {
namespace {

constexpr std::string_view unix_prefix = "unix:";

// gRPC only says "failed to connect"; a plain connect() says why.
std::string connect_reason(const std::string& path, int& err) {
    const internal::UnixAddr addr(path);
    err = 0;

    if (!addr.ok()) {
        return addr.error();
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return std::generic_category().message(errno);
    }
    const int ret = addr.connect(fd);
    err = errno;
    ::close(fd);
    if (ret == 0) {
        return {};
    }
    return std::generic_category().message(err);
}

std::string read_file(const std::string& what, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw Error(Code::invalid_argument,
                    what + " " + path + ": " + std::generic_category().message(errno));
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

template <class Req>
concept Keyed = requires(Req r) {
    r.idempotency_key();
    r.set_idempotency_key(std::string{});
};

Code to_code(grpc::StatusCode c) {
    const int v = static_cast<int>(c);
    return v >= 0 && v <= static_cast<int>(Code::unauthenticated) ? static_cast<Code>(v)
                                                                  : Code::unknown;
}

// Where calls go, and how their failures are told: shared by the client and
// the streams it opened, which may outlive it.
struct Endpoint {
    ClientOptions options;
    std::string target;     // "unix:/run/rof/rofd.sock" or "host:port"
    std::string unix_path;  // empty for TCP
    std::shared_ptr<grpc::Channel> channel;

    [[noreturn]] void fail(std::string_view call, const grpc::Status& st) const;
};

void Endpoint::fail(std::string_view call, const grpc::Status& st) const {
    const bool connected = channel->GetState(false) == GRPC_CHANNEL_READY;
    const std::string where = unix_path.empty() ? target : unix_path;

    if (!connected && (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
        int err = 0;
        std::string reason = unix_path.empty() ? std::string() : connect_reason(unix_path, err);
        if (reason.empty()) {
            reason = st.error_message();
        }
        // EACCES: rofd runs, and the socket is not this user's to open.
        const char* hint =
            err == EACCES ? " (the socket is for root and the group rof)" : " (is rofd running?)";
        throw Error(Code::unavailable, "cannot reach rofd at " + where + ": " + reason + hint);
    }
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        throw Error(Code::deadline_exceeded, "rofd at " + where + " did not answer " +
                                                 std::string(call) + " within " +
                                                 std::to_string(options.deadline.count()) + " ms");
    }
    throw Error(to_code(st.error_code()), std::string(call) + ": " + st.error_message());
}

}  // namespace

struct Client::Impl : Endpoint, internal::Stubs {
    std::unique_ptr<grpc::health::v1::Health::Stub> health;

    explicit Impl(ClientOptions o);

    // One unary call.  @retry: the call may be sent again (it reads, or it
    // carries an idempotency key), so an answer lost with the connection
    // is asked for again until the deadline.
    template <class Stub, class Req, class Resp>
    Resp call(std::string_view name, Stub* stub,
              grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& req,
              bool retry) const {
        const auto deadline = std::chrono::system_clock::now() + options.deadline;
        auto backoff = std::chrono::milliseconds(20);

        for (;;) {
            grpc::ClientContext ctx;
            Resp resp;

            ctx.set_deadline(deadline);
            ctx.set_wait_for_ready(options.wait_for_ready);
            const grpc::Status st = (stub->*method)(&ctx, req, &resp);
            if (st.ok()) {
                return resp;
            }
            // UNAVAILABLE over a channel that is no longer READY is the
            // connection's, not rofd's answer (rofd says UNAVAILABLE too,
            // e.g. when rof.ko is gone, but over a READY channel).
            const bool lost = st.error_code() == grpc::StatusCode::UNAVAILABLE &&
                              channel->GetState(false) != GRPC_CHANNEL_READY;
            if (!retry || !lost || !options.wait_for_ready ||
                std::chrono::system_clock::now() + backoff >= deadline) {
                fail(name, st);
            }
            std::this_thread::sleep_for(backoff);
            backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
        }
    }

    template <class Stub, class Req, class Resp>
    Resp mutate(std::string_view name, Stub* stub,
                grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                const Req& req) const {
        if constexpr (Keyed<Req>) {
            if (req.idempotency_key().empty()) {
                Req keyed = req;
                keyed.set_idempotency_key(internal::fresh_idempotency_key());
                return call(name, stub, method, keyed, true);
            }
            return call(name, stub, method, req, true);
        } else {
            return call(name, stub, method, req, false);
        }
    }
};

namespace {

// The channel to the target @o names (the default socket when none).
Endpoint open_endpoint(ClientOptions o) {
    Endpoint e;
    e.options = std::move(o);
    std::string t = e.options.target.empty() ? Client::default_socket() : e.options.target;
    grpc::ChannelArguments args;
    std::shared_ptr<grpc::ChannelCredentials> creds;

    if (t.starts_with(unix_prefix)) {
        t.erase(0, unix_prefix.size());
    }
    if (t.empty() || t.front() == '/' || t.front() == '.') {
        e.unix_path = t;
        e.target = "unix:" + t;
        creds = grpc::InsecureChannelCredentials();
        // A restarted rofd is back within milliseconds; gRPC's default
        // backoff would leave the channel waiting for up to 120 s.  (Not
        // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also takes it as the time
        // one connection attempt, HTTP/2 handshake included, may take.)
        args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
        args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    } else {
        if (e.options.tls_ca.empty() || e.options.tls_cert.empty() || e.options.tls_key.empty()) {
            throw Error(Code::invalid_argument,
                        "rofd at " + t +
                            ": TCP needs TLS with a client certificate: give the CA, "
                            "certificate and key files");
        }
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = read_file("TLS CA", e.options.tls_ca);
        ssl.pem_cert_chain = read_file("TLS certificate", e.options.tls_cert);
        ssl.pem_private_key = read_file("TLS key", e.options.tls_key);
        creds = grpc::SslCredentials(ssl);
        if (!e.options.tls_server_name.empty()) {
            args.SetSslTargetNameOverride(e.options.tls_server_name);
        }
        args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
        e.target = t;
    }
    // A connection of its own (client.h): gRPC would otherwise put every channel of a process
    // with the same target and arguments on one connection, so that 200 Clients were one
    // connection's streams, rofd's max_concurrent_streams of them at a time.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    e.channel = grpc::CreateCustomChannel(e.target, creds, args);
    return e;
}

}  // namespace

Client::Impl::Impl(ClientOptions o)
    : Endpoint(open_endpoint(std::move(o))),
      Stubs(channel),
      health(grpc::health::v1::Health::NewStub(channel)) {}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

std::string Client::default_socket() {
    // librof never calls setenv(); a program that does so from another
    // thread while connecting has a race no library can fix.
    const char* env = std::getenv("ROF_SOCKET");  // NOLINT(concurrency-mt-unsafe)

    if (env != nullptr && *env != '\0') {
        return env;
    }
    return default_socket_path;
}

const std::string& Client::target() const noexcept {
    return impl_->target;
}

const ClientOptions& Client::options() const noexcept {
    return impl_->options;
}

std::string Client::health(const std::string& service) {
    grpc::health::v1::HealthCheckRequest req;

    req.set_service(service);
    const auto resp = impl_->call("Health.Check", impl_->health.get(),
                                  &grpc::health::v1::Health::Stub::Check, req, true);
    std::string name = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
    return name.empty() ? "UNKNOWN" : name;
}

v1::GetStatusResponse Client::get_status() {
    return impl_->call("GetStatus", impl_->control.get(), &v1::Control::Stub::GetStatus,
                       v1::GetStatusRequest{}, true);
}

void Client::rotate_ticket_key() {
    impl_->mutate("RotateTicketKey", impl_->control.get(), &v1::Control::Stub::RotateTicketKey,
                  v1::RotateTicketKeyRequest{});
}

v1::ListTenantsResponse Client::list_tenants() {
    return impl_->call("ListTenants", impl_->tenants.get(), &v1::Tenants::Stub::ListTenants,
                       v1::ListTenantsRequest{}, true);
}

v1::Tenant Client::get_tenant(const v1::GetTenantRequest& req) {
    return impl_->call("GetTenant", impl_->tenants.get(), &v1::Tenants::Stub::GetTenant, req, true);
}

v1::DestroyTenantResponse Client::destroy_tenant(const v1::DestroyTenantRequest& req) {
    return impl_->mutate("DestroyTenant", impl_->tenants.get(), &v1::Tenants::Stub::DestroyTenant,
                         req);
}

v1::GetPolicyResponse Client::get_policy() {
    return impl_->call("GetPolicy", impl_->policy.get(), &v1::Policy::Stub::GetPolicy,
                       v1::GetPolicyRequest{}, true);
}

v1::ReloadPolicyResponse Client::reload_policy() {
    // Reloading twice reads the same files twice: safe to resend.
    return impl_->call("ReloadPolicy", impl_->policy.get(), &v1::Policy::Stub::ReloadPolicy,
                       v1::ReloadPolicyRequest{}, true);
}

v1::Region Client::create_region(const v1::CreateRegionRequest& req) {
    return impl_->mutate("CreateRegion", impl_->regions.get(), &v1::Regions::Stub::CreateRegion,
                         req);
}

void Client::delete_region(const v1::DeleteRegionRequest& req) {
    impl_->mutate("DeleteRegion", impl_->regions.get(), &v1::Regions::Stub::DeleteRegion, req);
}

v1::ListRegionsResponse Client::list_regions(const v1::ListRegionsRequest& req) {
    return impl_->call("ListRegions", impl_->regions.get(), &v1::Regions::Stub::ListRegions, req,
                       true);
}

v1::Region Client::get_region(const v1::GetRegionRequest& req) {
    return impl_->call("GetRegion", impl_->regions.get(), &v1::Regions::Stub::GetRegion, req, true);
}

v1::CreateRegionTokenResponse Client::create_region_token(const v1::CreateRegionTokenRequest& req) {
    // A lost answer's token expires unused; a new one is as good.
    return impl_->call("CreateRegionToken", impl_->regions.get(),
                       &v1::Regions::Stub::CreateRegionToken, req, true);
}

v1::VerifyProgramResponse Client::verify_program(const v1::VerifyProgramRequest& req) {
    return impl_->call("VerifyProgram", impl_->programs.get(), &v1::Programs::Stub::VerifyProgram,
                       req, true);
}

v1::Program Client::load_program(const v1::LoadProgramRequest& req) {
    return impl_->mutate("LoadProgram", impl_->programs.get(), &v1::Programs::Stub::LoadProgram,
                         req);
}

v1::Program Client::replace_program(const v1::ReplaceProgramRequest& req) {
    return impl_->mutate("ReplaceProgram", impl_->programs.get(),
                         &v1::Programs::Stub::ReplaceProgram, req);
}

void Client::unload_program(const v1::UnloadProgramRequest& req) {
    impl_->mutate("UnloadProgram", impl_->programs.get(), &v1::Programs::Stub::UnloadProgram, req);
}

v1::ListProgramsResponse Client::list_programs(const v1::ListProgramsRequest& req) {
    return impl_->call("ListPrograms", impl_->programs.get(), &v1::Programs::Stub::ListPrograms,
                       req, true);
}

v1::Program Client::get_program(const v1::GetProgramRequest& req) {
    return impl_->call("GetProgram", impl_->programs.get(), &v1::Programs::Stub::GetProgram, req,
                       true);
}

v1::OpenSessionResponse Client::open_session(const v1::OpenSessionRequest& req) {
    return impl_->mutate("OpenSession", impl_->sessions.get(), &v1::Sessions::Stub::OpenSession,
                         req);
}

v1::ListSessionsResponse Client::list_sessions(const v1::ListSessionsRequest& req) {
    return impl_->call("ListSessions", impl_->sessions.get(), &v1::Sessions::Stub::ListSessions,
                       req, true);
}

v1::Session Client::get_session(const v1::GetSessionRequest& req) {
    return impl_->call("GetSession", impl_->sessions.get(), &v1::Sessions::Stub::GetSession, req,
                       true);
}

void Client::close_session(const v1::CloseSessionRequest& req) {
    impl_->mutate("CloseSession", impl_->sessions.get(), &v1::Sessions::Stub::CloseSession, req);
}

v1::AuditStats Client::get_audit_stats() {
    return impl_->call("GetAuditStats", impl_->audit.get(), &v1::Audit::Stub::GetAuditStats,
                       v1::GetAuditStatsRequest{}, true);
}

v1::GetMetricsResponse Client::get_metrics() {
    return impl_->call("GetMetrics", impl_->metrics.get(), &v1::Metrics::Stub::GetMetrics,
                       v1::GetMetricsRequest{}, true);
}

namespace {
// Initial metadata of a TailAudit stream rofd opened (daemon/audit_service.cpp).
constexpr const char* audit_stream_key = "rof-audit-stream";
}  // namespace

// The audit stream.  It has no deadline (it runs until cancelled), but
// waiting for rofd to answer the first time is bounded by the options'
// deadline: a stream that never starts is an error, not a silent hang.
// A stream rofd had opened (it says so in its initial metadata) that ends
// UNAVAILABLE ended with its connection (rofd's limits.connection_age_ms,
// a restart): it is opened again, within the same bound, and the caller
// reads on.  Records rofd published between the two streams are not seen.
struct AuditTail::Impl {
    Endpoint endpoint;  // a copy: the stream may outlive its client
    v1::TailAuditRequest req;
    std::unique_ptr<v1::Audit::Stub> stub;
    std::mutex mu;  // ctx against cancel() while it is replaced
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::ClientReader<v1::AuditRecord>> reader;
    std::optional<grpc::Status> ended;  // a stream's status, once finished
    std::atomic<bool> cancelled{false};

    // Opens the stream; false when rofd is not reachable within the deadline.
    bool open() {
        if (endpoint.options.wait_for_ready &&
            !endpoint.channel->WaitForConnected(std::chrono::system_clock::now() +
                                                endpoint.options.deadline)) {
            return false;
        }
        auto next = std::make_unique<grpc::ClientContext>();
        next->set_wait_for_ready(endpoint.options.wait_for_ready);
        std::lock_guard lock(mu);
        if (cancelled) {
            return false;
        }
        ctx = std::move(next);
        reader = stub->TailAudit(ctx.get(), req);
        return true;
    }

    // After Read() returned false: whether the stream was opened again.
    bool reopen() {
        if (cancelled) {
            return false;
        }
        const auto& md = ctx->GetServerInitialMetadata();
        if (md.find(audit_stream_key) == md.end()) {
            return false;  // never opened: finish() reports why
        }
        ended = reader->Finish();
        reader.reset();
        if (ended->error_code() != grpc::StatusCode::UNAVAILABLE) {
            return false;
        }
        if (!open()) {
            ended = cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")
                              : grpc::Status(grpc::StatusCode::UNAVAILABLE, "not connected");
            return false;
        }
        ended.reset();
        return true;
    }
};

AuditTail::AuditTail(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AuditTail::AuditTail(AuditTail&&) noexcept = default;
AuditTail& AuditTail::operator=(AuditTail&&) noexcept = default;

AuditTail::~AuditTail() {
    if (impl_ && impl_->reader) {
        impl_->ctx->TryCancel();
        (void)impl_->reader->Finish();
    }
}

bool AuditTail::next(v1::AuditRecord& record) {
    while (impl_->reader) {
        if (impl_->reader->Read(&record)) {
            return true;
        }
        if (!impl_->reopen()) {
            return false;
        }
    }
    return false;
}

void AuditTail::cancel() {
    std::lock_guard lock(impl_->mu);
    impl_->cancelled = true;
    if (impl_->ctx) {
        impl_->ctx->TryCancel();
    }
}

void AuditTail::finish() {
    grpc::Status st = impl_->ended.value_or(grpc::Status::OK);
    if (impl_->reader) {
        auto reader = std::move(impl_->reader);
        st = reader->Finish();
    }
    if (st.ok() || (impl_->cancelled && st.error_code() == grpc::StatusCode::CANCELLED)) {
        return;
    }
    impl_->endpoint.fail("TailAudit", st);
}

AuditTail Client::tail_audit(const v1::TailAuditRequest& req) {
    auto impl = std::make_unique<AuditTail::Impl>();

    impl->endpoint = static_cast<const Endpoint&>(*impl_);
    impl->req = req;
    impl->stub = v1::Audit::NewStub(impl_->channel);
    if (!impl->open()) {
        impl_->fail("TailAudit", grpc::Status(grpc::StatusCode::UNAVAILABLE, "not connected"));
    }
    return AuditTail(std::move(impl));
}

}  // namespace rof
