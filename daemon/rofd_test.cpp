// SPDX-License-Identifier: MIT
// rofd as a process: what an operator sees when it cannot start.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

struct Result {
    int exit_status;
    std::string out;
    std::string err;
};

std::string slurp(int fd) {
    std::string s;
    char buf[512];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
        s.append(buf, static_cast<std::size_t>(n));
    }
    return s;
}

Result rofd(std::vector<std::string> args) {
    rofd::test::TempDir dir;
    const std::string out_path = dir.file("stdout"), err_path = dir.file("stderr");

    args.insert(args.begin(), ROFD_PATH);
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        if (!std::freopen(out_path.c_str(), "w", stdout) ||
            !std::freopen(err_path.c_str(), "w", stderr)) {
            ::_exit(127);
        }
        // Not under systemd: no socket activation, no notify socket.
        ::unsetenv("LISTEN_FDS");
        ::unsetenv("NOTIFY_SOCKET");
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "rofd died of signal " << WTERMSIG(status);

    Result r{WEXITSTATUS(status), {}, {}};
    std::FILE* f;
    if ((f = std::fopen(out_path.c_str(), "r"))) {
        r.out = slurp(::fileno(f));
        std::fclose(f);
    }
    if ((f = std::fopen(err_path.c_str(), "r"))) {
        r.err = slurp(::fileno(f));
        std::fclose(f);
    }
    return r;
}

TEST(Rofd, MissingDeviceIsAHardErrorWithAHint) {
    rofd::test::TempDir dir;
    const std::string dev = dir.file("rof"), sock = dir.file("rofd.sock");

    const Result r = rofd({"--device", dev, "--socket", sock});
    EXPECT_EQ(r.exit_status, 1);
    EXPECT_EQ(r.err, "rofd: cannot open " + dev +
                         ": No such file or directory (rof.ko not loaded? modprobe rof)\n");
    EXPECT_FALSE(std::filesystem::exists(sock)) << "socket created without a module";
}

TEST(Rofd, DeviceThatIsNotRofKoIsRefused) {
    rofd::test::TempDir dir;
    const std::string dev = dir.regular_file("rof"), sock = dir.file("rofd.sock");

    const Result r = rofd({"--device", dev, "--socket", sock});
    EXPECT_EQ(r.exit_status, 1);
    EXPECT_EQ(r.err, "rofd: " + dev + ": ROF_IOC_VERSION: Inappropriate ioctl for device\n");
    EXPECT_FALSE(std::filesystem::exists(sock));
}

TEST(Rofd, UnknownOptionIsAUsageError) {
    const Result r = rofd({"--frobnicate"});
    EXPECT_EQ(r.exit_status, 2);
    EXPECT_NE(r.err.find("rofd: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
}

TEST(Rofd, OptionWithoutValueIsAUsageError) {
    const Result r = rofd({"--device"});
    EXPECT_EQ(r.exit_status, 2);
    EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
}

TEST(Rofd, VersionAndHelp) {
    Result r = rofd({"--version"});
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_EQ(r.out, ROF_VERSION "\n");

    r = rofd({"--help"});
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_NE(r.out.find("--socket"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--device"), std::string::npos) << r.out;
}

}  // namespace
