// Unit tests of rof-bench's shared pieces (bench.h).
#include "bench.h"

#include <gtest/gtest.h>

namespace rofbench {
namespace {

TEST(Histogram, BucketsCoverEveryValueInOrder) {
    // Every bucket's range starts one past the previous one's high end.
    for (std::size_t b = 1; b < Histogram::kBuckets; b++) {
        std::uint64_t low = Histogram::bucket_high(b - 1) + 1;
        EXPECT_EQ(Histogram::bucket_of(low), b) << b;
        EXPECT_EQ(Histogram::bucket_of(Histogram::bucket_high(b)), b) << b;
    }
    EXPECT_EQ(Histogram::bucket_high(Histogram::kBuckets - 1), UINT64_MAX);
}

TEST(Histogram, ResolutionIsAboutThreePercent) {
    for (std::uint64_t v : {100ULL, 999ULL, 123456ULL, 7777777777ULL}) {
        std::uint64_t hi = Histogram::bucket_high(Histogram::bucket_of(v));
        EXPECT_GE(hi, v);
        EXPECT_LE(double(hi - v), 0.032 * double(v)) << v;
    }
}

TEST(Histogram, PercentilesOfKnownSamples) {
    Histogram h;
    EXPECT_EQ(h.percentile(50), 0U);
    for (std::uint64_t v = 1; v <= 1000; v++) {
        h.record(v * 1000);  // 1 .. 1000 us
    }
    EXPECT_EQ(h.count(), 1000U);
    EXPECT_EQ(h.min(), 1000U);
    EXPECT_EQ(h.max(), 1000000U);
    auto near = [](std::uint64_t got, double want) {
        return double(got) >= want && double(got) <= want * 1.032;
    };
    EXPECT_TRUE(near(h.percentile(50), 500000)) << h.percentile(50);
    EXPECT_TRUE(near(h.percentile(99), 990000)) << h.percentile(99);
    EXPECT_EQ(h.percentile(100), 1000000U);  // never above the max seen
    EXPECT_NEAR(h.mean(), 500500.0, 0.5);
}

TEST(Histogram, MergeIsTheSameAsRecordingBoth) {
    Histogram a, b, both;
    for (std::uint64_t v = 0; v < 5000; v += 7) {
        (v % 2 ? a : b).record(v * 13);
        both.record(v * 13);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), both.count());
    for (double p : {1.0, 50.0, 99.0, 99.9}) {
        EXPECT_EQ(a.percentile(p), both.percentile(p));
    }
    EXPECT_EQ(a.cdf(), both.cdf());
    EXPECT_DOUBLE_EQ(a.cdf().back()[1], 1.0);
}

TEST(CaseReport, RatioAndTargetOfAFigure) {
    CaseReport r("B1", "t");
    r.figure("median", 150, "us", "READ", 100.0, Target{Target::Cmp::le, 1.5});
    r.figure("median2", 151, "us", "READ", 100.0, Target{Target::Cmp::le, 1.5});
    r.figure("rate", 90, "ops/s", "raw", 100.0, Target{Target::Cmp::ge, 0.8});
    r.figure("alone", 7, "ms");
    r.figure("unmeasured", 7, "ms", "raw", std::nullopt, Target{Target::Cmp::le, 1.0});
    const auto& f = r.json()["figures"];
    EXPECT_DOUBLE_EQ(f[0]["ratio"].get<double>(), 1.5);
    EXPECT_TRUE(f[0]["met"].get<bool>());
    EXPECT_FALSE(f[1]["met"].get<bool>());
    EXPECT_TRUE(f[2]["met"].get<bool>());
    EXPECT_EQ(f[2]["target"], ">= 0.8x");
    EXPECT_FALSE(f[3].contains("ratio"));
    EXPECT_TRUE(f[4]["met"].is_null());
}

TEST(CaseReport, WithinAndAbsoluteBounds) {
    CaseReport r("B4", "t");
    r.figure("rate", 1040, "ops/s", "limit", 1000.0, Target{Target::Cmp::within, 0.05});
    r.figure("rate2", 940, "ops/s", "limit", 1000.0, Target{Target::Cmp::within, 0.05});
    r.bound("failed", 0, "requests", Target::Cmp::le, 0);
    r.bound("load", 51, "ms", Target::Cmp::le, 50);
    const auto& f = r.json()["figures"];
    EXPECT_TRUE(f[0]["met"].get<bool>());
    EXPECT_EQ(f[0]["target"], "1 +- 0.05x");
    EXPECT_FALSE(f[1]["met"].get<bool>());
    EXPECT_TRUE(f[2]["met"].get<bool>());
    EXPECT_EQ(f[2]["target"], "<= 0 requests");
    EXPECT_FALSE(f[3]["met"].get<bool>());
    EXPECT_FALSE(f[3].contains("ratio"));
}

TEST(Options, ParamsParseOrFailClearly) {
    Options o;
    o.params["n"] = "0x10";
    o.params["bad"] = "12k";
    EXPECT_EQ(o.param_int("n", 1), 16);
    EXPECT_EQ(o.param_int("missing", 3), 3);
    EXPECT_THROW(o.param_int("bad", 0), std::invalid_argument);
    EXPECT_EQ(o.param("missing", "x"), "x");
}

}  // namespace
}  // namespace rofbench
