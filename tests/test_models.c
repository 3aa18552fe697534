/*
 * test_models.c: service/models.c, documents as models (GET /v1/models, a
 * request's `model`; docs/HTTP.md "Documents as models") over a real LMDB
 * store: a document's id is its name, else its file name when no other
 * listed document has that name or file name, else its doc_id; the plain
 * model's id is no document's; another user's document is neither listed
 * nor found; a lookup finds exactly what the list holds, by name through
 * the store's name index as by the walk (issue 30, item 3); and a library
 * of many unnamed documents with unique file names lists each by its file
 * name (the check that replaced a quadratic scan).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h" /* struct svc: a store alone */
#include "storage/store.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define PLAIN "SmolLM2-135M-Instruct"

static char g_dir[] = "/tmp/kvsnap-test-models-XXXXXX";
static struct store *g_s;

static void
id_of(int i, uint8_t id[STORE_ID_BYTES])
{
	memset(id, 0, STORE_ID_BYTES);
	id[0] = (uint8_t)(0x10 + i % 200);
	id[1] = (uint8_t)(i >> 8);
	id[2] = (uint8_t)i;
}

/* Put document i: name (or NULL), source path, owner uid. */
static int
put(int i, const char *name, const char *source, uint32_t owner)
{
	static const uint8_t rec[16];
	const uint8_t *layer[1] = { rec };
	size_t len[1] = { sizeof(rec) };
	struct store_snapshot snap = { .header = rec, .header_len = sizeof(rec), .layer = layer,
		.layer_len = len, .n_layer = 1 };
	struct store_doc d;
	char why[512];

	memset(&d, 0, sizeof(d));
	memset(snap.profile_id, 0x5a, sizeof(snap.profile_id));
	id_of(i, d.doc_id);
	if (name)
		snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.source, sizeof(d.source), "%s", source);
	d.created_us = 1700000000000000LL + i;
	d.n_owners = 1;
	d.owners[0] = owner;
	if (store_put(g_s, &d, &snap, why, sizeof(why))) {
		printf("# put %d: %s\n", i, why);
		return -1;
	}
	return 0;
}

/* The listed id of document i, or NULL when it is not listed. */
static const char *
listed(const struct svc_model *ms, size_t n, int i)
{
	uint8_t id[STORE_ID_BYTES];
	id_of(i, id);
	for (size_t k = 0; k < n; k++)
		if (!memcmp(ms[k].doc_id, id, STORE_ID_BYTES))
			return ms[k].id;
	return NULL;
}

static int
hex_of(int i, const char *got)
{
	uint8_t id[STORE_ID_BYTES];
	char hex[2 * STORE_ID_BYTES + 1];
	id_of(i, id);
	store_hex(id, STORE_ID_BYTES, hex);
	return got && !strcmp(got, hex);
}

static enum tap_result
test_ids(void)
{
	struct svc v = { .s = g_s };
	struct svc_who alice = { .uid = 1000, .all = 0 };
	struct svc_status st;
	struct svc_model *ms = NULL;
	uint8_t id[STORE_ID_BYTES], want[STORE_ID_BYTES];
	size_t n;
	int ok = 1;

	TAP_CHECK(!put(1, "gpl", "/lib/gpl.txt", 1000) && !put(2, NULL, "/lib/notes.txt", 1000) &&
	    !put(3, NULL, "/a/same.txt", 1000) && !put(4, NULL, "/b/same.txt", 1000) &&
	    !put(5, NULL, "/c/gpl", 1000) && !put(6, PLAIN, "/x/plain.txt", 1000) &&
	    !put(7, NULL, "/x/" PLAIN, 1000) && !put(8, "bobs", "/home/bob/b.txt", 1001) &&
	    !put(9, NULL, "/home/bob/notes2.txt", 1001), "puts");
	TAP_EXPECT(!svc_models(&v, &alice, PLAIN, &ms, &n, &st), "list: %s", st.why);
	TAP_EXPECT(n == 7, "alice lists %zu documents, not 7", n);
	TAP_EXPECT(listed(ms, n, 1) && !strcmp(listed(ms, n, 1), "gpl"), "a name is the id");
	TAP_EXPECT(listed(ms, n, 2) && !strcmp(listed(ms, n, 2), "notes.txt"),
	    "a unique file name is the id: %s", listed(ms, n, 2));
	TAP_EXPECT(hex_of(3, listed(ms, n, 3)) && hex_of(4, listed(ms, n, 4)),
	    "two documents with one file name: both by doc_id");
	TAP_EXPECT(hex_of(5, listed(ms, n, 5)), "a file name that is another's name: by doc_id");
	TAP_EXPECT(hex_of(6, listed(ms, n, 6)) && hex_of(7, listed(ms, n, 7)),
	    "the plain model's id, as a name or a file name: by doc_id");
	TAP_EXPECT(!listed(ms, n, 8) && !listed(ms, n, 9), "bob's documents are not alice's");

	/* lookups: what the list holds, nothing else */
	id_of(1, want);
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, "gpl", id, &st) == 1 &&
	    !memcmp(id, want, STORE_ID_BYTES), "find by name");
	id_of(2, want);
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, "notes.txt", id, &st) == 1 &&
	    !memcmp(id, want, STORE_ID_BYTES), "find by file name");
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, "same.txt", id, &st) == 0,
	    "an ambiguous file name is no id");
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, "bobs", id, &st) == 0,
	    "another user's document's name is found by nobody else");
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, PLAIN, id, &st) == 0,
	    "a document named like the plain model is not found by that id");
	TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, "gpt-4o", id, &st) == 0, "an unknown id");
	{
		char hex[2 * STORE_ID_BYTES + 1];
		id_of(3, want);
		store_hex(want, STORE_ID_BYTES, hex);
		TAP_EXPECT(svc_model_find(&v, &alice, PLAIN, hex, id, &st) == 1 &&
		    !memcmp(id, want, STORE_ID_BYTES), "find by doc_id (a listed hex id)");
	}
out:
	free(ms);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* A library of unnamed documents, each its own file name, plus one pair
 * sharing one: every single one listed by file name, the pair by doc_id. */
static enum tap_result
test_many(void)
{
	struct svc v = { .s = g_s };
	struct svc_who root = { .uid = 0, .all = 1 };
	struct svc_status st;
	struct svc_model *ms = NULL;
	char path[64], want[64];
	size_t n;
	int ok = 1, i, bad = 0;

	for (i = 1000; i < 1600; i++) {
		snprintf(path, sizeof(path), "/lib/%d.txt", i);
		TAP_CHECK(!put(i, NULL, path, 1000), "put %d", i);
	}
	TAP_CHECK(!put(1600, NULL, "/other/1500.txt", 1000), "put");
	TAP_EXPECT(!svc_models(&v, &root, PLAIN, &ms, &n, &st), "list: %s", st.why);
	for (i = 1000; i < 1600; i++) {
		snprintf(want, sizeof(want), "%d.txt", i);
		if (i == 1500 ? !hex_of(i, listed(ms, n, i)) :
		    !listed(ms, n, i) || strcmp(listed(ms, n, i), want))
			bad++;
	}
	TAP_EXPECT(!bad && hex_of(1600, listed(ms, n, 1600)), "%d documents listed wrong", bad);
out:
	free(ms);
	return ok ? TAP_PASS : TAP_FAIL;
}

static const struct tap_test tests[] = {
	{ "ids", test_ids },
	{ "many", test_many },
};

static int
setup(void)
{
	char why[512];
	if (!mkdtemp(g_dir) || store_open(&g_s, g_dir, NULL, why, sizeof(why))) {
		printf("Bail out! no store in %s\n", g_dir);
		return -1;
	}
	return 0;
}

static int
teardown(void)
{
	store_close(g_s);
	return th_rm_rf(g_dir); /* the scratch store */
}

TAP_MAIN(setup, teardown)
