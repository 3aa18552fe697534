/*
 * qpack_avx2.h: the q4 / q8 unpacking of qpack.c with AVX2 (qpack_avx2.c),
 * bit for bit the scalar x̂ = μ + q·δ.  snapshot/qpack.c only; call the
 * others only when qp_avx2() is 1.
 */
#ifndef SNAPSHOT_QPACK_AVX2_H
#define SNAPSHOT_QPACK_AVX2_H

#include <stdint.h>

/* 1 when this CPU runs AVX2 (checked once). */
int qp_avx2(void);
/* One group of 32: x[j] = m + q_j·d, q_j the nibbles of codes[16] (2j low,
 * 2j + 1 high) or the bytes of codes[32]. */
void qp_avx2_q4_group(const uint8_t *codes, float m, float d, float *x);
void qp_avx2_q8_group(const uint8_t *codes, float m, float d, float *x);
/* One row of d channels (d a multiple of 32) of q4 per channel: x[c] =
 * mm[c] + q_c·dd[c], q_c the nibbles of codes[d/2]. */
void qp_avx2_q4_ch_row(const uint8_t *codes, const float *mm, const float *dd, int d, float *x);

#endif /* SNAPSHOT_QPACK_AVX2_H */
