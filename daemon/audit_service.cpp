// SPDX-License-Identifier: MIT
// rof.v1.Audit: the audit stream and its counters.
#include <algorithm>

#include "audit_drain.h"
#include "audit_hub.h"
#include "call.h"
#include "metrics.h"
#include "services.h"

namespace rofd {
namespace {

// Initial metadata of a TailAudit stream rofd opened (librof's AuditTail
// reopens such a stream when its connection ends under it).
constexpr const char* audit_stream_key = "rof-audit-stream";

bool is_error(const v1::AuditRecord& r) {
    return r.status() != 0 || r.kind() == v1::AUDIT_KIND_COMPLETION_ERROR ||
           r.kind() == v1::AUDIT_KIND_SESSION_REJECT || r.kind() == v1::AUDIT_KIND_CONTROL;
}

// One TailAudit stream: records are queued by the drain (deliver) and
// written one at a time by gRPC (OnWriteDone).
class TailReactor final : public grpc::ServerWriteReactor<v1::AuditRecord>,
                          public AuditHub::Subscriber {
  public:
    TailReactor(AuditHub& hub, CallbackServerContext* ctx, v1::TailAuditRequest filter)
        : hub_(hub), ctx_(ctx), filter_(std::move(filter)) {}

    // Registers with the hub, or finishes at once when @holder has @max
    // streams open already.
    void start(const std::string& tenant, AuditHub::Holder holder, std::uint32_t max) {
        if (!hub_.subscribe(this, tenant, holder, max)) {
            Finish(
                grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, refusal(tenant, holder, max)));
            return;
        }
        subscribed_ = true;
        // The client learns the stream is open (librof reopens an open
        // stream that ends with its connection, not one refused): the
        // initial metadata say so, and go before any record (deliver()
        // only queues until then).
        std::lock_guard lock(mu_);
        if (done_) {
            return;
        }
        ctx_->AddInitialMetadata(audit_stream_key, "open");
        StartSendInitialMetadata();
        open_ = true;
        if (!queue_.empty()) {
            write_next_locked();
        }
    }

    void deliver(const v1::AuditRecord& r) override {
        if ((filter_.session() != 0 && r.session() != filter_.session()) ||
            (filter_.errors_only() && !is_error(r))) {
            return;
        }
        if (filter_.kinds_size() != 0 && std::find(filter_.kinds().begin(), filter_.kinds().end(),
                                                   r.kind()) == filter_.kinds().end()) {
            return;
        }
        std::lock_guard lock(mu_);
        if (done_) {
            return;
        }
        if (queue_.size() >= AuditHub::queue_max) {
            lost_++;
            return;
        }
        queue_.push_back(r);
        queue_.back().set_lost(std::exchange(lost_, 0));
        if (open_ && !writing_) {
            write_next_locked();
        }
    }

    void OnWriteDone(bool ok) override {
        std::lock_guard lock(mu_);
        writing_ = false;
        queue_.pop_front();
        if (!ok) {
            finish_locked(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
            return;
        }
        if (!queue_.empty()) {
            write_next_locked();
        }
    }

    void OnCancel() override {
        std::lock_guard lock(mu_);
        finish_locked(grpc::Status::CANCELLED);
    }

    void OnDone() override {
        if (subscribed_) {
            hub_.unsubscribe(this);
        }
        delete this;  // NOLINT(cppcoreguidelines-owning-memory): gRPC's reactor contract
    }

  private:
    static std::string refusal(const std::string& tenant, AuditHub::Holder holder,
                               std::uint32_t max) {
        if (holder == AuditHub::Holder::admin) {
            return "admins: " + std::to_string(max) +
                   " audit streams open already (limits.audit_streams_admin)";
        }
        return "tenant \"" + tenant + "\": " + std::to_string(max) +
               " audit streams open already (limits.audit_streams_per_tenant)";
    }

    void write_next_locked() {
        writing_ = true;
        StartWrite(&queue_.front());
    }

    void finish_locked(const grpc::Status& st) {
        if (!done_) {
            done_ = true;
            Finish(st);
        }
    }

    AuditHub& hub_;
    CallbackServerContext* ctx_;
    const v1::TailAuditRequest filter_;
    bool subscribed_ = false;
    std::mutex mu_;
    std::deque<v1::AuditRecord> queue_;  // front is being written while writing_
    std::uint64_t lost_ = 0;
    bool writing_ = false;
    bool open_ = false;  // initial metadata sent: records may be written
    bool done_ = false;
};

class RefusedTail final : public grpc::ServerWriteReactor<v1::AuditRecord> {
  public:
    explicit RefusedTail(const grpc::Status& st) { Finish(st); }
    void OnDone() override {
        delete this;  // NOLINT(cppcoreguidelines-owning-memory): gRPC's reactor contract
    }
};

}  // namespace

grpc::ServerWriteReactor<v1::AuditRecord>* AuditService::TailAudit(
    CallbackServerContext* ctx, const v1::TailAuditRequest* req) {
    grpc::Status st;
    std::string tenant;
    auto holder = AuditHub::Holder::tenant;
    if (!m_.ready()) {
        st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "rofd is not serving yet");
    } else {
        const Principal p = m_.principal(*ctx);
        holder = p.admin() ? AuditHub::Holder::admin : AuditHub::Holder::tenant;
        try {
            m_.charge_control_call(p);
            tenant = req->tenant().empty() && p.admin() ? "" : m_.tenant_of(p, req->tenant());
            st = m_.authorize(p, tenant, Right::read, "tenant " + quoted(tenant) + ": audit");
        } catch (const CallError& e) {
            st = e.status();
        }
        // Only a caller that may tail is told what is wrong with its filter.
        for (int i = 0; st.ok() && i < req->kinds_size(); i++) {
            const int k = req->kinds(i);
            if (!v1::AuditKind_IsValid(k) || k == v1::AUDIT_KIND_UNSPECIFIED) {
                st = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  "kinds: " + std::to_string(k) + " is not an AuditKind");
            }
        }
    }
    if (!st.ok()) {
        // gRPC owns a callback reactor from here; it deletes itself in OnDone.
        return std::make_unique<RefusedTail>(st).release();
    }
    // An admin's streams are held against the admins' own bound, not
    // against the tenant it names.
    const auto view = m_.view();
    const auto& limits = view->policy->daemon;
    const std::uint32_t max = holder == AuditHub::Holder::admin ? limits.audit_streams_admin
                                                                : limits.audit_streams_per_tenant;
    auto r = std::make_unique<TailReactor>(m_.audit_hub(), ctx, *req);
    r->start(tenant, holder, max);
    return r.release();
}

ServerUnaryReactor* AuditService::GetAuditStats(CallbackServerContext* ctx,
                                                const v1::GetAuditStatsRequest*,
                                                v1::AuditStats* resp) {
    return unary(m_, ctx, "GetAuditStats", CallKind::read, [this, resp](const Principal& p) {
        if (!p.admin()) {
            return m_.authorize(p, "", Right::read, "the audit ring's statistics");
        }
        const rof_audit_stats s = m_.module().audit_stats();
        resp->set_next_seq(s.next_seq);
        resp->set_overruns(s.overruns);
        resp->set_ring_size(s.ring_size);
        resp->set_pending(s.pending);
        resp->set_dropped(s.dropped);
        resp->set_reserve(s.reserve);
        const AuditCounters c = m_.audit().snapshot();
        resp->set_drained(c.records);
        resp->set_lost(c.lost);
        return grpc::Status::OK;
    });
}

}  // namespace rofd
