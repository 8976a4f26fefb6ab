// SPDX-License-Identifier: MIT
#pragma once

#include <sstream>
#include <string_view>

// rofd's log: one short line per event on stderr.  When stderr is journald's
// stream (JOURNAL_STREAM matches it, see stderr_is_journal()) the line
// carries a <N> syslog priority prefix instead of "rofd: ", because journald
// adds the identifier, pid and time itself.
namespace rofd::log {

enum class Level { error = 3, warning = 4, info = 6, debug = 7 };

void set_verbose(bool verbose);
bool verbose();
void write(Level level, std::string_view msg);

// Whether @fd is the journal stream that @env, a JOURNAL_STREAM value
// ("<st_dev>:<st_ino>" in decimal, systemd.exec(5)), names.  A JOURNAL_STREAM
// inherited by a process whose stderr was redirected does not match, and
// then rofd writes plain "rofd: " lines.
bool stderr_is_journal(const char* env, int fd);

// Routes gRPC's own log lines through write().
void capture_grpc_logs();

template <typename... Args>
std::string concat(const Args&... args) {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
}

template <typename... Args>
void error(const Args&... args) {
    write(Level::error, concat(args...));
}

template <typename... Args>
void warning(const Args&... args) {
    write(Level::warning, concat(args...));
}

template <typename... Args>
void info(const Args&... args) {
    write(Level::info, concat(args...));
}

// Arguments are only formatted when -v is on.
template <typename... Args>
void debug(const Args&... args) {
    if (verbose()) {
        write(Level::debug, concat(args...));
    }
}

}  // namespace rofd::log
