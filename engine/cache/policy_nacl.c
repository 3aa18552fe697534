/*
 * policy_nacl.c: NaCl, proxy-token plus random eviction (spec/nacl.md §2,
 * §4), under chunked prefill.
 *
 * At each eviction the last W queries of the chunk are the proxies: a unit's
 * score S is the attention probability those queries pay it, summed over
 * the proxies and averaged over the GQA group (the kernel's window
 * statistic, §1.3; it replaces the stored score, it does not accumulate).
 * Each (layer, KV head) then keeps, out of its N units, a target of t = b on
 * the last chunk and t = b_work before it (§4.2 step 5):
 *   protected  positions < n_sink and >= chunk_end − n_recent (counted once);
 *   top        the b_top best of the others by S (tie: larger position);
 *   random     the b_rand best of the rest by S/T + G, or G alone when
 *              uniform=1, G a standard Gumbel variate: Gumbel-top-k, i.e.
 *              weighted sampling without replacement from softmax(S/T);
 * where slots = t − |protected|, b_rand = round(ρ·slots), b_top = slots −
 * b_rand (§2.3).  Heads with N <= t keep everything.
 *
 * G comes from a counter-based hash of (seed, layer, KV head, position,
 * stream) (§2.6, eng_nacl_gumbel), so selection has no state and no thread
 * order.  Persistent noise (default) uses stream 0: a unit keeps its Gumbel
 * variate across rounds, which makes streaming equal one-shot for
 * context-free scores (§4.3, §7 #10).  Fresh noise uses the chunk's first
 * position as the stream: a label of the eviction round (round·B for chunk
 * size B, 0 on the first round) that needs no counter in the shared policy.
 *
 * Options (defaults, spec §5.2): n_sink=4, n_recent=min(W,⌊b/4⌋), window=51
 * (W; §5.2's value for B = 512: pass clamp(round(0.1·B), 16, B) for other
 * chunk sizes), rho=0.37, temp=1, seed=0, noise=persistent|fresh,
 * uniform=0|1, b_work=b, proxy_causal=1 (the kernel's statistics are
 * causal; 0 is refused).  Aliases: sinks, recent, W, T.
 * Parameters: i[0] n_sink, i[1] n_recent, i[2] W, i[3] seed, i[4] noise
 * (0 persistent, 1 fresh), i[5] uniform, i[6] b_work, i[7] proxy_causal;
 * f[0] rho, f[1] temp.  n_recent and b_work are -1 ("auto") until check()
 * resolves them, so describe() prints the values in force.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/cache/policy_ops.h"

enum {
	NACL_N_SINK = 0,
	NACL_N_RECENT = 1,
	NACL_W = 2,
	NACL_SEED = 3,
	NACL_NOISE = 4,
	NACL_UNIFORM = 5,
	NACL_B_WORK = 6,
	NACL_CAUSAL = 7
};
enum { NACL_RHO = 0, NACL_TEMP = 1 };
enum { NACL_NOISE_PERSISTENT = 0, NACL_NOISE_FRESH = 1 };
static const char *const noises[] = { "persistent", "fresh", NULL }; /* by index */

#define NACL_DEFAULT_W 51

/* ------------------------------------------------------------------------ */
/* Noise                                                                     */


/* G = −ln(−ln U), U = ((x >> 11) + 0.5)·2^-53 with x = splitmix64(seed ⊕ H)
 * and H = splitmix64(splitmix64(splitmix64(splitmix64(layer) ⊕ head) ⊕ pos)
 * ⊕ stream) (spec §2.6).  ln U is evaluated without rounding U to 1, so G is
 * always finite (|G| < 38). */
double
eng_nacl_gumbel(uint64_t seed, int layer, int head, uint32_t pos, uint64_t stream)
{
	uint64_t h, x, k;
	double ln_u;

	h = kv_splitmix64((uint64_t)(uint32_t)layer);
	h = kv_splitmix64(h ^ (uint64_t)(uint32_t)head);
	h = kv_splitmix64(h ^ (uint64_t)pos);
	h = kv_splitmix64(h ^ stream);
	x = kv_splitmix64(seed ^ h);
	k = x >> 11; /* < 2^53 */
	if (k < (1ull << 52)) {
		/* k + 0.5 is exact below 2^52 */
		ln_u = log(((double)k + 0.5) * 0x1p-53);
	} else {
		/* 1 − U = (2^53 − 1 − k + 0.5)·2^-53, exact; U >= 1/2 */
		ln_u = log1p(-((double)((1ull << 53) - 1 - k) + 0.5) * 0x1p-53);
	}
	return -log(-ln_u);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

/* Write a reason when the caller gave a buffer. */
static int
nacl_fail(char *why, size_t why_len, const char *msg, const char *val)
{
	return eng_fail(why, why_len, ENG_ERR_ARG, "nacl: %s (got '%s')", msg, val ? val : "");
}

/* Set option key=val, or every default when key is NULL. */
static int
nacl_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	double t;

	if (!key) {
		p->i[NACL_N_SINK] = 4;
		p->i[NACL_N_RECENT] = -1;
		p->i[NACL_W] = NACL_DEFAULT_W;
		p->i[NACL_SEED] = 0;
		p->i[NACL_NOISE] = NACL_NOISE_PERSISTENT;
		p->i[NACL_UNIFORM] = 0;
		p->i[NACL_B_WORK] = -1;
		p->i[NACL_CAUSAL] = 1;
		p->f[NACL_RHO] = 0.37;
		p->f[NACL_TEMP] = 1.0;
		return 0;
	}
	if (!strcmp(key, "n_sink") || !strcmp(key, "sinks")) {
		if (eng_policy_parse_int(val, 0, 1 << 24, &p->i[NACL_N_SINK]))
			return nacl_fail(why, why_len, "n_sink must be an integer in [0, 2^24]", val);
		return 0;
	}
	if (!strcmp(key, "n_recent") || !strcmp(key, "recent")) {
		if (eng_policy_parse_int(val, 0, 1 << 24, &p->i[NACL_N_RECENT]))
			return nacl_fail(why, why_len, "n_recent must be an integer in [0, 2^24]", val);
		return 0;
	}
	if (!strcmp(key, "window") || !strcmp(key, "W")) {
		if (eng_policy_parse_int(val, 1, 1 << 16, &p->i[NACL_W]))
			return nacl_fail(why, why_len, "window (W) must be an integer in [1, 65536]",
			    val);
		return 0;
	}
	if (!strcmp(key, "seed")) {
		if (eng_policy_parse_int(val, 0, INT64_MAX, &p->i[NACL_SEED]))
			return nacl_fail(why, why_len, "seed must be an integer in [0, 2^63)", val);
		return 0;
	}
	if (!strcmp(key, "b_work")) {
		if (eng_policy_parse_int(val, 1, (int64_t)1 << 40, &p->i[NACL_B_WORK]))
			return nacl_fail(why, why_len, "b_work must be a positive integer", val);
		return 0;
	}
	if (!strcmp(key, "rho")) {
		if (eng_policy_parse_float(val, 0.0, 1.0, &p->f[NACL_RHO]))
			return nacl_fail(why, why_len, "rho must be a number in [0, 1]", val);
		return 0;
	}
	if (!strcmp(key, "temp") || !strcmp(key, "T")) {
		if (eng_policy_parse_float(val, 0.0, 1e30, &t) || !(t > 0.0))
			return nacl_fail(why, why_len, "temp (T) must be a finite number > 0", val);
		p->f[NACL_TEMP] = t;
		return 0;
	}
	if (!strcmp(key, "noise")) {
		if (eng_policy_parse_name(val, noises, &p->i[NACL_NOISE]))
			return nacl_fail(why, why_len, "noise must be persistent or fresh", val);
		return 0;
	}
	if (!strcmp(key, "uniform")) {
		if (eng_policy_parse_int(val, 0, 1, &p->i[NACL_UNIFORM]))
			return nacl_fail(why, why_len, "uniform must be 0 or 1", val);
		return 0;
	}
	if (!strcmp(key, "proxy_causal")) {
		if (eng_policy_parse_int(val, 0, 1, &p->i[NACL_CAUSAL]))
			return nacl_fail(why, why_len, "proxy_causal must be 0 or 1", val);
		return 0;
	}
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "policy nacl has no option '%s' (n_sink, n_recent, window, rho, temp, seed, "
	    "noise, uniform, b_work, proxy_causal)", key);
}

/* Resolve the automatic defaults, then validate the whole set (§2.7, §7 #17). */
static int
nacl_check(struct eng_policy *p, char *why, size_t why_len)
{
	int64_t b = p->budget;

	if (p->i[NACL_N_RECENT] < 0)
		p->i[NACL_N_RECENT] = p->i[NACL_W] < b / 4 ? p->i[NACL_W] : b / 4;
	if (p->i[NACL_B_WORK] < 0)
		p->i[NACL_B_WORK] = b;
	if (p->i[NACL_N_SINK] + p->i[NACL_N_RECENT] >= b)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "nacl: n_sink (%lld) + n_recent (%lld) must be below the budget (%lld)",
		    (long long)p->i[NACL_N_SINK], (long long)p->i[NACL_N_RECENT],
		    (long long)b);
	if (p->i[NACL_B_WORK] < b)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "nacl: b_work (%lld) must be at least the budget (%lld)",
		    (long long)p->i[NACL_B_WORK], (long long)b);
	if (!p->i[NACL_CAUSAL])
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "nacl: proxy_causal=0 is not supported (the attention statistics are causal)");
	if (!(p->f[NACL_RHO] >= 0.0 && p->f[NACL_RHO] <= 1.0) || !(p->f[NACL_TEMP] > 0.0) ||
	    p->i[NACL_W] < 1)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "nacl: need 0 <= rho <= 1, temp > 0 and window >= 1");
	return 0;
}

/* Shortest "%.Ng" that reads back as the same double, so two profiles share
 * a description only if their parameters are equal. */
static int
nacl_fmt_double(char *buf, size_t cap, double v)
{
	int prec;
	for (prec = 6; prec < 17; prec++) {
		char tmp[40];
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	return snprintf(buf, cap, "%.*g", prec, v);
}

/* Append every parameter, defaults included, in a fixed order. */
static size_t
nacl_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	char rho[40], temp[40];
	int n;

	nacl_fmt_double(rho, sizeof(rho), p->f[NACL_RHO]);
	nacl_fmt_double(temp, sizeof(temp), p->f[NACL_TEMP]);
	n = snprintf(buf, cap,
	    ",n_sink=%lld,n_recent=%lld,window=%lld,rho=%s,temp=%s,seed=%lld,noise=%s,"
	    "uniform=%lld,b_work=%lld,proxy_causal=%lld",
	    (long long)p->i[NACL_N_SINK], (long long)p->i[NACL_N_RECENT], (long long)p->i[NACL_W],
	    rho, temp, (long long)p->i[NACL_SEED],
	    noises[p->i[NACL_NOISE]],
	    (long long)p->i[NACL_UNIFORM], (long long)p->i[NACL_B_WORK],
	    (long long)p->i[NACL_CAUSAL]);
	return n > 0 ? (size_t)n : 0;
}

/* The proxies are the chunk's last min(W, n_tok) queries (§4.2 step 4). */
static int64_t
nacl_stat_from(const struct eng_policy *p, int64_t n_tok)
{
	return n_tok > p->i[NACL_W] ? n_tok - p->i[NACL_W] : 0;
}

/* The last chunk must hold a full proxy window (§4.2 chunking rule). */
static int64_t
nacl_window(const struct eng_policy *p)
{
	return p->i[NACL_W];
}

/* ------------------------------------------------------------------------ */
/* Selection                                                                 */

/* A ranked candidate: key (S for top-k, S/T + G for sampling), position. */
struct nacl_ent {
	double key;
	uint32_t pos;
	int64_t idx;
};

/* Larger key first; on equal keys the larger position (§2.5). */
static int
nacl_ent_cmp(const void *a, const void *b)
{
	const struct nacl_ent *x = a, *y = b;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return (x->pos < y->pos) - (x->pos > y->pos);
}

/* A NaN statistic ranks last instead of breaking the sort's ordering. */
static double
nacl_key(double v)
{
	return v == v ? v : -(double)INFINITY;
}

/* Select head m's units down to its target t (§4.4); ent holds >= h->n. */
static void
nacl_select_head(const struct eng_policy *p, struct eng_evict *e, int m, int64_t t,
    uint64_t stream, struct nacl_ent *ent)
{
	struct eng_evict_head *h = &e->h[m];
	uint32_t n_sink = (uint32_t)p->i[NACL_N_SINK], n_recent = (uint32_t)p->i[NACL_N_RECENT];
	uint32_t recent_from = e->chunk_end > n_recent ? e->chunk_end - n_recent : 0;
	double temp = p->f[NACL_TEMP];
	int64_t i, n_cand = 0, slots, b_rand, b_top, n_rest;

	for (i = 0; i < h->n; i++)
		h->score[i] = h->stat ? h->stat[i] : 0.0f;
	if (eng_policy_keep_if_fits(h, t))
		return;
	for (i = 0; i < h->n; i++) {
		if (h->pos[i] < n_sink || h->pos[i] >= recent_from) {
			h->keep[h->n_keep++] = i; /* protected */
		} else {
			ent[n_cand].key = nacl_key((double)h->score[i]);
			ent[n_cand].pos = h->pos[i];
			ent[n_cand].idx = i;
			n_cand++;
		}
	}
	slots = t > h->n_keep ? t - h->n_keep : 0;
	b_rand = (int64_t)floor(p->f[NACL_RHO] * (double)slots + 0.5);
	if (b_rand > slots)
		b_rand = slots;
	b_top = slots - b_rand;
	if (b_top > n_cand)
		b_top = n_cand;

	qsort(ent, (size_t)n_cand, sizeof(*ent), nacl_ent_cmp);
	for (i = 0; i < b_top; i++)
		h->keep[h->n_keep++] = ent[i].idx;

	/* Gumbel-top-k over the rest: keys from the unit's own noise */
	n_rest = n_cand - b_top;
	for (i = b_top; i < n_cand; i++) {
		double g = eng_nacl_gumbel((uint64_t)p->i[NACL_SEED], e->layer, m, ent[i].pos, stream);
		ent[i].key = p->i[NACL_UNIFORM] ? g : nacl_key(ent[i].key / temp + g);
	}
	qsort(ent + b_top, (size_t)n_rest, sizeof(*ent), nacl_ent_cmp);
	if (b_rand > n_rest)
		b_rand = n_rest;
	for (i = 0; i < b_rand; i++)
		h->keep[h->n_keep++] = ent[b_top + i].idx;
	eng_policy_sort_idx(h->keep, h->n_keep);
}

/* Score every unit of e->layer and choose each head's kept set. */
static int
nacl_select(struct eng_policy *p, struct eng_evict *e)
{
	int64_t t = e->is_last ? p->budget : p->i[NACL_B_WORK], n_max = 1;
	uint32_t start = e->n_tok > 0 && (uint64_t)e->n_tok < e->chunk_end ?
	    e->chunk_end - (uint32_t)e->n_tok : 0;
	uint64_t stream = p->i[NACL_NOISE] == NACL_NOISE_FRESH ? start : 0;
	struct nacl_ent *ent;
	int m;

	for (m = 0; m < e->n_head_kv; m++)
		if (e->h[m].n > n_max)
			n_max = e->h[m].n;
	ent = malloc((size_t)n_max * sizeof(*ent));
	if (!ent)
		return ENG_ERR_NOMEM;
	/* uniform budgets: every head's target is t (§4.2; an allocator would
	 * hand each head its own and the split follows it) */
	for (m = 0; m < e->n_head_kv; m++)
		nacl_select_head(p, e, m, t, stream, ent);
	free(ent);
	return 0;
}

/* The working budget b_work when it is above the budget. */
static int64_t
nacl_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	(void)n_doc;
	return p->i[NACL_B_WORK] > p->budget ? p->i[NACL_B_WORK] : p->budget;
}

const struct eng_policy_ops eng_policy_nacl = {
	.name = "nacl",
	.set = nacl_set,
	.check = nacl_check,
	.describe = nacl_describe,
	.stat_from = nacl_stat_from,
	.window = nacl_window,
	.select = nacl_select,
	.kept_per_head = nacl_kept_per_head,
};
