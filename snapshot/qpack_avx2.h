/*
 * qpack_avx2.h: the q4 / q8 unpacking of qpack.c with AVX2 (qpack_avx2.c),
 * bit for bit the scalar x̂ = μ + q·δ.  snapshot/qpack.c only; call the
 * others only when qp_avx2() is 1.
 */
#ifndef SNAPSHOT_QPACK_AVX2_H
#define SNAPSHOT_QPACK_AVX2_H

#include <stdint.h>

/* 1 when this CPU runs AVX2 and F16C (checked once). */
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
/* One row of d channels (d a multiple of 32) of q4 per channel: x[c] =
 * mm[c] + q_c·dd[c], q_c the nibbles of codes[d/2]. */
void qp_avx2_q4_ch_row(const uint8_t *codes, const float *mm, const float *dd, int d, float *x);

#endif /* SNAPSHOT_QPACK_AVX2_H */
