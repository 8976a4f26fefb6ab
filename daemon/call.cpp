// SPDX-License-Identifier: MIT
#include "call.h"

#include <fmt/format.h>

#include <algorithm>

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
        if (!std::all_of(value.begin(), value.end(), rof_name_char)) {
            why = quoted(value) + " has a character outside " ROF_NAME_CHARSET;
        }
    }
    if (!why.empty()) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + ": " + why);
    }
}

}  // namespace rofd
