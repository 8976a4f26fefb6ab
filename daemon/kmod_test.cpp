// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cerrno>

#include "kmod.h"
#include "test_util.h"

namespace {

TEST(Kmod, MissingDeviceNamesThePathAndTheReason) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rof");

    try {
        rofd::Kmod kmod(path);
        FAIL() << "opened a missing device";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), ENOENT);
        EXPECT_EQ(std::string(e.what()), "cannot open " + path + ": No such file or directory");
    }
}

// Each ioctl failure carries the device path, the command name and errno.
TEST(Kmod, IoctlFailureNamesTheCommand) {
    rofd::test::TempDir dir;
    const std::string path = dir.regular_file("rof");
    rofd::Kmod kmod(path);

    try {
        kmod.version();
        FAIL() << "ROF_IOC_VERSION succeeded on a regular file";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), ENOTTY);
        EXPECT_EQ(std::string(e.what()),
                  path + ": ROF_IOC_VERSION: Inappropriate ioctl for device");
    }
    try {
        kmod.list_devices();
        FAIL() << "ROF_IOC_LIST_DEVICES succeeded on a regular file";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), ENOTTY);
        EXPECT_EQ(std::string(e.what()),
                  path + ": ROF_IOC_LIST_DEVICES: Inappropriate ioctl for device");
    }
}

}  // namespace
