// SPDX-License-Identifier: MIT
// rof::Client against a whole rofd in this process (daemon/service_harness.h:
// the real server and accept loop over a FakeModule): every typed call
// reaches its RPC, errors come back as rof::Error with rofd's code and
// message, mutating calls are resent safely with their idempotency key,
// and a client outlives a rofd restart.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rof/client.h"
#include "service_harness.h"
#include "test_tenants.h"
#include "unix_addr.h"

namespace {

namespace v1 = rof::v1;
using rofd::test::ServiceHarness;

std::string admin_toml() {
    return "[admin]\nuids = [" + std::to_string(::getuid()) +
           "]\n\n[sessions]\naddress = \"10.0.0.1\"\n";
}

const std::string kv_toml = rofd::test::kv_toml({.head = "control_rate = 0\n",
                                                 .uid = 4242,
                                                 .quota = "regions = 8\n",
                                                 .table_size = "1MiB",
                                                 .table_only = true});

const char* const prog_src = "exit 0\n";

rof::Client client_of(const ServiceHarness& h) {
    rof::ClientOptions o;
    o.target = h.socket();
    o.deadline = std::chrono::seconds(20);
    return rof::Client(o);
}

template <typename F>
rof::Error error_of(F&& f) {
    try {
        f();
    } catch (const rof::Error& e) {
        return e;
    }
    ADD_FAILURE() << "the call succeeded";
    return rof::Error(rof::Code::ok, "");
}

TEST(ClientRofd, EveryServiceAnswers) {
    ServiceHarness h(admin_toml(), {{"kv", kv_toml}});
    rof::Client c = client_of(h);

    EXPECT_EQ(c.health(), "SERVING");
    EXPECT_FALSE(c.get_status().daemon().version().empty());
    ASSERT_EQ(c.list_tenants().tenants_size(), 1);
    v1::GetTenantRequest gt;
    gt.set_name("kv");
    EXPECT_EQ(c.get_tenant(gt).name(), "kv");
    EXPECT_GE(c.get_policy().generation(), 1U);
    EXPECT_GE(c.reload_policy().generation(), 2U);

    v1::CreateRegionRequest cr;
    cr.set_tenant("kv");
    cr.set_name("scratch");
    cr.set_size(65536);
    cr.set_access(v1::ACCESS_READ | v1::ACCESS_WRITE);
    const v1::Region r = c.create_region(cr);
    EXPECT_EQ(r.name(), "scratch");
    EXPECT_EQ(c.list_regions().regions_size(), 2);
    v1::GetRegionRequest gr;
    gr.set_tenant("kv");
    gr.set_name("scratch");
    EXPECT_EQ(c.get_region(gr).size(), 65536U);
    v1::CreateRegionTokenRequest mr;
    mr.set_tenant("kv");
    mr.set_name("scratch");
    mr.set_access(v1::ACCESS_READ);
    EXPECT_EQ(c.create_region_token(mr).token().size(), 16U);

    v1::VerifyProgramRequest vr;
    vr.set_tenant("kv");
    vr.mutable_source()->set_text(prog_src);
    vr.mutable_source()->set_file("t.rofs");
    const v1::VerifyProgramResponse verdict = c.verify_program(vr);
    ASSERT_TRUE(verdict.ok()) << verdict.error();
    v1::LoadProgramRequest lr;
    lr.set_tenant("kv");
    lr.set_name("zero");
    *lr.mutable_source() = vr.source();
    const v1::Program p = c.load_program(lr);
    EXPECT_EQ(p.tag(), verdict.tag());
    v1::ListProgramsRequest lp;
    lp.set_tenant("kv");
    EXPECT_EQ(c.list_programs(lp).programs_size(), 1);
    v1::GetProgramRequest gp;
    gp.set_tenant("kv");
    gp.set_name("zero");
    EXPECT_FALSE(c.get_program(gp).disassembly().empty());
    v1::ReplaceProgramRequest rp;
    rp.set_tenant("kv");
    rp.set_name("zero");
    rp.mutable_source()->set_text("exit 1\n");
    const v1::Program replaced = c.replace_program(rp);
    EXPECT_NE(replaced.tag(), p.tag());
    EXPECT_EQ(replaced.name(), "zero");
    EXPECT_EQ(replaced.replaced(), 1U);
    EXPECT_EQ(c.list_programs(lp).programs_size(), 1);

    v1::OpenSessionRequest os;
    os.set_tenant("kv");
    os.add_regions()->set_name("table");
    const v1::OpenSessionResponse s = c.open_session(os);
    EXPECT_EQ(s.ticket().size(), 48U);
    EXPECT_EQ(c.list_sessions().sessions_size(), 1);
    v1::GetSessionRequest gs;
    gs.set_id(s.session());
    EXPECT_EQ(c.get_session(gs).tenant(), "kv");
    v1::CloseSessionRequest cs;
    cs.set_id(s.session());
    c.close_session(cs);
    EXPECT_EQ(c.list_sessions().sessions_size(), 0);

    v1::UnloadProgramRequest ur;
    ur.set_tenant("kv");
    ur.set_name("zero");
    c.unload_program(ur);
    v1::DeleteRegionRequest dr;
    dr.set_tenant("kv");
    dr.set_name("scratch");
    c.delete_region(dr);
    EXPECT_EQ(c.list_regions().regions_size(), 1);

    c.rotate_ticket_key();
    (void)c.get_audit_stats();
    EXPECT_NE(c.get_metrics().text().find("rof"), std::string::npos);
}

TEST(ClientRofd, ErrorsCarryRofdsCodeAndMessage) {
    ServiceHarness h(admin_toml(), {{"kv", kv_toml}});
    rof::Client c = client_of(h);

    v1::GetRegionRequest gr;
    gr.set_tenant("kv");
    gr.set_name("nope");
    const rof::Error e = error_of([&] { c.get_region(gr); });
    EXPECT_EQ(e.code(), rof::Code::not_found);
    EXPECT_NE(std::string(e.what()).find("GetRegion: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"nope\""), std::string::npos) << e.what();

    v1::CreateRegionRequest cr;
    cr.set_tenant("kv");
    cr.set_name("bad name!");
    cr.set_size(4096);
    cr.set_access(v1::ACCESS_READ);
    EXPECT_EQ(error_of([&] { c.create_region(cr); }).code(), rof::Code::invalid_argument);
}

// DestroyTenant through librof: refused for a policy tenant, then a
// tenant removed from policy (with a session that would keep it) is
// destroyed; a second call finds nothing.
TEST(ClientRofd, DestroyTenantAfterItLeftThePolicy) {
    ServiceHarness h(admin_toml(),
                     {{"kv", kv_toml}, {"web", "name = \"web\"\n\n[identity]\nuids = [4243]\n"}});
    rof::Client c = client_of(h);
    v1::DestroyTenantRequest req;
    req.set_name("web");
    const rof::Error declared = error_of([&] { c.destroy_tenant(req); });
    EXPECT_EQ(declared.code(), rof::Code::failed_precondition) << declared.what();
    EXPECT_NE(std::string(declared.what()).find("rofctl tenant delete web"), std::string::npos)
        << declared.what();

    v1::OpenSessionRequest open;
    open.set_tenant("web");
    c.open_session(open);
    ASSERT_EQ(std::remove(h.tenant_file("web").c_str()), 0);
    c.reload_policy();
    v1::GetTenantRequest gt;
    gt.set_name("web");
    EXPECT_EQ(c.get_tenant(gt).state(), v1::TENANT_STATE_REMOVING);

    const auto done = c.destroy_tenant(req);
    EXPECT_TRUE(done.destroyed());
    const rof::Error gone = error_of([&] { c.destroy_tenant(req); });
    EXPECT_EQ(gone.code(), rof::Code::not_found) << gone.what();
}

TEST(ClientRofd, MutatingCallsAreKeyedAndRetrySafely) {
    ServiceHarness h(admin_toml(), {{"kv", kv_toml}});
    rof::Client c = client_of(h);

    v1::CreateRegionRequest cr;
    cr.set_tenant("kv");
    cr.set_name("once");
    cr.set_size(4096);
    cr.set_access(v1::ACCESS_READ);
    cr.set_idempotency_key("k1");
    const v1::Region first = c.create_region(cr);
    // The same key again: rofd answers with the stored answer.
    EXPECT_EQ(c.create_region(cr).id(), first.id());
    // No key: librof makes a fresh one, so a second create is a new call.
    cr.clear_idempotency_key();
    EXPECT_EQ(error_of([&] { c.create_region(cr); }).code(), rof::Code::already_exists);
}

TEST(ClientRofd, AuditTailStreamsAndCancels) {
    ServiceHarness h(admin_toml(), {{"kv", kv_toml}});
    rof::Client c = client_of(h);
    rof::AuditTail tail = c.tail_audit();
    std::atomic<bool> ended{false};

    std::thread reader([&] {
        v1::AuditRecord r;
        while (tail.next(r)) {
        }
        ended = true;
    });
    tail.cancel();
    reader.join();
    EXPECT_TRUE(ended);
    EXPECT_NO_THROW(tail.finish());
}

// rofd sends every connection away after limits.connection_age_ms and
// closes it connection_age_grace_ms later, streams and all: the audit tail
// opens its stream again on a new connection and the reader reads on.
TEST(ClientRofd, AuditTailOutlivesItsConnection) {
    ServiceHarness h(admin_toml() +
                         "\n[limits]\nconnection_age_ms = 1000\n"
                         "connection_age_grace_ms = 1000\n",
                     {{"kv", kv_toml}});
    rof::Client c = client_of(h);
    rof::AuditTail tail = c.tail_audit();
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::uint64_t> seen;
    bool ended = false;
    std::thread reader([&] {
        v1::AuditRecord r;
        while (tail.next(r)) {
            const std::lock_guard lock(mu);
            seen.push_back(r.seq());
            cv.notify_all();
        }
        const std::lock_guard lock(mu);
        ended = true;
        cv.notify_all();
    });
    auto& hub = h.manager().audit_hub();
    auto publish_and_read = [&](std::uint64_t seq) {
        v1::AuditRecord r;
        r.set_seq(seq);
        r.set_kind(v1::AUDIT_KIND_SESSION_OPEN);
        r.set_tenant("kv");
        hub.publish(r);
        std::unique_lock lock(mu);
        return cv.wait_for(lock, std::chrono::seconds(60), [&] {
            return ended || std::find(seen.begin(), seen.end(), seq) != seen.end();
        }) && !ended;
    };

    ASSERT_TRUE(rofd::test::wait_until([&] { return hub.streams() == 1; }));
    EXPECT_TRUE(publish_and_read(1));
    // The first connection goes, its stream with it; a second stream is
    // subscribed on a new one.
    ASSERT_TRUE(rofd::test::wait_until([&] { return hub.opened() >= 2 && hub.streams() == 1; }));
    EXPECT_TRUE(publish_and_read(2)) << "the tail ended with its connection";
    // And again.
    ASSERT_TRUE(rofd::test::wait_until([&] { return hub.opened() >= 3 && hub.streams() == 1; }));
    EXPECT_TRUE(publish_and_read(3));

    tail.cancel();
    reader.join();
    EXPECT_TRUE(ended);
    EXPECT_NO_THROW(tail.finish());
    EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(ClientRofd, WaitsForARestartedRofd) {
    rofd::test::TempDir dir;
    const std::string path = dir.file("rofd.sock");
    std::optional<ServiceHarness> h;
    h.emplace(admin_toml(), ServiceHarness::Files{{"kv", kv_toml}}, true, path);
    rof::ClientOptions o;
    o.target = path;
    o.deadline = std::chrono::seconds(30);
    rof::Client c(o);
    ASSERT_EQ(c.health(), "SERVING");
    h.reset();

    // While rofd is down, a socket that accepts and hangs up: the accept is
    // the proof that the call below is under way before rofd comes back.
    const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ::unlink(path.c_str());
    ASSERT_EQ(rof::internal::UnixAddr(path).bind(lfd), 0);
    ASSERT_EQ(::listen(lfd, 8), 0);

    std::optional<rof::Error> failed;
    std::string version;
    std::thread caller([&] {
        try {
            version = c.get_status().daemon().version();
        } catch (const rof::Error& e) {
            failed = e;
        }
    });
    const int afd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(afd, 0);
    ::close(afd);
    ::close(lfd);
    h.emplace(admin_toml(), ServiceHarness::Files{{"kv", kv_toml}}, true, path);
    caller.join();
    EXPECT_FALSE(failed) << failed->what();
    EXPECT_FALSE(version.empty());
}

}  // namespace
