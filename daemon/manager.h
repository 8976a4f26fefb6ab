// SPDX-License-Identifier: MIT
// rofd::Manager: the daemon's one owner of state.  It holds the module
// handle, the store, the running policy, the audit drain and the
// serialised worker; the gRPC services hold the Manager and nothing else
// (after systemd's manager_new / manager_startup / manager_free).
//
// Reads (List*, Get*) run on gRPC's callback threads against the module
// and the current View.  Every state change runs on the one worker thread
// in a fixed order: intent to the store, the ioctl, commit (with the
// call's idempotency record), so slow calls never tie up gRPC's threads
// and two changes never interleave.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "listener.h"
#include "module.h"
#include "policy.h"
#include "store.h"

namespace prometheus {
struct MetricFamily;
}

namespace rofd {

class AuditDrain;
class AuditHub;
class CallMetrics;
struct AuditConfig;

struct ManagerOptions {
    std::string daemon_file = "/etc/rof/rofd.toml";
    std::string tenants_dir = "/etc/rof/tenants.d";
    std::string state_dir;  // empty: the policy's [state] dir
    // The clock of the rate limits (control_rate, the journalled
    // refusals) and of tenant removal deadlines; empty:
    // std::chrono::steady_clock.  Tests move their own.
    std::function<std::chrono::steady_clock::time_point()> clock;
};

// Who is calling, built once per call from the connection's credentials.
struct Principal {
    enum class Role { none, admin, tenant };
    Role role = Role::none;
    bool authenticated = false;  // credentials were found at all
    std::string tenant;          // Role::tenant
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    pid_t pid = 0;
    std::vector<gid_t> groups;  // SO_PEERGROUPS: every group of the caller
    std::string subject;        // TLS certificate subject

    bool admin() const { return role == Role::admin; }
    // "admin (uid 0, pid 42)", "tenant kv (uid 1001, pid 7)",
    // "unknown (uid 1234, pid 9)", "unauthenticated".
    std::string describe() const;
    // The idempotency scope: "admin", "tenant:kv".
    std::string scope() const;
};

enum class Right { read, write };

// A tenant the policy no longer declares, still in the module or the
// store: it takes no new objects and is destroyed when its last session
// is gone or at @deadline, whichever comes first (docs/architecture.md,
// "A tenant's lifecycle").  The deadline is on the monotonic clock
// (Manager::now()), so a step of the wall clock does not move it; it is
// reported as a timestamp through Manager::wall_time().
struct Removal {
    std::uint32_t id = 0;  // the module's; 0: only rofd's state has it
    std::chrono::steady_clock::time_point deadline;
};

// The running policy and what it maps to in the module, replaced as a
// whole by a reload or a reconciliation.
struct View {
    std::shared_ptr<const rof::policy::Policy> policy;
    std::map<std::string, std::uint32_t, std::less<>> tenant_id;  // name -> module id
    std::map<std::uint32_t, std::string> tenant_name;
    std::uint64_t generation = 0;
    std::chrono::system_clock::time_point loaded_at;
    std::vector<std::string> drift;  // the last reconciliation's, reconcile_errors too
    // What the last reconciliation could not do (a LIST, a tenant, region
    // or program the module refused), one line each: rofd serves the rest
    // degraded until a reconciliation gets past them (docs/admin.md).
    std::vector<std::string> reconcile_errors;
    std::map<std::string, Removal, std::less<>> removing;  // by name

    const rof::policy::Tenant* tenant(std::string_view name) const;
    const Removal* removal(std::string_view name) const;
    // Module tenant id -> name; "#ID" when not a policy tenant.
    std::string name_of(std::uint32_t id) const;
};

// A gRPC error with the object and the reason: `tenant "kv": region
// "table": quota 64 MiB exceeded`.
struct CallError : std::runtime_error {
    CallError(grpc::StatusCode c, const std::string& msg) : std::runtime_error(msg), code(c) {}
    grpc::StatusCode code;
    grpc::Status status() const { return {code, what()}; }
};

class Manager {
  public:
    Manager(ManagerOptions opt, std::unique_ptr<Module> module);
    ~Manager();
    Manager(const Manager&) = delete;
    Manager& operator=(const Manager&) = delete;

    // Loads the policy; throws CallError with every error.
    void load_policy();
    // Loads the policy unless done, opens the store, restores or makes the
    // ticket key, opens the audit ring, reconciles with the module and
    // starts the worker.  Afterwards ready() is true.
    void start();
    void stop();
    bool ready() const noexcept { return ready_; }

    std::shared_ptr<const View> view() const;
    Module& module() noexcept { return *module_; }
    Store& store();
    const ManagerOptions& options() const noexcept { return opt_; }
    std::chrono::steady_clock::time_point started() const noexcept { return started_; }

    // The caller's principal: SO_PEERCRED of the unix connection, or the
    // verified TLS certificate's subject.  Fails closed: a connection
    // rofd cannot identify gets Role::none.
    Principal principal(const grpc::ServerContextBase& ctx) const;

    // OK when @p may exercise @right on @tenant's object @what; otherwise
    // UNAUTHENTICATED or PERMISSION_DENIED, and the refusal is audited.
    // A tenant may read what another tenant granted it (@granted).
    grpc::Status authorize(const Principal& p, const std::string& tenant, Right right,
                           const std::string& what, bool granted = false);
    // The tenant a request names: @requested, or the caller's own when
    // empty.  Throws CallError (INVALID_ARGUMENT) for an admin that named
    // none, NOT_FOUND for a tenant not in policy.
    std::string tenant_of(const Principal& p, const std::string& requested);
    // The same against @v: a call that goes on to read @v's tenant (a read,
    // which a reload on the worker may race) checks and reads one view.
    std::string tenant_of(const View& v, const Principal& p, const std::string& requested);
    // Throws CallError(RESOURCE_EXHAUSTED) beyond the tenant's
    // control_rate; admins are not limited.
    void charge_control_call(const Principal& p);

    // Runs @fn on the worker thread; state changes go through here.
    void post(std::function<void()> fn);
    // The same for a call of @p: a tenant may have at most @max calls
    // waiting at once (CallError(RESOURCE_EXHAUSTED) past it, naming
    // limits.queued_calls_per_tenant); admins' calls are not counted.
    void post_call(const Principal& p, std::uint32_t max, std::function<void()> fn);
    // How many posted calls wait for the worker (the one running excluded).
    std::size_t queued() const;

    // Re-reads the policy; atomic.  Throws CallError(INVALID_ARGUMENT)
    // with every error when the new policy is bad (the old one stays).
    // Returns notes on what it changed or could not change.
    std::vector<std::string> reload_policy();

    // A new ticket key, stored then set.
    void rotate_ticket_key();

    // On the worker: destroys every removing tenant that has no session
    // left or whose deadline has passed; returns the names destroyed.
    std::vector<std::string> sweep_removals();
    // On the worker: DestroyTenant.  Moves @name's removal deadline to
    // now + @grace, then sweeps.  CallError FAILED_PRECONDITION for a
    // policy tenant, NOT_FOUND for a name rofd does not know.  Returns the
    // new deadline, or std::nullopt when the tenant was destroyed.
    std::optional<std::chrono::steady_clock::time_point> destroy_tenant(
        const std::string& name, std::chrono::milliseconds grace);
    // The wall-clock time at which the monotonic @t falls, as of now: how
    // a removal deadline is reported.
    std::chrono::system_clock::time_point wall_time(std::chrono::steady_clock::time_point t) const;
    // Posts sweep_removals() to the worker when a tenant is being removed
    // and no sweep waits there already (main.cpp's removal timer).
    void post_sweep();

    // How many refusals audit_control() journalled on the calling thread:
    // a call compares it before and after its body, so that a refusal
    // authorize() journalled is not journalled again.
    static std::uint64_t refusals_audited_on_this_thread() noexcept;
    // Refusals not journalled since the start (refusals_journalled_per_s).
    std::uint64_t refusals_left_out() const noexcept { return refusals_left_out_; }
    // A reconciliation journals the first lines_journalled_per_pass of its differences and of
    // its errors, a reload the first of its notes, one line each; the rest of each are
    // counted here and said in one line.  The caller's answer (ReloadPolicy's notes) and
    // GetStatus.drift keep them all.
    static constexpr std::size_t lines_journalled_per_pass = 100;
    std::uint64_t lines_left_out() const noexcept { return lines_left_out_; }
    // A unix connection closed unserved: its uid held @limit
    // (limits.connections_per_uid).  Counted, and journalled as a refused
    // call is (at refusals_journalled_per_s per uid).
    void refuse_connection(const PeerCred& cred, std::uint32_t limit);
    std::uint64_t connections_refused() const noexcept { return connections_refused_; }
    // Records a control-plane event in the journal (ROF_TENANT=..).
    void audit_control(const Principal& p, const std::string& method, const grpc::Status& st,
                       const std::string& what);

    // Idempotency of a mutating call (@key chosen by the caller, up to 128
    // characters; empty: none).  replay() returns the stored answer and
    // fills @resp when the call already succeeded, FAILED_PRECONDITION
    // when the key was used for another request, std::nullopt when the
    // call must run.  begin() marks the call under way; call it inside the
    // transaction that writes the call's intent rows, before the ioctl.
    // record() stores the answer; call it inside the transaction that
    // commits the call's own rows.  When rofd dies between the two, the
    // retry finds the call interrupted(): its handler then answers from
    // what the crash left (the intent rows reconciliation settled) rather
    // than refuse the object the first attempt made.
    // @tenant is the tenant whose objects the call acts on: the record is
    // dropped when that tenant is destroyed, so a name re-added starts
    // with no answers of its predecessor's (an admin's records included).
    struct Idempotency {
        std::string scope, method, key, request_hash, tenant;
    };
    static Idempotency idempotency(const Principal& p, const std::string& method,
                                   const google::protobuf::Message& req, const std::string& key,
                                   const std::string& tenant);
    std::optional<grpc::Status> replay(const Idempotency& id, google::protobuf::Message* resp);
    void begin(const Idempotency& id);
    bool interrupted(const Idempotency& id);
    void record(const Idempotency& id, const google::protobuf::Message& resp);

    AuditDrain& audit() noexcept { return *audit_; }
    AuditHub& audit_hub() noexcept { return *hub_; }
    // @tenant's metric families, or everything's when @tenant is empty
    // (the control calls' latency among them), and the same as text.
    std::vector<prometheus::MetricFamily> metrics(const std::string& tenant);
    std::string metrics_text(const std::string& tenant);
    // The control calls' latency, observed by the gRPC server.
    CallMetrics& calls() noexcept { return *calls_; }
    // Closes @session for @reason (quarantine) and audits it.
    void quarantine(std::uint32_t tenant, std::uint32_t session, const std::string& reason);

    // Module object helpers for the services.
    std::uint32_t tenant_id(const std::string& tenant) const;  // CallError UNAVAILABLE
    static std::uint32_t tenant_id(const View& v, const std::string& tenant);
    std::optional<rof_region_info> find_region(std::uint32_t tenant_id, const std::string& name);
    std::vector<rof_freelist_info> freelists_of(std::uint32_t region_id);
    // The module's regions and free lists, listed once: a reconciliation
    // looks every stored object up in one of these rather than list the
    // module for each (one LIST each per pass, not per object).
    struct ModuleObjects {
        std::map<std::pair<std::uint32_t, std::string>, rof_region_info> regions;
        std::map<std::uint32_t, std::vector<rof_freelist_info>> freelists;  // by offset

        std::optional<rof_region_info> region(std::uint32_t tenant_id,
                                              const std::string& name) const;
        std::vector<rof_freelist_info> freelists_of(std::uint32_t region_id) const;
    };
    // Throws KmodError when the module cannot list them.
    ModuleObjects list_objects();
    // Loads a stored program, binding its slots by region name (looked up
    // in @objects, or in the module when null).
    std::uint64_t load_stored_program(const StoredProgram& p, std::uint32_t tenant_id,
                                      const ModuleObjects* objects = nullptr);
    // Applies the tenant's quota and rate to the module: sets @t's quota (unless @current, the
    // module's, already says it) and rate on tenant @id.
    void apply_limits(const rof::policy::Tenant& t, std::uint32_t id,
                      const rof_tenant_quota* current = nullptr);

    // For the unit tests: while set, view() returns @filter(the current
    // view), so a test can hand each read another generation, as a reload
    // racing the read would.
    using ViewFilter = std::function<std::shared_ptr<const View>(std::shared_ptr<const View>)>;
    void set_view_filter_for_test(ViewFilter filter);

  private:
    void reconcile();
    // A removed tenant on its way out, and why (the journal's ROF_REASON).
    struct Doomed {
        std::string name;
        Removal removal;
        std::string why;
    };
    // Destroys @d's tenant in the module (forced: its sessions, regions and programs with it);
    // a tenant the module no longer has is fine.  Throws what the module says otherwise.
    void destroy_in_module(const Doomed& d);
    // Then forgets the tenants @gone the module destroyed: one store transaction and one new
    // view for all of them (a reload that removes 10,000 tenants is not 10,000 commits and
    // 10,000 copies of the view), then a journal entry each.
    void forget_removed(const std::vector<Doomed>& gone);
    void worker_loop();
    void publish(std::shared_ptr<View> v);
    std::shared_ptr<const AuditConfig> audit_config(const View& v) const;

    ManagerOptions opt_;
    std::unique_ptr<Module> module_;
    std::unique_ptr<Store> store_;
    std::unique_ptr<AuditHub> hub_;
    std::unique_ptr<AuditDrain> audit_;
    std::unique_ptr<CallMetrics> calls_;
    std::chrono::steady_clock::time_point started_;
    std::atomic<bool> ready_{false};
    std::atomic<bool> sweep_queued_{false};

    mutable std::mutex view_mu_;
    std::shared_ptr<const View> view_;
    ViewFilter view_filter_;

    mutable std::mutex work_mu_;
    std::condition_variable work_cv_;
    std::deque<std::function<void()>> work_;
    std::map<std::string, std::uint32_t, std::less<>> queued_per_tenant_;  // post_call's
    bool stopping_ = false;
    std::thread worker_;

    // A token bucket of @rate per second, a burst of one second's worth.
    struct Bucket {
        double tokens = 0;
        std::chrono::steady_clock::time_point last;

        // Refills it up to @now; takes one token if there is one.
        bool take(double rate, std::chrono::steady_clock::time_point now) {
            const double dt = std::chrono::duration<double>(now - last).count();
            tokens = std::min(rate, tokens + dt * rate);
            last = now;
            if (tokens < 1.0) {
                return false;
            }
            tokens -= 1.0;
            return true;
        }
    };
    std::chrono::steady_clock::time_point now() const;
    // Whether a refusal of @p's is journalled ([limits]
    // refusals_journalled_per_s, per caller); when it is, @left_out gets
    // how many of the caller's refusals were not since its last one.
    bool journal_refusal(const Principal& p, std::uint64_t* left_out);
    // @lines through @each, at most lines_journalled_per_pass of them, then one line through
    // @each that says how many more @where has.
    void journal_lines(const std::vector<std::string>& lines,
                       const std::function<void(const std::string&)>& each, std::string_view where);

    std::mutex rate_mu_;
    std::map<std::string, Bucket, std::less<>> control_buckets_;
    struct RefusalBucket {
        Bucket bucket;
        std::uint64_t left_out = 0;
    };
    std::map<std::string, RefusalBucket, std::less<>> refusal_buckets_;
    std::atomic<std::uint64_t> refusals_left_out_{0};
    std::atomic<std::uint64_t> lines_left_out_{0};
    std::atomic<std::uint64_t> connections_refused_{0};
};

}  // namespace rofd
