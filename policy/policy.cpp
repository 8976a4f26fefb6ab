// SPDX-License-Identifier: MIT
// rof policy: parsing and validation of rofd.toml and tenants.d/*.toml
// (docs/policy.md is the schema).  Two passes: every file is parsed first,
// so that grants can name tenants whose files come later; then each file
// is read in name order (rofd.toml first), and identities are claimed in
// that order, so a clash is reported at its second occurrence.
#include "policy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "toml_reader.h"
#include "uapi/rof.h"

namespace rof::policy {

using detail::fmt_bytes;
using detail::index;
using detail::join;
using detail::Pos;
using detail::pos_of;
using detail::quote;
using detail::Reader;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = KiB * 1024;
constexpr std::uint64_t GiB = MiB * 1024;
constexpr std::uint64_t page_size = 4096;
constexpr std::uint64_t freelist_header = 64;  // struct rof_isa_freelist
constexpr std::uint64_t u32_max = UINT32_MAX;
constexpr std::uint64_t i64_max = INT64_MAX;
constexpr std::uint32_t handshake_timeout_max_ms = 120000;  // gRPC's own default

// ---- identities -----------------------------------------------------------

// Who claimed a uid, gid or subject first: the admin role or a tenant.
struct Owner {
    bool admin = false;
    std::string tenant;
    std::string file;
    Pos pos;
};

struct Claims {
    std::map<std::uint32_t, Owner> uids;
    std::map<std::uint32_t, Owner> gids;
    std::map<std::string, Owner, std::less<>> subjects;
};

// Claims @key for @me; reports and returns false if it is taken already.
template <class Map, class Key>
bool claim(Reader& r, Map& claims, const Key& key, std::string_view what, const Owner& me,
           std::string_view path) {
    auto [it, inserted] = claims.try_emplace(key, me);
    if (inserted) {
        return true;
    }
    const Owner& first = it->second;
    std::string at =
        first.file + ":" + std::to_string(first.pos.line) + ":" + std::to_string(first.pos.col);
    std::string msg = std::string(path) + ": " + std::string(what);
    if (first.admin == me.admin && first.tenant == me.tenant && first.file == me.file) {
        msg += " is listed twice (first at " + at + ")";
    } else if (first.admin) {
        msg += " is an admin identity (" + at + "); an identity is either admin or one tenant's";
    } else {
        msg += " already belongs to tenant " + quote(first.tenant) + " (" + at + ")";
    }
    r.error(me.pos, std::move(msg));
    return false;
}

// [admin] of rofd.toml, [identity] of a tenant.
void read_identity(Reader& r, const toml::table& t, std::string_view path, Identity& id, Owner me,
                   Claims& claims) {
    r.check_keys(t, path, {"uids", "gids", "subjects"});
    if (auto a = r.array(t, path, "uids")) {
        for (std::size_t i = 0; i < a->size(); i++) {
            const toml::node& n = *a->get(i);
            std::string p = index(join(path, "uids"), i);
            // (uid_t)-1 is "no uid" to the kernel, never a caller.
            auto v = r.integer_node(n, p, 0, u32_max - 1);
            if (!v) {
                continue;
            }
            auto uid = static_cast<std::uint32_t>(*v);
            me.pos = pos_of(n);
            if (uid == 0 && !me.admin) {
                r.error(me.pos, p + ": uid 0 is always admin; it cannot be a tenant's");
                continue;
            }
            if (claim(r, claims.uids, uid, "uid " + std::to_string(uid), me, p)) {
                id.uids.push_back(static_cast<uid_t>(uid));
            }
        }
    }
    if (auto a = r.array(t, path, "gids")) {
        for (std::size_t i = 0; i < a->size(); i++) {
            const toml::node& n = *a->get(i);
            std::string p = index(join(path, "gids"), i);
            auto v = r.integer_node(n, p, 0, u32_max - 1);
            if (!v) {
                continue;
            }
            auto gid = static_cast<std::uint32_t>(*v);
            me.pos = pos_of(n);
            if (claim(r, claims.gids, gid, "gid " + std::to_string(gid), me, p)) {
                id.gids.push_back(static_cast<gid_t>(gid));
            }
        }
    }
    if (auto a = r.array(t, path, "subjects")) {
        for (std::size_t i = 0; i < a->size(); i++) {
            const toml::node& n = *a->get(i);
            std::string p = index(join(path, "subjects"), i);
            auto s = r.string_node(n, p);
            if (!s) {
                continue;
            }
            me.pos = pos_of(n);
            if (s->empty()) {
                r.error(me.pos, p + ": empty certificate subject");
                continue;
            }
            if (claim(r, claims.subjects, *s, "subject " + quote(*s), me, p)) {
                id.subjects.push_back(*s);
            }
        }
    }
}

// ---- addresses and paths --------------------------------------------------

struct HostPort {
    std::string host;  // without the brackets of an IPv6 literal
    std::uint32_t port = 0;
};

// Port 0 ("any free port") only when @port_zero.
std::optional<HostPort> split_host_port(std::string_view s, bool port_zero) {
    HostPort hp;
    std::string_view port;
    if (!s.empty() && s.front() == '[') {
        auto close = s.find(']');
        if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
            return std::nullopt;
        }
        hp.host = std::string(s.substr(1, close - 1));
        port = s.substr(close + 2);
        in6_addr a6{};
        if (inet_pton(AF_INET6, hp.host.c_str(), &a6) != 1) {
            return std::nullopt;
        }
    } else {
        auto colon = s.rfind(':');
        if (colon == std::string_view::npos) {
            return std::nullopt;
        }
        hp.host = std::string(s.substr(0, colon));
        port = s.substr(colon + 1);
        if (hp.host.empty()) {
            return std::nullopt;
        }
        for (char c : hp.host) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
                return std::nullopt;
            }
        }
    }
    if (port.empty() || port.size() > 5) {
        return std::nullopt;
    }
    for (char c : port) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        hp.port = hp.port * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if ((hp.port == 0 && !port_zero) || hp.port > 65535) {
        return std::nullopt;
    }
    return hp;
}

// An IPv4 loopback literal, 127.0.0.0/8: what the metrics endpoint
// (prometheus-cpp's civetweb, built without IPv6 in Debian) can listen on.
bool is_loopback(const std::string& host) {
    in_addr a4{};
    return inet_pton(AF_INET, host.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

bool is_ip(const std::string& host) {
    in_addr a4{};
    in6_addr a6{};
    return inet_pton(AF_INET, host.c_str(), &a4) == 1 ||
           inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

// "host:port"; @loopback_only for endpoints without authentication;
// @port_zero lets the kernel pick a free port (for tests: the listener
// reports the port it got).
std::optional<std::string> read_address(Reader& r, const toml::table& t, std::string_view path,
                                        std::string_view key, bool loopback_only,
                                        bool port_zero = false) {
    auto s = r.string(t, path, key);
    if (!s) {
        return std::nullopt;
    }
    Pos p = pos_of(*t.get(key));
    auto hp = split_host_port(*s, port_zero);
    if (!hp) {
        r.error(p, join(path, key) + ": " + quote(*s) +
                       (loopback_only
                            ? R"( is not "host:port" (e.g. "127.0.0.1:9464"))"
                            : R"( is not "host:port" (e.g. "127.0.0.1:9464" or "[::1]:9464"))"));
        return std::nullopt;
    }
    if (loopback_only && !is_loopback(hp->host)) {
        r.error(p, join(path, key) + ": " + quote(*s) +
                       " is not an IPv4 loopback address (127.0.0.0/8); this endpoint has no "
                       "authentication (use 127.0.0.1)");
        return std::nullopt;
    }
    return s;
}

std::optional<std::string> read_abs_path(Reader& r, const toml::table& t, std::string_view path,
                                         std::string_view key, std::size_t max_len = 4095) {
    auto s = r.string(t, path, key);
    if (!s) {
        return std::nullopt;
    }
    Pos p = pos_of(*t.get(key));
    if (s->empty() || s->front() != '/') {
        r.error(p, join(path, key) + ": " + quote(*s) + " is not an absolute path");
        return std::nullopt;
    }
    if (s->size() > max_len) {
        r.error(p, join(path, key) + ": the path is " + std::to_string(s->size()) +
                       " bytes long, at most " + std::to_string(max_len) + " fit");
        return std::nullopt;
    }
    return s;
}

template <class T>
void set(T& field, std::optional<std::uint64_t> v) {
    if (v) {
        field = static_cast<T>(*v);
    }
}

// ---- rofd.toml ------------------------------------------------------------

void read_daemon(Reader& r, const toml::table& root, Daemon& d, Claims& claims) {
    r.check_keys(root, "", {"admin", "listen", "metrics", "state", "sessions", "limits"});

    if (auto t = r.table(root, "", "admin")) {
        read_identity(r, *t, "admin", d.admin, Owner{true, "", r.file(), {}}, claims);
    }

    if (auto t = r.table(root, "", "listen")) {
        r.check_keys(*t, "listen", {"socket", "tcp"});
        // sockaddr_un.sun_path holds 108 bytes with the NUL.
        if (auto s = read_abs_path(r, *t, "listen", "socket", 107)) {
            d.socket = *s;
        }
        if (auto tcp = r.table(*t, "listen", "tcp")) {
            const std::string path = "listen.tcp";
            r.check_keys(*tcp, path, {"enabled", "address", "cert", "key", "client_ca"});
            if (auto b = r.boolean(*tcp, path, "enabled")) {
                d.tcp.enabled = *b;
            }
            if (auto s = read_address(r, *tcp, path, "address", false, true)) {
                d.tcp.address = *s;
            }
            if (auto s = read_abs_path(r, *tcp, path, "cert")) {
                d.tcp.cert = *s;
            }
            if (auto s = read_abs_path(r, *tcp, path, "key")) {
                d.tcp.key = *s;
            }
            if (auto s = read_abs_path(r, *tcp, path, "client_ca")) {
                d.tcp.client_ca = *s;
            }
            if (d.tcp.enabled) {
                for (auto key : {"cert", "key", "client_ca"}) {
                    if (!tcp->contains(key)) {
                        r.error(pos_of(*tcp), path + ": enabled, but " + quote(key) +
                                                  " is missing (TLS needs cert, key and "
                                                  "client_ca)");
                    }
                }
            }
        }
    }

    if (auto t = r.table(root, "", "metrics")) {
        r.check_keys(*t, "metrics", {"enabled", "address"});
        if (auto b = r.boolean(*t, "metrics", "enabled")) {
            d.metrics.enabled = *b;
        }
        if (auto s = read_address(r, *t, "metrics", "address", true)) {
            d.metrics.address = *s;
        }
    }

    if (auto t = r.table(root, "", "state")) {
        r.check_keys(*t, "state", {"dir"});
        if (auto s = read_abs_path(r, *t, "state", "dir")) {
            d.state_dir = *s;
        }
    }

    if (auto t = r.table(root, "", "sessions")) {
        r.check_keys(*t, "sessions", {"address", "ticket_ttl_s", "idle_timeout_ms"});
        if (auto s = r.string(*t, "sessions", "address")) {
            if (!s->empty() && !is_ip(*s)) {
                r.error(pos_of(*t->get("address")),
                        "sessions.address: " + quote(*s) +
                            " is not an IP address (or \"\" for the RDMA netdev's first IPv4)");
            } else {
                d.session_address = *s;
            }
        }
        set(d.ticket_ttl_s, r.integer(*t, "sessions", "ticket_ttl_s", 1, ROF_TICKET_TTL_MAX_S));
        set(d.idle_timeout_ms,
            r.integer(*t, "sessions", "idle_timeout_ms", 0, ROF_SESSION_IDLE_MAX_MS));
    }

    if (auto t = r.table(root, "", "limits")) {
        const std::string path = "limits";
        r.check_keys(
            *t, path,
            {"max_message_bytes", "max_concurrent_streams", "memory_bytes",
             "audit_streams_per_tenant", "audit_streams_admin", "default_deadline_ms",
             "handshake_timeout_ms", "keepalive_ms", "keepalive_timeout_ms", "connection_idle_ms",
             "queued_calls_per_tenant", "refusals_journalled_per_s", "connections_per_uid",
             "tenant_removal_grace_ms", "connection_age_ms", "connection_age_grace_ms"});
        set(d.max_message_bytes, r.size(*t, path, "max_message_bytes", 4 * KiB, GiB));
        set(d.max_concurrent_streams, r.integer(*t, path, "max_concurrent_streams", 1, 65536));
        set(d.memory_bytes, r.size(*t, path, "memory_bytes", MiB, 1024 * GiB));
        set(d.audit_streams_per_tenant, r.integer(*t, path, "audit_streams_per_tenant", 0, 64));
        set(d.audit_streams_admin, r.integer(*t, path, "audit_streams_admin", 1, 64));
        set(d.default_deadline_ms, r.integer(*t, path, "default_deadline_ms", 1, ROF_MS_PER_DAY));
        set(d.queued_calls_per_tenant, r.integer(*t, path, "queued_calls_per_tenant", 1, 4096));
        set(d.refusals_journalled_per_s,
            r.integer(*t, path, "refusals_journalled_per_s", 1, 100000));
        set(d.connections_per_uid, r.integer(*t, path, "connections_per_uid", 1, 65536));
        set(d.tenant_removal_grace_ms,
            r.integer(*t, path, "tenant_removal_grace_ms", 0, ROF_REMOVAL_GRACE_MAX_MS));
        set(d.handshake_timeout_ms,
            r.integer(*t, path, "handshake_timeout_ms", 1000, handshake_timeout_max_ms));
        set(d.keepalive_ms, r.integer(*t, path, "keepalive_ms", 1000, ROF_MS_PER_DAY));
        set(d.keepalive_timeout_ms,
            r.integer(*t, path, "keepalive_timeout_ms", 1000, ROF_MS_PER_DAY));
        set(d.connection_idle_ms, r.integer(*t, path, "connection_idle_ms", 1000, ROF_MS_PER_DAY));
        set(d.connection_age_ms, r.integer(*t, path, "connection_age_ms", 1000, ROF_MS_PER_DAY));
        set(d.connection_age_grace_ms,
            r.integer(*t, path, "connection_age_grace_ms", 1000, ROF_MS_PER_DAY));
    }
}

// ---- tenants.d/NAME.toml --------------------------------------------------

std::optional<AuditLevel> audit_level_from_name(std::string_view s) {
    for (auto a : {AuditLevel::none, AuditLevel::errors, AuditLevel::sessions, AuditLevel::all}) {
        if (audit_level_name(a) == s) {
            return a;
        }
    }
    return std::nullopt;
}

std::optional<std::uint32_t> right_from_name(std::string_view s) {
    if (s == "read") {
        return ROF_ACCESS_READ;
    }
    if (s == "write") {
        return ROF_ACCESS_WRITE;
    }
    if (s == "atomic") {
        return ROF_ACCESS_ATOMIC;
    }
    return std::nullopt;
}

void read_rate(Reader& r, const toml::table& t, std::string_view path, Rate& rate) {
    r.check_keys(t, path, {"ops_per_sec", "bytes_per_sec"});
    set(rate.ops_per_sec, r.integer(t, path, "ops_per_sec", 0, ROF_RATE_MAX));
    set(rate.bytes_per_sec, r.integer(t, path, "bytes_per_sec", 0, ROF_RATE_MAX));
}

// A quota key: a count (a size for region_bytes), or "unlimited".
template <typename T>
void read_limit(Reader& r, const toml::table& t, std::string_view path, std::string_view key,
                T& out, bool is_size) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
        return;
    }
    if (auto s = n->as_string(); s != nullptr && s->get() == "unlimited") {
        out = std::numeric_limits<T>::max();
        return;
    }
    const std::string p = join(path, key);
    set(out, is_size ? r.size_node(*n, p, 0, i64_max) : r.integer_node(*n, p, 0, u32_max));
}

void read_quota(Reader& r, const toml::table& t, Quota& q) {
    const std::string path = "quota";
    r.check_keys(t, path, {"region_bytes", "regions", "sessions", "programs", "credits"});
    read_limit(r, t, path, "region_bytes", q.region_bytes, true);
    read_limit(r, t, path, "regions", q.regions, false);
    read_limit(r, t, path, "sessions", q.sessions, false);
    read_limit(r, t, path, "programs", q.programs, false);
    set(q.credits, r.integer(t, path, "credits", 1, ROF_CREDITS_QUOTA_MAX));
}

void read_programs(Reader& r, const toml::table& t, ProgramLimits& pl) {
    const std::string path = "programs";
    r.check_keys(t, path,
                 {"max_insns", "max_executed", "max_bytes", "max_trip", "classes", "stored_bytes"});
    set(pl.max_insns, r.integer(t, path, "max_insns", 1, ROF_ISA_MAX_INSNS));
    set(pl.max_executed, r.integer(t, path, "max_executed", 1, i64_max));
    set(pl.max_bytes, r.size(t, path, "max_bytes", 1, i64_max));
    set(pl.max_trip, r.integer(t, path, "max_trip", 1, ROF_ISA_MAX_TRIP));
    set(pl.stored_bytes, r.size(t, path, "stored_bytes", 0, i64_max));
    if (auto a = r.array(t, path, "classes")) {
        std::uint32_t classes = 0;
        for (std::size_t i = 0; i < a->size(); i++) {
            const toml::node& n = *a->get(i);
            std::string p = index("programs.classes", i);
            auto s = r.string_node(n, p);
            if (!s) {
                continue;
            }
            auto c = insn_class_from_name(*s);
            if (!c) {
                r.error(pos_of(n), p + ": " + quote(*s) +
                                       " is not an instruction class (alu, jmp, loop, ld, st, "
                                       "atomic, alloc, copy, hash)");
            } else if (classes & *c) {
                r.error(pos_of(n), p + ": " + quote(*s) + " is listed twice");
            } else {
                classes |= *c;
            }
        }
        pl.classes = classes;
    }
}

void read_sessions(Reader& r, const toml::table& t, SessionSettings& ss) {
    const std::string path = "sessions";
    r.check_keys(t, path, {"message_bytes"});
    if (auto v = r.size(t, path, "message_bytes", ROF_MSG_SIZE, ROF_MSG_SIZE_MAX)) {
        if ((*v & (*v - 1)) != 0) {
            r.error(pos_of(*t.get("message_bytes")),
                    "sessions.message_bytes: " + std::to_string(*v) +
                        " is not a power of two (1024, 2048, 4096, ... 65536)");
        } else {
            ss.message_bytes = static_cast<std::uint32_t>(*v);
        }
    }
}

void read_quarantine(Reader& r, const toml::table& t, Quarantine& q) {
    const std::string path = "quarantine";
    r.check_keys(t, path, {"window_s", "max_faults", "max_completion_errors", "max_bad_requests"});
    set(q.window_s, r.integer(t, path, "window_s", 1, ROF_S_PER_DAY));
    set(q.max_faults, r.integer(t, path, "max_faults", 0, u32_max));
    set(q.max_completion_errors, r.integer(t, path, "max_completion_errors", 0, u32_max));
    set(q.max_bad_requests, r.integer(t, path, "max_bad_requests", 0, u32_max));
}

// One [[regions.freelists]] entry of a region of @size bytes (0: unknown,
// after an error); checked against the lists @before it.
void read_freelist(Reader& r, const toml::table& t, const std::string& path,
                   std::uint64_t region_size, std::vector<FreeListDecl>& before,
                   std::vector<std::size_t>& before_index, std::size_t i) {
    Pos at = pos_of(t);
    r.check_keys(t, path, {"block_size", "offset", "count"});
    bool ok = true;
    for (auto key : {"block_size", "offset", "count"}) {
        ok = r.require(t, at, path, key) && ok;
    }
    FreeListDecl fl;
    if (auto v = r.integer(t, path, "block_size", 8, u32_max)) {
        if (*v % 8 != 0) {
            r.error(
                pos_of(*t.get("block_size")),
                join(path, "block_size") + ": " + std::to_string(*v) + " is not a multiple of 8");
            ok = false;
        }
        fl.block_size = static_cast<std::uint32_t>(*v);
    } else {
        ok = false;
    }
    if (auto v = r.integer(t, path, "offset", 0, i64_max)) {
        if (*v % 8 != 0) {
            r.error(pos_of(*t.get("offset")),
                    join(path, "offset") + ": " + std::to_string(*v) + " is not a multiple of 8");
            ok = false;
        }
        fl.offset = *v;
    } else {
        ok = false;
    }
    if (auto v = r.integer(t, path, "count", 1, ROF_FREELIST_BLOCKS_MAX)) {
        fl.count = static_cast<std::uint32_t>(*v);
    } else {
        ok = false;
    }
    if (!ok || region_size == 0) {
        return;
    }
    // count <= 2^20 and block_size < 2^32: no overflow below 2^63.
    std::uint64_t len = freelist_header + std::uint64_t{fl.count} * fl.block_size;
    if (fl.offset > region_size || len > region_size - fl.offset) {
        r.error(at, path + ": the list needs bytes [" + std::to_string(fl.offset) + ", " +
                        std::to_string(fl.offset + len) + ") (64-byte header + " +
                        std::to_string(fl.count) + " x " + std::to_string(fl.block_size) +
                        "), past the end of the " + fmt_bytes(region_size) + " region");
        return;
    }
    for (std::size_t j = 0; j < before.size(); j++) {
        const FreeListDecl& o = before[j];
        std::uint64_t olen = freelist_header + std::uint64_t{o.count} * o.block_size;
        if (fl.offset < o.offset + olen && o.offset < fl.offset + len) {
            r.error(at, path + ": bytes [" + std::to_string(fl.offset) + ", " +
                            std::to_string(fl.offset + len) + ") overlap freelists[" +
                            std::to_string(before_index[j]) + "] [" + std::to_string(o.offset) +
                            ", " + std::to_string(o.offset + olen) + ")");
            return;
        }
    }
    before.push_back(fl);
    before_index.push_back(i);
}

struct RegionSeen {
    std::size_t index;  // into Tenant::regions
    std::uint32_t access;
};

void read_regions(Reader& r, const toml::array& a, Tenant& tenant,
                  std::map<std::string, RegionSeen, std::less<>>& by_name) {
    std::uint64_t total = 0;
    bool over_bytes = false;
    for (std::size_t i = 0; i < a.size(); i++) {
        const std::string path = index("regions", i);
        const toml::table* t = r.table_node(*a.get(i), path);
        if (!t) {
            continue;
        }
        Pos at = pos_of(*t);
        r.check_keys(*t, path, {"name", "size", "access", "freelists"});
        if (i == tenant.quota.regions) {
            r.error(at, path + ": " + std::to_string(i + 1) +
                            " regions declared, more than quota.regions (" +
                            std::to_string(tenant.quota.regions) + ")");
        }
        RegionDecl reg;
        reg.line = at.line;
        bool ok = true;

        if (r.require(*t, at, path, "name")) {
            const toml::node& n = *t->get("name");
            if (auto name = r.name_node(n, join(path, "name"))) {
                if (auto it = by_name.find(*name); it != by_name.end()) {
                    r.error(pos_of(n), join(path, "name") + ": region " + quote(*name) +
                                           " is declared twice (first at line " +
                                           std::to_string(tenant.regions[it->second.index].line) +
                                           ")");
                    ok = false;
                }
                reg.name = *name;
            } else {
                ok = false;
            }
        } else {
            ok = false;
        }

        if (r.require(*t, at, path, "size")) {
            const toml::node& n = *t->get("size");
            if (auto v = r.size_node(n, join(path, "size"), page_size, ROF_REGION_SIZE_MAX)) {
                if (*v % page_size != 0) {
                    r.error(pos_of(n), join(path, "size") + ": " + fmt_bytes(*v) +
                                           " is not a multiple of the page size (4096)");
                } else {
                    reg.size = *v;
                    total += *v;
                    if (!over_bytes && total > tenant.quota.region_bytes) {
                        over_bytes = true;
                        r.error(pos_of(n), join(path, "size") +
                                               ": the regions declared so far "
                                               "need " +
                                               fmt_bytes(total) +
                                               ", more than quota.region_bytes (" +
                                               fmt_bytes(tenant.quota.region_bytes) + ")");
                    }
                }
            }
        }

        if (r.require(*t, at, path, "access")) {
            if (auto ra = r.array(*t, path, "access")) {
                if (ra->empty()) {
                    r.error(pos_of(*ra), join(path, "access") +
                                             ": empty; give at least one of read, write, atomic");
                }
                for (std::size_t j = 0; j < ra->size(); j++) {
                    const toml::node& n = *ra->get(j);
                    std::string p = index(join(path, "access"), j);
                    auto s = r.string_node(n, p);
                    if (!s) {
                        continue;
                    }
                    auto bit = right_from_name(*s);
                    if (!bit) {
                        r.error(pos_of(n),
                                p + ": " + quote(*s) + " is not a right (read, write, atomic)");
                    } else if (reg.access & *bit) {
                        r.error(pos_of(n), p + ": " + quote(*s) + " is listed twice");
                    } else {
                        reg.access |= *bit;
                    }
                }
            }
        }

        if (auto fa = r.array(*t, path, "freelists")) {
            if (fa->size() > ROF_REGION_FREELISTS_MAX) {
                r.error(pos_of(*fa), join(path, "freelists") + ": " + std::to_string(fa->size()) +
                                         " free lists; a region has at most " +
                                         std::to_string(ROF_REGION_FREELISTS_MAX));
            }
            std::vector<FreeListDecl> valid;
            std::vector<std::size_t> valid_index;
            for (std::size_t j = 0; j < fa->size(); j++) {
                std::string p = index(join(path, "freelists"), j);
                if (auto ft = r.table_node(*fa->get(j), p)) {
                    read_freelist(r, *ft, p, reg.size, valid, valid_index, j);
                }
            }
            reg.freelists = std::move(valid);
        }

        if (ok) {
            by_name.emplace(reg.name, RegionSeen{tenant.regions.size(), reg.access});
        }
        tenant.regions.push_back(std::move(reg));
    }
}

void read_grants(Reader& r, const toml::array& a, Tenant& tenant,
                 const std::map<std::string, RegionSeen, std::less<>>& regions,
                 const std::set<std::string, std::less<>>& tenant_names) {
    for (std::size_t i = 0; i < a.size(); i++) {
        const std::string path = index("grants", i);
        const toml::table* t = r.table_node(*a.get(i), path);
        if (!t) {
            continue;
        }
        Pos at = pos_of(*t);
        r.check_keys(*t, path, {"region", "to", "write"});
        GrantDecl g;
        g.line = at.line;
        bool ok = r.require(*t, at, path, "region");
        ok = r.require(*t, at, path, "to") && ok;
        const RegionSeen* region = nullptr;
        if (auto n = t->get("region")) {
            if (auto name = r.name_node(*n, join(path, "region"))) {
                g.region = *name;
                auto it = regions.find(*name);
                if (it == regions.end()) {
                    r.error(pos_of(*n), join(path, "region") + ": no region " + quote(*name) +
                                            " in this file (a tenant grants only its own "
                                            "regions)");
                    ok = false;
                } else if (!(it->second.access & ROF_ACCESS_READ)) {
                    r.error(pos_of(*n), join(path, "region") + ": region " + quote(*name) +
                                            " does not have the \"read\" right, which every "
                                            "grant gives");
                    ok = false;
                } else {
                    region = &it->second;
                }
            } else {
                ok = false;
            }
        }
        if (auto n = t->get("to")) {
            if (auto name = r.name_node(*n, join(path, "to"))) {
                g.to = *name;
                if (*name == tenant.name) {
                    r.error(pos_of(*n),
                            join(path, "to") + ": a tenant cannot grant a region to itself");
                    ok = false;
                } else if (!tenant_names.contains(*name)) {
                    r.error(pos_of(*n), join(path, "to") + ": no tenant " + quote(*name) + " (no " +
                                            *name + ".toml among the tenant files)");
                    ok = false;
                }
            } else {
                ok = false;
            }
        }
        if (auto w = r.boolean(*t, path, "write")) {
            g.write = *w;
            if (*w && region && !(region->access & ROF_ACCESS_WRITE)) {
                r.error(pos_of(*t->get("write")), join(path, "write") + ": region " +
                                                      quote(g.region) +
                                                      " does not have the \"write\" right");
                ok = false;
            }
        }
        if (!ok) {
            continue;
        }
        for (const GrantDecl& o : tenant.grants) {
            if (o.region == g.region && o.to == g.to) {
                r.error(at, path + ": region " + quote(g.region) + " is already granted to " +
                                quote(g.to) + " (line " + std::to_string(o.line) + ")");
                ok = false;
                break;
            }
        }
        if (ok) {
            tenant.grants.push_back(std::move(g));
        }
    }
}

void read_tenant(Reader& r, const toml::table& root, Tenant& tenant,
                 const std::set<std::string, std::less<>>& tenant_names,
                 std::map<std::string, std::string, std::less<>>& declared, Claims& claims) {
    r.check_keys(root, "",
                 {"name", "audit", "invoke_records", "control_rate", "identity", "quota", "rate",
                  "programs", "quarantine", "sessions", "regions", "grants"});
    const std::string file_name = std::filesystem::path(r.file()).filename().string();
    const std::string stem = std::filesystem::path(r.file()).stem().string();
    tenant.name = stem;
    if (r.require(root, Pos{}, "", "name")) {
        const toml::node& n = *root.get("name");
        if (auto name = r.name_node(n, "name")) {
            if (*name != stem) {
                r.error(pos_of(n), "name: " + quote(*name) + " does not match the file name " +
                                       quote(file_name) + " (tenant " + quote(*name) +
                                       " belongs in " + *name + ".toml)");
            } else if (auto it = declared.find(*name); it != declared.end()) {
                r.error(pos_of(n), "name: tenant " + quote(*name) + " is declared twice (also in " +
                                       it->second + ")");
            } else {
                declared.emplace(*name, r.file());
            }
        }
    }

    if (auto s = r.string(root, "", "audit")) {
        if (auto a = audit_level_from_name(*s)) {
            tenant.audit = *a;
        } else {
            r.error(pos_of(*root.get("audit")),
                    "audit: " + quote(*s) + " is not an audit level (none, errors, sessions, all)");
        }
    }
    if (auto s = r.string(root, "", "invoke_records")) {
        if (auto v = invoke_records_from_name(*s)) {
            tenant.invoke_records = *v;
        } else {
            r.error(pos_of(*root.get("invoke_records")),
                    "invoke_records: " + quote(*s) +
                        " is not all, errors or sample:N with N 2 .. " +
                        std::to_string(ROF_INVOKE_SAMPLE_MAX));
        }
    }
    set(tenant.control_rate, r.integer(root, "", "control_rate", 0, 1000000));

    if (auto t = r.table(root, "", "identity")) {
        read_identity(r, *t, "identity", tenant.identity, Owner{false, tenant.name, r.file(), {}},
                      claims);
    }
    if (auto t = r.table(root, "", "quota")) {
        read_quota(r, *t, tenant.quota);
    }
    if (auto t = r.table(root, "", "rate")) {
        r.check_keys(*t, "rate", {"session", "tenant"});
        if (auto s = r.table(*t, "rate", "session")) {
            read_rate(r, *s, "rate.session", tenant.session_rate);
        }
        if (auto s = r.table(*t, "rate", "tenant")) {
            read_rate(r, *s, "rate.tenant", tenant.tenant_rate);
        }
    }
    if (auto t = r.table(root, "", "programs")) {
        read_programs(r, *t, tenant.programs);
    }
    if (auto t = r.table(root, "", "quarantine")) {
        read_quarantine(r, *t, tenant.quarantine);
    }
    if (auto t = r.table(root, "", "sessions")) {
        read_sessions(r, *t, tenant.sessions);
    }

    std::map<std::string, RegionSeen, std::less<>> regions;
    if (auto a = r.array(root, "", "regions")) {
        read_regions(r, *a, tenant, regions);
    }
    if (auto a = r.array(root, "", "grants")) {
        read_grants(r, *a, tenant, regions, tenant_names);
    }
}

// ---- files ----------------------------------------------------------------

struct Source {
    std::string file;  // as diagnostics name it
    std::string text;
};

// Runs @fn(i) for every i < @n, on as many threads as the machine has CPUs (at most 16, one per
// 64 items): a policy's files are read and parsed apart from each other, and with 10,000 tenants
// that was most of the policy's load (natively 128 of 205 ms against the fake module), the other
// CPUs idle.  The first exception @fn throws is thrown again here once every thread has stopped;
// a thread that cannot be made leaves its share to the others.
template <typename Fn>
void for_each_index(std::size_t n, Fn fn) {
    constexpr std::size_t kPerThread = 64;
    constexpr std::size_t kMaxThreads = 16;
    const std::size_t threads =
        std::min({std::max<std::size_t>(1, std::thread::hardware_concurrency()),
                  (n + kPerThread - 1) / kPerThread, kMaxThreads});
    std::atomic<std::size_t> next{0};
    std::mutex mu;
    std::exception_ptr failed;
    auto work = [&] {
        try {
            for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
                fn(i);
            }
        } catch (...) {
            const std::scoped_lock lock(mu);
            if (!failed) {
                failed = std::current_exception();
            }
            next.store(n, std::memory_order_relaxed);
        }
    };
    {
        std::vector<std::jthread> pool;
        for (std::size_t t = 1; t < threads; t++) {
            try {
                pool.emplace_back(work);
            } catch (const std::system_error&) {
                break;
            }
        }
        work();
    }
    if (failed) {
        std::rethrow_exception(failed);
    }
}

std::optional<toml::table> parse_toml(const Source& s, std::vector<Diagnostic>& errors) {
    try {
        return toml::parse(s.text, std::string_view(s.file));
    } catch (const toml::parse_error& e) {
        errors.push_back(Diagnostic{s.file, e.source().begin.line, e.source().begin.column,
                                    std::string(e.description())});
        return std::nullopt;
    }
}

// @daemon: std::nullopt for all defaults.  @errors: those found reading
// the files already.
LoadResult run(std::optional<Source> daemon, std::string daemon_file, std::vector<Source> tenants,
               std::vector<Diagnostic> errors) {
    // By file name, each name taken out of its path once: a path built per comparison cost as
    // much as parsing the files (10,000 tenants: 280,000 paths).
    {
        std::vector<std::pair<std::string, std::size_t>> order;
        order.reserve(tenants.size());
        for (std::size_t i = 0; i < tenants.size(); i++) {
            order.emplace_back(std::filesystem::path(tenants[i].file).filename().string(), i);
        }
        std::stable_sort(order.begin(), order.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<Source> sorted;
        sorted.reserve(tenants.size());
        for (const auto& o : order) {
            sorted.push_back(std::move(tenants[o.second]));
        }
        tenants = std::move(sorted);
    }

    Policy policy;
    policy.daemon.file = std::move(daemon_file);
    Claims claims;
    if (daemon) {
        if (auto root = parse_toml(*daemon, errors)) {
            Reader r(daemon->file, errors);
            read_daemon(r, *root, policy.daemon, claims);
        }
    }

    std::set<std::string, std::less<>> names;
    for (const Source& s : tenants) {
        names.insert(std::filesystem::path(s.file).stem().string());
    }
    std::map<std::string, std::string, std::less<>> declared;
    // Parsed on every CPU, read in order: what a tenant declares depends on the files before it.
    std::vector<std::optional<toml::table>> roots(tenants.size());
    std::vector<std::vector<Diagnostic>> parse_errors(tenants.size());
    for_each_index(tenants.size(),
                   [&](std::size_t i) { roots[i] = parse_toml(tenants[i], parse_errors[i]); });
    for (std::size_t i = 0; i < tenants.size(); i++) {
        const Source& s = tenants[i];
        auto& root = roots[i];
        errors.insert(errors.end(), std::make_move_iterator(parse_errors[i].begin()),
                      std::make_move_iterator(parse_errors[i].end()));
        if (!root) {
            continue;
        }
        Reader r(s.file, errors);
        Tenant t;
        t.file = s.file;
        read_tenant(r, *root, t, names, declared, claims);
        policy.tenants.push_back(std::move(t));
    }

    // Per file in load order, by position within a file.
    std::map<std::string, std::size_t, std::less<>> rank;
    if (daemon) {
        rank.emplace(daemon->file, 0);
    }
    for (const Source& s : tenants) {
        rank.emplace(s.file, rank.size());
    }
    auto rank_of = [&](const std::string& f) {
        auto it = rank.find(f);
        return it == rank.end() ? 0 : it->second;
    };
    std::stable_sort(errors.begin(), errors.end(), [&](const Diagnostic& a, const Diagnostic& b) {
        auto ra = rank_of(a.file), rb = rank_of(b.file);
        if (ra != rb) {
            return ra < rb;
        }
        if (a.file != b.file) {
            return false;
        }
        if (a.line != b.line) {
            return a.line < b.line;
        }
        return a.col < b.col;
    });

    LoadResult result;
    result.errors = std::move(errors);
    if (result.errors.empty()) {
        // Files are named after their tenants and read in name order: sorted already, as a
        // rule (sorting moved each Tenant about 14 times for 10,000 of them).
        auto by_name = [](const Tenant& a, const Tenant& b) { return a.name < b.name; };
        if (!std::is_sorted(policy.tenants.begin(), policy.tenants.end(), by_name)) {
            std::sort(policy.tenants.begin(), policy.tenants.end(), by_name);
        }
        result.policy = std::move(policy);
    }
    return result;
}

// std::nullopt, and why in @why, when @path cannot be read.  One open, one fstat and reads
// into a string of the file's size, not a stream's buffers and copies (`rofctl policy check`
// of 10,000 small files: 7-11% less CPU time).
std::optional<std::string> read_text(const std::string& path, std::string& why) {
    auto fail = [&why](int err) {
        why = std::generic_category().message(err);  // strerror is not for threads
        return std::nullopt;
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(errno);
    }
    const struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    int err = ::fstat(fd, &st) != 0 ? errno : 0;
    std::string text(err == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0, '\0');
    // To the end, whatever fstat said: a file may grow while it is read.
    std::size_t got = 0;
    while (err == 0) {
        char spare[4096];
        const bool full = got == text.size();
        const ssize_t n = full ? ::read(fd, spare, sizeof(spare))
                               : ::read(fd, text.data() + got, text.size() - got);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            err = errno == EINTR ? 0 : errno;
            continue;
        }
        if (full) {
            text.append(spare, static_cast<std::size_t>(n));
        }
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    if (err != 0) {
        return fail(err);
    }
    return text;
}

}  // namespace

// ---- the public helpers -----------------------------------------------------

std::string Diagnostic::str() const {
    if (line == 0) {
        return file + ": " + message;
    }
    return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message;
}

std::string LoadResult::error_text() const {
    std::string s;
    for (const Diagnostic& d : errors) {
        s += d.str() + "\n";
    }
    return s;
}

bool valid_name(std::string_view name) {
    return rof_name_fault(name.data(), name.size()) == ROF_NAME_OK;
}

std::optional<std::string> name_error(std::string_view name) {
    const std::string rule =
        "a name is 1 .. " + std::to_string(name_max) + " characters of " ROF_NAME_CHARSET;
    switch (rof_name_fault(name.data(), name.size())) {
        case ROF_NAME_OK:
            return std::nullopt;
        case ROF_NAME_EMPTY:
            return "empty; " + rule;
        case ROF_NAME_TOO_LONG:
            return std::to_string(name.size()) + " characters; " + rule;
        default:
            break;
    }
    // ROF_NAME_BAD_CHAR: the name shown with its bytes outside ASCII's
    // printable ones as \xNN, and the first bad one.
    auto shown = [](char c) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e) {
            static constexpr char hex[] = "0123456789abcdef";
            return std::string{'\\', 'x', hex[u >> 4], hex[u & 0xf]};
        }
        return std::string(1, c);
    };
    std::string text;
    for (char c : name) {
        text += shown(c);
    }
    const char bad = *std::find_if_not(name.begin(), name.end(), rof_name_char);
    return "\"" + text + "\" has '" + shown(bad) + "'; " + rule;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::size_t i = 0;
    std::uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        auto d = static_cast<std::uint64_t>(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return std::nullopt;
        }
        v = v * 10 + d;
        i++;
    }
    if (i == 0) {
        return std::nullopt;
    }
    if (i < text.size() && text[i] == ' ') {
        i++;
    }
    std::string_view unit = text.substr(i);
    std::uint64_t mul = 0;
    if (unit.empty() || unit == "B") {
        mul = 1;
    } else if (unit == "KiB") {
        mul = KiB;
    } else if (unit == "MiB") {
        mul = MiB;
    } else if (unit == "GiB") {
        mul = GiB;
    } else {
        return std::nullopt;
    }
    if (v > UINT64_MAX / mul) {
        return std::nullopt;
    }
    return v * mul;
}

namespace {
constexpr std::pair<InsnClass, std::string_view> insn_class_names[] = {
    {insn_alu, "alu"},     {insn_jmp, "jmp"},   {insn_loop, "loop"},
    {insn_ld, "ld"},       {insn_st, "st"},     {insn_atomic, "atomic"},
    {insn_alloc, "alloc"}, {insn_copy, "copy"}, {insn_hash, "hash"},
};
}  // namespace

std::optional<InsnClass> insn_class_from_name(std::string_view name) {
    for (const auto& [c, n] : insn_class_names) {
        if (n == name) {
            return c;
        }
    }
    return std::nullopt;
}

std::string_view insn_class_name(InsnClass c) {
    for (const auto& [k, n] : insn_class_names) {
        if (k == c) {
            return n;
        }
    }
    return "?";
}

std::string_view audit_level_name(AuditLevel a) {
    switch (a) {
        case AuditLevel::none:
            return "none";
        case AuditLevel::errors:
            return "errors";
        case AuditLevel::sessions:
            return "sessions";
        case AuditLevel::all:
            return "all";
    }
    return "?";
}

std::optional<std::uint32_t> invoke_records_from_name(std::string_view s) {
    if (s == "all") {
        return ROF_INVOKE_RECORDS_ALL;
    }
    if (s == "errors") {
        return ROF_INVOKE_RECORDS_ERRORS;
    }
    constexpr std::string_view prefix = "sample:";
    if (!s.starts_with(prefix)) {
        return std::nullopt;
    }
    std::string_view digits = s.substr(prefix.size());
    // Decimal digits only, no sign, no leading zero: one spelling per N.
    if (digits.empty() || digits.size() > 5 || digits.front() == '0' ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    std::uint32_t n = 0;
    for (char c : digits) {
        n = n * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (n < 2 || n > ROF_INVOKE_SAMPLE_MAX) {
        return std::nullopt;
    }
    return n;
}

std::string invoke_records_name(std::uint32_t v) {
    switch (v) {
        case ROF_INVOKE_RECORDS_ALL:
            return "all";
        case ROF_INVOKE_RECORDS_ERRORS:
            return "errors";
        default:
            return "sample:" + std::to_string(v);
    }
}

const Tenant* Policy::find(std::string_view name) const {
    auto it = std::lower_bound(tenants.begin(), tenants.end(), name,
                               [](const Tenant& t, std::string_view n) { return t.name < n; });
    return it != tenants.end() && it->name == name ? &*it : nullptr;
}

const Tenant* Policy::for_peer(uid_t uid, gid_t gid) const {
    for (const Tenant& t : tenants) {
        if (std::find(t.identity.uids.begin(), t.identity.uids.end(), uid) !=
            t.identity.uids.end()) {
            return &t;
        }
    }
    for (const Tenant& t : tenants) {
        if (std::find(t.identity.gids.begin(), t.identity.gids.end(), gid) !=
            t.identity.gids.end()) {
            return &t;
        }
    }
    return nullptr;
}

const Tenant* Policy::for_subject(std::string_view subject) const {
    for (const Tenant& t : tenants) {
        if (std::find(t.identity.subjects.begin(), t.identity.subjects.end(), subject) !=
            t.identity.subjects.end()) {
            return &t;
        }
    }
    return nullptr;
}

bool Policy::is_admin(uid_t uid, gid_t gid) const {
    const Identity& a = daemon.admin;
    return uid == 0 || std::find(a.uids.begin(), a.uids.end(), uid) != a.uids.end() ||
           std::find(a.gids.begin(), a.gids.end(), gid) != a.gids.end();
}

LoadResult parse(std::string_view daemon_text, std::string_view daemon_file,
                 const std::vector<std::pair<std::string, std::string>>& tenants) {
    std::vector<Source> sources;
    sources.reserve(tenants.size());
    for (const auto& [file, text] : tenants) {
        sources.push_back(Source{file, text});
    }
    return run(Source{std::string(daemon_file), std::string(daemon_text)}, std::string(daemon_file),
               std::move(sources), {});
}

LoadResult load(const std::string& daemon_file, const std::string& tenants_dir) {
    std::vector<Diagnostic> errors;
    std::optional<Source> daemon;
    std::string why;
    if (std::error_code dir_ec; std::filesystem::is_directory(daemon_file, dir_ec)) {
        errors.push_back(Diagnostic{daemon_file, 0, 0, "is a directory, not a file"});
    } else if (auto text = read_text(daemon_file, why)) {
        daemon = Source{daemon_file, std::move(*text)};
    } else if (std::error_code ec; std::filesystem::exists(daemon_file, ec) || ec) {
        errors.push_back(Diagnostic{daemon_file, 0, 0, "cannot read: " + why});
    }

    std::vector<Source> tenants;
    std::error_code ec;
    auto st = std::filesystem::status(tenants_dir, ec);
    if (std::filesystem::is_directory(st)) {
        // As strings: one directory's paths sort as their names do, and a path's comparison
        // splits both into components each time.
        std::vector<std::string> files;
        for (const auto& e : std::filesystem::directory_iterator(tenants_dir, ec)) {
            std::error_code ec2;
            if (e.path().extension() == ".toml" && e.is_regular_file(ec2)) {
                files.push_back(e.path().string());
            }
        }
        if (ec) {
            errors.push_back(Diagnostic{tenants_dir, 0, 0, "cannot list: " + ec.message()});
        }
        std::sort(files.begin(), files.end());
        std::vector<std::optional<std::string>> texts(files.size());
        std::vector<std::string> whys(files.size());
        for_each_index(files.size(),
                       [&](std::size_t i) { texts[i] = read_text(files[i], whys[i]); });
        for (std::size_t i = 0; i < files.size(); i++) {
            if (texts[i]) {
                tenants.push_back(Source{std::move(files[i]), std::move(*texts[i])});
            } else {
                errors.push_back(Diagnostic{files[i], 0, 0, "cannot read: " + whys[i]});
            }
        }
    } else if (std::filesystem::exists(st)) {
        errors.push_back(Diagnostic{tenants_dir, 0, 0, "not a directory"});
    } else if (ec && ec != std::errc::no_such_file_or_directory) {
        errors.push_back(Diagnostic{tenants_dir, 0, 0, "cannot read: " + ec.message()});
    }
    return run(std::move(daemon), daemon_file, std::move(tenants), std::move(errors));
}

}  // namespace rof::policy
