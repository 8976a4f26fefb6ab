// SPDX-License-Identifier: MIT
// Store: rofd's SQLite state, against real files in a temporary directory.
#include "store.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rofd {
namespace {

using namespace std::string_literals;

using test::TempDir;

mode_t mode_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        throw std::runtime_error("stat " + path);
    }
    return st.st_mode & 07777;
}

int user_version(const std::string& path) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    return db.execAndGet("PRAGMA user_version").getInt();
}

StoredRegion region(const std::string& tenant, const std::string& name, std::uint64_t size,
                    std::vector<StoredFreeList> fl = {}) {
    StoredRegion r;
    r.tenant = tenant;
    r.name = name;
    r.size = size;
    r.access = 3;
    r.freelists = std::move(fl);
    r.state = RowState::committed;
    return r;
}

StoredProgram program(const std::string& tenant, std::uint64_t tag) {
    StoredProgram p;
    p.tenant = tenant;
    p.name = "prog";
    p.tag = tag;
    p.source = "ld r0, 1\nret\n";
    p.image = {0x7f, 0x00, 0x00, 0xff, 0x00, 0x01};
    p.disassembly = "0: ld r0, 1\n1: ret\n";
    p.binds = {{"buf", -1}, {"pool", 1}};
    p.budget = (std::uint64_t{1} << 63) + 5;
    p.byte_budget = 4096;
    p.created_ns = -1234567890123;
    p.state = RowState::intent;
    return p;
}

void expect_eq(const StoredRegion& a, const StoredRegion& b) {
    EXPECT_EQ(a.tenant, b.tenant);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.access, b.access);
    EXPECT_EQ(a.state, b.state);
    ASSERT_EQ(a.freelists.size(), b.freelists.size());
    for (std::size_t i = 0; i < a.freelists.size(); ++i) {
        EXPECT_EQ(a.freelists[i].block_size, b.freelists[i].block_size);
        EXPECT_EQ(a.freelists[i].offset, b.freelists[i].offset);
        EXPECT_EQ(a.freelists[i].count, b.freelists[i].count);
    }
}

void expect_eq(const StoredProgram& a, const StoredProgram& b) {
    EXPECT_EQ(a.tenant, b.tenant);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.tag, b.tag);
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.image, b.image);
    EXPECT_EQ(a.disassembly, b.disassembly);
    EXPECT_EQ(a.budget, b.budget);
    EXPECT_EQ(a.byte_budget, b.byte_budget);
    EXPECT_EQ(a.created_ns, b.created_ns);
    EXPECT_EQ(a.state, b.state);
    ASSERT_EQ(a.binds.size(), b.binds.size());
    for (std::size_t i = 0; i < a.binds.size(); ++i) {
        EXPECT_EQ(a.binds[i].region, b.binds[i].region);
        EXPECT_EQ(a.binds[i].freelist, b.binds[i].freelist);
    }
}

TEST(Store, CreateAndReopenKeepsData) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    TicketKey key{};
    for (std::size_t i = 0; i < key.size(); ++i) {
        key[i] = static_cast<std::uint8_t>(i * 7);  // includes 0
    }
    {
        Store s(path);
        EXPECT_EQ(s.path(), path);
        EXPECT_FALSE(s.ticket_key());
        s.set_ticket_key(key);
        s.put_tenant({"acme", 7});
        s.put_region(region("acme", "buf", 1 << 20, {{64, 0, 16}}));
        s.put_program(program("acme", 42));
    }
    Store s(path);
    EXPECT_EQ(s.ticket_key(), key);
    ASSERT_EQ(s.tenants().size(), 1u);
    EXPECT_EQ(s.tenants()[0].id, 7u);
    ASSERT_EQ(s.regions().size(), 1u);
    expect_eq(s.regions()[0], region("acme", "buf", 1 << 20, {{64, 0, 16}}));
    ASSERT_EQ(s.programs().size(), 1u);
    expect_eq(s.programs()[0], program("acme", 42));
    EXPECT_EQ(user_version(path), Store::schema_version());
}

TEST(Store, FileIs0600AndMissingDirectories0700) {
    TempDir dir;
    const std::string path = dir.file("a/b/rofd.db");
    const mode_t old = ::umask(0);  // the widest umask: the modes must not depend on it
    try {
        Store s(path);
        s.put_tenant({"t", 1});  // writes the -wal file
        ::umask(old);
        EXPECT_EQ(mode_of(path), 0600u);
        EXPECT_EQ(mode_of(path + "-wal"), 0600u);
        EXPECT_EQ(mode_of(path + "-shm"), 0600u);
        EXPECT_EQ(mode_of(dir.file("a")), 0700u);
        EXPECT_EQ(mode_of(dir.file("a/b")), 0700u);
    } catch (...) {
        ::umask(old);
        throw;
    }
}

TEST(Store, WideExistingFileIsNarrowed) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    std::ofstream(path).close();
    std::filesystem::permissions(path, std::filesystem::perms(0644));
    ASSERT_EQ(mode_of(path), 0644u);
    Store s(path);
    EXPECT_EQ(mode_of(path), 0600u);
}

TEST(Store, Pragmas) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    Store s(path);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("PRAGMA journal_mode").getString(), "wal");
    // All tables are STRICT.
    SQLite::Statement st(db,
                         "SELECT name, strict FROM pragma_table_list WHERE schema = 'main' "
                         "AND name NOT LIKE 'sqlite_%'");
    int tables = 0;
    while (st.executeStep()) {
        ++tables;
        EXPECT_EQ(st.getColumn(1).getInt(), 1) << st.getColumn(0).getString();
    }
    EXPECT_EQ(tables, 7);
}

TEST(Store, TicketKeyReplace) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    TicketKey a{}, b{};
    a.fill(0);
    b.fill(0xab);
    s.set_ticket_key(a);
    EXPECT_EQ(s.ticket_key(), a);
    s.set_ticket_key(b);
    EXPECT_EQ(s.ticket_key(), b);
}

TEST(Store, TenantsRoundTripAndReplace) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"b", 2});
    s.put_tenant({"a", 1});
    s.put_region(region("a", "r", 10));
    s.put_tenant({"a", 0xffffffff});  // replace keeps the tenant's regions
    auto t = s.tenants();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].name, "a");
    EXPECT_EQ(t[0].id, 0xffffffffu);
    EXPECT_EQ(t[1].name, "b");
    EXPECT_EQ(s.regions().size(), 1u);
    s.delete_tenant("b");
    s.delete_tenant("nonexistent");
    ASSERT_EQ(s.tenants().size(), 1u);
    EXPECT_EQ(s.tenants()[0].name, "a");
}

TEST(Store, RegionsRoundTripAndReplace) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"t", 1});
    const std::uint64_t big = ~std::uint64_t{0};
    const auto r1 = region("t", "r1", big, {{64, big - 1, 3}, {4096, 0, 0xffffffff}});
    s.put_region(r1);
    s.put_region(region("t", "r2", 0));
    auto got = s.regions();
    ASSERT_EQ(got.size(), 2u);
    expect_eq(got[0], r1);
    expect_eq(got[1], region("t", "r2", 0));

    // Replace: the row and its free lists.
    auto r1b = region("t", "r1", 5, {{128, 8, 1}});
    r1b.state = RowState::intent;
    r1b.access = 1;
    s.put_region(r1b);
    got = s.regions();
    ASSERT_EQ(got.size(), 2u);
    expect_eq(got[0], r1b);

    s.delete_region("t", "r1");
    got = s.regions();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].name, "r2");
    // The deleted region's free lists went with it.
    SQLite::Database db(s.path(), SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM freelists").getInt(), 0);
}

TEST(Store, RegionOfUnknownTenantIsRefused) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    try {
        s.put_region(region("ghost", "r", 1));
        FAIL() << "no error";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(s.path()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("FOREIGN KEY"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(s.regions().empty());
}

// Statements are prepared once and kept (Store::Impl::prepared): one that failed is used again,
// and none keeps a read open after its call, which would stop another connection's checkpoint
// of the WAL (ticket_key() returns after the first of its rows).
TEST(Store, KeptStatementsAreResetAfterEachCall) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    EXPECT_THROW(s.put_region(region("ghost", "r", 1)), StoreError);
    s.put_tenant({"t", 1});
    s.put_region(region("t", "r", 1));
    ASSERT_EQ(s.regions().size(), 1u);
    TicketKey key{};
    key[0] = 7;
    s.set_ticket_key(key);
    ASSERT_TRUE(s.ticket_key());
    ASSERT_TRUE(s.ticket_key());
    SQLite::Database other(s.path(), SQLite::OPEN_READWRITE);
    SQLite::Statement ck(other, "PRAGMA wal_checkpoint(TRUNCATE)");
    ASSERT_TRUE(ck.executeStep());
    EXPECT_EQ(ck.getColumn(0).getInt(), 0) << "a statement of the store holds a read open";
    key[0] = 8;
    s.set_ticket_key(key);
    EXPECT_EQ((*s.ticket_key())[0], 8);
}

TEST(Store, ProgramsRoundTripAndReplace) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"t", 1});
    auto p1 = program("t", (std::uint64_t{1} << 63) + 1);  // above 2^63
    p1.image = {0, 0, 0, 1, 0};                            // NUL bytes
    p1.source = "a\0b"s;
    p1.disassembly = "x\0y"s;
    auto p2 = program("t", ~std::uint64_t{0});
    p2.image.clear();
    p2.source.clear();
    p2.binds.clear();
    auto p3 = program("t", 0);
    s.put_program(p1);
    s.put_program(p2);
    s.put_program(p3);
    auto got = s.programs();
    ASSERT_EQ(got.size(), 3u);
    // Ordered by the tag's int64 pattern: 0, then the two "negative" ones.
    std::map<std::uint64_t, StoredProgram> by_tag;
    for (auto& p : got) {
        by_tag[p.tag] = p;
    }
    expect_eq(by_tag.at(p1.tag), p1);
    expect_eq(by_tag.at(p2.tag), p2);
    expect_eq(by_tag.at(p3.tag), p3);

    // Replace: the row and its binds.
    auto p1b = p1;
    p1b.name = "renamed";
    p1b.binds = {{"other", 0}};
    p1b.state = RowState::committed;
    s.put_program(p1b);
    got = s.programs();
    ASSERT_EQ(got.size(), 3u);
    for (auto& p : got) {
        if (p.tag == p1.tag) {
            expect_eq(p, p1b);
        }
    }

    s.delete_program("t", p1.tag);
    s.delete_program("t", 12345);  // absent: no error
    got = s.programs();
    ASSERT_EQ(got.size(), 2u);
    for (auto& p : got) {
        EXPECT_NE(p.tag, p1.tag);
    }
    SQLite::Database db(s.path(), SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM program_binds").getInt(),
              static_cast<int>(p3.binds.size()));
}

// Lists read the index (no source, image, disassembly), one program is
// read whole by its key, and the bytes a tenant keeps are summed in SQL.
TEST(Store, ProgramIndexRowAndBytes) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"t", 1});
    s.put_tenant({"u", 2});
    auto p1 = program("t", 1);
    p1.source = std::string(1000, 's');
    auto p2 = program("t", 2);
    auto p3 = program("u", 3);
    for (const auto& p : {p1, p2, p3}) {
        s.put_program(p);
    }

    const auto all = s.program_index();
    ASSERT_EQ(all.size(), 3U);
    const auto mine = s.program_index("t");
    ASSERT_EQ(mine.size(), 2U);
    for (const auto& p : mine) {
        EXPECT_EQ(p.tenant, "t");
        EXPECT_TRUE(p.source.empty());
        EXPECT_TRUE(p.image.empty());
        EXPECT_TRUE(p.disassembly.empty());
        EXPECT_EQ(p.binds.size(), 2U);  // binds are small, and a list shows them
        EXPECT_EQ(p.name, "prog");
    }

    const auto one = s.program("t", 1);
    ASSERT_TRUE(one.has_value());
    expect_eq(*one, p1);
    EXPECT_FALSE(s.program("u", 1).has_value());
    EXPECT_FALSE(s.program("t", 3).has_value());

    const auto size = [](const StoredProgram& p) {
        return p.source.size() + p.image.size() + p.disassembly.size();
    };
    EXPECT_EQ(s.program_bytes("t"), size(p1) + size(p2));
    EXPECT_EQ(s.program_bytes("u"), size(p3));
    EXPECT_EQ(s.program_bytes("nobody"), 0U);
}

TEST(Store, DeleteTenantCascades) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"a", 1});
    s.put_tenant({"b", 2});
    s.put_region(region("a", "r", 1, {{64, 0, 1}}));
    s.put_region(region("b", "r", 1, {{64, 0, 1}}));
    s.put_program(program("a", 1));
    s.put_program(program("b", 1));
    s.delete_tenant("a");
    auto regions = s.regions();
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].tenant, "b");
    EXPECT_EQ(regions[0].freelists.size(), 1u);
    auto programs = s.programs();
    ASSERT_EQ(programs.size(), 1u);
    EXPECT_EQ(programs[0].tenant, "b");
    SQLite::Database db(s.path(), SQLite::OPEN_READONLY);
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM freelists").getInt(), 1);
    EXPECT_EQ(db.execAndGet("SELECT count(*) FROM program_binds").getInt(), 2);
}

TEST(Store, Idempotency) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    EXPECT_FALSE(s.idempotent("alice", "/rof.v1.Control/CreateRegion", "k1"));
    Store::Idempotent r;
    r.request_hash = "\x01\x00\xff"s;
    r.response = "\x0a\x00\x12\x00"s;
    r.status_code = 9;
    r.status_message = "no";
    s.put_idempotent("alice", "/rof.v1.Control/CreateRegion", "k1", r);
    s.put_idempotent("alice", "/rof.v1.Control/CreateRegion", "old", r);
    auto got = s.idempotent("alice", "/rof.v1.Control/CreateRegion", "k1");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->request_hash, r.request_hash);
    EXPECT_EQ(got->response, r.response);
    EXPECT_EQ(got->status_code, 9);
    EXPECT_EQ(got->status_message, "no");
    // Scoped by principal and method.
    EXPECT_FALSE(s.idempotent("bob", "/rof.v1.Control/CreateRegion", "k1"));
    EXPECT_FALSE(s.idempotent("alice", "/rof.v1.Control/DeleteRegion", "k1"));

    // Replace.
    r.status_code = 0;
    r.response.clear();
    s.put_idempotent("alice", "/rof.v1.Control/CreateRegion", "k1", r);
    got = s.idempotent("alice", "/rof.v1.Control/CreateRegion", "k1");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status_code, 0);
    EXPECT_EQ(got->response, "");

    // Prune: age one record by an hour behind the Store's back.
    {
        SQLite::Database db(s.path(), SQLite::OPEN_READWRITE);
        db.exec("UPDATE idempotency SET created_s = created_s - 3600 WHERE key = 'old'");
    }
    EXPECT_EQ(s.prune_idempotent(600), 1u);
    EXPECT_FALSE(s.idempotent("alice", "/rof.v1.Control/CreateRegion", "old"));
    EXPECT_TRUE(s.idempotent("alice", "/rof.v1.Control/CreateRegion", "k1"));
    EXPECT_EQ(s.prune_idempotent(600), 0u);
    EXPECT_EQ(s.prune_idempotent(-10), 1u);  // everything is older than 10 s from now
    EXPECT_FALSE(s.idempotent("alice", "/rof.v1.Control/CreateRegion", "k1"));
}

// Records name the tenant whose objects their call acted on, and go with
// it, whoever made them.
TEST(Store, IdempotencyRecordsNamingATenantAreDroppedWithIt) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    Store::Idempotent r;
    r.request_hash = "h";
    r.tenant = "kv";
    s.put_idempotent("admin", "CreateRegion", "a1", r);
    s.put_idempotent("tenant:kv", "CreateRegion", "k1", r);
    r.tenant = "analytics";
    s.put_idempotent("admin", "CreateRegion", "a2", r);
    r.tenant.clear();
    s.put_idempotent("admin", "DestroyTenant", "a3", r);
    const auto got = s.idempotent("admin", "CreateRegion", "a2");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->tenant, "analytics");

    EXPECT_EQ(s.delete_idempotent_naming("kv"), 2u);
    EXPECT_FALSE(s.idempotent("admin", "CreateRegion", "a1"));
    EXPECT_FALSE(s.idempotent("tenant:kv", "CreateRegion", "k1"));
    EXPECT_TRUE(s.idempotent("admin", "CreateRegion", "a2"));
    EXPECT_TRUE(s.idempotent("admin", "DestroyTenant", "a3"));
    EXPECT_EQ(s.delete_idempotent_naming("kv"), 0u);
}

// A database of schema 1 (records without a tenant) is migrated: its
// records are kept and name no tenant.
TEST(Store, IdempotencyOfSchemaOneIsMigrated) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    {
        Store s(path);
        Store::Idempotent r;
        r.request_hash = "h";
        s.put_idempotent("admin", "CreateRegion", "a1", r);
    }
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE);
        db.exec("DROP INDEX idempotency_tenant");
        db.exec("ALTER TABLE idempotency DROP COLUMN tenant");
        db.exec("ALTER TABLE regions RENAME COLUMN access TO access");  // (retired name)
        db.exec("PRAGMA user_version = 1");
    }
    Store s(path);
    EXPECT_EQ(user_version(path), Store::schema_version());
    const auto got = s.idempotent("admin", "CreateRegion", "a1");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->tenant, "");
}

// A database of schema 2 (the column of a region's access bits named as
// step 1 named it) is migrated: its regions keep their bits.
TEST(Store, RegionsOfSchemaTwoKeepTheirAccess) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    {
        Store s(path);
        s.put_tenant({"kv", 1});
        StoredRegion r = region("kv", "table", 4096);
        r.access = 5;
        s.put_region(r);
    }
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE);
        db.exec("ALTER TABLE regions RENAME COLUMN access TO access");  // (retired name)
        db.exec("PRAGMA user_version = 2");
    }
    Store s(path);
    EXPECT_EQ(user_version(path), Store::schema_version());
    const auto regions = s.regions();
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].name, "table");
    EXPECT_EQ(regions[0].access, 5u);
}

TEST(Store, TransactionCommitsAndReturns) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    const int n = s.transaction([&] {
        s.put_tenant({"a", 1});
        s.put_region(region("a", "r", 1));
        return 42;
    });
    EXPECT_EQ(n, 42);
    EXPECT_EQ(s.tenants().size(), 1u);
    EXPECT_EQ(s.regions().size(), 1u);
}

TEST(Store, TransactionRollsBackOnException) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"keep", 1});
    EXPECT_THROW(s.transaction([&] {
        s.put_tenant({"a", 1});
        s.put_region(region("a", "r", 1));
        s.delete_tenant("keep");
        throw std::runtime_error("ioctl failed");
    }),
                 std::runtime_error);
    auto t = s.tenants();
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].name, "keep");
    EXPECT_TRUE(s.regions().empty());
    // The Store is usable afterwards.
    s.put_tenant({"b", 2});
    EXPECT_EQ(s.tenants().size(), 2u);
}

TEST(Store, TransactionsNest) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    Store s(path);
    s.transaction([&] {
        s.put_tenant({"outer", 1});
        s.transaction([&] { s.put_tenant({"inner", 2}); });
        // Not committed yet: another connection does not see either.
        SQLite::Database other(path, SQLite::OPEN_READONLY);
        EXPECT_EQ(other.execAndGet("SELECT count(*) FROM tenants").getInt(), 0);
    });
    EXPECT_EQ(s.tenants().size(), 2u);

    // An inner failure that propagates rolls back the outer too.
    EXPECT_THROW(s.transaction([&] {
        s.put_tenant({"o2", 3});
        s.transaction([&] {
            s.put_tenant({"i2", 4});
            throw std::runtime_error("inner");
        });
    }),
                 std::runtime_error);
    EXPECT_EQ(s.tenants().size(), 2u);

    // An inner failure the outer catches undoes only the inner writes.
    s.transaction([&] {
        s.put_tenant({"o3", 5});
        try {
            s.transaction([&] {
                s.put_tenant({"i3", 6});
                throw std::runtime_error("inner");
            });
        } catch (const std::runtime_error&) {
        }
    });
    std::vector<std::string> names;
    for (const auto& t : s.tenants()) {
        names.push_back(t.name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"inner", "o3", "outer"}));
}

TEST(Store, NewerSchemaIsRefused) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("PRAGMA user_version = 999");
    }
    try {
        Store s(path);
        FAIL() << "opened";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_NE(what.find("999"), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(Store::schema_version())), std::string::npos) << what;
    }
    EXPECT_EQ(user_version(path), 999);  // untouched
}

TEST(Store, CorruptFileIsRefused) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    {
        std::mt19937 rng(1);
        std::ofstream f(path, std::ios::binary);
        for (int i = 0; i < 8192; ++i) {
            f.put(static_cast<char>(rng()));
        }
    }
    try {
        Store s(path);
        FAIL() << "opened";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
        EXPECT_NE(what.find("not a database"), std::string::npos) << what;
    }
}

TEST(Store, UnopenablePathNamesIt) {
    TempDir dir;
    const std::string file = dir.file("f");
    std::ofstream(file).close();
    const std::string path = file + "/rofd.db";  // under a regular file
    try {
        Store s(path);
        FAIL() << "opened";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(Store, MigratesFromVersionZero) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("PRAGMA user_version = 0");
        db.exec("CREATE TABLE unrelated (x INTEGER) STRICT");  // a non-empty v0 file
    }
    ASSERT_EQ(user_version(path), 0);
    {
        Store s(path);
        s.put_tenant({"t", 1});
    }
    EXPECT_EQ(user_version(path), Store::schema_version());
    Store s(path);  // reopening at the current version is a no-op
    EXPECT_EQ(s.tenants().size(), 1u);
}

TEST(Store, LockedDatabaseErrorNamesPath) {
    TempDir dir;
    const std::string path = dir.file("rofd.db");
    Store s(path);
    SQLite::Database other(path, SQLite::OPEN_READWRITE);
    other.exec("BEGIN IMMEDIATE");  // holds the write lock past the 5 s busy timeout
    try {
        s.put_tenant({"t", 1});
        FAIL() << "wrote";
    } catch (const StoreError& e) {
        EXPECT_EQ(std::string(e.what()), path + ": database is locked");
    }
    other.exec("ROLLBACK");
    s.put_tenant({"t", 1});
    EXPECT_EQ(s.tenants().size(), 1u);
}

TEST(Store, ConcurrentReadsWhileWriting) {
    TempDir dir;
    Store s(dir.file("rofd.db"));
    s.put_tenant({"t", 1});
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::atomic<long> reads{0};
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i) {
        readers.emplace_back([&] {
            while (!stop) {
                try {
                    for (const auto& r : s.regions()) {
                        // Each region is written with size == its free-list count.
                        if (r.freelists.size() != r.size) {
                            ++failures;
                        }
                    }
                    s.programs();
                    s.tenants();
                    ++reads;
                } catch (const std::exception&) {
                    ++failures;
                }
            }
        });
    }
    try {
        for (int i = 0; i < 200; ++i) {
            const std::uint64_t n = static_cast<std::uint64_t>(i % 5);
            std::vector<StoredFreeList> fl(n, StoredFreeList{64, 0, 1});
            s.put_region(region("t", "r" + std::to_string(i % 7), n, fl));
            s.put_program(program("t", static_cast<std::uint64_t>(i % 3)));
            if (i % 11 == 0) {
                s.delete_region("t", "r0");
            }
        }
    } catch (...) {
        stop = true;
        for (auto& t : readers) {
            t.join();
        }
        throw;
    }
    stop = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(failures, 0);
    EXPECT_GT(reads, 0);
}

}  // namespace
}  // namespace rofd
