// SPDX-License-Identifier: MIT
// AuditDrain: reads rof.ko's audit ring (docs/kmod.md section 6), keeps
// per-tenant and per-session counters for metrics, writes each tenant's
// records to the journal at its audit level, and reports sessions that
// reach a quarantine threshold.
//
// It owns the ring's reader fd (non-blocking) and nothing else: the owner
// polls the fd for POLLIN, calls drain(), and acts on on_quarantine (closes
// the session and audits why).  drain(), note_stats() and set_config() are
// for the drain thread (set_config() may be called from any thread);
// snapshot() from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "journal.h"
#include "log.h"
#include "policy.h"  // AuditLevel and Quarantine only (header use)
#include "uapi/rof.h"
#include "unique_fd.h"

namespace rofd {

using AuditLevel = rof::policy::AuditLevel;
using Quarantine = rof::policy::Quarantine;

struct TenantAuditConfig {
    std::string name;
    AuditLevel level = AuditLevel::errors;
    Quarantine quarantine;  // all thresholds 0: never quarantined
};

// Replaced as a whole (set_config), never edited in place.
struct AuditConfig {
    std::unordered_map<std::uint32_t, TenantAuditConfig> tenants;  // by tenant id
    // Tenants not in the map (and tenant 0 of rejects without a valid
    // ticket): named by their number, this level, never quarantined.
    AuditLevel unknown_level = AuditLevel::errors;
};

// Latency histogram buckets, upper bounds in ns (Prometheus "le"), and
// an implicit +Inf bucket after them.
inline constexpr std::array<std::uint64_t, 11> latency_bounds_ns = {
    1'000,     5'000,     10'000,     50'000,     100'000,     500'000,
    1'000'000, 5'000'000, 10'000'000, 50'000'000, 100'000'000,
};

struct LatencyHistogram {
    // Not cumulative: buckets[i] counts latencies in (bound[i-1], bound[i]];
    // the last one those above every bound.
    std::array<std::uint64_t, latency_bounds_ns.size() + 1> buckets{};
    std::uint64_t sum_ns = 0;
    std::uint64_t count = 0;
    void observe(std::uint64_t ns);
};

// INVOKE statuses counted one by one (enum rof_status 0 .. 9); any other
// status (a negative errno, a future code) is counted under "other".
inline constexpr std::size_t invoke_status_known = ROF_ST_MSG_SIZE + 1;
inline constexpr std::size_t invoke_status_other = invoke_status_known;
// "ok", "bad_opcode", ..., "no_memory", "other".
std::string_view invoke_status_name(std::size_t index);
std::size_t invoke_status_index(std::int32_t status);

// enum rof_close_reason 1 .. 9 and enum rof_reject_reason 1 .. 13 are
// counted one by one; index 0 is any other value.
inline constexpr std::size_t close_reason_slots = ROF_CLOSE_EXPIRED + 1;
inline constexpr std::size_t reject_reason_slots = ROF_REJECT_DEVICE + 1;
std::string_view close_reason_name(std::size_t index);   // "disconnect", ...; 0: "other"
std::string_view reject_reason_name(std::size_t index);  // "no_ticket", ...; 0: "other"

// The id of the region a ROF_AUDIT_REGION_DESTROY record reports: its
// object (ABI 0.9), or, from a module older than 0.9, its tag's place.
inline std::uint64_t destroyed_region(const rof_audit_record& r) {
    return r.object != 0 ? r.object : r.tag;
}

// What a record says, in words: the journal's MESSAGE and AuditRecord.message, e.g.
// "session 3 of tenant kv closed: idle".  @tenant: the tenant's name.
std::string audit_message(const rof_audit_record& r, const std::string& tenant);

struct TenantAuditCounters {
    std::string name;  // filled by snapshot(): the config's, else the id in decimal
    std::array<std::uint64_t, invoke_status_known + 1> invocations{};  // by status index
    std::uint64_t exec_ok = 0;                                         // status ROF_ST_OK
    std::uint64_t exec_fault = 0;                                      // status ROF_ST_PROG_FAULT
    // Of those counted under status ok: INVOKEs with no record, which a later
    // record of their session counted (rof_audit_record.skipped; the tenant's
    // invoke_records).  Bytes, insns and latency are of INVOKE records only.
    std::uint64_t skipped = 0;
    std::uint64_t bytes = 0;  // of INVOKE records
    std::uint64_t insns = 0;
    LatencyHistogram latency;  // of INVOKE records
    std::uint64_t completion_errors = 0;
    std::uint64_t sessions_opened = 0;
    std::array<std::uint64_t, close_reason_slots> sessions_closed{};     // by reason
    std::array<std::uint64_t, reject_reason_slots> sessions_rejected{};  // by reason
    std::uint64_t quarantined = 0;                                       // on_quarantine calls
    std::uint64_t other_records = 0;  // destroy records, unknown kinds
};

// One session seen in the ring, from its first record to its
// SESSION_CLOSE (or eviction, see AuditDrain::Options::max_sessions).
struct SessionAuditCounters {
    std::uint32_t tenant = 0;
    std::uint64_t invocations = 0;    // with those counted by a record's skipped
    std::uint64_t invoke_errors = 0;  // status != 0
    std::uint64_t faults = 0;         // status ROF_ST_PROG_FAULT
    std::uint64_t bad_requests = 0;   // BAD_OPCODE/BAD_LENGTH/BAD_FLAGS/BAD_ARGS
    std::uint64_t completion_errors = 0;
    std::uint64_t bytes = 0;
    std::uint64_t insns = 0;
    bool quarantined = false;
};

struct AuditCounters {
    std::map<std::uint32_t, TenantAuditCounters> tenants;    // by tenant id
    std::map<std::uint32_t, SessionAuditCounters> sessions;  // by session id, open ones
    std::uint64_t records = 0;                               // records read
    std::uint64_t lost = 0;                                  // seq gaps seen by this reader
    std::uint64_t seq_restarts = 0;                          // seq went backwards (module reloaded)
    std::uint64_t last_seq = 0;          // of the newest record read, 0 before any
    std::uint64_t sessions_evicted = 0;  // tracked sessions dropped at max_sessions
    std::uint64_t quarantines = 0;
    // The module's own view, from the last note_stats().
    bool have_module_stats = false;
    rof_audit_stats module_stats{};
};

class AuditDrain {
  public:
    // What journal output goes to; journal::send unless a test injects one.
    using Sink = std::function<void(log::Level, std::string_view message,
                                    std::span<const journal::Field> fields)>;
    // Called once per session that reaches a quarantine threshold, from
    // drain(), without AuditDrain's lock held.
    using QuarantineFn =
        std::function<void(std::uint32_t tenant, std::uint32_t session, const std::string& reason)>;

    struct Options {
        // Sessions tracked at once (counters and quarantine windows).  A
        // session whose close record is lost to an overrun would stay
        // forever; beyond this many, the one with the oldest record is
        // evicted (and so forgets its counters and window) to make room.
        std::size_t max_sessions = 65536;
        Sink sink;                   // empty: journal::send
        QuarantineFn on_quarantine;  // empty: quarantine is only counted
        // Every record, with its tenant's name, after it is counted (the
        // TailAudit streams); called from drain(), without the lock held.
        std::function<void(const rof_audit_record&, const std::string& tenant)> on_record;
    };

    static constexpr std::size_t batch_records = 256;  // per read()

    AuditDrain(UniqueFd ring, std::shared_ptr<const AuditConfig> config, Options options);
    AuditDrain(const AuditDrain&) = delete;
    AuditDrain& operator=(const AuditDrain&) = delete;

    int fd() const { return ring_.get(); }

    // Reads and handles every record pending (up to @limit), in reads of
    // batch_records records; returns the records handled.  Stops at EAGAIN
    // or end of file; other read errors throw std::system_error (records
    // handled before stay handled).  Bytes of a partial record (a pipe in
    // tests) are kept for the next call.  Logs once per call a warning
    // naming the records lost to seq gaps, if any.
    std::size_t drain(std::size_t limit = SIZE_MAX);

    // Records the module's ROF_IOC_AUDIT_STATS (overruns, dropped).
    void note_stats(const rof_audit_stats& stats);

    void set_config(std::shared_ptr<const AuditConfig> config);

    // A consistent copy of the counters, tenant names filled in.
    AuditCounters snapshot() const;

  private:
    // A fixed window: it opens at the first counted event and a counted
    // event window_s or more later (or earlier: CLOCK_REALTIME stepped
    // back) opens a new one; window_s 0 counts over the session's life.
    struct Window {
        bool open = false;
        std::uint64_t start_ns = 0;
        std::uint32_t faults = 0;
        std::uint32_t completion_errors = 0;
        std::uint32_t bad_requests = 0;
    };
    struct Session {
        SessionAuditCounters counters;
        Window window;
        std::uint64_t last_ns = 0;
    };
    struct Pending {  // what one record asks for once the lock is dropped
        bool quarantine = false;
        std::string reason;
    };

    void handle(const rof_audit_record& r, const AuditConfig& config, Pending& pending);
    Session& session_for(const rof_audit_record& r);
    void count_quarantine(const rof_audit_record& r, const Quarantine& q, Session& s,
                          Pending& pending);
    void emit(const rof_audit_record& r, const AuditConfig& config);
    std::string tenant_name(std::uint32_t id, const AuditConfig& config) const;

    UniqueFd ring_;
    Options options_;
    mutable std::mutex config_mu_;
    std::shared_ptr<const AuditConfig> config_;

    // Drain thread only.
    std::unique_ptr<std::array<rof_audit_record, batch_records>> buf_;
    std::size_t carry_ = 0;  // bytes of a partial record at the start of buf_

    mutable std::mutex mu_;   // guards counters_ and sessions_
    AuditCounters counters_;  // sessions filled from sessions_ by snapshot()
    std::unordered_map<std::uint32_t, Session> sessions_;
};

}  // namespace rofd
