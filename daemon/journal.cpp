// SPDX-License-Identifier: MIT
#include "journal.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include <iterator>
#include <vector>

#include "unique_fd.h"
#include "unix_addr.h"

namespace rofd::journal {
namespace {

bool needs_quotes(std::string_view v) {
    if (v.empty()) {
        return true;
    }
    for (unsigned char c : v) {
        if (c <= ' ' || c == '"' || c == '\\' || c == '=' || c == 0x7f) {
            return true;
        }
    }
    return false;
}

void append_value(std::string& out, std::string_view v) {
    if (!needs_quotes(v)) {
        out += v;
        return;
    }
    out += '"';
    for (unsigned char c : v) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < ' ' || c == 0x7f) {
                    fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

}  // namespace

bool valid_field_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || name[0] == '_' || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    for (char c : name) {
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
            return false;
        }
    }
    return true;
}

std::string format_line(std::string_view message, std::span<const Field> fields) {
    std::string line(message);
    for (const Field& f : fields) {
        if (!valid_field_name(f.name) || f.name == "SYSLOG_IDENTIFIER") {
            continue;
        }
        line += ' ';
        line += f.name;
        line += '=';
        append_value(line, f.value);
    }
    return line;
}

bool socket_connectable(const char* path) {
    const rof::internal::UnixAddr addr(path);
    if (!addr.ok()) {
        return false;
    }
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    return fd && addr.connect(fd.get()) == 0;
}

bool available() {
    static const bool yes = socket_connectable(socket_path);
    return yes;
}

void send(log::Level level, std::string_view message, std::span<const Field> fields) {
    if (available()) {
        // "NAME=value" strings; the iovecs point into them, so reserve first.
        std::vector<std::string> items;
        items.reserve(fields.size() + 3);
        items.push_back("MESSAGE=" + std::string(message));
        items.push_back("PRIORITY=" + std::to_string(static_cast<int>(level)));
        items.emplace_back("SYSLOG_IDENTIFIER=rofd");
        for (const Field& f : fields) {
            if (valid_field_name(f.name) && f.name != "MESSAGE" && f.name != "PRIORITY" &&
                f.name != "SYSLOG_IDENTIFIER") {
                items.push_back(std::string(f.name) + "=" + f.value);
            }
        }
        std::vector<iovec> iov;
        iov.reserve(items.size());
        for (std::string& s : items) {
            iov.push_back(iovec{s.data(), s.size()});
        }
        if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) {
            return;
        }
        // journald went away: fall through to stderr rather than lose it.
    }
    log::write(level, format_line(message, fields));
}

}  // namespace rofd::journal
