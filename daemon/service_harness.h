// SPDX-License-Identifier: MIT
// A whole rofd in the test process: a policy written to a TempDir, a
// Manager over a FakeModule, the gRPC Server, a UnixListener and an accept
// loop (listener + audit ring + a stop eventfd), and clients that connect
// as any uid/gid.
//
// Callers with other identities: rofd reads SO_PEERCRED and SO_PEERGROUPS
// of the connection, which the kernel takes from the credentials of the
// thread that calls connect(2).  connect_as() connects from a short-lived
// thread that first drops to the wanted uid, gid and groups with raw
// syscalls (glibc's wrappers would change every thread of the process), and
// hands the connected fd to gRPC (CreateInsecureChannelFromFd).  So every
// caller is a real connection with real credentials, with no fork: gRPC
// does not survive fork() in a child that then makes calls.
#pragma once

#include <fcntl.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "audit_drain.h"
#include "audit_hub.h"
#include "fake_module.h"
#include "listener.h"
#include "manager.h"
#include "server.h"
#include "shared_module.h"
#include "stubs.h"
#include "test_util.h"
#include "unix_addr.h"

namespace rofd::test {

namespace v1 = rof::v1;

// Who connects.
struct Who {
    std::string label;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary groups
};

// A unix connection to @path made with @who's credentials.  Throws
// std::system_error when the drop or the connect fails.
inline UniqueFd connect_as(const std::string& path, const Who& who) {
    const rof::internal::UnixAddr addr(path);
    if (!addr.ok()) {
        throw std::system_error(path.empty() ? EINVAL : ENAMETOOLONG, std::generic_category(),
                                addr.error());
    }
    int fd = -1;
    int err = 0;
    const char* step = "";
    std::thread t([&] {
        // This thread only: raw syscalls, not setresuid(3).  The thread ends
        // with the dropped credentials, like a process that dropped them.
        if (::syscall(SYS_setgroups, who.groups.size(), who.groups.data()) < 0) {
            err = errno, step = "setgroups";
            return;
        }
        if (::syscall(SYS_setresgid, who.gid, who.gid, who.gid) < 0) {
            err = errno, step = "setresgid";
            return;
        }
        if (::syscall(SYS_setresuid, who.uid, who.uid, who.uid) < 0) {
            err = errno, step = "setresuid";
            return;
        }
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno, step = "socket";
            return;
        }
        if (addr.connect(fd) < 0) {
            err = errno, step = "connect";
            ::close(fd);
            fd = -1;
        }
    });
    t.join();
    if (fd < 0) {
        throw std::system_error(err, std::generic_category(),
                                std::string(step) + " as " + who.label + " to " + path);
    }
    return UniqueFd(fd);
}

// Every rof.v1 stub over one channel.
struct Client : rof::internal::Stubs {
    explicit Client(const std::shared_ptr<grpc::Channel>& ch) : Stubs(ch), channel(ch) {}

    std::shared_ptr<grpc::Channel> channel;
};

// How long any one wait of a test may take before it counts as a hang.
inline constexpr std::chrono::seconds wait_limit{20};

// One unary call with a deadline: rpc(stub->Method, req, &resp).
template <typename Stub, typename Req, typename Resp>
grpc::Status rpc(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                 const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + wait_limit);
    return (stub.*method)(&ctx, req, resp);
}

// Waits until @pred holds, checking it as often as the scheduler lets us;
// false after wait_limit.  For state with no event to wait on (the audit
// hub's subscriber count).
template <typename Pred>
bool wait_until(Pred pred) {
    const auto end = std::chrono::steady_clock::now() + wait_limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > end) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

// Whether the peer of @fd (a raw connection to rofd) closes it: reads and
// discards what rofd sends (its SETTINGS, pings, GOAWAY) until end of file
// or ECONNRESET.  False when @fd stays open for 60 s: a bound generous
// enough for any timeout under test, not a timing assertion.
inline bool wait_closed(int fd) {
    constexpr int bound_ms = 60000;
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const int n = ::poll(&p, 1, bound_ms);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        char buf[4096];
        const ssize_t got = ::read(fd, buf, sizeof(buf));
        if (got == 0 || (got < 0 && errno == ECONNRESET)) {
            return true;
        }
        if (got < 0 && errno != EINTR && errno != EAGAIN) {
            return false;
        }
    }
}

// A TailAudit stream read through gRPC's callback API: records queue up as
// they arrive; next() and status() block on them.
class TailStream final : public grpc::ClientReadReactor<v1::AuditRecord> {
  public:
    TailStream(v1::Audit::Stub& stub, v1::TailAuditRequest req) : req_(std::move(req)) {
        stub.async()->TailAudit(&ctx_, &req_, this);
        StartRead(&rec_);
        StartCall();
    }
    ~TailStream() override {
        ctx_.TryCancel();
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return done_; });
    }
    TailStream(const TailStream&) = delete;
    TailStream& operator=(const TailStream&) = delete;

    void OnReadDone(bool ok) override {
        if (!ok) {
            return;  // OnDone follows
        }
        {
            std::lock_guard lock(mu_);
            records_.push_back(rec_);
        }
        cv_.notify_all();
        StartRead(&rec_);
    }
    void OnDone(const grpc::Status& s) override {
        std::lock_guard lock(mu_);
        status_ = s;
        done_ = true;
        cv_.notify_all();
    }

    // The next record, or std::nullopt when the stream ended (or after
    // wait_limit).
    std::optional<v1::AuditRecord> next() {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, wait_limit, [this] { return !records_.empty() || done_; });
        if (records_.empty()) {
            return std::nullopt;
        }
        auto r = std::move(records_.front());
        records_.pop_front();
        return r;
    }
    bool done() {
        std::lock_guard lock(mu_);
        return done_;
    }
    // The stream's status once it ended (after wait_limit: DEADLINE_EXCEEDED
    // of our own).
    grpc::Status status() {
        std::unique_lock lock(mu_);
        if (!cv_.wait_for(lock, wait_limit, [this] { return done_; })) {
            return {grpc::StatusCode::DEADLINE_EXCEEDED, "test: the stream did not end"};
        }
        return status_;
    }
    void cancel() { ctx_.TryCancel(); }

  private:
    grpc::ClientContext ctx_;
    const v1::TailAuditRequest req_;
    v1::AuditRecord rec_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<v1::AuditRecord> records_;
    bool done_ = false;
    grpc::Status status_;
};

class ServiceHarness {
  public:
    using Files = std::vector<std::pair<std::string, std::string>>;  // tenant name, text

    // Writes @daemon_toml and @tenants, starts the Manager over a
    // FakeModule, the server and the accept loop; health goes SERVING
    // unless @serve is false.  The socket is @socket, else one in the
    // harness's own directory.
    ServiceHarness(const std::string& daemon_toml, const Files& tenants, bool serve = true,
                   const std::string& socket = {}) {
        std::filesystem::permissions(dir_.file(""), std::filesystem::perms(0755));
        tenants_dir_ = dir_.file("tenants.d");
        std::filesystem::create_directory(tenants_dir_);
        std::filesystem::permissions(tenants_dir_, std::filesystem::perms(0755));
        write(dir_.file("rofd.toml"), daemon_toml);
        for (const auto& [name, text] : tenants) {
            write_tenant(name, text);
        }
        socket_ = socket.empty() ? dir_.file("rofd.sock") : socket;
        up(serve);
    }

    ~ServiceHarness() { down(); }
    ServiceHarness(const ServiceHarness&) = delete;
    ServiceHarness& operator=(const ServiceHarness&) = delete;

    FakeModule& fake() { return *fake_; }
    // The current Manager's view of the module: crash_after() on it.
    SharedModule& module() { return *module_; }
    Manager& manager() { return *manager_; }
    Server& server() { return *server_; }
    const std::string& socket() const { return socket_; }
    std::string tenant_file(const std::string& name) const {
        return tenants_dir_ + "/" + name + ".toml";
    }
    void write_tenant(const std::string& name, const std::string& text) {
        write(tenant_file(name), text);
    }

    // A new connection as @who.
    std::shared_ptr<grpc::Channel> channel(const Who& who) const {
        UniqueFd fd = connect_as(socket_, who);
        return grpc::CreateInsecureChannelFromFd(who.label, fd.release());
    }
    std::unique_ptr<Client> client(const Who& who) const {
        return std::make_unique<Client>(channel(who));
    }

    // rofd restarts: the server, the accept loop and the Manager go, and a
    // new Manager starts over the same state directory and the same
    // module, reconciling the two as rofd's start does.  Channels made
    // before it are left talking to a closed connection.
    void restart() {
        down();
        up(true);
    }

  private:
    void up(bool serve) {
        auto module = std::make_unique<SharedModule>(fake_);
        module_ = module.get();
        manager_ = std::make_unique<Manager>(
            ManagerOptions{dir_.file("rofd.toml"), tenants_dir_, dir_.file(""), {}},
            std::move(module));
        manager_->start();
        server_ = std::make_unique<Server>(*manager_);
        listener_.emplace(UnixListener::bind(socket_));
        // The callers we drop to must reach the socket.
        std::filesystem::permissions(socket_, std::filesystem::perms(0777));
        stop_.reset(::eventfd(0, EFD_CLOEXEC));
        if (!stop_) {
            throw std::system_error(errno, std::generic_category(), "eventfd");
        }
        loop_ = std::thread([this] { run(); });
        if (serve) {
            server_->set_serving(true);
        }
    }

    void down() {
        const std::uint64_t one = 1;
        if (::write(stop_.get(), &one, sizeof(one)) != sizeof(one)) {
            std::abort();  // the loop would never end
        }
        loop_.join();
        server_.reset();  // cancels streams still open
        manager_->stop();
        manager_.reset();
        listener_.reset();
    }

    static void write(const std::string& path, const std::string& text) {
        std::ofstream out(path, std::ios::trunc);
        out << text;
        if (!out.flush()) {
            throw std::runtime_error(path + ": cannot write");
        }
    }

    // The accept loop: as rofd's main loop, on poll(2).
    void run() {
        pollfd fds[3] = {{stop_.get(), POLLIN, 0},
                         {listener_->fd(), POLLIN, 0},
                         {manager_->audit().fd(), POLLIN, 0}};
        for (;;) {
            if (::poll(fds, 3, -1) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                std::abort();
            }
            if (fds[0].revents != 0) {
                return;
            }
            if ((fds[1].revents & POLLIN) != 0) {
                while (server_->accept(*listener_)) {
                }
            }
            if ((fds[2].revents & POLLIN) != 0) {
                manager_->audit().drain();
            }
        }
    }

    TempDir dir_;
    std::string tenants_dir_;
    std::string socket_;
    std::shared_ptr<FakeModule> fake_ = std::make_shared<FakeModule>();
    SharedModule* module_ = nullptr;  // owned by manager_
    std::unique_ptr<Manager> manager_;
    std::unique_ptr<Server> server_;
    std::optional<UnixListener> listener_;
    UniqueFd stop_;
    std::thread loop_;
};

}  // namespace rofd::test
