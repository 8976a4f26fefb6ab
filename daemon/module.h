// SPDX-License-Identifier: MIT
// rofd::Module: everything rofd asks of rof.ko, as one interface.
//
// Kmod (kmod.h) implements it with ioctls on /dev/rof; FakeModule
// (fake_module.h) in memory, with the module's rules and errnos, for the
// unit tests of everything above it.  Elements are the ABI's own structs
// (kmod/include/uapi/rof.h), so one concept has one name from the module to
// the gRPC API.  Every failure throws KmodError: code() is the errno the
// module returned, what() names the device, the command and the reason.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "uapi/rof.h"
#include "unique_fd.h"

namespace rofd {

class KmodError : public std::system_error {
  public:
    KmodError(int err, const std::string& what)
        : std::system_error(err, std::generic_category(), what) {}
};

struct ModuleVersion {
    std::uint32_t abi_major = 0;
    std::uint32_t abi_minor = 0;
    std::string version;
};

struct PortInfo {
    std::uint32_t port_num = 0;
    std::uint32_t state = 0;  // enum rof_port_state
    std::uint32_t active_mtu = 0;
};

struct DeviceInfo {
    std::string name;
    std::uint64_t node_guid = 0;
    std::uint32_t index = 0;
    std::uint32_t num_ports = 0;  // may exceed ports.size()
    std::vector<PortInfo> ports;
};

using RegionToken = std::array<std::uint64_t, 2>;
using TicketKey = std::array<std::uint8_t, ROF_TICKET_KEY_LEN>;

// A name as the ABI holds it; empty when the array is not NUL-terminated.
std::string abi_name(const char (&name)[ROF_NAME_MAX]);

// A free list as FREELIST_LIST shows it right after @spec made it in @region
// of @tenant: every block free.
rof_freelist_info freelist_made(const rof_freelist_spec& spec, std::uint32_t region,
                                std::uint32_t tenant);

class Module {
  public:
    virtual ~Module() = default;

    virtual ModuleVersion version() = 0;
    // The module's ABI minor, 0 when its major is not ROF_ABI_MAJOR: which
    // commands and fields it has past the oldest rofd works with (the
    // abi_minor_* steps, kmod.h).  Asked once and kept, as a loaded module's
    // ABI does not change; no error (a module that cannot say is 0, and
    // asked again next time).
    virtual std::uint32_t abi_minor() = 0;
    virtual std::vector<DeviceInfo> list_devices() = 0;

    // Tenants.  @id 0: the module assigns one (ROF_TENANT_CREATE_ID unset).
    virtual std::uint32_t tenant_create(const std::string& name, std::uint32_t id) = 0;
    virtual void tenant_destroy(std::uint32_t id, bool force) = 0;
    virtual void tenant_set_quota(std::uint32_t id, const rof_tenant_quota& quota) = 0;
    virtual void tenant_set_rate(std::uint32_t id, const rof_rate& rate) = 0;
    virtual std::vector<rof_tenant_info> list_tenants() = 0;
    // std::nullopt when no such tenant (ENOENT); other errors throw.
    virtual std::optional<rof_tenant_info> get_tenant(std::uint32_t id) = 0;

    // Regions and their free lists.
    // A region with its free lists (none: an empty span), all or nothing;
    // each list's id is written back into @freelists (ROF_IOC_REGION_CREATE).  Every
    // override has the same default.
    virtual std::uint32_t region_create(std::uint32_t tenant, const std::string& name,
                                        std::uint64_t size, std::uint32_t access,
                                        std::span<rof_freelist_spec> freelists = {}) = 0;
    virtual void region_destroy(std::uint32_t id, bool force) = 0;
    virtual std::vector<rof_region_info> list_regions() = 0;
    virtual std::optional<rof_region_info> get_region(std::uint32_t id) = 0;
    // @tenant's region called @name (REGION_GET with ROF_GET_BY_NAME), or
    // std::nullopt; a name outside the name rule is EINVAL.
    virtual std::optional<rof_region_info> find_region(std::uint32_t tenant,
                                                       const std::string& name) = 0;
    virtual RegionToken region_token(std::uint32_t region, std::uint32_t access,
                                     std::uint32_t ttl_ms) = 0;
    virtual std::uint32_t freelist_create(std::uint32_t region, std::uint32_t block_size,
                                          std::uint64_t offset, std::uint32_t count) = 0;
    virtual void freelist_destroy(std::uint32_t id, bool force) = 0;
    virtual std::vector<rof_freelist_info> list_freelists() = 0;

    // Programs.  @req.image/image_len point at @image; the tag is returned.
    // A verifier refusal is KmodError(ENOEXEC) with req.error_insn set.
    virtual std::uint64_t prog_load(rof_prog_load& req, std::span<const std::uint8_t> image) = 0;
    // Loads @req's image in place of the tenant's program @old_tag, in one
    // step (ROF_IOC_PROG_REPLACE): INVOKEs that named @old_tag, or a tag it
    // had replaced, run the new program from then on; the old one is
    // unloaded once its runs finish.  ENOENT: no program @old_tag; EEXIST:
    // the tenant has the new tag loaded; EOPNOTSUPP: a module older than
    // ABI 0.4.  Otherwise as prog_load, except that the new program takes
    // the old one's place in the program quota.
    virtual std::uint64_t prog_replace(rof_prog_load& req, std::span<const std::uint8_t> image,
                                       std::uint64_t old_tag) = 0;
    virtual void prog_unload(std::uint32_t tenant, std::uint64_t tag) = 0;
    virtual std::vector<rof_prog_info> list_progs() = 0;
    virtual std::optional<rof_prog_info> get_prog(std::uint32_t tenant, std::uint64_t tag) = 0;

    // Sessions.
    virtual void set_ticket_key(const TicketKey& key) = 0;
    // Fills req.session and req.ticket.
    virtual void session_prepare(rof_session_prepare& req) = 0;
    virtual std::vector<rof_session_info> list_sessions() = 0;
    virtual std::optional<rof_session_info> get_session(std::uint32_t id) = 0;
    virtual void session_close(std::uint32_t id) = 0;

    // Audit: the ring's reader fd (EBUSY while another is open) and stats.
    virtual UniqueFd audit_open(bool nonblock) = 0;
    virtual rof_audit_stats audit_stats() = 0;
};

}  // namespace rofd
