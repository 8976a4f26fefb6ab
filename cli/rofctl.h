// SPDX-License-Identifier: MIT
#pragma once

#include <ostream>

namespace rofctl {

// The whole of rofctl, writing to @out and @err instead of the process's
// stdout and stderr so that the unit tests run it in-process.  Returns the
// exit status (commands.h, ExitCode).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace rofctl
