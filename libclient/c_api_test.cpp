// SPDX-License-Identifier: MIT
// The C API (rof.h): codes mirror rof::Code both ways, every exception
// becomes a code with its message, NULL arguments are
// ROF_INVALID_ARGUMENT, and a client call that cannot reach rofd is
// ROF_UNAVAILABLE naming the socket.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "c_api_errors.h"
#include "c_api_struct.h"
#include "rof.h"
#include "rof/error.h"
#include "test_temp_dir.h"
#include "unix_addr.h"

namespace {

using rof::Code;
using rof::capi::from_c;
using rof::capi::guard;
using rof::capi::to_c;

// A rof_error full of garbage, to see that a call overwrites it.
rof_error dirty_error() {
    rof_error err;
    err.code = ROF_DATA_LOSS;
    std::memset(err.message, 'x', sizeof(err.message) - 1);
    err.message[sizeof(err.message) - 1] = '\0';
    return err;
}

TEST(CApiCodes, EveryCodeMapsBothWaysWithTheSameName) {
    for (unsigned v = 0; v <= 16; v++) {
        const auto code = static_cast<Code>(v);
        const auto c = static_cast<rof_code>(v);
        EXPECT_EQ(to_c(code), c) << v;
        EXPECT_EQ(from_c(c), code) << v;
        EXPECT_EQ(std::string(rof_code_name(c)), std::string(rof::code_name(code))) << v;
    }
    EXPECT_EQ(to_c(Code::not_found), ROF_NOT_FOUND);
    EXPECT_EQ(to_c(Code::unauthenticated), ROF_UNAUTHENTICATED);
    EXPECT_STREQ(rof_code_name(ROF_OK), "OK");
    EXPECT_STREQ(rof_code_name(ROF_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    EXPECT_STREQ(rof_code_name(ROF_UNAUTHENTICATED), "UNAUTHENTICATED");
}

TEST(CApiCodes, ValuesOutsideTheEnumAreUnknown) {
    EXPECT_EQ(to_c(static_cast<Code>(17)), ROF_UNKNOWN);
    EXPECT_EQ(to_c(static_cast<Code>(255)), ROF_UNKNOWN);
    EXPECT_EQ(from_c(static_cast<rof_code>(17)), Code::unknown);
    EXPECT_EQ(from_c(static_cast<rof_code>(-1)), Code::unknown);
    EXPECT_STREQ(rof_code_name(static_cast<rof_code>(17)), "UNKNOWN");
    EXPECT_STREQ(rof_code_name(static_cast<rof_code>(-1)), "UNKNOWN");
}

TEST(CApiErrors, SuccessClearsTheError) {
    rof_error err = dirty_error();
    EXPECT_EQ(guard(&err, [] {}), ROF_OK);
    EXPECT_EQ(err.code, ROF_OK);
    EXPECT_STREQ(err.message, "");
}

TEST(CApiErrors, RofErrorKeepsItsCodeAndMessage) {
    for (unsigned v = 1; v <= 16; v++) {
        const auto code = static_cast<Code>(v);
        const std::string what = "region \"table\": " + std::string(rof::code_name(code));
        rof_error err = dirty_error();
        EXPECT_EQ(guard(&err, [&] { throw rof::Error(code, what); }), static_cast<rof_code>(v));
        EXPECT_EQ(err.code, static_cast<rof_code>(v));
        EXPECT_EQ(std::string(err.message), what);
    }
}

struct ExceptionCase {
    const char* name;
    void (*thrower)();
    rof_code code;
    const char* message;  // expected in err.message
};

TEST(CApiErrors, StandardExceptionsMapToCodes) {
    const ExceptionCase cases[] = {
        {"bad_alloc", [] { throw std::bad_alloc(); }, ROF_RESOURCE_EXHAUSTED, "out of memory"},
        {"invalid_argument", [] { throw std::invalid_argument("offset is odd"); },
         ROF_INVALID_ARGUMENT, "offset is odd"},
        {"out_of_range", [] { throw std::out_of_range("index 9"); }, ROF_OUT_OF_RANGE, "index 9"},
        {"length_error", [] { throw std::length_error("too long"); }, ROF_OUT_OF_RANGE, "too long"},
        {"ETIMEDOUT",
         [] { throw std::system_error(ETIMEDOUT, std::generic_category(), "rdma_connect"); },
         ROF_DEADLINE_EXCEEDED, "rdma_connect"},
        {"ECONNREFUSED",
         [] { throw std::system_error(ECONNREFUSED, std::system_category(), "rdma_connect"); },
         ROF_UNAVAILABLE, "rdma_connect"},
        {"ENOMEM", [] { throw std::system_error(ENOMEM, std::generic_category(), "ibv_reg_mr"); },
         ROF_RESOURCE_EXHAUSTED, "ibv_reg_mr"},
        {"EACCES", [] { throw std::system_error(EACCES, std::generic_category(), "open"); },
         ROF_PERMISSION_DENIED, "open"},
        {"EIO", [] { throw std::system_error(EIO, std::generic_category(), "ibv_post_send"); },
         ROF_INTERNAL, "ibv_post_send"},
        {"runtime_error", [] { throw std::runtime_error("a bug"); }, ROF_INTERNAL, "a bug"},
        {"int", [] { throw 42; }, ROF_UNKNOWN, "unknown exception"},
    };
    for (const auto& c : cases) {
        rof_error err = dirty_error();
        EXPECT_EQ(guard(&err, c.thrower), c.code) << c.name;
        EXPECT_EQ(err.code, c.code) << c.name;
        EXPECT_NE(std::string(err.message).find(c.message), std::string::npos)
            << c.name << ": " << err.message;
    }
}

TEST(CApiErrors, ALongMessageIsCutAndTerminated) {
    const std::string what(3 * ROF_ERROR_MAX, 'm');
    rof_error err = dirty_error();
    EXPECT_EQ(guard(&err, [&] { throw rof::Error(Code::aborted, what); }), ROF_ABORTED);
    EXPECT_EQ(std::strlen(err.message), std::size_t{ROF_ERROR_MAX - 1});
    EXPECT_EQ(std::string(err.message), what.substr(0, ROF_ERROR_MAX - 1));
}

TEST(CApiErrors, ANullErrorIsAllowed) {
    EXPECT_EQ(guard(nullptr, [] { throw rof::Error(Code::not_found, "gone"); }), ROF_NOT_FOUND);
    EXPECT_EQ(guard(nullptr, [] { throw std::bad_alloc(); }), ROF_RESOURCE_EXHAUSTED);
    EXPECT_EQ(guard(nullptr, [] {}), ROF_OK);
}

// NULL handles and NULL required pointers: ROF_INVALID_ARGUMENT with a
// message naming the function, never a crash.
void expect_invalid(rof_code code, const rof_error& err, const char* fn) {
    EXPECT_EQ(code, ROF_INVALID_ARGUMENT) << fn;
    EXPECT_EQ(err.code, ROF_INVALID_ARGUMENT) << fn;
    EXPECT_NE(std::string(err.message).find(fn), std::string::npos) << err.message;
}

TEST(CApiNullArguments, ClientFunctions) {
    rof_error err = dirty_error();
    rof_client* client = reinterpret_cast<rof_client*>(0x1);  // must be reset to NULL
    rof_daemon_status status = ROF_STRUCT_INIT(rof_daemon_status);
    rof_health health;
    std::uint64_t tag;

    expect_invalid(rof_client_open(nullptr, nullptr, &err), err, "rof_client_open");
    expect_invalid(rof_client_health(nullptr, nullptr, &health, &err), err, "rof_client_health");
    expect_invalid(rof_client_status(nullptr, &status, &err), err, "rof_client_status");
    expect_invalid(rof_program_load(nullptr, nullptr, "p", "exit 0\n", nullptr, &tag, &err), err,
                   "rof_program_load");
    expect_invalid(rof_program_replace(nullptr, nullptr, "p", "exit 0\n", nullptr, &tag, &err), err,
                   "rof_program_replace");
    expect_invalid(rof_program_unload(nullptr, nullptr, "p", &err), err, "rof_program_unload");
    expect_invalid(rof_program_tag(nullptr, nullptr, "p", &tag, &err), err, "rof_program_tag");
    EXPECT_STREQ(rof_client_target(nullptr), "");
    rof_client_close(nullptr);

    // With a real client, its required pointers.
    ASSERT_EQ(rof_client_open(nullptr, &client, &err), ROF_OK) << err.message;
    ASSERT_NE(client, nullptr);
    expect_invalid(rof_client_health(client, nullptr, nullptr, &err), err, "rof_client_health");
    expect_invalid(rof_client_status(client, nullptr, &err), err, "rof_client_status");
    expect_invalid(rof_program_load(client, nullptr, nullptr, "exit 0\n", nullptr, &tag, &err), err,
                   "rof_program_load");
    expect_invalid(rof_program_load(client, nullptr, "p", nullptr, nullptr, &tag, &err), err,
                   "rof_program_load");
    expect_invalid(rof_program_replace(client, nullptr, "p", nullptr, nullptr, &tag, &err), err,
                   "rof_program_replace");
    expect_invalid(rof_program_tag(client, nullptr, "p", nullptr, &err), err, "rof_program_tag");
    rof_client_close(client);
}

TEST(CApiSessionOptions, UnknownFlagsAreRefusedBeforeAnyCall) {
    rof_error err = dirty_error();
    rof_client* client = nullptr;
    rof_session* session = reinterpret_cast<rof_session*>(0x1);
    ASSERT_EQ(rof_client_open(nullptr, &client, &err), ROF_OK) << err.message;
    rof_session_options options = ROF_STRUCT_INIT(rof_session_options);
    options.flags = ROF_SESSION_BUSY_POLL | 0x80u;
    expect_invalid(rof_session_open(client, &options, &session, &err), err, "rof_session_open");
    EXPECT_NE(std::string(err.message).find("unknown flags"), std::string::npos) << err.message;
    EXPECT_EQ(session, nullptr);
    rof_client_close(client);
}

TEST(CApiNullArguments, SessionFunctions) {
    rof_error err = dirty_error();
    rof_session* session = reinterpret_cast<rof_session*>(0x1);
    rof_session_options options = ROF_STRUCT_INIT(rof_session_options);
    rof_granted_region region = ROF_STRUCT_INIT(rof_granted_region);
    rof_completion completions[4];
    std::uint64_t v;
    char buf[8];

    expect_invalid(rof_session_open(nullptr, &options, &session, &err), err, "rof_session_open");
    EXPECT_EQ(session, nullptr);
    expect_invalid(rof_session_open(nullptr, &options, nullptr, &err), err, "rof_session_open");
    expect_invalid(rof_read(nullptr, "r", 0, buf, sizeof(buf), &err), err, "rof_read");
    expect_invalid(rof_write(nullptr, "r", 0, buf, sizeof(buf), &err), err, "rof_write");
    expect_invalid(rof_cas(nullptr, "r", 0, 1, 2, &v, &err), err, "rof_cas");
    expect_invalid(rof_faa(nullptr, "r", 0, 1, &v, &err), err, "rof_faa");
    expect_invalid(rof_invoke(nullptr, 1, buf, 1, buf, 1, nullptr, &err), err, "rof_invoke");
    expect_invalid(rof_nop(nullptr, &err), err, "rof_nop");
    expect_invalid(rof_post_read(nullptr, "r", 0, buf, 8, 1, &err), err, "rof_post_read");
    expect_invalid(rof_post_write(nullptr, "r", 0, buf, 8, 1, &err), err, "rof_post_write");
    expect_invalid(rof_post_cas(nullptr, "r", 0, 1, 2, 1, &err), err, "rof_post_cas");
    expect_invalid(rof_post_faa(nullptr, "r", 0, 1, 1, &err), err, "rof_post_faa");
    expect_invalid(rof_post_invoke(nullptr, 1, buf, 1, buf, 1, 1, &err), err, "rof_post_invoke");
    expect_invalid(rof_flush(nullptr, &err), err, "rof_flush");
    EXPECT_EQ(rof_poll(nullptr, completions, 4, 0, &err), -ROF_INVALID_ARGUMENT);
    EXPECT_EQ(err.code, ROF_INVALID_ARGUMENT);
    expect_invalid(rof_session_region(nullptr, 0, &region, &err), err, "rof_session_region");
    expect_invalid(rof_session_region_find(nullptr, "r", &region, &err), err,
                   "rof_session_region_find");
    expect_invalid(rof_session_program_tag(nullptr, "p", &v, &err), err, "rof_session_program_tag");
    EXPECT_EQ(rof_completion_fd(nullptr), -1);
    EXPECT_EQ(rof_outstanding(nullptr), 0u);
    EXPECT_EQ(rof_session_id(nullptr), 0u);
    EXPECT_EQ(rof_session_region_count(nullptr), 0u);
    EXPECT_STREQ(rof_session_peer(nullptr), "");
    rof_session_close(nullptr);
}

using rof::test::TempDir;

rof_client* open_client(const std::string& target) {
    rof_client_options options = ROF_STRUCT_INIT(rof_client_options);
    options.target = target.c_str();
    options.deadline_ms = 1000;
    rof_client* client = nullptr;
    rof_error err;
    EXPECT_EQ(rof_client_open(&options, &client, &err), ROF_OK) << err.message;
    return client;
}

TEST(CApiClient, OpenResolvesTheTarget) {
    TempDir dir;
    const std::string sock = dir.file("rofd.sock");
    rof_client* client = open_client(sock);
    ASSERT_NE(client, nullptr);
    EXPECT_NE(std::string(rof_client_target(client)).find(sock), std::string::npos)
        << rof_client_target(client);
    rof_client_close(client);
}

TEST(CApiClient, NoSocketIsUnavailableNamingTheSocket) {
    TempDir dir;
    const std::string sock = dir.file("rofd.sock");  // never created
    rof_client* client = open_client(sock);
    ASSERT_NE(client, nullptr);

    rof_error err = dirty_error();
    rof_daemon_status status = ROF_STRUCT_INIT(rof_daemon_status);
    EXPECT_EQ(rof_client_status(client, &status, &err), ROF_UNAVAILABLE) << err.message;
    EXPECT_EQ(err.code, ROF_UNAVAILABLE);
    EXPECT_NE(std::string(err.message).find(sock), std::string::npos) << err.message;

    err = dirty_error();
    rof_health health = ROF_HEALTH_SERVING;
    EXPECT_EQ(rof_client_health(client, nullptr, &health, &err), ROF_UNAVAILABLE) << err.message;
    EXPECT_NE(std::string(err.message).find(sock), std::string::npos) << err.message;
    EXPECT_EQ(health, ROF_HEALTH_UNKNOWN);

    std::uint64_t tag = 0;
    EXPECT_EQ(rof_program_tag(client, nullptr, "nop", &tag, nullptr), ROF_UNAVAILABLE);
    rof_client_close(client);

    // fail_fast: the same at once, not after the deadline.
    rof_client_options options = ROF_STRUCT_INIT(rof_client_options);
    options.target = sock.c_str();
    options.deadline_ms = 60000;
    options.fail_fast = 1;
    ASSERT_EQ(rof_client_open(&options, &client, &err), ROF_OK) << err.message;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(rof_client_status(client, &status, &err), ROF_UNAVAILABLE) << err.message;
    EXPECT_NE(std::string(err.message).find(sock), std::string::npos) << err.message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
    rof_client_close(client);
}

TEST(CApiClient, NobodyListeningIsUnavailableNamingTheSocket) {
    TempDir dir;
    const std::string sock = dir.file("rofd.sock");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(rof::internal::UnixAddr(sock).bind(fd), 0);  // not listening

    rof_client* client = open_client(sock);
    ASSERT_NE(client, nullptr);
    rof_error err = dirty_error();
    rof_daemon_status status = ROF_STRUCT_INIT(rof_daemon_status);
    EXPECT_EQ(rof_client_status(client, &status, &err), ROF_UNAVAILABLE) << err.message;
    EXPECT_NE(std::string(err.message).find(sock), std::string::npos) << err.message;
    rof_client_close(client);
    ::close(fd);
}

// Extensible structs (rof.h): sz as the caller's rof.h declared the struct.
TEST(CApiStruct, AnSzBelowTheStructsFirstVersionIsRefusedSayingHow) {
    rof_client_options options{};  // sz 0: forgotten
    rof_client* client = nullptr;
    rof_error err = dirty_error();
    EXPECT_EQ(rof_client_open(&options, &client, &err), ROF_INVALID_ARGUMENT);
    EXPECT_EQ(client, nullptr);
    EXPECT_NE(std::string(err.message).find("rof_client_open: options: sz is 0"), std::string::npos)
        << err.message;
    EXPECT_NE(std::string(err.message).find("ROF_STRUCT_INIT"), std::string::npos) << err.message;
    options.sz = sizeof(options) - 1;
    EXPECT_EQ(rof_client_open(&options, &client, &err), ROF_INVALID_ARGUMENT);
    options.sz = std::size_t{1} << 40;  // garbage: not read as a newer struct
    EXPECT_EQ(rof_client_open(&options, &client, &err), ROF_INVALID_ARGUMENT);
}

// A newer rof.h's struct: this one's fields, then one this librof lacks.
struct NewerClientOptions {
    rof_client_options known;
    std::uint64_t added;
};

TEST(CApiStruct, ANewerStructIsReadAsFarAsKnownIfTheRestIsUnset) {
    NewerClientOptions newer{};
    newer.known.sz = sizeof(newer);
    newer.known.target = "/nonexistent/rofd.sock";
    rof_client* client = nullptr;
    rof_error err = dirty_error();
    ASSERT_EQ(rof_client_open(&newer.known, &client, &err), ROF_OK) << err.message;
    EXPECT_NE(std::string(rof_client_target(client)).find("/nonexistent/rofd.sock"),
              std::string::npos);
    rof_client_close(client);

    newer.added = 1;  // a field this librof would ignore: refused instead
    client = nullptr;
    EXPECT_EQ(rof_client_open(&newer.known, &client, &err), ROF_INVALID_ARGUMENT);
    EXPECT_EQ(client, nullptr);
    EXPECT_NE(std::string(err.message).find("newer rof.h"), std::string::npos) << err.message;
}

TEST(CApiStruct, OutputsWriteTheFieldsLibrofKnowsAndKeepTheCallersSz) {
    struct NewerStatus {
        rof_daemon_status known;
        std::uint64_t added;
    } newer{};
    newer.known.sz = sizeof(newer);
    newer.added = 5;
    rof_daemon_status s{};
    s.abi_major = 7;
    std::strcpy(s.caller, "tenant kv");
    rof::capi::struct_out(&newer.known, s, "test");
    EXPECT_EQ(newer.known.sz, sizeof(newer));
    EXPECT_EQ(newer.known.abi_major, 7u);
    EXPECT_STREQ(newer.known.caller, "tenant kv");
    EXPECT_EQ(newer.added, 5u);  // not this librof's to write

    rof_daemon_status old{};
    EXPECT_THROW(rof::capi::struct_out(&old, s, "test"), rof::Error);  // sz 0
}

}  // namespace
