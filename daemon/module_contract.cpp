// SPDX-License-Identifier: MIT
#include "module_contract.h"

#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <stdexcept>

#include "kmod.h"
#include "rof/prog/asm.h"
#include "rof_exec.h"

namespace rofd::contract {
namespace {

constexpr std::uint64_t page = 4096;

// ---- programs ----------------------------------------------------------------

// A program image assembled from @src: the module checks its tag against
// its contents, so a test image must be a real one.
struct Image {
    std::vector<std::uint8_t> bytes;
    std::uint64_t tag = 0;
};

Image assemble(const std::string& src) {
    auto as = rof::prog::assemble(src, "contract.rofs");
    if (!as.ok()) {
        throw std::runtime_error("contract image does not assemble: " + as.error_text());
    }
    return Image{as.program->encode(), as.program->tag()};
}

// "exit N": a distinct image (and tag) for each N.
Image exit_image(unsigned n) {
    return assemble("\tmov64 r1, " + std::to_string(n) + "\n\texit 0\n");
}

// One slot "s" of @len bytes with @access ("r", "rw", ...), a free-list
// slot when @freelist.
Image slot_image(const std::string& access, std::uint64_t len, bool freelist = false) {
    std::string src = ".region s, " + access + ", " + std::to_string(len) +
                      (freelist ? ", freelist" : "") + "\n\tmov64 r1, 0\n\texit 0\n";
    return assemble(src);
}

std::uint64_t load(Module& m, std::uint32_t tenant, const Image& img,
                   std::vector<rof_prog_bind> binds = {}) {
    rof_prog_load req = load_req(tenant, std::move(binds));
    return m.prog_load(req, img.bytes);
}

std::uint64_t replace(Module& m, std::uint32_t tenant, std::uint64_t old_tag, const Image& img) {
    rof_prog_load req = load_req(tenant);
    return m.prog_replace(req, img.bytes, old_tag);
}

// ---- lists, for the case's own objects ---------------------------------------

// The entries of a LIST that belong to @tenant.
template <typename T>
std::vector<T> of_tenant(std::vector<T> all, std::uint32_t tenant) {
    std::erase_if(all, [&](const T& e) { return e.tenant != tenant; });
    return all;
}

std::vector<rof_region_info> regions_of(Module& m, std::uint32_t tenant) {
    return of_tenant(m.list_regions(), tenant);
}

std::vector<rof_freelist_info> freelists_of(Module& m, std::uint32_t tenant) {
    return of_tenant(m.list_freelists(), tenant);
}

std::size_t progs_of(Module& m, std::uint32_t tenant) {
    return of_tenant(m.list_progs(), tenant).size();
}

std::vector<rof_session_info> sessions_of(Module& m, std::uint32_t tenant) {
    return of_tenant(m.list_sessions(), tenant);
}

// Whether each of @tenant's sessions is closing, or gone: a session a
// destroy revoked closes in the module's close work, after the destroy
// returns (docs/kmod.md 3.3).
bool sessions_closing(Module& m, std::uint32_t tenant) {
    const auto all = sessions_of(m, tenant);
    return std::all_of(all.begin(), all.end(),
                       [](const auto& s) { return s.state == ROF_SESSION_CLOSING; });
}

// A region id no region has: one made and destroyed.
std::uint32_t gone_region(Module& m, std::uint32_t tenant) {
    const auto r = m.region_create(tenant, "gone", 4096, ROF_ACCESS_READ);
    m.region_destroy(r, false);
    return r;
}

// ---- the cases ---------------------------------------------------------------

// Names of tenants and regions: rof.h's rule, 1 .. 63 characters of
// ROF_NAME_CHARSET, ASCII only (Latin-1 letters too are refused: the
// kernel's isalnum() takes them).
void names_follow_the_rule(Module& m, Scope& s) {
    for (const std::string& bad : std::vector<std::string>{"", std::string(64, 'a'), "a b", "a/b",
                                                           "caf\xc3\xa9", "\xc0\xe9"}) {
        EXPECT_EQ(errno_of([&] { m.tenant_create(bad, 0); }), EINVAL) << bad;
    }
    std::string longest = s.name("long");
    longest.resize(63, 'x');
    s.adopt(m.tenant_create(longest, 0));
    const auto t = s.tenant("Az09._:-");
    EXPECT_EQ(errno_of([&] { m.region_create(t, "no space", 4096, ROF_ACCESS_READ); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.region_create(t, std::string(64, 'r'), 4096, ROF_ACCESS_READ); }),
              EINVAL);
}

// Tenant names and ids are unique; an id may be asked for.
void tenant_names_and_ids_are_unique(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    EXPECT_EQ(errno_of([&] { m.tenant_create(s.name("kv"), 0); }), EEXIST);
    // An id near the top, where assigned ids rarely are.
    const std::uint32_t want = ROF_TENANT_ID_MAX - 1 - static_cast<std::uint32_t>(kv % 1000);
    EXPECT_EQ(s.tenant("fixed", want), want);
    EXPECT_EQ(errno_of([&] { m.tenant_create(s.name("other"), want); }), EEXIST);
    EXPECT_EQ(errno_of([&] { m.tenant_create(s.name("other"), kv); }), EEXIST);
    EXPECT_EQ(errno_of([&] { m.tenant_create(s.name("other"), ROF_TENANT_ID_MAX + 1); }), EINVAL);
    const auto info = m.get_tenant(kv);
    ASSERT_TRUE(info);
    EXPECT_EQ(abi_name(info->name), s.name("kv"));
    EXPECT_EQ(info->id, kv);
    EXPECT_FALSE(m.get_tenant(s.gone_tenant()));
}

// A region's size is whole pages up to ROF_REGION_SIZE_MAX; its name is
// unique within its tenant; its access is ROF_ACCESS_* bits.
void region_size_and_names(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");

    EXPECT_EQ(errno_of([&] { m.region_create(kv, "r", 0, ROF_ACCESS_READ); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "r", 4095, ROF_ACCESS_READ); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "r", ROF_REGION_SIZE_MAX + 4096, 0); }), E2BIG);
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "r", 4096, 1U << 7); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.region_create(s.gone_tenant(), "r", 4096, ROF_ACCESS_READ); }),
              ENOENT);

    const auto r = m.region_create(kv, "table", 8192, ROF_ACCESS_ALL);
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "table", 4096, ROF_ACCESS_READ); }), EEXIST);
    EXPECT_NE(m.region_create(other, "table", 4096, ROF_ACCESS_READ), r);

    const auto info = m.get_region(r);
    ASSERT_TRUE(info);
    EXPECT_EQ(abi_name(info->name), "table");
    EXPECT_EQ(info->size, 8192U);
    EXPECT_EQ(info->tenant, kv);
    EXPECT_EQ(info->access, static_cast<std::uint32_t>(ROF_ACCESS_ALL));
    EXPECT_EQ(info->attachments, 0U);
    EXPECT_FALSE(m.get_region(gone_region(m, kv)));
    EXPECT_EQ(regions_of(m, kv).size(), 1U);
    EXPECT_EQ(regions_of(m, other).size(), 1U);
}

// A region is found by (tenant, name): the tenant's own, not another's of
// that name; a bad name is EINVAL.
void regions_are_found_by_tenant_and_name(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");
    const auto mine = m.region_create(kv, "table", 8192, ROF_ACCESS_ALL);
    const auto theirs = m.region_create(other, "table", 4096, ROF_ACCESS_READ);

    const auto found = m.find_region(kv, "table");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, mine);
    EXPECT_EQ(found->tenant, kv);
    EXPECT_EQ(found->size, 8192U);
    EXPECT_EQ(abi_name(found->name), "table");
    ASSERT_TRUE(m.find_region(other, "table"));
    EXPECT_EQ(m.find_region(other, "table")->id, theirs);
    EXPECT_FALSE(m.find_region(kv, "log"));
    EXPECT_FALSE(m.find_region(s.gone_tenant(), "table"));
    EXPECT_EQ(errno_of([&] { m.find_region(kv, "a b"); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.find_region(kv, ""); }), EINVAL);
    m.region_destroy(mine, false);
    EXPECT_FALSE(m.find_region(kv, "table"));
}

// A new tenant is unlimited with the default credits; quotas refuse with
// EDQUOT.
void quotas_refuse_with_edquot(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto fresh = m.get_tenant(kv);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->quota.region_bytes, ROF_QUOTA_UNLIMITED);
    EXPECT_EQ(fresh->quota.programs, static_cast<std::uint32_t>(ROF_QUOTA_UNLIMITED));
    EXPECT_EQ(fresh->quota.credits, static_cast<std::uint32_t>(ROF_CREDITS_DEFAULT));

    rof_tenant_quota q{};
    q.region_bytes = 8192;
    q.sessions = 1;
    q.programs = 1;
    q.credits = 0;
    EXPECT_EQ(errno_of([&] { m.tenant_set_quota(kv, q); }), EINVAL);
    q.credits = ROF_CREDITS_QUOTA_MAX + 1;
    EXPECT_EQ(errno_of([&] { m.tenant_set_quota(kv, q); }), EINVAL);
    q.credits = 8;
    EXPECT_EQ(errno_of([&] { m.tenant_set_quota(s.gone_tenant(), q); }), ENOENT);
    m.tenant_set_quota(kv, q);
    EXPECT_EQ(m.get_tenant(kv)->quota.credits, 8U);

    m.region_create(kv, "a", 4096, ROF_ACCESS_READ);
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "b", 8192, ROF_ACCESS_READ); }), EDQUOT);
    m.region_create(kv, "b", 4096, ROF_ACCESS_READ);

    load(m, kv, exit_image(1));
    EXPECT_EQ(errno_of([&] { load(m, kv, exit_image(2)); }), EDQUOT);
}

// abi_minor() is what VERSION says, and stays.
void abi_minor_is_the_versions(Module& m, Scope&) {
    const ModuleVersion v = m.version();
    const std::uint32_t minor = m.abi_minor();
    EXPECT_EQ(minor, v.abi_major == ROF_ABI_MAJOR ? v.abi_minor : 0U);
    EXPECT_GE(minor, abi_minor_min);
    EXPECT_EQ(m.abi_minor(), minor);
}

// A tenant's invoke_records rides with its quota (ABI 0.10): all by default,
// errors, or sample:N for N up to ROF_INVOKE_SAMPLE_MAX; TENANT_GET reports
// it; past that is EINVAL and changes nothing.  A module older than 0.10
// (abi_minor()) has a reserved field there: 0 is taken and read back, all
// else is EINVAL.
void quota_carries_invoke_records(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto fresh = m.get_tenant(kv);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->quota.invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ALL});

    rof_tenant_quota q = fresh->quota;
    if (m.abi_minor() < abi_minor_invoke_records) {
        for (const std::uint32_t bad : {std::uint32_t{ROF_INVOKE_RECORDS_ERRORS}, 7U}) {
            q.invoke_records = bad;
            EXPECT_EQ(errno_of([&] { m.tenant_set_quota(kv, q); }), EINVAL) << bad;
        }
        q.invoke_records = ROF_INVOKE_RECORDS_ALL;
        q.sessions = fresh->quota.sessions == 5 ? 6 : 5;
        m.tenant_set_quota(kv, q);
        const auto got = m.get_tenant(kv);
        ASSERT_TRUE(got);
        EXPECT_EQ(got->quota.invoke_records, std::uint32_t{ROF_INVOKE_RECORDS_ALL});
        EXPECT_EQ(got->quota.sessions, q.sessions);
        return;
    }
    for (const std::uint32_t v :
         {std::uint32_t{ROF_INVOKE_RECORDS_ERRORS}, 2U, 1000U, std::uint32_t{ROF_INVOKE_SAMPLE_MAX},
          std::uint32_t{ROF_INVOKE_RECORDS_ALL}}) {
        q.invoke_records = v;
        m.tenant_set_quota(kv, q);
        const auto got = m.get_tenant(kv);
        ASSERT_TRUE(got);
        EXPECT_EQ(got->quota.invoke_records, v);
        EXPECT_EQ(got->quota.credits, fresh->quota.credits);
    }
    q.invoke_records = 7;
    m.tenant_set_quota(kv, q);
    for (const std::uint32_t bad : {std::uint32_t{ROF_INVOKE_SAMPLE_MAX + 1}, 0xffffffffU}) {
        q.invoke_records = bad;
        EXPECT_EQ(errno_of([&] { m.tenant_set_quota(kv, q); }), EINVAL) << bad;
    }
    EXPECT_EQ(m.get_tenant(kv)->quota.invoke_records, 7U);
    // The list shows it as GET does.
    bool listed = false;
    for (const rof_tenant_info& t : m.list_tenants()) {
        if (t.id == kv) {
            listed = true;
            EXPECT_EQ(t.quota.invoke_records, 7U);
        }
    }
    EXPECT_TRUE(listed);
}

// Usage counts every object; a prepared session is not charged until it
// connects.
void usage_follows_every_object(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto r = m.region_create(kv, "table", 3 * page, ROF_ACCESS_ALL);
    m.region_create(kv, "log", 4096, ROF_ACCESS_READ);
    m.freelist_create(r, 64, 0, 10);
    const auto tag = load(m, kv, slot_image("r", 4096), {{r, 0}});
    m.set_ticket_key(some_key());
    auto p = prepare_req(kv);
    m.session_prepare(p);

    auto u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.region_bytes, 4 * page);
    EXPECT_EQ(u.regions, 2U);
    EXPECT_EQ(u.freelists, 1U);
    EXPECT_EQ(u.programs, 1U);
    EXPECT_EQ(u.sessions, 0U);
    EXPECT_EQ(m.get_region(r)->attachments, 1U);  // the program
    EXPECT_EQ(m.get_region(r)->freelists, 1U);

    m.session_close(p.session);
    m.prog_unload(kv, tag);
    EXPECT_EQ(m.get_region(r)->attachments, 0U);
    m.region_destroy(r, false);
    u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.region_bytes, 4096U);
    EXPECT_EQ(u.regions, 1U);
    EXPECT_EQ(u.freelists, 0U);
    EXPECT_EQ(u.programs, 0U);
}

// What is in use is destroyed only with force, which revokes its users.
void busy_objects_need_force(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto r = m.region_create(kv, "table", 4 * page, ROF_ACCESS_ALL);
    const auto fl = m.freelist_create(r, 64, 0, 10);
    const auto tag = load(m, kv, slot_image("rwa", 4096, true), {{r, fl}});

    EXPECT_EQ(m.get_region(r)->attachments, 1U);
    EXPECT_EQ(errno_of([&] { m.region_destroy(r, false); }), EBUSY);
    EXPECT_EQ(errno_of([&] { m.freelist_destroy(fl, false); }), EBUSY);
    EXPECT_EQ(errno_of([&] { m.tenant_destroy(kv, false); }), ENOTEMPTY);

    m.region_destroy(r, true);
    EXPECT_FALSE(m.get_region(r));
    EXPECT_TRUE(freelists_of(m, kv).empty());
    const auto p = m.get_prog(kv, tag);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->flags & ROF_PROG_REVOKED, static_cast<std::uint32_t>(ROF_PROG_REVOKED));

    EXPECT_EQ(errno_of([&] { m.region_destroy(r, true); }), ENOENT);
    EXPECT_EQ(errno_of([&] { m.freelist_destroy(fl, true); }), ENOENT);
}

// A forced tenant destroy takes its regions, free lists, programs and
// sessions (they close), and nothing of another tenant's; any destroy
// closes prepared sessions.
void tenant_destroy_takes_everything_with_it(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");
    const auto r = m.region_create(kv, "table", 4 * page, ROF_ACCESS_ALL);
    const auto keep = m.region_create(other, "table", 4096, ROF_ACCESS_ALL);
    m.freelist_create(r, 64, 0, 10);
    load(m, kv, slot_image("r", 4096), {{r, 0}});
    m.set_ticket_key(some_key());
    auto prepared = prepare_req(kv);
    m.session_prepare(prepared);

    m.tenant_destroy(kv, true);
    EXPECT_FALSE(m.get_tenant(kv));
    EXPECT_TRUE(regions_of(m, kv).empty());
    EXPECT_TRUE(freelists_of(m, kv).empty());
    EXPECT_EQ(progs_of(m, kv), 0U);
    EXPECT_TRUE(sessions_closing(m, kv));
    ASSERT_EQ(regions_of(m, other).size(), 1U);
    EXPECT_EQ(regions_of(m, other)[0].id, keep);
    EXPECT_TRUE(m.get_tenant(other));
    EXPECT_EQ(errno_of([&] { m.tenant_destroy(kv, true); }), ENOENT);

    // Without force: only prepared sessions, which any destroy drops.
    auto p2 = prepare_req(other);
    m.session_prepare(p2);
    m.region_destroy(keep, false);
    m.tenant_destroy(other, false);
    EXPECT_TRUE(sessions_closing(m, other));
    EXPECT_FALSE(m.get_tenant(other));
}

// A free list's blocks are 8-byte aligned, inside its region, and apart
// from every other list of the region.
void freelists_fit_their_region(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_ALL);

    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 4, 0, 1); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 12, 0, 1); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 8, 4, 1); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 8, 0, 0); }), EINVAL);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 8, 0, ROF_FREELIST_BLOCKS_MAX + 1); }), E2BIG);
    EXPECT_EQ(errno_of([&] { m.freelist_create(gone_region(m, kv), 8, 0, 1); }), ENOENT);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 64, 0, 64); }), ERANGE);
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 8, ~0ULL - 7, 1); }), ERANGE);

    const auto fl = m.freelist_create(r, 64, 0, 10);  // [0, 704)
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 64, 696, 1); }), EADDRINUSE);
    m.freelist_create(r, 64, 704, 10);
    const auto lists = freelists_of(m, kv);
    ASSERT_EQ(lists.size(), 2U);
    EXPECT_EQ(lists[0].id, fl);
    EXPECT_EQ(lists[0].region, r);
    EXPECT_EQ(lists[0].block_size, 64U);
    EXPECT_EQ(lists[0].count, 10U);
    EXPECT_EQ(lists[0].free, 10U);
    EXPECT_EQ(m.get_region(r)->freelists, 2U);
}

// REGION_CREATE makes a region with its free lists, checked as FREELIST_CREATE
// checks one, or nothing at all: a refused list leaves no region, no charge.
void region_create_with_freelists(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    auto spec = [](std::uint64_t offset, std::uint32_t block_size, std::uint32_t count) {
        return rof_freelist_spec{offset, block_size, count, 0, 0};
    };
    auto refused = [&](std::vector<rof_freelist_spec> lists) {
        return errno_of([&] { m.region_create(kv, "table", 4096, ROF_ACCESS_ALL, lists); });
    };
    EXPECT_EQ(refused({spec(0, 4, 1)}), EINVAL);
    EXPECT_EQ(refused({spec(4, 8, 1)}), EINVAL);
    EXPECT_EQ(refused({spec(0, 8, 0)}), EINVAL);
    EXPECT_EQ(refused({spec(0, 8, ROF_FREELIST_BLOCKS_MAX + 1)}), E2BIG);
    EXPECT_EQ(refused({spec(0, 64, 64)}), ERANGE);  // 64 + 4096 bytes
    EXPECT_EQ(refused({spec(~0ULL - 7, 8, 1)}), ERANGE);
    EXPECT_EQ(refused({spec(0, 64, 10), spec(696, 64, 1)}), EADDRINUSE);  // [0, 704)
    auto bad = spec(0, 8, 1);
    bad.reserved = 1;
    EXPECT_EQ(refused({spec(1024, 8, 1), bad}), EINVAL);
    EXPECT_EQ(refused(std::vector<rof_freelist_spec>(ROF_REGION_FREELISTS_MAX + 1, spec(0, 8, 1))),
              E2BIG);
    EXPECT_TRUE(regions_of(m, kv).empty());
    EXPECT_TRUE(freelists_of(m, kv).empty());
    auto u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.regions, 0U);
    EXPECT_EQ(u.region_bytes, 0U);
    EXPECT_EQ(u.freelists, 0U);

    std::vector<rof_freelist_spec> lists{spec(704, 64, 10), spec(0, 64, 10)};
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_ALL, lists);
    EXPECT_NE(lists[0].id, 0U);
    EXPECT_NE(lists[1].id, 0U);
    EXPECT_NE(lists[0].id, lists[1].id);
    auto made = freelists_of(m, kv);
    std::sort(made.begin(), made.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    ASSERT_EQ(made.size(), 2U);
    EXPECT_EQ(made[0].id, lists[1].id);
    EXPECT_EQ(made[1].id, lists[0].id);
    for (const auto& f : made) {
        EXPECT_EQ(f.region, r);
        EXPECT_EQ(f.block_size, 64U);
        EXPECT_EQ(f.count, 10U);
        EXPECT_EQ(f.free, 10U);
    }
    EXPECT_EQ(m.get_region(r)->freelists, 2U);
    u = m.get_tenant(kv)->usage;
    EXPECT_EQ(u.freelists, 2U);
    // Lists of one region are apart from the ones made after it, too.
    EXPECT_EQ(errno_of([&] { m.freelist_create(r, 64, 696, 1); }), EADDRINUSE);
    // A name taken refuses the whole, lists included.
    std::vector<rof_freelist_spec> again{spec(0, 8, 1)};
    EXPECT_EQ(errno_of([&] { m.region_create(kv, "table", 4096, ROF_ACCESS_ALL, again); }), EEXIST);
    EXPECT_EQ(freelists_of(m, kv).size(), 2U);
}

// A prepare checks its tenant, grants, expiry, rate and flags.
void prepare_checks_the_grants(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");
    const auto ro = m.region_create(kv, "ro", 4096, ROF_ACCESS_READ);
    const auto rw = m.region_create(kv, "rw", 4096, ROF_ACCESS_READ | ROF_ACCESS_WRITE);
    const auto theirs = m.region_create(other, "theirs", 4096, ROF_ACCESS_ALL);
    const auto gone = gone_region(m, kv);
    const auto gone_tenant = s.gone_tenant();
    EXPECT_EQ(errno_of([&] { m.set_ticket_key(TicketKey{}); }), EINVAL);
    m.set_ticket_key(some_key());

    const auto err = [&](auto edit) {
        auto req = prepare_req(kv);
        edit(req);
        return errno_of([&] {
            m.session_prepare(req);
            m.session_close(req.session);
        });
    };
    EXPECT_EQ(err([&](auto& r) { grant(r, theirs, ROF_ACCESS_READ); }), ENXIO);
    EXPECT_EQ(err([&](auto& r) { grant(r, gone, ROF_ACCESS_READ); }), ENXIO);
    EXPECT_EQ(err([&](auto& r) { grant(r, ro, ROF_ACCESS_WRITE); }), EACCES);
    EXPECT_EQ(err([&](auto& r) { grant(r, ro, 0); }), EINVAL);
    EXPECT_EQ(err([&](auto& r) { grant(r, ro, 1U << 5); }), EINVAL);
    EXPECT_EQ(err([&](auto& r) {
                  grant(r, ro, ROF_ACCESS_READ);
                  grant(r, ro, ROF_ACCESS_READ);
              }),
              EEXIST);
    EXPECT_EQ(err([&](auto& r) { r.nregions = ROF_SESSION_MAX_REGIONS + 1; }), E2BIG);
    EXPECT_EQ(err([&](auto& r) { r.regions[3].region = ro; }), EINVAL);
    EXPECT_EQ(err([&](auto& r) { r.expires_ns = now_ns() - 1; }), ETIME);
    EXPECT_EQ(err([&](auto& r) { r.rate.ops_per_sec = ROF_RATE_MAX + 1; }), ERANGE);
    EXPECT_EQ(err([&](auto& r) { r.tenant = gone_tenant; }), ENOENT);
    EXPECT_EQ(err([&](auto& r) { r.flags = 1; }), EINVAL);
    EXPECT_EQ(err([&](auto& r) {
                  grant(r, ro, ROF_ACCESS_READ);
                  grant(r, rw, ROF_ACCESS_READ | ROF_ACCESS_WRITE);
              }),
              0);
    EXPECT_TRUE(sessions_of(m, kv).empty());
}

// A session's message size (ABI 0.8): 0 is ROF_MSG_SIZE, and so
// answered; any power of two from ROF_MSG_SIZE to ROF_MSG_SIZE_MAX is
// taken and listed; anything else is EINVAL.
void prepare_takes_a_message_size(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    m.set_ticket_key(some_key());
    for (const std::uint32_t bad : {1U, 512U, 1000U, 1025U, 3072U, 65537U, 131072U, ~0U}) {
        auto req = prepare_req(kv);
        req.msg_size = bad;
        EXPECT_EQ(errno_of([&] { m.session_prepare(req); }), EINVAL) << bad;
    }
    EXPECT_TRUE(sessions_of(m, kv).empty());
    for (const std::uint32_t good : {0U, 1024U, 4096U, 65536U}) {
        auto req = prepare_req(kv);
        req.msg_size = good;
        ASSERT_EQ(errno_of([&] { m.session_prepare(req); }), 0) << good;
        const std::uint32_t want = good != 0 ? good : ROF_MSG_SIZE;
        EXPECT_EQ(req.msg_size, want);
        const auto info = m.get_session(req.session);
        ASSERT_TRUE(info);
        EXPECT_EQ(info->msg_size, want);
        m.session_close(req.session);
    }
}

// A prepared session is listed with its grants and a ticket that names
// it; session ids are never reused.
void prepared_sessions_and_their_tickets(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_ALL);
    m.set_ticket_key(some_key());

    auto a = prepare_req(kv);
    grant(a, r, ROF_ACCESS_READ);
    auto b = prepare_req(kv);
    m.session_prepare(a);
    m.session_prepare(b);
    EXPECT_NE(a.session, b.session);
    EXPECT_EQ(a.ticket.version, ROF_TICKET_VERSION);
    EXPECT_EQ(le32toh(a.ticket.tenant), kv);
    EXPECT_EQ(le32toh(a.ticket.session), a.session);
    EXPECT_EQ(le64toh(a.ticket.expires_ns), a.expires_ns);
    EXPECT_NE(a.ticket.nonce, b.ticket.nonce);

    const auto info = m.get_session(a.session);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->state, static_cast<std::uint32_t>(ROF_SESSION_PREPARED));
    EXPECT_EQ(info->tenant, kv);
    EXPECT_EQ(info->nregions, 1U);
    EXPECT_EQ(info->regions[0].region, r);
    EXPECT_EQ(info->credits, 0U);  // set at connect, from the credits quota
    EXPECT_EQ(sessions_of(m, kv).size(), 2U);

    m.session_close(a.session);
    EXPECT_FALSE(m.get_session(a.session));
    EXPECT_EQ(errno_of([&] { m.session_close(a.session); }), ENOENT);
    auto c = prepare_req(kv);
    m.session_prepare(c);
    EXPECT_GT(c.session, b.session);  // never reused
}

// A program is named by (tenant, tag): the same image loads once per
// tenant; GET and UNLOAD name it so.
void programs_are_named_by_tenant_and_tag(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_READ);
    const auto theirs = m.region_create(other, "table", 4096, ROF_ACCESS_ALL);
    const Image img = slot_image("r", 4096);

    rof_prog_load req = load_req(kv, {{r, 0}});
    EXPECT_EQ(m.prog_load(req, img.bytes), img.tag);
    EXPECT_EQ(req.tag, img.tag);
    EXPECT_EQ(errno_of([&] { load(m, kv, img, {{r, 0}}); }), EEXIST);
    EXPECT_EQ(load(m, other, img, {{theirs, 0}}), img.tag);

    const auto p = m.get_prog(kv, img.tag);
    ASSERT_TRUE(p);
    EXPECT_EQ(abi_name(p->name), "prog");
    EXPECT_EQ(p->tenant, kv);
    EXPECT_EQ(p->nbind, 1U);
    EXPECT_EQ(p->bind[0].region, r);
    EXPECT_EQ(p->budget, 100U);
    EXPECT_EQ(p->aliases, 0U);
    EXPECT_EQ(progs_of(m, kv), 1U);
    EXPECT_EQ(progs_of(m, other), 1U);

    m.prog_unload(kv, img.tag);
    EXPECT_FALSE(m.get_prog(kv, img.tag));
    EXPECT_TRUE(m.get_prog(other, img.tag));
    EXPECT_EQ(errno_of([&] { m.prog_unload(kv, img.tag); }), ENOENT);
}

// A load checks the request, the image's structure and the module's
// limits, the tenant, and each binding (docs/kmod.md 9.2).
void program_load_checks(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    const auto other = s.tenant("other");
    const auto r = m.region_create(kv, "table", 4096, ROF_ACCESS_READ);
    const auto r2 = m.region_create(kv, "table2", 4096, ROF_ACCESS_READ);
    const auto theirs = m.region_create(other, "table", 4096, ROF_ACCESS_ALL);
    const auto fl2 = m.freelist_create(r2, 8, 0, 1);

    // Shorter than a header: a malformed image, error_insn ~0.
    rof_prog_load req = load_req(kv);
    const std::vector<std::uint8_t> tiny(16, 0);
    EXPECT_EQ(errno_of([&] { m.prog_load(req, tiny); }), ENOEXEC);
    EXPECT_EQ(req.error_insn, 0xffffffffU);
    req = load_req(kv);
    EXPECT_EQ(errno_of([&] { m.prog_load(req, {}); }), E2BIG);
    Image bad_magic = exit_image(1);
    bad_magic.bytes[0] ^= 1;
    req = load_req(kv);
    EXPECT_EQ(errno_of([&] { m.prog_load(req, bad_magic.bytes); }), ENOEXEC);

    const Image one = slot_image("r", 4096);
    EXPECT_EQ(errno_of([&] { load(m, kv, one, {}); }), EINVAL);  // nbind
    EXPECT_EQ(errno_of([&] { load(m, s.gone_tenant(), exit_image(1)); }), ENOENT);
    EXPECT_EQ(errno_of([&] { load(m, kv, one, {{theirs, 0}}); }), ENXIO);
    EXPECT_EQ(errno_of([&] { load(m, kv, slot_image("w", 4096), {{r, 0}}); }), EACCES);
    EXPECT_EQ(errno_of([&] { load(m, kv, slot_image("r", 8192), {{r, 0}}); }), ERANGE);
    const auto r3 = m.region_create(kv, "table3", 4096, ROF_ACCESS_ALL);
    EXPECT_EQ(errno_of([&] { load(m, kv, slot_image("rwa", 4096, true), {{r3, 0}}); }), EINVAL);
    EXPECT_EQ(errno_of([&] { load(m, kv, slot_image("rwa", 4096, true), {{r3, fl2}}); }), EXDEV);
    // The image's own rules: a free list only in a slot with atomic access.
    EXPECT_EQ(errno_of([&] { load(m, kv, slot_image("r", 4096, true), {{r3, fl2}}); }), ENOEXEC);

    const Image img = exit_image(2);
    req = load_req(kv);
    req.budget = 0;
    EXPECT_EQ(errno_of([&] { m.prog_load(req, img.bytes); }), EINVAL);
    req = load_req(kv);
    req.name[0] = '\0';
    EXPECT_EQ(errno_of([&] { m.prog_load(req, img.bytes); }), EINVAL);
    req = load_req(kv);
    req.bind[3].region = r;
    EXPECT_EQ(errno_of([&] { m.prog_load(req, img.bytes); }), EINVAL);
    req = load_req(kv);
    req.flags = 1;
    EXPECT_EQ(errno_of([&] { m.prog_load(req, img.bytes); }), EINVAL);
    EXPECT_EQ(progs_of(m, kv), 0U);
}

// A program whose worst case is over one softirq or polling-thread turn (ROF_EXEC_ATOMIC_INSNS
// instructions, ROF_EXEC_ATOMIC_BYTES bytes) says so, ROF_PROG_DEFERRED (ABI 0.11), in GET
// and LIST alike; one at the limits does not.  An older module never sets it.
void programs_say_when_they_are_deferred(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    auto flags_of = [&](std::uint64_t budget, std::uint64_t bytes, unsigned code) {
        rof_prog_load req = load_req(kv);
        req.budget = budget;
        req.byte_budget = bytes;
        const auto tag = m.prog_load(req, exit_image(code).bytes);
        const auto p = m.get_prog(kv, tag);
        EXPECT_TRUE(p);
        for (const auto& l : of_tenant(m.list_progs(), kv)) {
            if (l.tag == tag) {
                EXPECT_EQ(l.flags, p ? p->flags : ~0U);
            }
        }
        m.prog_unload(kv, tag);
        return p ? p->flags : ~0U;
    };
    const std::uint32_t deferred = m.abi_minor() >= abi_minor_prog_deferred ? ROF_PROG_DEFERRED : 0;
    EXPECT_EQ(flags_of(ROF_EXEC_ATOMIC_INSNS, ROF_EXEC_ATOMIC_BYTES, 1), 0U);
    EXPECT_EQ(flags_of(ROF_EXEC_ATOMIC_INSNS + 1, 100, 2), deferred);
    EXPECT_EQ(flags_of(100, ROF_EXEC_ATOMIC_BYTES + 1, 3), deferred);
}

// REPLACE: the load's checks, then the old program (ENOENT) and the new
// tag (EEXIST, the old one's included).  The new program takes the old
// one's place in the quota, and serves its tags: a chain counts them, an
// own tag is no alias, a load takes an alias back, the cap holds.
void program_replace(Module& m, Scope& s) {
    const auto kv = s.tenant("kv");
    rof_tenant_quota q = m.get_tenant(kv)->quota;
    q.programs = 2;
    m.tenant_set_quota(kv, q);
    std::vector<Image> img;
    for (unsigned i = 0; i < ROF_PROG_ALIASES_MAX + 6; i++) {
        img.push_back(exit_image(100 + i));
    }
    load(m, kv, img[1]);
    load(m, kv, img[2]);
    EXPECT_EQ(errno_of([&] { load(m, kv, img[3]); }), EDQUOT);

    EXPECT_EQ(replace(m, kv, img[1].tag, img[3]), img[3].tag);  // at the quota
    EXPECT_FALSE(m.get_prog(kv, img[1].tag));
    EXPECT_EQ(m.get_prog(kv, img[3].tag)->aliases, 1U);
    EXPECT_EQ(m.get_tenant(kv)->usage.programs, 2U);
    EXPECT_EQ(errno_of([&] { replace(m, kv, img[1].tag, img[4]); }), ENOENT);
    EXPECT_EQ(errno_of([&] { replace(m, kv, img[3].tag, img[3]); }), EEXIST);
    EXPECT_EQ(errno_of([&] { replace(m, kv, img[3].tag, img[2]); }), EEXIST);
    EXPECT_EQ(errno_of([&] { m.prog_unload(kv, img[1].tag); }), ENOENT);
    rof_prog_load req = load_req(kv);
    const std::vector<std::uint8_t> tiny(16, 0);
    EXPECT_EQ(errno_of([&] { m.prog_replace(req, tiny, img[3].tag); }), ENOEXEC);

    // 3 -> 1 again: 1 serves 3 only (its own tag is no alias).
    EXPECT_EQ(replace(m, kv, img[3].tag, img[1]), img[1].tag);
    EXPECT_EQ(m.get_prog(kv, img[1].tag)->aliases, 1U);
    // A load of an aliased tag takes the alias: 1 serves nothing else.
    m.prog_unload(kv, img[2].tag);
    load(m, kv, img[3]);
    EXPECT_EQ(m.get_prog(kv, img[1].tag)->aliases, 0U);
    m.prog_unload(kv, img[3].tag);
    std::uint64_t cur = img[1].tag;
    for (std::size_t i = 4; i < img.size(); i++) {
        cur = replace(m, kv, cur, img[i]);
    }
    EXPECT_EQ(cur, img.back().tag);
    EXPECT_EQ(m.get_prog(kv, cur)->aliases, static_cast<std::uint32_t>(ROF_PROG_ALIASES_MAX));
    EXPECT_EQ(progs_of(m, kv), 1U);
    EXPECT_EQ(m.get_tenant(kv)->usage.programs, 1U);
}

}  // namespace

std::uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

TicketKey some_key() {
    TicketKey key{};
    key[0] = 1;
    return key;
}

rof_session_prepare prepare_req(std::uint32_t tenant) {
    rof_session_prepare req{};
    req.tenant = tenant;
    req.expires_ns = now_ns() + 60'000'000'000ULL;
    return req;
}

void grant(rof_session_prepare& req, std::uint32_t region, std::uint32_t access) {
    req.regions[req.nregions++] = rof_session_grant{region, access};
}

rof_prog_load load_req(std::uint32_t tenant, std::vector<rof_prog_bind> binds) {
    rof_prog_load req{};
    req.tenant = tenant;
    req.budget = 100;
    req.byte_budget = 100;
    std::strcpy(req.name, "prog");
    req.nbind = static_cast<std::uint32_t>(binds.size());
    for (std::size_t i = 0; i < binds.size(); i++) {
        req.bind[i] = binds[i];
    }
    return req;
}

Scope::~Scope() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
        try {
            m_.tenant_destroy(*it, true);
        } catch (const KmodError&) {
            // ENOENT: the case destroyed it itself.
        }
    }
}

std::uint32_t Scope::tenant(const std::string& suffix, std::uint32_t id) {
    const auto t = m_.tenant_create(name(suffix), id);
    made_.push_back(t);
    return t;
}

std::uint32_t Scope::gone_tenant() {
    const auto t = m_.tenant_create(name("gone"), 0);
    m_.tenant_destroy(t, false);
    return t;
}

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
        {"NamesFollowTheRule", names_follow_the_rule},
        {"TenantNamesAndIdsAreUnique", tenant_names_and_ids_are_unique},
        {"RegionSizeAndNames", region_size_and_names},
        {"RegionsAreFoundByTenantAndName", regions_are_found_by_tenant_and_name},
        {"QuotasRefuseWithEdquot", quotas_refuse_with_edquot},
        {"AbiMinorIsTheVersions", abi_minor_is_the_versions},
        {"QuotaCarriesInvokeRecords", quota_carries_invoke_records},
        {"UsageFollowsEveryObject", usage_follows_every_object},
        {"BusyObjectsNeedForce", busy_objects_need_force},
        {"TenantDestroyTakesEverythingWithIt", tenant_destroy_takes_everything_with_it},
        {"FreeListsFitTheirRegion", freelists_fit_their_region},
        {"RegionCreateWithFreeLists", region_create_with_freelists},
        {"PrepareChecksTheGrants", prepare_checks_the_grants},
        {"PreparedSessionsAndTheirTickets", prepared_sessions_and_their_tickets},
        {"PrepareTakesAMessageSize", prepare_takes_a_message_size},
        {"ProgramsAreNamedByTenantAndTag", programs_are_named_by_tenant_and_tag},
        {"ProgramLoadChecks", program_load_checks},
        {"ProgramsSayWhenTheyAreDeferred", programs_say_when_they_are_deferred},
        {"ProgramReplace", program_replace},
    };
    return all;
}

}  // namespace rofd::contract
