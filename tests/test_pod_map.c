/*
 * test_pod_map.c: the PoD block map (engine/cache/pod_map.c): Jensen–Shannon
 * divergence, greedy grouping, the target-saving choice of δ and the JSON
 * block-map file (spec/pod.md §7 properties 1, 2 and 4 without calibration
 * determinism, which belongs to test of eng_pod_calibrate).
 *
 * Grouping is compared with a second greedy written here from §1.2 step 3
 * (explicit member list); the target-saving choice with a brute-force sweep
 * of δ fine enough to land in every interval between the (1/64-grid)
 * similarities.  The file tests check a bit-exact round trip, the hash
 * against BLAKE2b of the bytes on disk, one rejection per hostile edit, and
 * random corruptions of a real file (run them under `make SAN=1`).
 */
#include <fcntl.h>
#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "tests/helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define PT_MAX_L 32
#define PT_MAX_KV 4

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t pt_rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: deterministic pseudo-random numbers. */
static uint64_t
pt_rand(void)
{
	return kv_xorshift64s(&pt_rng_state);
}

/* A random distribution of n entries; about a third of them exactly 0. */
static void
pt_dist(float *p, int n)
{
	double s = 0.0;
	int i;
	for (i = 0; i < n; i++) {
		p[i] = pt_rand() % 3 == 0 ? 0.0f : th_unit(&pt_rng_state) + 1e-3f;
		s += p[i];
	}
	if (s == 0.0) {
		p[0] = 1.0f;
		return;
	}
	for (i = 0; i < n; i++)
		p[i] = (float)(p[i] / s);
}

/* KV symmetric L×L matrices, diagonal 1, off-diagonal on the k/64 grid. */
static void
pt_sim_grid(float *sim, int L, int KV)
{
	int m, l, x;
	for (m = 0; m < KV; m++)
		for (l = 0; l < L; l++)
			for (x = 0; x <= l; x++) {
				float v = l == x ? 1.0f : (float)(pt_rand() % 65) / 64.0f;
				sim[(m * L + l) * L + x] = v;
				sim[(m * L + x) * L + l] = v;
			}
}

/* The greedy of spec §1.2 step 3 again, with an explicit member list. */
static void
pt_greedy_ref(const float *sim, int L, double delta, uint8_t *anc)
{
	int block[PT_MAX_L], n = 1, l, i, all;
	block[0] = 0;
	anc[0] = 0;
	for (l = 1; l < L; l++) {
		all = 1;
		for (i = 0; i < n; i++)
			all &= (double)sim[l * L + block[i]] >= delta;
		if (all) {
			block[n++] = l;
		} else {
			block[0] = l;
			n = 1;
		}
		anc[l] = (uint8_t)block[0];
	}
}

/* Non-anchor (l, m) pairs of KV heads grouped at delta. */
static int
pt_shared(const float *sim, int L, int KV, double delta, uint8_t *anc)
{
	int m, l, n = 0;
	for (m = 0; m < KV; m++) {
		eng_pod_group(sim + m * L * L, L, delta, anc + m * L);
		for (l = 0; l < L; l++)
			n += anc[m * L + l] != l;
	}
	return n;
}

/* s with the first `from` replaced by `to` (malloc'd), or NULL if absent. */
static char *
pt_replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	size_t a, nf = strlen(from), nt = strlen(to);
	char *r;
	if (!at)
		return NULL;
	a = (size_t)(at - s);
	r = malloc(strlen(s) - nf + nt + 1);
	if (!r)
		return NULL;
	memcpy(r, s, a);
	memcpy(r + a, to, nt);
	strcpy(r + a + nt, at + nf);
	return r;
}

static int
pt_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ------------------------------------------------------------------------ */
/* Property 1: Jensen–Shannon divergence                                     */

static enum tap_result
test_js_basic(void)
{
	float p[64], q[64];
	int t, n;

	for (t = 0; t < 200; t++) {
		double a, b;
		n = 1 + (int)(pt_rand() % 64);
		pt_dist(p, n);
		pt_dist(q, n);
		TAP_CHECK(eng_pod_js(p, p, n) == 0.0, "JS(P,P) = %.3g", eng_pod_js(p, p, n));
		a = eng_pod_js(p, q, n);
		b = eng_pod_js(q, p, n);
		TAP_CHECK(a == b, "JS not symmetric: %.17g vs %.17g", a, b);
		TAP_CHECK(a >= 0.0 && a <= 1.0, "JS = %.17g out of [0, 1]", a);
		TAP_CHECK(1.0 - eng_pod_js(q, q, n) == 1.0, "sim of a layer with itself is not 1");
	}
	return TAP_PASS;
}

static enum tap_result
test_js_values(void)
{
	static const float d1[] = { 0.5f, 0.5f, 0.0f, 0.0f }, d2[] = { 0.0f, 0.0f, 0.25f, 0.75f };
	static const float one[] = { 1.0f, 0.0f }, half[] = { 0.5f, 0.5f };
	static const float z[] = { 0.0f, 0.0f, 0.0f };
	long double m0 = 0.75L, m1 = 0.25L, want;
	double got;

	/* Disjoint supports: every term is P·log2 2, so JS = 1 exactly. */
	TAP_CHECK(eng_pod_js(d1, d2, 4) == 1.0, "disjoint JS = %.17g", eng_pod_js(d1, d2, 4));
	TAP_CHECK(eng_pod_js(one, (const float[]){ 0.0f, 1.0f }, 2) == 1.0, "disjoint point masses");
	/* One zero entry against a non-zero one: 0·log 0 must vanish. */
	want = 0.5L * (1.0L * log2l(1.0L / m0)) +
	    0.5L * (0.5L * log2l(0.5L / m0) + 0.5L * log2l(0.5L / m1));
	got = eng_pod_js(one, half, 2);
	TAP_CHECK(fabsl((long double)got - want) < 1e-15L, "JS = %.17g, want %.17Lg", got, want);
	TAP_CHECK(isfinite(got), "JS not finite");
	/* All-zero rows and empty rows are 0, not NaN. */
	TAP_CHECK(eng_pod_js(z, z, 3) == 0.0, "JS of zero rows");
	TAP_CHECK(eng_pod_js(z, z, 0) == 0.0, "JS of empty rows");
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Property 2: greedy grouping                                               */

static enum tap_result
test_group_hand(void)
{
	/* Layer 2 is similar to layer 1 (0.8) but not to layer 0 (0.3): it
	 * must start a new block.  Layer 4 is similar to 3 and 2. */
	static const float sim[5 * 5] = {
		1.00f, 0.90f, 0.30f, 0.20f, 0.10f,
		0.90f, 1.00f, 0.80f, 0.40f, 0.30f,
		0.30f, 0.80f, 1.00f, 0.70f, 0.55f,
		0.20f, 0.40f, 0.70f, 1.00f, 0.60f,
		0.10f, 0.30f, 0.55f, 0.60f, 1.00f,
	};
	static const uint8_t want05[5] = { 0, 0, 2, 2, 2 }, want065[5] = { 0, 0, 2, 2, 4 };
	static const uint8_t want085[5] = { 0, 0, 2, 3, 4 }, want_all[5] = { 0, 1, 2, 3, 4 };
	static const uint8_t want_one[5] = { 0, 0, 0, 0, 0 };
	uint8_t anc[5];

	eng_pod_group(sim, 5, 0.5, anc);
	TAP_CHECK(memcmp(anc, want05, 5) == 0, "δ=0.5: %d %d %d %d %d", anc[0], anc[1], anc[2],
	    anc[3], anc[4]);
	eng_pod_group(sim, 5, 0.65, anc);
	TAP_CHECK(memcmp(anc, want065, 5) == 0, "δ=0.65: %d %d %d %d %d", anc[0], anc[1], anc[2],
	    anc[3], anc[4]);
	eng_pod_group(sim, 5, 0.85, anc);
	TAP_CHECK(memcmp(anc, want085, 5) == 0, "δ=0.85: %d %d %d %d %d", anc[0], anc[1], anc[2],
	    anc[3], anc[4]);
	/* sim >= δ is inclusive: δ = 0.9f exactly keeps layer 1 with 0. */
	eng_pod_group(sim, 5, (double)0.90f, anc);
	TAP_CHECK(anc[1] == 0, "sim == δ must join");
	eng_pod_group(sim, 5, 1.0000001, anc);
	TAP_CHECK(memcmp(anc, want_all, 5) == 0, "δ > 1: not all singletons");
	eng_pod_group(sim, 5, 0.1, anc);
	TAP_CHECK(memcmp(anc, want_one, 5) == 0, "δ <= min sim: not one block");
	eng_pod_group(sim, 1, 0.5, anc);
	TAP_CHECK(anc[0] == 0, "one layer");
	return TAP_PASS;
}

static enum tap_result
test_group_random(void)
{
	float sim[PT_MAX_L * PT_MAX_L];
	uint8_t anc[PT_MAX_L], ref[PT_MAX_L];
	int t, l;

	for (t = 0; t < 2000; t++) {
		int L = 1 + (int)(pt_rand() % PT_MAX_L);
		double delta = (double)(pt_rand() % 80) / 64.0 - 0.1;
		struct eng_pod_map pm;
		char why[256];
		float mn = 1.0f;

		pt_sim_grid(sim, L, 1);
		eng_pod_group(sim, L, delta, anc);
		pt_greedy_ref(sim, L, delta, ref);
		TAP_CHECK(memcmp(anc, ref, (size_t)L) == 0, "trial %d: L=%d δ=%g differs from reference",
		    t, L, delta);
		/* Contiguous partition starting at 0 (what eng_pod_map_check checks). */
		memset(&pm, 0, sizeof(pm));
		pm.n_layer = L;
		pm.n_head = pm.n_head_kv = 1;
		pm.anc = anc;
		TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == 0, "trial %d: %s", t, why);
		for (l = 0; l < L * L; l++)
			mn = sim[l] < mn ? sim[l] : mn;
		eng_pod_group(sim, L, mn, anc);
		for (l = 0; l < L; l++)
			TAP_CHECK(anc[l] == 0, "δ = min sim: layer %d not in block 0", l);
		eng_pod_group(sim, L, nextafter(1.0, 2.0), anc);
		for (l = 0; l < L; l++)
			TAP_CHECK(anc[l] == l, "δ > 1: layer %d not alone", l);
	}
	return TAP_PASS;
}

static enum tap_result
test_map_check(void)
{
	uint8_t anc[2 * 4] = { 0, 0, 2, 2, 0, 1, 1, 3 };
	struct eng_pod_map pm;
	char why[256];

	memset(&pm, 0, sizeof(pm));
	pm.n_layer = 4;
	pm.n_head = 4;
	pm.n_head_kv = 2;
	pm.anc = anc;
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == 0, "valid map refused: %s", why);

	anc[4] = 1; /* head 1, layer 0 */
	why[0] = 0;
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "anc[0] != 0");
	TAP_CHECK(strstr(why, "head 1") && strstr(why, "layer 0"), "reason: %s", why);
	anc[4] = 0;
	anc[6] = 0; /* head 1, layer 2 → block {0}, but layer 1 started its own */
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "non-contiguous");
	TAP_CHECK(strstr(why, "head 1") && strstr(why, "layer 2"), "reason: %s", why);
	anc[6] = 1;
	anc[3] = 1; /* head 0, layer 3: anchor 1 is neither 3 nor anc[2] = 2 */
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "foreign anchor");
	TAP_CHECK(strstr(why, "head 0") && strstr(why, "layer 3"), "reason: %s", why);
	anc[3] = 5; /* beyond the layer */
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "anchor > l");
	anc[3] = 2;
	pm.n_head = 3;
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "bad GQA shape");
	pm.n_head = 4;
	pm.anc = NULL;
	TAP_CHECK(eng_pod_map_check(&pm, why, sizeof(why)) == ENG_ERR_FORMAT, "no anchors");
	TAP_CHECK(eng_pod_map_check(NULL, NULL, 0) == ENG_ERR_FORMAT, "NULL map");
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* eng_pod_map_from_sim                                                      */

static enum tap_result
test_from_sim_args(void)
{
	float sim[2 * 3 * 3];
	struct eng_pod_map *pm = (struct eng_pod_map *)1;

	pt_sim_grid(sim, 3, 2);
	TAP_CHECK(eng_pod_map_from_sim(&pm, NULL, 3, 2, 2, 0.5, -1) == ENG_ERR_ARG, "NULL sim");
	TAP_CHECK(pm == NULL, "*out not cleared");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 0, 2, 2, 0.5, -1) == ENG_ERR_ARG, "L = 0");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 256, 2, 2, 0.5, -1) == ENG_ERR_ARG, "L = 256");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 0, 0.5, -1) == ENG_ERR_ARG, "n_head_kv 0");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 3, 2, 0.5, -1) == ENG_ERR_ARG, "n_head 3, n_head_kv 2");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 0, 1, 0.5, -1) == ENG_ERR_ARG, "n_head 0");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 2, NAN, -1) == ENG_ERR_ARG, "δ NaN");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 2, INFINITY, -1) == ENG_ERR_ARG, "δ inf");
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 2, 0.5, NAN) == ENG_ERR_ARG, "S NaN");
	sim[4] = 1.5f;
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 2, 0.5, -1) == ENG_ERR_ARG, "sim > 1");
	sim[4] = NAN;
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 2, 2, 0.5, -1) == ENG_ERR_ARG, "sim NaN");
	TAP_CHECK(eng_pod_map_from_sim(NULL, sim, 3, 2, 2, 0.5, -1) == ENG_ERR_ARG, "NULL out");
	eng_pod_map_free(NULL); /* a no-op */
	return TAP_PASS;
}

static enum tap_result
test_from_sim_delta(void)
{
	enum { L = 17, KV = 3, H = 9 };
	float sim[KV * L * L], keep[KV * L * L];
	uint8_t anc[KV * L];
	struct eng_pod_map *pm;
	int n;

	pt_sim_grid(sim, L, KV);
	memcpy(keep, sim, sizeof(sim));
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, L, H, KV, 0.5, -1.0) == 0, "from_sim failed");
	n = pt_shared(sim, L, KV, 0.5, anc);
	TAP_CHECK(pm->n_layer == L && pm->n_head == H && pm->n_head_kv == KV, "dims");
	TAP_CHECK(memcmp(pm->anc, anc, sizeof(anc)) == 0, "anchors differ from eng_pod_group");
	TAP_CHECK(pm->delta == 0.5, "δ = %.17g", pm->delta);
	TAP_CHECK(pm->f == (double)n / (L * KV), "f = %.17g, want %d/%d", pm->f, n, L * KV);
	TAP_CHECK(pm->n_texts == 0 && pm->q == 0 && pm->n_cal == 0, "counts not 0");
	TAP_CHECK(pm->model_fp[0] == 0 && pm->hash[0] == 0, "fingerprint or hash set");
	TAP_CHECK(pm->sim && pm->sim != sim, "sim not copied");
	sim[5] = 0.123f; /* the map holds its own copy */
	TAP_CHECK(memcmp(pm->sim, keep, sizeof(keep)) == 0, "sim copy differs");
	eng_pod_map_free(pm);
	return TAP_PASS;
}

/* Property 4 (second half): ties go to the larger δ. */
static enum tap_result
test_target_ties(void)
{
	/* f is 0 for δ > 0.8, 1/3 for δ in (0.2, 0.8], 2/3 for δ <= 0.2. */
	static const float sim[3 * 3] = {
		1.0f, 0.8f, 0.2f,
		0.8f, 1.0f, 0.6f,
		0.2f, 0.6f, 1.0f,
	};
	struct eng_pod_map *pm;

	/* 2S = 1/6: halfway between f = 0 and f = 1/3; the larger δ wins. */
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 1, 1, 0.5, 1.0 / 12) == 0, "from_sim");
	TAP_CHECK(pm->f == 0.0 && pm->delta > 1.0, "S=1/12: f %.17g, δ %.17g", pm->f, pm->delta);
	eng_pod_map_free(pm);
	/* 2S = 1/2: between 1/3 (δ = 0.8) and 2/3 (δ = 0.2). */
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 1, 1, 0.5, 0.25) == 0, "from_sim");
	TAP_CHECK(pm->delta == (double)0.8f && fabs(pm->f - 1.0 / 3) < 1e-15,
	    "S=1/4: f %.17g, δ %.17g", pm->f, pm->delta);
	eng_pod_map_free(pm);
	/* 2S = 1: the most sharing reachable. */
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 3, 1, 1, 0.5, 0.5) == 0, "from_sim");
	TAP_CHECK(pm->delta == (double)0.2f && fabs(pm->f - 2.0 / 3) < 1e-15, "S=1/2: f %.17g",
	    pm->f);
	eng_pod_map_free(pm);
	/* One layer: one map, f = 0. */
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 1, 1, 1, 0.5, 0.35) == 0, "L = 1");
	TAP_CHECK(pm->f == 0.0 && pm->anc[0] == 0, "L = 1 map");
	eng_pod_map_free(pm);
	return TAP_PASS;
}

/* Property 4: the map closest to 2S over a sweep of δ fine enough to land
 * in every interval between the k/64 similarities. */
static enum tap_result
test_target_sweep(void)
{
	enum { KV = 3, SWEEP = 1320 };
	static float sim[KV * PT_MAX_L * PT_MAX_L];
	uint8_t anc[KV * PT_MAX_L], best_anc[KV * PT_MAX_L];
	int trial, i, s;

	for (trial = 0; trial < 12; trial++) {
		int L = 2 + (int)(pt_rand() % 14), H = KV * (1 + (int)(pt_rand() % 3));
		pt_sim_grid(sim, L, KV);
		for (s = 0; s <= 24; s++) {
			double S = s * 0.025, T = 2.0 * S * L * KV, best_d = INFINITY;
			double best_delta = 0.0;
			struct eng_pod_map *pm;
			int n_best = 0, n_pm;

			/* δ = (i − 13)/1280: every k/64 exactly, points between, and > 1. */
			for (i = 0; i <= SWEEP; i++) {
				double delta = (i - 13) / 1280.0;
				int n = pt_shared(sim, L, KV, delta, anc);
				double d = fabs(n - T);
				if (d <= best_d + 1e-9) {
					best_d = d < best_d ? d : best_d;
					best_delta = delta;
					n_best = n;
					memcpy(best_anc, anc, (size_t)(KV * L));
				}
			}
			TAP_CHECK(eng_pod_map_from_sim(&pm, sim, L, H, KV, 0.5, S) == 0, "from_sim");
			n_pm = pt_shared(sim, L, KV, pm->delta, anc);
			TAP_CHECK(memcmp(anc, pm->anc, (size_t)(KV * L)) == 0,
			    "anchors are not the grouping at the stored δ %.17g", pm->delta);
			TAP_CHECK(pm->f == (double)n_pm / (L * KV), "reported f %.17g does not match map",
			    pm->f);
			TAP_CHECK(fabs(n_pm - T) <= best_d + 1e-9,
			    "L=%d S=%g: |N-T| = %g, the sweep found %g", L, S, fabs(n_pm - T), best_d);
			TAP_CHECK(n_pm == n_best && memcmp(pm->anc, best_anc, (size_t)(KV * L)) == 0,
			    "L=%d S=%g: map of δ %.17g, sweep's largest best δ %.17g", L, S, pm->delta,
			    best_delta);
			TAP_CHECK(pm->delta >= best_delta || best_delta > 1.0,
			    "δ %.17g is below the sweep's %.17g", pm->delta, best_delta);
			eng_pod_map_free(pm);
		}
	}
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* File round trip                                                           */

static const char pt_fp[] =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* A calibrated-looking map: 30 layers, 3 KV heads, awkward floats. */
static struct eng_pod_map *
pt_make_map(double S)
{
	enum { L = 30, KV = 3 };
	static float sim[KV * L * L];
	static const float odd[] = { 0.0f, 1.0f, 1e-45f, 0.1f, 1.0f / 3.0f, 0.99999994f,
		1.17549435e-38f, 0.7f };
	struct eng_pod_map *pm;
	int m, l, x;

	for (m = 0; m < KV; m++)
		for (l = 0; l < L; l++)
			for (x = 0; x < L; x++)
				sim[(m * L + l) * L + x] = l == x ? 1.0f
				    : pt_rand() % 5 == 0 ? odd[pt_rand() % 8]
				                         : 0.3f + 0.7f * th_unit(&pt_rng_state);
	if (eng_pod_map_from_sim(&pm, sim, L, 9, KV, 0.5, S))
		return NULL;
	pm->n_texts = 32;
	pm->q = 16;
	pm->n_cal = 2048;
	memcpy(pm->model_fp, pt_fp, sizeof(pt_fp));
	return pm;
}

/* 1 if a and b hold the same map, bit for bit. */
static int
pt_same(const struct eng_pod_map *a, const struct eng_pod_map *b)
{
	size_t n = (size_t)a->n_head_kv * (size_t)a->n_layer;
	if (a->n_layer != b->n_layer || a->n_head != b->n_head || a->n_head_kv != b->n_head_kv ||
	    memcmp(&a->delta, &b->delta, sizeof(double)) || memcmp(&a->f, &b->f, sizeof(double)) ||
	    a->n_texts != b->n_texts || a->q != b->q || a->n_cal != b->n_cal ||
	    strcmp(a->model_fp, b->model_fp) || memcmp(a->anc, b->anc, n) || !a->sim != !b->sim)
		return 0;
	return !a->sim || memcmp(a->sim, b->sim, n * (size_t)a->n_layer * sizeof(float)) == 0;
}

static enum tap_result
test_roundtrip(void)
{
	char path[256], path2[256], tmp[300], why[256], hex[65];
	struct eng_pod_map *pm, *back = NULL, *back2 = NULL;
	unsigned char h[32];
	size_t len = 0, len2 = 0;
	char *bytes, *bytes2;
	int rc, variant;

	TAP_CHECK(th_tmp(path, sizeof(path), "podmap") == 0 &&
	    th_tmp(path2, sizeof(path2), "podmap") == 0, "mkstemp");
	for (variant = 0; variant < 3; variant++) {
		/* 0: δ = 0.5; 1: target saving (δ may be 1 + ulp); 2: no sim */
		pm = pt_make_map(variant == 1 ? 0.0 : -1.0);
		TAP_CHECK(pm && (variant != 1 || pm->delta == nextafter(1.0, 2.0)), "map");
		if (variant == 2) {
			free(pm->sim);
			pm->sim = NULL;
			pm->model_fp[0] = 0;
		}
		rc = eng_pod_map_save(pm, path, why, sizeof(why));
		TAP_CHECK(rc == 0, "save: %d %s", rc, why);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		TAP_CHECK(!pt_exists(tmp), "%s left behind", tmp);
		bytes = kv_slurp(path, 0, &len);
		TAP_CHECK(bytes, "read back");
		crypto_generichash(h, sizeof(h), (const unsigned char *)bytes, len, NULL, 0);
		sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
		TAP_CHECK(strcmp(pm->hash, hex) == 0, "save hash %s, file %s", pm->hash, hex);

		rc = eng_pod_map_load(&back, path, NULL, why, sizeof(why));
		TAP_CHECK(rc == 0, "load: %d %s", rc, why);
		TAP_CHECK(pt_same(pm, back), "variant %d: loaded map differs", variant);
		TAP_CHECK(strcmp(back->hash, hex) == 0, "load hash %s, file %s", back->hash, hex);
		/* Saving the loaded map writes the same bytes. */
		TAP_CHECK(eng_pod_map_save(back, path2, why, sizeof(why)) == 0, "save 2: %s", why);
		bytes2 = kv_slurp(path2, 0, &len2);
		TAP_CHECK(bytes2 && len2 == len && memcmp(bytes, bytes2, len) == 0, "bytes differ");
		TAP_CHECK(strcmp(back->hash, hex) == 0, "second hash differs");
		rc = eng_pod_map_load(&back2, path2, NULL, why, sizeof(why));
		TAP_CHECK(rc == 0 && pt_same(back, back2), "third generation differs");
		if (variant == 0)
			tap_diag("%zu bytes for 30 layers × 3 KV heads, f = %.4f", len, pm->f);
		free(bytes);
		free(bytes2);
		eng_pod_map_free(pm);
		eng_pod_map_free(back);
		eng_pod_map_free(back2);
		back = back2 = NULL;
	}
	unlink(path);
	unlink(path2);
	return TAP_PASS;
}

static enum tap_result
test_save_rejects(void)
{
	char path[256], tmp[300], why[256];
	struct eng_pod_map *pm = pt_make_map(-1.0);
	uint8_t a;

	TAP_CHECK(pm, "map");
	TAP_CHECK(th_tmp(path, sizeof(path), "podmap") == 0, "mkstemp");
	a = pm->anc[pm->n_layer + 5];
	pm->anc[pm->n_layer + 5] = 7; /* head 1, layer 5 */
	why[0] = 0;
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == ENG_ERR_FORMAT && why[0],
	    "bad anchors saved");
	TAP_CHECK(pm->hash[0] == 0, "hash set by a failed save");
	pm->anc[pm->n_layer + 5] = a;
	pm->sim[3] = 1.25f;
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == ENG_ERR_ARG, "sim > 1 saved");
	pm->sim[3] = 0.5f;
	pm->model_fp[3] = 'x';
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == ENG_ERR_ARG, "non-hex fp saved");
	memcpy(pm->model_fp, pt_fp, sizeof(pt_fp));
	pm->delta = NAN;
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == ENG_ERR_ARG, "NaN δ saved");
	pm->delta = 0.5;
	pm->q = -1;
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == ENG_ERR_ARG, "q < 0 saved");
	pm->q = 16;
	/* A stale f is refreshed from the anchors, never written wrong. */
	pm->f = 0.123;
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == 0, "save: %s", why);
	TAP_CHECK(pm->f != 0.123, "f not refreshed");
	/* Unwritable place: ENG_ERR_IO, nothing left behind. */
	why[0] = 0;
	TAP_CHECK(eng_pod_map_save(pm, "/nonexistent-dir-kvsnap/map.json", why, sizeof(why)) ==
	    ENG_ERR_IO && why[0], "save into a missing directory");
	snprintf(tmp, sizeof(tmp), "%s.d", path);
	TAP_CHECK(mkdir(tmp, 0700) == 0, "mkdir");
	TAP_CHECK(eng_pod_map_save(pm, tmp, why, sizeof(why)) == ENG_ERR_IO, "rename over a dir");
	rmdir(tmp);
	snprintf(tmp, sizeof(tmp), "%s.d.tmp", path);
	TAP_CHECK(!pt_exists(tmp), "tmp left behind after a failed rename");
	TAP_CHECK(eng_pod_map_save(NULL, path, why, sizeof(why)) == ENG_ERR_ARG, "NULL map");
	eng_pod_map_free(pm);
	unlink(path);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Load: hostile files                                                       */

/* L = 3, one KV head, blocks {0,1} {2}: f = 1/3. */
static const char pt_base[] =
    "{\"format\":\"kvsnap-pod-map\",\"version\":1,\"n_layer\":3,\"n_head\":2,\"n_head_kv\":1,"
    "\"delta\":0.5,\"f\":0.33333333333333331,\"n_texts\":4,\"q\":16,\"n_cal\":64,"
    "\"model_fingerprint\":\"\",\"anchors\":[[0,0,2]],"
    "\"sim\":[[[1,0.9,0.1],[0.9,1,0.2],[0.1,0.2,1]]]}";

struct pt_case {
	const char *from, *to; /* edit of pt_base; from == NULL: `to` is the whole file */
	int rc;
};

static const struct pt_case pt_cases[] = {
	{ "kvsnap-pod-map", "kvsnap-pod-mop", ENG_ERR_FORMAT },
	{ "\"format\":\"kvsnap-pod-map\",", "", ENG_ERR_FORMAT },
	{ "\"version\":1", "\"version\":2", ENG_ERR_VERSION },
	{ "\"version\":1", "\"version\":\"1\"", ENG_ERR_FORMAT },
	{ "\"version\":1", "\"version\":1.0", ENG_ERR_FORMAT },
	{ "[[0,0,2]]", "[[0,0,3]]", ENG_ERR_FORMAT },          /* anchor > l */
	{ "[[0,0,2]]", "[[1,1,2]]", ENG_ERR_FORMAT },          /* anc[0] != 0 */
	{ "[[0,0,2]]", "[[0,1,0]]", ENG_ERR_FORMAT },          /* non-contiguous, f agrees */
	{ "[[0,0,2]]", "[[0,0,-1]]", ENG_ERR_FORMAT },
	{ "[[0,0,2]]", "[[0,0,2.0]]", ENG_ERR_FORMAT },
	{ "[[0,0,2]]", "[[0,0]]", ENG_ERR_FORMAT },            /* short row */
	{ "[[0,0,2]]", "[[0,0,2,3]]", ENG_ERR_FORMAT },        /* long row */
	{ "[[0,0,2]]", "[[0,0,2],[0,0,2]]", ENG_ERR_FORMAT },  /* extra head */
	{ "[[0,0,2]]", "[0,0,2]", ENG_ERR_FORMAT },
	{ "\"anchors\":[[0,0,2]],", "", ENG_ERR_FORMAT },
	{ "\"n_layer\":3", "\"n_layer\":4", ENG_ERR_FORMAT },
	{ "\"n_layer\":3", "\"n_layer\":0", ENG_ERR_FORMAT },
	{ "\"n_layer\":3", "\"n_layer\":256", ENG_ERR_FORMAT },
	{ "\"n_layer\":3", "\"n_layer\":99999999999999999999", ENG_ERR_FORMAT },
	{ "\"n_head\":2", "\"n_head\":0", ENG_ERR_FORMAT },
	{ "\"n_head_kv\":1", "\"n_head_kv\":3", ENG_ERR_FORMAT }, /* does not divide 2 */
	{ "\"n_head_kv\":1", "\"n_head_kv\":2", ENG_ERR_FORMAT }, /* anchors: 1 head */
	{ "[0.1,0.2,1]]]", "[0.1,0.2]]]", ENG_ERR_FORMAT },    /* sim row short */
	{ ",[0.1,0.2,1]]]", "]]", ENG_ERR_FORMAT },            /* sim 2 rows */
	{ "\"sim\":[[", "\"sim\":[[[1,1,1],[1,1,1],[1,1,1]],[", ENG_ERR_FORMAT }, /* 2 heads */
	{ "\"sim\":[[[1,0.9", "\"sim\":[[[1,1.5", ENG_ERR_FORMAT },  /* > 1 */
	{ "\"sim\":[[[1,0.9", "\"sim\":[[[1,-0.1", ENG_ERR_FORMAT }, /* < 0 */
	{ "\"sim\":[[[1,0.9", "\"sim\":[[[1,1.0000001", ENG_ERR_FORMAT },
	{ "\"sim\":[[[1,0.9", "\"sim\":[[[1,\"x\"", ENG_ERR_FORMAT },
	{ "\"sim\":[[[1,0.9", "\"sim\":[[[1,1e999", ENG_ERR_FORMAT }, /* overflow */
	{ "\"sim\":[[[1,0.9,0.1],[0.9,1,0.2],[0.1,0.2,1]]]", "\"sim\":5", ENG_ERR_FORMAT },
	{ "0.33333333333333331", "0.4", ENG_ERR_FORMAT },     /* f mismatch */
	{ "0.33333333333333331", "0.333333", ENG_ERR_FORMAT },
	{ "0.33333333333333331", "1.5", ENG_ERR_FORMAT },
	{ "0.33333333333333331", "\"1/3\"", ENG_ERR_FORMAT },
	{ "\"delta\":0.5", "\"delta\":null", ENG_ERR_FORMAT },
	{ "\"delta\":0.5,", "", ENG_ERR_FORMAT },
	{ "\"n_texts\":4", "\"n_texts\":-4", ENG_ERR_FORMAT },
	{ "\"n_cal\":64", "\"n_cal\":4294967296", ENG_ERR_FORMAT },
	{ "\"q\":16,", "", ENG_ERR_FORMAT },                   /* missing key */
	{ "\"q\":16", "\"q\":16,\"q\":16", ENG_ERR_FORMAT },   /* duplicate key */
	{ "\"q\":16", "\"q\":16,\"sims\":null", ENG_ERR_FORMAT }, /* unknown key */
	{ "\"model_fingerprint\":\"\"", "\"model_fingerprint\":\"xyz\"", ENG_ERR_FORMAT },
	{ "\"model_fingerprint\":\"\"", "\"model_fingerprint\":7", ENG_ERR_FORMAT },
	{ "\"model_fingerprint\":\"\"", "\"model_fingerprint\":\"ab\\u0000cd\"", ENG_ERR_FORMAT },
	{ "\"model_fingerprint\":\"\"",
	    "\"model_fingerprint\":\"00000000000000000000000000000000000000000000000000000000000000000\"",
	    ENG_ERR_FORMAT }, /* 65 digits */
	{ "}", "}x", ENG_ERR_FORMAT },                         /* trailing garbage */
	{ "{", "{{", ENG_ERR_FORMAT },                         /* bad JSON */
	{ NULL, "", ENG_ERR_FORMAT },                          /* empty file */
	{ NULL, "[1,2,3]", ENG_ERR_FORMAT },                   /* not an object */
	{ NULL, "{\"format\":", ENG_ERR_FORMAT },              /* truncated */
	{ NULL, "\xff\xfe{}", ENG_ERR_FORMAT },                /* not UTF-8 */
};

static enum tap_result
test_load_rejects(void)
{
	char path[256], why[256];
	struct eng_pod_map *pm;
	size_t i;
	int rc;

	TAP_CHECK(th_tmp(path, sizeof(path), "podmap") == 0, "mkstemp");
	/* The base file is valid, and optional sim may be null or absent. */
	TAP_CHECK(th_write(path, pt_base, strlen(pt_base)) == 0, "write");
	rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
	TAP_CHECK(rc == 0, "base file refused: %s", why);
	TAP_CHECK(pm->n_layer == 3 && pm->anc[2] == 2 && pm->anc[1] == 0 && pm->n_texts == 4 &&
	    pm->q == 16 && pm->n_cal == 64 && pm->sim && pm->sim[1] == 0.9f, "base fields");
	eng_pod_map_free(pm);
	for (i = 0; i < 2; i++) {
		char *t = pt_replace(pt_base,
		    ",\"sim\":[[[1,0.9,0.1],[0.9,1,0.2],[0.1,0.2,1]]]", i ? "" : ",\"sim\":null");
		TAP_CHECK(t && th_write(path, t, strlen(t)) == 0, "write");
		free(t);
		rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
		TAP_CHECK(rc == 0 && pm->sim == NULL, "sim %s refused: %s", i ? "absent" : "null", why);
		eng_pod_map_free(pm);
	}

	for (i = 0; i < sizeof(pt_cases) / sizeof(pt_cases[0]); i++) {
		const struct pt_case *c = &pt_cases[i];
		char *t = c->from ? pt_replace(pt_base, c->from, c->to) : strdup(c->to);
		TAP_CHECK(t, "case %zu: '%s' not in the base text", i, c->from);
		TAP_CHECK(th_write(path, t, strlen(t)) == 0, "write");
		free(t);
		pm = (struct eng_pod_map *)1;
		why[0] = 0;
		rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
		TAP_CHECK(rc == c->rc, "case %zu (%s -> %s): rc %d, want %d (%s)", i,
		    c->from ? c->from : "file", c->to, rc, c->rc, why);
		TAP_CHECK(pm == NULL, "case %zu: *out not NULL", i);
		TAP_CHECK(why[0] != 0, "case %zu: no reason", i);
		if (i < 3 || c->rc == ENG_ERR_VERSION)
			tap_diag("case %zu: %s", i, why);
	}
	unlink(path);
	return TAP_PASS;
}

static enum tap_result
test_load_io(void)
{
	char path[256], why[256];
	struct eng_pod_map *pm = (struct eng_pod_map *)1, *big;
	char *bytes;
	size_t len = 0;
	int fd, rc;

	rc = eng_pod_map_load(&pm, "/nonexistent-kvsnap/map.json", NULL, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_IO && pm == NULL && why[0], "missing file: rc %d", rc);
	tap_diag("missing: %s", why);
	rc = eng_pod_map_load(&pm, "/tmp", NULL, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_IO && why[0], "directory: rc %d", rc);

	/* A real file cut in half. */
	TAP_CHECK(th_tmp(path, sizeof(path), "podmap") == 0, "mkstemp");
	big = pt_make_map(-1.0);
	TAP_CHECK(big && eng_pod_map_save(big, path, why, sizeof(why)) == 0, "save: %s", why);
	eng_pod_map_free(big);
	bytes = kv_slurp(path, 0, &len);
	TAP_CHECK(bytes && th_write(path, bytes, len / 2) == 0, "truncate");
	free(bytes);
	why[0] = 0;
	rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_FORMAT && pm == NULL && strstr(why, "line "),
	    "truncated: rc %d (%s)", rc, why);
	tap_diag("truncated: %s", why);

	/* More than 64 MiB (sparse): refused before reading. */
	fd = open(path, O_WRONLY | O_TRUNC);
	TAP_CHECK(fd >= 0 && ftruncate(fd, (off_t)65 << 20) == 0, "ftruncate");
	close(fd);
	rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_FORMAT && why[0], "65 MiB file: rc %d", rc);
	TAP_CHECK(eng_pod_map_load(&pm, NULL, NULL, why, sizeof(why)) == ENG_ERR_ARG, "NULL path");
	/* A FIFO: refused at once, not read (which would block). */
	unlink(path);
	TAP_CHECK(mkfifo(path, 0600) == 0, "mkfifo");
	rc = eng_pod_map_load(&pm, path, NULL, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_IO && pm == NULL, "FIFO: rc %d", rc);
	unlink(path);
	return TAP_PASS;
}

/* Random byte edits of a real file: an error with a reason, or a valid map. */
static enum tap_result
test_load_corrupt(void)
{
	char path[256], why[256];
	struct eng_pod_map *pm = NULL, *back;
	float sim[3 * 6 * 6];
	char *bytes, *t;
	size_t len = 0;
	int trial, n_ok = 0;

	/* A small map (6 layers): more of the edits land in structure. */
	pt_sim_grid(sim, 6, 3);
	TAP_CHECK(eng_pod_map_from_sim(&pm, sim, 6, 9, 3, 0.5, -1) == 0, "map");
	memcpy(pm->model_fp, pt_fp, sizeof(pt_fp));
	TAP_CHECK(th_tmp(path, sizeof(path), "podmap") == 0, "mkstemp");
	TAP_CHECK(eng_pod_map_save(pm, path, why, sizeof(why)) == 0, "save: %s", why);
	bytes = kv_slurp(path, 0, &len);
	TAP_CHECK(bytes && len > 0, "read");
	t = malloc(len + 1);
	TAP_CHECK(t, "malloc");
	for (trial = 0; trial < 3000; trial++) {
		size_t n = len, k, edits = 1 + pt_rand() % 3;
		int rc;
		memcpy(t, bytes, len);
		for (k = 0; k < edits; k++) {
			size_t at = (size_t)(pt_rand() % len);
			switch (pt_rand() % 4) {
			case 0: t[at] = (char)pt_rand(); break;
			case 1: t[at] = "0123456789[]{},.-e\"n"[pt_rand() % 20]; break;
			case 2: n = at; break; /* truncate */
			default: t[at] ^= (char)(1 << (pt_rand() % 8)); break;
			}
		}
		TAP_CHECK(th_write(path, t, n) == 0, "write");
		why[0] = 0;
		back = NULL;
		rc = eng_pod_map_load(&back, path, NULL, why, sizeof(why));
		if (rc == 0) {
			TAP_CHECK(eng_pod_map_check(back, why, sizeof(why)) == 0, "loaded bad map: %s",
			    why);
			n_ok++;
		} else {
			TAP_CHECK(back == NULL && why[0], "trial %d: rc %d without a reason", trial, rc);
		}
		eng_pod_map_free(back);
	}
	tap_diag("%d of 3000 edited files still loaded (edits in values)", n_ok);
	free(t);
	free(bytes);
	eng_pod_map_free(pm);
	unlink(path);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Binding to a model                                                        */

/* Save a map of the given shape with fingerprint fp, then load it against m. */
static int
pt_load_for(const struct eng_model *m, int L, int H, int KV, const char *fp, char *why,
    size_t why_len)
{
	char path[256];
	float sim[4 * 4 * 4];
	struct eng_pod_map *pm = NULL, *back = NULL;
	int rc;

	if (th_tmp(path, sizeof(path), "podmap"))
		return -999;
	pt_sim_grid(sim, L, KV);
	rc = eng_pod_map_from_sim(&pm, sim, L, H, KV, 0.5, -1);
	if (!rc) {
		snprintf(pm->model_fp, sizeof(pm->model_fp), "%s", fp);
		rc = eng_pod_map_save(pm, path, why, why_len);
	}
	if (!rc)
		rc = eng_pod_map_load(&back, path, m, why, why_len);
	if (!rc && (back->n_layer != L || back->n_head != H))
		rc = -998;
	if (rc && back)
		rc = -997; /* an error must not return a map */
	eng_pod_map_free(pm);
	eng_pod_map_free(back);
	unlink(path);
	return rc;
}

static enum tap_result
test_model_binding(void)
{
	char path[64], why[256], upper[65], other[65];
	struct eng_model *m = NULL;
	const char *fp;
	int rc, i;

	TAP_CHECK(tiny_model_tmp(path, sizeof(path), 7) == 0, "tiny model");
	rc = eng_model_open(&m, path, why, sizeof(why));
	tiny_model_remove(path);
	TAP_CHECK(rc == 0, "open tiny model: %s", why);
	fp = eng_model_fingerprint(m);
	TAP_CHECK(strlen(fp) == 64, "fingerprint %s", fp);
	for (i = 0; i < 65; i++)
		upper[i] = (char)(fp[i] >= 'a' && fp[i] <= 'f' ? fp[i] - 32 : fp[i]);
	memcpy(other, fp, 65);
	other[10] = other[10] == '0' ? '1' : '0';

	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD, TINY_N_HEAD_KV, fp, why, sizeof(why));
	TAP_CHECK(rc == 0, "matching map refused: %d %s", rc, why);
	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD, TINY_N_HEAD_KV, upper, why, sizeof(why));
	TAP_CHECK(rc == 0, "upper-case fingerprint refused: %d %s", rc, why);
	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD, TINY_N_HEAD_KV, "", why, sizeof(why));
	TAP_CHECK(rc == 0, "unbound map refused: %d %s", rc, why);
	why[0] = 0;
	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD, TINY_N_HEAD_KV, other, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_ARG && strstr(why, "calibrated for model"), "other model: %d %s",
	    rc, why);
	tap_diag("%s", why);
	rc = pt_load_for(m, TINY_N_LAYER + 1, TINY_N_HEAD, TINY_N_HEAD_KV, fp, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_SHAPE && why[0], "n_layer mismatch: %d", rc);
	tap_diag("%s", why);
	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD_KV, TINY_N_HEAD_KV, fp, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_SHAPE, "n_head mismatch: %d", rc);
	rc = pt_load_for(m, TINY_N_LAYER, TINY_N_HEAD, TINY_N_HEAD, fp, why, sizeof(why));
	TAP_CHECK(rc == ENG_ERR_SHAPE, "n_head_kv mismatch: %d", rc);
	eng_model_close(m);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "js_basic", test_js_basic },
	{ "js_values", test_js_values },
	{ "group_hand", test_group_hand },
	{ "group_random", test_group_random },
	{ "map_check", test_map_check },
	{ "from_sim_args", test_from_sim_args },
	{ "from_sim_delta", test_from_sim_delta },
	{ "target_ties", test_target_ties },
	{ "target_sweep", test_target_sweep },
	{ "roundtrip", test_roundtrip },
	{ "save_rejects", test_save_rejects },
	{ "load_rejects", test_load_rejects },
	{ "load_io", test_load_io },
	{ "load_corrupt", test_load_corrupt },
	{ "model_binding", test_model_binding },
};

TAP_MAIN(th_sodium_setup, NULL)
