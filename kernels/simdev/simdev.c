/*
 * simdev.c: the CPU's ops behind a simulated device memory, for checking
 * on a machine without a GPU what a device backend relies on: that the
 * engine keeps its resident ranges (kern_ctx_resident_add) coherent.
 *
 * A resident range gets a copy in memory of its own; each op runs the CPU's
 * code on the copies of its resident operands (kern_res_in / kern_res_out,
 * as kernels/cuda/ does) and on the host pointers of the rest.  While the
 * copy of a page is newer, the host's page holds 0xff bytes (NaN), so an
 * engine read that skipped kern_ctx_host_sync shows in the selftest as NaN
 * or as different bits, and a host write it skipped as a stale result.
 * Without resident ranges every op is the CPU's, bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/resident.h"

static void *
sd_alloc(void *dev, size_t bytes)
{
	void *p = NULL;
	(void)dev;
	return posix_memalign(&p, 64, bytes) ? NULL : p;
}

static void
sd_free(void *dev, void *p)
{
	(void)dev;
	free(p);
}

static int
sd_copy(void *dev, void *dst, const void *src, size_t n)
{
	(void)dev;
	memcpy(dst, src, n);
	return 0;
}

static const struct kern_res_mem sd_mem = { sd_alloc, sd_free, sd_copy, sd_copy, 1 };

struct sd_dev {
	long host_results; /* results written to host memory while resident */
};

/* An operand: its device copy when resident, else the host pointer. */
static int
sd_in(struct kern_ctx *ctx, const void *h, size_t n, const void **out)
{
	void *d;
	int rc = kern_res_in(ctx, h, n, &d);
	if (rc < 0)
		return rc;
	*out = rc ? d : h;
	return KERN_OK;
}

static int
sd_out_part(struct kern_ctx *ctx, void *h, size_t n, int whole, void **out)
{
	void *d;
	int rc = kern_res_out(ctx, h, n, whole, &d);
	if (rc < 0)
		return rc;
	if (!rc && kern_res_ranges(kern_ctx_res(ctx)))
		((struct sd_dev *)kern_ctx_dev(ctx))->host_results++;
	*out = rc ? d : h;
	return KERN_OK;
}

/* An operand the op writes whole. */
static int
sd_out(struct kern_ctx *ctx, void *h, size_t n, void **out)
{
	return sd_out_part(ctx, h, n, 1, out);
}

#define SD_IN(p, n, out)                                                             \
	do {                                                                         \
		const void *m_;                                                      \
		int rc_ = sd_in(ctx, (p), (size_t)(n), &m_);                         \
		if (rc_)                                                             \
			return rc_;                                                  \
		(out) = (__typeof__(out))m_;                                         \
	} while (0)
#define SD_OUT(p, n, out)                                                            \
	do {                                                                         \
		void *m_;                                                            \
		int rc_ = sd_out(ctx, (p), (size_t)(n), &m_);                        \
		if (rc_)                                                             \
			return rc_;                                                  \
		(out) = (__typeof__(out))m_;                                         \
	} while (0)

/* An operand read and written in place: loaded, then marked newer. */
#define SD_INOUT(p, n, out)                                                          \
	do {                                                                         \
		const void *i_;                                                      \
		int r_ = sd_in(ctx, (p), (size_t)(n), &i_);                          \
		if (r_)                                                              \
			return r_;                                                   \
		SD_OUT(p, n, out);                                                   \
	} while (0)

static int
sd_matmul(struct kern_ctx *ctx, float *dst, const struct kern_mat *w, const float *x,
    int64_t n_tok)
{
	const float *dx;
	float *dd;
	if (n_tok <= 0)
		return kern_cpu_ops()->matmul(ctx, dst, w, x, n_tok);
	SD_IN(x, n_tok * w->cols * 4, dx);
	SD_OUT(dst, n_tok * w->rows * 4, dd);
	return kern_cpu_ops()->matmul(ctx, dd, w, dx, n_tok);
}

static int
sd_matmul_n(struct kern_ctx *ctx, int count, float *const dst[], const struct kern_mat *const w[],
    const float *x, int64_t n_tok)
{
	float *dd[KERN_MATMUL_N_MAX];
	const float *dx;
	int i;
	if (count < 1 || count > KERN_MATMUL_N_MAX || n_tok <= 0)
		return kern_cpu_ops()->matmul_n(ctx, count, dst, w, x, n_tok);
	SD_IN(x, n_tok * w[0]->cols * 4, dx);
	for (i = 0; i < count; i++)
		SD_OUT(dst[i], n_tok * w[i]->rows * 4, dd[i]);
	return kern_cpu_ops()->matmul_n(ctx, count, dd, w, dx, n_tok);
}

static int
sd_get_rows(struct kern_ctx *ctx, float *dst, const struct kern_mat *w, const int32_t *ids,
    int64_t n)
{
	float *dd;
	if (n <= 0)
		return kern_cpu_ops()->get_rows(ctx, dst, w, ids, n);
	SD_OUT(dst, n * w->cols * 4, dd);
	return kern_cpu_ops()->get_rows(ctx, dd, w, ids, n);
}

static int
sd_rmsnorm(struct kern_ctx *ctx, float *dst, const float *x, const float *w, int64_t n_tok,
    int64_t dim, float eps)
{
	const float *dx, *dw;
	float *dd;
	if (n_tok <= 0 || dim <= 0)
		return kern_cpu_ops()->rmsnorm(ctx, dst, x, w, n_tok, dim, eps);
	SD_IN(x, n_tok * dim * 4, dx);
	SD_IN(w, dim * 4, dw);
	SD_OUT(dst, n_tok * dim * 4, dd);
	return kern_cpu_ops()->rmsnorm(ctx, dd, dx, dw, n_tok, dim, eps);
}

static int
sd_rope(struct kern_ctx *ctx, float *x, const uint32_t *pos, int64_t n_tok, int64_t n_head,
    int64_t head_dim, float freq_base, const float *freq_factors, enum kern_rope_style style)
{
	const uint32_t *dp;
	const float *dff = NULL;
	float *dx;
	if (n_tok <= 0 || n_head <= 0 || head_dim <= 0)
		return kern_cpu_ops()->rope(ctx, x, pos, n_tok, n_head, head_dim, freq_base,
		    freq_factors, style);
	SD_IN(pos, n_tok * 4, dp);
	if (freq_factors)
		SD_IN(freq_factors, head_dim / 2 * 4, dff);
	SD_INOUT(x, n_tok * n_head * head_dim * 4, dx);
	return kern_cpu_ops()->rope(ctx, dx, dp, n_tok, n_head, head_dim, freq_base, dff, style);
}

static int
sd_heads(struct kern_ctx *ctx, struct kern_attn_head *h, int64_t n_kv_head, int64_t n_tok,
    int64_t n_head, int64_t hd)
{
	int64_t g;
	for (g = 0; g < n_kv_head; g++) {
		size_t rows = (size_t)h[g].n_kv * (size_t)hd * 4;
		SD_IN(h[g].k, rows, h[g].k);
		SD_IN(h[g].v, rows, h[g].v);
		if (h[g].bias)
			SD_IN(h[g].bias, h[g].n_kv * 4, h[g].bias);
		if (h[g].ka) {
			SD_IN(h[g].ka, rows, h[g].ka);
			SD_IN(h[g].qa, n_tok * n_head * hd * 4, h[g].qa);
			SD_IN(h[g].pos, h[g].n_kv * 4, h[g].pos);
			SD_IN(h[g].qpos, n_tok * 4, h[g].qpos);
		}
	}
	return KERN_OK;
}

static int
sd_attention(struct kern_ctx *ctx, float *out, const float *q, int64_t n_tok, int64_t n_head,
    int64_t n_kv_head, int64_t head_dim, const struct kern_attn_head *heads, float scale,
    struct kern_attn_stats *st)
{
	struct kern_attn_head *dh;
	struct kern_attn_stats dst;
	size_t qb = (size_t)(n_tok * n_head * head_dim) * 4;
	const void *dq = NULL, *rw = NULL;
	void *dout = NULL, *sum = NULL, *mx = NULL;
	int rc;

	if (n_tok <= 0 || n_kv_head <= 0 || n_head <= 0 || head_dim <= 0)
		return kern_cpu_ops()->attention(ctx, out, q, n_tok, n_head, n_kv_head, head_dim,
		    heads, scale, st);
	if (!(dh = malloc((size_t)n_kv_head * sizeof(*dh))))
		return KERN_ERR_NOMEM;
	memcpy(dh, heads, (size_t)n_kv_head * sizeof(*dh));
	rc = sd_heads(ctx, dh, n_kv_head, n_tok, n_head, head_dim);
	if (!rc)
		rc = sd_in(ctx, q, qb, &dq);
	if (!rc && st) {
		size_t per = (size_t)(n_head * st->stride) * 4;
		dst = *st;
		if (st->sum && !(rc = sd_out(ctx, st->sum, per, &sum)))
			dst.sum = (float *)sum;
		if (!rc && st->max && !(rc = sd_out(ctx, st->max, per, &mx)))
			dst.max = (float *)mx;
		if (!rc && st->row_w && !(rc = sd_in(ctx, st->row_w, (size_t)n_tok * 4, &rw)))
			dst.row_w = (const float *)rw;
	}
	if (!rc)
		rc = sd_out(ctx, out, qb, &dout);
	if (!rc)
		rc = kern_cpu_ops()->attention(ctx, (float *)dout, (const float *)dq, n_tok, n_head,
		    n_kv_head, head_dim, dh, scale, st ? &dst : NULL);
	free(dh);
	return rc;
}

static int
sd_silu_mul(struct kern_ctx *ctx, float *g, const float *u, int64_t n)
{
	const float *du;
	float *dg;
	if (n <= 0)
		return kern_cpu_ops()->silu_mul(ctx, g, u, n);
	SD_IN(u, n * 4, du);
	SD_INOUT(g, n * 4, dg);
	return kern_cpu_ops()->silu_mul(ctx, dg, du, n);
}

static int
sd_add(struct kern_ctx *ctx, float *dst, const float *src, int64_t n)
{
	const float *ds;
	float *dd;
	if (n <= 0)
		return kern_cpu_ops()->add(ctx, dst, src, n);
	SD_IN(src, n * 4, ds);
	SD_INOUT(dst, n * 4, dd);
	return kern_cpu_ops()->add(ctx, dd, ds, n);
}

static int
sd_copy_rows(struct kern_ctx *ctx, float *dst, int64_t dst_stride, const float *src,
    int64_t src_stride, int64_t rows, int64_t n)
{
	const float *ds;
	float *dd;
	if (rows <= 0 || n <= 0)
		return kern_cpu_ops()->copy_rows(ctx, dst, dst_stride, src, src_stride, rows, n);
	void *m;
	int rc;
	SD_IN(src, ((rows - 1) * src_stride + n) * 4, ds);
	if ((rc = sd_out_part(ctx, dst, (size_t)((rows - 1) * dst_stride + n) * 4,
	    rows == 1 || dst_stride == n, &m)))
		return rc;
	dd = (float *)m;
	return kern_cpu_ops()->copy_rows(ctx, dd, dst_stride, ds, src_stride, rows, n);
}

static const struct kern_ops sd_ops = {
	.name = "simdev",
	.matmul = sd_matmul,
	.matmul_n = sd_matmul_n,
	.get_rows = sd_get_rows,
	.rmsnorm = sd_rmsnorm,
	.rope = sd_rope,
	.attention = sd_attention,
	.silu_mul = sd_silu_mul,
	.add = sd_add,
	.copy_rows = sd_copy_rows,
};

static int
sd_open(void **dev, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*dev = calloc(1, sizeof(struct sd_dev));
	return *dev ? KERN_OK : KERN_ERR_NOMEM;
}

static void
sd_close(void *dev)
{
	free(dev);
}

static const struct kern_dev_backend sd_backend = { "simdev", &sd_ops, sd_open, sd_close,
	&sd_mem };

const struct kern_dev_backend *
kern_simdev_backend(void)
{
	return &sd_backend;
}

long
kern_simdev_host_results(struct kern_ctx *ctx)
{
	if (strcmp(kern_ctx_backend(ctx), "simdev"))
		return -1;
	return ((struct sd_dev *)kern_ctx_dev(ctx))->host_results;
}
