/*
 * test_snapshot_refit.c: format version 3, a refit cache's snapshot
 * (snapshot/snapshot_refit.c and its hooks in snapshot/snapshot.c).
 *
 *   roundtrip        a biased synthetic pool in every quantization: written
 *                    in version 4 (flags: bias, and raw where the form is
 *                    stored raw) and in the legacy version 3, flags set,
 *                    loaded back with every bias
 *                    bit for bit and the pool marked biased; the loaded
 *                    pool re-encodes to the same bytes (but under the
 *                    Hadamard-rotated forms)
 *   unbiased_same    a pool without biases is still written in its
 *                    quantization's version (1 or 2), flags 0
 *   reads_version2   the stored seeds the version-2 code wrote
 *                    (tests/fuzz/corpus/snapshot/stored_{q8,q4h,q4kch},
 *                    commit dd5037a and before; generator: KVSNAP_WRITE_SEEDS,
 *                    tests/test_snapshot.c) decode, and this build writes
 *                    the same pool in the same bytes
 *   forged           a NaN or infinite bias, a flag in a version-2 record,
 *                    a version-3 record without the flag, an unknown flag,
 *                    layer flags that differ from the header's, a short
 *                    bias section: each refused as corrupt with a reason;
 *                    a version-5 record as an unsupported version
 * (every test but roundtrip's version-4 run and concat on the legacy
 * encodings: g_enc_version 1)
 *   encode_refusals  a non-finite bias, a biased pool under an unbiased
 *                    header and the reverse: nothing encoded
 *   concat           a library question's pools side by side
 *                    (eng_kv_concat): a refit part keeps its biases, a
 *                    plain part's units carry 0, the result is biased
 */
#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "engine/engine.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_refit.h"
#include "tests/helpers.h"
#include "tests/snap_helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define TR_L 2
#define TR_KV 2
#define TR_HD 32

/* The pool of tests/test_snapshot.c's ts_seed_pool (2 layers, 2 KV heads
 * of head_dim 32, 9 and 5 units, next position 300, seed 1), written the
 * same way, and with biased = 1 a bias per unit (some 0, some negative). */
static int
tr_pool(const struct eng_model *shell, struct eng_kv **kv, int biased)
{
	static const int64_t counts[TR_L * TR_KV] = { 9, 5, 9, 5 };
	struct tiny_rng r = { 1 * 0x9E3779B97F4A7C15u + 1 };
	int l, m, d;
	int64_t i;

	*kv = NULL;
	if (eng_kv_init(kv, shell, 16))
		return -1;
	for (l = 0; l < TR_L; l++) {
		struct eng_kv_layer *L = &(*kv)->layer[l];
		if (eng_kv_prepare_layer(*kv, l, counts + l * TR_KV))
			return -1;
		for (m = 0; m < TR_KV; m++)
			for (i = 0; i < L->len[m]; i++) {
				int64_t row = L->off[m] + i, n = L->len[m];
				L->pos[row] = (uint32_t)((uint64_t)i * 299 / (uint64_t)(n - 1));
				L->score[row] = (float)tiny_rng_normal(&r);
				for (d = 0; d < TR_HD; d++) {
					double k = tiny_rng_normal(&r) + 0.5 * (d % 5);
					L->k[row * TR_HD + d] = (float)(d == 3 || d == 17 ? 20.0 * k : k);
					L->v[row * TR_HD + d] = (float)tiny_rng_normal(&r);
				}
				L->bias[row] = i % 3 ? (float)(-0.37 * (double)(i + l + m)) : 0.0f;
			}
	}
	(*kv)->has_bias = biased;
	return eng_kv_finish_load(*kv, 300, ENG_POS_ORIGINAL);
}

/* What tr_encode writes: version 4, or (1) the legacy encodings. */
static uint32_t g_enc_version = SNAP_FORMAT_VERSION;

static int
tr_encode(struct th_snap *s, const struct eng_kv *kv, int quant)
{
	return th_snap_encode(s, kv, 4, quant, g_enc_version);
}

/* Decode every record of s into a fresh pool (as snap_load does). */
static int
tr_load(const struct th_snap *s, const struct eng_model *shell, struct eng_kv **out,
    struct snap_header *h, char *why, size_t why_len)
{
	int l, rc;
	*out = NULL;
	if ((rc = snap_header_decode(s->hdr, s->hdr_len, h, why, why_len)))
		return rc;
	if (eng_kv_init(out, shell, 16))
		return SNAP_ERR_NOMEM;
	for (l = 0, rc = 0; l < h->n_layer && !rc; l++)
		rc = snap_layer_decode(s->rec[l], s->len[l], h, l, *out, why, why_len);
	if (!rc && eng_kv_finish_load(*out, h->next_pos, (enum eng_pos_mode)h->pos_mode))
		rc = SNAP_ERR_ARG;
	return rc;
}

static enum tap_result
test_roundtrip(void)
{
	struct eng_model shell;
	struct eng_kv *kv = NULL, *back = NULL;
	int quant;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &kv, 1) == 0, "pool");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX; quant++) {
		struct th_snap s, s2;
		struct snap_header h;
		uint8_t *plain = NULL;
		size_t n = 0;
		char why[256] = "";
		int l;
		/* a form of version 5 writes 5, biased or not, and has no legacy
		 * encoding (test_snapshot.c fast_format checks the refusal) */
		int v5 = snap_quant_version(quant) == SNAP_BITS_VERSION;
		uint32_t want = g_enc_version < SNAP_FAST_VERSION ? 3 : v5 ? SNAP_BITS_VERSION :
		    SNAP_FAST_VERSION;
		unsigned flags = SNAP_FLAG_BIAS |
		    (want >= SNAP_FAST_VERSION && snap_quant_raw(quant) ? SNAP_FLAG_RAW : 0u);
		if (v5 && g_enc_version < SNAP_FAST_VERSION)
			continue;
		TAP_CHECK(tr_encode(&s, kv, quant) == 0, "%s: encode", snap_quant_name(quant));
		TAP_CHECK(th_unseal(s.hdr, s.hdr_len, &plain, &n) == 0 && th_get_u32(plain + 4) == want &&
		    (unsigned)(plain[42] | plain[43] << 8) == flags, "%s: header version %u, flags",
		    snap_quant_name(quant), want);
		free(plain);
		TAP_CHECK(tr_load(&s, &shell, &back, &h, why, sizeof(why)) == 0, "%s: load: %s",
		    snap_quant_name(quant), why);
		TAP_CHECK(h.version == want && h.has_bias && back->has_bias, "%s: biased",
		    snap_quant_name(quant));
		TAP_CHECK(th_same_biases(kv, back), "%s: biases differ after the load",
		    snap_quant_name(quant));
		TAP_CHECK(tr_encode(&s2, back, quant) == 0, "%s: re-encode", snap_quant_name(quant));
		/* the same bytes again, but for the rotated forms: H applied to
		 * rows decoded in float does not give back the codes exactly */
		for (l = 0; l < TR_L && !snap_quant_rotated(quant); l++)
			TAP_CHECK(s.len[l] == s2.len[l] && !memcmp(s.rec[l], s2.rec[l], s.len[l]),
			    "%s: layer %d re-encodes differently", snap_quant_name(quant), l);
		tap_diag("%s: %zu + %zu bytes (layers), %d units: %zu bytes of biases",
		    snap_quant_name(quant), s.len[0], s.len[1], 28, (size_t)28 * 4);
		th_snap_free(&s);
		th_snap_free(&s2);
		snap_header_free(&h);
		eng_kv_free(back);
		back = NULL;
	}
	eng_kv_free(kv);
	return TAP_PASS;
}

static enum tap_result
test_unbiased_same(void)
{
	struct eng_model shell;
	struct eng_kv *kv = NULL;
	int quant;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &kv, 0) == 0, "pool");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX; quant++) {
		struct th_snap s;
		uint8_t *plain = NULL;
		size_t n = 0;
		if (snap_quant_version(quant) == SNAP_BITS_VERSION && g_enc_version < SNAP_FAST_VERSION)
			continue; /* no legacy encoding */
		TAP_CHECK(tr_encode(&s, kv, quant) == 0, "encode");
		TAP_CHECK(th_unseal(s.rec[0], s.len[0], &plain, &n) == 0, "unseal");
		TAP_CHECK((int)th_get_u32(plain + 4) == snap_quant_version(quant) &&
		    (plain[22] | plain[23] << 8) == 0, "%s: layer version %u flags %d",
		    snap_quant_name(quant), th_get_u32(plain + 4), plain[22] | plain[23] << 8);
		free(plain);
		th_snap_free(&s);
	}
	eng_kv_free(kv);
	return TAP_PASS;
}

static enum tap_result
test_reads_version2(void)
{
	static const char *const names[] = { "q8", "q4h", "q4kch" };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *back = NULL;
	int i;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &kv, 0) == 0, "pool");
	for (i = 0; i < 3; i++) {
		char why[256] = "";
		struct th_snap s;
		struct snap_header h;
		int rc, quant = snap_quant_parse(names[i]);
		TAP_CHECK(tr_encode(&s, kv, quant) == 0, "encode %s", names[i]);
		rc = th_seed_check(names[i], &shell, 0, &s, &h, &back, why, sizeof(why));
		th_snap_free(&s);
		TAP_CHECK(rc == 0, "%s", why);
		TAP_CHECK(h.version == 2 && !h.has_bias && h.quant == quant, "%s: version %u quant %d",
		    names[i], h.version, h.quant);
		TAP_CHECK(!back->has_bias, "%s: layer 0 decoded with a bias", names[i]);
		snap_header_free(&h);
		eng_kv_free(back);
		back = NULL;
	}
	eng_kv_free(kv);
	return TAP_PASS;
}

/* Layer 0 of s with plain bytes [at, at + nb) replaced (nb may run past
 * the end: the record is cut at `cut` when cut > 0), resealed, the
 * header's sum updated; the decode's rc. */
static int
tr_forge_layer(struct th_snap *s, size_t at, const uint8_t *bytes, size_t nb, size_t cut,
    struct eng_kv *kv, char *why, size_t why_len)
{
	uint8_t *plain, *z;
	size_t n, zn;
	int rc;
	if (th_unseal(s->rec[0], s->len[0], &plain, &n))
		return 99;
	if (nb)
		memcpy(plain + at, bytes, nb);
	if (cut)
		n = cut;
	th_reseal(plain, n, 1, &z, &zn);
	crypto_generichash(s->h.layer_sum[0], SNAP_SUM_BYTES, z, zn, NULL, 0);
	rc = snap_layer_decode(z, zn, &s->h, 0, kv, why, why_len);
	free(z);
	free(plain);
	return rc;
}

/* The header of s with plain bytes [at, at + nb) replaced; the decode's rc. */
static int
tr_forge_header(const struct th_snap *s, size_t at, const uint8_t *bytes, size_t nb, char *why,
    size_t why_len)
{
	struct snap_header h;
	uint8_t *plain, *z;
	size_t n, zn;
	int rc;
	if (th_unseal(s->hdr, s->hdr_len, &plain, &n))
		return 99;
	memcpy(plain + at, bytes, nb);
	th_reseal(plain, n, 1, &z, &zn);
	rc = snap_header_decode(z, zn, &h, why, why_len);
	snap_header_free(&h);
	free(z);
	free(plain);
	return rc;
}

static enum tap_result
test_forged(void)
{
	static const uint8_t flag1[2] = { 1, 0 }, flag0[2] = { 0, 0 }, flag3[2] = { 3, 0 };
	struct eng_model shell;
	struct eng_kv *kv = NULL, *plain_kv = NULL, *back = NULL;
	struct th_snap s, u;
	uint8_t *rec = NULL, v[4];
	size_t n = 0, bias0;
	char why[256] = "";
	float nan = NAN, inf = INFINITY;
	int rc;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &kv, 1) == 0 && tr_pool(&shell, &plain_kv, 0) == 0, "pools");
	TAP_CHECK(eng_kv_init(&back, &shell, 16) == 0, "pool for the loads");
	TAP_CHECK(tr_encode(&s, kv, SNAP_FP16) == 0 && tr_encode(&u, plain_kv, SNAP_Q8) == 0,
	    "encode");
	TAP_CHECK(th_unseal(s.rec[0], s.len[0], &rec, &n) == 0, "unseal");
	bias0 = n - SNAP_SUM_BYTES - (size_t)14 * 4; /* layer 0: 9 + 5 biases */
	free(rec);

	memcpy(v, &nan, 4);
	rc = tr_forge_layer(&s, bias0 + 4 * 3, v, 4, 0, back, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT && strstr(why, "not finite"), "NaN bias: %d %s", rc, why);
	memcpy(v, &inf, 4);
	rc = tr_forge_layer(&s, bias0 + 4 * 12, v, 4, 0, back, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT && strstr(why, "head 1"), "infinite bias: %d %s", rc, why);
	TAP_CHECK(!back->has_bias, "a refused record leaves the pool unbiased");
	rc = tr_forge_layer(&s, 22, flag0, 2, 0, back, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT && strstr(why, "shape"), "layer flags 0: %d %s", rc, why);
	rc = tr_forge_layer(&s, 0, NULL, 0, bias0 + 4 + SNAP_SUM_BYTES, back, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT, "short bias section: %d %s", rc, why);
	rc = tr_forge_layer(&u, 22, flag1, 2, 0, back, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT, "a flag in a version-2 layer: %d %s", rc, why);

	rc = tr_forge_header(&s, 42, flag0, 2, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT && strstr(why, "version 3"),
	    "a version-3 header without the flag: %d %s", rc, why);
	rc = tr_forge_header(&s, 42, flag3, 2, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT, "an unknown flag: %d %s", rc, why);
	rc = tr_forge_header(&u, 42, flag1, 2, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_CORRUPT && strstr(why, "with refit biases"),
	    "the flag in a version-2 header: %d %s", rc, why);
	th_put_u32(v, SNAP_FORMAT_VERSION + 1);
	rc = tr_forge_header(&s, 4, v, 4, why, sizeof(why));
	TAP_CHECK(rc == SNAP_ERR_VERSION && strstr(why, "1 to 5"), "version 6: %d %s", rc, why);
	th_snap_free(&s);
	th_snap_free(&u);
	eng_kv_free(kv);
	eng_kv_free(plain_kv);
	eng_kv_free(back);
	return TAP_PASS;
}

static enum tap_result
test_encode_refusals(void)
{
	struct eng_model shell;
	struct eng_kv *kv = NULL;
	struct snap_header h;
	uint8_t *out = NULL;
	size_t out_len = 0;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &kv, 1) == 0, "pool");
	TAP_CHECK(snap_header_from_kv(&h, kv, 4) == 0 && h.has_bias == 1, "header from the pool");
	kv->layer[1].bias[kv->layer[1].off[1] + 2] = NAN;
	TAP_CHECK(snap_layer_encode(kv, 0, &h, 1, &out, &out_len) == 0, "layer 0 encodes");
	free(out);
	TAP_CHECK(snap_layer_encode(kv, 1, &h, 1, &out, &out_len) == SNAP_ERR_ARG && !out,
	    "a NaN bias is not encoded");
	kv->layer[1].bias[kv->layer[1].off[1] + 2] = 0.5f;
	h.has_bias = 0;
	TAP_CHECK(snap_layer_encode(kv, 1, &h, 1, &out, &out_len) == SNAP_ERR_ARG && !out,
	    "a biased pool under an unbiased header");
	h.has_bias = 1;
	kv->has_bias = 0;
	TAP_CHECK(snap_layer_encode(kv, 1, &h, 1, &out, &out_len) == SNAP_ERR_ARG && !out,
	    "an unbiased pool under a biased header");
	snap_header_free(&h);
	eng_kv_free(kv);
	return TAP_PASS;
}

/* A library question's pools side by side (eng_kv_concat): a refit part
 * keeps its biases, a plain part's units get 0, the result is biased. */
static enum tap_result
test_concat(void)
{
	struct eng_model shell;
	struct eng_kv *a = NULL, *b = NULL, *both = NULL, *parts[2];
	uint32_t skip[2] = { 0, 0 };
	int l, m;
	int64_t i;

	tiny_shell(&shell, TR_L, 4, TR_KV, TR_HD);
	TAP_CHECK(tr_pool(&shell, &a, 1) == 0 && tr_pool(&shell, &b, 0) == 0, "pools");
	parts[0] = a;
	parts[1] = b;
	TAP_CHECK(eng_kv_concat(&both, &shell, parts, skip, 2, 4) == 0, "concat");
	TAP_CHECK(both->has_bias, "the concatenation is biased");
	for (l = 0; l < TR_L; l++)
		for (m = 0; m < TR_KV; m++) {
			const struct eng_kv_layer *A = &a->layer[l], *C = &both->layer[l];
			TAP_CHECK(C->len[m] == 2 * A->len[m], "layer %d head %d: both parts' units", l, m);
			for (i = 0; i < C->len[m]; i++)
				TAP_CHECK(C->bias[C->off[m] + i] == (i < A->len[m] ?
				    A->bias[A->off[m] + i] : 0.0f), "layer %d head %d unit %lld: bias %g", l,
				    m, (long long)i, (double)C->bias[C->off[m] + i]);
		}
	eng_kv_free(both);
	parts[0] = b; /* two plain parts: not biased */
	TAP_CHECK(eng_kv_concat(&both, &shell, parts, skip, 1, 4) == 0 && !both->has_bias,
	    "plain parts stay unbiased");
	eng_kv_free(both);
	eng_kv_free(a);
	eng_kv_free(b);
	return TAP_PASS;
}

/* The tests of the legacy encodings (versions 1 to 3). */
TH_LEGACY_TEST(g_enc_version, roundtrip)
TH_LEGACY_TEST(g_enc_version, unbiased_same)
TH_LEGACY_TEST(g_enc_version, reads_version2)
TH_LEGACY_TEST(g_enc_version, forged)

static const struct tap_test tests[] = {
	{ "roundtrip", test_roundtrip },
	{ "legacy_roundtrip", legacy_roundtrip },
	{ "unbiased_same", legacy_unbiased_same },
	{ "reads_version2", legacy_reads_version2 },
	{ "forged", legacy_forged },
	{ "encode_refusals", test_encode_refusals },
	{ "concat", test_concat },
};

TAP_MAIN(th_sodium_setup, NULL)
