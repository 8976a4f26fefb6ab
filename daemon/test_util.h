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

}  // namespace rofd::test
