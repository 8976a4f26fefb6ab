// SPDX-License-Identifier: MIT
#pragma once

#include <grpcpp/server.h>

#include <chrono>
#include <memory>

#include "listener.h"
#include "manager.h"
#include "services.h"

namespace rofd {

// The gRPC server: every rof.v1 service, grpc.health.v1.Health and server
// reflection.  Unix connections arrive through accept() (rofd accepts them
// itself to read SO_PEERCRED); a TLS listener with client certificates
// only is added when the policy turns [listen.tcp] on.
class Server {
  public:
    // Starts gRPC with health NOT_SERVING; call set_serving(true) once the
    // Manager has reconciled with the module.  Limits come from the
    // policy's [limits].
    explicit Server(Manager& m);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void set_serving(bool serving);

    // Takes one pending connection from @listener and hands it to gRPC,
    // or closes it when its uid holds limits.connections_per_uid already
    // (counted and journalled as a refusal).  Returns false when none was
    // pending.  Throws std::system_error when
    // the listener itself is broken.
    bool accept(const UnixListener& listener);

    // Whether the server answers: a health check over an in-process
    // channel, for the watchdog.
    bool alive();

    // Health goes NOT_SERVING, new calls are refused, calls in flight get
    // until @grace to finish and are then cancelled.
    void shutdown(std::chrono::milliseconds grace);

    grpc::Server& grpc() { return *server_; }

    // The TCP port the TLS listener is bound to (the one picked when the
    // policy's listen.tcp.address has port 0); 0 when TCP is off.
    int tcp_port() const { return tcp_port_; }

  private:
    Manager& manager_;
    PeerConnections peers_;
    ControlService control_;
    TenantService tenants_;
    PolicyService policy_;
    RegionService regions_;
    ProgramService programs_;
    SessionService sessions_;
    AuditService audit_;
    MetricsService metrics_;
    int tcp_port_ = 0;
    // Declared last: destroyed first, while the services it calls still exist.
    std::unique_ptr<grpc::Server> server_;
};

}  // namespace rofd
