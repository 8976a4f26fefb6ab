// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <sstream>

#include "print.h"

namespace {

using rofctl::Printer;
using rofctl::To;

TEST(FormatText, SubstitutesAndPads) {
    EXPECT_EQ(rofctl::format_text("dev {} up", "rxe0"), "dev rxe0 up");
    EXPECT_EQ(rofctl::format_text("[{:<6}]", "rxe0"), "[rxe0  ]");
    EXPECT_EQ(rofctl::format_text("[{:>6}]", "rxe0"), "[  rxe0]");
    // Too long for the column: printed whole, never cut.
    EXPECT_EQ(rofctl::format_text("[{:<2}]", "rxe0"), "[rxe0]");
    EXPECT_EQ(rofctl::format_text("no placeholder", "x"), "no placeholder");
}

TEST(FormatUptime, LeavesOutLeadingZeroUnits) {
    EXPECT_EQ(rofctl::format_uptime(0), "0s");
    EXPECT_EQ(rofctl::format_uptime(59), "59s");
    EXPECT_EQ(rofctl::format_uptime(192), "3m 12s");
    EXPECT_EQ(rofctl::format_uptime(3600), "1h 0m 0s");
    EXPECT_EQ(rofctl::format_uptime(2 * 86400 + 3 * 3600 + 4 * 60 + 5), "2d 3h 4m 5s");
}

// The same calls, printed both ways.
void sample(Printer& p) {
    p.string(To::any, "name", "dev {}", "rxe0");
    p.uint(To::json, "uptime_seconds", {}, 192);
    p.string(To::text, {}, " up {}", "3m 12s");
    p.newline();
    p.open_array("ports");
    for (unsigned i = 1; i <= 2; i++) {
        p.open_object();
        p.uint(To::any, "port_num", "  port {}", i);
        p.close_object();
        p.newline();
    }
    p.close_array();
    p.open_object("empty");
    p.close_object();
    p.finish();
}

TEST(Printer, TextModePrintsTextFormatsOnly) {
    std::ostringstream out, err;
    Printer p(out, err, false, false);

    sample(p);
    EXPECT_EQ(out.str(), "dev rxe0 up 3m 12s\n  port 1\n  port 2\n");
    EXPECT_EQ(err.str(), "");
}

TEST(Printer, JsonModeBuildsOneDocumentInCallOrder) {
    std::ostringstream out, err;
    Printer p(out, err, true, false);

    sample(p);
    EXPECT_EQ(out.str(),
              "{\"name\":\"rxe0\",\"uptime_seconds\":192,"
              "\"ports\":[{\"port_num\":1},{\"port_num\":2}],\"empty\":{}}\n");
    EXPECT_EQ(err.str(), "");
}

TEST(Printer, PrettyImpliesJsonAndIndents) {
    std::ostringstream out, err;
    Printer p(out, err, false, true);

    EXPECT_TRUE(p.json());
    p.uint(To::any, "a", "{}", 1);
    p.finish();
    EXPECT_EQ(out.str(), "{\n  \"a\": 1\n}\n");
}

TEST(Printer, ErrorGoesToStderrInTextMode) {
    std::ostringstream out, err;
    Printer p(out, err, false, false);

    p.error("cannot reach rofd");
    EXPECT_EQ(out.str(), "");
    EXPECT_EQ(err.str(), "rofctl: cannot reach rofd\n");
}

TEST(Printer, ErrorIsAJsonObjectOnStdoutInJsonMode) {
    std::ostringstream out, err;
    Printer p(out, err, true, false);

    p.error("say \"why\"");
    EXPECT_EQ(out.str(), "{\"error\":\"say \\\"why\\\"\"}\n");
    EXPECT_EQ(err.str(), "");
}

TEST(Printer, BytesThatAreNotUtf8DoNotBreakJson) {
    std::ostringstream out, err;
    Printer p(out, err, true, false);

    p.string(To::any, "name", "{}", "rxe\xff");
    p.finish();
    EXPECT_EQ(out.str(), "{\"name\":\"rxe\xEF\xBF\xBD\"}\n");
}

}  // namespace
