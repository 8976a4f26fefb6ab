// Token bucket arithmetic of rof.ko (kmod/rof_bucket.h).
#include <gtest/gtest.h>

#include <cstdint>

#include "rof_bucket.h"
#include "uapi/rof.h"

namespace
{

constexpr u64 kSec = 1000000000ULL;

TEST(Bucket, UnlimitedNeverWaits)
{
	rof_bucket b;
	rof_bucket_init(&b, 0, 1, 0);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 0u);
	rof_bucket_take(&b, 1000000);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1000000), 0u);
}

TEST(Bucket, StartsEmptyAndWaitsOnePeriod)
{
	rof_bucket b;
	rof_bucket_init(&b, 100, 1, 5 * kSec); // 100/s: one token per 10 ms
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 10000000u);
	rof_bucket_refill(&b, 5 * kSec + 9999999);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 1u);
	rof_bucket_refill(&b, 5 * kSec + 10000000);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 0u);
	rof_bucket_take(&b, 1);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 10000000u);
}

// Admitting greedily for 10 s at 1 ms steps gives exactly rate * 10.
TEST(Bucket, LongRunRateIsExact)
{
	for (u64 rate : { 1ULL, 7ULL, 200ULL, 3200ULL, 1000000ULL }) {
		rof_bucket b;
		rof_bucket_init(&b, rate, 1, 0);
		u64 admitted = 0;
		for (u64 t = 0; t <= 10 * kSec; t += 1000000) {
			rof_bucket_refill(&b, t);
			while (rof_bucket_wait_ns(&b, 1) == 0) {
				rof_bucket_take(&b, 1);
				admitted++;
			}
		}
		EXPECT_EQ(admitted, rate * 10) << "rate " << rate;
	}
}

TEST(Bucket, BurstIsCapped)
{
	rof_bucket b;
	rof_bucket_init(&b, 1000, 1, 0); // burst: 50 ms worth = 50 tokens
	rof_bucket_refill(&b, 3600 * kSec);
	u64 n = 0;
	while (rof_bucket_wait_ns(&b, 1) == 0) {
		rof_bucket_take(&b, 1);
		n++;
	}
	EXPECT_EQ(n, 1000u * ROF_BUCKET_BURST_MS / 1000);
}

TEST(Bucket, MinBurstLetsABigRequestPass)
{
	rof_bucket b;
	rof_bucket_init(&b, 100, 2048, 0); // 100 B/s, one request of 2000 B
	EXPECT_GT(rof_bucket_wait_ns(&b, 2000), 0u);
	rof_bucket_refill(&b, 20 * kSec);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 2000), 0u);
}

TEST(Bucket, CostAboveCapacityWaitsForAFullBucket)
{
	rof_bucket b;
	rof_bucket_init(&b, 10, 1, 0); // capacity 2 tokens
	u64 w = rof_bucket_wait_ns(&b, 1000);
	EXPECT_EQ(w, 2 * kSec / 10);
	rof_bucket_refill(&b, w);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1000), 0u);
	rof_bucket_take(&b, 1000);
	EXPECT_EQ(b.tokens, 0u);
}

TEST(Bucket, ExtremesDoNotOverflow)
{
	rof_bucket b;
	rof_bucket_init(&b, ROF_RATE_MAX, 1, 0);
	rof_bucket_refill(&b, ~0ULL); // centuries later
	EXPECT_EQ(b.tokens, b.cap);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 1), 0u);
	rof_bucket_init(&b, 1, 1, 0);
	rof_bucket_refill(&b, ~0ULL);
	EXPECT_EQ(b.tokens, b.cap);
}

TEST(Bucket, TimeGoingBackwardsChangesNothing)
{
	rof_bucket b;
	rof_bucket_init(&b, 100, 1, 10 * kSec);
	rof_bucket_refill(&b, 5 * kSec);
	EXPECT_EQ(b.tokens, 0u);
	EXPECT_EQ(b.last_ns, 10 * kSec);
}

// A cost known only after admission (an INVOKE's response) is charged as
// a debt: nothing more is admitted until the refills have paid it.
TEST(Bucket, ChargeBeyondEmptyIsADebt)
{
	rof_bucket b;
	rof_bucket_init(&b, 1000, 100, 0); // 1000/s, 100 burst
	rof_bucket_refill(&b, kSec / 10); // full: 100
	EXPECT_EQ(rof_bucket_wait_ns(&b, 40), 0u);
	rof_bucket_take(&b, 40);
	rof_bucket_charge(&b, 90); // 60 there: 30 owed
	EXPECT_EQ(b.tokens, 0u);
	EXPECT_EQ(b.debt, 30 * ROF_BUCKET_SCALE);
	// 30 ms pay the debt, 10 ms more buy one of 10.
	EXPECT_EQ(rof_bucket_wait_ns(&b, 10), 40 * kSec / 1000);
	rof_bucket_refill(&b, kSec / 10 + 20 * kSec / 1000);
	EXPECT_EQ(b.debt, 10 * ROF_BUCKET_SCALE);
	EXPECT_EQ(b.tokens, 0u);
	rof_bucket_refill(&b, kSec / 10 + 40 * kSec / 1000);
	EXPECT_EQ(b.debt, 0u);
	EXPECT_EQ(rof_bucket_wait_ns(&b, 10), 0u);
	// A long pause clears any debt and fills the bucket.
	rof_bucket_charge(&b, 100);
	rof_bucket_refill(&b, 10 * kSec);
	EXPECT_EQ(b.debt, 0u);
	EXPECT_EQ(b.tokens, b.cap);
}

// Charging exactly what a stream sends keeps the long-run rate exact.
TEST(Bucket, ChargedStreamKeepsTheRate)
{
	rof_bucket b;
	rof_bucket_init(&b, 10000, 2000, 0);
	u64 sent = 0;
	for (u64 now = 0; now <= 10 * kSec; now += kSec / 1000) {
		rof_bucket_refill(&b, now);
		while (rof_bucket_wait_ns(&b, 8) == 0) {
			rof_bucket_take(&b, 8);
			rof_bucket_charge(&b, 92); // the response, 100 in all
			sent += 100;
		}
	}
	// 10 s at 10000/s, plus at most one burst and one response early.
	EXPECT_LE(sent, 10 * 10000u + 2000 + 100);
	EXPECT_GE(sent, 10 * 10000u - 200);
}

// A request taken and given back leaves the bucket as it was; a debt
// charged meanwhile is paid first; the bucket never overfills.
TEST(Bucket, UntakeGivesBackWhatTakeTook)
{
	rof_bucket b;
	rof_bucket_init(&b, 100, 1, 0); // 5 tokens of burst
	rof_bucket_refill(&b, kSec);
	const rof_bucket full = b;
	rof_bucket_take(&b, 2);
	rof_bucket_untake(&b, 2);
	EXPECT_EQ(b.tokens, full.tokens);
	EXPECT_EQ(b.debt, 0u);
	rof_bucket_untake(&b, 3); // nothing was taken: still full
	EXPECT_EQ(b.tokens, b.cap);

	rof_bucket_take(&b, 5);
	rof_bucket_charge(&b, 2); // empty: a debt of 2
	EXPECT_EQ(b.debt, 2 * ROF_BUCKET_SCALE);
	rof_bucket_untake(&b, 5);
	EXPECT_EQ(b.debt, 0u);
	EXPECT_EQ(b.tokens, 3 * ROF_BUCKET_SCALE);

	rof_bucket u;
	rof_bucket_init(&u, 0, 1, 0); // unlimited: nothing to give back
	rof_bucket_untake(&u, 7);
	EXPECT_EQ(u.tokens, 0u);
}

} // namespace
