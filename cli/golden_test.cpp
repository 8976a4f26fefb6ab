// SPDX-License-Identifier: MIT
// Golden transcripts: what every command prints, as text and as -j JSON,
// for fixed responses of rofd (or, for the commands that need no rofd, the
// real command line).  cli/testdata/OBJECT.txt holds what is expected, so
// a change to rofctl's output is a visible diff of those files; rewrite
// them after a change on purpose with
//   ROFCTL_UPDATE_GOLDEN=1 rofctl_test --gtest_filter='Golden.*'
// and review the diff.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "grpc/health/v1/health.pb.h"
#include "print.h"
#include "rof/v1/audit.pb.h"
#include "rof/v1/control.pb.h"
#include "rof/v1/metrics.pb.h"
#include "rof/v1/policy.pb.h"
#include "rof/v1/program.pb.h"
#include "rof/v1/region.pb.h"
#include "rof/v1/session.pb.h"
#include "rof/v1/tenant.pb.h"
#include "rofctl.h"
#include "rofctl_testing.h"
#include "test_temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
using rofctl::Json;
using rofctl::Printer;

using rofctl::testing::src_dir;

// @text (protobuf text format) as an M.
template <class M>
M parse(const std::string& text) {
    M m;
    EXPECT_TRUE(pb::TextFormat::ParseFromString(text, &m)) << M::descriptor()->full_name();
    return m;
}

// One command of a transcript: its command line as shown after "$ rofctl ",
// and what it prints, given a Printer.  A list is shown with -o wide too.
struct Step {
    std::string command;
    std::function<void(Printer&)> print;
    bool list = false;
};

Step show(std::string command, const pb::Message& m) {
    std::shared_ptr<pb::Message> copy(m.New());
    copy->CopyFrom(m);
    return {std::move(command), [copy](Printer& p) { p.print(*copy); }};
}

Step list(std::string command, const pb::Message& m) {
    Step s = show(std::move(command), m);
    s.list = true;
    return s;
}

// "$ rofctl CMD" and its text (a list: then with -o wide), then
// "$ rofctl -j CMD" and its JSON.
std::string transcript(const std::vector<Step>& steps) {
    std::string out;
    for (const Step& s : steps) {
        std::ostringstream text, json, err;
        Printer tp(text, err, false, false);
        s.print(tp);
        out += "$ rofctl " + s.command + "\n" + text.str();
        if (s.list) {
            std::ostringstream wide;
            Printer wp(wide, err, false, false);
            wp.set_wide(true);
            s.print(wp);
            out += "$ rofctl " + s.command + " -o wide\n" + wide.str();
        }
        Printer jp(json, err, true, false);
        s.print(jp);
        out += "$ rofctl -j " + s.command + "\n" + json.str();
        EXPECT_EQ(err.str(), "") << s.command;
    }
    return out;
}

// The real command line, text then -j, with @dir shown as "DIR".
std::string run(const std::vector<std::string>& args, const fs::path& dir) {
    std::string out;
    auto hide = [&dir](std::string s) {
        const std::string d = dir.string();
        for (auto at = s.find(d); at != std::string::npos; at = s.find(d)) {
            s.replace(at, d.size(), "DIR");
        }
        return s;
    };
    for (const bool json : {false, true}) {
        std::vector<std::string> all = args;
        if (json) {
            all.insert(all.begin(), "-j");
        }
        std::vector<const char*> argv{"rofctl"};
        std::string line = "$ rofctl";
        for (const std::string& a : all) {
            argv.push_back(a.c_str());
            line += " " + a;
        }
        std::ostringstream o, e;
        const int rc = rofctl::run(static_cast<int>(argv.size()), argv.data(), o, e);
        out += hide(line) + "\n" + hide(o.str()) + hide(e.str());
        if (rc != 0) {
            out += "[exit " + std::to_string(rc) + "]\n";
        }
    }
    return out;
}

// Compares @got with cli/testdata/@name, or rewrites it.
void expect_golden(const std::string& name, const std::string& got) {
    const fs::path file = src_dir / "cli/testdata" / name;
    const char* update = std::getenv("ROFCTL_UPDATE_GOLDEN");
    if (update != nullptr && *update != '\0') {
        fs::create_directories(file.parent_path());
        std::ofstream(file, std::ios::binary) << got;
        return;
    }
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << file << " missing: run with ROFCTL_UPDATE_GOLDEN=1";
    const std::string want(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(got, want) << file << " differs; if on purpose, run with ROFCTL_UPDATE_GOLDEN=1";
}

// ---- fixtures: what rofd answers ----

const char* const kv_tenant = R"pb(
    name: "kv"
    id: 1
    quota { region_bytes: 67108864 regions: 8 sessions: 128 programs: 16 credits: 64 }
    usage { region_bytes: 21037056 regions: 2 sessions: 3 programs: 1 freelists: 1 }
    counters {
      invocations: 1234567
      invoke_errors: 3
      completion_errors: 0
      bytes: 5368709120
      insns: 98765432
      sessions_opened: 40
      sessions_closed: 37
      sessions_rejected: 2
      audit_dropped: 0
    }
    session_rate { ops_per_sec: 200000 }
    tenant_rate { ops_per_sec: 1000000 bytes_per_sec: 1000000000 }
    audit: "errors"
    invoke_records: "sample:7"
    state: TENANT_STATE_ACTIVE
)pb";

const char* const analytics_tenant = R"pb(
    name: "analytics"
    id: 2
    quota { region_bytes: 0 regions: 4294967295 sessions: 4 programs: 4 credits: 64 }
    usage { sessions: 1 }
    counters { invocations: 10 bytes: 640 insns: 80 sessions_opened: 1 }
    audit: "sessions"
    invoke_records: "all"
    granted_regions: "kv/table"
    state: TENANT_STATE_ACTIVE
)pb";

const char* const web_tenant = R"pb(
    name: "web"
    id: 3
    quota {
      region_bytes: 18446744073709551615
      regions: 4294967295
      sessions: 4
      programs: 16
      credits: 32
    }
    usage { sessions: 1 }
    audit: "none"
    state: TENANT_STATE_REMOVING
    removal_deadline { seconds: 1795701900 }
)pb";

rof::v1::ListTenantsResponse tenants() {
    rof::v1::ListTenantsResponse r;
    *r.add_tenants() = parse<rof::v1::Tenant>(analytics_tenant);
    *r.add_tenants() = parse<rof::v1::Tenant>(kv_tenant);
    *r.add_tenants() = parse<rof::v1::Tenant>(web_tenant);
    return r;
}

const char* const table_region = R"pb(
    tenant: "kv"
    name: "table"
    size: 16777216
    access: 7
    freelists { block_size: 64 offset: 4096 count: 1024 id: 1 free: 1000 }
    origin: ORIGIN_POLICY
    id: 1
    attachments: 2
    mappings: 1
    chunks: 4096
    granted_to: "analytics:r"
)pb";

const char* const log_region =
    R"pb(
    tenant: "kv" name: "log" size: 4194304 access: 3 origin: ORIGIN_POLICY id: 2 chunks: 1024
    )pb";

const char* const heap_region = R"pb(
    tenant: "kv"
    name: "heap"
    size: 65536
    access: 3
    freelists { block_size: 64 offset: 4096 count: 16 id: 2 free: 16 }
    freelists { block_size: 4368 offset: 8192 count: 8 id: 3 free: 0 corrupt: true }
    origin: ORIGIN_API
    id: 3
    chunks: 16
)pb";

const char* const get_program = R"pb(
    tenant: "kv"
    name: "get"
    tag: 0x3a0c5e1f9d2b7a44
    budget: 1000000
    byte_budget: 1048576
    insn_cnt: 12
    args_min: 8
    args_max: 8
    scratch_size: 0
    resp_max: 4096
    binds { slot: "table" region: "table" }
    binds { slot: "heap" region: "table" freelist: 0 }
    loaded_at { seconds: 1795446096 }
    invocations: 1234567
    faults: 2
    insns: 9876543
    origin: ORIGIN_API
)pb";

const char* const inc_program = R"pb(
    tenant: "kv"
    name: "inc"
    tag: 0x855895b3875abf43
    budget: 1000000
    byte_budget: 1048576
    insn_cnt: 5
    args_min: 8
    args_max: 8
    resp_max: 8
    loaded_at { seconds: 1795449734 nanos: 250000000 }
    invocations: 1
    insns: 5
    origin: ORIGIN_API
    source: "; inc: answers args[0] + 1, 8 bytes\n.args 8, 8\n.resp 8\n\tld64 r2, args[0]\n\tadd64 r2, 1\n\tst64 resp[0], r2\n\tmov64 r3, 8\n\trespond r3, 0\n"
    disassembly: "0: ld64 r2, args[0]\n1: add64 r2, 1\n2: st64 resp[0], r2\n3: mov64 r3, 8\n4: respond r3, 0\n"
)pb";

const char* const live_session = R"pb(
    id: 3
    tenant: "kv"
    state: SESSION_STATE_LIVE
    device: "rxe0"
    port_num: 1
    credits: 64
    regions { name: "table" region: 1 access: 7 size: 16777216 }
    regions { name: "log" region: 2 access: 1 size: 4194304 }
    rate { ops_per_sec: 200000 }
    expires_at { seconds: 1795449794 }
    connected_at { seconds: 1795449735 }
    peer: "[192.168.122.10]:48123"
    counters {
      requests: 1234567
      bytes_in: 29629608
      bytes_out: 79012288
      deferred: 12
      completion_errors: 0
      bad_requests: 1
    }
    idle_timeout_ms: 300000
)pb";

const char* const prepared_session = R"pb(
    id: 4
    tenant: "analytics"
    state: SESSION_STATE_PREPARED
    device: "rxe0"
    port_num: 1
    regions { name: "table" region: 1 access: 1 size: 16777216 }
    expires_at { seconds: 1795449800 }
    idle_timeout_ms: 5000
)pb";

// ---- the transcripts ----

TEST(Golden, Tenant) {
    std::vector<Step> steps;
    steps.push_back(list("tenant list", tenants()));
    steps.push_back(show("tenant show kv", parse<rof::v1::Tenant>(kv_tenant)));
    steps.push_back(show("tenant show web", parse<rof::v1::Tenant>(web_tenant)));
    steps.push_back({"tenant create web --uid 1500 --quota sessions=4", [](Printer& p) {
                         p.text("wrote /etc/rof/tenants.d/web.toml");
                         p.print(parse<rof::v1::ReloadPolicyResponse>("generation: 4"));
                     }});
    steps.push_back(
        {"tenant delete web", [](Printer& p) {
             p.text("removed /etc/rof/tenants.d/web.toml");
             p.print(parse<rof::v1::ReloadPolicyResponse>(R"pb(
                 generation: 5
                 notes: "tenant \"web\": removed from policy: destroyed when its last session closes, at 2026-11-26T14:05:00Z at the latest"
             )pb"));
         }});
    steps.push_back(
        show("tenant destroy web --grace 5000", parse<rof::v1::DestroyTenantResponse>(R"pb(
                 name: "web"
                 state: TENANT_STATE_REMOVING
                 removal_deadline { seconds: 1795701900 }
             )pb")));
    steps.push_back(show("tenant destroy web", parse<rof::v1::DestroyTenantResponse>(R"pb(
                             name: "web"
                             destroyed: true
                         )pb")));
    expect_golden("tenant.txt", transcript(steps));
}

TEST(Golden, Policy) {
    std::vector<Step> steps;
    steps.push_back(
        show("policy reload", parse<rof::v1::ReloadPolicyResponse>(R"pb(
                 generation: 3
                 notes: "tenant \"kv\": quota.sessions 8 is below the 11 open: kept open"
                 notes: "tenant \"analytics\": rate.session lowered: applies to new sessions"
             )pb")));
    steps.push_back(show("policy reload", parse<rof::v1::ReloadPolicyResponse>("generation: 4")));
    steps.push_back(show("policy show", parse<rof::v1::GetPolicyResponse>(R"pb(
                             daemon_file: "/etc/rof/rofd.toml"
                             tenant_files: "/etc/rof/tenants.d/analytics.toml"
                             tenant_files: "/etc/rof/tenants.d/kv.toml"
                             loaded_at { seconds: 1795446096 }
                             generation: 3
                             tenants: "analytics"
                             tenants: "kv"
                         )pb")));
    std::string out = transcript(steps);
    out += run({"policy", "check", (src_dir / "policy").string()}, src_dir);
    out += run({"policy", "check", "--config-dir", (src_dir / "policy").string(),
                (src_dir / "policy/testdata/bad/t-audit-unknown.toml").string()},
               src_dir);
    expect_golden("policy.txt", out);
}

TEST(Golden, Region) {
    rof::v1::ListRegionsResponse regions;
    *regions.add_regions() = parse<rof::v1::Region>(table_region);
    *regions.add_regions() = parse<rof::v1::Region>(log_region);
    *regions.add_regions() = parse<rof::v1::Region>(heap_region);
    std::vector<Step> steps;
    steps.push_back(list("region list", regions));
    steps.push_back(list("region list --tenant web", rof::v1::ListRegionsResponse{}));
    steps.push_back(show("region show kv/table", parse<rof::v1::Region>(table_region)));
    steps.push_back(
        show("region create heap --size 64KiB --access rw --freelist 64:4096:16 "
             "--freelist 4368:8192:8",
             parse<rof::v1::Region>(heap_region)));
    steps.push_back(show("region delete heap", parse<rof::v1::GetRegionRequest>(R"pb(
                             name: "heap"
                         )pb")));
    steps.push_back(
        show("region token table --access r", parse<rof::v1::CreateRegionTokenResponse>(R"pb(
                 token: "\x5f\x1c\x93\x0a\x44\x21\xbe\x07\x11\x9d\xe2\x35\x6c\x80\x4f\xd3"
                 region: 1
                 size: 16777216
                 access: 1
                 device: "/dev/rof"
             )pb")));
    expect_golden("region.txt", transcript(steps));
}

TEST(Golden, Prog) {
    rof::v1::ListProgramsResponse programs;
    *programs.add_programs() = parse<rof::v1::Program>(get_program);
    auto inc = parse<rof::v1::Program>(inc_program);
    inc.clear_source();  // ListPrograms leaves them out
    inc.clear_disassembly();
    *programs.add_programs() = inc;
    auto revoked = parse<rof::v1::Program>(get_program);
    revoked.set_tenant("analytics");
    revoked.set_name("scan-all-the-things");
    revoked.set_revoked(true);
    revoked.set_deferred(true);  // a scan: over one softirq turn
    revoked.set_origin(rof::v1::ORIGIN_POLICY);
    *programs.add_programs() = revoked;

    std::vector<Step> steps;
    steps.push_back(
        show("prog verify get.rofs -v 1", parse<rof::v1::VerifyProgramResponse>(R"pb(
                 ok: true
                 log: "0: ld64 r2, args[0]\n1: and64 r2, 1023\n2: mul64 r2, 16\n3: exit 0\n"
                 worst_case: 12
                 tag: 0x3a0c5e1f9d2b7a44
             )pb")));
    steps.push_back(show("prog verify bad.rofs", parse<rof::v1::VerifyProgramResponse>(R"pb(
                             error: "bad.rofs:1:7: r16: no such register (r0 to r15)"
                         )pb")));
    steps.push_back(show("prog load get.rofs --name get", parse<rof::v1::Program>(get_program)));
    auto replaced = parse<rof::v1::Program>(get_program);
    replaced.set_tag(0x5d0e2b71c4a89f36);
    replaced.set_invocations(0);
    replaced.set_faults(0);
    replaced.set_insns(0);
    replaced.set_replaced(1);
    steps.push_back(show("prog replace get get-v2.rofs", replaced));
    steps.push_back(list("prog list", programs));
    steps.push_back({"prog show inc", [inc](Printer& p) { p.print(inc); }});
    steps.push_back({"prog dump inc", [](Printer& p) {
                         rofctl::print_prog_dump(p, parse<rof::v1::Program>(inc_program));
                     }});
    steps.push_back({"prog run inc --args 2900000000000000", [](Printer& p) {
                         p.print(rofctl::prog_run_tree(3, parse<rof::v1::Program>(inc_program), 0,
                                                       5, std::string("\x2a\0\0\0\0\0\0\0", 8)));
                     }});
    steps.push_back(show("prog unload get", parse<rof::v1::UnloadProgramRequest>(R"pb(
                             name: "get"
                         )pb")));
    std::string out = transcript(steps);

    // prog verify --offline and prog test need no rofd: the real commands.
    rof::test::TempDir tmp("rofctl-golden");
    const fs::path dir = tmp.path();
    std::ofstream(dir / "add.rofs")
        << ".args 8, 8\n.resp 16\n.region data, rwa, 64\n"
           "\tld64 r2, args[0]\n\tfaa r3, data[8], r2\n\tcopy resp[0], data[0], 16\n"
           "\tmov64 r4, 16\n\trespond r4, 7\n";
    std::string region(64, '\0');
    region[0] = 'h';
    region[8] = 1;
    std::ofstream(dir / "data.bin", std::ios::binary) << region;
    std::ofstream(dir / "bad.rofs") << "mov64 r16, 1\nexit 0\n";
    // Over the executor's reschedule point: the note that rof.ko defers it.
    std::ofstream(dir / "long.rofs")
        << "\tmov64 r2, 0\n\tmov64 r3, 0\nL:\tadd64 r3, 1\n\tloop r2, L, 40000\n\texit 0\n";
    out += run({"prog", "verify", "--offline", (dir / "add.rofs").string()}, dir);
    out += run({"prog", "verify", "--offline", (dir / "bad.rofs").string()}, dir);
    out += run({"prog", "verify", "--offline", (dir / "long.rofs").string()}, dir);
    out += run({"prog", "test", (dir / "add.rofs").string(), "--args", "0200000000000000",
                "--region", "data=" + (dir / "data.bin").string()},
               dir);
    out += run({"prog", "test", (dir / "add.rofs").string(), "--args", "01"}, dir);
    expect_golden("prog.txt", out);
}

TEST(Golden, Session) {
    rof::v1::ListSessionsResponse sessions;
    *sessions.add_sessions() = parse<rof::v1::Session>(live_session);
    *sessions.add_sessions() = parse<rof::v1::Session>(prepared_session);
    std::vector<Step> steps;
    steps.push_back(list("session list", sessions));
    steps.push_back(show("session show 3", parse<rof::v1::Session>(live_session)));
    steps.push_back(show("session close 3", parse<rof::v1::CloseSessionRequest>("id: 3")));
    expect_golden("session.txt", transcript(steps));
}

TEST(Golden, Audit) {
    const auto open = parse<rof::v1::AuditRecord>(R"pb(
        seq: 1
        time { seconds: 1795449734 nanos: 673582990 }
        kind: AUDIT_KIND_SESSION_OPEN
        tenant: "kv"
        session: 2
        message: "session 2 of tenant kv opened"
    )pb");
    const auto invoke = parse<rof::v1::AuditRecord>(R"pb(
        seq: 2
        time { seconds: 1795449734 nanos: 693141850 }
        kind: AUDIT_KIND_INVOKE
        tenant: "kv"
        session: 2
        opcode: 3
        tag: 0xe554c5e0a21f215a
        bytes: 24
        latency_ns: 944820
        insns: 1
        message: "invoke of program 0xe554c5e0a21f215a by session 2 of tenant kv: ok"
    )pb");
    const auto fault = parse<rof::v1::AuditRecord>(R"pb(
        seq: 9
        time { seconds: 1795449735 nanos: 1000 }
        kind: AUDIT_KIND_INVOKE
        tenant: "kv"
        session: 2
        opcode: 3
        tag: 0xe554c5e0a21f215a
        status: 5
        reason: 4
        bytes: 4096
        latency_ns: 1500
        insns: 17
        lost: 5
        message: "invoke of program 0xe554c5e0a21f215a by session 2 of tenant kv failed: "
                 "prog_fault (ebounds)"
    )pb");
    const auto destroy = parse<rof::v1::AuditRecord>(R"pb(
        seq: 10
        time { seconds: 1795449736 nanos: 0 }
        kind: AUDIT_KIND_REGION_DESTROY
        tenant: "kv"
        reason: 1
        bytes: 65536
        region: 4
        message: "region 4 of tenant kv destroyed: admin"
    )pb");
    std::vector<Step> steps;
    steps.push_back({"audit tail -n 4", [&](Printer& p) {
                         p.record(open);
                         p.record(invoke);
                         p.record(fault);
                         p.record(destroy);
                     }});
    steps.push_back(show("audit stats", parse<rof::v1::AuditStats>(R"pb(
                             next_seq: 43
                             overruns: 0
                             ring_size: 4096
                             pending: 2
                             dropped: 0
                             reserve: 64
                             drained: 41
                             lost: 0
                         )pb")));
    expect_golden("audit.txt", transcript(steps));
}

TEST(Golden, Status) {
    const auto status = parse<rof::v1::GetStatusResponse>(R"pb(
        module { version : "0.1.0" abi_major : 0 abi_minor : 3 }
        daemon {
          version : "0.1.0"
          uptime { seconds : 192 nanos : 500000000 }
        }
        devices {
          name : "rxe0"
          index : 0
          node_guid : 0x9cea6bfffeef0144
          num_ports : 1
          ports { port_num : 1 state : PORT_STATE_ACTIVE active_mtu : 1024 }
        }
        devices {
          name : "mlx5_0"
          index : 1
          node_guid : 0x0250b6fffe123456
          num_ports : 2
          ports { port_num : 1 state : PORT_STATE_ACTIVE active_mtu : 4096 }
          ports { port_num : 2 state : PORT_STATE_DOWN }
        } drift : "tenant \"kv\": region \"table\" recreated" drift : "tenant \"kv\": program \"get\" reloaded (tag 0x3a0c5e1f9d2b7a44)" policy_generation : 1 caller : "admin"
    )pb");
    const std::string prom =
        "# TYPE rof_tenant_invocations_total counter\n"
        "rof_tenant_invocations_total{tenant=\"kv\"} 1234567\n"
        "rof_tenant_invocations_total{tenant=\"analytics\"} 10\n"
        "# TYPE rof_rofd_up gauge\n"
        "rof_rofd_up 1\n";
    std::vector<Step> steps;
    steps.push_back(show("status", status));
    steps.push_back(show("status", parse<rof::v1::GetStatusResponse>(R"pb(
                             module { version : "0.1.0" abi_minor : 3 }
                             daemon {
                               version : "0.1.0"
                               uptime { seconds : 93784 }
                             } policy_generation : 1 caller : "tenant kv"
                         )pb")));
    steps.push_back(
        show("health", parse<grpc::health::v1::HealthCheckResponse>("status: SERVING")));
    steps.push_back({"stats", [prom](Printer& p) { p.print(rofctl::metric_samples(prom)); }});
    steps.push_back({"stats -o prom", [prom](Printer& p) {
                         rof::v1::GetMetricsResponse r;
                         r.set_text(prom);
                         rofctl::print_prom(p, r);
                     }});
    expect_golden("status.txt", transcript(steps));
}

}  // namespace
