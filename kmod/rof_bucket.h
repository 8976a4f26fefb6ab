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
	u64 debt;	/* scaled units charged beyond empty; tokens is 0 */
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
	b->debt = 0;
	b->last_ns = now_ns;
}

static inline void rof_bucket_refill(struct rof_bucket *b, u64 now_ns)
{
	u64 elapsed, room, add;

	if (!b->rate || now_ns <= b->last_ns)
		return;
	elapsed = now_ns - b->last_ns;
	b->last_ns = now_ns;
	/* Debt is paid first.  Compare before multiplying: elapsed * rate may not fit. */
	room = b->cap - b->tokens + b->debt;
	if (elapsed >= rof_bucket_div(room, b->rate) + 1) {
		b->debt = 0;
		b->tokens = b->cap;
		return;
	}
	add = elapsed * b->rate;
	if (add <= b->debt) {
		b->debt -= add;
		return;
	}
	add -= b->debt;
	b->debt = 0;
	b->tokens += add;
	if (b->tokens > b->cap)
		b->tokens = b->cap;
}

static inline u64 rof_bucket_wait_ns(const struct rof_bucket *b, u64 cost)
{
	u64 need;

	if (!b->rate)
		return 0;
	need = cost * ROF_BUCKET_SCALE;
	if (cost > b->cap / ROF_BUCKET_SCALE)
		need = b->cap;
	if (!b->debt && b->tokens >= need)
		return 0;
	/* With a debt the bucket is empty: the debt is paid, then @cost. */
	return rof_bucket_div(need + b->debt - b->tokens + b->rate - 1, b->rate);
}

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

/*
 * Give back what rof_bucket_take(@b, @cost) took, for a request that did
 * not run after all: a debt charged meanwhile is paid first, and the
 * bucket never holds more than it can.
 */
static inline void rof_bucket_untake(struct rof_bucket *b, u64 cost)
{
	u64 give;

	if (!b->rate)
		return;
	give = cost * ROF_BUCKET_SCALE;
	if (cost > b->cap / ROF_BUCKET_SCALE)
		give = b->cap;
	if (b->debt >= give) {
		b->debt -= give;
		return;
	}
	give -= b->debt;
	b->debt = 0;
	b->tokens = b->cap - b->tokens > give ? b->tokens + give : b->cap;
}

/*
 * Charge @cost that was not known before the work was admitted (an
 * INVOKE's response): what the bucket lacks becomes a debt, paid from
 * the next refills before anything else is admitted.
 */
static inline void rof_bucket_charge(struct rof_bucket *b, u64 cost)
{
	u64 need;

	if (!b->rate || !cost)
		return;
	need = cost * ROF_BUCKET_SCALE;
	if (cost > b->cap / ROF_BUCKET_SCALE)
		need = b->cap;
	if (b->tokens >= need) {
		b->tokens -= need;
		return;
	}
	b->debt += need - b->tokens;
	b->tokens = 0;
}

#endif /* ROF_BUCKET_H */
