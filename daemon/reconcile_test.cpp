// SPDX-License-Identifier: MIT
// plan_reconcile() as pure logic: a policy, the store's rows and the
// module's lists as rof.ko would report them, and the Plan that comes out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "policy.h"
#include "reconcile.h"
#include "test_tenants.h"

namespace rofd {
namespace {

constexpr std::uint64_t MiB = 1ULL << 20;

// kv: "table" (16 MiB, rwa, one free list) and "log" (4 MiB, rw).
// analytics: no region.
const std::string kKv = test::kv_toml();
const char* const kAnalytics = test::kAnalyticsToml;

rof::policy::Policy make_policy(const std::vector<std::pair<std::string, std::string>>& tenants = {
                                    {"kv.toml", kKv}, {"analytics.toml", kAnalytics}}) {
    auto r = rof::policy::parse("", "rofd.toml", tenants);
    if (!r.policy) {
        ADD_FAILURE() << r.error_text();
        return {};
    }
    return std::move(*r.policy);
}

template <std::size_t N>
void set_name(char (&dst)[N], const std::string& s) {
    std::snprintf(dst, N, "%s", s.c_str());
}

rof_tenant_info tenant(std::uint32_t id, const std::string& name) {
    rof_tenant_info t{};
    set_name(t.name, name);
    t.id = id;
    return t;
}

rof_region_info region(std::uint32_t id, std::uint32_t tenant, const std::string& name,
                       std::uint64_t size, std::uint32_t access) {
    rof_region_info r{};
    set_name(r.name, name);
    r.id = id;
    r.tenant = tenant;
    r.size = size;
    r.access = access;
    return r;
}

rof_freelist_info freelist(std::uint32_t id, std::uint32_t region, std::uint32_t tenant,
                           std::uint32_t block_size, std::uint64_t offset, std::uint32_t count) {
    rof_freelist_info f{};
    f.id = id;
    f.region = region;
    f.tenant = tenant;
    f.block_size = block_size;
    f.offset = offset;
    f.count = count;
    return f;
}

rof_prog_info prog(std::uint32_t tenant, std::uint64_t tag, const std::string& name) {
    rof_prog_info p{};
    set_name(p.name, name);
    p.tenant = tenant;
    p.tag = tag;
    return p;
}

StoredRegion stored_region(const std::string& tenant, const std::string& name, std::uint64_t size,
                           RowState state, std::vector<StoredFreeList> fls = {}) {
    StoredRegion r;
    r.tenant = tenant;
    r.name = name;
    r.size = size;
    r.access = ROF_ACCESS_READ | ROF_ACCESS_WRITE;
    r.freelists = std::move(fls);
    r.state = state;
    return r;
}

StoredProgram stored_prog(const std::string& tenant, const std::string& name, std::uint64_t tag,
                          RowState state) {
    StoredProgram p;
    p.tenant = tenant;
    p.name = name;
    p.tag = tag;
    p.state = state;
    return p;
}

constexpr std::uint32_t kRwa = ROF_ACCESS_READ | ROF_ACCESS_WRITE | ROF_ACCESS_ATOMIC;
constexpr std::uint32_t kRw = ROF_ACCESS_READ | ROF_ACCESS_WRITE;

// The module exactly as kKv/kAnalytics declare it: analytics 1, kv 2.
ModuleState matching_module() {
    ModuleState m;
    m.tenants = {tenant(1, "analytics"), tenant(2, "kv")};
    m.regions = {region(1, 2, "table", 16 * MiB, kRwa), region(2, 2, "log", 4 * MiB, kRw)};
    m.freelists = {freelist(1, 1, 2, 64, 4096, 1024)};
    return m;
}

StoreState matching_store() {
    StoreState s;
    s.tenants = {{"analytics", 1}, {"kv", 2}};
    return s;
}

// The drift line that mentions @needle, or "" (so a failure prints them all).
std::string drift_with(const Plan& p, const std::string& needle) {
    for (const auto& d : p.drift) {
        if (d.find(needle) != std::string::npos) {
            return d;
        }
    }
    return "";
}

std::string all_drift(const Plan& p) {
    std::string out;
    for (const auto& d : p.drift) {
        out += d + "\n";
    }
    return out;
}

const Plan::Tenant* plan_tenant(const Plan& p, const std::string& name) {
    for (const auto& t : p.tenants) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

const Plan::Region* plan_region(const Plan& p, const std::string& tenant, const std::string& name) {
    for (const auto& r : p.create_regions) {
        if (r.tenant == tenant && r.name == name) {
            return &r;
        }
    }
    return nullptr;
}

TEST(Reconcile, EmptyModuleCreatesEveryTenantAndDeclaredRegion) {
    const auto pol = make_policy();
    const Plan p = plan_reconcile(pol, {}, {});

    ASSERT_EQ(p.tenants.size(), 2u);
    for (const auto& t : p.tenants) {
        EXPECT_TRUE(t.create) << t.name;
        EXPECT_EQ(t.id, 0u) << t.name << ": no stored id, so the module picks";
    }
    ASSERT_EQ(p.create_regions.size(), 2u);
    const auto* table = plan_region(p, "kv", "table");
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(table->size, 16 * MiB);
    EXPECT_EQ(table->access, kRwa);
    EXPECT_TRUE(table->from_policy);
    ASSERT_EQ(table->freelists.size(), 1u);
    EXPECT_EQ(table->freelists[0].block_size, 64u);
    EXPECT_EQ(table->freelists[0].offset, 4096u);
    EXPECT_EQ(table->freelists[0].count, 1024u);
    const auto* log = plan_region(p, "kv", "log");
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->size, 4 * MiB);
    EXPECT_EQ(log->access, kRw);
    EXPECT_TRUE(log->freelists.empty());

    EXPECT_TRUE(p.load_programs.empty());
    EXPECT_TRUE(p.commit_regions.empty());
    EXPECT_TRUE(p.drop_regions.empty());
    EXPECT_TRUE(p.create_freelists.empty());
    EXPECT_NE(drift_with(p, "tenant \"kv\": new in policy: created"), "") << all_drift(p);
    EXPECT_NE(drift_with(p, "tenant \"analytics\": new in policy: created"), "") << all_drift(p);
}

TEST(Reconcile, EmptyModuleReusesStoredIdsWhenFree) {
    const auto pol = make_policy();
    StoreState s;
    s.tenants = {{"analytics", 7}, {"kv", 3}};
    const Plan p = plan_reconcile(pol, s, {});

    const auto* kv = plan_tenant(p, "kv");
    const auto* an = plan_tenant(p, "analytics");
    ASSERT_NE(kv, nullptr);
    ASSERT_NE(an, nullptr);
    EXPECT_TRUE(kv->create);
    EXPECT_EQ(kv->id, 3u);
    EXPECT_TRUE(an->create);
    EXPECT_EQ(an->id, 7u);
    EXPECT_NE(drift_with(p, "tenant \"kv\": missing from the module: recreated"), "")
        << all_drift(p);
    EXPECT_TRUE(p.store_tenants.empty());
}

TEST(Reconcile, StoredIdTakenByAnotherModuleTenantIsNotReused) {
    const auto pol = make_policy();
    StoreState s;
    s.tenants = {{"analytics", 7}, {"kv", 3}};
    ModuleState m;
    m.tenants = {tenant(3, "intruder")};
    const Plan p = plan_reconcile(pol, s, m);

    const auto* kv = plan_tenant(p, "kv");
    ASSERT_NE(kv, nullptr);
    EXPECT_TRUE(kv->create);
    EXPECT_EQ(kv->id, 0u) << "id 3 belongs to \"intruder\" now";
    EXPECT_EQ(plan_tenant(p, "analytics")->id, 7u);
    EXPECT_NE(drift_with(p, "tenant \"intruder\": in the module, not in policy: left alone"), "")
        << all_drift(p);
}

TEST(Reconcile, TwoStoredTenantsWithOneIdGetItOnce) {
    // A damaged or hand-edited store: both rows name id 5.
    const auto pol = make_policy();
    StoreState s;
    s.tenants = {{"analytics", 5}, {"kv", 5}};
    const Plan p = plan_reconcile(pol, s, {});
    EXPECT_EQ(plan_tenant(p, "analytics")->id, 5u);
    EXPECT_EQ(plan_tenant(p, "kv")->id, 0u);
}

TEST(Reconcile, MatchingModuleIsAnEmptyPlan) {
    const auto pol = make_policy();
    const Plan p = plan_reconcile(pol, matching_store(), matching_module());

    ASSERT_EQ(p.tenants.size(), 2u);
    EXPECT_FALSE(plan_tenant(p, "kv")->create);
    EXPECT_EQ(plan_tenant(p, "kv")->id, 2u);
    EXPECT_FALSE(plan_tenant(p, "analytics")->create);
    EXPECT_EQ(plan_tenant(p, "analytics")->id, 1u);
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_TRUE(p.create_freelists.empty());
    EXPECT_TRUE(p.load_programs.empty());
    EXPECT_TRUE(p.commit_regions.empty());
    EXPECT_TRUE(p.drop_regions.empty());
    EXPECT_TRUE(p.commit_programs.empty());
    EXPECT_TRUE(p.drop_programs.empty());
    EXPECT_TRUE(p.store_tenants.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p);
}

TEST(Reconcile, ModuleTenantWithAnotherIdThanStoredIsRecorded) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.tenants[1].id = 9;  // kv had 9; the module (loaded by hand?) says 2
    const Plan p = plan_reconcile(pol, s, matching_module());
    ASSERT_EQ(p.store_tenants.size(), 1u);
    EXPECT_EQ(p.store_tenants[0].name, "kv");
    EXPECT_EQ(p.store_tenants[0].id, 2u);
    EXPECT_EQ(plan_tenant(p, "kv")->id, 2u);
}

TEST(Reconcile, ModuleTenantNotInPolicyIsLeftAlone) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.tenants.push_back(tenant(3, "stray"));
    m.regions.push_back(region(3, 3, "scratch", 4096, kRw));
    const Plan p = plan_reconcile(pol, matching_store(), m);

    EXPECT_EQ(p.tenants.size(), 2u) << "only policy tenants";
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_EQ(drift_with(p, "\"stray\""),
              "tenant \"stray\": in the module, not in policy: left alone")
        << all_drift(p);
    // Its region is left alone with it, not adopted.
    EXPECT_EQ(drift_with(p, "\"scratch\""), "") << all_drift(p);
    EXPECT_EQ(p.drift.size(), 1u) << all_drift(p);
}

TEST(Reconcile, DeclaredRegionOfAnotherSizeIsDriftNotRecreated) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.regions[1].size = 8 * MiB;  // kv/log
    const Plan p = plan_reconcile(pol, matching_store(), m);

    EXPECT_TRUE(p.create_regions.empty());
    const std::string d = drift_with(p, "region \"log\"");
    EXPECT_NE(d.find("tenant \"kv\": region \"log\""), std::string::npos) << d;
    EXPECT_NE(d.find("4194304 bytes"), std::string::npos) << d;
    EXPECT_NE(d.find("8388608 bytes"), std::string::npos) << d;
    EXPECT_NE(d.find("kept the module's"), std::string::npos) << d;
    EXPECT_EQ(p.drift.size(), 1u) << all_drift(p);
}

TEST(Reconcile, DeclaredFreeListMissingFromALiveRegionIsDriftOnly) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.freelists.clear();
    const Plan p = plan_reconcile(pol, matching_store(), m);
    EXPECT_TRUE(p.create_freelists.empty());
    EXPECT_TRUE(p.create_regions.empty());
    const std::string d = drift_with(p, "free list");
    EXPECT_NE(d.find("tenant \"kv\": region \"table\": free list at 4096 (1024 x 64 bytes)"),
              std::string::npos)
        << all_drift(p);
}

TEST(Reconcile, DeclaredRegionMissingFromALiveTenantIsCreated) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.regions.pop_back();  // kv/log
    const Plan p = plan_reconcile(pol, matching_store(), m);
    ASSERT_EQ(p.create_regions.size(), 1u);
    EXPECT_EQ(p.create_regions[0].name, "log");
    EXPECT_EQ(drift_with(p, "\"log\""),
              "tenant \"kv\": region \"log\": declared, missing from the module: created")
        << all_drift(p);
}

TEST(Reconcile, CommittedStoredRegionMissingIsRecreatedContentsLost) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.regions.push_back(
        stored_region("kv", "cache", 8192, RowState::committed, {StoredFreeList{32, 0, 10}}));
    const Plan p = plan_reconcile(pol, s, matching_module());

    ASSERT_EQ(p.create_regions.size(), 1u);
    const auto& r = p.create_regions[0];
    EXPECT_EQ(r.tenant, "kv");
    EXPECT_EQ(r.name, "cache");
    EXPECT_EQ(r.size, 8192u);
    EXPECT_FALSE(r.from_policy);
    ASSERT_EQ(r.freelists.size(), 1u);
    EXPECT_EQ(r.freelists[0].block_size, 32u);
    EXPECT_EQ(drift_with(p, "\"cache\""),
              "tenant \"kv\": region \"cache\": missing from the module: recreated, contents lost")
        << all_drift(p);
}

TEST(Reconcile, CommittedStoredRegionPresentIsQuiet) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.regions.push_back(stored_region("kv", "cache", 8192, RowState::committed));
    ModuleState m = matching_module();
    m.regions.push_back(region(3, 2, "cache", 8192, kRw));
    const Plan p = plan_reconcile(pol, s, m);
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p);
}

TEST(Reconcile, IntentRegionPresentIsCommittedWithItsMissingFreeLists) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.regions.push_back(stored_region("kv", "cache", 8192, RowState::intent,
                                      {StoredFreeList{32, 0, 10}, StoredFreeList{64, 1024, 8}}));
    ModuleState m = matching_module();
    m.regions.push_back(region(3, 2, "cache", 8192, kRw));
    m.freelists.push_back(freelist(2, 3, 2, 32, 0, 10));  // the first list made it
    const Plan p = plan_reconcile(pol, s, m);

    ASSERT_EQ(p.commit_regions.size(), 1u);
    EXPECT_EQ(p.commit_regions[0].tenant, "kv");
    EXPECT_EQ(p.commit_regions[0].name, "cache");
    ASSERT_EQ(p.create_freelists.size(), 1u);
    EXPECT_EQ(p.create_freelists[0].tenant, "kv");
    EXPECT_EQ(p.create_freelists[0].region, "cache");
    EXPECT_EQ(p.create_freelists[0].freelist.offset, 1024u);
    EXPECT_EQ(p.create_freelists[0].freelist.block_size, 64u);
    EXPECT_TRUE(p.drop_regions.empty());
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p) << "(settled, not adopted)";
}

TEST(Reconcile, IntentRegionAbsentIsDropped) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.regions.push_back(stored_region("kv", "cache", 8192, RowState::intent));
    const Plan p = plan_reconcile(pol, s, matching_module());
    ASSERT_EQ(p.drop_regions.size(), 1u);
    EXPECT_EQ(p.drop_regions[0].tenant, "kv");
    EXPECT_EQ(p.drop_regions[0].name, "cache");
    EXPECT_TRUE(p.commit_regions.empty());
    EXPECT_TRUE(p.create_regions.empty()) << "an intent is not recreated";
}

TEST(Reconcile, IntentProgramPresentIsCommittedAbsentDropped) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.programs.push_back(stored_prog("kv", "get", 0x11, RowState::intent));
    s.programs.push_back(stored_prog("kv", "put", 0x22, RowState::intent));
    ModuleState m = matching_module();
    m.progs.push_back(prog(2, 0x11, "get"));
    const Plan p = plan_reconcile(pol, s, m);

    ASSERT_EQ(p.commit_programs.size(), 1u);
    EXPECT_EQ(p.commit_programs[0].tenant, "kv");
    EXPECT_EQ(p.commit_programs[0].tag, 0x11u);
    ASSERT_EQ(p.drop_programs.size(), 1u);
    EXPECT_EQ(p.drop_programs[0].tenant, "kv");
    EXPECT_EQ(p.drop_programs[0].tag, 0x22u);
    EXPECT_TRUE(p.load_programs.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p);
}

TEST(Reconcile, CommittedProgramMissingIsLoaded) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.programs.push_back(stored_prog("kv", "get", 0xabc, RowState::committed));
    s.programs.push_back(stored_prog("kv", "put", 0xdef, RowState::committed));
    ModuleState m = matching_module();
    m.progs.push_back(prog(2, 0xdef, "put"));
    const Plan p = plan_reconcile(pol, s, m);

    ASSERT_EQ(p.load_programs.size(), 1u);
    EXPECT_EQ(p.load_programs[0].name, "get");
    EXPECT_EQ(p.load_programs[0].tag, 0xabcu);
    EXPECT_EQ(drift_with(p, "\"get\""),
              "tenant \"kv\": program \"get\" (tag abc): missing from the module: reloaded")
        << all_drift(p);
    EXPECT_EQ(p.drift.size(), 1u) << all_drift(p);
}

TEST(Reconcile, ProgramOfATenantGoneFromPolicyIsNotLoaded) {
    const auto pol = make_policy({{"kv.toml", kKv}});
    StoreState s;
    s.tenants = {{"kv", 2}, {"analytics", 1}};
    s.programs.push_back(stored_prog("analytics", "scan", 0x5, RowState::committed));
    ModuleState m = matching_module();
    const Plan p = plan_reconcile(pol, s, m);
    EXPECT_TRUE(p.load_programs.empty());
    // rofd made it (its state has it): it is being removed, not left alone.
    EXPECT_NE(drift_with(p, "tenant \"analytics\": in the module, not in policy: being removed"),
              "")
        << all_drift(p);
}

TEST(Reconcile, ProgramOnlyInTheModuleIsLeftAlone) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.progs.push_back(prog(2, 0xbeef, "rogue"));
    const Plan p = plan_reconcile(pol, matching_store(), m);
    EXPECT_TRUE(p.load_programs.empty());
    EXPECT_TRUE(p.drop_programs.empty());
    EXPECT_EQ(drift_with(p, "beef"),
              "tenant \"kv\": program tag beef: loaded outside rofd: left alone")
        << all_drift(p);
}

TEST(Reconcile, ModuleRegionOfAKnownTenantIsAdopted) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.regions.push_back(region(3, 2, "extra", 4096, kRw));
    const Plan p = plan_reconcile(pol, matching_store(), m);
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_EQ(drift_with(p, "\"extra\""),
              "tenant \"kv\": region \"extra\": in the module only: adopted as it is")
        << all_drift(p);
    EXPECT_EQ(p.drift.size(), 1u) << all_drift(p);
}

TEST(Reconcile, ObjectsOfUnknownModuleTenantIdsAreSkipped) {
    // Lists are not one snapshot: a region or program can name a tenant
    // the tenant list did not have.
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.regions.push_back(region(9, 42, "orphan", 4096, kRw));
    m.freelists.push_back(freelist(9, 9, 42, 64, 0, 1));
    m.progs.push_back(prog(42, 0x1, "orphan"));
    const Plan p = plan_reconcile(pol, matching_store(), m);
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p);
}

TEST(Reconcile, StoredTenantGoneFromPolicyAndModuleIsReported) {
    const auto pol = make_policy({{"kv.toml", kKv}});
    StoreState s;
    s.tenants = {{"kv", 2}, {"old", 5}};
    s.regions.push_back(stored_region("old", "data", 4096, RowState::committed));
    ModuleState m;
    m.tenants = {tenant(2, "kv")};
    m.regions = {region(1, 2, "table", 16 * MiB, kRwa), region(2, 2, "log", 4 * MiB, kRw)};
    m.freelists = {freelist(1, 1, 2, 64, 4096, 1024)};
    const Plan p = plan_reconcile(pol, s, m);
    EXPECT_TRUE(p.create_regions.empty()) << "its regions are not recreated";
    EXPECT_EQ(drift_with(p, "\"old\""),
              "tenant \"old\": in rofd's state, not in policy: its regions and programs are not "
              "recreated, its rows are dropped")
        << all_drift(p);
}

// A module that could not list its regions or programs: nothing of them
// is planned (neither created, committed nor dropped), the tenants are.
TEST(Reconcile, UnlistedRegionsAndProgramsAreLeftAlone) {
    const auto pol = make_policy();
    StoreState s = matching_store();
    s.regions = {stored_region("kv", "scratch", MiB, RowState::intent),
                 stored_region("kv", "cache", MiB, RowState::committed)};
    s.programs = {stored_prog("kv", "get", 0x1234, RowState::committed),
                  stored_prog("kv", "put", 0x5678, RowState::intent)};
    ModuleState m;
    m.tenants = {tenant(1, "analytics"), tenant(2, "kv")};
    m.regions_known = false;
    m.freelists_known = false;
    m.progs_known = false;
    const Plan p = plan_reconcile(pol, s, m);

    EXPECT_EQ(p.tenants.size(), 2u);
    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_TRUE(p.create_freelists.empty());
    EXPECT_TRUE(p.commit_regions.empty());
    EXPECT_TRUE(p.drop_regions.empty());
    EXPECT_TRUE(p.load_programs.empty());
    EXPECT_TRUE(p.commit_programs.empty());
    EXPECT_TRUE(p.drop_programs.empty());
    EXPECT_TRUE(p.drift.empty()) << all_drift(p);
}

// Free lists unlisted: none is claimed missing, regions still reconcile.
TEST(Reconcile, UnlistedFreeListsAreNotClaimedMissing) {
    const auto pol = make_policy();
    ModuleState m = matching_module();
    m.freelists.clear();
    m.freelists_known = false;
    const Plan p = plan_reconcile(pol, matching_store(), m);

    EXPECT_TRUE(p.create_regions.empty());
    EXPECT_EQ(drift_with(p, "free list"), "") << all_drift(p);
}

}  // namespace
}  // namespace rofd
