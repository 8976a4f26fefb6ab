// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "rof/client.h"
#include "test_temp_dir.h"
#include "unix_addr.h"

namespace {

using rof::test::TempDir;

// A unix socket bound at @path; listening only if @listen.
int bound_socket(const std::string& path, bool listen) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || rof::internal::UnixAddr(path).bind(fd) < 0 || (listen && ::listen(fd, 8) < 0)) {
        throw std::runtime_error("cannot set up " + path);
    }
    return fd;
}

rof::Error status_error(rof::Client& client) {
    try {
        client.get_status();
    } catch (const rof::Error& e) {
        return e;
    }
    ADD_FAILURE() << "get_status() succeeded without a daemon";
    return rof::Error(rof::Code::ok, "");
}

// A client that fails at once when rofd is not there.
rof::Client impatient(const std::string& path,
                      std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    rof::ClientOptions o;
    o.target = path;
    o.deadline = deadline;
    o.wait_for_ready = false;
    return rof::Client(o);
}

TEST(Client, MissingSocketIsUnreachableAndSaysWhy) {
    TempDir dir;
    rof::Client client = impatient(dir.file("rofd.sock"));

    const rof::Error e = status_error(client);
    EXPECT_EQ(e.code(), rof::Code::unavailable);
    EXPECT_EQ(std::string(e.what()), "cannot reach rofd at " + dir.file("rofd.sock") +
                                         ": No such file or directory (is rofd running?)");
}

TEST(Client, SocketWithoutListenerIsUnreachable) {
    TempDir dir;
    const std::string path = dir.file("rofd.sock");
    const int fd = bound_socket(path, false);
    rof::Client client = impatient(path);

    const rof::Error e = status_error(client);
    ::close(fd);
    EXPECT_EQ(e.code(), rof::Code::unavailable);
    EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
}

TEST(Client, ListenerThatNeverAnswersTimesOutAsUnreachable) {
    TempDir dir;
    const std::string path = dir.file("rofd.sock");
    // Connections complete in the kernel's backlog but nobody speaks HTTP/2.
    const int fd = bound_socket(path, true);
    rof::Client client = impatient(path, std::chrono::milliseconds(300));

    const rof::Error e = status_error(client);
    ::close(fd);
    EXPECT_EQ(e.code(), rof::Code::unavailable);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
}

TEST(Client, DefaultSocketComesFromTheEnvironment) {
    ::setenv("ROF_SOCKET", "/tmp/elsewhere.sock", 1);
    EXPECT_EQ(rof::Client::default_socket(), "/tmp/elsewhere.sock");
    EXPECT_EQ(rof::Client().target(), "unix:/tmp/elsewhere.sock");
    ::setenv("ROF_SOCKET", "", 1);
    EXPECT_EQ(rof::Client::default_socket(), rof::default_socket_path);
    ::unsetenv("ROF_SOCKET");
    EXPECT_EQ(rof::Client::default_socket(), "/run/rof/rofd.sock");
}

TEST(Client, WaitingForRofdEndsAtTheDeadlineAsUnavailable) {
    TempDir dir;
    rof::ClientOptions o;
    o.target = "unix:" + dir.file("rofd.sock");
    o.deadline = std::chrono::milliseconds(200);
    rof::Client client(o);

    const rof::Error e = status_error(client);
    EXPECT_EQ(e.code(), rof::Code::unavailable);
    EXPECT_NE(std::string(e.what()).find(dir.file("rofd.sock")), std::string::npos) << e.what();
}

TEST(Client, TcpWithoutClientCertificateIsRefused) {
    rof::ClientOptions o;
    o.target = "127.0.0.1:7000";
    try {
        rof::Client client(o);
        ADD_FAILURE() << "a TCP client without TLS files was made";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), rof::Code::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("TLS"), std::string::npos) << e.what();
    }
}

TEST(Client, MissingTlsFileIsNamed) {
    rof::ClientOptions o;
    o.target = "[::1]:7000";
    o.tls_ca = "/nonexistent/ca.pem";
    o.tls_cert = "/nonexistent/cert.pem";
    o.tls_key = "/nonexistent/key.pem";
    try {
        rof::Client client(o);
        ADD_FAILURE() << "a client was made with missing TLS files";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), rof::Code::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/ca.pem"), std::string::npos) << e.what();
    }
}

TEST(Error, CodeNamesAreGrpcs) {
    EXPECT_EQ(rof::code_name(rof::Code::ok), "OK");
    EXPECT_EQ(rof::code_name(rof::Code::not_found), "NOT_FOUND");
    EXPECT_EQ(rof::code_name(rof::Code::unauthenticated), "UNAUTHENTICATED");
    EXPECT_EQ(rof::code_name(static_cast<rof::Code>(99)), "UNKNOWN");
}

}  // namespace
