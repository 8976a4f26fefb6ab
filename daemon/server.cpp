// SPDX-License-Identifier: MIT
#include "server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>
#include <grpcpp/support/server_interceptor.h>

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>

#include "grpc/health/v1/health.grpc.pb.h"
#include "log.h"
#include "metrics.h"

namespace rofd {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error(path + ": cannot read");
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

namespace exp = grpc::experimental;

// gRPC's callback handlers answer a request they cannot parse (truncated,
// a string field that is not UTF-8) with UNIMPLEMENTED and no message;
// docs/api.md promises INVALID_ARGUMENT naming the request.  The
// interceptor sees the failed parse (no message after POST_RECV_MESSAGE)
// and rewrites that status before it is sent.
class MalformedRequest final : public exp::Interceptor {
  public:
    explicit MalformedRequest(const char* method) : method_(method) {}

    void Intercept(exp::InterceptorBatchMethods* m) override {
        using Hook = exp::InterceptionHookPoints;
        if (m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) &&
            m->GetRecvMessage() == nullptr) {
            malformed_ = true;
        }
        if (malformed_ && m->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS) &&
            m->GetSendStatus().error_code() == grpc::StatusCode::UNIMPLEMENTED) {
            m->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, reason()));
        }
        m->Proceed();
    }

  private:
    // "GetTenant: the request is not a valid rof.v1.GetTenantRequest: ..."
    std::string reason() const {
        std::string full = method_;  // "/rof.v1.Tenants/GetTenant"
        std::string type = "request";
        if (full.starts_with('/')) {
            full.erase(0, 1);
        }
        std::replace(full.begin(), full.end(), '/', '.');
        const auto* md = google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full);
        if (md != nullptr) {
            type = md->input_type()->full_name();
        }
        const auto dot = full.rfind('.');
        return full.substr(dot == std::string::npos ? 0 : dot + 1) +
               ": the request is not a valid " + type +
               " (a truncated or malformed message, or a string that is not UTF-8)";
    }

    std::string method_;
    bool malformed_ = false;
};

class MalformedRequestFactory final : public exp::ServerInterceptorFactoryInterface {
  public:
    exp::Interceptor* CreateServerInterceptor(exp::ServerRpcInfo* info) override {
        const char* method = info->method();
        if (method == nullptr || !std::string_view(method).starts_with("/rof.v1.")) {
            return nullptr;
        }
        // gRPC owns the interceptor from here and deletes it with the call.
        return std::make_unique<MalformedRequest>(method).release();
    }
};

// rof_control_call_duration_seconds: from when gRPC matched the call to
// when its status is sent.
class CallTimer final : public exp::Interceptor {
  public:
    explicit CallTimer(prometheus::Histogram& h) : h_(h) {}

    void Intercept(exp::InterceptorBatchMethods* m) override {
        if (m->QueryInterceptionHookPoint(exp::InterceptionHookPoints::PRE_SEND_STATUS)) {
            h_.Observe(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
        }
        m->Proceed();
    }

  private:
    prometheus::Histogram& h_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

class CallTimerFactory final : public exp::ServerInterceptorFactoryInterface {
  public:
    explicit CallTimerFactory(CallMetrics& calls) : calls_(calls) {}

    exp::Interceptor* CreateServerInterceptor(exp::ServerRpcInfo* info) override {
        prometheus::Histogram* h =
            info->method() == nullptr ? nullptr : calls_.histogram(info->method());
        // As above: gRPC owns it.
        return h == nullptr ? nullptr : std::make_unique<CallTimer>(*h).release();
    }

  private:
    CallMetrics& calls_;
};

// How long, in ms, a peer's pings must be apart while the server sends it
// nothing (more often: a strike; past two, GOAWAY too_many_pings).  Below
// any client keepalive worth having (gRPC's own advice is >= 10 s).
constexpr int min_client_ping_interval_ms = 10000;

// Connection limits (policy [limits]): no connection, idle, half-open or
// with a dead peer, stays open for long.
void limit_connections(grpc::ServerBuilder& b, const rof::policy::Daemon& d) {
    // TCP only (TLS and the HTTP/2 preface): unix connections are accepted
    // by rofd and handed to gRPC ready.
    b.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                         static_cast<int>(d.handshake_timeout_ms));
    // Ping every connection, with calls or without, and close it when the
    // ping goes unanswered: a dead peer no longer holds a stream (TailAudit)
    // until TCP's own keepalive (2 h).  No limit on our pings between data
    // frames, or an idle connection would be pinged twice and then never.
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(d.keepalive_ms));
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(d.keepalive_timeout_ms));
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                         min_client_ping_interval_ms);
    b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
    // A connection with no call in progress is closed; gRPC clients
    // reconnect on their next call.
    b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(d.connection_idle_ms));
    // Every connection goes away after an age, calls or not: a peer that
    // answers pings but never sends the request of a call it opened (gRPC
    // hands a unary call to rofd only once its request has arrived, so
    // nothing else can end it) holds it this long at most.  GOAWAY first,
    // so clients open a new connection for their next call; calls in
    // progress get the grace to finish; then the connection is closed
    // (librof's audit tail reopens its stream).
    b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, static_cast<int>(d.connection_age_ms));
    b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                         static_cast<int>(d.connection_age_grace_ms));
}

}  // namespace

Server::Server(Manager& m)
    : manager_(m),
      control_(m),
      tenants_(m),
      policy_(m),
      regions_(m),
      programs_(m),
      sessions_(m),
      audit_(m),
      metrics_(m) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();

    const auto& d = m.view()->policy->daemon;
    grpc::ServerBuilder builder;
    builder.SetMaxReceiveMessageSize(static_cast<int>(d.max_message_bytes));
    builder.SetMaxSendMessageSize(static_cast<int>(d.max_message_bytes));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(d.max_concurrent_streams));
    limit_connections(builder, d);
    grpc::ResourceQuota quota("rofd");
    quota.Resize(d.memory_bytes);
    builder.SetResourceQuota(quota);
    if (d.tcp.enabled) {
        // Client certificates only: the subject is the caller's identity.
        grpc::SslServerCredentialsOptions ssl(
            GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
        ssl.pem_root_certs = read_file(d.tcp.client_ca);
        ssl.pem_key_cert_pairs.push_back({read_file(d.tcp.key), read_file(d.tcp.cert)});
        // Set by BuildAndStart(): the port bound (the one picked for port 0),
        // or 0 when binding failed.
        builder.AddListeningPort(d.tcp.address, grpc::SslServerCredentials(ssl), &tcp_port_);
    }
    std::vector<std::unique_ptr<exp::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(std::make_unique<CallTimerFactory>(m.calls()));
    interceptors.push_back(std::make_unique<MalformedRequestFactory>());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    for (grpc::Service* s :
         std::initializer_list<grpc::Service*>{&control_, &tenants_, &policy_, &regions_,
                                               &programs_, &sessions_, &audit_, &metrics_}) {
        builder.RegisterService(s);
    }
    server_ = builder.BuildAndStart();
    if (!server_ || (d.tcp.enabled && tcp_port_ == 0)) {
        throw std::runtime_error(d.tcp.enabled ? "cannot start the gRPC server on " + d.tcp.address
                                               : "cannot start the gRPC server");
    }
    if (d.tcp.enabled) {
        log::info("listening on {} (port {}; TLS, client certificates required)", d.tcp.address,
                  tcp_port_);
    }
    set_serving(false);
}

Server::~Server() {
    if (server_) {
        shutdown(std::chrono::milliseconds(0));
    }
}

void Server::set_serving(bool serving) {
    if (!server_) {
        return;
    }
    auto* health = server_->GetHealthCheckService();
    health->SetServingStatus(serving);
    for (const char* name :
         {rof::v1::Control::service_full_name(), rof::v1::Tenants::service_full_name(),
          rof::v1::Policy::service_full_name(), rof::v1::Regions::service_full_name(),
          rof::v1::Programs::service_full_name(), rof::v1::Sessions::service_full_name(),
          rof::v1::Audit::service_full_name(), rof::v1::Metrics::service_full_name()}) {
        health->SetServingStatus(name, serving);
    }
}

bool Server::accept(const UnixListener& listener) {
    std::optional<Connection> conn = listener.accept();
    if (!conn) {
        return false;
    }
    log::debug("connection on fd {} from pid {} uid {} gid {}", conn->fd.get(), conn->cred.pid,
               conn->cred.uid, conn->cred.gid);
    const std::uint32_t limit = manager_.view()->policy->daemon.connections_per_uid;
    if (!peers_.admit(*conn, limit)) {
        manager_.refuse_connection(conn->cred, limit);
        return true;  // closed: the client sees its connection end
    }
    grpc::AddInsecureChannelFromFd(server_.get(), conn->fd.release());
    return true;
}

bool Server::alive() {
    auto channel = server_->InProcessChannel(grpc::ChannelArguments());
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::health::v1::HealthCheckRequest req;
    grpc::health::v1::HealthCheckResponse resp;
    const grpc::Status st = stub->Check(&ctx, req, &resp);
    return st.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

void Server::shutdown(std::chrono::milliseconds grace) {
    if (!server_) {
        return;
    }
    // NOT_SERVING for everyone still watching, and no later flip back.
    server_->GetHealthCheckService()->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    server_->Wait();
    server_.reset();
}

}  // namespace rofd
