/*
 * rope.h: the one definition of rotary position embedding (RoPE): the angle
 * of every pair of a head vector and which two elements form the pair, per
 * style (enum kern_rope_style in kernels.h).
 *
 * Everything that rotates includes this header: the CPU op
 * (kernels/cpu/ops.c), the CUDA op (kernels/cuda/cuda_ops.cu, where
 * KERN_ROPE_FN makes these functions __host__ __device__), the cache pool's
 * re-rotation (engine/cache/kv_pool.c) and the scalar reference pass
 * (engine/run/ref_forward.c).  They are static inline so every caller performs
 * the same float operations: the angles are part of the numbers that tests
 * compare bit for bit (a snapshot reloaded answers exactly as the live
 * cache), so there must not be a second formula anywhere.
 *
 * Angle of pair i (0 <= i < head_dim/2) at position p: p · s^i with
 * s = base^(-2/head_dim), built by repeated float multiplication as
 * llama.cpp does (not pow: the rounding of each step is part of the
 * definition).
 *
 * Frequency factors (Llama 3.1's rope_freqs.weight, llama.cpp's
 * freq_factors): an optional table ff of head_dim/2 divisors; pair i's angle
 * is then (p · s^i) / ff[i], one float division as ggml's rope does.  NULL
 * means none (dividing by 1 would be exact too, but is not done).
 */
#ifndef KERNELS_ROPE_H
#define KERNELS_ROPE_H

#include <math.h>   /* for powf, cosf, sinf */
#include <stdint.h> /* for uint32_t, int64_t */

#include "kernels/kernels.h" /* for enum kern_rope_style */

#ifdef __CUDACC__
#define KERN_ROPE_FN static inline __host__ __device__
#else
#define KERN_ROPE_FN static inline
#endif

/* Largest head_dim the ops rotate (their angle tables live on the stack). */
#define KERN_ROPE_MAX_HEAD_DIM 512

/* s = base^(-2/head_dim): the ratio of consecutive pairs' angles. */
KERN_ROPE_FN float
kern_rope_theta_scale(float base, int64_t head_dim)
{
	return powf(base, -2.0f / (float)head_dim);
}

/* The angle of pair i at position p, one pair at a time (the GPU's thread
 * per pair); equal bit for bit to kern_rope_angles' entry i. */
KERN_ROPE_FN float
kern_rope_theta(uint32_t p, float theta_scale, const float *ff, int64_t i)
{
	float theta = (float)p;
	int64_t k;
	for (k = 0; k < i; k++)
		theta *= theta_scale;
	return ff ? theta / ff[i] : theta;
}

/* cs[2i] = cos, cs[2i+1] = sin of every pair's angle at position p
 * (head_dim/2 pairs): the same multiplications as kern_rope_theta. */
KERN_ROPE_FN void
kern_rope_angles(float *cs, uint32_t p, float theta_scale, const float *ff, int64_t head_dim)
{
	float theta = (float)p;
	int64_t i;
	for (i = 0; i < head_dim / 2; i++) {
		float t = ff ? theta / ff[i] : theta;
		cs[2 * i] = cosf(t);
		cs[2 * i + 1] = sinf(t);
		theta *= theta_scale;
	}
}

/* The two elements of pair i: adjacent (2i, 2i+1) for NORM, halves
 * (i, i + head_dim/2) for NEOX. */
KERN_ROPE_FN void
kern_rope_pair(enum kern_rope_style style, int64_t head_dim, int64_t i, int64_t *a, int64_t *b)
{
	if (style == KERN_ROPE_NEOX) {
		*a = i;
		*b = i + head_dim / 2;
	} else {
		*a = 2 * i;
		*b = 2 * i + 1;
	}
}

/* Rotate pair (a, b) of src by the angle with cosine c and sine s into dst
 * (dst may be src). */
KERN_ROPE_FN void
kern_rope_rotate_pair(float *dst, const float *src, int64_t a, int64_t b, float c, float s)
{
	float x0 = src[a], x1 = src[b];
	dst[a] = x0 * c - x1 * s;
	dst[b] = x0 * s + x1 * c;
}

/* Rotate one head vector src (head_dim) into dst (may be src) with the
 * angles of kern_rope_angles (a table shared by a token's heads). */
KERN_ROPE_FN void
kern_rope_head(float *dst, const float *src, const float *cs, int64_t head_dim,
    enum kern_rope_style style)
{
	int64_t i, a, b;
	for (i = 0; i < head_dim / 2; i++) {
		kern_rope_pair(style, head_dim, i, &a, &b);
		kern_rope_rotate_pair(dst, src, a, b, cs[2 * i], cs[2 * i + 1]);
	}
}

/* Rotate one head vector src (any even head_dim) into dst (may be src) to
 * position p, the angles made on the way: bit for bit kern_rope_angles +
 * kern_rope_head, without a table's size limit (the cache pool rotates
 * whatever head_dim a snapshot header names). */
KERN_ROPE_FN void
kern_rope_head_at(float *dst, const float *src, uint32_t p, float theta_scale,
    const float *ff, int64_t head_dim, enum kern_rope_style style)
{
	float theta = (float)p;
	int64_t i, a, b;
	for (i = 0; i < head_dim / 2; i++) {
		float t = ff ? theta / ff[i] : theta;
		kern_rope_pair(style, head_dim, i, &a, &b);
		kern_rope_rotate_pair(dst, src, a, b, cosf(t), sinf(t));
		theta *= theta_scale;
	}
}

#endif /* KERNELS_ROPE_H */
