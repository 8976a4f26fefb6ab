// SPDX-License-Identifier: MIT
#include "control_service.h"

#include "log.h"
#include "status_map.h"
#include "uapi/rof.h"

namespace rofd {

rof::v1::PortState to_proto_port_state(std::uint32_t abi_state) {
    switch (abi_state) {
        case ROF_PORT_NOP:
            return rof::v1::PORT_STATE_NOP;
        case ROF_PORT_DOWN:
            return rof::v1::PORT_STATE_DOWN;
        case ROF_PORT_INIT:
            return rof::v1::PORT_STATE_INIT;
        case ROF_PORT_ARMED:
            return rof::v1::PORT_STATE_ARMED;
        case ROF_PORT_ACTIVE:
            return rof::v1::PORT_STATE_ACTIVE;
        case ROF_PORT_ACTIVE_DEFER:
            return rof::v1::PORT_STATE_ACTIVE_DEFER;
        default:
            // A state newer than this rofd: say "unknown" rather than guess.
            return rof::v1::PORT_STATE_UNSPECIFIED;
    }
}

ControlService::ControlService(Module& module, const PeerTable& peers)
    : module_(module), peers_(peers), started_(std::chrono::steady_clock::now()) {}

grpc::ServerUnaryReactor* ControlService::GetStatus(grpc::CallbackServerContext* ctx,
                                                    const rof::v1::GetStatusRequest*,
                                                    rof::v1::GetStatusResponse* resp) {
    auto* reactor = ctx->DefaultReactor();

    if (log::verbose()) {
        if (const auto cred = peers_.find(ctx->peer())) {
            log::debug("GetStatus from pid ", cred->pid, " uid ", cred->uid, " gid ", cred->gid);
        } else {
            log::debug("GetStatus from unknown peer ", ctx->peer());
        }
    }

    try {
        const ModuleVersion v = module_.version();
        auto* module = resp->mutable_module();
        module->set_version(v.version);
        module->set_abi_major(v.abi_major);
        module->set_abi_minor(v.abi_minor);

        for (const DeviceInfo& d : module_.list_devices()) {
            auto* dev = resp->add_devices();
            dev->set_name(d.name);
            dev->set_index(d.index);
            dev->set_node_guid(d.node_guid);
            dev->set_num_ports(d.num_ports);
            for (const PortInfo& p : d.ports) {
                auto* port = dev->add_ports();
                port->set_port_num(p.port_num);
                port->set_state(to_proto_port_state(p.state));
                port->set_active_mtu(p.active_mtu);
            }
        }
    } catch (const KmodError& e) {
        log::error("GetStatus: ", e.what());
        reactor->Finish(module_status(e, ""));
        return reactor;
    } catch (const std::exception& e) {
        log::error("GetStatus: ", e.what());
        reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
        return reactor;
    }

    auto* daemon = resp->mutable_daemon();
    daemon->set_version(ROF_VERSION);
    const auto up = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started_);
    daemon->mutable_uptime()->set_seconds(up.count());

    reactor->Finish(grpc::Status::OK);
    return reactor;
}

}  // namespace rofd
