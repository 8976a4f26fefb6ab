// SPDX-License-Identifier: MIT
// The command line: parsing, prefix matching, usage errors, exit statuses,
// and the commands that need no rofd (policy check, prog test, tenant
// create/delete --no-reload), run in-process through rofctl::run_command().
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "rof/prog/bpf.h"
#include "rofctl.h"
#include "rofctl_testing.h"
#include "test_temp_dir.h"

namespace {

namespace fs = std::filesystem;
using rofctl::Json;
using rofctl::testing::Result;
using rofctl::testing::rofctl;
using rofctl::testing::src_dir;

// A fresh, empty directory: a socket path where nothing listens, files.
class TempDir : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp_.emplace("rofctl");
        dir_ = tmp_->path();
        socket_ = (dir_ / "rofd.sock").string();
    }
    void TearDown() override { tmp_.reset(); }
    void write(const fs::path& p, const std::string& text) {
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
    }

    std::optional<rof::test::TempDir> tmp_;
    fs::path dir_;
    std::string socket_;
};

std::vector<std::string> expand(std::vector<std::string> args) {
    CLI::App app;
    rofctl::Globals g;
    rofctl::Handler h;
    rofctl::build_app(app, g, h);
    return rofctl::expand_prefixes(app, std::move(args));
}

using Args = std::vector<std::string>;

TEST(Prefixes, UniquePrefixesAreSpelledOut) {
    EXPECT_EQ(expand({"t", "l"}), (Args{"tenant", "list"}));
    EXPECT_EQ(expand({"reg", "cr", "log", "--size", "64KiB"}),
              (Args{"region", "create", "log", "--size", "64KiB"}));
    // Options and their values are skipped, flags are not values.
    EXPECT_EQ(expand({"--socket", "t", "-j", "pr", "ve", "v"}),
              (Args{"--socket", "t", "-j", "prog", "verify", "v"}));
    EXPECT_EQ(expand({"--timeout=5", "h"}), (Args{"--timeout=5", "health"}));
    // An exact name wins over being a prefix of another.
    EXPECT_EQ(expand({"stats"}), (Args{"stats"}));
    EXPECT_EQ(expand({"status"}), (Args{"status"}));
    // Positionals after the verb are left alone, even if they look like verbs.
    EXPECT_EQ(expand({"tenant", "show", "l"}), (Args{"tenant", "show", "l"}));
    // Unknown words are left for CLI11 to name.
    EXPECT_EQ(expand({"frob", "x"}), (Args{"frob", "x"}));
}

TEST(Prefixes, AmbiguousPrefixNamesTheCandidates) {
    try {
        expand({"s"});
        FAIL() << "no error";
    } catch (const rofctl::UsageError& e) {
        EXPECT_STREQ(e.what(), "ambiguous object \"s\": session, status, stats");
    }
    EXPECT_THROW(expand({"stat"}), rofctl::UsageError);
    try {
        expand({"region", "m"});  // map only: fine
        expand({"prog", "u"});    // unload only: fine
        expand({"session", "c"});
        expand({"prog", "t"});
    } catch (const rofctl::UsageError& e) {
        FAIL() << e.what();
    }
    const Result r = rofctl({"t", "s", "x", "-j"});  // fine too: tenant show
    EXPECT_NE(r.rc, rofctl::exit_usage);
    const Result amb = rofctl({"s"});
    EXPECT_EQ(amb.rc, rofctl::exit_usage);
    EXPECT_EQ(amb.err,
              "rofctl: ambiguous object \"s\": session, status, stats\n"
              "Run 'rofctl --help' for usage.\n");
}

TEST(Usage, NoObjectOrVerbListsTheChoices) {
    Result r = rofctl({});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err,
              "rofctl: no object given (objects: tenant, policy, region, prog, session, audit, "
              "status, health, stats, top, batch)\nRun 'rofctl --help' for usage.\n");
    r = rofctl({"tenant"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_EQ(r.err,
              "rofctl: no verb given for tenant (verbs: list, show, create, delete, destroy)\n"
              "Run 'rofctl tenant --help' for usage.\n");
}

TEST(Usage, UnknownObjectVerbOptionAndStrayArgumentsAreNamed) {
    Result r = rofctl({"frobnicate"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_TRUE(r.err.starts_with("rofctl: unknown object \"frobnicate\" (objects: tenant,"))
        << r.err;
    r = rofctl({"region", "frob"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_TRUE(
        r.err.starts_with("rofctl: unknown verb \"frob\" for region (verbs: list, show, "
                          "create, delete, token)"))
        << r.err;
    r = rofctl({"status", "--bogus"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
    r = rofctl({"status", "extra"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("extra"), std::string::npos) << r.err;
    r = rofctl({"status", "--socket"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("--socket"), std::string::npos) << r.err;
    r = rofctl({"region", "create", "x", "--size", "1MiB"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("--access is required"), std::string::npos) << r.err;
    r = rofctl({"region", "create", "x", "--size", "1MiB", "--access", "rx"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("access \"rx\""), std::string::npos) << r.err;
    r = rofctl({"stats", "-o", "xml"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    r = rofctl({"status", "--connect", "h:1", "--socket", "/x"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_NE(r.err.find("exclude each other"), std::string::npos) << r.err;
}

TEST(Usage, ErrorsInJsonModeAreJsonOnStdout) {
    // -j anywhere: before the object, after it, after the verb.
    for (const Args& args : {Args{"-j", "frobnicate"}, Args{"frobnicate", "--json"},
                             Args{"region", "create", "x", "-j"}, Args{"-p", "s"}}) {
        const Result r = rofctl(args);
        EXPECT_EQ(r.rc, rofctl::exit_usage) << args[0];
        EXPECT_EQ(r.err, "") << args[0];
        const Json j = Json::parse(r.out);
        EXPECT_EQ(j["code"], "USAGE");
        EXPECT_FALSE(j["error"].get<std::string>().empty());
    }
}

TEST(Usage, HelpOnEveryLevel) {
    CLI::App app;
    rofctl::Globals g;
    rofctl::Handler h;
    rofctl::build_app(app, g, h);
    std::vector<Args> paths{{"--help"}, {"-h"}};
    for (const CLI::App* obj : app.get_subcommands({})) {
        paths.push_back({obj->get_name(), "--help"});
        for (const CLI::App* verb : obj->get_subcommands({})) {
            paths.push_back({obj->get_name(), verb->get_name(), "-h"});
        }
    }
    EXPECT_GE(paths.size(), 30U);
    for (const Args& p : paths) {
        const Result r = rofctl(p);
        EXPECT_EQ(r.rc, rofctl::exit_ok) << p[0];
        EXPECT_NE(r.out.find("Usage"), std::string::npos) << p[0] << r.out;
    }
    const Result top = rofctl({"--help"});
    EXPECT_NE(top.out.find("Exit status"), std::string::npos);
    const Result tc = rofctl({"tenant", "create", "--help"});
    EXPECT_NE(tc.out.find("tenants are policy files"), std::string::npos) << tc.out;
}

TEST(ExitStatus, EveryCodeMapsAsDocumented) {
    using rof::Code;
    const std::pair<Code, int> table[] = {
        {Code::ok, 0},
        {Code::cancelled, 3},
        {Code::unknown, 1},
        {Code::invalid_argument, 7},
        {Code::deadline_exceeded, 3},
        {Code::not_found, 4},
        {Code::already_exists, 6},
        {Code::permission_denied, 5},
        {Code::resource_exhausted, 8},
        {Code::failed_precondition, 6},
        {Code::aborted, 6},
        {Code::out_of_range, 7},
        {Code::unimplemented, 1},
        {Code::internal, 1},
        {Code::unavailable, 3},
        {Code::data_loss, 1},
        {Code::unauthenticated, 5},
    };
    for (const auto& [code, status] : table) {
        EXPECT_EQ(rofctl::exit_status(code), status) << static_cast<int>(code);
    }
}

TEST_F(TempDir, UnreachableRofdIsExitThreeWithTheCode) {
    for (const Args& args : {Args{"-j", "--socket", socket_, "--timeout", "300", "status"},
                             Args{"t", "l", "--json", "--socket", socket_, "--timeout", "300"}}) {
        const Result r = rofctl(args);
        EXPECT_EQ(r.rc, rofctl::exit_unreachable) << r.out;
        const Json j = Json::parse(r.out);
        EXPECT_TRUE(j["code"] == "UNAVAILABLE" || j["code"] == "DEADLINE_EXCEEDED") << r.out;
        EXPECT_EQ(r.err, "");
    }
    const Result r = rofctl({"status", "--socket", socket_, "--timeout", "300"});
    EXPECT_EQ(r.rc, rofctl::exit_unreachable);
    EXPECT_TRUE(r.err.starts_with("rofctl: ")) << r.err;
}

// The binary, not just run(): its exit status is what scripts see.
TEST_F(TempDir, BinaryExitStatus) {
    auto status_of = [](const std::string& cmd) {
        FILE* f = ::popen((cmd + " >/dev/null 2>&1").c_str(), "r");
        const int st = ::pclose(f);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    EXPECT_EQ(status_of(std::string(ROFCTL_PATH) + " status -j --timeout 300 --socket " + socket_),
              3);
    EXPECT_EQ(status_of(std::string(ROFCTL_PATH) + " bogus"), 2);
    EXPECT_EQ(status_of(std::string(ROFCTL_PATH) + " policy check " +
                        (src_dir / "policy/testdata/full").string()),
              0);
}

// ---- policy check ----

TEST(PolicyCheck, TheExamplesAreValid) {
    Result r = rofctl({"policy", "check", (src_dir / "policy").string()});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    EXPECT_EQ(r.out, "ok: 2 tenants\n");
    r = rofctl({"-j", "policy", "check", (src_dir / "policy/testdata/full").string()});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.out;
    EXPECT_EQ(Json::parse(r.out)["ok"], true);
    // Files, with the rest of a config dir as context.
    r = rofctl({"po", "ch", "--config-dir", (src_dir / "policy").string(),
                (src_dir / "policy/tenants.d/kv.toml").string()});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.out;
}

// Every file of policy/testdata/bad fails with its "# expect:" line, as
// policy_test.cpp loads them: rofd-*.toml as the daemon file, the others as
// one more tenant beside policy/'s examples.
TEST(PolicyCheck, EveryBadFileGivesItsDiagnostic) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(src_dir / "policy/testdata/bad")) {
        if (e.path().extension() != ".toml") {
            continue;
        }
        n++;
        std::ifstream in(e.path());
        std::string first;
        std::getline(in, first);
        // rofctl names the context files by the paths it read them from:
        // compare up to the first " (" that names one.
        std::string want = first.substr(std::string("# expect: ").size());
        want = want.substr(0, want.find(" ("));
        const std::string name = e.path().string();
        if (!want.empty() && std::isdigit(static_cast<unsigned char>(want[0]))) {
            want = name + ":" + want;
        } else if (want.starts_with(": ")) {
            want = name + want;
        } else {
            want = "/" + want;  // in another file, e.g. "kv.toml:8:9: ..."
        }
        const Result r =
            rofctl({"policy", "check", "--config-dir", (src_dir / "policy").string(), name});
        EXPECT_EQ(r.rc, rofctl::exit_check_failed) << name;
        EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
        const Result j =
            rofctl({"policy", "check", "-j", "--config-dir", (src_dir / "policy").string(), name});
        EXPECT_EQ(j.rc, rofctl::exit_check_failed);
        const Json doc = Json::parse(j.out);
        EXPECT_EQ(doc["ok"], false);
        EXPECT_GE(doc["errors"].size(), 1U);
    }
    EXPECT_GE(n, 30);
}

// ---- tenant create / delete, --no-reload: the files only ----

TEST_F(TempDir, TenantCreateWritesAValidatedFileAndNeverOverwrites) {
    fs::copy(src_dir / "policy/rofd.toml", dir_ / "rofd.toml");
    fs::create_directories(dir_ / "tenants.d");
    fs::copy(src_dir / "policy/tenants.d/kv.toml", dir_ / "tenants.d/kv.toml");
    fs::copy(src_dir / "policy/tenants.d/analytics.toml", dir_ / "tenants.d/analytics.toml");
    const std::string cd = dir_.string();

    Result r =
        rofctl({"tenant", "create", "web", "--uid", "1500", "--gid", "1500", "--quota",
                "sessions=4", "--quota", "region_bytes=64MiB", "--config-dir", cd, "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.err;
    EXPECT_TRUE(fs::exists(dir_ / "tenants.d/web.toml"));
    r = rofctl({"policy", "check", cd});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.out;
    EXPECT_EQ(r.out, "ok: 3 tenants\n");

    r = rofctl(
        {"-j", "tenant", "create", "web", "--uid", "1501", "--config-dir", cd, "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_conflict);
    EXPECT_EQ(Json::parse(r.out)["code"], "ALREADY_EXISTS");

    // kv's uid: the policy would be invalid; nothing is written.
    r = rofctl({"tenant", "create", "dup", "--uid", "1001", "--config-dir", cd, "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_invalid);
    EXPECT_NE(r.err.find("dup.toml:"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "tenants.d/dup.toml"));
    r = rofctl({"tenant", "create", "q", "--uid", "1600", "--quota", "bogus=1", "--config-dir", cd,
                "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_invalid);
    r = rofctl({"tenant", "create", "bad/name", "--uid", "1600", "--config-dir", cd});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    r = rofctl({"tenant", "create", "nouid", "--config-dir", cd});
    EXPECT_EQ(r.rc, rofctl::exit_usage);

    r = rofctl({"tenant", "delete", "web", "--config-dir", cd, "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "tenants.d/web.toml"));
    r = rofctl({"tenant", "delete", "web", "--config-dir", cd, "--no-reload"});
    EXPECT_EQ(r.rc, rofctl::exit_not_found);
    // No dot files left behind.
    for (const auto& e : fs::directory_iterator(dir_ / "tenants.d")) {
        EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
    }
}

TEST_F(TempDir, TenantCreateUndoesTheFileWhenTheReloadFails) {
    const std::string cd = dir_.string();
    const Result r = rofctl({"tenant", "create", "web", "--uid", "1500", "--config-dir", cd,
                             "--socket", socket_, "--timeout", "300"});
    EXPECT_EQ(r.rc, rofctl::exit_unreachable) << r.err;
    EXPECT_NE(r.err.find("undone"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "tenants.d/web.toml"));
}

// ---- prog verify --offline, prog test ----

TEST_F(TempDir, ProgVerifyOffline) {
    write(dir_ / "ok.rofs", "exit 0\n");
    write(dir_ / "bad.rofs", "mov64 r16, 1\nexit 0\n");
    Result r = rofctl({"-j", "prog", "verify", "--offline", (dir_ / "ok.rofs").string()});
    EXPECT_EQ(r.rc, rofctl::exit_ok) << r.out;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["ok"], true);
    // A fixed64 tag: a decimal string (protobuf's JSON mapping).
    EXPECT_NO_THROW(std::stoull(j["tag"].get<std::string>())) << r.out;
    EXPECT_FALSE(j["tag"].get<std::string>().starts_with("0x")) << r.out;
    r = rofctl({"-j", "prog", "verify", "--offline", (dir_ / "bad.rofs").string()});
    EXPECT_EQ(r.rc, rofctl::exit_check_failed) << r.out;
    j = Json::parse(r.out);
    EXPECT_EQ(j["ok"], false);
    EXPECT_NE(j["error"].get<std::string>().find("bad.rofs:1:7: "), std::string::npos) << r.out;
}

// Offloads in C (docs/programs.md): FILE.c is compiled with clang (a build
// dependency) and translated, FILE.o translated; errors name the C line.
TEST_F(TempDir, ProgVerifyAndTestTakeC) {
    ASSERT_EQ(setenv("ROF_OFFLOAD_INCLUDE", (src_dir / "libclient/include").c_str(), 1), 0);
    write(dir_ / "inc.c",
          "#include <rof/offload.h>\n"
          "ROF_ARGS(uint64_t, idx, 8, 8);\n"
          "ROF_RESP(uint64_t, out, 8);\n"
          "ROF_REGION(uint64_t, counters, ROF_RA, 64);\n"
          "ROF_PROGRAM int inc(uint64_t args_len)\n"
          "{\n"
          "\tif (idx >= 8)\n"
          "\t\treturn 1;\n"
          "\tout = __sync_fetch_and_add(&counters[idx], 1) + 1;\n"
          "\treturn 0;\n"
          "}\n");
    const std::string prog = (dir_ / "inc.c").string();
    Result r = rofctl({"-j", "prog", "verify", "--offline", prog});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    r = rofctl({"-j", "prog", "test", prog, "--args", "0200000000000000"});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["result"], "OK") << r.out;
    EXPECT_EQ(j["prog_status"], 0) << r.out;
    EXPECT_EQ(j["response"], "AQAAAAAAAAA=") << r.out;  // bytes are base64
    EXPECT_EQ(j["changes"][0]["offset"], "16") << r.out;

    // prog build: the assembly with the C lines as comments, for review; it
    // assembles to the same program.
    const std::string built = (dir_ / "inc.rofs").string();
    r = rofctl({"prog", "build", prog, "-o", built});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    std::ifstream bin(built);
    const std::string text(std::istreambuf_iterator<char>(bin), {});
    EXPECT_NE(text.find("; " + prog + ":9:"), std::string::npos) << text;
    EXPECT_NE(text.find("faa r"), std::string::npos) << text;
    r = rofctl({"-j", "prog", "test", built, "--args", "0200000000000000"});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    EXPECT_EQ(Json::parse(r.out)["response"], "AQAAAAAAAAA=") << r.out;

    auto obj =
        rof::prog::compile_offload("clang", prog, {(src_dir / "libclient/include").string()});
    ASSERT_TRUE(obj.ok()) << obj.error;
    write(dir_ / "inc.o", std::string(obj->begin(), obj->end()));
    r = rofctl({"-j", "prog", "test", (dir_ / "inc.o").string(), "--args", "0900000000000000"});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    EXPECT_EQ(Json::parse(r.out)["prog_status"], 1) << r.out;

    write(dir_ / "bad.c",
          "#include <rof/offload.h>\n"
          "ROF_RESP(uint64_t, out, 8);\n"
          "ROF_REGION(uint64_t, table, ROF_R, 64);\n"
          "ROF_PROGRAM int bad(uint64_t args_len)\n"
          "{\n"
          "\tout = table[9];\n"
          "\treturn 0;\n"
          "}\n");
    r = rofctl({"-j", "prog", "verify", "--offline", (dir_ / "bad.c").string()});
    EXPECT_EQ(r.rc, rofctl::exit_check_failed) << r.out;
    EXPECT_NE(Json::parse(r.out)["error"].get<std::string>().find("bad.c:6"), std::string::npos)
        << r.out;

    // A fault at run time names the C line too.
    write(dir_ / "fault.c",
          "#include <rof/offload.h>\n"
          "ROF_ARGS(uint64_t, idx, 8, 8);\n"
          "ROF_RESP(uint64_t, out, 8);\n"
          "ROF_REGION(uint64_t, table, ROF_R, 64);\n"
          "ROF_PROGRAM int get(uint64_t args_len)\n"
          "{\n"
          "\tout = table[idx];\n"
          "\treturn 0;\n"
          "}\n");
    r = rofctl({"-j", "prog", "test", (dir_ / "fault.c").string(), "--args", "6400000000000000"});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    j = Json::parse(r.out);
    EXPECT_EQ(j["result"], "EBOUNDS") << r.out;
    EXPECT_NE(j["fault_at"].get<std::string>().find("fault.c:7"), std::string::npos) << r.out;
}

TEST_F(TempDir, ProgTestRunsOnTheUserspaceExecutor) {
    // Adds args[0] into data[8], answers data[0..16) and status 7.
    write(dir_ / "add.rofs",
          ".args 8, 8\n.resp 16\n.region data, rwa, 64\n"
          "\tld64 r2, args[0]\n\tfaa r3, data[8], r2\n\tcopy resp[0], data[0], 16\n"
          "\tmov64 r4, 16\n\trespond r4, 7\n");
    std::string region(64, '\0');
    region[0] = 'h';
    region[8] = 1;
    write(dir_ / "data.bin", region);
    const std::string prog = (dir_ / "add.rofs").string();
    const std::string reg = "data=" + (dir_ / "data.bin").string();

    Result r = rofctl({"-j", "prog", "test", prog, "--args", "0200000000000000", "--region", reg});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["result"], "OK") << r.out;
    EXPECT_EQ(j["prog_status"], 7) << r.out;
    EXPECT_GT(std::stoull(j["insns"].get<std::string>()), 3U);
    EXPECT_EQ(j["changes"][0]["offset"], "8") << r.out;
    EXPECT_EQ(j["changes"][0]["old"], "AQ==") << r.out;
    EXPECT_EQ(j["changes"][0]["new"], "Aw==") << r.out;
    EXPECT_EQ(j["written"].size(), 0U);
    // Not written back without --write-back.
    std::ifstream in1(dir_ / "data.bin", std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in1), {}), region);

    r = rofctl({"-j", "prog", "test", prog, "--args", "02 00 00 00 00 00 00 00", "--region", reg,
                "--write-back"});
    ASSERT_EQ(r.rc, rofctl::exit_ok) << r.out << r.err;
    j = Json::parse(r.out);
    EXPECT_EQ(j["written"].size(), 1U);
    std::ifstream in2(dir_ / "data.bin", std::ios::binary);
    const std::string now(std::istreambuf_iterator<char>(in2), {});
    EXPECT_EQ(now[8], 3);

    // Text output from the same tree.
    r = rofctl({"prog", "test", prog, "--args", "0100000000000000", "--region", reg});
    EXPECT_EQ(r.rc, rofctl::exit_ok);
    EXPECT_NE(r.out.find("prog_status: 7\n"), std::string::npos) << r.out;

    // Wrong arguments: too few args bytes (a fault, still a result), a
    // region the program lacks, no --args.
    r = rofctl({"-j", "prog", "test", prog, "--args", "01"});
    EXPECT_EQ(r.rc, rofctl::exit_ok);
    EXPECT_EQ(Json::parse(r.out)["result"], "EARGS") << r.out;
    r = rofctl({"prog", "test", prog, "--args", "00", "--region", "nope=x"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    r = rofctl({"prog", "test", prog});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    r = rofctl({"prog", "test", prog, "--args", "zz"});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
}

TEST(ProgTest, TheFuzzCorpusRuns) {
    for (const char* name : {"alu_mix.rofs", "crc_read.rofs", "hash_get.rofs"}) {
        const Result r =
            rofctl({"-j", "prog", "test", (src_dir / "libclient/prog/fuzz/corpus" / name).string(),
                    "--args", std::string(32, '0'), "--freelist", "heap=64:64:8"});
        EXPECT_EQ(r.rc, rofctl::exit_ok) << name << r.out << r.err;
        const Json j = Json::parse(r.out);
        EXPECT_TRUE(j.contains("result")) << r.out;
    }
}

// --freelist REGION=BLOCK_SIZE:FIRST:COUNT: three unsigned numbers, nothing
// else (a negative one used to wrap through sscanf).
TEST(ProgTest, FreelistSpecIsStrict) {
    const std::string prog = (src_dir / "libclient/prog/fuzz/corpus" / "hash_get.rofs").string();
    for (const char* bad : {"heap=64:-1:8", "heap=64:64", "heap=64:64:8x", "heap=64::8",
                            "heap=99999999999999999999:0:1", "nope=64:64:8", "heap"}) {
        const Result r =
            rofctl({"prog", "test", prog, "--args", std::string(32, '0'), "--freelist", bad});
        EXPECT_EQ(r.rc, rofctl::exit_usage) << bad << r.out << r.err;
        EXPECT_NE(r.err.find("want REGION=BLOCK_SIZE:FIRST:COUNT"), std::string::npos)
            << bad << r.err;
    }
}

}  // namespace
