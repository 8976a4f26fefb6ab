// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "rofctl.h"

namespace {

struct Result {
    int rc;
    std::string out;
    std::string err;
};

Result rofctl(std::vector<const char*> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), "rofctl");
    const int rc = rofctl::run(static_cast<int>(args.size()), args.data(), out, err);
    return {rc, out.str(), err.str()};
}

// A socket path where nothing listens: a fresh, empty directory.
class NoDaemon : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = std::filesystem::temp_directory_path() / "rofctl-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
        socket_ = (dir_ / "rofd.sock").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path dir_;
    std::string socket_;
};

TEST(RofctlUsage, NoObjectIsAUsageError) {
    const Result r = rofctl({});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("rofctl: "), std::string::npos) << r.err;
    EXPECT_EQ(r.err, "rofctl: no object given (objects: status)\nRun 'rofctl --help' for usage.\n");
    EXPECT_NE(r.err.find("rofctl --help"), std::string::npos) << r.err;
}

TEST(RofctlUsage, UnknownObjectIsNamed) {
    const Result r = rofctl({"frobnicate"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_EQ(r.err,
              "rofctl: unknown object \"frobnicate\" (objects: status)\n"
              "Run 'rofctl --help' for usage.\n");
}

TEST(RofctlUsage, UnknownOptionIsNamed) {
    const Result r = rofctl({"status", "--bogus"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(RofctlUsage, StrayArgumentIsNamed) {
    const Result r = rofctl({"status", "extra"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("extra"), std::string::npos) << r.err;
}

TEST(RofctlUsage, SocketWithoutPathIsAUsageError) {
    const Result r = rofctl({"status", "--socket"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("--socket"), std::string::npos) << r.err;
}

TEST(RofctlUsage, UsageErrorInJsonModeIsJsonOnStdout) {
    const Result r = rofctl({"-j", "frobnicate"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_EQ(r.out, "{\"error\":\"unknown object \\\"frobnicate\\\" (objects: status)\"}\n");
    EXPECT_EQ(r.err, "");
}

TEST(RofctlUsage, HelpListsTheObjectsAndSucceeds) {
    const Result r = rofctl({"--help"});
    EXPECT_EQ(r.rc, rofctl::exit_ok);
    EXPECT_NE(r.out.find("status"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
}

TEST_F(NoDaemon, StatusExitsUnreachableAndSaysWhere) {
    const Result r = rofctl({"status", "--socket", socket_.c_str()});
    EXPECT_EQ(r.rc, rofctl::exit_unreachable);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "rofctl: cannot reach rofd at " + socket_ +
                         ": No such file or directory (is rofd running?)\n");
}

TEST_F(NoDaemon, StatusJsonReportsTheErrorAsJson) {
    // Global options before and after the object mean the same.
    for (const auto& args :
         {std::vector<const char*>{"-j", "--socket", socket_.c_str(), "status"},
          std::vector<const char*>{"status", "--json", "--socket", socket_.c_str()}}) {
        const Result r = rofctl(args);
        EXPECT_EQ(r.rc, rofctl::exit_unreachable);
        EXPECT_EQ(r.out, "{\"error\":\"cannot reach rofd at " + socket_ +
                             ": No such file or directory (is rofd running?)\"}\n");
        EXPECT_EQ(r.err, "");
    }
}

TEST_F(NoDaemon, SocketComesFromTheEnvironment) {
    ::setenv("ROF_SOCKET", socket_.c_str(), 1);
    const Result r = rofctl({"status"});
    ::unsetenv("ROF_SOCKET");
    EXPECT_EQ(r.rc, rofctl::exit_unreachable);
    EXPECT_NE(r.err.find(socket_), std::string::npos) << r.err;
}

// The installed binary, not just run(): its exit status is what scripts see.
TEST_F(NoDaemon, BinaryExitStatusIsThree) {
    const std::string cmd = std::string(ROFCTL_PATH) + " status -j --socket " + socket_ + " 2>&1";
    FILE* f = ::popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string output;
    std::array<char, 256> buf;
    while (std::fgets(buf.data(), buf.size(), f)) {
        output += buf.data();
    }
    const int status = ::pclose(f);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    EXPECT_NE(output.find("\"error\""), std::string::npos) << output;
}

}  // namespace
