// SPDX-License-Identifier: MIT
#include "status_map.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace {

using grpc::StatusCode;
using rofd::KmodError;
using rofd::module_status;
using rofd::module_status_code;

TEST(StatusMap, TheTable) {
    EXPECT_EQ(module_status_code(ENOENT), StatusCode::NOT_FOUND);
    EXPECT_EQ(module_status_code(ENXIO), StatusCode::NOT_FOUND);
    EXPECT_EQ(module_status_code(EEXIST), StatusCode::ALREADY_EXISTS);
    for (const int err : {EDQUOT, ENOSPC, ENOMEM, EMFILE}) {
        EXPECT_EQ(module_status_code(err), StatusCode::RESOURCE_EXHAUSTED) << err;
    }
    for (const int err : {EBUSY, ENOTEMPTY, EADDRINUSE, ENOKEY}) {
        EXPECT_EQ(module_status_code(err), StatusCode::FAILED_PRECONDITION) << err;
    }
    for (const int err : {EINVAL, E2BIG, ERANGE, ETIME, ENOEXEC, EBADMSG, EFBIG, EXDEV}) {
        EXPECT_EQ(module_status_code(err), StatusCode::INVALID_ARGUMENT) << err;
    }
    EXPECT_EQ(module_status_code(EACCES), StatusCode::PERMISSION_DENIED);
    for (const int err : {ENODEV, EAGAIN, EINTR}) {
        EXPECT_EQ(module_status_code(err), StatusCode::UNAVAILABLE) << err;
    }
    for (const int err : {EPERM, ENOTTY, EFAULT, EPROTO, 0, 9999}) {
        EXPECT_EQ(module_status_code(err), StatusCode::INTERNAL) << err;
    }
}

TEST(StatusMap, CallersErrorsGetAHumanReason) {
    const auto st = module_status(KmodError(EDQUOT, "/dev/rof: ROF_IOC_REGION_CREATE"),
                                  "tenant \"kv\": region \"table\"");
    EXPECT_EQ(st.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(st.error_message(), "tenant \"kv\": region \"table\": quota exceeded");

    const auto nf = module_status(KmodError(ENOENT, "/dev/rof: ROF_IOC_TENANT_GET"), "tenant 7");
    EXPECT_EQ(nf.error_code(), StatusCode::NOT_FOUND);
    EXPECT_EQ(nf.error_message(), "tenant 7: not found");
}

// rofd's own trouble carries the device, the command and errno, for the
// operator; EPERM says what rofd lacks.
TEST(StatusMap, InternalErrorsKeepTheModuleText) {
    const auto st =
        module_status(KmodError(EPERM, "/dev/rof: ROF_IOC_TENANT_CREATE"), "tenant \"kv\"");
    EXPECT_EQ(st.error_code(), StatusCode::INTERNAL);
    EXPECT_EQ(st.error_message(),
              "tenant \"kv\": rofd lacks CAP_SYS_ADMIN: /dev/rof: ROF_IOC_TENANT_CREATE: "
              "Operation not permitted");

    const auto un = module_status(KmodError(ENODEV, "/dev/rof: ROF_IOC_VERSION"), "");
    EXPECT_EQ(un.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_EQ(un.error_message(), "/dev/rof: ROF_IOC_VERSION: No such device");
}

}  // namespace
