// SPDX-License-Identifier: MIT
// Tests of the policy library: the shipped examples and a full file load;
// every file of testdata/bad/ fails with exactly the one diagnostic its
// first line names; the lookups and helpers.
#include "policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "uapi/rof.h"

namespace rof::policy {
namespace {

namespace fs = std::filesystem;

const fs::path src_dir = ROF_POLICY_SOURCE_DIR;
const fs::path bad_dir = src_dir / "testdata" / "bad";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::pair<std::string, std::string>> example_tenants() {
    return {{"analytics.toml", slurp(src_dir / "tenants.d" / "analytics.toml")},
            {"kv.toml", slurp(src_dir / "tenants.d" / "kv.toml")}};
}

TEST(PolicyExamples, Load) {
    LoadResult r = load((src_dir / "rofd.toml").string(), (src_dir / "tenants.d").string());
    ASSERT_TRUE(r.errors.empty()) << r.error_text();
    ASSERT_TRUE(r.policy);
    const Policy& p = *r.policy;

    EXPECT_EQ(p.daemon.socket, "/run/rof/rofd.sock");
    EXPECT_EQ(p.daemon.max_message_bytes, 4U << 20);
    EXPECT_EQ(p.daemon.memory_bytes, 256ULL << 20);
    EXPECT_FALSE(p.daemon.tcp.enabled);
    EXPECT_EQ(p.daemon.metrics.address, "127.0.0.1:9464");

    ASSERT_EQ(p.tenants.size(), 2U);
    EXPECT_EQ(p.tenants[0].name, "analytics");
    EXPECT_EQ(p.tenants[1].name, "kv");
    EXPECT_EQ(p.tenants[1].file, (src_dir / "tenants.d" / "kv.toml").string());

    const Tenant* kv = p.find("kv");
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(kv->quota.region_bytes, 64ULL << 20);
    EXPECT_EQ(kv->quota.regions, 8U);
    EXPECT_EQ(kv->programs.classes, static_cast<std::uint32_t>(insn_all));
    EXPECT_EQ(kv->programs.max_bytes, 1U << 20);
    EXPECT_EQ(kv->programs.stored_bytes, 16U << 20);
    ASSERT_EQ(kv->regions.size(), 2U);
    EXPECT_EQ(kv->regions[0].name, "table");
    EXPECT_EQ(kv->regions[0].size, 16ULL << 20);
    EXPECT_EQ(kv->regions[0].access, ROF_ACCESS_READ | ROF_ACCESS_WRITE | ROF_ACCESS_ATOMIC);
    ASSERT_EQ(kv->regions[0].freelists.size(), 1U);
    EXPECT_EQ(kv->regions[0].freelists[0].block_size, 64U);
    EXPECT_EQ(kv->regions[0].freelists[0].offset, 4096U);
    EXPECT_EQ(kv->regions[0].freelists[0].count, 1024U);
    ASSERT_EQ(kv->grants.size(), 1U);
    EXPECT_EQ(kv->grants[0].region, "table");
    EXPECT_EQ(kv->grants[0].to, "analytics");
    EXPECT_FALSE(kv->grants[0].write);

    const Tenant* an = p.find("analytics");
    ASSERT_NE(an, nullptr);
    EXPECT_EQ(an->audit, AuditLevel::sessions);
    EXPECT_EQ(an->programs.classes,
              static_cast<std::uint32_t>(insn_alu | insn_jmp | insn_loop | insn_ld | insn_hash));
    EXPECT_EQ(an->quota.credits, 64U);  // absent: the module's default
    EXPECT_EQ(an->quota.region_bytes, 0U);
    EXPECT_EQ(p.find("nope"), nullptr);
}

TEST(PolicyExamples, ParseSameAsLoad) {
    LoadResult r = parse(slurp(src_dir / "rofd.toml"), "rofd.toml", example_tenants());
    ASSERT_TRUE(r.errors.empty()) << r.error_text();
    ASSERT_TRUE(r.policy);
    EXPECT_EQ(r.policy->tenants.size(), 2U);
}

TEST(PolicyLookup, PeersSubjectsAdmins) {
    LoadResult r = parse(slurp(src_dir / "rofd.toml"), "rofd.toml", example_tenants());
    ASSERT_TRUE(r.policy) << r.error_text();
    const Policy& p = *r.policy;
    EXPECT_EQ(p.for_peer(1001, 100)->name, "kv");
    EXPECT_EQ(p.for_peer(1002, 100)->name, "analytics");
    EXPECT_EQ(p.for_peer(4242, 2002)->name, "analytics");  // by gid
    EXPECT_EQ(p.for_peer(1001, 2002)->name, "kv");         // uid first
    EXPECT_EQ(p.for_peer(4242, 4242), nullptr);
    EXPECT_EQ(p.for_subject("CN=kv")->name, "kv");
    EXPECT_EQ(p.for_subject("CN=k"), nullptr);
    EXPECT_TRUE(p.is_admin(0, 100));
    EXPECT_FALSE(p.is_admin(1000, 100));  // the shipped policy: root only
    EXPECT_FALSE(p.is_admin(1001, 100));

    Policy empty;
    EXPECT_TRUE(empty.is_admin(0, 0));  // uid 0 is admin without any file
    EXPECT_FALSE(empty.is_admin(1, 0));
}

TEST(PolicyLoad, FullFileSetsEveryKey) {
    fs::path dir = src_dir / "testdata" / "full";
    LoadResult r = load((dir / "rofd.toml").string(), (dir / "tenants.d").string());
    ASSERT_TRUE(r.policy) << r.error_text();
    const Daemon& d = r.policy->daemon;
    EXPECT_EQ(d.admin.uids, (std::vector<uid_t>{0, 1000}));
    EXPECT_EQ(d.admin.gids, (std::vector<gid_t>{27}));
    EXPECT_EQ(d.admin.subjects, (std::vector<std::string>{"CN=ops,O=example"}));
    EXPECT_EQ(d.socket, "/run/rof/test.sock");
    EXPECT_TRUE(d.tcp.enabled);
    EXPECT_EQ(d.tcp.address, "[::]:7443");
    EXPECT_EQ(d.tcp.cert, "/etc/rof/tls/rofd.pem");
    EXPECT_EQ(d.tcp.key, "/etc/rof/tls/rofd.key");
    EXPECT_EQ(d.tcp.client_ca, "/etc/rof/tls/ca.pem");
    EXPECT_TRUE(d.metrics.enabled);
    EXPECT_EQ(d.metrics.address, "127.0.0.2:9100");
    EXPECT_EQ(d.state_dir, "/srv/rof");
    EXPECT_EQ(d.session_address, "192.0.2.7");
    EXPECT_EQ(d.ticket_ttl_s, 120U);
    EXPECT_EQ(d.idle_timeout_ms, 5000U);
    EXPECT_EQ(d.max_message_bytes, 8U << 20);
    EXPECT_EQ(d.max_concurrent_streams, 32U);
    EXPECT_EQ(d.memory_bytes, 1ULL << 30);
    EXPECT_EQ(d.audit_streams_per_tenant, 2U);
    EXPECT_EQ(d.default_deadline_ms, 10000U);
    EXPECT_EQ(d.audit_streams_admin, 3U);
    EXPECT_EQ(d.handshake_timeout_ms, 5000U);
    EXPECT_EQ(d.keepalive_ms, 30000U);
    EXPECT_EQ(d.keepalive_timeout_ms, 10000U);
    EXPECT_EQ(d.connection_idle_ms, 600000U);
    EXPECT_EQ(d.refusals_journalled_per_s, 5U);
    EXPECT_EQ(d.connections_per_uid, 16U);
    EXPECT_EQ(d.tenant_removal_grace_ms, 5000U);
    EXPECT_EQ(d.connection_age_ms, 1800000U);
    EXPECT_EQ(d.connection_age_grace_ms, 60000U);

    ASSERT_EQ(r.policy->tenants.size(), 1U);
    const Tenant& t = r.policy->tenants[0];
    EXPECT_EQ(t.name, "db");
    EXPECT_EQ(t.audit, AuditLevel::all);
    EXPECT_EQ(t.invoke_records, 100U);
    EXPECT_EQ(t.control_rate, 0U);
    EXPECT_EQ(t.identity.uids, (std::vector<uid_t>{2001, 2002}));
    EXPECT_EQ(t.identity.gids, (std::vector<gid_t>{3001}));
    EXPECT_EQ(t.identity.subjects, (std::vector<std::string>{"CN=db", "CN=db-backup"}));
    EXPECT_EQ(t.quota.region_bytes, 17ULL << 30);
    EXPECT_EQ(t.quota.regions, 4U);
    EXPECT_EQ(t.quota.sessions, 10U);
    EXPECT_EQ(t.quota.programs, 2U);
    EXPECT_EQ(t.quota.credits, 4096U);
    EXPECT_EQ(t.session_rate.ops_per_sec, 1U);
    EXPECT_EQ(t.session_rate.bytes_per_sec, 100000000000U);
    EXPECT_EQ(t.tenant_rate.ops_per_sec, 5U);
    EXPECT_EQ(t.tenant_rate.bytes_per_sec, 6U);
    EXPECT_EQ(t.programs.max_insns, 16384U);
    EXPECT_EQ(t.programs.max_executed, 5000U);
    EXPECT_EQ(t.programs.max_bytes, 4096U);
    EXPECT_EQ(t.programs.max_trip, 1U << 20);
    EXPECT_EQ(t.programs.stored_bytes, 2U << 20);
    EXPECT_EQ(t.programs.classes, 0U);
    EXPECT_EQ(t.quarantine.window_s, 10U);
    EXPECT_EQ(t.quarantine.max_faults, 1U);
    EXPECT_EQ(t.quarantine.max_completion_errors, 2U);
    EXPECT_EQ(t.quarantine.max_bad_requests, 3U);
    EXPECT_EQ(t.sessions.message_bytes, 65536U);
    ASSERT_EQ(t.regions.size(), 2U);
    EXPECT_EQ(t.regions[0].size, 1ULL << 34);  // the largest region
    EXPECT_EQ(t.regions[0].access, ROF_ACCESS_ATOMIC);
    EXPECT_EQ(t.regions[0].line, 37U);  // its [[regions]] header
    // Adjacent free lists, the last one ending exactly at the region's end.
    ASSERT_EQ(t.regions[1].freelists.size(), 2U);
    EXPECT_EQ(t.regions[1].freelists[1].offset, 2112U);
    EXPECT_TRUE(t.grants.empty());
}

TEST(PolicyLoad, MissingFilesAreDefaults) {
    fs::path none = src_dir / "testdata" / "does-not-exist";
    LoadResult r = load((none / "rofd.toml").string(), (none / "tenants.d").string());
    ASSERT_TRUE(r.policy) << r.error_text();
    EXPECT_TRUE(r.policy->tenants.empty());
    EXPECT_EQ(r.policy->daemon.ticket_ttl_s, 60U);
    EXPECT_EQ(r.policy->daemon.socket, "/run/rof/rofd.sock");
    EXPECT_EQ(r.policy->daemon.tcp.address, "0.0.0.0:7443");
}

// A tenant whose file names no quota is bounded; "unlimited" lifts a
// bound explicitly; anything else that is not a count is refused.
TEST(PolicyParse, QuotaDefaultsAreFiniteAndUnlimitedIsExplicit) {
    LoadResult r = parse("", "rofd.toml", {{"a.toml", "name = \"a\"\n"}});
    ASSERT_TRUE(r.policy) << r.error_text();
    const Quota& q = r.policy->tenants.at(0).quota;
    EXPECT_EQ(q.region_bytes, 1ULL << 30);
    EXPECT_EQ(q.regions, 64U);
    EXPECT_EQ(q.sessions, 256U);
    EXPECT_EQ(q.programs, 64U);
    EXPECT_EQ(q.credits, 64U);

    r = parse("", "rofd.toml",
              {{"a.toml",
                "name = \"a\"\n[quota]\nregion_bytes = \"unlimited\"\n"
                "regions = \"unlimited\"\nsessions = \"unlimited\"\n"
                "programs = 3\n"}});
    ASSERT_TRUE(r.policy) << r.error_text();
    const Quota& u = r.policy->tenants.at(0).quota;
    EXPECT_EQ(u.region_bytes, ROF_QUOTA_UNLIMITED);
    EXPECT_EQ(u.regions, UINT32_MAX);
    EXPECT_EQ(u.sessions, UINT32_MAX);
    EXPECT_EQ(u.programs, 3U);

    r = parse("", "rofd.toml", {{"a.toml", "name = \"a\"\n[quota]\nsessions = \"many\"\n"}});
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(),
              "a.toml:3:12: quota.sessions: expected an integer, not a string (\"many\")\n");
}

// A session's message size: 1 KiB unless the tenant's [sessions] says
// otherwise; every power of two from 1 KiB to 64 KiB, as bytes or a size.
TEST(PolicyParse, SessionMessageBytes) {
    LoadResult r = parse("", "rofd.toml", {{"a.toml", "name = \"a\"\n"}});
    ASSERT_TRUE(r.policy) << r.error_text();
    EXPECT_EQ(r.policy->tenants.at(0).sessions.message_bytes, 1024U);
    for (std::uint32_t m = 1024; m <= 65536; m *= 2) {
        r = parse(
            "", "rofd.toml",
            {{"a.toml", "name = \"a\"\n[sessions]\nmessage_bytes = " + std::to_string(m) + "\n"}});
        ASSERT_TRUE(r.policy) << r.error_text();
        EXPECT_EQ(r.policy->tenants.at(0).sessions.message_bytes, m);
    }
    r = parse("", "rofd.toml",
              {{"a.toml", "name = \"a\"\n[sessions]\nmessage_bytes = \"8KiB\"\n"}});
    ASSERT_TRUE(r.policy) << r.error_text();
    EXPECT_EQ(r.policy->tenants.at(0).sessions.message_bytes, 8192U);
}

TEST(PolicyParse, InvokeRecords) {
    LoadResult r = parse("", "rofd.toml", {{"a.toml", "name = \"a\"\n"}});
    ASSERT_TRUE(r.policy) << r.error_text();
    EXPECT_EQ(r.policy->tenants.at(0).invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ALL});
    const std::vector<std::pair<std::string, std::uint32_t>> good = {
        {"all", ROF_INVOKE_RECORDS_ALL},
        {"errors", ROF_INVOKE_RECORDS_ERRORS},
        {"sample:2", 2},
        {"sample:10", 10},
        {"sample:65536", ROF_INVOKE_SAMPLE_MAX},
    };
    for (const auto& [text, value] : good) {
        r = parse("", "rofd.toml",
                  {{"a.toml", "name = \"a\"\ninvoke_records = \"" + text + "\"\n"}});
        ASSERT_TRUE(r.policy) << text << ": " << r.error_text();
        EXPECT_EQ(r.policy->tenants.at(0).invoke_records, value) << text;
        EXPECT_EQ(invoke_records_name(value), text);
    }
    for (const char* bad : {"", "none", "sample", "sample:", "sample:0", "sample:1", "sample:02",
                            "sample:+5", "sample:-5", "sample:65537", "sample:100000", "sample:1e3",
                            "sample: 5", "Sample:5", "all "}) {
        EXPECT_EQ(invoke_records_from_name(bad), std::nullopt) << bad;
        r = parse("", "rofd.toml",
                  {{"a.toml", std::string("name = \"a\"\ninvoke_records = \"") + bad + "\"\n"}});
        EXPECT_FALSE(r.policy) << bad;
    }
}

// The connection limits are on by default: a dead or silent peer never
// holds a connection (or a tenant's audit stream) for long.
TEST(PolicyLoad, ConnectionLimitsDefaults) {
    const Daemon d;
    EXPECT_EQ(d.handshake_timeout_ms, 10000U);
    EXPECT_EQ(d.keepalive_ms, 60000U);
    EXPECT_EQ(d.keepalive_timeout_ms, 20000U);
    EXPECT_EQ(d.connection_idle_ms, 900000U);
    EXPECT_EQ(d.connection_age_ms, 3600000U);
    EXPECT_EQ(d.connection_age_grace_ms, 300000U);
    EXPECT_EQ(d.audit_streams_admin, 8U);
    EXPECT_EQ(d.refusals_journalled_per_s, 10U);
    EXPECT_EQ(d.connections_per_uid, 256U);
}

TEST(PolicyParse, ConnectionLimitsRanges) {
    LoadResult r = parse(
        "[limits]\nhandshake_timeout_ms = 999\nkeepalive_ms = 0\nkeepalive_timeout_ms = "
        "86400001\nconnection_idle_ms = 10\naudit_streams_admin = 0\n"
        "refusals_journalled_per_s = 0\nconnections_per_uid = 0\nconnection_age_ms = 999\n"
        "connection_age_grace_ms = 86400001\n",
        "rofd.toml", {});
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(),
              "rofd.toml:2:24: limits.handshake_timeout_ms: 999 is out of range (1000 .. 120000)\n"
              "rofd.toml:3:16: limits.keepalive_ms: 0 is out of range (1000 .. 86400000)\n"
              "rofd.toml:4:24: limits.keepalive_timeout_ms: 86400001 is out of range (1000 .. "
              "86400000)\n"
              "rofd.toml:5:22: limits.connection_idle_ms: 10 is out of range (1000 .. 86400000)\n"
              "rofd.toml:6:23: limits.audit_streams_admin: 0 is out of range (1 .. 64)\n"
              "rofd.toml:7:29: limits.refusals_journalled_per_s: 0 is out of range (1 .. 100000)\n"
              "rofd.toml:8:23: limits.connections_per_uid: 0 is out of range (1 .. 65536)\n"
              "rofd.toml:9:21: limits.connection_age_ms: 999 is out of range (1000 .. 86400000)\n"
              "rofd.toml:10:27: limits.connection_age_grace_ms: 86400001 is out of range (1000 .. "
              "86400000)\n");
}

// A removed tenant's grace: a minute by default, 0 (at once) to a day.
TEST(PolicyParse, TenantRemovalGrace) {
    EXPECT_EQ(Daemon{}.tenant_removal_grace_ms, 60000U);
    LoadResult ok = parse("[limits]\ntenant_removal_grace_ms = 0\n", "rofd.toml", {});
    ASSERT_TRUE(ok.policy) << ok.error_text();
    EXPECT_EQ(ok.policy->daemon.tenant_removal_grace_ms, 0U);
    LoadResult r = parse("[limits]\ntenant_removal_grace_ms = 86400001\n", "rofd.toml", {});
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(),
              "rofd.toml:2:27: limits.tenant_removal_grace_ms: 86400001 is out of range (0 .. "
              "86400000)\n");
    LoadResult neg = parse("[limits]\ntenant_removal_grace_ms = -1\n", "rofd.toml", {});
    EXPECT_FALSE(neg.policy);
}

TEST(PolicyLoad, TenantsDirMustBeADirectory) {
    std::string file = (src_dir / "rofd.toml").string();
    LoadResult r = load(file, file);
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(), file + ": not a directory\n");
}

TEST(PolicyLoad, DiagnosticsNameThePath) {
    std::string dir = (src_dir / "tenants.d").string();
    LoadResult r = load(dir, bad_dir.string());
    EXPECT_FALSE(r.policy);
    ASSERT_GT(r.errors.size(), 30U);
    EXPECT_EQ(r.errors[0].str(), dir + ": is a directory, not a file");
    EXPECT_EQ(r.errors[1].file, (bad_dir / "rofd-admin-uid-of-tenant.toml").string());
    EXPECT_EQ(r.errors[1].str(),
              (bad_dir / "rofd-admin-uid-of-tenant.toml").string() + ": missing key \"name\"");
}

// Enough files that they are read and parsed on several threads: the tenants and the
// diagnostics come out in file order all the same.
// A file is read whole whatever its size (an empty one, one of many pages), and the tenants come
// out sorted by name when their files' order is not theirs ("a-b.toml" before "a.toml").
TEST(PolicyLoad, FilesAreReadWholeAndTenantsSortedByName) {
    const fs::path dir = fs::path(::testing::TempDir()) / "rof-policy-whole";
    fs::remove_all(dir);
    fs::create_directories(dir / "tenants.d");
    std::ofstream(dir / "rofd.toml").flush();  // empty: every default
    {
        std::ofstream big(dir / "tenants.d" / "a.toml");
        for (int i = 0; i < 5000; i++) {
            big << "# a comment line of the padding that makes this file span many pages\n";
        }
        big << "name = \"a\"\ncontrol_rate = 7\n";
    }
    std::ofstream(dir / "tenants.d" / "a-b.toml") << "name = \"a-b\"\n";
    std::ofstream(dir / "tenants.d" / "c.toml").flush();  // empty: no name
    LoadResult r = load((dir / "rofd.toml").string(), (dir / "tenants.d").string());
    ASSERT_FALSE(r.policy);
    ASSERT_EQ(r.errors.size(), 1U) << r.error_text();
    EXPECT_EQ(r.errors[0].file, (dir / "tenants.d" / "c.toml").string());
    fs::remove(dir / "tenants.d" / "c.toml");
    r = load((dir / "rofd.toml").string(), (dir / "tenants.d").string());
    ASSERT_TRUE(r.policy) << r.error_text();
    ASSERT_EQ(r.policy->tenants.size(), 2U);
    EXPECT_EQ(r.policy->tenants[0].name, "a");
    EXPECT_EQ(r.policy->tenants[0].control_rate, 7U);
    EXPECT_EQ(r.policy->tenants[1].name, "a-b");
    EXPECT_NE(r.policy->find("a-b"), nullptr);
    EXPECT_EQ(r.policy->daemon.socket, "/run/rof/rofd.sock");
}

TEST(PolicyLoad, ManyFilesReadInOrder) {
    const fs::path dir = fs::path(::testing::TempDir()) / "rof-policy-many";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto name_of = [](int i) {
        std::string n = std::to_string(i);
        return "t" + std::string(4 - n.size(), '0') + n;
    };
    constexpr int kTenants = 1000;
    for (int i = 0; i < kTenants; i++) {
        std::ofstream(dir / (name_of(i) + ".toml"))
            << "name = \"" << name_of(i) << "\"\n[quota]\nsessions = " << (i % 7 + 1) << "\n";
    }
    std::string daemon = (src_dir / "rofd.toml").string();
    LoadResult ok = load(daemon, dir.string());
    ASSERT_TRUE(ok.policy) << ok.error_text();
    ASSERT_EQ(ok.policy->tenants.size(), static_cast<std::size_t>(kTenants));
    for (int i = 0; i < kTenants; i++) {
        EXPECT_EQ(ok.policy->tenants[i].name, name_of(i));
        EXPECT_EQ(ok.policy->tenants[i].quota.sessions, static_cast<std::uint32_t>(i % 7 + 1));
    }

    std::ofstream(dir / "t0500.toml") << "name = \"t0500\"\n[quota\n";
    std::ofstream(dir / "t0900.toml") << "name = \"t0100\"\n";
    std::ofstream(dir / "t0950.toml") << "name = 1\n";
    LoadResult bad = load(daemon, dir.string());
    EXPECT_FALSE(bad.policy);
    ASSERT_EQ(bad.errors.size(), 3U) << bad.error_text();
    EXPECT_EQ(bad.errors[0].file, (dir / "t0500.toml").string());
    EXPECT_EQ(bad.errors[1].str(),
              (dir / "t0900.toml").string() +
                  ":1:8: name: \"t0100\" does not match the file name \"t0900.toml\" (tenant "
                  "\"t0100\" belongs in t0100.toml)");
    EXPECT_EQ(bad.errors[2].file, (dir / "t0950.toml").string());
    fs::remove_all(dir);
}

TEST(PolicyParse, DuplicateTenantNames) {
    std::string kv = slurp(src_dir / "tenants.d" / "kv.toml");
    auto tenants = example_tenants();
    tenants.emplace_back("kv.toml", "name = \"kv\"\n");
    LoadResult r = parse("", "rofd.toml", tenants);
    ASSERT_EQ(r.errors.size(), 1U) << r.error_text();
    EXPECT_EQ(r.errors[0].str(),
              "kv.toml:1:8: name: tenant \"kv\" is declared twice (also in kv.toml)");
}

TEST(PolicyParse, AllErrorsSortedPerFile) {
    LoadResult r =
        parse("[sessions]\nticket_ttl_s = 0\n[metrics]\naddress = \"10.0.0.1:1\"\n", "rofd.toml",
              {{"b.toml", "name = \"b\"\nquota = 1\naudit = 2\n"}, {"a.toml", "name = \"x\"\n"}});
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(),
              "rofd.toml:2:16: sessions.ticket_ttl_s: 0 is out of range (1 .. 3600)\n"
              "rofd.toml:4:11: metrics.address: \"10.0.0.1:1\" is not an IPv4 loopback address "
              "(127.0.0.0/8); this "
              "endpoint has no authentication (use 127.0.0.1)\n"
              "a.toml:1:8: name: \"x\" does not match the file name \"a.toml\" (tenant \"x\" "
              "belongs in x.toml)\n"
              "b.toml:2:9: quota: expected a table, not an integer\n"
              "b.toml:3:9: audit: expected a string, not an integer\n");
}

// Port 0 (a free port, which rofd reports) is for listen.tcp only: tests
// start rofd on it.  The metrics endpoint keeps 1..65535.
TEST(PolicyParse, TcpAddressMayUsePortZero) {
    LoadResult r = parse("[listen.tcp]\naddress = \"127.0.0.1:0\"\n", "rofd.toml", {});
    ASSERT_TRUE(r.policy) << r.error_text();
    EXPECT_EQ(r.policy->daemon.tcp.address, "127.0.0.1:0");
    r = parse("[listen.tcp]\naddress = \"127.0.0.1:65536\"\n", "rofd.toml", {});
    EXPECT_FALSE(r.policy);
    r = parse("[metrics]\naddress = \"127.0.0.1:0\"\n", "rofd.toml", {});
    EXPECT_FALSE(r.policy);
    EXPECT_EQ(r.error_text(),
              "rofd.toml:2:11: metrics.address: \"127.0.0.1:0\" is not \"host:port\" (e.g. "
              "\"127.0.0.1:9464\")\n");
}

TEST(PolicyHelpers, Sizes) {
    EXPECT_EQ(parse_size("0"), 0U);
    EXPECT_EQ(parse_size("4096"), 4096U);
    EXPECT_EQ(parse_size("4096B"), 4096U);
    EXPECT_EQ(parse_size("4KiB"), 4096U);
    EXPECT_EQ(parse_size("64 MiB"), 64U << 20);
    EXPECT_EQ(parse_size("16GiB"), 1ULL << 34);
    EXPECT_EQ(parse_size("17179869184GiB"), std::nullopt);  // 2^64
    EXPECT_EQ(parse_size("18446744073709551616"), std::nullopt);
    for (auto bad : {"", "MiB", "64MB", "64mib", "64 KB", "1.5GiB", "-1", " 1", "1  KiB", "1KiB "})
        EXPECT_EQ(parse_size(bad), std::nullopt) << bad;
}

TEST(PolicyHelpers, Names) {
    EXPECT_TRUE(valid_name("kv"));
    EXPECT_TRUE(valid_name("a.b_c:d-E9"));
    EXPECT_TRUE(valid_name(std::string(63, 'x')));
    EXPECT_FALSE(valid_name(std::string(64, 'x')));
    EXPECT_FALSE(valid_name(""));
    EXPECT_FALSE(valid_name("a b"));
    EXPECT_FALSE(valid_name("a/b"));
    EXPECT_FALSE(valid_name("caf\xc3\xa9"));
}

TEST(PolicyHelpers, InsnClassesAndAuditLevels) {
    std::uint32_t all = 0;
    for (auto n : {"alu", "jmp", "loop", "ld", "st", "atomic", "alloc", "copy", "hash"}) {
        auto c = insn_class_from_name(n);
        ASSERT_TRUE(c) << n;
        EXPECT_EQ(insn_class_name(*c), n);
        all |= *c;
    }
    EXPECT_EQ(all, static_cast<std::uint32_t>(insn_all));
    EXPECT_EQ(insn_class_from_name("ALU"), std::nullopt);
    EXPECT_EQ(audit_level_name(AuditLevel::sessions), "sessions");
}

TEST(PolicyHelpers, DiagnosticStr) {
    EXPECT_EQ((Diagnostic{"f.toml", 3, 7, "m"}).str(), "f.toml:3:7: m");
    EXPECT_EQ((Diagnostic{"f.toml", 0, 0, "m"}).str(), "f.toml: m");
}

// ---- testdata/bad ---------------------------------------------------------
//
// Each file starts with "# expect: X" where X is what the one diagnostic
// says: "LINE:COL: message" or ": message" (line 0) in this file, or a
// whole "file:LINE:COL: message" for one elsewhere.  rofd-*.toml files
// are loaded as the daemon file with the example tenants; the others as
// one more tenant beside the examples.

std::vector<std::string> bad_files() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(bad_dir))
        if (e.path().extension() == ".toml")
            names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

class BadFile : public testing::TestWithParam<std::string> {};

TEST_P(BadFile, FailsWithItsDiagnostic) {
    const std::string name = GetParam();
    const std::string text = slurp(bad_dir / name);
    const std::string tag = "# expect: ";
    ASSERT_EQ(text.compare(0, tag.size(), tag), 0) << name << " has no expect line";
    std::string expect = text.substr(tag.size(), text.find('\n') - tag.size());
    if (!expect.empty() && expect[0] >= '0' && expect[0] <= '9')
        expect = name + ":" + expect;
    else if (expect.starts_with(": "))
        expect = name + expect;

    LoadResult r;
    if (name.starts_with("rofd-")) {
        r = parse(text, name, example_tenants());
    } else {
        auto tenants = example_tenants();
        tenants.emplace_back(name, text);
        r = parse(slurp(src_dir / "rofd.toml"), "rofd.toml", tenants);
    }
    EXPECT_FALSE(r.policy);
    ASSERT_EQ(r.errors.size(), 1U) << r.error_text();
    EXPECT_EQ(r.errors[0].str(), expect);
}

INSTANTIATE_TEST_SUITE_P(Policy, BadFile, testing::ValuesIn(bad_files()),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string s = info.param.substr(0, info.param.size() - 5);
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c)))
                                     c = '_';
                             return s;
                         });

TEST(BadFiles, AtLeastThirty) {
    EXPECT_GE(bad_files().size(), 30U);
}

// Many tenant files are read and parsed on several threads: what comes out is what one thread
// made, tenants sorted by name, errors by file in load order, then by position in a file.
TEST(PolicyParse, ManyFilesKeepTheirOrder) {
    std::vector<std::pair<std::string, std::string>> files;
    for (int i = 999; i >= 0; i--) {
        char name[16];
        std::snprintf(name, sizeof name, "t%04d", i);
        std::string text = std::string("name = \"") + name + "\"\n";
        if (i == 100 || i == 700) {
            text += "[quota\n";  // a TOML syntax error
        } else if (i == 350) {
            text += "colour = 1\nshade = 2\n";  // two unknown keys
        }
        files.emplace_back(std::string(name) + ".toml", text);
    }
    LoadResult r = parse("", "rofd.toml", files);
    ASSERT_FALSE(r.policy);
    ASSERT_EQ(r.errors.size(), 4U) << r.error_text();
    EXPECT_EQ(r.errors[0].file, "t0100.toml");
    EXPECT_EQ(r.errors[1].file, "t0350.toml");
    EXPECT_EQ(r.errors[2].file, "t0350.toml");
    EXPECT_LT(r.errors[1].line, r.errors[2].line);
    EXPECT_EQ(r.errors[3].file, "t0700.toml");

    files.clear();
    for (int i = 999; i >= 0; i--) {
        char name[16];
        std::snprintf(name, sizeof name, "t%04d", i);
        files.emplace_back(std::string(name) + ".toml", std::string("name = \"") + name + "\"\n");
    }
    r = parse("", "rofd.toml", files);
    ASSERT_TRUE(r.policy) << r.error_text();
    ASSERT_EQ(r.policy->tenants.size(), 1000U);
    for (std::size_t i = 0; i < 1000; i++) {
        char name[16];
        std::snprintf(name, sizeof name, "t%04zu", i);
        ASSERT_EQ(r.policy->tenants[i].name, name);
        ASSERT_EQ(r.policy->tenants[i].file, std::string(name) + ".toml");
    }
}

}  // namespace
}  // namespace rof::policy
