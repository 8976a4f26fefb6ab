// SPDX-License-Identifier: MIT
// What rofctl's unit tests share: a command run in-process, and the
// source tree.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "rofctl.h"

namespace rofctl::testing {

inline const std::filesystem::path src_dir = ROF_SOURCE_DIR;

struct Result {
    int rc;
    std::string out;
    std::string err;
};

// rofctl ARGS, in this process: its exit status and what it printed.
inline Result rofctl(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int rc = run_command(args, out, err);
    return {rc, out.str(), err.str()};
}

}  // namespace rofctl::testing
