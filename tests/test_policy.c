/*
 * test_policy.c: property tests of the KV cache pool, chunked ingest and the
 * eviction policies, through the public API only (engine.h), on a tiny
 * random Llama (tests/tiny_model.h: 2 layers, 4 query heads, 2 KV heads,
 * head_dim 8, vocabulary 64).
 *
 * Policies that eng_policy_create does not know are skipped; locret runs
 * with random retaining heads written by eng_heads_write.  Runs use one
 * thread (the model is too small to gain from more).
 *
 * Properties (spec/adakv.md §1, §2.2, §4.2-4.3, §6; spec/locret.md §8):
 *  - no-eviction equivalence: budget >= document length ⇒ every policy's
 *    ingest logits and 5-token continuation logits equal `full`'s: bit-exact
 *    when both cut the document into the same chunks (no observation window
 *    merge), else within EQ_REL_TOL relative (max |Δ| / max |full|), because
 *    the merged last chunk runs through sgemm with another row count;
 *  - cache bounds and layout after ingest, rows per head independent of n,
 *    continuations append one unit per head per token and move nothing;
 *  - positions strictly ascending; streaming/h2o/SnapKV-family/NaCl
 *    protected sets;
 *  - Ada-KV: α = 1 ≡ SnapKV (and ≡ PyramidKV with scorer=pyramid), exact
 *    layer totals, per-head floor ⌊α·(b − w)⌋;
 *  - PyramidKV: exact-mode schedule (recomputed here), equal heads;
 *  - determinism across runs (thread counts 1-3: reported, not failed, as
 *    the CPU kernels' sums depend on the thread split); a 2000-token
 *    document; a document beyond the context (Locret's slot positions
 *    stream through, original positions give ENG_ERR_CONTEXT); bad options
 *    and ingest misuse refused with a reason;
 *  - a selection oracle: a plain double-precision re-implementation of the
 *    forward pass and of §4.2 (chunked SnapKV / Ada-KV / PyramidKV, H2O,
 *    StreamingLLM) must reproduce the engine's retained sets exactly, its
 *    stored scores within ORC_SCORE_TOL and its logits within ORC_LOGIT_TOL;
 *    configurations whose cut falls within ORC_AMBIG_TOL of a near-tie are
 *    skipped (reported), since fp32 and fp64 may order those differently.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "tests/ada_split.h"
#include "tests/cache_copy.h"
#include "tests/helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define NL TINY_N_LAYER
#define NH TINY_N_HEAD_KV
#define NV TINY_N_VOCAB
#define HD TINY_HEAD_DIM
#define NCONT 5
#define WIN 32 /* the SnapKV family's default observation window */
#define THREADS 1 /* tiny model: threads only add overhead (determinism tests 1-3) */

#define EQ_REL_TOL 1e-5
#define ORC_LOGIT_TOL 1e-4  /* relative to max |logit| */
#define ORC_SCORE_TOL 1e-4  /* relative to the head's largest score */
#define ORC_AMBIG_TOL 3e-5  /* a cut closer than this (relative) is a near-tie */

#define EXPECT TAP_EXPECT /* a failed check: say where and why, then clean up */

static char g_path[256];
static struct eng_model *g_m;
static char g_why[512];

/* ------------------------------------------------------------------------ */
/* Documents                                                                 */

static const int32_t g_cont[NCONT] = { 7, 63, 0, 31, 12 };

/* ------------------------------------------------------------------------ */
/* Policy creation (locret gets the tiny model's random retaining heads)     */

static char g_heads[300]; /* locret sidecar for the tiny model, "" if none */

/* Random retaining heads (d_R = 16) for the tiny model, written with the
 * public eng_heads_write into a mkstemp path. */
static int
heads_tmp(char *path, size_t cap, uint64_t seed)
{
	enum { D_R = 16, D_IN = (TINY_N_HEAD + 2 * NH) * HD };
	static float w1[NL][D_R * D_IN], w2[NL][NH * D_R];
	const float *p1[NL], *p2[NL];
	struct eng_heads_info info;
	struct tiny_rng rng = { seed * 7919 + 1 };
	char why[256];
	int l, i;

	if (th_tmp(path, cap, "heads"))
		return -1;
	for (l = 0; l < NL; l++) {
		for (i = 0; i < D_R * D_IN; i++)
			w1[l][i] = (float)(0.3 * tiny_rng_normal(&rng));
		for (i = 0; i < NH * D_R; i++)
			w2[l][i] = (float)(0.5 * tiny_rng_normal(&rng));
		p1[l] = w1[l];
		p2[l] = w2[l];
	}
	info = tiny_heads_info(D_R, "random (tests/test_policy.c)");
	if (eng_heads_write(path, &info, p1, p2, KERN_TYPE_F32, why, sizeof(why))) {
		printf("# eng_heads_write: %s\n", why);
		unlink(path);
		path[0] = 0;
		return -1;
	}
	return 0;
}

/* eng_policy_create, with heads=<the tiny heads> put first for locret (and
 * the policy bound to the tiny model). */
static int
pcreate(struct eng_policy **p, const char *name, const char *opts, int64_t budget, char *why,
    size_t why_len)
{
	char buf[600];
	int rc;
	if (name && !strcmp(name, "locret") && g_heads[0]) {
		snprintf(buf, sizeof(buf), "heads=%s%s%s", g_heads, opts && *opts ? "," : "",
		    opts ? opts : "");
		opts = buf;
	}
	rc = eng_policy_create(p, name, opts, budget, why, why_len);
	if (!rc && name && !strcmp(name, "locret") &&
	    (rc = eng_locret_bind(*p, g_m, why, why_len))) {
		eng_policy_free(*p);
		*p = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Running a policy and snapshotting the cache                               */

struct run {
	float last[NV];
	float cont[NCONT * NV];
	struct cache_copy s;
	int64_t rph, max_chunk, n;
	char desc[256];
};

static void
run_free(struct run *r)
{
	cache_copy_free(&r->s);
}

/* Copy every head of every layer; check the pool's layout invariants
 * (spec/adakv.md §6 C.24) and the accessors.  0 or -1 (g_why set). */
static int
snap_take(struct cache_copy *s, const struct eng_kv *kv)
{
	int l, m;
	for (l = 0; l < NL; l++) {
		const struct eng_kv_layer *L = &kv->layer[l];
		int64_t tot = 0;
		for (m = 0; m < NH; m++) {
			int64_t n = L->len[m];
			if (n < 0 || n > L->cap[m] || L->off[m] < 0 ||
			    L->off[m] + L->cap[m] > kv->rows ||
			    (m + 1 < NH && L->off[m] + L->cap[m] > L->off[m + 1])) {
				snprintf(g_why, sizeof(g_why),
				    "layout: layer %d head %d off %lld len %lld cap %lld rows %lld", l, m,
				    (long long)L->off[m], (long long)n, (long long)L->cap[m],
				    (long long)kv->rows);
				return -1;
			}
			if (eng_kv_len(kv, l, m) != n) {
				snprintf(g_why, sizeof(g_why), "eng_kv_len disagrees with len[]");
				return -1;
			}
			tot += n;
			cache_copy_head(s, kv, l, m);
		}
		if (eng_kv_layer_units(kv, l) != tot) {
			snprintf(g_why, sizeof(g_why), "eng_kv_layer_units disagrees with len[]");
			return -1;
		}
	}
	return 0;
}

#define RUN_ECHECK (-1000) /* an invariant checked inside run_policy failed */

/* Create policy `name` (opts, budget), ingest doc[0..n) with `chunk` on
 * `threads` threads into a pool sized by eng_policy_rows_per_head, snapshot
 * the cache, then (n_cont > 0) continue with g_cont via eng_forward and
 * check that the continuation appended exactly one unit per head per token
 * at positions n, n+1, … and left every earlier unit bit-identical
 * (spec/adakv.md §6 C.19).  Returns 0 or an engine error (g_why says where);
 * *created receives whether eng_policy_create succeeded. */
static int
run_policy(struct run *r, const char *name, const char *opts, int64_t budget,
    const int32_t *doc, int64_t n, int64_t chunk, int threads, int n_cont, int *created)
{
	struct eng_policy *p = NULL;
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	uint8_t want[NCONT];
	int rc, l, m, i;

	memset(r, 0, sizeof(*r));
	g_why[0] = 0;
	if (created)
		*created = 0;
	rc = pcreate(&p, name, opts, budget, g_why, sizeof(g_why));
	if (rc)
		return rc;
	if (created)
		*created = 1;
	eng_policy_describe(p, r->desc, sizeof(r->desc));
	r->n = n;
	r->max_chunk = eng_policy_max_chunk(p, chunk);
	r->rph = eng_policy_rows_per_head(p, n, chunk, n_cont);
	if ((rc = eng_ctx_init(&c, g_m, threads, r->max_chunk))) {
		snprintf(g_why, sizeof(g_why), "eng_ctx_init: %s", eng_strerror(rc));
		goto out;
	}
	if ((rc = eng_kv_init(&kv, g_m, r->rph))) {
		snprintf(g_why, sizeof(g_why), "eng_kv_init(%lld): %s", (long long)r->rph,
		    eng_strerror(rc));
		goto out;
	}
	if ((rc = eng_ingest(c, kv, p, doc, n, chunk, r->last))) {
		snprintf(g_why, sizeof(g_why), "eng_ingest(%s, n=%lld, chunk=%lld): %s", r->desc,
		    (long long)n, (long long)chunk, eng_strerror(rc));
		goto out;
	}
	if (kv->rows != r->rph * NH || kv->next_pos != (uint32_t)n) {
		snprintf(g_why, sizeof(g_why), "pool rows %lld (want %lld), next_pos %u (want %lld)",
		    (long long)kv->rows, (long long)(r->rph * NH), kv->next_pos, (long long)n);
		rc = RUN_ECHECK;
		goto out;
	}
	if (snap_take(&r->s, kv)) {
		rc = RUN_ECHECK;
		goto out;
	}
	if (n_cont > 0) {
		memset(want, 1, sizeof(want));
		if ((rc = eng_forward(c, kv, g_cont, n_cont, want, r->cont))) {
			snprintf(g_why, sizeof(g_why), "eng_forward continuation after %s: %s", r->desc,
			    eng_strerror(rc));
			goto out;
		}
		for (l = 0; l < NL; l++)
			for (m = 0; m < NH; m++) {
				const struct eng_kv_layer *L = &kv->layer[l];
				int64_t n0 = r->s.len[l][m];
				if (L->len[m] != n0 + n_cont) {
					snprintf(g_why, sizeof(g_why),
					    "continuation: layer %d head %d holds %lld, want %lld", l, m,
					    (long long)L->len[m], (long long)(n0 + n_cont));
					rc = RUN_ECHECK;
					goto out;
				}
				for (i = 0; i < n_cont; i++)
					if (L->pos[L->off[m] + n0 + i] != (uint32_t)(n + i)) {
						snprintf(g_why, sizeof(g_why),
						    "continuation: layer %d head %d unit %lld at position %u, want %lld",
						    l, m, (long long)(n0 + i), L->pos[L->off[m] + n0 + i],
						    (long long)(n + i));
						rc = RUN_ECHECK;
						goto out;
					}
				if (memcmp(L->pos + L->off[m], r->s.pos[l][m], (size_t)n0 * 4) ||
				    memcmp(L->k + L->off[m] * HD, r->s.k[l][m], (size_t)n0 * HD * 4) ||
				    memcmp(L->v + L->off[m] * HD, r->s.v[l][m], (size_t)n0 * HD * 4)) {
					snprintf(g_why, sizeof(g_why),
					    "continuation changed earlier units of layer %d head %d", l, m);
					rc = RUN_ECHECK;
					goto out;
				}
			}
	}
out:
	eng_kv_free(kv);
	eng_ctx_free(c);
	eng_policy_free(p);
	if (rc)
		run_free(r);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Policy availability and per-policy expectations                           */

static const char *const g_policies[] = { "full", "streaming", "h2o", "snapkv", "pyramidkv",
	"adakv", "nacl", "locret" };
#define N_POLICIES (int)(sizeof(g_policies) / sizeof(g_policies[0]))

/* 1 if eng_policy_create knows `name` (with its default options). */
static int
policy_available(const char *name)
{
	static int known[N_POLICIES], probed;
	int i;
	if (!probed) {
		for (i = 0; i < N_POLICIES; i++) {
			struct eng_policy *p = NULL;
			char why[256] = "";
			int rc = pcreate(&p, g_policies[i], "", 64, why, sizeof(why));
			known[i] = rc == 0;
			if (rc)
				tap_diag("policy %s not available (%s: %s): its tests are skipped",
				    g_policies[i], eng_strerror(rc), why);
			eng_policy_free(p);
		}
		probed = 1;
	}
	for (i = 0; i < N_POLICIES; i++)
		if (!strcmp(g_policies[i], name))
			return known[i];
	return 0;
}

static int
is_snap_family(const char *name)
{
	return !strcmp(name, "snapkv") || !strcmp(name, "pyramidkv") || !strcmp(name, "adakv");
}

/* Strictly ascending positions below `n` in every head. */
static int
check_ascending(const struct cache_copy *s, int64_t n, const char *what)
{
	int l, m;
	int64_t i;
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++)
			for (i = 0; i < s->len[l][m]; i++) {
				uint32_t p = s->pos[l][m][i];
				if ((int64_t)p >= n || (i && p <= s->pos[l][m][i - 1])) {
					snprintf(g_why, sizeof(g_why),
					    "%s: layer %d head %d unit %lld position %u (previous %d, n %lld)",
					    what, l, m, (long long)i, p,
					    i ? (int)s->pos[l][m][i - 1] : -1, (long long)n);
					return -1;
				}
			}
	return 0;
}

/* 1 if head (l, m) holds position p. */
static int
holds(const struct cache_copy *s, int l, int m, uint32_t p)
{
	int64_t lo = 0, hi = s->len[l][m];
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		if (s->pos[l][m][mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->len[l][m] && s->pos[l][m][lo] == p;
}

/* Every head of every layer holds positions [from, to). */
static int
check_holds_range(const struct cache_copy *s, uint32_t from, uint32_t to, const char *what)
{
	int l, m;
	uint32_t p;
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++)
			for (p = from; p < to; p++)
				if (!holds(s, l, m, p)) {
					snprintf(g_why, sizeof(g_why), "%s: layer %d head %d lacks position %u",
					    what, l, m, p);
					return -1;
				}
	return 0;
}

/* PyramidKV's exact-mode schedule (spec/adakv.md §1.4), recomputed here:
 * b'_l for l in [0, L), integerized by largest remainder (ties: lower layer)
 * so that Σ b'_l = L·(b − w). */
static void
pyramid_schedule(int64_t b, int64_t w, double beta, int L, int64_t n, int64_t *out)
{
	double base = (double)(b - w), mn = base / beta, mx = 2.0 * base - mn, x[64], fr[64];
	int64_t total = 0, target = (int64_t)L * (b - w);
	int l;
	if (mx >= (double)(n - w)) {
		mx = (double)(n - w);
		mn = 2.0 * base - mx;
	}
	for (l = 0; l < L; l++) {
		x[l] = L > 1 ? mx - (double)l * (mx - mn) / (double)(L - 1) : base;
		out[l] = (int64_t)floor(x[l]);
		fr[l] = x[l] - (double)out[l];
		total += out[l];
	}
	while (total < target) {
		int best = 0;
		for (l = 1; l < L; l++)
			if (fr[l] > fr[best])
				best = l;
		out[best]++;
		fr[best] = -1.0;
		total++;
	}
}

/* Budget expectations after a complete ingest of n > b tokens (exact mode):
 * streaming, h2o, snapkv, nacl, locret (n_loc = 0, uniform): every head
 * min(b, n); adakv: Σ_m = H·b and
 * each head >= w + ⌊α·(b − w)⌋; pyramidkv: each head b'_l + w. */
static int
check_budget(const char *name, const struct cache_copy *s, int64_t b, int64_t n, int64_t w,
    double alpha, double beta)
{
	int l, m;
	if (!strcmp(name, "full")) {
		for (l = 0; l < NL; l++)
			for (m = 0; m < NH; m++)
				if (s->len[l][m] != n)
					goto bad;
		return 0;
	}
	if (!strcmp(name, "adakv")) {
		int64_t floor_ = w + (int64_t)floor(alpha * (double)(b - w) + 1e-9);
		for (l = 0; l < NL; l++) {
			int64_t tot = 0;
			for (m = 0; m < NH; m++) {
				tot += s->len[l][m];
				if (n > b && s->len[l][m] < floor_) {
					snprintf(g_why, sizeof(g_why),
					    "adakv alpha=%g: layer %d head %d holds %lld < w + floor(alpha*(b-w)) = %lld",
					    alpha, l, m, (long long)s->len[l][m], (long long)floor_);
					return -1;
				}
			}
			if (tot != NH * (n < b ? n : b)) {
				snprintf(g_why, sizeof(g_why), "adakv: layer %d holds %lld units, want %lld", l,
				    (long long)tot, (long long)(NH * (n < b ? n : b)));
				return -1;
			}
		}
		return 0;
	}
	if (!strcmp(name, "pyramidkv")) {
		int64_t sched[NL], sum = 0;
		pyramid_schedule(b, w, beta, NL, n, sched);
		for (l = 0; l < NL; l++) {
			int64_t want = sched[l] + w > n ? n : sched[l] + w;
			for (m = 0; m < NH; m++)
				if (s->len[l][m] != want) {
					snprintf(g_why, sizeof(g_why),
					    "pyramidkv b=%lld n=%lld beta=%g: layer %d head %d holds %lld, schedule says %lld",
					    (long long)b, (long long)n, beta, l, m, (long long)s->len[l][m],
					    (long long)want);
					return -1;
				}
			if (l && s->len[l][0] > s->len[l - 1][0]) {
				snprintf(g_why, sizeof(g_why), "pyramidkv: layer %d budget above layer %d", l,
				    l - 1);
				return -1;
			}
			sum += s->len[l][0] - w;
		}
		if (n > b && sum != (int64_t)NL * (b - w)) {
			snprintf(g_why, sizeof(g_why), "pyramidkv: Σ_l b'_l = %lld, want L(b-w) = %lld",
			    (long long)sum, (long long)(NL * (b - w)));
			return -1;
		}
		return 0;
	}
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++)
			if (s->len[l][m] != (n < b ? n : b))
				goto bad;
	return 0;
bad:
	snprintf(g_why, sizeof(g_why), "%s b=%lld n=%lld: layer %d head %d holds %lld units", name,
	    (long long)b, (long long)n, l, m, (long long)s->len[l][m]);
	return -1;
}

/* Same retained positions in every head. */
static int
same_sets(const struct cache_copy *a, const struct cache_copy *b, int *l_out, int *m_out)
{
	int l, m;
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++)
			if (a->len[l][m] != b->len[l][m] ||
			    memcmp(a->pos[l][m], b->pos[l][m], (size_t)a->len[l][m] * 4)) {
				*l_out = l;
				*m_out = m;
				return 0;
			}
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

static enum tap_result
test_tiny_model(void)
{
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	float logits[NV];
	int32_t *doc = tiny_doc(16, 1);
	int ok = 1, i, finite = 1, rc;

	EXPECT(g_m != NULL, "tiny model did not open: %s", g_why);
	EXPECT(g_m->hp.n_layer == NL && g_m->hp.n_head == TINY_N_HEAD && g_m->hp.n_head_kv == NH &&
	    g_m->hp.head_dim == HD && g_m->hp.n_vocab == NV && g_m->hp.n_embd == TINY_N_EMBD &&
	    g_m->hp.n_ff == TINY_N_FF && g_m->hp.n_ctx_train == TINY_N_CTX,
	    "hyperparameters %d %d %d %d %d", g_m->hp.n_layer, g_m->hp.n_head, g_m->hp.n_head_kv,
	    g_m->hp.head_dim, g_m->hp.n_vocab);
	EXPECT(eng_ctx_init(&c, g_m, 1, 16) == 0, "ctx");
	EXPECT(eng_kv_init(&kv, g_m, 32) == 0, "kv");
	rc = eng_forward(c, kv, doc, 16, NULL, logits);
	EXPECT(rc == 0, "forward: %s", eng_strerror(rc));
	for (i = 0; i < NV; i++)
		finite &= isfinite(logits[i]);
	EXPECT(finite, "non-finite logits");
	EXPECT(eng_kv_len(kv, 1, 1) == 16 && kv->next_pos == 16, "16 units");
out:
	eng_kv_free(kv);
	eng_ctx_free(c);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (a) spec/adakv.md §6 C.13, spec/locret.md §8.7. */
static enum tap_result
test_no_eviction_equivalence(void)
{
	static const int64_t chunks[] = { 8, 13, 64 }, budgets[] = { 200, 256 };
	const int64_t n = 200;
	int32_t *doc = tiny_doc(n, 2);
	struct run full, r;
	int ok = 1, ci, bi, pi, rc, created, n_exact = 0, n_tol = 0;
	double worst = 0.0;

	memset(&full, 0, sizeof(full));
	memset(&r, 0, sizeof(r));
	for (ci = 0; ci < 3; ci++) {
		int64_t chunk = chunks[ci];
		rc = run_policy(&full, "full", "", 0, doc, n, chunk, THREADS, NCONT, &created);
		EXPECT(rc == 0, "full chunk %lld: %s", (long long)chunk, g_why);
		EXPECT(check_budget("full", &full.s, 0, n, 0, 0, 0) == 0, "%s", g_why);
		EXPECT(check_ascending(&full.s, n, "full") == 0, "%s", g_why);
		for (pi = 1; pi < N_POLICIES; pi++) {
			const char *name = g_policies[pi];
			if (!policy_available(name))
				continue;
			for (bi = 0; bi < 2; bi++) {
				int l, m, same_cut;
				double d1, d2;
				rc = run_policy(&r, name, "", budgets[bi], doc, n, chunk, THREADS, NCONT, &created);
				EXPECT(rc == 0, "%s b=%lld chunk %lld: %s", name, (long long)budgets[bi],
				    (long long)chunk, g_why);
				/* every head holds the whole document */
				for (l = 0; l < NL; l++)
					for (m = 0; m < NH; m++)
						EXPECT(r.s.len[l][m] == n &&
						    !memcmp(r.s.pos[l][m], full.s.pos[l][m], (size_t)n * 4),
						    "%s b=%lld chunk %lld: layer %d head %d holds %lld of %lld",
						    r.desc, (long long)budgets[bi], (long long)chunk, l, m,
						    (long long)r.s.len[l][m], (long long)n);
				same_cut = r.max_chunk == full.max_chunk;
				d1 = th_rel_err(r.last, full.last, NV);
				d2 = th_rel_err(r.cont, full.cont, NCONT * NV);
				if (same_cut) {
					EXPECT(d1 == 0.0 && d2 == 0.0,
					    "%s chunk %lld (same chunk cuts as full): ingest logits rel diff %.3g, continuation %.3g; want bit-exact",
					    r.desc, (long long)chunk, d1, d2);
					for (l = 0; l < NL; l++)
						for (m = 0; m < NH; m++)
							EXPECT(!memcmp(r.s.k[l][m], full.s.k[l][m], (size_t)n * HD * 4) &&
							    !memcmp(r.s.v[l][m], full.s.v[l][m], (size_t)n * HD * 4),
							    "%s: stored K/V differ from full in layer %d head %d", r.desc,
							    l, m);
					n_exact++;
				} else {
					EXPECT(d1 <= EQ_REL_TOL && d2 <= EQ_REL_TOL,
					    "%s chunk %lld: ingest logits rel diff %.3g, continuation %.3g > %g",
					    r.desc, (long long)chunk, d1, d2, EQ_REL_TOL);
					worst = d1 > worst ? d1 : worst;
					worst = d2 > worst ? d2 : worst;
					n_tol++;
				}
				run_free(&r);
			}
		}
		run_free(&full);
	}
	tap_diag("%d runs bit-exact (same chunk cuts), %d within %g (merged last chunk; worst %.3g)",
	    n_exact, n_tol, EQ_REL_TOL, worst);
out:
	run_free(&full);
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (b) spec/adakv.md §4.2 memory bound, §6 C.15, E.34; spec/locret.md §8.8. */
static enum tap_result
test_cache_bounds(void)
{
	static const int64_t chunks[] = { 32, 64, 100 }, budgets[] = { 48, 64, 100 };
	const int64_t n = 500;
	int32_t *doc = tiny_doc(n, 3);
	struct run r;
	int ok = 1, ci, bi, pi, rc, created;

	memset(&r, 0, sizeof(r));
	for (pi = 0; pi < N_POLICIES; pi++) {
		const char *name = g_policies[pi];
		struct eng_policy *p = NULL;
		int64_t r1, r2, mc, w = is_snap_family(name) ? WIN : 0;
		if (!policy_available(name))
			continue;
		/* rows per head do not grow with the document (full: they must) */
		for (bi = 0; bi < 3; bi++) {
			rc = pcreate(&p, name, "", budgets[bi], g_why, sizeof(g_why));
			EXPECT(rc == 0, "%s: %s", name, g_why);
			r1 = eng_policy_rows_per_head(p, 1000, 64, 0);
			r2 = eng_policy_rows_per_head(p, 100000, 64, 0);
			mc = eng_policy_max_chunk(p, 64);
			EXPECT(mc >= 64 && mc < 64 + 1024, "%s: max chunk %lld for chunk 64", name,
			    (long long)mc);
			eng_policy_free(p);
			p = NULL;
			if (!strcmp(name, "full")) {
				EXPECT(r1 >= 1000 && r2 >= 100000, "full rows per head %lld, %lld",
				    (long long)r1, (long long)r2);
				continue;
			}
			EXPECT(r1 == r2, "%s b=%lld: rows per head %lld at n=1000 but %lld at n=100000",
			    name, (long long)budgets[bi], (long long)r1, (long long)r2);
			/* the documented bound n_kv·(b + chunk + w) per layer, i.e. b plus
			 * the ctx's max chunk (pyramid: layer 0's larger budget instead) */
			if (strcmp(name, "pyramidkv"))
				EXPECT(r1 <= budgets[bi] + mc,
				    "%s b=%lld chunk 64: %lld rows per head > b + max_chunk = %lld", name,
				    (long long)budgets[bi], (long long)r1, (long long)(budgets[bi] + mc));
			else /* b'_0 <= 2(b − w), plus the window and one rounding unit */
				EXPECT(r1 <= 2 * (budgets[bi] - WIN) + WIN + 1 + mc,
				    "pyramidkv b=%lld chunk 64: %lld rows per head", (long long)budgets[bi],
				    (long long)r1);
		}
		if (!strcmp(name, "full"))
			continue;
		for (ci = 0; ci < 3; ci++)
			for (bi = 0; bi < 3; bi++) {
				rc = run_policy(&r, name, "", budgets[bi], doc, n, chunks[ci], THREADS, NCONT,
				    &created);
				EXPECT(rc == 0, "%s b=%lld chunk %lld: %s", name, (long long)budgets[bi],
				    (long long)chunks[ci], g_why);
				EXPECT(check_budget(name, &r.s, budgets[bi], n, w, 0.2, 20.0) == 0, "%s",
				    g_why);
				EXPECT(check_ascending(&r.s, n, r.desc) == 0, "%s", g_why);
				run_free(&r);
			}
	}
	/* a long question/answer after ingest: n_extra larger than a chunk */
	for (pi = 1; pi < N_POLICIES; pi++) {
		const char *name = g_policies[pi];
		struct eng_policy *p = NULL;
		struct eng_ctx *c = NULL;
		struct eng_kv *kv = NULL;
		int32_t *extra = tiny_doc(150, 4);
		if (!policy_available(name)) {
			free(extra);
			continue;
		}
		rc = pcreate(&p, name, "", 64, g_why, sizeof(g_why));
		if (!rc)
			rc = eng_ctx_init(&c, g_m, THREADS, eng_policy_max_chunk(p, 32));
		if (!rc)
			rc = eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, n, 32, 150));
		if (!rc)
			rc = eng_ingest(c, kv, p, doc, n, 32, NULL);
		if (!rc)
			rc = eng_forward(c, kv, extra, 150, NULL, r.last);
		eng_kv_free(kv);
		eng_ctx_free(c);
		eng_policy_free(p);
		free(extra);
		EXPECT(rc == 0, "%s: ingest 500 (chunk 32) then 150 extra tokens: %s (%s)", name,
		    eng_strerror(rc), g_why);
	}
out:
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (c) spec/adakv.md §6 C.14, C.17, D.26, E.35; h2o's protected recent r. */
static enum tap_result
test_positions(void)
{
	static const struct {
		const char *name, *opts;
		int64_t b, chunk, protect_from_end, sinks; /* last positions kept; first kept */
		int exact;                                 /* streaming: exactly sinks ∪ recent */
	} cases[] = {
		{ "streaming", "", 64, 64, 60, 4, 1 },
		{ "streaming", "", 48, 32, 44, 4, 1 },
		{ "streaming", "sinks=0", 64, 50, 64, 0, 1 },
		{ "streaming", "sinks=9", 40, 33, 31, 9, 1 },
		{ "h2o", "", 64, 64, 32, 0, 0 },
		{ "h2o", "", 51, 40, 25, 0, 0 },
		{ "h2o", "recent=10", 64, 64, 10, 0, 0 },
		{ "h2o", "recent=0", 64, 64, 0, 0, 0 },
		{ "snapkv", "", 64, 64, WIN, 0, 0 },
		{ "snapkv", "", 100, 48, WIN, 0, 0 },
		{ "snapkv", "window=16,kernel=5,pool=avg", 40, 40, 16, 0, 0 },
		{ "snapkv", "window=8,kernel=1", 20, 100, 8, 0, 0 },
		{ "snapkv", "slack=20", 64, 64, WIN, 0, 0 },
		{ "snapkv", "", 64, 16, WIN, 0, 0 }, /* chunk < w: outside §4.2, must still hold */
		{ "adakv", "", 64, 20, WIN, 0, 0 },
		{ "pyramidkv", "", 64, 64, WIN, 0, 0 },
		{ "pyramidkv", "window=16,beta=4", 48, 37, 16, 0, 0 },
		{ "adakv", "", 64, 64, WIN, 0, 0 },
		{ "adakv", "alpha=0", 64, 41, WIN, 0, 0 },
		{ "adakv", "alpha=0,window=12", 30, 90, 12, 0, 0 },
		{ "adakv", "scorer=pyramid", 64, 64, WIN, 0, 0 },
		{ "adakv", "slack=16,alpha=0.5", 64, 64, WIN, 0, 0 },
		{ "nacl", "", 64, 64, 16, 4, 0 },
		{ "nacl", "n_sink=0,n_recent=30", 64, 64, 30, 0, 0 },
		{ "nacl", "n_sink=7,n_recent=3,window=20", 40, 100, 3, 7, 0 },
		{ "locret", "", 64, 64, 0, 0, 0 },
		{ "locret", "n_s=0", 40, 33, 0, 0, 0 },
		{ "locret", "positions=original", 64, 50, 0, 0, 0 },
	};
	const int64_t n = 400;
	int32_t *doc = tiny_doc(n, 5);
	struct run r;
	size_t i;
	int ok = 1, rc, created, l, m;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!policy_available(cases[i].name))
			continue;
		rc = run_policy(&r, cases[i].name, cases[i].opts, cases[i].b, doc, n, cases[i].chunk, 2,
		    NCONT, &created);
		EXPECT(rc == 0, "%s %s b=%lld chunk %lld: %s", cases[i].name, cases[i].opts,
		    (long long)cases[i].b, (long long)cases[i].chunk, g_why);
		EXPECT(check_ascending(&r.s, n, r.desc) == 0, "%s", g_why);
		EXPECT(check_holds_range(&r.s, (uint32_t)(n - cases[i].protect_from_end), (uint32_t)n,
		    r.desc) == 0, "%s (protected recent/window positions)", g_why);
		EXPECT(check_holds_range(&r.s, 0, (uint32_t)cases[i].sinks, r.desc) == 0,
		    "%s (sinks)", g_why);
		if (cases[i].exact)
			for (l = 0; l < NL; l++)
				for (m = 0; m < NH; m++)
					EXPECT(r.s.len[l][m] == cases[i].b, "%s: layer %d head %d holds %lld",
					    r.desc, l, m, (long long)r.s.len[l][m]);
		run_free(&r);
	}
out:
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (d) spec/adakv.md §2.2 properties, §4.3.3, §6 C.22, E.37. */
static enum tap_result
test_adakv(void)
{
	static const int64_t chunks[] = { 32, 64, 200 };
	static const double alphas[] = { 0.0, 0.2, 0.5, 0.9 };
	const int64_t n = 300;
	int32_t *doc = tiny_doc(n, 6);
	struct run a, s;
	char opts[128];
	int ok = 1, ci, ai, rc, created, l, m, differs = 0;

	memset(&a, 0, sizeof(a));
	memset(&s, 0, sizeof(s));
	if (!policy_available("adakv") || !policy_available("snapkv")) {
		free(doc);
		return TAP_SKIP;
	}
	for (ci = 0; ci < 3; ci++) {
		static const int64_t budgets[] = { 48, 64, 100 };
		int bi;
		for (bi = 0; bi < 3; bi++) {
			int64_t b = budgets[bi];
			/* α = 1 ≡ SnapKV: sets, scores, logits bit for bit */
			rc = run_policy(&s, "snapkv", "", b, doc, n, chunks[ci], THREADS, NCONT, &created);
			EXPECT(rc == 0, "snapkv: %s", g_why);
			rc = run_policy(&a, "adakv", "alpha=1", b, doc, n, chunks[ci], THREADS, NCONT, &created);
			EXPECT(rc == 0, "adakv: %s", g_why);
			EXPECT(same_sets(&a.s, &s.s, &l, &m),
			    "adakv alpha=1 vs snapkv (b=%lld, chunk %lld): layer %d head %d differ (%lld vs %lld units)",
			    (long long)b, (long long)chunks[ci], l, m, (long long)a.s.len[l][m],
			    (long long)s.s.len[l][m]);
			EXPECT(!memcmp(a.last, s.last, sizeof(a.last)) && !memcmp(a.cont, s.cont,
			    sizeof(a.cont)), "adakv alpha=1 vs snapkv: logits differ");
			run_free(&a);
			/* other α: exact layer totals and floors */
			for (ai = 0; ai < 4; ai++) {
				snprintf(opts, sizeof(opts), "alpha=%g", alphas[ai]);
				rc = run_policy(&a, "adakv", opts, b, doc, n, chunks[ci], THREADS, NCONT, &created);
				EXPECT(rc == 0, "adakv %s: %s", opts, g_why);
				EXPECT(check_budget("adakv", &a.s, b, n, WIN, alphas[ai], 20) == 0,
				    "chunk %lld: %s", (long long)chunks[ci], g_why);
				EXPECT(check_ascending(&a.s, n, a.desc) == 0, "%s", g_why);
				EXPECT(check_holds_range(&a.s, (uint32_t)(n - WIN), (uint32_t)n, a.desc) == 0,
				    "%s", g_why);
				for (l = 0; l < NL; l++)
					differs += a.s.len[l][0] != a.s.len[l][1];
				run_free(&a);
			}
			run_free(&s);
		}
	}
	tap_diag("adakv with alpha < 1 gave unequal head budgets in %d (layer, run) cases", differs);
	EXPECT(differs > 0, "adakv never moved budget between heads (suspicious)");
	/* α = 1 with the pyramid scorer ≡ PyramidKV */
	if (policy_available("pyramidkv"))
		for (ci = 0; ci < 3; ci++) {
			rc = run_policy(&s, "pyramidkv", "beta=5", 64, doc, n, chunks[ci], THREADS, NCONT,
			    &created);
			EXPECT(rc == 0, "pyramidkv: %s", g_why);
			rc = run_policy(&a, "adakv", "alpha=1,scorer=pyramid,beta=5", 64, doc, n, chunks[ci],
			    THREADS, NCONT, &created);
			EXPECT(rc == 0, "adakv pyramid: %s", g_why);
			EXPECT(same_sets(&a.s, &s.s, &l, &m),
			    "adakv alpha=1 scorer=pyramid vs pyramidkv (chunk %lld): layer %d head %d differ",
			    (long long)chunks[ci], l, m);
			EXPECT(!memcmp(a.last, s.last, sizeof(a.last)), "logits differ");
			/* Ada-Pyramid α < 1: layer totals H·(b'_l + w) */
			run_free(&a);
			rc = run_policy(&a, "adakv", "alpha=0.2,scorer=pyramid,beta=5", 64, doc, n,
			    chunks[ci], THREADS, NCONT, &created);
			EXPECT(rc == 0, "adakv pyramid: %s", g_why);
			{
				int64_t sched[NL];
				pyramid_schedule(64, WIN, 5.0, NL, n, sched);
				for (l = 0; l < NL; l++)
					EXPECT(a.s.len[l][0] + a.s.len[l][1] == NH * (sched[l] + WIN),
					    "ada-pyramid chunk %lld: layer %d holds %lld, want %lld",
					    (long long)chunks[ci], l, (long long)(a.s.len[l][0] + a.s.len[l][1]),
					    (long long)(NH * (sched[l] + WIN)));
			}
			run_free(&a);
			run_free(&s);
		}
out:
	run_free(&a);
	run_free(&s);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (e) spec/adakv.md §1.4, §6 D.29. */
static enum tap_result
test_pyramidkv(void)
{
	static const struct {
		int64_t n, b, chunk;
		double beta;
	} cases[] = {
		{ 300, 64, 64, 20 }, { 300, 100, 50, 20 }, { 300, 48, 32, 2 }, { 300, 64, 64, 1000 },
		{ 90, 64, 64, 20 },  /* clamp: max >= n - w */
		{ 120, 80, 40, 20 }, /* clamp */
		{ 1000, 40, 64, 20 }, { 257, 77, 33, 3.5 },
	};
	struct run r;
	size_t i;
	char opts[64];
	int ok = 1, rc, created;
	int32_t *doc = NULL;

	memset(&r, 0, sizeof(r));
	if (!policy_available("pyramidkv"))
		return TAP_SKIP;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t sched[NL];
		doc = tiny_doc(cases[i].n, 7 + i);
		snprintf(opts, sizeof(opts), "beta=%g", cases[i].beta);
		rc = run_policy(&r, "pyramidkv", opts, cases[i].b, doc, cases[i].n, cases[i].chunk, 2,
		    NCONT, &created);
		EXPECT(rc == 0, "pyramidkv %s b=%lld n=%lld: %s", opts, (long long)cases[i].b,
		    (long long)cases[i].n, g_why);
		EXPECT(check_budget("pyramidkv", &r.s, cases[i].b, cases[i].n, WIN, 0, cases[i].beta) ==
		    0, "%s", g_why);
		EXPECT(check_ascending(&r.s, cases[i].n, r.desc) == 0, "%s", g_why);
		EXPECT(check_holds_range(&r.s, (uint32_t)(cases[i].n - WIN), (uint32_t)cases[i].n,
		    r.desc) == 0, "%s", g_why);
		pyramid_schedule(cases[i].b, WIN, cases[i].beta, NL, cases[i].n, sched);
		tap_diag("pyramidkv n=%lld b=%lld beta=%g: b'_l = %lld, %lld", (long long)cases[i].n,
		    (long long)cases[i].b, cases[i].beta, (long long)sched[0], (long long)sched[1]);
		run_free(&r);
		free(doc);
		doc = NULL;
	}
out:
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (f) spec/adakv.md §6 C.25, spec/locret.md §8.16. */
static enum tap_result
test_determinism(void)
{
	static const char *const opts[] = { "", "", "", "", "", "alpha=0", "", "" };
	const int64_t n = 333;
	int32_t *doc = tiny_doc(n, 8);
	struct run a, b;
	int ok = 1, pi, rc, created, l, m, set_diff_threads = 0;
	double logit_diff_threads = 0.0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	for (pi = 0; pi < N_POLICIES; pi++) {
		const char *name = g_policies[pi];
		int t;
		if (!policy_available(name))
			continue;
		rc = run_policy(&a, name, opts[pi], 64, doc, n, 50, 2, NCONT, &created);
		EXPECT(rc == 0, "%s: %s", name, g_why);
		rc = run_policy(&b, name, opts[pi], 64, doc, n, 50, 2, NCONT, &created);
		EXPECT(rc == 0, "%s: %s", name, g_why);
		EXPECT(same_sets(&a.s, &b.s, &l, &m), "%s: two runs differ in layer %d head %d", a.desc,
		    l, m);
		EXPECT(!memcmp(a.last, b.last, sizeof(a.last)) && !memcmp(a.cont, b.cont,
		    sizeof(a.cont)), "%s: two runs give different logits", a.desc);
		for (l = 0; l < NL; l++)
			for (m = 0; m < NH; m++)
				EXPECT(!memcmp(a.s.score[l][m], b.s.score[l][m], (size_t)a.s.len[l][m] * 4),
				    "%s: two runs store different scores in layer %d head %d", a.desc, l, m);
		run_free(&b);
		/* thread counts: same retained sets (logits may differ in the last bits) */
		for (t = 1; t <= 3; t += 2) {
			rc = run_policy(&b, name, opts[pi], 64, doc, n, 50, t, NCONT, &created);
			EXPECT(rc == 0, "%s: %s", name, g_why);
			if (!same_sets(&a.s, &b.s, &l, &m)) {
				printf("# report: %s: %d threads vs 2 threads: retained sets differ in layer %d head %d\n",
				    a.desc, t, l, m);
				set_diff_threads++;
			}
			logit_diff_threads = fmax(logit_diff_threads, th_rel_err(b.last, a.last, NV));
			run_free(&b);
		}
		run_free(&a);
	}
	/* spec/adakv.md §6 C.25: the same sets on every thread count.  The CPU
	 * kernels cut work into fixed blocks and reduce statistics in a fixed
	 * order, so results are bit-identical whatever the thread count. */
	tap_diag("metric: thread counts 1/2/3: worst ingest-logit rel diff %.3g; %d (policy, "
	    "thread count) pairs retained other sets than 2 threads",
	    logit_diff_threads, set_diff_threads);
	EXPECT(set_diff_threads == 0 && logit_diff_threads == 0.0,
	    "results depend on the thread count");
out:
	run_free(&a);
	run_free(&b);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (g) a document far longer than budget + chunk. */
static enum tap_result
test_long_document(void)
{
	const int64_t n = 2000, n_long = TINY_N_CTX + 904, b = 64, chunk = 64;
	int32_t *doc = tiny_doc(n, 9);
	struct run r;
	int ok = 1, pi, rc, created;

	memset(&r, 0, sizeof(r));
	for (pi = 1; pi < N_POLICIES; pi++) {
		const char *name = g_policies[pi];
		int64_t w = is_snap_family(name) ? WIN : 0;
		if (!policy_available(name))
			continue;
		rc = run_policy(&r, name, "", b, doc, n, chunk, THREADS, NCONT, &created);
		EXPECT(rc == 0, "%s: %s", name, g_why);
		EXPECT(r.rph < 4 * (b + chunk), "%s: %lld rows per head for b=%lld chunk %lld", r.desc,
		    (long long)r.rph, (long long)b, (long long)chunk);
		EXPECT(check_budget(name, &r.s, b, n, w, 0.2, 20.0) == 0, "%s", g_why);
		EXPECT(check_ascending(&r.s, n, r.desc) == 0, "%s", g_why);
		run_free(&r);
	}
	/* Beyond the model's context (4096): slot positions (locret's default)
	 * stream through; original positions are refused with ENG_ERR_CONTEXT
	 * (spec/locret.md §8.10, spec/adakv.md §0). */
	free(doc);
	doc = tiny_doc(n_long, 11);
	for (pi = 1; pi < N_POLICIES; pi++) {
		const char *name = g_policies[pi];
		if (!policy_available(name))
			continue;
		rc = run_policy(&r, name, "", b, doc, n_long, chunk, THREADS, NCONT, &created);
		if (!strcmp(name, "locret")) {
			EXPECT(rc == 0, "locret (slot positions), n=%lld > context: %s", (long long)n_long,
			    g_why);
			EXPECT(check_budget(name, &r.s, b, n_long, 0, 0, 0) == 0, "%s", g_why);
			EXPECT(check_ascending(&r.s, n_long, r.desc) == 0, "%s", g_why);
		} else {
			EXPECT(rc == ENG_ERR_CONTEXT, "%s, n=%lld > context %d: %s (want %s)", name,
			    (long long)n_long, TINY_N_CTX, rc ? eng_strerror(rc) : "accepted",
			    eng_strerror(ENG_ERR_CONTEXT));
		}
		run_free(&r);
	}
out:
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* (h) option parsing: every bad input is refused with a reason. */
static enum tap_result
test_bad_options(void)
{
	static const struct {
		const char *name, *opts;
		int64_t b;
	} bad[] = {
		{ "nosuch", "", 64 },
		{ NULL, "", 64 },
		{ "", "", 64 },
		{ "SnapKV", "", 64 },
		{ "snapkv", "bogus=1", 64 },
		{ "snapkv", "window", 64 },
		{ "snapkv", "=5", 64 },
		{ "snapkv", "window=32", 32 },
		{ "snapkv", "", 32 },
		{ "snapkv", "", 10 },
		{ "snapkv", "window=16", 16 },
		{ "snapkv", "kernel=4", 64 },
		{ "snapkv", "kernel=0", 64 },
		{ "snapkv", "kernel=-3", 64 },
		{ "snapkv", "pool=min", 64 },
		{ "snapkv", "pool=", 64 },
		{ "snapkv", "window=-1", 64 },
		{ "snapkv", "window=0", 64 },
		{ "snapkv", "window=abc", 64 },
		{ "snapkv", "window=", 64 },
		{ "snapkv", "window=12x", 64 },
		{ "snapkv", "window=99999999999999999999999", 64 },
		{ "snapkv", "slack=-1", 64 },
		{ "snapkv", "", 0 },
		{ "snapkv", "", -7 },
		{ "snapkv", "alpha=0.5", 64 },
		{ "pyramidkv", "beta=0.5", 64 },
		{ "pyramidkv", "beta=abc", 64 },
		{ "pyramidkv", "alpha=0.5", 64 },
		{ "pyramidkv", "", 32 },
		{ "adakv", "alpha=1.5", 64 },
		{ "adakv", "alpha=-0.1", 64 },
		{ "adakv", "alpha=nan", 64 },
		{ "adakv", "alpha=inf", 64 },
		{ "adakv", "scorer=foo", 64 },
		{ "adakv", "window=64", 64 },
		{ "adakv", "kernel=2", 64 },
		{ "streaming", "sinks=64", 64 },
		{ "streaming", "sinks=-1", 64 },
		{ "streaming", "window=4", 64 },
		{ "streaming", "", 0 },
		{ "h2o", "recent=64", 64 },
		{ "h2o", "recent=x", 64 },
		{ "h2o", "", -1 },
		{ "h2o", "sinks=4", 64 },
		{ "full", "x=1", 0 },
		{ "full", "window=32", 0 },
		{ "nacl", "rho=2", 64 },
		{ "nacl", "noise=x", 64 },
		{ "nacl", "temp=0", 64 },
		{ "nacl", "window=0", 64 },
		{ "nacl", "bogus=1", 64 },
		{ "nacl", "", 0 },
		{ "locret", "n_s=64", 64 },
		{ "locret", "alloc=adakv", 64 },
		{ "locret", "positions=x", 64 },
		{ "locret", "heads=", 64 },
		{ "locret", "heads=/nonexistent/kvsnap-heads.gguf", 64 },
		{ "locret", "", 0 },
	};
	static const struct {
		const char *name, *opts;
		int64_t b;
	} good[] = {
		{ "full", "", 0 },
		{ "full", "", 100 },
		{ "streaming", "sinks=0", 1 },
		{ "h2o", "recent=0", 1 },
		{ "snapkv", "window=1,kernel=1", 2 },
		{ "snapkv", "window=16,kernel=5,pool=avg,slack=8", 17 },
		{ "pyramidkv", "beta=1", 33 },
		{ "adakv", "alpha=0,scorer=pyramid,beta=7.5", 64 },
		{ "adakv", "alpha=1", 33 },
		{ "nacl", "rho=0.5,seed=3,noise=fresh", 64 },
		{ "locret", "n_s=10", 64 },
		{ "locret", "positions=original,alloc=adakv,alpha=0.3", 64 },
	};
	size_t i;
	int ok = 1, rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct eng_policy *p = (struct eng_policy *)&ok; /* must be reset */
		char why[256];
		char tiny[6];
		const char *name = bad[i].name;
		if (name && *name && strcmp(name, "nosuch") && strcmp(name, "SnapKV") &&
		    !policy_available(name))
			continue;
		memset(why, 0, sizeof(why));
		rc = pcreate(&p, name, bad[i].opts, bad[i].b, why, sizeof(why));
		EXPECT(rc < 0, "policy %s opts '%s' b=%lld accepted", name ? name : "(null)",
		    bad[i].opts, (long long)bad[i].b);
		EXPECT(p == NULL, "policy %s opts '%s': *out not NULL on failure", name ? name : "(null)",
		    bad[i].opts);
		EXPECT(why[0] != 0, "policy %s opts '%s' b=%lld: empty reason (%s)",
		    name ? name : "(null)", bad[i].opts, (long long)bad[i].b, eng_strerror(rc));
		/* no reason buffer, or a tiny one: no crash, NUL-terminated */
		p = NULL;
		EXPECT(pcreate(&p, name, bad[i].opts, bad[i].b, NULL, 0) < 0 && !p,
		    "without a reason buffer");
		memset(tiny, 'x', sizeof(tiny));
		EXPECT(pcreate(&p, name, bad[i].opts, bad[i].b, tiny, 4) < 0 && !p &&
		    memchr(tiny, 0, 4) && tiny[4] == 'x', "with a 4-byte reason buffer");
	}
	/* locret without its heads */
	if (policy_available("locret")) {
		struct eng_policy *p = NULL;
		char why[256] = "";
		EXPECT(eng_policy_create(&p, "locret", "n_s=4", 64, why, sizeof(why)) < 0 && !p &&
		    why[0], "locret without heads= accepted");
	}
	/* valid ones: describe() round-trips through create() */
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct eng_policy *p = NULL, *q = NULL;
		char why[256] = "", d1[256], d2[256], *colon, *opts, *comma;
		long long b;
		size_t len;
		if (!policy_available(good[i].name))
			continue;
		rc = pcreate(&p, good[i].name, good[i].opts, good[i].b, why, sizeof(why));
		EXPECT(rc == 0 && p, "policy %s '%s' b=%lld refused: %s", good[i].name, good[i].opts,
		    (long long)good[i].b, why);
		EXPECT(!strcmp(eng_policy_name(p), good[i].name), "name %s", eng_policy_name(p));
		len = eng_policy_describe(p, d1, sizeof(d1));
		EXPECT(len == strlen(d1) && len < sizeof(d1), "describe length %zu", len);
		EXPECT(eng_policy_describe(p, NULL, 0) == len, "describe(NULL, 0) length");
		{
			char small[8];
			EXPECT(eng_policy_describe(p, small, sizeof(small)) == len &&
			    !strncmp(small, d1, sizeof(small) - 1) && small[7] == 0,
			    "describe truncation");
		}
		/* "name:budget=B,k=v,…" → create(name, "k=v,…", B) */
		colon = strchr(d1, ':');
		EXPECT(colon && !strncmp(colon + 1, "budget=", 7), "describe format '%s'", d1);
		*colon = 0;
		b = strtoll(colon + 8, &comma, 10);
		opts = *comma == ',' ? comma + 1 : comma;
		EXPECT(b == good[i].b, "described budget %lld", b);
		rc = eng_policy_create(&q, d1, opts, b, why, sizeof(why));
		EXPECT(rc == 0, "re-creating from description '%s' '%s': %s", d1, opts, why);
		eng_policy_describe(q, d2, sizeof(d2));
		*colon = ':';
		EXPECT(!strcmp(d1, d2), "describe round trip: '%s' vs '%s'", d1, d2);
		eng_policy_free(p);
		eng_policy_free(q);
	}
out:
	return ok ? TAP_PASS : TAP_FAIL;
}

/* Misuse of eng_ingest is refused, not crashed on. */
static enum tap_result
test_ingest_misuse(void)
{
	struct eng_policy *p = NULL;
	struct eng_ctx *c = NULL, *small = NULL;
	struct eng_kv *kv = NULL;
	int32_t *doc = tiny_doc(300, 10);
	float logits[NV];
	int ok = 1, rc;

	if (!policy_available("snapkv")) {
		free(doc);
		return TAP_SKIP;
	}
	EXPECT(eng_policy_create(&p, "snapkv", "", 64, g_why, sizeof(g_why)) == 0, "%s", g_why);
	EXPECT(eng_ctx_init(&c, g_m, THREADS, eng_policy_max_chunk(p, 64)) == 0, "ctx");
	EXPECT(eng_ctx_init(&small, g_m, THREADS, 64) == 0, "ctx");
	EXPECT(eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, 300, 64, 0)) == 0, "kv");
	/* a ctx too small for chunk + window */
	rc = eng_ingest(small, kv, p, doc, 300, 64, logits);
	EXPECT(rc < 0, "ingest with max_chunk %d < chunk + w - 1 accepted", 64);
	EXPECT(eng_kv_layer_units(kv, 0) == 0 && kv->next_pos == 0, "failed ingest touched the cache");
	EXPECT(eng_ingest(c, kv, p, doc, 0, 64, logits) < 0, "n = 0 accepted");
	EXPECT(eng_ingest(c, kv, p, doc, 300, 0, logits) < 0, "chunk = 0 accepted");
	doc[17] = NV; /* out of the vocabulary */
	EXPECT(eng_ingest(c, kv, p, doc, 300, 64, logits) == ENG_ERR_TOKEN, "bad token accepted");
	doc[17] = 3;
	eng_kv_clear(kv);
	EXPECT(eng_ingest(c, kv, p, doc, 300, 64, logits) == 0, "ingest");
	/* a second ingest into a non-empty cache */
	EXPECT(eng_ingest(c, kv, p, doc, 300, 64, logits) < 0, "ingest into a non-empty cache");
	eng_kv_free(kv);
	kv = NULL;
	/* a pool too small for the document's chunks */
	EXPECT(eng_kv_init(&kv, g_m, 40) == 0, "kv");
	rc = eng_ingest(c, kv, p, doc, 300, 64, logits);
	EXPECT(rc < 0, "ingest into a 40-row-per-head pool accepted");
out:
	eng_kv_free(kv);
	eng_ctx_free(c);
	eng_ctx_free(small);
	eng_policy_free(p);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* ------------------------------------------------------------------------ */
/* Selection oracle: the forward pass and §4.2 in plain double precision     */

enum orc_kind { ORC_STREAMING, ORC_H2O, ORC_SNAPKV, ORC_PYRAMID, ORC_ADAKV };

struct orc_policy {
	enum orc_kind kind;
	int64_t b, w, kp, slack, sinks, recent;
	int avg, ada_pyramid;
	double alpha, beta;
};

struct orc_head {
	int64_t n;
	uint32_t *pos;
	double *k, *v, *score;
};

struct orc {
	struct orc_head h[NL][NH];
	double logits[NV];
	double min_gap; /* smallest relative gap at any cut (1 = none) */
	int n_clamp;    /* Ada-KV capacity clamps (§4.2) that fired */
	char gap_at[160];
};

static void
orc_free(struct orc *o)
{
	int l, m;
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++) {
			free(o->h[l][m].pos);
			free(o->h[l][m].k);
			free(o->h[l][m].v);
			free(o->h[l][m].score);
		}
	memset(o, 0, sizeof(*o));
}

static void
orc_matvec(const struct kern_mat *w, const double *x, double *y)
{
	const float *d = w->data;
	int64_t r, c;
	for (r = 0; r < w->rows; r++) {
		double acc = 0.0;
		for (c = 0; c < w->cols; c++)
			acc += (double)d[r * w->cols + c] * x[c];
		y[r] = acc;
	}
}

static void
orc_rmsnorm(const double *x, const float *w, double *y, int n, double eps)
{
	double ss = 0.0;
	int i;
	for (i = 0; i < n; i++)
		ss += x[i] * x[i];
	ss = 1.0 / sqrt(ss / n + eps);
	for (i = 0; i < n; i++)
		y[i] = x[i] * ss * (double)w[i];
}

/* RoPE on adjacent pairs.  The angle follows the engine's (and llama.cpp's)
 * float recurrence θ_{i+1} = θ_i · base^(−2/d) so that angles agree to the
 * last bit; sin and cos in double. */
static void
orc_rope(double *x, int n_head, uint32_t p, float base)
{
	float theta = (float)p, scale = powf(base, -2.0f / (float)HD);
	double cs[HD];
	int i, h;
	for (i = 0; i < HD / 2; i++) {
		cs[2 * i] = cos((double)theta);
		cs[2 * i + 1] = sin((double)theta);
		theta *= scale;
	}
	for (h = 0; h < n_head; h++)
		for (i = 0; i < HD / 2; i++) {
			double x0 = x[h * HD + 2 * i], x1 = x[h * HD + 2 * i + 1];
			x[h * HD + 2 * i] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
			x[h * HD + 2 * i + 1] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
		}
}

/* Note a cut between two ranked scores: the relative gap (exact ties are
 * decided by position identically in both implementations and skipped). */
static void
orc_gap(struct orc *o, double kept, double dropped, double scale, const char *what, int l,
    int m)
{
	double g;
	if (kept == dropped)
		return;
	g = fabs(kept - dropped) / (scale > 1e-300 ? scale : 1e-300);
	if (g < o->min_gap) {
		o->min_gap = g;
		snprintf(o->gap_at, sizeof(o->gap_at), "%s layer %d head %d: %.9g vs %.9g", what, l, m,
		    kept, dropped);
	}
}

struct orc_rank {
	double s;
	uint32_t pos;
	int head;
	int64_t idx;
};

static int
orc_rank_cmp(const void *a, const void *b)
{
	const struct orc_rank *x = a, *y = b;
	if (x->s != y->s)
		return x->s > y->s ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->head > y->head) - (x->head < y->head);
}

/* Keep in head (l, m) the units flagged in keep[0..n) (ascending). */
static void
orc_compact(struct orc_head *h, const uint8_t *keep)
{
	int64_t i, j = 0;
	for (i = 0; i < h->n; i++)
		if (keep[i]) {
			h->pos[j] = h->pos[i];
			h->score[j] = h->score[i];
			memmove(h->k + j * HD, h->k + i * HD, HD * sizeof(double));
			memmove(h->v + j * HD, h->v + i * HD, HD * sizeof(double));
			j++;
		}
	h->n = j;
}

/* Eviction of layer l after its attention (spec/adakv.md §4.2, §1.1-1.2):
 * stat[m][u] holds the group-mean Σ of probabilities over the chunk queries
 * the policy asked for. */
static void
orc_evict(struct orc *o, const struct orc_policy *P, int l, double *const *stat, uint32_t e,
    int final, int64_t n_doc)
{
	struct orc_rank *rk[NH], *all = NULL;
	uint8_t *keep[NH];
	int64_t n_cand[NH], a[NH], tot_cand = 0, i, b_sel;
	int m;

	for (m = 0; m < NH; m++) {
		keep[m] = calloc((size_t)o->h[l][m].n + 1, 1);
		rk[m] = calloc((size_t)o->h[l][m].n + 1, sizeof(struct orc_rank));
		if (!keep[m] || !rk[m])
			abort();
	}
	if (P->kind == ORC_STREAMING) {
		for (m = 0; m < NH; m++) {
			struct orc_head *h = &o->h[l][m];
			int64_t n_sink = 0;
			for (i = 0; i < h->n; i++)
				n_sink += h->pos[i] < (uint32_t)P->sinks;
			for (i = 0; i < h->n; i++)
				keep[m][i] = h->n <= P->b || h->pos[i] < (uint32_t)P->sinks ||
				    i >= h->n - (P->b - n_sink);
		}
		goto compact;
	}
	if (P->kind == ORC_H2O) {
		uint32_t rec_from = e > (uint32_t)P->recent ? e - (uint32_t)P->recent : 0;
		for (m = 0; m < NH; m++) {
			struct orc_head *h = &o->h[l][m];
			int64_t nc = 0, heavy = P->b - P->recent;
			for (i = 0; i < h->n; i++)
				h->score[i] += stat[m][i];
			if (h->n <= P->b) {
				memset(keep[m], 1, (size_t)h->n);
				continue;
			}
			for (i = 0; i < h->n; i++) {
				if (h->pos[i] >= rec_from) {
					keep[m][i] = 1;
					continue;
				}
				rk[m][nc].s = h->score[i];
				rk[m][nc].pos = h->pos[i];
				rk[m][nc].idx = i;
				nc++;
			}
			qsort(rk[m], (size_t)nc, sizeof(struct orc_rank), orc_rank_cmp);
			if (heavy > nc)
				heavy = nc;
			for (i = 0; i < heavy; i++)
				keep[m][rk[m][i].idx] = 1;
			if (heavy < nc && heavy > 0)
				orc_gap(o, rk[m][heavy - 1].s, rk[m][heavy].s, rk[m][0].s, "h2o", l, m);
		}
		goto compact;
	}
	/* SnapKV family: candidates are units before the window [e − w, e) */
	{
		uint32_t win_from = e > (uint32_t)P->w ? e - (uint32_t)P->w : 0;
		int64_t r = P->kp / 2;
		if (P->kind == ORC_PYRAMID || (P->kind == ORC_ADAKV && P->ada_pyramid)) {
			int64_t sched[NL];
			pyramid_schedule(P->b, P->w, P->beta, NL, n_doc, sched);
			b_sel = sched[l];
		} else {
			b_sel = P->b - P->w;
		}
		b_sel += final ? 0 : P->slack;
		for (m = 0; m < NH; m++) {
			struct orc_head *h = &o->h[l][m];
			int64_t q;
			n_cand[m] = 0;
			while (n_cand[m] < h->n && h->pos[n_cand[m]] < win_from)
				n_cand[m]++;
			for (i = 0; i < h->n; i++)
				h->score[i] = stat[m][i] / (double)P->w; /* A = window mean */
			for (i = 0; i < n_cand[m]; i++) {
				double acc = P->avg ? 0.0 : -1.0;
				for (q = 0; q < n_cand[m]; q++) {
					double s = stat[m][q] / (double)P->w;
					if (llabs((long long)h->pos[q] - (long long)h->pos[i]) > r)
						continue;
					acc = P->avg ? acc + s : (s > acc ? s : acc);
				}
				rk[m][i].s = P->avg ? acc / (double)P->kp : acc;
				rk[m][i].pos = h->pos[i];
				rk[m][i].head = m;
				rk[m][i].idx = i;
			}
			for (i = 0; i < n_cand[m]; i++)
				h->score[i] = rk[m][i].s;
			for (i = n_cand[m]; i < h->n; i++)
				keep[m][i] = 1; /* the window */
			tot_cand += n_cand[m];
		}
		/* allocation */
		if (P->kind != ORC_ADAKV) {
			for (m = 0; m < NH; m++)
				a[m] = b_sel < n_cand[m] ? b_sel : n_cand[m];
		} else if (tot_cand <= NH * b_sel) {
			for (m = 0; m < NH; m++)
				a[m] = n_cand[m];
		} else {
			int *hd = malloc((size_t)tot_cand * sizeof(*hd));
			int64_t j = 0;
			all = calloc((size_t)tot_cand, sizeof(*all));
			if (!all || !hd)
				abort();
			for (m = 0; m < NH; m++)
				for (i = 0; i < n_cand[m]; i++)
					all[j++] = rk[m][i];
			qsort(all, (size_t)tot_cand, sizeof(*all), orc_rank_cmp);
			for (i = 0; i < tot_cand; i++)
				hd[i] = all[i].head;
			orc_gap(o, all[NH * b_sel - 1].s, all[NH * b_sel].s, all[0].s, "ada global", l, -1);
			o->n_clamp += th_ada_split(NH, hd, tot_cand, b_sel, P->alpha, n_cand, a);
			free(hd);
		}
		for (m = 0; m < NH; m++) {
			qsort(rk[m], (size_t)n_cand[m], sizeof(struct orc_rank), orc_rank_cmp);
			for (i = 0; i < a[m]; i++)
				keep[m][rk[m][i].idx] = 1;
			if (a[m] > 0 && a[m] < n_cand[m])
				orc_gap(o, rk[m][a[m] - 1].s, rk[m][a[m]].s, rk[m][0].s, "per-head", l, m);
		}
	}
compact:
	for (m = 0; m < NH; m++) {
		orc_compact(&o->h[l][m], keep[m]);
		free(keep[m]);
		free(rk[m]);
	}
	free(all);
}

/* Chunked ingest of doc[0..n) in double precision. */
static void
orc_ingest(struct orc *o, const struct orc_policy *P, const int32_t *doc, int64_t n,
    int64_t chunk)
{
	const struct eng_model *M = g_m;
	const int E = TINY_N_EMBD, Q = TINY_N_HEAD * HD, KV = NH * HD, F = TINY_N_FF;
	const int g = TINY_N_HEAD / NH;
	int64_t s = 0, win = P->kind == ORC_STREAMING || P->kind == ORC_H2O ? 0 : P->w;
	double *x, *xn, *q, *k, *v, *att, *tmp, *gate, *up, *stat_q[TINY_N_HEAD], *stat[NH], *p;
	int l, m, j;
	int64_t i, t, u, cap = n + 1;

	memset(o, 0, sizeof(*o));
	o->min_gap = 1.0;
	x = calloc((size_t)(n * E), sizeof(double));
	xn = calloc((size_t)(n * E), sizeof(double));
	q = calloc((size_t)(n * Q), sizeof(double));
	k = calloc((size_t)(n * KV), sizeof(double));
	v = calloc((size_t)(n * KV), sizeof(double));
	att = calloc((size_t)(n * Q), sizeof(double));
	tmp = calloc((size_t)(E > F ? E : F), sizeof(double));
	gate = calloc((size_t)F, sizeof(double));
	up = calloc((size_t)F, sizeof(double));
	p = calloc((size_t)cap, sizeof(double));
	if (!x || !xn || !q || !k || !v || !att || !tmp || !gate || !up || !p)
		abort();
	for (j = 0; j < TINY_N_HEAD; j++)
		if (!(stat_q[j] = calloc((size_t)cap, sizeof(double))))
			abort();
	for (m = 0; m < NH; m++)
		if (!(stat[m] = calloc((size_t)cap, sizeof(double))))
			abort();
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++) {
			struct orc_head *h = &o->h[l][m];
			h->pos = calloc((size_t)cap, sizeof(uint32_t));
			h->k = calloc((size_t)(cap * HD), sizeof(double));
			h->v = calloc((size_t)(cap * HD), sizeof(double));
			h->score = calloc((size_t)cap, sizeof(double));
			if (!h->pos || !h->k || !h->v || !h->score)
				abort();
		}
	while (s < n) {
		int64_t c = n - s < chunk ? n - s : chunk, stat_from;
		int final;
		if (s + c < n && n - (s + c) < win)
			c = n - s;
		final = s + c == n;
		stat_from = P->kind == ORC_STREAMING ? c : P->kind == ORC_H2O ? 0 : c > P->w ? c - P->w : 0;
		for (t = 0; t < c; t++) {
			const float *row = (const float *)M->tok_embd.data + (size_t)doc[s + t] * E;
			for (i = 0; i < E; i++)
				x[t * E + i] = row[i];
		}
		for (l = 0; l < NL; l++) {
			const struct eng_layer *L = &M->layers[l];
			for (t = 0; t < c; t++) {
				orc_rmsnorm(x + t * E, L->attn_norm, xn + t * E, E, M->hp.rms_eps);
				orc_matvec(&L->wq, xn + t * E, q + t * Q);
				orc_matvec(&L->wk, xn + t * E, k + t * KV);
				orc_matvec(&L->wv, xn + t * E, v + t * KV);
				orc_rope(q + t * Q, TINY_N_HEAD, (uint32_t)(s + t), M->hp.rope_base);
				orc_rope(k + t * KV, NH, (uint32_t)(s + t), M->hp.rope_base);
			}
			for (m = 0; m < NH; m++) {
				struct orc_head *h = &o->h[l][m];
				for (t = 0; t < c; t++) {
					h->pos[h->n + t] = (uint32_t)(s + t);
					h->score[h->n + t] = 0.0;
					memcpy(h->k + (h->n + t) * HD, k + t * KV + m * HD, HD * sizeof(double));
					memcpy(h->v + (h->n + t) * HD, v + t * KV + m * HD, HD * sizeof(double));
				}
				h->n += c;
			}
			/* attention; statistics Σ π over chunk queries t >= stat_from */
			for (j = 0; j < TINY_N_HEAD; j++) {
				struct orc_head *h = &o->h[l][j / g];
				int64_t base = h->n - c;
				memset(stat_q[j], 0, (size_t)cap * sizeof(double));
				for (t = 0; t < c; t++) {
					int64_t vis = base + t + 1;
					double mx = -INFINITY, sum = 0.0;
					const double *qq = q + t * Q + j * HD;
					for (u = 0; u < vis; u++) {
						double z = 0.0;
						int d;
						for (d = 0; d < HD; d++)
							z += qq[d] * h->k[u * HD + d];
						p[u] = z / sqrt((double)HD);
						mx = p[u] > mx ? p[u] : mx;
					}
					for (u = 0; u < vis; u++) {
						p[u] = exp(p[u] - mx);
						sum += p[u];
					}
					for (i = 0; i < HD; i++)
						att[t * Q + j * HD + i] = 0.0;
					for (u = 0; u < vis; u++) {
						int d;
						p[u] /= sum;
						for (d = 0; d < HD; d++)
							att[t * Q + j * HD + d] += p[u] * h->v[u * HD + d];
						if (t >= stat_from)
							stat_q[j][u] += p[u];
					}
				}
			}
			for (m = 0; m < NH; m++)
				for (u = 0; u < o->h[l][m].n; u++) {
					double acc = 0.0;
					for (j = 0; j < g; j++)
						acc += stat_q[m * g + j][u];
					stat[m][u] = acc / g;
				}
			orc_evict(o, P, l, stat, (uint32_t)(s + c), final, n);
			for (t = 0; t < c; t++) {
				orc_matvec(&L->wo, att + t * Q, tmp);
				for (i = 0; i < E; i++)
					x[t * E + i] += tmp[i];
				orc_rmsnorm(x + t * E, L->ffn_norm, xn + t * E, E, M->hp.rms_eps);
				orc_matvec(&L->w_gate, xn + t * E, gate);
				orc_matvec(&L->w_up, xn + t * E, up);
				for (i = 0; i < F; i++)
					gate[i] = gate[i] / (1.0 + exp(-gate[i])) * up[i];
				orc_matvec(&L->w_down, gate, tmp);
				for (i = 0; i < E; i++)
					x[t * E + i] += tmp[i];
			}
		}
		if (final) {
			orc_rmsnorm(x + (c - 1) * E, M->output_norm, xn, E, M->hp.rms_eps);
			orc_matvec(&M->output, xn, o->logits);
		}
		s += c;
	}
	for (j = 0; j < TINY_N_HEAD; j++)
		free(stat_q[j]);
	for (m = 0; m < NH; m++)
		free(stat[m]);
	free(x);
	free(xn);
	free(q);
	free(k);
	free(v);
	free(att);
	free(tmp);
	free(gate);
	free(up);
	free(p);
}

/* The engine's run against the oracle: sets, stored scores (SnapKV family:
 * the pooled window mean A for kept candidates, A for window units; H2O:
 * the accumulated attention), logits. */
static int
orc_compare(const struct run *r, const struct orc *o, const struct orc_policy *P,
    double *worst_score, double *worst_logit)
{
	float lg[NV];
	double d;
	int l, m, i;
	int64_t u;

	for (i = 0; i < NV; i++)
		lg[i] = (float)o->logits[i];
	d = th_rel_err(r->last, lg, NV);
	*worst_logit = d > *worst_logit ? d : *worst_logit;
	if (d > ORC_LOGIT_TOL) {
		snprintf(g_why, sizeof(g_why), "%s: logits differ from the fp64 oracle by %.3g (rel)",
		    r->desc, d);
		return -1;
	}
	for (l = 0; l < NL; l++)
		for (m = 0; m < NH; m++) {
			const struct orc_head *h = &o->h[l][m];
			double smax = 0.0;
			if (r->s.len[l][m] != h->n) {
				snprintf(g_why, sizeof(g_why),
				    "%s: layer %d head %d holds %lld units, the oracle %lld", r->desc, l, m,
				    (long long)r->s.len[l][m], (long long)h->n);
				return -1;
			}
			for (u = 0; u < h->n; u++)
				if (r->s.pos[l][m][u] != h->pos[u]) {
					snprintf(g_why, sizeof(g_why),
					    "%s: layer %d head %d unit %lld at position %u, the oracle's at %u",
					    r->desc, l, m, (long long)u, r->s.pos[l][m][u], h->pos[u]);
					return -1;
				}
			if (P->kind == ORC_STREAMING)
				continue;
			for (u = 0; u < h->n; u++)
				smax = fabs(h->score[u]) > smax ? fabs(h->score[u]) : smax;
			for (u = 0; u < h->n; u++) {
				double sc = (double)r->s.score[l][m][u];
				double e = fabs(sc - h->score[u]) / (smax > 1e-30 ? smax : 1e-30);
				*worst_score = e > *worst_score ? e : *worst_score;
				if (e > ORC_SCORE_TOL) {
					snprintf(g_why, sizeof(g_why),
					    "%s: layer %d head %d position %u: stored score %.9g, oracle %.9g%s",
					    r->desc, l, m, h->pos[u], sc, h->score[u],
					    P->kind != ORC_H2O && fabs(sc - (double)P->w * h->score[u]) <=
					    ORC_SCORE_TOL * (double)P->w * smax ?
					    " (= w x the oracle: a window sum, where the spec stores the mean A)" : "");
					return -1;
				}
			}
		}
	return 0;
}

/* spec/adakv.md §6 A.1, C.16, D.26-27, E.32; spec/locret.md §8.12 (for the
 * attention-scored policies). */
static enum tap_result
test_selection_oracle(void)
{
	static const struct {
		const char *name, *opts;
		struct orc_policy P;
		int64_t n, chunk;
	} cases[] = {
		/* one chunk: one-shot eviction */
		{ "snapkv", "", { ORC_SNAPKV, 64, 32, 7, 0, 0, 0, 0, 0, 0, 0 }, 150, 200 },
		{ "snapkv", "pool=avg,kernel=5", { ORC_SNAPKV, 64, 32, 5, 0, 0, 0, 1, 0, 0, 0 }, 150, 150 },
		{ "snapkv", "kernel=1,window=16", { ORC_SNAPKV, 40, 16, 1, 0, 0, 0, 0, 0, 0, 0 }, 150, 160 },
		{ "adakv", "alpha=0", { ORC_ADAKV, 64, 32, 7, 0, 0, 0, 0, 0, 0.0, 20 }, 150, 200 },
		{ "adakv", "alpha=0.5", { ORC_ADAKV, 64, 32, 7, 0, 0, 0, 0, 0, 0.5, 20 }, 150, 200 },
		{ "pyramidkv", "", { ORC_PYRAMID, 64, 32, 7, 0, 0, 0, 0, 0, 0, 20 }, 150, 200 },
		{ "h2o", "", { ORC_H2O, 64, 0, 0, 0, 0, 32, 0, 0, 0, 0 }, 150, 200 },
		{ "h2o", "recent=5", { ORC_H2O, 50, 0, 0, 0, 0, 5, 0, 0, 0, 0 }, 150, 200 },
		{ "streaming", "", { ORC_STREAMING, 64, 0, 0, 0, 4, 0, 0, 0, 0, 0 }, 150, 200 },
		/* chunked (§4.2) */
		{ "snapkv", "", { ORC_SNAPKV, 64, 32, 7, 0, 0, 0, 0, 0, 0, 0 }, 400, 64 },
		{ "snapkv", "slack=16,pool=avg", { ORC_SNAPKV, 48, 32, 7, 16, 0, 0, 1, 0, 0, 0 }, 333, 40 },
		{ "adakv", "", { ORC_ADAKV, 64, 32, 7, 0, 0, 0, 0, 0, 0.2, 20 }, 400, 64 },
		{ "adakv", "alpha=0", { ORC_ADAKV, 64, 32, 7, 0, 0, 0, 0, 0, 0.0, 20 }, 400, 50 },
		{ "adakv", "alpha=0,slack=10,kernel=3", { ORC_ADAKV, 48, 32, 3, 10, 0, 0, 0, 0, 0.0, 20 }, 300, 45 },
		{ "adakv", "alpha=0.2", { ORC_ADAKV, 100, 32, 7, 0, 0, 0, 0, 0, 0.2, 20 }, 400, 33 },
		{ "adakv", "alpha=0.6,kernel=5", { ORC_ADAKV, 120, 32, 5, 0, 0, 0, 0, 0, 0.6, 20 }, 350, 40 },
		{ "adakv", "alpha=0.3,scorer=pyramid,beta=4", { ORC_ADAKV, 64, 32, 7, 0, 0, 0, 0, 1, 0.3, 4 }, 400, 64 },
		{ "pyramidkv", "beta=3", { ORC_PYRAMID, 64, 32, 7, 0, 0, 0, 0, 0, 0, 3 }, 400, 64 },
		{ "h2o", "", { ORC_H2O, 64, 0, 0, 0, 0, 32, 0, 0, 0, 0 }, 400, 64 },
		{ "h2o", "recent=8", { ORC_H2O, 40, 0, 0, 0, 0, 8, 0, 0, 0, 0 }, 300, 33 },
		{ "streaming", "sinks=2", { ORC_STREAMING, 40, 0, 0, 0, 2, 0, 0, 0, 0, 0 }, 300, 33 },
	};
	struct run r;
	struct orc o;
	size_t i;
	int ok = 1, rc, created, n_checked = 0, n_skipped = 0, n_clamp = 0;
	double worst_score = 0.0, worst_logit = 0.0;
	int32_t *doc = NULL;

	memset(&r, 0, sizeof(r));
	memset(&o, 0, sizeof(o));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!policy_available(cases[i].name))
			continue;
		doc = tiny_doc(cases[i].n, 100 + i);
		rc = run_policy(&r, cases[i].name, cases[i].opts, cases[i].P.b, doc, cases[i].n,
		    cases[i].chunk, THREADS, 0, &created);
		EXPECT(rc == 0, "%s %s: %s", cases[i].name, cases[i].opts, g_why);
		orc_ingest(&o, &cases[i].P, doc, cases[i].n, cases[i].chunk);
		if (o.min_gap < ORC_AMBIG_TOL) {
			tap_diag("oracle case %zu (%s, n=%lld, chunk %lld) skipped: near-tie %.3g at %s", i,
			    r.desc, (long long)cases[i].n, (long long)cases[i].chunk, o.min_gap, o.gap_at);
			n_skipped++;
		} else {
			EXPECT(orc_compare(&r, &o, &cases[i].P, &worst_score, &worst_logit) == 0,
			    "case %zu (n=%lld, chunk %lld): %s", i, (long long)cases[i].n,
			    (long long)cases[i].chunk, g_why);
			n_checked++;
			n_clamp += o.n_clamp;
		}
		orc_free(&o);
		run_free(&r);
		free(doc);
		doc = NULL;
	}
	tap_diag("oracle: %d cases matched (worst stored-score rel diff %.3g, logits %.3g), %d skipped; %d Ada-KV capacity clamps exercised",
	    n_checked, worst_score, worst_logit, n_skipped, n_clamp);
	EXPECT(n_skipped * 4 <= n_checked, "too many near-ties skipped (%d of %d)", n_skipped,
	    n_checked + n_skipped);
out:
	orc_free(&o);
	run_free(&r);
	free(doc);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* ------------------------------------------------------------------------ */

static const struct tap_test tests[] = {
	{ "tiny_model", test_tiny_model },
	{ "no_eviction_equivalence", test_no_eviction_equivalence },
	{ "cache_bounds", test_cache_bounds },
	{ "positions", test_positions },
	{ "adakv", test_adakv },
	{ "pyramidkv", test_pyramidkv },
	{ "determinism", test_determinism },
	{ "long_document", test_long_document },
	{ "bad_options", test_bad_options },
	{ "ingest_misuse", test_ingest_misuse },
	{ "selection_oracle", test_selection_oracle },
};

static int
setup(void)
{
	if (tiny_model_tmp(g_path, sizeof(g_path), 42)) {
		printf("1..0 # SKIP cannot write the tiny model\n");
		return -1;
	}
	if (eng_model_open(&g_m, g_path, g_why, sizeof(g_why)))
		printf("# tiny model: %s\n", g_why);
	if (heads_tmp(g_heads, sizeof(g_heads), 43))
		g_heads[0] = 0;
	return 0;
}

static int
teardown(void)
{
	tiny_model_tmp_close(g_m, g_path);
	if (g_heads[0])
		unlink(g_heads);
	return 0;
}

TAP_MAIN(setup, teardown)
