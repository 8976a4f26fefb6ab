// SPDX-License-Identifier: MIT
#include "fake_module.h"

#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <system_error>

#include "kmod.h"
#include "rof_exec.h"

namespace rofd {
namespace {

constexpr std::uint32_t u32_unlimited = 0xffffffffU;
constexpr std::uint64_t page_size = 4096;
// Module parameters at their defaults (docs/kmod.md 9.5).
constexpr std::uint64_t prog_max_budget = 1000000;
constexpr std::uint64_t prog_max_bytes = 16ULL << 20;
constexpr std::uint32_t prog_scratch_max = 69632;
constexpr std::uint32_t no_insn = 0xffffffffU;  // error_insn: the header

std::uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t random_u64() {
    std::uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
        throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    return v;
}

// The names rule of docs/kmod.md section 1 (rof.h's rof_name_fault()).
bool valid_name(const std::string& name) {
    return rof_name_fault(name.data(), name.size()) == ROF_NAME_OK;
}

bool valid_name(const char (&name)[ROF_NAME_MAX]) {
    const std::string s = abi_name(name);
    return valid_name(s) &&
           std::all_of(name + s.size(), name + ROF_NAME_MAX, [](char c) { return c == '\0'; });
}

void set_name(char (&dst)[ROF_NAME_MAX], const std::string& name) {
    std::memset(dst, 0, ROF_NAME_MAX);
    std::memcpy(dst, name.data(), std::min<std::size_t>(name.size(), ROF_NAME_MAX - 1));
}

// The next id after @last not in @taken, going round from @max to 1.
template <typename Map>
std::optional<std::uint32_t> next_free_id(std::uint32_t last, std::uint32_t max, const Map& taken) {
    if (taken.size() >= max) {
        return std::nullopt;
    }
    std::uint32_t id = last;
    do {
        id = id >= max ? 1 : id + 1;
    } while (taken.count(id) != 0);
    return id;
}

bool all_zero(const void* p, std::size_t len) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    return std::all_of(b, b + len, [](std::uint8_t x) { return x == 0; });
}

bool valid_rate(const rof_rate& r) {
    return r.ops_per_sec <= ROF_RATE_MAX && r.bytes_per_sec <= ROF_RATE_MAX;
}

}  // namespace

FakeModule::FakeModule() = default;
FakeModule::~FakeModule() = default;

void FakeModule::fail(int err, const char* cmd) {
    throw KmodError(err, std::string("fake: ") + cmd);
}

void FakeModule::enter(const char* cmd) {
    commands_[cmd]++;
    if (fail_next_) {
        const int err = *fail_next_;
        fail_next_.reset();
        fail(err, cmd);
    }
}

std::map<std::string, std::uint64_t> FakeModule::commands() const {
    std::lock_guard lock(mu_);
    return commands_;
}

FakeModule::Tenant& FakeModule::tenant_locked(std::uint32_t id, const char* cmd) {
    const auto it = tenants_.find(id);
    if (it == tenants_.end()) {
        fail(ENOENT, cmd);
    }
    return it->second;
}

bool FakeModule::session_live(const rof_session_info& s) const {
    return s.state != ROF_SESSION_PREPARED;
}

rof_tenant_info FakeModule::tenant_info_locked(const Tenant& t) const {
    rof_tenant_info info = t.info;
    rof_tenant_usage& u = info.usage;

    u = rof_tenant_usage{};
    for (const auto& [id, r] : regions_) {
        if (r.tenant == info.id) {
            u.region_bytes += r.size;
            u.regions++;
        }
    }
    for (const auto& [id, f] : freelists_) {
        u.freelists += f.tenant == info.id;
    }
    for (const auto& [key, p] : progs_) {
        u.programs += key.first == info.id;
    }
    // A prepared session holds nothing: the quota is charged at connect.
    for (const auto& [id, s] : sessions_) {
        u.sessions += s.tenant == info.id && session_live(s);
    }
    return info;
}

rof_region_info FakeModule::region_info_locked(const rof_region_info& r) const {
    rof_region_info info = r;

    info.attachments = 0;
    info.freelists = 0;
    for (const auto& [key, p] : progs_) {
        info.attachments +=
            std::any_of(p.bind, p.bind + p.nbind, [&](const auto& b) { return b.region == r.id; });
    }
    for (const auto& [id, s] : sessions_) {
        info.attachments +=
            session_live(s) && std::any_of(s.regions, s.regions + s.nregions,
                                           [&](const auto& g) { return g.region == r.id; });
    }
    for (const auto& [id, f] : freelists_) {
        info.freelists += f.region == r.id;
    }
    return info;
}

// ---- Module and devices ----

ModuleVersion FakeModule::version() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_VERSION");
    return ModuleVersion{ROF_ABI_MAJOR, abi_minor_, fake_version};
}

std::uint32_t FakeModule::abi_minor() {
    std::lock_guard lock(mu_);
    return abi_minor_;
}

std::vector<DeviceInfo> FakeModule::list_devices() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_DEVICE_LIST");
    return devices_;
}

// ---- Tenants ----

std::uint32_t FakeModule::tenant_create(const std::string& name, std::uint32_t id) {
    constexpr const char* cmd = "ROF_IOC_TENANT_CREATE";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (!valid_name(name) || id > ROF_TENANT_ID_MAX) {
        fail(EINVAL, cmd);
    }
    if (tenant_names_.count(name) != 0) {
        fail(EEXIST, cmd);
    }
    if (id != 0) {
        if (tenants_.count(id) != 0) {
            fail(EEXIST, cmd);
        }
    } else {
        const auto free = next_free_id(last_tenant_, ROF_TENANT_ID_MAX, tenants_);
        if (!free) {
            fail(ENOSPC, cmd);
        }
        id = last_tenant_ = *free;
    }

    Tenant t;
    set_name(t.info.name, name);
    t.info.id = id;
    t.info.quota.region_bytes = ROF_QUOTA_UNLIMITED;
    t.info.quota.sessions = u32_unlimited;
    t.info.quota.programs = u32_unlimited;
    t.info.quota.credits = ROF_CREDITS_DEFAULT;
    tenants_.emplace(id, t);
    tenant_names_.insert(name);
    return id;
}

void FakeModule::tenant_destroy(std::uint32_t id, bool force) {
    constexpr const char* cmd = "ROF_IOC_TENANT_DESTROY";
    std::lock_guard lock(mu_);
    enter(cmd);

    const rof_tenant_info info = tenant_info_locked(tenant_locked(id, cmd));
    if (!force &&
        (info.usage.regions != 0 || info.usage.programs != 0 || info.usage.sessions != 0)) {
        fail(ENOTEMPTY, cmd);
    }
    if (force) {
        rof_audit_record rec{};
        rec.kind = ROF_AUDIT_TENANT_DESTROY;
        rec.tenant = id;
        rec.reason = ROF_DESTROY_ADMIN;
        audit_locked(rec);
    }
    // Any destroy drops the tenant's prepared sessions; a forced one
    // revokes its live ones too (none are left without force).
    std::vector<std::uint32_t> ids;
    for (const auto& [sid, s] : sessions_) {
        if (s.tenant == id) {
            ids.push_back(sid);
        }
    }
    for (const auto sid : ids) {
        close_session_locked(sid, ROF_CLOSE_REVOKED);
    }
    std::erase_if(progs_, [&](const auto& kv) { return kv.first.first == id; });
    std::erase_if(alias_tags_, [&](const auto& kv) { return kv.first.first == id; });
    ids.clear();
    for (const auto& [rid, r] : regions_) {
        if (r.tenant == id) {
            ids.push_back(rid);
        }
    }
    for (const auto rid : ids) {
        destroy_region_locked(rid, ROF_DESTROY_TENANT);
    }
    tenant_names_.erase(abi_name(info.name));
    tenants_.erase(id);
}

void FakeModule::tenant_set_quota(std::uint32_t id, const rof_tenant_quota& quota) {
    constexpr const char* cmd = "ROF_IOC_TENANT_SET_QUOTA";
    std::lock_guard lock(mu_);
    enter(cmd);

    Tenant& t = tenant_locked(id, cmd);
    if (quota.invoke_records >
            (abi_minor_ >= abi_minor_invoke_records ? ROF_INVOKE_SAMPLE_MAX : 0) ||
        quota.credits < 1 || quota.credits > ROF_CREDITS_QUOTA_MAX) {
        fail(EINVAL, cmd);
    }
    // Below the usage is allowed: new charges fail until usage drops.
    t.info.quota = quota;
}

void FakeModule::tenant_set_rate(std::uint32_t id, const rof_rate& rate) {
    constexpr const char* cmd = "ROF_IOC_TENANT_SET_RATE";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (!valid_rate(rate)) {
        fail(ERANGE, cmd);
    }
    tenant_locked(id, cmd).rate = rate;
}

std::vector<rof_tenant_info> FakeModule::list_tenants() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_TENANT_LIST");

    std::vector<rof_tenant_info> out;
    for (const auto& [id, t] : tenants_) {
        out.push_back(tenant_info_locked(t));
    }
    return out;
}

std::optional<rof_tenant_info> FakeModule::get_tenant(std::uint32_t id) {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_TENANT_GET");

    const auto it = tenants_.find(id);
    if (it == tenants_.end()) {
        return std::nullopt;
    }
    return tenant_info_locked(it->second);
}

// ---- Regions and free lists ----

std::uint32_t FakeModule::region_create(std::uint32_t tenant, const std::string& name,
                                        std::uint64_t size, std::uint32_t access,
                                        std::span<rof_freelist_spec> freelists) {
    constexpr const char* cmd = "ROF_IOC_REGION_CREATE";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (!valid_name(name) || size == 0 || size % page_size != 0 ||
        (access & ~ROF_ACCESS_ALL) != 0) {
        fail(EINVAL, cmd);
    }
    if (size > ROF_REGION_SIZE_MAX) {
        fail(E2BIG, cmd);
    }
    // The free lists are checked first, against the new region and each other.
    if (freelists.size() > ROF_REGION_FREELISTS_MAX) {
        fail(E2BIG, cmd);
    }
    for (std::size_t i = 0; i < freelists.size(); i++) {
        const rof_freelist_spec& f = freelists[i];
        if (f.reserved != 0) {
            fail(EINVAL, cmd);
        }
        const std::uint64_t end = check_freelist(f.block_size, f.offset, f.count, size, cmd);
        for (std::size_t j = 0; j < i; j++) {
            const rof_freelist_spec& g = freelists[j];
            if (f.offset < freelist_end(g.block_size, g.offset, g.count) && g.offset < end) {
                fail(EADDRINUSE, cmd);
            }
        }
    }
    const rof_tenant_info t = tenant_info_locked(tenant_locked(tenant, cmd));
    for (const auto& [id, r] : regions_) {
        if (r.tenant == tenant && abi_name(r.name) == name) {
            fail(EEXIST, cmd);
        }
    }
    if (t.quota.region_bytes != ROF_QUOTA_UNLIMITED &&
        (t.usage.region_bytes + size > t.quota.region_bytes)) {
        fail(EDQUOT, cmd);
    }
    const auto id = next_free_id(last_region_, std::numeric_limits<std::uint32_t>::max(), regions_);
    if (!id) {
        fail(ENOSPC, cmd);
    }
    // Every free list's id, before anything is made: all or nothing.
    constexpr std::uint32_t id_max = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> ids;
    std::uint32_t last = last_freelist_;
    for (std::size_t i = 0; i < freelists.size(); i++) {
        std::optional<std::uint32_t> fid;
        do {  // past the ids this call took already
            fid = next_free_id(fid.value_or(last), id_max, freelists_);
            if (!fid || freelists_.size() + ids.size() >= id_max) {
                fail(ENOSPC, cmd);
            }
        } while (std::find(ids.begin(), ids.end(), *fid) != ids.end());
        ids.push_back(*fid);
        last = *fid;
    }
    last_region_ = *id;
    last_freelist_ = last;

    rof_region_info r{};
    set_name(r.name, name);
    r.size = size;
    r.id = *id;
    r.tenant = tenant;
    r.access = access;
    r.chunks = 1;
    regions_.emplace(*id, r);
    for (std::size_t i = 0; i < freelists.size(); i++) {
        freelists[i].id = ids[i];
        add_freelist_locked(*id, tenant, freelists[i]);
    }
    return *id;
}

void FakeModule::destroy_region_locked(std::uint32_t id, std::uint32_t reason) {
    const rof_region_info& r = regions_.at(id);
    rof_audit_record rec{};

    rec.kind = ROF_AUDIT_REGION_DESTROY;
    rec.tenant = r.tenant;
    rec.object = id;
    rec.bytes = r.size;
    rec.reason = reason;
    audit_locked(rec);

    std::vector<std::uint32_t> revoked;
    for (const auto& [sid, s] : sessions_) {
        if (session_live(s) && std::any_of(s.regions, s.regions + s.nregions,
                                           [&](const auto& g) { return g.region == id; })) {
            revoked.push_back(sid);
        }
    }
    for (const auto sid : revoked) {
        close_session_locked(sid, ROF_CLOSE_REVOKED);
    }
    for (auto& [key, p] : progs_) {
        if (std::any_of(p.bind, p.bind + p.nbind, [&](const auto& b) { return b.region == id; })) {
            p.flags |= ROF_PROG_REVOKED;
        }
    }
    std::erase_if(freelists_, [&](const auto& kv) { return kv.second.region == id; });
    regions_.erase(id);
}

void FakeModule::region_destroy(std::uint32_t id, bool force) {
    constexpr const char* cmd = "ROF_IOC_REGION_DESTROY";
    std::lock_guard lock(mu_);
    enter(cmd);

    const auto it = regions_.find(id);
    if (it == regions_.end()) {
        fail(ENOENT, cmd);
    }
    if (force) {
        destroy_region_locked(id, ROF_DESTROY_ADMIN);
        return;
    }
    if (region_info_locked(it->second).attachments != 0) {
        fail(EBUSY, cmd);
    }
    std::erase_if(freelists_, [&](const auto& kv) { return kv.second.region == id; });
    regions_.erase(it);
}

std::vector<rof_region_info> FakeModule::list_regions() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_REGION_LIST");

    std::vector<rof_region_info> out;
    for (const auto& [id, r] : regions_) {
        out.push_back(region_info_locked(r));
    }
    return out;
}

std::optional<rof_region_info> FakeModule::get_region(std::uint32_t id) {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_REGION_GET");

    const auto it = regions_.find(id);
    if (it == regions_.end()) {
        return std::nullopt;
    }
    return region_info_locked(it->second);
}

std::optional<rof_region_info> FakeModule::find_region(std::uint32_t tenant,
                                                       const std::string& name) {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_REGION_GET");

    if (!valid_name(name)) {
        fail(EINVAL, "ROF_IOC_REGION_GET");
    }
    for (const auto& [id, r] : regions_) {
        if (r.tenant == tenant && abi_name(r.name) == name) {
            return region_info_locked(r);
        }
    }
    return std::nullopt;
}

RegionToken FakeModule::region_token(std::uint32_t region, std::uint32_t access,
                                     std::uint32_t ttl_ms) {
    constexpr const char* cmd = "ROF_IOC_REGION_TOKEN";
    std::lock_guard lock(mu_);
    enter(cmd);

    if ((access != ROF_ACCESS_READ && access != (ROF_ACCESS_READ | ROF_ACCESS_WRITE)) ||
        ttl_ms > ROF_TOKEN_TTL_MAX_MS) {
        fail(EINVAL, cmd);
    }
    if (regions_.count(region) == 0) {
        fail(ENOENT, cmd);
    }
    return RegionToken{random_u64(), random_u64()};
}

std::uint64_t FakeModule::freelist_end(std::uint32_t block_size, std::uint64_t offset,
                                       std::uint32_t count) {
    // count <= 2^20 and block_size < 2^32: the length cannot overflow.
    return offset + sizeof(rof_isa_freelist) + std::uint64_t{count} * block_size;
}

std::uint64_t FakeModule::check_freelist(std::uint32_t block_size, std::uint64_t offset,
                                         std::uint32_t count, std::uint64_t region_size,
                                         const char* cmd) {
    check_freelist_fields(block_size, offset, count, cmd);
    const std::uint64_t len = sizeof(rof_isa_freelist) + std::uint64_t{count} * block_size;
    if (offset > std::numeric_limits<std::uint64_t>::max() - len || offset + len > region_size) {
        fail(ERANGE, cmd);
    }
    return offset + len;
}

void FakeModule::check_freelist_fields(std::uint32_t block_size, std::uint64_t offset,
                                       std::uint32_t count, const char* cmd) {
    if (block_size < 8 || block_size % 8 != 0 || offset % 8 != 0 || count == 0) {
        fail(EINVAL, cmd);
    }
    if (count > ROF_FREELIST_BLOCKS_MAX) {
        fail(E2BIG, cmd);
    }
}

void FakeModule::add_freelist_locked(std::uint32_t region, std::uint32_t tenant,
                                     const rof_freelist_spec& spec) {
    freelists_.emplace(spec.id, freelist_made(spec, region, tenant));
}

std::uint32_t FakeModule::freelist_create(std::uint32_t region, std::uint32_t block_size,
                                          std::uint64_t offset, std::uint32_t count) {
    constexpr const char* cmd = "ROF_IOC_FREELIST_CREATE";
    std::lock_guard lock(mu_);
    enter(cmd);

    check_freelist_fields(block_size, offset, count, cmd);
    const auto rit = regions_.find(region);
    if (rit == regions_.end()) {
        fail(ENOENT, cmd);
    }
    const std::uint64_t end = check_freelist(block_size, offset, count, rit->second.size, cmd);
    for (const auto& [id, f] : freelists_) {
        if (f.region == region && offset < freelist_end(f.block_size, f.offset, f.count) &&
            f.offset < end) {
            fail(EADDRINUSE, cmd);
        }
    }
    const auto id =
        next_free_id(last_freelist_, std::numeric_limits<std::uint32_t>::max(), freelists_);
    if (!id) {
        fail(ENOSPC, cmd);
    }
    last_freelist_ = *id;
    add_freelist_locked(region, rit->second.tenant,
                        rof_freelist_spec{offset, block_size, count, *id, 0});
    return *id;
}

void FakeModule::freelist_destroy(std::uint32_t id, bool force) {
    constexpr const char* cmd = "ROF_IOC_FREELIST_DESTROY";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (freelists_.count(id) == 0) {
        fail(ENOENT, cmd);
    }
    const bool held = std::any_of(progs_.begin(), progs_.end(), [&](const auto& kv) {
        const rof_prog_info& p = kv.second;
        return std::any_of(p.bind, p.bind + p.nbind,
                           [&](const auto& b) { return b.freelist == id; });
    });
    if (held && !force) {
        fail(EBUSY, cmd);
    }
    freelists_.erase(id);
}

std::vector<rof_freelist_info> FakeModule::list_freelists() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_FREELIST_LIST");

    std::vector<rof_freelist_info> out;
    for (const auto& [id, f] : freelists_) {
        out.push_back(f);
    }
    return out;
}

// ---- Programs ----

std::uint64_t FakeModule::prog_load(rof_prog_load& req, std::span<const std::uint8_t> image) {
    constexpr const char* cmd = "ROF_IOC_PROG_LOAD";
    std::lock_guard lock(mu_);
    enter(cmd);

    rof_prog_info p = prog_checked_locked(req, image, true, cmd);
    // 6. The tag, once per tenant.
    if (progs_.count({req.tenant, p.tag}) != 0) {
        fail(EEXIST, cmd);
    }
    unalias_locked(req.tenant, p.tag);  // an own tag shadows an alias
    progs_.emplace(ProgKey{req.tenant, p.tag}, p);
    req.tag = p.tag;
    return p.tag;
}

// No program of @tenant serves @tag as an alias any more.
void FakeModule::unalias_locked(std::uint32_t tenant, std::uint64_t tag) {
    for (auto& [key, tags] : alias_tags_) {
        if (key.first == tenant && std::erase(tags, tag) != 0) {
            progs_.at(key).aliases = static_cast<std::uint32_t>(tags.size());
        }
    }
}

// As the module's REPLACE: the load's checks but the quota's, then (under
// its lock) the old program and the new tag.  The new program serves the
// old one's tag and every tag the old one served, up to the cap.
std::uint64_t FakeModule::prog_replace(rof_prog_load& req, std::span<const std::uint8_t> image,
                                       std::uint64_t old_tag) {
    constexpr const char* cmd = "ROF_IOC_PROG_REPLACE";
    std::lock_guard lock(mu_);
    enter(cmd);

    rof_prog_info p = prog_checked_locked(req, image, false, cmd);
    const auto old = progs_.find({req.tenant, old_tag});
    if (old == progs_.end()) {
        fail(ENOENT, cmd);
    }
    if (progs_.count({req.tenant, p.tag}) != 0) {
        fail(EEXIST, cmd);
    }
    std::vector<std::uint64_t> tags = std::move(alias_tags_[old->first]);
    alias_tags_.erase(old->first);
    progs_.erase(old);
    unalias_locked(req.tenant, p.tag);
    std::erase(tags, p.tag);
    tags.push_back(old_tag);
    if (tags.size() > ROF_PROG_ALIASES_MAX) {
        tags.erase(tags.begin(), tags.end() - ROF_PROG_ALIASES_MAX);
    }
    p.aliases = static_cast<std::uint32_t>(tags.size());
    alias_tags_[{req.tenant, p.tag}] = std::move(tags);
    progs_.emplace(ProgKey{req.tenant, p.tag}, p);
    req.tag = p.tag;
    return p.tag;
}

// The checks of a load, in the module's order (docs/kmod.md 9.2), up to
// the tag's: the program it would load.  @quota: whether the tenant's
// program quota must have room (a replace takes the old one's place).
rof_prog_info FakeModule::prog_checked_locked(rof_prog_load& req,
                                              std::span<const std::uint8_t> image, bool quota,
                                              const char* cmd) {
    req.image = reinterpret_cast<std::uintptr_t>(image.data());
    req.image_len = static_cast<std::uint32_t>(
        std::min<std::size_t>(image.size(), std::numeric_limits<std::uint32_t>::max()));

    // 1. The request itself (docs/kmod.md 9.2, in its order).
    if (req.flags != 0 || req.reserved != 0 || req.tag != 0 || req.error_insn != 0 ||
        !valid_name(req.name) || req.budget == 0 || req.byte_budget == 0 ||
        req.nbind > ROF_ISA_MAX_SLOTS ||
        !all_zero(req.bind + req.nbind, (ROF_ISA_MAX_SLOTS - req.nbind) * sizeof(req.bind[0]))) {
        fail(EINVAL, cmd);
    }
    if (req.budget > prog_max_budget || req.byte_budget > prog_max_bytes || image.empty() ||
        image.size() > ROF_PROG_IMAGE_MAX) {
        fail(E2BIG, cmd);
    }

    // 2. The header and slot table; instructions and the CRC are not checked.
    rof_isa_hdr hdr{};
    const auto refuse_image = [&] {
        req.error_insn = no_insn;
        fail(ENOEXEC, cmd);
    };
    if (image.size() < sizeof(hdr)) {
        refuse_image();
    }
    std::memcpy(&hdr, image.data(), sizeof(hdr));
    if (hdr.magic != ROF_ISA_MAGIC || hdr.version != ROF_ISA_VERSION ||
        hdr.hdr_size != sizeof(hdr) || hdr.insn_cnt < 1 || hdr.insn_cnt > ROF_ISA_MAX_INSNS ||
        hdr.slot_cnt > ROF_ISA_MAX_SLOTS || hdr.flags != 0 || hdr.reserved0 != 0 ||
        hdr.reserved[0] != 0 || hdr.reserved[1] != 0 ||
        image.size() !=
            sizeof(hdr) + hdr.slot_cnt * sizeof(rof_isa_slot) + hdr.insn_cnt * sizeof(rof_insn)) {
        refuse_image();
    }
    rof_isa_slot slots[ROF_ISA_MAX_SLOTS] = {};
    std::memcpy(slots, image.data() + sizeof(hdr), hdr.slot_cnt * sizeof(rof_isa_slot));
    // The slots as rof_exec_check_image sees them: a C identifier for a
    // name, unique; some access and no unknown ones; a free list only in
    // a slot with atomic access (ALLOC and FREE are atomics).
    const auto ident = [](const char* n, std::size_t max) {
        const std::size_t len = strnlen(n, max);
        if (len == 0 || len == max || std::isdigit(static_cast<unsigned char>(n[0])) != 0) {
            return false;
        }
        return std::all_of(n, n + len, [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
        });
    };
    for (std::uint32_t i = 0; i < hdr.slot_cnt; i++) {
        const rof_isa_slot& sl = slots[i];
        if (!ident(sl.name, sizeof(sl.name)) || sl.access == 0 ||
            (sl.access & ~ROF_ACCESS_ALL) != 0 || (sl.flags & ~ROF_SLOT_FREELIST) != 0 ||
            ((sl.flags & ROF_SLOT_FREELIST) != 0 && (sl.access & ROF_ACCESS_ATOMIC) == 0)) {
            refuse_image();
        }
        for (std::uint32_t j = 0; j < i; j++) {
            if (strncmp(sl.name, slots[j].name, sizeof(sl.name)) == 0) {
                refuse_image();
            }
        }
    }

    // 3. The image against the request and the module.
    if (req.nbind != hdr.slot_cnt) {
        fail(EINVAL, cmd);
    }
    if (hdr.args_min > ROF_INVOKE_ARGS_MAX || hdr.resp_max > ROF_INVOKE_RESP_MAX ||
        hdr.scratch_size > prog_scratch_max) {
        fail(EFBIG, cmd);
    }

    // 4. The tenant and its quota.
    const rof_tenant_info t = tenant_info_locked(tenant_locked(req.tenant, cmd));
    if (quota && t.quota.programs != u32_unlimited && t.usage.programs >= t.quota.programs) {
        fail(EDQUOT, cmd);
    }

    // 5. The bindings.
    for (std::uint32_t i = 0; i < req.nbind; i++) {
        const rof_prog_bind& b = req.bind[i];
        const auto rit = regions_.find(b.region);
        if (rit == regions_.end() || rit->second.tenant != req.tenant) {
            fail(ENXIO, cmd);
        }
        if ((slots[i].access & ~rit->second.access) != 0) {
            fail(EACCES, cmd);
        }
        if (slots[i].len > rit->second.size) {
            fail(ERANGE, cmd);
        }
        if (((slots[i].flags & ROF_SLOT_FREELIST) != 0) != (b.freelist != 0)) {
            fail(EINVAL, cmd);
        }
        if (b.freelist != 0) {
            const auto fit = freelists_.find(b.freelist);
            if (fit == freelists_.end() || fit->second.tenant != req.tenant) {
                fail(ENXIO, cmd);
            }
            if (fit->second.region != b.region) {
                fail(EXDEV, cmd);
            }
            if (fit->second.offset + 64 > slots[i].len) {
                fail(ERANGE, cmd);
            }
        }
    }

    rof_prog_info p{};
    std::memcpy(p.name, req.name, sizeof(p.name));
    p.tag = hdr.tag;
    p.tenant = req.tenant;
    p.budget = req.budget;
    p.byte_budget = req.byte_budget;
    p.insn_cnt = hdr.insn_cnt;
    p.nbind = req.nbind;
    p.args_min = hdr.args_min;
    p.args_max = hdr.args_max;
    p.scratch_size = hdr.scratch_size;
    p.resp_max = hdr.resp_max;
    // As rof.ko says it (ABI 0.11): a worst case over one softirq or polling-thread turn.
    if (abi_minor_ >= abi_minor_prog_deferred &&
        (p.budget > ROF_EXEC_ATOMIC_INSNS || p.byte_budget > ROF_EXEC_ATOMIC_BYTES)) {
        p.flags |= ROF_PROG_DEFERRED;
    }
    std::copy(req.bind, req.bind + ROF_ISA_MAX_SLOTS, p.bind);
    p.loaded_ns = now_ns();
    return p;
}

void FakeModule::prog_unload(std::uint32_t tenant, std::uint64_t tag) {
    constexpr const char* cmd = "ROF_IOC_PROG_UNLOAD";
    std::lock_guard lock(mu_);
    enter(cmd);

    alias_tags_.erase({tenant, tag});
    if (progs_.erase({tenant, tag}) == 0) {
        fail(ENOENT, cmd);
    }
}

std::vector<rof_prog_info> FakeModule::list_progs() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_PROG_LIST");

    std::vector<rof_prog_info> out;
    for (const auto& [key, p] : progs_) {
        out.push_back(p);
    }
    return out;
}

std::optional<rof_prog_info> FakeModule::get_prog(std::uint32_t tenant, std::uint64_t tag) {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_PROG_GET");

    const auto it = progs_.find({tenant, tag});
    if (it == progs_.end()) {
        return std::nullopt;
    }
    return it->second;
}

// ---- Sessions ----

void FakeModule::set_ticket_key(const TicketKey& key) {
    constexpr const char* cmd = "ROF_IOC_TICKET_SET_KEY";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (all_zero(key.data(), key.size())) {
        fail(EINVAL, cmd);
    }
    ticket_key_ = key;
}

void FakeModule::session_prepare(rof_session_prepare& req) {
    constexpr const char* cmd = "ROF_IOC_SESSION_PREPARE";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (req.flags != 0) {
        fail(EINVAL, cmd);
    }
    // 0: ROF_MSG_SIZE; else a power of two up to ROF_MSG_SIZE_MAX.
    const std::uint32_t msg_size = req.msg_size != 0 ? req.msg_size : ROF_MSG_SIZE;
    if (msg_size < ROF_MSG_SIZE || msg_size > ROF_MSG_SIZE_MAX || !std::has_single_bit(msg_size)) {
        fail(EINVAL, cmd);
    }
    if (req.nregions > ROF_SESSION_MAX_REGIONS) {
        fail(E2BIG, cmd);
    }
    for (std::uint32_t i = 0; i < req.nregions; i++) {
        const std::uint32_t access = req.regions[i].access;
        if (access == 0 || (access & ~ROF_ACCESS_ALL) != 0) {
            fail(EINVAL, cmd);
        }
    }
    if (!all_zero(req.regions + req.nregions,
                  (ROF_SESSION_MAX_REGIONS - req.nregions) * sizeof(req.regions[0]))) {
        fail(EINVAL, cmd);
    }
    if (!valid_rate(req.rate) || req.idle_timeout_ms > ROF_SESSION_IDLE_MAX_MS) {
        fail(ERANGE, cmd);
    }
    if (req.expires_ns <= now_ns()) {
        fail(ETIME, cmd);
    }
    tenant_locked(req.tenant, cmd);  // ENOENT
    for (std::uint32_t i = 0; i < req.nregions; i++) {
        const rof_session_grant& g = req.regions[i];
        const auto rit = regions_.find(g.region);
        if (rit == regions_.end() || rit->second.tenant != req.tenant) {
            fail(ENXIO, cmd);
        }
        if (std::any_of(req.regions, req.regions + i,
                        [&](const auto& other) { return other.region == g.region; })) {
            fail(EEXIST, cmd);
        }
        if ((g.access & ~rit->second.access) != 0) {
            fail(EACCES, cmd);
        }
    }
    // Checked before a session id is taken.
    if (!ticket_key_) {
        fail(ENOKEY, cmd);
    }
    if (last_session_ == std::numeric_limits<std::uint32_t>::max()) {
        fail(ENOSPC, cmd);
    }
    const std::uint32_t id = ++last_session_;

    rof_session_info s{};
    s.id = id;
    s.tenant = req.tenant;
    s.state = ROF_SESSION_PREPARED;  // credits: 0 until it connects
    s.nregions = req.nregions;
    s.idle_timeout_ms = req.idle_timeout_ms != 0 ? req.idle_timeout_ms : idle_timeout_ms_;
    s.msg_size = msg_size;
    std::copy(req.regions, req.regions + ROF_SESSION_MAX_REGIONS, s.regions);
    s.rate = req.rate;
    s.expires_ns = req.expires_ns;
    sessions_.emplace(id, s);

    req.session = id;
    req.msg_size = msg_size;
    req.ticket = rof_ticket{};
    req.ticket.version = ROF_TICKET_VERSION;
    req.ticket.tenant = htole32(req.tenant);
    req.ticket.session = htole32(id);
    req.ticket.expires_ns = htole64(req.expires_ns);
    req.ticket.nonce = htole64(random_u64());
    // Not HMAC-SHA256 under the key: nothing in the fake checks a MAC.
    const std::uint64_t mac[2] = {random_u64(), random_u64()};
    std::memcpy(req.ticket.mac, mac, sizeof(req.ticket.mac));
}

std::vector<rof_session_info> FakeModule::list_sessions() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_SESSION_LIST");

    std::vector<rof_session_info> out;
    for (const auto& [id, s] : sessions_) {
        out.push_back(s);
    }
    return out;
}

std::optional<rof_session_info> FakeModule::get_session(std::uint32_t id) {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_SESSION_GET");

    const auto it = sessions_.find(id);
    if (it == sessions_.end()) {
        return std::nullopt;
    }
    return it->second;
}

void FakeModule::close_session_locked(std::uint32_t id, std::uint32_t reason) {
    const rof_session_info s = sessions_.at(id);

    sessions_.erase(id);
    // A prepared session was never opened: no close record.
    if (session_live(s)) {
        rof_audit_record rec{};
        rec.kind = ROF_AUDIT_SESSION_CLOSE;
        rec.tenant = s.tenant;
        rec.session = id;
        rec.reason = reason;
        audit_session_locked(rec);
        skips_.erase(id);
        if (const auto it = tenants_.find(s.tenant); it != tenants_.end()) {
            it->second.info.counters.sessions_closed++;
        }
    }
}

void FakeModule::session_close(std::uint32_t id) {
    constexpr const char* cmd = "ROF_IOC_SESSION_CLOSE";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (sessions_.count(id) == 0) {
        fail(ENOENT, cmd);
    }
    close_session_locked(id, ROF_CLOSE_ADMIN);
}

std::uint32_t FakeModule::connect_session(std::uint32_t id) {
    std::lock_guard lock(mu_);

    const auto reject = [&](std::uint32_t tenant, std::uint32_t reason) {
        rof_audit_record rec{};
        rec.kind = ROF_AUDIT_SESSION_REJECT;
        rec.tenant = tenant;
        rec.session = tenant != 0 ? id : 0;
        rec.reason = reason;
        audit_locked(rec);
        if (const auto it = tenants_.find(tenant); it != tenants_.end()) {
            it->second.info.counters.sessions_rejected++;
        }
        return reason;
    };
    if (!ticket_key_) {
        return reject(0, ROF_REJECT_NO_KEY);
    }
    const auto sit = sessions_.find(id);
    if (sit == sessions_.end()) {
        return reject(0, ROF_REJECT_NO_SESSION);
    }
    rof_session_info& s = sit->second;
    if (s.expires_ns <= now_ns()) {
        return reject(s.tenant, ROF_REJECT_EXPIRED);
    }
    if (s.state != ROF_SESSION_PREPARED) {
        return reject(s.tenant, ROF_REJECT_IN_USE);
    }
    const auto tit = tenants_.find(s.tenant);
    if (tit == tenants_.end()) {
        return reject(s.tenant, ROF_REJECT_NO_TENANT);
    }
    const rof_tenant_info t = tenant_info_locked(tit->second);
    if (t.quota.sessions != u32_unlimited && t.usage.sessions >= t.quota.sessions) {
        return reject(s.tenant, ROF_REJECT_QUOTA);
    }
    for (std::uint32_t i = 0; i < s.nregions; i++) {
        const auto rit = regions_.find(s.regions[i].region);
        if (rit == regions_.end() || rit->second.tenant != s.tenant) {
            return reject(s.tenant, ROF_REJECT_NO_REGION);
        }
    }

    s.state = ROF_SESSION_LIVE;
    s.credits = std::min<std::uint32_t>(t.quota.credits, ROF_SESSION_CREDITS_MAX);
    s.connected_ns = now_ns();
    set_name(s.device, "fake0");
    s.port_num = 1;
    tit->second.info.counters.sessions_opened++;
    skips_.erase(id);
    rof_audit_record rec{};
    rec.kind = ROF_AUDIT_SESSION_OPEN;
    rec.tenant = s.tenant;
    rec.session = id;
    audit_session_locked(rec);
    return 0;
}

bool FakeModule::invoke(std::uint32_t id, std::int32_t status, std::uint64_t bytes,
                        std::uint64_t insns) {
    constexpr const char* cmd = "INVOKE";
    std::lock_guard lock(mu_);

    const auto sit = sessions_.find(id);
    if (sit == sessions_.end() || !session_live(sit->second)) {
        fail(ENOENT, cmd);
    }
    const auto tit = tenants_.find(sit->second.tenant);
    if (tit == tenants_.end()) {
        fail(ENOENT, cmd);
    }
    rof_tenant_info& t = tit->second.info;
    t.counters.invocations++;
    t.counters.invoke_errors += status != 0 ? 1 : 0;
    t.counters.bytes += bytes;
    t.counters.insns += insns;
    SessionSkip& skip = skips_[id];
    const std::uint32_t mode = t.quota.invoke_records;
    if (status == 0 && mode != ROF_INVOKE_RECORDS_ALL) {
        if (mode == ROF_INVOKE_RECORDS_ERRORS || ++skip.since < mode) {
            skip.count++;
            return false;
        }
        skip.since = 0;
    }
    rof_audit_record rec{};
    rec.kind = ROF_AUDIT_INVOKE;
    rec.tenant = t.id;
    rec.session = id;
    rec.opcode = ROF_OP_INVOKE;
    rec.status = status;
    rec.bytes = bytes;
    rec.insns = insns;
    audit_session_locked(rec);
    return true;
}

void FakeModule::set_abi_minor(std::uint32_t minor) {
    std::lock_guard lock(mu_);
    abi_minor_ = minor;
}

// ---- Audit ----

void FakeModule::audit_session_locked(rof_audit_record record) {
    if (const auto it = skips_.find(record.session); it != skips_.end()) {
        record.skipped = it->second.count;
        it->second.count = 0;
    }
    audit_locked(record);
}

void FakeModule::audit_locked(rof_audit_record record) {
    record.seq = audit_next_seq_++;
    if (record.time_ns == 0) {
        record.time_ns = now_ns();
    }
    audit_queue_.push_back(record);
    if (audit_queue_.size() > audit_ring_size) {
        audit_queue_.pop_front();
        audit_overruns_++;
    }
    flush_audit_locked();
}

bool FakeModule::reader_open_locked() {
    if (!audit_writer_) {
        return false;
    }
    pollfd pfd{audit_writer_.get(), POLLOUT, 0};
    if (::poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)) != 0) {
        audit_writer_.reset();
        return false;
    }
    return true;
}

void FakeModule::flush_audit_locked() {
    if (!reader_open_locked()) {
        return;
    }
    while (!audit_queue_.empty()) {
        const ssize_t n = ::send(audit_writer_.get(), &audit_queue_.front(),
                                 sizeof(rof_audit_record), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(sizeof(rof_audit_record))) {
            audit_queue_.pop_front();
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;  // the reader is behind: keep the rest queued
        } else {
            audit_writer_.reset();  // the reader is gone
            return;
        }
    }
}

UniqueFd FakeModule::audit_open(bool nonblock) {
    constexpr const char* cmd = "ROF_IOC_AUDIT_OPEN";
    std::lock_guard lock(mu_);
    enter(cmd);

    if (reader_open_locked()) {
        fail(EBUSY, cmd);
    }
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fail(errno, cmd);
    }
    UniqueFd reader(sv[0]);
    UniqueFd writer(sv[1]);
    // Read-only, as the module's audit fd.
    if (::shutdown(reader.get(), SHUT_WR) < 0 ||
        (nonblock && ::fcntl(reader.get(), F_SETFL, O_RDONLY | O_NONBLOCK) < 0)) {
        fail(errno, cmd);
    }
    audit_writer_ = std::move(writer);
    flush_audit_locked();
    return reader;
}

rof_audit_stats FakeModule::audit_stats() {
    std::lock_guard lock(mu_);
    enter("ROF_IOC_AUDIT_STATS");

    flush_audit_locked();
    rof_audit_stats st{};
    st.next_seq = audit_next_seq_;
    st.overruns = audit_overruns_;
    st.ring_size = audit_ring_size;
    st.pending = static_cast<std::uint32_t>(audit_queue_.size());
    st.reserve = audit_ring_size / 4;
    return st;
}

// ---- Test hooks ----

void FakeModule::set_devices(std::vector<DeviceInfo> devices) {
    std::lock_guard lock(mu_);
    devices_ = std::move(devices);
}

void FakeModule::set_idle_timeout_default_ms(std::uint32_t ms) {
    std::lock_guard lock(mu_);
    idle_timeout_ms_ = ms;
}

void FakeModule::fail_next(int err) {
    std::lock_guard lock(mu_);
    fail_next_ = err;
}

void FakeModule::push_audit(const rof_audit_record& record) {
    std::lock_guard lock(mu_);
    audit_locked(record);
}

void FakeModule::reload() {
    std::lock_guard lock(mu_);

    tenants_.clear();
    tenant_names_.clear();
    regions_.clear();
    freelists_.clear();
    progs_.clear();
    alias_tags_.clear();
    sessions_.clear();
    skips_.clear();
    last_tenant_ = last_region_ = last_freelist_ = last_session_ = 0;
    ticket_key_.reset();
    audit_queue_.clear();
    audit_next_seq_ = 1;
    audit_overruns_ = 0;
    audit_writer_.reset();
}

}  // namespace rofd
