// SPDX-License-Identifier: MIT
#include "server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>
#include <poll.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "log.h"

namespace rofd {
namespace {

// Failing accept(2) for these means the listener itself is broken, not
// that resources are short for a moment.
bool fatal_accept_error(int err) {
    return err == EBADF || err == EINVAL || err == ENOTSOCK || err == EOPNOTSUPP || err == EFAULT;
}

}  // namespace

Server::Server(Module& module) : control_(module, peers_) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();

    grpc::ServerBuilder builder;
    // No listening port: every connection arrives through run().
    builder.RegisterService(&control_);
    server_ = builder.BuildAndStart();
    if (!server_) {
        throw std::runtime_error("cannot start the gRPC server");
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
    health->SetServingStatus(rof::v1::Control::service_full_name(), serving);
}

void Server::run(const UnixListener& listener, int stop_fd) {
    for (;;) {
        pollfd fds[2] = {{stop_fd, POLLIN, 0}, {listener.fd(), POLLIN, 0}};

        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::system_error(errno, std::generic_category(), "poll");
        }
        if (fds[0].revents != 0) {
            return;
        }
        if (fds[1].revents == 0) {
            continue;
        }

        std::optional<Connection> conn;
        try {
            conn = listener.accept();
        } catch (const std::system_error& e) {
            if (fatal_accept_error(e.code().value())) {
                throw;
            }
            // Out of fds or memory: keep serving the connections we have,
            // retry shortly instead of spinning on a readable listener.
            log::error(e.what());
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        if (!conn) {
            continue;
        }
        log::debug("connection on fd ", conn->fd.get(), " from pid ", conn->cred.pid, " uid ",
                   conn->cred.uid, " gid ", conn->cred.gid);
        peers_.add(conn->fd.get(), conn->cred);
        grpc::AddInsecureChannelFromFd(server_.get(), conn->fd.release());
    }
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
