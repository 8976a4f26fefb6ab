// SPDX-License-Identifier: MIT
// rofctl top's parts that need no terminal and no rofd: reading the
// metrics text, the rates between two samples, their order, the JSON and
// the text frame within a window.  The live view itself runs in the VM
// (selftests/tests/rofd-api, under a pseudo-terminal, with real traffic);
// batch_test checks that a batch refuses it without an end.
#include "top.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using rofctl::top::compute;
using rofctl::top::parse_sample;
using rofctl::top::render;
using rofctl::top::Sample;
using rofctl::top::View;

// GetMetrics text as rofd writes it (an excerpt, with comments and
// families top does not read).
std::string metrics(int invocations_kv, int requests_3, int deferred_3) {
    return "# HELP rof_invocations_total INVOKE requests by response status.\n"
           "# TYPE rof_invocations_total counter\n"
           "rof_invocations_total{tenant=\"kv\",status=\"ok\"} 5\n"
           "rof_sessions_quarantined_total{tenant=\"kv\"} 1\n"
           "rof_audit_records_total 20\n"
           "rof_tenant_sessions{tenant=\"kv\"} 2\n"
           "rof_tenant_sessions{tenant=\"we\\\"ird\"} 0\n"
           "rof_tenant_invocations_total{tenant=\"kv\"} " +
           std::to_string(invocations_kv) +
           "\n"
           "rof_tenant_invocations_total{tenant=\"we\\\"ird\"} 7\n"
           "rof_tenant_invoke_errors_total{tenant=\"kv\"} 3\n"
           "rof_tenant_completion_errors_total{tenant=\"kv\"} 1\n"
           "rof_tenant_invocation_bytes_total{tenant=\"kv\"} 4096\n"
           "rof_tenant_audit_dropped_total{tenant=\"kv\"} 0\n"
           "rof_tenant_quota_region_bytes{tenant=\"kv\"} +Inf\n"
           "rof_session_requests_total{tenant=\"kv\",session=\"3\"} " +
           std::to_string(requests_3) +
           "\n"
           "rof_session_request_bytes_total{tenant=\"kv\",session=\"3\"} 1000\n"
           "rof_session_response_bytes_total{tenant=\"kv\",session=\"3\"} 2000\n"
           "rof_session_deferred_total{tenant=\"kv\",session=\"3\"} " +
           std::to_string(deferred_3) +
           "\n"
           "rof_session_bad_requests_total{tenant=\"kv\",session=\"3\"} 2\n"
           "rof_session_completion_errors_total{tenant=\"kv\",session=\"3\"} 1\n"
           "rof_session_credits{tenant=\"kv\",session=\"3\"} 64\n"
           "rof_session_requests_total{tenant=\"kv\",session=\"12\"} 10\n"
           "rof_control_call_duration_seconds_count{method=\"/rof.v1.Tenants/ListTenants\"} 4\n";
}

TEST(Top, ParseSampleReadsTheCountersItShows) {
    const Sample s = parse_sample(metrics(100, 50, 4));
    ASSERT_EQ(s.tenants.size(), 2U);
    const auto& kv = s.tenants.at("kv");
    EXPECT_EQ(kv.invocations, 100);
    EXPECT_EQ(kv.errors, 4);  // invoke errors and completion errors
    EXPECT_EQ(kv.bytes, 4096);
    EXPECT_EQ(kv.quarantines, 1);
    EXPECT_EQ(kv.sessions, 2);
    EXPECT_EQ(s.tenants.at("we\"ird").invocations, 7);  // the label unescaped
    ASSERT_EQ(s.sessions.size(), 2U);
    const auto& s3 = s.sessions.at(3);
    EXPECT_EQ(s3.tenant, "kv");
    EXPECT_EQ(s3.requests, 50);
    EXPECT_EQ(s3.bytes_in, 1000);
    EXPECT_EQ(s3.bytes_out, 2000);
    EXPECT_EQ(s3.errors, 3);
    EXPECT_EQ(s3.throttled, 4);
    EXPECT_EQ(s3.credits, 64);
    EXPECT_TRUE(parse_sample("").tenants.empty());
    EXPECT_TRUE(parse_sample("garbage\n{}\nrof_x{tenant=\"a\" 1\n").sessions.empty());
}

TEST(Top, RatesAreDeltasPerSecondBusiestFirst) {
    const Sample before = parse_sample(metrics(100, 50, 4));
    Sample after = parse_sample(metrics(300, 250, 10));
    const View v = compute(before, after, 2.0);
    ASSERT_EQ(v.tenants.size(), 2U);
    EXPECT_EQ(v.tenants[0].tenant, "kv");  // 100/s before we"ird's 0/s
    EXPECT_EQ(v.tenants[0].invocations, 100);
    EXPECT_EQ(v.tenants[0].bytes, 0);
    EXPECT_EQ(v.tenants[0].throttled, 3);  // its session 3's (10 - 4) / 2
    EXPECT_EQ(v.tenants[0].sessions, 2U);
    EXPECT_EQ(v.tenants[1].tenant, "we\"ird");
    EXPECT_EQ(v.tenants[1].invocations, 0);
    ASSERT_EQ(v.sessions.size(), 2U);
    EXPECT_EQ(v.sessions[0].session, 3U);
    EXPECT_EQ(v.sessions[0].requests, 100);
    EXPECT_EQ(v.sessions[0].credits, 64U);
    EXPECT_EQ(v.sessions[1].session, 12U);
    EXPECT_EQ(v.sessions[1].requests, 0);

    // A session opened within the interval counts from 0; a counter that
    // went down (the tenant made again) too.
    after.sessions[40] = after.sessions.at(3);
    after.tenants["kv"].invocations = 30;
    const View w = compute(before, after, 2.0);
    EXPECT_EQ(w.tenants[0].tenant, "kv");
    EXPECT_EQ(w.tenants[0].invocations, 15);
    EXPECT_EQ(w.sessions[0].session, 40U);
    EXPECT_EQ(w.sessions[0].requests, 125);
    EXPECT_EQ(w.sessions[1].session, 3U);
    EXPECT_EQ(w.tenants[0].throttled, 5 + 3);  // both sessions'
}

TEST(Top, JsonAndTextFrames) {
    const View v =
        compute(parse_sample(metrics(100, 50, 4)), parse_sample(metrics(300, 250, 10)), 2.0);
    const rofctl::Json j = rofctl::top::to_json(v);
    EXPECT_EQ(j.at("seconds"), 2.0);
    EXPECT_EQ(j.at("tenants").at(0).at("tenant"), "kv");
    EXPECT_EQ(j.at("tenants").at(0).at("invocations_per_s"), 100.0);
    EXPECT_EQ(j.at("sessions").at(0).at("session"), 3);
    EXPECT_EQ(j.at("sessions").at(0).at("throttled_per_s"), 3.0);

    EXPECT_EQ(render(v, "TITLE"),
              "TITLE\n"
              "TENANT  SESSIONS  INVOKES/S  BYTES/S  ERRORS/S  THROTTLED/S  AUDIT_DROPS/S  "
              "QUARANTINES/S\n"
              "kv      2         100.0      0 B/s    0         3.0          0              0\n"
              "we\"ird  0         0          0 B/s    0         0            0              0\n"
              "\n"
              "SESSION  TENANT  REQUESTS/S  IN/S   OUT/S  ERRORS/S  THROTTLED/S  CREDITS\n"
              "3        kv      100.0       0 B/s  0 B/s  0         3.0          64\n"
              "12       kv      0           0 B/s  0 B/s  0         0            0\n");
    // A small window: the rows that do not fit are counted, lines cut.
    EXPECT_EQ(render(v, "TITLE", 20, 6),
              "TITLE\n"
              "TENANT  SESSIONS  IN\n"
              "kv      2         10\n"
              "we\"ird  0         0\n"
              "\n"
              "... 2 more sessions\n");
    EXPECT_EQ(render(v, "TITLE", 0, 3),
              "TITLE\n"
              "TENANT  SESSIONS  INVOKES/S  BYTES/S  ERRORS/S  THROTTLED/S  AUDIT_DROPS/S  "
              "QUARANTINES/S\n"
              "... 2 more tenants\n");
}

}  // namespace
