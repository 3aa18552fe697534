/*
 * bench_quant.c: single-thread throughput of the decode kernels
 * (kern_cpu_vec_dot_rows) and of kern_cpu_dequant_rows, at every SIMD level
 * this CPU has.
 *
 * "hot" repeats one matrix, which then sits in L2/L3; "stream" walks copies
 * of it spread over BQ_STREAM_BYTES, more than the last-level cache, as a
 * decode step reading the whole model does.  GB/s counts weight bytes read
 * (dequant: f32 bytes written).  Each cell reports the fastest pass over a
 * matrix, which is robust against other load on the machine; "mean" is the
 * average pass.  Usage: bench_quant [seconds per cell] [types [TYPE] |
 * prefill [TYPE [ROWSxCOLS]] | attn];
 * "types": vec_dot_rows of every weight type (or only TYPE, e.g. q4_K) on
 * Qwen2.5-1.5B's shapes instead; "prefill [TYPE]": a whole 128-token matmul
 * (the op table's, one thread) of every weight type on attn_q's shape (or
 * ROWSxCOLS: 1536x8960 is the 1.5B's ffn_down), by
 * dequantize + sgemm and by the integer dots, the choice ops.c's
 * KERN_PREFILL_QDOT_TYPES records; beside them "1-tok", the integer dots
 * one token at a time (kern_cpu_vec_dot_rows per token and 64-row slice,
 * the activations quantized as ops.c does: the matmul before vec_tile.c),
 * so "1-tok/qdot" is what the tile kernels gain; timed in the thread's CPU
 * time, the three paths taking turns; "attn": the chunk attention's two
 * products for one block of 32 queries against 512 / 2K / 8K keys (head
 * sizes 64 and 128), by OpenBLAS's sgemm (the kernel it picked for this CPU
 * is printed) and by attn_gemm.c's kernels at AVX2 and AVX-512, one thread,
 * taking turns, in GFLOP/s; q·kᵀ reads a kᵀ panel packed before the timing,
 * as ops.c packs it once per KV head for all of a call's query blocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/clock.h"
#include "engine/engine.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/kernels.h"

#define BQ_STREAM_BYTES (512u << 20)

/* Byte offsets of the f16 scale fields of a block of type t (-1: none). */
static void
bq_scale_offsets(enum kern_type t, int off[2])
{
	off[0] = off[1] = -1;
	switch (t) {
	case KERN_TYPE_Q4_0:
	case KERN_TYPE_Q5_0:
	case KERN_TYPE_Q8_0:
		off[0] = 0;
		break;
	case KERN_TYPE_Q4_1:
	case KERN_TYPE_Q5_1:
	case KERN_TYPE_Q4_K:
	case KERN_TYPE_Q5_K:
		off[0] = 0;
		off[1] = 2;
		break;
	case KERN_TYPE_Q2_K:
		off[0] = 80;
		off[1] = 82;
		break;
	case KERN_TYPE_Q3_K:
		off[0] = 108;
		break;
	case KERN_TYPE_Q6_K:
		off[0] = 208;
		break;
	case KERN_TYPE_F32: /* random bits: keep the values finite and normal */
	case KERN_TYPE_F16:
	case KERN_TYPE_BF16:
	case KERN_TYPE_Q8_1:
	case KERN_TYPE_Q8_K:
	case KERN_TYPE_COUNT:
		break;
	}
}

/* Random weight rows with sane values: block scale fields 1/64 (mins
 * -1/64); F16/BF16/F32 elements with a moderate exponent. */
static void
bq_fill(enum kern_type t, uint8_t *p, size_t bytes)
{
	size_t bb = kern_type_block_bytes(t), i;
	uint64_t s = 0x1234567;
	int off[2];

	for (i = 0; i < bytes; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(s >> 56);
	}
	bq_scale_offsets(t, off);
	for (i = 0; i + bb <= bytes; i += bb) {
		if (t == KERN_TYPE_F16)
			p[i + 1] = (uint8_t)((p[i + 1] & 0x83) | 0x30); /* |x| in [0.125, 1) */
		else if (t == KERN_TYPE_BF16)
			p[i + 1] = (uint8_t)((p[i + 1] & 0x80) | 0x3e);
		else if (t == KERN_TYPE_F32)
			p[i + 3] = (uint8_t)((p[i + 3] & 0x80) | 0x3e);
		if (off[0] >= 0) {
			p[i + (size_t)off[0]] = 0x00; /* d = 2^-6 */
			p[i + (size_t)off[0] + 1] = 0x24;
		}
		if (off[1] >= 0) {
			p[i + (size_t)off[1]] = 0x00; /* -2^-6 */
			p[i + (size_t)off[1] + 1] = 0xa4;
		}
	}
}

/* One table row: vec_dot_rows over (rows × cols) of type t. */
static void
bq_vec_dot(enum kern_type t, int64_t rows, int64_t cols, int stream, double secs)
{
	size_t rb = kern_type_row_bytes(t, cols), mat = rb * (size_t)rows;
	size_t n_mat = stream ? BQ_STREAM_BYTES / mat + 1 : 1, k = 0;
	uint8_t *w = malloc(mat * n_mat);
	float *x = malloc((size_t)cols * sizeof(float)), *out = malloc((size_t)rows * sizeof(float));
	void *act = malloc((size_t)cols * sizeof(float));
	double t0, t1, calls = 0, best;
	int64_t i;
	int l;

	if (!w || !x || !out || !act) {
		fprintf(stderr, "bench_quant: out of memory\n");
		exit(1);
	}
	bq_fill(t, w, mat * n_mat);
	for (i = 0; i < cols; i++)
		x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	kern_quant_row_act(kern_vec_dot_act_type(t), x, act, cols);
	for (l = 0; l <= kern_cpu_simd_detect(); l++) {
		kern_cpu_force_simd(l);
		kern_cpu_vec_dot_rows(t, w, rb, rows, act, cols, out); /* warm up */
		calls = 0;
		best = 1e9;
		t0 = t1 = eng_now();
		do {
			/* 64-row slices, as ops.c's matmul hands them out */
			const uint8_t *m = w + (k++ % n_mat) * mat;
			double ts = t1;
			for (i = 0; i < rows; i += 64)
				kern_cpu_vec_dot_rows(t, m + (size_t)i * rb, rb,
				    rows - i < 64 ? rows - i : 64, act, cols, out + i);
			calls++;
			t1 = eng_now();
			best = t1 - ts < best ? t1 - ts : best;
		} while (t1 - t0 < secs);
		printf("vec_dot_rows  %-5s %6lld x %-5lld %-6s  %-6s  %9.1f us  %6.2f GB/s  (mean %6.2f)\n",
		    kern_type_name(t), (long long)rows, (long long)cols, stream ? "stream" : "hot",
		    kern_simd_name(), 1e6 * best, (double)mat / best / 1e9,
		    (double)mat * calls / (t1 - t0) / 1e9);
	}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(w);
	free(x);
	free(out);
	free(act);
}

/* One table row: dequant_rows of 64-row slices of (rows × cols). */
static void
bq_dequant(enum kern_type t, int64_t rows, int64_t cols, double secs)
{
	size_t rb = kern_type_row_bytes(t, cols), mat = rb * (size_t)rows;
	uint8_t *w = malloc(mat);
	float *dst = malloc((size_t)cols * 64 * sizeof(float));
	double t0, t1, calls, best;
	int64_t i;
	int l;

	if (!w || !dst) {
		fprintf(stderr, "bench_quant: out of memory\n");
		exit(1);
	}
	bq_fill(t, w, mat);
	for (l = 0; l <= kern_cpu_simd_detect(); l++) {
		kern_cpu_force_simd(l);
		calls = 0;
		best = 1e9;
		t0 = t1 = eng_now();
		do {
			double ts = t1;
			for (i = 0; i < rows; i += 64)
				kern_cpu_dequant_rows(t, w + (size_t)i * rb, rb,
				    rows - i < 64 ? rows - i : 64, cols, dst);
			calls++;
			t1 = eng_now();
			best = t1 - ts < best ? t1 - ts : best;
		} while (t1 - t0 < secs);
		printf("dequant_rows  %-5s %6lld x %-5lld %-6s  %-6s  %9.1f us  %6.2f GB/s  (mean %6.2f) out\n",
		    kern_type_name(t), (long long)rows, (long long)cols, "hot", kern_simd_name(),
		    1e6 * best, (double)rows * (double)cols * 4.0 / best / 1e9,
		    (double)rows * (double)cols * 4.0 * calls / (t1 - t0) / 1e9);
	}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(w);
	free(dst);
}

/* One table row: kern_quant_row_q8_1 of n activations. */
static void
bq_quant(int64_t n, double secs)
{
	float *x = malloc((size_t)n * sizeof(float));
	struct kern_block_q8_1 *b = malloc((size_t)(n / KERN_QK) * sizeof(*b));
	double t0, t1, best;
	int64_t i;
	int l;

	if (!x || !b) {
		fprintf(stderr, "bench_quant: out of memory\n");
		exit(1);
	}
	for (i = 0; i < n; i++)
		x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	for (l = 0; l <= kern_cpu_simd_detect(); l++) {
		kern_cpu_force_simd(l);
		best = 1e9;
		t0 = t1 = eng_now();
		do {
			double ts = t1;
			kern_quant_row_q8_1(x, b, n);
			t1 = eng_now();
			best = t1 - ts < best ? t1 - ts : best;
		} while (t1 - t0 < secs);
		printf("quant_row     q8_1  %6d x %-5lld %-6s  %-6s  %9.2f us\n", 1, (long long)n,
		    "hot", kern_simd_name(), 1e6 * best);
	}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(x);
	free(b);
}

/* Every weight type on the shapes of Qwen2.5-1.5B's matrices: attn_q
 * (1536 x 1536, hot: it fits in L2) and ffn_down (1536 x 8960, streamed). */
static void
bq_all_types(double secs, const char *only)
{
	static const enum kern_type ts[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q4_1, KERN_TYPE_Q5_0,
		KERN_TYPE_Q5_1, KERN_TYPE_Q8_0, KERN_TYPE_Q2_K, KERN_TYPE_Q3_K, KERN_TYPE_Q4_K,
		KERN_TYPE_Q5_K, KERN_TYPE_Q6_K, KERN_TYPE_F16, KERN_TYPE_BF16, KERN_TYPE_F32 };
	size_t i;

	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		if (only && strcmp(only, kern_type_name(ts[i])) != 0)
			continue;
		bq_vec_dot(ts[i], 1536, 1536, 0, secs);
		bq_vec_dot(ts[i], 1536, 8960, 1, secs);
	}
}

/* The integer-dot matmul one token at a time, as ops.c ran it before the
 * tile kernels: quantize every token's activations, then per 64-row slice
 * kern_cpu_vec_dot_rows for each token. */
static void
bq_matmul_onetok(const struct kern_mat *m, const float *x, int64_t n_tok, void *act,
    float *out)
{
	enum kern_type at = kern_vec_dot_act_type(m->type);
	size_t as = kern_type_row_bytes(at, m->cols);
	float tmp[64];
	int64_t t, r0;

	for (t = 0; t < n_tok; t++)
		kern_quant_row_act(at, x + t * m->cols, (uint8_t *)act + (size_t)t * as, m->cols);
	for (r0 = 0; r0 < m->rows; r0 += 64) {
		int64_t n = m->rows - r0 < 64 ? m->rows - r0 : 64;
		const uint8_t *rows = (const uint8_t *)m->data + (size_t)r0 * m->row_bytes;
		for (t = 0; t < n_tok; t++) {
			kern_cpu_vec_dot_rows(m->type, rows, m->row_bytes, n,
			    (const uint8_t *)act + (size_t)t * as, m->cols, tmp);
			memcpy(out + t * m->rows + r0, tmp, (size_t)n * sizeof(float));
		}
	}
}

/* One table row: a 128-token prefill matmul of (rows × cols) of type t on
 * one thread, by each path (sgemm, the tile kernels, one token at a time),
 * the paths taking turns so that a change in the machine's load hits all. */
static void
bq_prefill(enum kern_type t, int64_t rows, int64_t cols, double secs)
{
	const int64_t n_tok = 128;
	size_t rb = kern_type_row_bytes(t, cols);
	uint8_t *w = malloc(rb * (size_t)rows);
	float *x = malloc((size_t)(n_tok * cols) * sizeof(float));
	float *out = malloc((size_t)(n_tok * rows) * sizeof(float));
	void *act = malloc((size_t)(n_tok * cols) * sizeof(float));
	struct kern_mat m = { t, rows, cols, rb, NULL };
	struct kern_ctx *ctx = NULL;
	double best[3] = { 1e9, 1e9, 1e9 }, t0, t1;
	int64_t i;
	int path, round;

	if (!w || !x || !out || !act || kern_ctx_init(&ctx, 1)) {
		fprintf(stderr, "bench_quant: out of memory\n");
		exit(1);
	}
	bq_fill(t, w, rb * (size_t)rows);
	m.data = w;
	for (i = 0; i < n_tok * cols; i++)
		x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	for (round = 0; round < 3; round++)
		for (path = 0; path < 3; path++) {
			kern_ctx_set_prefill(ctx, path == 0 ? KERN_PREFILL_GEMM : KERN_PREFILL_QDOT);
			t0 = t1 = kv_thread_cpu_s();
			do {
				double ts = t1;
				if (path == 2)
					bq_matmul_onetok(&m, x, n_tok, act, out);
				else if (kern_ctx_ops(ctx)->matmul(ctx, out, &m, x, n_tok)) {
					fprintf(stderr, "bench_quant: matmul failed\n");
					exit(1);
				}
				t1 = kv_thread_cpu_s();
				best[path] = t1 - ts < best[path] ? t1 - ts : best[path];
			} while (t1 - t0 < secs / 3);
		}
	printf("prefill %-5s %4lld tok x %5lld x %-5lld  %-6s  sgemm %9.1f us  qdot %9.1f us  "
	    "1-tok %9.1f us  qdot/sgemm %.2f  1-tok/qdot %.2f\n",
	    kern_type_name(t), (long long)n_tok, (long long)rows, (long long)cols,
	    kern_cpu_amx_on() && (t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q5_K ||
	    t == KERN_TYPE_Q6_K) ? "amx" : kern_simd_name(),
	    1e6 * best[0], 1e6 * best[1], 1e6 * best[2], best[0] / best[1], best[2] / best[1]);
	kern_ctx_free(ctx);
	free(w);
	free(x);
	free(out);
	free(act);
}

char *openblas_get_corename(void); /* OpenBLAS extensions */
void openblas_set_num_threads(int n);

/* One row of "attn": q·kᵀ and p·v of 32 queries × nvis keys × hd, by
 * sgemm and by the own kernels at each level this CPU has, best of rounds
 * in the thread's CPU time. */
static void
bq_attn(int64_t nvis, int64_t hd, double secs)
{
	const int64_t nq = 32;
	float *q = malloc((size_t)(nq * hd) * sizeof(float));
	float *k = malloc((size_t)(nvis * hd) * sizeof(float));
	float *v = malloc((size_t)(nvis * hd) * sizeof(float));
	float *s = malloc((size_t)(nq * nvis) * sizeof(float));
	float *o = malloc((size_t)(nq * hd) * sizeof(float));
	float *kt = malloc(((size_t)(nvis + KERN_CPU_ATTN_KT_ALIGN) * (size_t)hd) * sizeof(float));
	double best[3][2] = { { 1e9, 1e9 }, { 1e9, 1e9 }, { 1e9, 1e9 } }, t0, t1, t2, t3;
	double fl = 2.0 * (double)(nq * nvis * hd);
	int64_t i;
	int path, round, top = kern_cpu_simd_detect();

	if (!q || !k || !v || !s || !o || !kt) {
		fprintf(stderr, "bench_quant: out of memory\n");
		exit(1);
	}
	for (i = 0; i < nq * hd; i++)
		q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	for (i = 0; i < nvis * hd; i++) {
		k[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
		v[i] = (float)((i * 29) % 89) / 44.0f - 1.0f;
	}
	for (round = 0; round < 3; round++)
		for (path = 0; path < 3; path++) {
			if (path > top)
				continue;
			/* level 0 is attn_gemm.c's sgemm fallback: OpenBLAS */
			kern_cpu_force_simd(path);
			if (path) /* the panel's layout is the same at both levels */
				kern_cpu_attn_kt_pack(kt, k, nvis, 0, nvis, hd);
			t0 = kv_thread_cpu_s();
			do {
				t1 = kv_thread_cpu_s();
				kern_cpu_attn_qk(s, q, hd, k, path ? kt : NULL, nq, nvis, hd, 0.1f);
				t2 = kv_thread_cpu_s();
				kern_cpu_attn_pv(o, hd, s, v, nq, nvis, hd);
				t3 = kv_thread_cpu_s();
				best[path][0] = t2 - t1 < best[path][0] ? t2 - t1 : best[path][0];
				best[path][1] = t3 - t2 < best[path][1] ? t3 - t2 : best[path][1];
			} while (t3 - t0 < secs / 3);
		}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	printf("attn %4lld x %5lld x %-4lld  q.k GFLOP/s: sgemm %6.1f  avx2 %6.1f  avx512 %6.1f   "
	    "p.v GFLOP/s: sgemm %6.1f  avx2 %6.1f  avx512 %6.1f\n", (long long)nq, (long long)nvis,
	    (long long)hd, 1e-9 * fl / best[0][0], top >= 1 ? 1e-9 * fl / best[1][0] : 0.0,
	    top >= 2 ? 1e-9 * fl / best[2][0] : 0.0, 1e-9 * fl / best[0][1],
	    top >= 1 ? 1e-9 * fl / best[1][1] : 0.0, top >= 2 ? 1e-9 * fl / best[2][1] : 0.0);
	free(q);
	free(k);
	free(v);
	free(s);
	free(o);
	free(kt);
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.5;

	printf("kernel        type    rows x cols  data    simd     best time/matrix  throughput\n");
	if (argc > 2 && strcmp(argv[2], "prefill") == 0) {
		static const enum kern_type ts[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q4_1, KERN_TYPE_Q5_0,
			KERN_TYPE_Q5_1, KERN_TYPE_Q8_0, KERN_TYPE_Q2_K, KERN_TYPE_Q3_K, KERN_TYPE_Q4_K,
			KERN_TYPE_Q5_K, KERN_TYPE_Q6_K };
		size_t i;
		int l;
		int amx;
		long long rows = 1536, cols = 1536; /* attn_q's shape, or argv[4] ROWSxCOLS */
		if (argc > 4 && (sscanf(argv[4], "%lldx%lld", &rows, &cols) != 2 || rows < 1 ||
		    cols < 256 || cols % 256)) {
			fprintf(stderr, "bench_quant: shape ROWSxCOLS, COLS a multiple of 256\n");
			return 1;
		}
		/* the best level (with AMX where there is, then without), then AVX2
		 * (what a CPU without AVX-512 runs) */
		for (l = kern_cpu_simd_detect(); l >= KERN_CPU_SIMD_AVX2 ||
		    l == kern_cpu_simd_detect(); l--) {
			kern_cpu_force_simd(l);
			for (amx = 1; amx >= 0; amx--) {
				if (kern_cpu_force_amx(amx) != 0 || (amx && !kern_cpu_amx_on()))
					continue;
				for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
					if ((argc <= 3 || strcmp(argv[3], kern_type_name(ts[i])) == 0) &&
					    (!amx || ts[i] == KERN_TYPE_Q4_K || ts[i] == KERN_TYPE_Q5_K ||
					    ts[i] == KERN_TYPE_Q6_K))
						bq_prefill(ts[i], rows, cols, secs);
			}
		}
		kern_cpu_force_amx(-1);
		kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "attn") == 0) {
		static const int64_t nvis[] = { 512, 2048, 8192 };
		size_t i;
		openblas_set_num_threads(1);
		printf("OpenBLAS kernel: %s\n", openblas_get_corename());
		for (i = 0; i < 3; i++) {
			bq_attn(nvis[i], 64, secs);
			bq_attn(nvis[i], 128, secs);
		}
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "types") == 0) {
		bq_all_types(secs, argc > 3 ? argv[3] : NULL);
		return 0;
	}
	bq_vec_dot(KERN_TYPE_Q4_1, 1536, 576, 0, secs);
	bq_vec_dot(KERN_TYPE_Q4_1, 576, 1536, 0, secs);
	bq_vec_dot(KERN_TYPE_Q8_0, 1536, 576, 0, secs);
	bq_vec_dot(KERN_TYPE_Q8_0, 49152, 576, 0, secs);
	bq_vec_dot(KERN_TYPE_Q4_0, 1536, 576, 0, secs);
	bq_vec_dot(KERN_TYPE_Q4_1, 1536, 576, 1, secs);
	bq_vec_dot(KERN_TYPE_Q8_0, 49152, 576, 1, secs);
	bq_dequant(KERN_TYPE_Q4_1, 1536, 576, secs);
	bq_dequant(KERN_TYPE_Q8_0, 4096, 576, secs);
	bq_dequant(KERN_TYPE_F16, 1536, 576, secs);
	bq_dequant(KERN_TYPE_Q4_K, 1536, 1536, secs); /* the sgemm prefill path's */
	bq_dequant(KERN_TYPE_Q6_K, 1536, 1536, secs);
	bq_quant(1536, secs);
	return 0;
}
