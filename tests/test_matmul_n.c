/*
 * test_matmul_n.c: the op table's matmul_n (several weight matrices times
 * the same activations in one go: a layer's Q/K/V and gate/up) gives bit
 * for bit what separate matmul calls give, for mixed weight types (one or
 * several activation forms, the integer dots and sgemm in one call), row
 * counts that are no multiple of the work units, one token (decode) and
 * many (prefill), every prefill path, exact mode, and 1 or 3 threads;
 * and one token through matrices large enough that decode cuts them into
 * many chunks that threads take from each other.
 * The one-token results are also checked against kern_vec_dot row by row,
 * the definition the integer dots keep.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "kernels/kernels.h"
#include "tests/tap.h"

#define MN_COLS 512 /* a multiple of every block size, K-quants' 256 too */
#define MN_MAX_TOK 37

static uint64_t mn_rng = 0x9d2c5680a1b2c3d4ull;

/* A weight matrix of random blocks: random bytes, a block drawn again
 * until it dequantizes to finite values of modest size (a random f16
 * scale may be Inf, NaN or huge), so any type is made the same way. */
static int
mn_mat(struct kern_mat *m, enum kern_type t, int64_t rows)
{
	size_t bb = kern_type_block_bytes(t);
	int64_t be = kern_type_block_elems(t), r, b, i;
	float deq[256];
	uint8_t *p;

	m->type = t;
	m->rows = rows;
	m->cols = MN_COLS;
	m->row_bytes = kern_type_row_bytes(t, MN_COLS);
	if (!(p = malloc(m->row_bytes * (size_t)rows)))
		return -1;
	for (r = 0; r < rows; r++) {
		for (b = 0; b < MN_COLS / be; b++) {
			uint8_t *blk = p + (size_t)r * m->row_bytes + (size_t)b * bb;
			int ok;
			do {
				size_t k;
				for (k = 0; k < bb; k++)
					blk[k] = (uint8_t)(kv_xorshift64s(&mn_rng) >> 56);
				if (t == KERN_TYPE_F32) { /* a float in [-1, 1) */
					float f = (float)((int)(kv_xorshift64s(&mn_rng) >> 40) -
					    (1 << 23)) / (float)(1 << 23);
					memcpy(blk, &f, 4);
				}
				kern_dequant_row(t, blk, deq, be);
				ok = 1;
				for (i = 0; i < be; i++)
					ok &= isfinite(deq[i]) && fabsf(deq[i]) < 1e4f;
			} while (!ok);
		}
	}
	m->data = p;
	return 0;
}

/* One set of matrices multiplied by the same activations, checked at every
 * token count, prefill path, mode and thread count. */
static enum tap_result
mn_check_set(const enum kern_type *types, const int64_t *rows, int count)
{
	static const int64_t toks[] = { 1, 5, 8, MN_MAX_TOK };
	static const int threads[] = { 1, 3 };
	static const enum kern_prefill paths[] = { KERN_PREFILL_AUTO, KERN_PREFILL_GEMM,
		KERN_PREFILL_QDOT };
	struct kern_mat w[KERN_MATMUL_N_MAX];
	const struct kern_mat *wp[KERN_MATMUL_N_MAX];
	float *one[KERN_MATMUL_N_MAX], *many[KERN_MATMUL_N_MAX], *x = NULL;
	struct kern_ctx *k = NULL;
	int i, ti, pi, ni, ex, ok = 1, made = 0;
	int64_t e, r;

	memset(one, 0, sizeof(one));
	memset(many, 0, sizeof(many));
	x = malloc((size_t)MN_MAX_TOK * MN_COLS * sizeof(float));
	TAP_EXPECT(x != NULL, "alloc");
	for (e = 0; e < (int64_t)MN_MAX_TOK * MN_COLS; e++)
		x[e] = (float)((int)(kv_xorshift64s(&mn_rng) >> 40) - (1 << 23)) / (float)(1 << 22);
	for (i = 0; i < count; i++, made++) {
		TAP_EXPECT(!mn_mat(&w[i], types[i], rows[i]), "alloc");
		wp[i] = &w[i];
		one[i] = malloc((size_t)MN_MAX_TOK * (size_t)rows[i] * sizeof(float));
		many[i] = malloc((size_t)MN_MAX_TOK * (size_t)rows[i] * sizeof(float));
		TAP_EXPECT(one[i] && many[i], "alloc");
	}
	for (ti = 0; ti < 2; ti++) {
		const struct kern_ops *ops;
		kern_ctx_free(k);
		TAP_EXPECT(!kern_ctx_init(&k, threads[ti]), "ctx");
		ops = kern_ctx_ops(k);
		for (ex = 0; ex < 2; ex++)
		for (pi = 0; pi < 3; pi++)
		for (ni = 0; ni < 4; ni++) {
			int64_t n = toks[ni];
			kern_ctx_set_exact(k, ex);
			kern_ctx_set_prefill(k, paths[pi]);
			for (i = 0; i < count; i++) {
				size_t bytes = (size_t)n * (size_t)rows[i] * sizeof(float);
				memset(one[i], 0xff, bytes); /* NaN: a row left unwritten shows */
				memset(many[i], 0xff, bytes);
				TAP_EXPECT(!ops->matmul(k, one[i], &w[i], x, n), "matmul");
			}
			TAP_EXPECT(!ops->matmul_n(k, count, many, wp, x, n), "matmul_n");
			for (i = 0; i < count; i++) {
				size_t bytes = (size_t)n * (size_t)rows[i] * sizeof(float);
				TAP_EXPECT(!memcmp(one[i], many[i], bytes),
				    "matrix %d (%s, %lld rows), %lld tokens, %d threads, path %d, exact %d",
				    i, kern_type_name(types[i]), (long long)rows[i], (long long)n,
				    threads[ti], pi, ex);
				TAP_EXPECT(!isnan(one[i][0]) && !isnan(one[i][bytes / sizeof(float) - 1]),
				    "rows written");
			}
			/* one token on the integer dots: each output is kern_vec_dot */
			for (i = 0; i < count && n == 1 && !ex; i++) {
				enum kern_type at = kern_vec_dot_act_type(types[i]);
				uint8_t act[MN_COLS * sizeof(float)];
				if (types[i] == KERN_TYPE_F32)
					continue; /* F32 rows take sgemm */
				kern_quant_row_act(at, x, act, MN_COLS);
				for (r = 0; r < rows[i]; r++) {
					float d = kern_vec_dot(types[i],
					    (const uint8_t *)w[i].data + (size_t)r * w[i].row_bytes, act,
					    MN_COLS);
					TAP_EXPECT(!memcmp(&d, &many[i][r], sizeof(d)),
					    "%s row %lld: %g vs kern_vec_dot %g", kern_type_name(types[i]),
					    (long long)r, (double)many[i][r], (double)d);
				}
			}
		}
	}
out:
	kern_ctx_free(k);
	for (i = 0; i < made; i++) {
		free((void *)(uintptr_t)w[i].data);
		free(one[i]);
		free(many[i]);
	}
	free(x);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* A GQA layer's Q/K/V: K and V a quarter of Q's rows, V of another type
 * (Q4_K_M keeps some attn_v in Q6_K); one activation form. */
static enum tap_result
test_gqa_qkv(void)
{
	static const enum kern_type t[] = { KERN_TYPE_Q4_K, KERN_TYPE_Q4_K, KERN_TYPE_Q6_K };
	static const int64_t rows[] = { 128, 32, 32 };
	return mn_check_set(t, rows, 3);
}

/* Four activation forms in one call (Q8_0, Q8_1, Q8_K, f32), row counts no
 * multiple of 16. */
static enum tap_result
test_mixed_forms(void)
{
	static const enum kern_type t[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q4_1, KERN_TYPE_Q5_K,
		KERN_TYPE_F16 };
	static const int64_t rows[] = { 83, 48, 40, 21 };
	return mn_check_set(t, rows, 4);
}

/* Parts on sgemm and parts on the dots in one prefill (Q3_K and F32 take
 * sgemm under AUTO), rows no multiple of sgemm's 48-row blocks. */
static enum tap_result
test_mixed_paths(void)
{
	static const enum kern_type t[] = { KERN_TYPE_Q3_K, KERN_TYPE_Q8_0, KERN_TYPE_F32 };
	static const int64_t rows[] = { 100, 61, 20 };
	return mn_check_set(t, rows, 3);
}

/* Gate and up: two equal matrices, as fwd_ffn passes them. */
static enum tap_result
test_gate_up(void)
{
	static const enum kern_type t[] = { KERN_TYPE_Q4_1, KERN_TYPE_Q4_1 };
	static const int64_t rows[] = { 192, 192 };
	return mn_check_set(t, rows, 2);
}

/* One token through 4.3 MB of weights: each thread's share in 16 chunks,
 * taken from the front by its owner and from the back by threads whose own
 * are gone; every row written once, each kern_vec_dot, at 1, 2 and 3
 * threads. */
static enum tap_result
test_decode_chunks(void)
{
	static const enum kern_type t[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q6_K };
	static const int64_t rows[] = { 12000, 2001 };
	struct kern_mat w[2];
	const struct kern_mat *wp[2] = { &w[0], &w[1] };
	float *dst[2] = { NULL, NULL }, x[MN_COLS];
	uint8_t act[2][MN_COLS * sizeof(float)];
	struct kern_ctx *k = NULL;
	int i, th, ok = 1, made = 0;
	int64_t r;

	for (i = 0; i < MN_COLS; i++)
		x[i] = (float)((int)(kv_xorshift64s(&mn_rng) >> 40) - (1 << 23)) / (float)(1 << 22);
	for (i = 0; i < 2; i++, made++) {
		TAP_EXPECT(!mn_mat(&w[i], t[i], rows[i]), "alloc");
		TAP_EXPECT((dst[i] = malloc((size_t)rows[i] * sizeof(float))) != NULL, "alloc");
		kern_quant_row_act(kern_vec_dot_act_type(t[i]), x, act[i], MN_COLS);
	}
	for (th = 1; th <= 3; th++) {
		kern_ctx_free(k);
		TAP_EXPECT(!kern_ctx_init(&k, th), "ctx");
		for (i = 0; i < 2; i++)
			memset(dst[i], 0xff, (size_t)rows[i] * sizeof(float)); /* NaN */
		TAP_EXPECT(!kern_ctx_ops(k)->matmul_n(k, 2, dst, wp, x, 1), "matmul_n");
		for (i = 0; i < 2; i++)
			for (r = 0; r < rows[i]; r++) {
				float d = kern_vec_dot(t[i],
				    (const uint8_t *)w[i].data + (size_t)r * w[i].row_bytes, act[i],
				    MN_COLS);
				TAP_EXPECT(!memcmp(&d, &dst[i][r], sizeof(d)),
				    "%d threads, %s row %lld: %g vs kern_vec_dot %g", th,
				    kern_type_name(t[i]), (long long)r, (double)dst[i][r], (double)d);
			}
	}
out:
	kern_ctx_free(k);
	for (i = 0; i < made; i++) {
		free((void *)(uintptr_t)w[i].data);
		free(dst[i]);
	}
	return ok ? TAP_PASS : TAP_FAIL;
}

/* Refused: no matrix, too many, widths that differ. */
static enum tap_result
test_refused(void)
{
	struct kern_ctx *k = NULL;
	struct kern_mat a = { KERN_TYPE_F32, 1, 32, 32 * sizeof(float), NULL }, b = a;
	const struct kern_mat *w[KERN_MATMUL_N_MAX + 1];
	float data[64] = { 0 }, x[64] = { 0 }, o[KERN_MATMUL_N_MAX + 1][1];
	float *d[KERN_MATMUL_N_MAX + 1];
	int i, rc0, rc1, rc2;

	a.data = data;
	b.data = data;
	b.cols = 64;
	b.row_bytes = 64 * sizeof(float);
	for (i = 0; i <= KERN_MATMUL_N_MAX; i++) {
		w[i] = &a;
		d[i] = o[i];
	}
	TAP_CHECK(!kern_ctx_init(&k, 2), "ctx");
	rc0 = kern_ctx_ops(k)->matmul_n(k, 0, d, w, x, 1);
	rc1 = kern_ctx_ops(k)->matmul_n(k, KERN_MATMUL_N_MAX + 1, d, w, x, 1);
	w[1] = &b;
	rc2 = kern_ctx_ops(k)->matmul_n(k, 2, d, w, x, 1);
	kern_ctx_free(k);
	TAP_CHECK(rc0 == KERN_ERR_SHAPE && rc1 == KERN_ERR_SHAPE && rc2 == KERN_ERR_SHAPE,
	    "rc %d %d %d", rc0, rc1, rc2);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "gqa_qkv", test_gqa_qkv },
	{ "mixed_forms", test_mixed_forms },
	{ "mixed_paths", test_mixed_paths },
	{ "gate_up", test_gate_up },
	{ "decode_chunks", test_decode_chunks },
	{ "refused", test_refused },
};

TAP_MAIN(NULL, NULL)
