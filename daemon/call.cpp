// SPDX-License-Identifier: MIT
#include "call.h"

#include <fmt/format.h>

#include <algorithm>

namespace rofd {

void set_time(google::protobuf::Timestamp* out, std::chrono::system_clock::time_point t) {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    out->set_seconds(ns / 1000000000);
    out->set_nanos(static_cast<std::int32_t>(ns % 1000000000));
}

void set_time(google::protobuf::Timestamp* out, std::uint64_t ns) {
    out->set_seconds(static_cast<std::int64_t>(ns / 1000000000ULL));
    out->set_nanos(static_cast<std::int32_t>(ns % 1000000000ULL));
}

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

std::string object_name(std::string_view tenant, std::string_view kind, std::string_view name) {
    return "tenant " + quoted(tenant) + ": " + std::string(kind) + " " + quoted(name);
}

void check_name(std::string_view field, const std::string& value) {
    if (auto why = rof::policy::name_error(value)) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + ": " + *why);
    }
}

}  // namespace rofd
