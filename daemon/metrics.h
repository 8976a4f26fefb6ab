// SPDX-License-Identifier: MIT
// rofd's metrics, on prometheus-cpp: collect_metrics() builds the metric
// families from plain inputs (the AuditDrain's snapshot, what rof.ko
// reports of tenants, sessions and the audit ring), CallMetrics times the
// control calls, render_metrics() writes the text exposition format and
// MetricsExposer serves it on a loopback address (policy: [metrics]
// listen).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "audit_drain.h"
#include "uapi/rof.h"

namespace prometheus {
class Exposer;
}

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
    // rof_lines_not_journalled_total: Manager::lines_left_out(); an admin's only.
    std::optional<std::uint64_t> lines_not_journalled;
    // rof_reconcile_errors: what the last reconciliation could not do
    // (View::reconcile_errors); an admin's only.
    std::optional<std::uint64_t> reconcile_errors;
    // rof_connections_refused_total (limits.connections_per_uid): an admin's only.
    std::optional<std::uint64_t> connections_refused;
};

// The metric families, in a fixed order, the empty ones left out.
// Per-tenant invocation counts are given for every status; close and
// reject reasons only once non-zero.  Unlimited quotas are +Inf.  Sessions
// are labelled with their tenant's name (from @tenants, else the audit
// snapshot, else "#" and the tenant id) and their id.
std::vector<prometheus::MetricFamily> collect_metrics(const MetricsInput& in);

// @families, or collect_metrics(@in), in the text exposition format 0.0.4
// (prometheus-cpp's serializer: # HELP and # TYPE once per family, label
// values escaped).
std::string render_metrics(const std::vector<prometheus::MetricFamily>& families);
std::string render_metrics(const MetricsInput& in);

// rof_control_call_duration_seconds{method}: how long rofd takes over each
// unary call of the given gRPC services, observed by the server's
// interceptor.  Only those methods are counted (a client cannot add label
// values by calling made-up ones); streaming calls are not (their length
// is the caller's).
class CallMetrics {
  public:
    // @services: full names ("rof.v1.Tenants"); each must be linked in.
    explicit CallMetrics(const std::vector<std::string>& services);

    // The histogram of @method ("/rof.v1.Tenants/ListTenants"), made on
    // first use; nullptr when it is not counted.  Thread-safe.
    prometheus::Histogram* histogram(std::string_view method);

    std::vector<prometheus::MetricFamily> collect() const;

  private:
    std::shared_ptr<prometheus::Registry> registry_;
    prometheus::Family<prometheus::Histogram>* family_;
    std::mutex mutex_;  // guards the map's values
    std::map<std::string, prometheus::Histogram*, std::less<>> methods_;
};

// A loopback socket address parsed from "127.0.0.1:9464" (any 127.0.0.0/8
// address, numeric; no IPv6: Debian's civetweb is built without it).
// Throws std::invalid_argument naming the address otherwise.
struct LoopbackAddress {
    std::string host;
    std::uint16_t port = 0;
};
LoopbackAddress parse_loopback_address(const std::string& address);

// GET /metrics on a loopback address (policy: [metrics] listen), served by
// prometheus-cpp's exposer (civetweb) on a fixed pool of threads.  Each
// scrape calls @collect on one of them.  Other paths are 404.
class MetricsExposer {
  public:
    using Collect = std::function<std::vector<prometheus::MetricFamily>()>;
    struct Options {
        std::size_t threads = 2;                          // connections served at once; more wait
        std::chrono::milliseconds request_timeout{5000};  // per connection
        std::size_t max_request_bytes = 8192;             // request line and headers
    };

    // Binds and listens: std::invalid_argument for the address,
    // std::runtime_error when it cannot listen there.  Port 0 binds an
    // ephemeral port; port() tells which.
    MetricsExposer(const std::string& address, Collect collect);
    MetricsExposer(const std::string& address, Collect collect, Options options);
    ~MetricsExposer();
    MetricsExposer(const MetricsExposer&) = delete;
    MetricsExposer& operator=(const MetricsExposer&) = delete;

    std::uint16_t port() const { return port_; }

  private:
    class Source;
    std::shared_ptr<Source> source_;
    std::unique_ptr<prometheus::Exposer> exposer_;
    std::uint16_t port_ = 0;
};

}  // namespace rofd
