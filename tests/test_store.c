/*
 * test_store.c: the LMDB snapshot store (storage/store.h) with real
 * snapshots: a tiny random model (tests/tiny_model.h) ingests random tokens
 * under snapkv, and the codec (snapshot/snapshot.h) encodes the pool.
 *
 * Covers put/get round trips, replacing, several profiles, resolve, names,
 * rm, ls/info, touch and lru order, prune (age, count, bytes, dry run),
 * stats, verify, read-only opens, and faults: flipped bytes in records and
 * metadata, records added or removed behind the store's back, a map that
 * cannot grow, a full disk (tmpfs, root only), a writer killed at random
 * moments, readers held open while the writer works, and a truncated
 * data.mdb (before the open and under an open store).
 *
 * Every test gets a fresh mkdtemp state directory, removed afterwards.
 * The kill loop runs 12 rounds by default (make check stays fast); the full
 * run is
 *
 *   KVSNAP_KILL_LOOPS=60 build/tests/test_store kill_loop
 *
 * (KVSNAP_KILL_SEED picks the delays; default 1).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <sodium.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/engine.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_io.h"
#include "storage/store.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

static struct eng_model *g_m;
static char g_model_path[64];
static char g_dir[256];    /* the current test's state directory */
static struct store *g_s;  /* the current test's store (closed by the wrapper) */
static char g_why[512];
static const uint8_t g_nodoc[SNAP_ID_BYTES] = { 0xee, 0xee, 0xee, 0xee }; /* never stored */

/* ------------------------------------------------------------------------ */
/* Fixtures: snapshots of real pools                                         */

struct fx {
	uint8_t prof[SNAP_ID_BYTES];
	uint8_t *hdr;
	size_t hdr_len;
	uint8_t *rec[TINY_N_LAYER];
	const uint8_t *crec[TINY_N_LAYER];
	size_t len[TINY_N_LAYER];
	uint64_t bytes; /* all records */
	struct store_snapshot snap;
};

static void
fx_free(struct fx *f)
{
	int l;
	free(f->hdr);
	for (l = 0; l < TINY_N_LAYER; l++)
		free(f->rec[l]);
	memset(f, 0, sizeof(*f));
}

/* Encode pool kv under profile text `profile`. */
static int
fx_encode(struct fx *f, const struct eng_kv *kv, int64_t n_tok, const char *profile)
{
	struct snap_header h;
	int l, rc;

	if ((rc = snap_header_from_kv(&h, kv, TINY_N_HEAD)) != 0)
		return rc;
	snprintf(h.model_fp, sizeof(h.model_fp), "%s", eng_model_fingerprint(g_m));
	snprintf(h.profile, sizeof(h.profile), "%s", profile);
	store_doc_id(profile, strlen(profile), h.profile_id); /* BLAKE2b-256 of the text */
	memcpy(f->prof, h.profile_id, SNAP_ID_BYTES);
	h.n_tokens = (uint64_t)n_tok;
	h.quant = SNAP_FP16;
	f->bytes = 0;
	for (l = 0; l < TINY_N_LAYER && rc == 0; l++) {
		rc = snap_layer_encode(kv, l, &h, 3, &f->rec[l], &f->len[l]);
		f->crec[l] = f->rec[l];
		f->bytes += f->len[l];
	}
	if (rc == 0)
		rc = snap_header_encode(&h, 3, &f->hdr, &f->hdr_len);
	f->bytes += f->hdr_len;
	snap_header_free(&h);
	f->snap.header = f->hdr;
	f->snap.header_len = f->hdr_len;
	f->snap.layer = f->crec;
	f->snap.layer_len = f->len;
	f->snap.n_layer = TINY_N_LAYER;
	memcpy(f->snap.profile_id, f->prof, SNAP_ID_BYTES);
	return rc;
}

/* Ingest n_tok random tokens (seeded) under snapkv with `budget`, then
 * encode.  0 or an error. */
static int
fx_build(struct fx *f, uint64_t seed, int64_t budget, int64_t n_tok, const char *profile)
{
	struct eng_policy *p = NULL;
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	int32_t *ids = malloc((size_t)n_tok * sizeof(*ids));
	int64_t chunk = 32;
	int rc;

	memset(f, 0, sizeof(*f));
	if (ids)
		tiny_ids_fill(ids, n_tok, seed, 11, TINY_N_VOCAB);
	rc = ids ? eng_policy_create(&p, "snapkv", "", budget, g_why, sizeof(g_why)) : -1;
	if (rc == 0)
		rc = eng_ctx_init(&c, g_m, 1, eng_policy_max_chunk(p, chunk));
	if (rc == 0)
		rc = eng_kv_init(&kv, g_m, eng_policy_rows_per_head(p, n_tok, chunk, 0));
	if (rc == 0)
		rc = eng_ingest(c, kv, p, ids, n_tok, chunk, NULL);
	eng_ctx_free(c); /* before any fork: no worker threads left behind */
	if (rc == 0)
		rc = fx_encode(f, kv, n_tok, profile);
	eng_kv_free(kv);
	eng_policy_free(p);
	free(ids);
	if (rc)
		fx_free(f);
	return rc;
}

/* Fixture sets built once: small (budget 40-64), medium (128), big (512). */
enum { FX_N = 8 };
static struct fx g_fx[FX_N];

static int
fx_setup(void)
{
	static const struct {
		uint64_t seed;
		int64_t budget, n_tok;
		const char *profile;
	} spec[FX_N] = {
		{ 1, 40, 200, "test-profile-A" },  { 2, 40, 200, "test-profile-B" },
		{ 3, 48, 240, "test-profile-A" },  { 4, 64, 300, "test-profile-C" },
		{ 5, 128, 400, "test-profile-A" }, { 6, 128, 400, "test-profile-B" },
		{ 7, 512, 1200, "test-profile-A" }, { 8, 512, 1200, "test-profile-B" },
	};
	int i, rc;
	for (i = 0; i < FX_N; i++)
		if ((rc = fx_build(&g_fx[i], spec[i].seed, spec[i].budget, spec[i].n_tok,
		         spec[i].profile)) != 0) {
			printf("# fixture %d: %d %s\n", i, rc, g_why);
			return rc;
		}
	return 0;
}

#define FX_SMALL_A (&g_fx[0])
#define FX_SMALL_B (&g_fx[1])
#define FX_SMALL_A2 (&g_fx[2]) /* profile A again, other records */
#define FX_SMALL_C (&g_fx[3])
#define FX_MED_A (&g_fx[4])
#define FX_MED_B (&g_fx[5])
#define FX_BIG_A (&g_fx[6])
#define FX_BIG_B (&g_fx[7])

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void
doc_make(struct store_doc *d, const char *text, const char *name)
{
	memset(d, 0, sizeof(*d));
	store_doc_id(text, strlen(text), d->doc_id);
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	snprintf(d->source, sizeof(d->source), "/src/%s", text);
	d->bytes = strlen(text);
	d->tokens = 100 + strlen(text);
}

static int
st_reopen(const struct store_opts *o)
{
	store_close(g_s);
	g_s = NULL;
	return store_open(&g_s, g_dir, o, g_why, sizeof(g_why));
}

static int
put(const struct store_doc *d, const struct fx *f)
{
	return store_put(g_s, d, &f->snap, g_why, sizeof(g_why));
}

/* Every record of (doc, fx's profile) reads back equal to fx's. */
static int
same_records(struct store *s, const uint8_t *doc, const struct fx *f)
{
	struct store_reader *r;
	const uint8_t *buf;
	size_t len;
	int l, ok = 1;

	if (store_read_begin(s, doc, f->prof, &r, g_why, sizeof(g_why)) != 0)
		return 0;
	if (store_read_layer(r, SNAP_HEADER_LAYER, &buf, &len, g_why, sizeof(g_why)) != 0 ||
	    len != f->hdr_len || memcmp(buf, f->hdr, len) != 0)
		ok = 0;
	for (l = 0; ok && l < TINY_N_LAYER; l++)
		if (store_read_layer(r, (unsigned)l, &buf, &len, g_why, sizeof(g_why)) != 0 ||
		    len != f->len[l] || memcmp(buf, f->rec[l], len) != 0)
			ok = 0;
	store_read_end(r);
	return ok;
}

static int
rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return rmdir(dir);
}

/* Run t in a fresh state directory with the store open at default
 * options; close and remove everything whatever t returns. */
static enum tap_result
with_store(enum tap_result (*t)(void), const struct store_opts *o)
{
	enum tap_result r;

	if (th_tmpdir(g_dir, sizeof(g_dir), "store")) {
		printf("# mkdtemp: %s\n", strerror(errno));
		return TAP_FAIL;
	}
	if (store_open(&g_s, g_dir, o, g_why, sizeof(g_why)) != 0) {
		printf("# store_open: %s\n", g_why);
		rm_tree(g_dir);
		return TAP_FAIL;
	}
	r = t();
	store_close(g_s);
	g_s = NULL;
	if (rm_tree(g_dir) != 0) {
		printf("# cannot remove %s: %s\n", g_dir, strerror(errno));
		r = TAP_FAIL;
	}
	return r;
}

#define WITH_STORE(name, ...)                                                  \
	static enum tap_result name(void)                                      \
	{                                                                      \
		static const struct store_opts o = { __VA_ARGS__ };            \
		return with_store(name##_in, &o);                              \
	}

/* Collectors for the callbacks. */
struct ids {
	int n;
	uint8_t doc[256][SNAP_ID_BYTES], prof[256][SNAP_ID_BYTES];
	char why[256][200];
	uint64_t bytes[256];
	struct store_doc d[64];
};

static int
ids_prune(void *arg, const uint8_t *doc, const uint8_t *prof, uint64_t bytes, int64_t t)
{
	struct ids *x = arg;
	(void)t;
	if (x->n < 256) {
		memcpy(x->doc[x->n], doc, SNAP_ID_BYTES);
		memcpy(x->prof[x->n], prof, SNAP_ID_BYTES);
		x->bytes[x->n] = bytes;
	}
	x->n++;
	return 0;
}

static int
ids_verify(void *arg, const uint8_t *doc, const uint8_t *prof, const char *why)
{
	struct ids *x = arg;
	if (x->n < 256) {
		memcpy(x->doc[x->n], doc, SNAP_ID_BYTES);
		memcpy(x->prof[x->n], prof, SNAP_ID_BYTES);
		snprintf(x->why[x->n], sizeof(x->why[0]), "%s", why ? why : "");
	}
	x->n++; /* counts them all, keeps the first 256 */
	return 0;
}

static int
ids_ls(void *arg, const struct store_doc *d)
{
	struct ids *x = arg;
	if (x->n < 64)
		x->d[x->n] = *d;
	x->n++;
	return 0;
}

/* Index of (doc, prof) in a collection, -1 when absent. */
static int
ids_find(const struct ids *x, const uint8_t *doc, const uint8_t *prof)
{
	int i;
	for (i = 0; i < x->n && i < 256; i++)
		if (!memcmp(x->doc[i], doc, SNAP_ID_BYTES) &&
		    (!prof || !memcmp(x->prof[i], prof, SNAP_ID_BYTES)))
			return i;
	return -1;
}

/* verify the whole store: 0 when sound; *reports the number of reports. */
static int
verify_all(struct ids *x)
{
	memset(x, 0, sizeof(*x));
	return snap_verify(g_s, NULL, ids_verify, x, g_why, sizeof(g_why));
}

/* ------------------------------------------------------------------------ */
/* Basic operations                                                          */

static enum tap_result
t_roundtrip_in(void)
{
	struct store_doc d, got;
	struct store_reader *r;
	struct snap_header h;
	const uint8_t *buf;
	size_t len;
	int l;

	doc_make(&d, "round trip", "rt");
	TAP_CHECK(put(&d, FX_MED_A) == 0, "put: %s", g_why);
	TAP_CHECK(same_records(g_s, d.doc_id, FX_MED_A), "records differ: %s", g_why);
	TAP_CHECK(store_info(g_s, d.doc_id, &got, g_why, sizeof(g_why)) == 0, "info: %s", g_why);
	TAP_CHECK(!memcmp(got.doc_id, d.doc_id, SNAP_ID_BYTES) && !strcmp(got.name, "rt") &&
	        !strcmp(got.source, d.source) && got.bytes == d.bytes && got.tokens == d.tokens &&
	        got.n_profiles == 1 && got.stored_bytes == FX_MED_A->bytes && got.created_us > 0 &&
	        got.last_used_us >= got.created_us,
	    "info fields (%s, %d profiles, %llu bytes)", got.name, got.n_profiles,
	    (unsigned long long)got.stored_bytes);
	/* The stored records decode and check like fresh ones. */
	TAP_CHECK(store_read_begin(g_s, d.doc_id, FX_MED_A->prof, &r, g_why, sizeof(g_why)) == 0,
	    "read_begin: %s", g_why);
	TAP_CHECK(store_read_layer(r, SNAP_HEADER_LAYER, &buf, &len, g_why, sizeof(g_why)) == 0,
	    "header: %s", g_why);
	TAP_CHECK(snap_header_decode(buf, len, &h, g_why, sizeof(g_why)) == 0, "decode: %s", g_why);
	for (l = 0; l < TINY_N_LAYER; l++) {
		int rc = store_read_layer(r, (unsigned)l, &buf, &len, g_why, sizeof(g_why));
		if (rc == 0)
			rc = snap_layer_check(buf, len, &h, l, g_why, sizeof(g_why));
		if (rc) {
			snap_header_free(&h);
			store_read_end(r);
			TAP_CHECK(0, "layer %d: %s", l, g_why);
		}
	}
	snap_header_free(&h);
	TAP_CHECK(store_read_layer(r, TINY_N_LAYER, &buf, &len, g_why, sizeof(g_why)) ==
	        STORE_ERR_CORRUPT,
	    "a layer past the last reads as missing");
	store_read_end(r);
	TAP_CHECK(store_read_begin(g_s, d.doc_id, FX_MED_B->prof, &r, g_why, sizeof(g_why)) ==
	        STORE_ERR_NOT_FOUND && !r,
	    "other profile: NOT_FOUND");
	tap_diag("not found reads: %s", g_why);
	/* Persistent across close and open. */
	TAP_CHECK(st_reopen(NULL) == 0, "reopen: %s", g_why);
	TAP_CHECK(same_records(g_s, d.doc_id, FX_MED_A), "after reopen: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_roundtrip, 0)

static enum tap_result
t_replace_in(void)
{
	struct store_doc d, got;
	struct store_stats st;
	struct ids x;

	doc_make(&d, "replace me", NULL);
	TAP_CHECK(put(&d, FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(!memcmp(FX_SMALL_A->prof, FX_SMALL_A2->prof, SNAP_ID_BYTES), "same profile");
	TAP_CHECK(put(&d, FX_SMALL_A2) == 0, "put again: %s", g_why);
	TAP_CHECK(same_records(g_s, d.doc_id, FX_SMALL_A2), "new records: %s", g_why);
	TAP_CHECK(store_info(g_s, d.doc_id, &got, g_why, sizeof(g_why)) == 0, "info: %s", g_why);
	TAP_CHECK(got.n_profiles == 1 && got.stored_bytes == FX_SMALL_A2->bytes,
	    "one profile of %llu bytes, got %d / %llu", (unsigned long long)FX_SMALL_A2->bytes,
	    got.n_profiles, (unsigned long long)got.stored_bytes);
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0, "stats: %s", g_why);
	TAP_CHECK(st.n_docs == 1 && st.n_snapshots == 1 && st.stored_bytes == FX_SMALL_A2->bytes,
	    "stats %llu docs %llu snapshots", (unsigned long long)st.n_docs,
	    (unsigned long long)st.n_snapshots);
	TAP_CHECK(verify_all(&x) == 0 && x.n == 1 && !x.why[0][0], "verify: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_replace, 0)

struct prof_seen {
	int n, headers;
	uint64_t bytes;
	int64_t last[8];
	uint8_t id[8][SNAP_ID_BYTES];
};

static int
prof_cb(void *arg, const uint8_t *prof, uint64_t bytes, const struct snap_header *h,
    const char *why, int64_t last)
{
	struct prof_seen *p = arg;
	(void)why;
	if (p->n < 8) {
		memcpy(p->id[p->n], prof, SNAP_ID_BYTES);
		p->last[p->n] = last;
	}
	p->n++;
	p->bytes += bytes;
	p->headers += h && !memcmp(h->profile_id, prof, SNAP_ID_BYTES) && h->n_layer == TINY_N_LAYER;
	return 0;
}

static enum tap_result
t_two_profiles_in(void)
{
	struct store_doc d, got;
	struct prof_seen ps = { 0 };
	struct ids x;

	doc_make(&d, "two profiles", "two");
	TAP_CHECK(put(&d, FX_SMALL_A) == 0 && put(&d, FX_SMALL_B) == 0, "puts: %s", g_why);
	TAP_CHECK(same_records(g_s, d.doc_id, FX_SMALL_A) && same_records(g_s, d.doc_id, FX_SMALL_B),
	    "both read back");
	TAP_CHECK(store_info(g_s, d.doc_id, &got, g_why, sizeof(g_why)) == 0, "info: %s", g_why);
	TAP_CHECK(got.n_profiles == 2 && got.stored_bytes == FX_SMALL_A->bytes + FX_SMALL_B->bytes,
	    "2 profiles, got %d", got.n_profiles);
	TAP_CHECK(snap_profiles(g_s, d.doc_id, prof_cb, &ps, g_why, sizeof(g_why)) == 0,
	    "profiles: %s", g_why);
	TAP_CHECK(ps.n == 2 && ps.headers == 2 && ps.bytes == got.stored_bytes,
	    "profiles: %d seen, %d headers", ps.n, ps.headers);
	TAP_CHECK(verify_all(&x) == 0 && x.n == 2, "verify: %s (%d reports)", g_why, x.n);
	return TAP_PASS;
}
WITH_STORE(t_two_profiles, 0)

static int
resolves_to(const char *ref, const uint8_t *doc)
{
	uint8_t id[SNAP_ID_BYTES];
	return store_resolve(g_s, ref, id, g_why, sizeof(g_why)) == 0 &&
	    !memcmp(id, doc, SNAP_ID_BYTES);
}

/* Two texts whose ids share their first 4 hex digits (birthday search). */
static int
twins(char a[32], char b[32])
{
	static uint16_t seen[65536];
	static char text[65536][24];
	static int have;
	uint8_t id[SNAP_ID_BYTES];
	int i;
	if (!have) {
		memset(seen, 0, sizeof(seen));
		have = 1;
	}
	for (i = 1; i < 60000; i++) {
		char t[24];
		unsigned p;
		snprintf(t, sizeof(t), "twin-%d", i);
		store_doc_id(t, strlen(t), id);
		p = (unsigned)id[0] << 8 | id[1];
		if (seen[p]) {
			snprintf(a, 32, "%s", text[p]);
			snprintf(b, 32, "%s", t);
			return 0;
		}
		seen[p] = 1;
		snprintf(text[p], sizeof(text[p]), "%s", t);
	}
	return -1;
}

static enum tap_result
t_resolve_in(void)
{
	struct store_doc a, b, c;
	char ta[32], tb[32], hex[65], ref[70];
	uint8_t id[SNAP_ID_BYTES];
	size_t n, i;

	TAP_CHECK(twins(ta, tb) == 0, "no twin ids found");
	doc_make(&a, ta, NULL);
	doc_make(&b, tb, NULL);
	doc_make(&c, "named one", "my-doc");
	TAP_CHECK(put(&a, FX_SMALL_A) == 0 && put(&b, FX_SMALL_A) == 0 && put(&c, FX_SMALL_B) == 0,
	    "puts: %s", g_why);
	/* Full hex, upper case too. */
	store_hex(a.doc_id, SNAP_ID_BYTES, hex);
	TAP_CHECK(store_resolve(g_s, hex, id, g_why, sizeof(g_why)) == 0 &&
	        !memcmp(id, a.doc_id, SNAP_ID_BYTES),
	    "full hex: %s", g_why);
	for (i = 0; hex[i]; i++)
		ref[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	ref[i] = 0;
	TAP_CHECK(store_resolve(g_s, ref, id, g_why, sizeof(g_why)) == 0, "upper hex: %s", g_why);
	/* Shared 4-digit prefix: ambiguous; the first differing digit fixes it. */
	memcpy(ref, hex, 4);
	ref[4] = 0;
	TAP_CHECK(store_resolve(g_s, ref, id, g_why, sizeof(g_why)) == STORE_ERR_AMBIGUOUS,
	    "prefix %s should be ambiguous", ref);
	tap_diag("ambiguous: %s", g_why);
	{
		char hb[65];
		store_hex(b.doc_id, SNAP_ID_BYTES, hb);
		for (n = 0; hex[n] == hb[n]; n++)
			;
		memcpy(ref, hb, n + 1); /* odd or even length */
		ref[n + 1] = 0;
		TAP_CHECK(store_resolve(g_s, ref, id, g_why, sizeof(g_why)) == 0 &&
		        !memcmp(id, b.doc_id, SNAP_ID_BYTES),
		    "prefix %s: %s", ref, g_why);
	}
	store_hex(c.doc_id, SNAP_ID_BYTES, hex);
	memcpy(ref, hex, 7);
	ref[7] = 0;
	TAP_CHECK(resolves_to(ref, c.doc_id), "7-digit prefix %s: %s", ref, g_why);
	/* Names and misses. */
	TAP_CHECK(store_resolve(g_s, "my-doc", id, g_why, sizeof(g_why)) == 0 &&
	        !memcmp(id, c.doc_id, SNAP_ID_BYTES),
	    "name: %s", g_why);
	TAP_CHECK(store_resolve(g_s, "no-such-doc", id, g_why, sizeof(g_why)) ==
	        STORE_ERR_NOT_FOUND, "unknown name");
	memset(hex, '0', 64);
	hex[63] = '1';
	hex[64] = 0;
	TAP_CHECK(store_resolve(g_s, hex, id, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "unknown full id");
	TAP_CHECK(store_resolve(g_s, "abc", id, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "3 digits are no prefix");
	TAP_CHECK(store_resolve(g_s, "", id, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND, "empty");
	return TAP_PASS;
}
WITH_STORE(t_resolve, 0)

static enum tap_result
t_names_in(void)
{
	struct store_doc a, b, got;
	struct ids x;

	doc_make(&a, "doc a", "alpha");
	doc_make(&b, "doc b", "alpha");
	TAP_CHECK(put(&a, FX_SMALL_A) == 0, "put a: %s", g_why);
	TAP_CHECK(put(&b, FX_SMALL_A) == STORE_ERR_EXISTS, "put b under a's name");
	tap_diag("taken name: %s", g_why);
	TAP_CHECK(store_info(g_s, b.doc_id, &got, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "b was not written");
	TAP_CHECK(store_rename(g_s, a.doc_id, "beta", g_why, sizeof(g_why)) == 0, "rename: %s", g_why);
	TAP_CHECK(resolves_to("beta", a.doc_id), "beta -> a");
	TAP_CHECK(!resolves_to("alpha", a.doc_id), "alpha released");
	TAP_CHECK(put(&b, FX_SMALL_A) == 0, "put b as alpha: %s", g_why);
	TAP_CHECK(store_rename(g_s, a.doc_id, "alpha", g_why, sizeof(g_why)) == STORE_ERR_EXISTS,
	    "rename onto a taken name");
	TAP_CHECK(resolves_to("beta", a.doc_id) && resolves_to("alpha", b.doc_id),
	    "nothing changed");
	TAP_CHECK(store_rename(g_s, a.doc_id, "beta", g_why, sizeof(g_why)) == 0, "same name");
	TAP_CHECK(store_rename(g_s, a.doc_id, "abcd", g_why, sizeof(g_why)) == STORE_ERR_ARG,
	    "hex-looking name refused");
	TAP_CHECK(store_rename(g_s, a.doc_id, "a\tb", g_why, sizeof(g_why)) == STORE_ERR_ARG,
	    "control character refused");
	/* A put with a new name renames; one without keeps the name. */
	doc_make(&a, "doc a", "gamma");
	TAP_CHECK(put(&a, FX_SMALL_B) == 0, "put a as gamma: %s", g_why);
	TAP_CHECK(resolves_to("gamma", a.doc_id) && !resolves_to("beta", a.doc_id), "renamed by put");
	doc_make(&a, "doc a", NULL);
	TAP_CHECK(put(&a, FX_SMALL_C) == 0, "put a unnamed: %s", g_why);
	TAP_CHECK(resolves_to("gamma", a.doc_id), "name kept");
	TAP_CHECK(store_rename(g_s, a.doc_id, "", g_why, sizeof(g_why)) == 0, "unname: %s", g_why);
	TAP_CHECK(!resolves_to("gamma", a.doc_id), "gamma gone");
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && !got.name[0] &&
	        got.n_profiles == 3,
	    "unnamed, 3 profiles");
	TAP_CHECK(store_rename(g_s, g_nodoc, "x",
	              g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "rename of a missing document");
	TAP_CHECK(verify_all(&x) == 0, "verify: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_names, 0)

static enum tap_result
t_rm_in(void)
{
	struct store_doc a, b, got;
	struct store_reader *r;
	struct store_stats st;
	struct ids x;

	doc_make(&a, "doc a", "named-a");
	doc_make(&b, "doc b", NULL);
	TAP_CHECK(put(&a, FX_SMALL_A) == 0 && put(&a, FX_SMALL_B) == 0 && put(&b, FX_SMALL_C) == 0,
	    "puts: %s", g_why);
	TAP_CHECK(store_rm(g_s, a.doc_id, g_why, sizeof(g_why)) == 0, "rm: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "a gone");
	TAP_CHECK(!resolves_to("named-a", a.doc_id), "name gone");
	TAP_CHECK(store_read_begin(g_s, a.doc_id, FX_SMALL_A->prof, &r, g_why, sizeof(g_why)) ==
	        STORE_ERR_NOT_FOUND,
	    "records gone");
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_docs == 1 &&
	        st.n_snapshots == 1 && st.stored_bytes == FX_SMALL_C->bytes,
	    "stats after rm");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 1, "verify: %s", g_why);
	TAP_CHECK(store_rm(g_s, a.doc_id, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND, "rm twice");
	TAP_CHECK(same_records(g_s, b.doc_id, FX_SMALL_C), "b untouched");
	return TAP_PASS;
}
WITH_STORE(t_rm, 0)

static int
ls_stop(void *arg, const struct store_doc *d)
{
	(void)d;
	return ++*(int *)arg >= 2;
}

static enum tap_result
t_ls_info_in(void)
{
	struct store_doc d[3];
	struct ids x;
	int i, j, n = 0;

	doc_make(&d[0], "first doc", "one");
	doc_make(&d[1], "second doc", NULL);
	doc_make(&d[2], "third doc", "three");
	for (i = 0; i < 3; i++)
		TAP_CHECK(put(&d[i], i == 1 ? FX_SMALL_B : FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(put(&d[2], FX_SMALL_C) == 0, "put: %s", g_why);
	memset(&x, 0, sizeof(x));
	TAP_CHECK(store_ls(g_s, ids_ls, &x, g_why, sizeof(g_why)) == 0 && x.n == 3, "ls: %d", x.n);
	for (i = 1; i < 3; i++)
		TAP_CHECK(memcmp(x.d[i - 1].doc_id, x.d[i].doc_id, SNAP_ID_BYTES) < 0, "doc_id order");
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3 && memcmp(x.d[j].doc_id, d[i].doc_id, SNAP_ID_BYTES); j++)
			;
		TAP_CHECK(j < 3, "doc %d listed", i);
		TAP_CHECK(!strcmp(x.d[j].name, d[i].name) && !strcmp(x.d[j].source, d[i].source) &&
		        x.d[j].bytes == d[i].bytes && x.d[j].tokens == d[i].tokens &&
		        x.d[j].n_profiles == (i == 2 ? 2 : 1),
		    "doc %d fields", i);
	}
	TAP_CHECK(store_ls(g_s, ls_stop, &n, g_why, sizeof(g_why)) == 0 && n == 2, "ls stops");
	return TAP_PASS;
}
WITH_STORE(t_ls_info, 0)

/* ------------------------------------------------------------------------ */
/* LRU, prune, stats                                                         */

static enum tap_result
t_touch_in(void)
{
	struct store_doc d[3];
	struct store_prune p = { 0, 0, 1, 1, NULL, NULL };
	struct prof_seen before = { 0 }, after = { 0 };
	struct ids x = { 0 };
	int i;

	for (i = 0; i < 3; i++) {
		char t[32];
		snprintf(t, sizeof(t), "touch %d", i);
		doc_make(&d[i], t, NULL);
		TAP_CHECK(put(&d[i], FX_SMALL_A) == 0, "put: %s", g_why);
	}
	TAP_CHECK(snap_profiles(g_s, d[0].doc_id, prof_cb, &before, g_why, sizeof(g_why)) == 0, "p");
	TAP_CHECK(store_touch(g_s, d[0].doc_id, FX_SMALL_A->prof, g_why, sizeof(g_why)) == 0,
	    "touch: %s", g_why);
	TAP_CHECK(snap_profiles(g_s, d[0].doc_id, prof_cb, &after, g_why, sizeof(g_why)) == 0, "p");
	TAP_CHECK(after.last[0] > before.last[0], "last use moved");
	/* Keep 1: the two least recently used are now d1, d2 (in that order). */
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, NULL, NULL, g_why, sizeof(g_why)) == 0,
	    "prune: %s", g_why);
	TAP_CHECK(x.n == 2 && !memcmp(x.doc[0], d[1].doc_id, SNAP_ID_BYTES) &&
	        !memcmp(x.doc[1], d[2].doc_id, SNAP_ID_BYTES),
	    "victims d1, d2 (got %d)", x.n);
	TAP_CHECK(store_touch(g_s, d[0].doc_id, FX_SMALL_B->prof, g_why, sizeof(g_why)) ==
	        STORE_ERR_NOT_FOUND,
	    "touch of a missing profile");
	return TAP_PASS;
}
WITH_STORE(t_touch, 0)

/* Five snapshots in lru order: docs 0..3, doc 1 with two profiles. */
struct lru5 {
	struct store_doc d[4];
	const uint8_t *doc[5], *prof[5];
	uint64_t bytes[5], total;
};

static int
lru5_fill(struct lru5 *l)
{
	static const int which[5] = { 0, 1, 2, 1, 3 };
	const struct fx *fx[5] = { FX_SMALL_A, FX_SMALL_A, FX_SMALL_C, FX_SMALL_B, FX_MED_A };
	int i;
	for (i = 0; i < 4; i++) {
		char t[32];
		snprintf(t, sizeof(t), "lru %d", i);
		doc_make(&l->d[i], t, i == 2 ? "lru-two" : NULL);
	}
	l->total = 0;
	for (i = 0; i < 5; i++) {
		if (put(&l->d[which[i]], fx[i]) != 0)
			return -1;
		l->doc[i] = l->d[which[i]].doc_id;
		l->prof[i] = fx[i]->prof;
		l->bytes[i] = fx[i]->bytes;
		l->total += fx[i]->bytes;
	}
	return 0;
}

/* The prune's victims are exactly lru entries 0..n-1, in order. */
static int
victims_are(const struct ids *x, const struct lru5 *l, int n)
{
	int i;
	if (x->n != n)
		return 0;
	for (i = 0; i < n; i++)
		if (memcmp(x->doc[i], l->doc[i], SNAP_ID_BYTES) ||
		    memcmp(x->prof[i], l->prof[i], SNAP_ID_BYTES) || x->bytes[i] != l->bytes[i])
			return 0;
	return 1;
}

static enum tap_result
t_prune_count_in(void)
{
	struct lru5 l;
	struct store_prune p = { 0, 0, 3, 1, NULL, NULL };
	struct store_stats st;
	struct store_doc got;
	struct ids x = { 0 };
	int64_t n = 0;
	uint64_t b = 0;

	TAP_CHECK(lru5_fill(&l) == 0, "fill: %s", g_why);
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, &b, g_why, sizeof(g_why)) == 0, "%s", g_why);
	TAP_CHECK(victims_are(&x, &l, 2) && n == 2 && b == l.bytes[0] + l.bytes[1],
	    "dry run: 2 oldest (got %d)", x.n);
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_snapshots == 5,
	    "dry run deleted nothing");
	p.dry_run = 0;
	memset(&x, 0, sizeof(x));
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, &b, g_why, sizeof(g_why)) == 0, "%s", g_why);
	TAP_CHECK(victims_are(&x, &l, 2) && n == 2, "pruned the 2 oldest");
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_snapshots == 3 &&
	        st.n_docs == 3 && st.stored_bytes == l.total - b,
	    "3 snapshots of 3 docs left");
	/* doc 0 lost its only snapshot, doc 1 one of two. */
	TAP_CHECK(store_info(g_s, l.d[0].doc_id, &got, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "doc 0 removed");
	TAP_CHECK(store_info(g_s, l.d[1].doc_id, &got, g_why, sizeof(g_why)) == 0 &&
	        got.n_profiles == 1 && got.stored_bytes == l.bytes[3],
	    "doc 1 keeps one profile");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 3, "verify: %s", g_why);
	/* keep 0 empties the store, names included. */
	p.keep = 0;
	TAP_CHECK(store_prune(g_s, &p, NULL, NULL, &n, NULL, g_why, sizeof(g_why)) == 0 && n == 3,
	    "keep 0");
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_docs == 0 &&
	        st.n_snapshots == 0 && st.stored_bytes == 0,
	    "empty");
	TAP_CHECK(!resolves_to("lru-two", l.d[2].doc_id), "name gone with its document");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 0, "verify empty: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_prune_count, 0)

static enum tap_result
t_prune_bytes_in(void)
{
	struct lru5 l;
	struct store_prune p = { 0, 0, -1, 1, NULL, NULL };
	struct ids x = { 0 };
	int64_t n;

	TAP_CHECK(lru5_fill(&l) == 0, "fill: %s", g_why);
	p.max_bytes = l.total;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        n == 0 && x.n == 0,
	    "at the limit: nothing");
	p.max_bytes = l.total - l.bytes[0];
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        victims_are(&x, &l, 1),
	    "one over: the oldest (got %d)", x.n);
	memset(&x, 0, sizeof(x));
	p.max_bytes = l.total - l.bytes[0] - 1;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        victims_are(&x, &l, 2),
	    "a byte more: the two oldest (got %d)", x.n);
	memset(&x, 0, sizeof(x));
	p.dry_run = 0;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        victims_are(&x, &l, 2),
	    "real run: the two oldest");
	TAP_CHECK(same_records(g_s, l.doc[2], FX_SMALL_C) && same_records(g_s, l.doc[4], FX_MED_A),
	    "the rest intact");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 3, "verify: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_prune_bytes, 0)

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Two snapshots, a pause, three more: older_than set to the middle of the
 * pause drops exactly the first two. */
static enum tap_result
t_prune_age_in(void)
{
	struct lru5 l;
	struct store_prune p = { 0, 0, -1, 1, NULL, NULL };
	struct ids x = { 0 };
	int64_t n, t1, t2;

	/* Fill, then use them again in lru order with a pause after two. */
	TAP_CHECK(lru5_fill(&l) == 0, "fill: %s", g_why);
	TAP_CHECK(store_touch(g_s, l.doc[0], l.prof[0], g_why, sizeof(g_why)) == 0 &&
	        store_touch(g_s, l.doc[1], l.prof[1], g_why, sizeof(g_why)) == 0,
	    "touch: %s", g_why);
	t1 = kv_wall_us();
	sleep_ms(300);
	t2 = kv_wall_us();
	TAP_CHECK(store_touch(g_s, l.doc[2], l.prof[2], g_why, sizeof(g_why)) == 0 &&
	        store_touch(g_s, l.doc[3], l.prof[3], g_why, sizeof(g_why)) == 0 &&
	        store_touch(g_s, l.doc[4], l.prof[4], g_why, sizeof(g_why)) == 0,
	    "touch: %s", g_why);
	p.older_than_us = kv_wall_us() - (t1 + t2) / 2;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        victims_are(&x, &l, 2),
	    "dry run: the two used before the pause (got %d)", x.n);
	memset(&x, 0, sizeof(x));
	p.dry_run = 0;
	p.older_than_us = kv_wall_us() - (t1 + t2) / 2;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 &&
	        victims_are(&x, &l, 2) && n == 2,
	    "real run (got %d)", x.n);
	memset(&x, 0, sizeof(x));
	p.older_than_us = 3600LL * 1000000;
	TAP_CHECK(store_prune(g_s, &p, ids_prune, &x, &n, NULL, g_why, sizeof(g_why)) == 0 && n == 0,
	    "an hour: nothing");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 3, "verify: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_prune_age, 0)

static enum tap_result
t_stats_in(void)
{
	struct store_stats st;
	struct lru5 l;

	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_docs == 0 &&
	        st.n_snapshots == 0 && st.stored_bytes == 0 && st.map_size >= ((uint64_t)4 << 20),
	    "empty store");
	TAP_CHECK(lru5_fill(&l) == 0, "fill: %s", g_why);
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0, "stats: %s", g_why);
	TAP_CHECK(st.n_docs == 4 && st.n_snapshots == 5 && st.stored_bytes == l.total,
	    "%llu docs, %llu snapshots, %llu bytes", (unsigned long long)st.n_docs,
	    (unsigned long long)st.n_snapshots, (unsigned long long)st.stored_bytes);
	TAP_CHECK(st.map_used >= l.total && st.map_used <= st.map_size, "map used %llu of %llu",
	    (unsigned long long)st.map_used, (unsigned long long)st.map_size);
	return TAP_PASS;
}
WITH_STORE(t_stats, .map_size = 4 << 20)

static enum tap_result
t_verify_clean_in(void)
{
	struct lru5 l;
	struct ids x = { 0 };
	int i;

	TAP_CHECK(lru5_fill(&l) == 0, "fill: %s", g_why);
	TAP_CHECK(verify_all(&x) == 0 && x.n == 5, "verify: %s (%d reports)", g_why, x.n);
	for (i = 0; i < 5; i++)
		TAP_CHECK(ids_find(&x, l.doc[i], l.prof[i]) >= 0 && !x.why[i][0], "snapshot %d sound", i);
	memset(&x, 0, sizeof(x));
	TAP_CHECK(snap_verify(g_s, l.d[1].doc_id, ids_verify, &x, g_why, sizeof(g_why)) == 0 &&
	        x.n == 2,
	    "one document: its 2 snapshots");
	TAP_CHECK(snap_verify(g_s, g_nodoc, NULL, NULL,
	              g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "missing document");
	return TAP_PASS;
}
WITH_STORE(t_verify_clean, 0)

static enum tap_result
t_read_only_in(void)
{
	struct store_opts ro = { .read_only = 1 };
	struct store_doc a, b;
	struct store *s2;
	struct ids x = { 0 };
	char missing[300];

	doc_make(&a, "ro doc", "ro");
	TAP_CHECK(put(&a, FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(st_reopen(&ro) == 0, "read-only open: %s", g_why);
	TAP_CHECK(store_ls(g_s, ids_ls, &x, g_why, sizeof(g_why)) == 0 && x.n == 1, "ls");
	TAP_CHECK(same_records(g_s, a.doc_id, FX_SMALL_A), "read");
	doc_make(&b, "ro doc 2", NULL);
	TAP_CHECK(put(&b, FX_SMALL_A) == STORE_ERR_ARG, "put refused");
	TAP_CHECK(store_rm(g_s, a.doc_id, g_why, sizeof(g_why)) == STORE_ERR_ARG, "rm refused");
	TAP_CHECK(verify_all(&x) == 0, "verify read-only: %s", g_why);
	/* The backend named in the address: the same store. */
	snprintf(missing, sizeof(missing), "lmdb:%s", g_dir);
	TAP_CHECK(store_open(&s2, missing, &ro, g_why, sizeof(g_why)) == 0, "lmdb: open: %s", g_why);
	memset(&x, 0, sizeof(x));
	TAP_CHECK(store_ls(s2, ids_ls, &x, g_why, sizeof(g_why)) == 0 && x.n == 1, "lmdb: ls");
	TAP_CHECK(same_records(s2, a.doc_id, FX_SMALL_A), "lmdb: read");
	store_close(s2);
	snprintf(missing, sizeof(missing), "%s/none", g_dir);
	TAP_CHECK(store_open(&s2, missing, &ro, g_why, sizeof(g_why)) == STORE_ERR_IO && !s2,
	    "read-only open of nothing");
	tap_diag("missing store: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_read_only, 0)

/* ------------------------------------------------------------------------ */
/* Faults                                                                    */

/* Flip one byte in every copy of pat in dir/data.mdb (LMDB may keep stale
 * copies of a page in free space; flipping those too does no harm).
 * Returns the number of copies. */
static int
flip_in_file(const char *pat, size_t n, size_t at)
{
	char path[600];
	struct stat st;
	uint8_t *buf;
	size_t i;
	int fd, hits = 0;

	snprintf(path, sizeof(path), "%s/data.mdb", g_dir);
	if ((fd = open(path, O_RDWR)) < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		close(fd);
		return -1;
	}
	for (i = 0; i + n <= (size_t)st.st_size; i++)
		if (!memcmp(buf + i, pat, n)) {
			uint8_t b = buf[i + at] ^ 0x5a;
			if (pwrite(fd, &b, 1, (off_t)(i + at)) != 1)
				hits = -1000;
			hits++;
		}
	free(buf);
	close(fd);
	return hits;
}

static enum tap_result
t_fault_flip_in(void)
{
	struct store_doc a, b, c, m, got;
	struct ids x;
	const struct fx *fb = FX_MED_B;
	char pat[1300];
	int i;

	doc_make(&a, "flip a", NULL);
	doc_make(&b, "flip b", NULL);
	doc_make(&c, "flip c", NULL);
	doc_make(&m, "flip meta", "meta-flip-name");
	TAP_CHECK(put(&a, FX_MED_A) == 0 && put(&b, fb) == 0 && put(&c, FX_SMALL_C) == 0 &&
	        put(&c, FX_SMALL_A) == 0 && put(&m, FX_SMALL_B) == 0,
	    "puts: %s", g_why);
	store_close(g_s);
	g_s = NULL;
	/* (1) a byte in the middle of b's layer-1 record */
	i = flip_in_file((const char *)fb->rec[1] + fb->len[1] / 2, 24, 7);
	TAP_CHECK(i >= 1, "record bytes found %d times", i);
	/* (2) a byte of m's metadata: its name and source sit side by side there */
	snprintf(pat, sizeof(pat), "%s%s", m.name, m.source);
	i = flip_in_file(pat, strlen(pat), 3);
	TAP_CHECK(i >= 1, "metadata bytes found %d times", i);
	TAP_CHECK(st_reopen(NULL) == 0, "reopen: %s", g_why);

	TAP_CHECK(verify_all(&x) == STORE_ERR_CORRUPT, "verify finds it: %s", g_why);
	tap_diag("verify: %s", g_why);
	for (i = 0; i < x.n; i++)
		tap_diag("  report %d: %s", i, x.why[i][0] ? x.why[i] : "sound");
	i = ids_find(&x, b.doc_id, fb->prof);
	TAP_CHECK(i >= 0 && x.why[i][0] && strstr(x.why[i], "layer 1"), "b corrupt, naming layer 1");
	i = ids_find(&x, a.doc_id, NULL);
	TAP_CHECK(i >= 0 && !x.why[i][0], "a sound");
	TAP_CHECK(ids_find(&x, c.doc_id, FX_SMALL_C->prof) >= 0 &&
	        !x.why[ids_find(&x, c.doc_id, FX_SMALL_C->prof)][0] &&
	        !x.why[ids_find(&x, c.doc_id, FX_SMALL_A->prof)][0],
	    "c sound");
	i = ids_find(&x, m.doc_id, NULL);
	TAP_CHECK(i >= 0 && strstr(x.why[i], "metadata"), "m's metadata reported");
	/* The other calls report it too, and never crash. */
	TAP_CHECK(store_info(g_s, m.doc_id, &got, g_why, sizeof(g_why)) == STORE_ERR_CORRUPT,
	    "info corrupt");
	tap_diag("info: %s", g_why);
	memset(&x, 0, sizeof(x));
	TAP_CHECK(store_ls(g_s, ids_ls, &x, g_why, sizeof(g_why)) == STORE_ERR_CORRUPT && x.n == 3,
	    "ls lists the 3 others and reports the bad one (%d)", x.n);
	/* rm clears a document whose metadata is lost, name included. */
	TAP_CHECK(store_rm(g_s, m.doc_id, g_why, sizeof(g_why)) == 0, "rm: %s", g_why);
	TAP_CHECK(store_rm(g_s, b.doc_id, g_why, sizeof(g_why)) == 0, "rm: %s", g_why);
	TAP_CHECK(!resolves_to("meta-flip-name", m.doc_id), "name gone");
	TAP_CHECK(verify_all(&x) == 0 && x.n == 3, "clean after rm: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_fault_flip, 0)

/* Test-only surgery with the LMDB API directly, the store closed. */
static int
raw_edit(int (*fn)(MDB_txn *t, MDB_dbi *dbi, void *arg), void *arg)
{
	static const char *const names[4] = { "docs", "snaps", "names", "lru" };
	MDB_env *env = NULL;
	MDB_txn *t = NULL;
	MDB_dbi dbi[4];
	int rc, rc2, i;

	store_close(g_s); /* one environment per file and process */
	g_s = NULL;
	rc = mdb_env_create(&env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(env, 4);
	if (rc == 0)
		rc = mdb_env_open(env, g_dir, 0, 0600);
	if (rc == 0)
		rc = mdb_txn_begin(env, NULL, 0, &t);
	for (i = 0; rc == 0 && i < 4; i++)
		rc = mdb_dbi_open(t, names[i], 0, &dbi[i]);
	if (rc == 0)
		rc = fn(t, dbi, arg);
	if (rc == 0)
		rc = mdb_txn_commit(t);
	else if (t)
		mdb_txn_abort(t);
	if (env)
		mdb_env_close(env);
	if (rc)
		snprintf(g_why, sizeof(g_why), "raw edit: %s", mdb_strerror(rc));
	rc2 = st_reopen(NULL);
	return rc ? rc : rc2;
}

struct surgery {
	const uint8_t *extra_doc, *extra_prof; /* add layer 7 */
	const uint8_t *miss_doc, *miss_prof;   /* delete layer 1 */
	const uint8_t *lru_doc;                /* lru entry of a doc that does not exist */
	const uint8_t *orphan_doc;             /* records of a doc that does not exist */
	const struct fx *fx;
};

static void
snap_key(uint8_t k[66], const uint8_t *doc, const uint8_t *prof, unsigned layer)
{
	memcpy(k, doc, 32);
	memcpy(k + 32, prof, 32);
	k[64] = (uint8_t)(layer >> 8);
	k[65] = (uint8_t)layer;
}

static int
surgery_fn(MDB_txn *t, MDB_dbi *dbi, void *arg)
{
	struct surgery *s = arg;
	uint8_t key[72];
	MDB_val k = { 66, key }, v = { s->fx->len[0], s->fx->rec[0] }, e = { 0, NULL };
	int rc;

	snap_key(key, s->extra_doc, s->extra_prof, 7);
	if ((rc = mdb_put(t, dbi[1], &k, &v, 0)) != 0)
		return rc;
	snap_key(key, s->miss_doc, s->miss_prof, 1);
	if ((rc = mdb_del(t, dbi[1], &k, NULL)) != 0)
		return rc;
	snap_key(key, s->orphan_doc, s->fx->prof, SNAP_HEADER_LAYER);
	v.mv_data = s->fx->hdr;
	v.mv_size = s->fx->hdr_len;
	if ((rc = mdb_put(t, dbi[1], &k, &v, 0)) != 0)
		return rc;
	memset(key, 0, 8);
	key[7] = 1;
	memcpy(key + 8, s->lru_doc, 32);
	memcpy(key + 40, s->fx->prof, 32);
	k.mv_size = 72;
	return mdb_put(t, dbi[3], &k, &e, 0);
}

static enum tap_result
t_fault_keys_in(void)
{
	struct store_doc a, b, c, ghost, orphan;
	struct surgery s;
	struct ids x;
	int i;

	doc_make(&a, "keys a", NULL);
	doc_make(&b, "keys b", NULL);
	doc_make(&c, "keys c", NULL);
	doc_make(&ghost, "keys ghost", NULL);
	doc_make(&orphan, "keys orphan", NULL);
	TAP_CHECK(put(&a, FX_SMALL_A) == 0 && put(&b, FX_SMALL_A) == 0 && put(&c, FX_SMALL_B) == 0,
	    "puts: %s", g_why);
	s.extra_doc = a.doc_id;
	s.extra_prof = FX_SMALL_A->prof;
	s.miss_doc = b.doc_id;
	s.miss_prof = FX_SMALL_A->prof;
	s.lru_doc = ghost.doc_id;
	s.orphan_doc = orphan.doc_id;
	s.fx = FX_SMALL_A;
	TAP_CHECK(raw_edit(surgery_fn, &s) == 0, "surgery: %s", g_why);
	TAP_CHECK(verify_all(&x) == STORE_ERR_CORRUPT, "verify: %s", g_why);
	for (i = 0; i < x.n; i++)
		tap_diag("  report %d: %s", i, x.why[i][0] ? x.why[i] : "sound");
	i = ids_find(&x, a.doc_id, FX_SMALL_A->prof);
	TAP_CHECK(i >= 0 && strstr(x.why[i], "layer 7"), "extra layer reported");
	i = ids_find(&x, b.doc_id, FX_SMALL_A->prof);
	TAP_CHECK(i >= 0 && strstr(x.why[i], "layer 1 record missing"), "missing layer reported");
	i = ids_find(&x, c.doc_id, NULL);
	TAP_CHECK(i >= 0 && !x.why[i][0], "c sound");
	TAP_CHECK(ids_find(&x, orphan.doc_id, NULL) >= 0, "orphan records reported");
	TAP_CHECK(ids_find(&x, ghost.doc_id, NULL) >= 0, "dangling lru reported");
	/* prune refuses to work from an lru it cannot trust, with a reason. */
	{
		struct store_prune p = { 0, 0, 0, 1, NULL, NULL };
		int rc = store_prune(g_s, &p, NULL, NULL, NULL, NULL, g_why, sizeof(g_why));
		tap_diag("prune on a broken lru: %d %s", rc, g_why);
		TAP_CHECK(rc == STORE_ERR_CORRUPT, "prune refuses");
	}
	/* rm of everything named cleans up, orphans included. */
	TAP_CHECK(store_rm(g_s, orphan.doc_id, g_why, sizeof(g_why)) == 0, "rm orphan: %s", g_why);
	TAP_CHECK(store_rm(g_s, ghost.doc_id, g_why, sizeof(g_why)) == 0, "rm ghost: %s", g_why);
	TAP_CHECK(store_rm(g_s, a.doc_id, g_why, sizeof(g_why)) == 0 &&
	        store_rm(g_s, b.doc_id, g_why, sizeof(g_why)) == 0,
	    "rm: %s", g_why);
	TAP_CHECK(verify_all(&x) == 0 && x.n == 1, "clean: %s (%d)", g_why, x.n);
	return TAP_PASS;
}
WITH_STORE(t_fault_keys, 0)

/* Random damage to a metadata value: every variant is refused. */
struct meta_fuzz {
	const uint8_t *doc;
	uint8_t *val;
	size_t len;
};

static int
meta_get_fn(MDB_txn *t, MDB_dbi *dbi, void *arg)
{
	struct meta_fuzz *f = arg;
	MDB_val k = { 32, (void *)(uintptr_t)f->doc }, v;
	int rc = mdb_get(t, dbi[0], &k, &v);
	if (rc == 0 && (f->val = malloc(v.mv_size)) != NULL) {
		memcpy(f->val, v.mv_data, v.mv_size);
		f->len = v.mv_size;
	}
	return rc ? rc : f->val ? MDB_NOTFOUND /* abort: read only */ : ENOMEM;
}

static int
meta_set_fn(MDB_txn *t, MDB_dbi *dbi, void *arg)
{
	struct meta_fuzz *f = arg;
	MDB_val k = { 32, (void *)(uintptr_t)f->doc }, v = { f->len, f->val };
	return mdb_put(t, dbi[0], &k, &v, 0);
}

static enum tap_result
t_fault_meta_in(void)
{
	struct store_doc a, got;
	struct meta_fuzz f = { 0 };
	struct tiny_rng r = { 99 };
	uint8_t *orig;
	size_t orig_len;
	struct ids x;
	int i;

	doc_make(&a, "meta fuzz", "fuzzed");
	TAP_CHECK(put(&a, FX_SMALL_A) == 0 && put(&a, FX_SMALL_B) == 0, "put: %s", g_why);
	f.doc = a.doc_id;
	raw_edit(meta_get_fn, &f); /* aborts on purpose */
	TAP_CHECK(f.val && f.len > 48, "metadata read");
	orig = f.val;
	orig_len = f.len;
	f.val = malloc(orig_len + 64);
	for (i = 0; i < 40; i++) {
		int kind = i % 4;
		memcpy(f.val, orig, orig_len);
		f.len = orig_len;
		if (kind == 0)
			f.val[tiny_rng_next(&r) % orig_len] ^= (uint8_t)(1 + tiny_rng_next(&r) % 255);
		else if (kind == 1)
			f.len = tiny_rng_next(&r) % orig_len;
		else if (kind == 2)
			f.len = orig_len + 1 + tiny_rng_next(&r) % 63;
		else
			f.val[4 + tiny_rng_next(&r) % 12] ^= 0x80; /* version, lengths, count */
		if (raw_edit(meta_set_fn, &f) != 0) {
			free(orig);
			free(f.val);
			TAP_CHECK(0, "raw write: %s", g_why);
		}
		if (store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) != STORE_ERR_CORRUPT ||
		    verify_all(&x) != STORE_ERR_CORRUPT) {
			free(orig);
			free(f.val);
			TAP_CHECK(0, "variant %d (kind %d) not refused", i, kind);
		}
		if (i < 4)
			tap_diag("kind %d: %s", kind, g_why);
	}
	memcpy(f.val, orig, orig_len);
	f.len = orig_len;
	free(orig);
	i = raw_edit(meta_set_fn, &f);
	free(f.val);
	TAP_CHECK(i == 0 && verify_all(&x) == 0 && x.n == 2, "restored: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_fault_meta, 0)

/* Owners and the shared flag (issue 15, defect 7): kept with the
 * metadata's checksum, merged by every put (owners added, shared never
 * turned off), and metadata written before them (version 1) still reads,
 * as owned by no one and not shared.  The format (issue 16, version 3):
 * kept, replaced by a put that names one, and metadata before it
 * (versions 1 and 2) reads as "text". */
static enum tap_result
t_owners_in(void)
{
	struct store_doc a, b, got;
	struct meta_fuzz f = { 0 };
	struct ids x;
	size_t len, fl;
	uint8_t *v2 = NULL;
	int rc;

	doc_make(&a, "owned text", "owned");
	snprintf(a.format, sizeof(a.format), "pdf (3 pages)");
	TAP_CHECK(store_doc_add_owner(&a, 5) == 0 && store_doc_add_owner(&a, 3) == 0 &&
	    store_doc_add_owner(&a, 5) == 0 && a.n_owners == 2 && a.owners[0] == 3,
	    "owner set kept ascending, once each");
	TAP_CHECK(put(&a, FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && got.n_owners == 2 &&
	    got.owners[0] == 3 && got.owners[1] == 5 && !got.shared, "owners 3 and 5, private");
	TAP_CHECK(!strcmp(got.format, "pdf (3 pages)"), "format kept: '%s'", got.format);
	b = a;
	b.n_owners = 0;
	b.format[0] = '\0'; /* names none: the stored one stays */
	TAP_CHECK(store_doc_add_owner(&b, 7) == 0, "owner 7");
	b.shared = 1;
	TAP_CHECK(put(&b, FX_SMALL_B) == 0, "second put: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 &&
	    !strcmp(got.format, "pdf (3 pages)"), "a put without a format keeps it: '%s'",
	    got.format);
	b.n_owners = 0;
	b.shared = 0;
	snprintf(b.format, sizeof(b.format), "html");
	TAP_CHECK(put(&b, FX_SMALL_A) == 0, "third put: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && got.n_owners == 3 &&
	    got.owners[2] == 7 && got.shared && store_doc_owned(&got, 3) && !store_doc_owned(&got, 4),
	    "owners merged (3, 5, 7), shared stays on");
	TAP_CHECK(!strcmp(got.format, "html"), "a put with a format replaces it: '%s'", got.format);
	TAP_CHECK(verify_all(&x) == 0, "verify: %s", g_why);

	/* Version 3's tail: owners (3 x 4), format_len, "html", the checksum. */
	f.doc = a.doc_id;
	raw_edit(meta_get_fn, &f); /* aborts on purpose */
	fl = strlen("html");
	TAP_CHECK(f.val && f.len > 48 + 16 + 12 + 1 + fl, "metadata read");
	TAP_CHECK(f.val[4] == 3 && f.val[f.len - 16 - 1 - fl] == fl &&
	    !memcmp(f.val + f.len - 16 - fl, "html", fl), "written as version 3 with its format");

	/* As version 2: the same without format_len and format. */
	len = f.len - 16 - 1 - fl;
	TAP_CHECK((v2 = malloc(len + 16)) != NULL, "oom");
	memcpy(v2, f.val, len);
	v2[4] = 2;
	crypto_generichash(v2 + len, 16, v2, len, NULL, 0);
	free(f.val);
	f.val = v2;
	f.len = len + 16;
	rc = raw_edit(meta_set_fn, &f);
	TAP_CHECK(rc == 0, "raw write: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && got.n_owners == 3 &&
	    got.shared && !strcmp(got.format, "text") && !strcmp(got.name, "owned"),
	    "version 2 reads: its owners, format \"text\" ('%s', %s)", got.format, g_why);

	/* Rewrite it as version 1: no flags, no owner table, its own checksum. */
	len = f.len - 16 - 3 * 4;
	f.val[4] = 1;
	f.val[5] = 0;
	memset(f.val + 12, 0, 4);
	crypto_generichash(f.val + len, 16, f.val, len, NULL, 0);
	f.len = len + 16;
	rc = raw_edit(meta_set_fn, &f);
	free(f.val);
	TAP_CHECK(rc == 0, "raw write: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && got.n_owners == 0 &&
	    !got.shared && got.n_profiles == 2 && !strcmp(got.name, "owned") &&
	    !strcmp(got.format, "text"),
	    "version 1 reads: no owners, not shared, format text (%s)", g_why);
	TAP_CHECK(verify_all(&x) == 0, "version 1 verifies: %s", g_why);
	b.n_owners = 0;
	b.format[0] = '\0';
	TAP_CHECK(store_doc_add_owner(&b, 9) == 0 && put(&b, FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(store_info(g_s, a.doc_id, &got, g_why, sizeof(g_why)) == 0 && got.n_owners == 1 &&
	    got.owners[0] == 9 && !strcmp(got.format, "text"),
	    "written again as version 3 with its owner, the format read stays");
	return TAP_PASS;
}
WITH_STORE(t_owners, 0)

/* Put distinct documents until the store says full; count the successes. */
static int
fill(int max, int *n_ok, int *last_rc, struct store_doc *failed)
{
	int i, rc = 0;
	for (i = 0; i < max; i++) {
		struct store_doc d;
		char t[32];
		snprintf(t, sizeof(t), "fill %d", i);
		doc_make(&d, t, NULL);
		rc = put(&d, i % 2 ? FX_BIG_B : FX_BIG_A);
		if (rc) {
			*failed = d;
			break;
		}
	}
	*n_ok = i;
	*last_rc = rc;
	return rc;
}

/* Every snapshot fill() stored is there and sound; the failed one is not. */
static enum tap_result
check_filled(int n_ok, const struct store_doc *failed)
{
	struct store_doc got;
	struct ids x;
	int i;

	TAP_CHECK(verify_all(&x) == 0 && x.n == n_ok, "verify: %s (%d of %d)", g_why, x.n, n_ok);
	TAP_CHECK(store_info(g_s, failed->doc_id, &got, g_why, sizeof(g_why)) == STORE_ERR_NOT_FOUND,
	    "the failed put left nothing");
	for (i = 0; i < n_ok; i++) {
		struct store_doc d;
		char t[32];
		snprintf(t, sizeof(t), "fill %d", i);
		doc_make(&d, t, NULL);
		TAP_CHECK(same_records(g_s, d.doc_id, i % 2 ? FX_BIG_B : FX_BIG_A), "doc %d", i);
	}
	return TAP_PASS;
}

static enum tap_result
t_small_map_in(void)
{
	struct store_stats st;
	struct store_doc failed;
	struct store_opts big = { .map_size = 8 << 20, .max_map = 16 << 20 };
	int n_ok, rc;

	TAP_CHECK(fill(200, &n_ok, &rc, &failed) == STORE_ERR_FULL, "fill ended with %d: %s", rc,
	    g_why);
	tap_diag("map full after %d snapshots of ~%llu bytes: %s", n_ok,
	    (unsigned long long)FX_BIG_A->bytes, g_why);
	TAP_CHECK(n_ok > 1, "some fit");
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.map_size == (2u << 20) &&
	        st.n_snapshots == (uint64_t)n_ok,
	    "map grew to its limit (%llu)", (unsigned long long)st.map_size);
	if (check_filled(n_ok, &failed) != TAP_PASS)
		return TAP_FAIL;
	TAP_CHECK(st_reopen(NULL) == 0, "reopen: %s", g_why);
	if (check_filled(n_ok, &failed) != TAP_PASS)
		return TAP_FAIL;
	/* A larger limit: the failed put now goes in. */
	TAP_CHECK(st_reopen(&big) == 0, "reopen: %s", g_why);
	TAP_CHECK(put(&failed, n_ok % 2 ? FX_BIG_B : FX_BIG_A) == 0, "put after growth: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_small_map, .map_size = 1 << 20, .max_map = 2 << 20)

/* A 2 MiB tmpfs; a filler file takes some of it so we can free room. */
static enum tap_result
t_disk_full(void)
{
	struct store_opts o = { .map_size = 64 << 20 };
	struct store_doc failed;
	char filler[600];
	enum tap_result r = TAP_FAIL;
	int n_ok = 0, rc = 0, fd;

	if (geteuid() != 0) {
		printf("# SKIP: needs root to mount a tmpfs\n");
		return TAP_SKIP;
	}
	if (th_tmpdir(g_dir, sizeof(g_dir), "full"))
		return TAP_FAIL;
	if (mount("tmpfs", g_dir, "tmpfs", 0, "size=2m") != 0) {
		printf("# SKIP: mount tmpfs: %s\n", strerror(errno));
		rmdir(g_dir);
		return TAP_SKIP;
	}
	snprintf(filler, sizeof(filler), "%s/filler", g_dir);
	fd = open(filler, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0) {
		static char zero[256 << 10];
		if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero))
			printf("# filler short\n");
		close(fd);
	}
	if (store_open(&g_s, g_dir, &o, g_why, sizeof(g_why)) != 0) {
		printf("# open: %s\n", g_why);
		goto out;
	}
	if (fill(200, &n_ok, &rc, &failed) != STORE_ERR_FULL) {
		printf("# fill ended with %d after %d: %s\n", rc, n_ok, g_why);
		goto out;
	}
	tap_diag("disk full after %d snapshots: %s", n_ok, g_why);
	if (check_filled(n_ok, &failed) != TAP_PASS || st_reopen(&o) != 0 ||
	    check_filled(n_ok, &failed) != TAP_PASS)
		goto out;
	/* Room again: the store keeps working. */
	unlink(filler);
	if ((rc = put(&failed, n_ok % 2 ? FX_BIG_B : FX_BIG_A)) != 0) {
		printf("# put after freeing room: %d %s\n", rc, g_why);
		goto out;
	}
	if (check_filled(n_ok + 1, &(struct store_doc){ .doc_id = { 1 } }) != TAP_PASS)
		goto out;
	r = TAP_PASS;
out:
	store_close(g_s);
	g_s = NULL;
	if (umount(g_dir) != 0)
		printf("# umount %s: %s\n", g_dir, strerror(errno));
	if (rmdir(g_dir) != 0) {
		printf("# rmdir %s: %s\n", g_dir, strerror(errno));
		r = TAP_FAIL;
	}
	return r;
}

/* ------------------------------------------------------------------------ */
/* Kill loop                                                                 */

/* The child: put snapshots for ever (a new document each time, and every
 * third time a second profile of the previous one), acknowledging each
 * committed (doc, profile) on fd. */
static void __attribute__((noreturn))
kill_child(int loop, int fd)
{
	struct store *s;
	struct store_doc d;
	char why[256], t[48];
	int i;

	if (store_open(&s, g_dir, NULL, why, sizeof(why)) != 0)
		_exit(3);
	for (i = 0; i < 100000; i++) {
		const struct fx *f = i % 3 == 2 ? FX_MED_B : FX_MED_A;
		uint8_t ack[64];
		snprintf(t, sizeof(t), "kill %d %d", loop, i % 3 == 2 ? i - 1 : i);
		doc_make(&d, t, NULL);
		if (store_put(s, &d, &f->snap, why, sizeof(why)) != 0)
			_exit(4);
		memcpy(ack, d.doc_id, 32);
		memcpy(ack + 32, f->prof, 32);
		if (write(fd, ack, sizeof(ack)) != (ssize_t)sizeof(ack))
			_exit(5);
	}
	_exit(0);
}

static enum tap_result
t_kill_loop_in(void)
{
	const char *e = getenv("KVSNAP_KILL_LOOPS"), *se = getenv("KVSNAP_KILL_SEED");
	int loops = e ? atoi(e) : 12, loop, i;
	struct tiny_rng r = { se ? strtoull(se, NULL, 10) * 7919 + 1 : 7920 };
	uint8_t(*acked)[64] = NULL;
	int n_acked = 0, cap = 0, early = 0;
	struct ids x;

	store_close(g_s); /* no environment open across fork */
	g_s = NULL;
	x.n = 0;
	for (loop = 0; loop < loops; loop++) {
		int fds[2], status, delay_us = (int)(tiny_rng_next(&r) % 50001);
		uint8_t ack[64];
		int before = n_acked;
		pid_t pid;

		TAP_CHECK(pipe(fds) == 0, "pipe");
		fflush(stdout);
		pid = fork();
		TAP_CHECK(pid >= 0, "fork");
		if (pid == 0) {
			close(fds[0]);
			kill_child(loop, fds[1]);
		}
		close(fds[1]);
		usleep((useconds_t)delay_us);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		while (read(fds[0], ack, sizeof(ack)) == (ssize_t)sizeof(ack)) {
			if (n_acked == cap) {
				cap = cap ? 2 * cap : 256;
				acked = realloc(acked, (size_t)cap * sizeof(*acked));
			}
			memcpy(acked[n_acked++], ack, sizeof(ack));
		}
		close(fds[0]);
		if (WIFEXITED(status)) {
			free(acked);
			TAP_CHECK(0, "child exited %d before the kill", WEXITSTATUS(status));
		}
		early += n_acked == before;
		/* Reopen, verify all, and find every acknowledged snapshot. */
		if (st_reopen(NULL) != 0 || verify_all(&x) != 0) {
			free(acked);
			TAP_CHECK(0, "loop %d: %s", loop, g_why);
		}
		for (i = 0; i < n_acked; i++)
			if (!same_records(g_s, acked[i],
			        memcmp(acked[i] + 32, FX_MED_B->prof, 32) ? FX_MED_A : FX_MED_B))
				break;
		/* At most one unacknowledged put per round may have committed. */
		if (i < n_acked || x.n < n_acked || x.n > n_acked + loop + 1) {
			free(acked);
			TAP_CHECK(0, "loop %d: %d acknowledged, %d stored, first missing %d", loop,
			    n_acked, x.n, i);
		}
		store_close(g_s);
		g_s = NULL;
	}
	tap_diag("report: kill loop: %d rounds, %d acknowledged puts all present, %d more committed "
	         "but killed before the acknowledgement, %d kills before the first put",
	    loops, n_acked, x.n - n_acked, early);
	free(acked);
	return TAP_PASS;
}
WITH_STORE(t_kill_loop, 0)

/* ------------------------------------------------------------------------ */
/* Readers and the writer                                                    */

static enum tap_result
t_reader_held_in(void)
{
	struct store_doc a, d;
	struct store_reader *r;
	const uint8_t *buf;
	size_t len;
	int i;

	doc_make(&a, "held", NULL);
	TAP_CHECK(put(&a, FX_SMALL_A) == 0, "put: %s", g_why);
	TAP_CHECK(store_read_begin(g_s, a.doc_id, FX_SMALL_A->prof, &r, g_why, sizeof(g_why)) == 0,
	    "begin: %s", g_why);
	/* The writer goes on: new documents, and a replacement of the very
	 * snapshot being read. */
	for (i = 0; i < 8; i++) {
		char t[32];
		snprintf(t, sizeof(t), "w %d", i);
		doc_make(&d, t, NULL);
		if (put(&d, FX_MED_A) != 0)
			break;
	}
	if (i == 8 && put(&a, FX_SMALL_A2) != 0)
		i = -1;
	if (i != 8 || store_read_layer(r, 1, &buf, &len, g_why, sizeof(g_why)) != 0) {
		store_read_end(r);
		TAP_CHECK(0, "writes under a reader (%d): %s", i, g_why);
	}
	/* The reader still sees the snapshot as it began. */
	i = len == FX_SMALL_A->len[1] && !memcmp(buf, FX_SMALL_A->rec[1], len);
	store_read_end(r);
	TAP_CHECK(i, "reader saw its own version");
	TAP_CHECK(same_records(g_s, a.doc_id, FX_SMALL_A2), "a new reader sees the new one");
	return TAP_PASS;
}
WITH_STORE(t_reader_held, .map_size = 32 << 20)

/* Two writers and a reader on one handle while the map grows from 1 MiB:
 * growth waits for the reader's transactions, never pulls the map from
 * under them, and no put is lost. */
struct thr {
	int id, n, rc;
	atomic_int *stop;
	char why[256];
	long reads;
};

static void *
thr_writer(void *arg)
{
	struct thr *w = arg;
	int i;
	for (i = 0; i < w->n && w->rc == 0; i++) {
		struct store_doc d;
		char t[32];
		snprintf(t, sizeof(t), "thread %d %d", w->id, i);
		doc_make(&d, t, NULL);
		w->rc = store_put(g_s, &d, &(i % 2 ? FX_BIG_B : FX_BIG_A)->snap, w->why,
		    sizeof(w->why));
	}
	return NULL;
}

static void *
thr_reader(void *arg)
{
	struct thr *r = arg;
	struct store_doc a;
	doc_make(&a, "thread base", NULL);
	while (!atomic_load(r->stop) && r->rc == 0) {
		if (!same_records(g_s, a.doc_id, FX_MED_A))
			r->rc = -1;
		r->reads++;
	}
	return NULL;
}

static enum tap_result
t_threads_grow_in(void)
{
	atomic_int stop = 0;
	struct thr w[2] = { { 0, 40, 0, &stop, "", 0 }, { 1, 40, 0, &stop, "", 0 } };
	struct thr rd = { 9, 0, 0, &stop, "", 0 };
	struct store_stats st;
	struct store_doc a;
	pthread_t tw[2], tr;
	struct ids x;
	int i;

	doc_make(&a, "thread base", NULL);
	TAP_CHECK(put(&a, FX_MED_A) == 0, "put: %s", g_why);
	TAP_CHECK(pthread_create(&tr, NULL, thr_reader, &rd) == 0, "reader thread");
	for (i = 0; i < 2; i++)
		TAP_CHECK(pthread_create(&tw[i], NULL, thr_writer, &w[i]) == 0, "writer thread");
	for (i = 0; i < 2; i++)
		pthread_join(tw[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(tr, NULL);
	TAP_CHECK(w[0].rc == 0 && w[1].rc == 0, "writers: %s / %s", w[0].why, w[1].why);
	TAP_CHECK(rd.rc == 0 && rd.reads > 0, "reader saw wrong bytes");
	TAP_CHECK(store_stats(g_s, &st, g_why, sizeof(g_why)) == 0 && st.n_snapshots == 81 &&
	        st.map_size > (1u << 20),
	    "81 snapshots, map grown (%llu)", (unsigned long long)st.map_size);
	tap_diag("map grew to %llu MiB under %ld reads", (unsigned long long)st.map_size >> 20,
	    rd.reads);
	TAP_CHECK(verify_all(&x) == 0 && x.n == 81, "verify: %s", g_why);
	return TAP_PASS;
}
WITH_STORE(t_threads_grow, .map_size = 1 << 20)

/* ------------------------------------------------------------------------ */
/* A truncated data.mdb (issue 15, defect 2)                                 */

/* LMDB maps data.mdb; a page past the end of a short file faults (SIGBUS)
 * in whoever touches it, so each probe runs in a child and a signal fails
 * the test instead of ending the run. */

static int
file_get(const char *path, uint8_t **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY), rc = -1;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && (*buf = malloc((size_t)st.st_size + 1)) != NULL) {
		*len = (size_t)st.st_size;
		rc = pread(fd, *buf, *len, 0) == (ssize_t)*len ? 0 : -1;
	}
	close(fd);
	return rc;
}

/* data.mdb's first n bytes of buf, as if the file had been cut there. */
static int
file_put(const char *path, const uint8_t *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC), rc;
	if (fd < 0)
		return -1;
	rc = write(fd, buf, n) == (ssize_t)n ? 0 : -1;
	return close(fd) == 0 ? rc : -1;
}

static off_t
file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

struct probe {
	int sig;       /* the signal that ended the child, or 0 */
	int rc;        /* the first store error (0: all read back) */
	char why[512]; /* its reason */
};

/* What the child does: open the store at o (cut, when cut_to > 0, behind
 * the back of the open store: the daemon's long-lived env), list it and
 * read back every record of docs[0..n-1] (fixtures fx[i]). */
static int
probe_body(const struct store_opts *o, off_t cut_to, const uint8_t (*docs)[SNAP_ID_BYTES],
    const struct fx *const *fx, int n, char *why, size_t why_len)
{
	char path[600];
	struct store *s;
	struct ids x;
	int i, rc;

	if ((rc = store_open(&s, g_dir, o, why, why_len)) != 0)
		return rc;
	snprintf(path, sizeof(path), "%s/data.mdb", g_dir);
	if (cut_to > 0 && truncate(path, cut_to) != 0) {
		snprintf(why, why_len, "truncate: %s", strerror(errno));
		store_close(s);
		return STORE_ERR_IO;
	}
	memset(&x, 0, sizeof(x));
	rc = store_ls(s, ids_ls, &x, why, why_len);
	for (i = 0; rc == 0 && i < n; i++) {
		if (!same_records(s, docs[i], fx[i])) {
			rc = STORE_ERR_CORRUPT; /* same_records leaves its reason in g_why */
			snprintf(why, why_len, "%s", g_why);
		}
	}
	store_close(s);
	return rc;
}

static struct probe
probe(const struct store_opts *o, off_t cut_to, const uint8_t (*docs)[SNAP_ID_BYTES],
    const struct fx *const *fx, int n)
{
	struct probe p = { 0, 0, "" };
	int fds[2], status;
	ssize_t got;
	pid_t pid;

	if (pipe(fds) != 0 || (pid = fork()) < 0) {
		p.sig = -1;
		return p;
	}
	if (pid == 0) {
		char why[512] = "";
		int rc = probe_body(o, cut_to, docs, fx, n, why, sizeof(why));
		if (write(fds[1], why, strlen(why)) < 0)
			_exit(99);
		_exit(-rc);
	}
	close(fds[1]);
	got = read(fds[0], p.why, sizeof(p.why) - 1);
	p.why[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		p.sig = -1;
	else if (WIFSIGNALED(status))
		p.sig = WTERMSIG(status);
	else
		p.rc = -WEXITSTATUS(status);
	return p;
}

static enum tap_result
t_truncated_in(void)
{
	static const struct store_opts rw = { .read_only = 0 }, ro = { .read_only = 1 };
	const struct fx *const fx[3] = { FX_BIG_A, FX_BIG_B, FX_MED_A };
	uint8_t docs[3][SNAP_ID_BYTES];
	struct store_doc d[3];
	const off_t cuts[2] = { 8192, 0 /* 60 %, below */ };
	char path[600];
	uint8_t *full = NULL;
	size_t len = 0;
	struct probe p;
	int i, k;

	for (i = 0; i < 3; i++) {
		char text[32];
		snprintf(text, sizeof(text), "truncated doc %d", i);
		doc_make(&d[i], text, NULL);
		TAP_CHECK(put(&d[i], fx[i]) == 0, "put %d: %s", i, g_why);
		memcpy(docs[i], d[i].doc_id, SNAP_ID_BYTES);
	}
	store_close(g_s);
	g_s = NULL;
	snprintf(path, sizeof(path), "%s/data.mdb", g_dir);
	TAP_CHECK(file_get(path, &full, &len) == 0 && len > 100000, "read data.mdb (%zu bytes)",
	    len);
	p = probe(&rw, 0, docs, fx, 3);
	TAP_CHECK(p.sig == 0 && p.rc == 0, "the whole store reads back: sig %d rc %d %s", p.sig,
	    p.rc, p.why);

	/* Cut at 8192 (both meta pages, nothing else) and at 60 %: corrupt,
	 * read-only or not, with a reason naming the file and both sizes, and
	 * the file left as it was. */
	for (k = 0; k < 2; k++) {
		off_t cut = cuts[k] ? cuts[k] : (off_t)(len * 6 / 10);
		char want[64];
		for (i = 0; i < 2; i++) {
			int rc_put = file_put(path, full, (size_t)cut);
			p = probe(i ? &ro : &rw, 0, docs, fx, 3);
			TAP_CHECK(rc_put == 0, "cut data.mdb to %lld bytes", (long long)cut);
			TAP_CHECK(p.sig == 0, "cut to %lld bytes, %s open: killed by signal %d",
			    (long long)cut, i ? "read-only" : "read-write", p.sig);
			TAP_CHECK(p.rc == STORE_ERR_CORRUPT, "cut to %lld bytes, %s open: %d %s",
			    (long long)cut, i ? "read-only" : "read-write", p.rc, p.why);
			snprintf(want, sizeof(want), "%lld bytes", (long long)cut);
			TAP_CHECK(strstr(p.why, "data.mdb") && strstr(p.why, want),
			    "reason names the file and its size: %s", p.why);
			TAP_CHECK(file_size(path) == cut, "the cut file was left as it was");
		}
		tap_diag("cut to %lld: %s", (long long)cut, p.why);
	}

	/* Cut behind the back of an open store (the daemon's): the next
	 * transaction says corrupt. */
	for (k = 0; k < 2; k++) {
		off_t cut = cuts[k] ? cuts[k] : (off_t)(len * 6 / 10);
		TAP_CHECK(file_put(path, full, len) == 0, "put data.mdb back");
		p = probe(&rw, cut, docs, fx, 3);
		TAP_CHECK(p.sig == 0 && p.rc == STORE_ERR_CORRUPT,
		    "cut to %lld bytes under an open store: signal %d, %d %s", (long long)cut, p.sig,
		    p.rc, p.why);
		tap_diag("cut under an open store to %lld: %s", (long long)cut, p.why);
	}

	/* 0 bytes and 4096 (one meta page): as before, LMDB's own answers (an
	 * empty file is a new store; half a header is not an LMDB file). */
	TAP_CHECK(file_put(path, full, 4096) == 0, "cut to 4096");
	p = probe(&ro, 0, docs, fx, 0);
	TAP_CHECK(p.sig == 0 && p.rc == STORE_ERR_CORRUPT, "4096 bytes: signal %d, %d %s", p.sig,
	    p.rc, p.why);
	TAP_CHECK(file_put(path, full, 0) == 0, "cut to 0");
	p = probe(&rw, 0, docs, fx, 0);
	TAP_CHECK(p.sig == 0 && p.rc == 0, "0 bytes: a new store: signal %d, %d %s", p.sig, p.rc,
	    p.why);

	/* And the whole file again reads back. */
	TAP_CHECK(file_put(path, full, len) == 0, "put data.mdb back");
	p = probe(&ro, 0, docs, fx, 3);
	TAP_CHECK(p.sig == 0 && p.rc == 0, "restored store reads back: %d %s", p.rc, p.why);
	free(full);
	return TAP_PASS;
}
WITH_STORE(t_truncated, 0)

/* ------------------------------------------------------------------------ */

static const struct tap_test tests[] = {
	{ "roundtrip", t_roundtrip },
	{ "replace", t_replace },
	{ "two_profiles", t_two_profiles },
	{ "resolve", t_resolve },
	{ "names", t_names },
	{ "rm", t_rm },
	{ "ls_info", t_ls_info },
	{ "touch", t_touch },
	{ "prune_count", t_prune_count },
	{ "prune_bytes", t_prune_bytes },
	{ "prune_age", t_prune_age },
	{ "stats", t_stats },
	{ "verify_clean", t_verify_clean },
	{ "read_only", t_read_only },
	{ "fault_flip", t_fault_flip },
	{ "fault_keys", t_fault_keys },
	{ "fault_meta", t_fault_meta },
	{ "owners", t_owners },
	{ "small_map", t_small_map },
	{ "disk_full", t_disk_full },
	{ "kill_loop", t_kill_loop },
	{ "reader_held", t_reader_held },
	{ "threads_grow", t_threads_grow },
	{ "truncated", t_truncated },
};

static int
setup(void)
{
	if (tiny_model_tmp(g_model_path, sizeof(g_model_path), 42) != 0) {
		printf("1..0 # SKIP cannot write the tiny model\n");
		return -1;
	}
	if (eng_model_open(&g_m, g_model_path, g_why, sizeof(g_why)) != 0 || fx_setup() != 0) {
		printf("1..0 # SKIP no fixtures: %s\n", g_why);
		tiny_model_tmp_close(g_m, g_model_path);
		return -1;
	}
	return 0;
}

static int
teardown(void)
{
	int i;
	for (i = 0; i < FX_N; i++)
		fx_free(&g_fx[i]);
	tiny_model_tmp_close(g_m, g_model_path);
	return 0;
}

TAP_MAIN(setup, teardown)
