/*
 * cuda_ops.cu: the CUDA backend of kernels.h's op table.
 *
 * Contract: every pointer an op receives is host memory (kernels.h), so each
 * op copies its activations in, computes on the device and copies the result
 * out before returning.  Weights are the exception: a weight matrix is
 * uploaded (raw blocks, f32 or f16, as the path needs) the first time it is
 * used and kept on the device for the state's life, keyed by its host
 * address and shape.  So are the ranges the engine made resident
 * (kernels/resident.h): an operand inside one is read from, and a result
 * written to, its device copy (kcu_upload, kcu_dst, kcu_put), and an op
 * whose results all stay on the device returns without waiting for it
 * (kcu_finish), so a decode step waits once, for its logits.
 *
 * Paths of matmul:
 *   exact mode          f32 weights (dequantized once on the host),
 *                       cublasSgemm, no TF32: the CPU's exact sums in
 *                       another order;
 *   fast, n_tok >= 8    f16 weights and activations, cublasGemmEx with fp32
 *                       accumulation (tensor cores);
 *   fast, n_tok < 8     a mat-vec kernel reading the raw quantized blocks
 *                       (Q4_0, Q4_1, Q8_0, F16, F32; other types use the f16
 *                       copy), fp32 accumulation, one warp per output row.
 * Attention follows kern_cpu_attention: logits, a row softmax (max
 * subtracted, sum in double), P·V, and the statistics summed over queries in
 * a fixed order (KVzip's restricted maxima: a domain sum per row in double,
 * then a max over queries), so results do not depend on scheduling.
 *
 * Errors: every CUDA and cuBLAS call is checked; a failure sets the ctx's
 * message and the op returns KERN_ERR_DEVICE (never aborts).
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "kernels/kernels.h"
}
#include "kernels/backend.h"
#include "kernels/resident.h"
#include "kernels/rope.h"

/* ------------------------------------------------------------------------ */
/* State                                                                     */

enum kcu_kind { KCU_RAW, KCU_F32, KCU_F16 };

struct kcu_weight {
	const void *host;
	int64_t rows, cols;
	int type, kind;
	void *dev;
};

struct kcu_buf {
	void *p;
	size_t cap;
};

enum { KCU_B_X, KCU_B_Y, KCU_B_H16, KCU_B_K, KCU_B_V, KCU_B_KA, KCU_B_POS, KCU_B_OFF,
	KCU_B_Q, KCU_B_QA, KCU_B_QPOS, KCU_B_S, KCU_B_O, KCU_B_ST, KCU_B_IDS, KCU_B_W,
	KCU_B_MX, KCU_B_DOMF, KCU_B_ROWW, KCU_B_DSUM, KCU_B_BIAS, KCU_B_COUNT };

struct kcu_state {
	int device;
	cudaStream_t stream;
	cublasHandle_t blas;
	struct kcu_weight *w;
	int nw, capw;
	struct kcu_buf buf[KCU_B_COUNT];
	int pending; /* a device-to-host copy queued since the last wait */
};

#define KCU_CHECK(ctx, call)                                                        \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			kern_ctx_set_error((ctx), "cuda: %s: %s (%s:%d)", #call,    \
			    cudaGetErrorString(e_), __FILE__, __LINE__);            \
			return KERN_ERR_DEVICE;                                     \
		}                                                                   \
	} while (0)

#define KCU_BLAS(ctx, call)                                                         \
	do {                                                                        \
		cublasStatus_t s_ = (call);                                         \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                  \
			kern_ctx_set_error((ctx), "cublas: %s: status %d (%s:%d)",  \
			    #call, (int)s_, __FILE__, __LINE__);                    \
			return KERN_ERR_DEVICE;                                     \
		}                                                                   \
	} while (0)

/* A kernel launch's error, then (at the end of an op) the stream's. */
#define KCU_LAUNCHED(ctx) KCU_CHECK(ctx, cudaGetLastError())

static struct kcu_state *
kcu_state(struct kern_ctx *ctx)
{
	return (struct kcu_state *)kern_ctx_dev(ctx);
}

/* Enter an op: this thread's current device is the state's. */
static int
kcu_enter(struct kern_ctx *ctx, struct kcu_state **out)
{
	struct kcu_state *s = kcu_state(ctx);
	*out = s;
	KCU_CHECK(ctx, cudaSetDevice(s->device));
	return KERN_OK;
}

static int
kcu_sync(struct kern_ctx *ctx, struct kcu_state *s)
{
	KCU_CHECK(ctx, cudaStreamSynchronize(s->stream));
	return KERN_OK;
}

/* Device scratch slot `which` of at least `bytes` (contents not kept). */
static int
kcu_scratch(struct kern_ctx *ctx, struct kcu_state *s, int which, size_t bytes, void **out)
{
	struct kcu_buf *b = &s->buf[which];
	if (bytes == 0)
		bytes = 1;
	if (bytes > b->cap) {
		size_t want = bytes + bytes / 4;
		if (b->p) {
			KCU_CHECK(ctx, cudaStreamSynchronize(s->stream));
			KCU_CHECK(ctx, cudaFree(b->p));
			b->p = NULL;
			b->cap = 0;
		}
		KCU_CHECK(ctx, cudaMalloc(&b->p, want));
		b->cap = want;
	}
	*out = b->p;
	return KERN_OK;
}

/* n host bytes on the device: a resident range's copy in place, else
 * copied into scratch slot `which`.  An op may change *out in place only
 * when it puts the result back to the same host range (kcu_put). */
static int
kcu_upload(struct kern_ctx *ctx, struct kcu_state *s, int which, const void *src, size_t n,
    void **out)
{
	int rc = kern_res_in(ctx, src, n, out);
	if (rc)
		return rc < 0 ? rc : KERN_OK;
	if ((rc = kcu_scratch(ctx, s, which, n, out)))
		return rc;
	KCU_CHECK(ctx, cudaMemcpyAsync(*out, src, n, cudaMemcpyHostToDevice, s->stream));
	return KERN_OK;
}

/* Where an op writes n bytes bound for host range dst: its device copy when
 * resident (marked newer there), else scratch slot `which`. */
static int
kcu_dst(struct kern_ctx *ctx, struct kcu_state *s, int which, void *dst, size_t n, void **out)
{
	int rc = kern_res_out(ctx, dst, n, 1, out);
	if (rc)
		return rc < 0 ? rc : KERN_OK;
	return kcu_scratch(ctx, s, which, n, out);
}

/* The n result bytes at device src to host range dst: into its device copy
 * when resident (nothing to do when src is that copy), else queued to the
 * host, waited for by kcu_finish. */
static int
kcu_put(struct kern_ctx *ctx, struct kcu_state *s, void *dst, const void *src, size_t n)
{
	void *d;
	int rc = kern_res_out(ctx, dst, n, 1, &d);
	if (rc < 0)
		return rc;
	if (rc) {
		if (d != src)
			KCU_CHECK(ctx, cudaMemcpyAsync(d, src, n, cudaMemcpyDeviceToDevice,
			    s->stream));
		return KERN_OK;
	}
	KCU_CHECK(ctx, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s->stream));
	s->pending = 1;
	return KERN_OK;
}

/* The end of an op: wait for the device when a result goes to the host. */
static int
kcu_finish(struct kern_ctx *ctx, struct kcu_state *s)
{
	if (!s->pending)
		return KERN_OK;
	s->pending = 0;
	return kcu_sync(ctx, s);
}

static int
kcu_download(struct kern_ctx *ctx, struct kcu_state *s, void *dst, const void *src, size_t n)
{
	int rc = kcu_put(ctx, s, dst, src, n);
	return rc ? rc : kcu_finish(ctx, s);
}

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */

/* Host copy of w dequantized to f32 (f16 when half), row by row. */
static void *
kcu_dequant_host(const struct kern_mat *w, int half)
{
	size_t n = (size_t)w->rows * (size_t)w->cols;
	float *row = (float *)malloc((size_t)w->cols * sizeof(float));
	void *out = malloc(n * (half ? sizeof(uint16_t) : sizeof(float)));
	int64_t r, c;

	if (!row || !out) {
		free(row);
		free(out);
		return NULL;
	}
	for (r = 0; r < w->rows; r++) {
		const uint8_t *src = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
		if (half) {
			uint16_t *o = (uint16_t *)out + (size_t)r * (size_t)w->cols;
			kern_dequant_row(w->type, src, row, w->cols);
			for (c = 0; c < w->cols; c++)
				o[c] = kern_f32_to_f16(row[c]);
		} else {
			kern_dequant_row(w->type, src, (float *)out + (size_t)r * (size_t)w->cols,
			    w->cols);
		}
	}
	free(row);
	return out;
}

/* The device copy of w in `kind`, made on first use. */
static int
kcu_weight(struct kern_ctx *ctx, struct kcu_state *s, const struct kern_mat *w, int kind,
    const void **out)
{
	struct kcu_weight *e;
	size_t bytes;
	void *host = NULL, *dev = NULL;
	int i;

	for (i = 0; i < s->nw; i++) {
		e = &s->w[i];
		if (e->host == w->data && e->kind == kind && e->rows == w->rows &&
		    e->cols == w->cols && e->type == (int)w->type) {
			*out = e->dev;
			return KERN_OK;
		}
	}
	if (s->nw == s->capw) {
		int cap = s->capw ? 2 * s->capw : 64;
		struct kcu_weight *nwp = (struct kcu_weight *)realloc(s->w,
		    (size_t)cap * sizeof(*nwp));
		if (!nwp)
			return KERN_ERR_NOMEM;
		s->w = nwp;
		s->capw = cap;
	}
	if (kind == KCU_RAW) {
		bytes = (size_t)w->rows * w->row_bytes;
	} else {
		bytes = (size_t)w->rows * (size_t)w->cols * (kind == KCU_F16 ? 2 : 4);
		if (!(host = kcu_dequant_host(w, kind == KCU_F16)))
			return KERN_ERR_NOMEM;
	}
	if (cudaMalloc(&dev, bytes) != cudaSuccess ||
	    cudaMemcpy(dev, host ? host : w->data, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
		cudaError_t err = cudaGetLastError();
		if (dev)
			cudaFree(dev);
		free(host);
		kern_ctx_set_error(ctx, "cuda: cannot place a %lldx%lld weight on the device: %s",
		    (long long)w->rows, (long long)w->cols, cudaGetErrorString(err));
		return KERN_ERR_DEVICE;
	}
	free(host);
	e = &s->w[s->nw++];
	e->host = w->data;
	e->rows = w->rows;
	e->cols = w->cols;
	e->type = (int)w->type;
	e->kind = kind;
	e->dev = dev;
	*out = dev;
	return KERN_OK;
}

/* ------------------------------------------------------------------------ */
/* Device helpers                                                            */

__device__ static float
kcu_h2f(const uint8_t *p)
{
	unsigned short h = (unsigned short)(p[0] | (p[1] << 8));
	return __half2float(__ushort_as_half(h));
}

/* Element j (0..31) of a 32-element block of raw type t. */
__device__ static float
kcu_block_elem(int t, const uint8_t *b, int j)
{
	switch (t) {
	case KERN_TYPE_Q4_0: {
		int q = j < 16 ? (b[2 + j] & 0x0f) : (b[2 + j - 16] >> 4);
		return kcu_h2f(b) * (float)(q - 8);
	}
	case KERN_TYPE_Q4_1: {
		int q = j < 16 ? (b[4 + j] & 0x0f) : (b[4 + j - 16] >> 4);
		return kcu_h2f(b) * (float)q + kcu_h2f(b + 2);
	}
	case KERN_TYPE_Q8_0:
		return kcu_h2f(b) * (float)(int8_t)b[2 + j];
	case KERN_TYPE_F16:
		return kcu_h2f(b + 2 * j);
	default: { /* F32 */
		float f;
		memcpy(&f, b + 4 * j, 4);
		return f;
	}
	}
}

/* y[t, r] = Σ_c w[r, c] x[t, c]: one warp per (row, token). */
__global__ static void
kcu_matvec(int type, const uint8_t *w, size_t row_bytes, size_t block_bytes, int64_t rows,
    int64_t cols, const float *x, float *y)
{
	int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int64_t t = blockIdx.y, b, nb = cols / 32;
	int lane = threadIdx.x % 32;
	float acc = 0.0f;
	int o;

	if (r >= rows)
		return;
	for (b = 0; b < nb; b++) {
		const uint8_t *blk = w + (size_t)r * row_bytes + (size_t)b * block_bytes;
		acc += kcu_block_elem(type, blk, lane) * x[t * cols + b * 32 + lane];
	}
	for (o = 16; o > 0; o /= 2)
		acc += __shfl_down_sync(0xffffffffu, acc, o);
	if (lane == 0)
		y[t * rows + r] = acc;
}

__global__ static void
kcu_to_half(const float *x, __half *y, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = __float2half_rn(x[i]);
}

__global__ static void
kcu_gather(const float *w, const int32_t *ids, int64_t cols, int64_t n, float *dst)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n * cols)
		dst[i] = w[(size_t)ids[i / cols] * (size_t)cols + (size_t)(i % cols)];
}

/* One block per row; sum of squares in double, as the CPU. */
__global__ static void
kcu_rmsnorm(const float *x, const float *w, float *dst, int64_t dim, float eps)
{
	__shared__ double part[256];
	const float *xr = x + (int64_t)blockIdx.x * dim;
	float *dr = dst + (int64_t)blockIdx.x * dim;
	double ss = 0.0;
	float scale;
	int64_t i;
	int k;

	for (i = threadIdx.x; i < dim; i += blockDim.x)
		ss += (double)xr[i] * xr[i];
	part[threadIdx.x] = ss;
	__syncthreads();
	for (k = blockDim.x / 2; k > 0; k /= 2) {
		if ((int)threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	scale = 1.0f / sqrtf((float)(part[0] / (double)dim) + eps);
	for (i = threadIdx.x; i < dim; i += blockDim.x)
		dr[i] = xr[i] * scale * w[i];
}

/* One thread per (token, head, pair): kernels/rope.h's angle (the same
 * float multiplications as the CPU) and pair layout. */
__global__ static void
kcu_rope(float *x, const uint32_t *pos, int64_t n_tok, int64_t n_head, int64_t head_dim,
    float theta_scale, const float *ff, enum kern_rope_style style)
{
	int64_t half = head_dim / 2, i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	int64_t pair, th, t, a, b;
	float theta, *v;

	if (i >= n_tok * n_head * half)
		return;
	pair = i % half;
	th = i / half; /* token * n_head + head */
	t = th / n_head;
	theta = kern_rope_theta(pos[t], theta_scale, ff, pair);
	v = x + th * head_dim;
	kern_rope_pair(style, head_dim, pair, &a, &b);
	kern_rope_rotate_pair(v, v, a, b, cosf(theta), sinf(theta));
}

__global__ static void
kcu_silu_mul(float *g, const float *u, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float a = g[i];
		g[i] = a / (1.0f + expf(-a)) * u[i];
	}
}

__global__ static void
kcu_add(float *d, const float *s, int64_t n)
{
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		d[i] += s[i];
}

static unsigned
kcu_blocks(int64_t n, int per)
{
	return (unsigned)((n + per - 1) / per);
}

/* ------------------------------------------------------------------------ */
/* Attention kernels                                                         */

struct kcu_attn {
	int64_t n_tok, n_head, group, head_dim, maxn;
	float scale;
	const int64_t *off;   /* (n_kv_head + 1) unit offsets into k, v, ka, pos */
	const float *k, *v, *ka;
	const uint32_t *pos, *qpos;
	const uint32_t *pod;  /* (n_kv_head, 2): n_s, n_r; NULL = no PoD */
	const float *q, *qa;
	const float *bias;    /* (off[n_kv_head]) a refit cut's logit bias per unit, or NULL */
	float *s;             /* (n_head, n_tok, maxn) logits, then probabilities */
};

/* s[h, t, u] = scale · q[t, h]·k[u] (or the anchor's, for distant units);
 * -inf where t cannot see u. */
__global__ static void
kcu_attn_logits(struct kcu_attn a)
{
	int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	int64_t t = blockIdx.y, h = blockIdx.z, g = h / a.group;
	int64_t n = a.off[g + 1] - a.off[g], vis = n - a.n_tok + t + 1, d;
	const float *q, *k;
	float acc = 0.0f, *row = a.s + (h * a.n_tok + t) * a.maxn;

	if (u >= a.maxn)
		return;
	if (u >= vis) {
		row[u] = -INFINITY;
		return;
	}
	q = a.q + (t * a.n_head + h) * a.head_dim;
	k = a.k + (a.off[g] + u) * a.head_dim;
	if (a.pod) {
		uint32_t p = a.pos[a.off[g] + u], n_s = a.pod[2 * g], n_r = a.pod[2 * g + 1];
		if (p >= n_s && (uint64_t)p + n_r <= a.qpos[t]) {
			q = a.qa + (t * a.n_head + h) * a.head_dim;
			k = a.ka + (a.off[g] + u) * a.head_dim;
		}
	}
	for (d = 0; d < a.head_dim; d++)
		acc += q[d] * k[d];
	row[u] = acc * a.scale + (a.bias ? a.bias[a.off[g] + u] : 0.0f);
}

/* Row softmax in place (one block per (h, t)); masked entries become 0. */
__global__ static void
kcu_attn_softmax(struct kcu_attn a)
{
	__shared__ float mx_part[256];
	__shared__ double sum_part[256];
	float *row = a.s + (int64_t)blockIdx.x * a.maxn, mx = -INFINITY;
	double sum = 0.0;
	int64_t u;
	int k;

	for (u = threadIdx.x; u < a.maxn; u += blockDim.x)
		mx = row[u] > mx ? row[u] : mx;
	mx_part[threadIdx.x] = mx;
	__syncthreads();
	for (k = blockDim.x / 2; k > 0; k /= 2) {
		if ((int)threadIdx.x < k && mx_part[threadIdx.x + k] > mx_part[threadIdx.x])
			mx_part[threadIdx.x] = mx_part[threadIdx.x + k];
		__syncthreads();
	}
	mx = mx_part[0];
	for (u = threadIdx.x; u < a.maxn; u += blockDim.x) {
		float e = row[u] == -INFINITY ? 0.0f : expf(row[u] - mx);
		row[u] = e;
		sum += e;
	}
	sum_part[threadIdx.x] = sum;
	__syncthreads();
	for (k = blockDim.x / 2; k > 0; k /= 2) {
		if ((int)threadIdx.x < k)
			sum_part[threadIdx.x] += sum_part[threadIdx.x + k];
		__syncthreads();
	}
	sum = sum_part[0];
	for (u = threadIdx.x; u < a.maxn; u += blockDim.x)
		row[u] = (float)(row[u] / sum);
}

/* o[t, h, :] = Σ_u p[h, t, u] v[u, :]: one block per (h, t), a thread per
 * dimension. */
__global__ static void
kcu_attn_pv(struct kcu_attn a, float *o)
{
	int64_t h = blockIdx.x / a.n_tok, t = blockIdx.x % a.n_tok, g = h / a.group;
	int64_t n = a.off[g + 1] - a.off[g], vis = n - a.n_tok + t + 1, u, d;
	const float *p = a.s + (h * a.n_tok + t) * a.maxn, *v = a.v + a.off[g] * a.head_dim;

	for (d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
		float acc = 0.0f;
		for (u = 0; u < vis; u++)
			acc += p[u] * v[u * a.head_dim + d];
		o[(t * a.n_head + h) * a.head_dim + d] = acc;
	}
}

/* sum[h, u] = Σ_{t >= from} p[h, t, u] in query order; 0 past n_kv. */
__global__ static void
kcu_attn_stats(struct kcu_attn a, int64_t from, int64_t stride, float *sum)
{
	int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, t;
	float acc = 0.0f;
	if (u >= stride)
		return;
	if (u < a.maxn)
		for (t = from; t < a.n_tok; t++)
			acc += a.s[(h * a.n_tok + t) * a.maxn + u];
	sum[h * stride + u] = acc;
}

/* KVzip's restricted softmax (kern_attn_stats.max): dsum[h, t] = Σ of
 * p[h, t, u] over the units of the domain that t sees, u < vis with
 * u < n_lead or u >= dom_from[g] (what kern_attn_restricted_max sums as
 * [0, min(n_lead, vis)) ∪ [max(dom_from, lead), vis)); in double, one block
 * per (h, t), rows t < from skipped. */
__global__ static void
kcu_attn_domain(struct kcu_attn a, int64_t from, int64_t n_lead, const int64_t *dom_from,
    double *dsum)
{
	__shared__ double part[256];
	int64_t h = blockIdx.x / a.n_tok, t = blockIdx.x % a.n_tok, g = h / a.group;
	int64_t n = a.off[g + 1] - a.off[g], vis = n - a.n_tok + t + 1, df = dom_from[g], u;
	const float *p = a.s + (h * a.n_tok + t) * a.maxn;
	double acc = 0.0;
	int k;

	if (t < from)
		return; /* the whole block: no barrier is reached */
	for (u = threadIdx.x; u < vis; u += blockDim.x)
		if (u < n_lead || u >= df)
			acc += p[u];
	part[threadIdx.x] = acc;
	__syncthreads();
	for (k = blockDim.x / 2; k > 0; k /= 2) {
		if ((int)threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		dsum[h * a.n_tok + t] = part[0];
}

/* mx[h, u] = max over t >= from of row_w[t] · p[h, t, u] / dsum[h, t] for u
 * in t's domain (rows whose domain sum is not > 0 skipped), 0 otherwise and
 * past n_kv; the products rounded as kern_attn_restricted_max rounds them
 * (a max is exact in any order). */
__global__ static void
kcu_attn_max(struct kcu_attn a, int64_t from, int64_t stride, int64_t n_lead,
    const int64_t *dom_from, const float *row_w, const double *dsum, float *mx)
{
	int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, t;
	int64_t g = h / a.group, base = a.off[g + 1] - a.off[g] - a.n_tok;
	float best = 0.0f;

	if (u >= stride)
		return;
	if (u < a.maxn && (u < n_lead || u >= dom_from[g])) {
		/* t sees u from t = u - base on */
		for (t = u - base > from ? u - base : from; t < a.n_tok; t++) {
			double d = dsum[h * a.n_tok + t];
			float inv, v;
			if (!(d > 0.0))
				continue;
			inv = (float)(1.0 / d) * (row_w ? row_w[t] : 1.0f);
			v = a.s[(h * a.n_tok + t) * a.maxn + u] * inv;
			best = v > best ? v : best;
		}
	}
	mx[h * stride + u] = best;
}

/* ------------------------------------------------------------------------ */
/* Ops                                                                       */

static int
kcu_matmul(struct kern_ctx *ctx, float *dst, const struct kern_mat *w, const float *x,
    int64_t n_tok)
{
	struct kcu_state *s;
	const float one = 1.0f, zero = 0.0f;
	const void *wd;
	void *dx, *dy, *dh;
	int64_t be = kern_type_block_elems(w->type);
	int rc, exact = kern_ctx_is_exact(ctx);

	if (!kern_type_is_weight(w->type))
		return KERN_ERR_TYPE;
	if (w->cols % be || n_tok <= 0)
		return KERN_ERR_SHAPE;
	if ((rc = kcu_enter(ctx, &s)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_X, x, (size_t)(n_tok * w->cols) * 4, &dx)) ||
	    (rc = kcu_dst(ctx, s, KCU_B_Y, dst, (size_t)(n_tok * w->rows) * 4, &dy)))
		return rc;
	/* Row-major dst(n_tok, rows) is column-major dstᵀ(rows, n_tok) = W · xᵀ,
	 * where row-major W(rows, cols) read column-major is Wᵀ (lda = cols):
	 * so op(A) = T on W, op(B) = N on x (ldb = cols), ldc = rows. */
	if (exact) {
		if ((rc = kcu_weight(ctx, s, w, KCU_F32, &wd)))
			return rc;
		KCU_BLAS(ctx, cublasSgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)w->rows,
		    (int)n_tok, (int)w->cols, &one, (const float *)wd, (int)w->cols,
		    (const float *)dx, (int)w->cols, &zero, (float *)dy, (int)w->rows));
	} else if (n_tok >= 8) {
		if ((rc = kcu_weight(ctx, s, w, KCU_F16, &wd)) ||
		    (rc = kcu_scratch(ctx, s, KCU_B_H16, (size_t)(n_tok * w->cols) * 2, &dh)))
			return rc;
		kcu_to_half<<<kcu_blocks(n_tok * w->cols, 256), 256, 0, s->stream>>>(
		    (const float *)dx, (__half *)dh, n_tok * w->cols);
		KCU_LAUNCHED(ctx);
		KCU_BLAS(ctx, cublasGemmEx(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)w->rows,
		    (int)n_tok, (int)w->cols, &one, wd, CUDA_R_16F, (int)w->cols, dh, CUDA_R_16F,
		    (int)w->cols, &zero, dy, CUDA_R_32F, (int)w->rows, CUBLAS_COMPUTE_32F,
		    CUBLAS_GEMM_DEFAULT));
	} else {
		int raw = w->type == KERN_TYPE_Q4_0 || w->type == KERN_TYPE_Q4_1 ||
		    w->type == KERN_TYPE_Q8_0 || w->type == KERN_TYPE_F16 || w->type == KERN_TYPE_F32;
		int t = raw ? (int)w->type : KERN_TYPE_F16;
		size_t rb = raw ? w->row_bytes : (size_t)w->cols * 2;
		size_t bb = raw ? kern_type_block_bytes(w->type) * (32 / be) : 64;
		dim3 grid(kcu_blocks(w->rows, 8), (unsigned)n_tok);
		if (w->cols % 32)
			return KERN_ERR_SHAPE;
		if ((rc = kcu_weight(ctx, s, w, raw ? KCU_RAW : KCU_F16, &wd)))
			return rc;
		/* bb: bytes of 32 elements (blocks of F16/F32 are single elements) */
		kcu_matvec<<<grid, 256, 0, s->stream>>>(t, (const uint8_t *)wd, rb, bb, w->rows,
		    w->cols, (const float *)dx, (float *)dy);
		KCU_LAUNCHED(ctx);
	}
	return kcu_download(ctx, s, dst, dy, (size_t)(n_tok * w->rows) * 4);
}

/* Several matrices on the same activations: one matmul each (the device
 * has no threads to wake; the rows already run as one kernel per call). */
static int
kcu_matmul_n(struct kern_ctx *ctx, int count, float *const dst[],
    const struct kern_mat *const w[], const float *x, int64_t n_tok)
{
	int i, rc;

	if (count < 1 || count > KERN_MATMUL_N_MAX)
		return KERN_ERR_SHAPE;
	for (i = 0; i < count; i++)
		if (w[i]->cols != w[0]->cols)
			return KERN_ERR_SHAPE;
	for (i = 0; i < count; i++)
		if ((rc = kcu_matmul(ctx, dst[i], w[i], x, n_tok)))
			return rc;
	return KERN_OK;
}

static int
kcu_get_rows(struct kern_ctx *ctx, float *dst, const struct kern_mat *w, const int32_t *ids,
    int64_t n)
{
	struct kcu_state *s;
	const void *wd;
	void *di, *dy;
	int64_t i;
	int rc;

	if (!kern_type_is_weight(w->type))
		return KERN_ERR_TYPE;
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= w->rows)
			return KERN_ERR_SHAPE;
	if (n <= 0)
		return KERN_OK;
	if ((rc = kcu_enter(ctx, &s)) || (rc = kcu_weight(ctx, s, w, KCU_F32, &wd)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_IDS, ids, (size_t)n * 4, &di)) ||
	    (rc = kcu_dst(ctx, s, KCU_B_Y, dst, (size_t)(n * w->cols) * 4, &dy)))
		return rc;
	kcu_gather<<<kcu_blocks(n * w->cols, 256), 256, 0, s->stream>>>((const float *)wd,
	    (const int32_t *)di, w->cols, n, (float *)dy);
	KCU_LAUNCHED(ctx);
	return kcu_download(ctx, s, dst, dy, (size_t)(n * w->cols) * 4);
}

static int
kcu_rmsnorm_op(struct kern_ctx *ctx, float *dst, const float *x, const float *w,
    int64_t n_tok, int64_t dim, float eps)
{
	struct kcu_state *s;
	void *dx, *dw, *dy;
	int rc;
	if (n_tok <= 0)
		return KERN_OK;
	if ((rc = kcu_enter(ctx, &s)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_X, x, (size_t)(n_tok * dim) * 4, &dx)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_W, w, (size_t)dim * 4, &dw)) ||
	    (rc = kcu_scratch(ctx, s, KCU_B_Y, (size_t)(n_tok * dim) * 4, &dy)))
		return rc;
	kcu_rmsnorm<<<(unsigned)n_tok, 256, 0, s->stream>>>((const float *)dx, (const float *)dw,
	    (float *)dy, dim, eps);
	KCU_LAUNCHED(ctx);
	return kcu_download(ctx, s, dst, dy, (size_t)(n_tok * dim) * 4);
}

static int
kcu_rope_op(struct kern_ctx *ctx, float *x, const uint32_t *pos, int64_t n_tok,
    int64_t n_head, int64_t head_dim, float freq_base, const float *freq_factors,
    enum kern_rope_style style)
{
	struct kcu_state *s;
	size_t bytes = (size_t)(n_tok * n_head * head_dim) * 4;
	void *dx, *dp, *dff = NULL;
	int rc;
	if (head_dim > KERN_ROPE_MAX_HEAD_DIM || head_dim % 2 ||
	    (style != KERN_ROPE_NORM && style != KERN_ROPE_NEOX))
		return KERN_ERR_SHAPE;
	if (n_tok <= 0)
		return KERN_OK;
	if ((rc = kcu_enter(ctx, &s)) || (rc = kcu_upload(ctx, s, KCU_B_X, x, bytes, &dx)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_POS, pos, (size_t)n_tok * 4, &dp)))
		return rc;
	/* the frequency factors ride in the weight slot (no other use in this op) */
	if (freq_factors &&
	    (rc = kcu_upload(ctx, s, KCU_B_W, freq_factors, (size_t)(head_dim / 2) * 4, &dff)))
		return rc;
	kcu_rope<<<kcu_blocks(n_tok * n_head * head_dim / 2, 256), 256, 0, s->stream>>>(
	    (float *)dx, (const uint32_t *)dp, n_tok, n_head, head_dim,
	    kern_rope_theta_scale(freq_base, head_dim), (const float *)dff, style);
	KCU_LAUNCHED(ctx);
	return kcu_download(ctx, s, x, dx, bytes);
}

static int
kcu_binary(struct kern_ctx *ctx, float *a, const float *b, int64_t n, int op)
{
	struct kcu_state *s;
	void *da, *db;
	int rc;
	if (n <= 0)
		return KERN_OK;
	if ((rc = kcu_enter(ctx, &s)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_X, a, (size_t)n * 4, &da)) ||
	    (rc = kcu_upload(ctx, s, KCU_B_Y, b, (size_t)n * 4, &db)))
		return rc;
	if (op == 0)
		kcu_silu_mul<<<kcu_blocks(n, 256), 256, 0, s->stream>>>((float *)da,
		    (const float *)db, n);
	else
		kcu_add<<<kcu_blocks(n, 256), 256, 0, s->stream>>>((float *)da, (const float *)db, n);
	KCU_LAUNCHED(ctx);
	return kcu_download(ctx, s, a, da, (size_t)n * 4);
}

static int
kcu_silu_mul_op(struct kern_ctx *ctx, float *g, const float *u, int64_t n)
{
	return kcu_binary(ctx, g, u, n, 0);
}

static int
kcu_add_op(struct kern_ctx *ctx, float *dst, const float *src, int64_t n)
{
	return kcu_binary(ctx, dst, src, n, 1);
}

/* Pack every KV head's rows of one array (k, v or ka) into a device buffer,
 * head after head. */
static int
kcu_pack_heads(struct kern_ctx *ctx, struct kcu_state *s, int which,
    const struct kern_attn_head *heads, int64_t n_kv_head, const int64_t *off, int64_t hd,
    int field, void **out)
{
	int64_t g;
	int rc = kcu_scratch(ctx, s, which, (size_t)(off[n_kv_head] * hd) * 4 + 4, out);
	if (rc)
		return rc;
	for (g = 0; g < n_kv_head; g++) {
		const float *src = field == 0 ? heads[g].k : field == 1 ? heads[g].v : heads[g].ka;
		size_t n = (size_t)((off[g + 1] - off[g]) * hd) * 4;
		void *d;
		if ((rc = kern_res_in(ctx, src, n, &d)) < 0)
			return rc;
		KCU_CHECK(ctx, cudaMemcpyAsync((float *)*out + off[g] * hd, rc ? d : src, n,
		    rc ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, s->stream));
	}
	return KERN_OK;
}

static int
kcu_attention_op(struct kern_ctx *ctx, float *out, const float *q, int64_t n_tok,
    int64_t n_head, int64_t n_kv_head, int64_t head_dim, const struct kern_attn_head *heads,
    float scale, struct kern_attn_stats *st)
{
	struct kcu_state *s;
	struct kcu_attn a;
	int64_t *off = NULL, g, maxn = 0;
	uint32_t *pod = NULL;
	void *dk, *dv, *dka = NULL, *dpos = NULL, *doff, *dq, *dqa = NULL, *dqpos = NULL, *dpod = NULL;
	void *ds, *dout, *dst = NULL, *dmx = NULL, *ddomf = NULL, *drow = NULL, *ddsum = NULL;
	void *dbias = NULL;
	size_t qbytes = (size_t)(n_tok * n_head * head_dim) * 4;
	int rc, is_pod;

	if (n_kv_head <= 0 || n_head % n_kv_head || head_dim > 512 || n_tok <= 0)
		return KERN_ERR_SHAPE;
	for (g = 0; g < n_kv_head; g++)
		if (heads[g].n_kv < n_tok || (st && heads[g].n_kv > st->stride))
			return KERN_ERR_SHAPE;
	if (st && st->max && (!st->dom_from || st->n_lead < 0))
		return KERN_ERR_SHAPE;
	is_pod = heads[0].ka != NULL;
	off = (int64_t *)malloc((size_t)(n_kv_head + 1) * sizeof(int64_t));
	pod = (uint32_t *)malloc((size_t)(2 * n_kv_head) * sizeof(uint32_t));
	if (!off || !pod) {
		free(off);
		free(pod);
		return KERN_ERR_NOMEM;
	}
	off[0] = 0;
	for (g = 0; g < n_kv_head; g++) {
		off[g + 1] = off[g] + heads[g].n_kv;
		maxn = heads[g].n_kv > maxn ? heads[g].n_kv : maxn;
		pod[2 * g] = heads[g].n_s;
		pod[2 * g + 1] = heads[g].n_r;
	}
	rc = kcu_enter(ctx, &s);
	if (!rc)
		rc = kcu_pack_heads(ctx, s, KCU_B_K, heads, n_kv_head, off, head_dim, 0, &dk);
	if (!rc)
		rc = kcu_pack_heads(ctx, s, KCU_B_V, heads, n_kv_head, off, head_dim, 1, &dv);
	if (!rc)
		rc = kcu_upload(ctx, s, KCU_B_OFF, off, (size_t)(n_kv_head + 1) * 8, &doff);
	if (!rc)
		rc = kcu_upload(ctx, s, KCU_B_Q, q, qbytes, &dq);
	if (!rc && is_pod) {
		rc = kcu_pack_heads(ctx, s, KCU_B_KA, heads, n_kv_head, off, head_dim, 2, &dka);
		if (!rc)
			rc = kcu_scratch(ctx, s, KCU_B_POS, (size_t)off[n_kv_head] * 4, &dpos);
		for (g = 0; !rc && g < n_kv_head; g++)
			if (cudaMemcpyAsync((uint32_t *)dpos + off[g], heads[g].pos,
			    (size_t)heads[g].n_kv * 4, cudaMemcpyHostToDevice, s->stream) != cudaSuccess) {
				kern_ctx_set_error(ctx, "cuda: attention: position upload failed");
				rc = KERN_ERR_DEVICE;
			}
		if (!rc)
			rc = kcu_upload(ctx, s, KCU_B_QA, heads[0].qa, qbytes, &dqa);
		if (!rc)
			rc = kcu_upload(ctx, s, KCU_B_QPOS, heads[0].qpos, (size_t)n_tok * 4, &dqpos);
		if (!rc)
			rc = kcu_upload(ctx, s, KCU_B_IDS, pod, (size_t)(2 * n_kv_head) * 4, &dpod);
	}
	if (!rc && heads[0].bias) { /* a refit cut's biases, packed like the keys */
		rc = kcu_scratch(ctx, s, KCU_B_BIAS, (size_t)off[n_kv_head] * 4 + 4, &dbias);
		for (g = 0; !rc && g < n_kv_head; g++)
			if (cudaMemcpyAsync((float *)dbias + off[g], heads[g].bias,
			    (size_t)heads[g].n_kv * 4, cudaMemcpyHostToDevice, s->stream) != cudaSuccess) {
				kern_ctx_set_error(ctx, "cuda: attention: bias upload failed");
				rc = KERN_ERR_DEVICE;
			}
	}
	if (!rc)
		rc = kcu_scratch(ctx, s, KCU_B_S, (size_t)(n_head * n_tok * maxn) * 4, &ds);
	if (!rc)
		rc = kcu_dst(ctx, s, KCU_B_O, out, qbytes, &dout);
	if (!rc && st && st->sum)
		rc = kcu_scratch(ctx, s, KCU_B_ST, (size_t)(n_head * st->stride) * 4, &dst);
	if (!rc && st && st->max) {
		rc = kcu_scratch(ctx, s, KCU_B_MX, (size_t)(n_head * st->stride) * 4, &dmx);
		if (!rc)
			rc = kcu_upload(ctx, s, KCU_B_DOMF, st->dom_from, (size_t)n_kv_head * 8,
			    &ddomf);
		if (!rc && st->row_w)
			rc = kcu_upload(ctx, s, KCU_B_ROWW, st->row_w, (size_t)n_tok * 4, &drow);
		if (!rc)
			rc = kcu_scratch(ctx, s, KCU_B_DSUM, (size_t)(n_head * n_tok) * 8, &ddsum);
	}
	free(off);
	free(pod);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.n_tok = n_tok;
	a.n_head = n_head;
	a.group = n_head / n_kv_head;
	a.head_dim = head_dim;
	a.maxn = maxn;
	a.scale = scale;
	a.off = (const int64_t *)doff;
	a.k = (const float *)dk;
	a.v = (const float *)dv;
	a.ka = (const float *)dka;
	a.pos = (const uint32_t *)dpos;
	a.qpos = (const uint32_t *)dqpos;
	a.pod = is_pod ? (const uint32_t *)dpod : NULL;
	a.q = (const float *)dq;
	a.qa = (const float *)dqa;
	a.bias = (const float *)dbias;
	a.s = (float *)ds;
	{
		dim3 grid(kcu_blocks(maxn, 128), (unsigned)n_tok, (unsigned)n_head);
		kcu_attn_logits<<<grid, 128, 0, s->stream>>>(a);
		KCU_LAUNCHED(ctx);
	}
	kcu_attn_softmax<<<(unsigned)(n_head * n_tok), 256, 0, s->stream>>>(a);
	KCU_LAUNCHED(ctx);
	kcu_attn_pv<<<(unsigned)(n_head * n_tok), head_dim < 128 ? (unsigned)head_dim : 128u, 0,
	    s->stream>>>(a, (float *)dout);
	KCU_LAUNCHED(ctx);
	if (st) {
		int64_t from = st->row_from < 0 ? 0 : st->row_from;
		dim3 grid(kcu_blocks(st->stride, 256), (unsigned)n_head);
		if (st->sum) {
			kcu_attn_stats<<<grid, 256, 0, s->stream>>>(a, from, st->stride, (float *)dst);
			KCU_LAUNCHED(ctx);
			if ((rc = kcu_put(ctx, s, st->sum, dst, (size_t)(n_head * st->stride) * 4)))
				return rc;
		}
		if (st->max) {
			kcu_attn_domain<<<(unsigned)(n_head * n_tok), 256, 0, s->stream>>>(a, from,
			    st->n_lead, (const int64_t *)ddomf, (double *)ddsum);
			KCU_LAUNCHED(ctx);
			kcu_attn_max<<<grid, 256, 0, s->stream>>>(a, from, st->stride, st->n_lead,
			    (const int64_t *)ddomf, (const float *)drow, (const double *)ddsum,
			    (float *)dmx);
			KCU_LAUNCHED(ctx);
			if ((rc = kcu_put(ctx, s, st->max, dmx, (size_t)(n_head * st->stride) * 4)))
				return rc;
		}
	}
	return kcu_download(ctx, s, out, dout, qbytes);
}

/* Rows between resident ranges stay on the device (one 2-D copy); rows
 * between host buffers are copied by the host. */
static int
kcu_copy_rows_op(struct kern_ctx *ctx, float *dst, int64_t dst_stride, const float *src,
    int64_t src_stride, int64_t rows, int64_t n)
{
	struct kcu_state *s;
	void *dd, *ds;
	int rd, rs, rc;
	size_t span_s, span_d;
	enum cudaMemcpyKind kind;

	if (rows < 0 || n < 0)
		return KERN_ERR_SHAPE;
	if (rows == 0 || n == 0)
		return KERN_OK;
	if (rows == 1)
		dst_stride = src_stride = n;
	span_s = (size_t)((rows - 1) * src_stride + n) * 4;
	span_d = (size_t)((rows - 1) * dst_stride + n) * 4;
	if ((rc = kcu_enter(ctx, &s)))
		return rc;
	if ((rs = kern_res_in(ctx, src, span_s, &ds)) < 0)
		return rs;
	if ((rd = kern_res_out(ctx, dst, span_d, rows == 1 || dst_stride == n, &dd)) < 0)
		return rd;
	if (!rs && !rd) {
		int64_t r;
		for (r = 0; r < rows; r++)
			memcpy(dst + r * dst_stride, src + r * src_stride, (size_t)n * 4);
		return KERN_OK;
	}
	kind = rs ? (rd ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost) :
		    cudaMemcpyHostToDevice;
	KCU_CHECK(ctx, cudaMemcpy2DAsync(rd ? dd : (void *)dst, (size_t)dst_stride * 4,
	    rs ? ds : (const void *)src, (size_t)src_stride * 4, (size_t)n * 4, (size_t)rows, kind,
	    s->stream));
	if (!rd)
		s->pending = 1;
	return kcu_finish(ctx, s);
}

/* ------------------------------------------------------------------------ */
/* Device memory of resident ranges                                          */

static void *
kcu_res_alloc(void *dev, size_t bytes)
{
	void *p = NULL;
	(void)dev;
	return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void
kcu_res_free(void *dev, void *p)
{
	struct kcu_state *s = (struct kcu_state *)dev;
	cudaStreamSynchronize(s->stream); /* no op still reads it */
	cudaFree(p);
}

static int
kcu_res_h2d(void *dev, void *d, const void *h, size_t n)
{
	struct kcu_state *s = (struct kcu_state *)dev;
	/* from pageable memory: staged before the call returns, so the host may
	 * change h at once; the copy runs in order before the next op */
	return cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s->stream) != cudaSuccess;
}

static int
kcu_res_d2h(void *dev, void *h, const void *d, size_t n)
{
	struct kcu_state *s = (struct kcu_state *)dev;
	return cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s->stream) != cudaSuccess ||
	    cudaStreamSynchronize(s->stream) != cudaSuccess;
}

static const struct kern_res_mem kcu_res_mem = { kcu_res_alloc, kcu_res_free, kcu_res_h2d,
	kcu_res_d2h, 0 };

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */

static void
kcu_close(void *dev)
{
	struct kcu_state *s = (struct kcu_state *)dev;
	int i;
	if (!s)
		return;
	cudaSetDevice(s->device);
	cudaStreamSynchronize(s->stream);
	for (i = 0; i < s->nw; i++)
		cudaFree(s->w[i].dev);
	for (i = 0; i < KCU_B_COUNT; i++)
		if (s->buf[i].p)
			cudaFree(s->buf[i].p);
	if (s->blas)
		cublasDestroy(s->blas);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	free(s->w);
	free(s);
}

static int
kcu_open(void **dev, char *err, size_t errlen)
{
	struct kcu_state *s;
	cudaError_t e;
	int n = 0;

	*dev = NULL;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		snprintf(err, errlen, "no CUDA device: %s",
		    e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none");
		cudaGetLastError(); /* clear the sticky-free error state */
		return KERN_ERR_NODEV;
	}
	s = (struct kcu_state *)calloc(1, sizeof(*s));
	if (!s)
		return KERN_ERR_NOMEM;
	s->device = 0;
	if ((e = cudaSetDevice(0)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		snprintf(err, errlen, "cannot open CUDA device 0: %s", cudaGetErrorString(e));
		kcu_close(s);
		return KERN_ERR_NODEV;
	}
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(s->blas, s->stream) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "cannot start cuBLAS on CUDA device 0");
		kcu_close(s);
		return KERN_ERR_NODEV;
	}
	*dev = s;
	return KERN_OK;
}

static const struct kern_ops kcu_ops = {
	"cuda",
	kcu_matmul,
	kcu_matmul_n,
	kcu_get_rows,
	kcu_rmsnorm_op,
	kcu_rope_op,
	kcu_attention_op,
	kcu_silu_mul_op,
	kcu_add_op,
	kcu_copy_rows_op,
};

static const struct kern_dev_backend kcu_backend = { "cuda", &kcu_ops, kcu_open, kcu_close,
	&kcu_res_mem };

extern "C" const struct kern_dev_backend *
kern_cuda_backend(void)
{
	return &kcu_backend;
}
