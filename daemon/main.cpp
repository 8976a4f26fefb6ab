// SPDX-License-Identifier: MIT
// rofd: the rof control-plane daemon.
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <csignal>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "kmod.h"
#include "listener.h"
#include "log.h"
#include "server.h"
#include "uapi/rof.h"

namespace {

constexpr const char* default_socket = "/run/rof/rofd.sock";
constexpr auto shutdown_grace = std::chrono::seconds(5);

enum ExitCode { exit_ok = 0, exit_error = 1, exit_usage = 2 };

struct Options {
    std::string socket = default_socket;
    bool socket_given = false;
    std::string device = ROF_DEVICE_PATH;
};

std::string open_hint(int err) {
    switch (err) {
        case ENOENT:
        case ENODEV:
        case ENXIO:
            return " (rof.ko not loaded? modprobe rof)";
        case EACCES:
        case EPERM:
            return " (rofd needs read-write access to it; run it as root)";
        default:
            return {};
    }
}

std::string socket_name(int fd) {
    sockaddr_un addr{};
    socklen_t len = sizeof(addr);

    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0 ||
        len <= offsetof(sockaddr_un, sun_path) || addr.sun_path[0] == '\0') {
        return "fd " + std::to_string(fd);
    }
    return std::string(addr.sun_path, strnlen(addr.sun_path, sizeof(addr.sun_path)));
}

// systemd socket activation when started by rofd.socket, else our own socket.
rofd::UnixListener make_listener(const Options& opt) {
    const int n = sd_listen_fds(1);

    if (n < 0) {
        throw std::system_error(-n, std::generic_category(), "sd_listen_fds");
    }
    if (n == 0) {
        return rofd::UnixListener::bind(opt.socket);
    }
    if (n > 1) {
        throw std::runtime_error("socket activation passed " + std::to_string(n) +
                                 " sockets; rofd takes one unix stream socket");
    }

    const int fd = SD_LISTEN_FDS_START;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
        throw std::runtime_error("socket activation passed fd " + std::to_string(fd) +
                                 ", which is not a listening unix stream socket");
    }
    if (opt.socket_given) {
        rofd::log::info("socket activated: ignoring --socket ", opt.socket);
    }
    return rofd::UnixListener::adopt(fd, socket_name(fd));
}

int run(const Options& opt, int signal_fd) {
    std::optional<rofd::Kmod> kmod;
    try {
        kmod.emplace(opt.device);
    } catch (const rofd::KmodError& e) {
        rofd::log::error(e.what(), open_hint(e.code().value()));
        return exit_error;
    }

    const rofd::ModuleVersion v = kmod->version();
    // Same major, and at least the minor this rofd was built against: the
    // commands it uses exist and mean what it expects.
    if (v.abi_major != ROF_ABI_MAJOR || v.abi_minor < ROF_ABI_MINOR) {
        rofd::log::error(opt.device, ": rof.ko ", v.version, " speaks ABI ", v.abi_major, ".",
                         v.abi_minor, ", rofd ", ROF_VERSION, " needs ABI ", ROF_ABI_MAJOR, ".",
                         ROF_ABI_MINOR, " or a later minor; install matching versions");
        return exit_error;
    }

    const rofd::UnixListener listener = make_listener(opt);
    rofd::Server server(*kmod);
    server.set_serving(true);

    const std::string status =
        rofd::log::concat("serving on ", listener.description(), " (rof.ko ", v.version, ", ABI ",
                          v.abi_major, ".", v.abi_minor, ")");
    rofd::log::info(status);
    sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());

    server.run(listener, signal_fd);

    signalfd_siginfo si{};
    const char* sig = nullptr;
    if (::read(signal_fd, &si, sizeof(si)) == sizeof(si)) {
        sig = sigabbrev_np(static_cast<int>(si.ssi_signo));
    }
    rofd::log::info(sig != nullptr ? "SIG" : "", sig != nullptr ? sig : "signal",
                    ": shutting down");
    sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
    server.shutdown(shutdown_grace);
    return exit_ok;
}

int rofd_main(int argc, char** argv) {
    // Blocked before gRPC starts any thread, so SIGTERM and SIGINT are only
    // ever seen through the signalfd, by the main loop.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    Options opt;
    bool verbose = false;
    CLI::App app{"rofd - the rof control-plane daemon", "rofd"};
    app.add_option("--socket", opt.socket, "unix socket to serve gRPC on")
        ->default_str(default_socket);
    app.add_option("--device", opt.device, "the rof.ko device")->default_str(ROF_DEVICE_PATH);
    app.add_flag("-v,--verbose", verbose, "log debug messages (connections, peers, calls)");
    app.set_version_flag("--version", ROF_VERSION);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return std::string("rofd: ") + e.what() + "\nRun 'rofd --help' for usage.\n";
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? exit_ok : exit_usage;
    }
    opt.socket_given = app.count("--socket") > 0;

    rofd::log::set_verbose(verbose);
    rofd::log::capture_grpc_logs();

    const rofd::UniqueFd signal_fd(::signalfd(-1, &stop_signals, SFD_CLOEXEC));
    if (!signal_fd) {
        rofd::log::error("signalfd: ", std::generic_category().message(errno));
        return exit_error;
    }

    try {
        return run(opt, signal_fd.get());
    } catch (const std::exception& e) {
        rofd::log::error(e.what());
        return exit_error;
    }
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return rofd_main(argc, argv);
    } catch (const std::exception& e) {
        rofd::log::error(e.what());
    } catch (...) {
        rofd::log::error("unexpected exception");
    }
    return exit_error;
}
