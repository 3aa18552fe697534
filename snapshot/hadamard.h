/*
 * hadamard.h: the orthonormal Walsh-Hadamard rotation of K / V rows before
 * they are quantized (snapshot/ only; the SNAP_*_H forms of snapshot.h).
 *
 * For a row length d = 2^k, H_d[i][j] = (-1)^popcount(i & j) / sqrt(d): a
 * symmetric orthogonal matrix, so it is its own inverse and rotating twice
 * gives the row back.  Spreading each value over every channel turns the
 * few large channels of a key row (the outliers that set a 4-bit group's
 * range) into a flat spread, so the quantizer's step shrinks; the error it
 * then adds is rotated back unchanged in L2 norm (H is orthogonal).
 *
 * Before quantizing, each row is transformed in double (the fast
 * transform, k = log2 d rounds of butterflies) and rounded to float once
 * (hd_rotate_rows: the stored bytes).  The load rotates back in float (the
 * same rounds, each sum rounded to float, then one product by fl(1/√d):
 * hd_rotate_back_rows, hd_unpack_rows), within (k + 2)·2^-24·‖x‖₂ of the
 * exact transform in L2 (tests/test_hadamard.c gives the reasoning):
 * thousands of times below the finest stored step (8 bits, ~2^-9 of a
 * group's range), and half the vectors of double with no widening: the
 * rotation back of every kept unit is most of a 4-bit snapshot's load.
 */
#ifndef SNAPSHOT_HADAMARD_H
#define SNAPSHOT_HADAMARD_H

#include <stdint.h>

#include "snapshot/qpack.h" /* for enum qp_scheme */

#define HD_MAX_DIM 1024

/* 1 when rows of d values can be rotated: d a power of two, 2..HD_MAX_DIM. */
int hd_dim_ok(int d);

/* x (n rows of d values) <- each row times H_d, in place.  d must satisfy
 * hd_dim_ok (else nothing is done). */
void hd_rotate_rows(float *x, int64_t n, int d);

/* x <- each row times H_d in float (the load's rotation back, above); d
 * as hd_rotate_rows. */
void hd_rotate_back_rows(float *x, int64_t n, int d);

/* qp_decode(s, src, n, d, dst) then, when dst and hd_dim_ok(d),
 * hd_rotate_back_rows(dst, n, d): the rotated forms' rows unpacked and rotated
 * back, the same bits, in one pass where hadamard_simd.c has a kernel (q4,
 * q4 per channel, q8 and the b-bit forms, d 32 to 128, AVX2 or AVX-512).  0, or -1 for a corrupt block.
 * stream: those kernels write with streaming stores when dst is on a
 * 32-byte line, bypassing the cache: rows that are not read again soon (a
 * snapshot's pool, 776 bytes of it per unit) then cost no read of every
 * line they overwrite; the same bits either way. */
int hd_unpack_rows(enum qp_scheme s, const uint8_t *src, int64_t n, int d, float *dst,
    int stream);

#endif /* SNAPSHOT_HADAMARD_H */
