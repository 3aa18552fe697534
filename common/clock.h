/*
 * clock.h: the monotonic clock in milliseconds and a sleep that resumes
 * after a signal, on libc alone: the redis-cluster client's deadlines and
 * pauses (storage/rcluster.c) and its test's timings.
 */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t
kv_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
