/*
 * test_snapshot.c: the snapshot codec (snapshot/snapshot.c, snapshot/qpack.c).
 *
 * Round trips: pools compressed by real policies on a tiny random model (4
 * layers, 2 KV heads, head_dim 8) are encoded in fp16, decoded into a fresh
 * pool, and must equal the original after eng_kv_round_fp16 bit for bit,
 * and so must the logits of a question on top (the key property: an fp16
 * snapshot is exactly the rounded pool).  q4 schemes run on synthetic pools
 * of head_dim 64 (the tiny model's 8 is too narrow for groups of 32) and on
 * the bundled model when present, checked against the error bound their
 * scales give.  Then every way a record can be wrong: flipped bytes,
 * truncations, swapped layers, counts, zip bombs, versions, PoD fields.
 * And snap_copy (snapshot_copy.c): a snapshot from one store to another,
 * the same bytes, nothing copied when a record fails its checks.
 *
 * KVSNAP_WRITE_SEEDS=DIR build/tests/test_snapshot writes the fuzz seeds
 * (tests/fuzz/corpus/snapshot/) instead of running the tests.
 */
#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define TINY_N_LAYER 4
#include "engine/engine.h"
#include "snapshot/hadamard.h" /* for hd_rotate_rows */
#include "snapshot/qpack.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_io.h"
#include "snapshot/snapshot_refit.h" /* for SNAP_FLAG_RAW */
#include "storage/store.h"
#include "tests/helpers.h"
#include "tests/ingest_run.h"
#include "tests/snap_helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define TS_L TINY_N_LAYER
#define TS_KV TINY_N_HEAD_KV
#define TS_V TINY_N_VOCAB
#define TS_NQ 6

static struct eng_model *g_m;
static char g_model_path[64], g_map_mixed[64];
/* head 0: blocks {0,1,2},{3}; head 1: {0},{1,2,3} (as test_pod.c) */
static uint8_t map_mixed[TS_KV * TS_L] = { 0, 0, 0, 3, 0, 1, 1, 1 };

/* ------------------------------------------------------------------------ */
/* Helpers: documents, pools, snapshots                                      */

static void
ts_doc(int32_t *ids, int64_t n, uint64_t seed, int32_t vocab)
{
	tiny_ids_fill(ids, n, seed, 7, (uint64_t)vocab);
}

static float
ts_r16(float f)
{
	return kern_f16_to_f32(kern_f32_to_f16(f));
}

/* Same float, NaN equal to NaN. */
static int
ts_same(float a, float b)
{
	return (isnan(a) && isnan(b)) || kv_f32_bits(a) == kv_f32_bits(b);
}

/* The encoding ts_encode writes: SNAP_FORMAT_VERSION (4, a saver's), or 1
 * for the legacy ones (versions 1 to 3 by form and bias) that the tests
 * of the zstd frames and inner checksums run on (TH_LEGACY_TEST). */
static uint32_t g_enc_version = SNAP_FORMAT_VERSION;

/* Encode every record of kv with quant (what a saver does). */
static int
ts_encode(struct th_snap *s, const struct eng_kv *kv, int n_head, int quant)
{
	return th_snap_encode(s, kv, n_head, quant, g_enc_version);
}

static size_t
ts_snap_bytes(const struct th_snap *s)
{
	size_t n = s->hdr_len;
	int l;
	for (l = 0; l < s->h.n_layer; l++)
		n += s->len[l];
	return n;
}

static int64_t
ts_units(const struct eng_kv *kv)
{
	int64_t n = 0;
	int l;
	for (l = 0; l < kv->n_layer; l++)
		n += eng_kv_layer_units(kv, l);
	return n;
}

/* Decode s into a fresh pool of model m, as a loader does. */
static int
ts_load(const struct th_snap *s, const struct eng_model *m, int64_t rows_per_head,
    struct eng_kv **out, struct snap_header *h, char *why, size_t why_len)
{
	struct eng_kv *kv = NULL;
	int l, rc;
	*out = NULL;
	if ((rc = snap_header_decode(s->hdr, s->hdr_len, h, why, why_len)))
		return rc;
	if (eng_kv_init(&kv, m, rows_per_head)) {
		snap_header_free(h);
		return SNAP_ERR_NOMEM;
	}
	for (l = 0; l < h->n_layer && !rc; l++)
		rc = snap_layer_decode(s->rec[l], s->len[l], h, l, kv, why, why_len);
	if (!rc)
		rc = snap_pod_check_blocks(h, kv, why, why_len);
	if (!rc && eng_kv_finish_load(kv, h->next_pos, (enum eng_pos_mode)h->pos_mode))
		rc = SNAP_ERR_ARG;
	if (!rc && h->has_pod &&
	    eng_kv_set_pod(kv, h->pod.anc, h->pod.n_s, h->pod.n_r, h->pod.distant_own))
		rc = SNAP_ERR_ARG;
	if (rc) {
		eng_kv_free(kv);
		snap_header_free(h);
		return rc;
	}
	*out = kv;
	return 0;
}

/* b (loaded) holds exactly a's units; a's keys and values are already
 * rounded to fp16, its scores are rounded here.  0 or -1 with msg. */
static int
ts_same_units(const struct eng_kv *a, const struct eng_kv *b, char *msg, size_t cap)
{
	int hd = a->head_dim, l, m, d;
	int64_t i;
	if (a->next_pos != b->next_pos || a->pos_mode != b->pos_mode) {
		snprintf(msg, cap, "next_pos/pos_mode differ");
		return -1;
	}
	for (l = 0; l < a->n_layer; l++)
		for (m = 0; m < a->n_head_kv; m++) {
			const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l];
			if (A->len[m] != B->len[m]) {
				snprintf(msg, cap, "layer %d head %d: %lld vs %lld units", l, m,
				    (long long)A->len[m], (long long)B->len[m]);
				return -1;
			}
			for (i = 0; i < A->len[m]; i++) {
				int64_t ra = A->off[m] + i, rb = B->off[m] + i;
				int ok = A->pos[ra] == B->pos[rb] &&
				    ts_same(ts_r16(A->score[ra]), B->score[rb]);
				for (d = 0; d < hd && ok; d++)
					ok = ts_same(A->k[ra * hd + d], B->k[rb * hd + d]) &&
					    kv_f32_bits(A->v[ra * hd + d]) == kv_f32_bits(B->v[rb * hd + d]);
				if (!ok) {
					snprintf(msg, cap, "layer %d head %d unit %lld differs", l, m,
					    (long long)i);
					return -1;
				}
			}
		}
	return 0;
}

/* Synthetic rows: counts[l·H + m] units per head at spread positions (0
 * and next_pos − 1 included, multi-byte varints), keys ~N(0,1) plus a
 * per-channel offset and two outlier channels (×20, as pre-RoPE keys
 * have), values ~N(0,1), scores ~N(0,1). */
static int
ts_fill(struct eng_kv *kv, const int64_t *counts, uint32_t next_pos, uint64_t seed)
{
	struct tiny_rng r = { seed * 0x9E3779B97F4A7C15u + 1 };
	int H = kv->n_head_kv, hd = kv->head_dim, l, m, d;
	int64_t i;
	for (l = 0; l < kv->n_layer; l++) {
		struct eng_kv_layer *L = &kv->layer[l];
		if (eng_kv_prepare_layer(kv, l, counts + l * H))
			return -1;
		for (m = 0; m < H; m++)
			for (i = 0; i < L->len[m]; i++) {
				int64_t row = L->off[m] + i, n = L->len[m];
				L->pos[row] = n == 1 ? next_pos - 1
				                     : (uint32_t)((uint64_t)i * (next_pos - 1) / (uint64_t)(n - 1));
				L->score[row] = (float)tiny_rng_normal(&r);
				for (d = 0; d < hd; d++) {
					double k = tiny_rng_normal(&r) + 0.5 * (d % 5);
					L->k[row * hd + d] = (float)(d == 3 || d == 17 ? 20.0 * k : k);
					L->v[row * hd + d] = (float)tiny_rng_normal(&r);
				}
			}
	}
	return eng_kv_finish_load(kv, next_pos, ENG_POS_ORIGINAL);
}

/* ------------------------------------------------------------------------ */
/* Names and qpack                                                           */

static enum tap_result
test_quant_names(void)
{
	static const char *names[] = { "fp16", "q4", "q4kc", "q8", "q4h", "q4kch", "q6h", "q5h",
		"q3h", "k5v3h", "k4v2h", "k8v4h" };
	char list[256] = "";
	int i;
	TAP_CHECK(sizeof(names) / sizeof(names[0]) == SNAP_QUANT_MAX + 1, "every form named");
	for (i = 0; i <= SNAP_QUANT_MAX; i++) {
		TAP_CHECK(snap_quant_parse(names[i]) == i, "%s", names[i]);
		TAP_CHECK(!strcmp(snap_quant_name(i), names[i]), "%d", i);
		/* the forms of version 1 keep it: their records and profiles as
		 * before; those of version 2 theirs; the 6/5/3/2-bit ones are 5's */
		TAP_CHECK(snap_quant_version(i) == (i <= SNAP_Q4_KC ? 1 : i <= SNAP_Q4_KC_H ? 2 : 5),
		    "%s version", names[i]);
		TAP_CHECK(snap_quant_rotated(i) == (i >= SNAP_Q4_H && i != SNAP_Q8), "%s rotated",
		    names[i]);
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
		    names[i]);
	}
	TAP_CHECK(!strcmp(list, SNAP_QUANT_NAMES), "SNAP_QUANT_NAMES: %s", SNAP_QUANT_NAMES);
	TAP_CHECK(snap_quant_parse("q3") == -1 && snap_quant_parse("q7h") == -1 &&
	    snap_quant_parse(NULL) == -1, "unknown name");
	TAP_CHECK(snap_quant_name(SNAP_QUANT_MAX + 1) == NULL && snap_quant_name(-1) == NULL,
	    "unknown quant");
	TAP_CHECK(snap_quant_version(SNAP_QUANT_MAX + 1) == 0, "unknown quant's version");
	TAP_CHECK(strstr(snap_strerror(SNAP_ERR_CORRUPT), "corrupt"), "strerror");
	return TAP_PASS;
}

/* |x − x̂| allowed for a group spanning [lo, hi] (qpack.h: δ/2 with δ from
 * directed fp16 rounding, plus float rounding). */
static double
ts_q_bound(double lo, double hi, double levels)
{
	return 0.5 * (hi - lo) / levels * (1.0 + 1.0 / 256) + (fabs(lo) + fabs(hi)) / 4096.0 +
	    1.0 / (1 << 23);
}

static double
ts_q4_bound(double lo, double hi)
{
	return ts_q_bound(lo, hi, 15.0);
}

/* Worst err/bound over row groups (q4) or channel groups (q4 per channel). */
static double
ts_q4_ratio(enum qp_scheme s, const float *x, const float *y, int64_t n, int hd)
{
	double worst = 0.0;
	int64_t g, i, gn;
	int c, j;
	if (s != QP_Q4_CH) { /* along the row: q4, q8 or b bits */
		for (i = 0; i < n; i++)
			for (c = 0; c < hd; c += QP_GROUP) {
				const float *a = x + i * hd + c, *b = y + i * hd + c;
				double lo = a[0], hi = a[0], e = 0;
				for (j = 0; j < QP_GROUP; j++) {
					lo = a[j] < lo ? a[j] : lo;
					hi = a[j] > hi ? a[j] : hi;
				}
				for (j = 0; j < QP_GROUP; j++)
					e = fmax(e, fabs((double)a[j] - b[j]));
				worst = fmax(worst, e / ts_q_bound(lo, hi, (1 << qp_row_bits(s)) - 1.0));
			}
		return worst;
	}
	for (g = 0; g < n; g += QP_GROUP)
		for (c = 0; c < hd; c++) {
			double lo = x[g * hd + c], hi = lo, e = 0;
			gn = n - g < QP_GROUP ? n - g : QP_GROUP;
			for (i = g; i < g + gn; i++) {
				lo = fmin(lo, x[i * hd + c]);
				hi = fmax(hi, x[i * hd + c]);
			}
			for (i = g; i < g + gn; i++)
				e = fmax(e, fabs((double)x[i * hd + c] - y[i * hd + c]));
			worst = fmax(worst, e / ts_q4_bound(lo, hi));
		}
	return worst;
}

/* qpack.h's row layout read as written there, independently of qpack.c:
 * group g of row r at (r·d/32 + g)·(4 + 4b) bytes, [δ][μ] as fp16, code j
 * in bits j·b … j·b + b − 1 of the 4b code bytes (bit i: bit i mod 8 of
 * byte i / 8); x̂ = μ + q·δ in float.  q4 and q8 are b = 4 and 8. */
static void
ts_spec_decode(const uint8_t *src, int64_t n, int d, int b, float *dst)
{
	int64_t gi;
	int j, k;
	for (gi = 0; gi < n * (d / QP_GROUP); gi++) {
		const uint8_t *p = src + gi * (4 + 4 * b);
		float dd = kern_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
		float mm = kern_f16_to_f32((uint16_t)(p[2] | p[3] << 8));
		for (j = 0; j < QP_GROUP; j++) {
			unsigned q = 0;
			float t;
			for (k = 0; k < b; k++) {
				int bit = j * b + k;
				q |= (unsigned)(p[4 + bit / 8] >> (bit % 8) & 1) << k;
			}
			t = (float)q * dd;
			dst[gi * QP_GROUP + j] = mm + t;
		}
	}
}

/* qpack on its own: sizes, fp16 exactness, q4 bounds, edge values, and the
 * decoder's refusals. */
static enum tap_result
test_qpack(void)
{
	enum { N = 45, D = 64 };
	static float x[N * D], y[N * D];
	static uint8_t buf[N * D * 2];
	struct tiny_rng r = { 99 };
	enum qp_scheme s;
	int i;

	for (i = 0; i < N * D; i++)
		x[i] = (float)(tiny_rng_normal(&r) * (i % D == 5 ? 30.0 : 1.0));
	x[7] = 65504.0f * 4; /* saturates */
	x[8] = -INFINITY;    /* saturates */
	for (i = 2 * D; i < 3 * D; i++)
		x[i] = 0.3f; /* a constant row */
	TAP_CHECK(qp_bytes(QP_F16, N, D) == 2u * N * D, "fp16 size");
	TAP_CHECK(qp_bytes(QP_Q4, N, D) == (uint64_t)N * 2 * 20, "q4 size");
	TAP_CHECK(qp_bytes(QP_Q4_CH, N, D) == 2u * 4 * D + (uint64_t)N * D / 2, "q4 ch size");
	TAP_CHECK(qp_bytes(QP_Q4_CH, 0, D) == 0, "empty");
	TAP_CHECK(qp_bytes(QP_Q8, N, D) == (uint64_t)N * 2 * 36, "q8 size");
	/* b bits: per group of 32, 4 bytes of (δ, μ) and 4·b of codes */
	TAP_CHECK(qp_bytes(QP_B2, N, D) == (uint64_t)N * 2 * 12 &&
	    qp_bytes(QP_B3, N, D) == (uint64_t)N * 2 * 16 &&
	    qp_bytes(QP_B5, N, D) == (uint64_t)N * 2 * 24 &&
	    qp_bytes(QP_B6, N, D) == (uint64_t)N * 2 * 28 && qp_bytes(QP_B3, 0, D) == 0,
	    "b-bit sizes");
	TAP_CHECK(qp_row_bits(QP_Q4) == 4 && qp_row_bits(QP_Q8) == 8 && qp_row_bits(QP_B2) == 2 &&
	    qp_row_bits(QP_B3) == 3 && qp_row_bits(QP_B5) == 5 && qp_row_bits(QP_B6) == 6 &&
	    qp_row_bits(QP_F16) == 0 && qp_row_bits(QP_Q4_CH) == 0, "bits per code");
	TAP_CHECK(qp_encode(QP_F16, x, N, D, buf) == 0 && qp_decode(QP_F16, buf, N, D, y) == 0,
	    "fp16");
	for (i = 0; i < N * D; i++)
		TAP_CHECK(ts_same(y[i], ts_r16(x[i])), "fp16 value %d", i);
	x[7] = 65504.0f;
	x[8] = -65504.0f; /* the saturated values, for the bound */
	for (s = QP_Q4; s <= QP_SCHEME_MAX; s++) {
		double ratio;
		x[7] = 65504.0f * 4;
		x[8] = -INFINITY;
		TAP_CHECK(qp_encode(s, x, N, D, buf) == 0, "encode %d", s);
		TAP_CHECK(qp_decode(s, buf, N, D, NULL) == 0 && qp_decode(s, buf, N, D, y) == 0,
		    "decode %d", s);
		x[7] = 65504.0f;
		x[8] = -65504.0f;
		if (s != QP_Q4_CH) { /* the bytes are the documented layout */
			static float z[N * D];
			ts_spec_decode(buf, N, D, qp_row_bits(s), z);
			for (i = 0; i < N * D; i++)
				TAP_CHECK(kv_f32_bits(z[i]) == kv_f32_bits(y[i]), "scheme %d value %d: %g, layout %g",
				    s, i, y[i], z[i]);
		}
		/* the bound: δ/2 of the group's range, with the slack of fp16's
		 * directed rounding of δ and μ and of x̂'s float evaluation
		 * (ts_q_bound) */
		ratio = ts_q4_ratio(s, x, y, N, D);
		tap_diag("scheme %d: worst error / bound %.3f", s, ratio);
		TAP_CHECK(ratio <= 1.0, "scheme %d: error over the bound (%.3f)", s, ratio);
		for (i = 0; i < N * D; i++)
			TAP_CHECK(isfinite(y[i]), "scheme %d: value %d not finite", s, i);
		if (s != QP_Q4_CH)
			for (i = 2 * D; i < 3 * D; i++)
				TAP_CHECK(fabs(y[i] - 0.3) < 1e-3, "constant row: %g", y[i]);
		/* a non-finite or negative scale is corrupt */
		buf[1] = 0x7c;
		TAP_CHECK(qp_decode(s, buf, N, D, y) == -1, "inf scale accepted (%d)", s);
		buf[1] = 0x80;
		TAP_CHECK(qp_decode(s, buf, N, D, NULL) == -1, "negative scale accepted (%d)", s);
		buf[1] = 0x00;
		buf[3] = 0xfe;
		TAP_CHECK(qp_decode(s, buf, N, D, NULL) == -1, "NaN min accepted (%d)", s);
		x[9] = NAN;
		TAP_CHECK(qp_encode(s, x, N, D, buf) == -1, "NaN encoded (%d)", s);
		x[9] = 0.0f;
	}
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* fp16 round trips through real policies                                    */

/* Encode r's pool (fp16), load it into a fresh pool, and compare: units
 * bit-exact against the rounded original, the same bytes when re-encoded,
 * and bit-identical logits of TS_NQ more tokens. */
static enum tap_result
ts_check_roundtrip(struct th_run *r, const char *label, const int32_t *q)
{
	struct th_snap s, s2;
	struct snap_header h;
	struct eng_kv *kv2 = NULL;
	float la[TS_V], lb[TS_V];
	char why[256] = "";
	int l;

	TAP_CHECK(ts_encode(&s, r->kv, TINY_N_HEAD, SNAP_FP16) == 0, "%s: encode", label);
	TAP_CHECK(ts_load(&s, g_m, r->rph, &kv2, &h, why, sizeof(why)) == 0, "%s: load: %s", label,
	    why);
	eng_kv_round_fp16(r->kv);
	TAP_CHECK(ts_same_units(r->kv, kv2, why, sizeof(why)) == 0, "%s: %s", label, why);
	TAP_CHECK(ts_encode(&s2, kv2, TINY_N_HEAD, SNAP_FP16) == 0, "%s: re-encode", label);
	for (l = 0; l < TS_L; l++)
		TAP_CHECK(s.len[l] == s2.len[l] && !memcmp(s.rec[l], s2.rec[l], s.len[l]),
		    "%s: layer %d re-encodes differently", label, l);
	TAP_CHECK(s.hdr_len == s2.hdr_len && !memcmp(s.hdr, s2.hdr, s.hdr_len),
	    "%s: header re-encodes differently", label);
	TAP_CHECK(eng_forward(r->c, r->kv, q, TS_NQ, NULL, la) == 0, "%s: forward", label);
	TAP_CHECK(eng_forward(r->c, kv2, q, TS_NQ, NULL, lb) == 0, "%s: forward reloaded", label);
	for (l = 0; l < TS_V; l++)
		TAP_CHECK(isfinite(la[l]), "%s: logits not finite", label);
	TAP_CHECK(!memcmp(la, lb, sizeof(la)), "%s: logits differ after reload", label);
	tap_diag("%s: %lld units, %zu bytes, %.1f bytes/unit (fp16, tiny model)", label,
	    (long long)ts_units(r->kv), ts_snap_bytes(&s), (double)ts_snap_bytes(&s) /
	    (double)(ts_units(r->kv) ? ts_units(r->kv) : 1));
	eng_kv_free(kv2);
	snap_header_free(&h);
	th_snap_free(&s);
	th_snap_free(&s2);
	return TAP_PASS;
}

static int
ts_ragged(const struct eng_kv *kv)
{
	int l;
	for (l = 0; l < kv->n_layer; l++)
		if (kv->layer[l].len[0] != kv->layer[l].len[1])
			return 1;
	return 0;
}

static enum tap_result
test_roundtrip_policies(void)
{
	static const struct {
		const char *name, *opts;
		int64_t budget;
	} cases[] = {
		{ "full", "", 64 },
		{ "snapkv", "window=8", 32 },
		{ "adakv", "window=8", 32 },
		{ "h2o", "", 32 },
		{ "nacl", "rho=0.3,seed=5,window=8", 32 },
		{ "streaming", "sinks=4,positions=original", 32 },
		{ "streaming", "sinks=4,positions=slot", 32 },
	};
	int32_t ids[300 + TS_NQ];
	size_t i;
	ts_doc(ids, 300 + TS_NQ, 1, TS_V);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct th_run r;
		char label[96];
		int64_t n = !strcmp(cases[i].name, "full") ? 150 : 300;
		enum tap_result t;
		snprintf(label, sizeof(label), "%s:%s", cases[i].name, cases[i].opts);
		TAP_CHECK(th_ingest(&r, g_m, cases[i].name, cases[i].opts, cases[i].budget, ids, n,
		    32, TS_NQ, 0) == 0, "%s: ingest", label);
		if (!strcmp(cases[i].name, "adakv"))
			TAP_CHECK(ts_ragged(r.kv), "adakv kept equal counts per head: test is blind");
		if (strstr(cases[i].opts, "slot"))
			TAP_CHECK(r.kv->pos_mode == ENG_POS_SLOT, "slot mode not set");
		t = ts_check_roundtrip(&r, label, ids + n);
		th_run_free(&r);
		if (t != TAP_PASS)
			return t;
	}
	return TAP_PASS;
}

/* PoD pools: non-anchor layers store only their window keys (NaN rows in
 * the pool stay NaN), and the block check catches a tampered pool. */
static enum tap_result
test_roundtrip_pod(void)
{
	int32_t ids[220 + TS_NQ];
	char opts[256];
	struct th_run r;
	struct th_snap s;
	struct snap_header h;
	struct eng_kv *kv2 = NULL;
	char why[256];
	enum tap_result t;

	ts_doc(ids, 220 + TS_NQ, 2, TS_V);
	snprintf(opts, sizeof(opts), "map=%s,base=full,n_s=2,n_r=5", g_map_mixed);
	TAP_CHECK(th_ingest(&r, g_m, "pod", opts, 64, ids, 150, 32, TS_NQ, 0) == 0, "pod full");
	TAP_CHECK(r.kv->pod != NULL, "no PoD layout after ingest");
	t = ts_check_roundtrip(&r, "pod:base=full", ids + 150);
	th_run_free(&r);
	if (t != TAP_PASS)
		return t;
	snprintf(opts, sizeof(opts), "map=%s,n_s=2,n_r=6,window=8,distant_query=own", g_map_mixed);
	TAP_CHECK(th_ingest(&r, g_m, "pod", opts, 24, ids, 220, 32, TS_NQ, 0) == 0, "pod nacl");
	/* the encoded key rows are eng_kv_pod_key_rows' */
	TAP_CHECK(ts_encode(&s, r.kv, TINY_N_HEAD, SNAP_FP16) == 0, "encode");
	TAP_CHECK(s.h.has_pod && s.h.pod.n_s == 2 && s.h.pod.n_r == 6 && s.h.pod.distant_own == 1,
	    "PoD header fields");
	TAP_CHECK(ts_load(&s, g_m, r.rph, &kv2, &h, why, sizeof(why)) == 0, "load: %s", why);
	{
		int l, m;
		for (l = 0; l < TS_L; l++)
			for (m = 0; m < TS_KV; m++) {
				int64_t kp, ks, kp2, ks2;
				eng_kv_pod_key_rows(r.kv, l, m, &kp, &ks);
				eng_kv_pod_key_rows(kv2, l, m, &kp2, &ks2);
				TAP_CHECK(kp == kp2 && ks == ks2, "layer %d head %d key rows", l, m);
			}
	}
	/* a non-anchor layer whose positions differ from its anchor's */
	kv2->layer[1].pos[kv2->layer[1].off[0] + 5]++;
	TAP_CHECK(snap_pod_check_blocks(&h, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "layer 1 head 0"), "tampered block not caught: %s", why);
	eng_kv_free(kv2);
	snap_header_free(&h);
	th_snap_free(&s);
	t = ts_check_roundtrip(&r, "pod:base=nacl", ids + 220);
	th_run_free(&r);
	return t;
}

/* ------------------------------------------------------------------------ */
/* q4 schemes on synthetic pools (head_dim 64)                               */

struct ts_syn {
	struct eng_model shell;
	struct eng_kv *kv;
	int64_t counts[3 * 2];
};

static int
ts_syn_init(struct ts_syn *y, uint64_t seed)
{
	static const int64_t counts[3 * 2] = { 70, 33, 1, 0, 45, 64 };
	tiny_shell(&y->shell, 3, 4, 2, 64);
	memcpy(y->counts, counts, sizeof(counts));
	y->kv = NULL;
	return eng_kv_init(&y->kv, &y->shell, 140) || ts_fill(y->kv, y->counts, 3000000, seed);
}

/* max and RMS of |a − b| over the stored key rows (all of them when
 * non-PoD) or the values of a layer. */
static void
ts_err(const struct eng_kv *a, const struct eng_kv *b, int layer, int keys, double *mx,
    double *rms)
{
	const struct eng_kv_layer *A = &a->layer[layer], *B = &b->layer[layer];
	int hd = a->head_dim, m, d;
	double s2 = 0;
	int64_t i, n = 0;
	*mx = 0;
	for (m = 0; m < a->n_head_kv; m++)
		for (i = 0; i < A->len[m]; i++)
			for (d = 0; d < hd; d++) {
				int64_t ra = (A->off[m] + i) * hd + d, rb = (B->off[m] + i) * hd + d;
				double e;
				if (keys && isnan(B->k[rb]))
					continue;
				e = keys ? fabs((double)A->k[ra] - B->k[rb]) : fabs((double)A->v[ra] - B->v[rb]);
				*mx = fmax(*mx, e);
				s2 += e * e;
				n++;
			}
	*rms = n ? sqrt(s2 / (double)n) : 0.0;
}

/* The K and V schemes of each form (snapshot.c's table, restated). */
static const enum qp_scheme ts_form_k[SNAP_QUANT_MAX + 1] = { QP_F16, QP_Q4, QP_Q4_CH, QP_Q8,
	QP_Q4, QP_Q4_CH, QP_B6, QP_B5, QP_B3, QP_B5, QP_Q4, QP_Q8 };
static const enum qp_scheme ts_form_v[SNAP_QUANT_MAX + 1] = { QP_F16, QP_Q4, QP_Q4, QP_Q8,
	QP_Q4, QP_Q4, QP_B6, QP_B5, QP_B3, QP_B3, QP_B2, QP_Q4 };

/* Worst err/bound of n loaded rows b against the originals a (hd 64)
 * under scheme s, in the domain the form quantizes in: a rotated form's
 * rows are rotated by H (both sides) first, so the bound is qpack's δ/2
 * per group of the rotated rows.  The load's rotation back in float adds
 * at most ~(log2 d + 2)·2^-24·‖x‖₂ per value (hadamard.h: 2^-21·‖x‖₂ at d
 * = 64), inside ts_q_bound's float slack. */
static double
ts_form_ratio(int quant, enum qp_scheme s, const float *a, const float *b, int64_t n)
{
	size_t bytes = (size_t)(n ? n : 1) * 64 * sizeof(float);
	float *ra = malloc(bytes), *rb = malloc(bytes);
	double r = 2.0; /* out of memory: over the bound */
	if (ra && rb) {
		memcpy(ra, a, (size_t)n * 64 * sizeof(float));
		memcpy(rb, b, (size_t)n * 64 * sizeof(float));
		if (snap_quant_rotated(quant)) {
			hd_rotate_rows(ra, n, 64);
			hd_rotate_rows(rb, n, 64);
		}
		r = ts_q4_ratio(s, ra, rb, n, 64);
	}
	free(ra);
	free(rb);
	return r;
}

static enum tap_result
test_roundtrip_q4(void)
{
	struct ts_syn y;
	int quant;
	double k_rms_q4 = 0, k_rms_q4kc = 0;
	double k_rms[SNAP_QUANT_MAX + 1], v_rms[SNAP_QUANT_MAX + 1];
	TAP_CHECK(ts_syn_init(&y, 3) == 0, "synthetic pool");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX; quant++) {
		struct th_snap s;
		struct snap_header h;
		struct eng_kv *kv2;
		char why[256];
		int l, m;
		TAP_CHECK(ts_encode(&s, y.kv, 4, quant) == 0, "encode %s", snap_quant_name(quant));
		TAP_CHECK(ts_load(&s, &y.shell, 140, &kv2, &h, why, sizeof(why)) == 0, "load: %s", why);
		for (l = 0; l < 3; l++) {
			struct snap_qerr q;
			double kmx, krms, vmx, vrms;
			TAP_CHECK(snap_layer_qerr(y.kv, l, &s.h, &q) == 0, "qerr");
			ts_err(y.kv, kv2, l, 1, &kmx, &krms);
			ts_err(y.kv, kv2, l, 0, &vmx, &vrms);
			/* qerr reports exactly what a load reconstructs */
			TAP_CHECK(fabs(q.k_max - kmx) <= 1e-12 && fabs(q.v_max - vmx) <= 1e-12 &&
			    fabs(q.k_rms - krms) <= 1e-9 && fabs(q.v_rms - vrms) <= 1e-9,
			    "%s layer %d: qerr %g/%g %g/%g, measured %g/%g %g/%g", snap_quant_name(quant),
			    l, q.k_max, q.k_rms, q.v_max, q.v_rms, kmx, krms, vmx, vrms);
			TAP_CHECK(q.k_rms <= q.k_max && q.v_rms <= q.v_max, "rms over max");
			if (l == 0) {
				tap_diag("%s layer 0: K max %.4f rms %.4f, V max %.4f rms %.4f",
				    snap_quant_name(quant), q.k_max, q.k_rms, q.v_max, q.v_rms);
				k_rms[quant] = q.k_rms;
				v_rms[quant] = q.v_rms;
				if (quant == SNAP_FP16)
					TAP_CHECK(q.k_max < 0.05 && q.v_max < 0.005, "fp16 error too big");
				else if (quant != SNAP_K4V2_H)
					TAP_CHECK(q.v_rms > 0 && q.v_max < 1.0, "q4 V error not sane");
				else /* 2 bits: δ ≈ 5/3 over N(0,1) values; bounded exactly below */
					TAP_CHECK(q.v_rms > 0 && q.v_max < 2.0, "2-bit V error not sane");
				if (quant == SNAP_Q4)
					k_rms_q4 = q.k_rms;
				if (quant == SNAP_Q4_KC) {
					TAP_CHECK(q.k_rms < k_rms_q4,
					    "per-channel keys (%g) not better than per-row (%g) on outlier "
					    "channels", q.k_rms, k_rms_q4);
					k_rms_q4kc = q.k_rms;
				}
				/* the rotation spreads the two outlier channels over the
				 * row: per-row groups no longer span them */
				if (quant == SNAP_Q4_H)
					TAP_CHECK(q.k_rms < k_rms_q4, "rotated q4 keys (%g) not better than "
					    "q4 (%g) on outlier channels", q.k_rms, k_rms_q4);
				if (quant == SNAP_Q8)
					TAP_CHECK(q.k_rms < k_rms_q4kc / 4 && q.v_max < 0.05,
					    "q8 error %g/%g", q.k_rms, q.v_max);
			}
			/* every stored value within its group's bound (the rotated
			 * forms in the rotated domain: ts_form_ratio) */
			for (m = 0; m < 2 && quant != SNAP_FP16; m++) {
				const struct eng_kv_layer *A = &y.kv->layer[l], *B = &kv2->layer[l];
				int64_t n = A->len[m];
				double rk = ts_form_ratio(quant, ts_form_k[quant], A->k + A->off[m] * 64,
				    B->k + B->off[m] * 64, n);
				double rv = ts_form_ratio(quant, ts_form_v[quant], A->v + A->off[m] * 64,
				    B->v + B->off[m] * 64, n);
				TAP_CHECK(rk <= 1.0 && rv <= 1.0, "%s layer %d head %d: error/bound K %.3f V %.3f",
				    snap_quant_name(quant), l, m, rk, rv);
			}
		}
		tap_diag("metric: snapshot %s, head_dim 64 synthetic: %.1f bytes/unit",
		    snap_quant_name(quant), (double)ts_snap_bytes(&s) / (double)ts_units(y.kv));
		eng_kv_free(kv2);
		snap_header_free(&h);
		th_snap_free(&s);
	}
	/* fewer bits, more error; a mixed form's K is the same-bits form's K
	 * exactly, and its V the same-bits form's V (the same scheme on the
	 * same rotated rows) */
	TAP_CHECK(k_rms[SNAP_Q6_H] < k_rms[SNAP_Q5_H] && k_rms[SNAP_Q5_H] < k_rms[SNAP_Q4_H] &&
	    k_rms[SNAP_Q4_H] < k_rms[SNAP_Q3_H] && v_rms[SNAP_Q6_H] < v_rms[SNAP_Q5_H] &&
	    v_rms[SNAP_Q5_H] < v_rms[SNAP_Q4_H] && v_rms[SNAP_Q4_H] < v_rms[SNAP_Q3_H] &&
	    v_rms[SNAP_Q3_H] < v_rms[SNAP_K4V2_H], "error not ordered by bits");
	TAP_CHECK(k_rms[SNAP_K5V3_H] == k_rms[SNAP_Q5_H] && v_rms[SNAP_K5V3_H] == v_rms[SNAP_Q3_H] &&
	    k_rms[SNAP_K4V2_H] == k_rms[SNAP_Q4_H] && v_rms[SNAP_K8V4_H] == v_rms[SNAP_Q4_H],
	    "a mixed form's K or V differs from its same-bits form's");
	eng_kv_free(y.kv);
	return TAP_PASS;
}

/* q4kc under PoD: the key rows of a non-anchor head are its windows (one
 * channel group may mix prefix and suffix rows); the rest load as NaN. */
static enum tap_result
test_q4kc_pod(void)
{
	static const uint8_t anc[2 * 3] = { 0, 0, 2, 0, 1, 1 };
	static const int64_t counts[3 * 2] = { 70, 40, 70, 40, 5, 40 };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *kv2 = NULL;
	struct th_snap s;
	struct snap_header h;
	char why[256];
	int l, m;
	int64_t i;

	tiny_shell(&shell, 3, 4, 2, 64);
	TAP_CHECK(eng_kv_init(&kv, &shell, 100) == 0 && ts_fill(kv, counts, 100000, 4) == 0, "pool");
	/* windows: n_s covers 3 units of a 70-unit head, n_r 40 of them */
	TAP_CHECK(eng_kv_set_pod(kv, anc, 4000, 57000, 0) == 0, "pod layout");
	TAP_CHECK(ts_encode(&s, kv, 4, SNAP_Q4_KC) == 0, "encode");
	TAP_CHECK(ts_load(&s, &shell, 100, &kv2, &h, why, sizeof(why)) == 0, "load: %s", why);
	for (l = 0; l < 3; l++)
		for (m = 0; m < 2; m++) {
			const struct eng_kv_layer *B = &kv2->layer[l];
			int64_t kp, ks, n = B->len[m];
			eng_kv_pod_key_rows(kv, l, m, &kp, &ks);
			if (anc[m * 3 + l] != l)
				TAP_CHECK(kp > 0 && ks > 0 && kp + ks < n, "layer %d head %d: windows %lld+%lld "
				    "of %lld do not test anything", l, m, (long long)kp, (long long)ks,
				    (long long)n);
			for (i = 0; i < n; i++) {
				int stored = i < kp || i >= n - ks;
				TAP_CHECK(stored == !isnan(B->k[(B->off[m] + i) * 64]),
				    "layer %d head %d unit %lld: key present %d", l, m, (long long)i, !stored);
			}
		}
	TAP_CHECK(snap_pod_check_blocks(&h, kv2, why, sizeof(why)) == 0, "blocks: %s", why);
	eng_kv_free(kv);
	eng_kv_free(kv2);
	snap_header_free(&h);
	th_snap_free(&s);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Header fields                                                             */

/* A header with every field set (3 layers, 6 heads, 2 KV heads, PoD). */
static void
ts_header_example(struct snap_header *h)
{
	static const uint8_t anc[2 * 3] = { 0, 0, 2, 0, 1, 1 };
	static const int64_t counts[3 * 2] = { 70, 0, 70, 40, 9, 40 };
	int i;
	memset(h, 0, sizeof(*h));
	h->version = SNAP_FORMAT_VERSION;
	for (i = 0; i < 64; i++)
		h->model_fp[i] = "0123456789abcdef"[(i * 7) % 16];
	for (i = 0; i < SNAP_ID_BYTES; i++)
		h->profile_id[i] = (uint8_t)(i * 37 + 1);
	snprintf(h->profile, sizeof(h->profile), "v1|model|pod:budget=64,map=…,n_s=4|chunk=512|q4kc");
	h->n_layer = 3;
	h->n_head = 6;
	h->n_head_kv = 2;
	h->head_dim = 64;
	h->n_tokens = UINT64_C(123456789012);
	h->next_pos = 100000;
	h->pos_mode = ENG_POS_ORIGINAL;
	h->quant = SNAP_Q4_KC;
	h->counts = malloc(sizeof(counts));
	memcpy(h->counts, counts, sizeof(counts));
	h->layer_sum = malloc(3 * SNAP_SUM_BYTES);
	for (i = 0; i < 3 * SNAP_SUM_BYTES; i++)
		h->layer_sum[i / SNAP_SUM_BYTES][i % SNAP_SUM_BYTES] = (uint8_t)(255 - i);
	h->has_pod = 1;
	h->pod.n_s = 4;
	h->pod.n_r = 17;
	h->pod.distant_own = 1;
	h->pod.anc = malloc(sizeof(anc));
	memcpy(h->pod.anc, anc, sizeof(anc));
}

static int
ts_header_equal(const struct snap_header *a, const struct snap_header *b)
{
	size_t LH = (size_t)a->n_layer * (size_t)a->n_head_kv;
	/* version: what a record is written in follows from the quantization
	 * (an encoder's h->version is not written; a decoder's is the record's) */
	return snap_quant_version(a->quant) == snap_quant_version(b->quant) &&
	    !strcmp(a->model_fp, b->model_fp) &&
	    !memcmp(a->profile_id, b->profile_id, SNAP_ID_BYTES) && !strcmp(a->profile, b->profile) &&
	    a->n_layer == b->n_layer && a->n_head == b->n_head && a->n_head_kv == b->n_head_kv &&
	    a->head_dim == b->head_dim && a->n_tokens == b->n_tokens && a->next_pos == b->next_pos &&
	    a->pos_mode == b->pos_mode && a->quant == b->quant &&
	    !memcmp(a->counts, b->counts, LH * sizeof(int64_t)) &&
	    !memcmp(a->layer_sum, b->layer_sum, (size_t)a->n_layer * SNAP_SUM_BYTES) &&
	    a->has_pod == b->has_pod &&
	    (!a->has_pod ||
	        (a->pod.n_s == b->pod.n_s && a->pod.n_r == b->pod.n_r &&
	            a->pod.distant_own == b->pod.distant_own && !memcmp(a->pod.anc, b->pod.anc, LH)));
}

/* One mutation of the example that encode must refuse. */
static void
ts_mutate(struct snap_header *h, int k)
{
	switch (k) {
	case 0: h->n_layer = 0; break;
	case 1: h->n_layer = 1025; break;
	case 2: h->n_head = 7; break;
	case 3: h->head_dim = 63; break;
	case 4: h->head_dim = 48; break; /* q4kc needs a multiple of 32 */
	case 5: h->pos_mode = 2; break;
	case 6: h->quant = SNAP_QUANT_MAX + 1; break;
	case 7: h->model_fp[63] = 0; break;
	case 8: h->model_fp[10] = 'g'; break;
	case 9: memset(h->profile, 'x', sizeof(h->profile)); break;
	case 10: h->counts[1] = -1; break;
	case 11: h->counts[3] = 100001; break;
	case 12: h->pod.anc[0] = 1; break;
	case 13: h->pod.anc[2] = 1; break; /* head 0, layer 2: neither 2 nor anc[1] = 0 */
	case 14: h->pos_mode = ENG_POS_SLOT; break; /* PoD needs original positions */
	case 15: h->pod.n_r = 0; break;
	case 16: h->counts[2] = 69; break; /* head 0's block {0,1}: counts differ */
	case 17: h->version = SNAP_FORMAT_VERSION + 1; break;
	case 18: h->pod.distant_own = 2; break;
	case 19: h->has_pod = 2; break;
	case 20: h->n_head = 1025; break;
	case 21: /* the rotation needs a power of two */
		h->quant = SNAP_Q4_KC_H;
		h->head_dim = 96;
		break;
	}
}
#define TS_N_MUTATIONS 22

static enum tap_result
test_header_fields(void)
{
	struct snap_header h, d;
	uint8_t *buf = NULL;
	size_t len;
	char why[256];
	int k, pod;

	for (pod = 1; pod >= 0; pod--) {
		ts_header_example(&h);
		if (!pod) {
			h.has_pod = 0;
			h.pos_mode = ENG_POS_SLOT;
			h.quant = SNAP_FP16;
			h.head_dim = 6;
			h.model_fp[0] = 0;
			h.profile[0] = 0;
		}
		TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == 0, "encode (pod %d)", pod);
		TAP_CHECK(snap_header_decode(buf, len, &d, why, sizeof(why)) == 0, "decode: %s", why);
		TAP_CHECK(ts_header_equal(&h, &d), "fields differ after the round trip (pod %d)", pod);
		/* the forms before version 5 still write 4 */
		TAP_CHECK(d.version == SNAP_FAST_VERSION, "version %u for %s", d.version,
		    snap_quant_name(h.quant));
		tap_diag("header record (pod %d): %zu bytes", pod, len);
		free(buf);
		snap_header_free(&d);
		/* a header whose version is below 4 is written in the legacy one */
		h.version = 1;
		TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == 0, "encode legacy (pod %d)", pod);
		TAP_CHECK(snap_header_decode(buf, len, &d, why, sizeof(why)) == 0, "decode: %s", why);
		TAP_CHECK(ts_header_equal(&h, &d) && (int)d.version == snap_quant_version(h.quant),
		    "legacy version %u for %s", d.version, snap_quant_name(h.quant));
		free(buf);
		snap_header_free(&h);
		snap_header_free(&d);
	}
	/* a form of version 5 writes 5, and has no legacy encoding */
	ts_header_example(&h);
	h.quant = SNAP_K5V3_H;
	TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == 0, "encode k5v3h");
	TAP_CHECK(snap_header_decode(buf, len, &d, why, sizeof(why)) == 0, "decode: %s", why);
	TAP_CHECK(ts_header_equal(&h, &d) && d.version == SNAP_BITS_VERSION, "k5v3h: version %u",
	    d.version);
	free(buf);
	snap_header_free(&d);
	h.version = 1;
	TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == SNAP_ERR_ARG && !buf,
	    "k5v3h encoded in version 1");
	snap_header_free(&h);
	for (k = 0; k < TS_N_MUTATIONS; k++) {
		ts_header_example(&h);
		ts_mutate(&h, k);
		TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == SNAP_ERR_ARG && !buf,
		    "mutation %d encoded", k);
		snap_header_free(&h);
	}
	/* the same head_dim is fine in fp16 */
	ts_header_example(&h);
	h.head_dim = 48;
	h.quant = SNAP_FP16;
	TAP_CHECK(snap_header_encode(&h, 3, &buf, &len) == 0, "fp16 head_dim 48");
	free(buf);
	snap_header_free(&h);
	/* from a pool */
	{
		struct ts_syn y;
		TAP_CHECK(ts_syn_init(&y, 5) == 0, "pool");
		TAP_CHECK(snap_header_from_kv(&h, y.kv, 3) == SNAP_ERR_ARG, "n_head 3 over 2 KV heads");
		TAP_CHECK(snap_header_from_kv(&h, y.kv, 4) == 0, "from kv");
		TAP_CHECK(h.n_layer == 3 && h.n_head == 4 && h.n_head_kv == 2 && h.head_dim == 64 &&
		    h.next_pos == 3000000 && h.n_tokens == 3000000 && h.pos_mode == 0 && !h.has_pod &&
		    h.version == SNAP_FORMAT_VERSION, "shape fields");
		TAP_CHECK(!memcmp(h.counts, y.counts, sizeof(y.counts)), "counts");
		snap_header_free(&h);
		eng_kv_free(y.kv);
	}
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Corruption                                                                */

/* A small dense snapshot (tiny model, snapkv) to damage. */
static int
ts_small(struct th_snap *s, uint64_t seed)
{
	struct th_run r;
	int32_t ids[120];
	int rc;
	ts_doc(ids, 120, seed, TS_V);
	rc = th_ingest(&r, g_m, "snapkv", "window=4", 12, ids, 120, 32, 0, 0);
	if (!rc)
		rc = ts_encode(s, r.kv, TINY_N_HEAD, SNAP_FP16);
	th_run_free(&r);
	return rc;
}

static struct eng_kv *
ts_tiny_pool(void)
{
	struct eng_kv *kv = NULL;
	return eng_kv_init(&kv, g_m, 64) ? NULL : kv;
}

/* Every byte of the stored header and layer 1 XORed with 0x01, 0x80 and
 * 0xff: never accepted (a header accepted only if identical). */
static enum tap_result
test_corrupt_stored(void)
{
	static const uint8_t masks[] = { 0x01, 0x80, 0xff };
	struct th_snap s;
	struct snap_header d;
	struct eng_kv *kv = ts_tiny_pool();
	char why[256];
	size_t i, j, n_hdr_same = 0;

	TAP_CHECK(kv && ts_small(&s, 7) == 0, "setup");
	tap_diag("small record: header %zu bytes, layer 1 %zu bytes", s.hdr_len, s.len[1]);
	for (i = 0; i < s.hdr_len; i++)
		for (j = 0; j < sizeof(masks); j++) {
			int rc;
			s.hdr[i] ^= masks[j];
			rc = snap_header_decode(s.hdr, s.hdr_len, &d, why, sizeof(why));
			if (rc == 0) {
				TAP_CHECK(ts_header_equal(&s.h, &d), "byte %zu ^ %02x: different header "
				    "accepted", i, masks[j]);
				n_hdr_same++;
			}
			snap_header_free(&d);
			s.hdr[i] ^= masks[j];
		}
	for (i = 0; i < s.len[1]; i++)
		for (j = 0; j < sizeof(masks); j++) {
			s.rec[1][i] ^= masks[j];
			TAP_CHECK(snap_layer_decode(s.rec[1], s.len[1], &s.h, 1, kv, why, sizeof(why)) ==
			    SNAP_ERR_CORRUPT && strstr(why, "layer 1"), "byte %zu ^ %02x: %s", i, masks[j],
			    why);
			TAP_CHECK(snap_layer_check(s.rec[1], s.len[1], &s.h, 1, why, sizeof(why)) ==
			    SNAP_ERR_CORRUPT, "check: byte %zu", i);
			s.rec[1][i] ^= masks[j];
		}
	if (n_hdr_same)
		tap_diag("%zu header flips decoded to the same header (zstd ignores those bits)",
		    n_hdr_same);
	TAP_CHECK(snap_layer_decode(s.rec[1], s.len[1], &s.h, 1, kv, why, sizeof(why)) == 0,
	    "undamaged: %s", why);
	TAP_CHECK(snap_layer_check(s.rec[1], s.len[1], &s.h, 1, why, sizeof(why)) == 0, "check");
	eng_kv_free(kv);
	th_snap_free(&s);
	return TAP_PASS;
}

/* Damage inside the zstd frame: without a fixed checksum every flip is
 * caught by it; with the checksum recomputed (a forger) nothing crashes and
 * structural fields are still refused. */
static enum tap_result
test_corrupt_decoded(void)
{
	struct th_snap s;
	struct eng_kv *kv = ts_tiny_pool();
	uint8_t *plain, *cp, *z;
	size_t n, zn, i;
	char why[256];
	int fix, n_ok = 0, n_bad = 0;
	uint8_t keep[SNAP_SUM_BYTES];

	TAP_CHECK(kv && ts_small(&s, 8) == 0, "setup");
	TAP_CHECK(th_unseal(s.rec[2], s.len[2], &plain, &n) == 0, "unseal");
	memcpy(keep, s.h.layer_sum[2], SNAP_SUM_BYTES);
	cp = malloc(n + 1);
	for (fix = 0; fix <= 1; fix++)
		for (i = 0; i < n - (fix ? SNAP_SUM_BYTES : 0); i++) {
			int rc;
			memcpy(cp, plain, n);
			cp[i] ^= 0x41;
			th_reseal(cp, n, fix, &z, &zn);
			crypto_generichash(s.h.layer_sum[2], SNAP_SUM_BYTES, z, zn, NULL, 0);
			rc = snap_layer_decode(z, zn, &s.h, 2, kv, why, sizeof(why));
			if (!fix)
				TAP_CHECK(rc == (i >= 4 && i < 8 ? SNAP_ERR_VERSION : SNAP_ERR_CORRUPT),
				    "byte %zu flipped, checksum not fixed: rc %d (%s)", i, rc, why);
			else if (i < 24) /* the fixed fields */
				TAP_CHECK(rc != 0, "byte %zu (fixed field) flipped and accepted", i);
			n_ok += fix && rc == 0;
			n_bad += fix && rc != 0;
			free(z);
		}
	tap_diag("forged flips: %d accepted (values), %d refused", n_ok, n_bad);
	/* truncation and an extra byte, checksum fixed: the layout must fill it */
	for (i = SNAP_SUM_BYTES; i <= n + 1; i++) {
		size_t body = i - SNAP_SUM_BYTES, have = n - SNAP_SUM_BYTES;
		int rc;
		if (i == n)
			continue;
		memcpy(cp, plain, body < have ? body : have);
		if (body > have)
			cp[body - 1] = 0; /* one byte more than the layout holds */
		th_reseal(cp, i, 1, &z, &zn);
		crypto_generichash(s.h.layer_sum[2], SNAP_SUM_BYTES, z, zn, NULL, 0);
		rc = snap_layer_decode(z, zn, &s.h, 2, kv, why, sizeof(why));
		TAP_CHECK(rc == SNAP_ERR_CORRUPT, "decoded length %zu of %zu accepted", i, n);
		free(z);
	}
	memcpy(s.h.layer_sum[2], keep, SNAP_SUM_BYTES);
	free(cp);
	free(plain);
	eng_kv_free(kv);
	th_snap_free(&s);
	return TAP_PASS;
}

static enum tap_result
test_truncation(void)
{
	struct th_snap s;
	struct snap_header d;
	struct eng_kv *kv = ts_tiny_pool();
	char why[256];
	size_t i;
	uint8_t *big;

	TAP_CHECK(kv && ts_small(&s, 9) == 0, "setup");
	for (i = 0; i < s.hdr_len; i++) {
		uint8_t *cut = malloc(i + 1); /* exact size: ASan catches over-reads */
		memcpy(cut, s.hdr, i);
		TAP_CHECK(snap_header_decode(cut, i, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT,
		    "header cut at %zu accepted", i);
		free(cut);
	}
	for (i = 0; i < s.len[0]; i++) {
		uint8_t *cut = malloc(i + 1);
		memcpy(cut, s.rec[0], i);
		TAP_CHECK(snap_layer_decode(cut, i, &s.h, 0, kv, why, sizeof(why)) == SNAP_ERR_CORRUPT,
		    "layer cut at %zu accepted", i);
		free(cut);
	}
	/* a byte after the frame */
	big = malloc(s.hdr_len + 1);
	memcpy(big, s.hdr, s.hdr_len);
	big[s.hdr_len] = 0;
	TAP_CHECK(snap_header_decode(big, s.hdr_len + 1, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "one zstd frame"), "trailing byte: %s", why);
	free(big);
	eng_kv_free(kv);
	th_snap_free(&s);
	return TAP_PASS;
}

/* A record of another layer or snapshot is refused, and so is a header
 * whose counts or shape do not fit the record or the pool. */
static enum tap_result
test_mismatch(void)
{
	struct th_snap s, t;
	struct eng_kv *kv = ts_tiny_pool(), *small = NULL, *wide = NULL;
	struct eng_model shell;
	char why[256];
	uint8_t keep[SNAP_SUM_BYTES];

	TAP_CHECK(kv && ts_small(&s, 10) == 0 && ts_small(&t, 11) == 0, "setup");
	TAP_CHECK(snap_layer_decode(s.rec[1], s.len[1], &s.h, 0, kv, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "another layer or snapshot"), "layer 1 as 0: %s", why);
	TAP_CHECK(snap_layer_decode(t.rec[0], t.len[0], &s.h, 0, kv, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT, "another snapshot's layer 0: %s", why);
	/* a header listing layer 1's checksum for layer 0: the record says 1 */
	memcpy(keep, s.h.layer_sum[0], SNAP_SUM_BYTES);
	memcpy(s.h.layer_sum[0], s.h.layer_sum[1], SNAP_SUM_BYTES);
	TAP_CHECK(snap_layer_decode(s.rec[1], s.len[1], &s.h, 0, kv, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "another layer"), "swapped sums: %s", why);
	memcpy(s.h.layer_sum[0], keep, SNAP_SUM_BYTES);
	/* counts that differ from the record's */
	s.h.counts[1]--;
	TAP_CHECK(snap_layer_decode(s.rec[0], s.len[0], &s.h, 0, kv, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "layer 0 head 1: unit count"), "count: %s", why);
	s.h.counts[1] += 2;
	TAP_CHECK(snap_layer_check(s.rec[0], s.len[0], &s.h, 0, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT, "count (check): %s", why);
	s.h.counts[1]--;
	/* pools that cannot take it */
	TAP_CHECK(eng_kv_init(&small, g_m, 5) == 0, "small pool");
	TAP_CHECK(snap_layer_decode(s.rec[0], s.len[0], &s.h, 0, small, why, sizeof(why)) ==
	    SNAP_ERR_MISMATCH && strstr(why, "do not fit"), "small pool: %s", why);
	tiny_shell(&shell, TS_L, 4, 2, 16);
	TAP_CHECK(eng_kv_init(&wide, &shell, 64) == 0, "wide pool");
	TAP_CHECK(snap_layer_decode(s.rec[0], s.len[0], &s.h, 0, wide, why, sizeof(why)) ==
	    SNAP_ERR_MISMATCH, "head_dim 16 pool: %s", why);
	TAP_CHECK(snap_layer_decode(s.rec[0], s.len[0], &s.h, TS_L, kv, why, sizeof(why)) ==
	    SNAP_ERR_ARG, "layer out of range");
	TAP_CHECK(snap_layer_decode(s.rec[0], s.len[0], &s.h, 0, kv, why, sizeof(why)) == 0,
	    "restored: %s", why);
	eng_kv_free(kv);
	eng_kv_free(small);
	eng_kv_free(wide);
	th_snap_free(&s);
	th_snap_free(&t);
	return TAP_PASS;
}

/* Frames that declare more than the header allows are refused before any
 * allocation (an attempt at 1 TiB would abort under ASan), and so are
 * frames that declare nothing. */
static enum tap_result
test_zip_bomb(void)
{
	struct th_snap s;
	struct snap_header d;
	struct eng_kv *kv = ts_tiny_pool();
	size_t big = (size_t)1 << 22, cap = ZSTD_compressBound(big), zn;
	uint8_t *zeros = calloc(big, 1), *z = malloc(cap);
	/* magic, FHD (8-byte content size, single segment), size 2^40, then
	 * one empty raw last block */
	uint8_t forged[] = { 0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0 };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	char why[256];

	TAP_CHECK(kv && zeros && z && cc && ts_small(&s, 12) == 0, "setup");
	zn = ZSTD_compress(z, cap, zeros, big, 3);
	TAP_CHECK(!ZSTD_isError(zn) && zn < 4096, "4 MiB of zeros -> %zu bytes", zn);
	crypto_generichash(s.h.layer_sum[0], SNAP_SUM_BYTES, z, zn, NULL, 0);
	TAP_CHECK(snap_layer_decode(z, zn, &s.h, 0, kv, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "declares 4194304 bytes"), "layer bomb: %s", why);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT, "header");
	crypto_generichash(s.h.layer_sum[0], SNAP_SUM_BYTES, forged, sizeof(forged), NULL, 0);
	TAP_CHECK(snap_layer_decode(forged, sizeof(forged), &s.h, 0, kv, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "declares 1099511627776"), "forged layer: %s", why);
	TAP_CHECK(snap_header_decode(forged, sizeof(forged), &d, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "declares"), "forged header: %s", why);
	/* a frame without a content size */
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
	zn = ZSTD_compress2(cc, z, cap, zeros, 100);
	TAP_CHECK(!ZSTD_isError(zn) && ZSTD_getFrameContentSize(z, zn) == ZSTD_CONTENTSIZE_UNKNOWN,
	    "frame without a size");
	crypto_generichash(s.h.layer_sum[0], SNAP_SUM_BYTES, z, zn, NULL, 0);
	TAP_CHECK(snap_layer_decode(z, zn, &s.h, 0, kv, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "does not declare"), "sizeless layer: %s", why);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "does not declare"), "sizeless header: %s", why);
	ZSTD_freeCCtx(cc);
	free(zeros);
	free(z);
	eng_kv_free(kv);
	th_snap_free(&s);
	return TAP_PASS;
}

/* A newer format version is SNAP_ERR_VERSION, not corruption. */
static enum tap_result
test_version(void)
{
	struct th_snap s;
	struct snap_header d;
	struct eng_kv *kv = ts_tiny_pool();
	uint8_t *plain, *z;
	size_t n, zn;
	char why[256], want[80];
	int i;

	TAP_CHECK(kv && ts_small(&s, 13) == 0, "setup");
	TAP_CHECK(th_unseal(s.hdr, s.hdr_len, &plain, &n) == 0, "unseal");
	th_put_u32(plain + 4, SNAP_FORMAT_VERSION + 1);
	th_reseal(plain, n, 1, &z, &zn);
	snprintf(want, sizeof(want), "format version %d, this build reads 1 to %d",
	    SNAP_FORMAT_VERSION + 1, SNAP_FORMAT_VERSION);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_VERSION &&
	    strstr(why, want), "header: %s", why);
	free(z);
	free(plain);
	TAP_CHECK(th_unseal(s.rec[3], s.len[3], &plain, &n) == 0, "unseal layer");
	th_put_u32(plain + 4, SNAP_FORMAT_VERSION + 1);
	th_reseal(plain, n, 1, &z, &zn);
	crypto_generichash(s.h.layer_sum[3], SNAP_SUM_BYTES, z, zn, NULL, 0);
	TAP_CHECK(snap_layer_decode(z, zn, &s.h, 3, kv, why, sizeof(why)) == SNAP_ERR_VERSION &&
	    strstr(why, "layer 3"), "layer: %s", why);
	free(z);
	free(plain);
	/* one encoding per snapshot: fp16 in a version-2 record is corrupt */
	TAP_CHECK(th_unseal(s.hdr, s.hdr_len, &plain, &n) == 0, "unseal");
	th_put_u32(plain + 4, 2);
	th_reseal(plain, n, 1, &z, &zn);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "version 2"), "fp16 header as version 2: %s", why);
	free(z);
	/* and q8 in a version-1 one */
	th_put_u32(plain + 4, 1);
	plain[37] = SNAP_Q8;
	th_reseal(plain, n, 1, &z, &zn);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "q8"), "q8 header as version 1: %s", why);
	free(z);
	/* version 5 is only the 6/5/3/2-bit forms': fp16 in it is corrupt, and
	 * so is q5h in a version-4 record (a build reading only 4 refuses a
	 * version-5 record by its version, as the 5 + 1 above) */
	for (i = 0; i < 2; i++) {
		th_put_u32(plain + 4, i ? SNAP_FAST_VERSION : SNAP_BITS_VERSION);
		plain[37] = (uint8_t)(i ? SNAP_Q5_H : SNAP_FP16);
		th_reseal(plain, n, 1, &z, &zn);
		TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT,
		    "%s header as version %d: %s", i ? "q5h" : "fp16", i ? 4 : 5, why);
		free(z);
	}
	free(plain);
	TAP_CHECK(th_unseal(s.rec[2], s.len[2], &plain, &n) == 0, "unseal layer");
	th_put_u32(plain + 4, 2);
	th_reseal(plain, n, 1, &z, &zn);
	crypto_generichash(s.h.layer_sum[2], SNAP_SUM_BYTES, z, zn, NULL, 0);
	TAP_CHECK(snap_layer_decode(z, zn, &s.h, 2, kv, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "version"), "layer of another version: %s", why);
	free(z);
	free(plain);
	eng_kv_free(kv);
	th_snap_free(&s);
	return TAP_PASS;
}

/* Snapshots written before format version 2: the stored seeds of
 * tests/fuzz/corpus/snapshot/ (header and layer 0 of the pool of
 * ts_write_seeds, written by the version-1 code, commit 2b1aa36 and
 * before) still decode, and this build writes the same pool in the same
 * bytes, so its version-1 snapshots and their profiles are unchanged. */
static int ts_seed_pool(struct eng_model *shell, struct eng_kv **kv);

static enum tap_result
test_reads_version1(void)
{
	static const char *const names[] = { "fp16", "q4", "q4kc" };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *back = NULL;
	int i;

	TAP_CHECK(ts_seed_pool(&shell, &kv) == 0, "pool");
	for (i = 0; i < 3; i++) {
		char why[256];
		struct th_snap s;
		struct snap_header h;
		int rc;
		/* the same bytes from this build */
		TAP_CHECK(ts_encode(&s, kv, 4, i) == 0, "encode %s", names[i]);
		rc = th_seed_check(names[i], &shell, 1, &s, &h, &back, why, sizeof(why));
		th_snap_free(&s);
		TAP_CHECK(rc == 0, "%s", why);
		TAP_CHECK(h.version == 1 && h.quant == i, "%s: version %u quant %d", names[i],
		    h.version, h.quant);
		snap_header_free(&h);
		eng_kv_free(back);
		back = NULL;
	}
	eng_kv_free(kv);
	return TAP_PASS;
}

/* Edit one field of layer `layer`'s decoded record (checksum fixed, the
 * header's sum updated) and decode; returns the rc, why holds the reason. */
static int
ts_forge(struct th_snap *s, int layer, size_t at, const uint8_t *bytes, size_t nb,
    struct eng_kv *kv, char *why, size_t why_len)
{
	uint8_t *plain, *z;
	size_t n, zn;
	int rc, legacy = s->h.version < SNAP_FAST_VERSION;
	if (th_unseal(s->rec[layer], s->len[layer], &plain, &n))
		return 99;
	memcpy(plain + at, bytes, nb);
	if (!legacy && !memcmp(s->rec[layer], "KVSL", 4)) { /* raw: stored as it is */
		z = malloc(n);
		memcpy(z, plain, n);
		zn = n;
	} else
		th_reseal(plain, n, legacy, &z, &zn);
	snap_layer_sum(&s->h, z, zn, s->h.layer_sum[layer]);
	rc = snap_layer_decode(z, zn, &s->h, layer, kv, why, why_len);
	free(z);
	free(plain);
	return rc;
}

/* Forged fields a checksum cannot catch: positions, PoD anchor and key
 * windows (spec/pod.md §3.6 load-time validation). */
static enum tap_result
test_forged_fields(void)
{
	static const uint8_t anc[2 * 3] = { 0, 0, 2, 0, 1, 1 };
	static const int64_t counts[3 * 2] = { 6, 5, 6, 5, 6, 5 };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *kv2 = NULL;
	struct th_snap s;
	char why[256];
	uint8_t b[4];

	tiny_shell(&shell, 3, 4, 2, 32);
	/* positions 0, 199, 399, … (two-byte deltas), windows n_s 1, n_r 400 */
	TAP_CHECK(eng_kv_init(&kv, &shell, 8) == 0 && ts_fill(kv, counts, 1000, 5) == 0 &&
	    eng_kv_set_pod(kv, anc, 1, 400, 0) == 0, "pool");
	TAP_CHECK(eng_kv_init(&kv2, &shell, 8) == 0, "pool 2");
	TAP_CHECK(ts_encode(&s, kv, 4, SNAP_Q4) == 0, "encode");
	/* layer 1, head 0 is a non-anchor: count at 24, anchor 28, k_prefix 32,
	 * k_suffix 36, positions from 40 */
	TAP_CHECK(ts_forge(&s, 1, 24, b, 0, kv2, why, sizeof(why)) == 0, "unchanged: %s", why);
	th_put_u32(b, 1);
	TAP_CHECK(ts_forge(&s, 1, 28, b, 4, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "layer 1 head 0: anchor 1"), "anchor: %s", why);
	th_put_u32(b, 2);
	TAP_CHECK(ts_forge(&s, 1, 32, b, 4, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "key rows"), "k_prefix: %s", why);
	th_put_u32(b, 0);
	TAP_CHECK(ts_forge(&s, 1, 36, b, 4, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "key rows"), "k_suffix: %s", why);
	/* an anchor must carry all its keys: layer 0 head 0 k_prefix 5 of 6 */
	th_put_u32(b, 5);
	TAP_CHECK(ts_forge(&s, 0, 32, b, 4, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "layer 0 head 0: key rows"), "anchor keys: %s", why);
	/* the second delta (199: 0xc7 0x01) made 0, then 1 */
	b[0] = 0x00;
	TAP_CHECK(ts_forge(&s, 1, 41, b, 1, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT,
	    "delta 0: %s", why);
	/* the delta 199 (0xc7 0x01) as the overlong 1 (0x81 0x00) */
	b[0] = 0x81;
	b[1] = 0x00;
	TAP_CHECK(ts_forge(&s, 1, 41, b, 2, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "varint"), "overlong varint: %s", why);
	eng_kv_free(kv);
	eng_kv_free(kv2);
	th_snap_free(&s);
	return TAP_PASS;
}

/* Dense records: positions that do not increase and a past-the-end one. */
static enum tap_result
test_forged_positions(void)
{
	static const int64_t counts[2 * 2] = { 4, 4, 4, 4 };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *kv2 = NULL;
	struct th_snap s;
	char why[256];
	uint8_t b[2];

	tiny_shell(&shell, 2, 2, 2, 32);
	/* positions 0, 3, 6, 9 (one-byte deltas), next_pos 10 */
	TAP_CHECK(eng_kv_init(&kv, &shell, 8) == 0 && ts_fill(kv, counts, 10, 6) == 0, "pool");
	TAP_CHECK(eng_kv_init(&kv2, &shell, 8) == 0, "pool 2");
	TAP_CHECK(ts_encode(&s, kv, 2, SNAP_FP16) == 0, "encode");
	/* head 0: count at 24, varints at 28..31 */
	b[0] = 0;
	TAP_CHECK(ts_forge(&s, 0, 29, b, 1, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "layer 0 head 0: positions not increasing"), "delta 0: %s", why);
	b[0] = 4;
	TAP_CHECK(ts_forge(&s, 0, 31, b, 1, kv2, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "next position"), "pos 10: %s", why);
	b[0] = 2;
	TAP_CHECK(ts_forge(&s, 0, 31, b, 1, kv2, why, sizeof(why)) == 0 &&
	    kv2->layer[0].pos[kv2->layer[0].off[0] + 3] == 8, "a valid edit: %s", why);
	eng_kv_free(kv);
	eng_kv_free(kv2);
	th_snap_free(&s);
	return TAP_PASS;
}

/* The same pool always gives the same bytes; a bad pool is not encoded. */
static enum tap_result
test_encode_refusals(void)
{
	struct ts_syn y;
	struct th_snap a, b;
	struct snap_header h;
	uint8_t *out = NULL;
	size_t len;
	int l;

	TAP_CHECK(ts_syn_init(&y, 8) == 0, "pool");
	TAP_CHECK(ts_encode(&a, y.kv, 4, SNAP_Q4_KC) == 0 && ts_encode(&b, y.kv, 4, SNAP_Q4_KC) == 0,
	    "encode twice");
	for (l = 0; l < 3; l++)
		TAP_CHECK(a.len[l] == b.len[l] && !memcmp(a.rec[l], b.rec[l], a.len[l]),
		    "layer %d not deterministic", l);
	TAP_CHECK(a.hdr_len == b.hdr_len && !memcmp(a.hdr, b.hdr, a.hdr_len), "header");
	th_snap_free(&b);
	TAP_CHECK(snap_header_from_kv(&h, y.kv, 4) == 0, "header");
	h.counts[0]++;
	TAP_CHECK(snap_layer_encode(y.kv, 0, &h, 3, &out, &len) == SNAP_ERR_ARG && !out,
	    "counts differ from the pool");
	h.counts[0]--;
	y.kv->layer[0].pos[y.kv->layer[0].off[0] + 3] = y.kv->layer[0].pos[y.kv->layer[0].off[0] + 2];
	TAP_CHECK(snap_layer_encode(y.kv, 0, &h, 3, &out, &len) == SNAP_ERR_ARG,
	    "positions not increasing");
	TAP_CHECK(snap_layer_encode(y.kv, 1, &h, 3, &out, &len) == 0, "other layer fine");
	free(out);
	y.kv->layer[2].v[y.kv->layer[2].off[1] * 64 + 7] = NAN;
	h.quant = SNAP_Q4;
	TAP_CHECK(snap_layer_encode(y.kv, 2, &h, 3, &out, &len) == SNAP_ERR_ARG, "NaN in q4");
	h.quant = SNAP_FP16;
	TAP_CHECK(snap_layer_encode(y.kv, 2, &h, 3, &out, &len) == 0, "NaN in fp16 is data");
	free(out);
	TAP_CHECK(snap_layer_encode(y.kv, 3, &h, 3, &out, &len) == SNAP_ERR_ARG, "layer range");
	snap_header_free(&h);
	th_snap_free(&a);
	eng_kv_free(y.kv);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* The bundled model: sizes and q4 quality                                   */

static enum tap_result
test_bundled_model(void)
{
	struct eng_model *m = NULL;
	struct th_run r;
	char why[256];
	int64_t n = 384, units;
	int32_t ids[384 + TS_NQ];
	float *ref = NULL, *got = NULL;
	int32_t nv, quant;

	if (access(tap_model_path(), R_OK) != 0)
		return TAP_SKIP;
	TAP_CHECK(eng_model_open(&m, tap_model_path(), why, sizeof(why)) == 0, "open: %s", why);
	nv = m->hp.n_vocab;
	ts_doc(ids, n + TS_NQ, 21, nv);
	ref = malloc((size_t)nv * sizeof(float));
	got = malloc((size_t)nv * sizeof(float));
	TAP_CHECK(th_ingest(&r, m, "snapkv", "", 128, ids, n, 128, TS_NQ, 0) == 0, "ingest");
	units = ts_units(r.kv);
	for (quant = SNAP_FP16; quant <= SNAP_Q4_KC; quant++) {
		struct th_snap s;
		struct snap_header h;
		struct snap_qerr q;
		struct eng_kv *kv2;
		int32_t i, top_a = 0, top_b = 0;
		double dmax = 0;
		TAP_CHECK(ts_encode(&s, r.kv, m->hp.n_head, quant) == 0, "encode");
		TAP_CHECK(snap_layer_qerr(r.kv, 0, &s.h, &q) == 0, "qerr");
		TAP_CHECK(ts_load(&s, m, r.rph, &kv2, &h, why, sizeof(why)) == 0, "load: %s", why);
		TAP_CHECK(eng_forward(r.c, kv2, ids + n, TS_NQ, NULL, got) == 0, "forward");
		if (quant == SNAP_FP16)
			memcpy(ref, got, (size_t)nv * sizeof(float));
		for (i = 0; i < nv; i++) {
			dmax = fmax(dmax, fabs((double)got[i] - ref[i]));
			top_a = ref[i] > ref[top_a] ? i : top_a;
			top_b = got[i] > got[top_b] ? i : top_b;
		}
		tap_diag("metric: snapshot %s, SmolLM2-135M snapkv b=128: %.1f bytes/unit "
		    "(%lld units, %zu bytes); layer 0 K max/rms %.3f/%.4f V %.3f/%.4f; "
		    "logits max diff %.3f, top-1 %s", snap_quant_name(quant),
		    (double)ts_snap_bytes(&s) / (double)units, (long long)units, ts_snap_bytes(&s),
		    q.k_max, q.k_rms, q.v_max, q.v_rms, dmax, top_a == top_b ? "same" : "differs");
		for (i = 0; i < nv; i++)
			TAP_CHECK(isfinite(got[i]), "logits not finite");
		eng_kv_free(kv2);
		snap_header_free(&h);
		th_snap_free(&s);
	}
	/* the original pool, rounded, answers bit-identically to the fp16 load */
	eng_kv_round_fp16(r.kv);
	TAP_CHECK(eng_forward(r.c, r.kv, ids + n, TS_NQ, NULL, got) == 0, "forward");
	TAP_CHECK(!memcmp(ref, got, (size_t)nv * sizeof(float)),
	    "SmolLM2: fp16 snapshot logits differ from the rounded pool's");
	th_run_free(&r);
	eng_model_close(m);
	free(ref);
	free(got);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Format version 4 and the legacy encodings                                 */

/* The tests of the legacy encodings (zstd frames with their inner
 * BLAKE2b-128): the snapshots every store made before version 4 hold. */
TH_LEGACY_TEST(g_enc_version, corrupt_decoded)
TH_LEGACY_TEST(g_enc_version, zip_bomb)
TH_LEGACY_TEST(g_enc_version, version)
TH_LEGACY_TEST(g_enc_version, reads_version1)
TH_LEGACY_TEST(g_enc_version, forged_fields)
TH_LEGACY_TEST(g_enc_version, forged_positions)

/* Two pools' used rows, bit for bit (k NaN where PoD dropped it). */
static int
ts_pools_same(const struct eng_kv *a, const struct eng_kv *b)
{
	int hd = a->head_dim, l, m;
	for (l = 0; l < a->n_layer; l++)
		for (m = 0; m < a->n_head_kv; m++) {
			const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l];
			int64_t o = A->off[m], n = A->len[m], i;
			if (n != B->len[m] || o != B->off[m] ||
			    memcmp(A->pos + o, B->pos + o, (size_t)n * sizeof(*A->pos)) ||
			    memcmp(A->score + o, B->score + o, (size_t)n * sizeof(float)) ||
			    memcmp(A->v + o * hd, B->v + o * hd, (size_t)(n * hd) * sizeof(float)))
				return 0;
			for (i = o * hd; i < (o + n) * hd; i++)
				if (!ts_same(A->k[i], B->k[i]))
					return 0;
		}
	return 1;
}

/* A stored record re-checked after an edit: the header's sum fixed. */
static int
ts_decode_fixed(struct th_snap *s, int layer, const uint8_t *rec, size_t n, struct eng_kv *kv,
    char *why, size_t why_len)
{
	snap_layer_sum(&s->h, rec, n, s->h.layer_sum[layer]);
	return snap_layer_decode(rec, n, &s->h, layer, kv, why, why_len);
}

/* Version 4 (snapshot.c's top): every form written in it, raw exactly when
 * snap_quant_raw says, the header's sums the XXH3-128 of the stored
 * records, pools equal to the legacy encoding's bit for bit; a raw
 * record longer than its bound, a raw flag that is not the form's, a
 * layer of another version and a zstd frame where a raw record belongs
 * are refused. */
static enum tap_result
test_fast_format(void)
{
	struct eng_model shell;
	struct eng_kv *kv = NULL, *a = NULL, *b = NULL;
	struct th_snap s, old;
	struct snap_header d;
	uint8_t *plain, *z, *big;
	size_t n, zn;
	char why[256];
	int quant, l, rc;

	TAP_CHECK(ts_seed_pool(&shell, &kv) == 0, "pool");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX; quant++) {
		const char *q = snap_quant_name(quant);
		/* the forms of version 5 have no legacy encoding: only 5 */
		int v5 = snap_quant_version(quant) == SNAP_BITS_VERSION;
		TAP_CHECK(ts_encode(&s, kv, 4, quant) == 0, "encode %s", q);
		g_enc_version = 1;
		rc = ts_encode(&old, kv, 4, quant);
		g_enc_version = SNAP_FORMAT_VERSION;
		if (v5) { /* refused; the checks below then compare s with itself */
			th_snap_free(&old);
			TAP_CHECK(rc == SNAP_ERR_ARG, "%s encoded in version 1 (%d)", q, rc);
			rc = ts_encode(&old, kv, 4, quant);
		}
		TAP_CHECK(rc == 0, "encode %s legacy", q);
		TAP_CHECK(snap_header_decode(s.hdr, s.hdr_len, &d, why, sizeof(why)) == 0 &&
		    d.version == (v5 ? 5u : 4u), "%s: header version %u (%s)", q, d.version, why);
		snap_header_free(&d);
		TAP_CHECK(eng_kv_init(&a, &shell, 16) == 0 && eng_kv_init(&b, &shell, 16) == 0,
		    "pools");
		for (l = 0; l < 2; l++) {
			XXH128_canonical_t c;
			XXH128_canonicalFromHash(&c, XXH3_128bits(s.rec[l], s.len[l]));
			TAP_CHECK(!memcmp(c.digest, s.h.layer_sum[l], SNAP_SUM_BYTES),
			    "%s layer %d: the header's sum is not XXH3-128", q, l);
			TAP_CHECK((memcmp(s.rec[l], "KVSL", 4) == 0) == snap_quant_raw(quant) &&
			    (v5 || !memcmp(old.rec[l], "\x28\xb5\x2f\xfd", 4)), "%s layer %d: raw %d", q, l,
			    snap_quant_raw(quant));
			TAP_CHECK(snap_layer_decode(s.rec[l], s.len[l], &s.h, l, a, why, sizeof(why)) == 0,
			    "%s layer %d: %s", q, l, why);
			TAP_CHECK(snap_layer_check(s.rec[l], s.len[l], &s.h, l, why, sizeof(why)) == 0,
			    "%s layer %d check: %s", q, l, why);
			TAP_CHECK(snap_layer_decode(old.rec[l], old.len[l], &old.h, l, b, why,
			    sizeof(why)) == 0, "%s legacy layer %d: %s", q, l, why);
		}
		TAP_CHECK(ts_pools_same(a, b), "%s: version 4 and legacy pools differ", q);
		tap_diag("%s: layer 0 %zu bytes stored (version 4), %zu (legacy)", q, s.len[0],
		    old.len[0]);
		eng_kv_free(a);
		eng_kv_free(b);
		a = b = NULL;
		th_snap_free(&old);
		th_snap_free(&s);
	}
	/* fp16, raw.  Damage with the header's sum fixed (a forger): */
	TAP_CHECK(snap_quant_raw(SNAP_FP16) && ts_encode(&s, kv, 4, SNAP_FP16) == 0 &&
	    eng_kv_init(&a, &shell, 16) == 0, "fp16 raw");
	big = calloc((size_t)1 << 20, 1);
	memcpy(big, s.rec[0], s.len[0]);
	TAP_CHECK(ts_decode_fixed(&s, 0, big, (size_t)1 << 20, a, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "raw record of 1048576 bytes"), "too long: %s", why);
	TAP_CHECK(ts_decode_fixed(&s, 0, big, s.len[0] + 1, a, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT && strstr(why, "left over"), "a byte more: %s", why);
	TAP_CHECK(ts_decode_fixed(&s, 0, big, s.len[0] - 1, a, why, sizeof(why)) ==
	    SNAP_ERR_CORRUPT, "a byte less: %s", why);
	th_put_u32(big + 4, 1); /* a version-1 layer under a version-4 header */
	TAP_CHECK(ts_decode_fixed(&s, 0, big, s.len[0], a, why, sizeof(why)) == SNAP_ERR_CORRUPT,
	    "a version-1 layer: %s", why);
	free(big);
	th_reseal(s.rec[0], s.len[0], 0, &z, &zn); /* the same bytes as a zstd frame */
	TAP_CHECK(ts_decode_fixed(&s, 0, z, zn, a, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "bad magic"), "a frame where a raw record belongs: %s", why);
	free(z);
	TAP_CHECK(ts_decode_fixed(&s, 0, s.rec[0], s.len[0], a, why, sizeof(why)) == 0,
	    "undamaged: %s", why);
	/* the raw flag is the form's: cleared in version 4, set in version 1 */
	TAP_CHECK(th_unseal(s.hdr, s.hdr_len, &plain, &n) == 0, "unseal header");
	plain[42] &= (uint8_t)~SNAP_FLAG_RAW;
	th_reseal(plain, n, 1, &z, &zn);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "bad field"), "raw flag cleared: %s", why);
	free(z);
	th_put_u32(plain + 4, 1);
	plain[42] |= SNAP_FLAG_RAW;
	th_reseal(plain, n, 1, &z, &zn);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == SNAP_ERR_CORRUPT &&
	    strstr(why, "bad field"), "raw flag in version 1: %s", why);
	free(z);
	plain[42] &= (uint8_t)~SNAP_FLAG_RAW;
	th_reseal(plain, n, 1, &z, &zn);
	TAP_CHECK(snap_header_decode(z, zn, &d, why, sizeof(why)) == 0 && d.version == 1,
	    "the same header as version 1: %s", why);
	snap_header_free(&d);
	free(z);
	free(plain);
	th_snap_free(&s);
	eng_kv_free(a);
	eng_kv_free(kv);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Fuzz seeds                                                                */

/* A seed for tests/fuzz/fuzz_snapshot.c: u32 (bit 31: plain) header length,
 * header, layer record; plain records lose their trailing checksum (the
 * target appends it and compresses; a version-4 layer record has none and
 * is stored as the header says). */
static int
ts_write_seed(const char *dir, const char *name, const struct th_snap *s, int layer, int plain)
{
	uint8_t *ph = NULL, *pl = NULL, w[4];
	const uint8_t *hb = s->hdr, *lb = s->rec[layer];
	size_t hn = s->hdr_len, ln = s->len[layer];
	char path[512];
	FILE *f;
	int rc = 0;

	if (plain) {
		if (th_unseal(s->hdr, s->hdr_len, &ph, &hn) ||
		    th_unseal(s->rec[layer], s->len[layer], &pl, &ln))
			return -1;
		hb = ph;
		lb = pl;
		hn -= SNAP_SUM_BYTES;
		if (s->h.version < SNAP_FAST_VERSION)
			ln -= SNAP_SUM_BYTES;
	}
	th_put_u32(w, (uint32_t)hn | (plain ? 0x80000000u : 0));
	snprintf(path, sizeof(path), "%s/%s.seed", dir, name);
	if (!(f = fopen(path, "wb")))
		return -1;
	if (fwrite(w, 1, 4, f) != 4 || fwrite(hb, 1, hn, f) != hn || fwrite(lb, 1, ln, f) != ln)
		rc = -1;
	if (fclose(f))
		rc = -1;
	free(ph);
	free(pl);
	return rc;
}

/* The seeds' pool: 2 layers, 2 KV heads of head_dim 32, 9 and 5 units. */
static int
ts_seed_pool(struct eng_model *shell, struct eng_kv **kv)
{
	static const int64_t counts[2 * 2] = { 9, 5, 9, 5 };
	tiny_shell(shell, 2, 4, 2, 32);
	*kv = NULL;
	return eng_kv_init(kv, shell, 16) || ts_fill(*kv, counts, 300, 1);
}

/* The seeds in one encoding: names prefixed with pre ("" for the legacy
 * ones, whose bytes test reads_version1 and test_snapshot_refit.c
 * reads_version2 compare with this build's; "v4_" for version 4). */
static int
ts_write_seeds_as(const char *dir, const char *pre)
{
	static const uint8_t anc[2 * 2] = { 0, 0, 0, 1 };
	struct eng_model shell;
	struct eng_kv *kv = NULL;
	struct th_snap s;
	int quant, rc = 0, l, i;
	char name[64];

	if (ts_seed_pool(&shell, &kv))
		return -1;
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX && !rc; quant++) {
		/* the forms of version 5 only in it, their seeds named v5_ */
		int v5 = snap_quant_version(quant) == SNAP_BITS_VERSION;
		if (v5 && !*pre)
			continue;
		rc = ts_encode(&s, kv, 4, quant);
		snprintf(name, sizeof(name), "%splain_%s", v5 ? "v5_" : pre, snap_quant_name(quant));
		rc = rc || ts_write_seed(dir, name, &s, 0, 1);
		snprintf(name, sizeof(name), "%sstored_%s", v5 ? "v5_" : pre, snap_quant_name(quant));
		rc = rc || ts_write_seed(dir, name, &s, 0, 0);
		th_snap_free(&s);
	}
	/* format version 3: a refit pool's biases (tests/test_snapshot_refit.c) */
	for (l = 0; l < 2 && !rc; l++)
		for (i = 0; i < 14; i++)
			kv->layer[l].bias[kv->layer[l].off[i >= 9] + (i >= 9 ? i - 9 : i)] =
			    (float)(-0.37 * (double)(i + l)); /* heads of 9 and 5 units */
	kv->has_bias = 1;
	rc = rc || ts_encode(&s, kv, 4, SNAP_FP16);
	snprintf(name, sizeof(name), "%splain_refit_fp16", pre);
	rc = rc || ts_write_seed(dir, name, &s, 0, 1);
	snprintf(name, sizeof(name), "%sstored_refit_fp16", pre);
	rc = rc || ts_write_seed(dir, name, &s, 0, 0);
	th_snap_free(&s);
	rc = rc || ts_encode(&s, kv, 4, SNAP_Q4_KC_H);
	snprintf(name, sizeof(name), "%splain_refit_q4kch", pre);
	rc = rc || ts_write_seed(dir, name, &s, 1, 1);
	th_snap_free(&s);
	kv->has_bias = 0;
	/* PoD: layer 1 of head 0 is a non-anchor with key windows */
	rc = rc || eng_kv_set_pod(kv, anc, 40, 100, 0);
	rc = rc || ts_encode(&s, kv, 4, SNAP_Q4_KC);
	snprintf(name, sizeof(name), "%splain_pod_l1", pre);
	rc = rc || ts_write_seed(dir, name, &s, 1, 1);
	th_snap_free(&s);
	rc = rc || ts_encode(&s, kv, 4, SNAP_FP16);
	snprintf(name, sizeof(name), "%splain_pod_fp16_l1", pre);
	rc = rc || ts_write_seed(dir, name, &s, 1, 1);
	th_snap_free(&s);
	eng_kv_free(kv);
	return rc;
}

static int
ts_write_seeds(const char *dir)
{
	int rc;
	g_enc_version = 1;
	rc = ts_write_seeds_as(dir, "");
	g_enc_version = SNAP_FORMAT_VERSION;
	return rc || ts_write_seeds_as(dir, "v4_");
}

/* ------------------------------------------------------------------------ */
/* snap_copy                                                                 */

/* Put s into store st as document doc (named name). */
static int
tc_put(struct store *st, const struct th_snap *s, const uint8_t *doc, const char *name)
{
	const uint8_t *layer[TH_SNAP_MAX_L];
	size_t len[TH_SNAP_MAX_L];
	struct store_snapshot sn;
	struct store_doc d;
	char why[256];
	int l;

	memset(&d, 0, sizeof(d));
	memcpy(d.doc_id, doc, STORE_ID_BYTES);
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.source, sizeof(d.source), "test");
	d.tokens = 120;
	for (l = 0; l < s->h.n_layer; l++) {
		layer[l] = s->rec[l];
		len[l] = s->len[l];
	}
	memset(&sn, 0, sizeof(sn));
	memcpy(sn.profile_id, s->h.profile_id, STORE_ID_BYTES);
	sn.header = s->hdr;
	sn.header_len = s->hdr_len;
	sn.layer = layer;
	sn.layer_len = len;
	sn.n_layer = s->h.n_layer;
	return store_put(st, &d, &sn, why, sizeof(why));
}

/* Copied as stored (every record the same bytes, the metadata along); a
 * flipped byte in a source record, or a missing snapshot, copies nothing;
 * a name taken in the destination is dropped, the snapshot copied. */
static enum tap_result
test_copy_between_stores(void)
{
	char da[] = "/tmp/kvsnap-copya-XXXXXX", db[] = "/tmp/kvsnap-copyb-XXXXXX", why[256];
	static const uint8_t doc1[STORE_ID_BYTES] = { 1 }, doc2[STORE_ID_BYTES] = { 2 },
	    doc3[STORE_ID_BYTES] = { 3 };
	struct store_opts so = { 0 };
	struct store *a = NULL, *b = NULL;
	struct store_reader *r = NULL;
	struct store_doc d;
	struct th_snap s;
	const uint8_t *buf;
	size_t len;
	int l, at_write = -1, ok = 1;
	enum tap_result res = TAP_FAIL;

	memset(&s, 0, sizeof(s));
	if (ts_small(&s, 11) || !mkdtemp(da) || !mkdtemp(db) ||
	    store_open(&a, da, &so, why, sizeof(why)) || store_open(&b, db, &so, why, sizeof(why)) ||
	    tc_put(a, &s, doc1, "one")) {
		tap_diag("setup failed");
		goto out;
	}
	memset(&d, 0, sizeof(d));
	if (store_info(a, doc1, &d, why, sizeof(why)) ||
	    snap_copy(a, b, doc1, s.h.profile_id, &d, &at_write, why, sizeof(why))) {
		tap_diag("copy: %s", why);
		goto out;
	}
	if (store_read_begin(b, doc1, s.h.profile_id, &r, why, sizeof(why))) {
		tap_diag("read the copy: %s", why);
		goto out;
	}
	ok = store_read_layer(r, STORE_HEAD_RECORD, &buf, &len, why, sizeof(why)) == 0 &&
	    len == s.hdr_len && !memcmp(buf, s.hdr, len);
	for (l = 0; ok && l < s.h.n_layer; l++)
		ok = store_read_layer(r, (unsigned)l, &buf, &len, why, sizeof(why)) == 0 &&
		    len == s.len[l] && !memcmp(buf, s.rec[l], len);
	store_read_end(r);
	if (!ok || store_info(b, doc1, &d, why, sizeof(why)) || strcmp(d.name, "one") ||
	    d.tokens != 120) {
		tap_diag("the copy differs (record %d, name '%s')", l - 1, d.name);
		goto out;
	}
	/* a flipped byte in layer 1 of the source: corrupt, nothing written */
	s.rec[1][s.len[1] / 2] ^= 0x55;
	if (tc_put(a, &s, doc2, "") || store_info(a, doc2, &d, why, sizeof(why)) ||
	    snap_copy(a, b, doc2, s.h.profile_id, &d, &at_write, why, sizeof(why)) !=
	    SNAPIO_ERR_CORRUPT || at_write != 0 || !strstr(why, "layer 1") ||
	    store_info(b, doc2, &d, why, sizeof(why)) != STORE_ERR_NOT_FOUND) {
		tap_diag("a corrupt source was copied, or not reported (%s)", why);
		goto out;
	}
	s.rec[1][s.len[1] / 2] ^= 0x55;
	/* no such snapshot: not found, nothing written */
	if (snap_copy(a, b, doc3, s.h.profile_id, &d, &at_write, why, sizeof(why)) !=
	    SNAPIO_ERR_NOT_FOUND || at_write != 0) {
		tap_diag("a missing snapshot: %s", why);
		goto out;
	}
	/* "one" is doc1's in b: doc3 arrives there unnamed */
	if (tc_put(a, &s, doc3, "") || store_info(a, doc3, &d, why, sizeof(why))) {
		tap_diag("setup doc3");
		goto out;
	}
	snprintf(d.name, sizeof(d.name), "one");
	if (snap_copy(a, b, doc3, s.h.profile_id, &d, &at_write, why, sizeof(why)) ||
	    store_info(b, doc3, &d, why, sizeof(why)) || d.name[0]) {
		tap_diag("a taken name: %s (name '%s')", why, d.name);
		goto out;
	}
	res = TAP_PASS;
out:
	store_close(a);
	store_close(b);
	th_rm_rf(da);
	th_rm_rf(db);
	th_snap_free(&s);
	return res;
}

/* ------------------------------------------------------------------------ */

static const struct tap_test tests[] = {
	{ "quant_names", test_quant_names },
	{ "qpack", test_qpack },
	{ "roundtrip_policies", test_roundtrip_policies },
	{ "roundtrip_pod", test_roundtrip_pod },
	{ "roundtrip_q4", test_roundtrip_q4 },
	{ "q4kc_pod", test_q4kc_pod },
	{ "header_fields", test_header_fields },
	{ "corrupt_stored", test_corrupt_stored },
	{ "corrupt_decoded", legacy_corrupt_decoded },
	{ "truncation", test_truncation },
	{ "mismatch", test_mismatch },
	{ "zip_bomb", legacy_zip_bomb },
	{ "version", legacy_version },
	{ "reads_version1", legacy_reads_version1 },
	{ "forged_fields", test_forged_fields },
	{ "forged_positions", test_forged_positions },
	{ "legacy_forged_fields", legacy_forged_fields },
	{ "legacy_forged_positions", legacy_forged_positions },
	{ "fast_format", test_fast_format },
	{ "encode_refusals", test_encode_refusals },
	{ "bundled_model", test_bundled_model },
	{ "copy_between_stores", test_copy_between_stores },
};

static int
teardown(void)
{
	tiny_model_tmp_close(g_m, g_model_path);
	unlink(g_map_mixed);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *seeds = getenv("KVSNAP_WRITE_SEEDS");
	char why[256];
	int rc;

	if (th_sodium_setup())
		return 1;
	if (seeds) {
		rc = ts_write_seeds(seeds);
		printf("%s seeds into %s\n", rc ? "could not write" : "wrote", seeds);
		return rc ? 1 : 0;
	}
	if (tiny_model_tmp_open(&g_m, g_model_path, sizeof(g_model_path), 23, why, sizeof(why)) ||
	    th_pod_map_write(g_map_mixed, sizeof(g_map_mixed), map_mixed)) {
		printf("Bail out! cannot set up the tiny model or map\n");
		return 1;
	}
	return tap_run(tests, sizeof(tests) / sizeof(tests[0]), NULL, teardown, argc, argv);
}
