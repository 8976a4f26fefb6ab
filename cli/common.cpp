// SPDX-License-Identifier: MIT
// Helpers shared by the object files: exit statuses, the client, values
// from the command line.
#include <cctype>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "policy.h"

namespace rofctl {

int exit_status(rof::Code code) noexcept {
    switch (code) {
        case rof::Code::ok:
            return exit_ok;
        case rof::Code::unavailable:
        case rof::Code::deadline_exceeded:
        case rof::Code::cancelled:
            return exit_unreachable;
        case rof::Code::not_found:
            return exit_not_found;
        case rof::Code::permission_denied:
        case rof::Code::unauthenticated:
            return exit_denied;
        case rof::Code::already_exists:
        case rof::Code::failed_precondition:
        case rof::Code::aborted:
            return exit_conflict;
        case rof::Code::invalid_argument:
        case rof::Code::out_of_range:
            return exit_invalid;
        case rof::Code::resource_exhausted:
            return exit_exhausted;
        default:
            return exit_error;
    }
}

rof::ClientOptions client_options(const Globals& g) {
    rof::ClientOptions o;
    if (!g.connect.empty()) {
        if (!g.socket.empty()) {
            throw UsageError("--socket and --connect exclude each other");
        }
        o.target = g.connect;
    } else {
        o.target = g.socket;
        if (!g.tls_ca.empty() || !g.tls_cert.empty() || !g.tls_key.empty()) {
            throw UsageError("--tls-ca, --tls-cert and --tls-key need --connect");
        }
    }
    o.tls_ca = g.tls_ca;
    o.tls_cert = g.tls_cert;
    o.tls_key = g.tls_key;
    // Interactive: no rofd is said at once (exit 3), not after the deadline.
    o.wait_for_ready = false;
    if (g.timeout_ms > 0) {
        o.deadline = std::chrono::milliseconds(g.timeout_ms);
    }
    return o;
}

rof::Client& Connection::client() {
    if (!client_) {
        client_ = std::make_unique<rof::Client>(client_options(globals_));
    }
    return *client_;
}

rof::Session& Connection::session(const std::string& tenant) {
    if (auto it = sessions_.find(tenant); it != sessions_.end()) {
        return it->second;
    }
    rof::SessionOptions so;
    so.tenant = tenant;
    if (globals_.timeout_ms > 0) {
        so.connect_timeout = so.op_timeout = std::chrono::milliseconds(globals_.timeout_ms);
    }
    return sessions_.emplace(tenant, rof::Session::open(client(), so)).first->second;
}

void Connection::forget_session(const std::string& tenant) {
    sessions_.erase(tenant);
}

void add_output_option(CLI::App& verb, std::string& output) {
    verb.add_option("-o,--output", output, "wide: every column, not only those that matter")
        ->check(CLI::IsMember({"wide"}));
}

std::uint32_t parse_access(const std::string& text) {
    std::uint32_t bits = 0;
    for (const char c : text) {
        const std::uint32_t bit = c == 'r'   ? rof::v1::ACCESS_READ
                                  : c == 'w' ? rof::v1::ACCESS_WRITE
                                  : c == 'a' ? rof::v1::ACCESS_ATOMIC
                                             : 0;
        if (bit == 0 || (bits & bit) != 0) {
            throw UsageError("access \"" + text + "\": want letters of r, w, a, each once");
        }
        bits |= bit;
    }
    if (bits == 0) {
        throw UsageError("access: empty");
    }
    return bits;
}

std::uint64_t parse_size(const std::string& text) {
    const auto v = rof::policy::parse_size(text);
    if (!v) {
        throw UsageError("size \"" + text + "\": want bytes, e.g. 65536, 64KiB, 16MiB");
    }
    return *v;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(path + ": cannot read");
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string parse_bytes(const std::string& text) {
    if (text.starts_with("@")) {
        return read_file(text.substr(1));
    }
    std::string hex;
    std::string_view t = text;
    if (t.starts_with("0x") || t.starts_with("0X")) {
        t.remove_prefix(2);
    }
    for (const char c : t) {
        if (std::isspace(static_cast<unsigned char>(c)) || c == ':') {
            continue;
        }
        if (!std::isxdigit(static_cast<unsigned char>(c))) {
            throw UsageError("\"" + text + "\": want hex bytes or @FILE");
        }
        hex += c;
    }
    if (hex.size() % 2 != 0) {
        throw UsageError("\"" + text + "\": odd number of hex digits");
    }
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    return out;
}

}  // namespace rofctl
