/*
 * policy_pod.c: PoD, proximal tokens over distant tokens (spec/pod.md §3),
 * training-free, over a token-selection base policy.
 *
 * Layers are grouped per KV head into blocks (the block map of a
 * calibration, map=FILE); inside a block the distant logits are the
 * anchor's, so the anchor's statistic ranks units for the whole block.
 * Per chunk and KV head (§3.4): the anchor layer keeps its queries for the
 * block (forward.c), attends plainly and yields the base statistic, which is
 * saved here; at the block's last layer the base policy chooses the keep set
 * from it, every layer of the block is compacted to that set, the anchor's
 * scores are copied to the others, and the non-anchor keys that left the
 * proximal windows are trimmed (kv_pod.c).  The base must protect positions
 * < n_s and >= e − n_r + 1, which `nacl` does with n_sink = n_s and
 * n_recent = n_r − 1.
 *
 * Options (spec/pod.md §5.2 defaults): map=FILE (required), base=nacl|full,
 * n_s=4, n_r=⌊b/4⌋ (256 with base=full), rho=0, window=51 (W, the proxy
 * window), seed=0, budget_mode=equal_units|equal_bytes,
 * distant_query=anchor|own.
 * Parameters: i[0] n_s, i[1] n_r (-1 = auto until check), i[2] base (0 nacl,
 * 1 full), i[3] W, i[4] seed, i[5] budget_mode (0 units, 1 bytes),
 * i[6] distant_own; f[0] rho.  The map's path lives in priv; profiles name
 * the map by its content hash (eng_policy_profile), so equal maps give
 * equal profiles wherever the file lives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kv_pod.h"
#include "engine/cache/policy_ops.h"

enum { POD_N_S = 0, POD_N_R = 1, POD_BASE = 2, POD_W = 3, POD_SEED = 4, POD_BYTES = 5,
	POD_OWN = 6 };
enum { POD_RHO = 0 };
enum { POD_BASE_NACL = 0, POD_BASE_FULL = 1 };

#define POD_MAX_LAYERS 255
#define POD_MAX_HEADS_KV 256

struct pod_priv {
	char *map_path;
	struct eng_pod_map *map;
	/* base policy per block length M (with equal_units all have budget b) */
	struct eng_policy *base[POD_MAX_LAYERS + 1];
	int64_t *target;  /* (n_kv, n_layer): units kept by the block of (m, l) */
	/* ingest scratch, sized at ingest_begin for the pool's rows */
	int64_t rows;
	float *stat;      /* (n_kv, rows) the anchor's statistic per head */
	int64_t *keep;    /* (n_kv, rows) */
	int64_t *ident;   /* (rows) 0, 1, 2, … */
	struct eng_evict_head *heads; /* (n_kv) */
	const int64_t **keep_ptr;     /* (n_kv) */
	int64_t *n_keep;              /* (n_kv) */
	int64_t *n_chosen;            /* (n_kv) size of head m's keep set */
};

static struct pod_priv *
pod_priv(const struct eng_policy *p)
{
	return p->priv;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

/* The options that name one of two values: i[slot] is the value's index. */
static const struct {
	const char *key;
	int slot;
	const char *const names[3];
} pod_choices[] = {
	{ "base", POD_BASE, { "nacl", "full", NULL } }, /* POD_BASE_NACL, POD_BASE_FULL */
	{ "budget_mode", POD_BYTES, { "equal_units", "equal_bytes", NULL } },
	{ "distant_query", POD_OWN, { "anchor", "own", NULL } },
};

static int
pod_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	struct pod_priv *pv;
	size_t k;
	if (!key) {
		p->i[POD_N_S] = 4;
		p->i[POD_N_R] = -1;
		p->i[POD_BASE] = POD_BASE_NACL;
		p->i[POD_W] = 51;
		p->i[POD_SEED] = 0;
		p->i[POD_BYTES] = 0;
		p->i[POD_OWN] = 0;
		p->f[POD_RHO] = 0.0;
		if (!p->priv && !(p->priv = calloc(1, sizeof(struct pod_priv))))
			return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
		return 0;
	}
	pv = pod_priv(p);
	if (!strcmp(key, "map")) {
		if (!val || !*val)
			return eng_fail(why, why_len, ENG_ERR_ARG, "pod: map needs a file name");
		free(pv->map_path);
		if (!(pv->map_path = strdup(val)))
			return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
		return 0;
	}
	for (k = 0; k < sizeof(pod_choices) / sizeof(pod_choices[0]); k++) {
		const char *const *names = pod_choices[k].names;
		if (strcmp(key, pod_choices[k].key))
			continue;
		if (eng_policy_parse_name(val, names, &p->i[pod_choices[k].slot]))
			return eng_fail(why, why_len, ENG_ERR_ARG, "pod: %s must be %s or %s (got '%s')",
			    key, names[0], names[1], val ? val : "");
		return 0;
	}
	if (!strcmp(key, "n_s") && !eng_policy_parse_int(val, 0, 1 << 24, &p->i[POD_N_S]))
		return 0;
	if (!strcmp(key, "n_r") && !eng_policy_parse_int(val, 1, 1 << 24, &p->i[POD_N_R]))
		return 0;
	if ((!strcmp(key, "window") || !strcmp(key, "W")) &&
	    !eng_policy_parse_int(val, 1, 1 << 16, &p->i[POD_W]))
		return 0;
	if (!strcmp(key, "seed") && !eng_policy_parse_int(val, 0, INT64_MAX, &p->i[POD_SEED]))
		return 0;
	if (!strcmp(key, "rho") && !eng_policy_parse_float(val, 0.0, 1.0, &p->f[POD_RHO]))
		return 0;
	if (!strcmp(key, "n_s") || !strcmp(key, "n_r") || !strcmp(key, "window") ||
	    !strcmp(key, "W") || !strcmp(key, "seed") || !strcmp(key, "rho"))
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "pod: bad value '%s' for %s (n_s >= 0, n_r >= 1, window in [1, 65536], "
		    "seed >= 0, rho in [0, 1])", val ? val : "", key);
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "policy pod has no option '%s' (map, base, n_s, n_r, rho, window, seed, "
	    "budget_mode, distant_query)", key);
}

/* Units a block of M layers keeps (§3.5): b, or with equal_bytes the count
 * whose bytes equal M dense layers' at budget b. */
static int64_t
pod_block_target(const struct eng_policy *p, int64_t M)
{
	int64_t b = p->budget, w = p->i[POD_N_S] + p->i[POD_N_R] - 1;
	if (!p->i[POD_BYTES] || M <= 1)
		return b;
	return (2 * b * M - (M - 1) * w) / (M + 1);
}

/* The nacl base with PoD's windows protected (n_recent = n_r − 1: positions
 * >= e − n_r + 1) and a budget of t units. */
static int
pod_make_base(struct eng_policy *p, int64_t t, struct eng_policy **out, char *why,
    size_t why_len)
{
	char opts[256];
	snprintf(opts, sizeof(opts), "n_sink=%lld,n_recent=%lld,window=%lld,rho=%.17g,seed=%lld",
	    (long long)p->i[POD_N_S], (long long)(p->i[POD_N_R] - 1), (long long)p->i[POD_W],
	    p->f[POD_RHO], (long long)p->i[POD_SEED]);
	return eng_policy_new(out, &eng_policy_nacl, opts, t, why, why_len);
}

/* Targets per (m, l) from the block lengths, and a base per distinct one. */
static int
pod_plan(struct eng_policy *p, char *why, size_t why_len)
{
	struct pod_priv *pv = pod_priv(p);
	const struct eng_pod_map *pm = pv->map;
	int L = pm->n_layer, m, l, rc;

	pv->target = malloc((size_t)pm->n_head_kv * (size_t)L * sizeof(int64_t));
	if (!pv->target)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	for (m = 0; m < pm->n_head_kv; m++)
		for (l = 0; l < L; l++) {
			const uint8_t *anc = pm->anc + m * L;
			int64_t M = 0;
			int x;
			for (x = anc[l]; x < L && anc[x] == anc[l]; x++)
				M++;
			pv->target[m * L + l] = pod_block_target(p, M);
			if (p->i[POD_BASE] == POD_BASE_NACL && !pv->base[M]) {
				rc = pod_make_base(p, pv->target[m * L + l], &pv->base[M], why, why_len);
				if (rc)
					return rc;
			}
		}
	return 0;
}

static int
pod_check(struct eng_policy *p, char *why, size_t why_len)
{
	struct pod_priv *pv = pod_priv(p);
	int64_t b = p->budget;
	int rc;

	if (!pv->map_path)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "pod: needs map=FILE, a block map from `kvsnap pod-calibrate`");
	if (p->i[POD_N_R] < 0)
		p->i[POD_N_R] = p->i[POD_BASE] == POD_BASE_FULL ? 256 : (b / 4 > 1 ? b / 4 : 1);
	if (p->i[POD_BASE] == POD_BASE_NACL && p->i[POD_N_S] + p->i[POD_N_R] > b)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "pod: n_s (%lld) + n_r (%lld) must fit the budget (%lld)",
		    (long long)p->i[POD_N_S], (long long)p->i[POD_N_R], (long long)b);
	if ((rc = eng_pod_map_load(&pv->map, pv->map_path, NULL, why, why_len)))
		return rc;
	if (pv->map->n_layer > POD_MAX_LAYERS || pv->map->n_head_kv > POD_MAX_HEADS_KV)
		return eng_fail(why, why_len, ENG_ERR_ARG, "pod: more than %d layers or %d KV heads",
		    POD_MAX_LAYERS, POD_MAX_HEADS_KV);
	return pod_plan(p, why, why_len);
}

static size_t
pod_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	const struct pod_priv *pv = pod_priv(p);
	int n = snprintf(buf, cap,
	    ",map=%s,base=%s,n_s=%lld,n_r=%lld,rho=%.17g,window=%lld,seed=%lld,budget_mode=%s,"
	    "distant_query=%s",
	    pv->map_path ? pv->map_path : "", p->i[POD_BASE] == POD_BASE_FULL ? "full" : "nacl",
	    (long long)p->i[POD_N_S], (long long)p->i[POD_N_R], p->f[POD_RHO],
	    (long long)p->i[POD_W], (long long)p->i[POD_SEED],
	    p->i[POD_BYTES] ? "equal_bytes" : "equal_units", p->i[POD_OWN] ? "own" : "anchor");
	return n > 0 ? (size_t)n : 0;
}

static const char *
pod_file_fingerprint(const struct eng_policy *p)
{
	const struct pod_priv *pv = pod_priv(p);
	return pv->map ? pv->map->hash : "";
}

static int64_t
pod_stat_from(const struct eng_policy *p, int64_t n_tok)
{
	if (p->i[POD_BASE] == POD_BASE_FULL)
		return -1;
	return n_tok > p->i[POD_W] ? n_tok - p->i[POD_W] : 0;
}

static int64_t
pod_window(const struct eng_policy *p)
{
	return p->i[POD_BASE] == POD_BASE_FULL ? 0 : p->i[POD_W];
}

static enum eng_pos_mode
pod_pos_mode(const struct eng_policy *p)
{
	(void)p;
	return ENG_POS_ORIGINAL; /* distant logits need true relative offsets */
}

static int64_t
pod_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	const struct pod_priv *pv = pod_priv(p);
	int64_t mx = p->budget, i, n;
	(void)n_doc;
	if (p->i[POD_BASE] == POD_BASE_FULL)
		return -1; /* keeps every unit */
	n = (int64_t)pv->map->n_head_kv * pv->map->n_layer;
	for (i = 0; i < n; i++)
		mx = pv->target[i] > mx ? pv->target[i] : mx;
	return mx;
}

/* Eviction goes through ingest_layer; a per-layer select is never asked. */
static int
pod_select(struct eng_policy *p, struct eng_evict *e)
{
	(void)p;
	(void)e;
	return ENG_ERR_ARG;
}

static int
pod_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len)
{
	const struct eng_pod_map *pm = pod_priv(p)->map;
	const char *fp = eng_model_fingerprint(m);
	if (pm->n_layer != m->hp.n_layer || pm->n_head != m->hp.n_head ||
	    pm->n_head_kv != m->hp.n_head_kv)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "pod: block map is for %d layers, %d heads, %d KV heads; the model has %d, %d, %d",
		    pm->n_layer, pm->n_head, pm->n_head_kv, m->hp.n_layer, m->hp.n_head,
		    m->hp.n_head_kv);
	if (pm->model_fp[0] && fp[0] && strcasecmp(pm->model_fp, fp))
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "pod: block map was calibrated for model %.16s…, this is %.16s…", pm->model_fp,
		    fp);
	return 0;
}

static void
pod_free_scratch(struct pod_priv *pv)
{
	free(pv->stat);
	free(pv->keep);
	free(pv->ident);
	free(pv->heads);
	free(pv->keep_ptr);
	free(pv->n_keep);
	free(pv->n_chosen);
	pv->stat = NULL;
	pv->keep = pv->ident = pv->n_keep = pv->n_chosen = NULL;
	pv->heads = NULL;
	pv->keep_ptr = NULL;
	pv->rows = 0;
}

static void
pod_destroy(struct eng_policy *p)
{
	struct pod_priv *pv = pod_priv(p);
	int i;
	if (!pv)
		return;
	for (i = 0; i <= POD_MAX_LAYERS; i++)
		eng_policy_free(pv->base[i]);
	pod_free_scratch(pv);
	eng_pod_map_free(pv->map);
	free(pv->target);
	free(pv->map_path);
	free(pv);
	p->priv = NULL;
}

/* ------------------------------------------------------------------------ */
/* Ingest                                                                    */

static int
pod_ingest_begin(struct eng_policy *p, struct eng_kv *kv, const struct eng_model *m)
{
	struct pod_priv *pv = pod_priv(p);
	size_t H = (size_t)kv->n_head_kv, r = (size_t)kv->rows;
	int64_t i;
	int rc;
	(void)m;

	if ((rc = eng_kv_set_pod(kv, pv->map->anc, (uint32_t)p->i[POD_N_S],
	    (uint32_t)p->i[POD_N_R], (int)p->i[POD_OWN])))
		return rc;
	if (pv->rows == kv->rows)
		return 0;
	pod_free_scratch(pv);
	pv->stat = calloc(H * r, sizeof(float));
	pv->keep = malloc(H * r * sizeof(int64_t));
	pv->ident = malloc(r * sizeof(int64_t));
	pv->heads = calloc(H, sizeof(*pv->heads));
	pv->keep_ptr = calloc(H, sizeof(*pv->keep_ptr));
	pv->n_keep = calloc(H, sizeof(int64_t));
	pv->n_chosen = calloc(H, sizeof(int64_t));
	if (!pv->stat || !pv->keep || !pv->ident || !pv->heads || !pv->keep_ptr || !pv->n_keep ||
	    !pv->n_chosen) {
		pod_free_scratch(pv);
		return ENG_ERR_NOMEM;
	}
	for (i = 0; i < kv->rows; i++)
		pv->ident[i] = i;
	pv->rows = kv->rows;
	return 0;
}

/* Save head m's group-mean statistic at its anchor layer. */
static void
pod_save_stat(struct pod_priv *pv, const struct eng_kv *kv, int layer, int m, int g,
    const struct eng_fwd_layer_info *info)
{
	int64_t n = kv->layer[layer].len[m], u;
	float *s = pv->stat + (size_t)m * (size_t)pv->rows;
	int j;
	for (u = 0; u < n; u++) {
		float acc = 0.0f;
		for (j = 0; j < g; j++)
			acc += info->stat[(size_t)(m * g + j) * (size_t)info->stat_stride + (size_t)u];
		s[u] = acc / (float)g;
	}
}

/* Head m's keep set for its block anchored at a: the base's choice from the
 * anchor's statistic, or everything.  The base sees head m at its own index
 * (heads before it are empty), so its per-head noise streams are the ones a
 * plain run would use. */
static int
pod_choose(struct eng_policy *p, struct eng_kv *kv, int a, int m, int64_t M,
    const struct eng_fwd_layer_info *info, int is_last, int64_t n_doc)
{
	struct pod_priv *pv = pod_priv(p);
	struct eng_kv_layer *A = &kv->layer[a];
	struct eng_evict_head *h = &pv->heads[m];
	struct eng_policy *base;
	struct eng_evict e;
	int64_t n = A->len[m], i;
	int x;

	int rc;

	pv->n_chosen[m] = 0;
	if (p->i[POD_BASE] == POD_BASE_FULL || n <= pv->target[m * kv->n_layer + a]) {
		int64_t *keep = pv->keep + (size_t)m * (size_t)pv->rows;
		for (i = 0; i < n; i++)
			keep[i] = i;
		pv->n_chosen[m] = n;
		return 0;
	}
	/* the heads before m are empty placeholders for this call */
	for (x = 0; x < m; x++)
		memset(&pv->heads[x], 0, sizeof(pv->heads[x]));
	h->keep = pv->keep + (size_t)m * (size_t)pv->rows;
	h->n_keep = 0;
	h->n = n;
	h->pos = A->pos + A->off[m];
	h->score = A->score + A->off[m];
	h->kpre = A->k + A->off[m] * kv->head_dim;
	h->stat = info->stat ? pv->stat + (size_t)m * (size_t)pv->rows : NULL;
	memset(&e, 0, sizeof(e));
	e.layer = a;
	e.n_layer = kv->n_layer;
	e.n_head_kv = m + 1;
	e.head_dim = kv->head_dim;
	e.is_last = is_last;
	e.chunk_end = info->chunk_end;
	e.n_tok = info->n_tok;
	e.n_doc = n_doc;
	e.h = pv->heads;
	e.info = info;
	e.scratch = NULL;
	base = pv->base[M];
	if (!base)
		return ENG_ERR_ARG;
	if ((rc = base->ops->select(base, &e)))
		return rc;
	pv->n_chosen[m] = h->n_keep;
	return 0;
}

/* After layer `layer`: save anchor statistics; for every KV head whose
 * block ends here, choose its keep set and compact the block (§3.4 step 4). */
static int
pod_ingest_layer(struct eng_policy *p, struct eng_kv *kv, int layer,
    const struct eng_fwd_layer_info *info, int is_last, int64_t n_doc)
{
	struct pod_priv *pv = pod_priv(p);
	const uint8_t *anc = pv->map->anc;
	int H = kv->n_head_kv, L = kv->n_layer, m, x, lo = layer, rc;
	int g = pv->map->n_head / pv->map->n_head_kv;
	int ends[POD_MAX_HEADS_KV];

	for (m = 0; m < H; m++) {
		int a = anc[m * L + layer];
		int64_t M = layer - a + 1;
		ends[m] = layer + 1 == L || anc[m * L + layer + 1] != a;
		if (a == layer && info->stat)
			pod_save_stat(pv, kv, layer, m, g, info);
		if (!ends[m])
			continue;
		if ((rc = pod_choose(p, kv, a, m, M, info, is_last, n_doc)))
			return rc;
		lo = a < lo ? a : lo;
	}
	/* compact each layer of the ending blocks once, other heads untouched */
	for (x = lo; x <= layer; x++) {
		int any = 0;
		for (m = 0; m < H; m++) {
			int mine = ends[m] && anc[m * L + layer] <= x;
			pv->keep_ptr[m] = mine ? pv->keep + (size_t)m * (size_t)pv->rows : pv->ident;
			pv->n_keep[m] = mine ? pv->n_chosen[m] : kv->layer[x].len[m];
			any |= mine;
		}
		if (!any)
			continue;
		if ((rc = eng_kv_compact(kv, x, pv->keep_ptr, pv->n_keep)))
			return rc;
	}
	/* the block shares the anchor's scores; non-anchor keys leave the windows */
	for (m = 0; m < H; m++) {
		int a = anc[m * L + layer];
		if (!ends[m])
			continue;
		for (x = a + 1; x <= layer; x++) {
			struct eng_kv_layer *X = &kv->layer[x], *A = &kv->layer[a];
			memcpy(X->score + X->off[m], A->score + A->off[m],
			    (size_t)A->len[m] * sizeof(float));
			eng_kv_pod_trim(kv, x, m, info->chunk_end);
		}
	}
	return 0;
}

const struct eng_policy_ops eng_policy_pod = {
	.name = "pod",
	.file_key = "map",
	.file_fingerprint = pod_file_fingerprint,
	.set = pod_set,
	.check = pod_check,
	.describe = pod_describe,
	.stat_from = pod_stat_from,
	.window = pod_window,
	.select = pod_select,
	.pos_mode = pod_pos_mode,
	.destroy = pod_destroy,
	.bind = pod_bind,
	.kept_per_head = pod_kept_per_head, /* e.g. equal_bytes targets */
	.ingest_begin = pod_ingest_begin,
	.ingest_layer = pod_ingest_layer,
};
