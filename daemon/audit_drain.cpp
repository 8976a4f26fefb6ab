// SPDX-License-Identifier: MIT
#include "audit_drain.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

namespace rofd {
namespace {

constexpr std::array<std::string_view, invoke_status_known + 1> status_names = {
    "ok",           "bad_opcode", "bad_length", "bad_flags", "no_program", "prog_fault",
    "prog_revoked", "bad_args",   "no_memory",  "msg_size",  "other",
};

constexpr std::array<std::string_view, close_reason_slots> close_names = {
    "other",   "disconnect", "qp_error", "idle",   "admin",
    "revoked", "device",     "protocol", "unload", "expired",
};

constexpr std::array<std::string_view, reject_reason_slots> reject_names = {
    "other",        "no_ticket", "version",   "no_key", "bad_mac",   "expired",   "no_session",
    "wrong_tenant", "in_use",    "no_tenant", "quota",  "no_region", "resources", "device",
};

constexpr std::array<std::string_view, ROF_ISA_STATUS_COUNT> exec_names = {
    "ok",      "einsn",      "epc",     "ebudget",  "ebounds", "eptr",
    "eaccess", "eslot",      "ealign",  "edivzero", "elen",    "efreelist",
    "efree",   "econtended", "enolock", "eargs",    "einval",
};

std::string_view kind_name(std::uint32_t kind) {
    switch (kind) {
        case ROF_AUDIT_INVOKE:
            return "invoke";
        case ROF_AUDIT_COMPLETION_ERROR:
            return "completion_error";
        case ROF_AUDIT_SESSION_OPEN:
            return "session_open";
        case ROF_AUDIT_SESSION_CLOSE:
            return "session_close";
        case ROF_AUDIT_SESSION_REJECT:
            return "session_reject";
        case ROF_AUDIT_INVOKE_SKIPPED:
            return "invoke_skipped";
        case ROF_AUDIT_REGION_DESTROY:
            return "region_destroy";
        case ROF_AUDIT_TENANT_DESTROY:
            return "tenant_destroy";
        default:
            return {};
    }
}

std::string destroy_reason(std::uint32_t reason) {
    switch (reason) {
        case ROF_DESTROY_ADMIN:
            return "admin";
        case ROF_DESTROY_TENANT:
            return "tenant";
        case ROF_DESTROY_DRAIN:
            return "drain";
        default:
            return std::to_string(reason);
    }
}

std::string exec_status(std::uint32_t reason) {
    if (reason < exec_names.size()) {
        return std::string(exec_names[reason]);
    }
    return std::to_string(reason);
}

std::string status_text(std::int32_t status) {
    std::size_t i = invoke_status_index(status);
    if (i == invoke_status_other) {
        return std::to_string(status);
    }
    return std::string(status_names[i]);
}

std::string hex64(std::uint64_t v) {
    return fmt::format("{:#018x}", v);
}

bool is_bad_request(std::int32_t status) {
    return status == ROF_ST_BAD_OPCODE || status == ROF_ST_BAD_LENGTH ||
           status == ROF_ST_BAD_FLAGS || status == ROF_ST_BAD_ARGS;
}

// Records an operator must see at audit level "errors".
bool is_error(const rof_audit_record& r) {
    switch (r.kind) {
        case ROF_AUDIT_INVOKE:
            return r.status != 0;
        case ROF_AUDIT_COMPLETION_ERROR:
        case ROF_AUDIT_SESSION_REJECT:
            return true;
        case ROF_AUDIT_SESSION_CLOSE:
            return r.reason != ROF_CLOSE_DISCONNECT && r.reason != ROF_CLOSE_ADMIN;
        case ROF_AUDIT_SESSION_OPEN:
        case ROF_AUDIT_INVOKE_SKIPPED:
        case ROF_AUDIT_REGION_DESTROY:
        case ROF_AUDIT_TENANT_DESTROY:
            return false;
        default:
            return true;  // a kind this rofd does not know: show it
    }
}

bool wanted(AuditLevel level, const rof_audit_record& r) {
    switch (level) {
        case AuditLevel::none:
            return false;
        case AuditLevel::errors:
            return is_error(r);
        case AuditLevel::sessions:
            // A count of INVOKEs left out is of INVOKEs: "all"'s, as they are.
            return (r.kind != ROF_AUDIT_INVOKE && r.kind != ROF_AUDIT_INVOKE_SKIPPED) ||
                   r.status != 0;
        case AuditLevel::all:
            return true;
    }
    return true;
}

bool any_threshold(const Quarantine& q) {
    return q.max_faults != 0 || q.max_completion_errors != 0 || q.max_bad_requests != 0;
}

}  // namespace

void LatencyHistogram::observe(std::uint64_t ns) {
    auto it = std::lower_bound(latency_bounds_ns.begin(), latency_bounds_ns.end(), ns);
    ++buckets[static_cast<std::size_t>(it - latency_bounds_ns.begin())];
    sum_ns += ns;
    ++count;
}

std::string_view invoke_status_name(std::size_t index) {
    return index < status_names.size() ? status_names[index] : status_names.back();
}

std::size_t invoke_status_index(std::int32_t status) {
    if (status >= 0 && static_cast<std::size_t>(status) < invoke_status_known) {
        return static_cast<std::size_t>(status);
    }
    return invoke_status_other;
}

std::string_view close_reason_name(std::size_t index) {
    return index < close_names.size() ? close_names[index] : close_names[0];
}

std::string_view reject_reason_name(std::size_t index) {
    return index < reject_names.size() ? reject_names[index] : reject_names[0];
}

AuditDrain::AuditDrain(UniqueFd ring, std::shared_ptr<const AuditConfig> config, Options options)
    : ring_(std::move(ring)),
      options_(std::move(options)),
      config_(config ? std::move(config) : std::make_shared<const AuditConfig>()),
      buf_(std::make_unique<std::array<rof_audit_record, batch_records>>()) {
    if (!options_.sink) {
        options_.sink = journal::send;
    }
}

void AuditDrain::set_config(std::shared_ptr<const AuditConfig> config) {
    if (!config) {
        config = std::make_shared<const AuditConfig>();
    }
    std::lock_guard lock(config_mu_);
    config_ = std::move(config);
}

void AuditDrain::note_stats(const rof_audit_stats& stats) {
    std::lock_guard lock(mu_);
    counters_.have_module_stats = true;
    counters_.module_stats = stats;
}

std::string AuditDrain::tenant_name(std::uint32_t id, const AuditConfig& config) const {
    auto it = config.tenants.find(id);
    if (it != config.tenants.end() && !it->second.name.empty()) {
        return it->second.name;
    }
    // Not a policy tenant's: "#ID", which no tenant name can be (a tenant
    // named "0" must not be taken for tenant id 0, e.g. by TailAudit).
    return "#" + std::to_string(id);
}

std::size_t AuditDrain::drain(std::size_t limit) {
    std::shared_ptr<const AuditConfig> config;
    {
        std::lock_guard lock(config_mu_);
        config = config_;
    }
    constexpr std::size_t rec = sizeof(rof_audit_record);
    auto* base = reinterpret_cast<char*>(buf_->data());
    std::size_t handled = 0;
    std::uint64_t lost_before = counters_.lost;  // only this thread writes it
    Pending pending;
    while (handled < limit) {
        std::size_t want = std::min(batch_records, limit - handled) * rec;  // > carry_
        ssize_t n = ::read(ring_.get(), base + carry_, want - carry_);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            throw std::system_error(errno, std::generic_category(), "read of the audit ring");
        }
        if (n == 0) {
            break;
        }
        std::size_t total = carry_ + static_cast<std::size_t>(n);
        std::size_t count = total / rec;
        for (std::size_t i = 0; i < count; ++i) {
            const rof_audit_record& r = (*buf_)[i];
            pending = Pending{};
            {
                std::lock_guard lock(mu_);
                handle(r, *config, pending);
            }
            emit(r, *config);
            if (options_.on_record) {
                options_.on_record(r, tenant_name(r.tenant, *config));
            }
            if (pending.quarantine && options_.on_quarantine) {
                options_.on_quarantine(r.tenant, r.session, pending.reason);
            }
        }
        carry_ = total % rec;
        if (carry_ != 0) {
            std::memmove(base, base + count * rec, carry_);
        }
        handled += count;
    }
    std::uint64_t lost = counters_.lost - lost_before;
    if (lost != 0) {
        std::string msg = fmt::format("audit ring overrun: {}{} lost before rofd read them", lost,
                                      lost == 1 ? " record" : " records");
        std::vector<journal::Field> fields = {
            {"ROF_KIND", "overrun"},
            {"ROF_LOST", std::to_string(lost)},
            {"ROF_SEQ", std::to_string(counters_.last_seq)},
        };
        options_.sink(log::Level::warning, msg, fields);
    }
    return handled;
}

AuditDrain::Session& AuditDrain::session_for(const rof_audit_record& r) {
    auto it = sessions_.find(r.session);
    if (it == sessions_.end()) {
        if (sessions_.size() >= options_.max_sessions && !sessions_.empty()) {
            auto oldest = std::min_element(
                sessions_.begin(), sessions_.end(),
                [](const auto& a, const auto& b) { return a.second.last_ns < b.second.last_ns; });
            sessions_.erase(oldest);
            ++counters_.sessions_evicted;
        }
        it = sessions_.emplace(r.session, Session{}).first;
        it->second.counters.tenant = r.tenant;
    }
    it->second.last_ns = r.time_ns;
    return it->second;
}

void AuditDrain::count_quarantine(const rof_audit_record& r, const Quarantine& q, Session& s,
                                  Pending& pending) {
    Window& w = s.window;
    std::uint64_t span_ns = std::uint64_t{q.window_s} * 1'000'000'000ULL;
    if (!w.open || r.time_ns < w.start_ns || (span_ns != 0 && r.time_ns - w.start_ns >= span_ns)) {
        w = Window{};
        w.open = true;
        w.start_ns = r.time_ns;
    }
    std::uint32_t count = 0;
    std::uint32_t max = 0;
    std::string_view what;
    std::string_view key;
    if (r.kind == ROF_AUDIT_COMPLETION_ERROR) {
        count = ++w.completion_errors;
        max = q.max_completion_errors;
        what = "completion errors";
        key = "max_completion_errors";
    } else if (r.status == ROF_ST_PROG_FAULT) {
        count = ++w.faults;
        max = q.max_faults;
        what = "program faults";
        key = "max_faults";
    } else {
        count = ++w.bad_requests;
        max = q.max_bad_requests;
        what = "bad requests";
        key = "max_bad_requests";
    }
    if (max == 0 || count < max || s.counters.quarantined) {
        return;
    }
    s.counters.quarantined = true;
    ++counters_.quarantines;
    ++counters_.tenants[r.tenant].quarantined;
    pending.quarantine = true;
    pending.reason = q.window_s != 0 ? fmt::format("{} {} within {} s ({} = {})", count, what,
                                                   q.window_s, key, max)
                                     : fmt::format("{} {} ({} = {})", count, what, key, max);
}

void AuditDrain::handle(const rof_audit_record& r, const AuditConfig& config, Pending& pending) {
    AuditCounters& c = counters_;
    ++c.records;
    if (r.seq != 0) {
        if (c.last_seq != 0 && r.seq > c.last_seq + 1) {
            c.lost += r.seq - c.last_seq - 1;
        } else if (c.last_seq != 0 && r.seq <= c.last_seq) {
            ++c.seq_restarts;  // a new ring: nothing to compare with
        }
        c.last_seq = r.seq;
    }
    TenantAuditCounters& t = c.tenants[r.tenant];
    const Quarantine* q = nullptr;
    if (auto it = config.tenants.find(r.tenant);
        it != config.tenants.end() && any_threshold(it->second.quarantine)) {
        q = &it->second.quarantine;
    }
    bool track = r.session != 0 && options_.max_sessions != 0;
    // Any record of a session may carry the count of its INVOKEs that ended
    // with status ok and got no record (ABI 0.10): each one is counted here,
    // as its record would have been, all but its bytes, insns and latency.
    if (r.skipped != 0) {
        t.invocations[ROF_ST_OK] += r.skipped;
        t.exec_ok += r.skipped;
        t.skipped += r.skipped;
        if (track && r.kind != ROF_AUDIT_SESSION_CLOSE) {
            session_for(r).counters.invocations += r.skipped;
        }
    }
    switch (r.kind) {
        case ROF_AUDIT_INVOKE: {
            ++t.invocations[invoke_status_index(r.status)];
            if (r.status == ROF_ST_OK) {
                ++t.exec_ok;
            } else if (r.status == ROF_ST_PROG_FAULT) {
                ++t.exec_fault;
            }
            t.bytes += r.bytes;
            t.insns += r.insns;
            t.latency.observe(r.latency_ns);
            if (!track) {
                break;
            }
            Session& s = session_for(r);
            SessionAuditCounters& sc = s.counters;
            ++sc.invocations;
            sc.bytes += r.bytes;
            sc.insns += r.insns;
            if (r.status != 0) {
                ++sc.invoke_errors;
            }
            bool fault = r.status == ROF_ST_PROG_FAULT;
            bool bad = is_bad_request(r.status);
            sc.faults += fault ? 1 : 0;
            sc.bad_requests += bad ? 1 : 0;
            if (q != nullptr && (fault || bad)) {
                count_quarantine(r, *q, s, pending);
            }
            break;
        }
        case ROF_AUDIT_COMPLETION_ERROR: {
            ++t.completion_errors;
            if (!track) {
                break;
            }
            Session& s = session_for(r);
            ++s.counters.completion_errors;
            if (q != nullptr) {
                count_quarantine(r, *q, s, pending);
            }
            break;
        }
        case ROF_AUDIT_SESSION_OPEN:
            ++t.sessions_opened;
            if (track) {
                session_for(r);
            }
            break;
        case ROF_AUDIT_SESSION_CLOSE:
            ++t.sessions_closed[r.reason < close_reason_slots ? r.reason : 0];
            sessions_.erase(r.session);
            break;
        case ROF_AUDIT_SESSION_REJECT:
            ++t.sessions_rejected[r.reason < reject_reason_slots ? r.reason : 0];
            break;
        case ROF_AUDIT_INVOKE_SKIPPED:
            break;  // only its count, above
        default:
            ++t.other_records;
            break;
    }
}

namespace {

// The reason of a COMPLETION_ERROR, SESSION_CLOSE or SESSION_REJECT record, as the journal's
// ROF_REASON and the message say it.
std::string completion_reason(std::uint32_t reason) {
    return reason >= ROF_AUDIT_REASON_EVENT
               ? fmt::format("event {}", reason - ROF_AUDIT_REASON_EVENT)
               : fmt::format("wc_status {}", reason);
}
std::string close_reason(std::uint32_t reason) {
    return reason < close_reason_slots && reason != 0 ? std::string(close_reason_name(reason))
                                                      : std::to_string(reason);
}
std::string reject_reason(std::uint32_t reason) {
    return reason < reject_reason_slots && reason != 0 ? std::string(reject_reason_name(reason))
                                                       : std::to_string(reason);
}

}  // namespace

std::string audit_message(const rof_audit_record& r, const std::string& tenant) {
    const std::string of_session = fmt::format("session {} of tenant {}", r.session, tenant);
    switch (r.kind) {
        case ROF_AUDIT_INVOKE: {
            std::string msg = fmt::format("invoke of program {} by {}", hex64(r.tag), of_session);
            if (r.status == ROF_ST_OK) {
                msg += ": ok";
            } else if (r.status == ROF_ST_PROG_FAULT) {
                msg += fmt::format(" failed: prog_fault ({})", exec_status(r.reason));
            } else {
                msg += fmt::format(" failed: {}", status_text(r.status));
            }
            return msg;
        }
        case ROF_AUDIT_COMPLETION_ERROR:
            return fmt::format("{}: completion error ({})", of_session,
                               completion_reason(r.reason));
        case ROF_AUDIT_SESSION_OPEN:
            return of_session + " opened";
        case ROF_AUDIT_SESSION_CLOSE:
            return fmt::format("{} closed: {}", of_session, close_reason(r.reason));
        case ROF_AUDIT_SESSION_REJECT:
            return r.tenant != 0 ? fmt::format("connect to {} rejected: {}", of_session,
                                               reject_reason(r.reason))
                                 : fmt::format("connect rejected: {}", reject_reason(r.reason));
        case ROF_AUDIT_INVOKE_SKIPPED:
            return fmt::format("{}: {} successful {} not recorded", of_session, r.skipped,
                               r.skipped == 1 ? "invoke" : "invokes");
        case ROF_AUDIT_REGION_DESTROY:
            return fmt::format("region {} of tenant {} destroyed: {}", destroyed_region(r), tenant,
                               destroy_reason(r.reason));
        case ROF_AUDIT_TENANT_DESTROY:
            return fmt::format("tenant {} destroyed: {}", tenant, destroy_reason(r.reason));
        default:
            return fmt::format("audit record of unknown kind {} (tenant {})", r.kind, tenant);
    }
}

void AuditDrain::emit(const rof_audit_record& r, const AuditConfig& config) {
    auto it = config.tenants.find(r.tenant);
    AuditLevel level = it != config.tenants.end() ? it->second.level : config.unknown_level;
    if (!wanted(level, r)) {
        return;
    }
    std::string tenant = tenant_name(r.tenant, config);
    std::string session = std::to_string(r.session);
    std::string_view kind = kind_name(r.kind);
    std::vector<journal::Field> fields;
    fields.reserve(12);
    fields.push_back({"ROF_KIND", kind.empty() ? std::to_string(r.kind) : std::string(kind)});
    fields.push_back({"ROF_SEQ", std::to_string(r.seq)});
    fields.push_back({"ROF_TENANT", tenant});
    fields.push_back({"ROF_TENANT_ID", std::to_string(r.tenant)});
    switch (r.kind) {
        case ROF_AUDIT_INVOKE:
            fields.push_back({"ROF_SESSION", session});
            fields.push_back({"ROF_TAG", hex64(r.tag)});
            fields.push_back({"ROF_OPCODE", std::to_string(r.opcode)});
            fields.push_back({"ROF_STATUS", status_text(r.status)});
            fields.push_back({"ROF_REASON", exec_status(r.reason)});
            fields.push_back({"ROF_BYTES", std::to_string(r.bytes)});
            fields.push_back({"ROF_INSNS", std::to_string(r.insns)});
            fields.push_back({"ROF_LATENCY_NS", std::to_string(r.latency_ns)});
            break;
        case ROF_AUDIT_COMPLETION_ERROR:
            fields.push_back({"ROF_SESSION", session});
            fields.push_back({"ROF_STATUS", std::to_string(r.status)});
            fields.push_back({"ROF_REASON", completion_reason(r.reason)});
            break;
        case ROF_AUDIT_SESSION_OPEN:
            fields.push_back({"ROF_SESSION", session});
            break;
        case ROF_AUDIT_SESSION_CLOSE:
            fields.push_back({"ROF_SESSION", session});
            fields.push_back({"ROF_REASON", close_reason(r.reason)});
            break;
        case ROF_AUDIT_SESSION_REJECT:
            fields.push_back({"ROF_SESSION", session});
            fields.push_back({"ROF_REASON", reject_reason(r.reason)});
            break;
        case ROF_AUDIT_INVOKE_SKIPPED:
            fields.push_back({"ROF_SESSION", session});
            break;
        case ROF_AUDIT_REGION_DESTROY:
            fields.push_back({"ROF_REGION", std::to_string(destroyed_region(r))});
            fields.push_back({"ROF_BYTES", std::to_string(r.bytes)});
            fields.push_back({"ROF_REASON", destroy_reason(r.reason)});
            break;
        case ROF_AUDIT_TENANT_DESTROY:
            fields.push_back({"ROF_REASON", destroy_reason(r.reason)});
            break;
        default:
            fields.push_back({"ROF_SESSION", session});
            fields.push_back({"ROF_STATUS", std::to_string(r.status)});
            fields.push_back({"ROF_REASON", std::to_string(r.reason)});
            break;
    }
    if (r.skipped != 0) {
        fields.push_back({"ROF_SKIPPED", std::to_string(r.skipped)});
    }
    options_.sink(is_error(r) ? log::Level::warning : log::Level::info, audit_message(r, tenant),
                  fields);
}

AuditCounters AuditDrain::snapshot() const {
    std::shared_ptr<const AuditConfig> config;
    {
        std::lock_guard lock(config_mu_);
        config = config_;
    }
    AuditCounters out;
    {
        std::lock_guard lock(mu_);
        out = counters_;
        for (const auto& [id, s] : sessions_) {
            out.sessions.emplace(id, s.counters);
        }
    }
    for (auto& [id, t] : out.tenants) {
        t.name = tenant_name(id, *config);
    }
    return out;
}

}  // namespace rofd
