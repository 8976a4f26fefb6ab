// rof-bench: runs the benchmark cases (bench.h, docs/performance.md) and
// writes one JSON document with every figure, its baseline and the ratio.
#include <sys/resource.h>
#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bench.h"

namespace {

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::set<std::string> split_ids(const std::vector<std::string>& in) {
    std::set<std::string> out;
    for (const auto& s : in) {
        std::stringstream ss(s);
        std::string id;
        while (std::getline(ss, id, ',')) {
            if (!id.empty()) {
                out.insert(id);
            }
        }
    }
    return out;
}

}  // namespace

static int run(int argc, char** argv) {
    rofbench::Options opt;
    std::vector<std::string> only, within, sets;
    std::string out = "-", label;
    bool list = false;

    CLI::App app{"rof-bench: rof's data path against raw verbs, RPC and memcached, in one run"};
    app.add_option("-c,--case", only, "cases to run (B0..B8, comma-separated; default all)");
    app.add_option("--within", within,
                   "of the cases asked for, run only these (e.g. a second pass of the data-path "
                   "cases in another module mode; none left: an empty report)");
    app.add_option("--label", label,
                   "a pass's name: every case's id gets '@LABEL', its series' names 'LABEL_' "
                   "and their titles ' (LABEL)', so that two passes' reports merge");
    app.add_flag("--list", list, "list the cases that would run (all: every case) and exit");
    app.add_flag("--smoke", opt.smoke,
                 "a seconds-long run that keeps the tool working; its figures mean nothing");
    app.add_option("--seconds", opt.seconds, "measured seconds per point")
        ->check(CLI::PositiveNumber);
    app.add_option("--warmup", opt.warmup, "warm-up seconds per point")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--reps", opt.reps, "repetitions per point")->check(CLI::PositiveNumber);
    app.add_option("--rofd", opt.rofd, "rofd's control address")->capture_default_str();
    app.add_option("--server", opt.server, "rof.ko's session address (the RDMA device's IP)");
    app.add_option("--raw-server", opt.raw_server, "rof-bench-server's rdma_cm address, host:port");
    app.add_option("--memcached", opt.memcached, "stock memcached, host:port");
    app.add_option("--set", sets, "case parameter key=value (see docs/performance.md)");
    app.add_option("-o,--out", out, "where the JSON goes ('-': stdout)")->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    for (const auto& kv : sets) {
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "rof-bench: --set %s: want key=value\n", kv.c_str());
            return 2;
        }
        opt.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (opt.smoke) {
        opt.seconds = std::min(opt.seconds, 0.3);
        opt.warmup = std::min(opt.warmup, 0.1);
        opt.reps = 1;
    }
    std::set<std::string> want = split_ids(only);
    const std::set<std::string> among = split_ids(within);
    if (label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
        std::fprintf(stderr, "rof-bench: --label %s: want lowercase letters, digits, _ and -\n",
                     label.c_str());
        return 2;
    }
    for (const auto& ids : {want, among}) {
        for (const auto& id : ids) {
            bool known = false;
            for (const auto& c : rofbench::cases()) {
                known = known || c.id == id;
            }
            if (!known) {
                std::fprintf(stderr, "rof-bench: no case %s (--list shows them)\n", id.c_str());
                return 2;
            }
        }
    }

    auto runs = [&](const std::string& id) {
        return (want.empty() || want.count(id)) && (among.empty() || among.count(id));
    };
    if (list) {
        for (const auto& c : rofbench::cases()) {
            if (runs(c.id)) {
                std::printf("%-4s %s\n", c.id.c_str(), c.title.c_str());
            }
        }
        return 0;
    }

    // B6 opens 1024 sessions, a few descriptors each: as many as allowed.
    rlimit nofile{};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }

    utsname u{};
    uname(&u);
    nlohmann::json doc = {{"tool", "rof-bench"},  {"version", ROF_VERSION},
                          {"started", utc_now()}, {"kernel", u.release},
                          {"smoke", opt.smoke},   {"seconds", opt.seconds},
                          {"warmup", opt.warmup}, {"reps", opt.reps},
                          {"params", opt.params}, {"cases", nlohmann::json::array()}};
    if (!label.empty()) {
        doc["label"] = label;
    }
    int failed = 0;
    for (const auto& c : rofbench::cases()) {
        if (!runs(c.id)) {
            continue;
        }
        rofbench::progress(c.id, "start: " + c.title);
        rofbench::CaseReport rep(c.id, c.title);
        rofbench::Env env{opt, rep};
        std::uint64_t t0 = rofbench::now_ns();
        nlohmann::json j;
        try {
            c.fn(env);
            j = rep.json();
        } catch (const std::exception& e) {
            failed++;
            j = rep.json();
            j["error"] = e.what();
            rofbench::progress(c.id, std::string("FAILED: ") + e.what());
        }
        j["seconds"] = double(rofbench::now_ns() - t0) / 1e9;
        if (!label.empty()) {
            j["id"] = c.id + "@" + label;
            for (auto& sr : j["series"]) {
                sr["name"] = label + "_" + sr["name"].get<std::string>();
                sr["title"] = sr["title"].get<std::string>() + " (" + label + ")";
            }
        }
        rofbench::progress(c.id, "done");
        doc["cases"].push_back(std::move(j));
    }
    doc["finished"] = utc_now();
    doc["failed_cases"] = failed;

    std::string text = doc.dump(2) + "\n";
    if (out == "-") {
        std::cout << text;
    } else {
        std::ofstream f(out + ".tmp");
        f << text;
        f.close();
        if (!f || std::rename((out + ".tmp").c_str(), out.c_str()) != 0) {
            std::fprintf(stderr, "rof-bench: cannot write %s\n", out.c_str());
            return 1;
        }
    }
    return failed ? 1 : 0;
}

// What escapes run() is reported, not left to std::terminate.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", "rof-bench", e.what());
        return 1;
    }
}
