// SPDX-License-Identifier: MIT
// rof-kv: the kvstore's small command line client (README.md), by offload only: every command
// is an INVOKE of kv-get, kv-put or kv-del on a session of the kvstore's tenant.
//
//   rof-kv [--socket PATH] [--tenant NAME] get KEY        the value, as is, on stdout
//   rof-kv ... set KEY VALUE
//   rof-kv ... del KEY
//   rof-kv ... race --sessions N --rounds R KEY
//       N sessions in N threads PUT KEY R times each with distinct values; then checks that the
//       final value is one of them and that the heap's free blocks are what they were plus the
//       one value now stored (rofd's count of each free list, which walks the chains).
// Exit status: 0 done, 1 not found (get, del) or a failed check, 2 usage, 3 busy/full/too big,
// 4 an error (rofd, the session).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kv_client.h"
#include "kv_layout.h"
#include "rof/client.h"
#include "rof/session.h"

namespace {

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "rof-kv: %s\nusage: rof-kv [--socket PATH] [--tenant NAME] [--connect-timeout MS] "
                 "get KEY | set KEY VALUE | del KEY | race --sessions N --rounds R KEY\n",
                 why);
    std::exit(2);
}

int status_exit(const std::string& what, rofkv::Status s) {
    if (s == rofkv::Status::ok) {
        return 0;
    }
    std::fprintf(stderr, "rof-kv: %s: %s\n", what.c_str(), rofkv::status_name(s));
    return s == rofkv::Status::not_found ? 1 : 3;
}

// The free blocks of kv_heap's two lists, as rofd counts them.
std::vector<std::uint32_t> free_counts(rof::Client& c, const std::string& tenant) {
    rof::v1::GetRegionRequest g;
    g.set_tenant(tenant);
    g.set_name(rofkv::kHeapRegion);
    const rof::v1::Region r = c.get_region(g);
    std::vector<std::uint32_t> out;
    for (const auto& f : r.freelists()) {
        if (f.corrupt()) {
            throw rof::Error(rof::Code::data_loss, "kv_heap: a free list is corrupt");
        }
        out.push_back(f.free());
    }
    return out;
}

std::string race_value(unsigned s, unsigned r, unsigned rounds) {
    // Distinct, self-describing, of sizes that use both block classes.
    std::string v = "s" + std::to_string(s) + "r" + std::to_string(r) + ":";
    const std::size_t len = v.size() + ((s * rounds + r) * 37) % 600;
    while (v.size() < len) {
        v += static_cast<char>('a' + v.size() % 26);
    }
    return v;
}

int race(rof::Client& c, const std::string& tenant, unsigned n, unsigned rounds,
         const std::string& key) {
    std::vector<rof::Session> sessions;
    for (unsigned i = 0; i < n; i++) {
        sessions.push_back(rof::Session::open(c, rofkv::KvClient::session_options(tenant)));
    }
    rofkv::KvClient first(sessions[0]);
    first.del(key);
    const std::vector<std::uint32_t> before = free_counts(c, tenant);
    std::atomic<unsigned> busy{0}, failed{0};
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < n; i++) {
        threads.emplace_back([&, i] {
            try {
                rofkv::KvClient kv(sessions[i]);
                for (unsigned r = 0; r < rounds; r++) {
                    rofkv::Status s;
                    while ((s = kv.set(key, race_value(i, r, rounds))) == rofkv::Status::busy) {
                        busy++;
                    }
                    if (s != rofkv::Status::ok) {
                        std::fprintf(stderr, "rof-kv: race: set: %s\n", rofkv::status_name(s));
                        failed++;
                    }
                }
            } catch (const rof::Error& e) {
                std::fprintf(stderr, "rof-kv: race: %s\n", e.what());
                failed++;
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    std::string v;
    const rofkv::Status s = first.get(key, v);
    bool ok = failed == 0 && s == rofkv::Status::ok;
    bool known = false;
    for (unsigned i = 0; ok && i < n && !known; i++) {
        for (unsigned r = 0; r < rounds && !known; r++) {
            known = v == race_value(i, r, rounds);
        }
    }
    const std::vector<std::uint32_t> after = free_counts(c, tenant);
    const std::size_t rec = 16 + ((key.size() + 7) & ~std::size_t{7}) + v.size();
    std::vector<std::uint32_t> want = before;
    if (!want.empty()) {
        want[rec <= rofkv::kSmallBlock || want.size() < 2 ? 0 : 1]--;
    }
    std::printf(
        "race: %u sessions x %u rounds, %u busy retries; final value %s (%zu bytes); "
        "free blocks",
        n, rounds, busy.load(), known ? "is one of the writes" : "is NOT one of the writes",
        v.size());
    for (std::size_t i = 0; i < after.size(); i++) {
        std::printf(" %u (was %u)", after[i], before[i]);
    }
    std::printf("\n");
    if (!ok || !known || after != want) {
        std::printf("race: FAILED\n");
        return 1;
    }
    std::printf("race: ok\n");
    return 0;
}

int run(int argc, char** argv) {
    std::string socket, tenant;
    std::vector<std::string> args;
    unsigned sessions = 4, rounds = 100, connect_ms = 10000;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage(("missing value of " + a).c_str());
            }
            return argv[++i];
        };
        if (a == "--socket") {
            socket = value();
        } else if (a == "--tenant") {
            tenant = value();
        } else if (a == "--sessions") {
            sessions = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
        } else if (a == "--rounds") {
            rounds = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
        } else if (a == "--connect-timeout") {
            connect_ms = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
        } else if (a == "-h" || a == "--help") {
            usage("the kvstore by offload");
        } else {
            args.push_back(a);
        }
    }
    if (args.empty()) {
        usage("a command is needed");
    }
    const std::string& cmd = args[0];
    const std::size_t want = cmd == "set" ? 3 : 2;
    if ((cmd != "get" && cmd != "set" && cmd != "del" && cmd != "race") || args.size() != want) {
        usage(("bad command line: " + cmd).c_str());
    }
    if (cmd == "race" && (sessions < 1 || sessions > 64 || rounds < 1)) {
        usage("--sessions 1..64, --rounds >= 1");
    }
    if (connect_ms < 1 || connect_ms > 600000) {
        usage("--connect-timeout 1..600000 ms");
    }

    rof::ClientOptions copt;
    copt.target = socket;
    rof::Client client(copt);
    if (cmd == "race") {
        return race(client, tenant, sessions, rounds, args[1]);
    }
    rof::SessionOptions so = rofkv::KvClient::session_options(tenant);
    so.connect_timeout = std::chrono::milliseconds(connect_ms);
    rof::Session s = rof::Session::open(client, so);
    rofkv::KvClient kv(s);
    if (cmd == "get") {
        std::string v;
        // A value longer than one response is read in chunks; one that changes between them is
        // read again from its start (KvClient::get), so this is one whole value or nothing.
        const rofkv::Status st = kv.get(args[1], v);
        if (st == rofkv::Status::ok) {
            std::fwrite(v.data(), 1, v.size(), stdout);
        } else if (st == rofkv::Status::busy) {
            std::fprintf(stderr,
                         "rof-kv: get %s: busy: the value changed under %u reads in a row\n",
                         args[1].c_str(), rofkv::kGetAttempts);
            return 3;
        }
        return status_exit("get " + args[1], st);
    }
    if (cmd == "set") {
        return status_exit("set " + args[1], kv.set(args[1], args[2]));
    }
    return status_exit("del " + args[1], kv.del(args[1]));
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rof-kv: %s\n", e.what());
        return 4;
    }
}
