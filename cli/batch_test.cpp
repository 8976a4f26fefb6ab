// SPDX-License-Identifier: MIT
// rofctl batch: the line syntax, each command's record, stopping or going
// on after a failure, the commands a batch refuses; through
// rofctl::run() with commands that need no rofd (or find none), and the
// binary reading stdin.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "batch.h"
#include "commands.h"
#include "rofctl.h"
#include "rofctl_testing.h"
#include "test_temp_dir.h"

namespace {

namespace fs = std::filesystem;
using rofctl::Json;
using rofctl::testing::Result;
using rofctl::testing::rofctl;
using rofctl::testing::src_dir;
using Words = std::vector<std::string>;

// The JSON lines of @text.
std::vector<Json> json_lines(const std::string& text) {
    std::vector<Json> docs;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        docs.push_back(Json::parse(line));
    }
    return docs;
}

// ---- the line syntax ----

TEST(BatchSplit, WordsQuotesEscapesAndComments) {
    EXPECT_EQ(rofctl::split_line("tenant  show\tkv").words, (Words{"tenant", "show", "kv"}));
    EXPECT_EQ(rofctl::split_line("a 'b c' \"d e\" f\\ g").words, (Words{"a", "b c", "d e", "f g"}));
    // Single quotes keep everything; double quotes all but \" \\ \$ \`.
    EXPECT_EQ(rofctl::split_line(R"('a\"b' "x\"y\\z\$\n")").words,
              (Words{R"(a\"b)", R"(x"y\z$\n)"}));
    // Quotes join with what touches them; '' is an empty word.
    EXPECT_EQ(rofctl::split_line("--args='' x'y'\"z\" ''").words, (Words{"--args=", "xyz", ""}));
    // # begins a comment at the start of a word only.
    EXPECT_EQ(rofctl::split_line("policy check # the files").words, (Words{"policy", "check"}));
    EXPECT_EQ(rofctl::split_line("x a#b '#c'").words, (Words{"x", "a#b", "#c"}));
    EXPECT_TRUE(rofctl::split_line("   # only a comment").words.empty());
    EXPECT_TRUE(rofctl::split_line("").words.empty());
    // CRLF lines split as LF ones; $ and * are not expanded.
    EXPECT_EQ(rofctl::split_line("show $HOME *\r").words, (Words{"show", "$HOME", "*"}));
}

TEST(BatchSplit, ContinuationAndUnterminatedQuotes) {
    const rofctl::SplitLine c = rofctl::split_line("region create x \\");
    EXPECT_TRUE(c.continued);
    EXPECT_TRUE(c.error.empty());
    EXPECT_EQ(rofctl::split_line("a 'b").error, "unterminated ' quote");
    EXPECT_EQ(rofctl::split_line("a \"b\\\"").error, "unterminated \" quote");
}

TEST(BatchReader, NumbersLinesSkipsBlanksAndJoinsContinuations) {
    std::istringstream in(
        "# setup\n"
        "\n"
        "tenant list\n"
        "region create log \\\n"
        "  --size 64KiB\n"
        "prog load 'a b\n"
        "status # trailing comment\n"
        "health \\");
    rofctl::BatchReader r(in);
    auto c = r.next();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 3U);
    EXPECT_EQ(c->args, (Words{"tenant", "list"}));
    c = r.next();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 4U);
    EXPECT_EQ(c->args, (Words{"region", "create", "log", "--size", "64KiB"}));
    c = r.next();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 6U);
    EXPECT_EQ(c->error, "unterminated ' quote");
    c = r.next();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 7U);
    EXPECT_EQ(c->args, (Words{"status"}));
    c = r.next();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->line, 8U);
    EXPECT_EQ(c->error, "the last line ends with a backslash");
    EXPECT_FALSE(r.next());
}

TEST(BatchQuote, QuotedWordsSplitBackToThemselves) {
    const Words words{"prog", "test", "/a b/c.rofs", "--args", "", "it's", "x\"y", "#z", "$v"};
    const std::string line = rofctl::quote_words(words);
    EXPECT_EQ(line.substr(0, 25), "prog test '/a b/c.rofs' -");
    EXPECT_EQ(rofctl::split_line(line).words, words);
    EXPECT_EQ(rofctl::quote_words({"tenant", "show", "kv"}), "tenant show kv");
}

TEST(BatchRecord, HoldsArgsStatusOutputAndTheError) {
    rofctl::Captured ok;
    ok.output.push_back({{"generation", 2}});
    const Json r = rofctl::batch_record({5, {"policy", "reload"}, {}}, 0, ok, "");
    EXPECT_EQ(r.dump(),
              R"({"line":5,"args":["policy","reload"],"status":0,"output":[{"generation":2}]})");
    rofctl::Captured bad;
    bad.error = "tenant \"x\": not found";
    bad.code = "NOT_FOUND";
    const Json f = rofctl::batch_record({7, {"tenant", "show", "x"}, {}}, 4, bad, "");
    EXPECT_EQ(f.dump(), R"({"line":7,"args":["tenant","show","x"],"status":4,"output":[],)"
                        R"("error":"tenant \"x\": not found","code":"NOT_FOUND"})");
    const Json h = rofctl::batch_record({1, {"status", "-h"}, {}}, 0, {}, "Usage: ...\n");
    EXPECT_EQ(h["text"], "Usage: ...\n");
}

// ---- whole batches ----

class Batch : public ::testing::Test {
  protected:
    void SetUp() override {
        tmp_.emplace("rofctl-batch");
        dir_ = tmp_->path();
        socket_ = (dir_ / "rofd.sock").string();  // nothing listens
        std::ofstream(dir_ / "nop.rofs") << "exit 0\n";
    }
    std::string file(const std::string& text) {
        const fs::path p = dir_ / "batch.txt";
        std::ofstream(p, std::ios::trunc) << text;
        return p.string();
    }
    std::string nop() const { return (dir_ / "nop.rofs").string(); }
    std::string cd() const { return (dir_ / "etc").string(); }

    std::optional<rof::test::TempDir> tmp_;
    fs::path dir_;
    std::string socket_;
};

TEST_F(Batch, JsonRecordsHoldWhatEachCommandPrintsAlone) {
    const std::string policy = (src_dir / "policy").string();
    const std::string f = file("policy check " + policy +
                               "\n"
                               "prog test '" +
                               nop() +
                               "' --args ''\n"
                               "# rofd is not there\n"
                               "status\n"
                               "tenant show nope -j\n"
                               "frobnicate\n"
                               "tenant create web --uid 1500 --no-reload --config-dir " +
                               cd() + "\n");
    const Result r = rofctl({"-j", "--socket", socket_, "--timeout", "300", "batch", f, "--force"});
    EXPECT_EQ(r.rc, rofctl::exit_unreachable) << r.out << r.err;  // the first failure's
    EXPECT_EQ(r.err, "");
    const std::vector<Json> recs = json_lines(r.out);
    ASSERT_EQ(recs.size(), 6U) << r.out;

    // Each output is what `rofctl -j LINE` prints alone.
    EXPECT_EQ(recs[0]["line"], 1);
    EXPECT_EQ(recs[0]["status"], 0);
    EXPECT_EQ(recs[0]["output"],
              Json::array({json_lines(rofctl({"-j", "policy", "check", policy}).out)[0]}));
    EXPECT_FALSE(recs[0].contains("error"));
    EXPECT_EQ(recs[1]["args"], (Words{"prog", "test", nop(), "--args", ""}));
    EXPECT_EQ(recs[1]["output"][0],
              json_lines(rofctl({"-j", "prog", "test", nop(), "--args", ""}).out)[0]);
    EXPECT_EQ(recs[2]["line"], 4);
    EXPECT_EQ(recs[2]["status"], rofctl::exit_unreachable);
    EXPECT_TRUE(recs[2]["code"] == "UNAVAILABLE" || recs[2]["code"] == "DEADLINE_EXCEEDED")
        << recs[2];
    EXPECT_EQ(recs[2]["output"], Json::array());
    EXPECT_EQ(recs[3]["status"], rofctl::exit_unreachable);  // -j on a line changes nothing
    EXPECT_EQ(recs[4]["status"], rofctl::exit_usage);
    EXPECT_EQ(recs[4]["code"], "USAGE");
    EXPECT_TRUE(recs[4]["error"].get<std::string>().starts_with("unknown object \"frobnicate\""));
    // --force: the lines after failures ran too.
    EXPECT_EQ(recs[5]["status"], 0) << recs[5];
    EXPECT_TRUE(fs::exists(dir_ / "etc/tenants.d/web.toml"));
}

TEST_F(Batch, StopsAtTheFirstFailureWithoutForce) {
    const std::string f =
        file("prog test " + nop() + " --args ''\nfrobnicate\n" +
             "tenant create web --uid 1500 --no-reload --config-dir " + cd() + "\n");
    Result r = rofctl({"-j", "batch", f});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    ASSERT_EQ(json_lines(r.out).size(), 2U) << r.out;
    EXPECT_FALSE(fs::exists(dir_ / "etc/tenants.d/web.toml"));

    // Text: a header per command, its output and errors as alone, a
    // footer for a failed one, where it stopped on stderr.
    r = rofctl({"batch", f});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    const std::string alone = rofctl({"prog", "test", nop(), "--args", ""}).out;
    EXPECT_EQ(r.out, ">>> 1: prog test " + nop() + " --args ''\n" + alone +
                         ">>> 2: frobnicate\n<<< 2: exit 2\n");
    EXPECT_EQ(r.err, rofctl({"frobnicate"}).err + "rofctl: " + f +
                         ":2: exit 2, the batch stops here (--force runs every line)\n");
    EXPECT_FALSE(fs::exists(dir_ / "etc/tenants.d/web.toml"));

    r = rofctl({"batch", "--force", f});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    EXPECT_TRUE(fs::exists(dir_ / "etc/tenants.d/web.toml"));
    EXPECT_TRUE(r.err.ends_with("rofctl: " + f + ": 1 command failed, at line 2\n")) << r.err;

    // All well: exit 0, no footer.
    r = rofctl({"batch", file("prog test " + nop() + " --args ''\n")});
    EXPECT_EQ(r.rc, rofctl::exit_ok);
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out.find("<<<"), std::string::npos);
}

TEST_F(Batch, RefusesWhatCannotRunInABatch) {
    const std::string inner = file("status\n");
    const std::string f = (dir_ / "outer.txt").string();
    std::ofstream(f) << "audit tail -f\n"
                     << "batch " << inner << "\n"
                     << "status --socket " << socket_ << "\n"
                     << "--timeout 5 health\n"
                     << "tenant show 'kv\n"
                     << "top\n";
    const Result r = rofctl({"-j", "batch", "-f", f});
    EXPECT_EQ(r.rc, rofctl::exit_usage);
    const std::vector<Json> recs = json_lines(r.out);
    ASSERT_EQ(recs.size(), 6U) << r.out;
    for (const Json& rec : recs) {
        EXPECT_EQ(rec["status"], rofctl::exit_usage) << rec;
        EXPECT_EQ(rec["code"], "USAGE") << rec;
    }
    EXPECT_EQ(recs[0]["error"],
              "audit tail -f: runs until interrupted, not in a batch (without -f it ends)");
    EXPECT_EQ(recs[1]["error"], "batch: not within a batch");
    EXPECT_EQ(recs[2]["error"],
              "--socket: a connection option, for the whole batch: give it before `batch`");
    EXPECT_TRUE(recs[3]["error"].get<std::string>().starts_with("--timeout: ")) << recs[3];
    EXPECT_EQ(recs[4]["error"], "unterminated ' quote");
    EXPECT_EQ(recs[4]["args"], Json::array());
    EXPECT_EQ(recs[5]["error"], "top: runs until quit, not in a batch (give --once or -n N)");
}

TEST_F(Batch, UnreadableFileAndHelp) {
    Result r = rofctl({"batch", (dir_ / "none.txt").string()});
    EXPECT_EQ(r.rc, rofctl::exit_error);
    EXPECT_NE(r.err.find("none.txt: cannot read"), std::string::npos) << r.err;
    r = rofctl({"-j", "batch", file("region --help\n")});
    EXPECT_EQ(r.rc, rofctl::exit_ok);
    const Json rec = Json::parse(r.out);
    EXPECT_NE(rec["text"].get<std::string>().find("token"), std::string::npos) << rec;
}

// The binary reading the commands from a pipe.
TEST_F(Batch, BinaryReadsStdin) {
    const std::string cmd = "printf 'prog test %s --args \"\"\\nfrobnicate\\n' " + nop() + " | " +
                            ROFCTL_PATH + " -j batch --force - 2>&1";
    FILE* f = ::popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) {
        out.append(buf, n);
    }
    const int st = ::pclose(f);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), rofctl::exit_usage);
    const std::vector<Json> recs = json_lines(out);
    ASSERT_EQ(recs.size(), 2U) << out;
    EXPECT_EQ(recs[0]["status"], 0);
    EXPECT_EQ(recs[0]["output"][0]["result"], "OK") << recs[0];
    EXPECT_EQ(recs[1]["code"], "USAGE");
}

}  // namespace
