/*
 * ada_split.h: Ada-KV's budget split in double precision, the one copy the
 * policy oracles (test_policy.c, test_locret.c) check the engine's
 * allocation against (spec/adakv.md §4.2: the α-mix and the capacity
 * clamp).
 */
#ifndef TESTS_ADA_SPLIT_H
#define TESTS_ADA_SPLIT_H

#include <math.h>
#include <stdint.h>

#define TH_ADA_MAX_HEADS 64

/* The split of nh·b_sel kept units over nh (<= TH_ADA_MAX_HEADS) heads:
 * head[0..n) names the head of each candidate, best first (n > nh·b_sel);
 * cnt[m], head m's share of the nh·b_sel best, mixes with the flat share:
 * a[m] = floor((1 − alpha)·cnt[m] + alpha·b_sel), the remainder to the
 * largest fractions (the lowest head on a tie); then a head over its
 * cand[m] candidates gives the excess to the best candidates not yet
 * taken.  How many heads were clamped. */
static inline int
th_ada_split(int nh, const int *head, int64_t n, int64_t b_sel, double alpha,
    const int64_t *cand, int64_t *a)
{
	int64_t cnt[TH_ADA_MAX_HEADS] = { 0 }, taken[TH_ADA_MAX_HEADS] = { 0 };
	int64_t sum = 0, excess = 0, i;
	double x[TH_ADA_MAX_HEADS], fr[TH_ADA_MAX_HEADS];
	int m, clamped = 0;

	for (i = 0; i < nh * b_sel; i++)
		cnt[head[i]]++;
	for (m = 0; m < nh; m++) {
		x[m] = (1.0 - alpha) * (double)cnt[m] + alpha * (double)b_sel;
		a[m] = (int64_t)floor(x[m] + 1e-9);
		fr[m] = x[m] - (double)a[m];
		sum += a[m];
	}
	for (i = nh * b_sel - sum; i > 0; i--) {
		int best = 0;
		for (m = 1; m < nh; m++)
			if (fr[m] > fr[best])
				best = m;
		a[best]++;
		fr[best] = -1.0; /* below any fraction: once each */
	}
	/* capacity clamp: the excess to the best not-yet-taken candidates */
	for (m = 0; m < nh; m++)
		if (a[m] > cand[m]) {
			excess += a[m] - cand[m];
			a[m] = cand[m];
			clamped++;
		}
	for (i = 0; i < n && excess > 0; i++) {
		m = head[i];
		if (taken[m] >= a[m] && a[m] < cand[m]) {
			a[m]++;
			excess--;
		}
		taken[m]++;
	}
	return clamped;
}

#endif /* TESTS_ADA_SPLIT_H */
