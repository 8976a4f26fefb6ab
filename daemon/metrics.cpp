// SPDX-License-Identifier: MIT
#include "metrics.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <deque>
#include <map>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "log.h"

namespace rofd {
namespace {

// "le" of latency_bounds_ns, in seconds, as Prometheus clients write them.
constexpr std::array<std::string_view, latency_bounds_ns.size()> latency_le = {
    "1e-06", "5e-06", "1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1",
};

std::string seconds(std::uint64_t ns) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<double>(ns) / 1e9);
    return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

std::string quota_value(std::uint64_t v, std::uint64_t unlimited) {
    return v == unlimited ? std::string("+Inf") : std::to_string(v);
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// One metric family: # HELP and # TYPE, then its samples.
class Family {
  public:
    Family(std::string_view name, std::string_view type, std::string_view help)
        : name_(name), type_(type), help_(help) {}

    void add(const Labels& labels, std::string_view value, std::string_view suffix = {}) {
        samples_ += name_;
        samples_ += suffix;
        if (!labels.empty()) {
            samples_ += '{';
            bool first = true;
            for (const auto& [k, v] : labels) {
                if (!first) {
                    samples_ += ',';
                }
                first = false;
                samples_ += k;
                samples_ += "=\"";
                samples_ += escape_label_value(v);
                samples_ += '"';
            }
            samples_ += '}';
        }
        samples_ += ' ';
        samples_ += value;
        samples_ += '\n';
    }
    void add(const Labels& labels, std::uint64_t value) { add(labels, std::to_string(value)); }

    void write_to(std::string& out) const {
        if (samples_.empty()) {
            return;
        }
        out += "# HELP ";
        out += name_;
        out += ' ';
        out += help_;  // fixed text here: no escaping needed
        out += "\n# TYPE ";
        out += name_;
        out += ' ';
        out += type_;
        out += '\n';
        out += samples_;
    }

  private:
    std::string_view name_, type_, help_;
    std::string samples_;
};

class Exposition {
  public:
    Family& counter(std::string_view name, std::string_view help) {
        return add(name, "counter", help);
    }
    Family& gauge(std::string_view name, std::string_view help) { return add(name, "gauge", help); }
    Family& histogram(std::string_view name, std::string_view help) {
        return add(name, "histogram", help);
    }
    std::string str() const {
        std::string out;
        for (const Family& f : families_) {
            f.write_to(out);
        }
        return out;
    }

  private:
    Family& add(std::string_view name, std::string_view type, std::string_view help) {
        return families_.emplace_back(name, type, help);
    }
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
    Family& bytes = x.counter("rof_invocation_bytes_total",
                              "Request and response payload bytes of INVOKE requests.");
    Family& insns =
        x.counter("rof_invocation_instructions_total", "Program instructions executed.");
    Family& lat = x.histogram("rof_invocation_latency_seconds",
                              "INVOKE latency, request received to response posted.");
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
        bytes.add({{"tenant", tenant}}, t.bytes);
        insns.add({{"tenant", tenant}}, t.insns);
        std::uint64_t cum = 0;
        for (std::size_t i = 0; i < t.latency.buckets.size(); ++i) {
            cum += t.latency.buckets[i];
            std::string le = i < latency_le.size() ? std::string(latency_le[i]) : "+Inf";
            lat.add({{"tenant", tenant}, {"le", le}}, std::to_string(cum), "_bucket");
        }
        lat.add({{"tenant", tenant}}, seconds(t.latency.sum_ns), "_sum");
        lat.add({{"tenant", tenant}}, std::to_string(t.latency.count), "_count");
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
    auto& q_inflight =
        x.gauge("rof_tenant_quota_inflight", "Requests in flight allowed per session.");
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
        q_inflight.add(l, i.quota.inflight);
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

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string render_metrics(const MetricsInput& in) {
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
    return x.str();
}

LoopbackAddress parse_loopback_address(const std::string& address) {
    auto refuse = [&](std::string_view why) {
        return std::invalid_argument(fmt::format("metrics address \"{}\": {}", address, why));
    };
    LoopbackAddress out;
    std::string_view port;
    if (!address.empty() && address[0] == '[') {
        std::size_t close = address.find("]:");
        if (close == std::string::npos) {
            throw refuse("expected [::1]:PORT");
        }
        out.family = AF_INET6;
        out.host = address.substr(1, close - 1);
        port = std::string_view(address).substr(close + 2);
    } else {
        std::size_t colon = address.rfind(':');
        if (colon == std::string::npos) {
            throw refuse("expected 127.0.0.1:PORT or [::1]:PORT");
        }
        out.family = AF_INET;
        out.host = address.substr(0, colon);
        port = std::string_view(address).substr(colon + 1);
    }
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
        throw refuse("bad port");
    }
    out.port = static_cast<std::uint16_t>(value);
    if (out.family == AF_INET) {
        in_addr a{};
        if (::inet_pton(AF_INET, out.host.c_str(), &a) != 1) {
            throw refuse("not a numeric IPv4 address (use 127.0.0.1:PORT or [::1]:PORT)");
        }
        if ((ntohl(a.s_addr) >> 24) != 127) {
            throw refuse("not a loopback address; metrics are served on 127.0.0.0/8 or ::1 only");
        }
    } else {
        in6_addr a{};
        if (::inet_pton(AF_INET6, out.host.c_str(), &a) != 1) {
            throw refuse("not a numeric IPv6 address");
        }
        if (!IN6_IS_ADDR_LOOPBACK(&a)) {
            throw refuse("not a loopback address; metrics are served on 127.0.0.0/8 or ::1 only");
        }
    }
    return out;
}

namespace {

std::string http_response(std::string_view status, std::string_view content_type,
                          std::string_view body, bool head, std::string_view extra = {}) {
    std::string r = fmt::format(
        "HTTP/1.0 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        status, content_type, body.size(), extra);
    if (!head) {
        r += body;
    }
    return r;
}

std::string plain(std::string_view status, bool head = false, std::string_view extra = {}) {
    return http_response(status, "text/plain; charset=utf-8", fmt::format("{}\n", status), head,
                         extra);
}

struct Conn {
    enum class State { reading, writing, lingering };
    UniqueFd fd;
    std::chrono::steady_clock::time_point deadline;
    State state = State::reading;
    std::string in;
    std::string out;
    std::size_t sent = 0;
    bool done = false;
};

// Where the header ends (after its blank line), or npos.
std::size_t header_end(const std::string& in) {
    std::size_t crlf = in.find("\r\n\r\n");
    std::size_t lf = in.find("\n\n");
    if (crlf != std::string::npos && (lf == std::string::npos || crlf + 2 <= lf)) {
        return crlf + 4;
    }
    return lf == std::string::npos ? std::string::npos : lf + 2;
}

}  // namespace

MetricsHttpListener::MetricsHttpListener(const std::string& address, BodyFn body)
    : MetricsHttpListener(address, std::move(body), Options{}) {}

MetricsHttpListener::MetricsHttpListener(const std::string& address, BodyFn body, Options options)
    : body_(std::move(body)), options_(options) {
    LoopbackAddress a = parse_loopback_address(address);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (a.family == AF_INET) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(a.port);
        ::inet_pton(AF_INET, a.host.c_str(), &sin->sin_addr);
        len = sizeof(*sin);
    } else {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(a.port);
        ::inet_pton(AF_INET6, a.host.c_str(), &sin6->sin6_addr);
        len = sizeof(*sin6);
    }
    auto fail = [&](const char* what) {
        return std::system_error(errno, std::generic_category(),
                                 fmt::format("metrics listener {}: {}", address, what));
    };
    listen_.reset(::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listen_) {
        throw fail("socket");
    }
    int one = 1;
    ::setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
        throw fail("bind");
    }
    if (::listen(listen_.get(), 64) != 0) {
        throw fail("listen");
    }
    len = sizeof(ss);
    if (::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
        throw fail("getsockname");
    }
    port_ = ntohs(a.family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                      : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_) {
        throw fail("eventfd");
    }
    thread_ = std::thread([this] { run(); });
}

MetricsHttpListener::~MetricsHttpListener() {
    stop();
}

void MetricsHttpListener::stop() {
    if (!thread_.joinable()) {
        return;
    }
    std::uint64_t one = 1;
    ssize_t ignored = ::write(stop_.get(), &one, sizeof(one));
    (void)ignored;
    thread_.join();
    listen_.reset();
}

void MetricsHttpListener::run() {
    using Clock = std::chrono::steady_clock;
    std::vector<Conn> conns;
    std::vector<pollfd> fds;
    char buf[4096];

    auto respond = [&](Conn& c, std::string response) {
        c.out = std::move(response);
        c.sent = 0;
        c.state = Conn::State::writing;
    };
    auto request = [&](Conn& c, std::size_t end) {
        std::string_view head(c.in.data(), end);
        std::string_view line = head.substr(0, head.find('\n'));
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        std::size_t sp1 = line.find(' ');
        std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
        if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
            line.substr(sp2 + 1).substr(0, 5) != "HTTP/") {
            return plain("400 Bad Request");
        }
        std::string_view method = line.substr(0, sp1);
        std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        bool head_only = method == "HEAD";
        if (method != "GET" && !head_only) {
            return plain("405 Method Not Allowed", false, "Allow: GET, HEAD\r\n");
        }
        std::string_view path = target.substr(0, target.find('?'));
        if (path != "/metrics") {
            return plain("404 Not Found", head_only);
        }
        try {
            return http_response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body_(),
                                 head_only);
        } catch (const std::exception& e) {
            log::error("metrics: {}", e.what());
            return plain("500 Internal Server Error", head_only);
        }
    };

    for (;;) {
        auto now = Clock::now();
        int timeout = -1;
        for (const Conn& c : conns) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(c.deadline - now).count();
            int ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
            timeout = timeout < 0 ? ms : std::min(timeout, ms);
        }
        fds.clear();
        fds.push_back({stop_.get(), POLLIN, 0});
        bool accepting = conns.size() < options_.max_connections;
        fds.push_back({accepting ? listen_.get() : -1, POLLIN, 0});
        for (const Conn& c : conns) {
            short ev = c.state == Conn::State::writing ? POLLOUT : POLLIN;
            fds.push_back({c.fd.get(), ev, 0});
        }
        if (::poll(fds.data(), fds.size(), timeout) < 0) {
            if (errno == EINTR) {
                continue;
            }
            log::error("metrics listener: poll: {}", std::generic_category().message(errno));
            return;
        }
        if (fds[0].revents != 0) {
            return;  // stop(): connections close with conns
        }
        now = Clock::now();
        for (std::size_t i = 0; i < conns.size(); ++i) {
            Conn& c = conns[i];
            short rev = fds[i + 2].revents;
            if (rev == 0) {
                continue;
            }
            if (c.state == Conn::State::writing) {
                if (rev & (POLLERR | POLLHUP)) {
                    c.done = true;
                    continue;
                }
                ssize_t n =
                    ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
                if (n < 0) {
                    c.done = errno != EAGAIN && errno != EINTR;
                    continue;
                }
                c.sent += static_cast<std::size_t>(n);
                if (c.sent == c.out.size()) {
                    // Read what the client still sends until it closes, so
                    // that our close does not reset the response away.
                    ::shutdown(c.fd.get(), SHUT_WR);
                    c.state = Conn::State::lingering;
                    c.out.clear();
                }
                continue;
            }
            ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), 0);
            if (n < 0) {
                c.done = errno != EAGAIN && errno != EINTR;
                continue;
            }
            if (n == 0) {
                c.done = true;  // closed, before a whole request or after our answer
                continue;
            }
            if (c.state == Conn::State::lingering) {
                continue;
            }
            c.in.append(buf, static_cast<std::size_t>(n));
            std::size_t end = header_end(c.in);
            if (end != std::string::npos && end <= options_.max_header_bytes) {
                respond(c, request(c, end));
            } else if (c.in.size() > options_.max_header_bytes) {
                respond(c, plain("400 Bad Request"));
            }
        }
        for (Conn& c : conns) {
            if (c.deadline <= now) {
                c.done = true;
            }
        }
        std::erase_if(conns, [](const Conn& c) { return c.done; });
        if (accepting && fds[1].revents != 0) {
            while (conns.size() < options_.max_connections) {
                int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                    break;  // EAGAIN, or a connection that went away
                }
                Conn c;
                c.fd.reset(fd);
                c.deadline = now + options_.read_timeout;
                conns.push_back(std::move(c));
            }
        }
    }
}

}  // namespace rofd
