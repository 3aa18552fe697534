/*
 * bits.h: a float's bit pattern and back, by memcpy (no aliasing games): the
 * fp16 and bf16 conversions (kernels/cpu/quant.c), the snapshot's bias
 * section (snapshot/snapshot_refit.c), the tests' exact comparisons.
 */
#ifndef COMMON_BITS_H
#define COMMON_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t
kv_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float
kv_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

#endif
