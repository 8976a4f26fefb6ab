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
#include "test_temp_dir.h"

namespace rofd::test {

// rof::test::TempDir, and a regular file in it for the tests of Kmod.
class TempDir : public rof::test::TempDir {
  public:
    TempDir() : rof::test::TempDir("rofd-test") {}

    // A regular file: opens like a device but answers every ioctl ENOTTY.
    std::string regular_file(const std::string& name) const {
        std::ofstream(file(name)) << "not rof.ko\n";
        return file(name);
    }
};

}  // namespace rofd::test
