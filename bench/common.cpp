// rof-bench's shared set-up and measuring: see common.h.
#include "common.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "raw.h"

namespace rofbench {

std::string bench_tenant(const Options& opt) {
    return opt.param("tenant", "bench");
}

std::string kv_tenant(const Options& opt) {
    return opt.param("kv_tenant", "kv");
}

std::string need(const std::string& v, const char* what) {
    if (v.empty()) {
        throw std::runtime_error(std::string("needs ") + what);
    }
    return v;
}

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

// Warm-up, then opt.reps repetitions of opt.seconds; @op runs one operation
// and returns the histogram its latency goes to.
template <typename Op>
void timed_loop(const Env& env, std::string_view what, Op&& op) {
    const Options& o = env.opt;
    std::string id = env.report.json().value("id", "");
    progress(id, std::string(what) + ": warm-up");
    std::uint64_t end = now_ns() + std::uint64_t(o.warmup * 1e9);
    do {
        op();
    } while (now_ns() < end);
    for (int rep = 0; rep < o.reps; rep++) {
        progress(id, std::string(what) + ": rep " + std::to_string(rep + 1) + "/" +
                         std::to_string(o.reps));
        end = now_ns() + std::uint64_t(o.seconds * 1e9);
        std::uint64_t t = now_ns();
        do {
            Histogram* h = op();
            std::uint64_t t2 = now_ns();
            h->record(t2 - t);
            t = t2;
        } while (t < end);
    }
}

}  // namespace

Histogram measure_latency(const Env& env, std::string_view what, const std::function<void()>& op) {
    Histogram all;
    timed_loop(env, what, [&] {
        op();
        return &all;
    });
    return all;
}

std::pair<Histogram, Histogram> measure_latency_pair(const Env& env, std::string_view what,
                                                     const std::function<void()>& a,
                                                     const std::function<void()>& b) {
    Histogram ha, hb;
    bool first = true;
    timed_loop(env, what, [&] {
        Histogram* h = first ? &ha : &hb;
        if (first) {
            a();
        } else {
            b();
        }
        first = !first;
        return h;
    });
    return {ha, hb};
}

double measure_rate(const Env& env, std::string_view what,
                    const std::function<std::uint64_t(std::uint64_t)>& run) {
    const Options& o = env.opt;
    std::string id = env.report.json().value("id", "");
    progress(id, std::string(what) + ": warm-up");
    run(std::uint64_t(o.warmup * 1e9) + 1);
    std::vector<double> rates;
    for (int rep = 0; rep < o.reps; rep++) {
        progress(id, std::string(what) + ": rep " + std::to_string(rep + 1) + "/" +
                         std::to_string(o.reps));
        std::uint64_t t0 = now_ns();
        std::uint64_t n = run(std::uint64_t(o.seconds * 1e9));
        rates.push_back(double(n) * 1e9 / double(now_ns() - t0));
    }
    return median(rates);
}

pid_t spawn(std::vector<std::string> argv, bool quiet) {
    std::vector<char*> a;
    a.reserve(argv.size() + 1);
    for (auto& s : argv) {
        a.push_back(s.data());
    }
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (quiet) {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc));
    }
    return pid;
}

// ---- the rof side ----------------------------------------------------------------

rof::Client connect_rofd(const Options& opt) {
    rof::ClientOptions co;
    co.target = opt.rofd;
    co.deadline = std::chrono::seconds(60);
    return rof::Client(co);
}

std::uint64_t load_program(rof::Client& c, const std::string& tenant, const std::string& name,
                           const std::string& source,
                           const std::vector<std::pair<std::string, std::string>>& binds) {
    rof::v1::ProgramSource src;
    src.set_text(source);
    src.set_file(name + ".rofs");
    google::protobuf::RepeatedPtrField<rof::v1::Bind> bs;
    for (const auto& [slot, region] : binds) {
        auto* b = bs.Add();
        b->set_slot(slot);
        b->set_region(region);
    }
    // A program of this name from an earlier run is replaced in one step
    // (the same image is kept as it is); otherwise the program is loaded.
    rof::v1::ListProgramsRequest lr;
    lr.set_tenant(tenant);
    const rof::v1::ListProgramsResponse loaded = c.list_programs(lr);
    for (const auto& p : loaded.programs()) {
        if (p.name() == name) {
            rof::v1::ReplaceProgramRequest r;
            r.set_tenant(tenant);
            r.set_name(name);
            r.set_tag(p.tag());
            *r.mutable_source() = src;
            *r.mutable_binds() = bs;
            return c.replace_program(r).tag();
        }
    }
    rof::v1::LoadProgramRequest l;
    l.set_tenant(tenant);
    l.set_name(name);
    *l.mutable_source() = src;
    *l.mutable_binds() = bs;
    return c.load_program(l).tag();
}

void ensure_region(rof::Client& c, const std::string& tenant, const std::string& name,
                   std::uint64_t size) {
    rof::v1::CreateRegionRequest req;
    req.set_tenant(tenant);
    req.set_name(name);
    req.set_size(size);
    req.set_access(7);
    try {
        c.create_region(req);
    } catch (const rof::Error& e) {
        if (e.code() != rof::Code::already_exists) {
            throw;
        }
    }
}

rof::Session open_session(rof::Client& c, const std::string& tenant,
                          const std::vector<std::string>& regions) {
    rof::SessionOptions so;
    so.tenant = tenant;
    for (const auto& r : regions) {
        so.regions.push_back({r, 0});
    }
    so.max_transfer = raw::kMaxEcho;
    return rof::Session::open(c, so);
}

const char* const kEchoProgram = R"(; echo: the arguments back, as the response
.args 8, 992
.resp 992
        copy  resp[0], args[0], r1 max 992
        respond r1, 0
)";

std::size_t invoke_ok(rof::Session& s, std::uint64_t tag, std::span<const std::byte> args,
                      std::span<std::byte> resp) {
    const rof::InvokeResult r = s.invoke(tag, args, resp);
    if (r.prog_status != 0) {
        throw std::runtime_error("INVOKE: program status " + std::to_string(r.prog_status));
    }
    return r.len;
}

std::uint64_t invoke_window(std::span<rof::Session> ss, std::uint64_t tag, std::size_t window,
                            std::uint64_t ns, const std::atomic<bool>* stop) {
    std::array<std::byte, kEchoBytes> args{};
    std::vector<std::array<std::byte, kEchoBytes>> resp(ss.size() * window);
    std::size_t outstanding = 0;
    for (std::size_t i = 0; i < ss.size(); i++) {
        std::size_t w = std::min<std::size_t>(window, ss[i].credits());
        for (std::size_t k = 0; k < w; k++) {
            ss[i].post_invoke(tag, args, resp[i * window + k], i * window + k);
            outstanding++;
        }
    }
    std::uint64_t done = 0, t0 = now_ns();
    const std::uint64_t end = ns > UINT64_MAX - t0 ? UINT64_MAX : t0 + ns;  // ns may be "forever"
    std::array<rof::Completion, 32> c;
    bool ending = false;
    while (outstanding) {
        for (rof::Session& s : ss) {
            std::size_t n = s.poll(c);  // flushes what was posted
            for (std::size_t k = 0; k < n; k++) {
                if (c[k].code != rof::Code::ok || c[k].len != kEchoBytes) {
                    throw std::runtime_error("INVOKE echo: " +
                                             (c[k].code != rof::Code::ok
                                                  ? std::string(c[k].error)
                                                  : std::to_string(c[k].len) + " bytes back"));
                }
                done++;
                outstanding--;
                if (!ending) {
                    s.post_invoke(tag, args, resp[c[k].user], c[k].user);
                    outstanding++;
                }
            }
        }
        ending = ending || now_ns() >= end || (stop && stop->load(std::memory_order_relaxed));
    }
    return done;
}

// ---- stock memcached ---------------------------------------------------------------

Memcached::Memcached(const std::string& host_port) {
    auto [host, port] = raw::split_host_port(host_port);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res)) {
        throw std::runtime_error("memcached " + host_port + ": " + gai_strerror(rc));
    }
    for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
        fd_ = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd_ >= 0 && connect(fd_, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd_);
            fd_ = -1;
        }
    }
    freeaddrinfo(res);
    if (fd_ < 0) {
        throw std::runtime_error("memcached " + host_port +
                                 ": cannot connect: " + std::strerror(errno));
    }
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Memcached::~Memcached() {
    if (fd_ >= 0) {
        close(fd_);
    }
}

void Memcached::send_all(std::string_view s) const {
    while (!s.empty()) {
        ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw std::runtime_error(std::string("memcached: send: ") + std::strerror(errno));
        }
        s.remove_prefix(std::size_t(n));
    }
}

void Memcached::fill() {
    char b[16384];
    for (;;) {
        ssize_t got = ::recv(fd_, b, sizeof b, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            throw std::runtime_error("memcached: the connection closed");
        }
        in_.append(b, std::size_t(got));
        return;
    }
}

void Memcached::skip(std::size_t n) {
    while (in_.size() < n) {
        fill();
    }
    in_.erase(0, n);
}

std::string Memcached::line() {
    std::size_t at;
    while ((at = in_.find("\r\n")) == std::string::npos) {
        fill();
    }
    std::string l = in_.substr(0, at);
    in_.erase(0, at + 2);
    return l;
}

void Memcached::set(std::string_view key, std::string_view value) {
    std::string cmd = "set " + std::string(key) + " 0 0 " + std::to_string(value.size()) + "\r\n";
    cmd.append(value);
    cmd.append("\r\n");
    send_all(cmd);
    std::string l = line();
    if (l != "STORED") {
        throw std::runtime_error("memcached: set " + std::string(key) + ": " + l);
    }
}

std::size_t Memcached::get(std::string_view key) {
    send_all("get " + std::string(key) + "\r\n");
    std::string l = line();
    // VALUE <key> <flags> <bytes>
    if (l.rfind("VALUE ", 0) != 0) {
        throw std::runtime_error("memcached: get " + std::string(key) + ": " + l);
    }
    std::size_t n = std::stoul(l.substr(l.rfind(' ') + 1));
    skip(n + 2);  // the value and its \r\n
    if (line() != "END") {
        throw std::runtime_error("memcached: get " + std::string(key) + ": no END");
    }
    return n;
}

}  // namespace rofbench
