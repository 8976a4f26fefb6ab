// SPDX-License-Identifier: MIT
#include "audit_drain.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace rofd {
namespace {

constexpr std::uint64_t sec = 1'000'000'000ULL;

struct Captured {
    log::Level level;
    std::string message;
    std::map<std::string, std::string> fields;
};

// The ring's stand-in: a pipe whose read end is non-blocking, like the fd
// of ROF_IOC_AUDIT_OPEN with ROF_AUDIT_NONBLOCK.
class Ring {
  public:
    Ring() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            throw std::system_error(errno, std::generic_category(), "pipe2");
        }
        rd_.reset(fds[0]);
        wr_.reset(fds[1]);
        ::fcntl(rd_.get(), F_SETFL, O_NONBLOCK);
        ::fcntl(wr_.get(), F_SETPIPE_SZ, 1 << 18);  // 2730 records
    }
    UniqueFd reader() { return std::move(rd_); }
    void write_bytes(const void* p, std::size_t n) {
        const char* c = static_cast<const char*>(p);
        while (n > 0) {
            ssize_t w = ::write(wr_.get(), c, n);
            ASSERT_GT(w, 0) << std::strerror(errno);
            c += w;
            n -= static_cast<std::size_t>(w);
        }
    }
    void write(const std::vector<rof_audit_record>& recs) {
        write_bytes(recs.data(), recs.size() * sizeof(rof_audit_record));
    }
    void close_writer() { wr_.reset(); }

  private:
    UniqueFd rd_, wr_;
};

// Builds records with consecutive seqs.
class Records {
  public:
    rof_audit_record make(std::uint32_t kind, std::uint32_t tenant, std::uint32_t session,
                          std::uint64_t time_ns = 0) {
        rof_audit_record r{};
        r.seq = next_++;
        r.time_ns = time_ns;
        r.kind = kind;
        r.tenant = tenant;
        r.session = session;
        return r;
    }
    rof_audit_record invoke(std::uint32_t tenant, std::uint32_t session, std::int32_t status,
                            std::uint64_t time_ns = 0) {
        rof_audit_record r = make(ROF_AUDIT_INVOKE, tenant, session, time_ns);
        r.opcode = ROF_OP_INVOKE;
        r.tag = 0xabcdef0123456789ULL;
        r.status = status;
        r.reason = status == ROF_ST_PROG_FAULT ? ROF_ISA_EBOUNDS : 0;
        return r;
    }
    rof_audit_record with_reason(std::uint32_t kind, std::uint32_t tenant, std::uint32_t session,
                                 std::uint32_t reason, std::uint64_t time_ns = 0) {
        rof_audit_record r = make(kind, tenant, session, time_ns);
        r.reason = reason;
        if (kind == ROF_AUDIT_COMPLETION_ERROR) {
            r.status = -EIO;
        }
        return r;
    }
    void skip(std::uint64_t n) { next_ += n; }
    void restart() { next_ = 1; }

  private:
    std::uint64_t next_ = 1;
};

std::shared_ptr<const AuditConfig> config_with(
    std::initializer_list<std::pair<const std::uint32_t, TenantAuditConfig>> tenants,
    AuditLevel unknown = AuditLevel::errors) {
    auto c = std::make_shared<AuditConfig>();
    c->tenants = tenants;
    c->unknown_level = unknown;
    return c;
}

class AuditDrainTest : public ::testing::Test {
  protected:
    AuditDrain make(std::shared_ptr<const AuditConfig> config, std::size_t max_sessions = 65536) {
        AuditDrain::Options o;
        o.max_sessions = max_sessions;
        o.sink = [this](log::Level level, std::string_view msg,
                        std::span<const journal::Field> fields) {
            Captured c{level, std::string(msg), {}};
            for (const auto& f : fields) {
                c.fields[std::string(f.name)] = f.value;
            }
            out.push_back(std::move(c));
        };
        o.on_quarantine = [this](std::uint32_t t, std::uint32_t s, const std::string& why) {
            quarantined.push_back({t, s, why});
        };
        return AuditDrain(ring.reader(), std::move(config), std::move(o));
    }

    struct Q {
        std::uint32_t tenant, session;
        std::string reason;
    };
    Ring ring;
    Records rec;
    std::vector<Captured> out;
    std::vector<Q> quarantined;
};

TEST_F(AuditDrainTest, CountsAreExactAcrossManyBatches) {
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::none, {}}}}));
    const std::size_t n = AuditDrain::batch_records * 3 + 17;  // several full reads
    std::vector<rof_audit_record> recs;
    recs.push_back(rec.make(ROF_AUDIT_SESSION_OPEN, 1, 3));
    std::uint64_t bytes = 0, insns = 0, lat_sum = 0;
    std::array<std::uint64_t, invoke_status_known + 1> by_status{};
    std::array<std::uint64_t, latency_bounds_ns.size() + 1> buckets{};
    const std::uint64_t lats[] = {0, 1'000, 1'001, 7'000, 2'000'000, 100'000'000, 100'000'001};
    const std::size_t lat_bucket[] = {0, 0, 1, 2, 7, 10, 11};
    const std::int32_t statuses[] = {ROF_ST_OK, ROF_ST_OK, ROF_ST_PROG_FAULT, ROF_ST_BAD_ARGS, -22};
    for (std::size_t i = 0; i < n; ++i) {
        std::int32_t st = statuses[i % 5];
        rof_audit_record r = rec.invoke(1, 3, st);
        r.bytes = i;
        r.insns = 2 * i + 1;
        r.latency_ns = lats[i % 7];
        recs.push_back(r);
        bytes += r.bytes;
        insns += r.insns;
        lat_sum += r.latency_ns;
        ++by_status[invoke_status_index(st)];
        ++buckets[lat_bucket[i % 7]];
    }
    recs.push_back(rec.with_reason(ROF_AUDIT_COMPLETION_ERROR, 1, 3, 12));
    ring.write(recs);

    EXPECT_EQ(d.drain(), recs.size());
    EXPECT_EQ(d.drain(), 0U);  // EAGAIN: nothing more

    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.records, recs.size());
    EXPECT_EQ(c.lost, 0U);
    EXPECT_EQ(c.last_seq, recs.size());
    ASSERT_EQ(c.tenants.count(1), 1U);
    const TenantAuditCounters& t = c.tenants.at(1);
    EXPECT_EQ(t.name, "kv");
    EXPECT_EQ(t.invocations, by_status);
    EXPECT_EQ(by_status[invoke_status_other], (n + 0) / 5);  // the -EINVAL ones
    EXPECT_EQ(t.exec_ok, by_status[ROF_ST_OK]);
    EXPECT_EQ(t.exec_fault, by_status[ROF_ST_PROG_FAULT]);
    EXPECT_EQ(t.bytes, bytes);
    EXPECT_EQ(t.insns, insns);
    EXPECT_EQ(t.latency.buckets, buckets);
    EXPECT_EQ(t.latency.count, n);
    EXPECT_EQ(t.latency.sum_ns, lat_sum);
    EXPECT_EQ(t.completion_errors, 1U);
    EXPECT_EQ(t.sessions_opened, 1U);

    ASSERT_EQ(c.sessions.count(3), 1U);
    const SessionAuditCounters& s = c.sessions.at(3);
    EXPECT_EQ(s.tenant, 1U);
    EXPECT_EQ(s.invocations, n);
    EXPECT_EQ(s.invoke_errors, n - by_status[ROF_ST_OK]);
    EXPECT_EQ(s.faults, by_status[ROF_ST_PROG_FAULT]);
    EXPECT_EQ(s.bad_requests, by_status[ROF_ST_BAD_ARGS]);
    EXPECT_EQ(s.completion_errors, 1U);
    EXPECT_EQ(s.bytes, bytes);
    EXPECT_TRUE(out.empty());  // level none

    // The close drops the session; the tenant keeps its counts.
    ring.write({rec.with_reason(ROF_AUDIT_SESSION_CLOSE, 1, 3, ROF_CLOSE_QP_ERROR)});
    EXPECT_EQ(d.drain(), 1U);
    c = d.snapshot();
    EXPECT_EQ(c.sessions.count(3), 0U);
    EXPECT_EQ(c.tenants.at(1).sessions_closed[ROF_CLOSE_QP_ERROR], 1U);
    EXPECT_EQ(c.tenants.at(1).invocations, by_status);
}

TEST_F(AuditDrainTest, LimitAndPartialRecords) {
    AuditDrain d = make(config_with({}, AuditLevel::none));
    std::vector<rof_audit_record> recs;
    for (int i = 0; i < 10; ++i) {
        recs.push_back(rec.invoke(1, 1, 0));
    }
    ring.write(recs);
    EXPECT_EQ(d.drain(3), 3U);
    EXPECT_EQ(d.drain(), 7U);

    // One and a half records, then the rest: whole records only, in order.
    std::vector<rof_audit_record> two = {rec.invoke(1, 1, 0), rec.invoke(1, 1, 0)};
    const char* bytes = reinterpret_cast<const char*>(two.data());
    const std::size_t half = sizeof(rof_audit_record) + sizeof(rof_audit_record) / 2;
    ring.write_bytes(bytes, half);
    EXPECT_EQ(d.drain(), 1U);
    EXPECT_EQ(d.snapshot().last_seq, 11U);
    EXPECT_EQ(d.drain(), 0U);
    ring.write_bytes(bytes + half, 2 * sizeof(rof_audit_record) - half);
    EXPECT_EQ(d.drain(), 1U);
    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.last_seq, 12U);
    EXPECT_EQ(c.records, 12U);
    EXPECT_EQ(c.lost, 0U);

    // End of file (the writer is gone) ends a drain too.
    ring.close_writer();
    EXPECT_EQ(d.drain(), 0U);
}

TEST_F(AuditDrainTest, SeqGapsCountLostRecordsAndWarnOncePerDrain) {
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::none, {}}}}));
    std::vector<rof_audit_record> recs;
    recs.push_back(rec.invoke(1, 1, 0));  // seq 1
    recs.push_back(rec.invoke(1, 1, 0));  // 2
    rec.skip(2);
    recs.push_back(rec.invoke(1, 1, 0));  // 5: 3 and 4 lost
    rec.skip(3);
    recs.push_back(rec.invoke(1, 1, 0));  // 9: 6..8 lost
    ring.write(recs);
    EXPECT_EQ(d.drain(), 4U);
    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.lost, 5U);
    ASSERT_EQ(out.size(), 1U);
    EXPECT_EQ(out[0].level, log::Level::warning);
    EXPECT_NE(out[0].message.find("5 records lost"), std::string::npos) << out[0].message;
    EXPECT_EQ(out[0].fields["ROF_LOST"], "5");

    // No gap: no warning.
    ring.write({rec.invoke(1, 1, 0)});
    EXPECT_EQ(d.drain(), 1U);
    EXPECT_EQ(out.size(), 1U);

    // The module was reloaded: seq starts again at 1, which is no loss.
    rec.restart();
    ring.write({rec.invoke(1, 1, 0), rec.invoke(1, 1, 0)});
    EXPECT_EQ(d.drain(), 2U);
    c = d.snapshot();
    EXPECT_EQ(c.lost, 5U);
    EXPECT_EQ(c.seq_restarts, 1U);
    EXPECT_EQ(c.last_seq, 2U);
    EXPECT_EQ(out.size(), 1U);

    rof_audit_stats st{};
    st.overruns = 42;
    st.dropped = 7;
    st.ring_size = 4096;
    d.note_stats(st);
    c = d.snapshot();
    EXPECT_TRUE(c.have_module_stats);
    EXPECT_EQ(c.module_stats.overruns, 42U);
    EXPECT_EQ(c.module_stats.dropped, 7U);
}

// The same eight records for a tenant at each level.
TEST_F(AuditDrainTest, AuditLevelsFilterJournalOutput) {
    AuditDrain d = make(config_with({
        {1, {"t-none", AuditLevel::none, {}}},
        {2, {"t-errors", AuditLevel::errors, {}}},
        {3, {"t-sessions", AuditLevel::sessions, {}}},
        {4, {"t-all", AuditLevel::all, {}}},
    }));
    std::vector<rof_audit_record> recs;
    for (std::uint32_t t = 1; t <= 4; ++t) {
        std::uint32_t s = 10 * t;
        recs.push_back(rec.make(ROF_AUDIT_SESSION_OPEN, t, s));                                // S
        recs.push_back(rec.invoke(t, s, ROF_ST_OK));                                           // A
        recs.push_back(rec.invoke(t, s, ROF_ST_PROG_FAULT));                                   // E
        recs.push_back(rec.with_reason(ROF_AUDIT_COMPLETION_ERROR, t, s, 5));                  // E
        recs.push_back(rec.with_reason(ROF_AUDIT_SESSION_CLOSE, t, s, ROF_CLOSE_DISCONNECT));  // S
        recs.push_back(rec.with_reason(ROF_AUDIT_SESSION_CLOSE, t, s + 1, ROF_CLOSE_ADMIN));   // S
        recs.push_back(rec.with_reason(ROF_AUDIT_SESSION_CLOSE, t, s + 2, ROF_CLOSE_IDLE));    // E
        recs.push_back(
            rec.with_reason(ROF_AUDIT_SESSION_REJECT, t, s + 3, ROF_REJECT_BAD_MAC));  // E
    }
    ring.write(recs);
    EXPECT_EQ(d.drain(), recs.size());

    std::map<std::string, std::vector<std::string>> by_tenant;
    for (const Captured& c : out) {
        by_tenant[c.fields.at("ROF_TENANT")].push_back(c.fields.at("ROF_KIND"));
    }
    EXPECT_EQ(by_tenant.count("t-none"), 0U);
    using V = std::vector<std::string>;
    EXPECT_EQ(by_tenant["t-errors"],
              (V{"invoke", "completion_error", "session_close", "session_reject"}));
    EXPECT_EQ(by_tenant["t-sessions"],
              (V{"session_open", "invoke", "completion_error", "session_close", "session_close",
                 "session_close", "session_reject"}));
    EXPECT_EQ(by_tenant["t-all"],
              (V{"session_open", "invoke", "invoke", "completion_error", "session_close",
                 "session_close", "session_close", "session_reject"}));

    // Fields and priorities of t-all's entries.
    std::vector<Captured> all;
    for (const Captured& c : out) {
        if (c.fields.at("ROF_TENANT") == "t-all") {
            all.push_back(c);
        }
    }
    ASSERT_EQ(all.size(), 8U);
    EXPECT_EQ(all[0].message, "session 40 of tenant t-all opened");
    EXPECT_EQ(all[0].level, log::Level::info);
    EXPECT_EQ(all[1].level, log::Level::info);
    EXPECT_EQ(all[1].fields["ROF_STATUS"], "ok");
    EXPECT_EQ(all[1].fields["ROF_TAG"], "0xabcdef0123456789");
    EXPECT_EQ(all[1].fields["ROF_SESSION"], "40");
    EXPECT_EQ(all[1].fields["ROF_TENANT_ID"], "4");
    EXPECT_EQ(all[1].fields["ROF_OPCODE"], "3");
    EXPECT_EQ(all[2].level, log::Level::warning);
    EXPECT_EQ(all[2].fields["ROF_STATUS"], "prog_fault");
    EXPECT_EQ(all[2].fields["ROF_REASON"], "ebounds");
    EXPECT_EQ(all[2].message,
              "invoke of program 0xabcdef0123456789 by session 40 of tenant t-all failed: "
              "prog_fault (ebounds)");
    EXPECT_EQ(all[3].fields["ROF_REASON"], "wc_status 5");
    EXPECT_EQ(all[4].fields["ROF_REASON"], "disconnect");
    EXPECT_EQ(all[4].level, log::Level::info);
    EXPECT_EQ(all[6].fields["ROF_REASON"], "idle");
    EXPECT_EQ(all[6].level, log::Level::warning);
    EXPECT_EQ(all[7].message, "connect to session 43 of tenant t-all rejected: bad_mac");
    EXPECT_EQ(all[7].fields["ROF_SEQ"], std::to_string(recs.back().seq));
    // The journal's message is audit_message(), which AuditRecord.message carries too.
    for (std::size_t i = 0; i < all.size(); i++) {
        EXPECT_EQ(all[i].message, audit_message(recs[recs.size() - all.size() + i], "t-all"));
    }
    EXPECT_EQ(audit_message(recs.back(), "t-all"),
              "connect to session 43 of tenant t-all rejected: bad_mac");

    // A new config applies from the next drain on.
    d.set_config(config_with({{1, {"renamed", AuditLevel::all, {}}}}));
    out.clear();
    ring.write({rec.invoke(1, 5, ROF_ST_OK)});
    EXPECT_EQ(d.drain(), 1U);
    ASSERT_EQ(out.size(), 1U);
    EXPECT_EQ(out[0].fields["ROF_TENANT"], "renamed");
    EXPECT_EQ(d.snapshot().tenants.at(1).name, "renamed");
}

// A record's skipped (ABI 0.10) counts that many INVOKEs of status ok of
// its session, whatever the record's kind; only the INVOKE records add
// bytes, insns and latency.  A ROF_AUDIT_INVOKE_SKIPPED record is only a
// count: journalled at level all alone.
TEST_F(AuditDrainTest, SkippedInvokesAreCountedFromAnyRecord) {
    AuditDrain d = make(
        config_with({{1, {"kv", AuditLevel::sessions, {}}}, {2, {"db", AuditLevel::all, {}}}}));
    std::vector<rof_audit_record> recs;
    recs.push_back(rec.make(ROF_AUDIT_SESSION_OPEN, 1, 3));
    rof_audit_record ok = rec.invoke(1, 3, ROF_ST_OK);
    ok.skipped = 9;  // sample:10: the 10th, with the 9 before it
    ok.bytes = 100;
    ok.insns = 7;
    recs.push_back(ok);
    rof_audit_record bad = rec.invoke(1, 3, ROF_ST_BAD_ARGS);
    bad.skipped = 4;
    recs.push_back(bad);
    rof_audit_record flush = rec.make(ROF_AUDIT_INVOKE_SKIPPED, 1, 3);
    flush.skipped = 5;
    recs.push_back(flush);
    rof_audit_record cerr = rec.with_reason(ROF_AUDIT_COMPLETION_ERROR, 1, 3, 12);
    cerr.skipped = 1;
    recs.push_back(cerr);
    recs.push_back(rec.make(ROF_AUDIT_SESSION_OPEN, 1, 4));
    rof_audit_record flush2 = rec.make(ROF_AUDIT_INVOKE_SKIPPED, 2, 7);
    flush2.skipped = 1;
    recs.push_back(flush2);
    ring.write(recs);
    EXPECT_EQ(d.drain(), recs.size());

    AuditCounters c = d.snapshot();
    const TenantAuditCounters& t = c.tenants.at(1);
    EXPECT_EQ(t.invocations[ROF_ST_OK], 1U + 9 + 4 + 5 + 1);
    EXPECT_EQ(t.invocations[ROF_ST_BAD_ARGS], 1U);
    EXPECT_EQ(t.exec_ok, 20U);
    EXPECT_EQ(t.skipped, 19U);
    EXPECT_EQ(t.bytes, 100U);
    EXPECT_EQ(t.insns, 7U);
    EXPECT_EQ(t.latency.count, 2U);  // the two INVOKE records
    EXPECT_EQ(t.other_records, 0U);
    EXPECT_EQ(c.sessions.at(3).invocations, 2U + 19);
    EXPECT_EQ(c.sessions.at(3).invoke_errors, 1U);
    EXPECT_EQ(c.sessions.at(4).invocations, 0U);
    EXPECT_EQ(c.tenants.at(2).exec_ok, 1U);

    // The close carries the rest; the tenant keeps it once the session is gone.
    rof_audit_record close = rec.with_reason(ROF_AUDIT_SESSION_CLOSE, 1, 3, ROF_CLOSE_DISCONNECT);
    close.skipped = 30;
    ring.write({close});
    EXPECT_EQ(d.drain(), 1U);
    c = d.snapshot();
    EXPECT_EQ(c.tenants.at(1).invocations[ROF_ST_OK], 50U);
    EXPECT_EQ(c.tenants.at(1).exec_ok, 50U);
    EXPECT_EQ(c.sessions.count(3), 0U);

    // Journal: kv (sessions) shows no count record, db (all) shows it, and a
    // record carrying a count says so.
    std::vector<std::string> kinds;
    for (const Captured& o : out) {
        kinds.push_back(o.fields.at("ROF_TENANT") + ":" + o.fields.at("ROF_KIND"));
    }
    using V = std::vector<std::string>;
    EXPECT_EQ(kinds, (V{"kv:session_open", "kv:invoke", "kv:completion_error", "kv:session_open",
                        "db:invoke_skipped", "kv:session_close"}));
    EXPECT_EQ(out[0].fields.count("ROF_SKIPPED"), 0U);
    EXPECT_EQ(out[1].fields.at("ROF_STATUS"), "bad_args");
    EXPECT_EQ(out[1].fields.at("ROF_SKIPPED"), "4");
    EXPECT_EQ(out[2].fields.at("ROF_SKIPPED"), "1");
    EXPECT_EQ(out[4].message, "session 7 of tenant db: 1 successful invoke not recorded");
    EXPECT_EQ(out[4].level, log::Level::info);
    EXPECT_EQ(out[5].fields.at("ROF_SKIPPED"), "30");
    EXPECT_EQ(audit_message(flush, "kv"),
              "session 3 of tenant kv: 5 successful invokes not recorded");
}

// "#ID": no tenant name has a "#", so a tenant named "0" is not tenant id 0.
TEST_F(AuditDrainTest, UnknownTenantsAreNamedByHashAndNumber) {
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::all, {}}}}));
    ring.write({
        rec.invoke(77, 9, ROF_ST_NO_PROGRAM),
        rec.invoke(77, 9, ROF_ST_OK),  // level errors (unknown_level): not shown
        rec.with_reason(ROF_AUDIT_SESSION_REJECT, 0, 0, ROF_REJECT_NO_TICKET),
    });
    EXPECT_EQ(d.drain(), 3U);
    ASSERT_EQ(out.size(), 2U);
    EXPECT_EQ(out[0].fields["ROF_TENANT"], "#77");
    EXPECT_EQ(out[0].fields["ROF_STATUS"], "no_program");
    EXPECT_EQ(out[0].message,
              "invoke of program 0xabcdef0123456789 by session 9 of tenant #77 failed: "
              "no_program");
    EXPECT_EQ(out[1].message, "connect rejected: no_ticket");
    EXPECT_EQ(out[1].fields["ROF_TENANT"], "#0");
    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.tenants.at(77).name, "#77");
    EXPECT_EQ(c.tenants.at(77).invocations[ROF_ST_NO_PROGRAM], 1U);
    EXPECT_EQ(c.tenants.at(0).sessions_rejected[ROF_REJECT_NO_TICKET], 1U);

    // Unknown tenants silenced by configuration.
    d.set_config(config_with({}, AuditLevel::none));
    out.clear();
    ring.write({rec.invoke(77, 9, ROF_ST_NO_PROGRAM)});
    EXPECT_EQ(d.drain(), 1U);
    EXPECT_TRUE(out.empty());
}

// A forced region destroy names the region by its id: in the record's
// object (ABI 0.9), or, from an older module, in the tag's place.
TEST_F(AuditDrainTest, RegionDestroyNamesTheRegionFromEitherLayout) {
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::all, {}}}}));
    rof_audit_record now = rec.with_reason(ROF_AUDIT_REGION_DESTROY, 1, 0, 0);
    now.object = 12;
    now.bytes = 4096;
    rof_audit_record old = rec.with_reason(ROF_AUDIT_REGION_DESTROY, 1, 0, 0);
    old.tag = 34;
    ring.write({now, old});
    EXPECT_EQ(d.drain(), 2U);
    ASSERT_EQ(out.size(), 2U);
    EXPECT_EQ(out[0].fields["ROF_REGION"], "12");
    EXPECT_EQ(out[0].fields["ROF_BYTES"], "4096");
    EXPECT_EQ(out[1].fields["ROF_REGION"], "34");
    EXPECT_EQ(out[0].message.rfind("region 12 of tenant kv destroyed: ", 0), 0U) << out[0].message;
}

TEST_F(AuditDrainTest, QuarantineFiresOnceAtTheThreshold) {
    Quarantine q;
    q.window_s = 60;
    q.max_faults = 3;
    q.max_bad_requests = 2;
    q.max_completion_errors = 1;
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::none, q}}}));

    // Session 1: three faults in 20 s.  Two, then the third in another drain.
    ring.write({rec.invoke(1, 1, ROF_ST_PROG_FAULT, 100 * sec),
                rec.invoke(1, 1, ROF_ST_OK, 105 * sec),
                rec.invoke(1, 1, ROF_ST_PROG_FAULT, 110 * sec)});
    d.drain();
    EXPECT_TRUE(quarantined.empty());
    ring.write({rec.invoke(1, 1, ROF_ST_PROG_FAULT, 120 * sec),
                rec.invoke(1, 1, ROF_ST_PROG_FAULT, 121 * sec),
                rec.invoke(1, 1, ROF_ST_BAD_ARGS, 122 * sec),
                rec.invoke(1, 1, ROF_ST_BAD_ARGS, 123 * sec)});
    d.drain();
    ASSERT_EQ(quarantined.size(), 1U);
    EXPECT_EQ(quarantined[0].tenant, 1U);
    EXPECT_EQ(quarantined[0].session, 1U);
    EXPECT_EQ(quarantined[0].reason, "3 program faults within 60 s (max_faults = 3)");

    // Session 2: faults at 0, 30, 70 s: the window of the first closed at
    // 60 s, so the third opens a new one; two more within it quarantine.
    quarantined.clear();
    ring.write({rec.invoke(1, 2, ROF_ST_PROG_FAULT, 1000 * sec),
                rec.invoke(1, 2, ROF_ST_PROG_FAULT, 1030 * sec),
                rec.invoke(1, 2, ROF_ST_PROG_FAULT, 1070 * sec),
                rec.invoke(1, 2, ROF_ST_PROG_FAULT, 1080 * sec)});
    d.drain();
    EXPECT_TRUE(quarantined.empty());
    ring.write({rec.invoke(1, 2, ROF_ST_PROG_FAULT, 1129 * sec)});
    d.drain();
    ASSERT_EQ(quarantined.size(), 1U);
    EXPECT_EQ(quarantined[0].session, 2U);

    // Session 3: bad requests of every BAD_* kind count; NO_PROGRAM does not.
    quarantined.clear();
    ring.write({rec.invoke(1, 3, ROF_ST_NO_PROGRAM, 0), rec.invoke(1, 3, ROF_ST_BAD_LENGTH, 1),
                rec.invoke(1, 3, ROF_ST_BAD_FLAGS, 2), rec.invoke(1, 3, ROF_ST_BAD_OPCODE, 3)});
    d.drain();
    ASSERT_EQ(quarantined.size(), 1U);
    EXPECT_EQ(quarantined[0].reason, "2 bad requests within 60 s (max_bad_requests = 2)");

    // Session 4: one completion error.
    quarantined.clear();
    ring.write({rec.with_reason(ROF_AUDIT_COMPLETION_ERROR, 1, 4, 10, 5)});
    d.drain();
    ASSERT_EQ(quarantined.size(), 1U);
    EXPECT_EQ(quarantined[0].session, 4U);

    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.quarantines, 4U);
    EXPECT_EQ(c.tenants.at(1).quarantined, 4U);
    EXPECT_TRUE(c.sessions.at(1).quarantined);

    // A closed session's state is gone; ids are never reused, but if one
    // were it would start afresh.
    quarantined.clear();
    ring.write({rec.with_reason(ROF_AUDIT_SESSION_CLOSE, 1, 1, ROF_CLOSE_ADMIN),
                rec.invoke(1, 1, ROF_ST_PROG_FAULT, 200 * sec)});
    d.drain();
    EXPECT_TRUE(quarantined.empty());
    EXPECT_EQ(d.snapshot().sessions.at(1).faults, 1U);
}

TEST_F(AuditDrainTest, NoThresholdsNoQuarantine) {
    Quarantine q;  // all thresholds 0
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::none, q}}}));
    std::vector<rof_audit_record> recs;
    for (int i = 0; i < 100; ++i) {
        recs.push_back(rec.invoke(1, 1, ROF_ST_PROG_FAULT));
        recs.push_back(rec.with_reason(ROF_AUDIT_COMPLETION_ERROR, 1, 1, 5));
        recs.push_back(rec.invoke(77, 2, ROF_ST_BAD_ARGS));  // unknown tenant
    }
    ring.write(recs);
    EXPECT_EQ(d.drain(), recs.size());
    EXPECT_TRUE(quarantined.empty());
    EXPECT_EQ(d.snapshot().quarantines, 0U);
}

TEST_F(AuditDrainTest, SessionsTrackedAreBounded) {
    AuditDrain d = make(config_with({}, AuditLevel::none), 2);
    ring.write({rec.make(ROF_AUDIT_SESSION_OPEN, 1, 1, 10),
                rec.make(ROF_AUDIT_SESSION_OPEN, 1, 2, 20),
                rec.invoke(1, 1, ROF_ST_OK, 30),  // 1 is now newer than 2
                rec.make(ROF_AUDIT_SESSION_OPEN, 1, 3, 40)});
    EXPECT_EQ(d.drain(), 4U);
    AuditCounters c = d.snapshot();
    EXPECT_EQ(c.sessions.size(), 2U);
    EXPECT_EQ(c.sessions.count(1), 1U);
    EXPECT_EQ(c.sessions.count(3), 1U);
    EXPECT_EQ(c.sessions_evicted, 1U);
    EXPECT_EQ(c.tenants.at(1).sessions_opened, 3U);
}

TEST_F(AuditDrainTest, ReadErrorsThrow) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    UniqueFd keep(fds[0]);
    AuditDrain::Options o;
    o.sink = [](log::Level, std::string_view, std::span<const journal::Field>) {};
    AuditDrain d(UniqueFd(fds[1]), nullptr, std::move(o));  // a write-only fd: EBADF
    EXPECT_THROW(d.drain(), std::system_error);
}

// snapshot() from another thread while drain() runs (meant for TSan too).
TEST_F(AuditDrainTest, SnapshotWhileDraining) {
    AuditDrain d = make(config_with({{1, {"kv", AuditLevel::none, {}}}}));
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> seen{0};
    std::thread reader([&] {
        while (!done.load()) {
            AuditCounters c = d.snapshot();
            if (c.tenants.count(1) != 0) {
                EXPECT_EQ(c.tenants.at(1).latency.count, c.records);
            }
            seen = c.records;
        }
    });
    std::size_t total = 0;
    for (int round = 0; round < 20; ++round) {
        std::vector<rof_audit_record> recs;
        for (int i = 0; i < 300; ++i) {
            recs.push_back(rec.invoke(1, 1 + static_cast<std::uint32_t>(i % 7), ROF_ST_OK));
        }
        ring.write(recs);
        total += d.drain();
    }
    done = true;
    reader.join();
    EXPECT_EQ(total, 6000U);
    EXPECT_EQ(d.snapshot().records, 6000U);
}

}  // namespace
}  // namespace rofd
