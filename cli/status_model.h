// SPDX-License-Identifier: MIT
// rof::Status: what `rofctl status` shows, as plain C++ values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rof {

// The verbs port states (enum ib_port_state); unknown is a state this
// library does not know yet, or one the daemon did not set.
enum class PortState { unknown, nop, down, init, armed, active, active_defer };

// "ACTIVE", "DOWN", ... as the rdma tool spells them; "UNKNOWN" for unknown.
std::string_view to_string(PortState state);

// The node GUID as ibv_devinfo and rdma show it: "xxxx:xxxx:xxxx:xxxx",
// from the value in host byte order.
std::string format_node_guid(std::uint64_t node_guid);

struct Port {
    std::uint32_t port_num = 0;  // 1-based
    PortState state = PortState::unknown;
    std::uint32_t active_mtu = 0;  // bytes; 0 if unknown
};

struct Device {
    std::string name;
    std::uint32_t index = 0;
    std::uint64_t node_guid = 0;  // host byte order
    std::uint32_t num_ports = 0;  // can exceed ports.size(): the module reports the first few
    std::vector<Port> ports;
};

struct ModuleInfo {
    std::string version;
    std::uint32_t abi_major = 0;
    std::uint32_t abi_minor = 0;
};

struct DaemonInfo {
    std::string version;
    std::chrono::seconds uptime{0};
};

struct Status {
    ModuleInfo module;
    DaemonInfo daemon;
    std::vector<Device> devices;
};

}  // namespace rof
