/*
 * test_nacl.c: the NaCl eviction policy (engine/cache/policy_nacl.c) at the
 * selection level, through its ops table with hand-built struct eng_evict
 * inputs; no model is needed (spec/nacl.md §7, the properties a selection
 * can show: 1, 2, 3 (order), 5, 6, 7, 8, 9, 10, 16, 17).
 *
 * The Gumbel noise is checked against constants computed once with 60-digit
 * decimal arithmetic (Python's decimal module, from the formula of §2.6 with
 * H = nested splitmix64 of layer, head, position, stream) and against an
 * independent long-double evaluation.  Every selection is compared with a
 * brute-force oracle written here from §4.4 (repeated arg-max instead of
 * sorting).  Sampling-law tests use chi-square at p = 0.001 over fixed seeds,
 * so they are deterministic.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/policy_ops.h"
#include "tests/tap.h"


#define NT_H 4 /* most KV heads a case uses */

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t nt_rng_state = 0x2545f4914f6cdd1dull;

/* xorshift64*: deterministic pseudo-random numbers. */
static uint64_t
nt_rand(void)
{
	uint64_t x = nt_rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	nt_rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform integer in [lo, hi]. */
static int64_t
nt_range(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(nt_rand() % (uint64_t)(hi - lo + 1));
}

/* Uniform float in [0, 1). */
static float
nt_unit(void)
{
	return (float)((nt_rand() >> 40) * (1.0 / 16777216.0));
}

/* splitmix64, written out again for the reference noise. */
static uint64_t
nt_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The 64 noise bits x of spec §2.6 for one unit. */
static uint64_t
nt_noise_bits(uint64_t seed, int layer, int head, uint32_t pos, uint64_t stream)
{
	uint64_t h = nt_splitmix64((uint64_t)layer);
	h = nt_splitmix64(h ^ (uint64_t)head);
	h = nt_splitmix64(h ^ (uint64_t)pos);
	h = nt_splitmix64(h ^ stream);
	return nt_splitmix64(seed ^ h);
}

/* G = −ln(−ln U) in long double, where (x >> 11) + 0.5 is exact. */
static double
nt_gumbel_ref(uint64_t seed, int layer, int head, uint32_t pos, uint64_t stream)
{
	uint64_t x = nt_noise_bits(seed, layer, head, pos, stream);
	long double u = ((long double)(x >> 11) + 0.5L) * 0x1p-53L;
	return (double)(-logl(-logl(u)));
}

/* Test-side copy of a NaCl configuration; the policy gets it as options. */
struct nt_prm {
	int64_t b, n_sink, n_recent, window, seed, b_work;
	double rho, temp;
	int fresh, uniform;
};

/* Defaults of spec §5.2's tiny-model line, resolved. */
static struct nt_prm
nt_prm_tiny(void)
{
	struct nt_prm q = { .b = 24, .n_sink = 2, .n_recent = 4, .window = 4, .seed = 0,
		.b_work = 24, .rho = 0.5, .temp = 1.0, .fresh = 0, .uniform = 0 };
	return q;
}

/* Apply "k=v,k=v" options on top of the defaults, then check. */
static int
nt_policy_opts(struct eng_policy *p, int64_t b, const char *opts, char *why, size_t why_len)
{
	char buf[512], *item, *save = NULL;
	int rc;

	memset(p, 0, sizeof(*p));
	p->ops = &eng_policy_nacl;
	p->budget = b;
	why[0] = 0;
	if ((rc = p->ops->set(p, NULL, NULL, why, why_len)))
		return rc;
	snprintf(buf, sizeof(buf), "%s", opts ? opts : "");
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (!eq)
			return ENG_ERR_ARG;
		*eq = 0;
		if ((rc = p->ops->set(p, item, eq + 1, why, why_len)))
			return rc;
	}
	return p->ops->check(p, why, why_len);
}

/* Build the policy for q (every parameter passed explicitly). */
static int
nt_policy(struct eng_policy *p, const struct nt_prm *q)
{
	char opts[512], why[256];
	int rc;
	snprintf(opts, sizeof(opts),
	    "n_sink=%lld,n_recent=%lld,window=%lld,rho=%.17g,temp=%.17g,seed=%lld,noise=%s,"
	    "uniform=%d,b_work=%lld",
	    (long long)q->n_sink, (long long)q->n_recent, (long long)q->window, q->rho, q->temp,
	    (long long)q->seed, q->fresh ? "fresh" : "persistent", q->uniform,
	    (long long)q->b_work);
	rc = nt_policy_opts(p, q->b, opts, why, sizeof(why));
	if (rc)
		printf("# nt_policy(%s): %s\n", opts, why);
	return rc;
}

/* One layer's eviction input: H heads with their own unit lists. */
struct nt_case {
	int layer, H;
	uint32_t chunk_end;
	int64_t n_tok;
	int is_last;
	int64_t n[NT_H];
	uint32_t *pos[NT_H];
	float *stat[NT_H];  /* NULL: no statistics */
	float *score[NT_H]; /* out */
	int64_t *keep[NT_H]; /* out, exactly n[m] long so ASan sees overruns */
	int64_t n_keep[NT_H];
};

/* Allocate every buffer for counts n[0..H) (stat too), for a chunk of
 * n_tok tokens ending at chunk_end (is_last: the document's last). */
static void
nt_case_alloc(struct nt_case *c, int H, const int64_t *n, uint32_t chunk_end, int64_t n_tok,
    int is_last)
{
	int m;
	memset(c, 0, sizeof(*c));
	c->H = H;
	c->chunk_end = chunk_end;
	c->n_tok = n_tok;
	c->is_last = is_last;
	for (m = 0; m < H; m++) {
		size_t k = (size_t)(n[m] > 0 ? n[m] : 1);
		c->n[m] = n[m];
		c->pos[m] = calloc(k, sizeof(uint32_t));
		c->stat[m] = calloc(k, sizeof(float));
		c->score[m] = calloc(k, sizeof(float));
		c->keep[m] = calloc(k, sizeof(int64_t));
		if (!c->pos[m] || !c->stat[m] || !c->score[m] || !c->keep[m])
			abort(); /* test harness: out of memory */
	}
}

/* Free what nt_case_alloc allocated. */
static void
nt_case_free(struct nt_case *c)
{
	int m;
	for (m = 0; m < c->H; m++) {
		free(c->pos[m]);
		free(c->stat[m]);
		free(c->score[m]);
		free(c->keep[m]);
	}
	memset(c, 0, sizeof(*c));
}

/* Run the policy's select on c; returns its status. */
static int
nt_case_run(struct eng_policy *p, struct nt_case *c)
{
	struct eng_evict_head h[NT_H];
	struct eng_evict e;
	int64_t total = 0, *scratch;
	int m, rc;

	memset(&e, 0, sizeof(e));
	memset(h, 0, sizeof(h));
	for (m = 0; m < c->H; m++) {
		h[m].n = c->n[m];
		h[m].pos = c->pos[m];
		h[m].score = c->score[m];
		h[m].stat = c->stat[m];
		h[m].keep = c->keep[m];
		h[m].n_keep = -1;
		total += c->n[m];
		for (int64_t i = 0; i < c->n[m]; i++)
			c->score[m][i] = -12345.0f; /* must be overwritten */
	}
	scratch = calloc((size_t)(total > 0 ? total : 1), sizeof(int64_t));
	if (!scratch)
		abort();
	e.layer = c->layer;
	e.n_layer = 30;
	e.n_head_kv = c->H;
	e.head_dim = 8;
	e.is_last = c->is_last;
	e.chunk_end = c->chunk_end;
	e.n_tok = c->n_tok;
	e.n_doc = c->chunk_end;
	e.h = h;
	e.scratch = scratch;
	rc = p->ops->select(p, &e);
	for (m = 0; m < c->H; m++)
		c->n_keep[m] = h[m].n_keep;
	free(scratch);
	return rc;
}

/* Brute-force §4.4 for one head: kept[u] = 1 for every unit kept.
 * Repeated arg-max, so it shares no sorting code with the policy. */
static void
nt_oracle(const struct nt_prm *q, int layer, int head, const uint32_t *pos, const float *s,
    int64_t n, uint32_t chunk_end, int64_t n_tok, int is_last, unsigned char *kept)
{
	int64_t t = is_last ? q->b : q->b_work, n_prot = 0, slots, b_rand, b_top, k, u;
	uint32_t recent_from = chunk_end > (uint32_t)q->n_recent ?
	    chunk_end - (uint32_t)q->n_recent : 0;
	uint64_t stream = q->fresh ? (uint64_t)(chunk_end - (uint32_t)n_tok) : 0;
	unsigned char *cand = calloc((size_t)(n > 0 ? n : 1), 1);
	double *key = calloc((size_t)(n > 0 ? n : 1), sizeof(double));

	if (!cand || !key)
		abort();
	memset(kept, 0, (size_t)n);
	if (n <= t) {
		memset(kept, 1, (size_t)n);
		goto out;
	}
	for (u = 0; u < n; u++) {
		if (pos[u] < (uint32_t)q->n_sink || pos[u] >= recent_from) {
			kept[u] = 1;
			n_prot++;
		} else {
			cand[u] = 1;
		}
	}
	slots = t - n_prot > 0 ? t - n_prot : 0;
	b_rand = lround(q->rho * (double)slots);
	b_top = slots - b_rand;
	for (k = 0; k < b_top; k++) {
		int64_t best = -1;
		for (u = 0; u < n; u++)
			if (cand[u] && (best < 0 || s[u] > s[best] ||
			    (s[u] == s[best] && pos[u] > pos[best])))
				best = u;
		if (best < 0)
			break;
		kept[best] = 1;
		cand[best] = 0;
	}
	for (u = 0; u < n; u++) {
		double g = eng_nacl_gumbel((uint64_t)q->seed, layer, head, pos[u], stream);
		key[u] = q->uniform ? g : (double)s[u] / q->temp + g;
	}
	for (k = 0; k < b_rand; k++) {
		int64_t best = -1;
		for (u = 0; u < n; u++)
			if (cand[u] && (best < 0 || key[u] > key[best] ||
			    (key[u] == key[best] && pos[u] > pos[best])))
				best = u;
		if (best < 0)
			break;
		kept[best] = 1;
		cand[best] = 0;
	}
out:
	free(cand);
	free(key);
}

/* Check head m of a finished case against the oracle and the invariants
 * (§7 #1-#3, #5): 0 when all hold, else prints why and returns -1. */
static int
nt_verify_head(const struct nt_prm *q, const struct nt_case *c, int m)
{
	int64_t n = c->n[m], t = c->is_last ? q->b : q->b_work, i, j = 0;
	uint32_t recent_from = c->chunk_end > (uint32_t)q->n_recent ?
	    c->chunk_end - (uint32_t)q->n_recent : 0;
	unsigned char *want = calloc((size_t)(n > 0 ? n : 1), 1);
	int bad = 0;

	if (!want)
		abort();
	nt_oracle(q, c->layer, m, c->pos[m], c->stat[m], n, c->chunk_end, c->n_tok, c->is_last,
	    want);
	if (c->n_keep[m] != (n < t ? n : t)) {
		printf("# head %d: kept %lld of %lld, target %lld\n", m, (long long)c->n_keep[m],
		    (long long)n, (long long)t);
		bad = 1;
	}
	for (i = 0; !bad && i < c->n_keep[m]; i++) {
		if (c->keep[m][i] < 0 || c->keep[m][i] >= n ||
		    (i > 0 && c->keep[m][i] <= c->keep[m][i - 1])) {
			printf("# head %d: keep[%lld] = %lld not ascending/in range\n", m,
			    (long long)i, (long long)c->keep[m][i]);
			bad = 1;
		}
	}
	for (i = 0; !bad && i < n; i++) {
		int got = j < c->n_keep[m] && c->keep[m][j] == i;
		if (got)
			j++;
		if (got != want[i]) {
			printf("# head %d: unit %lld (pos %u, S %.9g) kept=%d, oracle %d\n", m,
			    (long long)i, c->pos[m][i], (double)c->stat[m][i], got, want[i]);
			bad = 1;
		}
		if (!got && (c->pos[m][i] < (uint32_t)q->n_sink || c->pos[m][i] >= recent_from)) {
			printf("# head %d: protected pos %u evicted\n", m, c->pos[m][i]);
			bad = 1;
		}
		if (c->score[m][i] != c->stat[m][i]) {
			printf("# head %d: score[%lld] = %g, statistic %g\n", m, (long long)i,
			    (double)c->score[m][i], (double)c->stat[m][i]);
			bad = 1;
		}
	}
	free(want);
	return bad ? -1 : 0;
}

/* Fill head m with n units: strictly increasing positions ending at
 * chunk_end − 1, the last n_tok consecutive (the chunk), gaps before. */
static void
nt_fill_positions(struct nt_case *c, int m, uint32_t chunk_end, int64_t n_tok)
{
	int64_t n = c->n[m], i;
	uint32_t p = chunk_end;
	for (i = n - 1; i >= 0; i--) {
		p--;
		c->pos[m][i] = p;
		if (i < n - n_tok && p > (uint32_t)i && nt_range(0, 2) == 0)
			p -= (uint32_t)nt_range(0, (int64_t)(p - (uint32_t)i) < 5 ?
			    (int64_t)(p - (uint32_t)i) : 5); /* an evicted gap */
	}
}

/* Kept positions of head m, as a malloc'd list. */
static uint32_t *
nt_kept_positions(const struct nt_case *c, int m)
{
	uint32_t *out = malloc((size_t)(c->n_keep[m] > 0 ? c->n_keep[m] : 1) * sizeof(uint32_t));
	int64_t i;
	if (!out)
		abort();
	for (i = 0; i < c->n_keep[m]; i++)
		out[i] = c->pos[m][c->keep[m][i]];
	return out;
}

/* ------------------------------------------------------------------------ */
/* Noise                                                                     */

/* §2.6 / §7 #9: hard-coded values of the hash and G, and agreement with an
 * independent long-double evaluation. */
static enum tap_result
test_gumbel_constants(void)
{
	/* (seed, layer, head, pos, stream) -> x, G; G to 20 digits from decimal */
	static const struct {
		uint64_t seed;
		int layer, head;
		uint32_t pos;
		uint64_t stream, x;
		double g;
	} ref[] = {
		{ 0, 0, 0, 0, 0, 0x78ae5a9a6b5fd45eull, 0.28498416329078765514 },
		{ 42, 3, 1, 1000, 0, 0xc9ec36854733d078ull, 1.4384618930358292319 },
		{ 7, 29, 2, 123456, 5, 0xa5478f130bb880a5ull, 0.82658874504609056971 },
		{ 0, 0, 0, 1, 0, 0x3ceea767acc0e20dull, -0.36145399643472701082 },
	};
	size_t i;
	int k;

	for (i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		uint64_t x = nt_noise_bits(ref[i].seed, ref[i].layer, ref[i].head, ref[i].pos,
		    ref[i].stream);
		double g = eng_nacl_gumbel(ref[i].seed, ref[i].layer, ref[i].head, ref[i].pos,
		    ref[i].stream);
		TAP_CHECK(x == ref[i].x, "case %zu: x = %016llx", i, (unsigned long long)x);
		TAP_CHECK(fabs(g - ref[i].g) <= 1e-14 * fmax(1.0, fabs(ref[i].g)),
		    "case %zu: G = %.20g, want %.20g", i, g, ref[i].g);
	}
	/* every argument matters; repeated calls give the same bits */
	TAP_CHECK(eng_nacl_gumbel(1, 0, 0, 0, 0) != eng_nacl_gumbel(0, 0, 0, 0, 0), "seed");
	TAP_CHECK(eng_nacl_gumbel(0, 1, 0, 0, 0) != eng_nacl_gumbel(0, 0, 0, 0, 0), "layer");
	TAP_CHECK(eng_nacl_gumbel(0, 0, 1, 0, 0) != eng_nacl_gumbel(0, 0, 0, 0, 0), "head");
	TAP_CHECK(eng_nacl_gumbel(0, 0, 0, 0, 1) != eng_nacl_gumbel(0, 0, 0, 0, 0), "stream");
	for (k = 0; k < 20000; k++) {
		uint64_t seed = nt_rand() >> (k % 2 ? 1 : 40);
		int layer = (int)nt_range(0, 63), head = (int)nt_range(0, 15);
		uint32_t pos = (uint32_t)nt_range(0, 1 << 20);
		uint64_t stream = k % 3 ? 0 : (uint64_t)nt_range(0, 1 << 20);
		double g = eng_nacl_gumbel(seed, layer, head, pos, stream);
		double r = nt_gumbel_ref(seed, layer, head, pos, stream);
		TAP_CHECK(isfinite(g) && fabs(g - r) <= 1e-13 * fmax(1.0, fabs(r)),
		    "G(%llu,%d,%d,%u,%llu) = %.17g, reference %.17g", (unsigned long long)seed,
		    layer, head, pos, (unsigned long long)stream, g, r);
		TAP_CHECK(g == eng_nacl_gumbel(seed, layer, head, pos, stream), "not repeatable");
	}
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

/* Defaults (spec §5.2), describe, stat_from, window, and a describe round
 * trip. */
static enum tap_result
test_defaults(void)
{
	struct eng_policy p, r;
	char why[256], d1[512], d2[512], opts[512];
	size_t n;

	TAP_CHECK(nt_policy_opts(&p, 128, NULL, why, sizeof(why)) == 0, "%s", why);
	n = p.ops->describe(&p, d1, sizeof(d1));
	TAP_CHECK(n == strlen(d1), "length %zu", n);
	TAP_CHECK(!strcmp(d1, ",n_sink=4,n_recent=32,window=51,rho=0.37,temp=1,seed=0,"
	    "noise=persistent,uniform=0,b_work=128,proxy_causal=1"), "describe: %s", d1);
	TAP_CHECK(p.ops->window(&p) == 51, "window");
	TAP_CHECK(p.ops->stat_from(&p, 512) == 461, "stat_from(512)");
	TAP_CHECK(p.ops->stat_from(&p, 51) == 0 && p.ops->stat_from(&p, 30) == 0, "short chunk");
	TAP_CHECK(!strcmp(p.ops->name, "nacl"), "name");

	/* n_recent default is min(W, ⌊b/4⌋) */
	TAP_CHECK(nt_policy_opts(&p, 1000, NULL, why, sizeof(why)) == 0, "%s", why);
	TAP_CHECK(p.i[1] == 51, "n_recent = %lld", (long long)p.i[1]);
	TAP_CHECK(nt_policy_opts(&p, 100, "window=16", why, sizeof(why)) == 0, "%s", why);
	TAP_CHECK(p.i[1] == 16, "n_recent = %lld", (long long)p.i[1]);

	/* every option, aliases, then describe -> options -> same description */
	TAP_CHECK(nt_policy_opts(&p, 64, "sinks=2,recent=8,W=20,rho=0.123456789,T=0.7,"
	    "seed=99,noise=fresh,uniform=1,b_work=100", why, sizeof(why)) == 0, "%s", why);
	p.ops->describe(&p, d1, sizeof(d1));
	TAP_CHECK(!strcmp(d1, ",n_sink=2,n_recent=8,window=20,rho=0.123456789,temp=0.7,seed=99,"
	    "noise=fresh,uniform=1,b_work=100,proxy_causal=1"), "describe: %s", d1);
	snprintf(opts, sizeof(opts), "%s", d1 + 1);
	TAP_CHECK(nt_policy_opts(&r, 64, opts, why, sizeof(why)) == 0, "%s", why);
	r.ops->describe(&r, d2, sizeof(d2));
	TAP_CHECK(!strcmp(d1, d2), "round trip: %s vs %s", d1, d2);
	TAP_CHECK(r.f[0] == p.f[0] && r.f[1] == p.f[1], "floats survive describe");
	/* truncated output still reports the full length */
	TAP_CHECK(p.ops->describe(&p, d2, 10) == strlen(d1), "snprintf semantics");
	return TAP_PASS;
}

/* §2.7, §7 #17: bad configurations are refused with a reason. */
static enum tap_result
test_config_errors(void)
{
	static const struct {
		int64_t b;
		const char *opts, *reason;
	} bad[] = {
		{ 32, "n_sink=10,n_recent=22", "n_sink (10) + n_recent (22)" },
		{ 4, "n_sink=4", "must be below the budget" }, /* n_recent auto = 1 */
		{ 24, "n_sink=24,n_recent=0", "must be below the budget" },
		{ 24, "rho=1.5", "rho" },
		{ 24, "rho=-0.1", "rho" },
		{ 24, "rho=nan", "rho" },
		{ 24, "temp=0", "temp" },
		{ 24, "T=-1", "temp" },
		{ 24, "temp=inf", "temp" },
		{ 24, "window=0", "window" },
		{ 24, "W=x", "window" },
		{ 24, "noise=sometimes", "persistent or fresh" },
		{ 24, "uniform=2", "uniform" },
		{ 24, "b_work=10", "b_work (10) must be at least the budget (24)" },
		{ 24, "proxy_causal=0", "causal" },
		{ 24, "seed=-1", "seed" },
		{ 24, "n_sink=", "n_sink" },
		{ 24, "lambda=1", "no option 'lambda'" },
	};
	static const struct {
		int64_t b;
		const char *opts;
	} good[] = {
		{ 24, "n_sink=0,n_recent=0" },
		{ 24, "n_sink=2,n_recent=4,window=4,rho=0.5" },
		{ 24, "rho=0" },
		{ 24, "rho=1" },
		{ 24, "n_sink=23,n_recent=0" },
		{ 1, "n_sink=0,n_recent=0,rho=1" },
		{ 24, "b_work=24" },
		{ 24, "seed=9223372036854775807" },
	};
	struct eng_policy p;
	char why[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = nt_policy_opts(&p, bad[i].b, bad[i].opts, why, sizeof(why));
		TAP_CHECK(rc == ENG_ERR_ARG, "'%s' accepted (rc %d)", bad[i].opts, rc);
		TAP_CHECK(strstr(why, bad[i].reason), "'%s': reason '%s'", bad[i].opts, why);
		tap_diag("refused %-24s %s", bad[i].opts, why);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		TAP_CHECK(nt_policy_opts(&p, good[i].b, good[i].opts, why, sizeof(why)) == 0,
		    "'%s' refused: %s", good[i].opts, why);
	return TAP_PASS;
}

/* eng_policy_create finds "nacl" once the registry lists it. */
static enum tap_result
test_registry(void)
{
	struct eng_policy *p = NULL;
	char why[256], d[512];
	int rc = eng_policy_create(&p, "nacl", "rho=0.25,seed=3", 64, why, sizeof(why));
	if (rc && strstr(why, "unknown policy")) {
		tap_diag("nacl is not in the registry yet: %s", why);
		return TAP_SKIP;
	}
	TAP_CHECK(rc == 0 && p, "create: %s", why);
	eng_policy_describe(p, d, sizeof(d));
	TAP_CHECK(!strcmp(d, "nacl:budget=64,n_sink=4,n_recent=16,window=51,rho=0.25,temp=1,"
	    "seed=3,noise=persistent,uniform=0,b_work=64,proxy_causal=1"), "describe: %s", d);
	eng_policy_free(p);
	rc = eng_policy_create(&p, "nacl", "n_sink=40,n_recent=30", 64, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_ARG && !p && strstr(why, "budget"), "bad profile: %s", why);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Selection                                                                 */

/* §7 #1, #2, #5, #16: random configurations (ties, gaps, fresh and
 * persistent noise, uniform, intermediate targets, short lists) equal the
 * oracle and keep the protected sets, exactly min(t, n) units, ascending. */
static enum tap_result
test_oracle(void)
{
	int it, m;

	for (it = 0; it < 600; it++) {
		struct nt_prm q;
		struct eng_policy p;
		struct nt_case c;
		int64_t n[NT_H];
		int H = (int)nt_range(1, NT_H), mode = (int)nt_range(0, 4);
		uint32_t chunk_end;
		int64_t n_tok;
		int layer, is_last;
		static const double rhos[] = { 0.0, 0.25, 0.37, 0.5, 1.0 };

		memset(&q, 0, sizeof(q));
		q.n_sink = nt_range(0, 6);
		q.n_recent = nt_range(0, 12);
		q.window = nt_range(1, 32);
		q.b = q.n_sink + q.n_recent + nt_range(1, 60);
		q.b_work = q.b + (nt_range(0, 1) ? 0 : nt_range(0, 40));
		q.rho = it % 7 == 6 ? (double)nt_unit() : rhos[nt_range(0, 4)];
		q.temp = it % 3 == 0 ? 1.0 : (it % 3 == 1 ? 0.05 : 4.0);
		q.seed = (int64_t)(nt_rand() >> 1);
		q.fresh = (int)nt_range(0, 1);
		q.uniform = nt_range(0, 5) == 0;
		if (nt_policy(&p, &q))
			return TAP_FAIL;
		for (m = 0; m < H; m++)
			n[m] = it % 10 == 0 ? nt_range(0, q.b + 2) : nt_range(1, 3 * q.b + 40);
		layer = (int)nt_range(0, 29);
		is_last = (int)nt_range(0, 1);
		n_tok = nt_range(1, 40);
		chunk_end = (uint32_t)nt_range(3 * q.b + 40, 5000);
		nt_case_alloc(&c, H, n, chunk_end, n_tok, is_last);
		c.layer = layer;
		for (m = 0; m < H; m++) {
			int64_t i;
			nt_fill_positions(&c, m, chunk_end, n_tok < n[m] ? n_tok : n[m]);
			for (i = 0; i < n[m]; i++) {
				float s = nt_unit() * 2.0f;
				if (mode == 1)
					s = (float)nt_range(0, 3) * 0.25f; /* many ties */
				else if (mode == 2)
					s = 0.5f; /* all equal */
				else if (mode == 3)
					s *= 0.01f; /* realistic scale */
				c.stat[m][i] = s;
			}
		}
		TAP_CHECK(nt_case_run(&p, &c) == 0, "select failed");
		for (m = 0; m < H; m++)
			TAP_CHECK(nt_verify_head(&q, &c, m) == 0,
			    "iteration %d: b=%lld b_work=%lld n=%lld n_sink=%lld n_recent=%lld rho=%g "
			    "fresh=%d uniform=%d last=%d", it, (long long)q.b, (long long)q.b_work,
			    (long long)c.n[m], (long long)q.n_sink, (long long)q.n_recent, q.rho,
			    q.fresh, q.uniform, c.is_last);
		nt_case_free(&c);
	}
	return TAP_PASS;
}

/* Spec §5.2's example: b = 128 gives 4 sinks, 32 recent, 92 scored slots of
 * which 34 random and 58 top; the top-58 by score are all kept. */
static enum tap_result
test_split_counts(void)
{
	struct nt_prm q = { .b = 128, .n_sink = 4, .n_recent = 32, .window = 51, .b_work = 128,
		.rho = 0.37, .temp = 1.0 };
	struct eng_policy p;
	struct nt_case c;
	int64_t n = 640, i, kept_cand = 0, kept_top = 0, *order, k, j;
	unsigned char *kept;

	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	nt_case_alloc(&c, 1, &n, 640, 512, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)i;
		c.stat[0][i] = nt_unit() * 0.05f;
	}
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 128, "kept %lld",
	    (long long)c.n_keep[0]);
	TAP_CHECK(nt_verify_head(&q, &c, 0) == 0, "oracle");
	kept = calloc((size_t)n, 1);
	order = malloc((size_t)n * sizeof(int64_t));
	if (!kept || !order)
		abort();
	for (i = 0; i < c.n_keep[0]; i++)
		kept[c.keep[0][i]] = 1;
	/* candidates [4, 608) ranked by score (distinct with probability ~1) */
	for (k = 0, i = 4; i < 608; i++)
		order[k++] = i;
	for (i = 0; i < k; i++)
		for (j = i + 1; j < k; j++)
			if (c.stat[0][order[j]] > c.stat[0][order[i]]) {
				int64_t t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (i = 0; i < k; i++) {
		kept_cand += kept[order[i]];
		kept_top += i < 58 && kept[order[i]];
	}
	for (i = 0; i < 4; i++)
		TAP_CHECK(kept[i], "sink %lld", (long long)i);
	for (i = 608; i < 640; i++)
		TAP_CHECK(kept[i], "recent %lld", (long long)i);
	TAP_CHECK(kept_cand == 92 && kept_top == 58, "candidates kept %lld, of the top 58 %lld",
	    (long long)kept_cand, (long long)kept_top);
	free(kept);
	free(order);
	nt_case_free(&c);
	return TAP_PASS;
}

/* §2.5: on equal scores the larger position wins, in top-k and with equal
 * Gumbel keys (uniform keys are distinct, so ties show in top-k). */
static enum tap_result
test_ties(void)
{
	struct nt_prm q = nt_prm_tiny();
	struct eng_policy p;
	struct nt_case c;
	int64_t n = 60, i;

	q.rho = 0.0;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	nt_case_alloc(&c, 1, &n, 100, 16, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)(i < 2 ? i : 40 + i); /* sinks 0, 1; then 42..99 */
		c.stat[0][i] = 0.25f;
	}
	TAP_CHECK(nt_case_run(&p, &c) == 0, "select");
	/* 2 sinks + recent 96..99 + the 18 newest candidates 78..95 */
	TAP_CHECK(c.n_keep[0] == 24, "kept %lld", (long long)c.n_keep[0]);
	TAP_CHECK(c.pos[0][c.keep[0][2]] == 78, "first candidate kept: %u",
	    c.pos[0][c.keep[0][2]]);
	TAP_CHECK(nt_verify_head(&q, &c, 0) == 0, "oracle");
	/* a tie exactly at the boundary: the newer of two equal scores */
	for (i = 0; i < n; i++)
		c.stat[0][i] = 0.1f;
	c.stat[0][10] = c.stat[0][30] = 0.9f; /* pos 50 and 70 */
	c.stat[0][20] = c.stat[0][25] = 0.5f; /* pos 60 and 65: one slot left? */
	q.b = 2 + 4 + 3;
	q.b_work = q.b;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 9, "select");
	TAP_CHECK(c.pos[0][c.keep[0][2]] == 50 && c.pos[0][c.keep[0][3]] == 65 &&
	    c.pos[0][c.keep[0][4]] == 70, "kept %u %u %u", c.pos[0][c.keep[0][2]],
	    c.pos[0][c.keep[0][3]], c.pos[0][c.keep[0][4]]);
	nt_case_free(&c);
	return TAP_PASS;
}

/* §7 #6: ρ = 0 is a pure top-k that ignores the seed and the noise mode. */
static enum tap_result
test_rho0_topk(void)
{
	struct nt_prm q = nt_prm_tiny();
	struct eng_policy p;
	struct nt_case c;
	int64_t n[2] = { 200, 150 }, i;
	uint32_t *first[2] = { NULL, NULL };
	int s, m;

	q.rho = 0.0;
	nt_case_alloc(&c, 2, n, 400, 16, 1);
	c.layer = 4;
	for (m = 0; m < 2; m++) {
		nt_fill_positions(&c, m, 400, 16);
		for (i = 0; i < n[m]; i++)
			c.stat[m][i] = nt_unit();
	}
	for (s = 0; s < 30; s++) {
		q.seed = s * 1000003;
		q.fresh = s % 2;
		q.uniform = s % 3 == 0;
		TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
		TAP_CHECK(nt_case_run(&p, &c) == 0, "select");
		for (m = 0; m < 2; m++) {
			TAP_CHECK(nt_verify_head(&q, &c, m) == 0, "seed %d head %d", s, m);
			if (!first[m]) {
				first[m] = nt_kept_positions(&c, m);
			} else {
				uint32_t *k = nt_kept_positions(&c, m);
				TAP_CHECK(!memcmp(k, first[m], (size_t)c.n_keep[m] * sizeof(uint32_t)),
				    "seed %d changed a rho=0 selection", s);
				free(k);
			}
		}
	}
	free(first[0]);
	free(first[1]);
	nt_case_free(&c);
	return TAP_PASS;
}

/* §7 #6: the same seed gives the same bits; another seed changes the random
 * part only (protected and top-k stay). */
static enum tap_result
test_seeds(void)
{
	struct nt_prm q = nt_prm_tiny();
	struct eng_policy p;
	struct nt_case c;
	int64_t n = 300, i, b_top = 9; /* slots 18: round(0.5·18) = 9 random */
	int64_t *top = malloc((size_t)b_top * sizeof(int64_t));
	uint32_t *base, *again;
	int s, differ = 0;

	if (!top)
		abort();
	nt_case_alloc(&c, 1, &n, 300, 16, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)i;
		c.stat[0][i] = nt_unit() * 0.1f;
	}
	/* the top-9 candidates by score, ranked here */
	for (s = 0; s < b_top; s++) {
		int64_t best = -1;
		for (i = 2; i < 296; i++) {
			int64_t j, taken = 0;
			for (j = 0; j < s; j++)
				taken |= top[j] == i;
			if (!taken && (best < 0 || c.stat[0][i] > c.stat[0][best]))
				best = i;
		}
		top[s] = best;
	}
	q.seed = 5;
	TAP_CHECK(nt_policy(&p, &q) == 0 && nt_case_run(&p, &c) == 0, "select");
	base = nt_kept_positions(&c, 0);
	TAP_CHECK(nt_case_run(&p, &c) == 0, "select");
	again = nt_kept_positions(&c, 0);
	TAP_CHECK(!memcmp(base, again, 24 * sizeof(uint32_t)), "same seed, different result");
	free(again);
	for (s = 6; s < 46; s++) {
		unsigned char kept[300] = { 0 };
		q.seed = s;
		TAP_CHECK(nt_policy(&p, &q) == 0 && nt_case_run(&p, &c) == 0, "select");
		TAP_CHECK(nt_verify_head(&q, &c, 0) == 0, "seed %d", s);
		for (i = 0; i < c.n_keep[0]; i++)
			kept[c.keep[0][i]] = 1;
		for (i = 0; i < b_top; i++)
			TAP_CHECK(kept[top[i]], "seed %d dropped top unit %lld", s, (long long)top[i]);
		for (i = 0; i < 2; i++)
			TAP_CHECK(kept[i] && kept[299 - i] && kept[297 - i], "protected");
		again = nt_kept_positions(&c, 0);
		differ += memcmp(base, again, 24 * sizeof(uint32_t)) != 0;
		free(again);
	}
	/* 9 of 285 candidates: two seeds agree with probability ~1e-16 */
	TAP_CHECK(differ == 40, "only %d of 40 seeds changed the random part", differ);
	free(base);
	free(top);
	nt_case_free(&c);
	return TAP_PASS;
}

/* §7 #8: identical scores in every head and layer still give different
 * random parts. */
static enum tap_result
test_head_independence(void)
{
	struct nt_prm q = nt_prm_tiny();
	struct eng_policy p;
	struct nt_case c;
	int64_t n[3] = { 200, 200, 200 }, i;
	uint32_t *k[2][3];
	int l, m, a, b;

	q.rho = 1.0;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	nt_case_alloc(&c, 3, n, 200, 16, 1);
	for (m = 0; m < 3; m++)
		for (i = 0; i < 200; i++) {
			c.pos[m][i] = (uint32_t)i;
			c.stat[m][i] = 0.01f * (float)(i % 7);
		}
	for (l = 0; l < 2; l++) {
		c.layer = l;
		TAP_CHECK(nt_case_run(&p, &c) == 0, "select");
		for (m = 0; m < 3; m++)
			k[l][m] = nt_kept_positions(&c, m);
	}
	for (a = 0; a < 6; a++)
		for (b = a + 1; b < 6; b++)
			TAP_CHECK(memcmp(k[a / 3][a % 3], k[b / 3][b % 3], 24 * sizeof(uint32_t)),
			    "(layer %d, head %d) and (layer %d, head %d) kept the same units",
			    a / 3, a % 3, b / 3, b % 3);
	for (l = 0; l < 2; l++)
		for (m = 0; m < 3; m++)
			free(k[l][m]);
	nt_case_free(&c);
	return TAP_PASS;
}

/* Chi-square statistic of counts against probabilities. */
static double
nt_chi2(const int64_t *count, const double *prob, int k, int64_t total)
{
	double x = 0.0;
	int i;
	for (i = 0; i < k; i++) {
		double e = prob[i] * (double)total;
		x += ((double)count[i] - e) * ((double)count[i] - e) / e;
	}
	return x;
}

/* Over many seeds: which of candidates pos 1, 2, 3 were kept (b_rand of 3;
 * sinks {0}, recent {4}). */
static int
nt_law_counts(struct nt_prm *q, const float *s, int64_t trials, int64_t *kept_count,
    int64_t *dropped_count)
{
	struct eng_policy p;
	struct nt_case c;
	int64_t n = 5, i, tr;

	nt_case_alloc(&c, 1, &n, 5, 5, 1);
	c.layer = 2;
	for (i = 0; i < 5; i++)
		c.pos[0][i] = (uint32_t)i;
	for (i = 0; i < 3; i++) {
		c.stat[0][i + 1] = s[i];
		kept_count[i] = dropped_count[i] = 0;
	}
	for (tr = 0; tr < trials; tr++) {
		unsigned char kept[5] = { 0 };
		q->seed = tr * 7919 + 1;
		if (nt_policy(&p, q) || nt_case_run(&p, &c) || c.n_keep[0] != q->b) {
			nt_case_free(&c);
			return -1;
		}
		for (i = 0; i < c.n_keep[0]; i++)
			kept[c.keep[0][i]] = 1;
		if (!kept[0] || !kept[4]) {
			nt_case_free(&c);
			return -1;
		}
		for (i = 0; i < 3; i++) {
			kept_count[i] += kept[i + 1];
			dropped_count[i] += !kept[i + 1];
		}
	}
	nt_case_free(&c);
	return 0;
}

/* §7 #7: b_rand = 1 samples softmax(S/T); b_rand = 2 of 3 matches the
 * Plackett–Luce inclusion law; uniform keeps each equally.  Chi-square with
 * 2 degrees of freedom at p = 0.001 (13.82). */
static enum tap_result
test_sampling_law(void)
{
	static const float s[3] = { 0.0f, 0.7f, 1.5f };
	static const double temps[2] = { 1.0, 0.5 };
	struct nt_prm q = { .n_sink = 1, .n_recent = 1, .window = 1, .rho = 1.0 };
	int64_t trials = 20000, kept[3], dropped[3];
	double prob[3], w[3], W;
	int ti, i, j;

	for (ti = 0; ti < 2; ti++) {
		q.temp = temps[ti];
		for (i = 0, W = 0; i < 3; i++)
			W += (w[i] = exp((double)s[i] / q.temp));
		/* one of three: P(i) = w_i / W */
		q.b = q.b_work = 3;
		q.uniform = 0;
		TAP_CHECK(nt_law_counts(&q, s, trials, kept, dropped) == 0, "runs");
		for (i = 0; i < 3; i++)
			prob[i] = w[i] / W;
		tap_diag("T=%g one of 3: kept %lld %lld %lld, expected %.0f %.0f %.0f, chi2 %.2f",
		    q.temp, (long long)kept[0], (long long)kept[1], (long long)kept[2],
		    prob[0] * (double)trials, prob[1] * (double)trials, prob[2] * (double)trials,
		    nt_chi2(kept, prob, 3, trials));
		TAP_CHECK(nt_chi2(kept, prob, 3, trials) < 13.82, "softmax law (T=%g)", q.temp);
		/* two of three: the dropped one is last in a Plackett–Luce order,
		 * P(drop k) = Σ_{i≠k} w_i/W · w_j/(W − w_i), j the third */
		q.b = q.b_work = 4;
		TAP_CHECK(nt_law_counts(&q, s, trials, kept, dropped) == 0, "runs");
		for (i = 0; i < 3; i++) {
			prob[i] = 0.0;
			for (j = 0; j < 3; j++)
				if (j != i)
					prob[i] += w[j] / W * w[3 - i - j] / (W - w[j]);
		}
		tap_diag("T=%g two of 3: dropped %lld %lld %lld, expected %.0f %.0f %.0f",
		    q.temp, (long long)dropped[0], (long long)dropped[1], (long long)dropped[2],
		    prob[0] * (double)trials, prob[1] * (double)trials, prob[2] * (double)trials);
		TAP_CHECK(nt_chi2(dropped, prob, 3, trials) < 13.82, "Plackett-Luce (T=%g)", q.temp);
	}
	/* uniform: equal chances whatever the scores */
	q.temp = 1.0;
	q.uniform = 1;
	q.b = q.b_work = 3;
	TAP_CHECK(nt_law_counts(&q, s, trials, kept, dropped) == 0, "runs");
	prob[0] = prob[1] = prob[2] = 1.0 / 3.0;
	tap_diag("uniform: kept %lld %lld %lld", (long long)kept[0], (long long)kept[1],
	    (long long)kept[2]);
	TAP_CHECK(nt_chi2(kept, prob, 3, trials) < 13.82, "uniform law");
	return TAP_PASS;
}

/* A context-free score of (layer, head, pos): fixed per unit; levels > 0
 * quantizes to that many values (ties). */
static float
nt_ctx_free_score(int layer, int head, uint32_t pos, int levels)
{
	uint64_t x = nt_splitmix64(((uint64_t)layer << 40) ^ ((uint64_t)head << 32) ^ pos ^
	    0x5eedull);
	double u = (double)(x >> 11) * 0x1p-53;
	if (levels > 0)
		return (float)(floor(u * levels) / levels);
	return (float)(u * 3.0);
}

/* Stream a document of n_doc tokens through select in chunks of B (last
 * chunk merged up to the window as ingest does), H heads of one layer; on
 * return kept[m] (malloc'd) lists head m's final positions.  Checks the
 * per-step invariants of §7 #1-#3 on the way. */
static int
nt_stream(const struct nt_prm *q, int layer, int H, int64_t n_doc, int64_t B, int levels,
    uint32_t **kept, int64_t *n_kept)
{
	struct eng_policy p;
	int64_t s = 0, m, i;

	if (nt_policy(&p, q))
		return -1;
	for (m = 0; m < H; m++) {
		kept[m] = malloc((size_t)n_doc * sizeof(uint32_t));
		if (!kept[m])
			abort();
		n_kept[m] = 0;
	}
	while (s < n_doc) {
		int64_t len = n_doc - s < B ? n_doc - s : B, n[NT_H];
		struct nt_case c;
		if (s + len < n_doc && n_doc - (s + len) < q->window)
			len = n_doc - s;
		for (m = 0; m < H; m++)
			n[m] = n_kept[m] + len;
		nt_case_alloc(&c, H, n, (uint32_t)(s + len), len, s + len == n_doc);
		c.layer = layer;
		for (m = 0; m < H; m++) {
			for (i = 0; i < n[m]; i++) {
				c.pos[m][i] = i < n_kept[m] ? kept[m][i] : (uint32_t)(s + i - n_kept[m]);
				c.stat[m][i] = nt_ctx_free_score(layer, (int)m, c.pos[m][i], levels);
			}
		}
		if (nt_case_run(&p, &c)) {
			nt_case_free(&c);
			return -1;
		}
		for (m = 0; m < H; m++) {
			if (nt_verify_head(q, &c, (int)m)) {
				printf("# stream B=%lld: step ending at %u, head %lld\n", (long long)B,
				    c.chunk_end, (long long)m);
				nt_case_free(&c);
				return -1;
			}
			for (i = 0; i < c.n_keep[m]; i++)
				kept[m][i] = c.pos[m][c.keep[m][i]];
			n_kept[m] = c.n_keep[m];
		}
		nt_case_free(&c);
		s += len;
	}
	return 0;
}

/* Compare one streaming configuration with one-shot; 1 when equal. */
static int
nt_stream_vs_oneshot(const struct nt_prm *q, int64_t n_doc, int64_t B, int levels, int *err)
{
	uint32_t *one[2], *str[2];
	int64_t n_one[2], n_str[2];
	int m, same = 1;
	struct nt_prm q1 = *q;

	q1.b_work = q1.b; /* one shot: one (final) eviction */
	if (nt_stream(&q1, 7, 2, n_doc, n_doc, levels, one, n_one) ||
	    nt_stream(q, 7, 2, n_doc, B, levels, str, n_str)) {
		*err = 1;
		return 0;
	}
	for (m = 0; m < 2; m++) {
		if (n_one[m] != n_str[m] ||
		    memcmp(one[m], str[m], (size_t)n_one[m] * sizeof(uint32_t)))
			same = 0;
		free(one[m]);
		free(str[m]);
	}
	return same;
}

/* §4.3, §7 #10: with persistent noise and context-free scores, streaming
 * selection equals one-shot for every chunk size and b_work; the same with
 * fresh noise differs for some seed (the test has teeth). */
static enum tap_result
test_streaming_equals_oneshot(void)
{
	static const int64_t chunks[] = { 16, 17, 23, 40, 64, 100, 333, 700 };
	static const int64_t extra[] = { 0, 1, 17, 150 };
	static const double rhos[] = { 0.37, 0.5, 1.0, 0.0 };
	struct nt_prm q = { .b = 64, .n_sink = 4, .n_recent = 12, .window = 16, .temp = 1.0 };
	const size_t n_rho = sizeof(rhos) / sizeof(rhos[0]);
	const size_t n_chunk = sizeof(chunks) / sizeof(chunks[0]);
	const size_t n_extra = sizeof(extra) / sizeof(extra[0]);
	size_t k;
	int err = 0, s, fresh_differs = 0;

	for (k = 0; k < n_rho * 2 * n_chunk * n_extra; k++) {
		size_t ri = k / (2 * n_chunk * n_extra), ci = k / n_extra % n_chunk, ei = k % n_extra;
		int levels = k / (n_chunk * n_extra) % 2 ? 4 : 0; /* 4: tied scores */
		q.rho = rhos[ri];
		q.uniform = levels == 4 && ci % 2;
		q.seed = (int64_t)(ci * 31 + ei);
		q.fresh = 0;
		q.b_work = q.b + extra[ei];
		TAP_CHECK(nt_stream_vs_oneshot(&q, 700, chunks[ci], levels, &err) && !err,
		    "rho=%g levels=%d B=%lld b_work=%lld uniform=%d: %s", q.rho, levels,
		    (long long)chunks[ci], (long long)q.b_work, q.uniform,
		    err ? "invariant broken" : "streaming != one-shot");
	}
	/* short last chunks stay >= W, so n_recent <= W keeps the precondition */
	q.rho = 0.37;
	q.uniform = 0;
	q.b_work = q.b;
	for (s = 0; s < 20; s++) {
		q.seed = s;
		q.fresh = 0;
		TAP_CHECK(nt_stream_vs_oneshot(&q, 700, 23, 0, &err) && !err, "persistent seed %d",
		    s);
		q.fresh = 1;
		fresh_differs += !nt_stream_vs_oneshot(&q, 700, 23, 0, &err);
		TAP_CHECK(!err, "fresh run broke an invariant");
	}
	tap_diag("fresh noise: streaming differs from one-shot for %d of 20 seeds", fresh_differs);
	TAP_CHECK(fresh_differs > 0, "fresh noise never differed: the test has no teeth");
	return TAP_PASS;
}

/* §7 #16: n <= t, n = 1, no sinks, no recent window, a chunk end below
 * n_recent, no statistics, NaN statistics, b_rand larger than what is left
 * once the target allows it. */
static enum tap_result
test_edge_cases(void)
{
	struct nt_prm q = nt_prm_tiny();
	struct eng_policy p;
	struct nt_case c;
	int64_t n, i;

	/* n <= t: keep all, score = statistic */
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	n = 24;
	nt_case_alloc(&c, 1, &n, 24, 24, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)i;
		c.stat[0][i] = (float)i;
	}
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 24, "n = t");
	TAP_CHECK(nt_verify_head(&q, &c, 0) == 0, "n = t");
	nt_case_free(&c);

	n = 1;
	nt_case_alloc(&c, 1, &n, 1, 1, 0);
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 1 && c.keep[0][0] == 0, "n = 1");
	nt_case_free(&c);

	/* n = 0 in one head, many in the other */
	{
		int64_t nn[2] = { 0, 50 };
		nt_case_alloc(&c, 2, nn, 50, 16, 0);
		for (i = 0; i < 50; i++)
			c.pos[1][i] = (uint32_t)i;
		TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 0 && c.n_keep[1] == 24,
		    "empty head");
		TAP_CHECK(nt_verify_head(&q, &c, 1) == 0, "empty head neighbour");
		nt_case_free(&c);
	}

	/* no protection at all, rho = 1: everything sampled */
	q.n_sink = 0;
	q.n_recent = 0;
	q.rho = 1.0;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	n = 100;
	nt_case_alloc(&c, 1, &n, 100, 16, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)i;
		c.stat[0][i] = 0.3f;
	}
	TAP_CHECK(nt_case_run(&p, &c) == 0 && nt_verify_head(&q, &c, 0) == 0, "unprotected");

	/* chunk_end below n_recent: everything is recent, still exactly t */
	q.n_sink = 2;
	q.n_recent = 20;
	q.rho = 0.5;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	c.chunk_end = 10;
	c.n_tok = 10;
	for (i = 0; i < n; i++)
		c.pos[0][i] = (uint32_t)i; /* positions past chunk_end: hostile, not a crash */
	TAP_CHECK(nt_case_run(&p, &c) == 0, "select");
	TAP_CHECK(c.n_keep[0] >= 24, "kept %lld", (long long)c.n_keep[0]);

	/* no statistics: scores become 0, the selection still fills t */
	q = nt_prm_tiny();
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	free(c.stat[0]);
	c.stat[0] = NULL;
	c.chunk_end = 100;
	c.n_tok = 16;
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 24, "no statistics");
	for (i = 0; i < n; i++)
		TAP_CHECK(c.score[0][i] == 0.0f, "score %lld = %g", (long long)i,
		    (double)c.score[0][i]);
	c.stat[0] = calloc((size_t)n, sizeof(float));
	if (!c.stat[0])
		abort();

	/* NaN statistics rank last and do not break the sort */
	q.rho = 0.0;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	for (i = 0; i < n; i++)
		c.stat[0][i] = i % 2 ? NAN : 0.5f;
	TAP_CHECK(nt_case_run(&p, &c) == 0 && c.n_keep[0] == 24, "NaN");
	for (i = 0; i < c.n_keep[0]; i++) {
		uint32_t pp = c.pos[0][c.keep[0][i]];
		TAP_CHECK(pp < 2 || pp >= 96 || pp % 2 == 0, "NaN unit %u kept over a finite one",
		    pp);
	}
	nt_case_free(&c);

	/* a target of 1 over a one-token document evicts nothing (n <= t) and
	 * one unit more than t keeps exactly t */
	q = nt_prm_tiny();
	q.b = q.b_work = 7;
	TAP_CHECK(nt_policy(&p, &q) == 0, "policy");
	n = 8;
	nt_case_alloc(&c, 1, &n, 8, 8, 1);
	for (i = 0; i < n; i++) {
		c.pos[0][i] = (uint32_t)i;
		c.stat[0][i] = 0.1f * (float)i;
	}
	TAP_CHECK(nt_case_run(&p, &c) == 0 && nt_verify_head(&q, &c, 0) == 0, "n = t + 1");
	nt_case_free(&c);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "gumbel_constants", test_gumbel_constants },
	{ "defaults", test_defaults },
	{ "config_errors", test_config_errors },
	{ "registry", test_registry },
	{ "oracle", test_oracle },
	{ "split_counts", test_split_counts },
	{ "ties", test_ties },
	{ "rho0_topk", test_rho0_topk },
	{ "seeds", test_seeds },
	{ "head_independence", test_head_independence },
	{ "sampling_law", test_sampling_law },
	{ "streaming_equals_oneshot", test_streaming_equals_oneshot },
	{ "edge_cases", test_edge_cases },
};

TAP_MAIN(NULL, NULL)
