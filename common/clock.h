/*
 * clock.h: the monotonic clock in milliseconds and a sleep that resumes
 * after a signal, on libc alone: the redis-cluster client's deadlines and
 * pauses (storage/rcluster.c) and its test's timings; any clock, and the
 * calling thread's CPU time, in seconds (eng_now, the converter's deadline,
 * the load's and the benches' phase times); the wall clock in microseconds
 * (the store's stamps).
 */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Seconds on clock id (CLOCK_MONOTONIC: eng_now's, the converter's deadline). */
static inline double
kv_clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time the calling thread has used: on a busy machine,
 * unlike the wall clock, it leaves out the time the thread waited for a
 * core. */
static inline double
kv_thread_cpu_s(void)
{
	return kv_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static inline int64_t
kv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wall clock (CLOCK_REALTIME) in microseconds: the store's stamps
 * (a document's created_us, last_used_us) and prune's age cutoff, and
 * their test's. */
static inline int64_t
kv_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ms <= 0: no pause. */
static inline void
kv_sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
	if (ms > 0)
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
}

#endif
