/*
 * test_kvzip.c: the kvzip policy (engine/cache/policy_kvzip.c,
 * engine/run/kvzip_ingest.c, engine/cache/select_scores.c) on the real model,
 * and its selection on hand-made pools.
 *
 *   keep_all_is_full   with ratio 1 nothing is evicted, and the cache and the
 *                      last logits are bitwise those of a plain full ingest
 *                      in the same chunks (the reconstruction passes leave
 *                      nothing behind)
 *   scores_by_hand     every unit's score equals the definition computed here
 *                      in double from the replayed reconstruction's own
 *                      queries and keys: max over the GQA group and the
 *                      repeat's queries of the softmax restricted to sinks,
 *                      segment and repeat (two segments, so the restriction
 *                      matters); the repeat input is built here from text
 *   select_*           the three allocations on pools with known scores
 *                      against brute force
 *   budget_and_cancel  the kept count after an ingest is the budget; the
 *                      progress callback can stop a kvzip ingest
 *   ratio              eng_parse_ratio, the ratio form's description and
 *                      per-document budget
 *   tail_and_demote    tail=N scores the last N units +inf and a 1/4 cut
 *                      keeps them in every head; demote=F scales exactly
 *                      the structural units (classified here from the
 *                      token texts: no letter or digit, used 4 times or
 *                      more, not between two word characters) by F and
 *                      leaves every other score bitwise as it was; both
 *                      named in the description only when set
 *   refit              refit=1 at 1/8 keeps the same units with the same keys
 *                      as without, with new values and finite biases the
 *                      attention adds (eng_kv.has_bias); stored (the current
 *                      format, 4: the bias flag and section, fp16) in memory and in a real LMDB store
 *                      and loaded back, it holds the same biases bit for bit
 *                      and the question's logits equal the pool's rounded to
 *                      fp16 bit for bit (and differ without the biases)
 *   train_labels       eng_train_label_kvzip (Locret heads trained on kvzip,
 *                      issue 19): every label is the log of the score the
 *                      policy itself gives the unit: equal to the stored
 *                      score of every unit a 1/4 ingest in the same chunks
 *                      keeps; sinks 0, the rest finite and < 0; wrong
 *                      policies and lengths refused
 *   unread_tail        a chunk that wants no logits skips its last layer's
 *                      attention product, output projection and FFN: the
 *                      cache, the last logits and a scoring chunk's
 *                      statistics at every layer are bitwise those of the
 *                      same chunks run with every logit wanted
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sort.h"
#include "engine/engine.h"
#include "engine/cache/kvzip.h"
#include "engine/cache/refit.h"
#include "engine/run/forward_hook.h"
#include "snapshot/snapshot_io.h"
#include "tests/forward_logits.h"
#include "tests/snap_helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

static const char g_text[] =
    "The lighthouse at the end of the northern breakwater was built in 1871 "
    "from granite quarried on the island itself. Its keeper, a retired sailor "
    "named Elias Brandt, kept a logbook of every ship that passed, and of the "
    "weather each morning and evening. The lamp burned whale oil until 1903, "
    "when it was replaced by a kerosene burner, and later by an electric lamp "
    "that could be seen twenty-two nautical miles out to sea. In the winter of "
    "1911 a storm broke the lantern glass, and Brandt kept a lantern burning by "
    "hand for three nights until the glazier came from the mainland. The "
    "lighthouse was automated in 1968; the keeper's cottage became a small "
    "museum of maritime history, where the logbooks are displayed in a glass "
    "case beside a brass telescope and a model of the schooner Margarethe, "
    "which ran aground on the reef below the tower in 1887. Visitors climb one "
    "hundred and fourteen steps to the gallery, from which, on a clear day, the "
    "coast of the neighbouring country is visible as a thin grey line. The "
    "museum is open from April to October, and the entrance fee supports the "
    "upkeep of the tower and the restoration of the old fog bell.";

static struct eng_model *g_m;
static struct eng_tok *g_tok;
static struct eng_chat *g_chat;

static int
open_model(void)
{
	char why[256];
	if (g_m)
		return 0;
	if (eng_model_open(&g_m, tap_model_path(), why, sizeof(why)) ||
	    eng_tok_init(&g_tok, g_m->gguf, why, sizeof(why)) ||
	    eng_chat_init(&g_chat, g_m->gguf, g_tok, why, sizeof(why))) {
		tap_diag("cannot open the model: %s", why);
		return -1;
	}
	return 0;
}

/* The document's ids as kvsnap ingests them (template prefix + text). */
static int64_t
doc_ids(int32_t **ids)
{
	return eng_chat_doc_ids(g_chat, g_text, sizeof(g_text) - 1, ids);
}

static enum tap_result
test_keep_all_is_full(void)
{
	struct eng_policy *pz = NULL, *pf = NULL;
	struct eng_kv *kz = NULL, *kf = NULL;
	struct eng_ctx *c = NULL;
	int32_t *ids = NULL;
	int64_t n, rows, u;
	float *lz, *lf;
	char why[256];
	int l, m, rc;

	TAP_CHECK(!open_model(), "model");
	n = doc_ids(&ids);
	TAP_CHECK(n > 200, "document of %lld tokens", (long long)n);
	lz = malloc((size_t)g_m->hp.n_vocab * sizeof(float));
	lf = malloc((size_t)g_m->hp.n_vocab * sizeof(float));
	TAP_CHECK(!eng_policy_create_ratio(&pz, "kvzip", "seg=128", 1.0, why, sizeof(why)), "%s",
	    why);
	TAP_CHECK(!eng_policy_create(&pf, "full", "", 0, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	rows = eng_policy_rows_per_head(pz, n, 64, 0);
	TAP_CHECK(!eng_kv_init(&kz, g_m, rows) && !eng_kv_init(&kf, g_m, n + 1), "pools");
	rc = eng_ingest(c, kz, pz, ids, n, 64, lz);
	TAP_CHECK(rc == 0, "kvzip ingest: %s", eng_strerror(rc));
	rc = eng_ingest(c, kf, pf, ids, n, 64, lf);
	TAP_CHECK(rc == 0, "full ingest: %s", eng_strerror(rc));
	TAP_CHECK(kz->next_pos == (uint32_t)n, "next_pos %u after the reconstructions", kz->next_pos);
	TAP_CHECK(!memcmp(lz, lf, (size_t)g_m->hp.n_vocab * sizeof(float)), "last logits differ");
	for (l = 0; l < g_m->hp.n_layer; l++)
		for (m = 0; m < g_m->hp.n_head_kv; m++) {
			const struct eng_kv_layer *A = &kz->layer[l], *B = &kf->layer[l];
			size_t hd = (size_t)g_m->hp.head_dim;
			TAP_CHECK(A->len[m] == n && B->len[m] == n, "layer %d head %d holds %lld", l, m,
			    (long long)A->len[m]);
			for (u = 0; u < n; u++) {
				TAP_CHECK(A->pos[A->off[m] + u] == (uint32_t)u, "position");
				TAP_CHECK(!memcmp(A->k + (A->off[m] + u) * hd, B->k + (B->off[m] + u) * hd,
				    hd * sizeof(float)) && !memcmp(A->v + (A->off[m] + u) * hd,
				    B->v + (B->off[m] + u) * hd, hd * sizeof(float)),
				    "layer %d head %d unit %lld: K/V differ from the full ingest", l, m,
				    (long long)u);
			}
		}
	free(ids);
	free(lz);
	free(lf);
	eng_kv_free(kz);
	eng_kv_free(kf);
	eng_ctx_free(c);
	eng_policy_free(pz);
	eng_policy_free(pf);
	return TAP_PASS;
}

/* ---- scores by hand -------------------------------------------------- */

struct replay {
	const struct eng_model *m;
	int64_t n_sink, seg_lo, seg_hi; /* units [seg_lo, seg_hi) are scored */
	double *best;                   /* (n_layer, n_head_kv, seg_hi) */
};

/* After each layer's attention: the restricted softmax of every query of
 * the chunk, in double, straight from the rotated keys in the pool. */
static int
replay_hook(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct replay *r = arg;
	const struct eng_hparams *hp = &r->m->hp;
	int H = hp->n_head_kv, G = hp->n_head / hp->n_head_kv, hd = hp->head_dim, g, j, d;
	const struct eng_kv_layer *L = &kv->layer[layer];
	double scale = 1.0 / sqrt((double)hd), *lg;
	int64_t t, u;

	for (g = 0; g < H; g++) {
		int64_t nk = L->len[g], base = nk - info->n_tok;
		lg = malloc((size_t)nk * sizeof(double));
		if (!lg)
			return ENG_ERR_NOMEM;
		for (j = 0; j < G; j++) {
			int h = g * G + j;
			for (t = 0; t < info->n_tok; t++) {
				const float *q = info->q + (size_t)t * (size_t)(hp->n_head * hd) +
				    (size_t)h * (size_t)hd;
				int64_t vis = base + t + 1;
				double mx = -INFINITY, z = 0.0, zd = 0.0;
				for (u = 0; u < vis; u++) {
					const float *k = L->kr + (size_t)(L->off[g] + u) * (size_t)hd;
					double s = 0.0;
					for (d = 0; d < hd; d++)
						s += (double)q[d] * (double)k[d];
					lg[u] = s * scale;
					mx = lg[u] > mx ? lg[u] : mx;
				}
				for (u = 0; u < vis; u++) {
					lg[u] = exp(lg[u] - mx);
					z += lg[u];
				}
				/* the domain: sinks, the segment, the repeat (all after seg_lo) */
				for (u = 0; u < vis; u++)
					if (u < r->n_sink || u >= r->seg_lo)
						zd += lg[u] / z;
				for (u = r->seg_lo; u < r->seg_hi && u < vis; u++) {
					double p = lg[u] / z / zd;
					double *b = &r->best[((size_t)layer * (size_t)H + (size_t)g) *
					    (size_t)r->seg_hi + (size_t)u];
					*b = p > *b ? p : *b;
				}
			}
		}
		free(lg);
	}
	return 0;
}

/* ids of text (specials parsed when special) appended to out. */
static int64_t
enc(const char *text, int special, int32_t *out)
{
	return eng_tok_encode(g_tok, text, strlen(text), special, out, 256);
}

static enum tap_result
test_scores_by_hand(void)
{
	const struct eng_hparams *hp;
	struct eng_policy *p = NULL;
	struct eng_kv *kz = NULL, *kr = NULL;
	struct eng_ctx *c = NULL;
	struct replay r;
	struct eng_fwd_hook hook;
	int32_t *ids = NULL, rep[1024];
	int64_t n, n_tpl, n_rep = 0, lo = 128, u, checked = 0;
	int32_t *tpl = NULL;
	double worst = 0.0;
	char why[256];
	int l, g, rc;

	TAP_CHECK(!open_model(), "model");
	hp = &g_m->hp;
	n = doc_ids(&ids);
	n_tpl = eng_chat_doc_ids(g_chat, "", 0, &tpl);
	TAP_CHECK(n_tpl > 0 && n - lo >= 64 && n - lo < 128 + 64,
	    "the document must make two segments of seg=128: %lld tokens", (long long)n);
	TAP_CHECK(!eng_policy_create_ratio(&p, "kvzip", "seg=128", 1.0, why, sizeof(why)), "%s",
	    why);
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	TAP_CHECK(!eng_kv_init(&kz, g_m, eng_policy_rows_per_head(p, n, 64, 0)), "pool");
	TAP_CHECK(!eng_kv_init(&kr, g_m, 2 * n + 256), "pool");
	rc = eng_ingest(c, kz, p, ids, n, 64, NULL);
	TAP_CHECK(rc == 0, "ingest: %s", eng_strerror(rc));

	/* replay segment 2's reconstruction: the document, then the repeat
	 * request naming segment 1's last 8 tokens, then segment 2 */
	TAP_CHECK(!eng_forward(c, kr, ids, n, NULL, NULL) || 1, "prefill");
	n_rep = enc("\n\nRepeat the part of the previous context exactly, starting with ", 0, rep);
	memcpy(rep + n_rep, ids + lo - 8, 8 * sizeof(int32_t));
	n_rep += 8;
	n_rep += enc("<|im_end|>\n<|im_start|>assistant\n", 1, rep + n_rep);
	memcpy(rep + n_rep, ids + lo, (size_t)(n - lo) * sizeof(int32_t));
	n_rep += n - lo;
	memset(&r, 0, sizeof(r));
	r.m = g_m;
	r.n_sink = n_tpl;
	r.seg_lo = lo;
	r.seg_hi = n;
	r.best = calloc((size_t)hp->n_layer * (size_t)hp->n_head_kv * (size_t)n, sizeof(double));
	TAP_CHECK(r.best != NULL, "oom");
	memset(&hook, 0, sizeof(hook));
	hook.after_attn = replay_hook;
	hook.arg = &r;
	hook.stat_from = -1;
	for (u = 0; u < n_rep; u += 64) {
		int64_t len = n_rep - u < 64 ? n_rep - u : 64;
		rc = eng_forward_chunk_hooked(c, kr, rep + u, len, NULL, &hook);
		TAP_CHECK(rc == 0, "replay: %s", eng_strerror(rc));
	}
	for (l = 0; l < hp->n_layer; l++)
		for (g = 0; g < hp->n_head_kv; g++) {
			const struct eng_kv_layer *L = &kz->layer[l];
			for (u = 0; u < n; u++) {
				float got = L->score[L->off[g] + u];
				double want;
				if (u < n_tpl) {
					TAP_CHECK(isinf(got) && got > 0, "sink %lld scored %g", (long long)u, got);
					continue;
				}
				TAP_CHECK(got >= 0.0f && got <= 1.0f, "score %g out of [0, 1]", got);
				if (u < lo)
					continue;
				want = r.best[((size_t)l * (size_t)hp->n_head_kv + (size_t)g) * (size_t)n +
				    (size_t)u];
				/* f32 logits (sgemm, any BLAS kernel) against double: the
				 * probabilities agree to ~1e-6 relative; 1e-4 leaves room
				 * for exp's amplification of a logit error of ~1e-5 */
				if (want > 1e-6 && fabs(got - want) / want > worst)
					worst = fabs(got - want) / want;
				TAP_CHECK(fabs(got - want) <= 1e-4 * want + 1e-7,
				    "layer %d head %d unit %lld: score %.9g, by hand %.9g", l, g,
				    (long long)u, got, want);
				checked++;
			}
		}
	tap_diag("%lld segment-2 scores match the hand computation (worst rel %.2g)",
	    (long long)checked, worst);
	free(r.best);
	free(ids);
	free(tpl);
	eng_kv_free(kz);
	eng_kv_free(kr);
	eng_ctx_free(c);
	eng_policy_free(p);
	return TAP_PASS;
}

/* ---- selection on hand-made pools -------------------------------------- */

/* A pool of the tiny model's shape with n units per head, scores from a
 * hash, the first 2 positions sinks (score +inf). */
static struct eng_kv *
sel_pool(const struct eng_model *m, int64_t n, int skew)
{
	struct eng_kv *kv = NULL;
	int l, h;
	int64_t u;
	if (eng_kv_init(&kv, m, n + 8))
		return NULL;
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++) {
			struct eng_kv_layer *L = &kv->layer[l];
			L->len[h] = n;
			for (u = 0; u < n; u++) {
				uint32_t x = (uint32_t)(u * 2654435761u) ^ (uint32_t)(l * 40503 + h * 977);
				L->pos[L->off[h] + u] = (uint32_t)u;
				L->score[L->off[h] + u] = u < 2 ? INFINITY :
				    (float)(x % 10007) / 10007.0f * (skew ? (float)(1 + l + 3 * h) : 1.0f);
				memset(L->k + (L->off[h] + u) * kv->head_dim, 0,
				    (size_t)kv->head_dim * sizeof(float));
				memset(L->v + (L->off[h] + u) * kv->head_dim, 0,
				    (size_t)kv->head_dim * sizeof(float));
			}
		}
	kv->next_pos = (uint32_t)n;
	return kv;
}

static enum tap_result
sel_run(const char *opts, int skew, int mode)
{
	struct eng_model *m = NULL;
	struct eng_policy *p = NULL;
	struct eng_kv *kv = NULL, *ref = NULL;
	char path[64], why[256];
	int64_t n = 40, target = 12, total = 0, u, i;
	int l, h, NL, H;

	TAP_CHECK(!tiny_model_tmp(path, sizeof(path), 3), "tiny model");
	TAP_CHECK(!eng_model_open(&m, path, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_policy_create(&p, "kvzip", opts, target, why, sizeof(why)), "%s", why);
	kv = sel_pool(m, n, skew);
	ref = sel_pool(m, n, skew);
	TAP_CHECK(kv && ref, "pools");
	NL = kv->n_layer;
	H = kv->n_head_kv;
	TAP_CHECK(!eng_kvzip_select(p, kv, 2, target, INT64_MAX / 4, NULL, NULL), "select");
	for (l = 0; l < NL; l++) {
		int64_t layer_total = 0;
		for (h = 0; h < H; h++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			TAP_CHECK(L->len[h] >= 2 && L->pos[L->off[h]] == 0 && L->pos[L->off[h] + 1] == 1,
			    "layer %d head %d lost its sinks", l, h);
			for (u = 1; u < L->len[h]; u++)
				TAP_CHECK(L->pos[L->off[h] + u] > L->pos[L->off[h] + u - 1], "order");
			if (mode == 1)
				TAP_CHECK(L->len[h] == target, "uniform: head keeps %lld",
				    (long long)L->len[h]);
			layer_total += L->len[h];
		}
		if (mode == 2)
			TAP_CHECK(layer_total == (int64_t)H * target, "adakv: layer %d keeps %lld", l,
			    (long long)layer_total);
		total += layer_total;
	}
	TAP_CHECK(total == (int64_t)NL * H * target, "kept %lld units, want %lld", (long long)total,
	    (long long)NL * H * target);
	if (mode == 0) { /* global, floor 0: exactly the top scores overall */
		float *all = malloc((size_t)(NL * H * n) * sizeof(float)), thr, kept_min = INFINITY;
		int64_t k = 0;
		for (l = 0; l < NL; l++)
			for (h = 0; h < H; h++)
				for (u = 2; u < n; u++)
					all[k++] = ref->layer[l].score[ref->layer[l].off[h] + u];
		qsort(all, (size_t)k, sizeof(float), kv_cmp_float_desc);
		thr = all[(int64_t)NL * H * (target - 2) - 1];
		for (l = 0; l < NL; l++)
			for (h = 0; h < H; h++)
				for (i = 2; i < kv->layer[l].len[h]; i++) {
					float s = kv->layer[l].score[kv->layer[l].off[h] + i];
					kept_min = s < kept_min ? s : kept_min;
				}
		free(all);
		TAP_CHECK(kept_min == thr, "global: weakest kept %g, the global cut is %g", kept_min,
		    thr);
	}
	eng_kv_free(kv);
	eng_kv_free(ref);
	eng_policy_free(p);
	eng_model_close(m);
	tiny_model_remove(path);
	return TAP_PASS;
}

static enum tap_result
test_select_global(void)
{
	return sel_run("alloc=global,floor=0", 1, 0);
}

static enum tap_result
test_select_uniform(void)
{
	return sel_run("alloc=uniform", 1, 1);
}

static enum tap_result
test_select_adakv(void)
{
	return sel_run("alloc=adakv", 1, 2);
}

/* global with a floor: every head keeps at least floor·(target − sinks) */
static enum tap_result
test_select_floor(void)
{
	struct eng_model *m = NULL;
	struct eng_policy *p = NULL;
	struct eng_kv *kv;
	char path[64], why[256];
	int l, h;

	TAP_CHECK(!tiny_model_tmp(path, sizeof(path), 3), "tiny model");
	TAP_CHECK(!eng_model_open(&m, path, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_policy_create(&p, "kvzip", "floor=0.5", 12, why, sizeof(why)), "%s", why);
	kv = sel_pool(m, 40, 1); /* skewed: the last layers and heads dominate */
	TAP_CHECK(kv && !eng_kvzip_select(p, kv, 2, 12, INT64_MAX / 4, NULL, NULL), "select");
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			TAP_CHECK(kv->layer[l].len[h] >= 2 + 5, "layer %d head %d keeps %lld < floor", l,
			    h, (long long)kv->layer[l].len[h]);
	eng_kv_free(kv);
	eng_policy_free(p);
	eng_model_close(m);
	tiny_model_remove(path);
	return TAP_PASS;
}

/* ---- budget and cancel ------------------------------------------------- */

static int
stop_after_first(void *arg, int64_t done, int64_t total)
{
	(void)total;
	*(int64_t *)arg = done;
	return 1;
}

static enum tap_result
test_budget_and_cancel(void)
{
	struct eng_policy *p = NULL;
	struct eng_kv *kv = NULL;
	struct eng_ctx *c = NULL;
	int32_t *ids = NULL, *tpl = NULL;
	int64_t n, total = 0, done = 0, want, n_tpl = 0, s;
	char why[256];
	int l, rc;

	TAP_CHECK(!open_model(), "model");
	n = doc_ids(&ids);
	TAP_CHECK(!eng_policy_create_ratio(&p, "kvzip", "seg=128", 0.25, why, sizeof(why)), "%s",
	    why);
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	TAP_CHECK(!eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, n, 64, 0)), "pool");
	rc = eng_ingest(c, kv, p, ids, n, 64, NULL);
	TAP_CHECK(rc == 0, "ingest: %s", eng_strerror(rc));
	for (l = 0; l < g_m->hp.n_layer; l++)
		total += eng_kv_layer_units(kv, l);
	/* the ratio is of the document, the template's sinks kept on top
	 * (docs/KVZIP.md): ceil(R (n - s)) + s per head */
	TAP_CHECK(!eng_doc_template_ids(g_m, &tpl, &n_tpl, why, sizeof(why)), "%s", why);
	s = eng_doc_template_len(tpl, n_tpl, ids, n);
	free(tpl);
	TAP_CHECK(s > 0 && s < n, "the document starts with the template's %lld sinks",
	    (long long)s);
	want = ((int64_t)ceil(0.25 * (double)(n - s)) + s) * g_m->hp.n_layer * g_m->hp.n_head_kv;
	TAP_CHECK(total == want, "kept %lld units at ratio 1/4 of %lld tokens (%lld sinks), want "
	    "%lld", (long long)total, (long long)n, (long long)s, (long long)want);
	eng_kv_free(kv);
	kv = NULL;
	TAP_CHECK(!eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, n, 64, 0)), "pool");
	rc = eng_ingest_cb(c, kv, p, ids, n, 64, NULL, stop_after_first, &done);
	/* the first report comes after the first prefill chunk of 64 tokens:
	 * half of the 128-token segment's prefill, which counts half */
	TAP_CHECK(rc == ENG_ERR_CANCELLED && done == 32, "cancel: rc %d after %lld tokens", rc,
	    (long long)done);
	free(ids);
	eng_kv_free(kv);
	eng_ctx_free(c);
	eng_policy_free(p);
	return TAP_PASS;
}

static enum tap_result
test_ratio(void)
{
	struct eng_policy *p = NULL;
	char buf[512], why[256];
	double r;

	TAP_CHECK(!eng_parse_ratio("0.25", &r) && r == 0.25, "0.25");
	TAP_CHECK(!eng_parse_ratio("1/8", &r) && r == 0.125, "1/8");
	TAP_CHECK(!eng_parse_ratio("1", &r) && r == 1.0, "1");
	TAP_CHECK(eng_parse_ratio("0", &r) && eng_parse_ratio("1.5", &r) &&
	    eng_parse_ratio("3/2", &r) && eng_parse_ratio("1/0", &r) && eng_parse_ratio("x", &r) &&
	    eng_parse_ratio("", &r) && eng_parse_ratio("-0.5", &r) && eng_parse_ratio("1/4x", &r),
	    "bad ratios are refused");
	TAP_CHECK(eng_policy_create_ratio(&p, "snapkv", "", 0.0, why, sizeof(why)) && strstr(why,
	    "ratio"), "ratio 0 refused with a reason: %s", why);
	TAP_CHECK(!eng_policy_create_ratio(&p, "kvzip", "", 0.25, why, sizeof(why)), "%s", why);
	eng_policy_describe(p, buf, sizeof(buf));
	{
		static const char want[] = "kvzip:ratio=0.25,seg=2048,alloc=global,sinks=auto,norm=prob,";
		TAP_CHECK(!strncmp(buf, want, sizeof(want) - 1), "description: %s", buf);
		TAP_CHECK(!strstr(buf, "tail") && !strstr(buf, "demote"), "the defaults are not "
		    "named (older profiles unchanged): %s", buf);
	}
	TAP_CHECK(!eng_policy_resolve(p, 1001, NULL, 0), "resolve");
	eng_policy_describe(p, buf, sizeof(buf));
	TAP_CHECK(strstr(buf, "ratio=0.25") && !strstr(buf, "budget"), "still the ratio: %s", buf);
	eng_policy_free(p);
	/* the per-document budget is re-checked: streaming's 4 sinks need more
	 * than a quarter of an 8-token document */
	TAP_CHECK(!eng_policy_create_ratio(&p, "streaming", "", 0.25, why, sizeof(why)), "%s", why);
	TAP_CHECK(eng_policy_resolve(p, 8, why, sizeof(why)) == ENG_ERR_ARG && strstr(why, "sinks"),
	    "short document: %s", why);
	TAP_CHECK(!eng_policy_resolve(p, 100, why, sizeof(why)), "100 tokens: %s", why);
	eng_policy_free(p);
	return TAP_PASS;
}

/* A byte of a word, as kvzip's demotion reads a token's text. */
static int
word_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    c >= 0x80;
}

/* Ingest ids at ratio r with opts in one segment; the pool. */
static struct eng_kv *
ingest_opts(struct eng_ctx *c, const char *opts, double r, const int32_t *ids, int64_t n,
    char *buf, size_t cap)
{
	struct eng_policy *p = NULL;
	struct eng_kv *kv = NULL;
	char why[256] = "";
	if (eng_policy_create_ratio(&p, "kvzip", opts, r, why, sizeof(why)) ||
	    eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, n, 64, 0)) ||
	    eng_ingest(c, kv, p, ids, n, 64, NULL)) {
		tap_diag("kvzip:%s at %g: %s", opts, r, why);
		eng_kv_free(kv);
		kv = NULL;
	}
	if (p && buf)
		eng_policy_describe(p, buf, cap);
	eng_policy_free(p);
	return kv;
}

/* The document's kvzip pool at ratio 1 with no options, ingested once for
 * the tests that compare against it (tail_and_demote, refit); a test that
 * appends to it drops what it appended. */
static struct eng_kv *g_all;

static struct eng_kv *
all_kept(struct eng_ctx *c, const int32_t *ids, int64_t n)
{
	if (!g_all)
		g_all = ingest_opts(c, "", 1.0, ids, n, NULL, 0);
	return g_all;
}

static enum tap_result
test_tail_and_demote(void)
{
	struct eng_policy *p = NULL;
	struct eng_kv *k0 = NULL, *kt = NULL, *kd = NULL, *kc = NULL;
	struct eng_ctx *c = NULL;
	int32_t *ids = NULL, *pre = NULL;
	int64_t n, n_pre, u, i, n_dem = 0, n_same = 0, *uses;
	uint8_t *dem;
	char desc[512], why[256];
	int l, g;

	TAP_CHECK(!open_model(), "model");
	n = doc_ids(&ids);
	n_pre = eng_chat_doc_ids(g_chat, "", 0, &pre);
	TAP_CHECK(n > 200 && n_pre > 0 && n_pre < n, "ids");
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	/* the structural positions, from the token texts */
	uses = calloc((size_t)g_m->hp.n_vocab, sizeof(int64_t));
	dem = calloc((size_t)n, 1);
	TAP_CHECK(uses && dem, "memory");
	for (i = n_pre; i < n; i++)
		uses[ids[i]]++;
	for (i = n_pre; i < n; i++) {
		size_t len = 0, j, lp = 0, ln = 0;
		const char *t = eng_tok_piece(g_tok, ids[i], 0, &len), *tp, *tn;
		int word = 0;
		for (j = 0; j < len; j++)
			word |= word_byte((unsigned char)t[j]);
		if (!len || word || uses[ids[i]] < 4)
			continue;
		if (i > n_pre && i + 1 < n) {
			tp = eng_tok_piece(g_tok, ids[i - 1], 0, &lp);
			tn = eng_tok_piece(g_tok, ids[i + 1], 0, &ln);
			if (lp && ln && word_byte((unsigned char)tp[lp - 1]) &&
			    word_byte((unsigned char)tn[0]))
				continue;
		}
		dem[i] = 1;
		n_dem++;
	}
	TAP_CHECK(n_dem >= 8, "%lld structural positions in the text", (long long)n_dem);
	/* ratio 1, one segment: every unit with its final score */
	k0 = all_kept(c, ids, n);
	kt = ingest_opts(c, "tail=16", 1.0, ids, n, desc, sizeof(desc));
	TAP_CHECK(k0 && kt && strstr(desc, ",tail=16") && !strstr(desc, "demote"), "tail: %s",
	    desc);
	kd = ingest_opts(c, "demote=0.25", 1.0, ids, n, desc, sizeof(desc));
	TAP_CHECK(kd && strstr(desc, ",demote=0.25") && !strstr(desc, "tail"), "demote: %s", desc);
	for (l = 0; l < g_m->hp.n_layer; l++)
		for (g = 0; g < g_m->hp.n_head_kv; g++) {
			const struct eng_kv_layer *A = &k0->layer[l], *T = &kt->layer[l],
			    *D = &kd->layer[l];
			TAP_CHECK(A->len[g] == n && T->len[g] == n && D->len[g] == n, "all kept");
			for (u = 0; u < n; u++) {
				float a = A->score[A->off[g] + u], t = T->score[T->off[g] + u],
				    d = D->score[D->off[g] + u];
				if (u >= n - 16)
					TAP_CHECK(isinf(t) && t > 0, "(%d,%d) tail unit %lld scores %g", l, g,
					    (long long)u, t);
				else
					TAP_CHECK(!memcmp(&a, &t, sizeof(a)), "(%d,%d) unit %lld: %g, with "
					    "tail=16 %g", l, g, (long long)u, a, t);
				if (dem[u] && isfinite(a)) {
					float want = a * 0.25f;
					TAP_CHECK(!memcmp(&d, &want, sizeof(d)), "(%d,%d) structural unit %lld: "
					    "%g, demoted %g", l, g, (long long)u, a, d);
				} else {
					TAP_CHECK(!memcmp(&a, &d, sizeof(a)), "(%d,%d) unit %lld: %g, with "
					    "demote %g", l, g, (long long)u, a, d);
					n_same++;
				}
			}
		}
	TAP_CHECK(n_same > 0, "units compared");
	/* a quarter with tail=16 keeps the last 16 in every head */
	kc = ingest_opts(c, "tail=16", 0.25, ids, n, NULL, 0);
	TAP_CHECK(kc, "1/4 with tail");
	for (l = 0; l < g_m->hp.n_layer; l++)
		for (g = 0; g < g_m->hp.n_head_kv; g++) {
			const struct eng_kv_layer *L = &kc->layer[l];
			int64_t last = 0;
			for (u = 0; u < L->len[g]; u++)
				last += L->pos[L->off[g] + u] >= (uint32_t)(n - 16);
			TAP_CHECK(last == 16, "(%d,%d) holds %lld of the last 16", l, g, (long long)last);
		}
	TAP_CHECK(eng_policy_create_ratio(&p, "kvzip", "demote=1.5", 0.25, why, sizeof(why)) &&
	    eng_policy_create_ratio(&p, "kvzip", "demote=-0.1", 0.25, why, sizeof(why)) &&
	    eng_policy_create_ratio(&p, "kvzip", "tail=-1", 0.25, why, sizeof(why)) &&
	    eng_policy_create_ratio(&p, "kvzip", "tail=x", 0.25, why, sizeof(why)),
	    "bad tail and demote values are refused");
	free(uses);
	free(dem);
	free(ids);
	free(pre);
	eng_kv_free(kt);
	eng_kv_free(kd);
	eng_kv_free(kc);
	eng_ctx_free(c);
	return TAP_PASS;
}

/* A refit pool kr (the question dropped) through the codec in memory and
 * through a real LMDB store: both loads hold kr's biases and answer the
 * question (qids) with the logits of kr rounded to fp16, bit for bit. */
static enum tap_result
refit_stored(struct eng_kv *kr, struct eng_ctx *c, const int32_t *qids, int64_t nq)
{
	static const uint8_t doc[SNAP_ID_BYTES] = { 28 };
	char dir[] = "/tmp/kvsnap-refit-XXXXXX", prof[SNAP_MAX_PROFILE], why[256] = "";
	uint8_t pid[SNAP_ID_BYTES];
	struct store_opts so = { 0 };
	struct store *st = NULL;
	struct store_doc d;
	struct snap_header h;
	struct eng_kv *mem = NULL, *disk = NULL;
	size_t nv = (size_t)g_m->hp.n_vocab;
	float *la = malloc(nv * sizeof(float)), *lb = malloc(nv * sizeof(float)),
	      *lc = malloc(nv * sizeof(float));

	TAP_CHECK(la && lb && lc && mkdtemp(dir), "set-up");
	TAP_CHECK(snap_roundtrip(kr, g_m, SNAP_FP16, nq, &mem, why, sizeof(why)) == 0,
	    "round trip: %s", why);
	memset(&d, 0, sizeof(d));
	memcpy(d.doc_id, doc, SNAP_ID_BYTES);
	snprintf(d.source, sizeof(d.source), "test_kvzip");
	snprintf(prof, sizeof(prof), "test refit profile");
	memset(pid, 7, sizeof(pid));
	TAP_CHECK(store_open(&st, dir, &so, why, sizeof(why)) == 0, "store: %s", why);
	TAP_CHECK(snap_save(st, &d, kr, g_m->hp.n_head, eng_model_fingerprint(g_m), prof, pid,
	    SNAP_FP16, SNAP_ZLEVEL_DEFAULT, kr->next_pos, why, sizeof(why)) == 0, "save: %s", why);
	TAP_CHECK(snap_load(st, doc, pid, g_m, nq, &disk, &h, why, sizeof(why)) == 0, "load: %s",
	    why);
	/* fp16 is saved in version 4 (SNAP_FAST_VERSION); only the b-bit forms
	 * write version 5 (SNAP_BITS_VERSION) */
	TAP_CHECK(h.version == SNAP_FAST_VERSION && h.has_bias, "header: version %u, bias %d",
	    h.version, h.has_bias);
	TAP_CHECK(mem->has_bias && disk->has_bias && th_same_biases(kr, mem) &&
	    th_same_biases(kr, disk), "biases loaded bit for bit");
	eng_kv_round_fp16(kr);
	TAP_CHECK(!eng_forward(c, kr, qids, nq, NULL, la) && !eng_forward(c, mem, qids, nq, NULL, lb) &&
	    !eng_forward(c, disk, qids, nq, NULL, lc), "question forward");
	TAP_CHECK(!memcmp(la, lb, nv * sizeof(float)) && !memcmp(la, lc, nv * sizeof(float)),
	    "the loaded refit snapshots' logits differ from the pool's rounded to fp16");
	/* the biases are what makes them equal: without them the logits move */
	TAP_CHECK(!eng_kv_drop_tail(disk, nq), "drop the question");
	disk->has_bias = 0;
	TAP_CHECK(!eng_forward(c, disk, qids, nq, NULL, lc), "forward without the biases");
	TAP_CHECK(memcmp(la, lc, nv * sizeof(float)) != 0, "the biases change nothing");
	snap_header_free(&h);
	eng_kv_free(mem);
	eng_kv_free(disk);
	store_close(st);
	th_rm_rf(dir);
	free(la);
	free(lb);
	free(lc);
	return TAP_PASS;
}

static enum tap_result
test_refit(void)
{
	struct eng_kv *kf = NULL, *kc = NULL, *kr = NULL;
	struct eng_ctx *c = NULL;
	int32_t *ids = NULL, *qids = NULL;
	int64_t n, nq, u, nonzero = 0, vdiff = 0, hd;
	float *lf, *lc, *lr;
	char desc[512];
	int l, g;

	TAP_CHECK(!open_model(), "model");
	n = doc_ids(&ids);
	hd = g_m->hp.head_dim;
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	kf = all_kept(c, ids, n);
	kc = ingest_opts(c, "", 0.125, ids, n, NULL, 0);
	kr = ingest_opts(c, "refit=1", 0.125, ids, n, desc, sizeof(desc));
	TAP_CHECK(kf && kc && kr && strstr(desc, ",refit=1"), "ingests: %s", desc);
	TAP_CHECK(kr->has_bias && !kc->has_bias && !kf->has_bias, "has_bias");
	for (l = 0; l < g_m->hp.n_layer; l++)
		for (g = 0; g < g_m->hp.n_head_kv; g++) {
			const struct eng_kv_layer *C = &kc->layer[l], *R = &kr->layer[l];
			TAP_CHECK(C->len[g] == R->len[g] && C->len[g] < n, "(%d,%d) keeps %lld, refit %lld",
			    l, g, (long long)C->len[g], (long long)R->len[g]);
			for (u = 0; u < C->len[g]; u++) {
				int64_t a = C->off[g] + u, b = R->off[g] + u;
				float bias = R->bias[b];
				TAP_CHECK(C->pos[a] == R->pos[b] && !memcmp(C->k + a * hd, R->k + b * hd,
				    (size_t)hd * sizeof(float)), "(%d,%d) unit %lld: another unit", l, g,
				    (long long)u);
				TAP_CHECK(isfinite(bias) && bias >= (float)ENG_REFIT_BIAS_MIN - 1e-3f,
				    "(%d,%d) unit %lld: bias %g", l, g, (long long)u, bias);
				nonzero += bias != 0.0f;
				vdiff += memcmp(C->v + a * hd, R->v + b * hd, (size_t)hd * sizeof(float)) != 0;
			}
		}
	TAP_CHECK(nonzero > 0 && vdiff > 0, "%lld biases set, %lld values refit", (long long)nonzero,
	    (long long)vdiff);
	/* a question read on each: how far the next token's distribution moves
	 * from the full cache's (reported, not a pass mark: one question) */
	nq = eng_chat_question_ids(g_chat, "Who kept the logbook?", 21, &qids);
	lf = malloc((size_t)g_m->hp.n_vocab * sizeof(float));
	lc = malloc((size_t)g_m->hp.n_vocab * sizeof(float));
	lr = malloc((size_t)g_m->hp.n_vocab * sizeof(float));
	TAP_CHECK(nq > 0 && lf && lc && lr, "question");
	TAP_CHECK(!eng_forward(c, kf, qids, nq, NULL, lf) && !eng_forward(c, kc, qids, nq, NULL, lc) &&
	    !eng_forward(c, kr, qids, nq, NULL, lr), "question forward");
	tap_diag("KL(full || 1/8) %.4f, KL(full || 1/8 refit) %.4f",
	    th_kl_logits(lf, lc, g_m->hp.n_vocab), th_kl_logits(lf, lr, g_m->hp.n_vocab));
	TAP_CHECK(!eng_kv_drop_tail(kf, nq), "the shared pool as it was");
	TAP_CHECK(!eng_kv_drop_tail(kr, nq), "drop the question");
	TAP_CHECK(refit_stored(kr, c, qids, nq) == TAP_PASS, "refit snapshot");
	free(ids);
	free(qids);
	free(lf);
	free(lc);
	free(lr);
	eng_kv_free(kc);
	eng_kv_free(kr);
	eng_ctx_free(c);
	return TAP_PASS;
}

static enum tap_result
test_train_labels(void)
{
	struct eng_policy *p1 = NULL, *p4 = NULL;
	struct eng_train_example *ex = NULL;
	struct eng_kv *kv = NULL;
	struct eng_ctx *c = NULL;
	int32_t *ids = NULL, *pre = NULL;
	int64_t n, n_pre, u, i, n_sink0 = 0, n_kept = 0, n_neg = 0;
	char why[256];
	int l, g, rc;

	TAP_CHECK(!open_model(), "model");
	n = doc_ids(&ids);
	n_pre = eng_chat_doc_ids(g_chat, "", 0, &pre); /* the template prefix: kvzip's sinks */
	TAP_CHECK(n > 0 && n_pre > 0 && n_pre < n, "ids");
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	TAP_CHECK(!eng_policy_create_ratio(&p1, "kvzip", "", 1.0, why, sizeof(why)) &&
	    !eng_policy_bind(p1, g_m, why, sizeof(why)), "%s", why);
	rc = eng_train_collect(c, ids, n, NULL, 0, 0, g_tok, &ex);
	TAP_CHECK(!rc && ex->n_p == n && ex->n_a == 0, "features only: %s", eng_strerror(rc));
	rc = eng_train_label_kvzip(c, p1, ids, n, 64, ex);
	TAP_CHECK(!rc, "labels: %s", eng_strerror(rc));
	for (l = 0; l < g_m->hp.n_layer; l++)
		for (g = 0; g < g_m->hp.n_head_kv; g++)
			for (u = 0; u < n; u++) {
				float s = ex->s[((size_t)l * (size_t)g_m->hp.n_head_kv + (size_t)g) *
				    (size_t)n + (size_t)u];
				TAP_CHECK(isfinite(s) && s <= 0.0f, "label (%d,%d,%lld) = %g", l, g,
				    (long long)u, s);
				n_sink0 += u < n_pre - 1 && s == 0.0f;
				n_neg += s < 0.0f;
			}
	/* sinks=auto: the template prefix (checked short of its last token,
	 * which an empty text's ids may not share with a document's) */
	TAP_CHECK(n_sink0 >= (int64_t)g_m->hp.n_layer * g_m->hp.n_head_kv * (n_pre - 1),
	    "sinks are labelled log 1 = 0 (%lld)", (long long)n_sink0);
	TAP_CHECK(n_neg >= (int64_t)g_m->hp.n_layer * g_m->hp.n_head_kv * (n - n_pre),
	    "document units are below 0 (%lld)", (long long)n_neg);
	/* the same scores decide a real ingest: what a 1/4 ingest keeps carries
	 * exactly exp(label) (one segment, so the scores are final there) */
	TAP_CHECK(!eng_policy_create_ratio(&p4, "kvzip", "", 0.25, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p4, n, 64, 0)), "pool");
	TAP_CHECK(!(rc = eng_ingest(c, kv, p4, ids, n, 64, NULL)), "ingest: %s", eng_strerror(rc));
	for (l = 0; l < kv->n_layer; l++)
		for (g = 0; g < kv->n_head_kv; g++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			for (i = 0; i < L->len[g]; i++) {
				uint32_t pos = L->pos[L->off[g] + i];
				float sc = L->score[L->off[g] + i], lab = ex->s[((size_t)l *
				    (size_t)kv->n_head_kv + (size_t)g) * (size_t)n + pos];
				if (isinf(sc))
					continue; /* a sink */
				TAP_CHECK(lab == logf(sc), "(%d,%d) pos %u: label %.9g, ingest's log score "
				    "%.9g", l, g, pos, lab, logf(sc));
				n_kept++;
			}
		}
	TAP_CHECK(n_kept > 0, "%lld kept units compared", (long long)n_kept);
	TAP_CHECK(eng_train_label_kvzip(c, p4, ids, n, 64, ex) == ENG_ERR_ARG,
	    "a kvzip policy below ratio 1 is refused");
	TAP_CHECK(eng_train_label_kvzip(c, p1, ids, n - 1, 64, ex) == ENG_ERR_ARG,
	    "a length other than the example's is refused");
	free(ids);
	free(pre);
	eng_kv_free(kv);
	eng_train_example_free(ex);
	eng_ctx_free(c);
	eng_policy_free(p1);
	eng_policy_free(p4);
	return TAP_PASS;
}

/* ---- the last layer's unread output ------------------------------------- */

struct stat_log {
	int n_layer, n_head;
	int64_t stride;
	float *stat; /* (n_layer, n_head, stride): every layer's restricted maxima */
};

static int
stat_log_hook(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct stat_log *s = arg;
	int64_t w = info->stat_stride < s->stride ? info->stat_stride : s->stride;
	int h;
	(void)kv;
	for (h = 0; h < s->n_head; h++)
		memcpy(s->stat + ((size_t)layer * (size_t)s->n_head + (size_t)h) * (size_t)s->stride,
		    info->stat + (size_t)h * (size_t)info->stat_stride, (size_t)w * sizeof(float));
	return 0;
}

/* Whether two pools hold the same units bit for bit (keys both ways, values). */
static int
pools_equal(const struct eng_kv *a, const struct eng_kv *b)
{
	size_t hd = (size_t)a->head_dim, row;
	int l, m;
	for (l = 0; l < a->n_layer; l++)
		for (m = 0; m < a->n_head_kv; m++) {
			const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l];
			if (A->len[m] != B->len[m])
				return 0;
			row = (size_t)A->len[m] * hd * sizeof(float);
			if (memcmp(A->k + (size_t)A->off[m] * hd, B->k + (size_t)B->off[m] * hd, row) ||
			    memcmp(A->kr + (size_t)A->off[m] * hd, B->kr + (size_t)B->off[m] * hd, row) ||
			    memcmp(A->v + (size_t)A->off[m] * hd, B->v + (size_t)B->off[m] * hd, row))
				return 0;
		}
	return 1;
}

/* A chunk that wants no logits skips its last layer's attention product,
 * output projection and FFN (engine/run/forward.c): the cache, the last
 * logits and kvzip's statistics at every layer, the last included, are
 * bitwise those of the same chunks run whole (every logit wanted). */
static enum tap_result
test_unread_tail(void)
{
	const struct eng_hparams *hp;
	struct eng_kv *ka = NULL, *kb = NULL;
	struct eng_ctx *c = NULL;
	struct eng_fwd_hook hook;
	struct stat_log sa, sb;
	int32_t *ids = NULL;
	uint8_t *want;
	float *la, *lb, *lrow;
	int64_t n, lo, *dom;
	int rc, i;

	TAP_CHECK(!open_model(), "model");
	hp = &g_m->hp;
	n = doc_ids(&ids);
	lo = n / 2;
	want = malloc((size_t)n);
	la = malloc((size_t)hp->n_vocab * sizeof(float));
	lb = malloc((size_t)n * (size_t)hp->n_vocab * sizeof(float));
	lrow = malloc((size_t)hp->n_vocab * sizeof(float));
	dom = malloc((size_t)hp->n_layer * (size_t)hp->n_head_kv * sizeof(int64_t));
	TAP_CHECK(want && la && lb && lrow && dom, "oom");
	memset(want, 1, (size_t)n);
	TAP_CHECK(!eng_ctx_init(&c, g_m, 2, 64), "ctx");
	TAP_CHECK(!eng_kv_init(&ka, g_m, 2 * n) && !eng_kv_init(&kb, g_m, 2 * n), "pools");
	/* a prefill in chunks of 64: all but the last skip the tail in ka */
	rc = eng_forward(c, ka, ids, lo, NULL, la);
	TAP_CHECK(rc == 0, "prefill: %s", eng_strerror(rc));
	rc = eng_forward(c, kb, ids, lo, want, lb);
	TAP_CHECK(rc == 0, "prefill, every logit: %s", eng_strerror(rc));
	TAP_CHECK(!memcmp(la, lb + (size_t)(lo - 1) * (size_t)hp->n_vocab,
	    (size_t)hp->n_vocab * sizeof(float)), "the last logits differ");
	TAP_CHECK(pools_equal(ka, kb), "the caches differ after the prefill");
	/* a scoring chunk as kvzip's reconstruction runs it, with and without
	 * the last logits */
	for (i = 0; i < hp->n_layer * hp->n_head_kv; i++)
		dom[i] = lo / 2;
	sa.n_layer = sb.n_layer = hp->n_layer;
	sa.n_head = sb.n_head = hp->n_head;
	sa.stride = sb.stride = n;
	sa.stat = calloc((size_t)hp->n_layer * (size_t)hp->n_head * (size_t)n, sizeof(float));
	sb.stat = calloc((size_t)hp->n_layer * (size_t)hp->n_head * (size_t)n, sizeof(float));
	TAP_CHECK(sa.stat && sb.stat, "oom");
	memset(&hook, 0, sizeof(hook));
	hook.after_attn = stat_log_hook;
	hook.stat_from = 0;
	hook.dom_from = dom;
	hook.n_lead = 4;
	hook.arg = &sa;
	rc = eng_forward_chunk_hooked(c, ka, ids + lo, n - lo < 64 ? n - lo : 64, NULL, &hook);
	TAP_CHECK(rc == 0, "scoring chunk: %s", eng_strerror(rc));
	hook.arg = &sb;
	rc = eng_forward_chunk_hooked(c, kb, ids + lo, n - lo < 64 ? n - lo : 64, lrow, &hook);
	TAP_CHECK(rc == 0, "scoring chunk with logits: %s", eng_strerror(rc));
	TAP_CHECK(!memcmp(sa.stat, sb.stat, (size_t)hp->n_layer * (size_t)hp->n_head *
	    (size_t)n * sizeof(float)), "the statistics differ");
	for (i = 0; i < hp->n_head * (int)n; i++)
		if (sa.stat[(size_t)(hp->n_layer - 1) * (size_t)hp->n_head * (size_t)n + (size_t)i] >
		    0.0f)
			break;
	TAP_CHECK(i < hp->n_head * (int)n, "the last layer's statistics are all zero");
	TAP_CHECK(pools_equal(ka, kb), "the caches differ after the scoring chunk");
	free(sa.stat);
	free(sb.stat);
	free(ids);
	free(want);
	free(la);
	free(lb);
	free(lrow);
	free(dom);
	eng_kv_free(ka);
	eng_kv_free(kb);
	eng_ctx_free(c);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "keep_all_is_full", test_keep_all_is_full },
	{ "scores_by_hand", test_scores_by_hand },
	{ "select_global", test_select_global },
	{ "select_uniform", test_select_uniform },
	{ "select_adakv", test_select_adakv },
	{ "select_floor", test_select_floor },
	{ "budget_and_cancel", test_budget_and_cancel },
	{ "ratio", test_ratio },
	{ "tail_and_demote", test_tail_and_demote },
	{ "refit", test_refit },
	{ "train_labels", test_train_labels },
	{ "unread_tail", test_unread_tail },
};

static int
teardown(void)
{
	eng_kv_free(g_all);
	eng_chat_free(g_chat);
	eng_tok_free(g_tok);
	eng_model_close(g_m);
	return 0;
}

TAP_MAIN(NULL, teardown)
