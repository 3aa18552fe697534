/*
 * qpack.h: packing of K / V rows for snapshot records (snapshot/ only).
 *
 * A block is n rows of d floats (row-major, d even).  Three schemes:
 *
 *   QP_F16   every value as fp16 (little-endian, round to nearest even):
 *            2·n·d bytes.
 *   QP_Q4    q4 along the row: each row is d/32 groups of 32 values, each
 *            group [fp16 scale δ][fp16 min μ][16 bytes of 4-bit codes, value
 *            2j in the low nibble of byte j, 2j+1 in the high]:
 *            n·(d/32)·20 bytes (d must be a multiple of 32).
 *   QP_Q4_CH q4 per channel: rows are taken in groups of 32 consecutive rows
 *            (the last group holds n mod 32 rows when that is not 0); each
 *            group is d pairs [fp16 δ][fp16 μ] (channel c's scale and min
 *            over the group's rows) followed by the group's rows of codes,
 *            d/2 bytes each, channel 2c in the low nibble:
 *            ceil(n/32)·4·d + n·d/2 bytes.
 *   QP_Q8    q8 along the row, as QP_Q4 with 8-bit codes: each group
 *            [fp16 δ][fp16 μ][32 code bytes]: n·(d/32)·36 bytes.
 *   QP_B2, QP_B3, QP_B5, QP_B6 (format version 5, issue 28)
 *            b-bit codes along the row, b = 2, 3, 5, 6: each group
 *            [fp16 δ][fp16 μ] then its 32 codes packed little-endian in
 *            4·b bytes (code j in bits j·b … j·b + b − 1 of those bytes,
 *            bit i of the field being bit i mod 8 of byte i / 8):
 *            n·(d/32)·(4 + 4·b) bytes.  q4 and q8 are this layout at
 *            b = 4 and 8 (tests/test_snapshot.c checks the bytes agree);
 *            they keep their own SIMD code.
 *
 * Quantization (every q scheme, L = 2^b − 1: 15 for q4, 255 for q8): values are
 * saturated to ±65504 (the fp16 range); μ = the largest fp16 <= min, δ =
 * the smallest fp16 >= (max − μ)/L (bumped until μ + Lδ >= max), so every
 * value lies in [μ, μ + Lδ] and q = round((x − μ)/δ) never clamps:
 * |x − x̂| <= δ/2 up to float rounding, with x̂ = μ + q·δ evaluated in
 * float.  δ = 0 when the range is one fp16 value.  The decoder refuses a
 * non-finite μ or δ and a negative δ (the encoder never writes them).
 */
#ifndef SNAPSHOT_QPACK_H
#define SNAPSHOT_QPACK_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for uint8_t */

#define QP_GROUP 32

enum qp_scheme {
	QP_F16 = 0,
	QP_Q4 = 1,
	QP_Q4_CH = 2,
	QP_Q8 = 3,
	QP_B2 = 4, /* format version 5: */
	QP_B3 = 5,
	QP_B5 = 6,
	QP_B6 = 7
};
#define QP_SCHEME_MAX QP_B6

/* Bits per code of a q scheme along the row (4, 8, 2, 3, 5, 6); 0 for
 * QP_F16 and QP_Q4_CH. */
int qp_row_bits(enum qp_scheme s);

/* Bytes of n rows of d values under scheme; 0 when n == 0. */
uint64_t qp_bytes(enum qp_scheme s, uint64_t n, int d);

/* Pack n rows of src (n, d) into dst (qp_bytes bytes).  0, or -1 when a q
 * scheme meets a NaN (nothing sensible to store). */
int qp_encode(enum qp_scheme s, const float *src, int64_t n, int d, uint8_t *dst);

/* Unpack qp_bytes(s, n, d) bytes of src into dst (n, d); dst == NULL only
 * validates.  0, or -1 for a corrupt block (a bad scale or min). */
int qp_decode(enum qp_scheme s, const uint8_t *src, int64_t n, int d, float *dst);

#endif /* SNAPSHOT_QPACK_H */
