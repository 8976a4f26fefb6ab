// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "listener.h"
#include "test_util.h"
#include "unix_addr.h"

namespace {

using rofd::UniqueFd;
using rofd::UnixListener;

UniqueFd unix_socket() {
    return UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

bool connect_to(int fd, const std::string& path) {
    return rof::internal::UnixAddr(path).connect(fd) == 0;
}

std::string error_of(const std::string& path) {
    try {
        UnixListener::bind(path);
    } catch (const std::system_error& e) {
        return e.what();
    }
    return "no error";
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode;
}

TEST(UnixListener, CreatesParentDirectoryAndSocketWithTheirModes) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("run/rof/rofd.sock");
    const UnixListener l = UnixListener::bind(path);

    EXPECT_TRUE(S_ISDIR(mode_of(dir.file("run/rof"))));
    EXPECT_EQ(mode_of(dir.file("run/rof")) & 07777, 0755U);
    EXPECT_TRUE(S_ISSOCK(mode_of(path)));
    EXPECT_EQ(mode_of(path) & 07777, 0660U);
}

TEST(UnixListener, RemovesItsSocketOnDestruction) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");

    {
        const UnixListener l = UnixListener::bind(path);
        EXPECT_TRUE(std::filesystem::exists(path));
    }
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(UnixListener, LeavesASocketThatReplacedItsOwn) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");
    std::optional<UnixListener> l(UnixListener::bind(path));

    ASSERT_EQ(::unlink(path.c_str()), 0);
    std::ofstream(path) << "someone else's\n";
    l.reset();
    EXPECT_TRUE(std::filesystem::exists(path));
}

TEST(UnixListener, ReplacesAStaleSocket) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");
    {
        // A socket file whose owner is gone: bound, never listening.
        const UniqueFd fd = unix_socket();
        ASSERT_EQ(rof::internal::UnixAddr(path).bind(fd.get()), 0);
    }
    ASSERT_TRUE(std::filesystem::exists(path));

    const UnixListener l = UnixListener::bind(path);
    const UniqueFd client = unix_socket();
    EXPECT_TRUE(connect_to(client.get(), path));
}

TEST(UnixListener, RefusesToTakeOverALiveDaemon) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");
    const UnixListener first = UnixListener::bind(path);

    EXPECT_EQ(error_of(path),
              "socket " + path + ": another rofd is listening there: Address already in use");
    // The first daemon still has its socket.
    const UniqueFd client = unix_socket();
    EXPECT_TRUE(connect_to(client.get(), path));
}

TEST(UnixListener, RefusesToRemoveSomethingThatIsNotASocket) {
    rofd::test::TempDir dir;
    const std::string path = dir.regular_file("rofd.sock");

    EXPECT_EQ(error_of(path), "socket " + path + ": exists and is not a socket: File exists");
    EXPECT_TRUE(S_ISREG(mode_of(path)));
}

TEST(UnixListener, RefusesAPathTooLongForSunPath) {
    const std::string path = "/tmp/" + std::string(200, 'x');

    EXPECT_NE(error_of(path).find("longer than 107 bytes"), std::string::npos) << error_of(path);
}

TEST(UnixListener, AcceptReportsThePeersCredentials) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");
    const UnixListener l = UnixListener::bind(path);

    EXPECT_FALSE(l.accept().has_value()) << "nothing pending yet";
    const UniqueFd client = unix_socket();
    ASSERT_TRUE(connect_to(client.get(), path));

    const auto conn = l.accept();
    ASSERT_TRUE(conn.has_value());
    EXPECT_TRUE(conn->fd);
    EXPECT_EQ(conn->cred.pid, ::getpid());
    EXPECT_EQ(conn->cred.uid, ::getuid());
    EXPECT_EQ(conn->cred.gid, ::getgid());
}

// PeerConnections over real sockets (the fds gRPC would own): counted
// while open, forgotten when closed, a reused fd number not mistaken for
// the connection that had it.
TEST(PeerConnections, CountsAUidsOpenConnectionsUpToItsLimit) {
    rofd::PeerConnections peers;
    auto conn = [](uid_t uid) {
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ::close(sv[1]);
        return rofd::Connection{UniqueFd(sv[0]), rofd::PeerCred{1, uid, uid}};
    };
    auto a = conn(1001);
    auto b = conn(1001);
    EXPECT_TRUE(peers.admit(a, 2));
    EXPECT_TRUE(peers.admit(b, 2));
    const auto c = conn(1001);
    EXPECT_FALSE(peers.admit(c, 2));
    EXPECT_EQ(peers.open(1001), 2U);

    const auto other = conn(1002);
    EXPECT_TRUE(peers.admit(other, 2)) << "another uid";
    const auto root = conn(0);
    EXPECT_TRUE(peers.admit(root, 2)) << "root is not limited";
    EXPECT_EQ(peers.open(0), 0U);

    // a's fd closed, its number taken by another socket: a is gone.
    const int number = a.fd.get();
    a.fd.reset();
    auto reused = conn(1002);
    ASSERT_EQ(reused.fd.get(), number) << "the lowest free number";
    EXPECT_EQ(peers.open(1001), 1U);
    EXPECT_TRUE(peers.admit(c, 2));
    b.fd.reset();
    EXPECT_EQ(peers.open(1001), 1U);
}

}  // namespace
