// SPDX-License-Identifier: MIT
// rof::Error: the one status type of librof, control plane and data path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#define ROF_EXPORT __attribute__((visibility("default")))

namespace rof {

// gRPC's status codes, same names and values (grpc/status.h), so a code
// from rofd passes through unchanged.  Data-path failures map onto the
// same set; docs/librof.md has the table.
enum class Code : std::uint8_t {
    ok = 0,
    cancelled = 1,
    unknown = 2,
    invalid_argument = 3,
    deadline_exceeded = 4,
    not_found = 5,
    already_exists = 6,
    permission_denied = 7,
    resource_exhausted = 8,
    failed_precondition = 9,
    aborted = 10,
    out_of_range = 11,
    unimplemented = 12,
    internal = 13,
    unavailable = 14,
    data_loss = 15,
    unauthenticated = 16,
};

// "NOT_FOUND", "UNAVAILABLE", ... as gRPC spells them; "UNKNOWN" for a
// value outside the enum.
ROF_EXPORT std::string_view code_name(Code code) noexcept;

// A failed call.  what() is one line naming the object and the reason, fit
// to be shown to a user as it is.
class ROF_EXPORT Error : public std::runtime_error {
  public:
    Error(Code code, const std::string& what) : std::runtime_error(what), code_(code) {}
    Code code() const noexcept { return code_; }

  private:
    Code code_;
};

}  // namespace rof
