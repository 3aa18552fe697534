/*
 * test_snapshot_load.c: the parallel snapshot loader (snapshot/snapshot_load.c)
 * and its kernels (kernels/cpu/rope_rows.c, engine/cache/kv_rotate.c).
 *
 *  - rope_rows: rows rotated through a table equal kern_rope_head_at bit
 *    for bit, both styles, head_dims with and without a SIMD tail, every
 *    SIMD level this CPU has; fp16 rows equal kern_f16_to_f32 on all 65536
 *    values.
 *  - qpack_bits: q4, q8 and q4-per-channel blocks unpacked (AVX2 where the
 *    CPU has it) equal x̂ = μ + q·δ computed here from qpack.h's layouts,
 *    value by value, bit for bit.
 *    At every SIMD level the CPU has (qp_simd_force: none, AVX2, AVX-512).
 *  - hadamard_bits: hd_rotate_rows and hd_rotate_back_rows (AVX2 where the
 *    CPU has it) equal their scalar butterflies (double; float), bit for
 *    bit.
 *  - hadamard_unpack: hd_unpack_rows (the q4 forms unpacked and rotated
 *    back in one pass, the row in registers) equals x̂ = μ + q·δ then the
 *    float butterflies, bit for bit, at every SIMD level, every scheme, d 32 to
 *    256; a negative scale refused at every level.
 *  - pool_equal: a real SmolLM2 cache (snapkv) saved to a real LMDB store
 *    in every form (fp16, q4, q4kc, q8, q4h, q4kch, and version 5's q6h,
 *    q5h, q3h, k5v3h, k4v2h, k8v4h), loaded on one thread
 *    and on two, equals the pool the one-layer-at-a-time decoder gives
 *    (snap_layer_decode) in every field bit for bit, and its rotated keys
 *    are kern_rope_head_at of its keys (NaN rows stay NaN); the question's
 *    logits over it are the reference pool's, bit for bit.
 *  - far_positions: a pool of two units per head at positions near 2^31
 *    loads, its keys rotated row by row (a table of next_pos angles would
 *    be 512 GB: before the table was bounded by the rows, such a header
 *    made the load fail for memory, or spend minutes on a smaller one).
 *  - first_error: two damaged layers; a two-thread load names the lower,
 *    every time, as a one-thread load does, and returns no pool.
 *  - legacy_equal: the same cache saved in every form in the legacy
 *    encoding (format versions 1 and 2: zstd, BLAKE2b-128 twice) under a
 *    second document loads, on two threads, into the pool the version-4
 *    snapshot gives, bit for bit; the stored sizes of both are printed
 *    (what zstd saves per form, the raw flag's price).
 */
#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "kernels/cpu/cpu_internal.h" /* for kern_cpu_force_simd */
#include "kernels/rope.h"
#include "kernels/rope_rows.h"
#include "snapshot/hadamard.h"
#include "snapshot/qpack.h"
#include "snapshot/qpack_avx2.h" /* for qp_simd_force */
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_io.h"
#include "storage/store.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define TL_N 640    /* document tokens */
#define TL_B 160    /* snapkv budget per KV head */
#define TL_NQ 6     /* question tokens */
#define TL_CHUNK 128

static uint64_t tl_rng = 0x9e3779b97f4a7c15u;

static uint32_t
tl_next(void)
{
	tl_rng ^= tl_rng >> 12;
	tl_rng ^= tl_rng << 25;
	tl_rng ^= tl_rng >> 27;
	return (uint32_t)((tl_rng * 2685821657736338717u) >> 32);
}

static float
tl_float(void)
{
	return ((float)(tl_next() % 20001) - 10000.0f) / 1000.0f;
}

/* Equal bits, or both NaN (a NaN's payload is not part of the contract). */
static int
tl_same(float a, float b)
{
	return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof(a));
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */

static enum tap_result
tl_rows_at_level(int level)
{
	static const int64_t dims[] = { 8, 32, 64, 72, 128, 136 };
	size_t di;
	int style;
	for (di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (style = KERN_ROPE_NORM; style <= KERN_ROPE_NEOX; style++) {
			int64_t hd = dims[di], n = 37, i, r;
			uint32_t span = 5000, pos[37];
			float ff[68], *table = malloc((size_t)span * (size_t)hd * sizeof(float));
			float *src = malloc((size_t)(n * hd) * sizeof(float));
			float *got = NULL, want[136], ts = kern_rope_theta_scale(10000.0f, hd);
			const float *ffp = di % 2 ? ff : NULL;
			int stream;
			/* on a 64-byte line: the streamed rows where head_dim allows */
			if (posix_memalign((void **)&got, 64, (size_t)(n * hd) * sizeof(float)))
				got = NULL;
			TAP_CHECK(table && src && got, "out of memory");
			for (i = 0; i < hd / 2; i++)
				ff[i] = 1.0f + (float)(tl_next() % 100) / 25.0f;
			for (i = 0; i < n * hd; i++)
				src[i] = tl_float();
			for (r = 0; r < n; r++)
				pos[r] = r == 0 ? 0 : r == 1 ? span - 1 : tl_next() % span;
			kern_rope_table_fill(table, 0, 2000, ts, ffp, hd, (enum kern_rope_style)style);
			kern_rope_table_fill(table + 2000 * hd, 2000, span - 2000, ts, ffp, hd,
			    (enum kern_rope_style)style);
			for (stream = 0; stream < 2; stream++) {
				memset(got, 0xa5, (size_t)(n * hd) * sizeof(float));
				kern_rope_rows(got, src, n, pos, table, hd, (enum kern_rope_style)style,
				    stream);
				for (r = 0; r < n; r++) {
					kern_rope_head_at(want, src + r * hd, pos[r], ts, ffp, hd,
					    (enum kern_rope_style)style);
					for (i = 0; i < hd; i++)
						TAP_CHECK(tl_same(want[i], got[r * hd + i]),
						    "level %d hd %lld style %d stream %d row %lld [%lld]: %.9g, "
						    "not %.9g", level, (long long)hd, style, stream, (long long)r,
						    (long long)i, (double)got[r * hd + i], (double)want[i]);
				}
			}
			/* in place (never streamed), rows by index (slot positions) */
			kern_rope_rows(src, src, n, NULL, table, hd, (enum kern_rope_style)style, 1);
			for (r = 0; r < n; r++)
				for (i = 0; i < hd; i++)
					TAP_CHECK(isfinite(src[r * hd + i]), "in place: not finite");
			free(table);
			free(src);
			free(got);
		}
	return TAP_PASS;
}

static enum tap_result
test_rope_rows(void)
{
	static uint8_t h16[2 * 65536 + 2];
	static float got[65537];
	int level, best = kern_cpu_simd_detect();
	enum tap_result r = TAP_PASS;
	uint32_t i;

	for (i = 0; i < 65536; i++) {
		h16[2 * i] = (uint8_t)i;
		h16[2 * i + 1] = (uint8_t)(i >> 8);
	}
	for (level = KERN_CPU_SIMD_SCALAR; level <= best && r == TAP_PASS; level++) {
		TAP_CHECK(kern_cpu_force_simd(level) == 0, "level %d", level);
		r = tl_rows_at_level(level);
		/* odd start and count: the unaligned load and the tail */
		kern_f16_to_f32_rows(h16 + 2, got, 65535);
		for (i = 1; i < 65536 && r == TAP_PASS; i++) {
			float w = kern_f16_to_f32((uint16_t)i);
			uint32_t bw, bg;
			memcpy(&bw, &w, sizeof(bw));
			memcpy(&bg, &got[i - 1], sizeof(bg));
			if (bw != bg) {
				tap_diag("level %d: fp16 %04x widened to %08x, not %08x", level, i, bg, bw);
				r = TAP_FAIL;
			}
		}
		tap_diag("SIMD level %d: rotations and fp16 rows %s", level,
		    r == TAP_PASS ? "equal" : "differ");
	}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	return r;
}

/* x̂ = μ + q·δ as qpack.h defines it: one product, then one sum. */
static float
tl_deq(uint16_t m16, uint16_t d16, unsigned q)
{
	float t = (float)q * kern_f16_to_f32(d16);
	return kern_f16_to_f32(m16) + t;
}

static void
tl_put_pair(uint8_t *p)
{
	uint16_t d16 = kern_f32_to_f16((float)(tl_next() % 1000) / 997.0f);
	uint16_t m16 = kern_f32_to_f16(tl_float());
	p[0] = (uint8_t)d16;
	p[1] = (uint8_t)(d16 >> 8);
	p[2] = (uint8_t)m16;
	p[3] = (uint8_t)(m16 >> 8);
}

static uint16_t
tl_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* A random block of n rows of d values under s (q4, q4 per channel or q8)
 * whose (δ, μ) pairs are valid: malloc'd, *bytes long. */
static uint8_t *
tl_block(int s, int64_t n, int d, size_t *bytes)
{
	size_t at;
	int64_t r;
	int c;
	uint8_t *b;
	*bytes = (size_t)qp_bytes((enum qp_scheme)s, (uint64_t)n, d);
	if (!(b = malloc(*bytes)))
		return NULL;
	for (at = 0; at < *bytes; at++)
		b[at] = (uint8_t)tl_next();
	if (s == QP_Q4_CH) {
		for (r = 0, at = 0; r < n; r += 32) {
			int64_t gn = n - r < 32 ? n - r : 32;
			for (c = 0; c < d; c++)
				tl_put_pair(b + at + 4 * (size_t)c);
			at += 4 * (size_t)d + (size_t)gn * (size_t)d / 2;
		}
	} else {
		size_t gb = s == QP_Q4 ? 20 : 36;
		for (at = 0; at < *bytes; at += gb)
			tl_put_pair(b + at);
	}
	return b;
}

/* Value i of row r of block b, from qpack.h's layout and x̂ = μ + q·δ. */
static float
tl_unpacked(int s, const uint8_t *b, int d, int64_t r, int64_t i)
{
	if (s == QP_Q4_CH) {
		const uint8_t *g = b + (size_t)(r / 32) * (4 * (size_t)d + 16 * (size_t)d);
		unsigned q = g[4 * d + (r % 32) * (d / 2) + i / 2];
		return tl_deq(tl_get16(g + 4 * i + 2), tl_get16(g + 4 * i), i % 2 ? q >> 4 : q & 15u);
	} else {
		size_t gb = s == QP_Q4 ? 20 : 36;
		const uint8_t *g = b + ((size_t)r * (size_t)(d / 32) + (size_t)(i / 32)) * gb;
		unsigned q = s == QP_Q4 ? g[4 + (i % 32) / 2] : g[4 + i % 32];
		if (s == QP_Q4)
			q = i % 2 ? q >> 4 : q & 15u;
		return tl_deq(tl_get16(g + 2), tl_get16(g), q);
	}
}

/* The SIMD levels of the snapshot kernels this CPU runs (qp_simd_force). */
static int
tl_levels(void)
{
	int best;
	qp_simd_force(-1);
	best = qp_simd_level();
	return best + 1;
}

static enum tap_result
test_qpack_bits(void)
{
	static const int dims[] = { 32, 64, 128 };
	int s, di, level, n_levels = tl_levels();
	for (level = 0; level < n_levels; level++)
		for (s = QP_Q4; s <= QP_Q8; s++)
			for (di = 0; di < 3; di++) {
				int d = dims[di], ok = 1;
				int64_t n = 45, r, i; /* the per-channel form's last group: 13 rows */
				size_t bytes;
				uint8_t *b = tl_block(s, n, d, &bytes);
				float *x = malloc((size_t)(n * d) * sizeof(float));
				TAP_CHECK(b && x, "out of memory");
				TAP_CHECK(qp_simd_force(level) == 0, "level %d", level);
				TAP_CHECK(qp_decode((enum qp_scheme)s, b, n, d, x) == 0, "decode");
				for (r = 0; r < n && ok; r++)
					for (i = 0; i < d && ok; i++) {
						float w = tl_unpacked(s, b, d, r, i);
						if (memcmp(&w, &x[r * d + i], sizeof(w))) {
							tap_diag("level %d scheme %d d %d row %lld [%lld]: %.9g, "
							    "not %.9g", level, s, d, (long long)r, (long long)i,
							    (double)x[r * d + i], (double)w);
							ok = 0;
						}
					}
				free(b);
				free(x);
				qp_simd_force(-1);
				TAP_CHECK(ok, "unpacked values differ");
			}
	tap_diag("%d SIMD levels checked", n_levels);
	return TAP_PASS;
}

/* hadamard.c's scalar definitions, each checked against an exact
 * reference by test_hadamard: the encoder's (butterflies in double, one
 * scaling and rounding: hd_rotate_rows) and the loader's (butterflies in
 * float, one scaling: hd_rotate_back_rows), with SIMD off. */
static void
tl_hadamard(float *row, int d, int back)
{
	qp_simd_force(0);
	if (back)
		hd_rotate_back_rows(row, 1, d);
	else
		hd_rotate_rows(row, 1, d);
	qp_simd_force(-1);
}

static enum tap_result
test_hadamard_bits(void)
{
	static float x[3 * HD_MAX_DIM], want[3 * HD_MAX_DIM];
	int d, i, r, back;
	for (back = 0; back < 2; back++)
		for (d = 2; d <= HD_MAX_DIM; d <<= 1) {
			for (i = 0; i < 3 * d; i++)
				x[i] = want[i] = tl_float() * (i % 7 ? 1.0f : 1000.0f);
			if (back)
				hd_rotate_back_rows(x, 3, d);
			else
				hd_rotate_rows(x, 3, d);
			for (r = 0; r < 3; r++)
				tl_hadamard(want + r * d, d, back);
			for (i = 0; i < 3 * d; i++)
				TAP_CHECK(!memcmp(&x[i], &want[i], sizeof(float)),
				    "%s d %d [%d]: %.9g, not %.9g", back ? "back" : "forward", d, i,
				    (double)x[i], (double)want[i]);
		}
	return TAP_PASS;
}

/* hd_unpack_rows (the rotated forms' load: q4 rows unpacked and rotated
 * back in one pass, AVX2 or AVX-512, d 32 to 128; the two steps one after
 * the other elsewhere) equals the scalar definitions composed, value by
 * value, bit for bit, at every SIMD level this CPU has; a bad pair is
 * refused at every level. */
static enum tap_result
test_hadamard_unpack(void)
{
	static const int dims[] = { 32, 64, 128, 256 };
	static const int schemes[] = { QP_Q4, QP_Q4_CH, QP_Q8 };
	int si, di, level, n_levels = tl_levels();
	for (level = 0; level < n_levels; level++)
		for (si = 0; si < 3; si++)
			for (di = 0; di < 4; di++) {
				int s = schemes[si], d = dims[di], ok = 1;
				int64_t n = 45, r, i; /* 13 rows in the per-channel form's last group */
				size_t bytes;
				uint8_t *b = tl_block(s, n, d, &bytes);
				float *x = NULL, *want = malloc((size_t)(n * d) * sizeof(float));
				if (posix_memalign((void **)&x, 64, (size_t)(n * d) * sizeof(float)))
					x = NULL; /* on a 64-byte line: streamed at odd levels */
				TAP_CHECK(b && x && want, "out of memory");
				for (r = 0; r < n; r++) {
					for (i = 0; i < d; i++)
						want[r * d + i] = tl_unpacked(s, b, d, r, i);
					tl_hadamard(want + r * d, d, 1);
				}
				TAP_CHECK(qp_simd_force(level) == 0, "level %d", level);
				TAP_CHECK(hd_unpack_rows((enum qp_scheme)s, b, n, d, x, level % 2) == 0, "unpack");
				for (i = 0; i < n * d && ok; i++)
					if (!tl_same(x[i], want[i])) {
						tap_diag("level %d scheme %d d %d [%lld]: %.9g, not %.9g", level,
						    s, d, (long long)i, (double)x[i], (double)want[i]);
						ok = 0;
					}
				/* a negative δ in the last row's last pair */
				b[s == QP_Q4_CH ? 4 * (size_t)(d - 1) + 1 + (size_t)(n / 32) *
				    (4 * (size_t)d + 16 * (size_t)d) : bytes - (s == QP_Q4 ? 20 : 36) + 1] |= 0x80;
				TAP_CHECK(hd_unpack_rows((enum qp_scheme)s, b, n, d, x, level % 2) == -1,
				    "level %d scheme %d d %d: a negative scale taken", level, s, d);
				qp_simd_force(-1);
				free(b);
				free(x);
				free(want);
				TAP_CHECK(ok, "rotated rows differ");
			}
	tap_diag("%d SIMD levels checked", n_levels);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* A real cache in a real store                                              */

struct tl_env {
	struct eng_model *m;
	struct eng_ctx *c;
	struct eng_kv *kv;
	struct eng_policy *p;
	int32_t ids[TL_N + TL_NQ];
	char dir[64];
	struct store *s;
	struct store_doc d;
};

static struct tl_env g_env;

static int
tl_setup(void)
{
	struct tl_env *e = &g_env;
	struct store_opts so;
	char why[256] = "";
	int64_t i, rph;

	if (e->m)
		return 0;
	if (access(tap_model_path(), R_OK) != 0)
		return 1;
	if (eng_model_open(&e->m, tap_model_path(), why, sizeof(why)))
		return -1;
	for (i = 0; i < TL_N + TL_NQ; i++)
		e->ids[i] = (int32_t)(tl_next() % (uint32_t)e->m->hp.n_vocab);
	if (eng_policy_create(&e->p, "snapkv", "", TL_B, why, sizeof(why)) ||
	    eng_policy_bind(e->p, e->m, why, sizeof(why)))
		return -1;
	rph = eng_policy_rows_per_head(e->p, TL_N, TL_CHUNK, TL_NQ);
	if (eng_ctx_init(&e->c, e->m, 2, eng_policy_max_chunk(e->p, TL_CHUNK)) ||
	    eng_kv_init(&e->kv, e->m, rph) ||
	    eng_ingest(e->c, e->kv, e->p, e->ids, TL_N, TL_CHUNK, NULL))
		return -1;
	snprintf(e->dir, sizeof(e->dir), "/tmp/kvsnap-test-load-XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	memset(&so, 0, sizeof(so));
	memset(&e->d, 0, sizeof(e->d));
	store_doc_id(e->ids, TL_N * sizeof(int32_t), e->d.doc_id);
	e->d.tokens = TL_N;
	return store_open(&e->s, e->dir, &so, why, sizeof(why)) ? -1 : 0;
}

/* The program's tear-down: what the shared set-up made (0: a folder that
 * will not go is only reported). */
static int
tl_teardown(void)
{
	struct tl_env *e = &g_env;
	if (e->s)
		store_close(e->s);
	if (e->dir[0]) {
		if (th_rm_rf(e->dir) != 0)
			printf("# could not remove %s\n", e->dir);
	}
	eng_kv_free(e->kv);
	eng_ctx_free(e->c);
	eng_policy_free(e->p);
	eng_model_close(e->m);
	return 0;
}

/* Save the cache in `quant`; its profile id into pid. */
static int
tl_save(int quant, uint8_t pid[SNAP_ID_BYTES])
{
	struct tl_env *e = &g_env;
	char prof[SNAP_MAX_PROFILE], why[256] = "";
	if (snap_profile(prof, sizeof(prof), pid, eng_model_fingerprint(e->m), e->p, TL_CHUNK,
	    quant))
		return -1;
	if (snap_save(e->s, &e->d, e->kv, e->m->hp.n_head, eng_model_fingerprint(e->m), prof, pid,
	    quant, SNAP_ZLEVEL_DEFAULT, TL_N, why, sizeof(why))) {
		tap_diag("save: %s", why);
		return -1;
	}
	return 0;
}

/* The reference: every record through snap_layer_decode, one layer at a
 * time, then eng_kv_finish_load. */
static int
tl_reference(const uint8_t pid[SNAP_ID_BYTES], int64_t rows_per_head, struct eng_kv **out)
{
	struct tl_env *e = &g_env;
	struct store_reader *r = NULL;
	struct snap_header h;
	struct eng_kv *kv = NULL;
	const uint8_t *buf;
	size_t len;
	char why[256] = "";
	int l, rc;

	memset(&h, 0, sizeof(h));
	rc = store_read_begin(e->s, e->d.doc_id, pid, &r, why, sizeof(why)) ||
	    store_read_layer(r, SNAP_HEADER_LAYER, &buf, &len, why, sizeof(why)) ||
	    snap_header_decode(buf, len, &h, why, sizeof(why)) ||
	    eng_kv_init(&kv, e->m, rows_per_head);
	for (l = 0; !rc && l < h.n_layer; l++)
		rc = store_read_layer(r, (unsigned)l, &buf, &len, why, sizeof(why)) ||
		    snap_layer_decode(buf, len, &h, l, kv, why, sizeof(why));
	if (!rc)
		rc = eng_kv_finish_load(kv, h.next_pos, (enum eng_pos_mode)h.pos_mode);
	if (r)
		store_read_end(r);
	snap_header_free(&h);
	if (rc) {
		tap_diag("reference load: %s", why);
		eng_kv_free(kv);
		return -1;
	}
	*out = kv;
	return 0;
}

/* Every field of every used row of a and b, bit for bit; b's rotated keys
 * are kern_rope_head_at of its keys.  0, or -1 with a diagnostic. */
static int
tl_pool_equal(const struct eng_kv *a, const struct eng_kv *b, const char *what)
{
	float want[256], ts = kern_rope_theta_scale(b->rope_base, b->head_dim);
	int hd = a->head_dim, l, m;
	int64_t i, j;

	if (a->n_layer != b->n_layer || a->n_head_kv != b->n_head_kv || hd != b->head_dim ||
	    a->rows != b->rows || a->next_pos != b->next_pos || a->pos_mode != b->pos_mode ||
	    hd > 256) {
		tap_diag("%s: shapes differ", what);
		return -1;
	}
	for (l = 0; l < a->n_layer; l++) {
		const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l];
		for (m = 0; m < a->n_head_kv; m++) {
			if (A->off[m] != B->off[m] || A->len[m] != B->len[m] || A->cap[m] != B->cap[m]) {
				tap_diag("%s: layer %d head %d laid out differently", what, l, m);
				return -1;
			}
			for (i = A->off[m]; i < A->off[m] + A->len[m]; i++) {
				uint32_t p = b->pos_mode == ENG_POS_SLOT ? (uint32_t)(i - B->off[m]) : B->pos[i];
				if (A->pos[i] != B->pos[i] || !tl_same(A->score[i], B->score[i])) {
					tap_diag("%s: layer %d row %lld: position or score", what, l, (long long)i);
					return -1;
				}
				kern_rope_head_at(want, B->k + i * hd, p, ts, b->rope_freqs, hd, b->rope_style);
				for (j = 0; j < hd; j++)
					if (!tl_same(A->k[i * hd + j], B->k[i * hd + j]) ||
					    !tl_same(A->v[i * hd + j], B->v[i * hd + j]) ||
					    !tl_same(A->kr[i * hd + j], B->kr[i * hd + j]) ||
					    !tl_same(want[j], B->kr[i * hd + j])) {
						tap_diag("%s: layer %d row %lld [%lld]: k %.9g/%.9g v %.9g/%.9g "
						    "kr %.9g/%.9g (kern_rope_head_at %.9g)", what, l, (long long)i,
						    (long long)j, (double)A->k[i * hd + j], (double)B->k[i * hd + j],
						    (double)A->v[i * hd + j], (double)B->v[i * hd + j],
						    (double)A->kr[i * hd + j], (double)B->kr[i * hd + j],
						    (double)want[j]);
						return -1;
					}
			}
		}
	}
	return 0;
}

static enum tap_result
test_pool_equal(void)
{
	struct tl_env *e;
	struct kern_ctx *k2 = NULL;
	float *ref_logits = NULL, *got_logits = NULL;
	int quant, t, ok = 1, rc = tl_setup();

	if (rc > 0)
		return TAP_SKIP;
	TAP_CHECK(rc == 0, "set-up");
	e = &g_env;
	ref_logits = malloc((size_t)e->m->hp.n_vocab * sizeof(float));
	got_logits = malloc((size_t)e->m->hp.n_vocab * sizeof(float));
	TAP_EXPECT(ref_logits && got_logits, "out of memory");
	TAP_EXPECT(kern_ctx_init(&k2, 2) == 0, "a 2-thread kern_ctx");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX; quant++) {
		uint8_t pid[SNAP_ID_BYTES];
		struct eng_kv *ref = NULL;
		TAP_EXPECT(tl_save(quant, pid) == 0, "save %s", snap_quant_name(quant));
		for (t = 0; t < 2 && ok; t++) {
			struct snap_load_stats st;
			struct snap_header h;
			struct eng_kv *kv = NULL;
			char why[256] = "", what[64];
			snprintf(what, sizeof(what), "%s, %d thread%s", snap_quant_name(quant), t + 1,
			    t ? "s" : "");
			if (snap_load_ex(e->s, e->d.doc_id, pid, e->m, TL_NQ, t ? k2 : NULL, &kv, &h, &st,
			    why, sizeof(why))) {
				tap_diag("%s: load: %s", what, why);
				ok = 0;
			} else {
				snap_header_free(&h);
				ok = st.threads == t + 1 &&
				    tl_reference(pid, kv->rows / kv->n_head_kv, &ref) == 0 &&
				    tl_pool_equal(ref, kv, what) == 0;
				/* and it answers as the reference does */
				if (ok && t) {
					ok = eng_forward(e->c, ref, e->ids + TL_N, TL_NQ, NULL, ref_logits) == 0 &&
					    eng_forward(e->c, kv, e->ids + TL_N, TL_NQ, NULL, got_logits) == 0 &&
					    !memcmp(ref_logits, got_logits,
					        (size_t)e->m->hp.n_vocab * sizeof(float));
					if (!ok)
						tap_diag("%s: the question's logits differ", what);
				}
				eng_kv_free(ref);
				ref = NULL;
			}
			eng_kv_free(kv);
		}
		TAP_EXPECT(ok, "%s: the loaded pool differs", snap_quant_name(quant));
		tap_diag("%s: equal on 1 and 2 threads", snap_quant_name(quant));
	}
out:
	kern_ctx_free(k2);
	free(ref_logits);
	free(got_logits);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* A pool taken again (snap_load_into) holds what a fresh one does, bit for
 * bit, whatever it held: each form loaded into the pool the form before was
 * loaded into, after a question was run over it and every row of it was
 * overwritten with NaN; and the pool is the same memory (taken again, not
 * made anew), its angle table kept from the first load. */
static enum tap_result
test_reused_pool(void)
{
	struct tl_env *e;
	struct kern_ctx *k2 = NULL;
	struct eng_kv *pool = NULL, *ref = NULL;
	float *logits = NULL, *table = NULL;
	int quant, ok = 1, rc = tl_setup(), l;

	if (rc > 0)
		return TAP_SKIP;
	TAP_CHECK(rc == 0, "set-up");
	e = &g_env;
	logits = malloc((size_t)e->m->hp.n_vocab * sizeof(float));
	TAP_EXPECT(logits, "out of memory");
	TAP_EXPECT(kern_ctx_init(&k2, 2) == 0, "a 2-thread kern_ctx");
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX && ok; quant++) {
		uint8_t pid[SNAP_ID_BYTES];
		struct eng_kv *before = pool;
		struct snap_header h;
		char why[256] = "", what[64];
		snprintf(what, sizeof(what), "%s, reused", snap_quant_name(quant));
		TAP_EXPECT(tl_save(quant, pid) == 0, "save %s", snap_quant_name(quant));
		if (pool) { /* dirty: every row of every arena */
			for (l = 0; l < pool->n_layer; l++) {
				struct eng_kv_layer *L = &pool->layer[l];
				size_t n = (size_t)pool->rows * (size_t)pool->head_dim;
				memset(L->k, 0xff, n * sizeof(float));
				memset(L->kr, 0xff, n * sizeof(float));
				memset(L->v, 0xff, n * sizeof(float));
				memset(L->score, 0xff, (size_t)pool->rows * sizeof(float));
				memset(L->pos, 0xff, (size_t)pool->rows * sizeof(uint32_t));
			}
		}
		if (snap_load_into(e->s, e->d.doc_id, pid, e->m, TL_NQ, k2, &pool, &h, NULL, why,
		    sizeof(why))) {
			tap_diag("%s: load: %s", what, why);
			ok = 0;
			break;
		}
		snap_header_free(&h);
		if (before && (pool != before || pool->rope_table != table)) {
			tap_diag("%s: the pool or its angle table was made anew", what);
			ok = 0;
		}
		table = pool->rope_table;
		ok = ok && table && tl_reference(pid, pool->rows / pool->n_head_kv, &ref) == 0 &&
		    tl_pool_equal(ref, pool, what) == 0;
		eng_kv_free(ref);
		ref = NULL;
		/* the question appends rows and moves next_pos: the next load
		 * must not see them */
		if (ok && eng_forward(e->c, pool, e->ids + TL_N, TL_NQ, NULL, logits)) {
			tap_diag("%s: the question failed", what);
			ok = 0;
		}
	}
	TAP_EXPECT(ok, "a reused pool differs from a fresh one");
	tap_diag("every form equal loaded into the pool of the form before");
out:
	eng_kv_free(pool);
	kern_ctx_free(k2);
	free(logits);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* Put doc d's snapshot of profile pid, made of a header and n layer
 * records, into the shared store by hand; store_put's rc. */
static int
tl_put(const struct store_doc *d, const uint8_t pid[SNAP_ID_BYTES], const uint8_t *hdr,
    size_t hdr_len, uint8_t *const *rec, const size_t *len, int n, char *why, size_t why_len)
{
	struct store_snapshot snap;
	memset(&snap, 0, sizeof(snap));
	memcpy(snap.profile_id, pid, SNAP_ID_BYTES);
	snap.header = hdr;
	snap.header_len = hdr_len;
	snap.layer = (const uint8_t *const *)rec;
	snap.layer_len = len;
	snap.n_layer = n;
	return store_put(g_env.s, d, &snap, why, why_len);
}

/* The stored snapshot of pid with layers a and b's records swapped with
 * their neighbours' (each then fails the header's checksum). */
static int
tl_damage(const uint8_t pid[SNAP_ID_BYTES], int a, int b)
{
	struct tl_env *e = &g_env;
	struct store_reader *r = NULL;
	const uint8_t *buf, *hdr = NULL;
	uint8_t **rec;
	size_t *len, hdr_len = 0;
	char why[256] = "";
	int n = e->m->hp.n_layer, l, rc;

	rec = calloc((size_t)n, sizeof(*rec));
	len = calloc((size_t)n, sizeof(*len));
	rc = !rec || !len || store_read_begin(e->s, e->d.doc_id, pid, &r, why, sizeof(why));
	for (l = -1; !rc && l < n; l++) {
		size_t got;
		rc = store_read_layer(r, l < 0 ? SNAP_HEADER_LAYER : (unsigned)l, &buf, &got, why,
		    sizeof(why));
		if (rc)
			break;
		if (l < 0) {
			hdr = buf;
			hdr_len = got;
			continue;
		}
		rc = !(rec[l] = malloc(got));
		if (!rc)
			memcpy(rec[l], buf, got);
		len[l] = got;
	}
	if (!rc) {
		uint8_t *hcopy = malloc(hdr_len), *t;
		size_t tl;
		rc = !hcopy;
		if (hcopy) {
			memcpy(hcopy, hdr, hdr_len);
			store_read_end(r);
			r = NULL;
			t = rec[a]; rec[a] = rec[a + 1]; rec[a + 1] = t;
			tl = len[a]; len[a] = len[a + 1]; len[a + 1] = tl;
			t = rec[b]; rec[b] = rec[b + 1]; rec[b + 1] = t;
			tl = len[b]; len[b] = len[b + 1]; len[b + 1] = tl;
			rc = tl_put(&e->d, pid, hcopy, hdr_len, rec, len, n, why, sizeof(why));
			free(hcopy);
		}
	}
	if (r)
		store_read_end(r);
	for (l = 0; rec && l < n; l++)
		free(rec[l]);
	free(rec);
	free(len);
	if (rc)
		tap_diag("damage: %s", why);
	return rc ? -1 : 0;
}

static enum tap_result
test_first_error(void)
{
	struct tl_env *e;
	struct kern_ctx *k2 = NULL;
	uint8_t pid[SNAP_ID_BYTES];
	char want[256] = "", why[256];
	int rc = tl_setup(), i, ok = 1;

	if (rc > 0)
		return TAP_SKIP;
	TAP_CHECK(rc == 0, "set-up");
	e = &g_env;
	TAP_CHECK(tl_save(SNAP_Q4, pid) == 0, "save");
	TAP_CHECK(tl_damage(pid, 7, 20) == 0, "damage layers 7 and 20");
	TAP_CHECK(kern_ctx_init(&k2, 2) == 0, "a 2-thread kern_ctx");
	for (i = 0; i < 24 && ok; i++) {
		struct snap_header h;
		struct eng_kv *kv = NULL;
		why[0] = 0;
		rc = snap_load_ex(e->s, e->d.doc_id, pid, e->m, TL_NQ, i ? k2 : NULL, &kv, &h, NULL,
		    why, sizeof(why));
		if (i == 0)
			snprintf(want, sizeof(want), "%s", why);
		ok = rc == SNAPIO_ERR_CORRUPT && !kv && !strcmp(why, want) &&
		    strstr(why, "layer 7:") != NULL;
		if (!ok)
			tap_diag("run %d: rc %d, '%s' (the one-thread load: '%s')", i, rc, why, want);
		eng_kv_free(kv);
	}
	kern_ctx_free(k2);
	tap_diag("a damaged snapshot: '%s'", want);
	return ok ? TAP_PASS : TAP_FAIL;
}

static enum tap_result
test_far_positions(void)
{
	struct tl_env *e;
	struct eng_kv *src = NULL, *kv = NULL, *ref = NULL;
	struct kern_ctx *k2 = NULL;
	struct snap_header h;
	uint8_t pid[SNAP_ID_BYTES];
	char prof[SNAP_MAX_PROFILE], why[256] = "";
	int64_t counts[16];
	int rc = tl_setup(), l, m, ok = 0;

	if (rc > 0)
		return TAP_SKIP;
	TAP_CHECK(rc == 0, "set-up");
	e = &g_env;
	TAP_CHECK(e->kv->n_head_kv <= 16, "too many KV heads for this test");
	TAP_CHECK(eng_kv_init(&src, e->m, 4) == 0, "pool");
	for (m = 0; m < src->n_head_kv; m++)
		counts[m] = 2;
	for (l = 0; l < src->n_layer; l++) {
		struct eng_kv_layer *L = &src->layer[l];
		TAP_EXPECT(eng_kv_prepare_layer(src, l, counts) == 0, "layout");
		for (m = 0; m < src->n_head_kv; m++) {
			int64_t r, i;
			for (r = L->off[m]; r < L->off[m] + 2; r++) {
				L->pos[r] = 2147483643u + 3u * (uint32_t)(r - L->off[m]);
				L->score[r] = 1.0f;
				for (i = 0; i < src->head_dim; i++) {
					L->k[r * src->head_dim + i] = tl_float();
					L->v[r * src->head_dim + i] = tl_float();
				}
			}
		}
	}
	TAP_EXPECT(eng_kv_finish_load(src, 2147483647u, ENG_POS_ORIGINAL) == 0, "finish");
	snprintf(prof, sizeof(prof), "test:far-positions");
	memset(pid, 0xfa, sizeof(pid));
	TAP_EXPECT(snap_save(e->s, &e->d, src, e->m->hp.n_head, eng_model_fingerprint(e->m), prof,
	    pid, SNAP_FP16, SNAP_ZLEVEL_DEFAULT, TL_N, why, sizeof(why)) == 0, "save: %s", why);
	TAP_EXPECT(kern_ctx_init(&k2, 2) == 0, "a 2-thread kern_ctx");
	TAP_EXPECT(snap_load_ex(e->s, e->d.doc_id, pid, e->m, 1, k2, &kv, &h, NULL, why,
	    sizeof(why)) == 0, "load: %s", why);
	snap_header_free(&h);
	TAP_EXPECT(tl_reference(pid, kv->rows / kv->n_head_kv, &ref) == 0, "reference");
	TAP_EXPECT(tl_pool_equal(ref, kv, "far positions") == 0, "the loaded pool differs");
	ok = 1;
out:
	eng_kv_free(src);
	eng_kv_free(kv);
	eng_kv_free(ref);
	kern_ctx_free(k2);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* The cache in the legacy encoding of quant (header version 1: the
 * form's own version, as builds before format version 4 wrote it), put
 * under doc d with profile pid by hand (snap_save writes version 4). */
static int
tl_save_legacy(const struct store_doc *d, int quant, const uint8_t pid[SNAP_ID_BYTES],
    size_t *bytes)
{
	struct tl_env *e = &g_env;
	struct snap_header h;
	uint8_t *rec[64] = { 0 }, *hdr = NULL;
	size_t len[64] = { 0 }, hdr_len = 0;
	char why[256] = "";
	int l, rc, n = e->kv->n_layer;

	if (n > 64 || snap_header_from_kv(&h, e->kv, e->m->hp.n_head))
		return -1;
	h.version = 1;
	h.quant = quant;
	h.n_tokens = TL_N;
	memcpy(h.profile_id, pid, SNAP_ID_BYTES);
	snprintf(h.model_fp, sizeof(h.model_fp), "%s", eng_model_fingerprint(e->m));
	snprintf(h.profile, sizeof(h.profile), "legacy %s", snap_quant_name(quant));
	rc = 0;
	for (l = 0; !rc && l < n; l++)
		rc = snap_layer_encode(e->kv, l, &h, SNAP_ZLEVEL_DEFAULT, &rec[l], &len[l]);
	if (!rc)
		rc = snap_header_encode(&h, SNAP_ZLEVEL_DEFAULT, &hdr, &hdr_len);
	*bytes = hdr_len;
	for (l = 0; l < n; l++)
		*bytes += len[l];
	if (!rc) {
		if ((rc = tl_put(d, pid, hdr, hdr_len, rec, len, n, why, sizeof(why))))
			tap_diag("legacy put: %s", why);
	}
	for (l = 0; l < n; l++)
		free(rec[l]);
	free(hdr);
	snap_header_free(&h);
	return rc ? -1 : 0;
}

/* Stored bytes of doc's snapshot pid, every record. */
static size_t
tl_stored(const uint8_t doc[SNAP_ID_BYTES], const uint8_t pid[SNAP_ID_BYTES])
{
	struct tl_env *e = &g_env;
	struct store_reader *r = NULL;
	const uint8_t *buf;
	size_t len, total = 0;
	char why[256];
	int l;
	if (store_read_begin(e->s, doc, pid, &r, why, sizeof(why)))
		return 0;
	for (l = -1; l < e->m->hp.n_layer; l++)
		if (!store_read_layer(r, l < 0 ? SNAP_HEADER_LAYER : (unsigned)l, &buf, &len, why,
		    sizeof(why)))
			total += len;
	store_read_end(r);
	return total;
}

static enum tap_result
test_legacy_equal(void)
{
	struct tl_env *e;
	struct kern_ctx *k2 = NULL;
	struct store_doc d2;
	int quant, ok = 1, rc = tl_setup();

	if (rc > 0)
		return TAP_SKIP;
	TAP_CHECK(rc == 0, "set-up");
	e = &g_env;
	TAP_CHECK(kern_ctx_init(&k2, 2) == 0, "a 2-thread kern_ctx");
	d2 = e->d;
	d2.doc_id[0] ^= 0xff; /* another document, the same cache */
	/* the forms with a legacy encoding: those before version 5 */
	for (quant = SNAP_FP16; quant <= SNAP_QUANT_MAX && ok &&
	    snap_quant_version(quant) < SNAP_BITS_VERSION; quant++) {
		uint8_t pid[SNAP_ID_BYTES];
		struct snap_header h4, h1;
		struct eng_kv *kv4 = NULL, *kv1 = NULL;
		size_t legacy = 0, fast;
		char why[256] = "", what[64];
		snprintf(what, sizeof(what), "%s legacy", snap_quant_name(quant));
		ok = tl_save(quant, pid) == 0 && tl_save_legacy(&d2, quant, pid, &legacy) == 0;
		if (ok && (snap_load_ex(e->s, e->d.doc_id, pid, e->m, TL_NQ, k2, &kv4, &h4, NULL, why,
		    sizeof(why)) || snap_load_ex(e->s, d2.doc_id, pid, e->m, TL_NQ, k2, &kv1, &h1, NULL,
		    why, sizeof(why)))) {
			tap_diag("%s: load: %s", what, why);
			ok = 0;
		}
		if (ok) {
			ok = h4.version == SNAP_FAST_VERSION &&
			    h1.version == (uint32_t)snap_quant_version(quant);
			if (!ok)
				tap_diag("%s: versions %u and %u", what, h4.version, h1.version);
			ok = ok && tl_pool_equal(kv4, kv1, what) == 0;
			snap_header_free(&h4);
			snap_header_free(&h1);
		}
		fast = tl_stored(e->d.doc_id, pid);
		tap_diag("%s: version 4 %zu bytes (%s), legacy %zu bytes: zstd saves %.1f %%",
		    snap_quant_name(quant), fast, snap_quant_raw(quant) ? "raw" : "zstd", legacy,
		    100.0 * (1.0 - (double)legacy / (double)fast));
		eng_kv_free(kv4);
		eng_kv_free(kv1);
	}
	kern_ctx_free(k2);
	TAP_CHECK(ok, "a legacy snapshot loads into another pool than version 4's");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "rope_rows", test_rope_rows },
	{ "qpack_bits", test_qpack_bits },
	{ "hadamard_bits", test_hadamard_bits },
	{ "hadamard_unpack", test_hadamard_unpack },
	{ "pool_equal", test_pool_equal },
	{ "reused_pool", test_reused_pool },
	{ "far_positions", test_far_positions },
	{ "first_error", test_first_error },
	{ "legacy_equal", test_legacy_equal },
};

TAP_MAIN(th_sodium_setup, tl_teardown)
