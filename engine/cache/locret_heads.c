/*
 * locret_heads.c: Locret retaining heads (spec/locret.md §1): one small MLP
 * per layer that maps a token's pre-RoPE [Q, K, V] to one causal importance
 * score (CIS) per KV head, loaded from (and written to) a GGUF sidecar.
 *
 * Sidecar layout (GGUF v3, little-endian, written by eng_heads_write, read
 * through engine/model/gguf.c; D_in = (n_head + 2·n_head_kv)·head_dim):
 *   1. general.architecture       string "kvsnap-locret"
 *   2. general.alignment          u32 32 (any power of two is read)
 *   3. kvsnap.locret.n_layer      u32, must equal the model's block count
 *   4. kvsnap.locret.n_head       u32, query heads of the model
 *   5. kvsnap.locret.n_head_kv    u32, KV heads of the model
 *   6. kvsnap.locret.head_dim     u32
 *   7. kvsnap.locret.d_r          u32, hidden width d_R of every head
 *   8. kvsnap.locret.activation   string, "silu" (the only one supported)
 *   9. kvsnap.locret.base_fingerprint  string, lowercase or uppercase hex of
 *                                 the base model; "" = not bound to a model
 *  10. kvsnap.locret.recipe       string, free text: how they were trained
 *  11. kvsnap.locret.data         string, free text: what they saw
 *  12. kvsnap.locret.labels       string, what the scores predict: "cis"
 *                                 (spec/locret.md's CIS) or "kvzip" (log of
 *                                 kvzip's score, comparable across layers)
 *      (9-12 may be absent when reading: 9-11 read as "", 12 as "cis")
 *  13. tensors, for every layer N in 0..n_layer-1:
 *        blk.N.ret_w1  ne = [D_in, d_R]  F32 or F16: row r (d_R rows of D_in
 *                      values) is column r of W1, i.e. PyTorch's
 *                      fc1.weight [d_R][D_in] stored as is;
 *        blk.N.ret_w2  ne = [d_R, n_kv]  F32 or F16: fc2.weight [n_kv][d_R],
 *                      row m is column m of W2.
 *      Each tensor's data starts at a multiple of the alignment.
 *
 * Scoring (§1.1): u_t = concat(q_t, k_t, v_t) in projection order (GGUF row
 * order, head 0 first), z = u·W1, a = SiLU(z), s = a·W2; no bias, no
 * normalization.  F32 weights are borrowed from the file's map when aligned
 * (else copied); F16 weights are widened once at open.  A handle is
 * read-only after open and may be shared by threads.
 */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* for strcasecmp */

#include "common/fdio.h"
#include "engine/cache/cache.h"
#include "engine/fingerprint.h"

#define HEADS_ARCH "kvsnap-locret"
#define HEADS_ALIGN 32
#define HEADS_MAX_DIM 65536     /* any one dimension */
#define HEADS_MAX_LAYERS 4096
#define HEADS_MAX_FP 256        /* fingerprint hex digits */
#define HEADS_MAX_TEXT (1 << 20) /* recipe / data strings */
#define HEADS_BLOCK_TOK 256     /* tokens per sgemm block in scoring */

struct eng_heads {
	struct eng_heads_info info; /* strings owned (fp, recipe, data) */
	int64_t d_in;
	struct eng_gguf *gguf;  /* the map borrowed weights point into */
	const float **w1;       /* (n_layer) -> (d_r, d_in) */
	const float **w2;       /* (n_layer) -> (n_head_kv, d_r) */
	float *owned;           /* widened / copied weights, all layers */
	char *strings;          /* fp, recipe and data, NUL-separated */
	char fingerprint[ENG_FINGERPRINT_HEX + 1]; /* of the file's bytes */
};


/* ------------------------------------------------------------------------ */
/* Open                                                                      */

/* Read dimension kvsnap.locret.<key> (1 .. max). */
static int
heads_get_dim(const struct eng_gguf *g, const char *path, const char *key, int max, int *out,
    char *why, size_t why_len)
{
	char name[64];
	uint64_t v;
	int rc;
	snprintf(name, sizeof(name), "kvsnap.locret.%s", key);
	rc = eng_gguf_get_u64(g, name, &v);
	if (rc == ENG_ERR_NOT_FOUND)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: retaining heads lack %s", path,
		    name);
	if (rc || v == 0 || v > (uint64_t)max)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: %s has a bad value", path, name);
	*out = (int)v;
	return 0;
}

/* Read optional string kvsnap.locret.<key> ("" when absent). */
static int
heads_get_text(const struct eng_gguf *g, const char *path, const char *key,
    struct eng_gguf_str *out, char *why, size_t why_len)
{
	char name[64];
	int rc;
	snprintf(name, sizeof(name), "kvsnap.locret.%s", key);
	rc = eng_gguf_get_str(g, name, out);
	if (rc == ENG_ERR_NOT_FOUND) {
		out->ptr = "";
		out->len = 0;
		return 0;
	}
	if (rc || out->len > HEADS_MAX_TEXT || memchr(out->ptr, 0, out->len))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: %s is not a valid string", path,
		    name);
	return 0;
}

/* Find blk.<l>.<nm> with ne = [ne0, ne1] and type F32/F16. */
static int
heads_get_tensor(const struct eng_gguf *g, const char *path, int l, const char *nm,
    int64_t ne0, int64_t ne1, const struct eng_gguf_tensor **out, char *why, size_t why_len)
{
	char name[64];
	const struct eng_gguf_tensor *t;
	snprintf(name, sizeof(name), "blk.%d.%s", l, nm);
	t = eng_gguf_find_tensor(g, name);
	if (!t)
		return eng_fail(why, why_len, ENG_ERR_NOT_FOUND,
		    "%s: retaining heads lack tensor %s", path, name);
	if (t->type != KERN_TYPE_F32 && t->type != KERN_TYPE_F16)
		return eng_fail(why, why_len, ENG_ERR_TYPE,
		    "%s: tensor %s has type %s; retaining heads must be f32 or f16", path, name,
		    kern_type_name(t->type));
	if (t->n_dims != 2 || t->ne[0] != ne0 || t->ne[1] != ne1)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "%s: tensor %s has shape [%lld, %lld], expected [%lld, %lld]", path, name,
		    (long long)t->ne[0], (long long)t->ne[1], (long long)ne0, (long long)ne1);
	*out = t;
	return 0;
}

/* Point *dst at t's values as f32: borrowed when possible, else widened
 * into *owned (advanced).  Refuses non-finite weights. */
static int
heads_load(const struct eng_gguf_tensor *t, const char *path, const float **dst, float **owned,
    char *why, size_t why_len)
{
	size_t n = (size_t)(t->ne[0] * t->ne[1]), i;
	float *w = *owned;
	int finite = 1;

	if (t->type == KERN_TYPE_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
		const float *src = t->data;
		for (i = 0; i < n; i++)
			finite &= isfinite(src[i]) != 0;
		*dst = src;
	} else {
		const uint8_t *src = t->data;
		for (i = 0; i < n; i++) {
			if (t->type == KERN_TYPE_F32) {
				memcpy(&w[i], src + 4 * i, 4);
			} else {
				uint16_t h;
				memcpy(&h, src + 2 * i, 2);
				w[i] = kern_f16_to_f32(h);
			}
			finite &= isfinite(w[i]) != 0;
		}
		*dst = w;
		*owned = w + n;
	}
	if (!finite)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: tensor %.*s holds a non-finite weight", path, (int)t->name.len, t->name.ptr);
	return 0;
}

int
eng_heads_check_model(const struct eng_heads *h, const struct eng_model *m, char *why,
    size_t why_len)
{
	const struct eng_heads_info *a = &h->info;
	const struct eng_hparams *hp = &m->hp;
	if (a->n_layer != hp->n_layer || a->n_head != hp->n_head ||
	    a->n_head_kv != hp->n_head_kv || a->head_dim != hp->head_dim)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "retaining heads were made for n_layer %d, n_head %d, n_head_kv %d, head_dim %d "
		    "but the model has %d, %d, %d, %d",
		    a->n_layer, a->n_head, a->n_head_kv, a->head_dim, hp->n_layer, hp->n_head,
		    hp->n_head_kv, hp->head_dim);
	return 0;
}

int
eng_heads_check_fingerprint(const struct eng_heads *h, const char *model_fp, char *why,
    size_t why_len)
{
	const char *fp = h->info.base_fingerprint;
	if (!model_fp || !*model_fp || !*fp)
		return 0; /* either side unbound: nothing to compare */
	if (strcasecmp(fp, model_fp) != 0)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "retaining heads belong to base model %.16s..., not %.16s...", fp, model_fp);
	return 0;
}

int
eng_heads_open(struct eng_heads **out, const char *path, const struct eng_model *m, char *why,
    size_t why_len)
{
	struct eng_heads *h;
	struct eng_gguf_str arch, act, fp, recipe, data, labels;
	const struct eng_gguf_tensor *t1, *t2;
	size_t n_own = 0;
	float *own;
	int64_t d_in;
	int rc, l;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return ENG_ERR_NOMEM;
	rc = eng_gguf_open(&h->gguf, path, why, why_len);
	if (rc)
		goto out;
	if (eng_fingerprint(h->gguf->base, h->gguf->size, h->fingerprint)) {
		rc = eng_fail(why, why_len, ENG_ERR_NOMEM, "cannot hash %s", path);
		goto out;
	}
	if (eng_gguf_get_str(h->gguf, "general.architecture", &arch) ||
	    !eng_gguf_str_eq(arch, HEADS_ARCH)) {
		rc = eng_fail(why, why_len, ENG_ERR_ARCH,
		    "%s is not a retaining-heads sidecar (general.architecture must be '%s')", path,
		    HEADS_ARCH);
		goto out;
	}
	if ((rc = heads_get_dim(h->gguf, path, "n_layer", HEADS_MAX_LAYERS, &h->info.n_layer, why,
	    why_len)) ||
	    (rc = heads_get_dim(h->gguf, path, "n_head", HEADS_MAX_DIM, &h->info.n_head, why,
	    why_len)) ||
	    (rc = heads_get_dim(h->gguf, path, "n_head_kv", HEADS_MAX_DIM, &h->info.n_head_kv, why,
	    why_len)) ||
	    (rc = heads_get_dim(h->gguf, path, "head_dim", HEADS_MAX_DIM, &h->info.head_dim, why,
	    why_len)) ||
	    (rc = heads_get_dim(h->gguf, path, "d_r", HEADS_MAX_DIM, &h->info.d_r, why, why_len)))
		goto out;
	if (h->info.n_head % h->info.n_head_kv) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: n_head %d is not a multiple of n_head_kv %d", path, h->info.n_head,
		    h->info.n_head_kv);
		goto out;
	}
	rc = eng_gguf_get_str(h->gguf, "kvsnap.locret.activation", &act);
	if (rc || !eng_gguf_str_eq(act, "silu")) {
		rc = eng_fail(why, why_len, ENG_ERR_ARCH,
		    "%s: retaining-head activation must be 'silu' (the backbone's)", path);
		goto out;
	}
	if ((rc = heads_get_text(h->gguf, path, "base_fingerprint", &fp, why, why_len)) ||
	    (rc = heads_get_text(h->gguf, path, "recipe", &recipe, why, why_len)) ||
	    (rc = heads_get_text(h->gguf, path, "data", &data, why, why_len)) ||
	    (rc = heads_get_text(h->gguf, path, "labels", &labels, why, why_len)))
		goto out;
	if (labels.len == 0 || eng_gguf_str_eq(labels, "cis"))
		h->info.labels = "cis";
	else if (eng_gguf_str_eq(labels, "kvzip"))
		h->info.labels = "kvzip";
	else {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: kvsnap.locret.labels must be \"cis\" or \"kvzip\"", path);
		goto out;
	}
	if (!eng_is_hex(fp.ptr, fp.len, HEADS_MAX_FP)) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: base_fingerprint is not a hex string", path);
		goto out;
	}
	if (m && (rc = eng_heads_check_model(h, m, why, why_len)))
		goto out;

	/* Copy the three strings, NUL-terminated, into one block. */
	h->strings = malloc(fp.len + recipe.len + data.len + 3);
	if (!h->strings) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	memcpy(h->strings, fp.ptr, fp.len);
	h->strings[fp.len] = 0;
	memcpy(h->strings + fp.len + 1, recipe.ptr, recipe.len);
	h->strings[fp.len + 1 + recipe.len] = 0;
	memcpy(h->strings + fp.len + recipe.len + 2, data.ptr, data.len);
	h->strings[fp.len + recipe.len + 2 + data.len] = 0;
	h->info.base_fingerprint = h->strings;
	h->info.recipe = h->strings + fp.len + 1;
	h->info.data = h->strings + fp.len + recipe.len + 2;

	/* Shapes of every tensor, and how many floats must be owned. */
	d_in = (int64_t)(h->info.n_head + 2 * h->info.n_head_kv) * h->info.head_dim;
	h->d_in = d_in;
	for (l = 0; l < h->info.n_layer; l++) {
		if ((rc = heads_get_tensor(h->gguf, path, l, "ret_w1", d_in, h->info.d_r, &t1, why,
		    why_len)) ||
		    (rc = heads_get_tensor(h->gguf, path, l, "ret_w2", h->info.d_r, h->info.n_head_kv,
		    &t2, why, why_len)))
			goto out;
		if (t1->type != KERN_TYPE_F32 || (uintptr_t)t1->data % sizeof(float))
			n_own += (size_t)(t1->ne[0] * t1->ne[1]);
		if (t2->type != KERN_TYPE_F32 || (uintptr_t)t2->data % sizeof(float))
			n_own += (size_t)(t2->ne[0] * t2->ne[1]);
	}
	h->w1 = calloc((size_t)h->info.n_layer, sizeof(*h->w1));
	h->w2 = calloc((size_t)h->info.n_layer, sizeof(*h->w2));
	h->owned = n_own ? malloc(n_own * sizeof(float)) : NULL;
	if (!h->w1 || !h->w2 || (n_own && !h->owned)) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	own = h->owned;
	for (l = 0; l < h->info.n_layer; l++) {
		heads_get_tensor(h->gguf, path, l, "ret_w1", d_in, h->info.d_r, &t1, NULL, 0);
		heads_get_tensor(h->gguf, path, l, "ret_w2", h->info.d_r, h->info.n_head_kv, &t2, NULL,
		    0);
		if ((rc = heads_load(t1, path, &h->w1[l], &own, why, why_len)) ||
		    (rc = heads_load(t2, path, &h->w2[l], &own, why, why_len)))
			goto out;
	}
	*out = h;
	return 0;
out:
	eng_heads_close(h);
	return rc;
}

void
eng_heads_close(struct eng_heads *h)
{
	if (!h)
		return;
	eng_gguf_close(h->gguf);
	free(h->w1);
	free(h->w2);
	free(h->owned);
	free(h->strings);
	free(h);
}

const struct eng_heads_info *
eng_heads_get_info(const struct eng_heads *h)
{
	return &h->info;
}

const float *
eng_heads_w1(const struct eng_heads *h, int layer)
{
	return layer >= 0 && layer < h->info.n_layer ? h->w1[layer] : NULL;
}

const float *
eng_heads_w2(const struct eng_heads *h, int layer)
{
	return layer >= 0 && layer < h->info.n_layer ? h->w2[layer] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Scoring                                                                   */

int
eng_heads_score(const struct eng_heads *h, int layer, const float *qpre, const float *kpre,
    const float *v, int64_t n_tok, float *out)
{
	const struct eng_heads_info *a = &h->info;
	int64_t nq = (int64_t)a->n_head * a->head_dim, nk = (int64_t)a->n_head_kv * a->head_dim;
	int64_t d_in = h->d_in, d_r = a->d_r, t0, t, i;
	float *u, *z;

	if (layer < 0 || layer >= a->n_layer || n_tok < 0 || !qpre || !kpre || !v || !out)
		return ENG_ERR_ARG;
	if (n_tok == 0)
		return 0;
	u = malloc((size_t)HEADS_BLOCK_TOK * (size_t)d_in * sizeof(float));
	z = malloc((size_t)HEADS_BLOCK_TOK * (size_t)d_r * sizeof(float));
	if (!u || !z) {
		free(u);
		free(z);
		return ENG_ERR_NOMEM;
	}
	for (t0 = 0; t0 < n_tok; t0 += HEADS_BLOCK_TOK) {
		int64_t nt = n_tok - t0 < HEADS_BLOCK_TOK ? n_tok - t0 : HEADS_BLOCK_TOK;
		/* u_t = concat(q_t, k_t, v_t) */
		for (t = 0; t < nt; t++) {
			float *ut = u + t * d_in;
			memcpy(ut, qpre + (t0 + t) * nq, (size_t)nq * sizeof(float));
			memcpy(ut + nq, kpre + (t0 + t) * nk, (size_t)nk * sizeof(float));
			memcpy(ut + nq + nk, v + (t0 + t) * nk, (size_t)nk * sizeof(float));
		}
		/* z = u·W1, W1 stored as (d_r, d_in): z = u · w1ᵀ */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nt, (int)d_r, (int)d_in,
		    1.0f, u, (int)d_in, h->w1[layer], (int)d_in, 0.0f, z, (int)d_r);
		for (i = 0; i < nt * d_r; i++)
			z[i] = z[i] / (1.0f + expf(-z[i])); /* SiLU */
		/* s = a·W2, W2 stored as (n_kv, d_r) */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nt, a->n_head_kv, (int)d_r,
		    1.0f, z, (int)d_r, h->w2[layer], (int)d_r, 0.0f, out + t0 * a->n_head_kv,
		    a->n_head_kv);
	}
	free(u);
	free(z);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Write                                                                     */

struct heads_out {
	FILE *f;
	uint64_t at; /* bytes written */
	int err;
};

static void
heads_put(struct heads_out *o, const void *p, size_t n)
{
	if (!o->err && n && fwrite(p, 1, n, o->f) != n)
		o->err = 1;
	o->at += n;
}

static void
heads_put_u32(struct heads_out *o, uint32_t v)
{
	heads_put(o, &v, 4);
}

static void
heads_put_u64(struct heads_out *o, uint64_t v)
{
	heads_put(o, &v, 8);
}

static void
heads_put_str(struct heads_out *o, const char *s)
{
	heads_put_u64(o, strlen(s));
	heads_put(o, s, strlen(s));
}

static void
heads_put_kv_u32(struct heads_out *o, const char *key, uint32_t v)
{
	heads_put_str(o, key);
	heads_put_u32(o, ENG_GGUF_U32);
	heads_put_u32(o, v);
}

static void
heads_put_kv_str(struct heads_out *o, const char *key, const char *v)
{
	heads_put_str(o, key);
	heads_put_u32(o, ENG_GGUF_STRING);
	heads_put_str(o, v);
}

static void
heads_pad(struct heads_out *o)
{
	static const uint8_t zero[HEADS_ALIGN];
	heads_put(o, zero, (size_t)((HEADS_ALIGN - o->at % HEADS_ALIGN) % HEADS_ALIGN));
}

/* Tensor data of n floats in `type`, padded to the alignment. */
static void
heads_put_data(struct heads_out *o, const float *w, size_t n, enum kern_type type)
{
	size_t i;
	if (type == KERN_TYPE_F32) {
		heads_put(o, w, n * sizeof(float));
	} else {
		for (i = 0; i < n; i++) {
			uint16_t x = kern_f32_to_f16(w[i]);
			heads_put(o, &x, 2);
		}
	}
	heads_pad(o);
}

int
eng_heads_write(const char *path, const struct eng_heads_info *info, const float *const *w1,
    const float *const *w2, enum kern_type type, char *why, size_t why_len)
{
	const char *fp, *recipe, *data, *labels;
	char tmp[4096];
	struct heads_out o = { NULL, 0, 0 };
	size_t es = type == KERN_TYPE_F16 ? 2 : 4, n1, n2;
	uint64_t off = 0;
	int64_t d_in;
	int l;

	if (why && why_len)
		why[0] = 0;
	if (!path || !info || !w1 || !w2 || (type != KERN_TYPE_F32 && type != KERN_TYPE_F16))
		return eng_fail(why, why_len, ENG_ERR_ARG, "bad arguments");
	if (info->n_layer <= 0 || info->n_layer > HEADS_MAX_LAYERS || info->n_head <= 0 ||
	    info->n_head_kv <= 0 || info->head_dim <= 0 || info->d_r <= 0 ||
	    info->n_head > HEADS_MAX_DIM || info->n_head_kv > HEADS_MAX_DIM ||
	    info->head_dim > HEADS_MAX_DIM || info->d_r > HEADS_MAX_DIM ||
	    info->n_head % info->n_head_kv)
		return eng_fail(why, why_len, ENG_ERR_ARG, "bad retaining-head dimensions");
	fp = info->base_fingerprint ? info->base_fingerprint : "";
	recipe = info->recipe ? info->recipe : "";
	data = info->data ? info->data : "";
	labels = info->labels ? info->labels : "cis";
	if (strcmp(labels, "cis") && strcmp(labels, "kvzip"))
		return eng_fail(why, why_len, ENG_ERR_ARG, "labels must be cis or kvzip");
	if (!eng_is_hex(fp, strlen(fp), HEADS_MAX_FP))
		return eng_fail(why, why_len, ENG_ERR_ARG, "base_fingerprint must be hex");
	if (strlen(recipe) > HEADS_MAX_TEXT || strlen(data) > HEADS_MAX_TEXT)
		return eng_fail(why, why_len, ENG_ERR_ARG, "recipe or data text too long");
	for (l = 0; l < info->n_layer; l++)
		if (!w1[l] || !w2[l])
			return eng_fail(why, why_len, ENG_ERR_ARG, "layer %d has no weights", l);
	d_in = (int64_t)(info->n_head + 2 * info->n_head_kv) * info->head_dim;
	n1 = (size_t)d_in * (size_t)info->d_r;
	n2 = (size_t)info->d_r * (size_t)info->n_head_kv;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return eng_fail(why, why_len, ENG_ERR_ARG, "path too long");

	/* Written under a temporary name and renamed: all or nothing. */
	o.f = fopen(tmp, "wb");
	if (!o.f)
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot create %s", tmp);
	heads_put(&o, "GGUF", 4);
	heads_put_u32(&o, 3);
	heads_put_u64(&o, (uint64_t)(2 * info->n_layer)); /* tensors */
	heads_put_u64(&o, 12);                            /* metadata keys */
	heads_put_kv_str(&o, "general.architecture", HEADS_ARCH);
	heads_put_kv_u32(&o, "general.alignment", HEADS_ALIGN);
	heads_put_kv_u32(&o, "kvsnap.locret.n_layer", (uint32_t)info->n_layer);
	heads_put_kv_u32(&o, "kvsnap.locret.n_head", (uint32_t)info->n_head);
	heads_put_kv_u32(&o, "kvsnap.locret.n_head_kv", (uint32_t)info->n_head_kv);
	heads_put_kv_u32(&o, "kvsnap.locret.head_dim", (uint32_t)info->head_dim);
	heads_put_kv_u32(&o, "kvsnap.locret.d_r", (uint32_t)info->d_r);
	heads_put_kv_str(&o, "kvsnap.locret.activation", "silu");
	heads_put_kv_str(&o, "kvsnap.locret.base_fingerprint", fp);
	heads_put_kv_str(&o, "kvsnap.locret.recipe", recipe);
	heads_put_kv_str(&o, "kvsnap.locret.data", data);
	heads_put_kv_str(&o, "kvsnap.locret.labels", labels);
	for (l = 0; l < info->n_layer; l++) {
		char name[64];
		snprintf(name, sizeof(name), "blk.%d.ret_w1", l);
		heads_put_str(&o, name);
		heads_put_u32(&o, 2);
		heads_put_u64(&o, (uint64_t)d_in);
		heads_put_u64(&o, (uint64_t)info->d_r);
		heads_put_u32(&o, (uint32_t)type);
		heads_put_u64(&o, off);
		off += (n1 * es + HEADS_ALIGN - 1) / HEADS_ALIGN * HEADS_ALIGN;
		snprintf(name, sizeof(name), "blk.%d.ret_w2", l);
		heads_put_str(&o, name);
		heads_put_u32(&o, 2);
		heads_put_u64(&o, (uint64_t)info->d_r);
		heads_put_u64(&o, (uint64_t)info->n_head_kv);
		heads_put_u32(&o, (uint32_t)type);
		heads_put_u64(&o, off);
		off += (n2 * es + HEADS_ALIGN - 1) / HEADS_ALIGN * HEADS_ALIGN;
	}
	heads_pad(&o);
	for (l = 0; l < info->n_layer; l++) {
		heads_put_data(&o, w1[l], n1, type);
		heads_put_data(&o, w2[l], n2, type);
	}
	if (kv_file_commit(o.f, o.err, tmp, path))
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot write %s", path);
	return 0;
}

const char *
eng_heads_fingerprint(const struct eng_heads *h)
{
	return h->fingerprint;
}
