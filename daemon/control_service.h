// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>

#include "module.h"
#include "peers.h"
#include "rof/v1/control.grpc.pb.h"

namespace rofd {

// rof.v1.Control: answers from the module at call time, so the device list is
// never stale.
class ControlService final : public rof::v1::Control::CallbackService {
  public:
    ControlService(Module& module, const PeerTable& peers);

    grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                        const rof::v1::GetStatusRequest* req,
                                        rof::v1::GetStatusResponse* resp) override;

  private:
    Module& module_;
    const PeerTable& peers_;
    const std::chrono::steady_clock::time_point started_;
};

// Exposed for the unit tests: the mapping from the ABI to the proto.
rof::v1::PortState to_proto_port_state(std::uint32_t abi_state);

}  // namespace rofd
