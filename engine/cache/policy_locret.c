/*
 * policy_locret.c: Locret (spec/locret.md §5.3): learned retaining heads
 * (engine/cache/locret_heads.c) give every unit a causal importance score (CIS)
 * once, when its chunk is processed; the score is stored with the unit and
 * never recomputed.  After each chunk every KV head keeps its b best units,
 * except that on every chunk but the last the n_s most recent units (the
 * "stabilizers") are kept whatever their score.  Positions are slots by
 * default: survivors are renumbered 0..C-1 (the reference's contiguous
 * positions), so documents longer than the model's context stream through.
 *
 * Selection per head, at the eviction after a chunk with N units present:
 * keep = min(b, N); key = score, with key = +∞ on the last n_s entries
 * unless this is the last chunk; the `keep` largest keys win, on equal keys
 * the newer unit (larger position = larger slot); kept in list order.  The
 * boost lives only in the selection copy: stored scores stay the heads'.
 *
 * n_loc (the spec's never-evicted prompt tail) is approximated, since
 * eng_ingest has no separate tail pass: with M = max(n_doc − n_loc, 0),
 * units at positions >= M are always kept and not counted against b, and
 * the chunk that reaches M is treated as the spec's last chunk (no boost).
 * The pre-tail selections equal the spec's (the chunk cuts coincide up to
 * M); the tail tokens differ from the spec only in that they attend to the
 * last chunk's units before its eviction instead of after.  In kvsnap the
 * query suffix appended after ingest plays the tail's role, so n_loc = 0 by
 * default.  With n_loc > 0 a pool must have n_loc more rows per head than
 * eng_policy_rows_per_head gives today.
 *
 * alloc=adakv (positions=original only: slot positions need every head to
 * hold the same count) replaces the uniform count by Ada-KV's head-wise
 * allocation (spec/adakv.md §2.2 exact mode, §2.6, §4.2 capacity clamp):
 * each head's candidates (units before M that are not protected
 * stabilizers) are normalized with a softmax over the head's candidates,
 * exp(S − LSE_m); the layer's H·(b − n_s') best (n_s' = n_s when boosted,
 * else 0) decide the counts, mixed with α; each head keeps its a_m best
 * candidates by raw score plus its stabilizers and tail.  Cross-head ties:
 * normalized score, raw score, newer position, lower head.
 *
 * alloc=global (positions=original only) spends the budget as KVzip does
 * (engine/cache/select_scores.c): one ranking of every unit of every layer and
 * head by its stored score, after a floor of ⌊floor·b'⌋ units per head,
 * no layer above ENG_SELECT_LAYER_CAP times the mean.  Heads trained on
 * kvzip's labels (`train-heads --labels kvzip`) predict the log of kvzip's
 * score, which is comparable across layers and heads, so the ranking is
 * meaningful; with CIS heads it is not.  The per-layer hook only scores;
 * the selection runs once a chunk has passed every layer (after_chunk).
 * Sinks, always kept: sinks=N units, or with auto the document's
 * chat-template prefix when it starts with one (else 4); on every chunk but
 * the last the n_s most recent units are kept too and not counted (n_s
 * defaults to 0 here).
 *
 * Options: heads=PATH (required) n_s=3b/8 (global: 0) n_loc=0
 *          positions=slot|original alloc=uniform|adakv|global alpha=0.2
 *          floor=0.1 sinks=auto|N (the last two with alloc=global).
 * Parameters: i[0] n_s (−1 = default until check), i[1] n_loc,
 *             i[2] positions (0 slot, 1 original), i[3] alloc (0 uniform,
 *             1 adakv, 2 global), i[4] sinks (−1 auto), f[0] alpha,
 *             f[1] floor; priv: struct locret.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/cache/policy_ops.h"
#include "engine/cache/select.h"

extern const struct eng_policy_ops eng_policy_locret; /* defined at the end */

enum { LOCRET_N_S, LOCRET_N_LOC, LOCRET_POSITIONS, LOCRET_ALLOC, LOCRET_SINKS };
enum { LOCRET_UNIFORM, LOCRET_ADAKV, LOCRET_GLOBAL };
/* i[LOCRET_POSITIONS]'s values and i[LOCRET_ALLOC]'s, by index. */
static const char *const positions[] = { "slot", "original", NULL };
static const char *const allocs[] = { "uniform", "adakv", "global", NULL };

struct locret {
	char *path;               /* heads=PATH */
	struct eng_heads *heads;  /* opened by check() */
	eng_locret_score_fn fn;   /* test hook, replaces the heads */
	void *fn_arg;
	int32_t *tpl;             /* alloc=global, sinks=auto: the template (bind) */
	int64_t n_tpl;
	/* options left to their defaults, resolved by check() from the heads'
	 * labels and the budget: n_s, positions, alloc */
	int n_s_auto, pos_auto, alloc_auto;
};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

static void
locret_destroy(struct eng_policy *p)
{
	struct locret *s = p->priv;
	if (!s)
		return;
	free(s->path);
	free(s->tpl);
	eng_heads_close(s->heads);
	free(s);
	p->priv = NULL;
}

static int
locret_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	struct locret *s = p->priv;
	if (!key) {
		if (!s && !(s = p->priv = calloc(1, sizeof(*s))))
			return ENG_ERR_NOMEM;
		p->i[LOCRET_N_S] = -1;
		s->n_s_auto = s->pos_auto = s->alloc_auto = 1;
		p->i[LOCRET_N_LOC] = 0;
		p->i[LOCRET_POSITIONS] = 0;
		p->i[LOCRET_ALLOC] = 0;
		p->f[0] = 0.2;
		p->i[LOCRET_SINKS] = -1;
		p->f[1] = 0.1;
		return 0;
	}
	if (!strcmp(key, "heads")) {
		char *path;
		if (!val || !*val)
			return eng_fail(why, why_len, ENG_ERR_ARG,
			    "locret: heads= needs a sidecar path");
		if (!(path = strdup(val)))
			return ENG_ERR_NOMEM;
		free(s->path);
		s->path = path;
		return 0;
	}
	if (!strcmp(key, "n_s")) {
		s->n_s_auto = 0;
		return eng_policy_parse_int(val, 0, INT64_C(1) << 30, &p->i[LOCRET_N_S]);
	}
	if (!strcmp(key, "n_loc"))
		return eng_policy_parse_int(val, 0, INT64_C(1) << 30, &p->i[LOCRET_N_LOC]);
	if (!strcmp(key, "alpha"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[0]);
	if (!strcmp(key, "floor"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[1]);
	if (!strcmp(key, "sinks")) {
		if (val && !strcmp(val, "auto")) {
			p->i[LOCRET_SINKS] = -1;
			return 0;
		}
		return eng_policy_parse_int(val, 0, 1 << 20, &p->i[LOCRET_SINKS]);
	}
	if (!strcmp(key, "positions")) {
		s->pos_auto = 0;
		return eng_policy_parse_name(val, positions, &p->i[LOCRET_POSITIONS]);
	}
	if (!strcmp(key, "alloc")) {
		s->alloc_auto = 0;
		if (eng_policy_parse_name(val, allocs, &p->i[LOCRET_ALLOC]))
			return eng_fail(why, why_len, ENG_ERR_ARG,
			    "locret: alloc=%s (uniform, adakv or global)", val);
		return 0;
	}
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "policy locret has no option '%s' (heads, n_s, n_loc, positions, alloc, alpha, "
	    "floor, sinks)",
	    key);
}

static int
locret_check(struct eng_policy *p, char *why, size_t why_len)
{
	struct locret *s = p->priv;
	int rc, kz;
	if (!s->path)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "locret needs heads=PATH (a retaining-heads sidecar, engine/cache/locret_heads.c)");
	if (!s->heads && (rc = eng_heads_open(&s->heads, s->path, NULL, why, why_len)))
		return rc;
	/* Defaults follow what the heads learned: kvzip's scores compare
	 * across layers (global selection, original positions); CIS does not
	 * (Locret's uniform selection, slot positions). */
	kz = !strcmp(eng_heads_get_info(s->heads)->labels, "kvzip");
	if (s->alloc_auto)
		p->i[LOCRET_ALLOC] = kz ? LOCRET_GLOBAL : LOCRET_UNIFORM;
	if (s->pos_auto)
		p->i[LOCRET_POSITIONS] = kz;
	if (s->n_s_auto) /* SmolLM2 main setting 384/1024, §6.1; per budget */
		p->i[LOCRET_N_S] = p->i[LOCRET_ALLOC] == LOCRET_GLOBAL ? 0 : p->budget * 3 / 8;
	if (eng_policy_below_budget(p, p->i[LOCRET_N_S], "locret: n_s", why, why_len))
		return ENG_ERR_ARG;
	if (p->i[LOCRET_ALLOC] != LOCRET_UNIFORM && p->i[LOCRET_POSITIONS] == 0)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "locret: alloc=%s needs positions=original (slot positions need the same "
		    "count in every head)", p->i[LOCRET_ALLOC] == LOCRET_ADAKV ? "adakv" : "global");
	if (p->i[LOCRET_ALLOC] == LOCRET_GLOBAL && p->i[LOCRET_N_LOC] > 0)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "locret: alloc=global has no n_loc tail (the query follows the document)");
	return 0;
}

static size_t
locret_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	const struct locret *s = p->priv;
	char n_s[24];
	int n;
	/* with a ratio the default n_s follows each document's budget */
	if (s->n_s_auto && p->ratio > 0.0)
		snprintf(n_s, sizeof(n_s), "auto");
	else
		snprintf(n_s, sizeof(n_s), "%lld", (long long)p->i[LOCRET_N_S]);
	n = snprintf(buf, cap, ",heads=%s,n_s=%s,n_loc=%lld,positions=%s,alloc=%s,alpha=%.17g",
	    s->path ? s->path : "", n_s, (long long)p->i[LOCRET_N_LOC],
	    positions[p->i[LOCRET_POSITIONS]], allocs[p->i[LOCRET_ALLOC]], p->f[0]);
	if (n > 0 && p->i[LOCRET_ALLOC] == LOCRET_GLOBAL) { /* older profiles stay as they were */
		size_t u = (size_t)n;
		char sinks[24];
		int k;
		if (p->i[LOCRET_SINKS] < 0)
			snprintf(sinks, sizeof(sinks), "auto");
		else
			snprintf(sinks, sizeof(sinks), "%lld", (long long)p->i[LOCRET_SINKS]);
		k = snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",floor=%.17g,sinks=%s",
		    p->f[1], sinks);
		n += k > 0 ? k : 0;
	}
	return n > 0 ? (size_t)n : 0;
}

/* The sidecar by content, for profile ids (a moved file keeps its profiles). */
static const char *
locret_file_fingerprint(const struct eng_policy *p)
{
	const struct locret *s = p->priv;
	return s->heads ? eng_heads_fingerprint(s->heads) : "";
}

static enum eng_pos_mode
locret_pos_mode(const struct eng_policy *p)
{
	return p->i[LOCRET_POSITIONS] ? ENG_POS_ORIGINAL : ENG_POS_SLOT;
}

int
eng_locret_set_score_fn(struct eng_policy *p, eng_locret_score_fn fn, void *arg)
{
	struct locret *s;
	if (!p || p->ops != &eng_policy_locret)
		return ENG_ERR_ARG;
	s = p->priv;
	s->fn = fn;
	s->fn_arg = arg;
	return 0;
}

/* The sidecar beside the model (<model stem>.locret.gguf), when the
 * options name none and it exists. */
static char *
locret_default_opts(const char *opts, const char *model_path)
{
	const char *dot = strrchr(model_path, '.');
	size_t stem = dot && !strcmp(dot, ".gguf") ? (size_t)(dot - model_path) : strlen(model_path);
	size_t n = strlen(opts) + stem + 32;
	char *out = malloc(n), *heads;
	struct stat sb;

	if (!out)
		return NULL;
	snprintf(out, n, "%s", opts);
	if (!strncmp(opts, "heads=", 6) || strstr(opts, ",heads="))
		return out;
	if (!(heads = malloc(stem + 16))) {
		free(out);
		return NULL;
	}
	snprintf(heads, stem + 16, "%.*s.locret.gguf", (int)stem, model_path);
	if (stat(heads, &sb) == 0 && S_ISREG(sb.st_mode))
		snprintf(out, n, "%s%sheads=%s", opts, *opts ? "," : "", heads);
	free(heads);
	return out;
}

/* Units per head between chunks: the budget and the n_loc tail; with
 * alloc=global a layer's heads are ragged up to the layer cap, plus the
 * stabilizers. */
static int64_t
locret_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	(void)n_doc;
	if (p->i[LOCRET_ALLOC] == LOCRET_GLOBAL)
		return ENG_SELECT_LAYER_CAP * p->budget + p->i[LOCRET_N_S];
	return p->budget + p->i[LOCRET_N_LOC];
}

int
eng_locret_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len)
{
	if (!p || !m || p->ops != &eng_policy_locret)
		return ENG_ERR_ARG;
	return p->ops->bind(p, m, why, why_len);
}

static int
locret_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len)
{
	struct locret *s = p->priv;
	int rc;
	rc = eng_heads_check_model(s->heads, m, why, why_len);
	if (!rc) /* heads trained on another model are refused by name */
		rc = eng_heads_check_fingerprint(s->heads, eng_model_fingerprint(m), why, why_len);
	if (!rc && p->i[LOCRET_ALLOC] == LOCRET_GLOBAL && p->i[LOCRET_SINKS] < 0 && !s->tpl)
		rc = eng_doc_template_ids(m, &s->tpl, &s->n_tpl, why, why_len);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Scoring                                                                   */

/* Score the chunk's units (the last n_tok of every head) and store the
 * scores; earlier units keep theirs untouched.  sbuf: (n_tok, n_kv). */
static int
locret_score_chunk(const struct locret *s, struct eng_evict *e, float *sbuf)
{
	const struct eng_heads_info *a = eng_heads_get_info(s->heads);
	int64_t n_tok = e->n_tok, t;
	int H = e->n_head_kv, m, rc;

	for (m = 0; m < H; m++)
		if (e->h[m].n < n_tok)
			return ENG_ERR_ARG;
	if (s->fn) {
		for (m = 0; m < H; m++) {
			struct eng_evict_head *h = &e->h[m];
			for (t = h->n - n_tok; t < h->n; t++)
				h->score[t] = s->fn(s->fn_arg, e->layer, m, h->pos[t]);
		}
		return 0;
	}
	/* Without a bound model only what eviction sees can be checked. */
	if (a->n_layer != e->n_layer || a->n_head_kv != H || a->head_dim != e->head_dim)
		return ENG_ERR_SHAPE;
	rc = eng_heads_score(s->heads, e->layer, e->info->qpre, e->info->kpre, e->info->v, n_tok,
	    sbuf);
	if (rc)
		return rc;
	for (m = 0; m < H; m++) {
		struct eng_evict_head *h = &e->h[m];
		for (t = 0; t < n_tok; t++)
			h->score[h->n - n_tok + t] = sbuf[t * H + m];
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Selection                                                                 */

/* Units of h before position M (the list ascends): the candidates. */
static int64_t
locret_n_pre_tail(const struct eng_evict_head *h, uint32_t M)
{
	int64_t n = h->n;
	while (n > 0 && h->pos[n - 1] >= M)
		n--;
	return n;
}

/* Selection key of a stored score: NaN ranks last, never first. */
static float
locret_key(float s)
{
	return isnan(s) ? -INFINITY : s;
}

/* Keep the `a` best of h's candidates [0, n_cand) by key (newer first on
 * ties), then every unit from n_cand on (stabilizers, tail), in order. */
static void
locret_keep(struct eng_evict_head *h, const float *key, int64_t n_cand, int64_t a,
    int64_t *idx)
{
	int64_t i;
	if (a > n_cand)
		a = n_cand;
	h->n_keep = 0;
	if (a < n_cand) {
		for (i = 0; i < n_cand; i++)
			idx[i] = i;
		eng_policy_rank(h, key, idx, n_cand, 1);
		eng_policy_sort_idx(idx, a);
		for (i = 0; i < a; i++)
			h->keep[h->n_keep++] = idx[i];
	} else {
		for (i = 0; i < n_cand; i++)
			h->keep[h->n_keep++] = i;
	}
	for (i = n_cand; i < h->n; i++)
		h->keep[h->n_keep++] = i;
}

/* Uniform Locret (§5.3 step 2b) for every head; key: scratch (max n). */
static void
locret_select_uniform(const struct eng_policy *p, struct eng_evict *e, uint32_t M, int boost,
    float *key)
{
	int64_t n_s = p->i[LOCRET_N_S], i;
	int m;
	for (m = 0; m < e->n_head_kv; m++) {
		struct eng_evict_head *h = &e->h[m];
		int64_t P = locret_n_pre_tail(h, M);
		for (i = 0; i < P; i++)
			key[i] = locret_key(h->score[i]);
		if (boost)
			for (i = P > n_s ? P - n_s : 0; i < P; i++)
				key[i] = INFINITY; /* stabilizers: transient boost */
		locret_keep(h, key, P, p->budget, e->scratch);
	}
}

/* A key as a finite double, so ±∞ cannot poison the softmax. */
static double
locret_finite(float k)
{
	return fmin(fmax((double)k, -FLT_MAX), FLT_MAX);
}

/* One candidate in the layer-wide Ada-KV ranking. */
struct locret_entry {
	double s;    /* exp(S − LSE_m) */
	float raw;   /* selection key */
	uint32_t pos;
	int head;
};

static int
locret_entry_cmp(const void *a, const void *b)
{
	const struct locret_entry *x = a, *y = b;
	if (x->s != y->s)
		return x->s > y->s ? -1 : 1;
	if (x->raw != y->raw)
		return x->raw > y->raw ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos > y->pos ? -1 : 1; /* newer first (Locret's rule) */
	return (x->head > y->head) - (x->head < y->head);
}

/* Locret scores with Ada-KV head-wise counts; keys: scratch (Σ n). */
static int
locret_select_adakv(const struct eng_policy *p, struct eng_evict *e, uint32_t M, int boost,
    float *keys)
{
	int H = e->n_head_kv, m, rc = 0;
	int64_t n_s = boost ? p->i[LOCRET_N_S] : 0, b_sel = p->budget - n_s, tot = 0, n_rank = 0;
	int64_t *n_cand, *a, *c, *off, i;
	double *frac;
	struct locret_entry *rank = NULL;
	int *heads = NULL;

	n_cand = calloc((size_t)H * 4, sizeof(int64_t));
	frac = calloc((size_t)H, sizeof(double));
	if (!n_cand || !frac) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	a = n_cand + H;
	c = n_cand + 2 * H;
	off = n_cand + 3 * H;
	for (m = 0; m < H; m++) {
		int64_t P = locret_n_pre_tail(&e->h[m], M);
		n_cand[m] = P > n_s ? P - n_s : 0; /* the last n_s are protected */
		off[m] = tot;
		tot += e->h[m].n;
	}
	for (m = 0; m < H; m++)
		for (i = 0; i < e->h[m].n; i++)
			keys[off[m] + i] = locret_key(e->h[m].score[i]);
	for (m = 0, i = 0; m < H; m++)
		i += n_cand[m];
	if (i <= (int64_t)H * b_sel) {
		for (m = 0; m < H; m++)
			a[m] = n_cand[m]; /* nothing to evict */
	} else {
		rank = malloc((size_t)i * sizeof(*rank));
		if (!rank) {
			rc = ENG_ERR_NOMEM;
			goto out;
		}
		for (m = 0; m < H; m++) {
			const float *k = keys + off[m];
			double mx = -DBL_MAX, sum = 0.0, lse;
			/* softmax over the head's candidates: exp(S − LSE_m) */
			for (i = 0; i < n_cand[m]; i++)
				mx = fmax(mx, locret_finite(k[i]));
			for (i = 0; i < n_cand[m]; i++)
				sum += exp(locret_finite(k[i]) - mx);
			lse = mx + log(sum);
			for (i = 0; i < n_cand[m]; i++) {
				rank[n_rank].s = exp(locret_finite(k[i]) - lse);
				rank[n_rank].raw = k[i];
				rank[n_rank].pos = e->h[m].pos[i];
				rank[n_rank].head = m;
				n_rank++;
			}
		}
		qsort(rank, (size_t)n_rank, sizeof(*rank), locret_entry_cmp);
		heads = malloc((size_t)n_rank * sizeof(int));
		if (!heads) {
			rc = ENG_ERR_NOMEM;
			goto out;
		}
		for (i = 0; i < n_rank; i++)
			heads[i] = rank[i].head;
		eng_adakv_allocate(n_cand, H, b_sel, p->f[0], heads, n_rank, a, c, frac);
	}
	for (m = 0; m < H; m++)
		locret_keep(&e->h[m], keys + off[m], n_cand[m], a[m], e->scratch);
out:
	free(n_cand);
	free(frac);
	free(rank);
	free(heads);
	return rc;
}

/* The policy keeps no mutable state here (scratch is per call), so one
 * policy may serve several ingests on different threads. */
static int
locret_select(struct eng_policy *p, struct eng_evict *e)
{
	const struct locret *s = p->priv;
	int64_t M = e->n_doc - p->i[LOCRET_N_LOC], tot = 0;
	float *buf;
	int rc, boost, m;

	if (M < 0)
		M = 0;
	for (m = 0; m < e->n_head_kv; m++)
		tot += e->h[m].n;
	/* chunk scores (n_tok, n_kv), then selection keys (every unit) */
	buf = malloc((size_t)(e->n_tok * e->n_head_kv + tot + 1) * sizeof(float));
	if (!buf)
		return ENG_ERR_NOMEM;
	rc = locret_score_chunk(s, e, buf);
	/* the spec's last chunk is the one that reaches M (or any after it) */
	boost = (int64_t)e->chunk_end < M;
	if (!rc && p->i[LOCRET_ALLOC] == LOCRET_GLOBAL)
		eng_policy_keep_all(e); /* after_chunk selects over all layers */
	else if (!rc && p->i[LOCRET_ALLOC] == LOCRET_ADAKV)
		rc = locret_select_adakv(p, e, (uint32_t)M, boost, buf + e->n_tok * e->n_head_kv);
	else if (!rc)
		locret_select_uniform(p, e, (uint32_t)M, boost, buf + e->n_tok * e->n_head_kv);
	free(buf);
	return rc;
}

/* alloc=global: after a chunk has passed every layer, one selection over
 * the pool by the stored scores (engine/cache/select_scores.c). */
static int
locret_after_chunk(struct eng_policy *p, struct eng_kv *kv, const int32_t *ids, int64_t seen,
    int64_t n)
{
	const struct locret *s = p->priv;
	int64_t n_s = p->i[LOCRET_N_S];
	struct eng_select sel;

	if (p->i[LOCRET_ALLOC] != LOCRET_GLOBAL)
		return 0;
	memset(&sel, 0, sizeof(sel));
	sel.alloc = ENG_ALLOC_GLOBAL;
	sel.floor = p->f[1];
	sel.alpha = p->f[0];
	sel.n_sink = eng_doc_sinks(p->i[LOCRET_SINKS],
	    eng_doc_template_len(s->tpl, s->n_tpl, ids, n), n);
	/* stabilizers on every chunk but the last; the pool holds the layer cap
	 * plus them and the next chunk (eng_policy_rows_per_head) */
	sel.keep_from = seen < n && seen > n_s ? (uint32_t)(seen - n_s) : UINT32_MAX;
	sel.cap_layer = (int64_t)kv->n_head_kv * ENG_SELECT_LAYER_CAP * p->budget;
	return eng_select_scores(kv, &sel, p->budget);
}

const struct eng_policy_ops eng_policy_locret = {
	.file_key = "heads",
	.file_fingerprint = locret_file_fingerprint,
	.name = "locret",
	.set = locret_set,
	.check = locret_check,
	.describe = locret_describe,
	.stat_from = eng_policy_no_stat, /* the heads need no attention statistics */
	.window = eng_policy_no_window,
	.select = locret_select,
	.after_chunk = locret_after_chunk,
	.bind = locret_bind,
	.kept_per_head = locret_kept_per_head,
	.default_opts = locret_default_opts,
	.pos_mode = locret_pos_mode,
	.destroy = locret_destroy,
};
