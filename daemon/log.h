// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <string_view>
#include <utility>

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

// Milliseconds since @t0 on the monotonic clock, for the lines that say how long something
// took (a start, a reload, a reconciliation).
inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// log::info("policy generation {} loaded", n): fmt's format string, checked
// when compiled.
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
    write(Level::error, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void warning(fmt::format_string<Args...> format, Args&&... args) {
    write(Level::warning, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
    write(Level::info, fmt::format(format, std::forward<Args>(args)...));
}

// Arguments are only formatted when -v is on.
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
    if (verbose()) {
        write(Level::debug, fmt::format(format, std::forward<Args>(args)...));
    }
}

}  // namespace rofd::log
