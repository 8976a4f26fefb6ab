// SPDX-License-Identifier: MIT
#pragma once

#include <grpcpp/server.h>

#include <chrono>
#include <memory>

#include "control_service.h"
#include "listener.h"
#include "module.h"
#include "peers.h"

namespace rofd {

// The gRPC server: rof.v1 services, grpc.health.v1.Health and server
// reflection, fed with connections accepted by a UnixListener.
class Server {
  public:
    // Starts gRPC with health NOT_SERVING; call set_serving(true) once the
    // daemon is really ready.
    explicit Server(Module& module);
    ~Server();

    void set_serving(bool serving);

    // Hands every connection on @listener to gRPC until @stop_fd becomes
    // readable (a signalfd in rofd, an eventfd in the tests).
    void run(const UnixListener& listener, int stop_fd);

    // Health goes NOT_SERVING, new calls are refused, calls in flight get
    // until @grace to finish and are then cancelled.
    void shutdown(std::chrono::milliseconds grace);

    const PeerTable& peers() const noexcept { return peers_; }

  private:
    PeerTable peers_;
    ControlService control_;
    // Declared last: destroyed first, while the services it calls still exist.
    std::unique_ptr<grpc::Server> server_;
};

}  // namespace rofd
