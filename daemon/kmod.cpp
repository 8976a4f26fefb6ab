// SPDX-License-Identifier: MIT
#include "kmod.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "kmod_list.h"
#include "uapi/rof.h"

// A command and its name, spelled once.
#define ROFD_CMD(nr) (Kmod::Command{nr, #nr})

namespace rofd {
namespace {

std::uint64_t user_ptr(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
}

std::uint32_t destroy_flags(bool force) {
    return force ? ROF_DESTROY_FORCE : 0;
}

}  // namespace

Kmod::Kmod(std::string path) : path_(std::move(path)) {
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd_) {
        throw KmodError(errno, "cannot open " + path_);
    }
}

int Kmod::try_ioctl(const Command& cmd, void* arg) {
    int ret;

    do {
        ret = ::ioctl(fd_.get(), cmd.nr, arg);
    } while (ret < 0 && errno == EINTR);
    return ret < 0 ? errno : 0;
}

void Kmod::checked_ioctl(const Command& cmd, void* arg) {
    if (const int err = try_ioctl(cmd, arg)) {
        fail(err, cmd);
    }
}

void Kmod::fail(int err, const Command& cmd, const std::string& detail) const {
    // std::system_error appends ": " and strerror(err).
    throw KmodError(err, path_ + ": " + cmd.name + (detail.empty() ? "" : ": " + detail));
}

template <typename T>
std::optional<T> Kmod::get(const Command& cmd, T arg) {
    const int err = try_ioctl(cmd, &arg);
    if (err == ENOENT) {
        return std::nullopt;
    }
    if (err != 0) {
        fail(err, cmd);
    }
    return arg;
}

std::uint32_t Kmod::abi_minor() {
    const std::int64_t known = abi_minor_.load(std::memory_order_relaxed);
    if (known >= 0) {
        return static_cast<std::uint32_t>(known);
    }
    struct rof_version v {};
    if (try_ioctl(ROFD_CMD(ROF_IOC_VERSION), &v) != 0) {
        return 0;  // the command itself reports what is wrong
    }
    const std::uint32_t minor = v.abi_major == ROF_ABI_MAJOR ? v.abi_minor : 0;
    abi_minor_.store(minor, std::memory_order_relaxed);
    return minor;
}

bool Kmod::list_paged() {
    return abi_minor() >= abi_minor_list_from;
}

template <typename T>
std::vector<T> Kmod::list(const Command& cmd) {
    return list_objects<T>([&](rof_list& req) { return try_ioctl(cmd, &req); },
                           [&](int err, const std::string& detail) { fail(err, cmd, detail); },
                           list_paged());
}

void Kmod::set_name(char (&dst)[ROF_NAME_MAX], const std::string& name, const Command& cmd) const {
    // What the module would refuse anyway, but cannot even be passed to it.
    if (name.size() >= ROF_NAME_MAX || name.find('\0') != std::string::npos) {
        fail(EINVAL, cmd, "bad name");
    }
    std::memcpy(dst, name.data(), name.size());
    dst[name.size()] = '\0';
}

void Kmod::destroy(const Command& cmd, std::uint32_t id, bool force) {
    struct rof_destroy req {};

    req.id = id;
    req.flags = destroy_flags(force);
    checked_ioctl(cmd, &req);
}

ModuleVersion Kmod::version() {
    struct rof_version v {};

    checked_ioctl(ROFD_CMD(ROF_IOC_VERSION), &v);
    return ModuleVersion{
        v.abi_major, v.abi_minor,
        std::string(v.module_version, strnlen(v.module_version, sizeof(v.module_version)))};
}

std::vector<DeviceInfo> Kmod::list_devices() {
    std::vector<DeviceInfo> devices;

    for (const auto& r : list<rof_device_info>(ROFD_CMD(ROF_IOC_DEVICE_LIST))) {
        DeviceInfo d;
        d.name = abi_name(r.name);
        d.node_guid = r.node_guid;
        d.index = r.index;
        d.num_ports = r.num_ports;
        const auto n = std::min<std::uint32_t>(r.num_ports, ROF_MAX_PORTS);
        for (std::uint32_t i = 0; i < n; i++) {
            d.ports.push_back(
                PortInfo{r.ports[i].port_num, r.ports[i].state, r.ports[i].active_mtu});
        }
        devices.push_back(std::move(d));
    }
    return devices;
}

std::uint32_t Kmod::tenant_create(const std::string& name, std::uint32_t id) {
    const auto cmd = ROFD_CMD(ROF_IOC_TENANT_CREATE);
    struct rof_tenant_create req {};

    set_name(req.name, name, cmd);
    req.id = id;
    req.flags = id != 0 ? ROF_TENANT_CREATE_ID : 0;
    checked_ioctl(cmd, &req);
    return req.id;
}

void Kmod::tenant_destroy(std::uint32_t id, bool force) {
    destroy(ROFD_CMD(ROF_IOC_TENANT_DESTROY), id, force);
}

void Kmod::tenant_set_quota(std::uint32_t id, const rof_tenant_quota& quota) {
    struct rof_tenant_set_quota req {};

    req.id = id;
    req.quota = quota;
    checked_ioctl(ROFD_CMD(ROF_IOC_TENANT_SET_QUOTA), &req);
}

void Kmod::tenant_set_rate(std::uint32_t id, const rof_rate& rate) {
    struct rof_tenant_rate req {};

    req.tenant = id;
    req.rate = rate;
    checked_ioctl(ROFD_CMD(ROF_IOC_TENANT_SET_RATE), &req);
}

std::vector<rof_tenant_info> Kmod::list_tenants() {
    return list<rof_tenant_info>(ROFD_CMD(ROF_IOC_TENANT_LIST));
}

std::optional<rof_tenant_info> Kmod::get_tenant(std::uint32_t id) {
    rof_tenant_info info{};

    info.id = id;
    return get(ROFD_CMD(ROF_IOC_TENANT_GET), info);
}

std::uint32_t Kmod::region_create(std::uint32_t tenant, const std::string& name, std::uint64_t size,
                                  std::uint32_t access, std::span<rof_freelist_spec> freelists) {
    const auto cmd = ROFD_CMD(ROF_IOC_REGION_CREATE);
    struct rof_region_create req {};

    set_name(req.name, name, cmd);
    req.size = size;
    req.tenant = tenant;
    req.access = access;
    if (freelists.empty()) {
        checked_ioctl(cmd, &req);
        return req.id;
    }
    if (abi_minor() < abi_minor_region_freelists) {
        // An older module: the region, then each list; on a failure, the
        // region goes again, with the lists made so far.
        checked_ioctl(cmd, &req);
        try {
            for (auto& f : freelists) {
                f.id = freelist_create(req.id, f.block_size, f.offset, f.count);
            }
        } catch (const KmodError&) {
            try {
                region_destroy(req.id, true);
            } catch (const KmodError&) {  // the list's error is the one to report
            }
            throw;
        }
        return req.id;
    }
    if (freelists.size() > ROF_REGION_FREELISTS_MAX) {
        fail(E2BIG, cmd, "too many free lists");
    }
    // struct rof_region_freelists: a count, then the lists.
    std::vector<std::uint8_t> buf(sizeof(rof_region_freelists) + freelists.size_bytes());
    const rof_region_freelists head{static_cast<std::uint32_t>(freelists.size()), 0};
    std::memcpy(buf.data(), &head, sizeof(head));
    std::memcpy(buf.data() + sizeof(head), freelists.data(), freelists.size_bytes());
    req.freelists = reinterpret_cast<std::uintptr_t>(buf.data());
    checked_ioctl(cmd, &req);
    std::memcpy(freelists.data(), buf.data() + sizeof(head), freelists.size_bytes());
    return req.id;
}

void Kmod::region_destroy(std::uint32_t id, bool force) {
    destroy(ROFD_CMD(ROF_IOC_REGION_DESTROY), id, force);
}

std::vector<rof_region_info> Kmod::list_regions() {
    return list<rof_region_info>(ROFD_CMD(ROF_IOC_REGION_LIST));
}

std::optional<rof_region_info> Kmod::get_region(std::uint32_t id) {
    rof_region_info info{};

    info.id = id;
    return get(ROFD_CMD(ROF_IOC_REGION_GET), info);
}

std::optional<rof_region_info> Kmod::find_region(std::uint32_t tenant, const std::string& name) {
    if (abi_minor() < abi_minor_get_by_name) {
        // An older module: every tenant's regions listed, as before.
        for (const auto& r : list_regions()) {
            if (r.tenant == tenant && abi_name(r.name) == name) {
                return r;
            }
        }
        return std::nullopt;
    }
    rof_region_info info{};
    const Command cmd = ROFD_CMD(ROF_IOC_REGION_GET);

    set_name(info.name, name, cmd);
    info.tenant = tenant;
    info.flags = ROF_GET_BY_NAME;
    return get(cmd, info);
}

RegionToken Kmod::region_token(std::uint32_t region, std::uint32_t access, std::uint32_t ttl_ms) {
    struct rof_region_token req {};

    req.region = region;
    req.access = access;
    req.ttl_ms = ttl_ms;
    checked_ioctl(ROFD_CMD(ROF_IOC_REGION_TOKEN), &req);
    return RegionToken{req.token[0], req.token[1]};
}

std::uint32_t Kmod::freelist_create(std::uint32_t region, std::uint32_t block_size,
                                    std::uint64_t offset, std::uint32_t count) {
    struct rof_freelist_create req {};

    req.region = region;
    req.block_size = block_size;
    req.offset = offset;
    req.count = count;
    checked_ioctl(ROFD_CMD(ROF_IOC_FREELIST_CREATE), &req);
    return req.id;
}

void Kmod::freelist_destroy(std::uint32_t id, bool force) {
    destroy(ROFD_CMD(ROF_IOC_FREELIST_DESTROY), id, force);
}

std::vector<rof_freelist_info> Kmod::list_freelists() {
    return list<rof_freelist_info>(ROFD_CMD(ROF_IOC_FREELIST_LIST));
}

void Kmod::set_image(rof_prog_load& req, std::span<const std::uint8_t> image,
                     const Command& cmd) const {
    if (image.size() > std::numeric_limits<std::uint32_t>::max()) {
        fail(E2BIG, cmd, std::to_string(image.size()) + " byte image");
    }
    req.image = user_ptr(image.data());
    req.image_len = static_cast<std::uint32_t>(image.size());
}

std::uint64_t Kmod::prog_load(rof_prog_load& req, std::span<const std::uint8_t> image) {
    const auto cmd = ROFD_CMD(ROF_IOC_PROG_LOAD);

    set_image(req, image, cmd);
    // With ENOEXEC the module has copied error_insn back into req.
    checked_ioctl(cmd, &req);
    return req.tag;
}

std::uint64_t Kmod::prog_replace(rof_prog_load& req, std::span<const std::uint8_t> image,
                                 std::uint64_t old_tag) {
    const auto cmd = ROFD_CMD(ROF_IOC_PROG_REPLACE);
    struct rof_prog_replace r {};

    set_image(req, image, cmd);
    r.load = req;
    r.old_tag = old_tag;
    const int err = try_ioctl(cmd, &r);
    req.tag = err == 0 ? r.load.tag : 0;
    req.error_insn = r.load.error_insn;  // set with ENOEXEC
    if (err == ENOTTY) {
        // A module loaded before the upgrade to ABI 0.4 keeps running.
        fail(EOPNOTSUPP, cmd, "the loaded rof.ko predates program replace (ABI 0.4); reload it");
    }
    if (err != 0) {
        fail(err, cmd);
    }
    return req.tag;
}

void Kmod::prog_unload(std::uint32_t tenant, std::uint64_t tag) {
    struct rof_prog_id req {};

    req.tag = tag;
    req.tenant = tenant;
    checked_ioctl(ROFD_CMD(ROF_IOC_PROG_UNLOAD), &req);
}

std::vector<rof_prog_info> Kmod::list_progs() {
    return list<rof_prog_info>(ROFD_CMD(ROF_IOC_PROG_LIST));
}

std::optional<rof_prog_info> Kmod::get_prog(std::uint32_t tenant, std::uint64_t tag) {
    rof_prog_info info{};

    info.tenant = tenant;
    info.tag = tag;
    return get(ROFD_CMD(ROF_IOC_PROG_GET), info);
}

void Kmod::set_ticket_key(const TicketKey& key) {
    struct rof_ticket_key req {};

    std::copy(key.begin(), key.end(), req.key);
    checked_ioctl(ROFD_CMD(ROF_IOC_TICKET_SET_KEY), &req);
    // The key lives on in the module only.
    explicit_bzero(req.key, sizeof(req.key));
}

void Kmod::session_prepare(rof_session_prepare& req) {
    if (abi_minor() < abi_minor_msg_size) {
        // An older module has a reserved field there, and every session
        // of it has ROF_MSG_SIZE: the session it makes says so.
        req.msg_size = 0;
        checked_ioctl(ROFD_CMD(ROF_IOC_SESSION_PREPARE), &req);
        req.msg_size = ROF_MSG_SIZE;
        return;
    }
    checked_ioctl(ROFD_CMD(ROF_IOC_SESSION_PREPARE), &req);
}

std::vector<rof_session_info> Kmod::list_sessions() {
    return list<rof_session_info>(ROFD_CMD(ROF_IOC_SESSION_LIST));
}

std::optional<rof_session_info> Kmod::get_session(std::uint32_t id) {
    rof_session_info info{};

    info.id = id;
    return get(ROFD_CMD(ROF_IOC_SESSION_GET), info);
}

void Kmod::session_close(std::uint32_t id) {
    struct rof_session_close req {};

    req.session = id;
    checked_ioctl(ROFD_CMD(ROF_IOC_SESSION_CLOSE), &req);
}

UniqueFd Kmod::audit_open(bool nonblock) {
    struct rof_audit_open req {};

    req.flags = nonblock ? ROF_AUDIT_NONBLOCK : 0;
    checked_ioctl(ROFD_CMD(ROF_IOC_AUDIT_OPEN), &req);
    return UniqueFd(req.fd);
}

rof_audit_stats Kmod::audit_stats() {
    rof_audit_stats stats{};

    checked_ioctl(ROFD_CMD(ROF_IOC_AUDIT_STATS), &stats);
    return stats;
}

}  // namespace rofd
