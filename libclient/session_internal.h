// SPDX-License-Identifier: MIT
// Pieces of rof::Session that need no RDMA device, kept apart so that
// session_test.cpp can test them: what a reject reason or a response
// status means, the local bounds and access check of one-sided verbs,
// program names, addresses.  The send path's bookkeeping is in
// session_send.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rof/error.h"

namespace rof::detail {

// enum rof_reject_reason: its ROF_REJECT_* name, a phrase, and the code a
// refused connect throws.
struct RejectInfo {
    Code code;
    const char* name;  // "ROF_REJECT_EXPIRED"
    const char* text;  // "ticket expired"
};
RejectInfo reject_info(std::uint32_t reason) noexcept;
// "session 5: connect refused by rof.ko: ticket expired (ROF_REJECT_EXPIRED)"
Error reject_error(std::uint32_t session, std::uint32_t reason);

// enum rof_status of a response: its name and a phrase.
const char* status_name(std::uint32_t status) noexcept;
// enum rof_isa_status: "EBOUNDS", ...
const char* exec_status_name(std::uint32_t status) noexcept;
// The code and message of a response with a non-OK status (for INVOKE
// faults: @exec_status and @fault_pc name the fault).
Code status_code(std::uint32_t status) noexcept;
std::string status_message(std::uint32_t session, std::uint32_t status, std::uint64_t tag,
                           std::uint32_t exec_status, std::uint32_t fault_pc);

// One granted region as the session uses it.
struct RegionEntry {
    std::string name;
    std::uint32_t id = 0;
    std::uint32_t access = 0;  // ROF_ACCESS_* from the welcome table
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    std::uint32_t rkey = 0;
};

enum class Access : std::uint32_t { read = 1, write = 2, atomic = 4 };

// Checks a one-sided access of @len bytes at @offset before it is posted.
// Returns Code::ok, or the code with a message in @why: permission_denied
// (not granted), out_of_range (outside the region), invalid_argument
// (atomic not 8-byte aligned, or an empty transfer).
Code check_access(std::uint32_t session, const RegionEntry& r, std::uint64_t offset,
                  std::uint64_t len, Access need, std::string* why);

// A session's program names: name -> tag, looked up when a name is first
// used and again when the module answers that a tag it gave is not loaded
// (the program was replaced more often than its old tags are kept, or
// unloaded and loaded again).  Thread-safe; the lookup, a call to rofd,
// runs outside the lock.
class ProgramNames {
  public:
    // The tag of the tenant's program called @name now (rofd's
    // GetProgram); throws rof::Error (not_found: no such program).
    using Lookup = std::function<std::uint64_t(const std::string& name)>;

    // Without a lookup, names are only those learn() gave.
    void set_lookup(Lookup lookup);
    // Every name's tag, as listed: replaces what is known.
    void learn(const std::vector<std::pair<std::string, std::uint64_t>>& programs);
    // The known tag of @name, else the lookup's.  @session heads errors.
    std::uint64_t tag(std::uint32_t session, std::string_view name);
    // @stale, the tag of @name, was answered "no program": the tag of @name
    // now if it is another, else nullopt (no lookup, or the same tag).
    std::optional<std::uint64_t> relearn(std::string_view name, std::uint64_t stale);

  private:
    std::uint64_t look_up(std::string_view name);

    mutable std::mutex mu_;
    Lookup lookup_;
    std::map<std::string, std::uint64_t, std::less<>> tags_;
};

// Parses "198.18.0.1", "fd00::1", "[fd00::1]", "fe80::1%eth0"; the port
// goes in as given.  Returns false (and says why) for anything else.
struct SockAddr {
    alignas(8) unsigned char storage[128]{};
    unsigned len = 0;
    int family = 0;
};
bool parse_address(const std::string& addr, std::uint16_t port, SockAddr* out, std::string* why);
// "192.0.2.1:18515" or "[fd00::1]:18515"
std::string format_peer(const SockAddr& a);

}  // namespace rof::detail
