/*
 * test_store_replace.c: one snapshot at a time in the LMDB store (issue
 * 28): a put that replaces another snapshot of its document
 * (store_snapshot.replaces, `kvsnap shrink --replace`) and
 * store_rm_snapshot (`kvsnap rm DOC --profile P`).  Records are opaque
 * bytes here; the store is real (a fresh LMDB directory per run).
 *
 *   replace        B replacing A: A's records, lru entry and listing go in
 *                  the put's own transaction; a reader that began before
 *                  the put still reads all of A, one after it all of B
 *                  (never a moment with neither); the stored bytes follow
 *   replace_absent a put replacing a profile the document lacks writes
 *                  nothing (NOT_FOUND, the new snapshot absent)
 *   rm_snapshot    one of two goes, the document stays; the last takes the
 *                  document, its name and its text records; a missing
 *                  profile or document is NOT_FOUND
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/store.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define TS_NL 3

static char g_dir[64];
static const uint8_t g_doc[STORE_ID_BYTES] = { 0x28, 1 };

struct snap_bytes {
	uint8_t pid[STORE_ID_BYTES];
	uint8_t head[40], layer[TS_NL][100];
	const uint8_t *lp[TS_NL];
	size_t ll[TS_NL];
};

/* Snapshot `tag`: profile id and every record filled with it. */
static void
sb_make(struct snap_bytes *b, uint8_t tag)
{
	int l;
	memset(b->pid, tag, sizeof(b->pid));
	memset(b->head, tag, sizeof(b->head));
	for (l = 0; l < TS_NL; l++) {
		memset(b->layer[l], tag ^ (uint8_t)(l + 1), sizeof(b->layer[l]));
		b->lp[l] = b->layer[l];
		b->ll[l] = sizeof(b->layer[l]) - (size_t)l;
	}
}

static int
sb_put(struct store *s, struct snap_bytes *b, const uint8_t *replaces, const char *name,
    const struct store_text *text, char *why, size_t why_len)
{
	struct store_doc d;
	struct store_snapshot sn;
	memset(&d, 0, sizeof(d));
	memcpy(d.doc_id, g_doc, STORE_ID_BYTES);
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.source, sizeof(d.source), "test_store_replace");
	d.tokens = 100;
	memset(&sn, 0, sizeof(sn));
	memcpy(sn.profile_id, b->pid, STORE_ID_BYTES);
	sn.header = b->head;
	sn.header_len = sizeof(b->head);
	sn.layer = b->lp;
	sn.layer_len = b->ll;
	sn.n_layer = TS_NL;
	sn.text = text;
	sn.replaces = replaces;
	return store_put(s, &d, &sn, why, why_len);
}

/* Every record of snapshot b through reader r (begun on b's profile). */
static int
sb_reads(struct store_reader *r, const struct snap_bytes *b)
{
	const uint8_t *buf;
	size_t len;
	char why[256];
	int l;
	if (store_read_layer(r, STORE_HEAD_RECORD, &buf, &len, why, sizeof(why)) ||
	    len != sizeof(b->head) || memcmp(buf, b->head, len))
		return 0;
	for (l = 0; l < TS_NL; l++)
		if (store_read_layer(r, (unsigned)l, &buf, &len, why, sizeof(why)) ||
		    len != b->ll[l] || memcmp(buf, b->layer[l], len))
			return 0;
	return 1;
}

struct listing {
	int n;
	uint8_t ids[4][STORE_ID_BYTES];
};

static int
list_cb(void *arg, const uint8_t pid[STORE_ID_BYTES], uint64_t bytes, const uint8_t *head,
    size_t head_len, const char *why, int64_t last_used_us)
{
	struct listing *l = arg;
	(void)bytes;
	(void)head;
	(void)head_len;
	(void)why;
	(void)last_used_us;
	if (l->n < 4)
		memcpy(l->ids[l->n], pid, STORE_ID_BYTES);
	l->n++;
	return 0;
}

static int
n_snaps(struct store *s)
{
	struct listing l = { 0 };
	char why[256];
	return store_profiles(s, g_doc, list_cb, &l, why, sizeof(why)) ? -1 : l.n;
}

static int
has_snap(struct store *s, const struct snap_bytes *b)
{
	struct listing l = { 0 };
	char why[256];
	int i;
	if (store_profiles(s, g_doc, list_cb, &l, why, sizeof(why)))
		return 0;
	for (i = 0; i < l.n && i < 4; i++)
		if (!memcmp(l.ids[i], b->pid, STORE_ID_BYTES))
			return 1;
	return 0;
}

static int
text_cb(void *arg, const uint8_t doc_id[STORE_ID_BYTES], unsigned part, const uint8_t *buf,
    size_t len)
{
	(void)doc_id;
	(void)part;
	(void)buf;
	(void)len;
	(*(int *)arg)++;
	return 0;
}

static int
n_texts(struct store *s)
{
	char why[256];
	int n = 0;
	return store_texts(s, g_doc, text_cb, &n, why, sizeof(why)) ? -1 : n;
}

static struct store *
open_fresh(void)
{
	struct store_opts so = { 0 };
	struct store *s = NULL;
	char why[256];
	snprintf(g_dir, sizeof(g_dir), "/tmp/kvsnap-replace-XXXXXX");
	if (!mkdtemp(g_dir) || store_open(&s, g_dir, &so, why, sizeof(why)))
		return NULL;
	return s;
}

static void
close_rm(struct store *s)
{
	store_close(s);
	th_rm_rf(g_dir);
}

static enum tap_result
test_replace(void)
{
	struct store *s = open_fresh();
	struct store_reader *before = NULL, *after = NULL;
	struct snap_bytes a, b;
	struct store_doc d;
	char why[256] = "";
	uint64_t bytes_a;

	TAP_CHECK(s != NULL, "store");
	sb_make(&a, 0xA0);
	sb_make(&b, 0xB0);
	TAP_CHECK(sb_put(s, &a, NULL, "doc", NULL, why, sizeof(why)) == 0, "put A: %s", why);
	TAP_CHECK(store_info(s, g_doc, &d, why, sizeof(why)) == 0, "info");
	bytes_a = d.stored_bytes;
	TAP_CHECK(store_read_begin(s, g_doc, a.pid, &before, why, sizeof(why)) == 0,
	    "a reader of A: %s", why);
	TAP_CHECK(sb_put(s, &b, a.pid, "", NULL, why, sizeof(why)) == 0, "put B replacing A: %s",
	    why);
	TAP_CHECK(sb_reads(before, &a), "the reader begun before still reads all of A");
	store_read_end(before);
	TAP_CHECK(store_read_begin(s, g_doc, a.pid, &after, why, sizeof(why)) ==
	    STORE_ERR_NOT_FOUND, "A is gone for a reader begun after");
	TAP_CHECK(store_read_begin(s, g_doc, b.pid, &after, why, sizeof(why)) == 0 &&
	    sb_reads(after, &b), "and B is all there");
	store_read_end(after);
	TAP_CHECK(n_snaps(s) == 1 && has_snap(s, &b), "one snapshot listed: B");
	TAP_CHECK(store_info(s, g_doc, &d, why, sizeof(why)) == 0 && d.n_profiles == 1 &&
	    d.stored_bytes == bytes_a && !strcmp(d.name, "doc"),
	    "metadata: 1 profile, %llu bytes (A had %llu), the name kept",
	    (unsigned long long)d.stored_bytes, (unsigned long long)bytes_a);
	TAP_CHECK(sb_put(s, &b, b.pid, "", NULL, why, sizeof(why)) == 0 && n_snaps(s) == 1,
	    "a put replacing its own profile is a plain replacement");
	close_rm(s);
	return TAP_PASS;
}

static enum tap_result
test_replace_absent(void)
{
	struct store *s = open_fresh();
	struct snap_bytes a, b, x;
	char why[256] = "";

	TAP_CHECK(s != NULL, "store");
	sb_make(&a, 0xA1);
	sb_make(&b, 0xB1);
	sb_make(&x, 0xCC);
	TAP_CHECK(sb_put(s, &a, NULL, "", NULL, why, sizeof(why)) == 0, "put A");
	TAP_CHECK(sb_put(s, &b, x.pid, "", NULL, why, sizeof(why)) == STORE_ERR_NOT_FOUND &&
	    strstr(why, "replace"), "replacing a profile it lacks: %s", why);
	TAP_CHECK(n_snaps(s) == 1 && has_snap(s, &a) && !has_snap(s, &b),
	    "nothing written: A alone");
	close_rm(s);
	return TAP_PASS;
}

static enum tap_result
test_rm_snapshot(void)
{
	static const uint8_t part_text[] = "the text record";
	struct store_text text = { 0, part_text, sizeof(part_text) };
	static const uint8_t other[STORE_ID_BYTES] = { 0x77 };
	struct store *s = open_fresh();
	struct snap_bytes a, b;
	struct store_doc d;
	uint8_t id[STORE_ID_BYTES];
	char why[256] = "";
	int gone = -1;

	TAP_CHECK(s != NULL, "store");
	sb_make(&a, 0xA2);
	sb_make(&b, 0xB2);
	TAP_CHECK(sb_put(s, &a, NULL, "named", &text, why, sizeof(why)) == 0 &&
	    sb_put(s, &b, NULL, "", NULL, why, sizeof(why)) == 0 && n_snaps(s) == 2, "two");
	TAP_CHECK(store_rm_snapshot(s, g_doc, other, &gone, why, sizeof(why)) ==
	    STORE_ERR_NOT_FOUND && gone == 0, "a profile it lacks: %s", why);
	TAP_CHECK(store_rm_snapshot(s, other, a.pid, &gone, why, sizeof(why)) ==
	    STORE_ERR_NOT_FOUND, "a document not stored: %s", why);
	TAP_CHECK(store_rm_snapshot(s, g_doc, a.pid, &gone, why, sizeof(why)) == 0 && gone == 0,
	    "A out, the document stays");
	TAP_CHECK(n_snaps(s) == 1 && has_snap(s, &b), "B left");
	TAP_CHECK(store_resolve(s, "named", id, why, sizeof(why)) == 0 && n_texts(s) == 1,
	    "the name still leads to it, its text record is there");
	TAP_CHECK(store_rm_snapshot(s, g_doc, b.pid, &gone, why, sizeof(why)) == 0 && gone == 1,
	    "the last: the document goes");
	TAP_CHECK(store_info(s, g_doc, &d, why, sizeof(why)) == STORE_ERR_NOT_FOUND,
	    "no document");
	TAP_CHECK(store_resolve(s, "named", id, why, sizeof(why)) == STORE_ERR_NOT_FOUND,
	    "no name");
	TAP_CHECK(n_snaps(s) <= 0 && n_texts(s) == 0, "no snapshots, no text record");
	close_rm(s);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "replace", test_replace },
	{ "replace_absent", test_replace_absent },
	{ "rm_snapshot", test_rm_snapshot },
};

TAP_MAIN(NULL, NULL)
