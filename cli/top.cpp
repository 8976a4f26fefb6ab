// SPDX-License-Identifier: MIT
// rofctl top [--once] [-n N] [-d SECONDS]: a live view of tenants and
// sessions.  On a terminal it redraws every refresh on the alternate
// screen and quits on q (or ^C); otherwise, with -j or --once, it prints
// each refresh as a block of text or one JSON object per line.
#include "top.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "commands.h"

namespace rofctl {
namespace top {
namespace {

// The labels of a sample (k="v",k2="v2"; values escape \ " and newline).
std::map<std::string, std::string> parse_labels(const std::string& s) {
    std::map<std::string, std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        const auto eq = s.find("=\"", i);
        if (eq == std::string::npos) {
            break;
        }
        std::string key = s.substr(i, eq - i), value;
        for (i = eq + 2; i < s.size() && s[i] != '"'; i++) {
            if (s[i] == '\\' && i + 1 < s.size()) {
                i++;
                value += s[i] == 'n' ? '\n' : s[i];
            } else {
                value += s[i];
            }
        }
        out.emplace(std::move(key), std::move(value));
        i++;  // the closing quote
        if (i < s.size() && s[i] == ',') {
            i++;
        }
    }
    return out;
}

double per_second(double before, double after, double seconds) {
    const double d = after >= before ? after - before : after;
    return d / seconds;
}

// "0", "12.5", "3.4k", "1.2M": rates for people.
std::string rate(double r) {
    if (r == 0) {
        return "0";
    }
    if (r >= 1e6) {
        return fmt::format("{:.1f}M", r / 1e6);
    }
    if (r >= 1e4) {
        return fmt::format("{:.1f}k", r / 1e3);
    }
    return fmt::format("{:.1f}", r);
}

std::string byte_rate(double r) {
    return human_size(static_cast<std::uint64_t>(std::llround(r))) + "/s";
}

// Columns padded to their widest cell, two spaces apart.
std::vector<std::string> table(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> w;
    for (const auto& r : rows) {
        w.resize(std::max(w.size(), r.size()));
        for (std::size_t i = 0; i < r.size(); i++) {
            w[i] = std::max(w[i], r[i].size());
        }
    }
    std::vector<std::string> out;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); i++) {
            line += r[i];
            if (i + 1 < r.size()) {
                line += std::string(w[i] - r[i].size() + 2, ' ');
            }
        }
        out.push_back(std::move(line));
    }
    return out;
}

}  // namespace

Sample parse_sample(const std::string& text) {
    Sample s;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const auto l = split_sample(line);
        if (!l || !l->name.starts_with("rof_")) {
            continue;
        }
        const auto labels = parse_labels(l->labels);
        const auto tenant = labels.find("tenant");
        if (tenant == labels.end()) {
            continue;
        }
        char* end = nullptr;
        const double value = std::strtod(l->value.c_str(), &end);
        if (end == l->value.c_str()) {
            continue;
        }
        if (const auto id = labels.find("session"); id != labels.end()) {
            SessionCounters& c = s.sessions[std::strtoull(id->second.c_str(), nullptr, 10)];
            c.tenant = tenant->second;
            const std::string& n = l->name;
            if (n == "rof_session_requests_total") {
                c.requests = value;
            } else if (n == "rof_session_request_bytes_total") {
                c.bytes_in = value;
            } else if (n == "rof_session_response_bytes_total") {
                c.bytes_out = value;
            } else if (n == "rof_session_bad_requests_total" ||
                       n == "rof_session_completion_errors_total") {
                c.errors += value;
            } else if (n == "rof_session_deferred_total") {
                c.throttled = value;
            } else if (n == "rof_session_credits") {
                c.credits = value;
            }
            continue;
        }
        // A tenant's series: a tenant is listed once rof.ko reports it.
        const std::string& n = l->name;
        if (n == "rof_tenant_sessions") {
            s.tenants[tenant->second].sessions = value;
        } else if (n == "rof_tenant_invocations_total") {
            s.tenants[tenant->second].invocations = value;
        } else if (n == "rof_tenant_invoke_errors_total" ||
                   n == "rof_tenant_completion_errors_total") {
            s.tenants[tenant->second].errors += value;
        } else if (n == "rof_tenant_invocation_bytes_total") {
            s.tenants[tenant->second].bytes = value;
        } else if (n == "rof_tenant_audit_dropped_total") {
            s.tenants[tenant->second].audit_dropped = value;
        } else if (n == "rof_sessions_quarantined_total") {
            s.tenants[tenant->second].quarantines = value;
        }
    }
    return s;
}

View compute(const Sample& before, const Sample& after, double seconds) {
    View v;
    v.seconds = seconds;
    std::map<std::string, double> throttled;
    for (const auto& [id, c] : after.sessions) {
        const auto b = before.sessions.find(id);
        const SessionCounters zero;
        const SessionCounters& p = b != before.sessions.end() ? b->second : zero;
        SessionRow r;
        r.session = id;
        r.tenant = c.tenant;
        r.requests = per_second(p.requests, c.requests, seconds);
        r.bytes_in = per_second(p.bytes_in, c.bytes_in, seconds);
        r.bytes_out = per_second(p.bytes_out, c.bytes_out, seconds);
        r.errors = per_second(p.errors, c.errors, seconds);
        r.throttled = per_second(p.throttled, c.throttled, seconds);
        r.credits = static_cast<std::uint64_t>(c.credits);
        throttled[c.tenant] += r.throttled;
        v.sessions.push_back(std::move(r));
    }
    for (const auto& [name, c] : after.tenants) {
        const auto b = before.tenants.find(name);
        const TenantCounters zero;
        const TenantCounters& p = b != before.tenants.end() ? b->second : zero;
        TenantRow r;
        r.tenant = name;
        r.sessions = static_cast<std::uint64_t>(c.sessions);
        r.invocations = per_second(p.invocations, c.invocations, seconds);
        r.bytes = per_second(p.bytes, c.bytes, seconds);
        r.errors = per_second(p.errors, c.errors, seconds);
        r.audit_dropped = per_second(p.audit_dropped, c.audit_dropped, seconds);
        r.quarantines = per_second(p.quarantines, c.quarantines, seconds);
        r.throttled = throttled[name];
        v.tenants.push_back(std::move(r));
    }
    std::sort(v.tenants.begin(), v.tenants.end(), [](const TenantRow& a, const TenantRow& b) {
        return std::tie(b.invocations, b.bytes, b.errors, b.throttled, a.tenant) <
               std::tie(a.invocations, a.bytes, a.errors, a.throttled, b.tenant);
    });
    std::sort(v.sessions.begin(), v.sessions.end(), [](const SessionRow& a, const SessionRow& b) {
        const double ab = a.bytes_in + a.bytes_out, bb = b.bytes_in + b.bytes_out;
        return std::tie(b.requests, bb, b.errors, b.throttled, a.session) <
               std::tie(a.requests, ab, a.errors, a.throttled, b.session);
    });
    return v;
}

Json to_json(const View& v) {
    Json tenants = Json::array(), sessions = Json::array();
    for (const TenantRow& t : v.tenants) {
        tenants.push_back({{"tenant", t.tenant},
                           {"sessions", t.sessions},
                           {"invocations_per_s", t.invocations},
                           {"bytes_per_s", t.bytes},
                           {"errors_per_s", t.errors},
                           {"throttled_per_s", t.throttled},
                           {"audit_dropped_per_s", t.audit_dropped},
                           {"quarantines_per_s", t.quarantines}});
    }
    for (const SessionRow& s : v.sessions) {
        sessions.push_back({{"session", s.session},
                            {"tenant", s.tenant},
                            {"requests_per_s", s.requests},
                            {"bytes_in_per_s", s.bytes_in},
                            {"bytes_out_per_s", s.bytes_out},
                            {"errors_per_s", s.errors},
                            {"throttled_per_s", s.throttled},
                            {"credits", s.credits}});
    }
    return {{"seconds", v.seconds}, {"tenants", tenants}, {"sessions", sessions}};
}

std::string render(const View& v, const std::string& title, std::size_t width, std::size_t height) {
    std::vector<std::vector<std::string>> t = {{"TENANT", "SESSIONS", "INVOKES/S", "BYTES/S",
                                                "ERRORS/S", "THROTTLED/S", "AUDIT_DROPS/S",
                                                "QUARANTINES/S"}};
    for (const TenantRow& r : v.tenants) {
        t.push_back({r.tenant, std::to_string(r.sessions), rate(r.invocations), byte_rate(r.bytes),
                     rate(r.errors), rate(r.throttled), rate(r.audit_dropped),
                     rate(r.quarantines)});
    }
    std::vector<std::vector<std::string>> s = {
        {"SESSION", "TENANT", "REQUESTS/S", "IN/S", "OUT/S", "ERRORS/S", "THROTTLED/S", "CREDITS"}};
    for (const SessionRow& r : v.sessions) {
        s.push_back({std::to_string(r.session), r.tenant, rate(r.requests), byte_rate(r.bytes_in),
                     byte_rate(r.bytes_out), rate(r.errors), rate(r.throttled),
                     std::to_string(r.credits)});
    }
    const std::vector<std::string> tenants = table(t), sessions = table(s);
    // Lines: the title, the tenants, a blank line, the sessions.  A table
    // that does not fit in @height shows what does, less one line for
    // "... N more" (N: its rows not shown).
    std::vector<std::string> lines = {title};
    std::size_t room = height == 0 ? SIZE_MAX : height - std::min<std::size_t>(height, 1);
    auto add = [&](const std::vector<std::string>& tab, const char* what) {
        if (tab.size() <= room) {
            lines.insert(lines.end(), tab.begin(), tab.end());
            room -= tab.size();
            return;
        }
        if (room == 0) {
            return;
        }
        const std::size_t shown = room - 1;  // the header, and rows
        lines.insert(lines.end(), tab.begin(), tab.begin() + static_cast<std::ptrdiff_t>(shown));
        lines.push_back(
            fmt::format("... {} more {}", tab.size() - std::max<std::size_t>(shown, 1), what));
        room = 0;
    };
    add(tenants, "tenants");
    if (room >= 2) {
        lines.emplace_back();
        room--;
        add(sessions, "sessions");
    }
    std::string out;
    for (std::string& l : lines) {
        if (width != 0 && l.size() > width) {
            l.resize(width);
        }
        while (!l.empty() && l.back() == ' ') {
            l.pop_back();
        }
        out += l;
        out += '\n';
    }
    return out;
}

}  // namespace top

namespace {

struct TopOpts {
    bool once = false;
    unsigned iterations = 0;  // 0: until quit
    double delay_s = 1.0;
};

// A signalfd of @set (blocked by the caller), closed when it goes.
class SignalFd {
  public:
    explicit SignalFd(const sigset_t& set)
        : fd_(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) {}
    ~SignalFd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    SignalFd(const SignalFd&) = delete;
    SignalFd& operator=(const SignalFd&) = delete;

    int get() const noexcept { return fd_; }

  private:
    int fd_;
};

// The terminal while top draws: the alternate screen, no cursor, and
// stdin (when a terminal) without echo, line buffering or signal keys, so
// that q and ^C arrive as bytes.  Restored when it goes.
class Screen {
  public:
    explicit Screen(std::ostream& out) : out_(out) {
        if (::isatty(STDIN_FILENO) != 0 && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
            termios raw = saved_;
            raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG);
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            restore_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        out_ << "\x1b[?1049h\x1b[?25l" << std::flush;
    }
    ~Screen() {
        out_ << "\x1b[?25h\x1b[?1049l" << std::flush;
        if (restore_) {
            ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
        }
    }
    Screen(const Screen&) = delete;
    Screen& operator=(const Screen&) = delete;

    bool keys() const { return restore_; }

    // Home, clear, the frame fitted to the window.
    void draw(const top::View& v, const std::string& title) {
        winsize ws{};
        std::size_t w = 0, h = 0;
        if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
            w = ws.ws_col;
            h = ws.ws_row;
        }
        // One line short of the window: the frame's last newline must not
        // scroll it.
        out_ << "\x1b[H\x1b[2J" << top::render(v, title, w, h > 1 ? h - 1 : h) << std::flush;
    }

  private:
    std::ostream& out_;
    termios saved_{};
    bool restore_ = false;
};

std::string clock_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char buf[16];
    std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
    return buf;
}

int run_top(Context& ctx, const TopOpts& o) {
    if (ctx.in_batch && !o.once && o.iterations == 0) {
        throw UsageError("top: runs until quit, not in a batch (give --once or -n N)");
    }
    const bool interactive =
        !ctx.printer.json() && !o.once && &ctx.out == &std::cout && ::isatty(STDOUT_FILENO) != 0;
    // SIGINT, SIGTERM and SIGWINCH through a signalfd, blocked before gRPC
    // starts its threads (ctx.client() makes the channel), so that they
    // inherit the mask: top ends between refreshes, the terminal restored.
    std::optional<SignalFd> signals;
    if (!ctx.in_batch) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGWINCH);
        if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0) {
            signals.emplace(set);
        }
    }
    using Clock = std::chrono::steady_clock;
    const auto delay =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.delay_s));
    auto fetch = [&ctx] { return top::parse_sample(ctx.client().get_metrics().text()); };

    std::unique_ptr<Screen> screen;
    if (interactive) {
        screen = std::make_unique<Screen>(ctx.out);
    }
    auto title = [&](const top::View& v) {
        return fmt::format("rofctl top  {}  every {:.1f}s  tenants {}, sessions {}{}", clock_now(),
                           o.delay_s, v.tenants.size(), v.sessions.size(),
                           screen && screen->keys() ? "  (q: quit)" : "");
    };

    top::Sample before = fetch();
    auto t0 = Clock::now();
    top::View shown;
    if (screen) {
        screen->draw(shown, title(shown) + "  (collecting)");
    }
    for (unsigned n = 0;;) {
        // Until the next refresh: keys and signals.
        for (auto now = Clock::now(); now < t0 + delay; now = Clock::now()) {
            const int sfd = signals ? signals->get() : -1;
            pollfd fds[2] = {{sfd, POLLIN, 0},
                             {screen && screen->keys() ? STDIN_FILENO : -1, POLLIN, 0}};
            const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t0 + delay - now);
            if (::poll(fds, 2, static_cast<int>(ms.count())) <= 0) {
                continue;
            }
            signalfd_siginfo si{};
            if ((fds[0].revents & POLLIN) != 0 &&
                ::read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
                if (si.ssi_signo != SIGWINCH) {
                    return exit_ok;
                }
                if (screen) {
                    screen->draw(shown, title(shown));
                }
            }
            char key = 0;
            if ((fds[1].revents & POLLIN) != 0 && ::read(STDIN_FILENO, &key, 1) == 1 &&
                (key == 'q' || key == 'Q' || key == 3 /* ^C */)) {
                return exit_ok;
            }
        }
        top::Sample after = fetch();
        const auto t1 = Clock::now();
        shown = top::compute(before, after, std::chrono::duration<double>(t1 - t0).count());
        if (screen) {
            screen->draw(shown, title(shown));
        } else if (ctx.printer.json()) {
            ctx.printer.record(top::to_json(shown));
        } else {
            ctx.out << top::render(shown, title(shown)) << '\n' << std::flush;
        }
        before = std::move(after);
        t0 = t1;
        if (o.once || (o.iterations != 0 && ++n >= o.iterations)) {
            return exit_ok;
        }
    }
}

}  // namespace

void add_top_commands(CLI::App& app, Handler& selected) {
    auto* cmd = app.add_subcommand(
        "top", "a live view of tenants and sessions: invocations, bytes, errors, throttling");
    auto o = std::make_shared<TopOpts>();
    cmd->add_flag("--once", o->once, "one refresh (two samples --delay apart), printed, then end");
    cmd->add_option("-n,--iterations", o->iterations, "end after N refreshes (default: until q)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("-d,--delay", o->delay_s, "seconds between refreshes (default 1)")
        ->check(CLI::Range(0.1, 3600.0));
    cmd->callback([&selected, o] { selected = [o](Context& ctx) { return run_top(ctx, *o); }; });
}

}  // namespace rofctl
