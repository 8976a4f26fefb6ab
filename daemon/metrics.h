// SPDX-License-Identifier: MIT
// rofd's metrics: render_metrics() writes the Prometheus text exposition
// format 0.0.4 from plain inputs (the AuditDrain's snapshot, what rof.ko
// reports of tenants, sessions and the audit ring); MetricsHttpListener
// serves it on a loopback address (policy: [metrics] listen).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "audit_drain.h"
#include "uapi/rof.h"
#include "unique_fd.h"

namespace rofd {

struct TenantMetrics {
    std::string name;  // the label value; the module's own name normally
    rof_tenant_info info{};
};

struct MetricsInput {
    // From AuditDrain::snapshot(): rof_invocation*, rof_sessions_*,
    // rof_session_invocations_total ... of the records rofd has read.
    std::optional<AuditCounters> audit;
    // From the module (exact, counted as records are written): usage,
    // quota and rof_tenant_*_total per tenant; rof_session_* per session.
    std::vector<TenantMetrics> tenants;
    std::vector<rof_session_info> sessions;
    // ROF_IOC_AUDIT_STATS; when absent, the one audit.module_stats holds.
    std::optional<rof_audit_stats> ring;
    // The rof_audit_* families (the drain's and the ring's figures, shared
    // by every tenant): an admin's, not a tenant's.
    bool audit_totals = true;
    // rof_refusals_not_journalled_total: rofd's own; an admin's only.
    std::optional<std::uint64_t> refusals_not_journalled;
    // rof_reconcile_errors: what the last reconciliation could not do
    // (View::reconcile_errors); an admin's only.
    std::optional<std::uint64_t> reconcile_errors;
    // rof_connections_refused_total (limits.connections_per_uid): an admin's only.
    std::optional<std::uint64_t> connections_refused;
};

// The whole exposition, families in a fixed order, each with # HELP and
// # TYPE once (families without samples are left out).  Per-tenant
// invocation counts are given for every status; close and reject reasons
// only once non-zero.  Unlimited quotas are +Inf.  Sessions are labelled
// with their tenant's name (from @tenants, else the audit snapshot, else
// the tenant id) and their id.
std::string render_metrics(const MetricsInput& in);

// A label value escaped for the text format: \ " and newline.
std::string escape_label_value(std::string_view v);

// A loopback socket address parsed from "127.0.0.1:9464" or "[::1]:9464"
// (any 127.0.0.0/8 address, or ::1; numeric only).  Throws
// std::invalid_argument naming the address otherwise.
struct LoopbackAddress {
    int family = 0;
    std::string host;
    std::uint16_t port = 0;
};
LoopbackAddress parse_loopback_address(const std::string& address);

// A tiny HTTP/1.0 server on one thread: GET (or HEAD) /metrics answers 200
// with the body callback's text; other paths 404, other methods 405, a
// request header over max_header_bytes or malformed 400, a body callback
// that throws 500.  Every connection is closed after its response, or when
// read_timeout passes first.  The body callback runs on the listener's
// thread.
class MetricsHttpListener {
  public:
    using BodyFn = std::function<std::string()>;
    struct Options {
        std::chrono::milliseconds read_timeout{5000};  // per connection, whole exchange
        std::size_t max_header_bytes = 8192;
        std::size_t max_connections = 16;  // more wait in the listen backlog
    };

    // Binds and listens (errors throw: std::invalid_argument for the
    // address, std::system_error for the socket), then starts the thread.
    // Port 0 binds an ephemeral port; port() tells which.
    MetricsHttpListener(const std::string& address, BodyFn body);
    MetricsHttpListener(const std::string& address, BodyFn body, Options options);
    ~MetricsHttpListener();
    MetricsHttpListener(const MetricsHttpListener&) = delete;
    MetricsHttpListener& operator=(const MetricsHttpListener&) = delete;

    std::uint16_t port() const { return port_; }

    // Stops the thread and closes every connection; idempotent.
    void stop();

  private:
    void run();

    BodyFn body_;
    Options options_;
    UniqueFd listen_;
    UniqueFd stop_;  // eventfd
    std::uint16_t port_ = 0;
    std::thread thread_;
};

}  // namespace rofd
