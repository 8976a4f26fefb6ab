// SPDX-License-Identifier: MIT
#include "call.h"

#include <fmt/format.h>

namespace rofd {

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

std::string object_name(std::string_view tenant, std::string_view kind, std::string_view name) {
    return "tenant " + quoted(tenant) + ": " + std::string(kind) + " " + quoted(name);
}

void check_name(std::string_view field, const std::string& value) {
    std::string why;
    if (value.empty()) {
        why = "empty";
    } else if (value.size() >= ROF_NAME_MAX) {
        why = fmt::format("{} characters; at most {}", value.size(), ROF_NAME_MAX - 1);
    } else {
        for (const char c : value) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' || c == '-';
            if (!ok) {
                why = quoted(value) + " has a character outside [A-Za-z0-9._:-]";
                break;
            }
        }
    }
    if (!why.empty()) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + ": " + why);
    }
}

}  // namespace rofd
