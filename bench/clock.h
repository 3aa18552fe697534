/*
 * clock.h: timing helpers the benches share (header-only): the calling
 * thread's CPU time, and a qsort comparator of doubles for medians.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h> /* for clock_gettime */

/* Seconds of CPU time the calling thread has used: on a busy machine,
 * unlike the wall clock, it leaves out the time the thread waited for a
 * core. */
static inline double
bench_thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort order of doubles, ascending. */
static inline int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#endif /* BENCH_CLOCK_H */
