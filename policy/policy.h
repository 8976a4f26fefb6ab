// SPDX-License-Identifier: MIT
// rof policy: the daemon's file (/etc/rof/rofd.toml) and one file per
// tenant (/etc/rof/tenants.d/*.toml), parsed and validated into one
// immutable Policy.  rofd and `rofctl policy check` share this library;
// docs/policy.md is the schema.
//
// Every error is "file:line:col: message", pointing at the offending key
// or value (at the table when a required key is missing).  Loading never
// half-succeeds: either a whole Policy or the list of errors.
#pragma once

#include <sys/types.h>
#include <uapi/rof.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rof::policy {

struct Diagnostic {
    std::string file;
    std::uint32_t line = 0;  // 1-based; 0 when the error is about the file as a whole
    std::uint32_t col = 0;
    std::string message;
    std::string str() const;  // "file:line:col: message" ("file: message" when line is 0)
};

// Who a caller is: any uid or gid listed, or a TLS certificate subject.
struct Identity {
    std::vector<uid_t> uids;
    std::vector<gid_t> gids;
    std::vector<std::string> subjects;  // e.g. "CN=kv,O=example"
};

inline constexpr std::uint64_t unlimited = ~0ULL;

// Names of tenants, regions, free lists and programs: rof.h's rule
// (rof_name_fault()), 1 .. name_max characters of ROF_NAME_CHARSET.
inline constexpr std::size_t name_max = ROF_NAME_MAX - 1;
bool valid_name(std::string_view name);
// What is wrong with @name, then the rule: `"a b" has ' '; a name is 1 ..
// 63 characters of [A-Za-z0-9._:-]`; std::nullopt if @name is valid.  The
// policy files, rofd's calls and rofctl all say a name is wrong with it.
std::optional<std::string> name_error(std::string_view name);

// The bounds the policy files, rofd's calls and rofctl's options share are
// rof.h's (ROF_TICKET_TTL_MAX_S, ROF_REMOVAL_GRACE_MAX_MS, ROF_MS_PER_DAY, ...).

// A size as policy files write it: "4096", "4096B", "64KiB", "64 MiB",
// "1GiB", "1TiB"; std::nullopt if malformed or above 2^64 - 1.
std::optional<std::uint64_t> parse_size(std::string_view text);

// A tenant whose file says nothing is bounded (docs/policy.md, 5.3): one
// tenant must not be able to take the host's memory or fill the module's
// tables.  "unlimited" in the file sets unlimited (UINT32_MAX).
struct Quota {
    std::uint64_t region_bytes = 1ULL << 30;  // 1 GiB
    std::uint32_t regions = 64;
    std::uint32_t sessions = 256;
    std::uint32_t programs = 64;
    std::uint32_t credits = 64;  // per session, 1 .. 4096
};

// 0 = unlimited.
struct Rate {
    std::uint64_t ops_per_sec = 0;
    std::uint64_t bytes_per_sec = 0;
};

// Instruction classes a tenant's programs may use.
enum InsnClass : std::uint32_t {
    insn_alu = 1U << 0,     // ALU64/ALU32, LDIMM64
    insn_jmp = 1U << 1,     // conditional jumps, JA
    insn_loop = 1U << 2,    // LOOP
    insn_ld = 1U << 3,      // LD
    insn_st = 1U << 4,      // ST
    insn_atomic = 1U << 5,  // FAA, CAS
    insn_alloc = 1U << 6,   // ALLOC, FREE
    insn_copy = 1U << 7,    // COPY
    insn_hash = 1U << 8,    // CRC64, HASH
    insn_all = (1U << 9) - 1,
};
// "alu", "jmp", ... as in docs/policy.md; std::nullopt for an unknown name.
std::optional<InsnClass> insn_class_from_name(std::string_view name);
std::string_view insn_class_name(InsnClass c);

struct ProgramLimits {
    std::uint32_t max_insns = 4096;        // instruction slots, 1 .. ROF_ISA_MAX_INSNS (16384)
    std::uint64_t max_executed = 1000000;  // verifier's worst case, per run, >= 1
    std::uint64_t max_bytes = 1 << 20;     // byte budget (COPY/CRC64/HASH) per run, >= 1
    std::uint32_t max_trip = 65536;        // one loop's trip count, 1 .. ROF_ISA_MAX_TRIP (2^20)
    std::uint32_t classes = insn_all;      // InsnClass bits
    // Bytes of program source, image and disassembly rofd keeps for the
    // tenant, all its programs together (16 MiB: ~16 programs at the 1 MiB
    // source limit, thousands of small ones).
    std::uint64_t stored_bytes = 16 << 20;
};

struct FreeListDecl {
    std::uint32_t block_size = 0;  // multiple of 8, >= 8
    std::uint64_t offset = 0;      // multiple of 8
    std::uint32_t count = 0;       // 1 .. 2^20
};

struct RegionDecl {
    std::string name;                     // 1..63 of [A-Za-z0-9._:-]
    std::uint64_t size = 0;               // multiple of 4096, <= 16 GiB
    std::uint32_t access = 0;             // ROF_ACCESS_* bits: "read", "write", "atomic"
    std::vector<FreeListDecl> freelists;  // non-overlapping, inside the region
    std::uint32_t line = 0;               // where it is declared
};

// @region of the declaring tenant granted to tenant @to.
struct GrantDecl {
    std::string region;
    std::string to;
    bool write = false;  // read-only unless true
    std::uint32_t line = 0;
};

enum class AuditLevel { none, errors, sessions, all };
std::string_view audit_level_name(AuditLevel a);

// invoke_records: which INVOKEs that end with status ok get an audit
// record, as rof.ko's rof_tenant_quota.invoke_records holds it:
// ROF_INVOKE_RECORDS_ALL ("all"), ROF_INVOKE_RECORDS_ERRORS ("errors", none
// of them) or N, 2 .. ROF_INVOKE_SAMPLE_MAX ("sample:N", every Nth of each
// session).  Every INVOKE is counted whichever it is.
std::optional<std::uint32_t> invoke_records_from_name(std::string_view s);
std::string invoke_records_name(std::uint32_t v);  // "all", "errors", "sample:N"

// A session that reaches any non-zero threshold within @window_s seconds
// is closed by rofd ("quarantined") and the reason audited.
struct Quarantine {
    std::uint32_t window_s = 60;
    std::uint32_t max_faults = 0;             // ROF_ST_PROG_FAULT invocations
    std::uint32_t max_completion_errors = 0;  // ROF_AUDIT_COMPLETION_ERROR records
    std::uint32_t max_bad_requests = 0;       // invocations with status BAD_*
};

// [sessions] of a tenant file: how its sessions are made.
struct SessionSettings {
    // The largest request or response of each session (rof.ko's msg_size):
    // a power of two, ROF_MSG_SIZE (1 KiB) .. ROF_MSG_SIZE_MAX (64 KiB).
    std::uint32_t message_bytes = ROF_MSG_SIZE;
};

struct Tenant {
    std::string name;  // from the file's `name`, which must match the file's stem
    std::string file;
    Identity identity;
    Quota quota;
    Rate session_rate;  // default per session; a session may ask for less
    Rate tenant_rate;   // all the tenant's sessions together
    ProgramLimits programs;
    std::vector<RegionDecl> regions;
    std::vector<GrantDecl> grants;
    AuditLevel audit = AuditLevel::errors;
    std::uint32_t invoke_records = ROF_INVOKE_RECORDS_ALL;  // invoke_records_name()
    Quarantine quarantine;
    SessionSettings sessions;
    std::uint32_t control_rate = 50;  // control-plane calls per second (0 = unlimited)
};

struct TcpListen {
    bool enabled = false;
    std::string address = "0.0.0.0:7443";  // "host:port", "[v6]:port"
    std::string cert, key, client_ca;      // PEM files; all three required when enabled
};

struct MetricsListen {
    bool enabled = false;
    std::string address = "127.0.0.1:9464";  // loopback only
};

struct Daemon {
    std::string file;
    Identity admin;  // callers with the admin role; uid 0 always is
    std::string socket = "/run/rof/rofd.sock";
    std::string state_dir = "/var/lib/rof";
    TcpListen tcp;
    MetricsListen metrics;
    // Sessions: what clients connect to, and the defaults of OpenSession.
    std::string session_address;        // empty: the first IPv4 of the RDMA netdev
    std::uint32_t ticket_ttl_s = 60;    // 1 .. ROF_TICKET_TTL_MAX_S (3600)
    std::uint32_t idle_timeout_ms = 0;  // 0: the module's default
    // Limits of rofd itself.
    std::uint32_t max_message_bytes = 4 << 20;  // gRPC receive/send
    std::uint32_t max_concurrent_streams = 64;  // per connection
    std::uint64_t memory_bytes = 256ULL << 20;  // grpc::ResourceQuota
    std::uint32_t audit_streams_per_tenant = 4;
    std::uint32_t audit_streams_admin = 8;      // the admins' own, all of them together
    std::uint32_t default_deadline_ms = 30000;  // applied when a call has none
    // State-changing calls of one tenant waiting for rofd's worker at once;
    // past it a call is refused, so no tenant fills the queue every
    // tenant's changes wait in.  Admins' calls are not counted.
    std::uint32_t queued_calls_per_tenant = 32;
    // Refused calls journalled per second per caller (uid or certificate
    // subject; a burst of one second's worth): one caller's flood of
    // refusals must not fill journald's rate limit and drop the others'
    // audit.  The rest are counted, and the caller's next journalled
    // refusal says how many were left out.
    std::uint32_t refusals_journalled_per_s = 10;
    // Connections one uid may hold open on the unix socket (root: no
    // limit); past it a new one is closed unserved, so that one caller's
    // idle connections cannot take every descriptor rofd has.
    std::uint32_t connections_per_uid = 256;
    // A tenant removed from policy keeps its open sessions this long at
    // most; then rofd destroys it with what it holds (0: at once).
    std::uint32_t tenant_removal_grace_ms = 60000;
    // Connections (gRPC's transport): a TCP connection must finish TLS and
    // the HTTP/2 preface within handshake_timeout_ms; every connection is
    // pinged after keepalive_ms without reads and closed when the ping is
    // not answered within keepalive_timeout_ms; a connection with no call
    // for connection_idle_ms is closed (clients reconnect on their next call).
    // Every connection is told to go away (GOAWAY) after about
    // connection_age_ms (gRPC adds up to 10%) and closed
    // connection_age_grace_ms later, calls in progress or not: that bounds
    // a call whose request never arrives from a peer that answers pings.
    // Clients open a new connection for their next call; librof's audit
    // tail reopens its stream.
    std::uint32_t handshake_timeout_ms = 10000;
    std::uint32_t keepalive_ms = 60000;
    std::uint32_t keepalive_timeout_ms = 20000;
    std::uint32_t connection_idle_ms = 900000;
    std::uint32_t connection_age_ms = 3600000;
    std::uint32_t connection_age_grace_ms = 300000;
};

struct Policy {
    Daemon daemon;
    std::vector<Tenant> tenants;  // sorted by name, names unique

    const Tenant* find(std::string_view name) const;
    // The tenant whose identity lists @uid (first), else @gid; nullptr if none.
    const Tenant* for_peer(uid_t uid, gid_t gid) const;
    const Tenant* for_subject(std::string_view subject) const;
    bool is_admin(uid_t uid, gid_t gid) const;  // uid 0, or listed in daemon.admin
};

struct LoadResult {
    std::optional<Policy> policy;  // set iff errors is empty
    std::vector<Diagnostic> errors;
    std::string error_text() const;  // one str() per line
};

// Loads @daemon_file (a missing file means all defaults) and every *.toml
// directly in @tenants_dir (a missing directory means no tenants), in
// name order, and validates the whole: names, ranges, unique identities
// across tenants, grants naming existing regions and tenants, quotas that
// the declared regions fit in.
LoadResult load(const std::string& daemon_file, const std::string& tenants_dir);

// The same from text, for tests and `rofctl policy check`: @tenants is
// (file name, text) pairs.
LoadResult parse(std::string_view daemon_text, std::string_view daemon_file,
                 const std::vector<std::pair<std::string, std::string>>& tenants);

}  // namespace rof::policy
