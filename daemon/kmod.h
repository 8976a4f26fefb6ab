// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "module.h"
#include "unique_fd.h"

namespace rofd {

// The oldest module ABI minor rofd works with: 0.2 has every command it
// uses; 0.3 added ROF_LIST_FROM, 0.5 ROF_GET_BY_NAME, 0.7 REGION_CREATE's
// free lists and 0.8 a session's message size, which Kmod uses when they are
// there.  A loaded module outlives a package upgrade, so
// rofd keeps working with it.
inline constexpr std::uint32_t abi_minor_min = 2;
inline constexpr std::uint32_t abi_minor_get_by_name = 5;
inline constexpr std::uint32_t abi_minor_region_freelists = 7;
// 0.8: a session's message size (rof_session_prepare.msg_size).
inline constexpr std::uint32_t abi_minor_msg_size = 8;
// 0.10: a tenant's INVOKE records (rof_tenant_quota.invoke_records); Manager
// sets it only on a module that has it (Module::abi_minor).
inline constexpr std::uint32_t abi_minor_invoke_records = 10;
// 0.11: ROF_PROG_DEFERRED in rof_prog_info.flags (a program served in the poll work only).
inline constexpr std::uint32_t abi_minor_prog_deferred = 11;

// The open /dev/rof: rofd::Module with one ioctl per call.  Each call is one
// ioctl on a shared fd (LIST commands: a few); the module serialises what
// needs it, so one Kmod serves all gRPC threads.
//
// Every failure throws KmodError whose what() names the device, the command
// and the reason, e.g. "/dev/rof: ROF_IOC_DEVICE_LIST: Invalid argument";
// code() is the errno.  EINTR is retried.
class Kmod final : public Module {
  public:
    // Throws KmodError("cannot open PATH") when the device cannot be opened.
    explicit Kmod(std::string path);

    const std::string& path() const noexcept { return path_; }
    // The open device, for the raw ioctls of tests (selftests/difftest).
    int fd() const noexcept { return fd_.get(); }

    ModuleVersion version() override;
    // ROF_IOC_VERSION's minor, asked once (0 for another major).
    std::uint32_t abi_minor() override;
    // Every device the module tracks, sized with a capacity-0 call first and
    // retried while devices appear between the two calls.
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

    UniqueFd audit_open(bool nonblock) override;
    rof_audit_stats audit_stats() override;

    // An ioctl command and the name errors report it by.
    struct Command {
        unsigned long nr;
        const char* name;
    };

  private:
    // The ioctl, EINTR retried: 0 or the errno.
    int try_ioctl(const Command& cmd, void* arg);
    // The ioctl, EINTR retried; throws KmodError("PATH: NAME: reason").
    void checked_ioctl(const Command& cmd, void* arg);
    [[noreturn]] void fail(int err, const Command& cmd, const std::string& detail = {}) const;
    // A GET command: std::nullopt on ENOENT.
    template <typename T>
    std::optional<T> get(const Command& cmd, T arg);
    // A LIST command: every element, however many appear meanwhile; in
    // pages (list_objects) when the module has ROF_LIST_FROM.
    template <typename T>
    std::vector<T> list(const Command& cmd);
    // Whether the module pages LISTs (ABI 0.3).
    bool list_paged();
    void set_name(char (&dst)[ROF_NAME_MAX], const std::string& name, const Command& cmd) const;
    // @req's image and image_len from @image (E2BIG past 4 GiB).
    void set_image(rof_prog_load& req, std::span<const std::uint8_t> image,
                   const Command& cmd) const;
    void destroy(const Command& cmd, std::uint32_t id, bool force);

    std::string path_;
    UniqueFd fd_;
    std::atomic<std::int64_t> abi_minor_{-1};  // -1: not asked yet
};

}  // namespace rofd
