/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * rof_bucket.h - token bucket arithmetic, one source for the module and
 * its userspace unit tests (kmod/tests/).
 *
 * Tokens are kept in units of 1e-9 of an op (or byte) so that any rate
 * from 1/s to ROF_RATE_MAX/s refills exactly with integer arithmetic:
 * elapsed_ns * rate is the refill in those units.  A bucket holds
 * ROF_BUCKET_BURST_MS worth of its rate (at least @min_burst units and at
 * least 2), and
 * starts empty: a new session earns its burst instead of starting with
 * it, so that over any window from the start it gets no more than
 * rate * window (the burst only absorbs timer lateness later on).
 * With ROF_RATE_MAX = 1e11 the largest capacity is 5e9 units = 5e18
 * scaled, inside a u64.
 */
#ifndef ROF_BUCKET_H
#define ROF_BUCKET_H

#ifdef __KERNEL__
#include <linux/math64.h>
#include <linux/types.h>
#define rof_bucket_div(a, b)	div64_u64((a), (b))
#else
#include <stdint.h>
typedef uint64_t u64;
#define rof_bucket_div(a, b)	((a) / (b))
#endif

#define ROF_BUCKET_BURST_MS	50
#define ROF_BUCKET_SCALE	1000000000ULL	/* scaled units per unit */

struct rof_bucket {
	u64 rate;	/* units per second; 0 = unlimited */
	u64 cap;	/* scaled units when full */
	u64 tokens;	/* scaled units now */
	u64 last_ns;	/* time of the last refill */
};

static inline void rof_bucket_init(struct rof_bucket *b, u64 rate,
				   u64 min_burst, u64 now_ns)
{
	u64 burst = rof_bucket_div(rate * ROF_BUCKET_BURST_MS, 1000);

	if (burst < min_burst)
		burst = min_burst;
	/*
	 * Room for two: a waiter woken late keeps what accrued meanwhile
	 * instead of losing it to a full bucket of one.
	 */
	if (burst < 2)
		burst = 2;
	b->rate = rate;
	b->cap = burst * ROF_BUCKET_SCALE;
	b->tokens = 0;
	b->last_ns = now_ns;
}

static inline void rof_bucket_refill(struct rof_bucket *b, u64 now_ns)
{
	u64 elapsed;

	if (!b->rate || now_ns <= b->last_ns)
		return;
	elapsed = now_ns - b->last_ns;
	b->last_ns = now_ns;
	/* Compare before multiplying: elapsed * rate may not fit. */
	if (elapsed >= rof_bucket_div(b->cap - b->tokens, b->rate) + 1) {
		b->tokens = b->cap;
		return;
	}
	b->tokens += elapsed * b->rate;
	if (b->tokens > b->cap)
		b->tokens = b->cap;
}

/*
 * Nanoseconds until @cost units are available (0: available now).  A cost
 * above the capacity is charged as the capacity, so that it can pass at
 * all, once the bucket is full.
 */
static inline u64 rof_bucket_wait_ns(const struct rof_bucket *b, u64 cost)
{
	u64 need;

	if (!b->rate)
		return 0;
	need = cost * ROF_BUCKET_SCALE;
	if (cost > b->cap / ROF_BUCKET_SCALE)
		need = b->cap;
	if (b->tokens >= need)
		return 0;
	return rof_bucket_div(need - b->tokens + b->rate - 1, b->rate);
}

/* Takes @cost units; only after rof_bucket_wait_ns() returned 0. */
static inline void rof_bucket_take(struct rof_bucket *b, u64 cost)
{
	u64 need;

	if (!b->rate)
		return;
	need = cost * ROF_BUCKET_SCALE;
	if (cost > b->cap / ROF_BUCKET_SCALE)
		need = b->cap;
	b->tokens = b->tokens >= need ? b->tokens - need : 0;
}

#endif /* ROF_BUCKET_H */
