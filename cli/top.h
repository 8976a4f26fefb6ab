// SPDX-License-Identifier: MIT
// rofctl top: what is busy, erroring or throttled now, per tenant and per
// session, from two GetMetrics samples a refresh apart.  The parts that
// do not touch the terminal or rofd are here, for the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "print.h"

namespace rofctl::top {

// The counters top reads from one GetMetrics text (rof.ko's, exact).
struct TenantCounters {
    double invocations = 0;    // rof_tenant_invocations_total
    double errors = 0;         // rof_tenant_invoke_errors_total + _completion_errors_total
    double bytes = 0;          // rof_tenant_invocation_bytes_total
    double audit_dropped = 0;  // rof_tenant_audit_dropped_total
    double quarantines = 0;    // rof_sessions_quarantined_total (the audit drain's)
    double sessions = 0;       // rof_tenant_sessions (a gauge)
};
struct SessionCounters {
    std::string tenant;
    double requests = 0;   // rof_session_requests_total
    double bytes_in = 0;   // rof_session_request_bytes_total
    double bytes_out = 0;  // rof_session_response_bytes_total
    double errors = 0;     // rof_session_bad_requests_total + _completion_errors_total
    double throttled = 0;  // rof_session_deferred_total: waits for rate tokens
    double credits = 0;    // rof_session_credits (a gauge)
};
struct Sample {
    std::map<std::string, TenantCounters> tenants;
    std::map<std::uint64_t, SessionCounters> sessions;  // by session id
};

// The Prometheus text of GetMetrics, read for the families above; other
// lines are skipped.
Sample parse_sample(const std::string& text);

// Per second over the interval; a counter that went down (its tenant was
// made again) counts from 0, and so does one absent before.
struct TenantRow {
    std::string tenant;
    std::uint64_t sessions = 0;
    double invocations = 0, bytes = 0, errors = 0, throttled = 0, audit_dropped = 0,
           quarantines = 0;
};
struct SessionRow {
    std::uint64_t session = 0;
    std::string tenant;
    double requests = 0, bytes_in = 0, bytes_out = 0, errors = 0, throttled = 0;
    std::uint64_t credits = 0;
};
struct View {
    double seconds = 0;
    std::vector<TenantRow> tenants;    // busiest first
    std::vector<SessionRow> sessions;  // busiest first
};

// The rates between @before and @after, @seconds apart (> 0).  Sorted by
// activity: invocations (requests) per second, then bytes, errors,
// throttling, then name (id).  A tenant's throttled rate is its open
// sessions'.
View compute(const Sample& before, const Sample& after, double seconds);

// {"seconds", "tenants": [...], "sessions": [...]}: rofctl -j top.
Json to_json(const View& v);

// The text frame: a title line (@title), the tenants' table and the
// sessions' table, within @width columns and @height lines (0: no limit;
// rows that do not fit are counted in a "... N more" line).
std::string render(const View& v, const std::string& title, std::size_t width = 0,
                   std::size_t height = 0);

}  // namespace rofctl::top
