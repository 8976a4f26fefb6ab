// SPDX-License-Identifier: MIT
#include "rof/error.h"

#include <array>

namespace rof {

std::string_view code_name(Code code) noexcept {
    static constexpr std::array<std::string_view, 17> names = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    const auto i = static_cast<std::size_t>(code);
    return i < names.size() ? names[i] : "UNKNOWN";
}

}  // namespace rof
