// SPDX-License-Identifier: MIT
// rofd::Manager against FakeModule: start, restart after a module reload,
// ticket key, policy reload, idempotency, quarantine.  The policy lives in
// a temporary directory, and so does the state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "fake_module.h"
#include "manager.h"
#include "rof/prog/asm.h"
#include "rof/v1/region.pb.h"
#include "shared_module.h"
#include "store.h"
#include "test_tenants.h"
#include "test_util.h"

namespace rofd {
namespace {

// @hay contains @needle; a failure shows both.
::testing::AssertionResult Contains(const std::string& hay, const std::string& needle) {
    if (hay.find(needle) != std::string::npos) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "\"" << needle << "\" not in:\n" << hay;
}

constexpr std::uint64_t MiB = 1ULL << 20;

const std::string kKv = test::kv_toml({.quota = "sessions = 8\n"});
const char* const kAnalytics = test::kAnalyticsToml;

// A program with a plain slot and a free-list slot, both bound to kv's
// "table" (the free-list slot to its list 0).
const char* kProgram =
    ".args 0, 64\n"
    ".resp 8\n"
    ".region table, rw, 4096\n"
    ".region heap, rwa, 65536, freelist\n"
    "\tld64 r1, table[0]\n"
    "\talloc r2, heap\n"
    "\tst64 resp[0], r1\n"
    "\texit 0\n";

std::uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

class ManagerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::filesystem::create_directories(tenants_dir());
        write_daemon("");
        write_tenant("kv", kKv);
        write_tenant("analytics", kAnalytics);
    }

    std::string tenants_dir() const { return dir_.file("tenants.d"); }
    std::string state_dir() const { return dir_.file("state"); }
    std::string db_path() const { return state_dir() + "/rofd.db"; }

    void write_daemon(const std::string& text) { std::ofstream(dir_.file("rofd.toml")) << text; }
    void write_tenant(const std::string& name, const std::string& text) {
        std::ofstream(tenants_dir() + "/" + name + ".toml") << text;
    }
    void remove_tenant(const std::string& name) {
        std::filesystem::remove(tenants_dir() + "/" + name + ".toml");
    }

    std::unique_ptr<Manager> make_manager() {
        ManagerOptions o;
        o.daemon_file = dir_.file("rofd.toml");
        o.tenants_dir = tenants_dir();
        o.state_dir = state_dir();
        o.clock = clock_;
        auto shared = std::make_unique<test::SharedModule>(fake_);
        shared_ = shared.get();
        return std::make_unique<Manager>(o, std::move(shared));
    }

    std::unique_ptr<Manager> started_manager() {
        auto m = make_manager();
        m->start();
        EXPECT_TRUE(m->ready());
        return m;
    }

    std::optional<rof_tenant_info> fake_tenant(const std::string& name) {
        for (const auto& t : fake_->list_tenants()) {
            if (abi_name(t.name) == name) {
                return t;
            }
        }
        return std::nullopt;
    }

    std::optional<rof_region_info> fake_region(std::uint32_t tenant, const std::string& name) {
        for (const auto& r : fake_->list_regions()) {
            if (r.tenant == tenant && abi_name(r.name) == name) {
                return r;
            }
        }
        return std::nullopt;
    }

    std::vector<rof_freelist_info> fake_freelists(std::uint32_t region) {
        std::vector<rof_freelist_info> out;
        for (const auto& f : fake_->list_freelists()) {
            if (f.region == region) {
                out.push_back(f);
            }
        }
        return out;
    }

    // Prepares a session of @tenant; errno of the refusal, or 0 (and @id).
    int prepare(std::uint32_t tenant, std::uint32_t* id = nullptr) {
        rof_session_prepare req{};
        req.tenant = tenant;
        req.expires_ns = now_ns() + 60'000'000'000ULL;
        try {
            fake_->session_prepare(req);
        } catch (const KmodError& e) {
            return e.code().value();
        }
        if (id != nullptr) {
            *id = req.session;
        }
        return 0;
    }

    static std::string drift_with(const View& v, const std::string& needle) {
        for (const auto& d : v.drift) {
            if (d.find(needle) != std::string::npos) {
                return d;
            }
        }
        return "";
    }

    static std::string joined(const std::vector<std::string>& lines) {
        std::string out;
        for (const auto& l : lines) {
            out += l + "\n";
        }
        return out;
    }

    test::TempDir dir_;
    std::shared_ptr<FakeModule> fake_ = std::make_shared<FakeModule>();
    test::SharedModule* shared_ = nullptr;  // the last make_manager()'s
    // The managers' monotonic clock; empty: std::chrono::steady_clock.
    std::function<std::chrono::steady_clock::time_point()> clock_;
};

StoredProgram kv_program() {
    const auto as = rof::prog::assemble(kProgram, "get.rofs");
    if (!as.ok()) {
        ADD_FAILURE() << as.error_text();
        return {};
    }
    StoredProgram p;
    p.tenant = "kv";
    p.name = "get";
    p.tag = as.program->tag();
    p.source = kProgram;
    p.image = as.program->encode();
    p.binds = {StoredBind{"table", -1}, StoredBind{"table", 0}};
    p.budget = 1000;
    p.byte_budget = 4096;
    p.state = RowState::committed;
    return p;
}

TEST_F(ManagerTest, StartCreatesPolicyObjectsAndSetsTheTicketKey) {
    // A tenant made by hand: no session before rofd gives the module a key.
    const auto probe = fake_->tenant_create("probe", 0);
    EXPECT_EQ(prepare(probe), ENOKEY);

    auto m = started_manager();
    const auto v = m->view();
    EXPECT_EQ(v->generation, 1u);
    ASSERT_EQ(v->tenant_id.size(), 2u);

    const auto kv = fake_tenant("kv");
    const auto an = fake_tenant("analytics");
    ASSERT_TRUE(kv);
    ASSERT_TRUE(an);
    EXPECT_EQ(v->tenant_id.at("kv"), kv->id);
    EXPECT_EQ(v->tenant_id.at("analytics"), an->id);
    EXPECT_EQ(m->tenant_id("kv"), kv->id);
    EXPECT_EQ(v->name_of(probe), "probe");
    EXPECT_EQ(kv->quota.region_bytes, 64 * MiB);
    EXPECT_EQ(kv->quota.sessions, 8u);

    const auto table = fake_region(kv->id, "table");
    ASSERT_TRUE(table);
    EXPECT_EQ(table->size, 16 * MiB);
    EXPECT_EQ(table->access, ROF_ACCESS_READ | ROF_ACCESS_WRITE | ROF_ACCESS_ATOMIC);
    const auto fls = fake_freelists(table->id);
    ASSERT_EQ(fls.size(), 1u);
    EXPECT_EQ(fls[0].block_size, 64u);
    EXPECT_EQ(fls[0].offset, 4096u);
    EXPECT_EQ(fls[0].count, 1024u);
    const auto log = fake_region(kv->id, "log");
    ASSERT_TRUE(log);
    EXPECT_EQ(log->size, 4 * MiB);

    // The key is stored and set.
    EXPECT_TRUE(m->store().ticket_key());
    EXPECT_EQ(prepare(kv->id), 0);
    EXPECT_EQ(prepare(probe), 0);

    EXPECT_EQ(drift_with(*v, "\"probe\""),
              "tenant \"probe\": in the module, not in policy: left alone")
        << joined(v->drift);
    // The store has the ids the tenants got.
    const auto rows = m->store().tenants();
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& t : rows) {
        EXPECT_EQ(t.id, v->tenant_id.at(t.name)) << t.name;
    }
}

TEST_F(ManagerTest, RestartAfterModuleReloadRebuildsEverything) {
    TicketKey key{};
    const StoredProgram prog = kv_program();
    ASSERT_FALSE(prog.image.empty());
    {
        auto m = started_manager();
        key = *m->store().ticket_key();
        // What calls created: a region and a program.
        StoredRegion cache;
        cache.tenant = "kv";
        cache.name = "cache";
        cache.size = 8192;
        cache.access = ROF_ACCESS_READ | ROF_ACCESS_WRITE;
        cache.freelists = {StoredFreeList{32, 0, 16}};
        cache.state = RowState::committed;
        m->store().put_region(cache);
        m->store().put_program(prog);
    }
    {
        // Ids the module will not hand out by itself after a reload.
        Store s(db_path());
        s.put_tenant(StoredTenant{"kv", 7});
        s.put_tenant(StoredTenant{"analytics", 9});
    }
    fake_->reload();
    EXPECT_TRUE(fake_->list_tenants().empty());

    auto m = started_manager();
    const auto v = m->view();
    EXPECT_EQ(v->tenant_id.at("kv"), 7u);
    EXPECT_EQ(v->tenant_id.at("analytics"), 9u);
    ASSERT_TRUE(fake_tenant("kv"));
    EXPECT_EQ(fake_tenant("kv")->id, 7u);
    EXPECT_EQ(fake_tenant("analytics")->id, 9u);

    // Declared regions and their free lists are back.
    const auto table = fake_region(7, "table");
    ASSERT_TRUE(table);
    EXPECT_EQ(fake_freelists(table->id).size(), 1u);
    EXPECT_TRUE(fake_region(7, "log"));
    // The API-created region is recreated, with its free list.
    const auto cache = fake_region(7, "cache");
    ASSERT_TRUE(cache);
    EXPECT_EQ(cache->size, 8192u);
    ASSERT_EQ(fake_freelists(cache->id).size(), 1u);
    EXPECT_EQ(fake_freelists(cache->id)[0].block_size, 32u);

    // The stored program is loaded again, bound by name.
    const auto p = fake_->get_prog(7, prog.tag);
    ASSERT_TRUE(p) << joined(v->drift);
    EXPECT_EQ(abi_name(p->name), "get");
    EXPECT_EQ(p->nbind, 2u);
    EXPECT_EQ(p->bind[0].region, table->id);
    EXPECT_EQ(p->bind[1].region, table->id);
    EXPECT_EQ(p->bind[1].freelist, fake_freelists(table->id)[0].id);

    // Drift names what was lost.
    EXPECT_EQ(drift_with(*v, "\"cache\""),
              "tenant \"kv\": region \"cache\": missing from the module: recreated, contents lost")
        << joined(v->drift);
    EXPECT_TRUE(Contains(drift_with(*v, "\"get\""), "missing from the module: reloaded"))
        << joined(v->drift);
    EXPECT_EQ(drift_with(*v, "tenant \"kv\":"), "tenant \"kv\": missing from the module: recreated")
        << joined(v->drift);

    // The same ticket key, set again in the reloaded module.
    EXPECT_EQ(*m->store().ticket_key(), key);
    EXPECT_EQ(prepare(7), 0);
}

// A reconciliation lists the module's regions and free lists a fixed
// number of times, however many stored programs it binds again (it looks
// them up in one index per pass, not with a LIST per bind).
TEST_F(ManagerTest, ReconcileListsRegionsOnceNotPerStoredObject) {
    auto lists_to_restore = [&](int programs) {
        {
            auto m = started_manager();
            for (int i = 0; i < programs; i++) {
                StoredProgram p = kv_program();
                const std::string source = std::string(kProgram).replace(
                    std::string(kProgram).find("exit 0"), 6, "exit " + std::to_string(i));
                const auto as = rof::prog::assemble(source, "get.rofs");
                EXPECT_TRUE(as.ok()) << as.error_text();
                p.name = "get" + std::to_string(i);
                p.tag = as.program->tag();
                p.source = source;
                p.image = as.program->encode();
                m->store().put_program(p);
            }
        }
        fake_->reload();
        auto m = started_manager();
        for (const auto& p : m->store().programs()) {
            EXPECT_TRUE(fake_->get_prog(m->tenant_id("kv"), p.tag)) << p.name;
        }
        EXPECT_EQ(m->store().programs().size(), static_cast<std::size_t>(programs));
        return std::pair(shared_->calls("list_regions"), shared_->calls("list_freelists"));
    };
    const auto one = lists_to_restore(1);
    const auto eight = lists_to_restore(8);
    EXPECT_EQ(eight, one) << "list_regions, list_freelists: " << one.first << ", " << one.second
                          << " for 1 program; " << eight.first << ", " << eight.second << " for 8";
}

TEST_F(ManagerTest, StoredIdIsNotTakenByATenantCreatedBeforeIt) {
    // kv had id 1; analytics has no row (say it is new).  The module picks
    // analytics' id, and must not pick the 1 kv is about to ask for.
    {
        Store s(db_path());
        s.put_tenant(StoredTenant{"kv", 1});
    }
    auto m = started_manager();
    const auto v = m->view();
    EXPECT_EQ(v->tenant_id.at("kv"), 1u);
    ASSERT_TRUE(fake_tenant("analytics"));
    EXPECT_NE(fake_tenant("analytics")->id, 1u);
    EXPECT_EQ(v->tenant_id.at("analytics"), fake_tenant("analytics")->id);
}

TEST_F(ManagerTest, IntentFreeListThatCannotBeCreatedIsDriftNotAFailedStart) {
    // A call created kv's region "cache" and crashed before its free list;
    // the list does not fit the region (a bad row), so the module refuses it.
    {
        Store s(db_path());
        s.put_tenant(StoredTenant{"kv", 5});
        StoredRegion r;
        r.tenant = "kv";
        r.name = "cache";
        r.size = 8192;
        r.access = ROF_ACCESS_READ | ROF_ACCESS_WRITE;
        r.freelists = {StoredFreeList{64, 0, 16}, StoredFreeList{4096, 4096, 16}};
        r.state = RowState::intent;
        s.put_region(r);
    }
    const auto kv = fake_->tenant_create("kv", 5);
    fake_->region_create(kv, "cache", 8192, ROF_ACCESS_READ | ROF_ACCESS_WRITE);

    auto m = make_manager();
    ASSERT_NO_THROW(m->start());
    EXPECT_TRUE(m->ready());
    const auto v = m->view();
    // The list that fits is made, the other reported; the row is settled.
    const auto cache = fake_region(kv, "cache");
    ASSERT_TRUE(cache);
    const auto fls = fake_freelists(cache->id);
    ASSERT_EQ(fls.size(), 1u);
    EXPECT_EQ(fls[0].block_size, 64u);
    EXPECT_TRUE(
        Contains(drift_with(*v, "free list"), "tenant \"kv\": region \"cache\": free list at 4096"))
        << joined(v->drift);
    // The policy's own objects are there all the same.
    EXPECT_TRUE(fake_region(kv, "table"));
    const auto rows = m->store().regions();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].state, RowState::committed);
}

TEST_F(ManagerTest, IntentRegionOfATenantNotInPolicyIsSettled) {
    // "old" left the policy; the module still has it, and rofd crashed
    // while creating its region "data".
    {
        Store s(db_path());
        s.put_tenant(StoredTenant{"old", 3});
        StoredRegion r;
        r.tenant = "old";
        r.name = "data";
        r.size = 8192;
        r.access = ROF_ACCESS_READ;
        r.freelists = {StoredFreeList{64, 0, 4}};
        r.state = RowState::intent;
        s.put_region(r);
    }
    const auto old = fake_->tenant_create("old", 3);
    fake_->region_create(old, "data", 8192, ROF_ACCESS_READ);
    // A session still open: "old" stays while it is removed.
    TicketKey key{};
    key[0] = 1;
    fake_->set_ticket_key(key);
    ASSERT_EQ(prepare(old), 0);

    auto m = make_manager();
    ASSERT_NO_THROW(m->start());
    const auto v = m->view();
    EXPECT_EQ(v->name_of(old), "old");
    EXPECT_EQ(v->tenant_id.count("old"), 0u);
    EXPECT_TRUE(Contains(drift_with(*v, "\"old\""),
                         "tenant \"old\": in the module, not in policy: being removed"))
        << joined(v->drift);
    ASSERT_NE(v->removal("old"), nullptr);
    EXPECT_EQ(v->removal("old")->id, old);
    // Settled like any intent row: the module has the region, so it is kept.
    const auto rows = m->store().regions();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].state, RowState::committed);
    const auto data = fake_region(old, "data");
    ASSERT_TRUE(data);
    EXPECT_EQ(fake_freelists(data->id).size(), 1u);
}

TEST_F(ManagerTest, StoredObjectsThatCannotBeRecreatedAreDrift) {
    // A region beyond kv's quota (64 MiB, 20 declared) and a program bound
    // to it: neither can come back, and start() goes on without them.
    {
        Store s(db_path());
        s.put_tenant(StoredTenant{"kv", 2});
        StoredRegion r;
        r.tenant = "kv";
        r.name = "huge";
        r.size = 48 * MiB;
        r.access = ROF_ACCESS_READ | ROF_ACCESS_WRITE;
        r.state = RowState::committed;
        s.put_region(r);
        StoredProgram p = kv_program();
        p.binds = {StoredBind{"huge", -1}, StoredBind{"huge", 0}};
        s.put_program(p);
    }
    auto m = make_manager();
    ASSERT_NO_THROW(m->start());
    const auto v = m->view();
    EXPECT_TRUE(Contains(drift_with(*v, "could not be created"),
                         "tenant \"kv\": region \"huge\": could not be created: "))
        << joined(v->drift);
    EXPECT_TRUE(Contains(drift_with(*v, "could not be reloaded"),
                         "tenant \"kv\": program \"get\": could not be reloaded: slot 0: "
                         "region \"huge\" does not exist"))
        << joined(v->drift);
    EXPECT_TRUE(fake_region(2, "table"));
    EXPECT_TRUE(fake_->list_progs().empty());
    // The rows stay for a later start that can recreate them.
    EXPECT_EQ(m->store().regions().size(), 1u);
    EXPECT_EQ(m->store().programs().size(), 1u);
}

// Issue 28: a LIST the module cannot answer (E2BIG from a module without
// ROF_LIST_FROM past 65,536 regions) no longer stops rofd from starting:
// it serves every tenant, reports what it could not reconcile, and a
// reload once the LIST works again clears it.
TEST_F(ManagerTest, ListThatFailsAtStartLeavesRofdServingDegraded) {
    started_manager().reset();
    const auto kv = fake_tenant("kv");
    ASSERT_TRUE(kv);

    auto m = make_manager();
    shared_->fail_on("list_regions", E2BIG);
    ASSERT_NO_THROW(m->start());
    EXPECT_TRUE(m->ready());
    auto v = m->view();
    EXPECT_EQ(v->tenant_id.at("kv"), kv->id);
    EXPECT_EQ(m->tenant_id("analytics"), fake_tenant("analytics")->id);
    ASSERT_EQ(v->reconcile_errors.size(), 1u) << joined(v->reconcile_errors);
    EXPECT_TRUE(Contains(v->reconcile_errors[0],
                         "regions: the module could not list them (/dev/rof: list_regions: "
                         "Argument list too long): regions and free lists not reconciled"));
    EXPECT_TRUE(Contains(joined(v->drift), v->reconcile_errors[0]));
    EXPECT_TRUE(Contains(m->metrics_text(""), "\nrof_reconcile_errors 1\n"));
    EXPECT_EQ(fake_->list_regions().size(), 2u);  // nothing recreated twice
    EXPECT_EQ(prepare(kv->id), 0);                // kv's sessions still open

    shared_->fail_on("list_regions", 0);
    m->reload_policy();
    v = m->view();
    EXPECT_TRUE(v->reconcile_errors.empty()) << joined(v->reconcile_errors);
    EXPECT_TRUE(Contains(m->metrics_text(""), "\nrof_reconcile_errors 0\n"));
}

// One tenant the module refuses to create: the others are served, its
// calls are UNAVAILABLE, and the refusal is reported.
TEST_F(ManagerTest, TenantThatCannotBeCreatedLeavesTheOthersServed) {
    auto m = make_manager();
    shared_->fail_on("tenant_create:analytics", ENOSPC);
    ASSERT_NO_THROW(m->start());
    const auto v = m->view();
    EXPECT_EQ(v->tenant_id.count("analytics"), 0u);
    ASSERT_EQ(v->tenant_id.count("kv"), 1u);
    EXPECT_TRUE(fake_region(v->tenant_id.at("kv"), "table"));
    ASSERT_EQ(v->reconcile_errors.size(), 1u) << joined(v->reconcile_errors);
    EXPECT_TRUE(Contains(v->reconcile_errors[0], "tenant \"analytics\": could not be created: "));
    try {
        m->tenant_id("analytics");
        ADD_FAILURE() << "analytics has an id";
    } catch (const CallError& e) {
        EXPECT_EQ(e.code, grpc::StatusCode::UNAVAILABLE);
    }
}

// TENANT_LIST failing: the tenants rofd made are found by their stored
// ids (GET), none is made twice.
TEST_F(ManagerTest, TenantListThatFailsFallsBackToStoredIds) {
    started_manager().reset();
    const auto kv = fake_tenant("kv");
    ASSERT_TRUE(kv);

    auto m = make_manager();
    shared_->fail_on("list_tenants", ENOMEM);
    ASSERT_NO_THROW(m->start());
    const auto v = m->view();
    EXPECT_EQ(v->tenant_id.at("kv"), kv->id);
    EXPECT_EQ(v->tenant_id.count("analytics"), 1u);
    EXPECT_EQ(fake_->list_tenants().size(), 2u);
    ASSERT_EQ(v->reconcile_errors.size(), 1u) << joined(v->reconcile_errors);
    EXPECT_TRUE(Contains(v->reconcile_errors[0], "tenants: the module could not list them"));
}

TEST_F(ManagerTest, RestartWithTheModuleLoadedChangesNothing) {
    TicketKey key{};
    {
        auto m = started_manager();
        key = *m->store().ticket_key();
    }
    const auto tenants = fake_->list_tenants().size();
    const auto regions = fake_->list_regions().size();
    auto m = started_manager();
    EXPECT_TRUE(m->view()->drift.empty()) << joined(m->view()->drift);
    EXPECT_EQ(fake_->list_tenants().size(), tenants);
    EXPECT_EQ(fake_->list_regions().size(), regions);
    EXPECT_EQ(*m->store().ticket_key(), key);
}

TEST_F(ManagerTest, RotateTicketKeyStoresANewKey) {
    auto m = started_manager();
    const TicketKey before = *m->store().ticket_key();
    m->rotate_ticket_key();
    const TicketKey after = *m->store().ticket_key();
    EXPECT_NE(before, after);
    EXPECT_EQ(prepare(m->tenant_id("kv")), 0);
    m.reset();
    // And the next start keeps the rotated one.
    auto m2 = started_manager();
    EXPECT_EQ(*m2->store().ticket_key(), after);
}

TEST_F(ManagerTest, BrokenPolicyReloadChangesNothing) {
    auto m = started_manager();
    const auto before = m->view();
    write_tenant("kv", R"(name = "kv"
[quota]
region_bytes = "64MB"
)");
    try {
        m->reload_policy();
        FAIL() << "a broken policy was reloaded";
    } catch (const CallError& e) {
        EXPECT_EQ(e.code, grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_TRUE(std::regex_search(std::string(e.what()), std::regex(R"(kv\.toml:3:16: )")))
            << e.what();
        EXPECT_TRUE(Contains(e.what(), "the running one stays"));
    }
    const auto after = m->view();
    EXPECT_EQ(after->generation, before->generation);
    EXPECT_EQ(after->policy, before->policy);
    EXPECT_EQ(after->policy->find("kv")->quota.region_bytes, 64 * MiB);
}

TEST_F(ManagerTest, LoweredQuotaKeepsLiveObjectsAndIsApplied) {
    auto m = started_manager();
    const auto kv = m->tenant_id("kv");
    std::uint32_t s1 = 0, s2 = 0;
    ASSERT_EQ(prepare(kv, &s1), 0);
    ASSERT_EQ(prepare(kv, &s2), 0);
    ASSERT_EQ(fake_->connect_session(s1), 0u);
    ASSERT_EQ(fake_->connect_session(s2), 0u);

    std::string lowered = kKv;
    lowered.replace(lowered.find("sessions = 8"), 12, "sessions = 1");
    write_tenant("kv", lowered);
    const auto notes = m->reload_policy();

    EXPECT_TRUE(Contains(joined(notes),
                         "tenant \"kv\": quota.sessions 1 is below the 2 open: "
                         "they stay open, new ones are refused"));
    EXPECT_EQ(m->view()->generation, 2u);
    EXPECT_EQ(m->view()->policy->find("kv")->quota.sessions, 1u);
    EXPECT_EQ(fake_->get_tenant(kv)->quota.sessions, 1u);
    EXPECT_TRUE(fake_->get_session(s1));
    EXPECT_TRUE(fake_->get_session(s2));
}

TEST_F(ManagerTest, LoweredRegionQuotaBelowUsageIsANote) {
    auto m = started_manager();
    const auto kv = m->tenant_id("kv");
    fake_->region_create(kv, "big", 32 * MiB, ROF_ACCESS_READ);  // 52 MiB in all

    std::string lowered = kKv;
    lowered.replace(lowered.find("\"64MiB\""), 7, "\"32MiB\"");
    write_tenant("kv", lowered);
    const auto notes = m->reload_policy();
    EXPECT_TRUE(Contains(joined(notes),
                         "tenant \"kv\": quota.region_bytes 33554432 is below the "
                         "54525952 in use: regions stay, new ones are refused"));
    EXPECT_EQ(fake_->get_tenant(kv)->quota.region_bytes, 32 * MiB);
    EXPECT_TRUE(fake_region(kv, "big"));
}

// Issue 28: a tenant removed from policy with a session open is removing:
// it takes nothing new, keeps what it has, and the other tenants are not
// touched.
TEST_F(ManagerTest, TenantRemovedFromPolicyIsRemovingWhileASessionIsOpen) {
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    const auto kv = m->tenant_id("kv");
    std::uint32_t sid = 0;
    ASSERT_EQ(prepare(an, &sid), 0);
    remove_tenant("analytics");
    const auto notes = m->reload_policy();
    EXPECT_TRUE(Contains(joined(notes),
                         "tenant \"analytics\": removed from policy: it takes no new sessions, "
                         "regions or programs; destroyed with its objects when its last session "
                         "closes or in 60000 ms (limits.tenant_removal_grace_ms)"))
        << joined(notes);
    EXPECT_TRUE(fake_->get_tenant(an));
    EXPECT_TRUE(fake_->get_session(sid));
    const auto v = m->view();
    EXPECT_EQ(v->tenant_id.count("analytics"), 0u);
    EXPECT_EQ(v->name_of(an), "analytics");
    ASSERT_NE(v->removal("analytics"), nullptr);
    EXPECT_EQ(v->removal("analytics")->id, an);
    EXPECT_GT(v->removal("analytics")->deadline,
              std::chrono::steady_clock::now() + std::chrono::seconds(30));
    EXPECT_EQ(drift_with(*v, "\"analytics\""),
              "tenant \"analytics\": in the module, not in policy: being removed")
        << joined(v->drift);
    // Calls naming it are refused with why.
    Principal admin;
    admin.role = Principal::Role::admin;
    admin.authenticated = true;
    try {
        m->tenant_of(admin, "analytics");
        ADD_FAILURE() << "tenant_of accepted a removing tenant";
    } catch (const CallError& e) {
        EXPECT_EQ(e.code, grpc::StatusCode::FAILED_PRECONDITION);
        EXPECT_TRUE(Contains(e.what(), "tenant \"analytics\": being removed")) << e.what();
    }
    // A sweep before the deadline leaves it: its session is open.
    EXPECT_TRUE(m->sweep_removals().empty());
    EXPECT_TRUE(fake_->get_tenant(an));
    EXPECT_TRUE(fake_->get_tenant(kv));
    EXPECT_EQ(prepare(kv), 0);
}

// A restart finds the quotas the module kept and does not set them again
// (one ioctl per tenant, B8's restart); a quota the policy changed is set.
TEST_F(ManagerTest, ARestartSetsOnlyTheQuotasThatChanged) {
    {
        auto m = started_manager();
        EXPECT_EQ(shared_->calls("tenant_set_quota"), 2u);  // kv and analytics, created
    }
    {
        auto m = started_manager();
        EXPECT_EQ(shared_->calls("tenant_set_quota"), 0u);
        EXPECT_EQ(fake_tenant("kv")->quota.sessions, 8u);
    }
    write_tenant("kv", test::kv_toml({.quota = "sessions = 9\n"}));
    auto m = started_manager();
    EXPECT_EQ(shared_->calls("tenant_set_quota"), 1u);
    EXPECT_EQ(fake_tenant("kv")->quota.sessions, 9u);
}

// invoke_records rides with the quota: set at create, set again by a reload
// that changes it, and left alone by a restart that finds it as it was.
TEST_F(ManagerTest, InvokeRecordsAreSetWithTheQuotaAndReconciled) {
    write_tenant("kv", test::kv_toml({.head = "invoke_records = \"sample:10\"\n",
                                      .quota = "sessions = 8\n"}));
    {
        auto m = started_manager();
        EXPECT_EQ(fake_tenant("kv")->quota.invoke_records, 10u);
        EXPECT_EQ(fake_tenant("analytics")->quota.invoke_records,
                  std::uint32_t{ROF_INVOKE_RECORDS_ALL});
    }
    {
        auto m = started_manager();
        EXPECT_EQ(shared_->calls("tenant_set_quota"), 0u);
        write_tenant("kv", test::kv_toml({.head = "invoke_records = \"errors\"\n",
                                          .quota = "sessions = 8\n"}));
        m->reload_policy();
        EXPECT_EQ(shared_->calls("tenant_set_quota"), 1u);
        EXPECT_EQ(fake_tenant("kv")->quota.invoke_records,
                  std::uint32_t{ROF_INVOKE_RECORDS_ERRORS});
        EXPECT_EQ(fake_tenant("kv")->quota.sessions, 8u);
    }
    // Someone set it behind rofd's back: the restart's reconcile puts it back.
    rof_tenant_quota q = fake_tenant("kv")->quota;
    q.invoke_records = 3;
    fake_->tenant_set_quota(fake_tenant("kv")->id, q);
    auto m = started_manager();
    EXPECT_EQ(shared_->calls("tenant_set_quota"), 1u);
    EXPECT_EQ(fake_tenant("kv")->quota.invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ERRORS});
}

// A module older than ABI 0.10 has no invoke_records: rofd sets the quota
// without it (such a module refuses anything but 0 there), and a restart
// does not take the 0 it reads back for a difference.
TEST_F(ManagerTest, AnOlderModuleGetsNoInvokeRecords) {
    fake_->set_abi_minor(9);
    write_tenant(
        "kv", test::kv_toml({.head = "invoke_records = \"errors\"\n", .quota = "sessions = 8\n"}));
    {
        auto m = started_manager();
        EXPECT_FALSE(Contains(joined(m->view()->drift), "could not be applied"))
            << joined(m->view()->drift);
        EXPECT_EQ(fake_tenant("kv")->quota.invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ALL});
        EXPECT_EQ(fake_tenant("kv")->quota.sessions, 8u);
    }
    auto m = started_manager();
    EXPECT_EQ(shared_->calls("tenant_set_quota"), 0u);
    // Nor does a reload that changes only invoke_records.
    write_tenant("kv", test::kv_toml(
                           {.head = "invoke_records = \"sample:5\"\n", .quota = "sessions = 8\n"}));
    m->reload_policy();
    EXPECT_EQ(shared_->calls("tenant_set_quota"), 0u);
    EXPECT_EQ(fake_tenant("kv")->quota.invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ALL});
}

// A reload that removes many tenants destroys them in one sweep: each in
// the module, then all of them in one store transaction and one view.  One
// the module cannot destroy stays removing, in the store and the view, and
// does not hold the others back; the next sweep destroys it.
TEST_F(ManagerTest, ManyRemovedTenantsGoInOneSweepAndAFailureHoldsOnlyItself) {
    constexpr int n = 50;
    for (int i = 0; i < n; i++) {
        write_tenant("r" + std::to_string(i), "name = \"r" + std::to_string(i) + "\"\n");
    }
    auto m = started_manager();
    const auto stuck = m->tenant_id("r7");
    for (int i = 0; i < n; i++) {
        remove_tenant("r" + std::to_string(i));
    }
    shared_->fail_on("tenant_destroy:" + std::to_string(stuck), EIO);
    const auto notes = m->reload_policy();
    for (int i = 0; i < n; i++) {
        const std::string name = "r" + std::to_string(i);
        const bool gone = name != "r7";
        EXPECT_EQ(Contains(joined(notes), "tenant \"" + name + "\": destroyed (no session left)"),
                  gone)
            << name;
        EXPECT_EQ(fake_tenant(name).has_value(), !gone) << name;
        EXPECT_EQ(m->view()->removal(name) != nullptr, !gone) << name;
    }
    std::size_t stored = 0;
    for (const auto& t : m->store().tenants()) {
        stored += t.name.starts_with("r") ? 1 : 0;
        if (t.name.starts_with("r")) {
            EXPECT_EQ(t.name, "r7");
        }
    }
    EXPECT_EQ(stored, 1u);
    // The next sweep, with the module willing: r7 goes too.
    shared_->fail_on("tenant_destroy:" + std::to_string(stuck), 0);
    EXPECT_EQ(m->sweep_removals(), std::vector<std::string>{"r7"});
    EXPECT_FALSE(fake_tenant("r7"));
    EXPECT_EQ(m->view()->removal("r7"), nullptr);
    for (const auto& t : m->store().tenants()) {
        EXPECT_FALSE(t.name.starts_with("r")) << t.name;
    }
    EXPECT_TRUE(fake_tenant("kv"));
    EXPECT_TRUE(fake_tenant("analytics"));
}

// A reload journals its first lines_journalled_per_pass differences and notes one line each
// and the rest in one line, counted (rof_lines_not_journalled_total); its answer and
// GetStatus.drift keep them all.  Adding 150 tenants: 150 differences.  Removing them: 150
// notes of the reload's own and 150 differences of its reconciliation.
TEST_F(ManagerTest, AReloadJournalsItsFirstLinesAndCountsTheRest) {
    auto m = started_manager();
    EXPECT_EQ(m->lines_left_out(), 0u);
    constexpr int n = 150;
    static_assert(n > Manager::lines_journalled_per_pass);
    for (int i = 0; i < n; i++) {
        write_tenant("j" + std::to_string(i), "name = \"j" + std::to_string(i) + "\"\n");
    }
    auto notes = m->reload_policy();
    std::size_t created = 0;
    for (const auto& note : notes) {
        created += Contains(note, ": new in policy: created") ? 1 : 0;
    }
    EXPECT_EQ(created, std::size_t{n});
    EXPECT_EQ(m->view()->drift.size(), std::size_t{n});
    EXPECT_EQ(m->lines_left_out(), n - Manager::lines_journalled_per_pass);
    EXPECT_TRUE(Contains(m->metrics_text(""), "\nrof_lines_not_journalled_total 50\n"));

    for (int i = 0; i < n; i++) {
        remove_tenant("j" + std::to_string(i));
    }
    notes = m->reload_policy();
    EXPECT_EQ(m->lines_left_out(), 3 * (n - Manager::lines_journalled_per_pass));
    EXPECT_TRUE(Contains(joined(notes), "tenant \"j149\": destroyed (no session left)"));
    EXPECT_FALSE(fake_tenant("j149"));
}

// A reload compares the tenants' usage with their new quotas from one LIST, not a GET of
// each (10,000 ioctls for 10,000 tenants, B8).
TEST_F(ManagerTest, AReloadListsTheTenantsOnceNotAGetEach) {
    for (int i = 0; i < 50; i++) {
        write_tenant("g" + std::to_string(i), "name = \"g" + std::to_string(i) + "\"\n");
    }
    auto m = started_manager();
    const auto lists = shared_->calls("list_tenants");
    write_tenant("kv", test::kv_toml({.quota = "sessions = 9\n"}));
    m->reload_policy();
    EXPECT_EQ(shared_->calls("get_tenant"), 0u);
    EXPECT_EQ(shared_->calls("list_tenants") - lists, 2u);  // the reload's, the reconciliation's
    EXPECT_EQ(fake_tenant("kv")->quota.sessions, 9u);
}

// With no session left, the removal does not wait for the grace: the
// module tenant, its regions and its stored rows are gone at the reload,
// and the name comes back empty.
TEST_F(ManagerTest, TenantRemovedWithoutSessionsIsDestroyedAndComesBackEmpty) {
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    const auto kv = m->tenant_id("kv");
    // An API region (not declared), with its row.
    fake_->region_create(an, "extra", 4096, ROF_ACCESS_READ);
    StoredRegion row;
    row.tenant = "analytics";
    row.name = "extra";
    row.size = 4096;
    row.access = ROF_ACCESS_READ;
    row.state = RowState::committed;
    m->store().put_region(row);
    m->store().put_idempotent("tenant:analytics", "CreateRegion", "k1",
                              Store::Idempotent{"h", "", 0, "", "analytics"});
    m->store().put_idempotent("tenant:kv", "CreateRegion", "k1",
                              Store::Idempotent{"h", "", 0, "", "kv"});
    // An admin's calls on each tenant's objects, and one naming none.
    m->store().put_idempotent("admin", "CreateRegion", "a1",
                              Store::Idempotent{"h", "", 0, "", "analytics"});
    m->store().put_idempotent("admin", "CreateRegion", "a2",
                              Store::Idempotent{"h", "", 0, "", "kv"});
    m->store().put_idempotent("admin", "DestroyTenant", "a3",
                              Store::Idempotent{"h", "", 0, "", ""});

    remove_tenant("analytics");
    const auto notes = m->reload_policy();
    EXPECT_TRUE(Contains(joined(notes), "tenant \"analytics\": destroyed (no session left)"))
        << joined(notes);
    EXPECT_FALSE(fake_->get_tenant(an));
    for (const auto& r : fake_->list_regions()) {
        EXPECT_NE(r.tenant, an) << abi_name(r.name);
    }
    for (const auto& t : m->store().tenants()) {
        EXPECT_NE(t.name, "analytics");
    }
    for (const auto& r : m->store().regions()) {
        EXPECT_NE(r.tenant, "analytics") << r.name;
    }
    EXPECT_FALSE(m->store().idempotent("tenant:analytics", "CreateRegion", "k1"));
    EXPECT_TRUE(m->store().idempotent("tenant:kv", "CreateRegion", "k1"));
    EXPECT_FALSE(m->store().idempotent("admin", "CreateRegion", "a1"))
        << "an admin's answer about the destroyed tenant was kept";
    EXPECT_TRUE(m->store().idempotent("admin", "CreateRegion", "a2"));
    EXPECT_TRUE(m->store().idempotent("admin", "DestroyTenant", "a3"));
    EXPECT_EQ(m->view()->removal("analytics"), nullptr);
    EXPECT_TRUE(fake_->get_tenant(kv));
    EXPECT_TRUE(fake_region(kv, "table"));

    write_tenant("analytics", kAnalytics);
    m->reload_policy();
    const auto again = fake_tenant("analytics");
    ASSERT_TRUE(again);
    EXPECT_FALSE(fake_region(again->id, "extra")) << "the re-added name inherited a region";
    for (const auto& r : m->store().regions()) {
        EXPECT_NE(r.name, "extra");
    }
}

// Grace 0: a removed tenant's open sessions do not keep it.
TEST_F(ManagerTest, TenantRemovedWithGraceZeroIsDestroyedAtOnce) {
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    std::uint32_t sid = 0;
    ASSERT_EQ(prepare(an, &sid), 0);
    write_daemon("[limits]\ntenant_removal_grace_ms = 0\n");
    remove_tenant("analytics");
    m->reload_policy();
    EXPECT_FALSE(fake_->get_tenant(an));
    EXPECT_FALSE(fake_->get_session(sid));
    EXPECT_EQ(m->view()->removal("analytics"), nullptr);
}

// The operator's undo: the name back in policy during the grace keeps
// the tenant, its id and its objects.
TEST_F(ManagerTest, TenantReAddedDuringItsGraceIsKept) {
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    ASSERT_EQ(prepare(an), 0);
    fake_->region_create(an, "extra", 4096, ROF_ACCESS_READ);
    remove_tenant("analytics");
    m->reload_policy();
    ASSERT_NE(m->view()->removal("analytics"), nullptr);

    write_tenant("analytics", kAnalytics);
    const auto notes = m->reload_policy();
    EXPECT_TRUE(Contains(joined(notes),
                         "tenant \"analytics\": back in policy: its removal is "
                         "cancelled, it keeps its objects"))
        << joined(notes);
    EXPECT_EQ(m->view()->removal("analytics"), nullptr);
    EXPECT_EQ(m->tenant_id("analytics"), an);
    EXPECT_TRUE(fake_region(an, "extra"));
    EXPECT_TRUE(m->sweep_removals().empty());
    EXPECT_TRUE(fake_->get_tenant(an));
}

// DestroyTenant's core: refused for a policy tenant and an unknown name;
// grace 0 destroys a removing tenant whose session is still open.
TEST_F(ManagerTest, DestroyTenant) {
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    ASSERT_EQ(prepare(an), 0);
    auto code_of = [&](const std::string& name, std::chrono::milliseconds grace) {
        try {
            m->destroy_tenant(name, grace);
        } catch (const CallError& e) {
            return e.code;
        }
        return grpc::StatusCode::OK;
    };
    EXPECT_EQ(code_of("kv", std::chrono::milliseconds(0)), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(fake_->get_tenant(m->tenant_id("kv")));
    EXPECT_EQ(code_of("nobody", std::chrono::milliseconds(0)), grpc::StatusCode::NOT_FOUND);

    remove_tenant("analytics");
    m->reload_policy();
    // A longer grace: still removing, with the new deadline.
    const auto later = m->destroy_tenant("analytics", std::chrono::hours(2));
    ASSERT_TRUE(later);
    EXPECT_GT(*later, std::chrono::steady_clock::now() + std::chrono::minutes(90));
    EXPECT_EQ(m->view()->removal("analytics")->deadline, *later);
    EXPECT_TRUE(fake_->get_tenant(an));

    EXPECT_FALSE(m->destroy_tenant("analytics", std::chrono::milliseconds(0)));
    EXPECT_FALSE(fake_->get_tenant(an));
    EXPECT_EQ(m->view()->removal("analytics"), nullptr);
    EXPECT_EQ(code_of("analytics", std::chrono::milliseconds(0)), grpc::StatusCode::NOT_FOUND);
}

// Rows of a tenant neither policy nor the module has (the module was
// reloaded after the tenant left the policy): dropped at start, so the
// name, re-added, does not get them back.
TEST_F(ManagerTest, StoredRowsOfATenantGoneFromPolicyAndModuleAreDropped) {
    {
        Store s(db_path());
        s.put_tenant(StoredTenant{"gone", 9});
        StoredRegion r;
        r.tenant = "gone";
        r.name = "data";
        r.size = 8192;
        r.access = ROF_ACCESS_READ;
        r.state = RowState::committed;
        s.put_region(r);
    }
    auto m = started_manager();
    for (const auto& t : m->store().tenants()) {
        EXPECT_NE(t.name, "gone");
    }
    EXPECT_TRUE(m->store().regions().empty());
    EXPECT_EQ(m->view()->removal("gone"), nullptr);

    write_tenant("gone", "name = \"gone\"\n\n[identity]\nuids = [4500]\n");
    m->reload_policy();
    const auto t = fake_tenant("gone");
    ASSERT_TRUE(t);
    EXPECT_FALSE(fake_region(t->id, "data"));
}

// Across a restart the grace starts again: the removal is not stored.
TEST_F(ManagerTest, RemovingTenantGetsTheGraceAgainAfterARestart) {
    std::uint32_t an = 0;
    {
        auto m = started_manager();
        an = m->tenant_id("analytics");
        ASSERT_EQ(prepare(an), 0);
        remove_tenant("analytics");
        m->reload_policy();
        m->destroy_tenant("analytics", std::chrono::hours(2));
        m->stop();
    }
    auto m = started_manager();
    const auto v = m->view();
    const auto* r = v->removal("analytics");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->id, an);
    EXPECT_TRUE(fake_->get_tenant(an));
    // The policy's 60 s again, not the 2 h DestroyTenant set.
    EXPECT_LT(r->deadline, std::chrono::steady_clock::now() + std::chrono::minutes(5));
}

// The removal deadline is kept on the monotonic clock (the test's own
// here): the sweep destroys the tenant when that clock passes it, whatever
// the wall clock says, and the deadline is reported as the wall-clock time
// that is as far ahead of now.
TEST_F(ManagerTest, RemovalDeadlineIsOnTheMonotonicClock) {
    auto clock =
        std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    clock_ = [clock] { return *clock; };
    auto m = started_manager();
    const auto an = m->tenant_id("analytics");
    ASSERT_EQ(prepare(an), 0);
    remove_tenant("analytics");
    m->reload_policy();
    const auto* r = m->view()->removal("analytics");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->deadline, *clock + std::chrono::milliseconds(60000));
    const auto reported = m->wall_time(r->deadline);
    const auto wall = std::chrono::system_clock::now();
    EXPECT_GT(reported, wall + std::chrono::seconds(59));
    EXPECT_LE(reported, wall + std::chrono::seconds(60));

    *clock += std::chrono::milliseconds(59999);
    EXPECT_TRUE(m->sweep_removals().empty());
    EXPECT_TRUE(fake_->get_tenant(an));
    *clock += std::chrono::milliseconds(1);
    EXPECT_EQ(m->sweep_removals(), std::vector<std::string>{"analytics"});
    EXPECT_FALSE(fake_->get_tenant(an));
}

TEST_F(ManagerTest, NewTenantInPolicyIsCreatedOnReload) {
    auto m = started_manager();
    write_tenant("web", R"(name = "web"
[[regions]]
name = "pages"
size = 8192
access = ["read"]
)");
    const auto notes = m->reload_policy();
    const auto web = fake_tenant("web");
    ASSERT_TRUE(web);
    EXPECT_EQ(m->tenant_id("web"), web->id);
    EXPECT_TRUE(fake_region(web->id, "pages"));
    EXPECT_TRUE(Contains(joined(notes), "tenant \"web\": new in policy: created"));
}

TEST_F(ManagerTest, Idempotency) {
    auto m = started_manager();
    Principal kv;
    kv.role = Principal::Role::tenant;
    kv.tenant = "kv";
    kv.authenticated = true;

    rof::v1::CreateRegionRequest req;
    req.set_name("cache");
    req.set_size(8192);
    req.set_idempotency_key("k1");
    const auto id = Manager::idempotency(kv, "CreateRegion", req, "k1", "kv");

    rof::v1::Region resp;
    EXPECT_FALSE(m->replay(id, &resp));

    rof::v1::Region answer;
    answer.set_tenant("kv");
    answer.set_name("cache");
    answer.set_size(8192);
    answer.set_id(3);
    m->store().transaction([&] { m->record(id, answer); });

    const auto again = m->replay(id, &resp);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->ok()) << again->error_message();
    EXPECT_EQ(resp.SerializeAsString(), answer.SerializeAsString());

    // The same key for another body.
    rof::v1::CreateRegionRequest other = req;
    other.set_size(16384);
    rof::v1::Region unused;
    const auto conflict =
        m->replay(Manager::idempotency(kv, "CreateRegion", other, "k1", "kv"), &unused);
    ASSERT_TRUE(conflict);
    EXPECT_EQ(conflict->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Contains(conflict->error_message(), "\"k1\""));

    // Keys are per principal and per method.
    Principal admin;
    admin.role = Principal::Role::admin;
    EXPECT_FALSE(m->replay(Manager::idempotency(admin, "CreateRegion", req, "k1", "kv"), &unused));
    EXPECT_FALSE(m->replay(Manager::idempotency(kv, "DeleteRegion", req, "k1", "kv"), &unused));
    // No key: never replayed.
    EXPECT_FALSE(m->replay(Manager::idempotency(kv, "CreateRegion", req, "", "kv"), &unused));

    // A record in a transaction that fails is gone with it.
    const auto id2 = Manager::idempotency(kv, "CreateRegion", req, "k2", "kv");
    EXPECT_THROW(m->store().transaction([&] {
        m->record(id2, answer);
        throw std::runtime_error("the ioctl failed");
    }),
                 std::runtime_error);
    EXPECT_FALSE(m->replay(id2, &unused));
}

// One caller's flood of refusals is journalled at most at its [limits]
// refusals_journalled_per_s (issue 28, item 4); the rest are counted, and
// other callers' refusals are journalled as before.  The clock is the
// test's own: nothing here depends on timing.
TEST_F(ManagerTest, ACallersRefusalsAreJournalledAtItsRate) {
    write_daemon("[limits]\nrefusals_journalled_per_s = 3\n");
    auto clock =
        std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    ManagerOptions o;
    o.daemon_file = dir_.file("rofd.toml");
    o.tenants_dir = tenants_dir();
    o.state_dir = state_dir();
    o.clock = [clock] { return *clock; };
    Manager m(o, std::make_unique<test::SharedModule>(fake_));
    m.start();
    ASSERT_TRUE(m.ready());

    Principal flood;
    flood.authenticated = true;
    flood.uid = 1234;
    const grpc::Status refused(grpc::StatusCode::PERMISSION_DENIED, "no role");
    for (int i = 0; i < 10; ++i) {
        flood.pid = 100 + i;  // one caller, whatever its process
        m.audit_control(flood, "CreateRegion", refused, "tenant \"kv\"");
    }
    EXPECT_EQ(m.refusals_left_out(), 7U);  // a burst of 3, then none in the same instant

    Principal other = flood;
    other.uid = 1235;
    m.audit_control(other, "CreateRegion", refused, "tenant \"kv\"");
    Principal subject;
    subject.authenticated = true;
    subject.subject = "CN=client";
    m.audit_control(subject, "CreateRegion", refused, "tenant \"kv\"");
    EXPECT_EQ(m.refusals_left_out(), 7U);

    // A second later the caller has a second's worth again.
    *clock += std::chrono::seconds(1);
    for (int i = 0; i < 4; ++i) {
        m.audit_control(flood, "CreateRegion", refused, "tenant \"kv\"");
    }
    EXPECT_EQ(m.refusals_left_out(), 8U);
    // Calls that were not refused are not journalled, nor counted.
    m.audit_control(flood, "CreateRegion", grpc::Status::OK, "tenant \"kv\"");
    EXPECT_EQ(m.refusals_left_out(), 8U);
    EXPECT_TRUE(Contains(m.metrics_text(""), "\nrof_refusals_not_journalled_total 8\n"));
    EXPECT_EQ(m.metrics_text("kv").find("rof_refusals_not_journalled_total"), std::string::npos);
    m.stop();
}

TEST_F(ManagerTest, QuarantineClosesTheSession) {
    auto m = started_manager();
    const auto kv = m->tenant_id("kv");
    std::uint32_t s = 0;
    ASSERT_EQ(prepare(kv, &s), 0);
    ASSERT_EQ(fake_->connect_session(s), 0u);
    m->quarantine(kv, s, "10 faults in 60 s");
    EXPECT_FALSE(fake_->get_session(s));
    // Already gone: no error.
    EXPECT_NO_THROW(m->quarantine(kv, s, "again"));
}

}  // namespace
}  // namespace rofd
