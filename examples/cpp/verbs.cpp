// SPDX-License-Identifier: MIT
// examples/cpp/verbs.cpp - every data-path verb of librof, written only
// against the public headers rof/client.h and rof/session.h.
//
// What it does, in order:
//   1. connects to rofd (rof::Client) and opens a session on one of the
//      caller's regions (rof::Session::open: OpenSession, then the RDMA
//      connect with the ticket, then the welcome message's region table);
//   2. synchronous verbs: write, read, cas, faa, nop, and invoke of a
//      program by name when one is given;
//   3. asynchronous verbs: a batch of post_write/post_faa sent with one
//      flush(), then post_read, and completions collected with poll();
//   4. an event loop's way: completion_fd() under poll(2).
//
// Usage: rof-example-verbs REGION [PROGRAM] [--socket PATH]
//   REGION must be granted read, write and atomic, at least 4 KiB; PROGRAM
//   a loaded program of the caller's tenant taking no arguments.
// Build: CMake target rof-example-verbs (examples/CMakeLists.txt).
#include <poll.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rof/client.h"
#include "rof/session.h"

namespace {

std::span<std::byte> bytes(std::uint64_t& v) {
    return std::as_writable_bytes(std::span<std::uint64_t>(&v, 1));
}

int run(const std::string& region, const std::string& program, const std::string& socket) {
    rof::ClientOptions copt;
    copt.target = socket;  // empty: $ROF_SOCKET or /run/rof/rofd.sock
    rof::Client client(copt);

    rof::SessionOptions opt;
    opt.regions.push_back({region, 0});  // 0: every right the grant allows
    opt.max_transfer = 4096;
    opt.depth = 32;
    rof::Session s = rof::Session::open(client, opt);
    std::printf("session %u to %s: %u credits\n", s.id(), s.peer().c_str(), s.credits());
    for (const rof::GrantedRegion& g : s.regions()) {
        std::printf("  region %s: id %u, %llu bytes, access %u\n", g.name.c_str(), g.id,
                    static_cast<unsigned long long>(g.size), g.access);
    }

    // 2. Synchronous verbs: each returns when done, or throws rof::Error.
    std::uint64_t v = 100, r = 0;
    s.write(region, 0, bytes(v));
    s.read(region, 0, bytes(r));
    std::printf("write 100, read %llu\n", static_cast<unsigned long long>(r));
    std::uint64_t old = s.cas(region, 0, 100, 200);  // 100 -> 200
    std::printf("cas(100 -> 200) found %llu\n", static_cast<unsigned long long>(old));
    old = s.faa(region, 0, 5);  // 200 -> 205
    std::printf("faa(+5) found %llu\n", static_cast<unsigned long long>(old));
    s.nop();
    std::printf("nop: a round trip through rof.ko\n");
    if (!program.empty()) {
        std::array<std::byte, 992> resp{};
        rof::InvokeResult ir = s.invoke(program, {}, resp);
        std::printf("invoke %s: status %u, %zu response bytes, %u instructions\n", program.c_str(),
                    ir.prog_status, ir.len, ir.insns);
    }

    // 3. Asynchronous verbs: posts are batched; flush() rings the doorbell
    //    once; poll() returns completions (and flushes too).
    std::vector<std::uint64_t> vals(16), back(16);
    for (std::size_t i = 0; i < vals.size(); i++) {
        vals[i] = 1000 + i;
        s.post_write(region, 64 + 8 * i, bytes(vals[i]), i);
    }
    s.post_faa(region, 0, 1, 100);
    s.flush();
    std::array<rof::Completion, 8> done;
    std::size_t got = 0;
    while (got < vals.size() + 1) {
        std::size_t n = s.poll(done, std::chrono::seconds(5));
        if (n == 0) {
            std::fprintf(stderr, "no completion in 5 s\n");
            return 1;
        }
        for (std::size_t i = 0; i < n; i++) {
            if (done[i].code != rof::Code::ok) {
                std::fprintf(stderr, "op %llu: %s\n", static_cast<unsigned long long>(done[i].user),
                             std::string(done[i].error).c_str());
                return 1;
            }
            if (done[i].verb == rof::Verb::faa) {
                std::printf("async faa found %llu\n",
                            static_cast<unsigned long long>(done[i].value));
            }
        }
        got += n;
    }
    std::printf("16 async writes and a faa: one flush, %zu completions\n", got);

    // 4. completion_fd(): wait in poll(2) (or epoll) as an event loop
    //    would, then call Session::poll() until it returns 0.
    for (std::size_t i = 0; i < back.size(); i++) {
        s.post_read(region, 64 + 8 * i, bytes(back[i]), i);
    }
    // poll() until it returns 0 before waiting: it sends the batch, and
    // the empty poll re-arms the fd.
    got = 0;
    while (std::size_t n = s.poll(done)) {
        got += n;
    }
    while (got < back.size()) {
        pollfd p{s.completion_fd(), POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) {
            std::fprintf(stderr, "completion_fd: nothing in 5 s\n");
            return 1;
        }
        while (std::size_t n = s.poll(done)) {
            got += n;
        }
    }
    std::printf("16 async reads via completion_fd: %s\n", back == vals ? "match" : "MISMATCH");
    return back == vals ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    std::string region, program, socket;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--socket" && i + 1 < argc) {
            socket = argv[++i];
        } else if (region.empty()) {
            region = a;
        } else {
            program = a;
        }
    }
    if (region.empty()) {
        std::fprintf(stderr, "usage: rof-example-verbs REGION [PROGRAM] [--socket PATH]\n");
        return 2;
    }
    try {
        return run(region, program, socket);
    } catch (const rof::Error& e) {
        std::fprintf(stderr, "%s: %s\n", std::string(rof::code_name(e.code())).c_str(), e.what());
        return 1;
    }
}
