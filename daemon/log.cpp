// SPDX-License-Identifier: MIT
#include "log.h"

#include <grpc/support/log.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rofd::log {
namespace {

std::atomic<bool> verbose_flag{false};

bool to_journal() {
    // systemd sets JOURNAL_STREAM when stderr is connected to journald; it
    // is inherited by children whose stderr is elsewhere, hence the check.
    // Read once, before any thread could call setenv().
    static const bool journal = stderr_is_journal(std::getenv("JOURNAL_STREAM"),
                                                  STDERR_FILENO);  // NOLINT(concurrency-mt-unsafe)
    return journal;
}

bool parse_u64(std::string_view s, unsigned long long& out) {
    if (s.empty()) {
        return false;
    }
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size();
}

void grpc_log(gpr_log_func_args* args) {
    Level level = Level::debug;
    if (args->severity == GPR_LOG_SEVERITY_ERROR) {
        level = Level::error;
    } else if (args->severity == GPR_LOG_SEVERITY_INFO) {
        level = Level::info;
    }
    if (level == Level::debug && !verbose()) {
        return;
    }
    write(level, fmt::format("grpc: {}", args->message));
}

}  // namespace

bool stderr_is_journal(const char* env, int fd) {
    if (env == nullptr) {
        return false;
    }
    std::string_view v(env);
    std::size_t colon = v.find(':');
    unsigned long long dev = 0;
    unsigned long long ino = 0;
    if (colon == std::string_view::npos || !parse_u64(v.substr(0, colon), dev) ||
        !parse_u64(v.substr(colon + 1), ino)) {
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return false;
    }
    return static_cast<unsigned long long>(st.st_dev) == dev &&
           static_cast<unsigned long long>(st.st_ino) == ino;
}

void set_verbose(bool v) {
    verbose_flag = v;
}

bool verbose() {
    return verbose_flag;
}

void write(Level level, std::string_view msg) {
    std::string line;
    if (to_journal()) {
        line = "<" + std::to_string(static_cast<int>(level)) + ">";
    } else {
        line = "rofd: ";
    }
    if (level == Level::warning) {
        line += "warning: ";
    }
    line += msg;
    line += '\n';
    // One write(2) per line so that lines from several threads never mix.
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
}

void capture_grpc_logs() {
    gpr_set_log_function(grpc_log);
}

}  // namespace rofd::log
