// SPDX-License-Identifier: MIT
// Every rof.v1 service through rofd's real server and accept loop, over
// unix sockets, with callers of different uids (service_harness.h): who may
// call what, malformed requests, and what the calls do.  The module is
// the FakeModule.
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <string>

#include "rof_exec.h"
#include "service_harness.h"
#include "test_tenants.h"

namespace {

using rofd::test::Client;
using rofd::test::rpc;
using rofd::test::ServiceHarness;
using rofd::test::TailStream;
using rofd::test::wait_until;
using rofd::test::Who;
namespace v1 = rof::v1;
using Code = grpc::StatusCode;

const Who admin{"admin", 0, 0, {}};
const Who kv_user{"kv", 1001, 1001, {}};
const Who analytics_user{"analytics", 1002, 1002, {}};
const Who burst_user{"burst", 1003, 1003, {}};
const Who stranger{"stranger", 1234, 1234, {}};

const char* const daemon_toml = R"(
[sessions]
address = "10.0.0.1"

[limits]
audit_streams_per_tenant = 1
audit_streams_admin = 2
)";

// kv owns "table" (granted read-only to analytics) and "log".
const std::string kv_toml =
    rofd::test::kv_toml({.head = "control_rate = 0\n",
                         .quota = "regions = 8\n",
                         .tail = "\n[[grants]]\nregion = \"table\"\nto = \"analytics\"\n"});

// analytics owns nothing and may not use ST.
const char* const analytics_toml = R"(name = "analytics"
control_rate = 0

[identity]
uids = [1002]

[quota]
region_bytes = 0
regions = 0

[programs]
classes = ["alu", "jmp", "loop", "ld", "hash"]
)";

const char* const burst_toml = R"(name = "burst"
control_rate = 2

[identity]
uids = [1003]
)";

const ServiceHarness::Files tenant_files = {
    {"kv", kv_toml}, {"analytics", analytics_toml}, {"burst", burst_toml}};

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::string describe(const grpc::Status& st) {
    return std::to_string(static_cast<int>(st.error_code())) + " " + st.error_message();
}

v1::ProgramSource source(const std::string& text) {
    v1::ProgramSource s;
    s.set_text(text);
    s.set_file("t.rofs");
    return s;
}

class Service : public ::testing::Test {
  protected:
    Service() : h_(daemon_toml, tenant_files) {}

    void SetUp() override {
        if (::geteuid() != 0) {
            GTEST_SKIP() << "needs root: the callers connect as other uids";
        }
    }

    // What an admin sees of everything that a call could change.
    std::string snapshot() {
        auto c = h_.client(admin);
        std::string out;
        v1::ListRegionsResponse regions;
        EXPECT_TRUE(rpc(*c->regions, &v1::Regions::Stub::ListRegions, {}, &regions).ok());
        v1::ListProgramsResponse programs;
        EXPECT_TRUE(rpc(*c->programs, &v1::Programs::Stub::ListPrograms, {}, &programs).ok());
        v1::ListSessionsResponse sessions;
        EXPECT_TRUE(rpc(*c->sessions, &v1::Sessions::Stub::ListSessions, {}, &sessions).ok());
        v1::GetPolicyResponse policy;
        EXPECT_TRUE(rpc(*c->policy, &v1::Policy::Stub::GetPolicy, {}, &policy).ok());
        return regions.DebugString() + programs.DebugString() + sessions.DebugString() +
               "generation " + std::to_string(policy.generation());
    }

    std::uint32_t tenant_id(const std::string& name) { return h_.manager().tenant_id(name); }

    ServiceHarness h_;
};

// ---- who may call what ---------------------------------------------------

enum Role { as_admin, as_own, as_other, as_granted, as_unknown, roles };
const std::array<const char*, roles> role_names = {"admin", "own tenant kv", "other tenant",
                                                   "granted tenant", "unknown uid"};

// One row: the call made by each role (on kv's objects), and the codes.
struct Row {
    const char* name;
    std::function<grpc::Status(Client&, Role)> call;
    std::array<Code, roles> want;
    std::string object;  // what a tenant's refusal names
};

constexpr Code OK = Code::OK;
constexpr Code PD = Code::PERMISSION_DENIED;

TEST_F(Service, AuthorizationMatrix) {
    // Fixtures of kv's, made by an admin.
    auto root = h_.client(admin);
    {
        v1::LoadProgramRequest req;
        req.set_tenant("kv");
        req.set_name("fixture");
        *req.mutable_source() = source("exit 0\n");
        v1::Program resp;
        const auto st = rpc(*root->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
        ASSERT_TRUE(st.ok()) << describe(st);
    }
    std::uint32_t fixture_session = 0;
    {
        v1::OpenSessionRequest req;
        req.set_tenant("kv");
        req.add_regions()->set_name("table");
        v1::OpenSessionResponse resp;
        const auto st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
        ASSERT_TRUE(st.ok()) << describe(st);
        fixture_session = resp.session();
    }

    std::array<std::unique_ptr<Client>, roles> clients = {
        h_.client(admin), h_.client(kv_user), h_.client(analytics_user), h_.client(analytics_user),
        h_.client(stranger)};
    // Objects the allowed callers made, for the calls that undo them.
    std::map<Role, std::uint32_t> sessions;
    const auto suffix = [](Role r) { return std::string(r == as_admin ? "admin" : "kv"); };
    const auto allowed = [](Role r) { return r == as_admin || r == as_own; };

    const std::vector<Row> rows = {
        {"Control.GetStatus",
         [](Client& c, Role) {
             v1::GetStatusResponse resp;
             return rpc(*c.control, &v1::Control::Stub::GetStatus, {}, &resp);
         },
         {OK, OK, OK, OK, PD},
         ""},
        {"Control.RotateTicketKey",
         [](Client& c, Role) {
             v1::RotateTicketKeyResponse resp;
             return rpc(*c.control, &v1::Control::Stub::RotateTicketKey, {}, &resp);
         },
         {OK, PD, PD, PD, PD},
         "the ticket key"},
        {"Tenants.ListTenants",
         [](Client& c, Role) {
             v1::ListTenantsResponse resp;
             return rpc(*c.tenants, &v1::Tenants::Stub::ListTenants, {}, &resp);
         },
         {OK, OK, OK, OK, PD},
         ""},
        {"Tenants.GetTenant",
         [](Client& c, Role) {
             v1::GetTenantRequest req;
             req.set_name("kv");
             v1::Tenant resp;
             return rpc(*c.tenants, &v1::Tenants::Stub::GetTenant, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\""},
        {"Policy.GetPolicy",
         [](Client& c, Role) {
             v1::GetPolicyResponse resp;
             return rpc(*c.policy, &v1::Policy::Stub::GetPolicy, {}, &resp);
         },
         {OK, PD, PD, PD, PD},
         "the policy"},
        {"Policy.ReloadPolicy",
         [](Client& c, Role) {
             v1::ReloadPolicyResponse resp;
             return rpc(*c.policy, &v1::Policy::Stub::ReloadPolicy, {}, &resp);
         },
         {OK, PD, PD, PD, PD},
         "the policy"},
        {"Regions.CreateRegion",
         [&](Client& c, Role r) {
             v1::CreateRegionRequest req;
             req.set_tenant("kv");
             req.set_name(allowed(r) ? "m-" + suffix(r) : "m-other");
             req.set_size(4096);
             req.set_access(3);
             v1::Region resp;
             return rpc(*c.regions, &v1::Regions::Stub::CreateRegion, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": region \"m-other\""},
        {"Regions.DeleteRegion",
         [&](Client& c, Role r) {
             v1::DeleteRegionRequest req;
             req.set_tenant("kv");
             req.set_name(allowed(r) ? "m-" + suffix(r) : "m-kv");
             v1::DeleteRegionResponse resp;
             return rpc(*c.regions, &v1::Regions::Stub::DeleteRegion, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": region \"m-kv\""},
        {"Regions.ListRegions",
         [](Client& c, Role) {
             v1::ListRegionsRequest req;
             req.set_tenant("kv");
             v1::ListRegionsResponse resp;
             return rpc(*c.regions, &v1::Regions::Stub::ListRegions, req, &resp);
         },
         {OK, OK, OK, OK, PD},
         ""},
        {"Regions.GetRegion",
         [](Client& c, Role r) {
             v1::GetRegionRequest req;
             req.set_tenant("kv");
             req.set_name(r == as_granted ? "table" : "log");
             v1::Region resp;
             return rpc(*c.regions, &v1::Regions::Stub::GetRegion, req, &resp);
         },
         {OK, OK, PD, OK, PD},
         "tenant \"kv\": region \"log\""},
        {"Regions.CreateRegionToken(read)",
         [](Client& c, Role r) {
             v1::CreateRegionTokenRequest req;
             req.set_tenant("kv");
             req.set_name(r == as_granted ? "table" : "log");
             req.set_access(1);
             v1::CreateRegionTokenResponse resp;
             return rpc(*c.regions, &v1::Regions::Stub::CreateRegionToken, req, &resp);
         },
         {OK, OK, PD, OK, PD},
         "tenant \"kv\": region \"log\""},
        {"Regions.CreateRegionToken(write)",
         [](Client& c, Role r) {
             v1::CreateRegionTokenRequest req;
             req.set_tenant("kv");
             req.set_name(r == as_granted ? "table" : "log");
             req.set_access(3);
             v1::CreateRegionTokenResponse resp;
             return rpc(*c.regions, &v1::Regions::Stub::CreateRegionToken, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": region \""},
        {"Programs.VerifyProgram",
         [](Client& c, Role) {
             v1::VerifyProgramRequest req;
             req.set_tenant("kv");
             *req.mutable_source() = source("exit 0\n");
             v1::VerifyProgramResponse resp;
             return rpc(*c.programs, &v1::Programs::Stub::VerifyProgram, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": programs"},
        {"Programs.LoadProgram",
         [&](Client& c, Role r) {
             v1::LoadProgramRequest req;
             req.set_tenant("kv");
             req.set_name(allowed(r) ? "p-" + suffix(r) : "p-other");
             *req.mutable_source() = source(r == as_admin ? "exit 1\n" : "exit 2\n");
             v1::Program resp;
             return rpc(*c.programs, &v1::Programs::Stub::LoadProgram, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": program \"p-other\""},
        {"Programs.ReplaceProgram",
         [&](Client& c, Role r) {
             v1::ReplaceProgramRequest req;
             req.set_tenant("kv");
             req.set_name(allowed(r) ? "p-" + suffix(r) : "p-other");
             *req.mutable_source() = source(r == as_admin ? "exit 3\n" : "exit 4\n");
             v1::Program resp;
             return rpc(*c.programs, &v1::Programs::Stub::ReplaceProgram, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": program \"p-other\""},
        {"Programs.UnloadProgram",
         [&](Client& c, Role r) {
             v1::UnloadProgramRequest req;
             req.set_tenant("kv");
             req.set_name(allowed(r) ? "p-" + suffix(r) : "p-kv");
             v1::UnloadProgramResponse resp;
             return rpc(*c.programs, &v1::Programs::Stub::UnloadProgram, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": program \"p-kv\""},
        {"Programs.ListPrograms",
         [](Client& c, Role) {
             v1::ListProgramsRequest req;
             req.set_tenant("kv");
             v1::ListProgramsResponse resp;
             return rpc(*c.programs, &v1::Programs::Stub::ListPrograms, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": programs"},
        {"Programs.GetProgram",
         [](Client& c, Role) {
             v1::GetProgramRequest req;
             req.set_tenant("kv");
             req.set_name("fixture");
             v1::Program resp;
             return rpc(*c.programs, &v1::Programs::Stub::GetProgram, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": program \"fixture\""},
        {"Sessions.OpenSession",
         [&](Client& c, Role r) {
             v1::OpenSessionRequest req;
             req.set_tenant("kv");
             req.add_regions()->set_name("log");
             v1::OpenSessionResponse resp;
             auto st = rpc(*c.sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
             if (st.ok()) {
                 sessions[r] = resp.session();
             }
             return st;
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": session"},
        {"Sessions.ListSessions",
         [](Client& c, Role) {
             v1::ListSessionsRequest req;
             req.set_tenant("kv");
             v1::ListSessionsResponse resp;
             return rpc(*c.sessions, &v1::Sessions::Stub::ListSessions, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": sessions"},
        {"Sessions.GetSession",
         [&](Client& c, Role) {
             v1::GetSessionRequest req;
             req.set_id(fixture_session);
             v1::Session resp;
             return rpc(*c.sessions, &v1::Sessions::Stub::GetSession, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "session " + std::to_string(fixture_session)},
        {"Sessions.CloseSession",
         [&](Client& c, Role r) {
             v1::CloseSessionRequest req;
             req.set_id(allowed(r) ? sessions.at(r) : fixture_session);
             v1::CloseSessionResponse resp;
             return rpc(*c.sessions, &v1::Sessions::Stub::CloseSession, req, &resp);
         },
         {OK, OK, PD, PD, PD},
         "session " + std::to_string(fixture_session)},
        {"Audit.TailAudit",
         [&](Client& c, Role) {
             // Open: the hub gains a subscriber; refused: the stream ends.
             const std::size_t before = h_.manager().audit_hub().streams();
             v1::TailAuditRequest req;
             req.set_tenant("kv");
             TailStream s(*c.audit, req);
             if (!wait_until(
                     [&] { return s.done() || h_.manager().audit_hub().streams() > before; })) {
                 return grpc::Status(Code::DEADLINE_EXCEEDED, "test: neither open nor refused");
             }
             if (s.done()) {
                 return s.status();
             }
             s.cancel();
             const auto st = s.status();
             EXPECT_EQ(st.error_code(), Code::CANCELLED) << describe(st);
             EXPECT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == before; }));
             return grpc::Status::OK;
         },
         {OK, OK, PD, PD, PD},
         "tenant \"kv\": audit"},
        {"Audit.GetAuditStats",
         [](Client& c, Role) {
             v1::AuditStats resp;
             return rpc(*c.audit, &v1::Audit::Stub::GetAuditStats, {}, &resp);
         },
         {OK, PD, PD, PD, PD},
         "audit ring"},
        {"Metrics.GetMetrics",
         [](Client& c, Role) {
             v1::GetMetricsResponse resp;
             return rpc(*c.metrics, &v1::Metrics::Stub::GetMetrics, {}, &resp);
         },
         {OK, OK, OK, OK, PD},
         ""},
    };

    // Refused callers first, so that a refused undo finds the object the
    // allowed callers' previous row made.
    const std::array<Role, roles> order = {as_other, as_granted, as_unknown, as_own, as_admin};
    for (const Row& row : rows) {
        for (const Role r : order) {
            SCOPED_TRACE(std::string(row.name) + " as " + role_names[r]);
            const Code want = row.want[r];
            const std::string before = want == OK ? "" : snapshot();
            const grpc::Status st = row.call(*clients[r], r);
            EXPECT_EQ(st.error_code(), want) << describe(st);
            if (want == OK) {
                continue;
            }
            const std::string& msg = st.error_message();
            if (r == as_unknown) {
                EXPECT_TRUE(contains(msg, "unknown caller (uid 1234, pid ")) << msg;
                EXPECT_TRUE(contains(msg, "is not an admin and no tenant's identity in policy"))
                    << msg;
            } else {
                const std::string caller =
                    r == as_own ? "tenant kv (uid 1001, pid " : "tenant analytics (uid 1002, pid ";
                // A grant's limit names the grantee: `granted to tenant "analytics" read-only`.
                EXPECT_TRUE(contains(msg, caller) || contains(msg, "to tenant \"analytics\""))
                    << msg;
                EXPECT_TRUE(contains(msg, row.object)) << msg;
            }
            EXPECT_EQ(snapshot(), before) << "a refused call changed something";
        }
    }
}

// ---- malformed requests ----------------------------------------------------

// @st is INVALID_ARGUMENT and its message names @reason.
void expect_invalid(const grpc::Status& st, const std::string& reason) {
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), reason)) << st.error_message();
}

v1::CreateRegionRequest region_request(const std::string& name, std::uint64_t size,
                                       std::uint32_t access) {
    v1::CreateRegionRequest req;
    req.set_tenant("kv");
    req.set_name(name);
    req.set_size(size);
    req.set_access(access);
    return req;
}

TEST_F(Service, MalformedCreateRegionIsRefusedAndChangesNothing) {
    auto c = h_.client(admin);
    const std::string before = snapshot();
    const auto create = [&](const v1::CreateRegionRequest& req) {
        v1::Region resp;
        return rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &resp);
    };
    expect_invalid(create(region_request("", 4096, 3)),
                   "name: empty; a name is 1 .. 63 characters of [A-Za-z0-9._:-]");
    expect_invalid(create(region_request(std::string(64, 'a'), 4096, 3)),
                   "name: 64 characters; a name is 1 .. 63 characters of [A-Za-z0-9._:-]");
    expect_invalid(create(region_request("a/b", 4096, 3)),
                   "name: \"a/b\" has '/'; a name is 1 .. 63 characters of [A-Za-z0-9._:-]");
    expect_invalid(create(region_request("r", 4096, 8)), "access: 8 is not");
    expect_invalid(create(region_request("r", 4096, 0)), "access: 0 is not");
    expect_invalid(create(region_request("r", 0, 3)), "size: 0 must be");
    expect_invalid(create(region_request("r", 4097, 3)), "size: 4097 must be");
    expect_invalid(create(region_request("r", 1ULL << 40, 3)),
                   "size: 1099511627776 must be a non-zero multiple of 4096 of at most 16 GiB");

    auto overlap = region_request("r", 8192, 3);
    for (const std::uint64_t off : {0, 1024}) {
        auto* f = overlap.add_freelists();
        f->set_block_size(64);
        f->set_offset(off);
        f->set_count(16);  // [off, off + 1088)
    }
    expect_invalid(create(overlap), "freelists[1]: overlaps an earlier free list");

    auto outside = region_request("r", 4096, 3);
    auto* f = outside.add_freelists();
    f->set_block_size(64);
    f->set_offset(0);
    f->set_count(64);  // ends at 64 + 4096
    expect_invalid(create(outside), "freelists[0]: ends at byte 4160, past the region's 4096");

    // An offset near 2^64: offset + 64 + count * block_size wraps around.
    auto wraps = region_request("r", 4096, 3);
    f = wraps.add_freelists();
    f->set_block_size(8);
    f->set_offset(~0ULL - 63);
    f->set_count(1);
    expect_invalid(create(wraps),
                   "freelists[0]: starts at byte 18446744073709551552, past the region's 4096");

    auto key = region_request("r", 4096, 3);
    key.set_idempotency_key(std::string(200, 'k'));
    expect_invalid(create(key), "idempotency_key: 200 characters; at most 128");

    EXPECT_EQ(snapshot(), before);
}

TEST_F(Service, MalformedProgramsAreRefused) {
    auto c = h_.client(kv_user);
    const std::string before = snapshot();
    const auto verify = [&](const v1::ProgramSource& p, std::uint32_t log_level,
                            v1::VerifyProgramResponse* resp) {
        v1::VerifyProgramRequest req;
        *req.mutable_source() = p;
        req.set_log_level(log_level);
        return rpc(*c->programs, &v1::Programs::Stub::VerifyProgram, req, resp);
    };
    const auto load = [&](const v1::ProgramSource& p) {
        v1::LoadProgramRequest req;
        req.set_name("bad");
        *req.mutable_source() = p;
        v1::Program resp;
        return rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
    };
    v1::VerifyProgramResponse resp;

    expect_invalid(verify(v1::ProgramSource(), 0, &resp), "source: neither text nor image given");
    expect_invalid(load(v1::ProgramSource()), "source: neither text nor image given");
    expect_invalid(verify(source("exit 0\n"), 3, &resp), "log_level: 3; 0, 1 or 2");

    const std::string big(1048577, ';');
    expect_invalid(verify(source(big), 0, &resp), "source.text: 1048577 bytes; at most 1048576");
    expect_invalid(load(source(big)), "source.text: 1048577 bytes; at most 1048576");

    v1::ProgramSource image;
    image.set_image(std::string(ROF_PROG_IMAGE_MAX + 1, '\0'));
    expect_invalid(verify(image, 0, &resp),
                   "source.image: " + std::to_string(ROF_PROG_IMAGE_MAX + 1) + " bytes; at most");
    expect_invalid(load(image), "source.image");

    // Garbage bytes: a rejection, which VerifyProgram answers with ok=false
    // and LoadProgram with INVALID_ARGUMENT.
    image.set_image("this is not a program image, only some bytes of text.........");
    image.set_file("junk.img");
    resp.Clear();
    const auto st = verify(image, 0, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_FALSE(resp.ok());
    EXPECT_TRUE(contains(resp.error(), "junk.img: ")) << resp.error();
    expect_invalid(load(image), "tenant \"kv\": program \"bad\": rejected: junk.img: ");

    // Assembly errors point at file:line:col.
    resp.Clear();
    ASSERT_TRUE(verify(source("exit 0\nfoo r1\n"), 0, &resp).ok());
    EXPECT_FALSE(resp.ok());
    EXPECT_TRUE(resp.error().starts_with("t.rofs:2:1: unknown mnemonic 'foo'")) << resp.error();

    EXPECT_EQ(snapshot(), before);
}

TEST_F(Service, MalformedSessionsAndStreamsAreRefused) {
    auto c = h_.client(kv_user);
    const std::string before = snapshot();
    const auto open = [&](const v1::OpenSessionRequest& req) {
        v1::OpenSessionResponse resp;
        return rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
    };
    v1::OpenSessionRequest req;
    req.set_ticket_ttl_s(100000);
    expect_invalid(open(req), "ticket_ttl_s: 100000; at most 3600");

    req.Clear();
    for (int i = 0; i < 17; i++) {
        req.add_regions()->set_name("log");
    }
    expect_invalid(open(req), "regions: 17; at most 16");

    req.Clear();
    req.add_regions()->set_name("a/b");
    expect_invalid(open(req), "regions[0].name");

    req.Clear();
    req.set_idempotency_key(std::string(200, 'k'));
    expect_invalid(open(req), "idempotency_key: 200 characters; at most 128");

    v1::TailAuditRequest tail;
    tail.add_kinds(v1::AUDIT_KIND_INVOKE);
    tail.add_kinds(static_cast<v1::AuditKind>(77));
    TailStream s(*c->audit, tail);
    expect_invalid(s.status(), "kinds: 77 is not an AuditKind");
    EXPECT_EQ(h_.manager().audit_hub().streams(), 0U);

    EXPECT_EQ(snapshot(), before);
}

// A refused caller is refused whatever else is wrong with its request.
TEST_F(Service, RefusalComesBeforeValidation) {
    v1::TailAuditRequest tail;
    tail.set_tenant("kv");
    tail.add_kinds(static_cast<v1::AuditKind>(77));
    for (const Who& who : {stranger, analytics_user}) {
        auto c = h_.client(who);
        TailStream s(*c->audit, tail);
        const auto st = s.status();
        EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << who.label << ": " << describe(st);
    }
    auto c = h_.client(stranger);
    v1::Region resp;
    const auto st =
        rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region_request("", 0, 99), &resp);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
}

// A tenant cannot tell a missing tenant from another's; an admin can.
TEST_F(Service, MissingTenants) {
    v1::GetTenantRequest req;
    req.set_name("nosuch");
    v1::Tenant resp;
    auto kv = h_.client(kv_user);
    auto st = rpc(*kv->tenants, &v1::Tenants::Stub::GetTenant, req, &resp);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    auto root = h_.client(admin);
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, req, &resp);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
    EXPECT_EQ(st.error_message(), "tenant \"nosuch\": not in policy");
    req.clear_name();
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, req, &resp);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_EQ(st.error_message(), "tenant: empty; an admin must name the tenant");
    st = rpc(*kv->tenants, &v1::Tenants::Stub::GetTenant, req, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.name(), "kv");
}

// A tenant's invoke_records is shown as policy spells it, beside its audit level: the
// default "all", or what its file says ("sample:7"), which is what rofd set in the module.
TEST_F(Service, GetTenantShowsInvokeRecords) {
    auto root = h_.client(admin);
    h_.write_tenant("burst",
                    "name = \"burst\"\ninvoke_records = \"sample:7\"\n"
                    "control_rate = 2\n\n[identity]\nuids = [1003]\n");
    v1::ReloadPolicyResponse reloaded;
    auto st = rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    const auto burst = h_.fake().get_tenant(tenant_id("burst"));
    ASSERT_TRUE(burst);
    EXPECT_EQ(burst->quota.invoke_records, 7U);

    v1::GetTenantRequest req;
    req.set_name("burst");
    v1::Tenant t;
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, req, &t);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(t.invoke_records(), "sample:7");
    EXPECT_EQ(t.audit(), "errors");
    // kv reads itself: its file has none, so the default.
    req.clear_name();
    st = rpc(*h_.client(kv_user)->tenants, &v1::Tenants::Stub::GetTenant, req, &t);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(t.name(), "kv");
    EXPECT_EQ(t.invoke_records(), "all");

    v1::ListTenantsResponse all;
    ASSERT_TRUE(rpc(*root->tenants, &v1::Tenants::Stub::ListTenants, {}, &all).ok());
    std::map<std::string, std::string> shown;
    for (const auto& x : all.tenants()) {
        shown[x.name()] = x.invoke_records();
    }
    EXPECT_EQ(shown, (std::map<std::string, std::string>{
                         {"analytics", "all"}, {"burst", "sample:7"}, {"kv", "all"}}));
}

// ---- what the calls do -------------------------------------------------------

const v1::Region* find_region(const v1::ListRegionsResponse& l, const std::string& tenant,
                              const std::string& name) {
    for (const auto& r : l.regions()) {
        if (r.tenant() == tenant && r.name() == name) {
            return &r;
        }
    }
    return nullptr;
}

// A region and its free lists are one module command (ROF_IOC_REGION_CREATE,
// ABI 0.7), and the answer lists them without listing every tenant's.
TEST_F(Service, CreateRegionMakesItsFreeListsInOneCommand) {
    auto c = h_.client(kv_user);
    auto req = region_request("heap", 16384, 7);
    for (std::uint64_t offset : {0, 4096, 8192}) {
        auto* f = req.add_freelists();
        f->set_block_size(64);
        f->set_offset(offset);
        f->set_count(16);
    }
    const auto before = h_.fake().commands();
    v1::Region made;
    const auto st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &made);
    ASSERT_TRUE(st.ok()) << describe(st);
    auto after = h_.fake().commands();
    auto delta = [&](const std::string& cmd) {
        const auto b = before.find(cmd);
        return after[cmd] - (b == before.end() ? 0 : b->second);
    };
    EXPECT_EQ(delta("ROF_IOC_REGION_CREATE"), 1U);
    EXPECT_EQ(delta("ROF_IOC_FREELIST_CREATE"), 0U);
    ASSERT_EQ(made.freelists_size(), 3);
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(made.freelists(i).offset(), 4096U * i);
        EXPECT_EQ(made.freelists(i).count(), 16U);
        EXPECT_EQ(made.freelists(i).free(), 16U);
        EXPECT_NE(made.freelists(i).id(), 0U);
    }
    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpc(*c->regions, &v1::Regions::Stub::ListRegions, {}, &list).ok());
    const auto* heap = find_region(list, "kv", "heap");
    ASSERT_NE(heap, nullptr) << list.DebugString();
    ASSERT_EQ(heap->freelists_size(), 3);
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(heap->freelists(i).id(), made.freelists(i).id());
    }
}

TEST_F(Service, RegionsHaveTheirOrigin) {
    auto c = h_.client(kv_user);
    v1::Region made;
    auto st =
        rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region_request("cache", 8192, 3), &made);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(made.origin(), v1::ORIGIN_API);

    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpc(*c->regions, &v1::Regions::Stub::ListRegions, {}, &list).ok());
    const auto* cache = find_region(list, "kv", "cache");
    ASSERT_NE(cache, nullptr) << list.DebugString();
    EXPECT_EQ(cache->origin(), v1::ORIGIN_API);
    EXPECT_EQ(cache->size(), 8192U);
    EXPECT_EQ(cache->access(), 3U);
    const auto* table = find_region(list, "kv", "table");
    ASSERT_NE(table, nullptr) << list.DebugString();
    EXPECT_EQ(table->origin(), v1::ORIGIN_POLICY);
    ASSERT_EQ(table->freelists_size(), 1);
    EXPECT_EQ(table->freelists(0).count(), 1024U);
    ASSERT_EQ(table->granted_to_size(), 1);
    EXPECT_EQ(table->granted_to(0), "analytics:r");

    // A policy region cannot be deleted by a call.
    const std::string before = snapshot();
    v1::DeleteRegionRequest del;
    del.set_name("table");
    v1::DeleteRegionResponse none;
    st = rpc(*c->regions, &v1::Regions::Stub::DeleteRegion, del, &none);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "tenant \"kv\": region \"table\": declared in " +
                                                 h_.tenant_file("kv") + ":"))
        << st.error_message();
    EXPECT_EQ(snapshot(), before);

    // The grantee sees only what is granted to it, in every list.
    auto a = h_.client(analytics_user);
    for (const std::string tenant : {"", "kv"}) {
        v1::ListRegionsRequest req;
        req.set_tenant(tenant);
        v1::ListRegionsResponse seen;
        st = rpc(*a->regions, &v1::Regions::Stub::ListRegions, req, &seen);
        ASSERT_TRUE(st.ok()) << describe(st);
        ASSERT_EQ(seen.regions_size(), 1) << seen.DebugString();
        EXPECT_EQ(seen.regions(0).name(), "table");
    }

    del.set_name("cache");
    st = rpc(*c->regions, &v1::Regions::Stub::DeleteRegion, del, &none);
    EXPECT_TRUE(st.ok()) << describe(st);
    ASSERT_TRUE(rpc(*c->regions, &v1::Regions::Stub::ListRegions, {}, &list).ok());
    EXPECT_EQ(find_region(list, "kv", "cache"), nullptr);
}

// ListTenants and GetTenant agree: each tenant's grants (kv grants "table" to analytics) and
// what the module holds of it (ListTenants reads the module's list once for all of them).
TEST_F(Service, TenantsShowTheirGrantsAndUsage) {
    auto root = h_.client(admin);
    v1::ListTenantsResponse list;
    ASSERT_TRUE(rpc(*root->tenants, &v1::Tenants::Stub::ListTenants, {}, &list).ok());
    std::set<std::string> seen;
    for (const auto& listed : list.tenants()) {
        seen.insert(listed.name());
        v1::GetTenantRequest get;
        get.set_name(listed.name());
        v1::Tenant got;
        ASSERT_TRUE(rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, get, &got).ok());
        EXPECT_EQ(got.DebugString(), listed.DebugString());
        EXPECT_NE(listed.id(), 0U) << listed.DebugString();
        if (listed.name() == "analytics") {
            ASSERT_EQ(listed.granted_regions_size(), 1) << listed.DebugString();
            EXPECT_EQ(listed.granted_regions(0), "kv/table");
        } else {
            EXPECT_EQ(listed.granted_regions_size(), 0) << listed.DebugString();
        }
        if (listed.name() == "kv") {
            EXPECT_EQ(listed.usage().regions(), 2U) << listed.DebugString();
        }
    }
    EXPECT_TRUE(seen.count("kv") && seen.count("analytics")) << list.DebugString();

    // A tenant lists itself alone, as GetTenant has it.
    auto a = h_.client(analytics_user);
    v1::ListTenantsResponse own;
    ASSERT_TRUE(rpc(*a->tenants, &v1::Tenants::Stub::ListTenants, {}, &own).ok());
    ASSERT_EQ(own.tenants_size(), 1) << own.DebugString();
    v1::Tenant got;
    ASSERT_TRUE(rpc(*a->tenants, &v1::Tenants::Stub::GetTenant, {}, &got).ok());
    EXPECT_EQ(own.tenants(0).DebugString(), got.DebugString());
    ASSERT_EQ(got.granted_regions_size(), 1) << got.DebugString();
    EXPECT_EQ(got.granted_regions(0), "kv/table");
}

TEST_F(Service, CreateRegionIsIdempotent) {
    auto c = h_.client(kv_user);
    auto req = region_request("cache", 4096, 1);
    req.set_idempotency_key("k1");
    v1::Region first, second;
    auto st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &first);
    ASSERT_TRUE(st.ok()) << describe(st);
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &second);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());

    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpc(*c->regions, &v1::Regions::Stub::ListRegions, {}, &list).ok());
    int n = 0;
    for (const auto& r : list.regions()) {
        n += r.name() == "cache" ? 1 : 0;
    }
    EXPECT_EQ(n, 1);

    // Another caller acting as kv shares the scope.
    auto again = h_.client(kv_user);
    v1::Region third;
    st = rpc(*again->regions, &v1::Regions::Stub::CreateRegion, req, &third);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(first.id(), third.id());

    const std::string before = snapshot();
    req.set_size(8192);
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &third);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    EXPECT_TRUE(contains(st.error_message(),
                         "idempotency_key \"k1\" was used for another CreateRegion request"))
        << st.error_message();
    EXPECT_EQ(snapshot(), before);

    // Without a key, a second create is ALREADY_EXISTS.
    req.set_size(4096);
    req.clear_idempotency_key();
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, req, &third);
    EXPECT_EQ(st.error_code(), Code::ALREADY_EXISTS) << describe(st);
}

TEST_F(Service, OpenAndCloseASession) {
    auto c = h_.client(kv_user);
    v1::OpenSessionRequest req;
    auto* r = req.add_regions();
    r->set_name("table");
    r->set_access(1);
    req.add_regions()->set_name("log");
    v1::OpenSessionResponse resp;
    auto st = rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_NE(resp.session(), 0U);
    EXPECT_EQ(resp.ticket().size(), 48U);
    EXPECT_EQ(resp.address(), "10.0.0.1");
    EXPECT_EQ(resp.port(), ROF_CM_PORT_DEFAULT);
    EXPECT_EQ(resp.msg_size(), ROF_MSG_SIZE);
    ASSERT_EQ(resp.regions_size(), 2);
    EXPECT_EQ(resp.regions(0).name(), "table");
    EXPECT_EQ(resp.regions(0).access(), 1U);
    EXPECT_EQ(resp.regions(0).size(), 16U << 20);
    EXPECT_EQ(resp.regions(1).name(), "log");
    EXPECT_EQ(resp.regions(1).access(), 3U);  // 0: all the region's access

    v1::GetSessionRequest get;
    get.set_id(resp.session());
    v1::Session s;
    st = rpc(*c->sessions, &v1::Sessions::Stub::GetSession, get, &s);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(s.tenant(), "kv");
    EXPECT_EQ(s.state(), v1::SESSION_STATE_PREPARED);
    EXPECT_EQ(s.regions_size(), 2);

    // More access than the region has.
    v1::OpenSessionRequest greedy;
    auto* g = greedy.add_regions();
    g->set_name("log");
    g->set_access(7);
    v1::OpenSessionResponse none;
    st = rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, greedy, &none);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "access 7 exceeds the region's 3")) << describe(st);

    v1::CloseSessionRequest close;
    close.set_id(resp.session());
    v1::CloseSessionResponse closed;
    st = rpc(*c->sessions, &v1::Sessions::Stub::CloseSession, close, &closed);
    ASSERT_TRUE(st.ok()) << describe(st);
    st = rpc(*c->sessions, &v1::Sessions::Stub::GetSession, get, &s);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
    st = rpc(*c->sessions, &v1::Sessions::Stub::CloseSession, close, &closed);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
}

// The tenant policy's [sessions] message_bytes is the session's message
// size: the module prepares it so, the answer says it.
TEST_F(Service, OpenSessionTakesThePolicysMessageSize) {
    auto admin_c = h_.client(admin);
    h_.write_tenant("kv",
                    rofd::test::kv_toml({.tail = "\n[sessions]\nmessage_bytes = \"64KiB\"\n"}));
    v1::ReloadPolicyResponse reloaded;
    auto st = rpc(*admin_c->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded);
    ASSERT_TRUE(st.ok()) << describe(st);

    auto c = h_.client(kv_user);
    v1::OpenSessionResponse resp;
    st = rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.msg_size(), 65536U);
    const auto s = h_.fake().get_session(resp.session());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->msg_size, 65536U);
}

TEST_F(Service, LoadAProgramAndReadItBack) {
    auto c = h_.client(kv_user);
    const std::string text =
        ".args 8, 8\n.resp 8\n.region table, r, 4096\n"
        "\tld64 r2, args[0]\n\tand64 r2, 511\n\tlsh64 r2, 3\n"
        "\tld64 r3, table[r2]\n\tst64 resp[0], r3\n\texit 0\n";
    v1::VerifyProgramRequest vreq;
    *vreq.mutable_source() = source(text);
    v1::VerifyProgramResponse verified;
    auto st = rpc(*c->programs, &v1::Programs::Stub::VerifyProgram, vreq, &verified);
    ASSERT_TRUE(st.ok()) << describe(st);
    ASSERT_TRUE(verified.ok()) << verified.error();
    EXPECT_NE(verified.tag(), 0U);

    v1::LoadProgramRequest req;
    req.set_name("get");
    *req.mutable_source() = source(text);
    v1::Program loaded;
    st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &loaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(loaded.tenant(), "kv");
    EXPECT_EQ(loaded.name(), "get");
    EXPECT_EQ(loaded.tag(), verified.tag());
    EXPECT_EQ(loaded.origin(), v1::ORIGIN_API);
    ASSERT_EQ(loaded.binds_size(), 1);
    EXPECT_EQ(loaded.binds(0).region(), "table");

    v1::ListProgramsResponse list;
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::ListPrograms, {}, &list).ok());
    ASSERT_EQ(list.programs_size(), 1);
    EXPECT_EQ(list.programs(0).name(), "get");
    EXPECT_TRUE(list.programs(0).source().empty());  // only GetProgram carries it

    v1::GetProgramRequest get;
    get.set_name("get");
    v1::Program full;
    st = rpc(*c->programs, &v1::Programs::Stub::GetProgram, get, &full);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(full.source(), text);
    EXPECT_TRUE(contains(full.disassembly(), "ld64 r3, table[r2]")) << full.disassembly();
    EXPECT_TRUE(contains(full.disassembly(), "exit 0")) << full.disassembly();

    // The same tag again.
    req.set_name("get2");
    st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &loaded);
    EXPECT_EQ(st.error_code(), Code::ALREADY_EXISTS) << describe(st);

    v1::UnloadProgramRequest unload;
    unload.set_tag(verified.tag());
    v1::UnloadProgramResponse unloaded;
    st = rpc(*c->programs, &v1::Programs::Stub::UnloadProgram, unload, &unloaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::ListPrograms, {}, &list).ok());
    EXPECT_EQ(list.programs_size(), 0);
}

TEST_F(Service, ADisallowedInstructionClassIsRejected) {
    auto c = h_.client(analytics_user);
    const std::string before = snapshot();
    v1::LoadProgramRequest req;
    req.set_name("writer");
    *req.mutable_source() = source(".resp 8\n\tmov64 r1, 1\n\tst64 resp[0], r1\n\texit 0\n");
    v1::Program resp;
    const auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_TRUE(
        contains(st.error_message(), "tenant \"analytics\": program \"writer\": rejected: "))
        << st.error_message();
    EXPECT_TRUE(
        contains(st.error_message(), "instruction class st is not allowed by tenant \"analytics\""))
        << st.error_message();
    EXPECT_EQ(snapshot(), before);

    // What it may use loads.
    *req.mutable_source() = source("\tmov64 r1, 1\n\texit 0\n");
    const auto ok = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
    EXPECT_TRUE(ok.ok()) << describe(ok);
}

TEST_F(Service, ABrokenPolicyIsNotLoaded) {
    auto c = h_.client(admin);
    v1::GetPolicyResponse pol;
    ASSERT_TRUE(rpc(*c->policy, &v1::Policy::Stub::GetPolicy, {}, &pol).ok());
    const auto generation = pol.generation();
    EXPECT_EQ(generation, 1U);

    h_.write_tenant("kv", std::string(kv_toml) + "\n[quota]\nsessions = \"many\"\n");
    h_.write_tenant("analytics", "name = \"analytics\"\ncontrol_rate = -1\n");
    v1::ReloadPolicyResponse resp;
    auto st = rpc(*c->policy, &v1::Policy::Stub::ReloadPolicy, {}, &resp);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "policy not reloaded, the running one stays"))
        << st.error_message();
    // file:line:col for each file.
    EXPECT_TRUE(contains(st.error_message(), h_.tenant_file("analytics") + ":2:"))
        << st.error_message();
    EXPECT_TRUE(contains(st.error_message(), h_.tenant_file("kv") + ":")) << st.error_message();

    ASSERT_TRUE(rpc(*c->policy, &v1::Policy::Stub::GetPolicy, {}, &pol).ok());
    EXPECT_EQ(pol.generation(), generation);
    // The old policy still maps uid 1002 to analytics.
    auto a = h_.client(analytics_user);
    v1::GetStatusResponse status;
    ASSERT_TRUE(rpc(*a->control, &v1::Control::Stub::GetStatus, {}, &status).ok());
    EXPECT_EQ(status.caller(), "tenant analytics");

    // Fixed, it loads.
    h_.write_tenant("kv", kv_toml);
    h_.write_tenant("analytics", analytics_toml);
    st = rpc(*c->policy, &v1::Policy::Stub::ReloadPolicy, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.generation(), generation + 1);
}

TEST_F(Service, ControlRateRefusesABurst) {
    auto c = h_.client(burst_user);
    int ok = 0, exhausted = 0;
    grpc::Status last;
    for (int i = 0; i < 10; i++) {
        v1::GetStatusResponse resp;
        const auto st = rpc(*c->control, &v1::Control::Stub::GetStatus, {}, &resp);
        if (st.ok()) {
            ok++;
        } else {
            EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
            exhausted++;
            last = st;
        }
    }
    // A bucket of 2 refills at 2/s: ten calls in a row cannot all pass.
    EXPECT_GE(ok, 2);
    EXPECT_GE(exhausted, 1);
    EXPECT_EQ(last.error_message(),
              "tenant \"burst\": control_rate 2 calls/s exceeded; retry later");

    // Admins and other tenants are not charged for it.
    auto k = h_.client(kv_user);
    v1::GetStatusResponse resp;
    EXPECT_TRUE(rpc(*k->control, &v1::Control::Stub::GetStatus, {}, &resp).ok());
}

rof_audit_record audit_record(std::uint32_t tenant, std::uint32_t session) {
    rof_audit_record r{};
    r.kind = ROF_AUDIT_INVOKE;
    r.tenant = tenant;
    r.session = session;
    r.opcode = 3;
    r.bytes = 8;
    return r;
}

TEST_F(Service, TailAuditStreamsWhatTheDrainReads) {
    auto root = h_.client(admin);
    auto kv = h_.client(kv_user);
    TailStream all(*root->audit, {});
    TailStream mine(*kv->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 2; }));

    h_.fake().push_audit(audit_record(tenant_id("analytics"), 5));
    h_.fake().push_audit(audit_record(tenant_id("kv"), 7));

    auto r = all.next();
    ASSERT_TRUE(r.has_value()) << describe(all.status());
    EXPECT_EQ(r->tenant(), "analytics");
    EXPECT_EQ(r->session(), 5U);
    EXPECT_EQ(r->kind(), v1::AUDIT_KIND_INVOKE);
    r = all.next();
    ASSERT_TRUE(r.has_value()) << describe(all.status());
    EXPECT_EQ(r->tenant(), "kv");

    // kv's stream skipped analytics' record.
    r = mine.next();
    ASSERT_TRUE(r.has_value()) << describe(mine.status());
    EXPECT_EQ(r->tenant(), "kv");
    EXPECT_EQ(r->session(), 7U);
    EXPECT_EQ(r->opcode(), 3U);
    EXPECT_EQ(r->bytes(), 8U);
    // In words, as the journal says it.
    EXPECT_EQ(r->message(), "invoke of program 0x0000000000000000 by session 7 of tenant kv: ok");
    EXPECT_FALSE(r->has_skipped());  // 0: absent

    // A count of INVOKEs with no record (invoke_records) comes through, in its own kind too.
    rof_audit_record counted = audit_record(tenant_id("kv"), 7);
    counted.skipped = 41;
    h_.fake().push_audit(counted);
    rof_audit_record flush{};
    flush.kind = ROF_AUDIT_INVOKE_SKIPPED;
    flush.tenant = tenant_id("kv");
    flush.session = 7;
    flush.skipped = 3;
    h_.fake().push_audit(flush);
    r = mine.next();
    ASSERT_TRUE(r.has_value()) << describe(mine.status());
    EXPECT_EQ(r->skipped(), 41U);
    r = mine.next();
    ASSERT_TRUE(r.has_value()) << describe(mine.status());
    EXPECT_EQ(r->kind(), v1::AUDIT_KIND_INVOKE_SKIPPED);
    EXPECT_EQ(r->skipped(), 3U);
    EXPECT_EQ(r->message(), "session 7 of tenant kv: 3 successful invokes not recorded");
}

TEST_F(Service, TailAuditStreamsPerTenantAreLimited) {
    auto kv = h_.client(kv_user);
    TailStream first(*kv->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 1; }));

    auto again = h_.client(kv_user);
    TailStream second(*again->audit, {});
    const auto st = second.status();
    EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
    EXPECT_EQ(st.error_message(),
              "tenant \"kv\": 1 audit streams open already (limits.audit_streams_per_tenant)");

    // Admin streams of every tenant are not counted; other tenants have their own.
    auto root = h_.client(admin);
    TailStream admins(*root->audit, {});
    auto a = h_.client(analytics_user);
    TailStream theirs(*a->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 3; }));

    // Once the first is gone, kv may open another.
    first.cancel();
    EXPECT_EQ(first.status().error_code(), Code::CANCELLED);
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 2; }));
    TailStream third(*kv->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 3; }));
    EXPECT_FALSE(third.done());
}

// The operator's streams do not take the tenant's: an admin tails kv while
// kv holds all of its own, and admins have a bound of their own.
TEST_F(Service, AdminTailAuditHasItsOwnBound) {
    auto kv = h_.client(kv_user);
    TailStream mine(*kv->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 1; }));

    auto root = h_.client(admin);
    v1::TailAuditRequest of_kv;
    of_kv.set_tenant("kv");
    TailStream operators(*root->audit, of_kv);
    ASSERT_TRUE(
        wait_until([&] { return operators.done() || h_.manager().audit_hub().streams() == 2; }));
    h_.fake().push_audit(audit_record(tenant_id("kv"), 7));
    auto r = operators.next();
    ASSERT_TRUE(r.has_value()) << describe(operators.status());
    EXPECT_EQ(r->tenant(), "kv");
    EXPECT_EQ(r->session(), 7U);

    // kv's own bound is unchanged.
    auto again = h_.client(kv_user);
    TailStream second(*again->audit, {});
    auto st = second.status();
    EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
    EXPECT_EQ(st.error_message(),
              "tenant \"kv\": 1 audit streams open already (limits.audit_streams_per_tenant)");

    // The admins' bound (2) counts their streams of any tenant, or of all.
    TailStream all(*root->audit, {});
    ASSERT_TRUE(wait_until([&] { return h_.manager().audit_hub().streams() == 3; }));
    TailStream third(*root->audit, of_kv);
    st = third.status();
    EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
    EXPECT_EQ(st.error_message(),
              "admins: 2 audit streams open already (limits.audit_streams_admin)");
    EXPECT_FALSE(mine.done());
    EXPECT_FALSE(operators.done());
}

TEST_F(Service, MetricsAreRofFamilies) {
    auto root = h_.client(admin);
    v1::GetMetricsResponse resp;
    auto st = rpc(*root->metrics, &v1::Metrics::Stub::GetMetrics, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(contains(resp.text(), "# TYPE rof_")) << resp.text();
    EXPECT_TRUE(contains(resp.text(), "tenant=\"kv\"")) << resp.text();
    EXPECT_TRUE(contains(resp.text(), "tenant=\"analytics\"")) << resp.text();
    // The call before this one is timed (its status was sent before it
    // answered).
    st = rpc(*root->metrics, &v1::Metrics::Stub::GetMetrics, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(contains(resp.text(), "# TYPE rof_control_call_duration_seconds histogram"))
        << resp.text();
    EXPECT_TRUE(contains(resp.text(),
                         "rof_control_call_duration_seconds_count{method=\"/"
                         "rof.v1.Metrics/GetMetrics\"}"))
        << resp.text();

    // A tenant sees its own series only.
    auto kv = h_.client(kv_user);
    st = rpc(*kv->metrics, &v1::Metrics::Stub::GetMetrics, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(contains(resp.text(), "rof_")) << resp.text();
    EXPECT_TRUE(contains(resp.text(), "tenant=\"kv\"")) << resp.text();
    EXPECT_FALSE(contains(resp.text(), "tenant=\"analytics\"")) << resp.text();
    EXPECT_FALSE(contains(resp.text(), "rof_control_call")) << resp.text();
}

TEST_F(Service, StatusNamesTheCaller) {
    const std::vector<std::pair<Who, std::string>> callers = {
        {admin, "admin"}, {kv_user, "tenant kv"}, {analytics_user, "tenant analytics"}};
    for (const auto& [who, want] : callers) {
        auto c = h_.client(who);
        v1::GetStatusResponse resp;
        const auto st = rpc(*c->control, &v1::Control::Stub::GetStatus, {}, &resp);
        ASSERT_TRUE(st.ok()) << describe(st);
        EXPECT_EQ(resp.caller(), want);
        EXPECT_EQ(resp.module().version(), rofd::FakeModule::fake_version);
        EXPECT_EQ(resp.policy_generation(), 1U);
    }
    // A caller in a tenant's group acts as that tenant.
    h_.write_tenant("burst", std::string(burst_toml) + "gids = [3003]\n");
    auto root = h_.client(admin);
    v1::ReloadPolicyResponse reloaded;
    ASSERT_TRUE(rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded).ok());
    auto member = h_.client(Who{"member", 4000, 4000, {3003}});
    v1::GetStatusResponse resp;
    const auto st = rpc(*member->control, &v1::Control::Stub::GetStatus, {}, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.caller(), "tenant burst");
}

// ---- health and reflection (from the old server_test.cpp) -------------------

grpc::ByteBuffer to_buffer(const std::string& bytes) {
    grpc::Slice slice(bytes);
    return {&slice, 1};
}

std::string from_buffer(const grpc::ByteBuffer& buf) {
    std::vector<grpc::Slice> slices;
    std::string s;
    if (!buf.Dump(&slices).ok()) {
        return s;
    }
    for (const auto& slice : slices) {
        s.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return s;
}

// grpc.health.v1.Health/Check, encoded by hand: Debian ships no
// health.proto.  Returns the ServingStatus number (1 SERVING, 2
// NOT_SERVING), -1 on a failed call.
int health_check(const std::shared_ptr<grpc::Channel>& ch, const std::string& service) {
    grpc::GenericStub stub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + rofd::test::wait_limit);
    std::string req;
    if (!service.empty()) {
        req = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
    }
    const grpc::ByteBuffer request = to_buffer(req);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status st) { done.set_value(st); });
    const grpc::Status st = done.get_future().get();
    EXPECT_TRUE(st.ok()) << describe(st);
    const std::string r = from_buffer(response);
    if (r.size() != 2 || r[0] != 0x08) {
        return -1;
    }
    return r[1];
}

TEST(ServiceHealth, ServingOnlyOnceMarkedReady) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    ServiceHarness h(daemon_toml, tenant_files, false);
    const auto ch = h.channel(kv_user);
    EXPECT_EQ(health_check(ch, ""), 2);
    EXPECT_EQ(health_check(ch, "rof.v1.Regions"), 2);
    h.server().set_serving(true);
    EXPECT_EQ(health_check(ch, ""), 1);
    EXPECT_EQ(health_check(ch, "rof.v1.Regions"), 1);
    EXPECT_TRUE(h.server().alive());
}

TEST(ServiceHealth, ReflectionListsTheServices) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    ServiceHarness h(daemon_toml, tenant_files);
    grpc::GenericStub stub(h.channel(admin));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + rofd::test::wait_limit);
    grpc::CompletionQueue cq;
    auto call = stub.PrepareCall(
        &ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    const auto step = [&cq](std::intptr_t want) {
        void* tag = nullptr;
        bool ok = false;
        EXPECT_TRUE(cq.Next(&tag, &ok));
        EXPECT_EQ(reinterpret_cast<std::intptr_t>(tag), want);
        return ok;
    };
    call->StartCall(reinterpret_cast<void*>(1));
    EXPECT_TRUE(step(1));
    // ServerReflectionRequest{list_services: ""}: field 7, length 0.
    call->Write(to_buffer(std::string("\x3a\x00", 2)), reinterpret_cast<void*>(2));
    EXPECT_TRUE(step(2));
    call->WritesDone(reinterpret_cast<void*>(3));
    EXPECT_TRUE(step(3));
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(4));
    EXPECT_TRUE(step(4));
    grpc::Status st;
    call->Finish(&st, reinterpret_cast<void*>(5));
    step(5);
    EXPECT_TRUE(st.ok()) << describe(st);
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
    }
    const std::string services = from_buffer(response);
    for (const char* name :
         {"rof.v1.Control", "rof.v1.Regions", "rof.v1.Audit", "grpc.health.v1.Health"}) {
        EXPECT_TRUE(contains(services, name)) << name;
    }
}

// ---- issue 28: one tenant must not hurt another ------------------------------

// A free-list slot, bound by LoadProgram's binds.
const char* const alloc_text =
    ".resp 8\n.region table, rwa, 1048576, freelist\n"
    "\talloc r2, table\n\tst64 resp[0], r2\n\texit 0\n";

v1::LoadProgramRequest alloc_request(std::uint32_t freelist) {
    v1::LoadProgramRequest req;
    req.set_name("alloc");
    *req.mutable_source() = source(alloc_text);
    auto* b = req.add_binds();
    b->set_region("table");
    b->set_freelist(freelist);
    return req;
}

// A free-list number that does not fit in an int must not wrap to a
// negative one and so bind the region's first list.
TEST_F(Service, AFreeListNumberBeyondIntIsRefused) {
    auto c = h_.client(kv_user);
    const std::string before = snapshot();
    for (const std::uint32_t fl : {0x80000000U, 0xffffffffU}) {
        v1::Program resp;
        const auto st =
            rpc(*c->programs, &v1::Programs::Stub::LoadProgram, alloc_request(fl), &resp);
        expect_invalid(st, "binds[0].freelist: " + std::to_string(fl));
        v1::VerifyProgramRequest vreq;
        *vreq.mutable_source() = source(alloc_text);
        *vreq.mutable_binds() = alloc_request(fl).binds();
        v1::VerifyProgramResponse vresp;
        expect_invalid(rpc(*c->programs, &v1::Programs::Stub::VerifyProgram, vreq, &vresp),
                       "binds[0].freelist: " + std::to_string(fl));
    }
    EXPECT_EQ(snapshot(), before);
    // A list the region does not have is the state's, not the request's fault.
    v1::Program resp;
    const auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, alloc_request(1), &resp);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, alloc_request(0), &resp).ok());
    ASSERT_EQ(resp.binds_size(), 1);
    EXPECT_EQ(resp.binds(0).freelist(), 0U);
}

// Loading a loaded image again, under another name or as a retry, is
// refused and leaves the loaded program's row (its source, its restore
// after a reboot) alone.
TEST_F(Service, LoadingALoadedImageAgainKeepsItsRow) {
    auto c = h_.client(kv_user);
    const std::string text = ".resp 8\n\tmov64 r1, 7\n\tst64 resp[0], r1\n\texit 0\n";
    v1::LoadProgramRequest req;
    req.set_name("seven");
    *req.mutable_source() = source(text);
    req.set_idempotency_key("first");
    v1::Program loaded;
    auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &loaded);
    ASSERT_TRUE(st.ok()) << describe(st);

    // The same code under another name, and the same call with another key
    // (a retry whose first answer rofd no longer knows).
    for (const char* name : {"also-seven", "seven"}) {
        req.set_name(name);
        req.set_idempotency_key(std::string("again-") + name);
        v1::Program resp;
        st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
        EXPECT_EQ(st.error_code(), Code::ALREADY_EXISTS) << describe(st);

        v1::GetProgramRequest get;
        get.set_name("seven");
        v1::Program full;
        st = rpc(*c->programs, &v1::Programs::Stub::GetProgram, get, &full);
        ASSERT_TRUE(st.ok()) << describe(st);
        EXPECT_EQ(full.origin(), v1::ORIGIN_API) << name;
        EXPECT_EQ(full.source(), text) << name;
        const auto rows = h_.manager().store().programs();
        ASSERT_EQ(rows.size(), 1U) << name;
        EXPECT_EQ(rows[0].name, "seven");
        EXPECT_EQ(rows[0].state, rofd::RowState::committed);
    }
}

// rofd dies right after the module made the object, before it recorded the
// answer (issue 28, item 12).  After the restart, reconciliation commits
// the intent, and the retry with the same key gets the call's answer: not
// ALREADY_EXISTS, and the object once, recorded by rofd.  A further retry
// is answered from the record; a call without the key is still refused.
TEST_F(Service, ARetryAfterACrashGetsTheAnswerOfTheCallItInterrupted) {
    auto region = region_request("k-07", 8192, 3);
    region.set_idempotency_key("create-k-07");
    const std::string text = ".resp 8\n\tmov64 r1, 7\n\tst64 resp[0], r1\n\texit 0\n";
    v1::LoadProgramRequest load;
    load.set_name("seven");
    *load.mutable_source() = source(text);
    load.set_idempotency_key("load-seven");
    {
        auto c = h_.client(kv_user);
        v1::Region r;
        h_.module().crash_after("region_create");
        auto st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region, &r);
        EXPECT_FALSE(st.ok());
        EXPECT_TRUE(contains(st.error_message(), "rofd crashed after region_create"))
            << describe(st);
        v1::Program p;
        h_.module().crash_after("prog_load");
        st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &p);
        EXPECT_TRUE(contains(st.error_message(), "rofd crashed after prog_load")) << describe(st);
    }
    h_.restart();
    auto c = h_.client(kv_user);

    v1::Region created, again;
    auto st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region, &created);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(created.name(), "k-07");
    EXPECT_EQ(created.size(), 8192U);
    EXPECT_EQ(created.origin(), v1::ORIGIN_API);
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region, &again);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(again.SerializeAsString(), created.SerializeAsString());
    int n = 0;
    for (const auto& r : h_.fake().list_regions()) {
        n += rofd::abi_name(r.name) == "k-07" ? 1 : 0;
    }
    EXPECT_EQ(n, 1);
    region.clear_idempotency_key();
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region, &again);
    EXPECT_EQ(st.error_code(), Code::ALREADY_EXISTS) << describe(st);
    // The same key for another body is still a conflict.
    region.set_idempotency_key("create-k-07");
    region.set_size(16384);
    st = rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region, &again);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);

    v1::Program loaded, reloaded;
    st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &loaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(loaded.name(), "seven");
    EXPECT_NE(loaded.tag(), 0U);
    st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &reloaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(reloaded.SerializeAsString(), loaded.SerializeAsString());
    v1::GetProgramRequest get;
    get.set_name("seven");
    v1::Program full;
    st = rpc(*c->programs, &v1::Programs::Stub::GetProgram, get, &full);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(full.source(), text);
    const auto rows = h_.manager().store().programs();
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].state, rofd::RowState::committed);
}

// ReplaceProgram puts a new image in the place of a loaded program: one
// program of the name, the new tag, rofd's row of the new source only, the
// module's count of replaced tags; errors name what is wrong.
TEST_F(Service, ReplaceAProgramInPlace) {
    auto c = h_.client(kv_user);
    v1::LoadProgramRequest load;
    load.set_name("answer");
    *load.mutable_source() = source("exit 1\n");
    v1::Program first;
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &first).ok());

    v1::ReplaceProgramRequest rep;
    rep.set_name("answer");
    *rep.mutable_source() = source("exit 2\n");
    v1::Program second;
    auto st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &second);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(second.name(), "answer");
    EXPECT_NE(second.tag(), first.tag());
    EXPECT_EQ(second.replaced(), 1U);
    EXPECT_EQ(second.origin(), v1::ORIGIN_API);
    const auto progs = h_.fake().list_progs();
    ASSERT_EQ(progs.size(), 1U);
    EXPECT_EQ(progs[0].tag, second.tag());
    const auto rows = h_.manager().store().programs();
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].tag, second.tag());
    EXPECT_EQ(rows[0].source, "exit 2\n");
    EXPECT_EQ(rows[0].state, rofd::RowState::committed);

    // The same image again changes nothing.
    v1::Program same;
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &same);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(same.tag(), second.tag());
    EXPECT_EQ(same.replaced(), 1U);

    // By tag, and a chain: the third serves both older tags.
    rep.clear_name();
    rep.set_tag(second.tag());
    *rep.mutable_source() = source("exit 3\n");
    v1::Program third;
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &third);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(third.name(), "answer");
    EXPECT_EQ(third.replaced(), 2U);

    // Errors.
    v1::Program out;
    rep.clear_tag();
    rep.set_name("nope");
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
    EXPECT_EQ(st.error_message(), "tenant \"kv\": program \"nope\": not loaded");
    load.set_name("other");
    *load.mutable_source() = source("exit 5\n");
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &out).ok());
    rep.set_name("answer");  // to the image "other" runs
    *rep.mutable_source() = source("exit 5\n");
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
    EXPECT_EQ(st.error_code(), Code::ALREADY_EXISTS) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "is loaded already as \"other\"")) << describe(st);
    load.set_name("answer");  // a second program of the name
    *load.mutable_source() = source("exit 6\n");
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &out).ok());
    *rep.mutable_source() = source("exit 7\n");
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "2 programs have this name")) << describe(st);
    *rep.mutable_source() = source("exit 8\nnope\n");
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "tenant \"kv\": program \"answer\": rejected: "))
        << describe(st);
    EXPECT_EQ(h_.fake().list_progs().size(), 3U);
}

// A tenant at its program quota can still replace: the new program takes
// the old one's place in it.
TEST_F(Service, ReplaceWorksAtTheProgramQuota) {
    auto c = h_.client(kv_user);
    std::uint32_t quota = 0;
    for (const auto& t : h_.fake().list_tenants()) {
        if (rofd::abi_name(t.name) == "kv") {
            quota = t.quota.programs;
        }
    }
    ASSERT_GT(quota, 0U);
    ASSERT_LT(quota, 100U);
    v1::Program out;
    for (std::uint32_t i = 0; i < quota; i++) {
        v1::LoadProgramRequest load;
        load.set_name("p" + std::to_string(i));
        *load.mutable_source() = source("exit " + std::to_string(i + 10) + "\n");
        ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &out).ok()) << i;
    }
    v1::LoadProgramRequest more;
    more.set_name("more");
    *more.mutable_source() = source("exit 99\n");
    auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, more, &out);
    EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
    v1::ReplaceProgramRequest rep;
    rep.set_name("p0");
    *rep.mutable_source() = source("exit 99\n");
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
    EXPECT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(h_.fake().list_progs().size(), quota);
}

// rofd dies around the swap.  Before it (the module never saw the call):
// the old program stays, and the retry replaces it.  After it: the new
// program is rofd's, the old row is gone, and the retry is answered.
TEST_F(Service, AReplaceInterruptedByACrashSettlesEitherWay) {
    v1::LoadProgramRequest load;
    load.set_name("v");
    *load.mutable_source() = source("exit 1\n");
    v1::ReplaceProgramRequest rep;
    rep.set_name("v");
    *rep.mutable_source() = source("exit 2\n");
    rep.set_idempotency_key("replace-v");
    v1::Program loaded, out;
    {
        auto c = h_.client(kv_user);
        ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &loaded).ok());
        h_.module().crash_after("prog_replace");
        const auto st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out);
        EXPECT_TRUE(contains(st.error_message(), "rofd crashed after prog_replace"))
            << describe(st);
    }
    h_.restart();
    auto c = h_.client(kv_user);
    const auto rows = h_.manager().store().programs();
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].source, "exit 2\n");
    EXPECT_EQ(rows[0].state, rofd::RowState::committed);
    v1::Program again;
    auto st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &again);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_NE(again.tag(), loaded.tag());
    EXPECT_EQ(again.name(), "v");
    v1::Program replay;
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &replay);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(replay.SerializeAsString(), again.SerializeAsString());
    // Named by tag, the retry finds the old tag gone and answers the new
    // program.
    load.set_name("w");
    *load.mutable_source() = source("exit 4\n");
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &loaded).ok());
    rep.clear_name();
    rep.set_tag(loaded.tag());
    rep.set_idempotency_key("replace-w-by-tag");
    *rep.mutable_source() = source("exit 5\n");
    h_.module().crash_after("prog_replace");
    EXPECT_FALSE(rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &out).ok());
    h_.restart();
    c = h_.client(kv_user);
    st = rpc(*c->programs, &v1::Programs::Stub::ReplaceProgram, rep, &again);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(again.name(), "w");
    EXPECT_NE(again.tag(), loaded.tag());
    EXPECT_EQ(h_.manager().store().programs().size(), 2U);
}

// The same for the deletes: rofd dies after the module destroyed the
// object; the retry is answered OK, not NOT_FOUND.
TEST_F(Service, ARetriedDeleteAfterACrashSucceeds) {
    auto c = h_.client(kv_user);
    v1::Region r;
    ASSERT_TRUE(
        rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region_request("gone", 4096, 3), &r)
            .ok());
    v1::LoadProgramRequest load;
    load.set_name("one");
    *load.mutable_source() = source("exit 1\n");
    v1::Program p;
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::LoadProgram, load, &p).ok());

    v1::DeleteRegionRequest del;
    del.set_name("gone");
    del.set_idempotency_key("del-gone");
    v1::UnloadProgramRequest unload;
    unload.set_name("one");
    unload.set_idempotency_key("unload-one");
    v1::DeleteRegionResponse dr;
    v1::UnloadProgramResponse ur;
    h_.module().crash_after("region_destroy");
    EXPECT_FALSE(rpc(*c->regions, &v1::Regions::Stub::DeleteRegion, del, &dr).ok());
    h_.module().crash_after("prog_unload");
    EXPECT_FALSE(rpc(*c->programs, &v1::Programs::Stub::UnloadProgram, unload, &ur).ok());
    h_.restart();

    c = h_.client(kv_user);
    auto st = rpc(*c->regions, &v1::Regions::Stub::DeleteRegion, del, &dr);
    EXPECT_TRUE(st.ok()) << describe(st);
    st = rpc(*c->programs, &v1::Programs::Stub::UnloadProgram, unload, &ur);
    EXPECT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(h_.manager().store().programs().empty());
    for (const auto& row : h_.manager().store().regions()) {
        EXPECT_NE(row.name, "gone");
    }
    // Without the key, the object is not found.
    del.clear_idempotency_key();
    st = rpc(*c->regions, &v1::Regions::Stub::DeleteRegion, del, &dr);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
}

// A request that is not valid protobuf is the caller's error, and says so.
TEST_F(Service, ARequestThatIsNotProtobufIsInvalidArgument) {
    grpc::GenericStub stub(h_.channel(kv_user));
    const auto call = [&](const std::string& method, const std::string& bytes) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + rofd::test::wait_limit);
        const grpc::ByteBuffer request = to_buffer(bytes);
        grpc::ByteBuffer response;
        std::promise<grpc::Status> done;
        stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status st) { done.set_value(st); });
        return done.get_future().get();
    };
    // GetTenantRequest.name (field 1): not UTF-8, then cut short.
    for (const std::string& bytes :
         {std::string("\x0a\x02\xff\xfe", 4), std::string("\x0a\x05kv", 4)}) {
        const auto st = call("/rof.v1.Tenants/GetTenant", bytes);
        expect_invalid(st, "not a valid rof.v1.GetTenantRequest");
    }
    // A write call, which would be queued.
    const auto st = call("/rof.v1.Regions/CreateRegion", std::string("\x12\x09table", 7));
    expect_invalid(st, "not a valid rof.v1.CreateRegionRequest");
    // A good request still works, and an unknown method is still UNIMPLEMENTED.
    EXPECT_TRUE(call("/rof.v1.Tenants/GetTenant", std::string("\x0a\x02kv", 4)).ok());
    EXPECT_EQ(call("/rof.v1.Tenants/NoSuchCall", "").error_code(), Code::UNIMPLEMENTED);
}

// GetTenant and VerifyProgram read the policy once: a reload between the
// tenant check and the body must not leave the body without the tenant.
TEST_F(Service, ReadsSeeOnePolicyWhileItIsReloaded) {
    const auto full = h_.manager().view();
    auto policy = std::make_shared<rof::policy::Policy>(*full->policy);
    std::erase_if(policy->tenants, [](const auto& t) { return t.name == "kv"; });
    auto cut = std::make_shared<rofd::View>(*full);
    cut->policy = policy;
    cut->tenant_name.erase(cut->tenant_id.at("kv"));
    cut->tenant_id.erase("kv");
    const std::shared_ptr<const rofd::View> without = cut;

    // Each read of the view on a call's thread alternates between the
    // policy with kv and the one without, from @first on.
    std::atomic<unsigned> epoch{0};
    std::atomic<unsigned> first{0};
    h_.manager().set_view_filter_for_test([&](std::shared_ptr<const rofd::View> v) {
        thread_local unsigned seen = ~0U;
        thread_local unsigned n = 0;
        if (seen != epoch) {
            seen = epoch;
            n = first;
        }
        return n++ % 2 == 0 ? v : without;
    });
    auto c = h_.client(admin);
    const auto fine = [](const grpc::Status& st) {
        return st.ok() || st.error_code() == Code::NOT_FOUND ||
               st.error_code() == Code::UNAVAILABLE;
    };
    for (unsigned f = 0; f < 4; f++) {
        first = f;
        epoch++;
        v1::GetTenantRequest get;
        get.set_name("kv");
        v1::Tenant tenant;
        auto st = rpc(*c->tenants, &v1::Tenants::Stub::GetTenant, get, &tenant);
        EXPECT_TRUE(fine(st)) << describe(st);
        epoch++;
        v1::VerifyProgramRequest verify;
        verify.set_tenant("kv");
        *verify.mutable_source() = source(".region table, r, 64\n\tld64 r1, table[0]\n\texit 0\n");
        v1::VerifyProgramResponse verified;
        st = rpc(*c->programs, &v1::Programs::Stub::VerifyProgram, verify, &verified);
        EXPECT_TRUE(fine(st)) << describe(st);
    }
    h_.manager().set_view_filter_for_test({});
}

// Keeps the manager's worker busy from construction until release() (or
// the end of the scope, so that a failed assertion never leaves it held):
// what a test needs to see which calls wait for the worker.
class WorkerHold {
  public:
    explicit WorkerHold(rofd::Manager& m) {
        auto running = std::make_shared<std::promise<void>>();
        auto started = running->get_future();
        m.post([running, released = released_] {
            running->set_value();
            released.wait();
        });
        started.wait();
    }
    ~WorkerHold() { release(); }
    WorkerHold(const WorkerHold&) = delete;
    WorkerHold& operator=(const WorkerHold&) = delete;

    void release() {
        if (!done_) {
            done_ = true;
            release_.set_value();
        }
    }

  private:
    std::promise<void> release_;
    std::shared_future<void> released_ = release_.get_future().share();
    bool done_ = false;
};

// A call that carries its own deadline waits for the worker until that
// deadline, not [limits] default_deadline_ms; a call without one does not.
TEST(ServiceDeadline, OwnDeadlineOutlastsTheDefault) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    ServiceHarness h("[limits]\ndefault_deadline_ms = 1\n", tenant_files);
    auto c = h.client(admin);
    for (const bool own_deadline : {true, false}) {
        // The worker is busy until we let it go.
        WorkerHold hold(h.manager());
        auto answer = std::async(std::launch::async, [&] {
            grpc::ClientContext ctx;
            if (own_deadline) {
                ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
            }
            v1::CreateRegionRequest req = region_request(own_deadline ? "mine" : "none", 4096, 3);
            v1::Region resp;
            return c->regions->CreateRegion(&ctx, req, &resp);
        });
        ASSERT_TRUE(wait_until([&] { return h.manager().queued() == 1; }));
        // Longer than default_deadline_ms since the call was queued.
        const auto queued = std::chrono::steady_clock::now();
        ASSERT_TRUE(wait_until([&] {
            return std::chrono::steady_clock::now() - queued > std::chrono::milliseconds(5);
        }));
        hold.release();
        const auto st = answer.get();
        if (own_deadline) {
            EXPECT_TRUE(st.ok()) << describe(st);
        } else {
            EXPECT_EQ(st.error_code(), Code::DEADLINE_EXCEEDED) << describe(st);
        }
    }
}

// One tenant may have limits.queued_calls_per_tenant state changes waiting
// for the worker; past it its calls are refused at once, while another
// caller's (an admin's here) still queue and everything accepted runs.
TEST(ServiceQueue, ATenantsWaitingCallsAreCapped) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    ServiceHarness h("[limits]\nqueued_calls_per_tenant = 2\n", tenant_files);
    auto kv = h.client(kv_user);
    auto root = h.client(admin);
    WorkerHold hold(h.manager());
    auto create = [](Client& c, const std::string& name) {
        return std::async(std::launch::async, [&c, name] {
            v1::Region resp;
            return rpc(*c.regions, &v1::Regions::Stub::CreateRegion, region_request(name, 4096, 3),
                       &resp);
        });
    };
    auto first = create(*kv, "q1");
    auto second = create(*kv, "q2");
    ASSERT_TRUE(wait_until([&] { return h.manager().queued() == 2; }));

    v1::Region resp;
    const auto third =
        rpc(*kv->regions, &v1::Regions::Stub::CreateRegion, region_request("q3", 4096, 3), &resp);
    EXPECT_EQ(third.error_code(), Code::RESOURCE_EXHAUSTED) << describe(third);
    EXPECT_TRUE(contains(third.error_message(), "limits.queued_calls_per_tenant"))
        << describe(third);

    auto admins = std::async(std::launch::async, [&root] {
        v1::CreateRegionRequest req = region_request("q4", 4096, 3);
        req.set_tenant("kv");
        v1::Region out;
        return rpc(*root->regions, &v1::Regions::Stub::CreateRegion, req, &out);
    });
    ASSERT_TRUE(wait_until([&] { return h.manager().queued() == 3; }));
    hold.release();
    for (auto* f : {&first, &second, &admins}) {
        const auto st = f->get();
        EXPECT_TRUE(st.ok()) << describe(st);
    }
    // Taken by the worker, the calls no longer count: kv queues again.
    const auto again =
        rpc(*kv->regions, &v1::Regions::Stub::CreateRegion, region_request("q5", 4096, 3), &resp);
    EXPECT_TRUE(again.ok()) << describe(again);
}

// A tenant named "0" is not tenant id 0, whose records are the rejects of
// connects without a valid ticket; and a tenant's metrics show nothing of
// the audit ring's or the drain's totals, which count every tenant.
TEST(ServiceLeaks, ATenantNamedZeroSeesOnlyItsOwn) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    const char* const zero_toml = "name = \"0\"\ncontrol_rate = 0\n\n[identity]\nuids = [1005]\n";
    ServiceHarness h(daemon_toml,
                     {{"kv", kv_toml}, {"analytics", analytics_toml}, {"0", zero_toml}});
    const Who zero_user{"zero", 1005, 1005, {}};
    auto root = h.client(admin);
    auto zero = h.client(zero_user);
    TailStream all(*root->audit, {});
    TailStream mine(*zero->audit, {});
    ASSERT_TRUE(wait_until([&] { return h.manager().audit_hub().streams() == 2; }));

    rof_audit_record reject{};
    reject.kind = ROF_AUDIT_SESSION_REJECT;
    reject.reason = ROF_REJECT_NO_TICKET;
    h.fake().push_audit(reject);
    h.fake().push_audit(audit_record(h.manager().tenant_id("0"), 5));

    auto r = all.next();
    ASSERT_TRUE(r.has_value()) << describe(all.status());
    EXPECT_EQ(r->tenant(), "#0");
    EXPECT_EQ(r->kind(), v1::AUDIT_KIND_SESSION_REJECT);
    r = mine.next();
    ASSERT_TRUE(r.has_value()) << describe(mine.status());
    EXPECT_EQ(r->tenant(), "0");
    EXPECT_EQ(r->kind(), v1::AUDIT_KIND_INVOKE);
    EXPECT_EQ(r->session(), 5U);

    v1::GetMetricsResponse metrics;
    auto st = rpc(*zero->metrics, &v1::Metrics::Stub::GetMetrics, {}, &metrics);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(contains(metrics.text(), "tenant=\"0\"")) << metrics.text();
    EXPECT_FALSE(contains(metrics.text(), "rof_audit_")) << metrics.text();
    EXPECT_FALSE(contains(metrics.text(), "tenant=\"#0\"")) << metrics.text();
    st = rpc(*root->metrics, &v1::Metrics::Stub::GetMetrics, {}, &metrics);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(contains(metrics.text(), "rof_audit_records_total")) << metrics.text();
}

// A session that leaves its idle timeout to the module is told the
// module's value in force, which librof's keepalive paces itself by.
TEST_F(Service, OpenSessionAnswersTheIdleTimeoutInForce) {
    h_.fake().set_idle_timeout_default_ms(20000);  // an operator lowered the parameter
    auto c = h_.client(kv_user);
    v1::OpenSessionRequest req;
    req.add_regions()->set_name("table");
    v1::OpenSessionResponse resp;
    auto st = rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.idle_timeout_ms(), 20000U);
    req.set_idle_timeout_ms(5000);
    st = rpc(*c->sessions, &v1::Sessions::Stub::OpenSession, req, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.idle_timeout_ms(), 5000U);
}

// What rofd keeps of a tenant's programs is bounded by [programs]
// stored_bytes; a refused load leaves nothing behind, and an unload frees
// the room.
TEST(ServiceStore, ProgramBytesPerTenantAreBounded) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root: the callers connect as other uids";
    }
    const std::string kv = rofd::test::kv_toml(
        {.head = "control_rate = 0\n", .tail = "\n[programs]\nstored_bytes = \"4KiB\"\n"});
    ServiceHarness h(daemon_toml, {{"kv", kv}});
    auto c = h.client(kv_user);
    // About 2.5 KiB each with their images and disassemblies.
    const auto load = [&](const std::string& name, int value) {
        v1::LoadProgramRequest req;
        req.set_name(name);
        *req.mutable_source() = source(std::string(2048, ';') + "\n.resp 8\n\tmov64 r1, " +
                                       std::to_string(value) + "\n\tst64 resp[0], r1\n\texit 0\n");
        v1::Program resp;
        return rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &resp);
    };
    auto st = load("one", 1);
    ASSERT_TRUE(st.ok()) << describe(st);
    st = load("two", 2);
    EXPECT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "programs.stored_bytes")) << describe(st);
    EXPECT_EQ(h.manager().store().program_index("kv").size(), 1U);
    EXPECT_EQ(h.fake().list_progs().size(), 1U);

    v1::UnloadProgramRequest unload;
    unload.set_name("one");
    v1::UnloadProgramResponse unloaded;
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::UnloadProgram, unload, &unloaded).ok());
    st = load("two", 2);
    EXPECT_TRUE(st.ok()) << describe(st);
}

// A caller with no role is refused at once, not queued for the worker
// that every tenant's state changes wait for.
TEST_F(Service, ACallerWithNoRoleIsNotQueued) {
    WorkerHold hold(h_.manager());
    auto c = h_.client(stranger);
    auto answer = std::async(std::launch::async, [&] {
        v1::Region resp;
        return rpc(*c->regions, &v1::Regions::Stub::CreateRegion, region_request("mine", 4096, 3),
                   &resp);
    });
    ASSERT_TRUE(wait_until([&] {
        return answer.wait_for(std::chrono::seconds(0)) == std::future_status::ready ||
               h_.manager().queued() > 0;
    }));
    EXPECT_EQ(h_.manager().queued(), 0U);
    hold.release();
    const auto st = answer.get();
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "no tenant's identity in policy")) << describe(st);
}

// LoadProgram verifies before it queues: a program the verifier refuses is
// answered while the worker is busy with another call, and one it accepts
// waits for the worker only for the load.
TEST_F(Service, LoadProgramVerifiesBeforeItQueues) {
    WorkerHold hold(h_.manager());
    auto c = h_.client(kv_user);
    v1::LoadProgramRequest bad;
    bad.set_name("bad");
    *bad.mutable_source() = source("exit 0\nfoo r1\n");
    v1::Program resp;
    const auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, bad, &resp);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_EQ(h_.manager().queued(), 0U);

    v1::LoadProgramRequest good;
    good.set_name("good");
    *good.mutable_source() = source("\tmov64 r1, 1\n\texit 0\n");
    auto answer = std::async(std::launch::async, [&] {
        v1::Program loaded;
        return rpc(*c->programs, &v1::Programs::Stub::LoadProgram, good, &loaded);
    });
    ASSERT_TRUE(wait_until([&] { return h_.manager().queued() == 1; }));
    hold.release();
    const auto loaded = answer.get();
    EXPECT_TRUE(loaded.ok()) << describe(loaded);
}

}  // namespace

// ---- a tenant's lifecycle (issue 28) -------------------------------------

namespace lifecycle {

// How many of @what (regions or sessions of the admin's lists) are @tenant's.
int regions_of(Client& c, const std::string& tenant) {
    v1::ListRegionsResponse list;
    EXPECT_TRUE(rpc(*c.regions, &v1::Regions::Stub::ListRegions, {}, &list).ok());
    int n = 0;
    for (const auto& r : list.regions()) {
        n += r.tenant() == tenant ? 1 : 0;
    }
    return n;
}

int sessions_of(Client& c, const std::string& tenant) {
    v1::ListSessionsResponse list;
    EXPECT_TRUE(rpc(*c.sessions, &v1::Sessions::Stub::ListSessions, {}, &list).ok());
    int n = 0;
    for (const auto& s : list.sessions()) {
        n += s.tenant() == tenant ? 1 : 0;
    }
    return n;
}

grpc::Status destroy(Client& c, const std::string& name, std::int64_t grace_ms,
                     v1::DestroyTenantResponse* resp) {
    v1::DestroyTenantRequest req;
    req.set_name(name);
    req.set_grace_ms(grace_ms);
    return rpc(*c.tenants, &v1::Tenants::Stub::DestroyTenant, req, resp);
}

}  // namespace lifecycle

// A tenant removed from policy with a session open: refused new objects,
// its objects still listed, destroyed by DestroyTenant{grace_ms: 0} with
// its rows; the name comes back empty; kv is not touched throughout.
// A program whose worst case is over one softirq turn is served in the poll work every time,
// and says so (Program.deferred, from the module's ROF_PROG_DEFERRED) in LoadProgram's answer
// and in ListPrograms; a short one does not.
TEST_F(Service, AProgramSaysWhenItIsAlwaysDeferred) {
    auto c = h_.client(kv_user);
    auto load = [&](const std::string& name, const std::string& text) {
        v1::LoadProgramRequest req;
        req.set_name(name);
        *req.mutable_source() = source(text);
        v1::Program p;
        const auto st = rpc(*c->programs, &v1::Programs::Stub::LoadProgram, req, &p);
        EXPECT_TRUE(st.ok()) << describe(st);
        return p;
    };
    const auto quick = load("quick", "\tmov64 r1, 1\n\texit 0\n");
    EXPECT_FALSE(quick.deferred()) << quick.budget();
    // 40,000 trips of two instructions: a worst case of about 80,000 instructions.
    const auto slow = load("slow",
                           "\tmov64 r6, 0\n\tmov64 r2, 0\n"
                           "top:\tadd64 r2, 1\n\tloop r6, top, 40000\n\texit 0\n");
    EXPECT_GT(slow.budget(), std::uint64_t{ROF_EXEC_ATOMIC_INSNS});
    EXPECT_TRUE(slow.deferred());
    v1::ListProgramsRequest req;
    v1::ListProgramsResponse list;
    ASSERT_TRUE(rpc(*c->programs, &v1::Programs::Stub::ListPrograms, req, &list).ok());
    for (const auto& p : list.programs()) {
        EXPECT_EQ(p.deferred(), p.name() == "slow") << p.name();
    }
}

TEST_F(Service, ARemovedTenantIsDrainedThenDestroyed) {
    auto root = h_.client(admin);
    auto kv = h_.client(kv_user);
    // burst's objects, made by an admin.
    auto scratch = region_request("scratch", 4096, 3);
    scratch.set_tenant("burst");
    v1::Region region;
    auto st = rpc(*root->regions, &v1::Regions::Stub::CreateRegion, scratch, &region);
    ASSERT_TRUE(st.ok()) << describe(st);
    v1::OpenSessionRequest open;
    open.set_tenant("burst");
    open.add_regions()->set_name("scratch");
    v1::OpenSessionResponse opened;
    st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, open, &opened);
    ASSERT_TRUE(st.ok()) << describe(st);
    // kv's, the bystander's.
    v1::OpenSessionRequest kv_open;
    kv_open.add_regions()->set_name("table");
    v1::OpenSessionResponse kv_session;
    st = rpc(*kv->sessions, &v1::Sessions::Stub::OpenSession, kv_open, &kv_session);
    ASSERT_TRUE(st.ok()) << describe(st);
    const std::uint32_t burst_id = tenant_id("burst");

    ASSERT_TRUE(std::filesystem::remove(h_.tenant_file("burst")));
    v1::ReloadPolicyResponse reloaded;
    st = rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded);
    ASSERT_TRUE(st.ok()) << describe(st);

    // Refused: nothing new for it.
    open.clear_regions();
    st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, open, &opened);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "tenant \"burst\": being removed")) << describe(st);
    scratch.set_name("more");
    st = rpc(*root->regions, &v1::Regions::Stub::CreateRegion, scratch, &region);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    v1::LoadProgramRequest load;
    load.set_tenant("burst");
    load.set_name("p");
    *load.mutable_source() = source("exit 0\n");
    v1::Program prog;
    st = rpc(*root->programs, &v1::Programs::Stub::LoadProgram, load, &prog);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    // What it has stays, and is listed.
    EXPECT_EQ(lifecycle::regions_of(*root, "burst"), 1);
    EXPECT_EQ(lifecycle::sessions_of(*root, "burst"), 1);
    v1::GetTenantRequest get;
    get.set_name("burst");
    v1::Tenant t;
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, get, &t);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(t.state(), v1::TENANT_STATE_REMOVING);
    EXPECT_GT(t.removal_deadline().seconds(), 0);
    EXPECT_EQ(t.id(), burst_id);
    EXPECT_EQ(t.usage().regions(), 1U);
    v1::ListTenantsResponse tenants;
    ASSERT_TRUE(rpc(*root->tenants, &v1::Tenants::Stub::ListTenants, {}, &tenants).ok());
    std::map<std::string, v1::TenantState> states;
    for (const auto& x : tenants.tenants()) {
        states[x.name()] = x.state();
    }
    EXPECT_EQ(states["burst"], v1::TENANT_STATE_REMOVING);
    EXPECT_EQ(states["kv"], v1::TENANT_STATE_ACTIVE);

    // DestroyTenant: admins only, removed tenants only.
    v1::DestroyTenantResponse destroyed;
    st = lifecycle::destroy(*kv, "burst", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "tenant kv (uid 1001, pid ")) << describe(st);
    st = lifecycle::destroy(*kv, "kv", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    st = lifecycle::destroy(*h_.client(stranger), "burst", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::PERMISSION_DENIED) << describe(st);
    st = lifecycle::destroy(*root, "kv", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "declared in " + h_.tenant_file("kv")))
        << describe(st);
    EXPECT_TRUE(contains(st.error_message(), "rofctl tenant delete kv")) << describe(st);
    st = lifecycle::destroy(*root, "nobody", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
    st = lifecycle::destroy(*root, "burst", -1, &destroyed);
    EXPECT_EQ(st.error_code(), Code::INVALID_ARGUMENT) << describe(st);
    EXPECT_TRUE(h_.fake().get_tenant(burst_id));

    st = lifecycle::destroy(*root, "burst", 0, &destroyed);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(destroyed.destroyed());
    EXPECT_FALSE(h_.fake().get_tenant(burst_id));
    EXPECT_EQ(lifecycle::regions_of(*root, "burst"), 0);
    EXPECT_EQ(lifecycle::sessions_of(*root, "burst"), 0);
    for (const auto& row : h_.manager().store().tenants()) {
        EXPECT_NE(row.name, "burst");
    }
    for (const auto& row : h_.manager().store().regions()) {
        EXPECT_NE(row.tenant, "burst") << row.name;
    }
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, get, &t);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);

    // kv was never touched.
    v1::GetSessionRequest kv_get;
    kv_get.set_id(kv_session.session());
    v1::Session s;
    st = rpc(*kv->sessions, &v1::Sessions::Stub::GetSession, kv_get, &s);
    EXPECT_TRUE(st.ok()) << describe(st);
    st = rpc(*kv->regions, &v1::Regions::Stub::CreateRegion, region_request("cache", 4096, 1),
             &region);
    EXPECT_TRUE(st.ok()) << describe(st);

    // The name again: empty.
    h_.write_tenant("burst", burst_toml);
    st = rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(lifecycle::regions_of(*root, "burst"), 0);
    st = rpc(*root->tenants, &v1::Tenants::Stub::GetTenant, get, &t);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(t.state(), v1::TENANT_STATE_ACTIVE);
    EXPECT_EQ(t.usage().regions(), 0U);
}

// The name back in policy during the grace: the removal is undone and
// the tenant keeps what it had.
TEST_F(Service, ARemovedTenantReAddedDuringItsGraceKeepsItsObjects) {
    auto root = h_.client(admin);
    auto scratch = region_request("scratch", 4096, 3);
    scratch.set_tenant("burst");
    v1::Region region;
    auto st = rpc(*root->regions, &v1::Regions::Stub::CreateRegion, scratch, &region);
    ASSERT_TRUE(st.ok()) << describe(st);
    v1::OpenSessionRequest open;
    open.set_tenant("burst");
    v1::OpenSessionResponse opened;
    st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, open, &opened);
    ASSERT_TRUE(st.ok()) << describe(st);

    ASSERT_TRUE(std::filesystem::remove(h_.tenant_file("burst")));
    v1::ReloadPolicyResponse reloaded;
    ASSERT_TRUE(rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded).ok());
    h_.write_tenant("burst", burst_toml);
    ASSERT_TRUE(rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded).ok());

    EXPECT_EQ(lifecycle::regions_of(*root, "burst"), 1);
    EXPECT_EQ(lifecycle::sessions_of(*root, "burst"), 1);
    v1::DestroyTenantResponse destroyed;
    st = lifecycle::destroy(*root, "burst", 0, &destroyed);
    EXPECT_EQ(st.error_code(), Code::FAILED_PRECONDITION) << describe(st);
    st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, open, &opened);
    EXPECT_TRUE(st.ok()) << describe(st);
}

// rofd dies right after the module destroyed the tenant: the retried
// DestroyTenant with the same key is answered "destroyed", not NOT_FOUND.
TEST_F(Service, ARetriedDestroyTenantAfterACrashSucceeds) {
    auto root = h_.client(admin);
    v1::OpenSessionRequest open;
    open.set_tenant("burst");
    v1::OpenSessionResponse opened;
    auto st = rpc(*root->sessions, &v1::Sessions::Stub::OpenSession, open, &opened);
    ASSERT_TRUE(st.ok()) << describe(st);  // keeps it removing until destroyed
    ASSERT_TRUE(std::filesystem::remove(h_.tenant_file("burst")));
    v1::ReloadPolicyResponse reloaded;
    ASSERT_TRUE(rpc(*root->policy, &v1::Policy::Stub::ReloadPolicy, {}, &reloaded).ok());

    v1::DestroyTenantRequest req;
    req.set_name("burst");
    req.set_idempotency_key("destroy-burst");
    v1::DestroyTenantResponse resp;
    h_.module().crash_after("tenant_destroy");
    st = rpc(*root->tenants, &v1::Tenants::Stub::DestroyTenant, req, &resp);
    EXPECT_TRUE(contains(st.error_message(), "rofd crashed after tenant_destroy")) << describe(st);
    h_.restart();

    root = h_.client(admin);
    st = rpc(*root->tenants, &v1::Tenants::Stub::DestroyTenant, req, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_TRUE(resp.destroyed());
    EXPECT_EQ(resp.name(), "burst");
    for (const auto& t : h_.fake().list_tenants()) {
        EXPECT_NE(rofd::abi_name(t.name), "burst");
    }
    // Without the key, the name is unknown.
    req.clear_idempotency_key();
    st = rpc(*root->tenants, &v1::Tenants::Stub::DestroyTenant, req, &resp);
    EXPECT_EQ(st.error_code(), Code::NOT_FOUND) << describe(st);
}
