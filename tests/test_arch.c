/*
 * test_arch.c: the architecture seam (engine/model/arch_*.c) proven on other
 * shapes: tiny synthetic "qwen2" (q/k/v biases, NeoX RoPE; enabled, the real
 * 1.5B is checked against llama.cpp by tests/sh/qwen.sh), "qwen3" (per-head
 * q/k norms, NeoX RoPE; enabled) and Llama 3 (llama with rope_freqs.weight:
 * Llama 3.1's RoPE frequency factors, both synthetic ones and the convert
 * script's real layout) models.
 *
 * The default open refuses an architecture kvsnap does not run (gemma2) with
 * the usual text; opened, the
 * engine's forward pass must match the scalar reference pass, and the
 * optional tensors must matter (a pass that ignored them would fail the
 * comparison by far).  The cache pool's own rotation must reproduce the
 * forward pass's rotated keys in either RoPE style, and the styles are
 * checked against each other through the op table: NeoX's halves are
 * adjacent pairs of an interleaved vector.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tests/forward_logits.h"
#include "tests/helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

/* Engine (exact mode, f32 weights) against the reference: the same
 * operations and the same RoPE angles (kernels/rope.h), so they differ only
 * in f32 summation order over K <= 64 terms per dot product through two
 * layers; measured ~1e-6 of the logits' scale on the llama tiny model
 * (tests/test_ref.c), so 1e-5 leaves a margin of ten. */
#define ARCH_TOL 1e-5 /* max |Δ| / max |logit| */
/* Biases ~N(0, 1) against q/k/v entries of about 2 (TINY_STD·√n_embd),
 * and head norms that rescale q and k: dropping either moves the logits by
 * a large share of their scale.  The proof asks for more than ARCH_OPT_GAP
 * times the tolerance. */
#define ARCH_OPT_GAP 100.0
#define ARCH_N 40

static const struct tiny_shape qwen2_shape = { "qwen2", 1, 1.0, 0, 0.0f, NULL, NULL };
static const struct tiny_shape qwen2_zero_bias = { "qwen2", 1, 0.0, 0, 0.0f, NULL, NULL };
static const struct tiny_shape qwen3_shape = { "qwen3", 0, 0.0, 1, 0.0f, NULL, NULL };
/* Llama 3: llama with rope_freqs.weight.  Synthetic factors that move every
 * pair's angle by a lot within ARCH_N positions (base 10000, head_dim 8:
 * pair frequencies 1, 0.1, 0.01, 0.001) ... */
static const float llama3_strong_ff[TINY_HEAD_DIM / 2] = { 1.0f, 4.0f, 0.5f, 0.05f };
static const struct tiny_shape llama3_strong = { "llama", 0, 0.0, 0, 0.0f, llama3_strong_ff,
	NULL };
/* ... and the real layout: base 500000, the factors as llama.cpp's
 * convert_hf_to_gguf.py computes them for Llama 3.1 (llama3_real_fill). */
static float llama3_real_ff[TINY_HEAD_DIM / 2];
static const struct tiny_shape llama3_real = { "llama", 0, 0.0, 0, 500000.0f, llama3_real_ff,
	NULL };

/* Every position's logits through eng_forward on `threads` threads, in
 * chunks, in exact mode or not. */
static int
forward_logits(const struct eng_model *m, const int32_t *ids, int64_t n, int64_t chunk,
    int threads, int exact, float *out)
{
	struct th_fwd o = { .threads = threads, .max_chunk = 16, .chunk = chunk, .exact = exact };
	return th_forward_logits(m, ids, n, &o, out);
}

/* Every position's logits in exact mode, in chunks, on 2 threads. */
static int
engine_logits(const struct eng_model *m, const int32_t *ids, int64_t n, int64_t chunk,
    float *out)
{
	return forward_logits(m, ids, n, chunk, 2, 1, out);
}

/* Open a tiny model of shape sh as tests do (disabled architectures too);
 * the file is removed at once (the open model keeps its map). */
static int
open_shape(const struct tiny_shape *sh, struct eng_model **m, char *why, size_t why_len)
{
	char path[64];
	int rc;

	if (tiny_model_tmp_shape(path, sizeof(path), 11, sh)) {
		snprintf(why, why_len, "cannot write a tiny %s model", sh->arch);
		return -1;
	}
	rc = eng_model_open_flags(m, path, ENG_OPEN_DISABLED_ARCH, why, why_len);
	tiny_model_remove(path);
	return rc;
}

/* ARCH_N ids spread over a vocabulary of n (the last id among them). */
static void
ids_fill(int32_t *ids, int64_t n)
{
	int i;
	for (i = 0; i < ARCH_N; i++)
		ids[i] = (int32_t)((i * 29 + 5) % TINY_N_VOCAB * (n / TINY_N_VOCAB));
	ids[ARCH_N - 1] = (int32_t)(n - 1);
}

static enum tap_result
test_refused_by_default(void)
{
	static const struct tiny_shape llama_bias = { "llama", 1, 1.0, 0, 0.0f, NULL, NULL };
	static const struct tiny_shape llama_norm = { "llama", 0, 0.0, 1, 0.0f, NULL, NULL };
	/* one kvsnap does not describe at all, refused the same way */
	static const struct tiny_shape gemma2 = { "gemma2", 0, 0.0, 0, 0.0f, NULL, NULL };
	const struct tiny_shape *disabled[] = { &gemma2 };
	struct eng_model *m = NULL;
	char path[64], why[256], want[128];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(disabled) / sizeof(disabled[0]); i++) {
		TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, disabled[i]), "write");
		rc = eng_model_open(&m, path, why, sizeof(why));
		tiny_model_remove(path);
		TAP_CHECK(rc == ENG_ERR_ARCH && !m, "%s opened by default: %d", disabled[i]->arch,
		    rc);
		snprintf(want, sizeof(want),
		    "model architecture '%s' is not supported (kvsnap runs 'llama', 'qwen2', 'qwen3')",
		    disabled[i]->arch);
		TAP_CHECK(!strcmp(why, want), "refusal text: %s", why);
	}
	/* a llama file with biases or head norms: refused, not run without them */
	TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, &llama_bias), "write");
	rc = eng_model_open_flags(&m, path, ENG_OPEN_DISABLED_ARCH, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(rc == ENG_ERR_ARCH && !m && strstr(why, "blk.0.attn_q.bias"),
	    "llama with biases: %d %s", rc, why);
	TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, &llama_norm), "write");
	rc = eng_model_open(&m, path, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(rc == ENG_ERR_ARCH && !m && strstr(why, "blk.0.attn_q_norm.weight"),
	    "llama with head norms: %d %s", rc, why);
	return TAP_PASS;
}

/* eng_forward in exact mode, chunked three ways, against the reference. */
static enum tap_result
check_matches_ref(const struct tiny_shape *sh)
{
	static const int64_t chunks[] = { ARCH_N, 7, 1 };
	struct eng_model *m = NULL;
	char why[256];
	int32_t ids[ARCH_N];
	float *ref, *got;
	size_t i, nl;
	double rel;

	TAP_CHECK(!open_shape(sh, &m, why, sizeof(why)), "%s", why);
	nl = (size_t)ARCH_N * (size_t)m->hp.n_vocab;
	ids_fill(ids, m->hp.n_vocab);
	TAP_CHECK(!!m->layers[1].bq == sh->qkv_bias && !!m->layers[1].bv == sh->qkv_bias &&
	    !!m->layers[1].q_norm == sh->qk_norm && !!m->layers[1].k_norm == sh->qk_norm &&
	    !m->layers[0].bo, "%s: optional slots", sh->arch);
	ref = malloc(nl * sizeof(float));
	got = malloc(nl * sizeof(float));
	TAP_CHECK(ref && got, "oom");
	TAP_CHECK(!eng_ref_forward(m, ids, ARCH_N, ref), "reference forward");
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		TAP_CHECK(!engine_logits(m, ids, ARCH_N, chunks[i], got), "engine forward");
		rel = th_rel_err(got, ref, (int64_t)nl);
		tap_diag("report: %s chunk %lld: max|dlogit|/max|logit| %.2e", sh->arch,
		    (long long)chunks[i], rel);
		TAP_CHECK(rel < ARCH_TOL, "%s chunk %lld: %.2e >= %.0e", sh->arch,
		    (long long)chunks[i], rel, ARCH_TOL);
	}
	free(ref);
	free(got);
	eng_model_close(m);
	return TAP_PASS;
}

/* The model of shape sh against `without`: the same seed's weights (the
 * optional tensors are drawn last) without sh's optional tensors' effect,
 * standing for a pass that ignores them.  Both the reference and the
 * engine on `without` must miss sh's reference by far. */
static enum tap_result
check_opt_matters(const struct tiny_shape *sh, const struct tiny_shape *without)
{
	struct eng_model *m = NULL, *z = NULL;
	char why[256];
	int32_t ids[ARCH_N];
	float *ref, *ref0, *got;
	size_t nl = (size_t)ARCH_N * TINY_N_VOCAB;
	double gap, miss;

	ids_fill(ids, TINY_N_VOCAB);
	TAP_CHECK(!open_shape(sh, &m, why, sizeof(why)), "%s", why);
	TAP_CHECK(!open_shape(without, &z, why, sizeof(why)), "%s", why);
	ref = malloc(nl * sizeof(float));
	ref0 = malloc(nl * sizeof(float));
	got = malloc(nl * sizeof(float));
	TAP_CHECK(ref && ref0 && got, "oom");
	TAP_CHECK(!eng_ref_forward(m, ids, ARCH_N, ref), "reference forward");
	TAP_CHECK(!eng_ref_forward(z, ids, ARCH_N, ref0), "reference forward, stand-in");
	TAP_CHECK(!engine_logits(z, ids, ARCH_N, 7, got), "engine forward, stand-in");
	gap = th_rel_err(ref0, ref, (int64_t)nl);
	miss = th_rel_err(got, ref, (int64_t)nl);
	tap_diag("report: %s's optional tensors move the reference by %.2e; the engine "
	    "without them misses by %.2e", sh->arch, gap, miss);
	TAP_CHECK(gap > ARCH_OPT_GAP * ARCH_TOL, "%s: they move the logits by only %.2e",
	    sh->arch, gap);
	TAP_CHECK(miss > ARCH_OPT_GAP * ARCH_TOL, "%s: a pass without them would pass: %.2e",
	    sh->arch, miss);
	free(ref);
	free(ref0);
	free(got);
	eng_model_close(m);
	eng_model_close(z);
	return TAP_PASS;
}

static enum tap_result
test_qwen2_matches_ref(void)
{
	return check_matches_ref(&qwen2_shape);
}

static enum tap_result
test_qwen2_biases_matter(void)
{
	return check_opt_matters(&qwen2_shape, &qwen2_zero_bias);
}

/* qwen3 is enabled: the default open runs it, head norms loaded. */
static enum tap_result
test_qwen3_matches_ref(void)
{
	struct eng_model *m = NULL;
	char path[64], why[256];
	int rc;

	TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, &qwen3_shape), "write");
	rc = eng_model_open(&m, path, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(!rc && m->layers[0].q_norm && m->layers[0].k_norm, "qwen3 open: %d %s", rc,
	    why);
	eng_model_close(m);
	return check_matches_ref(&qwen3_shape);
}

/* qwen2 with zero biases is qwen3 without its head norms (both NeoX). */
static enum tap_result
test_qwen3_norms_matter(void)
{
	return check_opt_matters(&qwen3_shape, &qwen2_zero_bias);
}

/* Llama 3.1's rope_scaling {rope_type llama3, factor 8, low_freq_factor 1,
 * high_freq_factor 4, original_max_position_embeddings 8192} turned into
 * per-pair divisors exactly as llama.cpp's convert script does (float32
 * frequencies, then the three wavelength regimes).  With head_dim 8 and
 * base 500000 the four pairs land in all three: 1, 1, smoothed, 8. */
static void
llama3_real_fill(void)
{
	const double factor = 8.0, low = 1.0, high = 4.0, old_ctx = 8192.0;
	const double low_wl = old_ctx / low, high_wl = old_ctx / high;
	int i;
	for (i = 0; i < TINY_HEAD_DIM / 2; i++) {
		float freq = 1.0f / powf(500000.0f, (float)(2 * i) / (float)TINY_HEAD_DIM);
		double wl = 2.0 * M_PI / freq, f;
		if (wl < high_wl)
			f = 1.0;
		else if (wl > low_wl)
			f = factor;
		else {
			double smooth = (old_ctx / wl - low) / (high - low);
			f = 1.0 / ((1.0 - smooth) / factor + smooth);
		}
		llama3_real_ff[i] = (float)f;
	}
}

/* A Llama 3 file opens as llama (enabled) with its factors; the forward
 * pass matches the reference with them, and they matter. */
static enum tap_result
test_llama3_matches_ref(void)
{
	struct eng_model *m = NULL;
	char path[64], why[256];
	int rc;

	TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, &llama3_strong), "write");
	rc = eng_model_open(&m, path, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(!rc && m->hp.rope_freqs && m->hp.rope_freqs[1] == 4.0f,
	    "llama3 open (default flags): %d %s", rc, why);
	eng_model_close(m);
	return check_matches_ref(&llama3_strong);
}

/* tiny_llama is the same seed's weights without the factors. */
static enum tap_result
test_llama3_factors_matter(void)
{
	return check_opt_matters(&llama3_strong, &tiny_llama);
}

static enum tap_result
test_llama3_real_layout(void)
{
	llama3_real_fill();
	tap_diag("report: llama 3.1 factors at head_dim %d: %g %g %g %g", TINY_HEAD_DIM,
	    (double)llama3_real_ff[0], (double)llama3_real_ff[1], (double)llama3_real_ff[2],
	    (double)llama3_real_ff[3]);
	TAP_CHECK(llama3_real_ff[0] == 1.0f && llama3_real_ff[3] == 8.0f &&
	    llama3_real_ff[2] > 1.0f && llama3_real_ff[2] < 8.0f, "the three regimes");
	return check_matches_ref(&llama3_real);
}

/* Factors that are not positive numbers: refused with the tensor's name. */
static enum tap_result
test_llama3_bad_factors(void)
{
	static const float bad[TINY_HEAD_DIM / 2] = { 1.0f, -1.0f, 1.0f, 1.0f };
	static const struct tiny_shape sh = { "llama", 0, 0.0, 0, 0.0f, bad, NULL };
	struct eng_model *m = NULL;
	char path[64], why[256];
	int rc;

	TAP_CHECK(!tiny_model_tmp_shape(path, sizeof(path), 11, &sh), "write");
	rc = eng_model_open(&m, path, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(rc && !m && strstr(why, "rope_freqs.weight[1]"), "bad factors: %d %s", rc, why);
	return TAP_PASS;
}

/* The rope op with factors against the formula in double: pair i of a
 * head at position p turns by p·base^(-2i/d) / ff[i]; factors of all ones
 * are bit for bit no factors. */
static enum tap_result
test_rope_factors(void)
{
	enum { T = 3, H = 2, D = 8 };
	static const uint32_t pos[T] = { 0, 7, 3000 };
	static const float ones[D / 2] = { 1.0f, 1.0f, 1.0f, 1.0f };
	struct kern_ctx *k = NULL;
	const struct kern_ops *ops;
	float x[T * H * D], a[T * H * D], b[T * H * D], c[T * H * D];
	struct tiny_rng r = { 7 };
	double worst = 0.0;
	int i, h, t;

	for (i = 0; i < T * H * D; i++)
		x[i] = (float)tiny_rng_normal(&r);
	TAP_CHECK(!kern_ctx_init(&k, 1), "kern ctx");
	ops = kern_ctx_ops(k);
	memcpy(a, x, sizeof(x));
	memcpy(b, x, sizeof(x));
	memcpy(c, x, sizeof(x));
	TAP_CHECK(!ops->rope(k, a, pos, T, H, D, 10000.0f, llama3_strong_ff, KERN_ROPE_NORM),
	    "rope with factors");
	TAP_CHECK(!ops->rope(k, b, pos, T, H, D, 10000.0f, ones, KERN_ROPE_NORM), "ones");
	TAP_CHECK(!ops->rope(k, c, pos, T, H, D, 10000.0f, NULL, KERN_ROPE_NORM), "none");
	kern_ctx_free(k);
	TAP_CHECK(!memcmp(b, c, sizeof(b)), "factors of one differ from none");
	for (t = 0; t < T; t++)
		for (h = 0; h < H; h++)
			for (i = 0; i < D / 2; i++) {
				int o = (t * H + h) * D + 2 * i;
				double th = pos[t] * pow(10000.0, -2.0 * i / D) / llama3_strong_ff[i];
				double e0 = x[o] * cos(th) - x[o + 1] * sin(th);
				double e1 = x[o] * sin(th) + x[o + 1] * cos(th);
				worst = fmax(worst, fmax(fabs(e0 - a[o]), fabs(e1 - a[o + 1])));
			}
	/* float angles up to 3000·4 rad: their rounding (~2.4e-4 at 3000) and
	 * the repeated-product scale dominate; a missed division is off by O(1) */
	TAP_CHECK(worst < 2e-3, "rope with factors is off the formula by %.2e", worst);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* The real vocabularies (llama.cpp's vocab-only GGUFs, build/vocab/ from
 * scripts/fetch-vocabs.sh, or $KVSNAP_VOCAB_DIR): the tiny models carry the
 * family's whole tokenizer.* metadata and an embedding row per token. */

/* Bytes of the GGUF value at p of type t (file already validated by the
 * reader, so counts and lengths are in bounds). */
static size_t
gguf_value_size(const uint8_t *p, uint32_t t)
{
	static const size_t scalar[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
	uint64_t n, i;
	size_t sz;
	if (t == ENG_GGUF_STRING) {
		memcpy(&n, p, 8);
		return 8 + (size_t)n;
	}
	if (t != ENG_GGUF_ARRAY)
		return scalar[t];
	memcpy(&t, p, 4);
	memcpy(&n, p + 4, 8);
	if (t != ENG_GGUF_STRING)
		return 12 + (size_t)n * scalar[t];
	for (i = 0, sz = 12; i < n; i++)
		sz += gguf_value_size(p + sz, t);
	return sz;
}

/* The tokenizer.* entries of g, copied byte for byte (key, type, value). */
static int
vocab_from(const struct eng_gguf *g, struct tiny_vocab *v, struct gb *b)
{
	const struct eng_gguf_kv *tok = eng_gguf_find_kv(g, "tokenizer.ggml.tokens");
	uint64_t i;
	if (!tok || tok->type != ENG_GGUF_ARRAY)
		return -1;
	v->n_vocab = (int64_t)tok->arr_n;
	v->n_kv = 0;
	for (i = 0; i < g->n_kv; i++) {
		const struct eng_gguf_kv *kv = &g->kv[i];
		const uint8_t *start = (const uint8_t *)kv->key.ptr - 8;
		const uint8_t *val = (const uint8_t *)kv->key.ptr + kv->key.len + 4;
		if (kv->key.len < 10 || memcmp(kv->key.ptr, "tokenizer.", 10))
			continue;
		gb_put(b, start, (size_t)(val - start) + gguf_value_size(val, (uint32_t)kv->type));
		v->n_kv++;
	}
	v->kv = b->p;
	v->kv_len = b->len;
	return 0;
}

/* The model file's tokenizer encodes and decodes a text back exactly,
 * unless this build's tokenizer does not know the family's pre-tokenizer
 * (reported: that is the tokenizer's concern, not the shape's). */
static enum tap_result
check_tok_roundtrip(const struct eng_model *m, const char *name)
{
	static const char text[] = "Hello world: the tiny model carries the real vocabulary.";
	struct eng_tok *t = NULL;
	char why[256], back[256];
	int32_t ids[64];
	int64_t n, i;
	size_t used = 0;
	int rc = eng_tok_init(&t, m->gguf, why, sizeof(why));
	if (rc && strstr(why, "tokenizer.ggml.pre")) {
		tap_diag("report: %s: this build's tokenizer refuses it: %s", name, why);
		return TAP_PASS;
	}
	TAP_CHECK(!rc, "%s tokenizer: %s", name, why);
	n = eng_tok_encode(t, text, sizeof(text) - 1, 0, ids, 64);
	for (i = 0; i < n && n <= 64; i++) {
		int w = eng_tok_decode(t, ids[i], 0, back + used, sizeof(back) - used);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	eng_tok_free(t);
	TAP_CHECK(n > 3 && n < 20 && used == sizeof(text) - 1 && !memcmp(back, text, used),
	    "%s: %lld ids, decoded '%.*s'", name, (long long)n, (int)used, back);
	tap_diag("report: %s: the text encodes to %lld ids and decodes back", name, (long long)n);
	return TAP_PASS;
}

/* A tiny model of shape sh carrying vocabulary file `name`: it opens with
 * the default flags, has the vocabulary's size, and matches the reference
 * pass on ids across the whole vocabulary.  Skipped without the file. */
static enum tap_result
check_real_vocab(const struct tiny_shape *base, const char *name, int64_t want_n)
{
	const char *dir = getenv("KVSNAP_VOCAB_DIR");
	char path[512], tmp[64], why[256];
	struct eng_gguf *g = NULL;
	struct eng_model *m = NULL;
	struct tiny_vocab v;
	struct tiny_shape sh = *base;
	struct gb b = { 0 };
	enum tap_result r;
	uint8_t *file;
	size_t len = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "build/vocab", name);
	if (access(path, R_OK)) {
		tap_diag("%s absent (scripts/fetch-vocabs.sh fetches it)", path);
		return TAP_SKIP;
	}
	/* 64 zero bytes after the file: llama.cpp's vocab-only files end right
	 * after their metadata, before the alignment padding this reader wants
	 * (the tok branch lets eng_gguf_open take them) */
	file = (uint8_t *)kv_slurp(path, 64, &len);
	TAP_CHECK(file && len, "%s: unreadable", path);
	len += 64;
	TAP_CHECK(!eng_gguf_open_mem(&g, file, len, why, sizeof(why)), "%s: %s", path, why);
	TAP_CHECK(!vocab_from(g, &v, &b), "%s: no tokenizer.ggml.tokens", path);
	TAP_CHECK(v.n_vocab == want_n && v.n_kv >= 3, "%s: %lld tokens, %llu keys", name,
	    (long long)v.n_vocab, (unsigned long long)v.n_kv);
	sh.vocab = &v;
	TAP_CHECK(!tiny_model_tmp_shape(tmp, sizeof(tmp), 11, &sh), "write");
	eng_gguf_close(g);
	free(file);
	rc = eng_model_open(&m, tmp, why, sizeof(why));
	if (!rc)
		rc = eng_gguf_find_kv(m->gguf, "tokenizer.ggml.merges") ? 0 : -1;
	tiny_model_remove(tmp);
	TAP_CHECK(!rc && m->hp.n_vocab == want_n, "%s model: %d %s", name, rc, why);
	r = check_tok_roundtrip(m, name);
	eng_model_close(m);
	if (r != TAP_PASS) {
		free(b.p);
		return r;
	}
	tap_diag("report: %s: %lld tokens, %llu tokenizer keys", name, (long long)v.n_vocab,
	    (unsigned long long)v.n_kv);
	/* open_shape writes the file again from sh (same seed, same vocab) */
	r = check_matches_ref(&sh);
	free(b.p);
	return r;
}

/* Llama 3.1's real layout (base 500000, the convert script's factors) with
 * Llama 3's tokenizer (llama-bpe, 128256 tokens). */
static enum tap_result
test_llama3_real_vocab(void)
{
	llama3_real_fill();
	return check_real_vocab(&llama3_real, "ggml-vocab-llama-bpe.gguf", 128256);
}

/* Qwen3 with the Qwen2/3 tokenizer (llama.cpp's qwen2 vocab: 151936
 * tokens, the embedding rows of Qwen2 and Qwen3 files). */
static enum tap_result
test_qwen3_real_vocab(void)
{
	return check_real_vocab(&qwen3_shape, "ggml-vocab-qwen2.gguf", 151936);
}

/* The pool's own rotation (snapshot load, slot renumbering) re-derives
 * exactly the rotated keys the forward pass stored, in the model's style. */
static enum tap_result
check_pool_rotation(const struct tiny_shape *sh)
{
	struct eng_model *m = NULL;
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	char why[256];
	int32_t ids[ARCH_N];
	float *kr = NULL, last[TINY_N_VOCAB];
	size_t per;
	int l, diff = 0;

	ids_fill(ids, TINY_N_VOCAB);
	TAP_CHECK(!open_shape(sh, &m, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_ctx_init(&c, m, 1, 16) && !eng_kv_init(&kv, m, ARCH_N), "init");
	TAP_CHECK(!eng_forward(c, kv, ids, ARCH_N, NULL, last), "forward");
	per = (size_t)kv->rows * (size_t)kv->head_dim;
	kr = malloc((size_t)kv->n_layer * per * sizeof(float));
	TAP_CHECK(kr, "oom");
	/* every row is used: ARCH_N units in each head's ARCH_N rows */
	for (l = 0; l < kv->n_layer; l++)
		memcpy(kr + (size_t)l * per, kv->layer[l].kr, per * sizeof(float));
	TAP_CHECK(!eng_kv_finish_load(kv, kv->next_pos, ENG_POS_ORIGINAL), "re-derive");
	for (l = 0; l < kv->n_layer; l++)
		diff |= memcmp(kr + (size_t)l * per, kv->layer[l].kr, per * sizeof(float)) != 0;
	TAP_CHECK(!diff, "%s: the pool rotates keys unlike the forward pass", sh->arch);
	free(kr);
	eng_kv_free(kv);
	eng_ctx_free(c);
	eng_model_close(m);
	return TAP_PASS;
}

static enum tap_result
test_pool_rotation(void)
{
	enum tap_result r = check_pool_rotation(&qwen2_shape);
	if (r == TAP_PASS)
		r = check_pool_rotation(&llama3_strong);
	return r == TAP_PASS ? check_pool_rotation(&tiny_llama) : r;
}

/* NeoX pairs (i, i + d/2) are NORM pairs (2i, 2i+1) of the vector
 * interleaved as perm[2i] = i, perm[2i+1] = i + d/2; the styles differ. */
static enum tap_result
test_rope_styles(void)
{
	enum { T = 3, H = 2, D = 16 };
	static const uint32_t pos[T] = { 0, 5, 4000 };
	struct kern_ctx *k = NULL;
	const struct kern_ops *ops;
	float x[T * H * D], neox[T * H * D], norm[T * H * D], perm[T * H * D];
	struct tiny_rng r = { 99 };
	double worst = 0.0, apart = 0.0;
	int i, j, h, t;

	for (i = 0; i < T * H * D; i++)
		x[i] = (float)tiny_rng_normal(&r);
	TAP_CHECK(!kern_ctx_init(&k, 1), "kern ctx");
	ops = kern_ctx_ops(k);
	memcpy(neox, x, sizeof(x));
	memcpy(norm, x, sizeof(x));
	for (t = 0; t < T; t++)
		for (h = 0; h < H; h++)
			for (j = 0; j < D / 2; j++) {
				int b = (t * H + h) * D;
				perm[b + 2 * j] = x[b + j];
				perm[b + 2 * j + 1] = x[b + j + D / 2];
			}
	TAP_CHECK(!ops->rope(k, neox, pos, T, H, D, 10000.0f, NULL, KERN_ROPE_NEOX), "neox");
	TAP_CHECK(!ops->rope(k, perm, pos, T, H, D, 10000.0f, NULL, KERN_ROPE_NORM), "norm of perm");
	TAP_CHECK(!ops->rope(k, norm, pos, T, H, D, 10000.0f, NULL, KERN_ROPE_NORM), "norm");
	kern_ctx_free(k);
	for (t = 0; t < T; t++)
		for (h = 0; h < H; h++)
			for (j = 0; j < D / 2; j++) {
				int b = (t * H + h) * D;
				double d0 = fabs((double)perm[b + 2 * j] - neox[b + j]);
				double d1 = fabs((double)perm[b + 2 * j + 1] - neox[b + j + D / 2]);
				worst = fmax(worst, fmax(d0, d1));
			}
	for (i = 0; i < T * H * D; i++)
		apart = fmax(apart, fabs((double)norm[i] - neox[i]));
	/* the same float operations on the same pairs: exactly equal */
	TAP_CHECK(worst == 0.0, "neox differs from norm of the permuted vector by %.2e", worst);
	TAP_CHECK(apart > 0.1, "the two styles agree (%.2e)", apart);
	return TAP_PASS;
}

/* As many threads as the pool takes (a 64-core machine's default) give the
 * logits of two, bit for bit: each row's dot is one thread's whole, so the
 * split cannot move a bit.  (The tiny model is too small for thread 63 to
 * reach the pool's shared scratch slot, which ctx.c now keeps from every
 * thread; this checks the invariance, not that case.) */
static enum tap_result
test_many_threads(void)
{
	struct eng_model *m = NULL;
	int32_t ids[ARCH_N];
	float *two, *many;
	size_t nv;
	char why[256];

	TAP_CHECK(!open_shape(&qwen2_shape, &m, why, sizeof(why)), "open: %s", why);
	nv = (size_t)m->hp.n_vocab;
	ids_fill(ids, m->hp.n_vocab);
	two = malloc(ARCH_N * nv * sizeof(float));
	many = malloc(ARCH_N * nv * sizeof(float));
	TAP_CHECK(two && many, "memory");
	TAP_CHECK(!forward_logits(m, ids, ARCH_N, ARCH_N, 2, 0, two), "2 threads");
	TAP_CHECK(!forward_logits(m, ids, ARCH_N, ARCH_N, 64, 0, many), "64 threads");
	TAP_CHECK(!memcmp(two, many, ARCH_N * nv * sizeof(float)),
	    "64 threads' logits differ from 2 threads'");
	free(two);
	free(many);
	eng_model_close(m);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "many_threads", test_many_threads },
	{ "refused_by_default", test_refused_by_default },
	{ "qwen2_matches_ref", test_qwen2_matches_ref },
	{ "qwen2_biases_matter", test_qwen2_biases_matter },
	{ "qwen3_matches_ref", test_qwen3_matches_ref },
	{ "qwen3_norms_matter", test_qwen3_norms_matter },
	{ "llama3_matches_ref", test_llama3_matches_ref },
	{ "llama3_factors_matter", test_llama3_factors_matter },
	{ "llama3_real_layout", test_llama3_real_layout },
	{ "llama3_bad_factors", test_llama3_bad_factors },
	{ "rope_factors", test_rope_factors },
	{ "llama3_real_vocab", test_llama3_real_vocab },
	{ "qwen3_real_vocab", test_qwen3_real_vocab },
	{ "pool_rotation", test_pool_rotation },
	{ "rope_styles", test_rope_styles },
};

TAP_MAIN(NULL, NULL)
