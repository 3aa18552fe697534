/*
 * kernels.h: the whole numeric contract of kvsnap.
 *
 * Everything the engine computes goes through this header: tensor types and
 * their block layouts, dequantization, and an op table (struct kern_ops) that
 * each backend (kernels/cpu/, later kernels/cuda/) fills in.  Nothing here
 * knows about models, caches or files; the engine owns those.
 *
 * Threading: a struct kern_ctx owns one thread pool created once by
 * kern_ctx_init().  Ops that take a ctx may use all of its threads and return
 * when the work is done.  One ctx must be used by one caller thread at a time.
 *
 * Layouts: matrices are row-major.  A weight matrix of `rows` outputs and
 * `cols` inputs is stored as `rows` rows of `cols` elements (GGUF ne = [cols,
 * rows]); for quantized types each row is a run of blocks along `cols`.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for int64_t, uint16_t */

/* ------------------------------------------------------------------------ */
/* Tensor types (values are ggml's type ids; never renumber)                 */

enum kern_type {
	KERN_TYPE_F32 = 0,
	KERN_TYPE_F16 = 1,
	KERN_TYPE_Q4_0 = 2,
	KERN_TYPE_Q4_1 = 3,
	KERN_TYPE_Q5_0 = 6,
	KERN_TYPE_Q5_1 = 7,
	KERN_TYPE_Q8_0 = 8,
	KERN_TYPE_Q8_1 = 9, /* activations only */
	KERN_TYPE_Q2_K = 10,
	KERN_TYPE_Q3_K = 11,
	KERN_TYPE_Q4_K = 12,
	KERN_TYPE_Q5_K = 13,
	KERN_TYPE_Q6_K = 14,
	KERN_TYPE_Q8_K = 15, /* activations only */
	KERN_TYPE_BF16 = 30,
	KERN_TYPE_COUNT = 40 /* upper bound of ggml ids we know of */
};

#define KERN_QK 32    /* elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 */
#define KERN_QK_K 256 /* elements per super-block of Q2_K .. Q6_K */

/* Packed block layouts (little-endian, no padding; see spec/model.md §3). */
struct kern_block_q4_0 {
	uint16_t d;            /* f16 scale */
	uint8_t qs[KERN_QK / 2]; /* low nibble: element i, high: i + 16 */
};
struct kern_block_q4_1 {
	uint16_t d, m;         /* f16 scale and min */
	uint8_t qs[KERN_QK / 2];
};
struct kern_block_q5_0 {
	uint16_t d;
	uint8_t qh[4];           /* bit j: the 5th bit of element j (little-endian u32) */
	uint8_t qs[KERN_QK / 2]; /* low 4 bits, as Q4_0; value = q5 - 16 */
};
struct kern_block_q5_1 {
	uint16_t d, m;
	uint8_t qh[4];
	uint8_t qs[KERN_QK / 2]; /* value = q5 * d + m */
};
struct kern_block_q8_0 {
	uint16_t d;
	int8_t qs[KERN_QK];
};
struct kern_block_q8_1 {
	uint16_t d, s; /* s = f16(d * sum(qs)) */
	int8_t qs[KERN_QK];
};
/* K-quants: super-blocks of 256 in sub-blocks of 16 or 32 (ggml's layouts). */
struct kern_block_q2_k {
	uint8_t scales[KERN_QK_K / 16]; /* low nibble: scale, high: min, per 16 */
	uint8_t qs[KERN_QK_K / 4];      /* 2 bits each */
	uint16_t d, dmin;
};
struct kern_block_q3_k {
	uint8_t hmask[KERN_QK_K / 8];   /* 3rd bit; set means +0, clear means -4 */
	uint8_t qs[KERN_QK_K / 4];      /* low 2 bits */
	uint8_t scales[12];             /* 16 6-bit scales (offset 32), packed */
	uint16_t d;
};
struct kern_block_q4_k {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qs[KERN_QK_K / 2];
};
struct kern_block_q5_k {
	uint16_t d, dmin;
	uint8_t scales[12];             /* as Q4_K */
	uint8_t qh[KERN_QK_K / 8];      /* 5th bits */
	uint8_t qs[KERN_QK_K / 2];      /* low 4 bits, as Q4_K */
};
struct kern_block_q6_k {
	uint8_t ql[KERN_QK_K / 2];
	uint8_t qh[KERN_QK_K / 4];
	int8_t scales[KERN_QK_K / 16];
	uint16_t d;
};
/* The activations a K-quant row meets (ggml's block_q8_K): an f32 scale,
 * and Σ qs per 16 for the sub-blocks' mins and offsets. */
struct kern_block_q8_k {
	float d;
	int8_t qs[KERN_QK_K];
	int16_t bsums[KERN_QK_K / 16];
};

/* Elements per block, bytes per block; 0 for a type we do not support. */
int kern_type_block_elems(enum kern_type t);
size_t kern_type_block_bytes(enum kern_type t);
/* Bytes of one row of n elements; 0 if n is not a whole number of blocks or
 * the type is unsupported. */
size_t kern_type_row_bytes(enum kern_type t, int64_t n);
/* Whether t can be a weight matrix's type (every type above except the
 * activation-only Q8_1 and Q8_K). */
int kern_type_is_weight(enum kern_type t);
/* Human name ("q4_1"), or "unknown". */
const char *kern_type_name(enum kern_type t);

/* fp16 / bf16 conversion (IEEE binary16, round to nearest even). */
float kern_f16_to_f32(uint16_t h);
uint16_t kern_f32_to_f16(float f);
float kern_bf16_to_f32(uint16_t h);

/* Dequantize n elements (a whole number of blocks) of type t into dst.
 * Plain scalar code: the reference every fast path is checked against. */
void kern_dequant_row(enum kern_type t, const void *src, float *dst, int64_t n);

/* Quantize n floats (multiple of 32) to Q8_1 / Q8_0 blocks exactly as
 * ggml-cpu's x86 SIMD quantize_row_q8_* do (round half to even). */
void kern_quant_row_q8_1(const float *x, struct kern_block_q8_1 *dst, int64_t n);
void kern_quant_row_q8_0(const float *x, struct kern_block_q8_0 *dst, int64_t n);
/* n floats (multiple of 256) to Q8_K exactly as ggml's quantize_row_q8_K
 * (which on x86 is its scalar reference): per 256, iscale = -127/x_m for
 * the element x_m of largest |x| (the first one), q = min(127,
 * round-half-even(iscale·x)), d = 1/iscale; an all-zero block is d = 0. */
void kern_quant_row_q8_k(const float *x, struct kern_block_q8_k *dst, int64_t n);
/* Activations in type at (Q8_0, Q8_1, Q8_K; F32: a copy) from n floats. */
void kern_quant_row_act(enum kern_type at, const float *x, void *dst, int64_t n);

/* Dot product of one weight row of type t (n elements) with activations.
 * The activations are rounded the way llama.cpp's CPU backend rounds them
 * (its vec_dot_type): Q8_0 blocks for Q4_0/Q5_0/Q8_0 rows, Q8_1 for
 * Q4_1/Q5_1, Q8_K for Q2_K..Q6_K; for F32, F16 and BF16 rows `act` is the
 * f32 vector itself.  kern_vec_dot_act_type() tells which. */
enum kern_type kern_vec_dot_act_type(enum kern_type t);
float kern_vec_dot(enum kern_type t, const void *row, const void *act, int64_t n);

/* ------------------------------------------------------------------------ */
/* Matrices and the op table                                                 */

/* A weight matrix: `rows` rows of `cols` elements of `type`, row stride
 * `row_bytes`.  `data` is borrowed (usually from the model's mmap). */
struct kern_mat {
	enum kern_type type;
	int64_t rows, cols;
	size_t row_bytes;
	const void *data;
};

/* One KV head's view for chunk attention.  k holds n_kv keys (already
 * rotated), v the values, each head_dim floats, row-major.  The last n_tok
 * units are the chunk's own tokens in order: query t sees units
 * [0, n_kv - n_tok + t]. */
struct kern_attn_head {
	const float *k; /* (n_kv, head_dim) */
	const float *v; /* (n_kv, head_dim) */
	int64_t n_kv;
	/* PoD layer sharing (spec/pod.md §1.3); ka == NULL: plain attention.
	 * Otherwise query t (position qpos[t]) scores unit u as distant, with
	 * qa (laid out like q) against ka, when n_s <= pos[u] and
	 * pos[u] + n_r <= qpos[t]; as proximal, with q against k, otherwise.
	 * One softmax over both; the values are always v.  The logits of k rows
	 * that are distant for a query are discarded, so such rows may hold
	 * anything, NaN included. */
	const float *ka;       /* (n_kv, head_dim) the anchor layer's keys */
	const float *qa;       /* (n_tok, n_head, head_dim) the anchor's queries */
	const uint32_t *pos;   /* (n_kv) unit positions */
	const uint32_t *qpos;  /* (n_tok) query positions */
	uint32_t n_s, n_r;
	/* A refit cut's logit bias per unit (engine/cache/refit.c), added to
	 * the scaled logit of every query; NULL: none.  Set on all heads of a
	 * call or on none. */
	const float *bias;     /* (n_kv) or NULL */
};

/* Attention statistics for eviction policies: for every query head h and
 * every unit u of its KV head, sum[h * stride + u] = Σ over chunk queries
 * t >= row_from of the softmax probability π[t][u] (normalised over all
 * units t sees; 0 for units t cannot see).  Written, not accumulated.
 *
 * Context-reconstruction scores (KVzip), when max != NULL: with KV head g's
 * domain D_g = units [0, n_lead) ∪ [dom_from[g], n_kv) (sinks, the segment
 * being scored, the chunk), max[h * stride + u] = max over queries t >=
 * row_from of row_w[t] · π[t][u] / Σ_{w ∈ D_g, t sees w} π[t][w]: the
 * softmax restricted to the domain (derived from the full one, which the
 * output still uses), weighted per query (row_w NULL: 1); 0 for units
 * outside D_g or never seen.  Either of sum and max may be NULL. */
struct kern_attn_stats {
	float *sum;       /* (n_head, stride) or NULL */
	int64_t stride;   /* >= the largest n_kv of any head */
	int64_t row_from; /* first query (chunk index) that contributes */
	float *max;       /* (n_head, stride) or NULL */
	int64_t n_lead;   /* leading units of every head in the domain */
	const int64_t *dom_from; /* (n_kv_head) first unit of the domain's tail */
	const float *row_w;      /* (n_tok) per-query weight of max, or NULL */
};

/* Which elements of a head vector RoPE rotates together (kernels/rope.h). */
enum kern_rope_style {
	KERN_ROPE_NORM = 0, /* adjacent pairs (2i, 2i+1): llama, GGUF's "NORM" */
	KERN_ROPE_NEOX = 1  /* halves (i, i + head_dim/2): GPT-NeoX, Qwen2 */
};

struct kern_ctx;

#define KERN_MATMUL_N_MAX 4 /* matrices one matmul_n call takes */

/* Every op returns 0 or a kern_err (a device backend can fail anywhere).
 * Pointers are host memory; a device backend copies what it needs and keeps
 * weights (keyed by kern_mat.data, which must stay valid and unchanged for
 * the ctx's life) resident on the device, and the host ranges made
 * resident below. */

/* Device residency.  kern_ctx_resident_add(ctx, p, bytes) gives the host
 * range [p, p + bytes) a device copy for as long as the residency lasts:
 * ops read and write that copy, with no transfer and no wait, and the host
 * copy goes stale where an op wrote.  Before the host reads such a range
 * it calls kern_ctx_host_sync(ctx, p, bytes, 0) (the device's newer bytes
 * come back), before it writes it kern_ctx_host_sync(.., 1) (the device
 * copy then reloads on the next op that reads it).  kern_ctx_resident_end
 * brings every host copy up to date and drops the device copies; it must
 * run before a resident range is freed.  On the CPU, all three do nothing
 * (the host copy is the only one).  A range must not overlap another. */
int kern_ctx_resident_add(struct kern_ctx *ctx, void *p, size_t bytes);
int kern_ctx_host_sync(struct kern_ctx *ctx, const void *p, size_t bytes, int write);
int kern_ctx_resident_end(struct kern_ctx *ctx);
struct kern_ops {
	const char *name;
	/* dst(n_tok, w->rows) = x(n_tok, w->cols) · wᵀ */
	int (*matmul)(struct kern_ctx *ctx, float *dst, const struct kern_mat *w,
	    const float *x, int64_t n_tok);
	/* dst[i](n_tok, w[i]->rows) = x(n_tok, cols) · w[i]ᵀ for i < count
	 * (1..KERN_MATMUL_N_MAX), every w[i] `cols` wide: bit for bit what
	 * count matmul calls give, in one go (Q/K/V, gate/up of a layer: the
	 * CPU quantizes x once per activation type and runs one parallel
	 * region over the rows of all the matrices). */
	int (*matmul_n)(struct kern_ctx *ctx, int count, float *const dst[],
	    const struct kern_mat *const w[], const float *x, int64_t n_tok);
	/* dst(n, w->cols) = rows ids[0..n) of w, dequantized */
	int (*get_rows)(struct kern_ctx *ctx, float *dst, const struct kern_mat *w,
	    const int32_t *ids, int64_t n);
	/* dst(n_tok, dim) = x / rms(x) * w, per row; sum of squares in double */
	int (*rmsnorm)(struct kern_ctx *ctx, float *dst, const float *x,
	    const float *w, int64_t n_tok, int64_t dim, float eps);
	/* In place, RoPE of x(n_tok, n_head, head_dim) with token t at
	 * position pos[t], pairs laid out by `style` (kernels/rope.h defines
	 * the rotation; head_dim even, <= KERN_ROPE_MAX_HEAD_DIM); freq_factors
	 * (head_dim/2 divisors of the angles, host memory) or NULL. */
	int (*rope)(struct kern_ctx *ctx, float *x, const uint32_t *pos,
	    int64_t n_tok, int64_t n_head, int64_t head_dim, float freq_base,
	    const float *freq_factors, enum kern_rope_style style);
	/* out(n_tok, n_head, head_dim) = softmax(q·kᵀ·scale, causal) · v, query
	 * head h using KV head h / (n_head / n_kv_head). */
	int (*attention)(struct kern_ctx *ctx, float *out, const float *q,
	    int64_t n_tok, int64_t n_head, int64_t n_kv_head, int64_t head_dim,
	    const struct kern_attn_head *heads, float scale, struct kern_attn_stats *st);
	/* g[i] = silu(g[i]) * u[i] */
	int (*silu_mul)(struct kern_ctx *ctx, float *g, const float *u, int64_t n);
	/* dst[i] += src[i] */
	int (*add)(struct kern_ctx *ctx, float *dst, const float *src, int64_t n);
	/* rows rows of n floats: dst + r * dst_stride = src + r * src_stride
	 * (strides in floats; the rows do not overlap).  The engine's moves
	 * between op buffers and into the cache pool go through here, so that
	 * on a device they stay on it (kern_ctx_resident_add). */
	int (*copy_rows)(struct kern_ctx *ctx, float *dst, int64_t dst_stride,
	    const float *src, int64_t src_stride, int64_t rows, int64_t n);
};

/* Status codes of this module (0 = success). */
enum kern_err {
	KERN_OK = 0,
	KERN_ERR_NOMEM = -1,
	KERN_ERR_TYPE = -2,   /* tensor type not supported by this op */
	KERN_ERR_SHAPE = -3,  /* shapes do not fit */
	KERN_ERR_THREAD = -4, /* could not start threads */
	KERN_ERR_NODEV = -5,  /* backend has no device (CUDA without a GPU) */
	KERN_ERR_DEVICE = -6, /* a device call failed (details in kern_ctx_error) */
	KERN_ERR_NOBACKEND = -7 /* this build has no such backend */
};
const char *kern_strerror(int err);

/* CPU backend. n_threads <= 0 means one per online core. */
int kern_ctx_init(struct kern_ctx **out, int n_threads);
void kern_ctx_free(struct kern_ctx *ctx);
int kern_ctx_threads(const struct kern_ctx *ctx);
const struct kern_ops *kern_ctx_ops(const struct kern_ctx *ctx);

/* Backends.  A ctx starts on the CPU; kern_ctx_set_backend(ctx, "cuda")
 * moves its op table to the GPU (the thread pool stays for engine-side work).
 * KERN_ERR_NOBACKEND if this build has no CUDA, KERN_ERR_NODEV if no device
 * is usable; kern_ctx_error() then says why in words. */
int kern_ctx_set_backend(struct kern_ctx *ctx, const char *name);
const char *kern_ctx_backend(const struct kern_ctx *ctx);
/* Last device error or backend message ("" if none). */
const char *kern_ctx_error(const struct kern_ctx *ctx);
/* Whether this build carries the CUDA backend at all. */
int kern_have_cuda(void);

/* Exact mode: matmuls use f32 activations (no 8-bit rounding) and sgemm
 * for every chunk size.  Off by default. */
void kern_ctx_set_exact(struct kern_ctx *ctx, int exact);

/* How a CPU matmul of KERN_GEMM_MIN_TOK or more tokens (a prefill) runs:
 * dequantized weights and sgemm, or the integer dot products decode uses
 * (weights kept quantized, 8-bit activations, as llama.cpp does).  AUTO
 * picks per weight type (kernels/cpu/ops.c, measured in bench/RESULTS.md);
 * the others are for benches and tests. */
enum kern_prefill { KERN_PREFILL_AUTO = 0, KERN_PREFILL_GEMM, KERN_PREFILL_QDOT };
void kern_ctx_set_prefill(struct kern_ctx *ctx, enum kern_prefill how);

/* Run fn(arg, ith, nth) on every pool thread (ith = 0..nth-1, the caller is
 * thread 0) and return when all are done. */
void kern_parallel(struct kern_ctx *ctx, void (*fn)(void *arg, int ith, int nth),
    void *arg);

/* Name of the SIMD level chosen at run time ("avx512", "avx2", "scalar"). */
const char *kern_simd_name(void);

#endif /* KERNELS_H */
