// SPDX-License-Identifier: MIT
// rof-session-check: rof::Session against rof.ko over rxe, without rofd
// (selftests/tests/librof-session).  Tenants, regions, programs and
// prepared sessions are made with /dev/rof ioctls (selftests/difftest/
// kprog.h); the session is connected with Session::connect() from an
// OpenSessionResponse built here, as rofd would return it.
//
//   rof-session-check verbs [--addr A]      every verb sync and async,
//        batching, completion_fd with poll(2), errors, invoke, latency
//   rof-session-check keepalive [--addr A] [--idle-ms N]   one-sided ops
//        only for 3x the idle timeout: the session stays LIVE; prints
//        "session N" for the caller to check the audit
//   rof-session-check ipv6 --addr A6        connect over IPv6, NOP, READ
//   rof-session-check closed [--addr A]     a session rofd/the admin closes
//        reports unavailable; a used ticket and a forged one are refused
//   rof-session-check names --socket S --region R   through rofd (the
//        caller's tenant, its region R): Session::open, then programs
//        invoked by name: looked up when first used, and again after the
//        name's program was unloaded and another loaded under it
//   rof-session-check invoke-until --prepared FILE --tag T --stop FILE
//        [--addr A] [--rate N]   connects with an OpenSessionResponse (proto3
//        JSON, as rofd answered it) and INVOKEs program T without arguments,
//        as many in flight as the credits allow (with --rate, the n-th posted
//        no earlier than n / N seconds in), until the stop file exists; every
//        answer must be OK (what rofd restarts must never disturb).  Prints
//        "N answered, M failed".
//
// Prints "ok"/"FAIL" lines; exit status 0 when every expectation held.
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "kprog.h"
#include "rof/session.h"
#include "test_programs.h"

namespace {

int failed = 0;

void check(bool ok, const std::string& what, const std::string& detail = "") {
    std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
                detail.c_str());
    std::fflush(stdout);
    failed += !ok;
}

// Runs @f, expects rof::Error with @code whose message contains @needle.
void expect_error(const std::string& what, rof::Code code, const std::string& needle,
                  const std::function<void()>& f) {
    try {
        f();
        check(false, what, "no error");
    } catch (const rof::Error& e) {
        bool ok = e.code() == code && std::string(e.what()).find(needle) != std::string::npos;
        check(ok, what, std::string(rof::code_name(e.code())) + ": " + e.what());
    }
}

std::uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

struct Grant {
    std::uint32_t region;
    std::uint32_t access;
    std::string name;
    std::uint64_t size;
};

rof::v1::OpenSessionResponse prepare(kprog::Dev& dev, std::uint32_t tenant,
                                     const std::vector<Grant>& grants, const std::string& addr,
                                     std::uint32_t idle_ms = 0, std::uint32_t msg_size = 0) {
    rof_session_prepare p{};
    p.msg_size = msg_size;
    p.tenant = tenant;
    p.nregions = static_cast<std::uint32_t>(grants.size());
    for (std::size_t i = 0; i < grants.size(); i++) {
        p.regions[i].region = grants[i].region;
        p.regions[i].access = grants[i].access;
    }
    p.expires_ns = realtime_ns() + 600ull * 1000000000ull;
    p.idle_timeout_ms = idle_ms;
    dev.kmod().session_prepare(p);
    rof::v1::OpenSessionResponse r;
    r.set_session(p.session);
    r.set_ticket(std::string(reinterpret_cast<const char*>(&p.ticket), sizeof(p.ticket)));
    r.set_address(addr);
    const char* port = std::getenv("ROF_CM_PORT");
    r.set_port(port ? static_cast<std::uint32_t>(std::atoi(port)) : ROF_CM_PORT_DEFAULT);
    for (const Grant& g : grants) {
        auto* gr = r.add_regions();
        gr->set_name(g.name);
        gr->set_region(g.region);
        gr->set_access(g.access);
        gr->set_size(g.size);
    }
    r.set_msg_size(p.msg_size);  // the module's answer: ROF_MSG_SIZE for 0
    r.set_idle_timeout_ms(idle_ms);
    return r;
}

std::uint32_t session_state(kprog::Dev& dev, std::uint32_t id) {
    const std::optional<rof_session_info> si = dev.kmod().get_session(id);
    return si ? si->state : 0;
}

std::uint64_t load(kprog::Dev& dev, std::uint32_t tenant, const char* text, const char* name,
                   const std::vector<rof_prog_bind>& binds) {
    return kprog::load(dev, tenant, kprog::assemble(text, name), binds, 1000, 4096, name);
}

std::span<std::byte> bytes_of(std::uint64_t& v) {
    return std::as_writable_bytes(std::span<std::uint64_t>(&v, 1));
}

struct World {
    kprog::Dev dev;
    std::string tag = "librof-" + std::to_string(getpid());
    std::uint32_t tenant = 0, table = 0, ro = 0;
    std::uint64_t get = 0, fault = 0, counter = 0;
    World() {
        dev.set_random_key();
        tenant = dev.tenant_create(tag);
        table = dev.region_create(tenant, tag + "-table", 65536, ROF_ACCESS_ALL);
        ro = dev.region_create(tenant, tag + "-ro", 4096, ROF_ACCESS_READ);
        get = load(dev, tenant, kprog::kReadWordProgram, "get", {{table, 0}});
        fault = load(dev, tenant, kprog::kFaultProgram, "fault", {{table, 0}});
        counter = load(dev, tenant, kprog::kCounterProgram, "counter", {});
    }
    ~World() { dev.tenant_destroy(tenant); }
    std::vector<Grant> grants() const {
        return {{table, ROF_ACCESS_ALL, "table", 65536}, {ro, ROF_ACCESS_READ, "ro", 4096}};
    }
};

double us_per(const std::function<void()>& f, int n) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++) {
        f();
    }
    auto dt = std::chrono::steady_clock::now() - t0;
    return std::chrono::duration<double, std::micro>(dt).count() / n;
}

// Polls until @n completions came, each checked by @each; false on a
// 30 s gap.
bool collect(rof::Session& s, std::size_t n,
             const std::function<void(const rof::Completion&)>& each) {
    rof::Completion c[16];
    std::size_t got = 0;
    while (got < n) {
        std::size_t k = s.poll(c, std::chrono::seconds(30));
        if (!k) {
            return false;
        }
        for (std::size_t i = 0; i < k; i++) {
            each(c[i]);
        }
        got += k;
    }
    return true;
}

void verbs(const std::string& addr) {
    World w;
    rof::SessionOptions o;
    o.max_transfer = 4096;
    o.depth = 64;
    rof::Session s = rof::Session::connect(prepare(w.dev, w.tenant, w.grants(), addr), o);
    check(s.regions().size() == 2 && s.credits() > 0,
          "connected " + s.peer() + ", session " + std::to_string(s.id()),
          std::to_string(s.credits()) + " credits, " + std::to_string(s.regions().size()) +
              " regions");
    check(session_state(w.dev, s.id()) == ROF_SESSION_LIVE, "the module has it LIVE");
    bool names = false;
    for (const auto& g : s.regions()) {
        names |= g.name == "table" && g.size == 65536 && g.access == ROF_ACCESS_ALL;
    }
    check(names, "region 'table' matched by id with the welcome table");

    // Synchronous verbs.
    std::vector<std::byte> in(6000), out(6000);
    for (std::size_t i = 0; i < in.size(); i++) {
        in[i] = static_cast<std::byte>(i * 7 + 1);
    }
    s.write("table", 1024, in);
    s.read("table", 1024, out);
    check(in == out, "sync write then read of 6000 bytes (two transfers each)");
    std::uint64_t v = 0x1122334455667788ull;
    s.write("table", 0, bytes_of(v));
    std::uint64_t old = s.cas("table", 0, 0x1122334455667788ull, 42);
    check(old == 0x1122334455667788ull, "cas returns the value written", std::to_string(old));
    old = s.cas("table", 0, 1, 99);
    check(old == 42, "a failing cas returns the current value and changes nothing");
    std::uint64_t r = 0;
    s.read("table", 0, bytes_of(r));
    check(r == 42, "read sees the cas", std::to_string(r));
    old = s.faa("table", 0, 8);
    std::uint64_t old2 = s.faa("table", 0, 8);
    check(old == 42 && old2 == 50, "faa returns the old values 42, 50");
    s.nop();
    check(true, "nop");
    std::uint64_t resp = 0;
    rof::InvokeResult ir = s.invoke(w.get, {}, bytes_of(resp));
    check(ir.prog_status == 0 && ir.len == 8 && resp == 58, "invoke 'get' reads what faa left (58)",
          std::to_string(resp));
    ir = s.invoke(w.counter, {}, bytes_of(resp));
    rof::InvokeResult ir2 = s.invoke(w.counter, {}, bytes_of(resp));
    check(ir.prog_status == 7 && ir2.prog_status == 7 && resp == 2 && ir2.insns > 0,
          "a program's own status (exit 7) is a result; scratch counts 1, 2");

    // Errors, checked locally or from the module; the session goes on.
    std::byte b8[8];
    expect_error("read past the end: out_of_range", rof::Code::out_of_range, "outside",
                 [&] { s.read("table", 65532, b8); });
    expect_error("write to a read-only grant: permission_denied", rof::Code::permission_denied,
                 "write access is not granted", [&] { s.write("ro", 0, b8); });
    expect_error("atomic on a read-only grant: permission_denied", rof::Code::permission_denied,
                 "atomic", [&] { s.faa("ro", 0, 1); });
    expect_error("misaligned cas: invalid_argument", rof::Code::invalid_argument, "aligned",
                 [&] { s.cas("table", 4, 0, 0); });
    expect_error("unknown region: not_found", rof::Code::not_found, "no region 'nope'",
                 [&] { s.read("nope", 0, b8); });
    expect_error("invoke of a tag never loaded: not_found", rof::Code::not_found,
                 "ROF_ST_NO_PROGRAM", [&] { s.invoke(0x1234, {}, {}); });
    expect_error("program by an unknown name: not_found", rof::Code::not_found, "no program",
                 [&] { s.invoke("get", {}, {}); });
    std::uint64_t wild = 0xfffffff0ull;
    s.write("table", 16, bytes_of(wild));
    expect_error("executor fault: aborted, naming exec_status and pc", rof::Code::aborted,
                 "faulted: EPTR at pc", [&] { s.invoke(w.fault, {}, bytes_of(resp)); });
    std::vector<std::byte> big(2000);
    expect_error("arguments larger than a message: invalid_argument", rof::Code::invalid_argument,
                 "arguments", [&] { s.invoke(w.get, big, {}); });
    expect_error("async read larger than max_transfer: out_of_range", rof::Code::out_of_range,
                 "max_transfer",
                 [&] { s.post_read("table", 0, big = std::vector<std::byte>(5000), 1); });
    s.nop();
    check(session_state(w.dev, s.id()) == ROF_SESSION_LIVE, "the session is LIVE after them");

    // Asynchronous: 64 writes in one batch, one flush, then 64 reads.
    std::vector<std::uint64_t> vals(64), got(64, 0);
    for (std::size_t i = 0; i < vals.size(); i++) {
        vals[i] = 0xabc0000000000000ull + i;
        s.post_write("table", 8192 + 8 * i, bytes_of(vals[i]), i);
    }
    check(s.outstanding() == 64, "64 writes posted, none sent yet");
    s.flush();
    std::size_t bad = 0;
    bool done = collect(s, 64, [&](const rof::Completion& c) {
        bad += c.code != rof::Code::ok || c.verb != rof::Verb::write || c.user >= 64;
    });
    check(done && !bad && s.outstanding() == 0, "64 async writes, one flush: all completed");
    for (std::size_t i = 0; i < got.size(); i++) {
        s.post_read("table", 8192 + 8 * i, bytes_of(got[i]), 1000 + i);
    }
    done = collect(s, 64,
                   [&](const rof::Completion& c) { bad += c.code != rof::Code::ok || c.len != 8; });
    check(done && !bad && got == vals, "64 async reads (flushed by poll) see them");

    // Async atomics: 32 faa of 1 on one counter return 32 distinct olds.
    std::uint64_t zero = 0;
    s.write("table", 16384, bytes_of(zero));
    std::vector<bool> seen(32, false);
    for (int i = 0; i < 32; i++) {
        s.post_faa("table", 16384, 1, static_cast<std::uint64_t>(i));
    }
    s.post_cas("table", 16384 + 8, 0, 5, 99);
    s.flush();
    bool cas_ok = false;
    done = collect(s, 33, [&](const rof::Completion& c) {
        if (c.user == 99) {
            cas_ok = c.verb == rof::Verb::cas && c.value == 0 && c.code == rof::Code::ok;
        } else if (c.value < 32 && c.code == rof::Code::ok) {
            seen[c.value] = true;
        }
    });
    s.read("table", 16384, bytes_of(r));
    bool all = done && r == 32 && cas_ok;
    for (bool x : seen) {
        all &= x;
    }
    check(all, "32 async faa: counter 32, olds 0..31 each once; async cas old value 0");

    // Async invokes: credits of them in flight at once.
    std::uint32_t n = std::min<std::uint32_t>(s.credits(), 64);
    std::vector<std::uint64_t> resps(n, 0);
    for (std::uint32_t i = 0; i < n; i++) {
        s.post_invoke(w.get, {}, bytes_of(resps[i]), i);
    }
    std::uint64_t first = 0;
    s.read("table", 0, bytes_of(first));  // a sync verb flushes the batch too
    done = collect(s, n, [&](const rof::Completion& c) {
        bad += c.code != rof::Code::ok || c.verb != rof::Verb::invoke || c.invoke.len != 8;
    });
    bool same = true;
    for (auto x : resps) {
        same &= x == first;
    }
    check(done && !bad && same, std::to_string(n) + " async invokes (all credits) answered");
    expect_error("more invokes than credits: resource_exhausted", rof::Code::resource_exhausted,
                 "credit", [&] {
                     for (std::uint32_t i = 0; i <= s.credits(); i++) {
                         s.post_invoke(w.get, {}, {}, i);
                     }
                 });
    done = collect(s, s.outstanding(), [&](const rof::Completion&) {});
    check(done && s.outstanding() == 0, "... and the ones posted complete");

    // completion_fd() with poll(2), as an event loop would.
    int fd = s.completion_fd();
    std::vector<std::uint64_t> ev(40);
    for (std::size_t i = 0; i < ev.size(); i++) {
        if (i % 2) {
            s.post_read("table", 8192 + 8 * i, bytes_of(ev[i]), i);
        } else {
            s.post_invoke(w.counter, {}, bytes_of(ev[i]), i);
        }
    }
    rof::Completion c[8];
    // poll() until 0 (flushes the batch; the last, empty poll re-arms),
    // then wait on the fd.
    std::size_t k, total = 0, wakeups = 0;
    while ((k = s.poll(c)) > 0) {
        total += k;
    }
    while (total < ev.size()) {
        pollfd p{fd, POLLIN, 0};
        int pr = ::poll(&p, 1, 30000);
        if (pr <= 0) {
            break;
        }
        wakeups++;
        while ((k = s.poll(c)) > 0) {
            total += k;
        }
    }
    check(total == ev.size(), "completion_fd: poll(2) wakes for 40 mixed async ops",
          std::to_string(total) + " completions, " + std::to_string(wakeups) + " wake-ups");

    // Latency (no asserts): sync round trips one at a time.
    const int iters = 300;
    double t_nop = us_per([&] { s.nop(); }, iters);
    double t_inv = us_per([&] { s.invoke(w.get, {}, bytes_of(resp)); }, iters);
    double t_read = us_per([&] { s.read("table", 0, bytes_of(r)); }, iters);
    double t_write = us_per([&] { s.write("table", 0, bytes_of(r)); }, iters);
    std::printf(
        "latency: nop %.1f us, invoke %.1f us, read 8 B %.1f us, write 8 B %.1f us "
        "(%d each, sync, this machine)\n",
        t_nop, t_inv, t_read, t_write, iters);
    check(session_state(w.dev, s.id()) == ROF_SESSION_LIVE, "the session is still LIVE");
}

void keepalive(const std::string& addr, std::uint32_t idle_ms) {
    World w;
    rof::SessionOptions o;
    o.idle_timeout_ms = idle_ms;  // as rofd's OpenSessionResponse would say
    std::uint32_t id = 0;
    {
        rof::Session s =
            rof::Session::connect(prepare(w.dev, w.tenant, w.grants(), addr, idle_ms), o);
        id = s.id();
        std::printf("session %u\n", id);
        std::fflush(stdout);
        auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(3 * idle_ms);
        std::uint64_t v = 0, ops = 0;
        bool ok = true;
        try {
            while (std::chrono::steady_clock::now() < end) {
                s.read("table", 0, bytes_of(v));
                ops++;
            }
        } catch (const rof::Error& e) {
            ok = false;
            std::printf("%s\n", e.what());
        }
        check(ok, "one-sided reads only for " + std::to_string(3 * idle_ms) + " ms (" +
                      std::to_string(ops) + " reads)");
        check(session_state(w.dev, id) == ROF_SESSION_LIVE,
              "the session is LIVE after 3x its idle timeout: the keepalive held it");
        try {
            s.nop();
            check(true, "a NOP still goes through");
        } catch (const rof::Error& e) {
            check(false, "a NOP still goes through", e.what());
        }
        // The caller makes no call at all for 3x the timeout; watch the
        // module's own state, which is what its reaper changes.
        end = std::chrono::steady_clock::now() + std::chrono::milliseconds(3 * idle_ms);
        bool live = true;
        while (live && std::chrono::steady_clock::now() < end) {
            live = session_state(w.dev, id) == ROF_SESSION_LIVE;
            usleep(50000);
        }
        check(live, "the caller idle for 3x the timeout: still LIVE");
        try {
            s.read("table", 0, bytes_of(v));
            s.nop();
            check(true, "verbs work after the idle period");
        } catch (const rof::Error& e) {
            check(false, "verbs work after the idle period", e.what());
        }
    }
    // The disconnect closes it; wait for that before the tenant goes, so
    // that the close is the disconnect's.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (session_state(w.dev, id) != 0 && std::chrono::steady_clock::now() < deadline) {
        usleep(20000);
    }
    check(session_state(w.dev, id) == 0, "the session is gone after the destructor");
}

void ipv6(const std::string& addr) {
    World w;
    rof::Session s = rof::Session::connect(prepare(w.dev, w.tenant, w.grants(), addr), {});
    check(s.peer().front() == '[', "connected over IPv6 to " + s.peer());
    std::uint64_t v = 7, r = 0;
    s.write("table", 0, bytes_of(v));
    s.read("table", 0, bytes_of(r));
    s.nop();
    std::uint64_t resp = 0;
    s.invoke(w.get, {}, bytes_of(resp));
    check(r == 7 && resp == 7, "write, read, nop, invoke over IPv6");
}

void closed(const std::string& addr) {
    World w;
    rof::v1::OpenSessionResponse prep = prepare(w.dev, w.tenant, w.grants(), addr);
    std::uint32_t id = 0;
    {
        rof::Session s = rof::Session::connect(prep, {});
        id = s.id();
        s.nop();
        w.dev.kmod().session_close(id);
        // Until the close reaches us the verbs may still work; then every
        // verb reports unavailable.  A NOP needs the server: it fails.
        bool saw = false;
        std::string msg;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!saw && std::chrono::steady_clock::now() < deadline) {
            try {
                s.nop();
            } catch (const rof::Error& e) {
                saw = e.code() == rof::Code::unavailable;
                msg = e.what();
                if (!saw) {
                    break;
                }
            }
        }
        check(saw && msg.find("session " + std::to_string(id) + " closed by rof.ko") == 0,
              "a session the admin closed reports unavailable", msg);
        expect_error("... on every verb after", rof::Code::unavailable, "closed by rof.ko",
                     [&] { s.write("table", 0, {}); });
        expect_error("... async too", rof::Code::unavailable, "closed by rof.ko",
                     [&] { s.post_faa("table", 0, 1, 0); });
    }
    expect_error("the used ticket is refused: failed_precondition", rof::Code::failed_precondition,
                 "connect refused by rof.ko: no prepared session for this ticket (expired, "
                 "closed or used) (ROF_REJECT_NO_SESSION)",
                 [&] { rof::Session::connect(prep, {}); });
    rof::v1::OpenSessionResponse forged = prepare(w.dev, w.tenant, w.grants(), addr);
    std::string t = forged.ticket();
    t[40] = static_cast<char>(t[40] ^ 1);
    forged.set_ticket(t);
    expect_error("a forged ticket is refused: unauthenticated", rof::Code::unauthenticated,
                 "(ROF_REJECT_BAD_MAC)", [&] { rof::Session::connect(forged, {}); });
    rof::v1::OpenSessionResponse nowhere = forged;
    nowhere.set_address("not-an-address");
    expect_error("a bad address: invalid_argument", rof::Code::invalid_argument,
                 "not an IPv4 or IPv6 address", [&] { rof::Session::connect(nowhere, {}); });
}

}  // namespace

bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
}

int invoke_until(const std::string& prepared_file, const std::string& addr, std::uint64_t tag,
                 const std::string& stop, std::uint64_t rate) {
    std::ifstream in(prepared_file);
    std::stringstream json;
    json << in.rdbuf();
    rof::v1::OpenSessionResponse prepared;
    const auto st = google::protobuf::util::JsonStringToMessage(json.str(), &prepared);
    if (!in || !st.ok()) {
        std::fprintf(stderr, "%s: not an OpenSessionResponse: %s\n", prepared_file.c_str(),
                     st.ToString().c_str());
        return 2;
    }
    rof::SessionOptions o;
    o.address = addr;
    rof::Session s = rof::Session::connect(prepared, o);
    std::vector<rof::Completion> done(s.credits());
    std::uint64_t sent = 0, answered = 0, failed_n = 0;
    std::string first_error;
    const auto start = std::chrono::steady_clock::now();
    // When the n-th INVOKE is due: at once, or n / rate seconds in.
    auto due = [&](std::uint64_t n) {
        return rate == 0 ? start : start + std::chrono::microseconds(n * 1000000 / rate);
    };

    while (!exists(stop)) {
        for (std::uint32_t i = 0; i < 1024 && !exists(stop); i++) {
            while (s.outstanding() < s.credits() && due(sent) <= std::chrono::steady_clock::now()) {
                s.post_invoke(tag, {}, {}, sent++);
            }
            if (s.outstanding() == 0) {  // paced: nothing in flight until the next is due
                std::this_thread::sleep_until(due(sent));
                continue;
            }
            const std::size_t n = s.poll(done, std::chrono::seconds(10));
            for (std::size_t k = 0; k < n; k++) {
                answered++;
                if (done[k].code != rof::Code::ok || done[k].invoke.prog_status != 0) {
                    if (failed_n++ == 0) {
                        first_error = std::string(rof::code_name(done[k].code)) + ": " +
                                      std::string(done[k].error);
                    }
                }
            }
        }
    }
    while (s.outstanding() > 0) {
        const std::size_t n = s.poll(done, std::chrono::seconds(10));
        if (n == 0) {
            std::fprintf(stderr, "%zu invocations never answered\n", s.outstanding());
            return 1;
        }
        answered += n;
        for (std::size_t k = 0; k < n; k++) {
            failed_n += done[k].code != rof::Code::ok || done[k].invoke.prog_status != 0;
        }
    }
    if (!first_error.empty()) {
        std::printf("first failure: %s\n", first_error.c_str());
    }
    std::printf("%llu sent, %llu answered, %llu failed\n", static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(answered),
                static_cast<unsigned long long>(failed_n));
    return failed_n == 0 && answered > 0 ? 0 : 1;
}

// Program names through rofd: the session looks a name up when it is first
// used, and again when the module no longer knows the tag it had.
void names(const std::string& socket, const std::string& region) {
    rof::ClientOptions co;
    co.target = socket;
    rof::Client c(co);
    auto load = [&](const std::string& name, int status) {
        rof::v1::LoadProgramRequest req;
        req.set_name(name);
        req.mutable_source()->set_text("exit " + std::to_string(status) + "\n");
        req.mutable_source()->set_file(name + ".rofs");
        return c.load_program(req).tag();
    };
    auto unload = [&](const std::string& name) {
        rof::v1::UnloadProgramRequest req;
        req.set_name(name);
        c.unload_program(req);
    };
    rof::SessionOptions opt;
    opt.regions = {{region, 0}};
    rof::Session s = rof::Session::open(c, opt);
    // Loaded after the session opened: open() listed nothing it must know.
    const std::uint64_t first = load("names-check", 1);
    std::array<std::byte, 8> resp{};
    rof::InvokeResult r = s.invoke("names-check", {}, resp);
    check(r.prog_status == 1 && s.program_tag("names-check") == first,
          "a program loaded after open() is invoked by name",
          "status " + std::to_string(r.prog_status));
    unload("names-check");
    const std::uint64_t second = load("names-check", 2);
    r = s.invoke("names-check", {}, resp);
    check(second != first && r.prog_status == 2 && s.program_tag("names-check") == second,
          "after an unload and a load under the same name, invoke by name runs the new program",
          "status " + std::to_string(r.prog_status));
    unload("names-check");
    expect_error("a name unloaded for good: not_found, naming it", rof::Code::not_found,
                 "names-check", [&] { s.invoke("names-check", {}, resp); });
    expect_error("a name never loaded: not_found", rof::Code::not_found, "no-such-program",
                 [&] { s.invoke("no-such-program", {}, resp); });
}

// Sessions of 4 KiB and 64 KiB messages (ABI 0.8): librof's buffers and
// bounds follow the accept's msg_size.  A program answering 4000 bytes
// runs in one INVOKE on the 4 KiB session and is refused on a 1 KiB one
// (failed_precondition, ROF_ST_MSG_SIZE); arguments up to msg_size - 24
// go, one more byte is invalid_argument; a 60 KiB response round-trips on
// the 64 KiB session; an accept larger than the buffers is refused.
void msgsize(const std::string& addr) {
    World w;
    const std::string big_text =
        ".args 0, 65512\n.resp 65504\n        mov64 r1, 61440\n        respond r1, 0\n";
    const std::string mid_text =
        ".args 0, 65512\n.resp 4000\n        mov64 r1, 4000\n        respond r1, 0\n";
    const std::uint64_t big =
        kprog::load(w.dev, w.tenant, kprog::assemble(big_text, "big"), {}, 1000, 4096, "big");
    const std::uint64_t mid =
        kprog::load(w.dev, w.tenant, kprog::assemble(mid_text, "mid"), {}, 1000, 4096, "mid");
    std::vector<std::byte> resp(ROF_MSG_SIZE_MAX);

    rof::Session s4 = rof::Session::connect(prepare(w.dev, w.tenant, {}, addr, 0, 4096), {});
    check(s4.msg_size() == 4096, "a 4 KiB session: msg_size() 4096", std::to_string(s4.msg_size()));
    rof::InvokeResult r = s4.invoke(mid, {}, resp);
    check(r.len == 4000, "4000 response bytes in one INVOKE", std::to_string(r.len));
    std::vector<std::byte> args(4096 - 24);
    r = s4.invoke(mid, args, resp);
    check(r.len == 4000, "arguments of msg_size - 24 (4072) bytes go");
    args.push_back(std::byte{0});
    expect_error("arguments of msg_size - 23: invalid_argument", rof::Code::invalid_argument,
                 "at most 4072", [&] { s4.invoke(mid, args, resp); });
    expect_error("resp_max above the session's messages: failed_precondition",
                 rof::Code::failed_precondition, "ROF_ST_MSG_SIZE",
                 [&] { s4.invoke(big, {}, resp); });
    s4.nop();

    rof::Session s1 = rof::Session::connect(prepare(w.dev, w.tenant, {}, addr), {});
    check(s1.msg_size() == ROF_MSG_SIZE, "a default session: msg_size() 1024",
          std::to_string(s1.msg_size()));
    expect_error("... the 4000-byte program: failed_precondition", rof::Code::failed_precondition,
                 "ROF_ST_MSG_SIZE", [&] { s1.invoke(mid, {}, resp); });

    rof::Session s64 = rof::Session::connect(prepare(w.dev, w.tenant, {}, addr, 0, 65536), {});
    check(s64.msg_size() == 65536, "a 64 KiB session: msg_size() 65536",
          std::to_string(s64.msg_size()));
    resp.assign(resp.size(), std::byte{1});
    r = s64.invoke(big, {}, resp);
    bool zero = r.len == 61440;
    for (std::size_t i = 0; zero && i < r.len; i++) {
        zero = resp[i] == std::byte{0};
    }
    check(zero, "a 61440-byte response in one INVOKE", std::to_string(r.len));
    args.assign(65536 - 24, std::byte{7});
    r = s64.invoke(big, args, resp);
    check(r.len == 61440, "65512 bytes of arguments in one INVOKE");

    // rofd said 1024, the module's session has 4096: its answers would
    // not fit the receives.
    rof::v1::OpenSessionResponse lying = prepare(w.dev, w.tenant, {}, addr, 0, 4096);
    lying.set_msg_size(ROF_MSG_SIZE);
    expect_error("an accept larger than the buffers: internal", rof::Code::internal,
                 "the accept's msg_size 4096", [&] { rof::Session::connect(lying, {}); });
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: rof-session-check verbs|keepalive|ipv6|closed|msgsize [--addr A] "
                     "[--idle-ms N]\n"
                     "       rof-session-check names --socket S --region R\n"
                     "       rof-session-check invoke-until --prepared FILE --tag T --stop FILE "
                     "[--addr A] [--rate N]\n");
        return 2;
    }
    std::string cmd = argv[1];
    std::string addr = kprog::server_addr();
    std::uint32_t idle = 1500;
    std::string prepared, stop, socket, region;
    std::uint64_t tag = 0, rate = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--addr") {
            addr = argv[i + 1];
        } else if (a == "--idle-ms") {
            idle = static_cast<std::uint32_t>(std::atoi(argv[i + 1]));
        } else if (a == "--prepared") {
            prepared = argv[i + 1];
        } else if (a == "--stop") {
            stop = argv[i + 1];
        } else if (a == "--rate") {
            rate = std::strtoull(argv[i + 1], nullptr, 0);
        } else if (a == "--tag") {
            tag = std::strtoull(argv[i + 1], nullptr, 0);
        } else if (a == "--socket") {
            socket = argv[i + 1];
        } else if (a == "--region") {
            region = argv[i + 1];
        }
    }
    try {
        if (cmd == "invoke-until") {
            return invoke_until(prepared, addr, tag, stop, rate);
        }
        if (cmd == "verbs") {
            verbs(addr);
        } else if (cmd == "keepalive") {
            keepalive(addr, idle);
        } else if (cmd == "ipv6") {
            ipv6(addr);
        } else if (cmd == "closed") {
            closed(addr);
        } else if (cmd == "names") {
            names(socket, region);
        } else if (cmd == "msgsize") {
            msgsize(addr);
        } else {
            std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        check(false, "unexpected exception", e.what());
    }
    std::printf("%d failed\n", failed);
    return failed ? 1 : 0;
}
