// SPDX-License-Identifier: MIT
// rofd's structured log: one journal entry with MESSAGE=, PRIORITY=,
// SYSLOG_IDENTIFIER=rofd and the caller's ROF_* fields, so that
// `journalctl ROF_TENANT=kv` finds a tenant's events.  Without journald
// (no connectable /run/systemd/journal/socket) the same event is one
// log::write() line: "<message> ROF_TENANT=kv ROF_SESSION=3 ...".
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "log.h"

namespace rofd::journal {

// @name: a journal field name, [A-Z0-9_], not starting with '_', at most 64
// characters (sd_journal_sendv(3)); fields with other names are left out.
struct Field {
    std::string_view name;
    std::string value;
};

inline constexpr const char* socket_path = "/run/systemd/journal/socket";

// Sends one entry to journald when it is available, else writes one line.
void send(log::Level level, std::string_view message, std::span<const Field> fields);

// Whether journald is available: @path is a unix datagram socket that
// accepts a connect().  available() checks socket_path once, at first use.
bool socket_connectable(const char* path);
bool available();

// The fallback line without the "rofd: " prefix: the message, then
// NAME=value for each valid field; values with spaces, quotes, '=' or
// control characters (or empty ones) are double-quoted with C escapes.
std::string format_line(std::string_view message, std::span<const Field> fields);

bool valid_field_name(std::string_view name);

}  // namespace rofd::journal
