/*
 * locret_train.c: training Locret retaining heads against the frozen model
 * (spec/locret.md §1.3, §3, §4, §7.2): loss and closed-form gradients per
 * layer, value clipping, AdamW, the schedule, initialization, checkpoints
 * and the sidecar.  The label pass is in engine/train/locret_labels.c.
 *
 * Per layer l (U: T×D_in, W1 stored as fc1.weight (d_R, D_in), W2 as
 * fc2.weight (n_kv, d_R)):
 *   Z = U·W1ᵀ, A = silu(Z), P = A·W2ᵀ                    (T×n_kv)
 *   term_l = (1/(L·n_kv·T))·Σ SL1(P − S) + α·(1/(n_kv·(T−1)))·Σ (P_t − P_{t+1})²
 *   Loss = Σ_l term_l   (= L_reg averaged over layers + α·L_smooth summed)
 *   G = clamp(P − S, ±1)/(L·n_kv·T) + α·2/(n_kv·(T−1))·([t<T−1](P_t − P_{t+1})
 *       − [t>0](P_{t−1} − P_t))
 *   dW2 = Gᵀ·A, dZ = (G·W2) ⊙ silu'(Z), dW1 = dZᵀ·U
 * then every gradient element is clamped to ±clip and AdamW updates the
 * weight (decay first, bias-corrected moments, §7.2).  Layers are
 * independent, so each is one task on the pool with single-threaded BLAS:
 * the result does not depend on the thread count.
 *
 * Initialization (§1.3): w = σ·N(0,1), the normals from Box–Muller over a
 * splitmix64 stream seeded with splitmix64(seed ⊕ (2·layer + tensor + 1)·
 * 0x9E3779B97F4A7C15), values taken in row-major fc1/fc2 order.
 *
 * Checkpoint layout (little-endian):
 *   "KVSNAPTR" | u32 version 1 | u32 n_layer, n_head, n_head_kv, head_dim,
 *   d_r | u64 seed | i64 n_steps, warmup, t_max, step | f64 lr, beta1, beta2,
 *   eps, wd, clip, alpha, sigma | char[64] model fingerprint (hex) |
 *   per layer: f32 w1, m(w1), v(w1), w2, m(w2), v(w2) | BLAKE2b-256 of all
 *   the bytes before it.
 */
#include <cblas.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* for strcasecmp */
#include <unistd.h>

#include <sodium.h>

#include "common/fdio.h"
#include "common/rng.h"
#include "engine/train/locret_train.h"
#include "engine/train/train.h"

#define TRAIN_MAGIC "KVSNAPTR"
#define TRAIN_VERSION 1
#define TRAIN_SIGMA_SMOLLM2 0.041666666666666664 /* SmolLM2 initializer_range */

struct eng_train {
	int L, H, KV, hd;
	int64_t d_in, n1, n2;    /* n1 = d_r·d_in, n2 = n_kv·d_r per layer */
	struct eng_train_opts o;
	int64_t step;            /* optimizer steps taken */
	float *buf;              /* one block: per layer w1 m1 v1 w2 m2 v2 */
	char model_fp[65];
};

/* Per layer: w1, m(w1), v(w1), w2, m(w2), v(w2) consecutive. */
static float *
train_layer_block(const struct eng_train *t, int l)
{
	return t->buf + (size_t)l * (size_t)(3 * t->n1 + 3 * t->n2);
}

/* ------------------------------------------------------------------------ */
/* Options and schedule                                                      */

void
eng_train_opts_default(struct eng_train_opts *o, int64_t n_steps)
{
	memset(o, 0, sizeof(*o));
	o->d_r = 256;
	o->seed = 0;
	o->n_steps = n_steps;
	o->warmup = (2 * n_steps + 1) / 3;
	o->lr = 5e-4;
	o->beta1 = 0.9;
	o->beta2 = 0.95;
	o->eps = 1e-8;
	o->wd = 0.01;
	o->clip = 0.5;
	o->alpha = 0.0025;
	o->sigma = TRAIN_SIGMA_SMOLLM2;
	o->t_max = 10240;
}

double
eng_train_lr(const struct eng_train_opts *o, int64_t s)
{
	if (s < o->warmup)
		return o->lr * (double)s / (double)o->warmup;
	if (o->n_steps <= o->warmup)
		return s < o->n_steps ? o->lr : 0.0;
	return o->lr * fmax(0.0, (double)(o->n_steps - s) / (double)(o->n_steps - o->warmup));
}

/* ------------------------------------------------------------------------ */
/* Initialization                                                            */

/* n values of σ·N(0,1) from the stream of (seed, layer, tensor). */
static void
train_init_normal(float *w, int64_t n, uint64_t seed, int layer, int tensor, double sigma)
{
	uint64_t s = seed ^ ((uint64_t)(2 * layer + tensor + 1) * UINT64_C(0x9E3779B97F4A7C15));
	int64_t i;
	s = kv_splitmix64_next(&s);
	for (i = 0; i < n; i += 2) {
		double u1 = ((double)(kv_splitmix64_next(&s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
		double u2 = ((double)(kv_splitmix64_next(&s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
		double r = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
		w[i] = (float)(sigma * r * cos(a));
		if (i + 1 < n)
			w[i + 1] = (float)(sigma * r * sin(a));
	}
}

static int
train_check_opts(const struct eng_train_opts *o)
{
	if (o->d_r < 1 || o->d_r > 65536 || o->n_steps < 1 || o->warmup < 0 ||
	    o->warmup > o->n_steps || !(o->lr >= 0) || !(o->beta1 >= 0 && o->beta1 < 1) ||
	    !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0) || !(o->wd >= 0) ||
	    !(o->clip > 0) || !(o->alpha >= 0) || !(o->sigma >= 0) || o->t_max < 2)
		return ENG_ERR_ARG;
	return 0;
}

/* Allocate a trainer of model m's shape (weights uninitialized). */
static int
train_alloc(struct eng_train **out, const struct eng_model *m, const struct eng_train_opts *o)
{
	const struct eng_hparams *hp = &m->hp;
	struct eng_train *t;
	*out = NULL;
	if (train_check_opts(o))
		return ENG_ERR_ARG;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ENG_ERR_NOMEM;
	t->L = hp->n_layer;
	t->H = hp->n_head;
	t->KV = hp->n_head_kv;
	t->hd = hp->head_dim;
	t->d_in = (int64_t)(t->H + 2 * t->KV) * t->hd;
	t->n1 = (int64_t)o->d_r * t->d_in;
	t->n2 = (int64_t)t->KV * o->d_r;
	t->o = *o;
	memcpy(t->model_fp, eng_model_fingerprint(m), sizeof(t->model_fp));
	t->buf = calloc((size_t)t->L * (size_t)(3 * t->n1 + 3 * t->n2), sizeof(float));
	if (!t->buf) {
		free(t);
		return ENG_ERR_NOMEM;
	}
	*out = t;
	return 0;
}

int
eng_train_init(struct eng_train **out, const struct eng_model *m,
    const struct eng_train_opts *opts)
{
	struct eng_train *t;
	int rc = train_alloc(&t, m, opts), l;
	if (rc)
		return rc;
	for (l = 0; l < t->L; l++) {
		float *b = train_layer_block(t, l);
		train_init_normal(b, t->n1, opts->seed, l, 0, opts->sigma);
		train_init_normal(b + 3 * t->n1, t->n2, opts->seed, l, 1, opts->sigma);
	}
	*out = t;
	return 0;
}

void
eng_train_free(struct eng_train *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t);
}

int64_t
eng_train_steps_done(const struct eng_train *t)
{
	return t->step;
}

const struct eng_train_opts *
eng_train_get_opts(const struct eng_train *t)
{
	return &t->o;
}

float *
eng_train_w1(struct eng_train *t, int layer)
{
	return layer >= 0 && layer < t->L ? train_layer_block(t, layer) : NULL;
}

float *
eng_train_w2(struct eng_train *t, int layer)
{
	return layer >= 0 && layer < t->L ? train_layer_block(t, layer) + 3 * t->n1 : NULL;
}

/* ------------------------------------------------------------------------ */
/* Loss and gradients                                                        */

static double
train_sl1(double x)
{
	double a = fabs(x);
	return a < 1.0 ? 0.5 * x * x : a - 0.5;
}

/* Top-k by partial selection: indices of the k largest (ties: lower index). */
static void
train_topk(const float *v, int64_t stride, int64_t T, int64_t k, int64_t *idx, uint8_t *mark)
{
	int64_t i;
	for (i = 0; i < T; i++)
		idx[i] = i;
	/* insertion into a k-sized sorted list keeps this O(T·k) worst case but
	 * O(T·log) typical; T is a few thousand, k a tenth of it */
	{
		int64_t n = 0;
		for (i = 0; i < T; i++) {
			float x = v[i * stride];
			int64_t p;
			if (n == k && !(x > v[idx[n - 1] * stride]))
				continue;
			p = n < k ? n++ : k - 1;
			while (p > 0 && x > v[idx[p - 1] * stride]) {
				idx[p] = idx[p - 1];
				p--;
			}
			idx[p] = i;
		}
	}
	memset(mark, 0, (size_t)T);
	for (i = 0; i < k; i++)
		mark[idx[i]] = 1;
}

double
eng_train_overlap(const float *pred, int64_t stride, const float *lab, int64_t T, int64_t *idx)
{
	int64_t k = T / 10 > 0 ? T / 10 : 1, i, hit = 0;
	uint8_t *ma, *mb;
	if (T < 1)
		return 0.0;
	ma = malloc((size_t)(2 * T));
	if (!ma)
		return 0.0;
	mb = ma + T;
	train_topk(pred, stride, T, k, idx, ma);
	train_topk(lab, 1, T, k, idx + T, mb);
	for (i = 0; i < T; i++)
		hit += ma[i] & mb[i];
	free(ma);
	return (double)hit / (double)k;
}

int
eng_train_layer_grad(const float *u, const float *s, int64_t ld_s, int64_t T, int64_t d_in,
    int d_r, int n_kv, int n_layer, double alpha, const float *w1, const float *w2, float *g1,
    float *g2, double *reg, double *smooth, double *overlap)
{
	float *z, *a, *p, *g, *dz;
	int64_t *idx;
	int64_t t, i;
	double cr = 1.0 / ((double)n_layer * n_kv * (double)T);
	double cs = T > 1 ? 1.0 / ((double)n_kv * (double)(T - 1)) : 0.0;
	double sr = 0.0, ss = 0.0, ov = 0.0;
	int m;

	z = malloc((size_t)T * (size_t)d_r * sizeof(float));
	a = malloc((size_t)T * (size_t)d_r * sizeof(float));
	dz = malloc((size_t)T * (size_t)d_r * sizeof(float));
	p = malloc((size_t)T * (size_t)n_kv * sizeof(float));
	g = malloc((size_t)T * (size_t)n_kv * sizeof(float));
	idx = malloc((size_t)(2 * T) * sizeof(int64_t));
	if (!z || !a || !dz || !p || !g || !idx) {
		free(z); free(a); free(dz); free(p); free(g); free(idx);
		return ENG_ERR_NOMEM;
	}
	/* forward */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, d_r, (int)d_in, 1.0f, u,
	    (int)d_in, w1, (int)d_in, 0.0f, z, d_r);
	for (i = 0; i < T * d_r; i++)
		a[i] = z[i] / (1.0f + expf(-z[i]));
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, n_kv, d_r, 1.0f, a, d_r, w2,
	    d_r, 0.0f, p, n_kv);
	/* loss and dLoss/dP (in double, rounded once) */
	for (m = 0; m < n_kv; m++) {
		const float *sm = s + (int64_t)m * ld_s;
		for (t = 0; t < T; t++) {
			double e = (double)p[t * n_kv + m] - sm[t], d = 0.0;
			sr += train_sl1(e);
			if (t < T - 1) {
				double df = (double)p[t * n_kv + m] - p[(t + 1) * n_kv + m];
				ss += df * df;
				d += df;
			}
			if (t > 0)
				d -= (double)p[(t - 1) * n_kv + m] - p[t * n_kv + m];
			g[t * n_kv + m] = (float)(fmin(1.0, fmax(-1.0, e)) * cr + alpha * 2.0 * cs * d);
		}
		ov += eng_train_overlap(p + m, n_kv, sm, T, idx);
	}
	*reg = sr * cr;
	*smooth = ss * cs;
	*overlap = ov / n_kv;
	/* backward */
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_kv, d_r, (int)T, 1.0f, g, n_kv, a,
	    d_r, 0.0f, g2, d_r);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, d_r, n_kv, 1.0f, g, n_kv,
	    w2, d_r, 0.0f, dz, d_r);
	for (i = 0; i < T * d_r; i++) {
		float sg = 1.0f / (1.0f + expf(-z[i]));
		dz[i] *= sg * (1.0f + z[i] * (1.0f - sg));
	}
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d_r, (int)d_in, (int)T, 1.0f, dz, d_r,
	    u, (int)d_in, 0.0f, g1, (int)d_in);
	free(z); free(a); free(dz); free(p); free(g); free(idx);
	return 0;
}

double
eng_train_layer_grad_d(const double *u, const double *s, int64_t ld_s, int64_t T,
    int64_t d_in, int d_r, int n_kv, int n_layer, double alpha, const double *w1,
    const double *w2, double *g1, double *g2)
{
	double cr = 1.0 / ((double)n_layer * n_kv * (double)T);
	double cs = T > 1 ? 1.0 / ((double)n_kv * (double)(T - 1)) : 0.0;
	double sr = 0.0, ss = 0.0;
	double *z = malloc((size_t)T * (size_t)d_r * sizeof(double));
	double *p = malloc((size_t)T * (size_t)n_kv * sizeof(double));
	double *g = malloc((size_t)T * (size_t)n_kv * sizeof(double));
	int64_t t, i;
	int m, r;

	if (!z || !p || !g) {
		free(z); free(p); free(g);
		return NAN;
	}
	for (t = 0; t < T; t++) {
		for (r = 0; r < d_r; r++) {
			double acc = 0.0;
			for (i = 0; i < d_in; i++)
				acc += u[t * d_in + i] * w1[(int64_t)r * d_in + i];
			z[t * d_r + r] = acc;
		}
		for (m = 0; m < n_kv; m++) {
			double acc = 0.0;
			for (r = 0; r < d_r; r++) {
				double zz = z[t * d_r + r];
				acc += zz / (1.0 + exp(-zz)) * w2[(int64_t)m * d_r + r];
			}
			p[t * n_kv + m] = acc;
		}
	}
	for (m = 0; m < n_kv; m++)
		for (t = 0; t < T; t++) {
			double e = p[t * n_kv + m] - s[m * ld_s + t], d = 0.0;
			sr += train_sl1(e);
			if (t < T - 1) {
				double df = p[t * n_kv + m] - p[(t + 1) * n_kv + m];
				ss += df * df;
				d += df;
			}
			if (t > 0)
				d -= p[(t - 1) * n_kv + m] - p[t * n_kv + m];
			g[t * n_kv + m] = fmin(1.0, fmax(-1.0, e)) * cr + alpha * 2.0 * cs * d;
		}
	if (g1 && g2) {
		memset(g1, 0, (size_t)d_r * (size_t)d_in * sizeof(double));
		memset(g2, 0, (size_t)n_kv * (size_t)d_r * sizeof(double));
		for (t = 0; t < T; t++)
			for (r = 0; r < d_r; r++) {
				double zz = z[t * d_r + r], sg = 1.0 / (1.0 + exp(-zz)), da = 0.0, dzz;
				for (m = 0; m < n_kv; m++) {
					g2[(int64_t)m * d_r + r] += g[t * n_kv + m] * zz * sg;
					da += g[t * n_kv + m] * w2[(int64_t)m * d_r + r];
				}
				dzz = da * sg * (1.0 + zz * (1.0 - sg));
				for (i = 0; i < d_in; i++)
					g1[(int64_t)r * d_in + i] += dzz * u[t * d_in + i];
			}
	}
	free(z); free(p); free(g);
	return sr * cr + alpha * ss * cs;
}

/* ------------------------------------------------------------------------ */
/* Step                                                                      */

struct train_job {
	struct eng_train *t;
	const struct eng_train_example *ex;
	int64_t T;
	int update;
	double lr, bc1, bc2;
	double *reg, *smooth, *overlap; /* (L) */
	double *err; /* (L) nonzero: that layer failed (one writer per layer) */
};

/* Clip by value, then AdamW (spec §7.2) over n elements. */
static void
train_adamw(const struct train_job *j, float *w, float *m1, float *m2, float *gr, int64_t n)
{
	const struct eng_train_opts *o = &j->t->o;
	double decay = 1.0 - j->lr * o->wd;
	int64_t i;
	for (i = 0; i < n; i++) {
		double gv = fmin(o->clip, fmax(-o->clip, (double)gr[i]));
		double mm, vv, wv = (double)w[i] * decay;
		mm = o->beta1 * m1[i] + (1.0 - o->beta1) * gv;
		vv = o->beta2 * m2[i] + (1.0 - o->beta2) * gv * gv;
		m1[i] = (float)mm;
		m2[i] = (float)vv;
		wv -= j->lr * ((double)m1[i] / j->bc1) / (sqrt((double)m2[i] / j->bc2) + o->eps);
		w[i] = (float)wv;
	}
}

static void
train_worker(void *arg, int ith, int nth)
{
	struct train_job *j = arg;
	struct eng_train *t = j->t;
	const struct eng_train_example *ex = j->ex;
	float *g1 = NULL, *g2 = NULL;
	int l;

	g1 = malloc((size_t)t->n1 * sizeof(float));
	g2 = malloc((size_t)t->n2 * sizeof(float));
	for (l = ith; l < t->L; l += nth) {
		if (!g1 || !g2) {
			j->err[l] = 1;
			continue;
		}
		float *b = train_layer_block(t, l);
		float *w1 = b, *w2 = b + 3 * t->n1;
		const float *u = ex->u + (size_t)l * (size_t)ex->n_p * (size_t)ex->d_in;
		const float *s = ex->s + (size_t)l * (size_t)ex->n_head_kv * (size_t)ex->n_p;
		if (eng_train_layer_grad(u, s, ex->n_p, j->T, t->d_in, t->o.d_r, t->KV, t->L,
		    t->o.alpha, w1, w2, g1, g2, &j->reg[l], &j->smooth[l], &j->overlap[l])) {
			j->err[l] = 1;
			continue;
		}
		if (j->update) {
			train_adamw(j, w1, b + t->n1, b + 2 * t->n1, g1, t->n1);
			train_adamw(j, w2, w2 + t->n2, w2 + 2 * t->n2, g2, t->n2);
		}
	}
	free(g1);
	free(g2);
}

int
eng_train_step(struct eng_train *t, struct eng_ctx *c, const struct eng_train_example *ex,
    int update, struct eng_train_stats *st)
{
	struct train_job j;
	double *acc;
	int l;

	if (!t || !c || !ex || !st || ex->n_layer != t->L || ex->n_head_kv != t->KV ||
	    ex->d_in != t->d_in || ex->n_p < 1)
		return ENG_ERR_ARG;
	memset(&j, 0, sizeof(j));
	acc = calloc((size_t)(4 * t->L), sizeof(double));
	if (!acc)
		return ENG_ERR_NOMEM;
	j.t = t;
	j.ex = ex;
	j.T = ex->n_p < t->o.t_max ? ex->n_p : t->o.t_max;
	j.update = update;
	j.lr = eng_train_lr(&t->o, t->step);
	j.bc1 = 1.0 - pow(t->o.beta1, (double)(t->step + 1));
	j.bc2 = 1.0 - pow(t->o.beta2, (double)(t->step + 1));
	j.reg = acc;
	j.smooth = acc + t->L;
	j.overlap = acc + 2 * t->L;
	j.err = acc + 3 * t->L;
	kern_parallel(eng_ctx_kern(c), train_worker, &j);
	for (l = 0; l < t->L; l++)
		if (j.err[l] != 0.0) {
			free(acc);
			return ENG_ERR_NOMEM; /* a failed step may have updated some layers */
		}
	memset(st, 0, sizeof(*st));
	for (l = 0; l < t->L; l++) {
		st->reg += j.reg[l];
		st->smooth += j.smooth[l];
		st->overlap += j.overlap[l];
	}
	st->overlap /= t->L;
	st->loss = st->reg + t->o.alpha * st->smooth;
	st->lr = j.lr;
	st->t = j.T;
	if (update)
		t->step++;
	free(acc);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Checkpoint and sidecar                                                    */

struct train_io {
	FILE *f;
	crypto_generichash_state h;
	int err;
};

static void
train_put(struct train_io *o, const void *p, size_t n)
{
	if (!o->err && n && fwrite(p, 1, n, o->f) != n)
		o->err = 1;
	crypto_generichash_update(&o->h, p, n);
}

static void
train_get(struct train_io *o, void *p, size_t n)
{
	if (!o->err && n && fread(p, 1, n, o->f) != n)
		o->err = 1;
	if (!o->err)
		crypto_generichash_update(&o->h, p, n);
}

/* The fixed header fields, in file order, through fn. */
static void
train_header(struct train_io *o, struct eng_train *t, uint32_t *dims, char *fp,
    void (*fn)(struct train_io *, void *, size_t))
{
	struct eng_train_opts *op = &t->o;
	fn(o, dims, 6 * sizeof(uint32_t));
	fn(o, &op->seed, 8);
	fn(o, &op->n_steps, 8);
	fn(o, &op->warmup, 8);
	fn(o, &op->t_max, 8);
	fn(o, &t->step, 8);
	fn(o, &op->lr, 8);
	fn(o, &op->beta1, 8);
	fn(o, &op->beta2, 8);
	fn(o, &op->eps, 8);
	fn(o, &op->wd, 8);
	fn(o, &op->clip, 8);
	fn(o, &op->alpha, 8);
	fn(o, &op->sigma, 8);
	fn(o, fp, 64);
}

static void
train_put_v(struct train_io *o, void *p, size_t n)
{
	train_put(o, p, n);
}

int
eng_train_save(const struct eng_train *t, const char *path, char *why, size_t why_len)
{
	struct train_io o;
	char tmp[4096];
	unsigned char sum[32];
	uint32_t dims[6] = { TRAIN_VERSION, (uint32_t)t->L, (uint32_t)t->H, (uint32_t)t->KV,
		(uint32_t)t->hd, (uint32_t)t->o.d_r };
	char fp[64];

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return eng_fail(why, why_len, ENG_ERR_ARG, "checkpoint path too long");
	if (sodium_init() < 0)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "libsodium failed to initialize");
	memset(&o, 0, sizeof(o));
	o.f = fopen(tmp, "wb");
	if (!o.f)
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot create %s", tmp);
	crypto_generichash_init(&o.h, NULL, 0, sizeof(sum));
	memcpy(fp, t->model_fp, 64);
	train_put(&o, TRAIN_MAGIC, 8);
	train_header(&o, (struct eng_train *)(uintptr_t)t, dims, fp, train_put_v);
	train_put(&o, t->buf, (size_t)t->L * (size_t)(3 * t->n1 + 3 * t->n2) * sizeof(float));
	crypto_generichash_final(&o.h, sum, sizeof(sum));
	if (!o.err && fwrite(sum, 1, sizeof(sum), o.f) != sizeof(sum))
		o.err = 1;
	if (fflush(o.f) != 0 || fsync(fileno(o.f)) != 0)
		o.err = 1;
	if (kv_file_commit(o.f, o.err, tmp, path))
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot write checkpoint %s", path);
	return 0;
}

static void
train_get_v(struct train_io *o, void *p, size_t n)
{
	train_get(o, p, n);
}

int
eng_train_load(struct eng_train **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len)
{
	struct train_io o;
	struct eng_train hdr, *t = NULL;
	unsigned char sum[32], want[32];
	uint32_t dims[6];
	char magic[8], fp[65];
	int rc;

	*out = NULL;
	if (sodium_init() < 0)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "libsodium failed to initialize");
	memset(&o, 0, sizeof(o));
	memset(&hdr, 0, sizeof(hdr));
	o.f = fopen(path, "rb");
	if (!o.f)
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot open checkpoint %s", path);
	crypto_generichash_init(&o.h, NULL, 0, sizeof(sum));
	train_get(&o, magic, 8);
	if (o.err || memcmp(magic, TRAIN_MAGIC, 8)) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT, "%s is not a kvsnap training checkpoint",
		    path);
		goto out;
	}
	train_header(&o, &hdr, dims, fp, train_get_v);
	fp[64] = 0;
	if (o.err || dims[0] != TRAIN_VERSION) {
		rc = eng_fail(why, why_len, o.err ? ENG_ERR_FORMAT : ENG_ERR_VERSION,
		    "%s: truncated header or unknown version", path);
		goto out;
	}
	if (strcasecmp(fp, eng_model_fingerprint(m)) != 0) {
		rc = eng_fail(why, why_len, ENG_ERR_ARG,
		    "%s was trained on base model %.16s..., not this model (%.16s...)", path, fp,
		    eng_model_fingerprint(m));
		goto out;
	}
	if ((int)dims[1] != m->hp.n_layer || (int)dims[2] != m->hp.n_head ||
	    (int)dims[3] != m->hp.n_head_kv || (int)dims[4] != m->hp.head_dim) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: shape does not match the model",
		    path);
		goto out;
	}
	hdr.o.d_r = (int)dims[5];
	if ((rc = train_alloc(&t, m, &hdr.o))) {
		eng_fail(why, why_len, rc, "%s: bad options or out of memory", path);
		goto out;
	}
	t->step = hdr.step;
	train_get(&o, t->buf, (size_t)t->L * (size_t)(3 * t->n1 + 3 * t->n2) * sizeof(float));
	crypto_generichash_final(&o.h, sum, sizeof(sum));
	if (o.err || fread(want, 1, sizeof(want), o.f) != sizeof(want) ||
	    memcmp(sum, want, sizeof(sum)) || fgetc(o.f) != EOF || t->step < 0) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: truncated or corrupt checkpoint",
		    path);
		goto out;
	}
	*out = t;
	t = NULL;
	rc = 0;
out:
	fclose(o.f);
	eng_train_free(t);
	return rc;
}

int
eng_train_write_heads(const struct eng_train *t, const char *path, const char *labels,
    const char *recipe, const char *data, char *why, size_t why_len)
{
	struct eng_heads_info info;
	const float **w1, **w2;
	int l, rc;

	w1 = calloc((size_t)t->L, sizeof(*w1));
	w2 = calloc((size_t)t->L, sizeof(*w2));
	if (!w1 || !w2) {
		free(w1);
		free(w2);
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	}
	for (l = 0; l < t->L; l++) {
		w1[l] = train_layer_block(t, l);
		w2[l] = train_layer_block(t, l) + 3 * t->n1;
	}
	memset(&info, 0, sizeof(info));
	info.n_layer = t->L;
	info.n_head = t->H;
	info.n_head_kv = t->KV;
	info.head_dim = t->hd;
	info.d_r = t->o.d_r;
	info.base_fingerprint = t->model_fp;
	info.recipe = recipe;
	info.data = data;
	info.labels = labels;
	rc = eng_heads_write(path, &info, (const float *const *)w1, (const float *const *)w2,
	    KERN_TYPE_F16, why, why_len);
	free(w1);
	free(w2);
	return rc;
}
