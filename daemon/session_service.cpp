// SPDX-License-Identifier: MIT
// rof.v1.Sessions.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <chrono>
#include <fstream>

#include "call.h"
#include "services.h"

namespace rofd {
namespace {

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// The module's rdma_cm listener binds any address on its cm_port.
std::uint32_t cm_port() {
    const std::string s = read_line("/sys/module/rof/parameters/cm_port");
    try {
        return s.empty() ? ROF_CM_PORT_DEFAULT : static_cast<std::uint32_t>(std::stoul(s));
    } catch (const std::exception&) {
        return ROF_CM_PORT_DEFAULT;
    }
}

// The address clients should connect to: the policy's, else the first
// IPv4 address of the first RDMA device's network device.
std::string session_address(Manager& m, const View& v) {
    if (!v.policy->daemon.session_address.empty()) {
        return v.policy->daemon.session_address;
    }
    std::string netdev;
    for (const auto& d : m.module().list_devices()) {
        netdev = read_line("/sys/class/infiniband/" + d.name + "/ports/1/gid_attrs/ndevs/0");
        if (!netdev.empty()) {
            break;
        }
    }
    if (netdev.empty()) {
        throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                        "no RDMA device with a network device: set [sessions] address in "
                        "rofd.toml");
    }
    ifaddrs* ifa = nullptr;
    if (::getifaddrs(&ifa) < 0) {
        throw CallError(grpc::StatusCode::INTERNAL, "getifaddrs failed");
    }
    std::string addr;
    for (const ifaddrs* i = ifa; i != nullptr && addr.empty(); i = i->ifa_next) {
        if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET && netdev == i->ifa_name) {
            char buf[INET_ADDRSTRLEN];
            const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
            if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) != nullptr) {
                addr = buf;
            }
        }
    }
    ::freeifaddrs(ifa);
    if (addr.empty()) {
        throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                        netdev + " has no IPv4 address: set [sessions] address in rofd.toml");
    }
    return addr;
}

v1::SessionState to_proto_state(std::uint32_t s) {
    switch (s) {
        case ROF_SESSION_PREPARED:
            return v1::SESSION_STATE_PREPARED;
        case ROF_SESSION_CONNECTING:
            return v1::SESSION_STATE_CONNECTING;
        case ROF_SESSION_LIVE:
            return v1::SESSION_STATE_LIVE;
        case ROF_SESSION_CLOSING:
            return v1::SESSION_STATE_CLOSING;
        default:
            return v1::SESSION_STATE_UNSPECIFIED;
    }
}

std::string peer_string(const rof_session_info& s) {
    static constexpr std::uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char buf[INET6_ADDRSTRLEN] = "";
    if (std::equal(std::begin(v4mapped), std::end(v4mapped), s.peer_addr)) {
        ::inet_ntop(AF_INET, s.peer_addr + 12, buf, sizeof(buf));
        return std::string(buf) + ":" + std::to_string(s.peer_port);
    }
    ::inet_ntop(AF_INET6, s.peer_addr, buf, sizeof(buf));
    return "[" + std::string(buf) + "]:" + std::to_string(s.peer_port);
}

// @regions: the module's, to name each granted region (listed once per call).
void fill_session(const View& v, const std::vector<rof_region_info>& regions,
                  const rof_session_info& s, v1::Session* out) {
    out->set_id(s.id);
    out->set_tenant(v.name_of(s.tenant));
    out->set_state(to_proto_state(s.state));
    out->set_device(std::string(s.device, strnlen(s.device, sizeof(s.device))));
    out->set_port_num(s.port_num);
    out->set_credits(s.credits);
    out->set_idle_timeout_ms(s.idle_timeout_ms);
    out->set_qp_paced((s.flags & ROF_SESSION_QP_PACED) != 0);
    for (std::uint32_t i = 0; i < std::min<std::uint32_t>(s.nregions, ROF_SESSION_MAX_REGIONS);
         i++) {
        auto* g = out->add_regions();
        g->set_region(s.regions[i].region);
        g->set_access(s.regions[i].access);
        for (const auto& r : regions) {
            if (r.id == s.regions[i].region) {
                g->set_name(abi_name(r.name));
                g->set_size(r.size);
            }
        }
    }
    out->mutable_rate()->set_ops_per_sec(s.rate.ops_per_sec);
    out->mutable_rate()->set_bytes_per_sec(s.rate.bytes_per_sec);
    set_time(out->mutable_expires_at(), s.expires_ns);
    if (s.connected_ns != 0) {
        set_time(out->mutable_connected_at(), s.connected_ns);
        out->set_peer(peer_string(s));
    }
    auto* c = out->mutable_counters();
    c->set_requests(s.counters.requests);
    c->set_bytes_in(s.counters.bytes_in);
    c->set_bytes_out(s.counters.bytes_out);
    c->set_deferred(s.counters.deferred);
    c->set_completion_errors(s.counters.completion_errors);
    c->set_bad_requests(s.counters.bad_requests);
}

// The lower of two rates where 0 is unlimited.
std::uint64_t lower_rate(std::uint64_t policy, std::uint64_t asked) {
    if (policy == 0) {
        return asked;
    }
    return asked == 0 ? policy : std::min(policy, asked);
}

}  // namespace

ServerUnaryReactor* SessionService::OpenSession(CallbackServerContext* ctx,
                                                const v1::OpenSessionRequest* req,
                                                v1::OpenSessionResponse* resp) {
    return unary(m_, ctx, "OpenSession", CallKind::write, [this, req, resp](const Principal& p) {
        const std::string tenant = m_.tenant_of(p, req->tenant());
        const std::string what = "tenant " + quoted(tenant) + ": session";
        if (auto st = m_.authorize(p, tenant, Right::write, what); !st.ok()) {
            return st;
        }
        if (req->regions_size() > ROF_SESSION_MAX_REGIONS) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("regions: {}; at most {}", req->regions_size(),
                                            ROF_SESSION_MAX_REGIONS));
        }
        if (req->ticket_ttl_s() > ROF_TICKET_TTL_MAX_S) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("ticket_ttl_s: {}; at most {}", req->ticket_ttl_s(),
                                            ROF_TICKET_TTL_MAX_S));
        }
        if (req->idle_timeout_ms() > ROF_SESSION_IDLE_MAX_MS) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("idle_timeout_ms: {}; at most {}",
                                            req->idle_timeout_ms(), ROF_SESSION_IDLE_MAX_MS));
        }
        if (req->rate().ops_per_sec() > ROF_RATE_MAX ||
            req->rate().bytes_per_sec() > ROF_RATE_MAX) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("rate: at most {} per second", ROF_RATE_MAX));
        }
        const auto id =
            Manager::idempotency(p, "OpenSession", *req, req->idempotency_key(), tenant);
        if (auto st = m_.replay(id, resp)) {
            return *st;
        }
        const auto v = m_.view();
        const auto* pt = v->tenant(tenant);
        const std::uint32_t tid = m_.tenant_id(tenant);

        rof_session_prepare prep{};
        prep.tenant = tid;
        prep.nregions = static_cast<std::uint32_t>(req->regions_size());
        for (int i = 0; i < req->regions_size(); i++) {
            const auto& sr = req->regions(i);
            check_name(fmt::format("regions[{}].name", i), sr.name());
            const auto r = m_.find_region(tid, sr.name());
            if (!r) {
                return grpc::Status(grpc::StatusCode::NOT_FOUND,
                                    object_name(tenant, "region", sr.name()) + ": no such region");
            }
            const std::uint32_t access = sr.access() == 0 ? r->access : sr.access();
            if ((access & ~r->access) != 0) {
                return grpc::Status(
                    grpc::StatusCode::PERMISSION_DENIED,
                    fmt::format("{}: access {} exceeds the region's {}",
                                object_name(tenant, "region", sr.name()), access, r->access));
            }
            prep.regions[i] = rof_session_grant{r->id, access};
            auto* g = resp->add_regions();
            g->set_name(sr.name());
            g->set_region(r->id);
            g->set_access(access);
            g->set_size(r->size);
        }
        prep.rate.ops_per_sec = lower_rate(pt->session_rate.ops_per_sec, req->rate().ops_per_sec());
        prep.rate.bytes_per_sec =
            lower_rate(pt->session_rate.bytes_per_sec, req->rate().bytes_per_sec());
        const std::uint32_t ttl =
            req->ticket_ttl_s() != 0 ? req->ticket_ttl_s() : v->policy->daemon.ticket_ttl_s;
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        prep.expires_ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now + std::chrono::seconds(ttl))
                .count());
        prep.idle_timeout_ms = req->idle_timeout_ms() != 0 ? req->idle_timeout_ms()
                                                           : v->policy->daemon.idle_timeout_ms;
        // The tenant's [sessions] message_bytes; the module answers the
        // size the session has (ROF_MSG_SIZE on a module older than 0.8).
        prep.msg_size = pt->sessions.message_bytes;
        const std::string address = session_address(m_, *v);
        try {
            m_.module().session_prepare(prep);
        } catch (const KmodError& e) {
            return module_status(e, what);
        }
        resp->set_session(prep.session);
        resp->set_ticket(
            std::string(reinterpret_cast<const char*>(&prep.ticket), sizeof(prep.ticket)));
        resp->set_address(address);
        resp->set_port(cm_port());
        set_time(resp->mutable_expires_at(), prep.expires_ns);
        resp->set_credits(pt->quota.credits);
        resp->set_msg_size(prep.msg_size);
        // 0 leaves the timeout to the module's parameter: answer the value
        // in force, which librof's keepalive paces itself by (a lowered
        // parameter would otherwise close idle librof sessions).
        std::uint32_t idle = prep.idle_timeout_ms;
        if (idle == 0) {
            if (const auto s = m_.module().get_session(prep.session)) {
                idle = s->idle_timeout_ms;
            }
        }
        resp->set_idle_timeout_ms(idle);
        m_.store().transaction([&] { m_.record(id, *resp); });
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* SessionService::ListSessions(CallbackServerContext* ctx,
                                                 const v1::ListSessionsRequest* req,
                                                 v1::ListSessionsResponse* resp) {
    return unary(m_, ctx, "ListSessions", CallKind::read, [this, req, resp](const Principal& p) {
        const std::string tenant =
            req->tenant().empty() && p.admin() ? "" : m_.tenant_of(p, req->tenant());
        if (auto st =
                m_.authorize(p, tenant, Right::read, "tenant " + quoted(tenant) + ": sessions");
            !st.ok()) {
            return st;
        }
        const auto v = m_.view();
        const auto regions = m_.module().list_regions();
        for (const auto& s : m_.module().list_sessions()) {
            if (tenant.empty() || v->name_of(s.tenant) == tenant) {
                fill_session(*v, regions, s, resp->add_sessions());
            }
        }
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* SessionService::GetSession(CallbackServerContext* ctx,
                                               const v1::GetSessionRequest* req,
                                               v1::Session* resp) {
    return unary(m_, ctx, "GetSession", CallKind::read, [this, req, resp](const Principal& p) {
        const std::string what = "session " + std::to_string(req->id());
        const auto s = req->id() == 0 ? std::nullopt : m_.module().get_session(req->id());
        const auto v = m_.view();
        // Another tenant's session and a missing one look alike to a tenant.
        const std::string tenant = s ? v->name_of(s->tenant) : p.tenant;
        if (auto st = m_.authorize(p, tenant, Right::read, what); !st.ok()) {
            return st;
        }
        if (!s) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": no such session");
        }
        fill_session(*v, m_.module().list_regions(), *s, resp);
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* SessionService::CloseSession(CallbackServerContext* ctx,
                                                 const v1::CloseSessionRequest* req,
                                                 v1::CloseSessionResponse* resp) {
    return unary(m_, ctx, "CloseSession", CallKind::write, [this, req, resp](const Principal& p) {
        const std::string what = "session " + std::to_string(req->id());
        const auto s = req->id() == 0 ? std::nullopt : m_.module().get_session(req->id());
        const auto v = m_.view();
        const std::string tenant = s ? v->name_of(s->tenant) : p.tenant;
        if (auto st = m_.authorize(p, tenant, Right::write, what); !st.ok()) {
            return st;
        }
        const auto id =
            Manager::idempotency(p, "CloseSession", *req, req->idempotency_key(), tenant);
        if (auto st = m_.replay(id, resp)) {
            return *st;
        }
        if (!s) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": no such session");
        }
        try {
            m_.module().session_close(req->id());
        } catch (const KmodError& e) {
            return module_status(e, what);
        }
        m_.store().transaction([&] { m_.record(id, *resp); });
        return grpc::Status::OK;
    });
}

}  // namespace rofd
