// SPDX-License-Identifier: MIT
// rof::Session's device-independent helpers (session_internal.h).
#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

#include "session_internal.h"
#include "uapi/rof.h"
#include "uapi/rof_isa.h"

namespace rof::detail {

RejectInfo reject_info(std::uint32_t reason) noexcept {
    switch (reason) {
        case ROF_REJECT_NO_TICKET:
            return {Code::unauthenticated, "ROF_REJECT_NO_TICKET", "no ticket"};
        case ROF_REJECT_VERSION:
            return {Code::unauthenticated, "ROF_REJECT_VERSION", "unknown ticket version"};
        case ROF_REJECT_NO_KEY:
            return {Code::unavailable, "ROF_REJECT_NO_KEY", "rofd has not set a ticket key"};
        case ROF_REJECT_BAD_MAC:
            return {Code::unauthenticated, "ROF_REJECT_BAD_MAC", "ticket MAC does not verify"};
        case ROF_REJECT_EXPIRED:
            return {Code::unauthenticated, "ROF_REJECT_EXPIRED", "ticket expired"};
        case ROF_REJECT_NO_SESSION:
            return {Code::failed_precondition, "ROF_REJECT_NO_SESSION",
                    "no prepared session for this ticket (expired, closed or used)"};
        case ROF_REJECT_WRONG_TENANT:
            return {Code::unauthenticated, "ROF_REJECT_WRONG_TENANT",
                    "the session belongs to another tenant"};
        case ROF_REJECT_IN_USE:
            return {Code::failed_precondition, "ROF_REJECT_IN_USE",
                    "the session is connected already"};
        case ROF_REJECT_NO_TENANT:
            return {Code::failed_precondition, "ROF_REJECT_NO_TENANT", "the tenant is gone"};
        case ROF_REJECT_QUOTA:
            return {Code::resource_exhausted, "ROF_REJECT_QUOTA",
                    "the tenant's session quota is reached"};
        case ROF_REJECT_NO_REGION:
            return {Code::failed_precondition, "ROF_REJECT_NO_REGION", "a granted region is gone"};
        case ROF_REJECT_RESOURCES:
            return {Code::unavailable, "ROF_REJECT_RESOURCES",
                    "the server is out of QP, CQ, MR or memory resources"};
        case ROF_REJECT_DEVICE:
            return {Code::unavailable, "ROF_REJECT_DEVICE", "the RDMA device is going away"};
        default:
            return {Code::unknown, "ROF_REJECT_?", "unknown reason"};
    }
}

Error reject_error(std::uint32_t session, std::uint32_t reason) {
    RejectInfo r = reject_info(reason);
    std::string name = r.name;
    if (r.code == Code::unknown) {
        name = "reason " + std::to_string(reason);
    }
    return Error(r.code, "session " + std::to_string(session) +
                             ": connect refused by rof.ko: " + r.text + " (" + name + ")");
}

const char* status_name(std::uint32_t status) noexcept {
    switch (status) {
        case ROF_ST_OK:
            return "ROF_ST_OK";
        case ROF_ST_BAD_OPCODE:
            return "ROF_ST_BAD_OPCODE";
        case ROF_ST_BAD_LENGTH:
            return "ROF_ST_BAD_LENGTH";
        case ROF_ST_BAD_FLAGS:
            return "ROF_ST_BAD_FLAGS";
        case ROF_ST_NO_PROGRAM:
            return "ROF_ST_NO_PROGRAM";
        case ROF_ST_PROG_FAULT:
            return "ROF_ST_PROG_FAULT";
        case ROF_ST_PROG_REVOKED:
            return "ROF_ST_PROG_REVOKED";
        case ROF_ST_BAD_ARGS:
            return "ROF_ST_BAD_ARGS";
        case ROF_ST_NO_MEMORY:
            return "ROF_ST_NO_MEMORY";
        case ROF_ST_MSG_SIZE:
            return "ROF_ST_MSG_SIZE";
        default:
            return "ROF_ST_?";
    }
}

const char* exec_status_name(std::uint32_t s) noexcept {
    static const char* const names[] = {
        "OK",      "EINSN",      "EPC",     "EBUDGET",  "EBOUNDS", "EPTR",
        "EACCESS", "ESLOT",      "EALIGN",  "EDIVZERO", "ELEN",    "EFREELIST",
        "EFREE",   "ECONTENDED", "ENOLOCK", "EARGS",    "EINVAL",
    };
    static_assert(sizeof(names) / sizeof(names[0]) == ROF_ISA_STATUS_COUNT);
    return s < ROF_ISA_STATUS_COUNT ? names[s] : "E?";
}

Code status_code(std::uint32_t status) noexcept {
    switch (status) {
        case ROF_ST_OK:
            return Code::ok;
        case ROF_ST_BAD_OPCODE:
        case ROF_ST_BAD_LENGTH:
        case ROF_ST_BAD_FLAGS:
            return Code::internal;  // librof built a bad request
        case ROF_ST_NO_PROGRAM:
            return Code::not_found;
        case ROF_ST_PROG_FAULT:
            return Code::aborted;
        case ROF_ST_PROG_REVOKED:
            return Code::failed_precondition;
        case ROF_ST_BAD_ARGS:
            return Code::invalid_argument;
        case ROF_ST_NO_MEMORY:
            return Code::resource_exhausted;
        case ROF_ST_MSG_SIZE:
            return Code::failed_precondition;  // a session of larger messages runs it
        default:
            return Code::unknown;
    }
}

namespace {
std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof(b), "0x%016llx", static_cast<unsigned long long>(v));
    return b;
}
}  // namespace

std::string status_message(std::uint32_t session, std::uint32_t status, std::uint64_t tag,
                           std::uint32_t exec_status, std::uint32_t fault_pc) {
    std::string s = "session " + std::to_string(session) + ": ";
    std::string prog = "program " + hex(tag);
    switch (status) {
        case ROF_ST_NO_PROGRAM:
            s += prog + " is not loaded for the session's tenant";
            break;
        case ROF_ST_PROG_FAULT:
            s += prog + " faulted: " + exec_status_name(exec_status) + " at pc " +
                 std::to_string(fault_pc);
            break;
        case ROF_ST_PROG_REVOKED:
            s += prog + " is revoked: a region it is bound to was destroyed";
            break;
        case ROF_ST_BAD_ARGS:
            s += prog + ": the arguments' length is outside the program's [args_min, args_max]";
            break;
        case ROF_ST_NO_MEMORY:
            s += prog + ": the session's scratch could not be allocated";
            break;
        case ROF_ST_MSG_SIZE:
            s += prog + ": its resp_max does not fit the session's messages (msg_size)";
            break;
        default:
            s += "request refused by rof.ko";
            break;
    }
    return s + " (" + status_name(status) + ")";
}

Code check_access(std::uint32_t session, const RegionEntry& r, std::uint64_t offset,
                  std::uint64_t len, Access need, std::string* why) {
    // The fast path builds no string: messages only on failure.
    const char* verb = need == Access::read ? "read" : need == Access::write ? "write" : "atomic";
    auto head = [&] {
        return "session " + std::to_string(session) + ": region '" + r.name + "': ";
    };
    if (!(r.access & static_cast<std::uint32_t>(need))) {
        *why = head() + verb + " access is not granted";
        return Code::permission_denied;
    }
    if (len == 0) {
        *why = head() + verb + " of 0 bytes";
        return Code::invalid_argument;
    }
    if (offset > r.length || len > r.length - offset) {
        *why = head() + verb + " of " + std::to_string(len) + " bytes at offset " +
               std::to_string(offset) + " is outside its " + std::to_string(r.length) + " bytes";
        return Code::out_of_range;
    }
    if (need == Access::atomic && (offset % 8 || len != 8)) {
        *why = head() + "atomic at offset " + std::to_string(offset) + " is not 8-byte aligned";
        return Code::invalid_argument;
    }
    return Code::ok;
}

void ProgramNames::set_lookup(Lookup lookup) {
    std::lock_guard lk(mu_);
    lookup_ = std::move(lookup);
}

void ProgramNames::learn(const std::vector<std::pair<std::string, std::uint64_t>>& programs) {
    std::map<std::string, std::uint64_t, std::less<>> tags;
    for (const auto& [name, tag] : programs) {
        tags.emplace(name, tag);  // the first of a name, as rofd's lookup by name
    }
    std::lock_guard lk(mu_);
    tags_ = std::move(tags);
}

// The lookup's answer, remembered.  Two threads may look up one name at
// once; both ask rofd, and the later answer stays.
std::uint64_t ProgramNames::look_up(std::string_view name) {
    Lookup lookup;
    {
        std::lock_guard lk(mu_);
        lookup = lookup_;
    }
    const std::uint64_t tag = lookup(std::string(name));
    std::lock_guard lk(mu_);
    tags_.insert_or_assign(std::string(name), tag);
    return tag;
}

std::uint64_t ProgramNames::tag(std::uint32_t session, std::string_view name) {
    {
        std::lock_guard lk(mu_);
        if (auto it = tags_.find(name); it != tags_.end()) {
            return it->second;
        }
        if (!lookup_) {
            throw Error(Code::not_found, "session " + std::to_string(session) + ": no program '" +
                                             std::string(name) +
                                             "' known: the session was connected from a ticket; "
                                             "learn_programs() first, or invoke by tag");
        }
    }
    return look_up(name);  // outside the lock: a call to rofd
}

std::optional<std::uint64_t> ProgramNames::relearn(std::string_view name, std::uint64_t stale) {
    {
        std::lock_guard lk(mu_);
        if (!lookup_) {
            return std::nullopt;
        }
        auto it = tags_.find(name);
        if (it != tags_.end() && it->second != stale) {
            return it->second;  // another thread learned it meanwhile
        }
    }
    const std::uint64_t now = look_up(name);
    if (now == stale) {
        return std::nullopt;
    }
    return now;
}

bool parse_address(const std::string& addr, std::uint16_t port, SockAddr* out, std::string* why) {
    std::string host = addr;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string serv = std::to_string(port);
    int rc = getaddrinfo(host.c_str(), serv.c_str(), &hints, &res);
    if (rc != 0 || !res) {
        *why = "'" + addr + "' is not an IPv4 or IPv6 address";
        return false;
    }
    if (res->ai_addrlen > sizeof(out->storage)) {
        freeaddrinfo(res);
        *why = "address too long";
        return false;
    }
    std::memcpy(out->storage, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    out->family = res->ai_family;
    freeaddrinfo(res);
    return true;
}

std::string format_peer(const SockAddr& a) {
    char buf[INET6_ADDRSTRLEN + 1] = {};
    if (a.family == AF_INET6) {
        sockaddr_in6 s{};
        std::memcpy(&s, a.storage, sizeof(s));
        inet_ntop(AF_INET6, &s.sin6_addr, buf, sizeof(buf));
        std::string h = buf;
        if (s.sin6_scope_id) {
            char ifn[IF_NAMESIZE + 1] = {};
            if (if_indextoname(s.sin6_scope_id, ifn)) {
                h += std::string("%") + ifn;
            }
        }
        return "[" + h + "]:" + std::to_string(ntohs(s.sin6_port));
    }
    sockaddr_in s{};
    std::memcpy(&s, a.storage, sizeof(s));
    inet_ntop(AF_INET, &s.sin_addr, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(ntohs(s.sin_port));
}

}  // namespace rof::detail
