// SPDX-License-Identifier: MIT
// rofd's persistent state: one SQLite database (WAL, synchronous=FULL)
// under the state directory, /var/lib/rof/rofd.db by default.
//
// What it keeps is what rofd needs to rebuild the module's objects after a
// module reload or a reboot, and what must not change across a restart:
// tenants (with the module id they had), regions and their free lists
// created through the API, programs (source, verified image, disassembly),
// the ticket key, and the result of every mutating call by idempotency
// key.  Objects declared by policy are not stored: policy recreates them.
//
// A state change runs in one fixed order (docs/architecture.md): the
// intent is written (state "intent"), the ioctl runs, then the row is
// committed (state "committed") together with the call's idempotency
// record.  Reconciliation settles rows left in "intent" by a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "module.h"  // TicketKey

namespace rofd {

// The database cannot be opened, migrated or written.  what() names the
// file and SQLite's reason.
class StoreError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class RowState { intent, committed };

struct StoredTenant {
    std::string name;
    std::uint32_t id = 0;  // the module id it had; reused on re-creation
};

struct StoredFreeList {
    std::uint32_t block_size = 0;
    std::uint64_t offset = 0;
    std::uint32_t count = 0;
};

// What Module::region_create takes to make @lists with their region.
inline std::vector<rof_freelist_spec> freelist_specs(const std::vector<StoredFreeList>& lists) {
    std::vector<rof_freelist_spec> out;
    out.reserve(lists.size());
    for (const auto& f : lists) {
        out.push_back(rof_freelist_spec{f.offset, f.block_size, f.count, 0, 0});
    }
    return out;
}

struct StoredRegion {
    std::string tenant;
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t access = 0;  // ROF_ACCESS_*
    std::vector<StoredFreeList> freelists;
    RowState state = RowState::intent;
};

// Slot i of a program binds region @region of the program's tenant and,
// for a free-list slot, that region's free list number @freelist
// (0-based, in StoredRegion::freelists / policy order), else -1.
struct StoredBind {
    std::string region;
    std::int32_t freelist = -1;
};

struct StoredProgram {
    std::string tenant;
    std::string name;
    std::uint64_t tag = 0;
    std::string source;               // .rofs text as submitted; empty for an image
    std::vector<std::uint8_t> image;  // the verified image, as loaded
    std::string disassembly;
    std::vector<StoredBind> binds;
    std::uint64_t budget = 0;
    std::uint64_t byte_budget = 0;
    std::int64_t created_ns = 0;  // CLOCK_REALTIME
    RowState state = RowState::intent;
};

// Thread safety: one Store may be used from several threads (rofd writes
// from one worker thread, reads come from gRPC threads).  It has one
// connection behind a mutex: each call holds it for its duration, and a
// transaction() holds it from BEGIN to COMMIT, so readers on other threads
// wait for an open transaction and never see its uncommitted rows.
class Store {
  public:
    // Opens or creates @path (mode 0600; its directory is made 0700 when
    // missing), sets WAL and synchronous=FULL, migrates the schema to the
    // current PRAGMA user_version.  A database newer than this rofd is
    // refused.  Throws StoreError.
    explicit Store(const std::string& path);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const std::string& path() const noexcept;
    static int schema_version();

    // The ticket key; std::nullopt until set.
    std::optional<TicketKey> ticket_key();
    void set_ticket_key(const TicketKey& key);

    std::vector<StoredTenant> tenants();
    void put_tenant(const StoredTenant& t);       // insert or replace by name
    void delete_tenant(const std::string& name);  // and its regions, programs

    std::vector<StoredRegion> regions();
    void put_region(const StoredRegion& r);  // insert or replace by (tenant, name)
    void delete_region(const std::string& tenant, const std::string& name);

    // Every row whole, source, image and disassembly included: for the
    // reconciliation at start, which may have to load any of them.
    std::vector<StoredProgram> programs();
    // The rows of @tenant (empty: of every tenant) without their source,
    // image and disassembly (left empty): what a list needs.
    std::vector<StoredProgram> program_index(const std::string& tenant = {});
    // One row whole; std::nullopt when there is none.
    std::optional<StoredProgram> program(const std::string& tenant, std::uint64_t tag);
    // Bytes of source, image and disassembly stored for @tenant.
    std::uint64_t program_bytes(const std::string& tenant);
    void put_program(const StoredProgram& p);  // insert or replace by (tenant, tag)
    void delete_program(const std::string& tenant, std::uint64_t tag);

    // Idempotency: the serialized response of a mutating call, by the key
    // the caller chose, scoped to the caller's principal and the method.
    // A key reused for another request body is a conflict: @request_hash
    // differs, and the caller gets FAILED_PRECONDITION (see Manager).
    //
    // A call's record is written "pending" (status_code pending, no
    // response) with its intent rows, before the ioctl, and replaced by the
    // answer when the call commits: a pending record after a restart is a
    // call that a crash interrupted (Manager::interrupted()).
    struct Idempotent {
        static constexpr int pending = -1;
        std::string request_hash;
        std::string response;  // serialized protobuf
        int status_code = 0;   // grpc::StatusCode of the first answer, or pending
        std::string status_message;
        // The tenant whose objects the call acted on ("": none); the record
        // is dropped with that tenant (delete_idempotent_naming()).
        std::string tenant;
    };
    std::optional<Idempotent> idempotent(const std::string& principal, const std::string& method,
                                         const std::string& key);
    void put_idempotent(const std::string& principal, const std::string& method,
                        const std::string& key, const Idempotent& result);
    // Drops records older than @max_age_s; returns how many.
    std::size_t prune_idempotent(std::int64_t max_age_s);
    // Drops every record of @principal ("tenant:kv"); returns how many.
    std::size_t delete_idempotent(const std::string& principal);
    // Drops every record, whoever's, of a call that acted on @tenant's
    // objects (an admin's naming it); returns how many.
    std::size_t delete_idempotent_naming(const std::string& tenant);

    // Runs @fn in one transaction (BEGIN IMMEDIATE ... COMMIT); rolls back
    // when it throws.  Calls may nest: only the outermost commits.  An inner
    // call is a SAVEPOINT: when its @fn throws, its own writes are undone,
    // and so are the outer ones if the exception leaves the outer @fn too;
    // an outer @fn that catches it commits its other writes.  The put_*
    // calls are transactions of their own and nest the same way.
    template <typename Fn>
    auto transaction(Fn&& fn) {
        Txn t(*this);
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
            t.commit();
        } else {
            auto r = fn();
            t.commit();
            return r;
        }
    }

  private:
    class Txn {
      public:
        explicit Txn(Store& s);
        ~Txn();
        void commit();
        Txn(const Txn&) = delete;
        Txn& operator=(const Txn&) = delete;

      private:
        Store& s_;
        bool outer_ = false;
        bool done_ = false;
    };

    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rofd
