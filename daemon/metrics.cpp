// SPDX-License-Identifier: MIT
#include "metrics.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <netinet/in.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <charconv>
#include <concepts>
#include <deque>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "log.h"

namespace rofd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr double inf = std::numeric_limits<double>::infinity();

double quota_value(std::uint64_t v, std::uint64_t unlimited) {
    return v == unlimited ? inf : static_cast<double>(v);
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// One metric family being filled: its samples, one ClientMetric each.
class Family {
  public:
    Family(std::string_view name, MetricType type, std::string_view help) {
        f_.name = name;
        f_.type = type;
        f_.help = help;
    }

    // A counter's or gauge's sample.
    void add(const Labels& labels, double value) {
        ClientMetric& m = sample(labels);
        if (f_.type == MetricType::Counter) {
            m.counter.value = value;
        } else {
            m.gauge.value = value;
        }
    }
    template <std::integral T>
    void add(const Labels& labels, T value) {
        add(labels, static_cast<double>(value));
    }
    // A histogram's: @h's buckets, the last one +Inf.
    void add(const Labels& labels, const LatencyHistogram& h) {
        ClientMetric::Histogram& out = sample(labels).histogram;
        std::uint64_t cum = 0;
        for (std::size_t i = 0; i < h.buckets.size(); ++i) {
            cum += h.buckets[i];
            const double le = i < latency_bounds_ns.size()
                                  ? static_cast<double>(latency_bounds_ns[i]) / 1e9
                                  : inf;
            out.bucket.push_back({cum, le});
        }
        out.sample_count = h.count;
        out.sample_sum = static_cast<double>(h.sum_ns) / 1e9;
    }

    MetricFamily& family() { return f_; }

  private:
    ClientMetric& sample(const Labels& labels) {
        ClientMetric& m = f_.metric.emplace_back();
        for (const auto& [k, v] : labels) {
            m.label.push_back({std::string(k), v});
        }
        return m;
    }

    MetricFamily f_;
};

class Exposition {
  public:
    Family& counter(std::string_view name, std::string_view help) {
        return families_.emplace_back(name, MetricType::Counter, help);
    }
    Family& gauge(std::string_view name, std::string_view help) {
        return families_.emplace_back(name, MetricType::Gauge, help);
    }
    Family& histogram(std::string_view name, std::string_view help) {
        return families_.emplace_back(name, MetricType::Histogram, help);
    }
    // The families that have samples, in the order they were made.
    std::vector<MetricFamily> take() {
        std::vector<MetricFamily> out;
        for (Family& f : families_) {
            if (!f.family().metric.empty()) {
                out.push_back(std::move(f.family()));
            }
        }
        return out;
    }

  private:
    std::deque<Family> families_;  // references stay valid as it grows
};

void render_audit(Exposition& x, const AuditCounters& a,
                  const std::map<std::uint32_t, std::string>& names, bool totals) {
    auto tenant_of = [&](std::uint32_t id, const TenantAuditCounters* t) {
        if (auto it = names.find(id); it != names.end()) {
            return it->second;
        }
        return t != nullptr && !t->name.empty() ? t->name : "#" + std::to_string(id);
    };
    Family& inv = x.counter("rof_invocations_total",
                            "INVOKE requests by response status, from the audit records read.");
    Family& exec = x.counter("rof_invocation_executions_total",
                             "Program runs by outcome: ok (status ok) or fault (prog_fault).");
    Family& unrec = x.counter(
        "rof_invocations_unrecorded_total",
        "INVOKE requests of status ok counted without a record of their own (invoke_records).");
    Family& bytes = x.counter("rof_invocation_bytes_total",
                              "Request and response payload bytes of the INVOKE records read.");
    Family& insns = x.counter("rof_invocation_instructions_total",
                              "Program instructions executed, of the INVOKE records read.");
    Family& lat =
        x.histogram("rof_invocation_latency_seconds",
                    "INVOKE latency, request received to response posted (records read).");
    Family& cerr = x.counter("rof_completion_errors_total",
                             "Work completions in error and QP/CQ error events.");
    Family& opened = x.counter("rof_sessions_opened_total", "Sessions established.");
    Family& closed = x.counter("rof_sessions_closed_total", "Sessions ended, by reason.");
    Family& rejected = x.counter("rof_sessions_rejected_total",
                                 "Connects refused, by reason (tenant 0: no valid ticket).");
    Family& quar = x.counter("rof_sessions_quarantined_total",
                             "Sessions that reached a quarantine threshold.");
    for (const auto& [id, t] : a.tenants) {
        std::string tenant = tenant_of(id, &t);
        for (std::size_t i = 0; i < t.invocations.size(); ++i) {
            inv.add({{"tenant", tenant}, {"status", std::string(invoke_status_name(i))}},
                    t.invocations[i]);
        }
        exec.add({{"tenant", tenant}, {"outcome", "ok"}}, t.exec_ok);
        exec.add({{"tenant", tenant}, {"outcome", "fault"}}, t.exec_fault);
        unrec.add({{"tenant", tenant}}, t.skipped);
        bytes.add({{"tenant", tenant}}, t.bytes);
        insns.add({{"tenant", tenant}}, t.insns);
        lat.add({{"tenant", tenant}}, t.latency);
        cerr.add({{"tenant", tenant}}, t.completion_errors);
        opened.add({{"tenant", tenant}}, t.sessions_opened);
        for (std::size_t i = 0; i < t.sessions_closed.size(); ++i) {
            if (t.sessions_closed[i] != 0) {
                closed.add({{"tenant", tenant}, {"reason", std::string(close_reason_name(i))}},
                           t.sessions_closed[i]);
            }
        }
        for (std::size_t i = 0; i < t.sessions_rejected.size(); ++i) {
            if (t.sessions_rejected[i] != 0) {
                rejected.add({{"tenant", tenant}, {"reason", std::string(reject_reason_name(i))}},
                             t.sessions_rejected[i]);
            }
        }
        quar.add({{"tenant", tenant}}, t.quarantined);
    }

    Family& sinv = x.counter("rof_session_invocations_total",
                             "INVOKE requests of an open session, from the audit records read.");
    Family& serr = x.counter("rof_session_invoke_errors_total",
                             "INVOKE requests of an open session answered with an error status.");
    Family& sfault = x.counter("rof_session_faults_total",
                               "Program faults of an open session, from the audit records read.");
    for (const auto& [id, s] : a.sessions) {
        auto t = a.tenants.find(s.tenant);
        Labels l = {{"tenant", tenant_of(s.tenant, t != a.tenants.end() ? &t->second : nullptr)},
                    {"session", std::to_string(id)}};
        sinv.add(l, s.invocations);
        serr.add(l, s.invoke_errors);
        sfault.add(l, s.faults);
    }

    if (!totals) {
        return;
    }
    x.counter("rof_audit_records_total", "Audit records rofd has read.").add({}, a.records);
    x.counter("rof_audit_lost_total", "Audit records rofd saw lost to overruns (gaps in seq).")
        .add({}, a.lost);
    x.counter("rof_audit_sessions_evicted_total",
              "Sessions rofd stopped tracking to stay within its limit.")
        .add({}, a.sessions_evicted);
}

void render_ring(Exposition& x, const rof_audit_stats& r) {
    x.counter("rof_audit_overruns_total", "Audit records overwritten before being read (rof.ko).")
        .add({}, r.overruns);
    x.counter("rof_audit_dropped_total",
              "INVOKE audit records not queued, to keep the ring's reserve (rof.ko).")
        .add({}, r.dropped);
    x.gauge("rof_audit_ring_size", "Records the audit ring holds.").add({}, r.ring_size);
    x.gauge("rof_audit_ring_pending", "Audit records not read yet.").add({}, r.pending);
    x.gauge("rof_audit_ring_reserve", "Audit ring slots INVOKE records cannot take.")
        .add({}, r.reserve);
}

void render_tenants(Exposition& x, const std::vector<TenantMetrics>& tenants) {
    auto& region_bytes = x.gauge("rof_tenant_region_bytes", "Bytes of the tenant's regions.");
    auto& regions = x.gauge("rof_tenant_regions", "Regions of the tenant.");
    auto& sessions = x.gauge("rof_tenant_sessions", "Sessions of the tenant.");
    auto& programs = x.gauge("rof_tenant_programs", "Programs the tenant has loaded.");
    auto& freelists = x.gauge("rof_tenant_freelists", "Free lists in the tenant's regions.");
    auto& q_bytes =
        x.gauge("rof_tenant_quota_region_bytes", "Quota of region bytes (+Inf: unlimited).");
    auto& q_sessions =
        x.gauge("rof_tenant_quota_sessions", "Quota of sessions open at once (+Inf: unlimited).");
    auto& q_programs =
        x.gauge("rof_tenant_quota_programs", "Quota of programs loaded at once (+Inf: unlimited).");
    auto& q_credits =
        x.gauge("rof_tenant_quota_credits", "Requests in flight allowed per session.");
    auto& c_inv = x.counter("rof_tenant_invocations_total", "INVOKE requests (rof.ko's count).");
    auto& c_err = x.counter("rof_tenant_invoke_errors_total",
                            "INVOKE requests answered with an error status (rof.ko's count).");
    auto& c_cerr =
        x.counter("rof_tenant_completion_errors_total", "Completion errors (rof.ko's count).");
    auto& c_bytes =
        x.counter("rof_tenant_invocation_bytes_total", "INVOKE payload bytes (rof.ko's count).");
    auto& c_insns = x.counter("rof_tenant_invocation_instructions_total",
                              "Program instructions executed (rof.ko's count).");
    auto& c_open =
        x.counter("rof_tenant_sessions_opened_total", "Sessions established (rof.ko's count).");
    auto& c_close =
        x.counter("rof_tenant_sessions_closed_total", "Sessions ended (rof.ko's count).");
    auto& c_rej =
        x.counter("rof_tenant_sessions_rejected_total", "Connects refused (rof.ko's count).");
    auto& c_drop =
        x.counter("rof_tenant_audit_dropped_total",
                  "The tenant's INVOKE audit records dropped to keep the ring's reserve.");
    for (const TenantMetrics& t : tenants) {
        Labels l = {{"tenant", t.name}};
        const rof_tenant_info& i = t.info;
        region_bytes.add(l, i.usage.region_bytes);
        regions.add(l, i.usage.regions);
        sessions.add(l, i.usage.sessions);
        programs.add(l, i.usage.programs);
        freelists.add(l, i.usage.freelists);
        q_bytes.add(l, quota_value(i.quota.region_bytes, ROF_QUOTA_UNLIMITED));
        q_sessions.add(l, quota_value(i.quota.sessions, 0xffffffffULL));
        q_programs.add(l, quota_value(i.quota.programs, 0xffffffffULL));
        q_credits.add(l, i.quota.credits);
        c_inv.add(l, i.counters.invocations);
        c_err.add(l, i.counters.invoke_errors);
        c_cerr.add(l, i.counters.completion_errors);
        c_bytes.add(l, i.counters.bytes);
        c_insns.add(l, i.counters.insns);
        c_open.add(l, i.counters.sessions_opened);
        c_close.add(l, i.counters.sessions_closed);
        c_rej.add(l, i.counters.sessions_rejected);
        c_drop.add(l, i.counters.audit_dropped);
    }
}

void render_sessions(Exposition& x, const std::vector<rof_session_info>& sessions,
                     const std::map<std::uint32_t, std::string>& names) {
    auto& req = x.counter("rof_session_requests_total", "Requests answered.");
    auto& in = x.counter("rof_session_request_bytes_total", "Request payload bytes.");
    auto& out = x.counter("rof_session_response_bytes_total", "Response payload bytes.");
    auto& def = x.counter("rof_session_deferred_total", "Times processing waited for rate tokens.");
    auto& cerr = x.counter("rof_session_completion_errors_total", "Completion errors.");
    auto& bad =
        x.counter("rof_session_bad_requests_total", "Requests answered with an error status.");
    auto& credits = x.gauge("rof_session_credits", "Requests in flight the client may have.");
    for (const rof_session_info& s : sessions) {
        auto it = names.find(s.tenant);
        Labels l = {{"tenant", it != names.end() ? it->second : "#" + std::to_string(s.tenant)},
                    {"session", std::to_string(s.id)}};
        req.add(l, s.counters.requests);
        in.add(l, s.counters.bytes_in);
        out.add(l, s.counters.bytes_out);
        def.add(l, s.counters.deferred);
        cerr.add(l, s.counters.completion_errors);
        bad.add(l, s.counters.bad_requests);
        credits.add(l, s.credits);
    }
}

}  // namespace

std::vector<MetricFamily> collect_metrics(const MetricsInput& in) {
    // Tenant names: the module's list first, then the audit config's.
    std::map<std::uint32_t, std::string> names;
    for (const TenantMetrics& t : in.tenants) {
        names.emplace(t.info.id, t.name);
    }
    if (in.audit) {
        for (const auto& [id, t] : in.audit->tenants) {
            if (!t.name.empty()) {
                names.emplace(id, t.name);
            }
        }
    }
    Exposition x;
    if (in.audit) {
        render_audit(x, *in.audit, names, in.audit_totals);
    }
    if (in.audit_totals && in.ring) {
        render_ring(x, *in.ring);
    } else if (in.audit_totals && in.audit && in.audit->have_module_stats) {
        render_ring(x, in.audit->module_stats);
    }
    if (in.refusals_not_journalled) {
        x.counter("rof_refusals_not_journalled_total",
                  "Refused calls not journalled: their caller was past "
                  "limits.refusals_journalled_per_s.")
            .add({}, *in.refusals_not_journalled);
    }
    if (in.lines_not_journalled) {
        x.counter("rof_lines_not_journalled_total",
                  "Differences, errors and notes of a reconciliation or a policy reload past "
                  "the first 100 of each, counted in one line of the journal, not one each.")
            .add({}, *in.lines_not_journalled);
    }
    if (in.reconcile_errors) {
        x.gauge("rof_reconcile_errors",
                "Objects and lists the last reconciliation with the module could not "
                "reconcile; rofd serves the rest (0: not degraded).")
            .add({}, *in.reconcile_errors);
    }
    if (in.connections_refused) {
        x.counter("rof_connections_refused_total",
                  "Unix connections closed unserved: their uid held "
                  "limits.connections_per_uid.")
            .add({}, *in.connections_refused);
    }
    render_tenants(x, in.tenants);
    render_sessions(x, in.sessions, names);
    return x.take();
}

std::string render_metrics(const std::vector<MetricFamily>& families) {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    return out.str();
}

std::string render_metrics(const MetricsInput& in) {
    return render_metrics(collect_metrics(in));
}

// ---- control calls

namespace {

// Upper bounds of rof_control_call_duration_seconds: 100 us to 10 s.
const prometheus::Histogram::BucketBoundaries call_buckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

}  // namespace

CallMetrics::CallMetrics(const std::vector<std::string>& services)
    : registry_(std::make_shared<prometheus::Registry>()),
      family_(&prometheus::BuildHistogram()
                   .Name("rof_control_call_duration_seconds")
                   .Help("Unary gRPC calls to rofd, received to status sent, by method.")
                   .Register(*registry_)) {
    const auto* pool = google::protobuf::DescriptorPool::generated_pool();
    for (const std::string& name : services) {
        const auto* service = pool->FindServiceByName(name);
        if (service == nullptr) {
            throw std::logic_error("CallMetrics: no service " + name + " linked in");
        }
        for (int i = 0; i < service->method_count(); ++i) {
            const auto* m = service->method(i);
            if (!m->client_streaming() && !m->server_streaming()) {
                methods_.emplace(fmt::format("/{}/{}", service->full_name(), m->name()), nullptr);
            }
        }
    }
}

prometheus::Histogram* CallMetrics::histogram(std::string_view method) {
    const auto it = methods_.find(method);
    if (it == methods_.end()) {
        return nullptr;
    }
    const std::lock_guard lock(mutex_);
    if (it->second == nullptr) {
        it->second = &family_->Add({{"method", it->first}}, call_buckets);
    }
    return it->second;
}

std::vector<MetricFamily> CallMetrics::collect() const {
    std::vector<MetricFamily> out = registry_->Collect();
    std::erase_if(out, [](const MetricFamily& f) { return f.metric.empty(); });
    return out;
}

// ---- the /metrics endpoint

LoopbackAddress parse_loopback_address(const std::string& address) {
    auto refuse = [&](std::string_view why) {
        return std::invalid_argument(fmt::format("metrics address \"{}\": {}", address, why));
    };
    const std::size_t colon = address.rfind(':');
    if (colon == std::string::npos || address.starts_with('[')) {
        throw refuse("expected 127.0.0.1:PORT (an IPv4 loopback address: the server has no IPv6)");
    }
    LoopbackAddress out;
    out.host = address.substr(0, colon);
    const std::string_view port = std::string_view(address).substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
        throw refuse("bad port");
    }
    out.port = static_cast<std::uint16_t>(value);
    in_addr a{};
    if (::inet_pton(AF_INET, out.host.c_str(), &a) != 1) {
        throw refuse("not a numeric IPv4 address (use 127.0.0.1:PORT)");
    }
    if ((ntohl(a.s_addr) >> 24) != 127) {
        throw refuse("not a loopback address; metrics are served on 127.0.0.0/8 only");
    }
    return out;
}

// What the exposer asks for at each scrape.  Collect() runs on civetweb's
// threads, and an exception must not cross its C frames: a failed
// collection is logged and counted (rof_metrics_collect_errors_total, the
// only family such a scrape returns).
class MetricsExposer::Source final : public prometheus::Collectable {
  public:
    explicit Source(MetricsExposer::Collect collect)
        : collect_(std::move(collect)),
          errors_(&prometheus::BuildCounter()
                       .Name("rof_metrics_collect_errors_total")
                       .Help("Scrapes of /metrics that could not read rofd's or rof.ko's figures.")
                       .Register(registry_)
                       .Add({})) {}

    std::vector<MetricFamily> Collect() const override {
        std::vector<MetricFamily> out;
        try {
            out = collect_();
        } catch (const std::exception& e) {
            errors_->Increment();
            log::warning("metrics: {}", e.what());
            out.clear();
        }
        for (MetricFamily& f : registry_.Collect()) {
            out.push_back(std::move(f));
        }
        return out;
    }

  private:
    MetricsExposer::Collect collect_;
    prometheus::Registry registry_;
    prometheus::Counter* errors_;
};

MetricsExposer::MetricsExposer(const std::string& address, Collect collect)
    : MetricsExposer(address, std::move(collect), Options{}) {}

MetricsExposer::MetricsExposer(const std::string& address, Collect collect, Options options)
    : source_(std::make_shared<Source>(std::move(collect))) {
    const LoopbackAddress a = parse_loopback_address(address);
    const std::string port = fmt::format("{}:{}", a.host, a.port);
    // civetweb's options: a fixed pool of threads, each connection one
    // request (no keep-alive) within request_timeout, a request header of
    // max_request_bytes at most.
    std::vector<std::string> civet = {
        "listening_ports",    port,
        "num_threads",        std::to_string(options.threads),
        "request_timeout_ms", std::to_string(options.request_timeout.count()),
        "max_request_size",   std::to_string(options.max_request_bytes),
        "enable_keep_alive",  "no",
    };
    try {
        exposer_ = std::make_unique<prometheus::Exposer>(std::move(civet));
    } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("metrics on {}: {}", address, e.what()));
    }
    exposer_->RegisterCollectable(source_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    port_ = ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

MetricsExposer::~MetricsExposer() = default;

}  // namespace rofd
