/*
 * cpu_internal.h: fast kernels of the CPU backend shared by the files of
 * kernels/cpu/ (vec_dot.c implements them) and by tests/test_quant.c.
 * Not for use outside kernels/cpu/ and tests/.
 *
 * All of these pick the SIMD level once, at first use, from the running CPU
 * (__builtin_cpu_supports): AVX-512 (F+BW+VL+VNNI, on 256-bit vectors for the
 * integer dots), AVX2 (+FMA, F16C), or plain C.  They are thread-safe and
 * allocate nothing.  Weight rows may sit at any byte alignment (F32 rows: 4).
 */
#ifndef KERNELS_CPU_INTERNAL_H
#define KERNELS_CPU_INTERNAL_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for int64_t */

#include "kernels/kernels.h" /* for enum kern_type */

/* out[r] = kern_vec_dot(t, rows + r * row_bytes, act, n) for r < n_rows.
 * `act` is in kern_vec_dot_act_type(t).  The decode hot path: Q4_1 and Q8_0
 * process several rows per pass so each activation block is loaded once. */
void kern_cpu_vec_dot_rows(enum kern_type t, const void *rows, size_t row_bytes,
    int64_t n_rows, const void *act, int64_t n, float *out);

/* out[k * out_stride + r] = kern_vec_dot(t, rows + r * row_bytes,
 * act + k * act_stride, n) for r < n_rows, k < n_tok, bit for bit: the
 * prefill's matmul (vec_tile.c).  The 32-element quants and the K-quants
 * unpack each weight block once for several tokens (AVX2, AVX-512; Q4_K,
 * Q5_K and Q6_K on AMX tiles where the CPU has them); other types and the
 * scalar level take the one-token path per token. */
void kern_cpu_vec_dot_tile(enum kern_type t, const void *rows, size_t row_bytes,
    int64_t n_rows, const void *act, size_t act_stride, int64_t n_tok, int64_t n,
    float *out, size_t out_stride, int dealt);

/* Whether the tile of type t at the level in use now takes its Q8_K
 * activations in the dealt form (Q4_K and Q6_K at AVX2: vec_tile_dealt.h); then
 * kern_cpu_vec_dot_tile with dealt 1 reads act in that form and gives the
 * same bits as kern_vec_dot on the Q8_K rows.  The form: per token
 * kern_cpu_q8k_dealt_row_bytes(n) bytes (a multiple of 64; act and its
 * stride 64-byte aligned), made from Q8_K rows by kern_cpu_q8k_deal_rows
 * (only where kern_cpu_vec_dot_tile_dealt said yes). */
int kern_cpu_vec_dot_tile_dealt(enum kern_type t);
size_t kern_cpu_q8k_dealt_row_bytes(int64_t n);
void kern_cpu_q8k_deal_rows(const void *src, size_t src_stride, void *dst, size_t dst_stride,
    int64_t n_tok, int64_t n);

/* Tokens per tile kern_cpu_vec_dot_tile takes for type t at the level in
 * use now; 0 where t has no tile kernel there (tests: that the tiles run). */
int kern_cpu_vec_dot_tile_tokens(enum kern_type t);

/* dst(n_rows, n) = the rows dequantized; bit-identical to kern_dequant_row
 * on every row (SIMD for F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K). */
void kern_cpu_dequant_rows(enum kern_type t, const void *rows, size_t row_bytes,
    int64_t n_rows, int64_t n, float *dst);

/* Σ a[i]·b[i] in f32 (SIMD; the summation order depends on the level). */
float kern_cpu_dot_f32(const float *a, const float *b, int64_t n);

/* The chunk attention's products (attn_gemm.c): s(nq, nvis) = scale ·
 * q·kᵀ (q rows ldq apart, k rows hd apart) and o(nq, hd) = p·v (o rows ldo
 * apart, p rows nvis apart, v rows hd apart).  At AVX2 and AVX-512 each
 * element is one chain of FMAs in order (over d for a logit, then × scale;
 * over the units for an output), the same bits at both levels; the scalar
 * level calls sgemm.
 *
 * The logits read k transposed, from a panel packed once per KV head and
 * shared by every query that reads those keys: kern_cpu_attn_kt_floats(nk,
 * hd) floats for nk keys (nk rounded up to KERN_CPU_ATTN_KT_ALIGN), or 0
 * at the scalar level, which has no panel; kern_cpu_attn_kt_pack writes
 * keys [i0, i1) of k into it (i0 a multiple of KERN_CPU_ATTN_KT_ALIGN, so
 * that threads packing different ranges touch different cache lines; the
 * call with i1 == nk also zeroes the padding); kern_cpu_attn_qk reads the
 * first nvis <= nk keys from kt, or from k by sgemm when kt is NULL or the
 * level is scalar (so k is always given).  The layout does not depend on
 * the level: key j, dimension d at kt[(j / 16)·16·hd + d·16 + j % 16]. */
#define KERN_CPU_ATTN_KT_ALIGN 32
size_t kern_cpu_attn_kt_floats(int64_t nk, int64_t hd);
void kern_cpu_attn_kt_pack(float *kt, const float *k, int64_t nk, int64_t i0, int64_t i1,
    int64_t hd);
void kern_cpu_attn_qk(float *s, const float *q, int64_t ldq, const float *k, const float *kt,
    int64_t nq, int64_t nvis, int64_t hd, float scale);
void kern_cpu_attn_pv(float *o, int64_t ldo, const float *p, const float *v, int64_t nq,
    int64_t nvis, int64_t hd);

/* Softmax of s[0..n) in place: max-subtracted, sum in double (softmax.c;
 * AVX2 evaluates exp by polynomial, within 2 ulp of expf). */
void kern_cpu_softmax_row(float *s, int64_t n);

/* g[i] = silu(g[i])·u[i] for i < n (silu.c: AVX2 with a polynomial exp,
 * within a few ulp of the scalar g / (1 + expf(−g))·u). */
void kern_cpu_silu_mul_run(float *g, const float *u, int64_t n);

/* out[r] = row r (type Q2_K..Q6_K) · y, nb super-blocks, at SIMD level lvl
 * (vec_dot_k.c; kern_cpu_vec_dot_rows calls it for those types). */
void kern_cpu_kq_dot_rows(enum kern_type t, int lvl, const uint8_t *rows, size_t row_bytes,
    int64_t n_rows, const struct kern_block_q8_k *y, int64_t nb, float *out);

/* The packed sub-block scales of the K-quants (quant.c): Q4_K/Q5_K's 6-bit
 * scale and min of sub-block j (of 8), and Q3_K's 16 6-bit scales (before
 * the -32). */
void kern_cpu_q4k_scale_min(int j, const uint8_t *s, int *sc, int *mn);
void kern_cpu_q3k_scales(const uint8_t *p, int sc[16]);

/* The Q4_K, Q5_K or Q6_K rows [0, n_rows) · tokens [0, n_tok) on AMX-INT8
 * tiles (vec_tile_amx.c), n_rows and n_tok rounded down to multiples of 16
 * (the rest is the caller's), nb super-blocks per row: out[k·os + r], bit
 * for bit kern_vec_dot's at AVX-512.  Call only when kern_cpu_amx_on();
 * returns 0, or -1 (nothing written) when this thread's buffer (8576
 * bytes per super-block of 16 rows, Q6_K 12352) cannot be had. */
int kern_cpu_amx_kq(enum kern_type t, const uint8_t *rows, size_t rb, int64_t n_rows,
    const uint8_t *act, size_t as, int64_t n_tok, int64_t nb, float *out, size_t os);
/* Whether the prefill's Q4_K/Q5_K/Q6_K tiles run on AMX now: the CPU has
 * AMX-TILE + AMX-INT8, the OS granted this process the tile state, the
 * level in use is AVX-512 and kern_cpu_force_amx has not switched it off. */
int kern_cpu_amx_on(void);
/* Tests and benchmarks only: AMX off (0), on where the CPU and OS have it
 * (1; returns -1 if they do not, nothing changed) or back to that default
 * (-1).  Not synchronised with kernels running on other threads. */
int kern_cpu_force_amx(int on);

/* SIMD levels, best last. */
enum kern_cpu_simd {
	KERN_CPU_SIMD_AUTO = -1, /* for kern_cpu_force_simd: back to detection */
	KERN_CPU_SIMD_SCALAR = 0,
	KERN_CPU_SIMD_AVX2 = 1,   /* AVX2 + FMA + F16C */
	KERN_CPU_SIMD_AVX512 = 2  /* AVX-512 F, BW, VL, VNNI */
};

/* The best level this CPU supports. */
int kern_cpu_simd_detect(void);
/* The level in use now. */
int kern_cpu_simd_level(void);
/* Tests and benchmarks only: use `level` from now on (AUTO: the detected
 * one).  Returns 0, or -1 if the CPU lacks that level (nothing changes).
 * Not synchronised with kernels running on other threads. */
int kern_cpu_force_simd(int level);

#endif /* KERNELS_CPU_INTERNAL_H */
