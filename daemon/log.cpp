// SPDX-License-Identifier: MIT
#include "log.h"

#include <grpc/support/log.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace rofd::log {
namespace {

std::atomic<bool> verbose_flag{false};

bool to_journal() {
    // systemd sets JOURNAL_STREAM when stderr is connected to journald.
    // Read once, before any thread could call setenv().
    static const bool journal =
        std::getenv("JOURNAL_STREAM") != nullptr;  // NOLINT(concurrency-mt-unsafe)
    return journal;
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
    write(level, concat("grpc: ", args->message));
}

}  // namespace

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
