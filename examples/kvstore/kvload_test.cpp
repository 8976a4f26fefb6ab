// SPDX-License-Identifier: MIT
// rof-kvload's parts without the device: values, zipf keys, histogram.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kvload.h"

namespace {

using kvload::Check;

TEST(KvloadValue, RoundTrips) {
    for (std::size_t len : {32, 33, 100, 4095, 4096}) {
        auto v = kvload::encode({7, 42, 3}, len);
        ASSERT_EQ(v.size(), len);
        kvload::Stamp st;
        ASSERT_EQ(kvload::check(v, 7, st), Check::ok) << len;
        EXPECT_EQ(st.key, 7u);
        EXPECT_EQ(st.seq, 42u);
        EXPECT_EQ(st.writer, 3u);
    }
}

TEST(KvloadValue, Printable) {
    auto v = kvload::encode({1, 1, 0}, 200);
    for (std::size_t i = kvload::kHeader; i < v.size(); ++i)
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(v[i])));
}

TEST(KvloadValue, OtherKey) {
    kvload::Stamp st;
    EXPECT_EQ(kvload::check(kvload::encode({8, 1, 0}, 64), 7, st), Check::other_key);
}

TEST(KvloadValue, Torn) {
    // The header of one write, the rest of another of the same key.
    auto a = kvload::encode({5, 1, 0}, 128), b = kvload::encode({5, 2, 0}, 128);
    std::string torn = a.substr(0, 64) + b.substr(64);
    kvload::Stamp st;
    EXPECT_EQ(kvload::check(torn, 5, st), Check::bad_checksum);
    torn = b.substr(0, 24) + a.substr(24);
    EXPECT_EQ(kvload::check(torn, 5, st), Check::bad_checksum);
}

TEST(KvloadValue, EveryByteCounts) {
    auto v = kvload::encode({9, 3, 1}, 64);
    kvload::Stamp st;
    for (std::size_t i = 0; i < v.size(); ++i) {
        auto c = v;
        c[i] ^= 0x20;
        EXPECT_NE(kvload::check(c, 9, st), Check::ok) << "byte " << i;
    }
}

TEST(KvloadValue, LengthAndMagic) {
    auto v = kvload::encode({9, 3, 1}, 64);
    kvload::Stamp st;
    EXPECT_EQ(kvload::check(v.substr(0, 63), 9, st), Check::bad_length);
    EXPECT_EQ(kvload::check(v + "x", 9, st), Check::bad_length);
    EXPECT_EQ(kvload::check(v.substr(0, 10), 9, st), Check::too_short);
    EXPECT_EQ(kvload::check(std::string(64, 'a'), 9, st), Check::bad_magic);
}

TEST(KvloadKey, Padded) {
    EXPECT_EQ(kvload::key_name(12, 16), "kvl:000000000012");
    EXPECT_EQ(kvload::key_name(12, 4), "kvl:12");
}

TEST(KvloadZipf, RanksFollowZipf) {
    // P(rank r) = 1/((r+1)^theta * zeta(n)): check the head within 10%.
    const std::uint64_t n = 1000;
    const int draws = 400000;
    kvload::Zipf z(n);
    std::mt19937_64 rng(1);
    std::vector<int> hits(n);
    for (int i = 0; i < draws; ++i) {
        auto r = z.rank(rng);
        ASSERT_LT(r, n);
        ++hits[r];
    }
    double zeta = 0;
    for (std::uint64_t i = 1; i <= n; ++i)
        zeta += 1 / std::pow(static_cast<double>(i), 0.99);
    // Ranks 0 and 1 are exact in Gray's method; beyond, it approximates
    // the law: check the share of the first 10 and 100 ranks.
    for (std::uint64_t r : {0, 1}) {
        double want = draws / (std::pow(static_cast<double>(r + 1), 0.99) * zeta);
        EXPECT_NEAR(hits[r], want, want * 0.05) << "rank " << r;
    }
    for (std::uint64_t top : {10, 100}) {
        double want = 0;
        int got = 0;
        for (std::uint64_t r = 0; r < top; ++r) {
            want += draws / (std::pow(static_cast<double>(r + 1), 0.99) * zeta);
            got += hits[r];
        }
        EXPECT_NEAR(got, want, want * 0.1) << "top " << top;
    }
    // The hot tenth of the ranks takes most of the draws.
    int head = 0;
    for (std::uint64_t r = 0; r < n / 10; ++r)
        head += hits[r];
    EXPECT_GT(head, draws / 2);
}

TEST(KvloadZipf, ScrambledSpreadsHotKeys) {
    const std::uint64_t n = 10000;
    kvload::Zipf z(n);
    std::set<std::uint64_t> hot;
    for (std::uint64_t r = 0; r < 20; ++r) {
        auto k = z.scramble(r);
        ASSERT_LT(k, n);
        hot.insert(k);
    }
    EXPECT_GE(hot.size(), 19u);                      // hardly any collide
    EXPECT_GT(*hot.rbegin() - *hot.begin(), n / 2);  // not clustered at the start
    std::mt19937_64 rng(2);
    for (int i = 0; i < 10000; ++i)
        ASSERT_LT(z(rng), n);
}

TEST(KvloadHistogram, BucketsCoverValues) {
    for (std::uint64_t v : {0ull, 1ull, 31ull, 32ull, 33ull, 1000ull, 123456789ull, ~0ull >> 1}) {
        auto i = kvload::Histogram::index(v);
        ASSERT_LT(i, kvload::Histogram::kBuckets);
        EXPECT_GE(kvload::Histogram::upper(i), v);
        if (i > 0) {
            EXPECT_LT(kvload::Histogram::upper(i - 1), v) << v;
        }
    }
}

TEST(KvloadHistogram, Percentiles) {
    kvload::Histogram h;
    EXPECT_EQ(h.percentile(50), 0u);
    for (std::uint64_t v = 1; v <= 10000; ++v)
        h.record(v * 1000);  // 1 us .. 10 ms
    EXPECT_EQ(h.count(), 10000u);
    auto near = [](std::uint64_t got, double want) {
        EXPECT_GE(static_cast<double>(got), want);
        EXPECT_LE(static_cast<double>(got), want * 1.04);
    };
    near(h.percentile(50), 5000 * 1000.0);
    near(h.percentile(99), 9900 * 1000.0);
    near(h.percentile(99.9), 9990 * 1000.0);
    EXPECT_EQ(h.percentile(100), 10000u * 1000);
    EXPECT_EQ(h.max(), 10000u * 1000);
}

TEST(KvloadHistogram, Merge) {
    kvload::Histogram a, b;
    for (int i = 0; i < 99; ++i)
        a.record(10);
    b.record(1000000);
    a.merge(b);
    EXPECT_EQ(a.count(), 100u);
    EXPECT_EQ(a.percentile(50), 10u);
    EXPECT_EQ(a.percentile(99), 10u);
    EXPECT_GE(a.percentile(99.9), 1000000u);
}

}  // namespace
