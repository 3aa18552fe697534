/*
 * qpack_avx2.h: the q4 / q8 / b-bit unpacking of qpack.c with AVX2 (qpack_avx2.c),
 * bit for bit the scalar x̂ = μ + q·δ.  snapshot/qpack.c only; call the
 * others only when qp_avx2() is 1.
 */
#ifndef SNAPSHOT_QPACK_AVX2_H
#define SNAPSHOT_QPACK_AVX2_H

#include <stdint.h>

/* The SIMD the snapshot kernels use on this CPU (checked once): 0 none,
 * 1 AVX2 and F16C, 2 also AVX-512 F and DQ (hadamard_simd.c). */
int qp_simd_level(void);
/* 1 when qp_simd_level() >= 1: qpack's AVX2 kernels may run. */
int qp_avx2(void);
/* n groups of 32 of the q4 (20 bytes each) or q8 (36) row form, each a
 * stored (δ, μ) fp16 pair then its codes, into x[32·n]: x[j] = μ + q_j·δ,
 * q_j the nibbles of the 16 code bytes (2j low, 2j + 1 high) or the 32
 * code bytes, with
 * the pair checked and widened (F16C, exact as kern_f16_to_f32) in the
 * same loop; -1 at the first pair qpack.c refuses (infinite or NaN, or
 * δ negative), the groups before it written. */
int qp_avx2_q4_rows(const uint8_t *src, int64_t n, float *x);
int qp_avx2_q8_rows(const uint8_t *src, int64_t n, float *x);
/* The same for n groups of the b-bit row form, b = 2, 3, 5 or 6 (4 + 4·b
 * bytes each: the pair, then four runs of eight codes in b bytes, read
 * little-endian); -1 at the first pair refused (the groups before it
 * written), or for another b. */
int qp_avx2_bits_rows(const uint8_t *src, int64_t n, int b, float *x);
/* One group of gn rows of d channels (d a multiple of 32, at most
 * QP_AVX2_MAX_DIM) of q4 per channel, as qpack.h lays it out (d (δ, μ)
 * pairs, then gn rows of d/2 code bytes), into x[gn·d]: x[r·d + c] = μ_c +
 * q·δ_c; -1, nothing written, when a pair is one qpack.c refuses. */
#define QP_AVX2_MAX_DIM 1024
int qp_avx2_q4_ch_group(const uint8_t *src, int64_t gn, int d, float *x);
/* Tests only: qp_simd_level() answers level from now on (-1: what the CPU
 * has again); -1, nothing changed, for a level this CPU does not have. */
int qp_simd_force(int level);

#endif /* SNAPSHOT_QPACK_AVX2_H */
