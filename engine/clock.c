/*
 * clock.c: the monotonic clock every timing in kvsnap reads.
 */
#include <time.h>

#include "engine/base.h"

double
eng_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
