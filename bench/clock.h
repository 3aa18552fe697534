/*
 * clock.h: timing helpers the benches share (header-only): the calling
 * thread's CPU time (common/clock.h's kv_thread_cpu_s), and a qsort
 * comparator of doubles for medians.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include "common/clock.h"

/* qsort order of doubles, ascending. */
static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#endif /* BENCH_CLOCK_H */
