/*
 * bench_models.c: documents as models at library scale (issue 30, item 3):
 * how long GET /v1/models's list and a request's `model` lookup take over
 * a store of N documents.
 *
 * usage: bench_models -s DIR [-n DOCS] [-r REPEAT]
 * Fills DIR (a new LMDB store; put it on a tmpfs, /dev/shm, unless the
 * commits' fsyncs are what you want to time) with DOCS documents through
 * the store's own put, as ingests leave them: one in ten named ("doc-N"),
 * the rest unnamed with a source path whose file name is their own
 * ("/lib/N.txt"), each with a one-record snapshot of 64 bytes (a model
 * lookup never reads a snapshot).  Then, as the daemon's user (every
 * document readable), times svc_models (the list) and svc_model_find
 * for a name, a file name, a doc_id and an id no document has, each the
 * best of REPEAT runs (default 3), and prints one line per operation.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h" /* struct svc: a store alone */
#include "storage/store.h"

/* Document i's id: its index in the first bytes, spread by a multiplier
 * so the ids are in no particular order. */
static void
doc_id_of(long i, uint8_t id[STORE_ID_BYTES])
{
	uint64_t x = (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
	memset(id, 0, STORE_ID_BYTES);
	for (int k = 0; k < 8; k++)
		id[k] = (uint8_t)(x >> (56 - 8 * k));
	id[8] = (uint8_t)(i >> 16);
	id[9] = (uint8_t)(i >> 8);
	id[10] = (uint8_t)i;
}

static int
fill(struct store *s, long n)
{
	static const uint8_t rec[64];
	const uint8_t *layer[1] = { rec };
	size_t len[1] = { sizeof(rec) };
	struct store_snapshot snap = { .header = rec, .header_len = sizeof(rec), .layer = layer,
		.layer_len = len, .n_layer = 1 };
	struct store_doc d;
	char why[512];

	memset(snap.profile_id, 0x5a, sizeof(snap.profile_id));
	for (long i = 0; i < n; i++) {
		memset(&d, 0, sizeof(d));
		doc_id_of(i, d.doc_id);
		if (i % 10 == 0)
			snprintf(d.name, sizeof(d.name), "doc-%ld", i);
		snprintf(d.source, sizeof(d.source), "/lib/%ld.txt", i);
		snprintf(d.format, sizeof(d.format), "text");
		d.bytes = 4096;
		d.tokens = 900;
		d.created_us = 1700000000000000LL + i;
		d.n_owners = 1;
		d.owners[0] = 1000;
		if (store_put(s, &d, &snap, why, sizeof(why))) {
			fprintf(stderr, "bench_models: put %ld: %s\n", i, why);
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *dir = NULL;
	long n = 20000, reps = 3;
	struct svc v;
	struct svc_who who = { .uid = 0, .all = 1 };
	struct svc_status st;
	struct svc_model *ms;
	struct store *s;
	uint8_t id[STORE_ID_BYTES];
	char why[512], hex[2 * STORE_ID_BYTES + 1], name[64], file[64];
	const char *what[4], *look[4];
	size_t got;
	double t, best;
	int c, found;

	while ((c = getopt(argc, argv, "s:n:r:")) != -1) {
		if (c == 's')
			dir = optarg;
		else if (c == 'n')
			n = atol(optarg);
		else if (c == 'r')
			reps = atol(optarg);
		else
			return 1;
	}
	if (!dir || n < 1 || reps < 1) {
		fprintf(stderr, "usage: bench_models -s DIR [-n DOCS] [-r REPEAT]\n");
		return 1;
	}
	if (store_open(&s, dir, NULL, why, sizeof(why))) {
		fprintf(stderr, "bench_models: %s\n", why);
		return 1;
	}
	t = eng_now();
	if (fill(s, n))
		return 1;
	printf("put %ld documents: %.2f s\n", n, eng_now() - t);
	memset(&v, 0, sizeof(v));
	v.s = s;
	for (best = 1e9, c = 0; c < reps; c++) {
		t = eng_now();
		if (svc_models(&v, &who, "SmolLM2-135M-Instruct", &ms, &got, &st)) {
			fprintf(stderr, "bench_models: %s\n", st.why);
			return 1;
		}
		t = eng_now() - t;
		best = t < best ? t : best;
		free(ms);
	}
	printf("list (GET /v1/models): %zu models, %.6f s\n", got, best);
	doc_id_of(n / 2, id);
	store_hex(id, STORE_ID_BYTES, hex);
	snprintf(name, sizeof(name), "doc-%ld", (n / 20) * 10);
	snprintf(file, sizeof(file), "%ld.txt", n / 2 + (n / 2 % 10 == 0));
	what[0] = "a name", look[0] = name;
	what[1] = "a file name", look[1] = file;
	what[2] = "a doc_id", look[2] = hex;
	what[3] = "a missing id", look[3] = "gpt-4o";
	for (int k = 0; k < 4; k++) {
		for (best = 1e9, found = 0, c = 0; c < reps; c++) {
			t = eng_now();
			found = svc_model_find(&v, &who, "SmolLM2-135M-Instruct", look[k], id, &st);
			t = eng_now() - t;
			best = t < best ? t : best;
		}
		printf("lookup of %s (%s): %s, %.6f s\n", what[k], look[k], found == 1 ? "found" :
		    found == 0 ? "none" : st.why, best);
	}
	store_close(s);
	return 0;
}
