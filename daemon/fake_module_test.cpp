// SPDX-License-Identifier: MIT
// FakeModule keeps rof.ko's rules (docs/kmod.md): each test is one rule.
// The rules rof.ko is held to as well are the Module contract's
// (module_contract.cpp, run against both); these are the fake's own:
// connects, id assignment, audit, fault injection, reload.
#include "fake_module.h"
#include "module_contract.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>
#include <thread>
#include <vector>

namespace {

using rofd::FakeModule;
using rofd::KmodError;

using rofd::contract::errno_of;
using rofd::contract::grant;
using rofd::contract::load_req;
using rofd::contract::now_ns;
using rofd::contract::prepare_req;
using rofd::contract::some_key;

struct Slot {
    std::uint32_t access = ROF_ACCESS_READ;
    std::uint32_t flags = 0;
    std::uint64_t len = 4096;
};

// A program image with a valid header and slot table, @insns instruction
// slots (their contents are not the fake's business).
std::vector<std::uint8_t> image(std::uint64_t tag, const std::vector<Slot>& slots = {},
                                std::uint32_t insns = 1) {
    rof_isa_hdr hdr{};
    hdr.magic = ROF_ISA_MAGIC;
    hdr.version = ROF_ISA_VERSION;
    hdr.hdr_size = sizeof(hdr);
    hdr.insn_cnt = insns;
    hdr.slot_cnt = static_cast<std::uint32_t>(slots.size());
    hdr.args_max = 64;
    hdr.tag = tag;
    std::vector<std::uint8_t> img(sizeof(hdr) + slots.size() * sizeof(rof_isa_slot) +
                                  insns * sizeof(rof_insn));
    std::memcpy(img.data(), &hdr, sizeof(hdr));
    for (std::size_t i = 0; i < slots.size(); i++) {
        rof_isa_slot s{};
        std::strcpy(s.name, "s");
        s.access = slots[i].access;
        s.flags = slots[i].flags;
        s.len = slots[i].len;
        std::memcpy(img.data() + sizeof(hdr) + i * sizeof(s), &s, sizeof(s));
    }
    return img;
}

std::uint64_t load(FakeModule& m, std::uint32_t tenant, std::uint64_t tag,
                   const std::vector<Slot>& slots = {}, std::vector<rof_prog_bind> binds = {}) {
    rof_prog_load req = load_req(tenant, std::move(binds));
    const auto img = image(tag, slots);
    return m.prog_load(req, img);
}

// Ids go round from 1: a destroyed tenant's id is not given out again until
// the range has gone round, and ids taken explicitly are skipped.
TEST(FakeModule, IdsAreAssignedRoundFromOne) {
    FakeModule m;

    EXPECT_EQ(m.tenant_create("a", 0), 1u);
    EXPECT_EQ(m.tenant_create("b", 0), 2u);
    m.tenant_destroy(1, false);
    EXPECT_EQ(m.tenant_create("c", 4), 4u);
    EXPECT_EQ(m.tenant_create("d", 0), 3u);
    EXPECT_EQ(m.tenant_create("e", 0), 5u);
    EXPECT_EQ(m.tenant_create("top", ROF_TENANT_ID_MAX), ROF_TENANT_ID_MAX);
    for (std::uint32_t id = 6; id < ROF_TENANT_ID_MAX; id++) {
        ASSERT_EQ(m.tenant_create("t" + std::to_string(id), 0), id);
    }
    EXPECT_EQ(m.tenant_create("wrapped", 0), 1u);
    EXPECT_EQ(errno_of([&] { m.tenant_create("full", 0); }), ENOSPC);

    const auto r1 = m.region_create(2, "r1", 4096, ROF_ACCESS_READ);
    const auto r2 = m.region_create(2, "r2", 4096, ROF_ACCESS_READ);
    EXPECT_EQ(r1, 1u);
    EXPECT_EQ(r2, 2u);
    m.region_destroy(r1, false);
    EXPECT_EQ(m.region_create(2, "r3", 4096, ROF_ACCESS_READ), 3u);
}

// The session quota is charged at connect (docs/kmod.md 8): the second
// connect is refused, not the prepare.  (The other quotas are the Module
// contract's, module_contract.cpp; connects are the fake's alone.)
TEST(FakeModule, TheSessionQuotaIsChargedAtConnect) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    rof_tenant_quota q = m.get_tenant(kv)->quota;
    q.sessions = 1;
    q.credits = 8;
    m.tenant_set_quota(kv, q);

    m.set_ticket_key(some_key());
    auto s1 = prepare_req(kv);
    auto s2 = prepare_req(kv);
    m.session_prepare(s1);
    m.session_prepare(s2);
    EXPECT_EQ(m.connect_session(s1.session), 0u);
    EXPECT_EQ(m.connect_session(s2.session), static_cast<std::uint32_t>(ROF_REJECT_QUOTA));
    EXPECT_EQ(m.get_session(s1.session)->credits, 8u);
}

TEST(FakeModule, UsageFollowsEveryObject) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    const auto r = m.region_create(kv, "table", 3 * 4096, ROF_ACCESS_ALL);
    m.region_create(kv, "log", 4096, ROF_ACCESS_READ);
    m.freelist_create(r, 64, 0, 10);
    load(m, kv, 42, {Slot{}}, {{r, 0}});
    m.set_ticket_key(some_key());
    auto s = prepare_req(kv);
    m.session_prepare(s);

    auto u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.region_bytes, 4 * 4096u);
    EXPECT_EQ(u.regions, 2u);
    EXPECT_EQ(u.freelists, 1u);
    EXPECT_EQ(u.programs, 1u);
    EXPECT_EQ(u.sessions, 0u);  // prepared: nothing charged yet
    ASSERT_EQ(m.connect_session(s.session), 0u);
    EXPECT_EQ(m.get_tenant(kv)->usage.sessions, 1u);

    m.session_close(s.session);
    m.prog_unload(kv, 42);
    m.region_destroy(r, false);
    u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.region_bytes, 4096u);
    EXPECT_EQ(u.regions, 1u);
    EXPECT_EQ(u.freelists, 0u);
    EXPECT_EQ(u.programs, 0u);
    EXPECT_EQ(u.sessions, 0u);
    EXPECT_EQ(m.get_tenant(kv)->counters.sessions_opened, 1u);
    EXPECT_EQ(m.get_tenant(kv)->counters.sessions_closed, 1u);
}

// A live session attaches to its regions; a forced region destroy closes it.
TEST(FakeModule, ForcedRegionDestroyRevokesSessions) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_ALL);
    m.set_ticket_key(some_key());
    auto s = prepare_req(kv);
    grant(s, r, ROF_ACCESS_READ);
    m.session_prepare(s);

    EXPECT_EQ(m.get_region(r)->attachments, 0u);  // prepared: holds only the id
    ASSERT_EQ(m.connect_session(s.session), 0u);
    EXPECT_EQ(m.get_region(r)->attachments, 1u);
    EXPECT_EQ(errno_of([&] { m.region_destroy(r, false); }), EBUSY);
    m.region_destroy(r, true);
    EXPECT_FALSE(m.get_session(s.session));
}

TEST(FakeModule, TenantDestroyTakesEverythingWithIt) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    const auto other = m.tenant_create("other", 0);
    const auto r = m.region_create(kv, "table", 4 * 4096, ROF_ACCESS_ALL);
    const auto keep = m.region_create(other, "table", 4096, ROF_ACCESS_ALL);
    m.freelist_create(r, 64, 0, 10);
    load(m, kv, 42, {Slot{}}, {{r, 0}});
    m.set_ticket_key(some_key());
    auto live = prepare_req(kv);
    auto prepared = prepare_req(kv);
    m.session_prepare(live);
    m.session_prepare(prepared);
    ASSERT_EQ(m.connect_session(live.session), 0u);

    m.tenant_destroy(kv, true);
    EXPECT_FALSE(m.get_tenant(kv));
    EXPECT_TRUE(m.list_freelists().empty());
    EXPECT_TRUE(m.list_progs().empty());
    EXPECT_TRUE(m.list_sessions().empty());
    ASSERT_EQ(m.list_regions().size(), 1u);
    EXPECT_EQ(m.list_regions()[0].id, keep);
    EXPECT_TRUE(m.get_tenant(other));
    EXPECT_EQ(errno_of([&] { m.tenant_destroy(kv, true); }), ENOENT);

    // Without force: only prepared sessions, which any destroy drops.
    auto p2 = prepare_req(other);
    m.session_prepare(p2);
    m.region_destroy(keep, false);
    m.tenant_destroy(other, false);
    EXPECT_TRUE(m.list_sessions().empty());
    EXPECT_TRUE(m.list_tenants().empty());
}

TEST(FakeModule, PrepareNeedsATicketKey) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    auto req = prepare_req(kv);

    EXPECT_EQ(errno_of([&] { m.session_prepare(req); }), ENOKEY);
    EXPECT_EQ(errno_of([&] { m.set_ticket_key(rofd::TicketKey{}); }), EINVAL);
    m.set_ticket_key(some_key());
    m.session_prepare(req);
    EXPECT_EQ(req.session, 1u);
}

TEST(FakeModule, OneAuditReaderAtATime) {
    FakeModule m;

    rof_audit_record before{};
    before.kind = ROF_AUDIT_INVOKE;
    before.tenant = 3;
    m.push_audit(before);  // kept until a reader opens
    EXPECT_EQ(m.audit_stats().pending, 1u);

    rofd::UniqueFd fd = m.audit_open(true);
    ASSERT_TRUE(fd);
    EXPECT_EQ(errno_of([&] { m.audit_open(false); }), EBUSY);
    m.push_audit(before);

    rof_audit_record got{};
    ASSERT_EQ(::read(fd.get(), &got, sizeof(got)), static_cast<ssize_t>(sizeof(got)));
    EXPECT_EQ(got.seq, 1u);
    EXPECT_EQ(got.tenant, 3u);
    EXPECT_NE(got.time_ns, 0u);
    ASSERT_EQ(::read(fd.get(), &got, sizeof(got)), static_cast<ssize_t>(sizeof(got)));
    EXPECT_EQ(got.seq, 2u);
    EXPECT_EQ(::read(fd.get(), &got, sizeof(got)), -1);
    EXPECT_EQ(errno, EAGAIN);                             // non-blocking and empty
    EXPECT_EQ(::write(fd.get(), &got, sizeof(got)), -1);  // read-only

    const auto st = m.audit_stats();
    EXPECT_EQ(st.next_seq, 3u);
    EXPECT_EQ(st.pending, 0u);
    EXPECT_EQ(st.ring_size, FakeModule::audit_ring_size);

    fd.reset();
    fd = m.audit_open(false);
    EXPECT_TRUE(fd);
}

// Every record of the fake's ring, oldest first.
std::vector<rof_audit_record> read_all(int fd) {
    std::vector<rof_audit_record> out;
    rof_audit_record r{};
    while (::read(fd, &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) {
        out.push_back(r);
    }
    return out;
}

// invoke_records (ABI 0.10): of the INVOKEs that end with status 0, all,
// none or every Nth of the session gets a record; an error always does;
// each record of the session carries the count of those left out, so the
// records of a session up to its close count every INVOKE, as the
// tenant's counters do.  rofd's AuditDrain reads them so.
TEST(FakeModule, InvokeRecordsFollowTheTenant) {
    for (const std::uint32_t mode : {std::uint32_t{ROF_INVOKE_RECORDS_ALL},
                                     std::uint32_t{ROF_INVOKE_RECORDS_ERRORS}, 2U, 7U, 100U}) {
        SCOPED_TRACE(mode);
        FakeModule m;
        const auto kv = m.tenant_create("kv", 0);
        rof_tenant_quota q = m.get_tenant(kv)->quota;
        q.invoke_records = mode;
        m.tenant_set_quota(kv, q);
        m.set_ticket_key(some_key());
        auto s1 = prepare_req(kv);
        auto s2 = prepare_req(kv);
        m.session_prepare(s1);
        m.session_prepare(s2);
        EXPECT_EQ(errno_of([&] { m.invoke(s1.session, 0); }), ENOENT);  // not live yet
        ASSERT_EQ(m.connect_session(s1.session), 0u);
        ASSERT_EQ(m.connect_session(s2.session), 0u);
        rofd::UniqueFd fd = m.audit_open(true);

        std::uint64_t recorded_ok = 0;
        for (int i = 0; i < 50; i++) {
            const bool rec = m.invoke(s1.session, 0, 10, 3);
            recorded_ok += rec ? 1 : 0;
            if (i % 20 == 19) {
                EXPECT_TRUE(m.invoke(s1.session, ROF_ST_PROG_FAULT, 10, 5));  // always recorded
            }
        }
        for (int i = 0; i < 13; i++) {
            recorded_ok += m.invoke(s2.session, 0) ? 1 : 0;
        }
        // Of k INVOKEs of status 0 in a session, those recorded.
        const auto recorded_of = [&](std::uint64_t k) -> std::uint64_t {
            return mode == ROF_INVOKE_RECORDS_ALL      ? k
                   : mode == ROF_INVOKE_RECORDS_ERRORS ? 0
                                                       : k / mode;
        };
        const std::uint64_t want_ok = recorded_of(50) + recorded_of(13);
        EXPECT_EQ(recorded_ok, want_ok);
        m.session_close(s1.session);

        std::vector<rof_audit_record> recs = read_all(fd.get());
        std::uint64_t invokes = 0, skipped_s1 = 0, skipped_s2 = 0;
        for (const rof_audit_record& r : recs) {
            invokes += r.kind == ROF_AUDIT_INVOKE ? 1 : 0;
            (r.session == s1.session ? skipped_s1 : skipped_s2) += r.skipped;
        }
        EXPECT_EQ(invokes, want_ok + 2);
        EXPECT_EQ(skipped_s1, 50 - recorded_of(50));
        // s2 is open: what its last record did not carry waits for its next one.
        EXPECT_EQ(skipped_s2, mode > 1 ? recorded_of(13) * (mode - 1) : 0);
        const rof_tenant_info t = *m.get_tenant(kv);
        EXPECT_EQ(t.counters.invocations, 65U);
        EXPECT_EQ(t.counters.invoke_errors, 2U);
        EXPECT_EQ(t.counters.bytes, 520U);
        EXPECT_EQ(t.counters.insns, 160U);

        // s2's close carries its count: every INVOKE is then counted by the records.
        m.session_close(s2.session);
        const std::vector<rof_audit_record> rest = read_all(fd.get());
        ASSERT_EQ(rest.size(), 1U);
        EXPECT_EQ(rest[0].kind, static_cast<std::uint32_t>(ROF_AUDIT_SESSION_CLOSE));
        EXPECT_EQ(rest[0].skipped, 13 - recorded_of(13) - skipped_s2);
        std::uint64_t counted = 0;
        for (const auto& v : {recs, rest}) {
            for (const rof_audit_record& r : v) {
                counted += (r.kind == ROF_AUDIT_INVOKE ? 1 : 0) + r.skipped;
            }
        }
        EXPECT_EQ(counted, 65U);
    }
}

// A module older than ABI 0.10 has no invoke_records: non-zero is EINVAL there.
TEST(FakeModule, AnOlderModuleRefusesInvokeRecords) {
    FakeModule m;
    m.set_abi_minor(9);
    EXPECT_EQ(m.version().abi_minor, 9U);
    const auto kv = m.tenant_create("kv", 0);
    rof_tenant_quota q = m.get_tenant(kv)->quota;
    q.invoke_records = ROF_INVOKE_RECORDS_ERRORS;
    EXPECT_EQ(errno_of([&] { m.tenant_set_quota(kv, q); }), EINVAL);
    q.invoke_records = ROF_INVOKE_RECORDS_ALL;
    m.tenant_set_quota(kv, q);
}

TEST(FakeModule, FailNextFailsOneCall) {
    FakeModule m;

    m.fail_next(EPERM);
    try {
        m.tenant_create("kv", 0);
        FAIL() << "fail_next was ignored";
    } catch (const KmodError& e) {
        EXPECT_EQ(e.code().value(), EPERM);
        EXPECT_EQ(std::string(e.what()), "fake: ROF_IOC_TENANT_CREATE: Operation not permitted");
    }
    EXPECT_TRUE(m.list_tenants().empty());  // nothing was done
    EXPECT_EQ(m.tenant_create("kv", 0), 1u);
    m.fail_next(ENODEV);
    EXPECT_EQ(errno_of([&] { m.version(); }), ENODEV);
    EXPECT_EQ(m.version().abi_minor, static_cast<std::uint32_t>(ROF_ABI_MINOR));
}

TEST(FakeModule, ReloadForgetsEverything) {
    FakeModule m;
    const auto kv = m.tenant_create("kv", 0);
    m.region_create(kv, "table", 4096, ROF_ACCESS_ALL);
    m.set_ticket_key(some_key());
    auto s = prepare_req(kv);
    m.session_prepare(s);
    rofd::UniqueFd fd = m.audit_open(true);
    m.push_audit(rof_audit_record{});

    m.reload();
    EXPECT_TRUE(m.list_tenants().empty());
    EXPECT_TRUE(m.list_regions().empty());
    EXPECT_TRUE(m.list_sessions().empty());
    EXPECT_EQ(m.audit_stats().next_seq, 1u);
    EXPECT_EQ(m.tenant_create("again", 0), 1u);
    auto s2 = prepare_req(1);
    EXPECT_EQ(errno_of([&] { m.session_prepare(s2); }), ENOKEY);
    m.set_ticket_key(some_key());
    m.session_prepare(s2);
    EXPECT_EQ(s2.session, 1u);

    // The old reader sees its pending record, then end of file; a new one opens.
    rof_audit_record got{};
    EXPECT_EQ(::read(fd.get(), &got, sizeof(got)), static_cast<ssize_t>(sizeof(got)));
    EXPECT_EQ(::read(fd.get(), &got, sizeof(got)), 0);
    EXPECT_TRUE(m.audit_open(true));
}

TEST(FakeModule, ConcurrentCreatesGetDistinctIds) {
    FakeModule m;
    std::vector<std::thread> threads;
    std::vector<std::vector<std::uint32_t>> ids(4);

    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 100; i++) {
                ids[t].push_back(
                    m.tenant_create("t" + std::to_string(t) + "-" + std::to_string(i), 0));
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    std::set<std::uint32_t> all;
    for (const auto& v : ids) {
        all.insert(v.begin(), v.end());
    }
    EXPECT_EQ(all.size(), 400u);
    EXPECT_EQ(m.list_tenants().size(), 400u);
}

}  // namespace
