/*
 * rng.h: the deterministic pseudo-random numbers the engine and the tests
 * draw (header-only, libc only): xorshift64* (Vigna 2016), splitmix64's
 * output function (Steele, Lea, Flood 2014) and its stream.  Streams must
 * never change: sampling with a seed, the heads' initial weights, the
 * training examples and every test's data depend on them.
 */
#ifndef COMMON_RNG_H
#define COMMON_RNG_H

#include <stdint.h>

/* The next number of the xorshift64* stream whose state is *s (non-zero). */
static inline uint64_t
kv_xorshift64s(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* splitmix64's output function: a well-mixed 64-bit hash of x. */
static inline uint64_t
kv_splitmix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The next number of the splitmix64 stream whose state is *s (any value):
 * the state steps by the golden ratio, the number is the mix of the new
 * state. */
static inline uint64_t
kv_splitmix64_next(uint64_t *s)
{
	uint64_t x = *s;
	*s += UINT64_C(0x9e3779b97f4a7c15);
	return kv_splitmix64(x);
}

#endif /* COMMON_RNG_H */
