// SPDX-License-Identifier: MIT
// rof.v1.Control: rofd's and the module's status, the ticket key.
#include <fmt/format.h>

#include "call.h"
#include "services.h"

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

// GetStatus answers admins and tenants; drift is for admins only.
ServerUnaryReactor* ControlService::GetStatus(CallbackServerContext* ctx,
                                              const v1::GetStatusRequest*,
                                              v1::GetStatusResponse* resp) {
    return unary(m_, ctx, "GetStatus", CallKind::read, [this, resp](const Principal& p) {
        log::debug("GetStatus from {}", p.describe());
        if (!p.admin() && p.role != Principal::Role::tenant) {
            return m_.authorize(p, "", Right::read, "the status");
        }
        const ModuleVersion mv = m_.module().version();
        auto* module = resp->mutable_module();
        module->set_version(mv.version);
        module->set_abi_major(mv.abi_major);
        module->set_abi_minor(mv.abi_minor);

        for (const DeviceInfo& d : m_.module().list_devices()) {
            auto* dev = resp->add_devices();
            dev->set_name(d.name);
            dev->set_index(d.index);
            dev->set_node_guid(d.node_guid);
            dev->set_num_ports(d.num_ports);
            for (const PortInfo& port : d.ports) {
                auto* pp = dev->add_ports();
                pp->set_port_num(port.port_num);
                pp->set_state(to_proto_port_state(port.state));
                pp->set_active_mtu(port.active_mtu);
            }
        }
        auto* daemon = resp->mutable_daemon();
        daemon->set_version(ROF_VERSION);
        const auto up = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::steady_clock::now() - m_.started());
        daemon->mutable_uptime()->set_seconds(up.count());
        const auto v = m_.view();
        if (p.admin()) {
            for (const auto& d : v->drift) {
                resp->add_drift(d);
            }
        }
        resp->set_policy_generation(v->generation);
        resp->set_caller(p.admin()                           ? "admin"
                         : p.role == Principal::Role::tenant ? "tenant " + p.tenant
                                                             : "none");
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* ControlService::RotateTicketKey(CallbackServerContext* ctx,
                                                    const v1::RotateTicketKeyRequest*,
                                                    v1::RotateTicketKeyResponse*) {
    return unary(m_, ctx, "RotateTicketKey", CallKind::write, [this](const Principal& p) {
        if (!p.admin()) {
            return m_.authorize(p, "", Right::write, "the ticket key");
        }
        m_.rotate_ticket_key();
        return grpc::Status::OK;
    });
}

}  // namespace rofd
