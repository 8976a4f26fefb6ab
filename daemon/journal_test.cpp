// SPDX-License-Identifier: MIT
#include "journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "log.h"
#include "test_util.h"
#include "unique_fd.h"
#include "unix_addr.h"

namespace rofd {
namespace {

TEST(StderrIsJournal, MatchesOnlyTheRealDevAndInode) {
    test::TempDir dir;
    UniqueFd fd(::open(dir.file("stream").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    std::string real = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    EXPECT_TRUE(log::stderr_is_journal(real.c_str(), fd.get()));

    std::string wrong_ino = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
    std::string wrong_dev = std::to_string(st.st_dev + 1) + ":" + std::to_string(st.st_ino);
    EXPECT_FALSE(log::stderr_is_journal(wrong_ino.c_str(), fd.get()));
    EXPECT_FALSE(log::stderr_is_journal(wrong_dev.c_str(), fd.get()));
    EXPECT_FALSE(log::stderr_is_journal("8:1", fd.get()));
    EXPECT_FALSE(log::stderr_is_journal(nullptr, fd.get()));
    for (const char* bad : {"", ":", "8", "8:", ":1", "x:1", "8:1x", " 8:1", "-1:2"}) {
        EXPECT_FALSE(log::stderr_is_journal(bad, fd.get())) << bad;
    }
    real += "0";
    EXPECT_FALSE(log::stderr_is_journal(real.c_str(), fd.get()));
    // A closed fd never matches.
    int raw = fd.get();
    fd.reset();
    std::string again = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    EXPECT_FALSE(log::stderr_is_journal(again.c_str(), raw));
}

// End to end, in a fresh process (statics and all): an inherited
// JOURNAL_STREAM that names another file gives plain "rofd: " lines; the
// one naming stderr itself gives syslog priority prefixes.
TEST(StderrIsJournalDeathTest, LogPrefixFollowsTheRealStream) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            ::setenv("JOURNAL_STREAM", "8:1", 1);
            log::info("hello from rofd");
            std::exit(0);
        },
        testing::ExitedWithCode(0), "^rofd: hello from rofd\n$");
    EXPECT_EXIT(
        {
            struct stat st {};
            if (::fstat(STDERR_FILENO, &st) != 0) {
                std::exit(2);
            }
            std::string env = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
            ::setenv("JOURNAL_STREAM", env.c_str(), 1);
            log::info("hello from rofd");
            std::exit(0);
        },
        testing::ExitedWithCode(0), "^<6>hello from rofd\n$");
}

// Without journald (as in the build sandbox) send() is one stderr line.
TEST(Journal, SendFallsBackToOneStderrLine) {
    if (journal::available()) {
        GTEST_SKIP() << "journald is running: send() goes there";
    }
    int pipefd[2];
    ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
    UniqueFd rd(pipefd[0]);
    UniqueFd wr(pipefd[1]);
    UniqueFd saved(::dup(STDERR_FILENO));
    ASSERT_TRUE(saved);
    ASSERT_EQ(::dup2(wr.get(), STDERR_FILENO), STDERR_FILENO);
    std::vector<journal::Field> fields = {{"ROF_TENANT", "kv"}, {"ROF_SESSION", "3"}};
    journal::send(log::Level::info, "session opened", fields);
    ::dup2(saved.get(), STDERR_FILENO);
    wr.reset();
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = ::read(rd.get(), buf, sizeof(buf))) > 0) {
        out.append(buf, static_cast<std::size_t>(n));
    }
    EXPECT_TRUE(out == "rofd: session opened ROF_TENANT=kv ROF_SESSION=3\n" ||
                out == "<6>session opened ROF_TENANT=kv ROF_SESSION=3\n")
        << out;
}

TEST(Journal, FormatLine) {
    std::vector<journal::Field> fields = {
        {"ROF_TENANT", "kv"}, {"ROF_SESSION", "3"},          {"ROF_REASON", "two words"},
        {"ROF_EMPTY", ""},    {"ROF_QUOTE", "a\"b\\c\nd"},   {"bad_name", "x"},
        {"_TRUSTED", "x"},    {"SYSLOG_IDENTIFIER", "rofd"},
    };
    EXPECT_EQ(journal::format_line("session closed", fields),
              "session closed ROF_TENANT=kv ROF_SESSION=3 ROF_REASON=\"two words\" "
              "ROF_EMPTY=\"\" ROF_QUOTE=\"a\\\"b\\\\c\\nd\"");
    EXPECT_EQ(journal::format_line("plain", {}), "plain");
}

TEST(Journal, FieldNames) {
    EXPECT_TRUE(journal::valid_field_name("ROF_TENANT"));
    EXPECT_TRUE(journal::valid_field_name("ROF_LATENCY_NS"));
    EXPECT_FALSE(journal::valid_field_name(""));
    EXPECT_FALSE(journal::valid_field_name("_PID"));
    EXPECT_FALSE(journal::valid_field_name("1X"));
    EXPECT_FALSE(journal::valid_field_name("rof_tenant"));
    EXPECT_FALSE(journal::valid_field_name(std::string(65, 'A')));
    EXPECT_TRUE(journal::valid_field_name(std::string(64, 'A')));
}

TEST(Journal, SocketConnectable) {
    test::TempDir dir;
    std::string path = dir.file("journal.sock");
    EXPECT_FALSE(journal::socket_connectable(path.c_str()));  // absent

    UniqueFd srv(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(srv);
    const rof::internal::UnixAddr addr(path);
    ASSERT_TRUE(addr.ok()) << addr.error();
    ASSERT_EQ(addr.bind(srv.get()), 0);
    EXPECT_TRUE(journal::socket_connectable(path.c_str()));

    srv.reset();  // the file stays, nobody listens: refused
    EXPECT_FALSE(journal::socket_connectable(path.c_str()));
    EXPECT_FALSE(journal::socket_connectable(std::string(200, 'x').c_str()));
}

}  // namespace
}  // namespace rofd
