/*
 * ops.c: the CPU op table (struct kern_ops) over the thread pool.
 *
 * matmul has two paths, both rounding the activations the way llama.cpp
 * does for quantized weights (Q8_1 for Q4_1/Q5_1, Q8_0 for Q4_0/Q5_0/Q8_0,
 * Q8_K for the K-quants; spec/model.md §5.1), so prefill and decode agree
 * with each other and with llama.cpp.
 * Chunks of fewer than KERN_GEMM_MIN_TOK tokens (decode), and prefills of
 * the types kern_mm_prefill_qdot names, keep the activations quantized and
 * use the SIMD integer dot products of vec_dot.c (decode reads the weights
 * once per token, which is what bounds its speed; a prefill reuses each
 * 64-row slice of weights from cache for every token, through vec_tile.c's
 * kernels that unpack a weight block once for 4 or 8 tokens, with the
 * same results bit for bit as the one-token dots).  The other prefills
 * round the activations (quantize, dequantize), dequantize the weight
 * matrix a block of rows at a time into per-thread scratch and multiply
 * with OpenBLAS sgemm.  Either way every output element is one call's sum,
 * whatever the thread count.
 *
 * Attention is computed per query head and block of queries: scores against
 * the head's rotated keys, causal mask, softmax, then the product with the
 * values (both products attn_gemm.c's, not sgemm: see there).  The keys
 * are packed transposed once per KV head for the whole call, before the
 * tasks, into the shared scratch slot, and every query head of the group
 * reads that panel.  Nothing is allocated per call except scratch, which
 * grows once and is kept (and the statistics' per-block sums).
 */
#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_ctx.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/rope.h"

#define KERN_GEMM_MIN_TOK 8      /* chunks at least this long use sgemm */
#define KERN_MM_GRAIN_UNITS 4    /* a prefill's units per grain a thread takes */
#define KERN_MM_DECODE_CHUNKS 16 /* a decode's chunks per thread at most (kern_mm_take) */
#define KERN_MM_CHUNK_BYTES (64 << 10) /* and weight bytes per chunk at least: a take
					* costs a compare-and-swap or two */
#define KERN_GEMM_BLOCK_ROWS 48 /* weight rows per sgemm call; fixed so that results
				  * do not depend on the thread count */
#define KERN_ATTN_QBLOCK 32    /* queries per attention block */
#define KERN_ATTN_PACK_KEYS 512 /* keys per unit of work packing the kᵀ panels
				 * (a multiple of KERN_CPU_ATTN_KT_ALIGN) */
/* the weight types whose prefills run on the integer dots (a bit per type):
 * every quantized one (bench_quant prefill: with vec_tile.c's tiles the dots
 * are 2.3-3.9x faster than dequantize + sgemm on one thread, Q3_K too,
 * bench/RESULTS.md) */
#define KERN_PREFILL_QDOT_TYPES (1ull << KERN_TYPE_Q4_0 | 1ull << KERN_TYPE_Q4_1 | \
	1ull << KERN_TYPE_Q5_0 | 1ull << KERN_TYPE_Q5_1 | 1ull << KERN_TYPE_Q8_0 | \
	1ull << KERN_TYPE_Q2_K | 1ull << KERN_TYPE_Q3_K | 1ull << KERN_TYPE_Q4_K | \
	1ull << KERN_TYPE_Q5_K | 1ull << KERN_TYPE_Q6_K)

void openblas_set_num_threads(int n); /* OpenBLAS extension, not in cblas.h everywhere */

void
kern_cpu_blas_single_thread(void)
{
	openblas_set_num_threads(1);
}

void
kern_cpu_split(int64_t n, int64_t align, int ith, int nth, int64_t *lo, int64_t *hi)
{
	int64_t blocks = (n + align - 1) / align;
	int64_t per = (blocks + nth - 1) / nth;
	int64_t a = per * ith * align, b = per * (ith + 1) * align;
	*lo = a < n ? a : n;
	*hi = b < n ? b : n;
}

/* ------------------------------------------------------------------------ */
/* matmul                                                                    */

/* One weight matrix of a matmul_n call: where its activations come from
 * and how its rows are cut into work units. */
struct kern_mm_part {
	float *dst;
	const struct kern_mat *w;
	int gemm;          /* dequantize + sgemm, else the integer dots */
	int prep;          /* index of its prepared activations, -1: x itself */
	int dealt;         /* act in vec_tile.c's dealt form of Q8_K */
	const void *act;   /* gemm: f32 rows; dots: rows of kern_vec_dot_act_type */
	size_t act_stride; /* bytes per token of act */
	int64_t unit;      /* rows per work unit */
	int64_t cost0;     /* cost (weight bytes) of the parts before it */
	int64_t grain0;    /* a prefill's grains (KERN_MM_GRAIN_UNITS units) before it */
};

/* Activations prepared once for every part that reads them the same way:
 * quantized to `at` (dots), or rounded through `at` back to f32 (sgemm). */
struct kern_mm_prep {
	enum kern_type at;
	int round;
	int deal;          /* Q8_K in the tile's dealt form (kern_cpu_q8k_deal_rows) */
	uint8_t *buf;
	size_t stride;
};

struct kern_mm_job {
	struct kern_ctx *ctx;
	int count, n_prep;
	struct kern_mm_part part[KERN_MATMUL_N_MAX];
	struct kern_mm_prep prep[KERN_MATMUL_N_MAX];
	const float *x;
	int64_t n_tok, cols;
	int64_t cost; /* total weight bytes */
	int64_t grains; /* a prefill's grains in all, 0: decode (chunks) */
	atomic_llong next; /* a prefill's next grain to take */
	/* a decode's chunks [lo, hi) of each thread, hi << 32 | lo: the owner
	 * takes the front, a thread whose own are gone the back */
	struct {
		_Alignas(64) atomic_ullong lohi;
	} own[KERN_MAX_THREADS];
	int64_t chunks; /* a decode's chunks in all */
	int err;
};

/* sgemm path: rows [lo, hi) of part p, lo a multiple of the fixed block
 * (so every output element is computed by the same call whatever the
 * thread count or the other parts). */
static void
kern_mm_gemm_rows(struct kern_mm_job *j, const struct kern_mm_part *p, int ith, int64_t lo,
    int64_t hi)
{
	const struct kern_mat *w = p->w;
	int64_t r0, rb = KERN_GEMM_BLOCK_ROWS;
	float *buf = NULL;

	if (w->type != KERN_TYPE_F32) {
		buf = kern_ctx_scratch(j->ctx, ith, (size_t)rb * (size_t)w->cols * sizeof(float));
		if (!buf) {
			j->err = KERN_ERR_NOMEM;
			return;
		}
	}
	for (r0 = lo; r0 < hi; r0 += rb) {
		int64_t n = hi - r0 < rb ? hi - r0 : rb;
		const uint8_t *rows = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
		const float *wb;
		if (w->type == KERN_TYPE_F32) {
			wb = (const float *)(const void *)rows;
		} else {
			kern_cpu_dequant_rows(w->type, rows, w->row_bytes, n, w->cols, buf);
			wb = buf;
		}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n_tok, (int)n,
		    (int)w->cols, 1.0f, (const float *)p->act, (int)w->cols, wb,
		    w->type == KERN_TYPE_F32 ? (int)(w->row_bytes / sizeof(float)) : (int)w->cols,
		    0.0f, p->dst + r0, (int)w->rows);
	}
}

/* vec path: rows [lo, hi) of part p for every token, a 64-row slice at a
 * time (it stays in cache while the tile kernels of vec_tile.c take the
 * tokens a few at a time); one token (decode) takes the whole range in one
 * call, so the kernels' prefetch runs on across the slices. */
static void
kern_mm_vec_rows(struct kern_mm_job *j, const struct kern_mm_part *p, int64_t lo, int64_t hi)
{
	const struct kern_mat *w = p->w;
	int64_t r0, slice = j->n_tok == 1 ? hi - lo : 64;

	for (r0 = lo; r0 < hi; r0 += slice) {
		int64_t n = hi - r0 < slice ? hi - r0 : slice;
		const uint8_t *rows = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
		kern_cpu_vec_dot_tile(w->type, rows, w->row_bytes, n, p->act, p->act_stride,
		    j->n_tok, w->cols, p->dst + r0, (size_t)w->rows, p->dealt);
	}
}

/* First unit of part p whose start (in cost, the weight bytes before it)
 * is at or past c. */
static int64_t
kern_mm_unit_at(const struct kern_mm_part *p, int64_t c)
{
	int64_t per = p->unit * (int64_t)p->w->row_bytes;
	int64_t units = (p->w->rows + p->unit - 1) / p->unit;
	int64_t k = c <= p->cost0 ? 0 : (c - p->cost0 + per - 1) / per;
	return k < units ? k : units;
}

/* Rows [lo, hi) of part p by its path. */
static void
kern_mm_rows(struct kern_mm_job *j, const struct kern_mm_part *p, int ith, int64_t lo,
    int64_t hi)
{
	if (p->gemm)
		kern_mm_gemm_rows(j, p, ith, lo, hi);
	else
		kern_mm_vec_rows(j, p, lo, hi);
}

/* Decode's chunk k: the units of all parts, laid end to end by their
 * weight bytes, that start in [cost·k/chunks, cost·(k+1)/chunks) (Q/K/V of
 * a GQA model differ in rows, a mixed-type model's parts in bytes per row). */
static void
kern_mm_chunk(struct kern_mm_job *j, int ith, int64_t k)
{
	int64_t clo = j->cost * k / j->chunks, chi = j->cost * (k + 1) / j->chunks;
	int i;

	for (i = 0; i < j->count; i++) {
		const struct kern_mm_part *p = &j->part[i];
		int64_t lo = kern_mm_unit_at(p, clo) * p->unit, hi = kern_mm_unit_at(p, chi) * p->unit;
		hi = hi < p->w->rows ? hi : p->w->rows;
		if (lo < hi)
			kern_mm_rows(j, p, ith, lo, hi);
	}
}

/* Decode's next chunk for thread ith, -1 when none is left: the front of
 * its own range, so that it walks its share of the bytes in order (the
 * kernels' prefetch and the hardware's run on across chunks), else the
 * back of the range with the most left. */
static int64_t
kern_mm_take(struct kern_mm_job *j, int ith, int nth)
{
	for (;;) {
		uint64_t r = atomic_load_explicit(&j->own[ith].lohi, memory_order_relaxed);
		uint32_t lo = (uint32_t)r, hi = (uint32_t)(r >> 32), most = 0;
		int v = -1, k;

		if (lo < hi) {
			if (atomic_compare_exchange_weak_explicit(&j->own[ith].lohi, &r,
			    (uint64_t)hi << 32 | (lo + 1), memory_order_relaxed, memory_order_relaxed))
				return lo;
			continue;
		}
		for (k = 0; k < nth; k++) {
			uint64_t rk = atomic_load_explicit(&j->own[k].lohi, memory_order_relaxed);
			uint32_t left = (uint32_t)(rk >> 32) > (uint32_t)rk ?
			    (uint32_t)(rk >> 32) - (uint32_t)rk : 0;
			if (left > most) {
				most = left;
				v = k;
			}
		}
		if (v < 0)
			return -1;
		r = atomic_load_explicit(&j->own[v].lohi, memory_order_relaxed);
		lo = (uint32_t)r;
		hi = (uint32_t)(r >> 32);
		if (lo < hi && atomic_compare_exchange_weak_explicit(&j->own[v].lohi, &r,
		    (uint64_t)(hi - 1) << 32 | lo, memory_order_relaxed, memory_order_relaxed))
			return hi - 1;
	}
}

/* The one region of a matmul_n.  Each thread takes work until none is left:
 * a static split waited for the slower of two threads ~5 % of the 1.5B's
 * kvzip ingest and 6-9 % of its decode (a VM's vCPUs do not run at one
 * speed, and bytes are not time across types).  A prefill: the grains of all
 * parts in turn, the next one left.  Decode: KERN_MM_DECODE_CHUNKS chunks a
 * thread (kern_mm_take).  Which thread computes a row changes no bit. */
static void
kern_mm_worker(void *arg, int ith, int nth)
{
	struct kern_mm_job *j = arg;
	int64_t g;
	int i;

	if (!j->grains) {
		while ((g = kern_mm_take(j, ith, nth)) >= 0)
			kern_mm_chunk(j, ith, g);
		return;
	}
	while ((g = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->grains) {
		const struct kern_mm_part *p;
		int64_t lo, hi;
		for (i = j->count - 1; j->part[i].grain0 > g; i--)
			;
		p = &j->part[i];
		lo = (g - p->grain0) * KERN_MM_GRAIN_UNITS * p->unit;
		hi = lo + KERN_MM_GRAIN_UNITS * p->unit < p->w->rows ?
		    lo + KERN_MM_GRAIN_UNITS * p->unit : p->w->rows;
		kern_mm_rows(j, p, ith, lo, hi);
	}
}

/* Whether a prefill (n_tok >= KERN_GEMM_MIN_TOK) of weight type t runs on
 * the integer dot products rather than dequantize + sgemm: the types where
 * that measured faster (bench_quant prefill, bench/RESULTS.md "Prefill
 * paths"; the float types have no integer dot). */
static int
kern_mm_prefill_qdot(const struct kern_ctx *ctx, enum kern_type t)
{
	if (ctx->prefill == KERN_PREFILL_GEMM)
		return 0;
	if (t == KERN_TYPE_F32 || t == KERN_TYPE_F16 || t == KERN_TYPE_BF16)
		return 0;
	if (ctx->prefill == KERN_PREFILL_QDOT)
		return 1;
	return (KERN_PREFILL_QDOT_TYPES >> (unsigned)t) & 1u;
}

/* Prepare every distinct activation form, a prefill's tokens split over
 * the threads: quantized rows for the integer dots, or rows rounded to the
 * 8-bit grid llama.cpp's matmuls use (quantize, dequantize) for sgemm. */
static void
kern_mm_prep_worker(void *arg, int ith, int nth)
{
	struct kern_mm_job *j = arg;
	int64_t lo, hi, t;
	int i;

	kern_cpu_split(j->n_tok, 1, ith, nth, &lo, &hi);
	for (i = 0; i < j->n_prep && lo < hi; i++) {
		const struct kern_mm_prep *pr = &j->prep[i];
		void *q = NULL;
		if (pr->round || pr->deal) {
			q = kern_ctx_scratch(j->ctx, ith, kern_type_row_bytes(pr->at, j->cols));
			if (!q) {
				j->err = KERN_ERR_NOMEM;
				return;
			}
		}
		for (t = lo; t < hi; t++) {
			const float *x = j->x + t * j->cols;
			uint8_t *d = pr->buf + (size_t)t * pr->stride;
			if (pr->round) {
				kern_quant_row_act(pr->at, x, q, j->cols);
				kern_dequant_row(pr->at, q, (float *)(void *)d, j->cols);
			} else if (pr->deal) {
				kern_quant_row_act(pr->at, x, q, j->cols);
				kern_cpu_q8k_deal_rows(q, 0, d, 0, 1, j->cols);
			} else {
				kern_quant_row_act(pr->at, x, d, j->cols);
			}
		}
	}
}

/* Part i's path and activation form; a new prep when no earlier part
 * reads the same one. */
static void
kern_mm_plan(struct kern_ctx *ctx, struct kern_mm_job *j, int i)
{
	struct kern_mm_part *p = &j->part[i];
	enum kern_type t = p->w->type, at = kern_vec_dot_act_type(t);
	int round, deal, k;

	p->gemm = (j->n_tok >= KERN_GEMM_MIN_TOK && !kern_mm_prefill_qdot(ctx, t)) ||
	    t == KERN_TYPE_F32 || ctx->exact;
	p->unit = p->gemm ? KERN_GEMM_BLOCK_ROWS : 16;
	p->prep = -1;
	if (p->gemm && (at == KERN_TYPE_F32 || ctx->exact)) {
		p->act = j->x; /* sgemm on x itself */
		p->act_stride = (size_t)j->cols * sizeof(float);
		return;
	}
	round = p->gemm;
	/* a prefill's Q4_K or Q6_K at AVX2: its Q8_K rows in the dealt form
	 * of vec_tile_dealt.h's tiles */
	deal = !round && j->n_tok >= KERN_GEMM_MIN_TOK && kern_cpu_vec_dot_tile_dealt(t);
	p->dealt = deal;
	for (k = 0; k < j->n_prep; k++)
		if (j->prep[k].at == at && j->prep[k].round == round && j->prep[k].deal == deal)
			break;
	if (k == j->n_prep) {
		j->prep[k].at = at;
		j->prep[k].round = round;
		j->prep[k].deal = deal;
		j->prep[k].stride = round || at == KERN_TYPE_F32 ?
		    (size_t)j->cols * sizeof(float) : deal ? kern_cpu_q8k_dealt_row_bytes(j->cols) :
		    kern_type_row_bytes(at, j->cols);
		j->n_prep++;
	}
	p->prep = k;
	p->act_stride = j->prep[k].stride;
}

/* dst[i] = x · w[i]ᵀ for i < count: the activations prepared once per form
 * (at most one region for all of them), then one region over the rows of
 * all the matrices; each output element is the same call's sum as a
 * separate matmul would compute, bit for bit. */
static int
kern_cpu_matmul_n(struct kern_ctx *ctx, int count, float *const dst[],
    const struct kern_mat *const w[], const float *x, int64_t n_tok)
{
	struct kern_mm_job j;
	size_t off[KERN_MATMUL_N_MAX], total = 0;
	uint8_t *buf = NULL;
	int i;

	if (count < 1 || count > KERN_MATMUL_N_MAX || n_tok <= 0)
		return KERN_ERR_SHAPE;
	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	j.count = count;
	j.x = x;
	j.n_tok = n_tok;
	j.cols = w[0]->cols;
	for (i = 0; i < count; i++) {
		if (!kern_type_is_weight(w[i]->type))
			return KERN_ERR_TYPE;
		if (w[i]->cols != j.cols || w[i]->cols % kern_type_block_elems(w[i]->type))
			return KERN_ERR_SHAPE;
		j.part[i].dst = dst[i];
		j.part[i].w = w[i];
		j.part[i].cost0 = j.cost;
		j.cost += w[i]->rows * (int64_t)w[i]->row_bytes;
		kern_mm_plan(ctx, &j, i);
		if (n_tok >= KERN_GEMM_MIN_TOK) {
			int64_t per = KERN_MM_GRAIN_UNITS * j.part[i].unit;
			j.part[i].grain0 = j.grains;
			j.grains += (w[i]->rows + per - 1) / per;
		}
	}
	atomic_init(&j.next, 0);
	if (!j.grains) {
		int nth = kern_ctx_threads(ctx);
		int64_t per = j.cost / KERN_MM_CHUNK_BYTES / nth;
		per = per < 1 ? 1 : per > KERN_MM_DECODE_CHUNKS ? KERN_MM_DECODE_CHUNKS : per;
		j.chunks = per * nth;
		for (i = 0; i < nth; i++)
			atomic_init(&j.own[i].lohi, (uint64_t)(per * (i + 1)) << 32 | (uint64_t)(per * i));
	}
	/* the prepared activations live in the last scratch slot, which no
	 * worker uses */
	for (i = 0; i < j.n_prep; i++) {
		off[i] = total;
		total += (j.prep[i].stride * (size_t)n_tok + 63) & ~(size_t)63;
	}
	if (j.n_prep) {
		if (!(buf = kern_ctx_scratch(ctx, KERN_MAX_THREADS - 1, total)))
			return KERN_ERR_NOMEM;
		for (i = 0; i < j.n_prep; i++)
			j.prep[i].buf = buf + off[i];
		for (i = 0; i < count; i++)
			if (j.part[i].prep >= 0)
				j.part[i].act = j.prep[j.part[i].prep].buf;
		if (n_tok >= KERN_GEMM_MIN_TOK)
			kern_parallel(ctx, kern_mm_prep_worker, &j);
		else
			kern_mm_prep_worker(&j, 0, 1);
		if (j.err)
			return j.err;
	}
	kern_parallel(ctx, kern_mm_worker, &j);
	return j.err;
}

static int
kern_cpu_matmul(struct kern_ctx *ctx, float *dst, const struct kern_mat *w,
    const float *x, int64_t n_tok)
{
	return kern_cpu_matmul_n(ctx, 1, &dst, &w, x, n_tok);
}

/* ------------------------------------------------------------------------ */
/* get_rows, rmsnorm, silu_mul, add                                          */

static int
kern_cpu_get_rows(struct kern_ctx *ctx, float *dst, const struct kern_mat *w,
    const int32_t *ids, int64_t n)
{
	int64_t i;
	(void)ctx;
	if (!kern_type_is_weight(w->type))
		return KERN_ERR_TYPE;
	for (i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= w->rows)
			return KERN_ERR_SHAPE;
		kern_dequant_row(w->type, (const uint8_t *)w->data + (size_t)ids[i] * w->row_bytes,
		    dst + i * w->cols, w->cols);
	}
	return KERN_OK;
}

static int
kern_cpu_rmsnorm(struct kern_ctx *ctx, float *dst, const float *x, const float *w,
    int64_t n_tok, int64_t dim, float eps)
{
	int64_t t, i;
	(void)ctx;
	for (t = 0; t < n_tok; t++) {
		const float *xr = x + t * dim;
		float *dr = dst + t * dim;
		double ss = 0.0;
		float scale;
		for (i = 0; i < dim; i++)
			ss += (double)xr[i] * xr[i];
		scale = 1.0f / sqrtf((float)(ss / (double)dim) + eps);
		for (i = 0; i < dim; i++)
			dr[i] = xr[i] * scale * w[i];
	}
	return KERN_OK;
}

struct kern_ew_job {
	float *a;
	const float *b;
	int64_t n;
	int op; /* 0 = silu_mul, 1 = add */
};

static void
kern_ew_worker(void *arg, int ith, int nth)
{
	struct kern_ew_job *j = arg;
	int64_t lo, hi, i;
	kern_cpu_split(j->n, 64, ith, nth, &lo, &hi);
	if (j->op == 0) {
		kern_cpu_silu_mul_run(j->a + lo, j->b + lo, hi - lo);
	} else {
		for (i = lo; i < hi; i++)
			j->a[i] += j->b[i];
	}
}

static int
kern_cpu_silu_mul(struct kern_ctx *ctx, float *g, const float *u, int64_t n)
{
	struct kern_ew_job j = { g, u, n, 0 };
	if (n < 4096)
		kern_ew_worker(&j, 0, 1);
	else
		kern_parallel(ctx, kern_ew_worker, &j);
	return KERN_OK;
}

static int
kern_cpu_add(struct kern_ctx *ctx, float *dst, const float *src, int64_t n)
{
	struct kern_ew_job j = { dst, src, n, 1 };
	(void)ctx;
	kern_ew_worker(&j, 0, 1); /* memory-bound and tiny: not worth a dispatch */
	return KERN_OK;
}

/* ------------------------------------------------------------------------ */
/* RoPE                                                                      */

/* Rotate every head of one token at position p (kernels/rope.h: the
 * angles once per token, then each head's pairs). */
static void
kern_rope_token(float *x, uint32_t p, int64_t n_head, int64_t head_dim, float theta_scale,
    const float *ff, enum kern_rope_style style)
{
	float cs[KERN_ROPE_MAX_HEAD_DIM];
	int64_t h;

	kern_rope_angles(cs, p, theta_scale, ff, head_dim);
	for (h = 0; h < n_head; h++)
		kern_rope_head(x + h * head_dim, x + h * head_dim, cs, head_dim, style);
}

struct kern_rope_job {
	float *x;
	const uint32_t *pos;
	int64_t n_tok, n_head, head_dim;
	float theta_scale;
	const float *ff;
	enum kern_rope_style style;
};

static void
kern_rope_worker(void *arg, int ith, int nth)
{
	struct kern_rope_job *j = arg;
	int64_t lo, hi, t;
	kern_cpu_split(j->n_tok, 1, ith, nth, &lo, &hi);
	for (t = lo; t < hi; t++)
		kern_rope_token(j->x + t * j->n_head * j->head_dim, j->pos[t], j->n_head,
		    j->head_dim, j->theta_scale, j->ff, j->style);
}

static int
kern_cpu_rope(struct kern_ctx *ctx, float *x, const uint32_t *pos, int64_t n_tok,
    int64_t n_head, int64_t head_dim, float freq_base, const float *freq_factors,
    enum kern_rope_style style)
{
	struct kern_rope_job j = { x, pos, n_tok, n_head, head_dim,
		kern_rope_theta_scale(freq_base, head_dim), freq_factors, style };
	if (head_dim > KERN_ROPE_MAX_HEAD_DIM || head_dim % 2 ||
	    (style != KERN_ROPE_NORM && style != KERN_ROPE_NEOX))
		return KERN_ERR_SHAPE;
	if (n_tok < 16)
		kern_rope_worker(&j, 0, 1);
	else
		kern_parallel(ctx, kern_rope_worker, &j);
	return KERN_OK;
}

/* ------------------------------------------------------------------------ */
/* Attention                                                                 */

struct kern_attn_job {
	struct kern_ctx *ctx;
	float *out;
	const float *q;
	int64_t n_tok, n_head, n_kv_head, head_dim;
	const struct kern_attn_head *heads;
	float scale;
	int64_t n_qblocks;
	struct kern_attn_stats *st;
	float *partial; /* (n_qblocks, n_head, stride) per-task stat sums, reduced in
			 * q-block order so the result does not depend on threads */
	float *pmax;    /* (n_qblocks, n_head, stride) per-task restricted maxima */
	/* kᵀ panels (attn_gemm.c), NULL: none (decode, the scalar level):
	 * KV head g's keys at kt + g·kt_floats, its PoD anchor keys at
	 * kt + (n_kv_head + g)·kt_floats */
	float *kt;
	size_t kt_floats;
	int64_t kt_units; /* pack units of KERN_ATTN_PACK_KEYS per panel */
	int kt_sets;      /* 1, or 2 with PoD's anchor keys */
	atomic_llong next; /* the next task to take */
	int err;
};

/* s(nq, nvis) = scale · q·kᵀ, q rows ld apart; kt: k's panel or NULL. */
static void
kern_attn_logits(float *s, const float *q, const float *k, const float *kt, int64_t nq,
    int64_t nvis, int64_t hd, int64_t ld, float scale)
{
	int64_t i;
	if (nq == 1) {
		for (i = 0; i < nvis; i++)
			s[i] = kern_cpu_dot_f32(q, k + i * hd, hd) * scale;
	} else {
		kern_cpu_attn_qk(s, q, ld, k, kt, nq, nvis, hd, scale);
	}
}

/* The panel of KV head g's keys (a = 0) or anchor keys (a = 1), or NULL. */
static float *
kern_attn_kt(const struct kern_attn_job *j, int64_t g, int a)
{
	return j->kt ? j->kt + (size_t)(a * j->n_kv_head + g) * j->kt_floats : NULL;
}

/* Packs every panel, KERN_ATTN_PACK_KEYS keys a unit, units split over
 * the threads. */
static void
kern_attn_pack_worker(void *arg, int ith, int nth)
{
	struct kern_attn_job *j = arg;
	int64_t lo, hi, u;
	kern_cpu_split(j->kt_sets * j->n_kv_head * j->kt_units, 1, ith, nth, &lo, &hi);
	for (u = lo; u < hi; u++) {
		int64_t p = u / j->kt_units, g = p % j->n_kv_head;
		int a = (int)(p / j->n_kv_head);
		const struct kern_attn_head *kh = &j->heads[g];
		const float *k = a ? kh->ka : kh->k;
		int64_t i0 = (u % j->kt_units) * KERN_ATTN_PACK_KEYS;
		int64_t i1 = kh->n_kv - i0 < KERN_ATTN_PACK_KEYS ? kh->n_kv : i0 + KERN_ATTN_PACK_KEYS;
		if (k && i0 < kh->n_kv)
			kern_cpu_attn_kt_pack(kern_attn_kt(j, g, a), k, kh->n_kv, i0, i1,
			    j->head_dim);
	}
}

/* PoD: replace the logits of the units that are distant for each query by
 * the anchor's (anchor query × anchor key), computed into sa. */
static void
kern_attn_pod_logits(const struct kern_attn_job *j, const struct kern_attn_head *kh,
    int64_t h, int64_t t0, int64_t nq, int64_t nvis, float *s, float *sa)
{
	int64_t hd = j->head_dim, ld = j->n_head * hd, t, i;
	kern_attn_logits(sa, kh->qa + t0 * ld + h * hd, kh->ka, kern_attn_kt(j, kh - j->heads, 1),
	    nq, nvis, hd, ld, j->scale);
	for (t = 0; t < nq; t++) {
		uint32_t qp = kh->qpos[t0 + t];
		for (i = 0; i < nvis; i++) {
			uint32_t p = kh->pos[i];
			if (p >= kh->n_s && (uint64_t)p + kh->n_r <= qp)
				s[t * nvis + i] = sa[t * nvis + i];
		}
	}
}

/* KVzip's score for one query row (kern_attn_stats): the probabilities
 * renormalised over the domain [0, n_lead) ∪ [dom_from[g], vis), times w,
 * max-accumulated into mx. */
static void
kern_attn_restricted_max(const struct kern_attn_stats *st, int64_t g, int64_t vis,
    const float *row, float w, float *mx)
{
	int64_t lead = st->n_lead < vis ? st->n_lead : vis;
	int64_t from = st->dom_from[g] > lead ? st->dom_from[g] : lead, i;
	double d = 0.0;
	float inv;
	for (i = 0; i < lead; i++)
		d += row[i];
	for (i = from; i < vis; i++)
		d += row[i];
	if (!(d > 0.0))
		return; /* the whole domain underflowed: nothing to score */
	inv = (float)(1.0 / d) * w;
	for (i = 0; i < lead; i++)
		mx[i] = row[i] * inv > mx[i] ? row[i] * inv : mx[i];
	for (i = from; i < vis; i++)
		mx[i] = row[i] * inv > mx[i] ? row[i] * inv : mx[i];
}

/* One (query head, block of queries) task. */
static int
kern_attn_task(struct kern_attn_job *j, int ith, int nth, int64_t task)
{
	int64_t h = task / j->n_qblocks, qb = task % j->n_qblocks;
	int64_t t0 = qb * KERN_ATTN_QBLOCK;
	int64_t nq = j->n_tok - t0 < KERN_ATTN_QBLOCK ? j->n_tok - t0 : KERN_ATTN_QBLOCK;
	int64_t g = h / (j->n_head / j->n_kv_head), hd = j->head_dim;
	const struct kern_attn_head *kh = &j->heads[g];
	int64_t base = kh->n_kv - j->n_tok; /* units before the chunk */
	int64_t nvis = base + t0 + nq;      /* units the last query of the block sees */
	int64_t ld = j->n_head * hd, t, i;
	const float *q = j->q + t0 * ld + h * hd;
	float *o = j->out + t0 * ld + h * hd;
	float *s;

	s = kern_ctx_scratch(j->ctx, ith, (size_t)nq * (size_t)nvis * sizeof(float) *
	    (kh->ka ? 2 : 1));
	if (!s)
		return KERN_ERR_NOMEM;
	kern_attn_logits(s, q, kh->k, kern_attn_kt(j, g, 0), nq, nvis, hd, ld, j->scale);
	if (kh->ka)
		kern_attn_pod_logits(j, kh, h, t0, nq, nvis, s, s + nq * nvis);
	if (kh->bias) /* a refit cut's per-unit bias */
		for (t = 0; t < nq; t++)
			for (i = 0; i < nvis; i++)
				s[t * nvis + i] += kh->bias[i];
	for (t = 0; t < nq; t++) {
		int64_t vis = base + t0 + t + 1;
		float *row = s + t * nvis;
		kern_cpu_softmax_row(row, vis);
		for (i = vis; i < nvis; i++)
			row[i] = 0.0f; /* causal mask */
		if (j->st && t0 + t >= j->st->row_from) {
			size_t at = ((size_t)qb * (size_t)j->n_head + (size_t)h) *
			    (size_t)j->st->stride;
			if (j->partial)
				for (i = 0; i < vis; i++)
					j->partial[at + i] += row[i];
			if (j->pmax)
				kern_attn_restricted_max(j->st, g, vis, row,
				    j->st->row_w ? j->st->row_w[t0 + t] : 1.0f, j->pmax + at);
		}
	}
	(void)nth;
	kern_cpu_attn_pv(o, ld, s, kh->v, nq, nvis, hd);
	return KERN_OK;
}

/* Each thread takes the next task left until none is (as the matmul's
 * prefill grains: a task's cost grows with its queries' keys, and vCPUs
 * differ in speed); every task writes its own outputs and statistics'
 * slots, so which thread ran it changes no bit. */
static void
kern_attn_worker(void *arg, int ith, int nth)
{
	struct kern_attn_job *j = arg;
	int64_t n = j->n_head * j->n_qblocks, task;
	int rc;
	while ((task = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < n) {
		rc = kern_attn_task(j, ith, nth, task);
		if (rc)
			j->err = rc;
	}
}

static int
kern_cpu_attention(struct kern_ctx *ctx, float *out, const float *q, int64_t n_tok,
    int64_t n_head, int64_t n_kv_head, int64_t head_dim,
    const struct kern_attn_head *heads, float scale, struct kern_attn_stats *st)
{
	struct kern_attn_job j;
	int64_t g, t, max_kv = 0;

	if (n_kv_head <= 0 || n_head % n_kv_head || head_dim > 512 || n_tok <= 0)
		return KERN_ERR_SHAPE;
	memset(&j, 0, sizeof(j));
	j.kt_sets = 1;
	for (g = 0; g < n_kv_head; g++) {
		if (heads[g].n_kv < n_tok || (st && heads[g].n_kv > st->stride))
			return KERN_ERR_SHAPE;
		max_kv = heads[g].n_kv > max_kv ? heads[g].n_kv : max_kv;
		if (heads[g].ka)
			j.kt_sets = 2;
	}
	j.ctx = ctx;
	j.out = out;
	j.q = q;
	j.n_tok = n_tok;
	j.n_head = n_head;
	j.n_kv_head = n_kv_head;
	j.head_dim = head_dim;
	j.heads = heads;
	j.scale = scale;
	j.n_qblocks = (n_tok + KERN_ATTN_QBLOCK - 1) / KERN_ATTN_QBLOCK;
	if (st && st->max && (!st->dom_from || st->n_lead < 0))
		return KERN_ERR_SHAPE;
	/* kᵀ packed once per KV head (and anchor) for the whole call, into the
	 * shared scratch slot (the matmul's, which no attention uses): at most
	 * one layer's keys in f32, 32 MiB for the 1.5B at 32K (docs/
	 * ARCHITECTURE.md); decode's one query takes dot products instead */
	j.kt_floats = n_tok > 1 ? kern_cpu_attn_kt_floats(max_kv, head_dim) : 0;
	if (j.kt_floats) {
		j.kt = kern_ctx_scratch(ctx, KERN_MAX_THREADS - 1, (size_t)j.kt_sets *
		    (size_t)n_kv_head * j.kt_floats * sizeof(float));
		if (!j.kt)
			return KERN_ERR_NOMEM;
		j.kt_units = (max_kv + KERN_ATTN_PACK_KEYS - 1) / KERN_ATTN_PACK_KEYS;
		kern_parallel(ctx, kern_attn_pack_worker, &j);
	}
	if (st) {
		size_t per = (size_t)n_head * (size_t)st->stride;
		j.st = st;
		j.partial = st->sum ? calloc((size_t)j.n_qblocks * per, sizeof(float)) : NULL;
		j.pmax = st->max ? calloc((size_t)j.n_qblocks * per, sizeof(float)) : NULL;
		if ((st->sum && !j.partial) || (st->max && !j.pmax)) {
			free(j.partial);
			free(j.pmax);
			return KERN_ERR_NOMEM;
		}
	}
	atomic_init(&j.next, 0);
	kern_parallel(ctx, kern_attn_worker, &j);
	if (st) {
		size_t per = (size_t)n_head * (size_t)st->stride, i;
		if (st->sum) {
			memcpy(st->sum, j.partial, per * sizeof(float));
			for (t = 1; t < j.n_qblocks; t++)
				for (i = 0; i < per; i++)
					st->sum[i] += j.partial[(size_t)t * per + i];
		}
		if (st->max) { /* a max is exact in any order */
			memcpy(st->max, j.pmax, per * sizeof(float));
			for (t = 1; t < j.n_qblocks; t++)
				for (i = 0; i < per; i++)
					if (j.pmax[(size_t)t * per + i] > st->max[i])
						st->max[i] = j.pmax[(size_t)t * per + i];
		}
		free(j.partial);
		free(j.pmax);
	}
	return j.err;
}

/* Row copies on the caller's thread: the engine's moves are a few rows of
 * a chunk, under what waking the pool costs. */
static int
kern_cpu_copy_rows(struct kern_ctx *ctx, float *dst, int64_t dst_stride, const float *src,
    int64_t src_stride, int64_t rows, int64_t n)
{
	int64_t r;
	(void)ctx;
	if (rows < 0 || n < 0)
		return KERN_ERR_SHAPE;
	if (rows == 1 || (dst_stride == n && src_stride == n)) {
		memcpy(dst, src, (size_t)(rows * n) * sizeof(float));
		return KERN_OK;
	}
	for (r = 0; r < rows; r++)
		memcpy(dst + r * dst_stride, src + r * src_stride, (size_t)n * sizeof(float));
	return KERN_OK;
}

/* ------------------------------------------------------------------------ */

static const struct kern_ops kern_cpu_table = {
	.name = "cpu",
	.matmul = kern_cpu_matmul,
	.matmul_n = kern_cpu_matmul_n,
	.get_rows = kern_cpu_get_rows,
	.rmsnorm = kern_cpu_rmsnorm,
	.rope = kern_cpu_rope,
	.attention = kern_cpu_attention,
	.silu_mul = kern_cpu_silu_mul,
	.add = kern_cpu_add,
	.copy_rows = kern_cpu_copy_rows,
};

const struct kern_ops *
kern_cpu_ops(void)
{
	return &kern_cpu_table;
}
