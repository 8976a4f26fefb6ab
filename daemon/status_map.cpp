// SPDX-License-Identifier: MIT
#include "status_map.h"

#include <cerrno>
#include <string>

namespace rofd {
namespace {

struct Entry {
    grpc::StatusCode code;
    // The reason told to the client; nullptr: the full KmodError text.
    const char* reason;
};

Entry lookup(int err) {
    using C = grpc::StatusCode;

    switch (err) {
        case ENOENT:
            return {C::NOT_FOUND, "not found"};
        case ENXIO:
            return {C::NOT_FOUND, "no such region or free list of the tenant"};
        case EEXIST:
            return {C::ALREADY_EXISTS, "already exists"};
        case EDQUOT:
            return {C::RESOURCE_EXHAUSTED, "quota exceeded"};
        case ENOSPC:
            return {C::RESOURCE_EXHAUSTED, "no free id or token left"};
        case ENOMEM:
            return {C::RESOURCE_EXHAUSTED, "out of memory"};
        case EMFILE:
            return {C::RESOURCE_EXHAUSTED,
                    "too many sessions waiting to connect (rof.ko max_prepared_sessions)"};
        case EBUSY:
            return {C::FAILED_PRECONDITION, "in use"};
        case ENOTEMPTY:
            return {C::FAILED_PRECONDITION, "still owns regions, sessions or programs"};
        case EADDRINUSE:
            return {C::FAILED_PRECONDITION, "overlaps another free list"};
        case ENOKEY:
            return {C::FAILED_PRECONDITION, "no ticket key set"};
        case EOPNOTSUPP:  // Kmod: the loaded module's ABI lacks the command
            return {C::FAILED_PRECONDITION, nullptr};
        case EINVAL:
            return {C::INVALID_ARGUMENT, "invalid argument"};
        case E2BIG:
            return {C::INVALID_ARGUMENT, "too big"};
        case ERANGE:
            return {C::INVALID_ARGUMENT, "out of range"};
        case ETIME:
            return {C::INVALID_ARGUMENT, "expiry not in the future"};
        case ENOEXEC:
            return {C::INVALID_ARGUMENT, "malformed program image"};
        case EBADMSG:
            return {C::INVALID_ARGUMENT, "program image tag does not match its contents"};
        case EFBIG:
            return {C::INVALID_ARGUMENT, "program needs more than the module gives"};
        case EXDEV:
            return {C::INVALID_ARGUMENT, "free list is in another region"};
        case EACCES:
            return {C::PERMISSION_DENIED, "more access than the region allows"};
        // The module or the device is going away, or busy: worth a retry.
        case ENODEV:
        case EAGAIN:
        case EINTR:
            return {C::UNAVAILABLE, nullptr};
        default:
            // EPERM (rofd lacks CAP_SYS_ADMIN), ENOTTY (module too old),
            // EFAULT, EPROTO and the unknown: rofd's problem, not the client's.
            return {C::INTERNAL, nullptr};
    }
}

}  // namespace

grpc::StatusCode module_status_code(int err) {
    return lookup(err).code;
}

grpc::Status module_status(const KmodError& e, std::string_view context) {
    const int err = e.code().value();
    const Entry entry = lookup(err);
    std::string msg(context);

    if (!msg.empty()) {
        msg += ": ";
    }
    if (err == EPERM) {
        msg += "rofd lacks CAP_SYS_ADMIN: ";
    }
    msg += entry.reason ? entry.reason : e.what();
    return grpc::Status(entry.code, msg);
}

}  // namespace rofd
