/*
 * bench_index.c: what the text index costs per document (issue 29, item
 * 2): each FILE's text kept as a text record (service/text_record.c: zstd
 * level 3) and indexed in a fresh SQLite FTS5 index file (index/), as an
 * ingest does, COPIES times each (copies are made distinct documents: a
 * different doc_id and a unique word appended), then the file's size.
 * Prints per file its text and record bytes, and for the whole the index
 * file's bytes per document and per text byte, and the put and search
 * rates.  No model runs: the text is the file's bytes (plain text files).
 *
 * usage: bench_index [--copies N] FILE...
 *   e.g. build/bench/bench_index --copies 50 /usr/share/common-licenses/[A-Z]*
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"
#include "engine/base.h"
#include "index/index.h"
#include "service/text_record.h"

int
main(int argc, char **argv)
{
	static const struct option opts[] = { { "copies", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 } };
	char dir[] = "/tmp/kvsnap-bench-index-XXXXXX", path[300], why[512], expr[IDX_MATCH_MAX];
	char snip[320];
	uint64_t text_bytes = 0, rec_bytes = 0, n_docs = 0, db_bytes = 0;
	struct idx *x = NULL;
	struct idx_search *q;
	struct stat st;
	double t0, t_put, t_search;
	int copies = 1, c, i, k, n_hits = 0;
	unsigned part;
	double score;
	uint8_t doc[32];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'c' || (copies = atoi(optarg)) < 1) {
			fprintf(stderr, "usage: bench_index [--copies N] FILE...\n");
			return 1;
		}
	}
	if (optind >= argc || !mkdtemp(dir)) {
		fprintf(stderr, "usage: bench_index [--copies N] FILE...\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/index.sqlite", dir);
	if (idx_open(&x, path, 0, why, sizeof(why))) {
		fprintf(stderr, "bench_index: %s\n", why);
		return 1;
	}
	printf("| file | text bytes | text record bytes | record / text |\n|---|---:|---:|---:|\n");
	t0 = eng_now();
	if (idx_begin(x, why, sizeof(why)))
		return 1;
	for (i = optind; i < argc; i++) {
		size_t len = 0, rlen;
		uint8_t *rec, sum[TEXTREC_SUM];
		char *t = kv_slurp(argv[i], 63, &len);
		if (!t) {
			fprintf(stderr, "bench_index: cannot read %s (skipped)\n", argv[i]);
			continue;
		}
		for (k = 0; k < copies; k++) {
			/* a distinct document: its own id and one word of its own */
			size_t l = len + (size_t)snprintf(t + len, 64, " zq%dx%d", i, k);
			if (textrec_encode(0, t, l, &rec, &rlen, why, sizeof(why)) ||
			    textrec_peek(rec, rlen, &part, sum, why, sizeof(why))) {
				fprintf(stderr, "bench_index: %s\n", why);
				return 1;
			}
			memset(doc, 0, sizeof(doc));
			memcpy(doc, &i, sizeof(i));
			memcpy(doc + 8, &k, sizeof(k));
			if (idx_put(x, doc, 0, sum, t, l, why, sizeof(why))) {
				fprintf(stderr, "bench_index: %s\n", why);
				return 1;
			}
			if (k == 0)
				printf("| %s | %zu | %zu | %.3f |\n", strrchr(argv[i], '/') ?
				    strrchr(argv[i], '/') + 1 : argv[i], len, rlen, (double)rlen / (double)len);
			text_bytes += l;
			rec_bytes += rlen;
			n_docs++;
			free(rec);
		}
		free(t);
	}
	if (idx_commit(x, why, sizeof(why)))
		return 1;
	t_put = eng_now() - t0;
	idx_match("Which license grants a patent license to contributors?", 54, expr);
	t0 = eng_now();
	for (k = 0; k < 20; k++) {
		if (idx_search_begin(x, expr, &q, why, sizeof(why)))
			return 1;
		for (n_hits = 0; n_hits < 10 && idx_search_next(q, doc, &part, &score, why,
		    sizeof(why)) == 1 && !idx_search_snippet(q, snip, sizeof(snip), why, sizeof(why));
		    n_hits++)
			;
		idx_search_end(q);
	}
	t_search = (eng_now() - t0) / 20;
	idx_close(x); /* checkpoints the WAL into the file */
	if (stat(path, &st) == 0)
		db_bytes = (uint64_t)st.st_size;
	printf("\n%llu documents (%d copies of %d files), %.1f text bytes each on average\n",
	    (unsigned long long)n_docs, copies, argc - optind, (double)text_bytes / (double)n_docs);
	printf("text records: %.1f bytes per document (%.3f of the text)\n",
	    (double)rec_bytes / (double)n_docs, (double)rec_bytes / (double)text_bytes);
	printf("index file: %llu bytes, %.1f bytes per document (%.3f of the text)\n",
	    (unsigned long long)db_bytes, (double)db_bytes / (double)n_docs,
	    (double)db_bytes / (double)text_bytes);
	printf("indexing: %.0f documents/s; a search (top 10 of %d): %.2f ms\n",
	    (double)n_docs / t_put, n_hits, 1e3 * t_search);
	idx_unlink(path, why, sizeof(why));
	rmdir(dir);
	return 0;
}
