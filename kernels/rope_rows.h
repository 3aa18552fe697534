/*
 * rope_rows.h: many head rows at once, on the CPU, for the cache pool's
 * re-rotation after a snapshot load and for unpacking fp16 rows
 * (kernels/cpu/rope_rows.c; AVX2 where the CPU has it, plain C otherwise).
 *
 * Both give the same bits as the one-at-a-time definitions: a rotation
 * through a table of kern_rope_angles is kern_rope_head_at (rope.h) at that
 * position, the same products and one subtraction or addition per element,
 * never fused; the fp16 widening is kern_f16_to_f32, which is exact (F16C's
 * vcvtph2ps gives the same bits, NaNs quieted alike).  So a pool rotated
 * here equals one rotated by kern_rope_head_at bit for bit, on any CPU.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef KERNELS_ROPE_ROWS_H
#define KERNELS_ROPE_ROWS_H

#include <stdint.h> /* for uint8_t, uint32_t, int64_t */

#include "kernels/kernels.h" /* for enum kern_rope_style */

/* Floats per position in a table (head_dim: a cosine and a sine per pair). */
#define KERN_ROPE_TABLE_ROW(head_dim) ((int64_t)(head_dim))

/* Rows [p0, p0 + n) of a table: the angles of positions p0 .. p0 + n − 1,
 * each row kern_rope_angles' values laid out for `style` (NORM: cos, sin of
 * pair i at 2i, 2i+1; NEOX: every cosine, then every sine).  head_dim even. */
void kern_rope_table_fill(float *table, uint32_t p0, int64_t n, float theta_scale,
    const float *ff, int64_t head_dim, enum kern_rope_style style);

/* Rotate n rows of src (head_dim each) into dst (may be src): row r by the
 * table's row pos[r] (pos NULL: row r), which the table must hold.
 * stream: dst written with streaming stores where it can be (AVX2, dst on
 * a 32-byte line, head_dim a multiple of 16, not in place): they bypass the
 * cache, so rows written once and read later (a loaded pool's) cost no
 * read of every line they overwrite.  The same bits either way. */
void kern_rope_rows(float *dst, const float *src, int64_t n, const uint32_t *pos,
    const float *table, int64_t head_dim, enum kern_rope_style style, int stream);

/* n little-endian fp16 values at src (any alignment) into dst as floats. */
void kern_f16_to_f32_rows(const uint8_t *src, float *dst, int64_t n);

#endif /* KERNELS_ROPE_ROWS_H */
