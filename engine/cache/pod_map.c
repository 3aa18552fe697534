/*
 * pod_map.c: the PoD block map (spec/pod.md §1.2, §3.2): the Jensen–Shannon
 * divergence, the greedy layer grouping, the choice of δ for a target
 * saving, and the JSON block-map file that binds a map to its model.
 *
 * Block-map file (UTF-8 JSON, one object; written by eng_pod_map_save, read
 * by eng_pod_map_load, which rejects anything else):
 *   1. "format"            string "kvsnap-pod-map"
 *   2. "version"           integer 1 (ENG_ERR_VERSION otherwise)
 *   3. "n_layer"           integer L, 1..255 (anchors are u8)
 *   4. "n_head"            integer, query heads, 1..65536
 *   5. "n_head_kv"         integer, KV heads, 1..65536, divides n_head
 *   6. "delta"             number, the δ the grouping used (finite; may be
 *                          just above 1 when a target saving chose "every
 *                          layer its own block")
 *   7. "f"                 number in [0, 1]: non-anchor (layer, KV head)
 *                          pairs / (L·n_head_kv); must equal the value the
 *                          anchors give within 1e-9
 *   8. "n_texts", "q", "n_cal"  integers >= 0: calibration texts, rows per
 *                          text, tokens per text (0 = unknown / hand-made)
 *   9. "model_fingerprint" string, 0..64 hex digits (either case): the
 *                          BLAKE2b-256 of the calibrated GGUF; "" = unbound
 *  10. "anchors"           n_head_kv arrays of L integers: anchors[m][l] is
 *                          the anchor layer of (l, m); anchors[m][0] = 0 and
 *                          anchors[m][l] is l or anchors[m][l−1]
 *  11. "sim"               optional (absent or null): n_head_kv × L × L
 *                          numbers in [0, 1], sim[m][l][x] = 1 − mean JS
 * No other keys, no duplicate keys.  Numbers are written in the shortest
 * form that reads back to the same bits (float for sim, double for delta and
 * f).  The map's hash is BLAKE2b-256 (hex) of the file's exact bytes; it goes
 * into the policy's profile_id.
 *
 * A map is plain data once built: read-only use from several threads is safe.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h> /* for the block-map file */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* for strcasecmp */
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"
#include "common/sort.h"
#include "common/strbuf.h"
#include "engine/cache/cache.h"
#include "engine/fingerprint.h"

#define POD_FORMAT "kvsnap-pod-map"
#define POD_VERSION 1
#define POD_MAX_LAYERS 255             /* anchors are stored as u8 */
#define POD_MAX_HEADS 65536
#define POD_MAX_FILE (64 << 20)        /* bytes; a real map is a few hundred KiB */
#define POD_F_TOL 1e-9                 /* stored f against the anchors' f */
#define POD_TIE_EPS 1e-9               /* |N − T| ties, in (layer, head) pairs */

/* ------------------------------------------------------------------------ */
/* Divergence and grouping                                                   */

double
eng_pod_js(const float *p, const float *q, int64_t n)
{
	double s = 0.0;
	int64_t i;

	/* Σ P log2(P/M) + Q log2(Q/M), skipping zero terms (0·log 0 = 0); M > 0
	 * wherever a term is kept.  Double throughout: rows have thousands of
	 * tiny entries whose float logs would lose the sum.  The two halves of
	 * an entry are added before the running sum, so JS(P,Q) == JS(Q,P)
	 * bit for bit. */
	for (i = 0; i < n; i++) {
		double a = p[i], b = q[i], mid = 0.5 * (a + b), ta = 0.0, tb = 0.0;
		if (!(mid > 0.0))
			continue;
		if (a > 0.0)
			ta = a * log2(a / mid);
		if (b > 0.0)
			tb = b * log2(b / mid);
		s += ta + tb;
	}
	s *= 0.5;
	/* Rounding can leave the sum a hair outside the exact bounds. */
	return s < 0.0 ? 0.0 : s > 1.0 ? 1.0 : s;
}

void
eng_pod_group(const float *sim, int n_layer, double delta, uint8_t *anc)
{
	int a = 0, l, x;

	if (n_layer <= 0)
		return;
	anc[0] = 0;
	/* The current block is [a, l−1]; l joins iff it is similar to every
	 * member, not only the last one (spec §1.2 step 3). */
	for (l = 1; l < n_layer; l++) {
		for (x = a; x < l; x++)
			if (!((double)sim[(size_t)l * (size_t)n_layer + (size_t)x] >= delta))
				break;
		if (x < l)
			a = l;
		anc[l] = (uint8_t)a;
	}
}

/* Non-anchor layers of one head's anchors. */
static int64_t
pod_shared(const uint8_t *anc, int n_layer)
{
	int64_t n = 0;
	int l;
	for (l = 0; l < n_layer; l++)
		n += anc[l] != l;
	return n;
}

/* f of a whole map: non-anchor (l, m) pairs over L·n_head_kv. */
static double
pod_f(const uint8_t *anc, int n_layer, int n_head_kv)
{
	int64_t n = 0;
	int m;
	for (m = 0; m < n_head_kv; m++)
		n += pod_shared(anc + (size_t)m * (size_t)n_layer, n_layer);
	return (double)n / ((double)n_layer * (double)n_head_kv);
}

/* ------------------------------------------------------------------------ */
/* Building and checking a map                                               */

/* Dimensions a map may have; a reason in why otherwise. */
static int
pod_dims_ok(int n_layer, int n_head, int n_head_kv, char *why, size_t why_len)
{
	if (n_layer < 1 || n_layer > POD_MAX_LAYERS)
		return eng_fail(why, why_len, ENG_ERR_ARG, "n_layer %d is not in 1..%d", n_layer,
		    POD_MAX_LAYERS);
	if (n_head < 1 || n_head > POD_MAX_HEADS || n_head_kv < 1 || n_head_kv > n_head ||
	    n_head % n_head_kv)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "n_head %d, n_head_kv %d: both must be 1..%d and n_head_kv must divide n_head",
		    n_head, n_head_kv, POD_MAX_HEADS);
	return 0;
}

/* 1 if every one of the n values is in [0, 1] (NaN is not). */
static int
pod_sim_in_range(const float *sim, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!(sim[i] >= 0.0f && sim[i] <= 1.0f))
			return 0;
	return 1;
}

/* An empty map of the given shape (anc zeroed, no sim). */
static struct eng_pod_map *
pod_map_alloc(int n_layer, int n_head, int n_head_kv)
{
	struct eng_pod_map *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->n_layer = n_layer;
	pm->n_head = n_head;
	pm->n_head_kv = n_head_kv;
	pm->anc = calloc((size_t)n_head_kv * (size_t)n_layer, 1);
	if (!pm->anc) {
		free(pm);
		return NULL;
	}
	return pm;
}

/* Sort v[0..n) and drop repeats; returns the new length. */
static size_t
pod_sort_unique(double *v, size_t n)
{
	size_t i, k = 0;
	qsort(v, n, sizeof(*v), kv_cmp_double);
	for (i = 0; i < n; i++)
		if (k == 0 || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

/* Scratch of the target-saving search. */
struct pod_search {
	int L, KV;
	size_t P;         /* lower-triangle pairs per head, L(L−1)/2 */
	double *vals;     /* (KV, P) each head's distinct sim values, ascending */
	int64_t *cnt;     /* (KV, P) non-anchors of the head when δ = vals */
	size_t *k;        /* (KV) distinct values per head */
	size_t *at;       /* (KV) merge cursor */
	double *all;      /* (KV·P + 1) every head's values, then δ_all */
	uint8_t *anc;     /* (L) */
};

/* The δ whose map has f closest to target_f (ties: larger δ).
 *
 * Head m's grouping reads only sim_m[l][x] for x < l, so its map is constant
 * for δ in (v_{i−1}, v_i] between consecutive own values, and every layer is
 * its own block above the largest.  Trying each distinct value (the largest
 * δ of its interval) plus one δ above 1 therefore reaches every map, and a
 * head only needs grouping at its own values; a candidate's total is a merge
 * over the heads' step functions. */
static int
pod_pick_delta(const float *sim, int L, int KV, double target_f, double *delta)
{
	struct pod_search s;
	double best_d = INFINITY, T = target_f * (double)L * (double)KV;
	size_t n_all = 0, i, j;
	int m, l, x, rc = 0;

	memset(&s, 0, sizeof(s));
	s.L = L;
	s.KV = KV;
	s.P = (size_t)L * (size_t)(L - 1) / 2;
	s.vals = malloc(((size_t)KV * s.P + 1) * sizeof(double));
	s.cnt = malloc(((size_t)KV * s.P + 1) * sizeof(int64_t));
	s.k = calloc((size_t)KV, sizeof(size_t));
	s.at = calloc((size_t)KV, sizeof(size_t));
	s.all = malloc(((size_t)KV * s.P + 1) * sizeof(double));
	s.anc = malloc((size_t)L);
	if (!s.vals || !s.cnt || !s.k || !s.at || !s.all || !s.anc) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	for (m = 0; m < KV; m++) {
		const float *sm = sim + (size_t)m * (size_t)L * (size_t)L;
		double *v = s.vals + (size_t)m * s.P;
		size_t n = 0;
		for (l = 1; l < L; l++)
			for (x = 0; x < l; x++)
				v[n++] = sm[(size_t)l * (size_t)L + (size_t)x];
		s.k[m] = pod_sort_unique(v, n);
		for (i = 0; i < s.k[m]; i++) {
			eng_pod_group(sm, L, v[i], s.anc);
			s.cnt[(size_t)m * s.P + i] = pod_shared(s.anc, L);
			s.all[n_all++] = v[i];
		}
	}
	n_all = pod_sort_unique(s.all, n_all);
	s.all[n_all++] = nextafter(1.0, 2.0); /* > every sim: all singletons */

	/* Ascending δ, so "<= best + eps" lets a tie go to the larger δ. */
	for (j = 0; j < n_all; j++) {
		double d;
		int64_t N = 0;
		for (m = 0; m < KV; m++) {
			const double *v = s.vals + (size_t)m * s.P;
			while (s.at[m] < s.k[m] && v[s.at[m]] < s.all[j])
				s.at[m]++;
			if (s.at[m] < s.k[m])
				N += s.cnt[(size_t)m * s.P + s.at[m]];
		}
		d = fabs((double)N - T);
		if (d <= best_d + POD_TIE_EPS) {
			best_d = d < best_d ? d : best_d;
			*delta = s.all[j];
		}
	}
out:
	free(s.vals);
	free(s.cnt);
	free(s.k);
	free(s.at);
	free(s.all);
	free(s.anc);
	return rc;
}

int
eng_pod_map_from_sim(struct eng_pod_map **out, const float *sim, int n_layer, int n_head,
    int n_head_kv, double delta, double target_saving)
{
	struct eng_pod_map *pm;
	size_t n_sim;
	int rc, m;

	if (!out)
		return ENG_ERR_ARG;
	*out = NULL;
	if (!sim || pod_dims_ok(n_layer, n_head, n_head_kv, NULL, 0) || !isfinite(delta) ||
	    !isfinite(target_saving))
		return ENG_ERR_ARG;
	n_sim = (size_t)n_head_kv * (size_t)n_layer * (size_t)n_layer;
	/* The map must be one eng_pod_map_load would accept. */
	if (!pod_sim_in_range(sim, n_sim))
		return ENG_ERR_ARG;
	if (target_saving >= 0.0 &&
	    (rc = pod_pick_delta(sim, n_layer, n_head_kv, 2.0 * target_saving, &delta)))
		return rc;

	pm = pod_map_alloc(n_layer, n_head, n_head_kv);
	if (!pm)
		return ENG_ERR_NOMEM;
	pm->sim = malloc(n_sim * sizeof(float));
	if (!pm->sim) {
		eng_pod_map_free(pm);
		return ENG_ERR_NOMEM;
	}
	memcpy(pm->sim, sim, n_sim * sizeof(float));
	for (m = 0; m < n_head_kv; m++)
		eng_pod_group(sim + (size_t)m * (size_t)n_layer * (size_t)n_layer, n_layer, delta,
		    pm->anc + (size_t)m * (size_t)n_layer);
	pm->delta = delta;
	pm->f = pod_f(pm->anc, n_layer, n_head_kv);
	*out = pm;
	return 0;
}

int
eng_pod_map_check(const struct eng_pod_map *pm, char *why, size_t why_len)
{
	int m, l, rc;

	if (!pm || !pm->anc)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "block map has no anchors");
	if ((rc = pod_dims_ok(pm->n_layer, pm->n_head, pm->n_head_kv, why, why_len)))
		return ENG_ERR_FORMAT;
	for (m = 0; m < pm->n_head_kv; m++) {
		const uint8_t *a = pm->anc + (size_t)m * (size_t)pm->n_layer;
		if (a[0] != 0)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "block map: head %d, layer 0: anchor is %d, must be 0", m, a[0]);
		/* Blocks are contiguous runs: a layer starts a block or continues
		 * the previous layer's; anchors <= l follow by induction. */
		for (l = 1; l < pm->n_layer; l++)
			if (a[l] != l && a[l] != a[l - 1])
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "block map: head %d, layer %d: anchor %d is neither the layer "
				    "itself nor the previous layer's anchor %d", m, l, a[l], a[l - 1]);
	}
	return 0;
}

void
eng_pod_map_free(struct eng_pod_map *pm)
{
	if (!pm)
		return;
	free(pm->anc);
	free(pm->sim);
	free(pm);
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* The file is assembled in memory: its hash must be of the exact bytes. */
struct pod_buf {
	struct kv_strbuf s;
	int err; /* sticky: out of memory */
};

static int
pod_buf_put(const char *s, size_t n, void *arg)
{
	struct pod_buf *b = arg;
	if (b->err || kv_strbuf_add(&b->s, s, n)) {
		b->err = 1;
		return -1;
	}
	return 0;
}

static void
pod_buf_str(struct pod_buf *b, const char *s)
{
	pod_buf_put(s, strlen(s), b);
}

/* Dump one JSON value (decref'd here) at a real precision; 0 or -1. */
static int
pod_dump(struct pod_buf *b, json_t *v, int prec)
{
	int rc;
	if (!v) {
		b->err = 1;
		return -1;
	}
	rc = json_dump_callback(v, pod_buf_put, b,
	    JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(prec));
	json_decref(v);
	if (rc)
		b->err = 1;
	return rc;
}

/* 1 if the JSON text s reads back as x (as a float when is_float), bit for bit. */
static int
pod_reads_back(const char *s, double x, int is_float)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
	double y;
	int ok;
	if (!v)
		return 0;
	y = json_number_value(v);
	json_decref(v);
	if (is_float) {
		float a = (float)x, c = (float)y;
		ok = memcmp(&a, &c, sizeof(a)) == 0;
	} else {
		ok = memcmp(&x, &y, sizeof(x)) == 0;
	}
	return ok;
}

/* x as the shortest JSON number that reads back to the same bits; jansson
 * formats it, so the decimal point is '.' whatever the locale. */
static void
pod_put_real(struct pod_buf *b, double x, int is_float)
{
	struct pod_buf t = { { NULL, 0, 0 }, 0 };
	int prec, max = is_float ? 9 : 17; /* 9 / 17 digits always round-trip */

	for (prec = 1; prec <= max; prec++) {
		t.s.len = 0;
		if (pod_dump(&t, json_real(x), prec))
			break;
		if (prec == max || pod_reads_back(t.s.p, x, is_float)) {
			pod_buf_put(t.s.p, t.s.len, b);
			break;
		}
	}
	if (t.err)
		b->err = 1;
	free(t.s.p);
}

static void
pod_put_int(struct pod_buf *b, long long v)
{
	char s[32];
	snprintf(s, sizeof(s), "%lld", v);
	pod_buf_str(b, s);
}

/* One line per KV head for anchors, one per row for sim: diffable. */
static void
pod_serialize(struct pod_buf *b, const struct eng_pod_map *pm)
{
	int L = pm->n_layer, m, l, x;

	pod_buf_str(b, "{\n  \"format\": \"" POD_FORMAT "\",\n  \"version\": ");
	pod_put_int(b, POD_VERSION);
	pod_buf_str(b, ",\n  \"n_layer\": ");
	pod_put_int(b, L);
	pod_buf_str(b, ",\n  \"n_head\": ");
	pod_put_int(b, pm->n_head);
	pod_buf_str(b, ",\n  \"n_head_kv\": ");
	pod_put_int(b, pm->n_head_kv);
	pod_buf_str(b, ",\n  \"delta\": ");
	pod_put_real(b, pm->delta, 0);
	pod_buf_str(b, ",\n  \"f\": ");
	pod_put_real(b, pm->f, 0);
	pod_buf_str(b, ",\n  \"n_texts\": ");
	pod_put_int(b, pm->n_texts);
	pod_buf_str(b, ",\n  \"q\": ");
	pod_put_int(b, pm->q);
	pod_buf_str(b, ",\n  \"n_cal\": ");
	pod_put_int(b, pm->n_cal);
	pod_buf_str(b, ",\n  \"model_fingerprint\": \"");
	pod_buf_str(b, pm->model_fp); /* checked hex: nothing to escape */
	pod_buf_str(b, "\",\n  \"anchors\": [");
	for (m = 0; m < pm->n_head_kv; m++) {
		pod_buf_str(b, m ? ",\n    [" : "\n    [");
		for (l = 0; l < L; l++) {
			if (l)
				pod_buf_str(b, ", ");
			pod_put_int(b, pm->anc[(size_t)m * (size_t)L + (size_t)l]);
		}
		pod_buf_str(b, "]");
	}
	pod_buf_str(b, "\n  ],\n  \"sim\": ");
	if (!pm->sim) {
		pod_buf_str(b, "null\n}\n");
		return;
	}
	pod_buf_str(b, "[");
	for (m = 0; m < pm->n_head_kv; m++) {
		pod_buf_str(b, m ? ",\n    [" : "\n    [");
		for (l = 0; l < L; l++) {
			const float *row = pm->sim + ((size_t)m * (size_t)L + (size_t)l) * (size_t)L;
			pod_buf_str(b, l ? ",\n      [" : "\n      [");
			for (x = 0; x < L; x++) {
				if (x)
					pod_buf_str(b, ", ");
				pod_put_real(b, row[x], 1);
			}
			pod_buf_str(b, "]");
		}
		pod_buf_str(b, "\n    ]");
	}
	pod_buf_str(b, "\n  ]\n}\n");
}

/* What save refuses to write, beyond eng_pod_map_check. */
static int
pod_save_ok(const struct eng_pod_map *pm, char *why, size_t why_len)
{
	size_t n_sim = (size_t)pm->n_head_kv * (size_t)pm->n_layer * (size_t)pm->n_layer;
	int rc;

	if ((rc = eng_pod_map_check(pm, why, why_len)))
		return rc;
	if (!isfinite(pm->delta))
		return eng_fail(why, why_len, ENG_ERR_ARG, "block map: delta is not finite");
	if (pm->n_texts < 0 || pm->q < 0 || pm->n_cal < 0)
		return eng_fail(why, why_len, ENG_ERR_ARG, "block map: negative n_texts, q or n_cal");
	if (memchr(pm->model_fp, 0, sizeof(pm->model_fp)) == NULL ||
	    !eng_is_hex(pm->model_fp, strlen(pm->model_fp), 64))
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "block map: model fingerprint is not a hex string");
	if (pm->sim && !pod_sim_in_range(pm->sim, n_sim))
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "block map: a similarity is outside [0, 1]");
	return 0;
}

/* PATH.tmp, synced, renamed over PATH: readers see the old file or the new
 * one, never a torn one. */
static int
pod_write_file(const char *path, const char *p, size_t n, char *why, size_t why_len)
{
	char *tmp;
	size_t plen = strlen(path);
	int fd, err = 0;

	tmp = malloc(plen + 5);
	if (!tmp)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		eng_fail(why, why_len, ENG_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return ENG_ERR_IO;
	}
	if (kv_write_all(fd, p, n) || fsync(fd))
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		eng_fail(why, why_len, ENG_ERR_IO, "cannot write %s: %s", path, strerror(err));
	}
	free(tmp);
	return err ? ENG_ERR_IO : 0;
}

int
eng_pod_map_save(struct eng_pod_map *pm, const char *path, char *why, size_t why_len)
{
	struct pod_buf b = { { NULL, 0, 0 }, 0 };
	char hex[ENG_FINGERPRINT_HEX + 1];
	int rc;

	if (why && why_len)
		why[0] = 0;
	if (!pm || !path || !*path)
		return eng_fail(why, why_len, ENG_ERR_ARG, "no block map or path");
	if ((rc = pod_save_ok(pm, why, why_len)))
		return rc;
	/* f is derived from the anchors: refresh it so the file always agrees. */
	pm->f = pod_f(pm->anc, pm->n_layer, pm->n_head_kv);
	pod_serialize(&b, pm);
	if (b.err || eng_fingerprint(b.s.p, b.s.len, hex)) {
		free(b.s.p);
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	}
	rc = pod_write_file(path, b.s.p, b.s.len, why, why_len);
	free(b.s.p);
	if (!rc)
		memcpy(pm->hash, hex, sizeof(pm->hash));
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* The whole file (<= POD_MAX_FILE) into *out (NUL-terminated), *len bytes. */
static int
pod_read_file(const char *path, char **out, size_t *len, char *why, size_t why_len)
{
	struct stat st;
	char *p = NULL;
	size_t n = 0;
	int fd, err = 0;

	*out = NULL;
	/* O_NONBLOCK: a FIFO given as the map must not hang the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot open %s: %s", path,
		    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_IO, "%s is not a regular file", path);
	}
	if (st.st_size > POD_MAX_FILE) {
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: %lld bytes, more than a block map can be (%d)", path,
		    (long long)st.st_size, POD_MAX_FILE);
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, p + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? errno : EIO; /* shrank under us */
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	if (err) {
		free(p);
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot read %s: %s", path, strerror(err));
	}
	p[n] = 0;
	*out = p;
	*len = n;
	return 0;
}

/* obj[key] as an integer in lo..hi. */
static int
pod_get_int(json_t *obj, const char *path, const char *key, long long lo, long long hi,
    long long *out, char *why, size_t why_len)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"%s\" must be an integer in %lld..%lld", path, key, lo, hi);
	*out = json_integer_value(v);
	return 0;
}

/* obj[key] as a number in lo..hi. */
static int
pod_get_real(json_t *obj, const char *path, const char *key, double lo, double hi,
    double *out, char *why, size_t why_len)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
	if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi))
		return isinf(lo) ? eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"%s\" must be a number", path, key) : eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"%s\" must be a number in [%g, %g]", path, key, lo, hi);
	*out = json_number_value(v);
	return 0;
}

/* Every key is one we know: a misspelt optional key must not vanish. */
static int
pod_known_keys(json_t *root, const char *path, char *why, size_t why_len)
{
	static const char *const known[] = { "format", "version", "n_layer", "n_head",
		"n_head_kv", "delta", "f", "n_texts", "q", "n_cal", "model_fingerprint", "anchors",
		"sim" };
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(root, key, v) {
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: unknown key \"%.64s\"",
			    path, key);
	}
	return 0;
}

/* "format" and "version", before anything else is trusted. */
static int
pod_parse_header(json_t *root, const char *path, char *why, size_t why_len)
{
	json_t *fmt = json_object_get(root, "format"), *ver = json_object_get(root, "version");

	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), POD_FORMAT) != 0)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s is not a PoD block map (\"format\" must be \"%s\")", path, POD_FORMAT);
	if (!json_is_integer(ver))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: \"version\" must be an integer",
		    path);
	if (json_integer_value(ver) != POD_VERSION)
		return eng_fail(why, why_len, ENG_ERR_VERSION,
		    "%s: block-map version %lld, this build reads version %d", path,
		    (long long)json_integer_value(ver), POD_VERSION);
	return 0;
}

/* n_layer, n_head, n_head_kv, then an empty map of that shape. */
static int
pod_parse_dims(json_t *root, const char *path, struct eng_pod_map **out, char *why,
    size_t why_len)
{
	long long L, H, KV;
	int rc;

	if ((rc = pod_get_int(root, path, "n_layer", 1, POD_MAX_LAYERS, &L, why, why_len)) ||
	    (rc = pod_get_int(root, path, "n_head", 1, POD_MAX_HEADS, &H, why, why_len)) ||
	    (rc = pod_get_int(root, path, "n_head_kv", 1, POD_MAX_HEADS, &KV, why, why_len)))
		return rc;
	if (KV > H || H % KV)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: n_head_kv %lld does not divide n_head %lld", path, KV, H);
	*out = pod_map_alloc((int)L, (int)H, (int)KV);
	return *out ? 0 : eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
}

/* delta, f, the calibration counts and the fingerprint. */
static int
pod_parse_scalars(json_t *root, const char *path, struct eng_pod_map *pm, char *why,
    size_t why_len)
{
	json_t *fp = json_object_get(root, "model_fingerprint");
	long long nt, q, nc;
	int rc;

	if ((rc = pod_get_real(root, path, "delta", -HUGE_VAL, HUGE_VAL, &pm->delta, why,
	    why_len)) ||
	    (rc = pod_get_real(root, path, "f", 0.0, 1.0, &pm->f, why, why_len)) ||
	    (rc = pod_get_int(root, path, "n_texts", 0, INT32_MAX, &nt, why, why_len)) ||
	    (rc = pod_get_int(root, path, "q", 0, INT32_MAX, &q, why, why_len)) ||
	    (rc = pod_get_int(root, path, "n_cal", 0, INT32_MAX, &nc, why, why_len)))
		return rc;
	pm->n_texts = (int)nt;
	pm->q = (int)q;
	pm->n_cal = (int)nc;
	if (!json_is_string(fp) ||
	    !eng_is_hex(json_string_value(fp), json_string_length(fp), 64))
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"model_fingerprint\" must be a string of at most 64 hex digits", path);
	memcpy(pm->model_fp, json_string_value(fp), json_string_length(fp));
	pm->model_fp[json_string_length(fp)] = 0;
	return 0;
}

/* 1 if v is an array of exactly n elements. */
static int
pod_is_array(json_t *v, size_t n)
{
	return json_is_array(v) && json_array_size(v) == n;
}

/* "anchors": n_head_kv arrays of n_layer integers in 0..l. */
static int
pod_parse_anchors(json_t *root, const char *path, struct eng_pod_map *pm, char *why,
    size_t why_len)
{
	json_t *a = json_object_get(root, "anchors");
	int L = pm->n_layer, m, l;

	if (!pod_is_array(a, (size_t)pm->n_head_kv))
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"anchors\" must hold %d arrays (one per KV head)", path, pm->n_head_kv);
	for (m = 0; m < pm->n_head_kv; m++) {
		json_t *row = json_array_get(a, (size_t)m);
		if (!pod_is_array(row, (size_t)L))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "%s: anchors of head %d must hold %d layers", path, m, L);
		for (l = 0; l < L; l++) {
			json_t *v = json_array_get(row, (size_t)l);
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > l)
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "%s: anchor of head %d, layer %d must be an integer in 0..%d",
				    path, m, l, l);
			pm->anc[(size_t)m * (size_t)L + (size_t)l] = (uint8_t)json_integer_value(v);
		}
	}
	return 0;
}

/* "sim": absent or null, else n_head_kv × L × L numbers in [0, 1]. */
static int
pod_parse_sim(json_t *root, const char *path, struct eng_pod_map *pm, char *why,
    size_t why_len)
{
	json_t *s = json_object_get(root, "sim");
	size_t L = (size_t)pm->n_layer, m, l, x;

	if (!s || json_is_null(s))
		return 0;
	if (!pod_is_array(s, (size_t)pm->n_head_kv))
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"sim\" must be null or hold %d matrices", path, pm->n_head_kv);
	/* Shapes first: the allocation is sized by what the file really holds. */
	for (m = 0; m < (size_t)pm->n_head_kv; m++) {
		json_t *mat = json_array_get(s, m);
		if (!pod_is_array(mat, L))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "%s: sim of head %zu must be %zu × %zu", path, m, L, L);
		for (l = 0; l < L; l++)
			if (!pod_is_array(json_array_get(mat, l), L))
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "%s: sim of head %zu, row %zu must hold %zu values", path, m, l, L);
	}
	pm->sim = malloc((size_t)pm->n_head_kv * L * L * sizeof(float));
	if (!pm->sim)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	for (m = 0; m < (size_t)pm->n_head_kv; m++)
		for (l = 0; l < L; l++)
			for (x = 0; x < L; x++) {
				json_t *v = json_array_get(json_array_get(json_array_get(s, m), l), x);
				double d = json_number_value(v);
				if (!json_is_number(v) || !(d >= 0.0 && d <= 1.0))
					return eng_fail(why, why_len, ENG_ERR_FORMAT,
					    "%s: sim[%zu][%zu][%zu] must be a number in [0, 1]", path,
					    m, l, x);
				pm->sim[(m * L + l) * L + x] = (float)d;
			}
	return 0;
}

/* The whole object into a map, checked for internal consistency. */
static int
pod_parse(json_t *root, const char *path, struct eng_pod_map **out, char *why, size_t why_len)
{
	struct eng_pod_map *pm = NULL;
	double f;
	int rc;

	if (!json_is_object(root))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: not a JSON object", path);
	if ((rc = pod_parse_header(root, path, why, why_len)) ||
	    (rc = pod_known_keys(root, path, why, why_len)) ||
	    (rc = pod_parse_dims(root, path, &pm, why, why_len)) ||
	    (rc = pod_parse_scalars(root, path, pm, why, why_len)) ||
	    (rc = pod_parse_anchors(root, path, pm, why, why_len)) ||
	    (rc = pod_parse_sim(root, path, pm, why, why_len)))
		goto fail;
	if ((rc = eng_pod_map_check(pm, why, why_len))) {
		char inner[192];
		snprintf(inner, sizeof(inner), "%s", why ? why : "");
		eng_fail(why, why_len, rc, "%s: %s", path, inner);
		goto fail;
	}
	f = pod_f(pm->anc, pm->n_layer, pm->n_head_kv);
	if (fabs(f - pm->f) > POD_F_TOL) {
		rc = eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s: \"f\" is %.17g but the anchors give %.17g", path, pm->f, f);
		goto fail;
	}
	*out = pm;
	return 0;
fail:
	eng_pod_map_free(pm);
	return rc;
}

/* The map against the model it will run with. */
static int
pod_bind_model(const struct eng_pod_map *pm, const char *path, const struct eng_model *m,
    char *why, size_t why_len)
{
	const struct eng_hparams *hp = &m->hp;
	const char *fp = eng_model_fingerprint(m);

	if (pm->n_layer != hp->n_layer || pm->n_head != hp->n_head ||
	    pm->n_head_kv != hp->n_head_kv)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "%s: block map is for n_layer %d, n_head %d, n_head_kv %d; the model has %d, "
		    "%d, %d", path, pm->n_layer, pm->n_head, pm->n_head_kv, hp->n_layer, hp->n_head,
		    hp->n_head_kv);
	if (pm->model_fp[0] && fp && fp[0] && strcasecmp(pm->model_fp, fp) != 0)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "%s: block map was calibrated for model %.16s..., this is %.16s...", path,
		    pm->model_fp, fp);
	return 0;
}

int
eng_pod_map_load(struct eng_pod_map **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len)
{
	struct eng_pod_map *pm = NULL;
	json_error_t jerr;
	json_t *root;
	char *buf, hex[ENG_FINGERPRINT_HEX + 1];
	size_t len = 0;
	int rc;

	if (why && why_len)
		why[0] = 0;
	if (!out)
		return eng_fail(why, why_len, ENG_ERR_ARG, "no output map");
	*out = NULL;
	if (!path || !*path)
		return eng_fail(why, why_len, ENG_ERR_ARG, "no block-map path");
	if ((rc = pod_read_file(path, &buf, &len, why, why_len)))
		return rc;
	if ((rc = eng_fingerprint(buf, len, hex))) {
		free(buf);
		return eng_fail(why, why_len, rc, "cannot hash %s", path);
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!root)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: line %d: %s", path, jerr.line,
		    jerr.text);
	rc = pod_parse(root, path, &pm, why, why_len);
	json_decref(root);
	if (!rc && m)
		rc = pod_bind_model(pm, path, m, why, why_len);
	if (rc) {
		eng_pod_map_free(pm);
		return rc;
	}
	memcpy(pm->hash, hex, sizeof(pm->hash));
	*out = pm;
	return 0;
}
