/*
 * clock.h: timing helpers the benches share (header-only): the calling
 * thread's CPU time (common/clock.h's kv_thread_cpu_s), and the comparator
 * of doubles their medians sort with (common/sort.h's kv_cmp_double).
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include "common/clock.h"
#include "common/sort.h"

#endif /* BENCH_CLOCK_H */
