// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <iterator>
#include <map>
#include <system_error>
#include <vector>

#include "kmod.h"
#include "kmod_list.h"
#include "status_map.h"
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
        FAIL() << "ROF_IOC_DEVICE_LIST succeeded on a regular file";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), ENOTTY);
        EXPECT_EQ(std::string(e.what()),
                  path + ": ROF_IOC_DEVICE_LIST: Inappropriate ioctl for device");
    }
    // The ABI minor is no error: a module that cannot say has none past 0.
    EXPECT_EQ(kmod.abi_minor(), 0U);
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
        {"ROF_IOC_TENANT_LIST", [&] { kmod.list_tenants(); }},
        {"ROF_IOC_TENANT_GET", [&] { kmod.get_tenant(1); }},
        {"ROF_IOC_REGION_DESTROY", [&] { kmod.region_destroy(1, true); }},
        {"ROF_IOC_SESSION_LIST", [&] { kmod.list_sessions(); }},
        {"ROF_IOC_PROG_GET", [&] { kmod.get_prog(1, 2); }},
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

// A module older than ABI 0.4 has no ROF_IOC_PROG_REPLACE: the error says
// so, and is the operator's to fix (FAILED_PRECONDITION), not rofd's.
TEST(Kmod, ReplaceOnAModuleWithoutItSaysWhatToDo) {
    rofd::test::TempDir dir;
    const std::string path = dir.regular_file("rof");
    rofd::Kmod kmod(path);
    rof_prog_load load{};
    const std::vector<std::uint8_t> image(64, 0);
    try {
        kmod.prog_replace(load, image, 0x1234);
        FAIL() << "ROF_IOC_PROG_REPLACE succeeded on a regular file";
    } catch (const rofd::KmodError& e) {
        EXPECT_EQ(e.code().value(), EOPNOTSUPP);
        EXPECT_EQ(std::string(e.what()), path +
                                             ": ROF_IOC_PROG_REPLACE: the loaded rof.ko "
                                             "predates program replace (ABI 0.4); reload it: "
                                             "Operation not supported");
        EXPECT_EQ(rofd::module_status_code(EOPNOTSUPP), grpc::StatusCode::FAILED_PRECONDITION);
    }
    EXPECT_EQ(load.image_len, image.size());
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

// --- the LIST loop (list_objects) against a module in memory ----------

struct Elem {
    std::uint32_t id;
    std::uint32_t value;
};

// A LIST command as rof_list_ioctl() answers it: the objects of id >=
// start (ROF_LIST_FROM) or all, in id order.  @between runs before each
// call (objects coming and going); an old module (from = false) refuses
// the flag as it refuses any unknown one.
struct FakeList {
    std::map<std::uint32_t, std::uint32_t> objects;  // id -> value
    bool from = true;
    std::function<void(int call)> between;
    int calls = 0;
    std::vector<std::uint32_t> capacities;

    int operator()(rof_list& req) {
        if (between) {
            between(calls);
        }
        calls++;
        capacities.push_back(req.capacity);
        const std::uint32_t known = from ? ROF_LIST_FROM : 0;
        if ((req.flags & ~known) != 0 || ((req.flags & ROF_LIST_FROM) == 0 && req.start != 0) ||
            req.elem_size != sizeof(Elem)) {
            return EINVAL;
        }
        if (req.capacity > ROF_LIST_MAX) {
            return E2BIG;
        }
        auto it = objects.lower_bound(req.start);
        const auto total = static_cast<std::uint32_t>(std::distance(it, objects.end()));
        auto* out = reinterpret_cast<Elem*>(static_cast<std::uintptr_t>(req.elems));
        std::uint32_t n = 0;
        for (; it != objects.end() && n < req.capacity; ++it, n++) {
            out[n] = Elem{it->first, it->second};
            if ((req.flags & ROF_LIST_FROM) != 0) {
                req.start = it->first + 1;
            }
        }
        req.count = n;
        req.total = total;
        return 0;
    }
};

[[noreturn]] void list_fail(int err, const std::string& detail) {
    throw std::system_error(err, std::generic_category(), detail);
}

std::vector<Elem> list_with(FakeList& m, bool paged) {
    return rofd::list_objects<Elem>([&](rof_list& r) { return m(r); }, list_fail, paged);
}

// Three full pages and a part: every object once, in id order, no page
// beyond ROF_LIST_MAX (issue 28: E2BIG past 65,536 objects broke rofd).
TEST(KmodList, PagesListEveryObjectPastListMax) {
    FakeList m;
    const std::uint32_t n = 3 * ROF_LIST_MAX + 1234;
    for (std::uint32_t i = 0; i < n; i++) {
        m.objects[2 * i + 1] = i;  // ids with holes
    }
    const auto got = list_with(m, true);
    ASSERT_EQ(got.size(), n);
    for (std::uint32_t i = 0; i < n; i++) {
        ASSERT_EQ(got[i].id, 2 * i + 1) << i;
        ASSERT_EQ(got[i].value, i) << i;
    }
    EXPECT_EQ(m.calls, 5);  // a sizing call, then 4 pages
    for (const auto c : m.capacities) {
        EXPECT_LE(c, static_cast<std::uint32_t>(ROF_LIST_MAX));
    }
}

// What exists throughout is listed once; what comes or goes meanwhile
// may or may not be, never twice.
TEST(KmodList, PagesUnderCreateAndDestroy) {
    FakeList m;
    for (std::uint32_t i = 1; i <= 200000; i++) {
        m.objects[i] = i;
    }
    std::uint32_t next = 200001;
    m.between = [&](int call) {
        if (call == 0) {
            return;
        }
        // Destroy 1000 low ones already listed and 1000 high ones not yet
        // listed, create 5000 new ones.
        for (std::uint32_t i = 0; i < 1000; i++) {
            m.objects.erase(static_cast<std::uint32_t>(call) * 1000 + i);
            m.objects.erase(200000 - static_cast<std::uint32_t>(call) * 1000 - i);
        }
        for (std::uint32_t i = 0; i < 5000; i++) {
            m.objects[next] = next;
            next++;
        }
    };
    const auto got = list_with(m, true);
    std::map<std::uint32_t, int> seen;
    for (std::size_t i = 0; i < got.size(); i++) {
        seen[got[i].id]++;
        if (i != 0) {
            ASSERT_LT(got[i - 1].id, got[i].id);
        }
    }
    for (const auto& [id, count] : seen) {
        ASSERT_EQ(count, 1) << id;
    }
    for (const auto& [id, value] : m.objects) {
        if (id <= 200000) {  // never destroyed: there throughout
            ASSERT_EQ(seen.count(id), 1u) << id;
        }
    }
    EXPECT_GT(got.size(), 200000u - 2 * 1000u * static_cast<std::uint32_t>(m.calls));
}

// A module of ABI 0.2 refuses ROF_LIST_FROM: Kmod lists it the old way,
// which works up to ROF_LIST_MAX objects and is E2BIG past it.
TEST(KmodList, UnpagedAsBeforeForAnOldModule) {
    FakeList m;
    m.from = false;
    for (std::uint32_t i = 1; i <= 1000; i++) {
        m.objects[i] = i;
    }
    EXPECT_EQ(list_with(m, false).size(), 1000u);
    EXPECT_EQ(m.calls, 2);
    EXPECT_THROW(list_with(m, true), std::system_error);  // EINVAL: no paging there
    for (std::uint32_t i = 1001; i <= ROF_LIST_MAX + 1; i++) {
        m.objects[i] = i;
    }
    try {
        list_with(m, false);
        FAIL() << "listed more than ROF_LIST_MAX unpaged";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), E2BIG);
    }
}

// A module whose pages do not move on fails the list, not rofd's thread.
TEST(KmodList, PageThatDoesNotAdvanceIsEproto) {
    FakeList m;
    for (std::uint32_t i = 1; i <= 10; i++) {
        m.objects[i] = i;
    }
    auto stuck = [&](rof_list& r) {
        const std::uint32_t start = r.start;
        const int err = m(r);
        r.count = std::min<std::uint32_t>(r.count, 1);
        r.start = start;
        return err;
    };
    try {
        rofd::list_objects<Elem>(stuck, list_fail, true);
        FAIL() << "a stuck module was paged";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EPROTO);
    }
}

}  // namespace
