/*
 * hadamard_simd.h: q4, q8 and b-bit rows unpacked and rotated back by the inverse
 * Hadamard in one pass (hadamard_simd.c), for hadamard.c's hd_unpack_rows
 * only; call them only when hd_avx2_dim_ok(d) and qp_simd_level() (qpack_avx2.h)
 * is at least 1 (hd_avx2_*) or 2 (hd_512_*: the same with AVX-512).
 *
 * Each row's values are qpack's x̂ = μ + q·δ in float, put through
 * hadamard.c's butterflies in float (span 1, 2, 4, … in that order, each
 * a + b and a − b), then multiplied by scale: the
 * rows qp_decode then hd_rotate_back_rows give, bit for bit, with the row held
 * in registers instead of written, read back and spilled through a buffer.
 */
#ifndef SNAPSHOT_HADAMARD_SIMD_H
#define SNAPSHOT_HADAMARD_SIMD_H

#include <stdint.h>

/* 1 for the row lengths the fused kernels are built for: 32, 64, 128. */
int hd_avx2_dim_ok(int d);
/* One row of d floats (d >= 8, a power of two) rotated in place in float:
 * hadamard.c's hd_rotate_back_rows with AVX2, its scalar bits (any d, no
 * unpacking: qp_avx2() is enough). */
void hd_avx2_rotate_back_row(float *t, int d, float scale);
/* n rows of a row form (qpack.h: QP_B2 … QP_B6, QP_Q4, QP_Q8: b = 2, 3,
 * 4, 5, 6 or 8 bits a code) into x[n·d]; -1 at the first (δ, μ) pair
 * qpack.c refuses, the rows before it written, or for another b.  stream:
 * written with streaming stores when x is on a line of the vector's width
 * (32 bytes for hd_avx2_*, 64 for hd_512_*; the same bits; see
 * hd_unpack_rows). */
int hd_avx2_bits_rows(const uint8_t *src, int64_t n, int d, int b, float scale, float *x,
    int stream);
/* n rows of q4 per channel (QP_Q4_CH: groups of 32 rows) into x[n·d]; -1
 * at a refused pair, as above. */
int hd_avx2_q4_ch_rows(const uint8_t *src, int64_t n, int d, float scale, float *x,
    int stream);
int hd_512_bits_rows(const uint8_t *src, int64_t n, int d, int b, float scale, float *x,
    int stream);
int hd_512_q4_ch_rows(const uint8_t *src, int64_t n, int d, float scale, float *x,
    int stream);

#endif /* SNAPSHOT_HADAMARD_SIMD_H */
