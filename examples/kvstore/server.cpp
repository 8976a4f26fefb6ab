// SPDX-License-Identifier: MIT
// rof-kvstore: a memcached-like key-value server whose table and values live in rof regions
// (README.md).  It creates the regions kv_index and kv_heap through rofd if they do not exist,
// maps them, formats them unless they already hold a table of its geometry, loads kv-get,
// kv-put and kv-del, and serves memcached's text protocol on TCP through its own session: every
// GET, SET and DELETE is an INVOKE of the programs, as any other client's.
//
// Usage: rof-kvstore [--socket PATH] [--tenant NAME] [--listen ADDR:PORT] [--items N]
//                    [--max-value BYTES] [--timeout MS] [--programs rofs|c] [--image-cache DIR]
//        rof-kvstore --programs c --image-cache DIR [--items N] [--max-value BYTES] --prepare
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <csignal>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kv_client.h"
#include "kv_layout.h"
#include "kv_program_c.h"
#include "rof/client.h"
#include "rof/mapping.h"
#include "rof/prog/program.h"
#include "rof/session.h"

namespace {

struct Options {
    std::string socket, tenant, listen = "127.0.0.1:11211";
    std::uint64_t items = rofkv::kDefaultItems;
    std::uint64_t max_value = rofkv::kDefaultMaxValue;  // the largest value, bytes
    // Each call's deadline, and the session's connect timeout (rof::ClientOptions::deadline).
    std::chrono::milliseconds timeout = rof::ClientOptions{}.deadline;
    // Which build of the programs to load: the assembly (programs/kv-*.rofs) or the C
    // (programs/kv-*.c, compiled at start with clang: $ROF_CLANG, else clang from PATH).
    bool c_programs = false;
    // With c: where clang's objects are kept across starts (empty: compiled at each start).
    std::string image_cache;
    // Only fill image_cache for the geometry and exit, without rofd: a later start of the same
    // geometry with that directory runs no clang (on another host too, one without clang).
    bool prepare = false;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(
        stderr,
        "rof-kvstore: %s\nusage: rof-kvstore [--socket PATH] [--tenant NAME] "
        "[--listen ADDR:PORT] [--items N] [--max-value BYTES]\n"
        "       [--timeout MS] [--programs rofs|c] [--image-cache DIR]\n"
        "       rof-kvstore --programs c --image-cache DIR [--items N] [--max-value BYTES] "
        "--prepare\n",
        why);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage("a memcached-like server over rof regions");
        }
        if (a == "--prepare") {
            o.prepare = true;
            continue;
        }
        if (i + 1 >= argc) {
            usage(("missing value of " + a).c_str());
        }
        const std::string v = argv[++i];
        if (a == "--socket") {
            o.socket = v;
        } else if (a == "--tenant") {
            o.tenant = v;
        } else if (a == "--listen") {
            o.listen = v;
        } else if (a == "--items") {
            char* end = nullptr;
            o.items = std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || *end || o.items == 0 || o.items > rofkv::kMaxItems) {
                usage("--items: 1 .. 1048576");
            }
        } else if (a == "--max-value") {
            char* end = nullptr;
            o.max_value = std::strtoull(v.c_str(), &end, 10);
            try {
                if (v.empty() || *end) {
                    throw std::invalid_argument("not a number");
                }
                rofkv::Geometry::for_items(1, o.max_value);
            } catch (const std::invalid_argument&) {
                usage("--max-value: a power of two, 4096 .. 65536");
            }
        } else if (a == "--timeout") {
            char* end = nullptr;
            const unsigned long long ms = std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || *end || ms < 1 || ms > 600000) {
                usage("--timeout: 1 .. 600000 ms");
            }
            o.timeout = std::chrono::milliseconds(ms);
        } else if (a == "--programs") {
            if (v != "rofs" && v != "c") {
                usage("--programs: rofs or c");
            }
            o.c_programs = v == "c";
        } else if (a == "--image-cache") {
            if (v.empty()) {
                usage("--image-cache: a directory");
            }
            o.image_cache = v;
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (o.prepare && (!o.c_programs || o.image_cache.empty())) {
        usage(
            "--prepare: the C builds' objects for --image-cache (--programs c --image-cache DIR)");
    }
    return o;
}

// ---- the regions ----------------------------------------------------------------------------

rof::v1::FreeList freelist(std::uint64_t bs, std::uint64_t at, std::uint64_t count) {
    rof::v1::FreeList f;
    f.set_block_size(static_cast<std::uint32_t>(bs));
    f.set_offset(at);
    f.set_count(static_cast<std::uint32_t>(count));
    return f;
}

// Creates region @name unless it exists; an existing one must have the geometry asked for.
void ensure_region(rof::Client& c, const std::string& tenant, const std::string& name,
                   std::uint64_t size, const std::vector<rof::v1::FreeList>& fls) {
    rof::v1::GetRegionRequest g;
    g.set_tenant(tenant);
    g.set_name(name);
    try {
        const rof::v1::Region r = c.get_region(g);
        bool same = r.size() == size && static_cast<std::size_t>(r.freelists_size()) == fls.size();
        for (std::size_t i = 0; same && i < fls.size(); i++) {
            const auto& f = r.freelists(static_cast<int>(i));
            same = f.block_size() == fls[i].block_size() && f.offset() == fls[i].offset() &&
                   f.count() == fls[i].count();
        }
        if (!same) {
            throw rof::Error(rof::Code::failed_precondition,
                             "region \"" + name + "\" exists with another geometry (" +
                                 std::to_string(r.size()) + " bytes, want " + std::to_string(size) +
                                 "): delete it, or start with the --items and --max-value it was "
                                 "made for");
        }
        return;
    } catch (const rof::Error& e) {
        if (e.code() != rof::Code::not_found) {
            throw;
        }
    }
    rof::v1::CreateRegionRequest req;
    req.set_tenant(tenant);
    req.set_name(name);
    req.set_size(size);
    req.set_access(7);
    for (const auto& f : fls) {
        *req.add_freelists() = f;
    }
    try {
        c.create_region(req);
    } catch (const rof::Error& e) {
        if (e.code() != rof::Code::already_exists) {  // another instance was quicker
            throw;
        }
    }
}

// Formats the table unless the index already says it is one of geometry @g: the free lists
// laid again (as CreateRegion does), the buckets and locks zeroed, the header last.
bool format_if_needed(const rof::RegionMapping& index, const rof::RegionMapping& heap,
                      const rofkv::Geometry& g) {
    const rofkv::IndexHeader want = rofkv::header_of(g);
    rofkv::IndexHeader have{};
    std::memcpy(&have, index.data(), sizeof(have));
    if (std::memcmp(&have, &want, sizeof(want)) == 0) {
        return false;
    }
    std::memset(index.data(), 0, g.index_len);
    auto h = reinterpret_cast<std::uint8_t*>(heap.data());
    std::span<std::uint8_t> hs(h, heap.size());
    if (!rof::prog::lay_freelist(hs, 0, rofkv::kSmallBlock, rofkv::kFreeListHeader,
                                 g.small_count) ||
        !rof::prog::lay_freelist(hs, g.large_at, g.large_block, g.large_at + rofkv::kFreeListHeader,
                                 g.large_count)) {
        throw rof::Error(rof::Code::internal, "region \"kv_heap\": the free lists do not fit");
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::memcpy(index.data(), &want, sizeof(want));
    return true;
}

// ---- the programs -----------------------------------------------------------------------------

rof::v1::Bind bind(const std::string& slot, const std::string& region,
                   std::optional<std::uint32_t> fl = std::nullopt) {
    rof::v1::Bind b;
    b.set_slot(slot);
    b.set_region(region);
    if (fl) {
        b.set_freelist(*fl);
    }
    return b;
}

// The program @name for @g: its assembly (.rofs text), or with @c_build its C build, compiled
// here (clang: $ROF_CLANG, else clang from PATH), translated and verified: an image.
rof::v1::ProgramSource program_for(const std::string& name, const rofkv::Geometry& g, bool c_build,
                                   const std::string& image_cache) {
    rof::v1::ProgramSource src;
    if (c_build) {
        const char* clang = std::getenv("ROF_CLANG");
        const auto image =
            rofkv::program_image_c(name, g, clang && *clang ? clang : "clang", image_cache);
        src.set_image(std::string(image.begin(), image.end()));
        src.set_file(name + ".c");
    } else {
        src.set_text(rofkv::program_source(name, g));
        src.set_file(name + ".rofs");
    }
    return src;
}

// Loads @src as @name.  A program of that name from an earlier start (the kvstore restarted,
// or was upgraded) is replaced in one step: sessions that invoke its tag keep being served,
// by the new image from then on.  The same image loaded already is kept as it is.
void load_program(rof::Client& c, const std::string& tenant, const std::string& name,
                  const rof::v1::ProgramSource& src) {
    std::vector<rof::v1::Bind> binds = {bind("kv_index", rofkv::kIndexRegion),
                                        bind("kv_heap", rofkv::kHeapRegion, 0)};
    if (name != "kv-get") {
        binds.push_back(bind("kv_large", rofkv::kHeapRegion, 1));
    } else {
        binds[1].clear_freelist();
    }

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
            for (const auto& b : binds) {
                *r.add_binds() = b;
            }
            c.replace_program(r);
            return;
        }
    }
    rof::v1::LoadProgramRequest l;
    l.set_tenant(tenant);
    l.set_name(name);
    *l.mutable_source() = src;
    for (const auto& b : binds) {
        *l.add_binds() = b;
    }
    c.load_program(l);
}

// ---- memcached's text protocol ----------------------------------------------------------------

// One session serves every connection, one request at a time.
struct Store {
    std::mutex mu;
    rofkv::KvClient* kv;
    std::uint64_t max_value;  // the table's largest value
};

class Conn {
  public:
    Conn(int fd, Store& st) : fd_(fd), st_(st) {}
    ~Conn() { ::close(fd_); }
    void serve();

  private:
    static constexpr std::size_t kMaxLine = 2048;
    // A line without its "\r\n" or "\n"; false at EOF or on a line too long (answered).
    bool line(std::string& out);
    bool bytes(std::size_t n, std::string& out);
    bool fill();
    void send(const std::string& s);
    bool command(const std::string& l);
    void retrieve(const std::vector<std::string>& w, bool cas);
    bool store(const std::vector<std::string>& w);
    void remove(const std::vector<std::string>& w);

    int fd_;
    Store& st_;
    std::string in_;
    bool dead_ = false;
};

bool Conn::fill() {
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd_, buf, sizeof(buf));
        if (n > 0) {
            in_.append(buf, static_cast<std::size_t>(n));
            return true;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return false;
    }
}

bool Conn::line(std::string& out) {
    for (;;) {
        const auto nl = in_.find('\n');
        if (nl != std::string::npos) {
            std::size_t end = nl;
            if (end > 0 && in_[end - 1] == '\r') {
                end--;
            }
            out.assign(in_, 0, end);
            in_.erase(0, nl + 1);
            return true;
        }
        if (in_.size() > kMaxLine) {
            send("CLIENT_ERROR line too long\r\n");
            return false;
        }
        if (!fill()) {
            return false;
        }
    }
}

bool Conn::bytes(std::size_t n, std::string& out) {
    while (in_.size() < n) {
        if (!fill()) {
            return false;
        }
    }
    out.assign(in_, 0, n);
    in_.erase(0, n);
    return true;
}

void Conn::send(const std::string& s) {
    std::size_t off = 0;
    while (!dead_ && off < s.size()) {
        const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            dead_ = true;
        } else {
            off += static_cast<std::size_t>(n);
        }
    }
}

std::vector<std::string> words(const std::string& l) {
    std::vector<std::string> w;
    std::size_t i = 0;
    while (i < l.size()) {
        while (i < l.size() && l[i] == ' ') {
            i++;
        }
        const std::size_t b = i;
        while (i < l.size() && l[i] != ' ') {
            i++;
        }
        if (i > b) {
            w.push_back(l.substr(b, i - b));
        }
    }
    return w;
}

bool number(const std::string& s, std::uint64_t max, std::uint64_t& out) {
    if (s.empty() || s.size() > 20) {
        return false;
    }
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    out = v;
    return true;
}

bool key_ok(const std::string& k) {
    if (k.empty() || k.size() > rofkv::kMaxKey) {
        return false;
    }
    for (unsigned char c : k) {
        if (c <= 32 || c == 127) {
            return false;
        }
    }
    return true;
}

void Conn::retrieve(const std::vector<std::string>& w, bool cas) {
    if (w.size() < 2) {
        send("ERROR\r\n");
        return;
    }
    std::string out, value;
    for (std::size_t i = 1; i < w.size(); i++) {
        if (!key_ok(w[i])) {
            send("CLIENT_ERROR bad command line format\r\n");
            return;
        }
        std::uint32_t flags = 0;
        rofkv::Status s;
        {
            std::lock_guard lk(st_.mu);
            s = st_.kv->get(w[i], value, &flags);
        }
        if (s == rofkv::Status::not_found) {
            continue;  // a miss: the key is not there
        }
        if (s != rofkv::Status::ok) {
            // busy: the value changed under every attempt (KvClient::get starts a GET again
            // when a value changes between its chunks).  Never a miss for a key that is there.
            send("SERVER_ERROR busy\r\n");
            return;
        }
        out += "VALUE " + w[i] + " " + std::to_string(flags) + " " + std::to_string(value.size());
        if (cas) {
            out += " 0";
        }
        out += "\r\n";
        out += value;
        out += "\r\n";
    }
    out += "END\r\n";
    send(out);
}

// set|add|replace KEY FLAGS EXPTIME BYTES [noreply]; false: the connection is to be closed.
bool Conn::store(const std::vector<std::string>& w) {
    std::uint64_t flags = 0, exptime = 0, len = 0;
    const bool noreply = w.size() == 6 && w[5] == "noreply";
    if ((w.size() != 5 && !noreply) || !number(w[2], 0xffffffff, flags) ||
        !number(w[3], 0xffffffff, exptime) || !number(w[4], 1u << 30, len)) {
        send("CLIENT_ERROR bad command line format\r\n");
        return true;
    }
    std::string data, end;
    if (!key_ok(w[1]) || len > st_.max_value) {
        // memcached swallows the data block of a value it refuses.
        if (!bytes(len + 2, data)) {
            return false;
        }
        send(key_ok(w[1]) ? "SERVER_ERROR object too large for cache\r\n"
                          : "CLIENT_ERROR bad command line format\r\n");
        return true;
    }
    if (!bytes(len, data) || !bytes(2, end)) {
        return false;  // the connection dropped mid-value: nothing is stored
    }
    if (end != "\r\n") {
        send("CLIENT_ERROR bad data chunk\r\n");
        return true;
    }
    rofkv::Status s;
    const char* ok = "STORED\r\n";
    {
        std::lock_guard lk(st_.mu);
        if (w[0] != "set") {  // add/replace: not atomic with other writers
            std::string old;
            const rofkv::Status g = st_.kv->get(w[1], old);
            if (g != rofkv::Status::ok && g != rofkv::Status::not_found) {
                if (!noreply) {
                    send("SERVER_ERROR busy\r\n");
                }
                return true;
            }
            const bool exists = g == rofkv::Status::ok;
            if (exists == (w[0] == "add")) {
                if (!noreply) {
                    send("NOT_STORED\r\n");
                }
                return true;
            }
        }
        s = st_.kv->set(w[1], data, static_cast<std::uint32_t>(flags));
    }
    if (s == rofkv::Status::full) {
        ok = "SERVER_ERROR out of memory storing object\r\n";
    } else if (s == rofkv::Status::busy) {
        ok = "SERVER_ERROR busy\r\n";
    } else if (s == rofkv::Status::too_big) {
        ok = "SERVER_ERROR object too large for cache\r\n";
    }
    if (!noreply) {
        send(ok);
    }
    return true;
}

void Conn::remove(const std::vector<std::string>& w) {
    const bool noreply = w.size() == 3 && w[2] == "noreply";
    if ((w.size() != 2 && !noreply) || !key_ok(w[1])) {
        send("CLIENT_ERROR bad command line format\r\n");
        return;
    }
    rofkv::Status s;
    {
        std::lock_guard lk(st_.mu);
        s = st_.kv->del(w[1]);
    }
    if (noreply) {
        return;
    }
    send(s == rofkv::Status::ok          ? "DELETED\r\n"
         : s == rofkv::Status::not_found ? "NOT_FOUND\r\n"
                                         : "SERVER_ERROR busy\r\n");
}

bool Conn::command(const std::string& l) {
    const std::vector<std::string> w = words(l);
    if (w.empty()) {
        send("ERROR\r\n");
        return true;
    }
    const std::string& c = w[0];
    if (c == "get" || c == "gets") {
        retrieve(w, c == "gets");
    } else if (c == "set" || c == "add" || c == "replace") {
        return store(w);
    } else if (c == "delete") {
        remove(w);
    } else if (c == "version") {
        send("VERSION rof-kvstore 1.0\r\n");
    } else if (c == "quit") {
        return false;
    } else {
        send("ERROR\r\n");
    }
    return true;
}

void Conn::serve() {
    std::string l;
    try {
        while (!dead_ && line(l) && command(l)) {
        }
    } catch (const rof::Error& e) {
        send(std::string("SERVER_ERROR ") + e.what() + "\r\n");
        std::fprintf(stderr, "rof-kvstore: %s\n", e.what());
    }
}

int listen_on(const std::string& addr) {
    const auto colon = addr.rfind(':');
    if (colon == std::string::npos) {
        usage("--listen: ADDR:PORT");
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    std::uint64_t port = 0;
    if (!number(addr.substr(colon + 1), 65535, port) ||
        inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
        usage("--listen: ADDR:PORT, an IPv4 address");
    }
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0 ||
        ::listen(fd, 128) < 0) {
        throw rof::Error(rof::Code::unavailable, "listen on " + addr + ": " + std::strerror(errno));
    }
    return fd;
}

// A connect that got no answer (a busy host, a lost CM message) or a device that is not up yet is
// worth another try with a fresh ticket; anything else (policy, quota) is final.
rof::Session open_session(rof::Client& client, const std::string& tenant,
                          std::chrono::milliseconds timeout) {
    constexpr int kAttempts = 5;
    rof::SessionOptions so = rofkv::KvClient::session_options(tenant);
    so.connect_timeout = timeout;
    for (int attempt = 1;; attempt++) {
        try {
            return rof::Session::open(client, so);
        } catch (const rof::Error& e) {
            const bool transient =
                e.code() == rof::Code::deadline_exceeded || e.code() == rof::Code::unavailable;
            if (!transient || attempt == kAttempts) {
                throw;
            }
            std::fprintf(stderr, "rof-kvstore: %s; trying again (%d of %d)\n", e.what(),
                         attempt + 1, kAttempts);
        }
    }
}

int run(const Options& o) {
    // SIGTERM and SIGINT are taken by sigwait() below: blocked before any thread (gRPC's, the
    // session's keepalive, the connections') starts, so that every thread inherits the mask.
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    const rofkv::Geometry g = rofkv::Geometry::for_items(o.items, o.max_value);
    // The programs first, before rofd is asked for anything: a C build that does not compile
    // stops the start here.  Once per start (clang takes seconds of an emulated guest's CPU).
    const char* const names[] = {"kv-get", "kv-put", "kv-del"};
    std::vector<rof::v1::ProgramSource> programs;
    for (const char* p : names) {
        programs.push_back(program_for(p, g, o.c_programs, o.image_cache));
    }
    if (o.prepare) {
        std::printf("rof-kvstore: kv-*.c for %llu items kept in %s\n",
                    static_cast<unsigned long long>(g.items), o.image_cache.c_str());
        return 0;
    }
    rof::ClientOptions copt;
    copt.target = o.socket;
    copt.deadline = o.timeout;
    rof::Client client(copt);

    ensure_region(client, o.tenant, rofkv::kIndexRegion, g.index_len, {});
    ensure_region(client, o.tenant, rofkv::kHeapRegion, g.heap_len,
                  {freelist(rofkv::kSmallBlock, 0, g.small_count),
                   freelist(g.large_block, g.large_at, g.large_count)});
    rof::RegionMapping index = rof::RegionMapping::map(client, o.tenant, rofkv::kIndexRegion, true);
    rof::RegionMapping heap = rof::RegionMapping::map(client, o.tenant, rofkv::kHeapRegion, true);
    const bool formatted = format_if_needed(index, heap, g);
    for (std::size_t i = 0; i < programs.size(); i++) {
        load_program(client, o.tenant, names[i], programs[i]);
    }

    rof::Session session = open_session(client, o.tenant, o.timeout);
    if (session.msg_size() < g.msg_size) {
        throw rof::Error(
            rof::Code::failed_precondition,
            "values of up to " + std::to_string(g.max_value) + " bytes need sessions of " +
                std::to_string(g.msg_size) + "-byte messages; the tenant's are " +
                std::to_string(session.msg_size()) + ": set [sessions] message_bytes = " +
                std::to_string(g.msg_size) + " in its policy");
    }
    rofkv::KvClient kv(session);
    Store store{{}, &kv, g.max_value};

    const int lfd = listen_on(o.listen);
    std::printf(
        "rof-kvstore: ready on %s, %llu items of up to %llu bytes, %s table, programs "
        "kv-*.%s\n",
        o.listen.c_str(), static_cast<unsigned long long>(g.items),
        static_cast<unsigned long long>(g.max_value), formatted ? "new" : "existing",
        o.c_programs ? "c" : "rofs");
    std::fflush(stdout);

    std::thread acceptor([lfd, &store] {
        for (;;) {
            const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) {
                    continue;
                }
                return;
            }
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            std::thread([fd, &store] { Conn(fd, store).serve(); }).detach();
        }
    });
    acceptor.detach();
    int sig = 0;
    sigwait(&term, &sig);
    // Connections may be mid-request on the session: leave without unwinding under them.
    std::fflush(stdout);
    std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rof-kvstore: %s\n", e.what());
        return 1;
    }
}
