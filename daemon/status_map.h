// SPDX-License-Identifier: MIT
// The one table from the module's errnos to gRPC status codes.
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "module.h"

namespace rofd {

// The gRPC status of a module error, with the message "<context>: <reason>"
// (just "<reason>" for an empty @context).  @context names what the call
// was about, e.g. `tenant "kv": region "table"`.
//
// Errors that are the caller's (a bad argument, a missing or existing
// object, a quota, a busy object) get a code saying so and a short human
// reason ("quota exceeded"), per docs/kmod.md.  Errors that are rofd's or
// the module's get INTERNAL or UNAVAILABLE and the full KmodError text
// (device, command, strerror), which is what an operator needs:
//  - EPERM (and EFAULT, ENOTTY, ...) is INTERNAL, not PERMISSION_DENIED: the
//    module refuses rofd, which lacks CAP_SYS_ADMIN; the client asked for
//    nothing it may not have, and must not be told it did.
//  - EACCES is PERMISSION_DENIED: the module uses it for a grant or a
//    program slot asking for more than a region's access.
//  - ENXIO is NOT_FOUND, not UNAVAILABLE: from the control commands it means
//    a granted or bound region or free list does not exist or is not the
//    tenant's (docs/kmod.md 8.7, 9.6); retrying would not help.
grpc::Status module_status(const KmodError& e, std::string_view context);

// The code alone, for the tests.
grpc::StatusCode module_status_code(int err);

}  // namespace rofd
