// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <vector>

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

// Every Module method reaches the device through the same checked ioctl,
// LIST and GET helpers: a GET's non-ENOENT error throws, it is no nullopt.
TEST(Kmod, EveryCommandNamesItself) {
    rofd::test::TempDir dir;
    const std::string path = dir.regular_file("rof");
    rofd::Kmod kmod(path);
    rof_prog_load load{};
    const std::vector<std::uint8_t> image(64, 0);
    rof_session_prepare prep{};

    const std::vector<std::pair<std::string, std::function<void()>>> calls = {
        {"ROF_IOC_TENANT_CREATE", [&] { kmod.tenant_create("kv", 0); }},
        {"ROF_IOC_LIST_TENANTS", [&] { kmod.list_tenants(); }},
        {"ROF_IOC_GET_TENANT", [&] { kmod.get_tenant(1); }},
        {"ROF_IOC_REGION_DESTROY", [&] { kmod.region_destroy(1, true); }},
        {"ROF_IOC_LIST_SESSIONS", [&] { kmod.list_sessions(); }},
        {"ROF_IOC_GET_PROG", [&] { kmod.get_prog(1, 2); }},
        {"ROF_IOC_PROG_LOAD", [&] { kmod.prog_load(load, image); }},
        {"ROF_IOC_SESSION_PREPARE", [&] { kmod.session_prepare(prep); }},
        {"ROF_IOC_AUDIT_OPEN", [&] { kmod.audit_open(true); }},
        {"ROF_IOC_AUDIT_STATS", [&] { kmod.audit_stats(); }},
    };
    for (const auto& [name, call] : calls) {
        try {
            call();
            ADD_FAILURE() << name << " succeeded on a regular file";
        } catch (const rofd::KmodError& e) {
            EXPECT_EQ(e.code().value(), ENOTTY) << name;
            EXPECT_EQ(std::string(e.what()),
                      path + ": " + name + ": Inappropriate ioctl for device");
        }
    }
    EXPECT_EQ(load.image_len, image.size());
    EXPECT_EQ(load.image, reinterpret_cast<std::uintptr_t>(image.data()));
}

// A name the ABI cannot carry never reaches the module.
TEST(Kmod, NameTooLongIsEinval) {
    rofd::test::TempDir dir;
    const std::string path = dir.regular_file("rof");
    rofd::Kmod kmod(path);

    try {
        kmod.tenant_create(std::string(ROF_NAME_MAX, 'a'), 0);
        FAIL() << "a 64-character name was passed on";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), EINVAL);
        EXPECT_EQ(std::string(e.what()),
                  path + ": ROF_IOC_TENANT_CREATE: bad name: Invalid argument");
    }
}

}  // namespace
