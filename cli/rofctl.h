// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "commands.h"

namespace rofctl {

// The whole of rofctl, writing to @out and @err instead of the process's
// stdout and stderr so that the unit tests run it in-process.  Returns the
// exit status (commands.h, ExitCode).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// How a line of `rofctl batch` runs (batch.cpp): on the batch's
// connection, and, in JSON mode, with what it prints kept in @captured.
struct BatchLine {
    Connection& connection;
    Captured* captured = nullptr;
};

// One command line, @args being argv without "rofctl": what run() does,
// or with @batch, the same as a line of a batch.  Returns the exit status.
int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                const BatchLine* batch = nullptr);

// The command tree: global options into @g, objects and verbs; parsing a
// verb stores its body in @selected.
void build_app(CLI::App& app, Globals& g, Handler& selected);

// Object and verb prefixes spelled out: {"t", "l"} -> {"tenant", "list"}.
// Walks @args (argv without argv[0]) down the command tree, skipping
// options and their values; stops at the first word that names no
// subcommand.  An ambiguous prefix is a UsageError naming the candidates,
// or, with @ambiguous, that message stored there and the walk stopped.
std::vector<std::string> expand_prefixes(const CLI::App& app, std::vector<std::string> args,
                                         std::string* ambiguous = nullptr);

}  // namespace rofctl
