// SPDX-License-Identifier: MIT
#include "manager.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpcpp/security/auth_context.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <set>

#include "audit_drain.h"
#include "audit_hub.h"
#include "call.h"
#include "journal.h"
#include "kmod.h"
#include "log.h"
#include "metrics.h"
#include "reconcile.h"
#include "status_map.h"

namespace rofd {
namespace {

// gRPC names a connection added with AddInsecureChannelFromFd() "fd:N";
// the fd stays open while any call on it is in flight, so its peer
// credentials can be read at call time.  Anything else: std::nullopt.
std::optional<int> peer_fd(std::string_view peer) {
    constexpr std::string_view prefix = "fd:";
    int fd = -1;
    if (!peer.starts_with(prefix)) {
        return std::nullopt;
    }
    peer.remove_prefix(prefix.size());
    const auto [end, ec] = std::from_chars(peer.data(), peer.data() + peer.size(), fd);
    if (ec != std::errc() || end != peer.data() + peer.size() || fd < 0) {
        return std::nullopt;
    }
    return fd;
}

bool unix_peer(int fd, Principal& p) {
    struct stat st {};
    if (::fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        return false;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred) ||
        cred.pid == 0) {
        return false;
    }
    p.uid = cred.uid;
    p.gid = cred.gid;
    p.pid = cred.pid;
    std::vector<gid_t> groups(64);
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) < 0) {
        // ERANGE says how many there are; any other failure means none
        // known, never a buffer of zeros (which would read as group 0).
        const bool retry = errno == ERANGE;
        groups.resize(retry ? len / sizeof(gid_t) : 0);
        len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (!retry || ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) < 0) {
            len = 0;
        }
    }
    groups.resize(len / sizeof(gid_t));
    groups.push_back(cred.gid);
    p.groups = std::move(groups);
    return true;
}

std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const char c : s) {
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
    return h;
}

// A retry with the same idempotency key is answered from the store for a
// week after the call; records are dropped at each start after that.
constexpr std::int64_t idempotency_max_age_s = std::int64_t{7} * 24 * 3600;

TicketKey random_key() {
    TicketKey key{};
    std::size_t got = 0;
    while (got < key.size()) {
        const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        got += static_cast<std::size_t>(n);
    }
    return key;
}

void jsend(log::Level level, std::string_view msg, const std::vector<journal::Field>& fields) {
    journal::send(level, msg, fields);
}

rof::v1::AuditRecord to_proto(const rof_audit_record& r, const std::string& tenant) {
    rof::v1::AuditRecord out;
    out.set_seq(r.seq);
    out.mutable_time()->set_seconds(static_cast<std::int64_t>(r.time_ns / 1000000000ULL));
    out.mutable_time()->set_nanos(static_cast<std::int32_t>(r.time_ns % 1000000000ULL));
    out.set_kind(rof::v1::AuditKind_IsValid(static_cast<int>(r.kind))
                     ? static_cast<rof::v1::AuditKind>(r.kind)
                     : rof::v1::AUDIT_KIND_UNSPECIFIED);
    out.set_tenant(tenant);
    out.set_session(r.session);
    out.set_opcode(r.opcode);
    out.set_tag(r.tag);
    if (r.kind == ROF_AUDIT_REGION_DESTROY) {
        out.set_region(static_cast<std::uint32_t>(destroyed_region(r)));
    }
    out.set_status(r.status);
    out.set_reason(r.reason);
    out.set_bytes(r.bytes);
    out.set_latency_ns(r.latency_ns);
    out.set_insns(r.insns);
    if (r.skipped != 0) {
        out.set_skipped(r.skipped);
    }
    out.set_message(audit_message(r, tenant));
    return out;
}

// "2026-11-26T14:05:00Z"
std::string utc(std::chrono::system_clock::time_point t) {
    const std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

std::string Principal::describe() const {
    std::string who;
    if (!subject.empty()) {
        who = "subject " + quoted(subject);
    } else if (authenticated) {
        who = fmt::format("uid {}, pid {}", uid, pid);
    }
    switch (role) {
        case Role::admin:
            return "admin (" + who + ")";
        case Role::tenant:
            return "tenant " + tenant + " (" + who + ")";
        case Role::none:
            break;
    }
    return authenticated ? "unknown caller (" + who + ")" : "unauthenticated caller";
}

std::string Principal::scope() const {
    return admin() ? "admin" : "tenant:" + tenant;
}

const rof::policy::Tenant* View::tenant(std::string_view name) const {
    return policy ? policy->find(name) : nullptr;
}

const Removal* View::removal(std::string_view name) const {
    const auto it = removing.find(name);
    return it != removing.end() ? &it->second : nullptr;
}

std::string View::name_of(std::uint32_t id) const {
    const auto it = tenant_name.find(id);
    return it != tenant_name.end() ? it->second : "#" + std::to_string(id);
}

Manager::Manager(ManagerOptions opt, std::unique_ptr<Module> module)
    : opt_(std::move(opt)),
      module_(std::move(module)),
      hub_(std::make_unique<AuditHub>()),
      calls_(std::make_unique<CallMetrics>(std::vector<std::string>{
          "rof.v1.Control", "rof.v1.Tenants", "rof.v1.Policy", "rof.v1.Regions", "rof.v1.Programs",
          "rof.v1.Sessions", "rof.v1.Audit", "rof.v1.Metrics"})),
      started_(std::chrono::steady_clock::now()) {
    auto v = std::make_shared<View>();
    v->policy = std::make_shared<rof::policy::Policy>();
    view_ = std::move(v);
}

Manager::~Manager() {
    stop();
}

Store& Manager::store() {
    if (!store_) {
        throw CallError(grpc::StatusCode::UNAVAILABLE, "rofd is starting: no state yet");
    }
    return *store_;
}

std::shared_ptr<const View> Manager::view() const {
    std::shared_ptr<const View> v;
    ViewFilter filter;
    {
        std::lock_guard lock(view_mu_);
        v = view_;
        filter = view_filter_;
    }
    return filter ? filter(std::move(v)) : v;
}

void Manager::set_view_filter_for_test(ViewFilter filter) {
    std::lock_guard lock(view_mu_);
    view_filter_ = std::move(filter);
}

void Manager::publish(std::shared_ptr<View> v) {
    if (audit_) {
        audit_->set_config(audit_config(*v));
    }
    std::lock_guard lock(view_mu_);
    view_ = std::move(v);
}

std::shared_ptr<const AuditConfig> Manager::audit_config(const View& v) const {
    auto c = std::make_shared<AuditConfig>();
    for (const auto& [name, id] : v.tenant_id) {
        if (const auto* t = v.tenant(name)) {
            c->tenants[id] = TenantAuditConfig{name, t->audit, t->quarantine};
        }
    }
    return c;
}

void Manager::load_policy() {
    auto loaded = rof::policy::load(opt_.daemon_file, opt_.tenants_dir);
    if (!loaded.policy) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        "policy has errors:\n" + loaded.error_text());
    }
    auto v = std::make_shared<View>();
    v->policy = std::make_shared<rof::policy::Policy>(std::move(*loaded.policy));
    v->generation = 1;
    v->loaded_at = std::chrono::system_clock::now();
    publish(std::move(v));
}

void Manager::start() {
    if (view()->generation == 0) {
        load_policy();
    }
    const auto v = view();
    const std::string dir = opt_.state_dir.empty() ? v->policy->daemon.state_dir : opt_.state_dir;
    store_ = std::make_unique<Store>(dir + "/rofd.db");
    std::optional<TicketKey> key = store_->ticket_key();
    if (!key) {
        key = random_key();
        store_->set_ticket_key(*key);
        log::info("made a new ticket key in {}", store_->path());
    }
    if (const std::size_t n = store_->prune_idempotent(idempotency_max_age_s); n != 0) {
        log::info("dropped {} idempotency records older than a week", n);
    }
    // The same key every start: the module keeps it across rofd restarts,
    // and after a module reload unexpired tickets stay valid.
    module_->set_ticket_key(*key);

    UniqueFd ring;
    try {
        ring = module_->audit_open(true);
    } catch (const KmodError& e) {
        if (e.code().value() == EBUSY) {
            throw CallError(
                grpc::StatusCode::FAILED_PRECONDITION,
                std::string(e.what()) + ": another process reads the audit ring (another rofd?)");
        }
        throw;
    }
    AuditDrain::Options o;
    o.on_quarantine = [this](std::uint32_t t, std::uint32_t s, const std::string& why) {
        quarantine(t, s, why);
    };
    o.on_record = [this](const rof_audit_record& r, const std::string& tenant) {
        // Built only for a stream: a record published as a stream opens is one the stream
        // could as well have missed by opening a moment later.
        if (hub_->streams() != 0) {
            hub_->publish(to_proto(r, tenant));
        }
    };
    audit_ = std::make_unique<AuditDrain>(std::move(ring), audit_config(*v), std::move(o));

    reconcile();
    try {
        sweep_removals();
    } catch (const KmodError& e) {
        // The sweep runs every second from now on: it tries again then.
        log::error("removed tenants: {}", e.what());
    }
    {
        std::lock_guard lock(work_mu_);
        stopping_ = false;
    }
    worker_ = std::thread([this] { worker_loop(); });
    ready_ = true;
}

void Manager::stop() {
    ready_ = false;
    {
        std::lock_guard lock(work_mu_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    if (worker_.joinable()) {
        worker_.join();
    }
}

void Manager::post(std::function<void()> fn) {
    post_call(Principal{}, 0, std::move(fn));  // no tenant's: not counted
}

void Manager::post_call(const Principal& p, std::uint32_t max, std::function<void()> fn) {
    {
        std::lock_guard lock(work_mu_);
        if (stopping_) {
            throw CallError(grpc::StatusCode::UNAVAILABLE, "rofd is shutting down");
        }
        if (p.role != Principal::Role::tenant) {
            work_.push_back(std::move(fn));
        } else {
            std::uint32_t& n = queued_per_tenant_[p.tenant];
            if (n >= max) {
                throw CallError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                fmt::format("tenant {}: {} calls wait for rofd's worker already "
                                            "(limits.queued_calls_per_tenant)",
                                            quoted(p.tenant), max));
            }
            n++;
            // No longer waiting once the worker takes it.
            work_.push_back([this, tenant = p.tenant, fn = std::move(fn)] {
                {
                    std::lock_guard taken(work_mu_);
                    auto it = queued_per_tenant_.find(tenant);
                    if (it != queued_per_tenant_.end() && --it->second == 0) {
                        queued_per_tenant_.erase(it);
                    }
                }
                fn();
            });
        }
    }
    work_cv_.notify_one();
}

std::size_t Manager::queued() const {
    std::lock_guard lock(work_mu_);
    return work_.size();
}

void Manager::worker_loop() {
    for (;;) {
        std::function<void()> fn;
        {
            std::unique_lock lock(work_mu_);
            work_cv_.wait(lock, [this] { return stopping_ || !work_.empty(); });
            if (work_.empty()) {
                return;  // stopping, and everything posted has run
            }
            fn = std::move(work_.front());
            work_.pop_front();
        }
        try {
            fn();
        } catch (const std::exception& e) {
            // Work items finish their own calls; this is a bug, not a reason to die.
            log::error("worker: {}", e.what());
        }
    }
}

// --- who is calling ---------------------------------------------------

Principal Manager::principal(const grpc::ServerContextBase& ctx) const {
    Principal p;
    const auto v = view();
    const auto& pol = *v->policy;

    if (const auto fd = peer_fd(ctx.peer()); fd && unix_peer(*fd, p)) {
        p.authenticated = true;
        bool admin = pol.is_admin(p.uid, p.gid);
        const rof::policy::Tenant* t = nullptr;
        for (const gid_t g : p.groups) {
            admin = admin || pol.is_admin(p.uid, g);
            if (t == nullptr) {
                t = pol.for_peer(p.uid, g);
            }
        }
        if (admin) {
            p.role = Principal::Role::admin;
        } else if (t != nullptr) {
            p.role = Principal::Role::tenant;
            p.tenant = t->name;
        }
        return p;
    }

    const auto auth = ctx.auth_context();
    if (auth && auth->IsPeerAuthenticated()) {
        const auto subj = auth->FindPropertyValues("x509_subject");
        if (!subj.empty()) {
            p.authenticated = true;
            p.subject.assign(subj.front().data(), subj.front().size());
            if (std::find(pol.daemon.admin.subjects.begin(), pol.daemon.admin.subjects.end(),
                          p.subject) != pol.daemon.admin.subjects.end()) {
                p.role = Principal::Role::admin;
            } else if (const auto* t = pol.for_subject(p.subject)) {
                p.role = Principal::Role::tenant;
                p.tenant = t->name;
            }
        }
    }
    return p;
}

grpc::Status Manager::authorize(const Principal& p, const std::string& tenant, Right right,
                                const std::string& what, bool granted) {
    grpc::Status st;
    if (!p.authenticated) {
        st = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "rofd cannot tell who is calling: connect over its unix socket or "
                          "with a client certificate");
    } else if (p.admin() || (p.role == Principal::Role::tenant &&
                             (p.tenant == tenant || (granted && right == Right::read)))) {
        return grpc::Status::OK;
    } else if (p.role == Principal::Role::none) {
        st = grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          p.describe() + " is not an admin and no tenant's identity in policy");
    } else {
        st = grpc::Status(
            grpc::StatusCode::PERMISSION_DENIED,
            p.describe() + " may not " + (right == Right::read ? "see " : "change ") + what);
    }
    audit_control(p, "authorize", st, what);
    return st;
}

std::string Manager::tenant_of(const Principal& p, const std::string& requested) {
    return tenant_of(*view(), p, requested);
}

std::string Manager::tenant_of(const View& v, const Principal& p, const std::string& requested) {
    if (!p.authenticated || p.role == Principal::Role::none) {
        const auto st = authorize(p, requested, Right::read,
                                  requested.empty() ? "anything" : "tenant " + quoted(requested));
        throw CallError(st.error_code(), st.error_message());
    }
    if (requested.empty()) {
        if (p.role == Principal::Role::tenant) {
            return p.tenant;
        }
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        "tenant: empty; an admin must name the tenant");
    }
    check_name("tenant", requested);
    if (v.tenant(requested) == nullptr) {
        // A tenant asking about another that does not exist learns nothing
        // it could not learn from one that does: both are refused alike.
        if (p.role == Principal::Role::tenant && p.tenant != requested) {
            throw CallError(grpc::StatusCode::PERMISSION_DENIED,
                            p.describe() + " may not see tenant " + quoted(requested));
        }
        if (const auto* r = v.removal(requested)) {
            throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                            "tenant " + quoted(requested) +
                                ": being removed (no longer in policy): it takes no new "
                                "sessions, regions or programs and is destroyed by " +
                                utc(wall_time(r->deadline)) + " at the latest");
        }
        throw CallError(grpc::StatusCode::NOT_FOUND,
                        "tenant " + quoted(requested) + ": not in policy");
    }
    return requested;
}

void Manager::charge_control_call(const Principal& p) {
    if (p.admin() || p.role != Principal::Role::tenant) {
        return;
    }
    const auto* t = view()->tenant(p.tenant);
    if (t == nullptr || t->control_rate == 0) {
        return;
    }
    const double rate = t->control_rate;
    const auto now = this->now();
    std::lock_guard lock(rate_mu_);
    auto it = control_buckets_.try_emplace(p.tenant, Bucket{rate, now}).first;
    if (!it->second.take(rate, now)) {
        throw CallError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "tenant " + quoted(p.tenant) + ": control_rate " +
                            std::to_string(t->control_rate) + " calls/s exceeded; retry later");
    }
}

std::chrono::steady_clock::time_point Manager::now() const {
    return opt_.clock ? opt_.clock() : std::chrono::steady_clock::now();
}

namespace {
thread_local std::uint64_t refusals_audited = 0;

// Callers whose refusals are counted apart; past it, a new caller's are
// left out (and counted) until an idle one's entry is dropped.
constexpr std::size_t refusal_callers_max = 4096;
}  // namespace

bool Manager::journal_refusal(const Principal& p, std::uint64_t* left_out) {
    const std::string caller = !p.subject.empty() ? "subject " + p.subject
                               : p.authenticated  ? "uid " + std::to_string(p.uid)
                                                  : "unauthenticated";
    const double rate = view()->policy->daemon.refusals_journalled_per_s;
    const auto now = this->now();
    const auto idle = std::chrono::seconds(1);  // a bucket refills in one second
    std::lock_guard lock(rate_mu_);
    auto it = refusal_buckets_.find(caller);
    if (it == refusal_buckets_.end()) {
        if (refusal_buckets_.size() >= refusal_callers_max) {
            std::erase_if(refusal_buckets_, [&](const auto& e) {
                return e.second.left_out == 0 && now - e.second.bucket.last >= idle;
            });
        }
        if (refusal_buckets_.size() >= refusal_callers_max) {
            ++refusals_left_out_;
            return false;
        }
        it = refusal_buckets_.emplace(caller, RefusalBucket{Bucket{rate, now}, 0}).first;
    }
    if (!it->second.bucket.take(rate, now)) {
        ++it->second.left_out;
        ++refusals_left_out_;
        return false;
    }
    *left_out = std::exchange(it->second.left_out, 0);
    return true;
}

std::uint64_t Manager::refusals_audited_on_this_thread() noexcept {
    return refusals_audited;
}

void Manager::audit_control(const Principal& p, const std::string& method, const grpc::Status& st,
                            const std::string& what) {
    if (st.ok()) {
        return;
    }
    ++refusals_audited;
    std::uint64_t left_out = 0;
    if (!journal_refusal(p, &left_out)) {
        return;
    }
    std::vector<journal::Field> fields{
        {"ROF_KIND", "control"},
        {"ROF_METHOD", method},
        {"ROF_STATUS", std::to_string(static_cast<int>(st.error_code()))},
        {"ROF_CALLER", p.describe()},
    };
    if (!p.tenant.empty()) {
        fields.push_back({"ROF_TENANT", p.tenant});
    }
    std::string msg = method + " refused: " + what + ": " + st.error_message();
    if (left_out != 0) {
        fields.push_back({"ROF_REFUSALS_LEFT_OUT", std::to_string(left_out)});
        msg += fmt::format(
            " ({} earlier refusals of this caller not journalled: "
            "limits.refusals_journalled_per_s)",
            left_out);
    }
    jsend(log::Level::warning, msg, fields);
}

void Manager::refuse_connection(const PeerCred& cred, std::uint32_t limit) {
    ++connections_refused_;
    Principal p;
    p.authenticated = true;
    p.uid = cred.uid;
    p.gid = cred.gid;
    p.pid = cred.pid;
    audit_control(p, "connect",
                  grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                               fmt::format("uid {} holds {} connections already "
                                           "(limits.connections_per_uid)",
                                           cred.uid, limit)),
                  "unix socket");
}

// --- idempotency ------------------------------------------------------

Manager::Idempotency Manager::idempotency(const Principal& p, const std::string& method,
                                          const google::protobuf::Message& req,
                                          const std::string& key, const std::string& tenant) {
    if (key.size() > 128) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("idempotency_key: {} characters; at most 128", key.size()));
    }
    std::string bytes;
    {
        google::protobuf::io::StringOutputStream out(&bytes);
        google::protobuf::io::CodedOutputStream coded(&out);
        coded.SetSerializationDeterministic(true);
        req.SerializeToCodedStream(&coded);
    }
    return Idempotency{p.scope(), method, key, fmt::format("{:016x}", fnv1a(bytes)), tenant};
}

std::optional<grpc::Status> Manager::replay(const Idempotency& id,
                                            google::protobuf::Message* resp) {
    if (id.key.empty()) {
        return std::nullopt;
    }
    const auto prev = store().idempotent(id.scope, id.method, id.key);
    if (!prev) {
        return std::nullopt;
    }
    if (prev->request_hash != id.request_hash) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "idempotency_key " + quoted(id.key) + " was used for another " +
                                id.method + " request");
    }
    if (prev->status_code == Store::Idempotent::pending) {
        return std::nullopt;  // interrupted: the handler looks at what it left
    }
    if (!resp->ParseFromString(prev->response)) {
        return grpc::Status(grpc::StatusCode::INTERNAL,
                            "idempotency_key " + quoted(id.key) + ": stored answer unreadable");
    }
    return grpc::Status(static_cast<grpc::StatusCode>(prev->status_code), prev->status_message);
}

void Manager::begin(const Idempotency& id) {
    if (id.key.empty()) {
        return;
    }
    store().put_idempotent(
        id.scope, id.method, id.key,
        Store::Idempotent{id.request_hash, "", Store::Idempotent::pending, "", id.tenant});
}

bool Manager::interrupted(const Idempotency& id) {
    if (id.key.empty()) {
        return false;
    }
    const auto prev = store().idempotent(id.scope, id.method, id.key);
    return prev && prev->status_code == Store::Idempotent::pending &&
           prev->request_hash == id.request_hash;
}

void Manager::record(const Idempotency& id, const google::protobuf::Message& resp) {
    if (id.key.empty()) {
        return;
    }
    store().put_idempotent(
        id.scope, id.method, id.key,
        Store::Idempotent{id.request_hash, resp.SerializeAsString(), 0, "", id.tenant});
}

// --- module objects -----------------------------------------------------

std::uint32_t Manager::tenant_id(const std::string& tenant) const {
    return tenant_id(*view(), tenant);
}

std::uint32_t Manager::tenant_id(const View& v, const std::string& tenant) {
    const auto it = v.tenant_id.find(tenant);
    if (it == v.tenant_id.end()) {
        throw CallError(grpc::StatusCode::UNAVAILABLE,
                        "tenant " + quoted(tenant) + ": not in the module (yet); retry");
    }
    return it->second;
}

std::optional<rof_region_info> Manager::find_region(std::uint32_t tid, const std::string& name) {
    return module_->find_region(tid, name);
}

std::vector<rof_freelist_info> Manager::freelists_of(std::uint32_t region_id) {
    std::vector<rof_freelist_info> out;
    for (const auto& f : module_->list_freelists()) {
        if (f.region == region_id) {
            out.push_back(f);
        }
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    return out;
}

Manager::ModuleObjects Manager::list_objects() {
    ModuleObjects o;
    for (const auto& r : module_->list_regions()) {
        o.regions.try_emplace(std::pair(r.tenant, abi_name(r.name)), r);
    }
    for (const auto& f : module_->list_freelists()) {
        o.freelists[f.region].push_back(f);
    }
    for (auto& [region, fls] : o.freelists) {
        std::sort(fls.begin(), fls.end(),
                  [](const auto& a, const auto& b) { return a.offset < b.offset; });
    }
    return o;
}

std::optional<rof_region_info> Manager::ModuleObjects::region(std::uint32_t tenant_id,
                                                              const std::string& name) const {
    const auto it = regions.find({tenant_id, name});
    return it != regions.end() ? std::optional(it->second) : std::nullopt;
}

std::vector<rof_freelist_info> Manager::ModuleObjects::freelists_of(std::uint32_t region_id) const {
    const auto it = freelists.find(region_id);
    return it != freelists.end() ? it->second : std::vector<rof_freelist_info>{};
}

void Manager::apply_limits(const rof::policy::Tenant& t, std::uint32_t id,
                           const rof_tenant_quota* current) {
    rof_tenant_quota q{};
    q.region_bytes = t.quota.region_bytes;
    q.sessions = t.quota.sessions;
    q.programs = t.quota.programs;
    q.credits = t.quota.credits;
    // invoke_records rides with the quota (ABI 0.10); an older module has none and refuses
    // anything but 0 there, and records every INVOKE, as it always did.  Its TENANT_GET reads
    // that 0 back, so a reconcile finds nothing to set.
    q.invoke_records = module_->abi_minor() >= abi_minor_invoke_records ? t.invoke_records
                                                                        : ROF_INVOKE_RECORDS_ALL;
    // A restart finds every tenant's quota as it left it: one ioctl fewer per tenant.  The rate
    // has no GET, so it is always set.
    if (current == nullptr || current->region_bytes != q.region_bytes ||
        current->sessions != q.sessions || current->programs != q.programs ||
        current->credits != q.credits || current->invoke_records != q.invoke_records) {
        module_->tenant_set_quota(id, q);
    }
    module_->tenant_set_rate(id, rof_rate{t.tenant_rate.ops_per_sec, t.tenant_rate.bytes_per_sec});
}

// --- reconciliation ---------------------------------------------------

// What the module could not do is recorded, never thrown: one object (or
// one LIST) that fails leaves that object unreconciled and every other
// tenant served (issue 28).  The store's own errors still throw.
void Manager::reconcile() {
    const auto t0 = std::chrono::steady_clock::now();  // the real clock, as reload_policy()
    const auto old = view();
    const auto& pol = *old->policy;
    std::vector<std::string> errors;  // also in drift, so GetStatus shows them

    ModuleState ms;
    StoreState ss{store_->tenants(), store_->regions(), store_->programs()};
    try {
        ms.tenants = module_->list_tenants();
    } catch (const KmodError& e) {
        // Without the list, the tenants rofd made are found by the ids it
        // stored; one it did not make may then fail to be created (EEXIST).
        errors.push_back(std::string("tenants: the module could not list them (") + e.what() +
                         "): only those in rofd's state were looked up");
        for (const auto& t : ss.tenants) {
            try {
                if (const auto info = module_->get_tenant(t.id);
                    info && abi_name(info->name) == t.name) {
                    ms.tenants.push_back(*info);
                }
            } catch (const KmodError& ge) {
                errors.push_back("tenant " + quoted(t.name) +
                                 ": could not be looked up: " + ge.what());
            }
        }
    }
    auto listed = [&](const char* what, const char* left, auto list, auto& into, bool& known) {
        try {
            into = list();
        } catch (const KmodError& e) {
            known = false;
            errors.push_back(std::string(what) + ": the module could not list them (" + e.what() +
                             "): " + left + " not reconciled");
        }
    };
    listed(
        "regions", "regions and free lists", [&] { return module_->list_regions(); }, ms.regions,
        ms.regions_known);
    listed(
        "free lists", "free lists", [&] { return module_->list_freelists(); }, ms.freelists,
        ms.freelists_known);
    listed(
        "programs", "programs", [&] { return module_->list_progs(); }, ms.progs, ms.progs_known);
    const Plan plan = plan_reconcile(pol, ss, ms);

    auto v = std::make_shared<View>(*old);
    v->tenant_id.clear();
    v->tenant_name.clear();
    std::vector<std::string> drift = plan.drift;

    // Tenants that ask for their stored id first: the module assigns the
    // others an id, which could be one asked for later (EEXIST).  A tenant
    // that cannot be created is not served: its calls are UNAVAILABLE.
    std::map<std::string, std::uint32_t> created;
    std::vector<StoredTenant> created_rows;
    for (const bool with_id : {true, false}) {
        for (const auto& t : plan.tenants) {
            if (t.create && (t.id != 0) == with_id) {
                try {
                    const std::uint32_t id = module_->tenant_create(t.name, t.id);
                    created[t.name] = id;
                    created_rows.push_back(StoredTenant{t.name, id});
                } catch (const KmodError& e) {
                    errors.push_back("tenant " + quoted(t.name) +
                                     ": could not be created: " + e.what());
                }
            }
        }
    }
    // The module's quota of each tenant it has, from the list read above.
    std::map<std::uint32_t, const rof_tenant_quota*> quotas;
    for (const auto& t : ms.tenants) {
        quotas[t.id] = &t.quota;
    }
    auto module_quota = [&](std::uint32_t id) -> const rof_tenant_quota* {
        const auto it = quotas.find(id);
        return it != quotas.end() ? it->second : nullptr;
    };
    for (const auto& t : plan.tenants) {
        const auto c = created.find(t.name);
        if (t.create && c == created.end()) {
            continue;
        }
        const std::uint32_t id = t.create ? c->second : t.id;
        v->tenant_id[t.name] = id;
        v->tenant_name[id] = t.name;
        try {
            apply_limits(*pol.find(t.name), id, t.create ? nullptr : module_quota(id));
        } catch (const KmodError& e) {
            errors.push_back("tenant " + quoted(t.name) +
                             ": quota and rate could not be applied: " + e.what());
        }
    }
    // One transaction for them all: a commit is a sync of the store's log,
    // and a reload that adds 10,000 tenants made 10,000 of them (B8).  A
    // crash before it loses nothing: the next reconciliation finds the
    // tenants in the module by name.
    store_->transaction([&] {
        for (const auto& t : created_rows) {
            store_->put_tenant(t);
        }
        for (const auto& t : plan.store_tenants) {
            store_->put_tenant(t);
        }
    });
    // Module tenants not in policy keep their names for audit and lists,
    // and are being removed: a removal already under way keeps its
    // deadline, a new one (or one found at start-up) gets the full grace.
    // A name back in policy is no longer removed (the operator's undo).
    v->removing.clear();
    const auto deadline = now() + std::chrono::milliseconds(pol.daemon.tenant_removal_grace_ms);
    std::set<std::string, std::less<>> stored;
    for (const auto& t : ss.tenants) {
        stored.insert(t.name);
    }
    for (const auto& t : ms.tenants) {
        const std::string name = abi_name(t.name);
        v->tenant_name.try_emplace(t.id, name);
        // Only a tenant rofd made: one made outside rofd is left alone.
        if (pol.find(name) == nullptr &&
            (stored.count(name) != 0 || old->removal(name) != nullptr)) {
            const auto* before = old->removal(name);
            v->removing[name] = Removal{
                t.id, before != nullptr && before->id == t.id ? before->deadline : deadline};
        }
    }
    // Rows of a tenant neither policy nor the module has: nothing to wait
    // for; the sweep drops them, so a re-added name starts empty.
    for (const auto& t : ss.tenants) {
        if (pol.find(t.name) == nullptr) {
            v->removing.try_emplace(t.name, Removal{0, deadline});
        }
    }

    auto no_tenant = [&](const std::string& tenant, const std::string& what) {
        if (v->tenant_id.count(tenant) != 0) {
            return false;
        }
        errors.push_back("tenant " + quoted(tenant) + ": " + what +
                         ": not restored: the tenant is not in the module");
        return true;
    };
    for (const auto& r : plan.create_regions) {
        if (no_tenant(r.tenant, "region " + quoted(r.name))) {
            continue;
        }
        const std::uint32_t tid = v->tenant_id.at(r.tenant);
        try {
            auto lists = freelist_specs(r.freelists);
            module_->region_create(tid, r.name, r.size, r.access, lists);
        } catch (const KmodError& e) {
            errors.push_back("tenant " + quoted(r.tenant) + ": region " + quoted(r.name) +
                             ": could not be created: " + e.what());
        }
    }
    // An intent row can be of a tenant that left the policy since: the
    // module still has it, under its name.
    std::map<std::string, std::uint32_t> module_tenant_id;
    for (const auto& t : ms.tenants) {
        module_tenant_id[abi_name(t.name)] = t.id;
    }
    // The regions and free lists as they are now, listed once for every
    // lookup below (and again only after free lists were made).
    std::optional<ModuleObjects> objects;
    auto index = [&]() -> const ModuleObjects& {
        if (!objects) {
            objects = list_objects();
        }
        return *objects;
    };
    bool freelists_made = false;
    for (const auto& f : plan.create_freelists) {
        const auto tid = module_tenant_id.find(f.tenant);
        try {
            const auto r = tid != module_tenant_id.end() ? index().region(tid->second, f.region)
                                                         : std::nullopt;
            if (!r) {
                continue;
            }
            module_->freelist_create(r->id, f.freelist.block_size, f.freelist.offset,
                                     f.freelist.count);
            freelists_made = true;
        } catch (const KmodError& e) {
            errors.push_back(fmt::format(
                "tenant {}: region {}: free list at {} ({} x {} bytes): could not be created: {}",
                quoted(f.tenant), quoted(f.region), f.freelist.offset, f.freelist.count,
                f.freelist.block_size, e.what()));
        }
    }
    for (const auto& row : plan.commit_regions) {
        for (auto r : store_->regions()) {
            if (r.tenant == row.tenant && r.name == row.name) {
                r.state = RowState::committed;
                store_->put_region(r);
            }
        }
    }
    for (const auto& row : plan.drop_regions) {
        store_->delete_region(row.tenant, row.name);
    }
    for (const auto& row : plan.commit_programs) {
        for (auto p : store_->programs()) {
            if (p.tenant == row.tenant && p.tag == row.tag) {
                p.state = RowState::committed;
                store_->put_program(p);
            }
        }
    }
    for (const auto& row : plan.drop_programs) {
        store_->delete_program(row.tenant, row.tag);
    }
    if (freelists_made) {
        objects.reset();
    }
    for (const auto& p : plan.load_programs) {
        if (no_tenant(p.tenant, "program " + quoted(p.name))) {
            continue;
        }
        try {
            load_stored_program(p, v->tenant_id.at(p.tenant), &index());
        } catch (const std::exception& e) {
            errors.push_back("tenant " + quoted(p.tenant) + ": program " + quoted(p.name) +
                             ": could not be reloaded: " + e.what());
        }
    }

    journal_lines(
        drift, [](const std::string& d) { log::info("reconcile: {}", d); }, "GetStatus.drift");
    // Each one journalled, so that an operator finds what is missing and
    // why (up to lines_journalled_per_pass); kept in the view
    // (GetStatus.drift, rof_reconcile_errors) until a reconciliation (a
    // reload, a restart) gets past it.
    journal_lines(
        errors,
        [](const std::string& e) {
            jsend(log::Level::error, "reconcile: not reconciled: " + e,
                  {{"ROF_KIND", "reconcile"}});
        },
        "GetStatus.drift");
    log::info("reconciled with the module in {:.0f} ms: {} tenants, {}{}{}", log::ms_since(t0),
              v->tenant_id.size(), drift.size(), drift.size() == 1 ? " difference" : " differences",
              errors.empty() ? std::string()
                             : fmt::format(", {} not reconciled (degraded)", errors.size()));
    drift.insert(drift.end(), errors.begin(), errors.end());
    v->drift = std::move(drift);
    v->reconcile_errors = std::move(errors);
    publish(std::move(v));
}

std::uint64_t Manager::load_stored_program(const StoredProgram& p, std::uint32_t tid,
                                           const ModuleObjects* objects) {
    rof_prog_load req{};
    req.tenant = tid;
    req.budget = p.budget;
    req.byte_budget = p.byte_budget;
    std::snprintf(req.name, sizeof(req.name), "%s", p.name.c_str());
    if (p.binds.size() > ROF_ISA_MAX_SLOTS) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT, "too many binds");
    }
    req.nbind = static_cast<std::uint32_t>(p.binds.size());
    for (std::size_t i = 0; i < p.binds.size(); i++) {
        const auto r = objects != nullptr ? objects->region(tid, p.binds[i].region)
                                          : find_region(tid, p.binds[i].region);
        if (!r) {
            throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                            "slot " + std::to_string(i) + ": region " + quoted(p.binds[i].region) +
                                " does not exist");
        }
        req.bind[i].region = r->id;
        if (p.binds[i].freelist >= 0) {
            const auto fls =
                objects != nullptr ? objects->freelists_of(r->id) : freelists_of(r->id);
            const auto idx = static_cast<std::size_t>(p.binds[i].freelist);
            if (idx >= fls.size()) {
                throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                                "slot " + std::to_string(i) + ": region " +
                                    quoted(p.binds[i].region) + " has no free list " +
                                    std::to_string(idx));
            }
            req.bind[i].freelist = fls[idx].id;
        }
    }
    return module_->prog_load(req, p.image);
}

// --- policy reload ----------------------------------------------------

std::vector<std::string> Manager::reload_policy() {
    // The real clock, not opt_.clock (a test's clock stands still).
    const auto t0 = std::chrono::steady_clock::now();
    auto loaded = rof::policy::load(opt_.daemon_file, opt_.tenants_dir);
    const double parse_ms = log::ms_since(t0);
    if (!loaded.policy) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        "policy not reloaded, the running one stays:\n" + loaded.error_text());
    }
    const auto old = view();
    auto v = std::make_shared<View>(*old);
    v->policy = std::make_shared<rof::policy::Policy>(std::move(*loaded.policy));
    v->generation = old->generation + 1;
    v->loaded_at = std::chrono::system_clock::now();
    std::vector<std::string> notes;

    // A shrunk quota keeps what is live: the module refuses new objects
    // beyond the quota and never closes a session for it.  Their usage from
    // one LIST (a GET each was 10,000 ioctls for 10,000 tenants).
    std::map<std::uint32_t, rof_tenant_usage> usage;
    try {
        for (const auto& t : module_->list_tenants()) {
            usage.emplace(t.id, t.usage);
        }
    } catch (const KmodError& e) {
        notes.push_back(std::string("quotas not compared with what tenants use: the module could "
                                    "not list them (") +
                        e.what() + ")");
    }
    for (const auto& t : v->policy->tenants) {
        const auto it = old->tenant_id.find(t.name);
        if (it == old->tenant_id.end()) {
            continue;  // new tenants are created by the reconciliation below
        }
        if (const auto u = usage.find(it->second); u != usage.end()) {
            const rof_tenant_usage& used = u->second;
            if (used.sessions > t.quota.sessions) {
                notes.push_back(
                    fmt::format("tenant {}: quota.sessions {} is below the {} open: they stay "
                                "open, new ones are refused",
                                quoted(t.name), t.quota.sessions, used.sessions));
            }
            if (used.region_bytes > t.quota.region_bytes) {
                notes.push_back(
                    fmt::format("tenant {}: quota.region_bytes {} is below the {} in use: regions "
                                "stay, new ones are refused",
                                quoted(t.name), t.quota.region_bytes, used.region_bytes));
            }
            if (used.programs > t.quota.programs) {
                notes.push_back(
                    fmt::format("tenant {}: quota.programs {} is below the {} loaded: they stay, "
                                "new loads are refused",
                                quoted(t.name), t.quota.programs, used.programs));
            }
        }
    }
    for (const auto& [name, id] : old->tenant_id) {
        if (v->policy->find(name) == nullptr) {
            notes.push_back(fmt::format(
                "tenant {}: removed from policy: it takes no new sessions, regions or programs; "
                "destroyed with its objects when its last session closes or in {} ms "
                "(limits.tenant_removal_grace_ms)",
                quoted(name), v->policy->daemon.tenant_removal_grace_ms));
        }
    }
    for (const auto& [name, r] : old->removing) {
        if (v->policy->find(name) != nullptr) {
            notes.push_back("tenant " + quoted(name) +
                            ": back in policy: its removal is cancelled, it keeps its objects");
        }
    }
    publish(v);
    try {
        reconcile();
    } catch (...) {
        publish(std::make_shared<View>(*old));  // the whole reload undone
        throw;
    }
    // Journalled once each: what the reconciliation did is logged there ("reconcile: ..."),
    // and a destroyed tenant by forget_removed(); the caller gets all of it.  A reload that
    // added 10,000 tenants journalled 20,000 lines, past journald's default burst (10,000 a
    // service in 30 s), which then drops rofd's lines that follow, its refusals' among them.
    journal_lines(
        notes,
        [](const std::string& n) {
            jsend(log::Level::info, "policy reload: " + n, {{"ROF_KIND", "policy"}});
        },
        "ReloadPolicy's answer");
    const auto after = view();
    notes.insert(notes.end(), after->drift.begin(), after->drift.end());
    for (const auto& name : sweep_removals()) {
        notes.push_back("tenant " + quoted(name) + ": destroyed (no session left)");
    }
    log::info(
        "policy generation {} loaded ({} tenants) in {:.0f} ms, its files read and parsed "
        "in {:.0f} ms",
        v->generation, v->policy->tenants.size(), log::ms_since(t0), parse_ms);
    return notes;
}

void Manager::journal_lines(const std::vector<std::string>& lines,
                            const std::function<void(const std::string&)>& each,
                            std::string_view where) {
    const std::size_t n = std::min(lines.size(), lines_journalled_per_pass);
    for (std::size_t i = 0; i < n; i++) {
        each(lines[i]);
    }
    if (const std::size_t rest = lines.size() - n; rest != 0) {
        lines_left_out_ += rest;
        each(fmt::format("{} more, not journalled one by one ({} has them all)", rest, where));
    }
}

// --- removed tenants ---------------------------------------------------

std::vector<std::string> Manager::sweep_removals() {
    const auto v = view();
    if (v->removing.empty()) {
        return {};
    }
    const auto now = this->now();
    std::map<std::uint32_t, std::size_t> sessions;  // open or prepared, by tenant id
    for (const auto& s : module_->list_sessions()) {
        sessions[s.tenant]++;
    }
    std::vector<Doomed> gone;
    for (const auto& [name, r] : v->removing) {
        const bool idle = r.id == 0 || sessions.count(r.id) == 0;
        if (!idle && now < r.deadline) {
            continue;
        }
        Doomed d{name, r,
                 idle ? "removed from policy, no session left"
                      : "removed from policy, its grace is over"};
        try {
            destroy_in_module(d);
            gone.push_back(std::move(d));
        } catch (const std::exception& e) {
            // Stays removing: the next sweep tries again.
            log::error("tenant {}: could not be destroyed: {}", quoted(name), e.what());
        }
    }
    try {
        forget_removed(gone);
    } catch (const std::exception& e) {
        // Gone from the module, still in the store and removing: the next sweep finds them
        // gone there (ENOENT) and tries the store again.
        log::error("{} destroyed tenants could not be forgotten: {}", gone.size(), e.what());
        return {};
    }
    std::vector<std::string> destroyed;
    destroyed.reserve(gone.size());
    for (auto& d : gone) {
        destroyed.push_back(std::move(d.name));
    }
    return destroyed;
}

void Manager::post_sweep() {
    if (view()->removing.empty() || sweep_queued_.exchange(true)) {
        return;
    }
    try {
        post([this] {
            sweep_queued_ = false;
            sweep_removals();
        });
    } catch (const CallError&) {
        sweep_queued_ = false;  // shutting down
    }
}

void Manager::destroy_in_module(const Doomed& d) {
    if (d.removal.id == 0) {
        return;
    }
    try {
        // Forced: the module closes its sessions and destroys its
        // regions and programs, each with an audit record.
        module_->tenant_destroy(d.removal.id, true);
    } catch (const KmodError& e) {
        if (e.code().value() != ENOENT) {
            throw;
        }
    }
}

void Manager::forget_removed(const std::vector<Doomed>& gone) {
    if (gone.empty()) {
        return;
    }
    store().transaction([&] {
        for (const auto& d : gone) {
            store().delete_tenant(d.name);  // its regions and programs cascade
            store().delete_idempotent("tenant:" + d.name);
            store().delete_idempotent_naming(d.name);
        }
    });
    {
        std::lock_guard lock(rate_mu_);
        for (const auto& d : gone) {
            control_buckets_.erase(d.name);
        }
    }
    auto v = std::make_shared<View>(*view());
    for (const auto& d : gone) {
        v->removing.erase(d.name);
        if (d.removal.id != 0) {
            v->tenant_name.erase(d.removal.id);
        }
    }
    publish(std::move(v));
    for (const auto& d : gone) {
        jsend(log::Level::info, "tenant " + quoted(d.name) + ": destroyed: " + d.why,
              {{"ROF_KIND", "control"}, {"ROF_TENANT", d.name}, {"ROF_REASON", d.why}});
    }
}

std::chrono::system_clock::time_point Manager::wall_time(
    std::chrono::steady_clock::time_point t) const {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(t - now());
}

std::optional<std::chrono::steady_clock::time_point> Manager::destroy_tenant(
    const std::string& name, std::chrono::milliseconds grace) {
    const auto v = view();
    if (const auto* t = v->tenant(name)) {
        throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                        "tenant " + quoted(name) + ": declared in " + t->file +
                            "; remove it there (rofctl tenant delete " + name + ") first");
    }
    const auto* r = v->removal(name);
    if (r == nullptr) {
        throw CallError(grpc::StatusCode::NOT_FOUND, "tenant " + quoted(name) + ": no such tenant");
    }
    const Removal moved{r->id, now() + grace};
    if (grace.count() == 0) {
        const Doomed d{name, moved, "destroyed by an admin (DestroyTenant)"};
        destroy_in_module(d);
        forget_removed({d});
        return std::nullopt;
    }
    auto next = std::make_shared<View>(*v);
    next->removing[name] = moved;
    publish(std::move(next));
    for (const auto& gone : sweep_removals()) {
        if (gone == name) {
            return std::nullopt;
        }
    }
    return moved.deadline;
}

void Manager::rotate_ticket_key() {
    const TicketKey key = random_key();
    store().set_ticket_key(key);
    module_->set_ticket_key(key);
    jsend(log::Level::info, "ticket key rotated", {{"ROF_KIND", "control"}});
}

void Manager::quarantine(std::uint32_t tenant, std::uint32_t session, const std::string& reason) {
    const std::string name = view()->name_of(tenant);
    try {
        module_->session_close(session);
    } catch (const KmodError& e) {
        if (e.code().value() != ENOENT) {
            log::warning("quarantine of session {}: {}", session, e.what());
        }
    }
    jsend(log::Level::warning,
          fmt::format("tenant {}: session {} quarantined: {}", quoted(name), session, reason),
          {{"ROF_KIND", "quarantine"},
           {"ROF_TENANT", name},
           {"ROF_SESSION", std::to_string(session)},
           {"ROF_REASON", reason}});
}

}  // namespace rofd

namespace rofd {

std::string Manager::metrics_text(const std::string& tenant) {
    return render_metrics(metrics(tenant));
}

std::vector<prometheus::MetricFamily> Manager::metrics(const std::string& tenant) {
    const auto v = view();
    MetricsInput in;
    AuditCounters c = audit_->snapshot();
    if (!tenant.empty()) {
        // A tenant sees its own series only: not tenant 0's (the rejects of
        // connects without a valid ticket), nor, while it has no module id,
        // anyone's; nor the audit drain's and ring's totals, which count
        // every tenant's records.
        const auto id = v->tenant_id.find(tenant);
        const bool known = id != v->tenant_id.end();
        const std::uint32_t tid = known ? id->second : 0;
        std::erase_if(c.tenants, [&](const auto& kv) { return !known || kv.first != tid; });
        std::erase_if(c.sessions,
                      [&](const auto& kv) { return !known || kv.second.tenant != tid; });
        in.audit_totals = false;
    }
    in.audit = std::move(c);
    for (const auto& [name, id] : v->tenant_id) {
        if (!tenant.empty() && name != tenant) {
            continue;
        }
        if (const auto info = module_->get_tenant(id)) {
            in.tenants.push_back(TenantMetrics{name, *info});
        }
    }
    for (const auto& s : module_->list_sessions()) {
        if (tenant.empty() || v->name_of(s.tenant) == tenant) {
            in.sessions.push_back(s);
        }
    }
    if (tenant.empty()) {
        in.ring = module_->audit_stats();
        in.refusals_not_journalled = refusals_left_out_.load();
        in.lines_not_journalled = lines_left_out_.load();
        in.reconcile_errors = v->reconcile_errors.size();
        in.connections_refused = connections_refused_.load();
    }
    std::vector<prometheus::MetricFamily> out = collect_metrics(in);
    if (tenant.empty()) {
        for (prometheus::MetricFamily& f : calls_->collect()) {
            out.push_back(std::move(f));
        }
    }
    return out;
}

}  // namespace rofd
