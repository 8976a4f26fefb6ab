// SPDX-License-Identifier: MIT
// rof.v1.Regions.
#include <fmt/format.h>

#include <algorithm>

#include "call.h"
#include "services.h"

namespace rofd {
namespace {

constexpr std::uint64_t page = 4096;

const rof::policy::RegionDecl* declared(const View& v, const std::string& tenant,
                                        const std::string& name) {
    const auto* t = v.tenant(tenant);
    if (t == nullptr) {
        return nullptr;
    }
    for (const auto& r : t->regions) {
        if (r.name == name) {
            return &r;
        }
    }
    return nullptr;
}

// The grant of @owner's region @name to @grantee, if policy has one.
const rof::policy::GrantDecl* grant_of(const View& v, const std::string& owner,
                                       const std::string& name, const std::string& grantee) {
    const auto* t = v.tenant(owner);
    if (t == nullptr) {
        return nullptr;
    }
    for (const auto& g : t->grants) {
        if (g.region == name && g.to == grantee) {
            return &g;
        }
    }
    return nullptr;
}

// What fill_region reads besides the region itself, fetched once per
// call rather than once per region.
struct RegionContext {
    std::vector<rof_freelist_info> freelists;  // every region's, by offset
    std::vector<StoredRegion> stored;

    static RegionContext fetch(Manager& m) {
        return of(m.module().list_freelists(), m.store().regions());
    }
    static RegionContext of(std::vector<rof_freelist_info> freelists,
                            std::vector<StoredRegion> stored) {
        RegionContext c{std::move(freelists), std::move(stored)};
        std::sort(c.freelists.begin(), c.freelists.end(),
                  [](const auto& a, const auto& b) { return a.offset < b.offset; });
        return c;
    }
};

void fill_region(const View& v, const RegionContext& c, const rof_region_info& r, v1::Region* out) {
    const std::string tenant = v.name_of(r.tenant);
    const std::string name = abi_name(r.name);
    out->set_tenant(tenant);
    out->set_name(name);
    out->set_size(r.size);
    out->set_access(r.access);
    out->set_id(r.id);
    out->set_attachments(r.attachments);
    out->set_mappings(r.mappings);
    out->set_chunks(r.chunks);
    for (const auto& f : c.freelists) {
        if (f.region != r.id) {
            continue;
        }
        auto* fl = out->add_freelists();
        fl->set_block_size(f.block_size);
        fl->set_offset(f.offset);
        fl->set_count(f.count);
        fl->set_id(f.id);
        fl->set_free(f.free);
        fl->set_corrupt((f.flags & ROF_FREELIST_CORRUPT) != 0);
    }
    if (declared(v, tenant, name) != nullptr) {
        out->set_origin(v1::ORIGIN_POLICY);
    } else {
        bool stored = false;
        for (const auto& s : c.stored) {
            stored = stored || (s.tenant == tenant && s.name == name);
        }
        out->set_origin(stored ? v1::ORIGIN_API : v1::ORIGIN_MODULE);
    }
    if (const auto* t = v.tenant(tenant)) {
        for (const auto& g : t->grants) {
            if (g.region == name) {
                out->add_granted_to(g.to + (g.write ? ":rw" : ":r"));
            }
        }
    }
}

void check_access_bits(const char* field, std::uint32_t access) {
    if (access == 0 || (access & ~static_cast<std::uint32_t>(ROF_ACCESS_ALL)) != 0) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("{}: {} is not a non-empty set of ACCESS_READ (1), "
                                    "ACCESS_WRITE (2), ACCESS_ATOMIC (4)",
                                    field, access));
    }
}

void check_create(const v1::CreateRegionRequest& req) {
    check_name("name", req.name());
    if (req.size() == 0 || req.size() % page != 0 || req.size() > ROF_REGION_SIZE_MAX) {
        throw CallError(
            grpc::StatusCode::INVALID_ARGUMENT,
            fmt::format("size: {} must be a non-zero multiple of 4096 of at most 16 GiB",
                        req.size()));
    }
    check_access_bits("access", req.access());
    if (req.freelists_size() > ROF_REGION_FREELISTS_MAX) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("freelists: {}; at most {}", req.freelists_size(),
                                    ROF_REGION_FREELISTS_MAX));
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (int i = 0; i < req.freelists_size(); i++) {
        const auto& f = req.freelists(i);
        const std::string where = fmt::format("freelists[{}]: ", i);
        if (f.block_size() < 8 || f.block_size() % 8 != 0 || f.offset() % 8 != 0 ||
            f.count() == 0 || f.count() > ROF_FREELIST_BLOCKS_MAX) {
            throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                            where + fmt::format("block_size a multiple of 8 (>= 8), offset a "
                                                "multiple of 8, count 1 .. {}",
                                                ROF_FREELIST_BLOCKS_MAX));
        }
        // offset first: near 2^64, offset + the list's length wraps around.
        if (f.offset() > req.size()) {
            throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                            fmt::format("{}starts at byte {}, past the region's {}", where,
                                        f.offset(), req.size()));
        }
        const std::uint64_t end = f.offset() + 64 + std::uint64_t{f.count()} * f.block_size();
        if (end > req.size()) {
            throw CallError(
                grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("{}ends at byte {}, past the region's {}", where, end, req.size()));
        }
        for (const auto& [b, e] : ranges) {
            if (f.offset() < e && b < end) {
                throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                                where + "overlaps an earlier free list");
            }
        }
        ranges.emplace_back(f.offset(), end);
    }
}

// The store's row of @tenant's region @name, if it has one.
std::optional<StoredRegion> stored_region(Store& store, const std::string& tenant,
                                          const std::string& name) {
    for (auto& r : store.regions()) {
        if (r.tenant == tenant && r.name == name) {
            return r;
        }
    }
    return std::nullopt;
}

// The store's row of @tenant's region req.name() is committed and is what
// @req asks for: a create interrupted by a crash made it (reconciliation
// committed its intent).
bool made_by(Store& store, const std::string& tenant, const v1::CreateRegionRequest& req) {
    const auto r = stored_region(store, tenant, req.name());
    if (!r || r->state != RowState::committed || r->size != req.size() ||
        r->access != req.access() ||
        r->freelists.size() != static_cast<std::size_t>(req.freelists_size())) {
        return false;
    }
    for (int i = 0; i < req.freelists_size(); ++i) {
        const auto& f = req.freelists(i);
        const auto& g = r->freelists[static_cast<std::size_t>(i)];
        if (g.block_size != f.block_size() || g.offset != f.offset() || g.count != f.count()) {
            return false;
        }
    }
    return true;
}

}  // namespace

ServerUnaryReactor* RegionService::CreateRegion(CallbackServerContext* ctx,
                                                const v1::CreateRegionRequest* req,
                                                v1::Region* resp) {
    return unary(m_, ctx, "CreateRegion", CallKind::write, [this, req, resp](const Principal& p) {
        const std::string tenant = m_.tenant_of(p, req->tenant());
        const std::string what = object_name(tenant, "region", req->name());
        if (auto st = m_.authorize(p, tenant, Right::write, what); !st.ok()) {
            return st;
        }
        check_create(*req);
        const auto id =
            Manager::idempotency(p, "CreateRegion", *req, req->idempotency_key(), tenant);
        if (auto st = m_.replay(id, resp)) {
            return *st;
        }
        const auto v = m_.view();
        if (declared(*v, tenant, req->name()) != nullptr) {
            return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                what + ": declared by policy already");
        }
        const std::uint32_t tid = m_.tenant_id(tenant);
        if (const auto info = m_.find_region(tid, req->name())) {
            // A retry of a create that rofd died in: the region it made is
            // the answer, if it is the one asked for.
            if (m_.interrupted(id) && made_by(m_.store(), tenant, *req)) {
                fill_region(*v, RegionContext::fetch(m_), *info, resp);
                m_.store().transaction([&] { m_.record(id, *resp); });
                return grpc::Status::OK;
            }
            return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, what + ": exists");
        }
        const auto* pt = v->tenant(tenant);
        // The module counts the tenant's regions (one GET, not a LIST of
        // every tenant's); the quota on their number is rofd's.
        const auto ti = m_.module().get_tenant(tid);
        if (!ti) {
            return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                what + ": its tenant is not in the module (yet); retry");
        }
        if (ti->usage.regions >= pt->quota.regions) {
            return grpc::Status(
                grpc::StatusCode::RESOURCE_EXHAUSTED,
                fmt::format("{}: quota of {} regions reached", what, pt->quota.regions));
        }

        StoredRegion row{tenant, req->name(), req->size(), req->access(), {}, RowState::intent};
        for (const auto& f : req->freelists()) {
            row.freelists.push_back(StoredFreeList{f.block_size(), f.offset(), f.count()});
        }
        m_.store().transaction([&] {  // intent first: a crash after the ioctl is settled
            m_.store().put_region(row);
            m_.begin(id);
        });
        // One command makes the region and its free lists, or nothing.
        auto lists = freelist_specs(row.freelists);
        std::uint32_t rid = 0;
        try {
            rid = m_.module().region_create(tid, req->name(), req->size(), req->access(), lists);
        } catch (const KmodError& e) {
            m_.store().delete_region(tenant, req->name());
            return module_status(e, what);
        }
        const auto info = m_.module().get_region(rid);
        if (!info) {
            return grpc::Status(grpc::StatusCode::ABORTED, what + ": destroyed while created");
        }
        // The lists as made: every block free (no LIST of every tenant's lists).
        std::vector<rof_freelist_info> made;
        for (const auto& f : lists) {
            made.push_back(freelist_made(f, rid, tid));
        }
        fill_region(*v, RegionContext::of(std::move(made), m_.store().regions()), *info, resp);
        row.state = RowState::committed;
        m_.store().transaction([&] {
            m_.store().put_region(row);
            m_.record(id, *resp);
        });
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* RegionService::DeleteRegion(CallbackServerContext* ctx,
                                                const v1::DeleteRegionRequest* req,
                                                v1::DeleteRegionResponse* resp) {
    return unary(m_, ctx, "DeleteRegion", CallKind::write, [this, req, resp](const Principal& p) {
        const std::string tenant = m_.tenant_of(p, req->tenant());
        check_name("name", req->name());
        const std::string what = object_name(tenant, "region", req->name());
        if (auto st = m_.authorize(p, tenant, Right::write, what); !st.ok()) {
            return st;
        }
        const auto id =
            Manager::idempotency(p, "DeleteRegion", *req, req->idempotency_key(), tenant);
        if (auto st = m_.replay(id, resp)) {
            return *st;
        }
        const auto v = m_.view();
        if (const auto* d = declared(*v, tenant, req->name())) {
            return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                what + ": declared in " + v->tenant(tenant)->file + ":" +
                                    std::to_string(d->line) + "; remove it there and reload");
        }
        std::optional<StoredRegion> row = stored_region(m_.store(), tenant, req->name());
        const auto info = m_.find_region(m_.tenant_id(tenant), req->name());
        if (!info && !row) {
            // A retry of a delete that rofd died in: the region is gone.
            if (m_.interrupted(id)) {
                m_.store().transaction([&] { m_.record(id, *resp); });
                return grpc::Status::OK;
            }
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": no such region");
        }
        m_.store().transaction([&] {
            if (row) {
                row->state = RowState::intent;  // a crash now: the module decides
                m_.store().put_region(*row);
            }
            m_.begin(id);
        });
        if (info) {
            try {
                m_.module().region_destroy(info->id, req->force());
            } catch (const KmodError& e) {
                if (row) {
                    row->state = RowState::committed;
                    m_.store().put_region(*row);
                }
                if (e.code().value() == EBUSY) {
                    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                        fmt::format("{}: in use by {} sessions or programs and {} "
                                                    "mappings; force revokes them",
                                                    what, info->attachments, info->mappings));
                }
                return module_status(e, what);
            }
        }
        m_.store().transaction([&] {
            m_.store().delete_region(tenant, req->name());
            m_.record(id, *resp);
        });
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* RegionService::ListRegions(CallbackServerContext* ctx,
                                               const v1::ListRegionsRequest* req,
                                               v1::ListRegionsResponse* resp) {
    return unary(m_, ctx, "ListRegions", CallKind::read, [this, req, resp](const Principal& p) {
        const auto v = m_.view();
        std::string only;
        if (!req->tenant().empty()) {
            only = m_.tenant_of(p, req->tenant());
        }
        if (p.role == Principal::Role::none || !p.authenticated) {
            return m_.authorize(p, only, Right::read, "regions");
        }
        const RegionContext context = RegionContext::fetch(m_);
        for (const auto& r : m_.module().list_regions()) {
            const std::string tenant = v->name_of(r.tenant);
            const std::string name = abi_name(r.name);
            if (!only.empty() && tenant != only) {
                continue;
            }
            const bool visible =
                p.admin() || tenant == p.tenant || grant_of(*v, tenant, name, p.tenant) != nullptr;
            if (visible) {
                fill_region(*v, context, r, resp->add_regions());
            }
        }
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* RegionService::GetRegion(CallbackServerContext* ctx,
                                             const v1::GetRegionRequest* req, v1::Region* resp) {
    return unary(m_, ctx, "GetRegion", CallKind::read, [this, req, resp](const Principal& p) {
        const std::string tenant = m_.tenant_of(p, req->tenant());
        check_name("name", req->name());
        const std::string what = object_name(tenant, "region", req->name());
        const auto v = m_.view();
        const bool granted = grant_of(*v, tenant, req->name(), p.tenant) != nullptr;
        if (auto st = m_.authorize(p, tenant, Right::read, what, granted); !st.ok()) {
            return st;
        }
        const auto info = m_.find_region(m_.tenant_id(tenant), req->name());
        if (!info) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": no such region");
        }
        fill_region(*v, RegionContext::fetch(m_), *info, resp);
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* RegionService::CreateRegionToken(CallbackServerContext* ctx,
                                                     const v1::CreateRegionTokenRequest* req,
                                                     v1::CreateRegionTokenResponse* resp) {
    return unary(
        m_, ctx, "CreateRegionToken", CallKind::read, [this, req, resp](const Principal& p) {
            const std::string tenant = m_.tenant_of(p, req->tenant());
            check_name("name", req->name());
            const std::string what = object_name(tenant, "region", req->name());
            const auto v = m_.view();
            const auto* g = grant_of(*v, tenant, req->name(), p.tenant);
            const bool own = p.admin() || (p.role == Principal::Role::tenant && p.tenant == tenant);
            if (auto st =
                    m_.authorize(p, tenant, own ? Right::write : Right::read, what, g != nullptr);
                !st.ok()) {
                return st;
            }
            const std::uint32_t access = req->access() == 0 ? ROF_ACCESS_READ : req->access();
            if ((access & ~static_cast<std::uint32_t>(ROF_ACCESS_READ | ROF_ACCESS_WRITE)) != 0 ||
                (access & ROF_ACCESS_READ) == 0) {
                return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                    "access: ACCESS_READ, optionally with ACCESS_WRITE");
            }
            if (!own && (access & ROF_ACCESS_WRITE) != 0 && !g->write) {
                return grpc::Status(
                    grpc::StatusCode::PERMISSION_DENIED,
                    what + ": granted to tenant " + quoted(p.tenant) + " read-only");
            }
            if (req->ttl_ms() > ROF_TOKEN_TTL_MAX_MS) {
                return grpc::Status(
                    grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("ttl_ms: {}; at most {}", req->ttl_ms(), ROF_TOKEN_TTL_MAX_MS));
            }
            const auto info = m_.find_region(m_.tenant_id(tenant), req->name());
            if (!info) {
                return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": no such region");
            }
            RegionToken token{};
            try {
                token = m_.module().region_token(info->id, access, req->ttl_ms());
            } catch (const KmodError& e) {
                return module_status(e, what);
            }
            std::string bytes(16, '\0');
            for (std::size_t w = 0; w < 2; w++) {
                for (std::size_t b = 0; b < 8; b++) {
                    bytes[w * 8 + b] = static_cast<char>((token[w] >> (8 * b)) & 0xff);
                }
            }
            resp->set_token(bytes);
            resp->set_region(info->id);
            resp->set_size(info->size);
            resp->set_access(access);
            resp->set_device(ROF_DEVICE_PATH);
            return grpc::Status::OK;
        });
}

}  // namespace rofd
