/*
 * clock.c: the monotonic clock every timing in kvsnap reads.
 */
#include "common/clock.h"
#include "engine/base.h"

double
eng_now(void)
{
	return kv_clock_s(CLOCK_MONOTONIC);
}
