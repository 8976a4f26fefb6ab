// SPDX-License-Identifier: MIT
#include "store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "unique_fd.h"

namespace rofd {

namespace {

// The schema, one migration step per element: user_version N means steps
// 1..N (elements 0..N-1) are applied.  Append only; never edit a step that
// has shipped.  u64 values (tags, sizes, offsets, budgets) are stored as
// the int64 with the same bit pattern.
constexpr std::array<std::string_view, 3> kMigrations = {
    R"sql(
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) STRICT;

CREATE TABLE tenants (
    name TEXT PRIMARY KEY NOT NULL,
    id   INTEGER NOT NULL
) STRICT;

CREATE TABLE regions (
    tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    size   INTEGER NOT NULL,
    access INTEGER NOT NULL, -- (retired name) renamed by step 3
    state  TEXT NOT NULL CHECK (state IN ('intent', 'committed')),
    PRIMARY KEY (tenant, name)
) STRICT;

CREATE TABLE freelists (
    tenant     TEXT NOT NULL,
    region     TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    block_size INTEGER NOT NULL,
    "offset"   INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (tenant, region, idx),
    FOREIGN KEY (tenant, region) REFERENCES regions(tenant, name) ON DELETE CASCADE
) STRICT;

CREATE TABLE programs (
    tenant      TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    tag         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    source      TEXT NOT NULL,
    image       BLOB NOT NULL,
    disassembly TEXT NOT NULL,
    budget      INTEGER NOT NULL,
    byte_budget INTEGER NOT NULL,
    created_ns  INTEGER NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('intent', 'committed')),
    PRIMARY KEY (tenant, tag)
) STRICT;

-- region names the tenant's region, which may be declared by policy and
-- so not stored here: no foreign key to regions.
CREATE TABLE program_binds (
    tenant   TEXT NOT NULL,
    tag      INTEGER NOT NULL,
    slot     INTEGER NOT NULL,
    region   TEXT NOT NULL,
    freelist INTEGER NOT NULL,
    PRIMARY KEY (tenant, tag, slot),
    FOREIGN KEY (tenant, tag) REFERENCES programs(tenant, tag) ON DELETE CASCADE
) STRICT;

CREATE TABLE idempotency (
    principal      TEXT NOT NULL,
    method         TEXT NOT NULL,
    key            TEXT NOT NULL,
    request_hash   BLOB NOT NULL,
    response       BLOB NOT NULL,
    status_code    INTEGER NOT NULL,
    status_message TEXT NOT NULL,
    created_s      INTEGER NOT NULL,
    PRIMARY KEY (principal, method, key)
) STRICT;

CREATE INDEX idempotency_created ON idempotency(created_s);
)sql",
    // The tenant an idempotency record's call named (an admin's calls
    // name one; '': none), so that its records go with the tenant.
    R"sql(
ALTER TABLE idempotency ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX idempotency_tenant ON idempotency(tenant);
)sql",
    // A region's ROF_ACCESS_* bits are its access, as everywhere else
    // (the grants' name); step 1 named the column otherwise.
    R"sql(
ALTER TABLE regions RENAME COLUMN access TO access; -- (retired name)
)sql",
};

constexpr int kBusyTimeoutMs = 5000;
constexpr const char* kTicketKeyName = "ticket_key";

std::int64_t to_i64(std::uint64_t v) {
    return std::bit_cast<std::int64_t>(v);
}
std::uint64_t to_u64(std::int64_t v) {
    return std::bit_cast<std::uint64_t>(v);
}

const char* state_name(RowState s) {
    return s == RowState::committed ? "committed" : "intent";
}

std::int64_t now_s() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

// BLOBs are bound as BLOBs (a STRICT BLOB column refuses TEXT), and never
// as a null pointer, which SQLite would store as NULL.
void bind_blob(SQLite::Statement& st, int idx, const void* data, std::size_t size) {
    static const char empty = 0;
    st.bind(idx, size ? data : &empty, static_cast<int>(size));
}

std::string column_bytes(const SQLite::Column& c) {
    const void* p = c.getBlob();  // before getBytes(): it may convert
    const int n = c.getBytes();
    return n > 0 ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n))
                 : std::string();
}

}  // namespace

namespace {

struct CachedStatement {
    std::unique_ptr<SQLite::Statement> st;
    bool busy = false;  // handed out to a Prepared
};

// One use of @sql's statement from @cache (prepared on its first use); reset, its bindings
// cleared, when the Prepared goes, so that no statement keeps a read open between uses.  A
// statement already in use (one Store call inside another's loop) is prepared anew for this
// use and not kept.  Under Store::Impl::mu, in Impl::guard.
class Prepared {
  public:
    Prepared(SQLite::Database& db, std::unordered_map<std::string, CachedStatement>& cache,
             const std::string& sql) {
        CachedStatement& c = cache[sql];
        if (c.busy) {
            own_ = std::make_unique<SQLite::Statement>(db, sql);
            st_ = own_.get();
            return;
        }
        if (!c.st) {
            c.st = std::make_unique<SQLite::Statement>(db, sql);
        }
        c.busy = true;
        busy_ = &c.busy;
        st_ = c.st.get();
    }
    ~Prepared() {
        if (busy_ != nullptr) {
            st_->tryReset();
            try {
                st_->clearBindings();
            } catch (const SQLite::Exception&) {
                // sqlite3_clear_bindings() has no failure; every use binds every parameter.
            }
            *busy_ = false;
        }
    }
    Prepared(const Prepared&) = delete;
    Prepared& operator=(const Prepared&) = delete;

    template <typename... Args>
    void bind(Args&&... args) {
        st_->bind(std::forward<Args>(args)...);
    }
    int exec() { return st_->exec(); }
    bool executeStep() { return st_->executeStep(); }
    SQLite::Column getColumn(int i) { return st_->getColumn(i); }
    void reset() { st_->reset(); }
    operator SQLite::Statement&() { return *st_; }  // NOLINT(google-explicit-constructor)

  private:
    std::unique_ptr<SQLite::Statement> own_;  // when the cached one is busy
    SQLite::Statement* st_ = nullptr;
    bool* busy_ = nullptr;
};

}  // namespace

// Thread safety: one connection, guarded by @mu.  Every public call holds
// it for its duration, and a Txn holds it from BEGIN to COMMIT/ROLLBACK,
// so a reader on a gRPC thread waits for an open transaction on the
// writer's thread (keep transactions short) and never sees its uncommitted
// rows.  The mutex is recursive because calls nest inside transaction().
struct Store::Impl {
    std::string path;
    std::recursive_mutex mu;
    std::unique_ptr<SQLite::Database> db;  // under mu
    int depth = 0;                         // open Txns, under mu

    [[noreturn]] void fail(const std::string& what) const { throw StoreError(path + ": " + what); }

    // Runs @fn, turning SQLite's exceptions into StoreError.
    template <typename Fn>
    auto guard(Fn&& fn) {
        try {
            return fn();
        } catch (const SQLite::Exception& e) {
            fail(e.what());
        }
    }

    void exec(const char* sql) {
        guard([&] { db->exec(sql); });
    }

    // Statements prepared once and kept, by their SQL (under mu): preparing (parsing,
    // planning) a one-row statement costs several times running it, and a reload of 10,000
    // tenants writes a row for each.  Declared after db: finalized before it closes.
    std::unordered_map<std::string, CachedStatement> prepared;

    Prepared prepare(const std::string& sql) { return Prepared(*db, prepared, sql); }
};

namespace {

// A read of several statements seeing one snapshot: a savepoint, which
// outside a transaction starts a deferred (read) one.
class ReadTxn {
  public:
    explicit ReadTxn(SQLite::Database& db) : db_(db) { db_.exec("SAVEPOINT rofd_read"); }
    ~ReadTxn() {
        try {
            db_.exec("RELEASE rofd_read");
        } catch (const SQLite::Exception&) {
            // Only reads ran; nothing to keep or lose.
        }
    }
    ReadTxn(const ReadTxn&) = delete;
    ReadTxn& operator=(const ReadTxn&) = delete;

  private:
    SQLite::Database& db_;
};

// Makes the missing directories of @dir, each 0700.
void make_dirs(const std::filesystem::path& dir, const std::string& db_path) {
    if (dir.empty()) {
        return;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            throw StoreError(db_path + ": " + dir.string() + " is not a directory");
        }
        return;
    }
    if (errno != ENOENT) {
        throw StoreError(db_path + ": " + dir.string() + ": " + std::strerror(errno));
    }
    if (dir.has_parent_path() && dir.parent_path() != dir) {
        make_dirs(dir.parent_path(), db_path);
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        throw StoreError(db_path + ": mkdir " + dir.string() + ": " + std::strerror(errno));
    }
    // The umask can only narrow it; make it exactly 0700.
    if (::chmod(dir.c_str(), 0700) != 0) {
        throw StoreError(db_path + ": chmod " + dir.string() + ": " + std::strerror(errno));
    }
}

// Creates @path 0600 before SQLite does (SQLite would use 0644 & ~umask),
// or narrows an existing file that is readable by others.  SQLite gives
// the -wal and -shm files the database file's mode.
void create_private(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) {
        throw StoreError(path + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw StoreError(path + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw StoreError(path + ": not a regular file");
    }
    if ((st.st_mode & 07777 & ~mode_t{0600}) != 0 && ::fchmod(fd.get(), 0600) != 0) {
        throw StoreError(path + ": fchmod: " + std::strerror(errno));
    }
    // Closed before SQLite opens the file: closing any fd of a file drops
    // the process's POSIX locks on it, SQLite's included.
}

}  // namespace

Store::Store(const std::string& path) : impl_(std::make_unique<Impl>()) {
    impl_->path = path;
    if (::sqlite3_libversion_number() < 3037000) {
        impl_->fail(std::string("SQLite ") + ::sqlite3_libversion() +
                    " has no STRICT tables (3.37 or later needed)");
    }
    make_dirs(std::filesystem::path(path).parent_path(), path);
    create_private(path);

    impl_->guard([&] {
        impl_->db = std::make_unique<SQLite::Database>(
            path, SQLite::OPEN_READWRITE | SQLite::OPEN_NOFOLLOW, kBusyTimeoutMs);
    });
    SQLite::Database& db = *impl_->db;

    // Refuse a newer schema before writing anything (journal_mode=WAL
    // writes the header).  A file that is not a database fails here.
    const int version = impl_->guard([&] { return db.execAndGet("PRAGMA user_version").getInt(); });
    if (version > schema_version()) {
        impl_->fail("database schema version " + std::to_string(version) +
                    " is newer than this rofd's " + std::to_string(schema_version()) +
                    "; refusing to open it");
    }

    const std::string mode =
        impl_->guard([&] { return db.execAndGet("PRAGMA journal_mode=WAL").getString(); });
    if (mode != "wal") {
        impl_->fail("cannot set journal_mode=WAL (still " + mode + ")");
    }
    impl_->exec("PRAGMA synchronous=FULL");
    impl_->exec("PRAGMA foreign_keys=ON");

    // Each step in its own transaction, re-reading the version under the
    // write lock in case another process migrates at the same time.
    for (;;) {
        Txn t(*this);
        const int v = impl_->guard([&] { return db.execAndGet("PRAGMA user_version").getInt(); });
        if (v > schema_version()) {
            impl_->fail("database schema version " + std::to_string(v) +
                        " is newer than this rofd's " + std::to_string(schema_version()));
        }
        if (v == schema_version()) {
            t.commit();
            break;
        }
        impl_->exec(std::string(kMigrations[static_cast<std::size_t>(v)]).c_str());
        impl_->exec(("PRAGMA user_version=" + std::to_string(v + 1)).c_str());
        t.commit();
    }
}

Store::~Store() = default;

const std::string& Store::path() const noexcept {
    return impl_->path;
}

int Store::schema_version() {
    return static_cast<int>(kMigrations.size());
}

// ---- transactions ---------------------------------------------------------

// The outermost Txn is BEGIN IMMEDIATE ... COMMIT; an inner one is a
// SAVEPOINT, so an inner failure undoes only the inner work when the
// caller catches it, and everything when it propagates out.
Store::Txn::Txn(Store& s) : s_(s) {
    Impl& im = *s_.impl_;
    im.mu.lock();
    try {
        outer_ = im.depth == 0;
        if (outer_) {
            im.exec("BEGIN IMMEDIATE");
        } else {
            im.exec(("SAVEPOINT rofd_" + std::to_string(im.depth)).c_str());
        }
        ++im.depth;
    } catch (...) {
        im.mu.unlock();
        throw;
    }
}

void Store::Txn::commit() {
    Impl& im = *s_.impl_;
    if (outer_) {
        im.exec("COMMIT");
    } else {
        im.exec(("RELEASE rofd_" + std::to_string(im.depth - 1)).c_str());
    }
    done_ = true;
}

Store::Txn::~Txn() {
    Impl& im = *s_.impl_;
    if (!done_) {
        try {
            if (outer_) {
                im.db->exec("ROLLBACK");
            } else {
                const std::string sp = "rofd_" + std::to_string(im.depth - 1);
                im.db->exec("ROLLBACK TO " + sp);
                im.db->exec("RELEASE " + sp);
            }
        } catch (const SQLite::Exception&) {
            // SQLite already rolled back (e.g. on an I/O error); the outer
            // COMMIT, if any, will report it.
        }
    }
    --im.depth;
    im.mu.unlock();
}

// ---- ticket key -----------------------------------------------------------

std::optional<TicketKey> Store::ticket_key() {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&]() -> std::optional<TicketKey> {
        Prepared st = impl_->prepare("SELECT value FROM meta WHERE key = ?");
        st.bind(1, kTicketKeyName);
        if (!st.executeStep()) {
            return std::nullopt;
        }
        const std::string v = column_bytes(st.getColumn(0));
        TicketKey key{};
        if (v.size() != key.size()) {
            impl_->fail("stored ticket key has " + std::to_string(v.size()) + " bytes, not " +
                        std::to_string(key.size()));
        }
        std::memcpy(key.data(), v.data(), key.size());
        return key;
    });
}

void Store::set_ticket_key(const TicketKey& key) {
    std::lock_guard lk(impl_->mu);
    impl_->guard([&] {
        Prepared st = impl_->prepare(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
        st.bind(1, kTicketKeyName);
        bind_blob(st, 2, key.data(), key.size());
        st.exec();
    });
}

// ---- tenants ----------------------------------------------------------------

std::vector<StoredTenant> Store::tenants() {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        std::vector<StoredTenant> out;
        Prepared st = impl_->prepare("SELECT name, id FROM tenants ORDER BY name");
        while (st.executeStep()) {
            out.push_back({st.getColumn(0).getString(),
                           static_cast<std::uint32_t>(st.getColumn(1).getInt64())});
        }
        return out;
    });
}

void Store::put_tenant(const StoredTenant& t) {
    std::lock_guard lk(impl_->mu);
    // An upsert, not INSERT OR REPLACE: REPLACE deletes the old row first,
    // and the delete would cascade to the tenant's regions and programs.
    impl_->guard([&] {
        Prepared st = impl_->prepare(
            "INSERT INTO tenants (name, id) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET id = excluded.id");
        st.bind(1, t.name);
        st.bind(2, t.id);
        st.exec();
    });
}

void Store::delete_tenant(const std::string& name) {
    std::lock_guard lk(impl_->mu);
    // Regions, their free lists, programs and their binds go by ON DELETE
    // CASCADE (foreign_keys=ON).
    impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM tenants WHERE name = ?");
        st.bind(1, name);
        st.exec();
    });
}

// ---- regions ----------------------------------------------------------------

std::vector<StoredRegion> Store::regions() {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        SQLite::Database& db = *impl_->db;
        ReadTxn snapshot(db);
        std::vector<StoredRegion> out;
        SQLite::Statement st(db,
                             "SELECT tenant, name, size, access, state FROM regions "
                             "ORDER BY tenant, name");
        SQLite::Statement fl(db,
                             "SELECT block_size, \"offset\", count FROM freelists "
                             "WHERE tenant = ? AND region = ? ORDER BY idx");
        while (st.executeStep()) {
            StoredRegion r;
            r.tenant = st.getColumn(0).getString();
            r.name = st.getColumn(1).getString();
            r.size = to_u64(st.getColumn(2).getInt64());
            r.access = static_cast<std::uint32_t>(st.getColumn(3).getInt64());
            r.state =
                st.getColumn(4).getString() == "committed" ? RowState::committed : RowState::intent;
            fl.reset();
            fl.bind(1, r.tenant);
            fl.bind(2, r.name);
            while (fl.executeStep()) {
                r.freelists.push_back({static_cast<std::uint32_t>(fl.getColumn(0).getInt64()),
                                       to_u64(fl.getColumn(1).getInt64()),
                                       static_cast<std::uint32_t>(fl.getColumn(2).getInt64())});
            }
            out.push_back(std::move(r));
        }
        return out;
    });
}

void Store::put_region(const StoredRegion& r) {
    Txn t(*this);
    impl_->guard([&] {
        Prepared st = impl_->prepare(
            "INSERT INTO regions (tenant, name, size, access, state) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET "
            "size = excluded.size, access = excluded.access, "
            "state = excluded.state");
        st.bind(1, r.tenant);
        st.bind(2, r.name);
        st.bind(3, to_i64(r.size));
        st.bind(4, r.access);
        st.bind(5, state_name(r.state));
        st.exec();

        Prepared del = impl_->prepare("DELETE FROM freelists WHERE tenant = ? AND region = ?");
        del.bind(1, r.tenant);
        del.bind(2, r.name);
        del.exec();

        Prepared ins = impl_->prepare(
            "INSERT INTO freelists (tenant, region, idx, block_size, "
            "\"offset\", count) VALUES (?, ?, ?, ?, ?, ?)");
        for (std::size_t i = 0; i < r.freelists.size(); ++i) {
            const StoredFreeList& f = r.freelists[i];
            ins.reset();
            ins.bind(1, r.tenant);
            ins.bind(2, r.name);
            ins.bind(3, static_cast<std::int64_t>(i));
            ins.bind(4, f.block_size);
            ins.bind(5, to_i64(f.offset));
            ins.bind(6, f.count);
            ins.exec();
        }
    });
    t.commit();
}

void Store::delete_region(const std::string& tenant, const std::string& name) {
    std::lock_guard lk(impl_->mu);
    impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM regions WHERE tenant = ? AND name = ?");
        st.bind(1, tenant);
        st.bind(2, name);
        st.exec();
    });
}

// ---- programs ---------------------------------------------------------------

namespace {

// Program rows, with the large columns (source, image, disassembly) when
// @full, else without (empty).  @where filters "programs" by the bound
// values: @tenant unless empty, then @tag when set.
std::vector<StoredProgram> read_programs(SQLite::Database& db, bool full, const char* where,
                                         const std::string& tenant,
                                         std::optional<std::uint64_t> tag) {
    ReadTxn snapshot(db);
    std::vector<StoredProgram> out;
    const std::string big = full ? "source, image, disassembly" : "'', X'', ''";
    SQLite::Statement st(db, "SELECT tenant, tag, name, " + big +
                                 ", budget, byte_budget, created_ns, state FROM programs " + where +
                                 " ORDER BY tenant, tag");
    int arg = 1;
    if (!tenant.empty()) {
        st.bind(arg++, tenant);
    }
    if (tag) {
        st.bind(arg++, to_i64(*tag));
    }
    SQLite::Statement bs(db,
                         "SELECT region, freelist FROM program_binds "
                         "WHERE tenant = ? AND tag = ? ORDER BY slot");
    while (st.executeStep()) {
        StoredProgram p;
        p.tenant = st.getColumn(0).getString();
        p.tag = to_u64(st.getColumn(1).getInt64());
        p.name = st.getColumn(2).getString();
        p.source = column_bytes(st.getColumn(3));
        const std::string image = column_bytes(st.getColumn(4));
        p.image.assign(image.begin(), image.end());
        p.disassembly = column_bytes(st.getColumn(5));
        p.budget = to_u64(st.getColumn(6).getInt64());
        p.byte_budget = to_u64(st.getColumn(7).getInt64());
        p.created_ns = st.getColumn(8).getInt64();
        p.state =
            st.getColumn(9).getString() == "committed" ? RowState::committed : RowState::intent;
        bs.reset();
        bs.bind(1, p.tenant);
        bs.bind(2, to_i64(p.tag));
        while (bs.executeStep()) {
            p.binds.push_back({bs.getColumn(0).getString(),
                               static_cast<std::int32_t>(bs.getColumn(1).getInt64())});
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace

std::vector<StoredProgram> Store::programs() {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] { return read_programs(*impl_->db, true, "", {}, std::nullopt); });
}

std::vector<StoredProgram> Store::program_index(const std::string& tenant) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        return read_programs(*impl_->db, false, tenant.empty() ? "" : "WHERE tenant = ?", tenant,
                             std::nullopt);
    });
}

std::optional<StoredProgram> Store::program(const std::string& tenant, std::uint64_t tag) {
    std::lock_guard lk(impl_->mu);
    auto rows = impl_->guard([&] {
        return read_programs(*impl_->db, true, "WHERE tenant = ? AND tag = ?", tenant, tag);
    });
    if (rows.empty()) {
        return std::nullopt;
    }
    return std::move(rows.front());
}

std::uint64_t Store::program_bytes(const std::string& tenant) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        Prepared st = impl_->prepare(
            "SELECT COALESCE(SUM(length(CAST(source AS BLOB)) + length(image) + "
            "length(CAST(disassembly AS BLOB))), 0) FROM programs "
            "WHERE tenant = ?");
        st.bind(1, tenant);
        st.executeStep();
        return to_u64(st.getColumn(0).getInt64());
    });
}

void Store::put_program(const StoredProgram& p) {
    Txn t(*this);
    impl_->guard([&] {
        Prepared st = impl_->prepare(
            "INSERT INTO programs (tenant, tag, name, source, image, disassembly, budget, "
            "byte_budget, created_ns, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, tag) DO UPDATE SET name = excluded.name, "
            "source = excluded.source, image = excluded.image, "
            "disassembly = excluded.disassembly, budget = excluded.budget, "
            "byte_budget = excluded.byte_budget, created_ns = excluded.created_ns, "
            "state = excluded.state");
        st.bind(1, p.tenant);
        st.bind(2, to_i64(p.tag));
        st.bind(3, p.name);
        st.bind(4, p.source);
        bind_blob(st, 5, p.image.data(), p.image.size());
        st.bind(6, p.disassembly);
        st.bind(7, to_i64(p.budget));
        st.bind(8, to_i64(p.byte_budget));
        st.bind(9, p.created_ns);
        st.bind(10, state_name(p.state));
        st.exec();

        Prepared del = impl_->prepare("DELETE FROM program_binds WHERE tenant = ? AND tag = ?");
        del.bind(1, p.tenant);
        del.bind(2, to_i64(p.tag));
        del.exec();

        Prepared ins = impl_->prepare(
            "INSERT INTO program_binds (tenant, tag, slot, region, freelist) "
            "VALUES (?, ?, ?, ?, ?)");
        for (std::size_t i = 0; i < p.binds.size(); ++i) {
            ins.reset();
            ins.bind(1, p.tenant);
            ins.bind(2, to_i64(p.tag));
            ins.bind(3, static_cast<std::int64_t>(i));
            ins.bind(4, p.binds[i].region);
            ins.bind(5, p.binds[i].freelist);
            ins.exec();
        }
    });
    t.commit();
}

void Store::delete_program(const std::string& tenant, std::uint64_t tag) {
    std::lock_guard lk(impl_->mu);
    impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM programs WHERE tenant = ? AND tag = ?");
        st.bind(1, tenant);
        st.bind(2, to_i64(tag));
        st.exec();
    });
}

// ---- idempotency ------------------------------------------------------------

std::optional<Store::Idempotent> Store::idempotent(const std::string& principal,
                                                   const std::string& method,
                                                   const std::string& key) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&]() -> std::optional<Idempotent> {
        Prepared st = impl_->prepare(
            "SELECT request_hash, response, status_code, status_message, tenant "
            "FROM idempotency WHERE principal = ? AND method = ? AND key = ?");
        st.bind(1, principal);
        st.bind(2, method);
        st.bind(3, key);
        if (!st.executeStep()) {
            return std::nullopt;
        }
        Idempotent r;
        r.request_hash = column_bytes(st.getColumn(0));
        r.response = column_bytes(st.getColumn(1));
        r.status_code = st.getColumn(2).getInt();
        r.status_message = column_bytes(st.getColumn(3));
        r.tenant = st.getColumn(4).getString();
        return r;
    });
}

void Store::put_idempotent(const std::string& principal, const std::string& method,
                           const std::string& key, const Idempotent& result) {
    std::lock_guard lk(impl_->mu);
    impl_->guard([&] {
        Prepared st = impl_->prepare(
            "INSERT INTO idempotency (principal, method, key, request_hash, response, "
            "status_code, status_message, created_s, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (principal, method, key) DO UPDATE SET "
            "request_hash = excluded.request_hash, response = excluded.response, "
            "status_code = excluded.status_code, status_message = excluded.status_message, "
            "created_s = excluded.created_s, tenant = excluded.tenant");
        st.bind(1, principal);
        st.bind(2, method);
        st.bind(3, key);
        bind_blob(st, 4, result.request_hash.data(), result.request_hash.size());
        bind_blob(st, 5, result.response.data(), result.response.size());
        st.bind(6, result.status_code);
        st.bind(7, result.status_message);
        st.bind(8, now_s());
        st.bind(9, result.tenant);
        st.exec();
    });
}

std::size_t Store::prune_idempotent(std::int64_t max_age_s) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM idempotency WHERE created_s < ?");
        st.bind(1, now_s() - max_age_s);
        return static_cast<std::size_t>(st.exec());
    });
}

std::size_t Store::delete_idempotent(const std::string& principal) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM idempotency WHERE principal = ?");
        st.bind(1, principal);
        return static_cast<std::size_t>(st.exec());
    });
}

std::size_t Store::delete_idempotent_naming(const std::string& tenant) {
    std::lock_guard lk(impl_->mu);
    return impl_->guard([&] {
        Prepared st = impl_->prepare("DELETE FROM idempotency WHERE tenant = ?");
        st.bind(1, tenant);
        return static_cast<std::size_t>(st.exec());
    });
}

}  // namespace rofd
