// SPDX-License-Identifier: MIT
// FakeModule: rofd::Module in memory, for the unit tests of everything
// built on Module.  It keeps the module's rules and errnos (docs/kmod.md)
// closely enough that a service behaves against it as against rof.ko:
// names, unique names and ids, ids assigned round from 1, quotas (EDQUOT),
// region sizes, busy objects (EBUSY, ENOTEMPTY for tenants), cascading
// destroys, usage, grants and access, the ticket key (ENOKEY), program
// headers and bindings, one audit reader (EBUSY).
//
// What it does not model: RDMA (a session stays prepared unless a test
// calls connect_session()), memory (region_token() returns random bits that
// nothing checks; no ENOMEM), the ticket MAC (random bytes, not
// HMAC-SHA256), the image tag's CRC (EBADMSG), instruction checks (only the
// header and slot table are read), the reaper (expired prepared sessions
// stay, and no ROF_AUDIT_INVOKE_SKIPPED record is written: a session's count
// of INVOKEs left out waits for its next record), the audit ring's reserve
// (nothing is dropped), rate enforcement, and capabilities (no EPERM).
// INVOKEs run only when a test calls invoke(), with the module's rules for
// their records and counters (invoke_records).
//
// Errors are KmodError with what() "fake: ROF_IOC_NAME: reason", the shape of
// Kmod's.  Thread-safe: one mutex around everything.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "module.h"

namespace rofd {

class FakeModule final : public Module {
  public:
    // What the fake reports as its version.
    static constexpr const char* fake_version = "fake";
    // The audit ring's size and its invocation reserve, as the module's
    // default audit_ring_size.
    static constexpr std::uint32_t audit_ring_size = 4096;
    // The module parameter idle_timeout_ms's default, for sessions
    // prepared with 0 (set_idle_timeout_default_ms() changes it, as an
    // operator may change the parameter).
    static constexpr std::uint32_t idle_timeout_default_ms = ROF_SESSION_IDLE_DEFAULT_MS;

    FakeModule();
    ~FakeModule() override;

    ModuleVersion version() override;
    // version()'s minor (set_abi_minor), with no command counted: Kmod asks
    // the module once and keeps it.
    std::uint32_t abi_minor() override;
    std::vector<DeviceInfo> list_devices() override;

    std::uint32_t tenant_create(const std::string& name, std::uint32_t id) override;
    void tenant_destroy(std::uint32_t id, bool force) override;
    void tenant_set_quota(std::uint32_t id, const rof_tenant_quota& quota) override;
    void tenant_set_rate(std::uint32_t id, const rof_rate& rate) override;
    std::vector<rof_tenant_info> list_tenants() override;
    std::optional<rof_tenant_info> get_tenant(std::uint32_t id) override;

    std::uint32_t region_create(std::uint32_t tenant, const std::string& name, std::uint64_t size,
                                std::uint32_t access,
                                std::span<rof_freelist_spec> freelists = {}) override;
    void region_destroy(std::uint32_t id, bool force) override;
    std::vector<rof_region_info> list_regions() override;
    std::optional<rof_region_info> get_region(std::uint32_t id) override;
    std::optional<rof_region_info> find_region(std::uint32_t tenant,
                                               const std::string& name) override;
    RegionToken region_token(std::uint32_t region, std::uint32_t access,
                             std::uint32_t ttl_ms) override;
    std::uint32_t freelist_create(std::uint32_t region, std::uint32_t block_size,
                                  std::uint64_t offset, std::uint32_t count) override;
    void freelist_destroy(std::uint32_t id, bool force) override;
    std::vector<rof_freelist_info> list_freelists() override;

    std::uint64_t prog_load(rof_prog_load& req, std::span<const std::uint8_t> image) override;
    std::uint64_t prog_replace(rof_prog_load& req, std::span<const std::uint8_t> image,
                               std::uint64_t old_tag) override;
    void prog_unload(std::uint32_t tenant, std::uint64_t tag) override;
    std::vector<rof_prog_info> list_progs() override;
    std::optional<rof_prog_info> get_prog(std::uint32_t tenant, std::uint64_t tag) override;

    void set_ticket_key(const TicketKey& key) override;
    void session_prepare(rof_session_prepare& req) override;
    std::vector<rof_session_info> list_sessions() override;
    std::optional<rof_session_info> get_session(std::uint32_t id) override;
    void session_close(std::uint32_t id) override;

    // The reader is one end of a SOCK_SEQPACKET socket pair (read-only: its
    // write side is shut down), so each read() returns one whole record and
    // the fake sees the reader close (EBUSY until then, as the module).
    // Records written while no reader is open are kept, up to the ring size
    // (older ones count as overruns); records the reader left unread when
    // it closed are lost, unlike in the module.
    UniqueFd audit_open(bool nonblock) override;
    // pending counts records not yet handed to a reader's socket.
    rof_audit_stats audit_stats() override;

    // ---- Test hooks ----

    // The devices list_devices() returns.
    void set_devices(std::vector<DeviceInfo> devices);
    // The module parameter idle_timeout_ms from now on.
    void set_idle_timeout_default_ms(std::uint32_t ms);

    // The next Module call, whichever it is, throws KmodError(@err) without
    // doing anything.
    void fail_next(int err);
    // The commands the module would have been sent so far, by name
    // ("ROF_IOC_REGION_CREATE"): what a call costs in round trips.
    std::map<std::string, std::uint64_t> commands() const;

    // Writes one audit record, with the next seq (the record's own is
    // ignored); it reaches the reader's fd if one is open.
    void push_audit(const rof_audit_record& record);

    // An INVOKE of live session @id ends with @status (enum rof_status),
    // @bytes and @insns: counted for its tenant, and recorded as the
    // tenant's invoke_records says (an error always; of status 0 every one,
    // none or every Nth of the session), every record of the session
    // carrying the count of those left out (rof_audit_record.skipped).
    // Returns whether it was recorded; ENOENT unless the session is live.
    bool invoke(std::uint32_t id, std::int32_t status, std::uint64_t bytes = 0,
                std::uint64_t insns = 0);

    // What version() reports from now on: a module of an older ABI minor
    // (below 10, SET_QUOTA refuses a non-zero invoke_records, EINVAL, as
    // the reserved field it was there).
    void set_abi_minor(std::uint32_t minor);

    // A client connects to prepared session @id with its ticket: returns 0
    // and makes it ROF_SESSION_LIVE (charging the tenant's session quota,
    // attaching it to its regions, auditing the open), or the
    // rof_reject_reason the module would refuse the connect with.
    std::uint32_t connect_session(std::uint32_t id);

    // The module is unloaded and loaded again: every object goes, ids
    // restart at 1, the ticket key is forgotten, the audit ring is empty and
    // an open reader sees end of file.
    void reload();

  private:
    struct Tenant {
        rof_tenant_info info{};
        rof_rate rate{};
    };
    using ProgKey = std::pair<std::uint32_t, std::uint64_t>;  // tenant, tag

    void enter(const char* cmd);
    [[noreturn]] static void fail(int err, const char* cmd);
    Tenant& tenant_locked(std::uint32_t id, const char* cmd);
    rof_tenant_info tenant_info_locked(const Tenant& t) const;
    rof_region_info region_info_locked(const rof_region_info& r) const;
    bool session_live(const rof_session_info& s) const;
    void close_session_locked(std::uint32_t id, std::uint32_t reason);
    rof_prog_info prog_checked_locked(rof_prog_load& req, std::span<const std::uint8_t> image,
                                      bool quota, const char* cmd);
    void unalias_locked(std::uint32_t tenant, std::uint64_t tag);
    void destroy_region_locked(std::uint32_t id, std::uint32_t reason);
    // A free list's end: header and blocks.
    static std::uint64_t freelist_end(std::uint32_t block_size, std::uint64_t offset,
                                      std::uint32_t count);
    // FREELIST_CREATE's rules of a list's fields (EINVAL, E2BIG) and its range in a region of
    // @region_size bytes (ERANGE): where it ends.
    static void check_freelist_fields(std::uint32_t block_size, std::uint64_t offset,
                                      std::uint32_t count, const char* cmd);
    static std::uint64_t check_freelist(std::uint32_t block_size, std::uint64_t offset,
                                        std::uint32_t count, std::uint64_t region_size,
                                        const char* cmd);
    void add_freelist_locked(std::uint32_t region, std::uint32_t tenant,
                             const rof_freelist_spec& spec);
    void audit_locked(rof_audit_record record);
    // A record of session @record.session: it carries and resets the count.
    void audit_session_locked(rof_audit_record record);
    void flush_audit_locked();
    bool reader_open_locked();

    mutable std::mutex mu_;
    std::optional<int> fail_next_;
    std::map<std::string, std::uint64_t> commands_;
    std::vector<DeviceInfo> devices_;

    std::map<std::uint32_t, Tenant> tenants_;
    std::set<std::string> tenant_names_;  // index of tenants_ by name
    std::map<std::uint32_t, rof_region_info> regions_;
    std::map<std::uint32_t, rof_freelist_info> freelists_;
    std::map<ProgKey, rof_prog_info> progs_;
    // The tags each program serves besides its own, oldest first (ROF_IOC_PROG_REPLACE).
    // The module lets go of the least recently invoked past the cap; nothing invokes
    // here, so that is the oldest.
    std::map<ProgKey, std::vector<std::uint64_t>> alias_tags_;
    std::map<std::uint32_t, rof_session_info> sessions_;
    struct SessionSkip {
        std::uint64_t count = 0;  // status-0 INVOKEs with no record, not yet carried
        std::uint32_t since = 0;  // status-0 INVOKEs since the last recorded (sample:N)
    };
    std::map<std::uint32_t, SessionSkip> skips_;  // by session id
    std::uint32_t abi_minor_ = ROF_ABI_MINOR;
    std::uint32_t last_tenant_ = 0;
    std::uint32_t last_region_ = 0;
    std::uint32_t last_freelist_ = 0;
    std::uint32_t last_session_ = 0;
    std::uint32_t idle_timeout_ms_ = idle_timeout_default_ms;
    std::optional<TicketKey> ticket_key_;

    // The audit ring: records not yet handed to a reader.
    std::deque<rof_audit_record> audit_queue_;
    std::uint64_t audit_next_seq_ = 1;
    std::uint64_t audit_overruns_ = 0;
    UniqueFd audit_writer_;  // our end of the reader's socket pair
};

}  // namespace rofd
