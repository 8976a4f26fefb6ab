// SPDX-License-Identifier: MIT
#include "status_model.h"

#include <cstdio>

namespace rof {

std::string_view to_string(PortState state) {
    switch (state) {
        case PortState::nop:
            return "NOP";
        case PortState::down:
            return "DOWN";
        case PortState::init:
            return "INIT";
        case PortState::armed:
            return "ARMED";
        case PortState::active:
            return "ACTIVE";
        case PortState::active_defer:
            return "ACTIVE_DEFER";
        case PortState::unknown:
            break;
    }
    return "UNKNOWN";
}

std::string format_node_guid(std::uint64_t g) {
    char buf[20];

    std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48),
                  static_cast<unsigned>((g >> 32) & 0xffff),
                  static_cast<unsigned>((g >> 16) & 0xffff), static_cast<unsigned>(g & 0xffff));
    return buf;
}

}  // namespace rof
