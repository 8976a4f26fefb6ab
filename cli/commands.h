// SPDX-License-Identifier: MIT
// What every rofctl object file (status.cpp, later tenant.cpp, region.cpp,
// ...) gets from the dispatcher, and what it gives back.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "print.h"

namespace rofctl {

// Exit statuses scripts can rely on; documented in rofctl(8).
enum ExitCode {
    exit_ok = 0,
    exit_error = 1,        // the command failed (rofd reported an error)
    exit_usage = 2,        // bad command line
    exit_unreachable = 3,  // no rofd answered on the socket
};

struct Context {
    Printer& printer;
    std::string socket;  // empty: librof's default ($ROF_SOCKET, /run/rof/rofd.sock)
};

// A command's body; throws rof::Error when rofd cannot be reached or fails.
using Handler = std::function<int(Context&)>;

// Each object registers its CLI11 subcommand(s) on @app; parsing one stores
// its handler in @selected.
void add_status_command(CLI::App& app, Handler& selected);

}  // namespace rofctl
