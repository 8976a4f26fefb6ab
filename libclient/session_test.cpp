// SPDX-License-Identifier: MIT
// rof::Session's device-independent parts (session_internal.h).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "session_internal.h"
#include "uapi/rof.h"
#include "uapi/rof_isa.h"

namespace {

using rof::Code;
using namespace rof::detail;

TEST(RejectError, NamesTheSessionTheReasonAndItsConstant) {
    rof::Error e = reject_error(5, ROF_REJECT_EXPIRED);
    EXPECT_STREQ(e.what(),
                 "session 5: connect refused by rof.ko: ticket expired (ROF_REJECT_EXPIRED)");
    EXPECT_EQ(e.code(), Code::unauthenticated);
}

TEST(RejectError, CodesFollowWhatTheCallerCanDo) {
    EXPECT_EQ(reject_info(ROF_REJECT_NO_TICKET).code, Code::unauthenticated);
    EXPECT_EQ(reject_info(ROF_REJECT_VERSION).code, Code::unauthenticated);
    EXPECT_EQ(reject_info(ROF_REJECT_BAD_MAC).code, Code::unauthenticated);
    EXPECT_EQ(reject_info(ROF_REJECT_WRONG_TENANT).code, Code::unauthenticated);
    EXPECT_EQ(reject_info(ROF_REJECT_NO_SESSION).code, Code::failed_precondition);
    EXPECT_EQ(reject_info(ROF_REJECT_IN_USE).code, Code::failed_precondition);
    EXPECT_EQ(reject_info(ROF_REJECT_NO_TENANT).code, Code::failed_precondition);
    EXPECT_EQ(reject_info(ROF_REJECT_NO_REGION).code, Code::failed_precondition);
    EXPECT_EQ(reject_info(ROF_REJECT_QUOTA).code, Code::resource_exhausted);
    EXPECT_EQ(reject_info(ROF_REJECT_NO_KEY).code, Code::unavailable);
    EXPECT_EQ(reject_info(ROF_REJECT_RESOURCES).code, Code::unavailable);
    EXPECT_EQ(reject_info(ROF_REJECT_DEVICE).code, Code::unavailable);
}

TEST(RejectError, EveryReasonHasItsOwnName) {
    for (std::uint32_t r = ROF_REJECT_NO_TICKET; r <= ROF_REJECT_DEVICE; r++) {
        std::string name = reject_info(r).name;
        EXPECT_EQ(name.rfind("ROF_REJECT_", 0), 0u) << r;
        EXPECT_NE(name, "ROF_REJECT_?") << r;
        for (std::uint32_t q = ROF_REJECT_NO_TICKET; q < r; q++) {
            EXPECT_NE(name, reject_info(q).name);
        }
    }
}

TEST(RejectError, AnUnknownReasonSaysItsNumber) {
    rof::Error e = reject_error(9, 77);
    EXPECT_EQ(e.code(), Code::unknown);
    EXPECT_NE(std::string(e.what()).find("reason 77"), std::string::npos) << e.what();
}

TEST(StatusMessage, AFaultNamesTheExecStatusAndPc) {
    std::string m = status_message(3, ROF_ST_PROG_FAULT, 0x1234, ROF_ISA_EPTR, 7);
    EXPECT_EQ(m, "session 3: program 0x0000000000001234 faulted: EPTR at pc 7 (ROF_ST_PROG_FAULT)");
    EXPECT_EQ(status_code(ROF_ST_PROG_FAULT), Code::aborted);
}

TEST(StatusMessage, CodesOfTheOtherStatuses) {
    EXPECT_EQ(status_code(ROF_ST_OK), Code::ok);
    EXPECT_EQ(status_code(ROF_ST_NO_PROGRAM), Code::not_found);
    EXPECT_EQ(status_code(ROF_ST_PROG_REVOKED), Code::failed_precondition);
    EXPECT_EQ(status_code(ROF_ST_BAD_ARGS), Code::invalid_argument);
    EXPECT_EQ(status_code(ROF_ST_NO_MEMORY), Code::resource_exhausted);
    EXPECT_EQ(status_code(ROF_ST_MSG_SIZE), Code::failed_precondition);
    EXPECT_EQ(status_code(ROF_ST_BAD_OPCODE), Code::internal);
    EXPECT_EQ(status_code(99), Code::unknown);
    EXPECT_NE(status_message(1, ROF_ST_NO_PROGRAM, 1, 0, 0).find("not loaded"), std::string::npos);
}

TEST(ExecStatusName, CoversTheEnum) {
    EXPECT_STREQ(exec_status_name(ROF_ISA_OK), "OK");
    EXPECT_STREQ(exec_status_name(ROF_ISA_EBOUNDS), "EBOUNDS");
    EXPECT_STREQ(exec_status_name(ROF_ISA_EINVAL), "EINVAL");
    EXPECT_STREQ(exec_status_name(ROF_ISA_STATUS_COUNT), "E?");
}

RegionEntry region(std::uint32_t access, std::uint64_t length = 4096) {
    RegionEntry r;
    r.name = "table";
    r.access = access;
    r.length = length;
    return r;
}

TEST(CheckAccess, InsideTheRegionWithTheRightIsOk) {
    std::string why;
    EXPECT_EQ(check_access(1, region(ROF_ACCESS_READ), 0, 4096, Access::read, &why), Code::ok);
    EXPECT_EQ(check_access(1, region(ROF_ACCESS_WRITE), 4088, 8, Access::write, &why), Code::ok);
    EXPECT_EQ(check_access(1, region(ROF_ACCESS_ATOMIC), 8, 8, Access::atomic, &why), Code::ok);
}

TEST(CheckAccess, MissingRightIsPermissionDenied) {
    std::string why;
    EXPECT_EQ(check_access(4, region(ROF_ACCESS_READ), 0, 8, Access::write, &why),
              Code::permission_denied);
    EXPECT_EQ(why, "session 4: region 'table': write access is not granted");
    EXPECT_EQ(
        check_access(4, region(ROF_ACCESS_READ | ROF_ACCESS_WRITE), 0, 8, Access::atomic, &why),
        Code::permission_denied);
}

TEST(CheckAccess, OutsideTheRegionIsOutOfRange) {
    std::string why;
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), 4090, 8, Access::read, &why),
              Code::out_of_range);
    EXPECT_EQ(why,
              "session 2: region 'table': read of 8 bytes at offset 4090 is outside its 4096 "
              "bytes");
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), 4097, 1, Access::read, &why),
              Code::out_of_range);
    // No wrap-around.
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), ~0ull - 2, 8, Access::write, &why),
              Code::out_of_range);
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), 8, ~0ull, Access::read, &why),
              Code::out_of_range);
}

TEST(CheckAccess, MisalignedAtomicAndEmptyTransferAreInvalid) {
    std::string why;
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), 4, 8, Access::atomic, &why),
              Code::invalid_argument);
    EXPECT_EQ(check_access(2, region(ROF_ACCESS_ALL), 0, 0, Access::read, &why),
              Code::invalid_argument);
}

TEST(ParseAddress, IPv4AndIPv6Literals) {
    SockAddr a;
    std::string why;
    ASSERT_TRUE(parse_address("198.18.0.1", 18515, &a, &why)) << why;
    EXPECT_EQ(a.family, AF_INET);
    EXPECT_EQ(format_peer(a), "198.18.0.1:18515");
    ASSERT_TRUE(parse_address("fd00:18::1", 18515, &a, &why)) << why;
    EXPECT_EQ(a.family, AF_INET6);
    EXPECT_EQ(format_peer(a), "[fd00:18::1]:18515");
    ASSERT_TRUE(parse_address("[::1]", 7, &a, &why)) << why;
    EXPECT_EQ(format_peer(a), "[::1]:7");
}

TEST(ParseAddress, NamesAreRefused) {
    SockAddr a;
    std::string why;
    EXPECT_FALSE(parse_address("localhost", 1, &a, &why));
    EXPECT_EQ(why, "'localhost' is not an IPv4 or IPv6 address");
    EXPECT_FALSE(parse_address("", 1, &a, &why));
}

// A lookup over a table the test changes, counting what it was asked.
struct FakeRofd {
    std::map<std::string, std::uint64_t> loaded;
    std::vector<std::string> asked;
    ProgramNames::Lookup lookup() {
        return [this](const std::string& name) {
            asked.push_back(name);
            auto it = loaded.find(name);
            if (it == loaded.end()) {
                throw rof::Error(Code::not_found, "GetProgram: no program '" + name + "'");
            }
            return it->second;
        };
    }
};

TEST(ProgramNames, ANameIsLookedUpWhenFirstUsedThenKnown) {
    FakeRofd rofd;
    rofd.loaded = {{"kv-get", 0x11}, {"kv-put", 0x22}};
    ProgramNames n;
    n.set_lookup(rofd.lookup());
    EXPECT_TRUE(rofd.asked.empty());  // nothing asked before a name is used
    EXPECT_EQ(n.tag(1, "kv-get"), 0x11u);
    EXPECT_EQ(n.tag(1, "kv-get"), 0x11u);
    EXPECT_EQ(n.tag(1, "kv-put"), 0x22u);
    EXPECT_EQ(rofd.asked, (std::vector<std::string>{"kv-get", "kv-put"}));
}

TEST(ProgramNames, AFailedLookupIsTheCallersErrorAndIsNotRemembered) {
    FakeRofd rofd;
    ProgramNames n;
    n.set_lookup(rofd.lookup());
    try {
        n.tag(1, "kv-get");
        FAIL() << "no error";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), Code::not_found);
        EXPECT_STREQ(e.what(), "GetProgram: no program 'kv-get'");
    }
    rofd.loaded["kv-get"] = 0x11;  // loaded afterwards (or rofd was restarting)
    EXPECT_EQ(n.tag(1, "kv-get"), 0x11u);
}

TEST(ProgramNames, WithoutALookupOnlyLearnedNamesAreKnown) {
    ProgramNames n;
    n.learn({{"kv-get", 0x11}, {"kv-get", 0x99}, {"crc", 0x33}});
    EXPECT_EQ(n.tag(7, "kv-get"), 0x11u);  // the first of a name, as rofd's GetProgram
    EXPECT_EQ(n.tag(7, "crc"), 0x33u);
    try {
        n.tag(7, "kv-put");
        FAIL() << "no error";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), Code::not_found);
        EXPECT_NE(std::string(e.what()).find("session 7: no program 'kv-put' known"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("learn_programs()"), std::string::npos) << e.what();
    }
    EXPECT_EQ(n.relearn("kv-get", 0x11), std::nullopt);  // no rofd to ask
}

TEST(ProgramNames, AStaleTagIsRelearnedOnceTheNameNamesAnotherProgram) {
    FakeRofd rofd;
    rofd.loaded = {{"kv-get", 0x11}};
    ProgramNames n;
    n.set_lookup(rofd.lookup());
    ASSERT_EQ(n.tag(1, "kv-get"), 0x11u);
    // Not replaced: the same tag, so the "no program" answer stands.
    EXPECT_EQ(n.relearn("kv-get", 0x11), std::nullopt);
    // Replaced: the name's tag now, remembered.
    rofd.loaded["kv-get"] = 0x12;
    EXPECT_EQ(n.relearn("kv-get", 0x11), std::optional<std::uint64_t>(0x12));
    EXPECT_EQ(n.tag(1, "kv-get"), 0x12u);
    // A second caller with the same stale tag takes the new one without asking.
    const auto asked = rofd.asked.size();
    EXPECT_EQ(n.relearn("kv-get", 0x11), std::optional<std::uint64_t>(0x12));
    EXPECT_EQ(rofd.asked.size(), asked);
    // Unloaded: the lookup's error is the caller's.
    rofd.loaded.clear();
    EXPECT_THROW(n.relearn("kv-get", 0x12), rof::Error);
}

TEST(ProgramNames, LearnReplacesWhatWasKnown) {
    FakeRofd rofd;
    rofd.loaded = {{"a", 1}, {"b", 2}};
    ProgramNames n;
    n.set_lookup(rofd.lookup());
    EXPECT_EQ(n.tag(1, "a"), 1u);
    n.learn({{"a", 5}});
    EXPECT_EQ(n.tag(1, "a"), 5u);
    EXPECT_EQ(n.tag(1, "b"), 2u);  // not listed: looked up
    EXPECT_EQ(rofd.asked, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
