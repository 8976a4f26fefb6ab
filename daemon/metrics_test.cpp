// SPDX-License-Identifier: MIT
#include "metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "unique_fd.h"

namespace rofd {
namespace {

// The exposition parsed back, checking the format's rules on the way.
struct Parsed {
    std::map<std::string, std::string> types;   // family -> type
    std::map<std::string, std::string> series;  // "name{labels}" -> value
    std::vector<std::string> errors;
};

Parsed parse(const std::string& text) {
    Parsed p;
    std::map<std::string, int> helps;
    std::set<std::string> seen_samples;
    std::istringstream is(text);
    std::string line;
    EXPECT_TRUE(text.empty() || text.back() == '\n');
    while (std::getline(is, line)) {
        if (line.rfind("# HELP ", 0) == 0) {
            std::string name = line.substr(7, line.find(' ', 7) - 7);
            if (++helps[name] != 1) {
                p.errors.push_back("HELP twice: " + name);
            }
            continue;
        }
        if (line.rfind("# TYPE ", 0) == 0) {
            std::string rest = line.substr(7);
            std::string name = rest.substr(0, rest.find(' '));
            if (p.types.count(name) != 0) {
                p.errors.push_back("TYPE twice: " + name);
            }
            if (helps[name] != 1) {
                p.errors.push_back("TYPE before HELP: " + name);
            }
            p.types[name] = rest.substr(rest.find(' ') + 1);
            continue;
        }
        std::size_t sp = line.rfind(' ');
        if (sp == std::string::npos || line.empty() || line[0] == '#') {
            p.errors.push_back("bad line: " + line);
            continue;
        }
        std::string key = line.substr(0, sp);
        std::string name = key.substr(0, key.find('{'));
        std::string family = name;
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            std::size_t n = std::strlen(suffix);
            if (family.size() > n && family.compare(family.size() - n, n, suffix) == 0 &&
                p.types.count(family.substr(0, family.size() - n)) != 0 &&
                (p.types[family.substr(0, family.size() - n)] == "histogram" ||
                 (p.types[family.substr(0, family.size() - n)] == "summary" &&
                  std::strcmp(suffix, "_bucket") != 0))) {
                // Not resize(): gcc 12 -O2 sees an unbounded memset in it
                // (a false -Wstringop-overflow once the headers are precompiled).
                family = family.substr(0, family.size() - n);
            }
        }
        if (p.types.count(family) == 0) {
            p.errors.push_back("sample without TYPE: " + line);
        }
        if (p.types[family] == "counter" && name.size() > 6 &&
            name.compare(name.size() - 6, 6, "_total") != 0) {
            p.errors.push_back("counter not _total: " + name);
        }
        if (!p.series.emplace(key, line.substr(sp + 1)).second) {
            p.errors.push_back("series twice: " + key);
        }
    }
    return p;
}

MetricsInput sample_input() {
    MetricsInput in;
    AuditCounters a;
    TenantAuditCounters& kv = a.tenants[1];
    kv.name = "kv";
    kv.invocations[ROF_ST_OK] = 5;
    kv.invocations[ROF_ST_PROG_FAULT] = 2;
    kv.exec_ok = 5;
    kv.exec_fault = 2;
    kv.bytes = 700;
    kv.insns = 1234;
    kv.latency.observe(500);            // le 1e-06
    kv.latency.observe(3'000);          // le 5e-06
    kv.latency.observe(3'000);          // le 5e-06
    kv.latency.observe(200'000);        // le 0.0005
    kv.latency.observe(2'000'000'000);  // +Inf
    kv.sessions_opened = 4;
    kv.sessions_closed[ROF_CLOSE_IDLE] = 1;
    kv.sessions_rejected[ROF_REJECT_EXPIRED] = 3;
    kv.completion_errors = 1;
    kv.quarantined = 1;
    a.tenants[9].name = "we\"ird\\ten\nant";
    a.sessions[3] = SessionAuditCounters{1, 7, 2, 2, 0, 1, 700, 1234, true};
    a.records = 20;
    a.lost = 2;
    a.have_module_stats = true;
    a.module_stats.overruns = 11;
    a.module_stats.dropped = 12;
    a.module_stats.ring_size = 4096;
    a.module_stats.pending = 3;
    a.module_stats.reserve = 1024;
    in.audit = a;

    TenantMetrics t;
    t.name = "kv";
    t.info.id = 1;
    t.info.usage.region_bytes = 1 << 20;
    t.info.usage.regions = 2;
    t.info.usage.sessions = 1;
    t.info.quota.region_bytes = ROF_QUOTA_UNLIMITED;
    t.info.quota.sessions = 10;
    t.info.quota.programs = 0xffffffffU;
    t.info.quota.credits = 64;
    t.info.counters.invocations = 9;
    t.info.counters.audit_dropped = 2;
    in.tenants.push_back(t);

    rof_session_info s{};
    s.id = 3;
    s.tenant = 1;
    s.credits = 32;
    s.counters.requests = 100;
    s.counters.bytes_in = 1000;
    s.counters.bytes_out = 2000;
    s.counters.deferred = 4;
    s.counters.completion_errors = 1;
    s.counters.bad_requests = 5;
    in.sessions.push_back(s);
    rof_session_info orphan{};
    orphan.id = 8;
    orphan.tenant = 42;  // no such tenant in the list
    in.sessions.push_back(orphan);
    return in;
}

TEST(Metrics, RenderGolden) {
    std::string text = render_metrics(sample_input());
    Parsed p = parse(text);
    EXPECT_TRUE(p.errors.empty()) << ::testing::PrintToString(p.errors) << "\n" << text;
    auto at = [&](const std::string& key) {
        auto it = p.series.find(key);
        return it == p.series.end() ? std::string("<absent>") : it->second;
    };
    EXPECT_EQ(p.types["rof_invocations_total"], "counter");
    EXPECT_EQ(p.types["rof_invocation_latency_seconds"], "histogram");
    EXPECT_EQ(p.types["rof_tenant_region_bytes"], "gauge");

    EXPECT_EQ(at("rof_invocations_total{tenant=\"kv\",status=\"ok\"}"), "5");
    EXPECT_EQ(at("rof_invocations_total{tenant=\"kv\",status=\"prog_fault\"}"), "2");
    EXPECT_EQ(at("rof_invocations_total{tenant=\"kv\",status=\"bad_args\"}"), "0");
    EXPECT_EQ(at("rof_invocations_total{tenant=\"kv\",status=\"other\"}"), "0");
    EXPECT_EQ(at("rof_invocation_executions_total{tenant=\"kv\",outcome=\"fault\"}"), "2");
    EXPECT_EQ(at("rof_invocation_bytes_total{tenant=\"kv\"}"), "700");
    EXPECT_EQ(at("rof_invocation_instructions_total{tenant=\"kv\"}"), "1234");
    // Cumulative buckets.
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"1e-06\"}"), "1");
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"5e-06\"}"), "3");
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"0.0001\"}"), "3");
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"0.0005\"}"), "4");
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"0.1\"}"), "4");
    EXPECT_EQ(at("rof_invocation_latency_seconds_bucket{tenant=\"kv\",le=\"+Inf\"}"), "5");
    EXPECT_EQ(at("rof_invocation_latency_seconds_count{tenant=\"kv\"}"), "5");
    EXPECT_EQ(std::stod(at("rof_invocation_latency_seconds_sum{tenant=\"kv\"}")), 2.0002065);
    EXPECT_EQ(at("rof_sessions_closed_total{tenant=\"kv\",reason=\"idle\"}"), "1");
    EXPECT_EQ(at("rof_sessions_closed_total{tenant=\"kv\",reason=\"disconnect\"}"), "<absent>");
    EXPECT_EQ(at("rof_sessions_rejected_total{tenant=\"kv\",reason=\"expired\"}"), "3");
    EXPECT_EQ(at("rof_sessions_quarantined_total{tenant=\"kv\"}"), "1");
    EXPECT_EQ(at("rof_session_invocations_total{tenant=\"kv\",session=\"3\"}"), "7");
    EXPECT_EQ(at("rof_session_faults_total{tenant=\"kv\",session=\"3\"}"), "2");
    EXPECT_EQ(at("rof_audit_records_total"), "20");
    EXPECT_EQ(at("rof_audit_lost_total"), "2");
    // Ring stats from the snapshot when none are given directly.
    EXPECT_EQ(at("rof_audit_overruns_total"), "11");
    EXPECT_EQ(at("rof_audit_dropped_total"), "12");
    EXPECT_EQ(at("rof_audit_ring_size"), "4096");
    EXPECT_EQ(at("rof_audit_ring_reserve"), "1024");

    EXPECT_EQ(at("rof_tenant_region_bytes{tenant=\"kv\"}"), "1048576");
    EXPECT_EQ(at("rof_tenant_quota_region_bytes{tenant=\"kv\"}"), "+Inf");
    EXPECT_EQ(at("rof_tenant_quota_sessions{tenant=\"kv\"}"), "10");
    EXPECT_EQ(at("rof_tenant_quota_programs{tenant=\"kv\"}"), "+Inf");
    EXPECT_EQ(at("rof_tenant_quota_credits{tenant=\"kv\"}"), "64");
    EXPECT_EQ(at("rof_tenant_invocations_total{tenant=\"kv\"}"), "9");
    EXPECT_EQ(at("rof_tenant_audit_dropped_total{tenant=\"kv\"}"), "2");

    EXPECT_EQ(at("rof_session_requests_total{tenant=\"kv\",session=\"3\"}"), "100");
    EXPECT_EQ(at("rof_session_request_bytes_total{tenant=\"kv\",session=\"3\"}"), "1000");
    EXPECT_EQ(at("rof_session_response_bytes_total{tenant=\"kv\",session=\"3\"}"), "2000");
    EXPECT_EQ(at("rof_session_deferred_total{tenant=\"kv\",session=\"3\"}"), "4");
    EXPECT_EQ(at("rof_session_bad_requests_total{tenant=\"kv\",session=\"3\"}"), "5");
    EXPECT_EQ(at("rof_session_credits{tenant=\"kv\",session=\"3\"}"), "32");
    EXPECT_EQ(at("rof_session_requests_total{tenant=\"#42\",session=\"8\"}"), "0");

    // The odd name, escaped, as one line.
    EXPECT_EQ(at("rof_invocations_total{tenant=\"we\\\"ird\\\\ten\\nant\",status=\"ok\"}"), "0");
    EXPECT_NE(text.find("# HELP rof_invocations_total "), std::string::npos);
    EXPECT_NE(text.find("# TYPE rof_invocation_latency_seconds histogram\n"), std::string::npos);

    // ring given directly wins over the snapshot's.
    MetricsInput in = sample_input();
    in.ring = rof_audit_stats{};
    in.ring->overruns = 99;
    p = parse(render_metrics(in));
    EXPECT_EQ(p.series["rof_audit_overruns_total"], "99");
}

TEST(Metrics, EmptyInputIsEmpty) {
    EXPECT_EQ(render_metrics(MetricsInput{}), "");
    MetricsInput in;
    in.audit = AuditCounters{};
    Parsed p = parse(render_metrics(in));
    EXPECT_TRUE(p.errors.empty());
    EXPECT_EQ(p.series["rof_audit_records_total"], "0");
    EXPECT_EQ(p.types.count("rof_invocations_total"), 0U);  // no tenant, no family
}

TEST(Metrics, LoopbackAddresses) {
    LoopbackAddress a = parse_loopback_address("127.0.0.1:9464");
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 9464);
    a = parse_loopback_address("127.1.2.3:0");
    EXPECT_EQ(a.host, "127.1.2.3");
    EXPECT_EQ(a.port, 0);
    for (const char* bad :
         {"0.0.0.0:9464", "10.0.0.1:9464", "[::]:9464", "[fe80::1]:1", "localhost:9464",
          "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x", "[::1]:9464", "[::1]9464",
          "[::1:9464", "", ":9464", "[::ffff:127.0.0.1]:1"}) {
        EXPECT_THROW(parse_loopback_address(bad), std::invalid_argument) << bad;
    }
    try {
        parse_loopback_address("0.0.0.0:9464");
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("not a loopback address"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("0.0.0.0:9464"), std::string::npos);
    }
    EXPECT_THROW(
        MetricsExposer("0.0.0.0:0", [] { return std::vector<prometheus::MetricFamily>(); }),
        std::invalid_argument);
}

// A blocking client: sends @request to 127.0.0.1:@port, half-closes only
// if asked, returns everything the server sends until it closes.
std::string exchange(std::uint16_t port, const std::string& request, bool shut_wr = false) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        throw std::runtime_error("socket");
    }
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const socklen_t len = sizeof(sin);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sin), len) != 0) {
        throw std::system_error(errno, std::generic_category(), "connect");
    }
    std::size_t off = 0;
    while (off < request.size()) {
        ssize_t n = ::send(fd.get(), request.data() + off, request.size() - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;  // the server answered (400) and stopped reading
        }
        off += static_cast<std::size_t>(n);
    }
    if (shut_wr) {
        ::shutdown(fd.get(), SHUT_WR);
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd.get(), buf, sizeof(buf), 0)) > 0) {
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

std::string status_line(const std::string& response) {
    return response.substr(0, response.find("\r\n"));
}

std::string body_of(const std::string& response) {
    std::size_t p = response.find("\r\n\r\n");
    return p == std::string::npos ? std::string("<none>") : response.substr(p + 4);
}

// A collection for the exposer: one gauge, rof_up 1.
std::vector<prometheus::MetricFamily> up() {
    prometheus::MetricFamily f;
    f.name = "rof_up";
    f.help = "Test.";
    f.type = prometheus::MetricType::Gauge;
    f.metric.emplace_back().gauge.value = 1;
    return {f};
}

TEST(MetricsExposer, ServesMetricsAndRefusesTheRest) {
    std::atomic<int> calls = 0;
    MetricsExposer e("127.0.0.1:0", [&] {
        ++calls;
        return up();
    });
    ASSERT_NE(e.port(), 0);

    std::string r = exchange(e.port(), "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    EXPECT_NE(status_line(r).find(" 200 "), std::string::npos) << r;
    EXPECT_NE(r.find("Content-Type: text/plain"), std::string::npos) << r;
    const Parsed p = parse(body_of(r));
    EXPECT_TRUE(p.errors.empty()) << ::testing::PrintToString(p.errors);
    EXPECT_EQ(p.series.at("rof_up"), "1");
    EXPECT_EQ(p.series.at("rof_metrics_collect_errors_total"), "0");
    EXPECT_EQ(calls, 1);

    r = exchange(e.port(), "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_NE(status_line(r).find(" 200 "), std::string::npos) << r;
    EXPECT_EQ(calls, 2);

    r = exchange(e.port(), "GET / HTTP/1.0\r\n\r\n");
    EXPECT_NE(status_line(r).find(" 404 "), std::string::npos) << r;

    r = exchange(e.port(), "GARBAGE\r\n\r\n");
    EXPECT_NE(status_line(r).find(" 400 "), std::string::npos) << r;

    // A request header over max_request_bytes (8 KiB) is refused, unread.
    const std::string big = "GET /metrics HTTP/1.0\r\nX-Pad: " + std::string(9000, 'a');
    r = exchange(e.port(), big, true);
    EXPECT_EQ(r.find(" 200 "), std::string::npos) << status_line(r);
    EXPECT_EQ(calls, 2);  // the two GETs of /metrics
}

TEST(MetricsExposer, CollectErrorsAreCountedNotServed) {
    int n = 0;
    MetricsExposer e("127.0.0.1:0", [&]() -> std::vector<prometheus::MetricFamily> {
        if (n++ == 0) {
            throw std::runtime_error("the module is gone");
        }
        return up();
    });
    Parsed p = parse(body_of(exchange(e.port(), "GET /metrics HTTP/1.0\r\n\r\n")));
    EXPECT_EQ(p.series.count("rof_up"), 0U);
    EXPECT_EQ(p.series["rof_metrics_collect_errors_total"], "1");
    p = parse(body_of(exchange(e.port(), "GET /metrics HTTP/1.0\r\n\r\n")));
    EXPECT_EQ(p.series["rof_up"], "1");
    EXPECT_EQ(p.series["rof_metrics_collect_errors_total"], "1");
}

TEST(MetricsExposer, SlowClientsTimeOutAndDoNotBlockOthers) {
    MetricsExposer::Options o;
    o.request_timeout = std::chrono::milliseconds(200);
    MetricsExposer e("127.0.0.1:0", up, o);

    // A client that sends half a request and waits holds one thread ...
    UniqueFd slow(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(e.port());
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(slow.get(), reinterpret_cast<const sockaddr*>(&sin), sizeof(sin)), 0);
    ASSERT_EQ(::send(slow.get(), "GET /me", 7, MSG_NOSIGNAL), 7);
    // ... while others are served ...
    EXPECT_NE(body_of(exchange(e.port(), "GET /metrics HTTP/1.0\r\n\r\n")).find("rof_up 1"),
              std::string::npos);
    // ... and the server closes it after the request timeout: recv sees EOF
    // (after whatever error response civetweb sends).
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(slow.get(), buf, sizeof(buf), 0)) > 0) {
    }
    EXPECT_EQ(n, 0) << std::strerror(errno);
}

TEST(MetricsExposer, AnAddressInUseIsAClearError) {
    MetricsExposer a("127.0.0.1:0", up);
    try {
        MetricsExposer b("127.0.0.1:" + std::to_string(a.port()), up);
        ADD_FAILURE() << "a second exposer bound the same port";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("metrics on 127.0.0.1:"), std::string::npos)
            << e.what();
    }
}

// Control calls: only the listed services' unary methods, one histogram
// each, made on first use.
TEST(CallMetrics, CountsTheListedUnaryMethodsOnly) {
    CallMetrics calls({"rof.v1.Tenants", "rof.v1.Audit"});
    EXPECT_TRUE(calls.collect().empty());
    prometheus::Histogram* list = calls.histogram("/rof.v1.Tenants/ListTenants");
    ASSERT_NE(list, nullptr);
    EXPECT_EQ(calls.histogram("/rof.v1.Tenants/ListTenants"), list);
    EXPECT_EQ(calls.histogram("/rof.v1.Tenants/NoSuchCall"), nullptr);
    EXPECT_EQ(calls.histogram("/rof.v1.Regions/ListRegions"), nullptr);  // not listed
    EXPECT_EQ(calls.histogram("/rof.v1.Audit/TailAudit"), nullptr);      // a stream
    list->Observe(0.0003);
    list->Observe(20);
    const Parsed p = parse(render_metrics(calls.collect()));
    EXPECT_TRUE(p.errors.empty()) << ::testing::PrintToString(p.errors);
    EXPECT_EQ(p.types.at("rof_control_call_duration_seconds"), "histogram");
    const std::string m = "method=\"/rof.v1.Tenants/ListTenants\"";
    EXPECT_EQ(p.series.at("rof_control_call_duration_seconds_count{" + m + "}"), "2");
    EXPECT_EQ(p.series.at("rof_control_call_duration_seconds_bucket{" + m + ",le=\"0.0005\"}"),
              "1");
    EXPECT_EQ(p.series.at("rof_control_call_duration_seconds_bucket{" + m + ",le=\"10\"}"), "1");
    EXPECT_EQ(p.series.at("rof_control_call_duration_seconds_bucket{" + m + ",le=\"+Inf\"}"), "2");
    EXPECT_THROW(CallMetrics({"rof.v1.NoSuchService"}), std::logic_error);
}

// The metric names docs/api.md (section 8) names and the Grafana dashboard
// (packaging/grafana/rof.json) queries, each found in what the /metrics
// endpoint serves for a full input.  "rof_tenant_quota_*" stands for any
// family with that prefix.
std::set<std::string> metric_names(const std::string& text) {
    std::set<std::string> out;
    static const std::regex name(R"(rof_[a-z0-9_]+\*?)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
        out.insert(it->str());
    }
    return out;
}

std::string read_source(const std::string& rel) {
    std::ifstream in(std::string(ROF_SOURCE_DIR) + "/" + rel);
    EXPECT_TRUE(in) << rel;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(MetricsNames, EveryDocumentedAndQueriedMetricIsServed) {
    MetricsInput in = sample_input();
    in.refusals_not_journalled = 0;
    in.lines_not_journalled = 0;
    in.reconcile_errors = 0;
    in.connections_refused = 0;
    CallMetrics calls({"rof.v1.Tenants"});
    calls.histogram("/rof.v1.Tenants/ListTenants")->Observe(0.001);
    MetricsExposer e("127.0.0.1:0", [&] {
        std::vector<prometheus::MetricFamily> f = collect_metrics(in);
        for (prometheus::MetricFamily& c : calls.collect()) {
            f.push_back(std::move(c));
        }
        return f;
    });
    const Parsed served = parse(body_of(exchange(e.port(), "GET /metrics HTTP/1.0\r\n\r\n")));
    ASSERT_TRUE(served.errors.empty()) << ::testing::PrintToString(served.errors);
    auto is_served = [&](const std::string& name) {
        if (name.ends_with('*')) {
            const std::string prefix = name.substr(0, name.size() - 1);
            return std::any_of(served.types.begin(), served.types.end(),
                               [&](const auto& t) { return t.first.starts_with(prefix); });
        }
        if (served.types.count(name) != 0) {
            return true;
        }
        for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
            if (name.ends_with(suffix)) {
                const auto t = served.types.find(name.substr(0, name.size() - suffix.size()));
                return t != served.types.end() && t->second == "histogram";
            }
        }
        return false;
    };

    const std::string api = read_source("docs/api.md");
    const auto from = api.find("## 8. Metrics");
    const auto to = api.find("## 9. ", from);
    ASSERT_NE(from, std::string::npos);
    const std::set<std::string> documented = metric_names(api.substr(from, to - from));
    EXPECT_GE(documented.size(), 25U);
    for (const std::string& name : documented) {
        EXPECT_TRUE(is_served(name)) << "docs/api.md names " << name << ", not served";
    }

    const auto dashboard = nlohmann::json::parse(read_source("packaging/grafana/rof.json"));
    std::set<std::string> queried;
    std::size_t panels = 0;
    for (const auto& panel : dashboard.at("panels")) {
        if (panel.at("type") == "row") {
            continue;
        }
        ++panels;
        EXPECT_FALSE(panel.at("targets").empty()) << panel.at("title");
        for (const auto& target : panel.at("targets")) {
            for (const std::string& name : metric_names(target.at("expr").get<std::string>())) {
                queried.insert(name);
            }
        }
    }
    EXPECT_GE(panels, 10U);
    EXPECT_GE(queried.size(), 20U);
    for (const std::string& name : queried) {
        EXPECT_TRUE(is_served(name)) << "the dashboard queries " << name << ", not served";
    }
}

}  // namespace
}  // namespace rofd
