// SPDX-License-Identifier: MIT
// Helpers shared by rofd's unit tests.
#pragma once

#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "kmod.h"
#include "listener.h"
#include "server.h"

namespace rofd::test {

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
  public:
    TempDir() {
        std::string tmpl = std::filesystem::temp_directory_path() / "rofd-test-XXXXXX";
        if (!::mkdtemp(tmpl.data())) {
            throw std::runtime_error("mkdtemp failed");
        }
        path_ = tmpl;
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (path_ / name).string(); }

    // A regular file: opens like a device but answers every ioctl ENOTTY.
    std::string regular_file(const std::string& name) const {
        std::ofstream(file(name)) << "not rof.ko\n";
        return file(name);
    }

  private:
    std::filesystem::path path_;
};

// rofd's server, in-process, on a socket in @dir, reading a @device that is
// typically a regular file (so every GetStatus fails the way it does when
// rof.ko misbehaves).  Accepts in a thread until destroyed.
class RunningServer {
  public:
    RunningServer(const TempDir& dir, const std::string& device)
        : socket_(dir.file("rofd.sock")),
          kmod_(device),
          listener_(UnixListener::bind(socket_)),
          server_(kmod_),
          stop_(::eventfd(0, EFD_CLOEXEC)) {
        if (!stop_) {
            throw std::runtime_error("eventfd failed");
        }
        thread_ = std::thread([this] { server_.run(listener_, stop_.get()); });
    }
    ~RunningServer() {
        const std::uint64_t one = 1;
        if (::write(stop_.get(), &one, sizeof(one)) == sizeof(one)) {
            thread_.join();
        } else {
            thread_.detach();
        }
        server_.shutdown(std::chrono::seconds(1));
    }
    RunningServer(const RunningServer&) = delete;
    RunningServer& operator=(const RunningServer&) = delete;

    const std::string& socket() const { return socket_; }
    Server& server() { return server_; }

  private:
    std::string socket_;
    Kmod kmod_;
    UnixListener listener_;
    Server server_;
    UniqueFd stop_;
    std::thread thread_;
};

}  // namespace rofd::test
