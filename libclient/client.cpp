// SPDX-License-Identifier: MIT
#include "rof/client.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "rof/v1/control.grpc.pb.h"

namespace rof {
namespace {

PortState from_proto(rof::v1::PortState s) {
    switch (s) {
        case rof::v1::PORT_STATE_NOP:
            return PortState::nop;
        case rof::v1::PORT_STATE_DOWN:
            return PortState::down;
        case rof::v1::PORT_STATE_INIT:
            return PortState::init;
        case rof::v1::PORT_STATE_ARMED:
            return PortState::armed;
        case rof::v1::PORT_STATE_ACTIVE:
            return PortState::active;
        case rof::v1::PORT_STATE_ACTIVE_DEFER:
            return PortState::active_defer;
        default:
            return PortState::unknown;
    }
}

Status from_proto(const rof::v1::GetStatusResponse& r) {
    Status s;

    s.module.version = r.module().version();
    s.module.abi_major = r.module().abi_major();
    s.module.abi_minor = r.module().abi_minor();
    s.daemon.version = r.daemon().version();
    s.daemon.uptime = std::chrono::seconds(r.daemon().uptime().seconds());
    for (const auto& d : r.devices()) {
        Device dev;
        dev.name = d.name();
        dev.index = d.index();
        dev.node_guid = d.node_guid();
        dev.num_ports = d.num_ports();
        for (const auto& p : d.ports()) {
            dev.ports.push_back(Port{p.port_num(), from_proto(p.state()), p.active_mtu()});
        }
        s.devices.push_back(std::move(dev));
    }
    return s;
}

// gRPC only says "failed to connect"; a plain connect() says why.
std::string connect_reason(const std::string& path) {
    sockaddr_un addr{};

    if (path.size() >= sizeof(addr.sun_path)) {
        return "socket path longer than " + std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
    }
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return std::generic_category().message(errno);
    }
    const int ret = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    const int err = errno;
    ::close(fd);
    if (ret == 0) {
        return {};
    }
    return std::generic_category().message(err);
}

}  // namespace

struct Client::Impl {
    std::string socket_path;
    std::chrono::milliseconds timeout{0};
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<rof::v1::Control::Stub> control;

    [[noreturn]] void fail(const char* call, const grpc::Status& st) const;
    void set_deadline(grpc::ClientContext& ctx) const {
        ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    }
};

void Client::Impl::fail(const char* call, const grpc::Status& st) const {
    // A call that never reached rofd leaves the channel short of READY; one
    // that rofd itself failed (e.g. UNAVAILABLE because rof.ko went away)
    // went over a READY channel.
    const bool connected = channel->GetState(false) == GRPC_CHANNEL_READY;

    if (!connected && (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
        const std::string reason = connect_reason(socket_path);
        if (!reason.empty()) {
            throw Error(ErrorKind::unreachable, "cannot reach rofd at " + socket_path + ": " +
                                                    reason + " (is rofd running?)");
        }
        throw Error(ErrorKind::unreachable,
                    "cannot reach rofd at " + socket_path + ": " + st.error_message());
    }
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        throw Error(ErrorKind::unreachable, "rofd at " + socket_path + " did not answer " + call +
                                                " within " + std::to_string(timeout.count()) +
                                                " ms");
    }
    throw Error(ErrorKind::daemon, std::string(call) + ": " + st.error_message());
}

Client::Client(std::string socket_path, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
    impl_->socket_path = socket_path.empty() ? default_socket() : std::move(socket_path);
    impl_->timeout = timeout;
    impl_->channel =
        grpc::CreateChannel("unix:" + impl_->socket_path, grpc::InsecureChannelCredentials());
    impl_->control = rof::v1::Control::NewStub(impl_->channel);
}

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

const std::string& Client::socket_path() const noexcept {
    return impl_->socket_path;
}

Status Client::status() {
    grpc::ClientContext ctx;
    rof::v1::GetStatusRequest req;
    rof::v1::GetStatusResponse resp;

    impl_->set_deadline(ctx);
    const grpc::Status st = impl_->control->GetStatus(&ctx, req, &resp);
    if (!st.ok()) {
        impl_->fail("GetStatus", st);
    }
    return from_proto(resp);
}

}  // namespace rof
