/*
 * bench_ttft.c: time to first token of a question answered from a stored
 * snapshot, against re-reading the whole document (issue: daemon, §7).
 *
 * Per document length: the license prose (as bench_snapshot) cut to n
 * tokens and wrapped as the start of the user turn (eng_chat_doc_ids); it is
 * ingested with the policy and saved to a fresh store.  Then, median of
 * --reps runs each:
 *   read    the snapshot's stored bytes read out of LMDB (every record, every
 *           byte touched, no decoding): the floor of any load (read MiB =
 *           the bytes read; stored MiB = the store's own count);
 *   ttft    snap_load into a fresh pool (read, checksums, zstd, re-rotation)
 *           + the question prefilled over it + the first token (greedy);
 *   split   the load's phases (snap_load_ex's struct snap_load_stats):
 *           read (the store's reader), verify (the records' checksums),
 *           unzip (zstd; nothing for a raw version-4 record), decode (rows unpacked into the pool), place (the
 *           pool allocated, laid out, keys rotated), each as MB/s of stored
 *           bytes over the phase's CPU seconds per thread, and all phases
 *           together ("CPU-bound": what the load runs at when every thread
 *           has a core; on a busy machine the wall time is far longer)
 *           (medians of --reps);
 *   full    a fresh cache: document + question prefilled in one call + the
 *           first token: what answering costs without a snapshot (median
 *           of --full-reps runs, default --reps: 1 is enough at 8K on CPU);
 * and decode tokens/s of 32 more tokens after the first, from the snapshot.
 * KVSNAP_BACKEND=cuda runs the model work on the GPU.
 *
 * usage: bench_ttft [-m GGUF] [-t THREADS] [--lengths 2048,4096,8192]
 *        [--policy NAME[:OPTS]] [--frac F] [--quant fp16|q4|q4kc|q8|q4h|q4kch]
 *        [--chunk N] [--reps R] [--full-reps R] [--store DIR] [--also-quants LIST]
 *        [--fresh-pool] [--load-only] [--json]
 *
 * --full-reps 0 skips the re-prefill (its columns print 0): the load split
 * alone, without minutes of prefill on a small machine.  --store DIR keeps
 * the store in DIR (created if missing) and, when it already holds this
 * document's snapshot for the profile, loads that one without ingesting
 * again (ingest tok/s and save ms then print 0): two builds can time their
 * loads of the same stored bytes, one run after the other; --also-quants
 * LIST saves the ingested pool in those forms too, so that runs with
 * --quant one of them find it stored.
 *
 * The reps load into one pool, kept from the rep before (snap_load_into),
 * as a session (kvsnapd's worker) does: its pages are faulted in by the
 * first load only.  "first load" is that first load's, into a fresh pool;
 * --fresh-pool loads every rep into a fresh one (what a one-shot process
 * pays).  --load-only skips the question and the decode (their columns
 * print 0): the load alone, for a profiler.
 *
 * Lengths are those of the chat-templated document (eng_chat_doc_ids); the
 * prose is cut as text, not as ids (the longest cut whose template fits,
 * bisected), so n may fall a few tokens short of the length asked for, and
 * it is capped at the model's window less 64 (question + answer must fit
 * the re-prefill): 8192 → 8128 for the bundled model.  The real n is
 * printed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/clock.h"
#include "bench/prose.h"
#include "engine/engine.h"
#include "snapshot/snapshot_io.h"

#define BT_QUESTION "What is this document about? Answer in one sentence."
#define BT_DECODE 32

struct bt_opts {
	const char *model, *policy, *popts, *store_dir;
	int threads, reps, full_reps, full_set, json, quant, fresh_pool, load_only;
	int also[SNAP_QUANT_MAX + 1], n_also; /* --also-quants */
	int64_t lengths[8], frac, chunk;
	int n_lengths;
};

struct bt_row {
	int64_t n, budget, units;
	double save_ms, stored_mb, read_mb, read_ms, load_ms, prefill_ms, ttft_ms, full_ms, ingest_tps, decode_tps;
	/* the load split: MB/s of stored bytes per phase, the whole load's */
	double load_mbs, read_mbs, verify_mbs, unzip_mbs, decode_mbs, place_mbs, cpu_mbs;
	double first_load_ms, first_cpu_mbs; /* the first load: into a fresh pool */
};

/* Stored MB per second of a phase that took `s` thread-seconds on `threads`. */
static double
bt_rate(uint64_t bytes, double s, int threads)
{
	return s > 0 ? (double)bytes / 1e6 / (s / threads) : 0.0;
}

static double
bt_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), kv_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Document ids of at most n tokens, as many as the prose allows: the
 * longest character cut (bisected) whose templated document fits. */
static int64_t
bt_document(const struct eng_chat *chat, const char *prose, size_t len, int64_t n, int32_t **ids)
{
	size_t lo = 1, hi = len < (size_t)n * 6 ? len : (size_t)n * 6, cut;
	int64_t got;
	while (lo < hi) { /* largest cut in [lo, hi] with got <= n */
		int32_t *t = NULL;
		cut = lo + (hi - lo + 1) / 2;
		got = eng_chat_doc_ids(chat, prose, cut, &t);
		free(t);
		if (got < 0)
			return got;
		if (got <= n)
			lo = cut;
		else
			hi = cut - 1;
	}
	free(*ids);
	*ids = NULL;
	return eng_chat_doc_ids(chat, prose, lo, ids);
}

static volatile unsigned bt_sink;

/* Every stored byte of the snapshot, read and summed (no decoding);
 * *bytes gets how many. */
static int
bt_read(struct store *s, const uint8_t *doc, const uint8_t *pid, int n_layer, double *sec,
    uint64_t *bytes)
{
	struct store_reader *r = NULL;
	const uint8_t *buf;
	size_t len, i;
	unsigned sum = 0;
	char why[256];
	double t0;
	int l, rc;
	*bytes = 0;
	t0 = eng_now();
	rc = store_read_begin(s, doc, pid, &r, why, sizeof(why));
	for (l = -1; !rc && l < n_layer; l++) {
		rc = store_read_layer(r, l < 0 ? SNAP_HEADER_LAYER : (unsigned)l, &buf, &len, why,
		    sizeof(why));
		for (i = 0; !rc && i < len; i++)
			sum += buf[i];
		*bytes += rc ? 0 : len;
	}
	if (r)
		store_read_end(r);
	*sec = eng_now() - t0;
	if (rc)
		fprintf(stderr, "bench_ttft: read: %s\n", why);
	bt_sink = sum; /* the sum only forces the reads */
	return rc ? -1 : 0;
}

/* First token of the question from a pool; *t_prefill its time. */
static int
bt_first(struct eng_ctx *c, struct eng_kv *kv, const struct eng_model *m, const int32_t *q,
    int64_t n_q, float *logits, int32_t *first)
{
	struct eng_sampler s;
	int rc = eng_forward(c, kv, q, n_q, NULL, logits);
	if (rc)
		return rc;
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	*first = eng_sample(&s, logits, m->hp.n_vocab);
	return 0;
}

static int
bt_length(const struct bt_opts *o, const struct eng_model *m, const struct eng_chat *chat,
    const char *prose, size_t prose_len, int64_t want, struct bt_row *row)
{
	char dir[] = "/tmp/kvsnap-bench-ttft-XXXXXX", why[512] = "", prof[SNAP_MAX_PROFILE];
	struct store_reader *have = NULL;
	uint8_t pid[SNAP_ID_BYTES];
	int32_t *doc = NULL, *q = NULL, *all = NULL, first = 0;
	int64_t n, n_q, r;
	struct eng_policy *p = NULL;
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	struct store *s = NULL;
	struct store_opts so = { .read_only = 0 };
	struct store_doc d;
	struct snap_header h;
	double t0, *rd = calloc((size_t)o->reps, sizeof(double)), *ld = calloc((size_t)o->reps,
	    sizeof(double)), *pf = calloc((size_t)o->reps, sizeof(double)),
	    *fl = calloc((size_t)o->full_reps + 1, sizeof(double));
	double *ph[7];
	struct snap_load_stats ls;
	float *logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
	uint64_t rbytes = 0;
	int rc = -1, e, l, g;

	memset(row, 0, sizeof(*row));
	memset(&h, 0, sizeof(h));
	for (g = 0; g < 7; g++)
		ph[g] = calloc((size_t)o->reps, sizeof(double));
	if (!rd || !ld || !pf || !fl || !logits || !ph[0] || !ph[1] || !ph[2] || !ph[3] || !ph[4] ||
	    !ph[5] || !ph[6] || (!o->store_dir && !mkdtemp(dir))) {
		snprintf(why, sizeof(why), "out of memory or no temp dir");
		dir[0] = 0;
		goto out;
	}
	if (o->store_dir)
		dir[0] = 0; /* kept, not removed */
	/* the re-prefill reads document + question + the answer within the
	 * model's window */
	if (want > m->hp.n_ctx_train - 64)
		want = m->hp.n_ctx_train - 64;
	n = bt_document(chat, prose, prose_len, want, &doc);
	n_q = eng_chat_question_ids(chat, BT_QUESTION, strlen(BT_QUESTION), &q);
	if (n <= 0 || n_q <= 0 || !(all = malloc((size_t)(n + n_q) * sizeof(int32_t)))) {
		snprintf(why, sizeof(why), "cannot tokenize: %s", n <= 0 || n_q <= 0 ?
		    eng_strerror((int)(n <= 0 ? n : n_q)) : "out of memory");
		goto out;
	}
	memcpy(all, doc, (size_t)n * sizeof(int32_t));
	memcpy(all + n, q, (size_t)n_q * sizeof(int32_t));
	row->n = n;
	row->budget = n / o->frac;
	/* ingest and save */
	if (eng_policy_create(&p, o->policy, o->popts, row->budget, why, sizeof(why)) ||
	    eng_policy_bind(p, m, why, sizeof(why)))
		goto out;
	if ((e = eng_ctx_init(&c, m, o->threads, eng_policy_max_chunk(p, o->chunk))) ||
	    (e = eng_kv_init(&kv, m, eng_policy_rows_per_head(p, n, o->chunk,
	    n_q + BT_DECODE + 2)))) {
		snprintf(why, sizeof(why), "engine set-up: %s", eng_strerror(e));
		goto out;
	}
	memset(&d, 0, sizeof(d));
	store_doc_id(doc, (size_t)n * sizeof(int32_t), d.doc_id);
	d.tokens = (uint64_t)n;
	if ((e = snap_profile(prof, sizeof(prof), pid, eng_model_fingerprint(m), p, o->chunk,
	    o->quant))) {
		snprintf(why, sizeof(why), "profile: error %d", e);
		goto out;
	}
	if (store_open(&s, o->store_dir ? o->store_dir : dir, &so, why, sizeof(why)))
		goto out;
	if (o->store_dir && !store_read_begin(s, d.doc_id, pid, &have, why, sizeof(why))) {
		store_read_end(have); /* stored by an earlier run: load that */
		why[0] = 0;
	} else {
		t0 = eng_now();
		if ((e = eng_ingest(c, kv, p, doc, n, o->chunk, NULL))) {
			snprintf(why, sizeof(why), "ingest: %s", eng_strerror(e));
			goto out;
		}
		row->ingest_tps = (double)n / (eng_now() - t0);
		t0 = eng_now();
		if (snap_save(s, &d, kv, m->hp.n_head, eng_model_fingerprint(m), prof, pid, o->quant,
		    SNAP_ZLEVEL_DEFAULT, (uint64_t)n, why, sizeof(why)))
			goto out;
		row->save_ms = (eng_now() - t0) * 1e3;
		for (g = 0; g < o->n_also; g++) { /* for later runs with --store */
			char ap[SNAP_MAX_PROFILE];
			uint8_t aid[SNAP_ID_BYTES];
			if (snap_profile(ap, sizeof(ap), aid, eng_model_fingerprint(m), p, o->chunk,
			    o->also[g]) ||
			    snap_save(s, &d, kv, m->hp.n_head, eng_model_fingerprint(m), ap, aid,
			    o->also[g], SNAP_ZLEVEL_DEFAULT, (uint64_t)n, why, sizeof(why)))
				goto out;
		}
	}
	eng_kv_free(kv);
	kv = NULL;
	for (r = 0; r < o->reps; r++) {
		if (bt_read(s, d.doc_id, pid, m->hp.n_layer, &rd[r], &rbytes))
			goto out;
		t0 = eng_now();
		if (o->fresh_pool) {
			eng_kv_free(kv);
			kv = NULL;
		}
		/* the pool of the rep before taken again, as a session does */
		if (snap_load_into(s, d.doc_id, pid, m, n_q + BT_DECODE + 2, eng_ctx_kern(c), &kv, &h,
		    &ls, why, sizeof(why)))
			goto out;
		ld[r] = eng_now() - t0;
		ph[0][r] = bt_rate(ls.stored_bytes, ls.read_s, ls.threads);
		ph[1][r] = bt_rate(ls.stored_bytes, ls.verify_s, ls.threads);
		ph[2][r] = bt_rate(ls.stored_bytes, ls.unzip_s, ls.threads);
		ph[3][r] = bt_rate(ls.stored_bytes, ls.decode_s, ls.threads);
		ph[4][r] = bt_rate(ls.stored_bytes, ls.place_s, ls.threads);
		ph[5][r] = bt_rate(ls.stored_bytes, ls.total_s, 1);
		ph[6][r] = bt_rate(ls.stored_bytes, ls.read_s + ls.verify_s + ls.unzip_s +
		    ls.decode_s + ls.place_s, ls.threads);
		if (r == 0) {
			row->first_load_ms = ld[0] * 1e3;
			row->first_cpu_mbs = ph[6][0];
		}
		snap_header_free(&h);
		for (row->units = 0, l = 0; l < m->hp.n_layer; l++)
			for (g = 0; g < m->hp.n_head_kv; g++)
				row->units += eng_kv_len(kv, l, g);
		t0 = eng_now();
		if (o->load_only) {
			pf[r] = 0.0;
			continue;
		}
		if ((e = bt_first(c, kv, m, q, n_q, logits, &first))) {
			snprintf(why, sizeof(why), "question: %s", eng_strerror(e));
			goto out;
		}
		pf[r] = eng_now() - t0;
		if (r == o->reps - 1) { /* decode speed, after the first token */
			struct eng_sampler smp;
			int64_t k;
			int32_t t = first;
			eng_sampler_init(&smp, 0.0f, 1.0f, 0);
			t0 = eng_now();
			for (k = 0; k < BT_DECODE; k++) {
				if ((e = eng_forward(c, kv, &t, 1, NULL, logits))) {
					snprintf(why, sizeof(why), "decode: %s", eng_strerror(e));
					goto out;
				}
				t = eng_sample(&smp, logits, m->hp.n_vocab);
			}
			row->decode_tps = BT_DECODE / (eng_now() - t0);
		}
	}
	eng_kv_free(kv);
	kv = NULL;
	for (r = 0; r < o->full_reps; r++) { /* the baseline: read everything again */
		if ((e = eng_kv_init(&kv, m, n + n_q + 2))) {
			snprintf(why, sizeof(why), "full cache: %s", eng_strerror(e));
			goto out;
		}
		t0 = eng_now();
		if ((e = bt_first(c, kv, m, all, n + n_q, logits, &first))) {
			snprintf(why, sizeof(why), "re-prefill: %s", eng_strerror(e));
			goto out;
		}
		fl[r] = eng_now() - t0;
		eng_kv_free(kv);
		kv = NULL;
	}
	for (r = 0; r < o->reps; r++)
		pf[r] += ld[r]; /* ttft per rep, for its median */
	row->read_ms = bt_median(rd, o->reps) * 1e3;
	row->full_ms = o->full_reps ? bt_median(fl, o->full_reps) * 1e3 : 0.0;
	row->read_mbs = bt_median(ph[0], o->reps);
	row->verify_mbs = bt_median(ph[1], o->reps);
	row->unzip_mbs = bt_median(ph[2], o->reps);
	row->decode_mbs = bt_median(ph[3], o->reps);
	row->place_mbs = bt_median(ph[4], o->reps);
	row->load_mbs = bt_median(ph[5], o->reps);
	row->cpu_mbs = bt_median(ph[6], o->reps);
	row->read_mb = (double)rbytes / 1048576.0;
	row->ttft_ms = bt_median(pf, o->reps) * 1e3;
	row->load_ms = bt_median(ld, o->reps) * 1e3;
	row->prefill_ms = row->ttft_ms - row->load_ms;
	{
		struct store_stats st;
		if (store_stats(s, &st, why, sizeof(why)))
			goto out;
		row->stored_mb = (double)(o->store_dir ? ls.stored_bytes : st.stored_bytes) /
		    1048576.0; /* a kept store may hold other snapshots */
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "bench_ttft: %lld tokens: failed%s%s\n", (long long)want,
		    why[0] ? ": " : "", why);
	eng_kv_free(kv);
	eng_ctx_free(c);
	eng_policy_free(p);
	if (s)
		store_close(s);
	if (dir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0) {
			fprintf(stderr, "bench_ttft: could not remove %s\n", dir);
			rc = -1;
		}
	}
	free(doc);
	free(q);
	free(all);
	free(logits);
	free(rd);
	free(ld);
	free(pf);
	free(fl);
	for (g = 0; g < 7; g++)
		free(ph[g]);
	return rc;
}

static int
bt_parse(int argc, char **argv, struct bt_opts *o, char *pname, size_t pcap)
{
	static const struct option opts[] = {
		{ "lengths", required_argument, NULL, 'L' }, { "policy", required_argument, NULL, 'p' },
		{ "frac", required_argument, NULL, 'f' }, { "quant", required_argument, NULL, 'q' },
		{ "chunk", required_argument, NULL, 'c' }, { "reps", required_argument, NULL, 'r' },
		{ "full-reps", required_argument, NULL, 'F' }, { "json", no_argument, NULL, 'j' },
		{ "store", required_argument, NULL, 'S' },
		{ "also-quants", required_argument, NULL, 'A' },
		{ "fresh-pool", no_argument, NULL, 'P' }, { "load-only", no_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 }
	};
	const char *spec = "snapkv";
	int c;

	memset(o, 0, sizeof(*o));
	o->model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
	o->threads = 2;
	o->reps = 3;
	o->frac = 8;
	o->chunk = 512;
	o->quant = SNAP_FP16;
	o->lengths[0] = 2048;
	o->lengths[1] = 4096;
	o->lengths[2] = 8192;
	o->n_lengths = 3;
	while ((c = getopt_long(argc, argv, "m:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'm': o->model = optarg; break;
		case 't': o->threads = atoi(optarg); break;
		case 'p': spec = optarg; break;
		case 'f': o->frac = atoll(optarg); break;
		case 'c': o->chunk = atoll(optarg); break;
		case 'r': o->reps = atoi(optarg); break;
		case 'F': o->full_reps = atoi(optarg); o->full_set = 1; break;
		case 'j': o->json = 1; break;
		case 'S': o->store_dir = optarg; break;
		case 'P': o->fresh_pool = 1; break;
		case 'O': o->load_only = 1; break;
		case 'A': {
			char buf[128], *tok, *save = NULL;
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (o->n_also > SNAP_QUANT_MAX ||
				    (o->also[o->n_also++] = snap_quant_parse(tok)) < 0)
					return -1;
			}
			break;
		}
		case 'q':
			if ((o->quant = snap_quant_parse(optarg)) < 0)
				return -1;
			break;
		case 'L': {
			char *e = optarg;
			o->n_lengths = 0;
			while (*e && o->n_lengths < 8) {
				char *end;
				o->lengths[o->n_lengths] = strtoll(e, &end, 10);
				if (end == e || o->lengths[o->n_lengths++] < 16)
					return -1;
				e = end;
				if (*e == ',')
					e++;
				else if (*e)
					return -1;
			}
			if (*e) /* more than 8 lengths */
				return -1;
			break;
		}
		default: return -1;
		}
	}
	if (!o->full_set)
		o->full_reps = o->reps;
	if (o->reps < 1 || o->full_reps < 0 || o->frac < 1 || o->chunk < 1 || o->threads < 1 ||
	    optind != argc)
		return -1;
	{
		const char *colon = strchr(spec, ':');
		size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
		if (name_len >= pcap)
			return -1;
		snprintf(pname, pcap, "%.*s", (int)name_len, spec);
		o->popts = colon ? colon + 1 : "";
		o->policy = pname;
	}
	return 0;
}

static void
bt_header(const struct bt_opts *o)
{
	const char *be = getenv("KVSNAP_BACKEND");
	printf("policy %s%s%s, budget n/%lld, %s, chunk %lld, %d threads, backend %s, "
	    "median of %d (re-prefill: %d)\n\n", o->policy, *o->popts ? ":" : "", o->popts,
	    (long long)o->frac, snap_quant_name(o->quant), (long long)o->chunk, o->threads,
	    be && *be ? be : "cpu", o->reps, o->full_reps);
	printf("| n | policy | budget | units | stored MiB | read MiB | read ms | load ms | "
	    "question ms | TTFT ms | TTFT / read | re-prefill ms | speedup | ingest tok/s | "
	    "save ms | decode tok/s |\n"
	    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

/* The load split of every row, after the main table. */
static void
bt_print_split(const struct bt_row *rows, int n)
{
	int i;
	printf("\nload split, MB/s of stored bytes: the load's over its wall time; a phase's "
	    "over its CPU seconds per thread; CPU-bound: over all phases' CPU seconds per thread "
	    "(the load's speed when every thread has a core)\n\n"
	    "| n | stored MiB | load ms | load MB/s | CPU-bound MB/s | read | verify | unzip | "
	    "decode | place | question ms | TTFT / question | first load ms | first CPU-bound "
	    "MB/s |\n"
	    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < n; i++) {
		const struct bt_row *r = &rows[i];
		printf("| %lld | %.2f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | "
		    "%.2fx | %.1f | %.0f |\n",
		    (long long)r->n, r->stored_mb, r->load_ms, r->load_mbs, r->cpu_mbs, r->read_mbs,
		    r->verify_mbs,
		    r->unzip_mbs, r->decode_mbs, r->place_mbs, r->prefill_ms,
		    r->prefill_ms > 0 ? r->ttft_ms / r->prefill_ms : 0.0, r->first_load_ms,
		    r->first_cpu_mbs);
	}
}

static void
bt_print(const struct bt_opts *o, const struct bt_row *r)
{
	if (o->json)
		printf("{\"n\":%lld,\"policy\":\"%s\",\"budget\":%lld,\"units\":%lld,"
		    "\"quant\":\"%s\",\"stored_mb\":%.3f,\"read_mb\":%.3f,\"read_ms\":%.3f,"
		    "\"load_ms\":%.2f,\"question_ms\":%.2f,\"ttft_ms\":%.2f,"
		    "\"ttft_over_read\":%.1f,\"reprefill_ms\":%.1f,\"speedup\":%.1f,"
		    "\"ingest_tok_s\":%.1f,\"save_ms\":%.1f,\"decode_tok_s\":%.1f,"
		    "\"load_mb_s\":%.0f,\"cpu_bound_mb_s\":%.0f,\"read_mb_s\":%.0f,\"verify_mb_s\":%.0f,"
		    "\"unzip_mb_s\":%.0f,\"decode_mb_s\":%.0f,\"place_mb_s\":%.0f,"
		    "\"first_load_ms\":%.2f,\"first_cpu_bound_mb_s\":%.0f}\n",
		    (long long)r->n, o->policy, (long long)r->budget, (long long)r->units,
		    snap_quant_name(o->quant), r->stored_mb, r->read_mb, r->read_ms, r->load_ms,
		    r->prefill_ms, r->ttft_ms, r->ttft_ms / r->read_ms, r->full_ms,
		    r->full_ms / r->ttft_ms, r->ingest_tps, r->save_ms, r->decode_tps, r->load_mbs,
		    r->cpu_mbs, r->read_mbs, r->verify_mbs, r->unzip_mbs, r->decode_mbs, r->place_mbs,
		    r->first_load_ms, r->first_cpu_mbs);
	else
		printf("| %lld | %s | %lld | %lld | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.0fx | "
		    "%.0f | %.1fx | %.0f | %.1f | %.1f |\n", (long long)r->n, o->policy,
		    (long long)r->budget, (long long)r->units, r->stored_mb, r->read_mb, r->read_ms,
		    r->load_ms, r->prefill_ms, r->ttft_ms, r->ttft_ms / r->read_ms, r->full_ms,
		    r->full_ms / r->ttft_ms, r->ingest_tps, r->save_ms, r->decode_tps);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	struct bt_opts o;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	char why[512], pname[64], *prose;
	struct bt_row rows[8];
	size_t prose_len;
	int i, rc = 0;

	if (eng_use_backend_env(why, sizeof(why))) {
		fprintf(stderr, "bench_ttft: %s\n", why);
		return 6;
	}
	if (bt_parse(argc, argv, &o, pname, sizeof(pname))) {
		fprintf(stderr, "usage: bench_ttft [-m GGUF] [-t THREADS] [--lengths 2048,4096,8192] "
		    "[--policy NAME[:OPTS]] [--frac F] [--quant fp16|q4|q4kc|q8|q4h|q4kch] [--chunk N] "
		    "[--reps R] [--full-reps R] [--store DIR] [--also-quants LIST] [--fresh-pool] "
		    "[--load-only] [--json]\n");
		return 1;
	}
	why[0] = 0;
	if (eng_model_open(&m, o.model, why, sizeof(why)) ||
	    eng_tok_init(&tok, m->gguf, why, sizeof(why)) ||
	    eng_chat_init(&chat, m->gguf, tok, why, sizeof(why))) {
		fprintf(stderr, "bench_ttft: %s\n", why);
		eng_tok_free(tok);
		eng_model_close(m);
		return 1;
	}
	if (!(prose = bench_prose(&prose_len)) || !prose_len) {
		fprintf(stderr, "bench_ttft: no prose in /usr/share/common-licenses\n");
		eng_chat_free(chat);
		eng_tok_free(tok);
		eng_model_close(m);
		return 1;
	}
	if (!o.json)
		bt_header(&o);
	for (i = 0; i < o.n_lengths && !rc; i++) {
		if ((rc = bt_length(&o, m, chat, prose, prose_len, o.lengths[i], &rows[i])))
			break;
		bt_print(&o, &rows[i]);
	}
	if (!o.json)
		bt_print_split(rows, i);
	free(prose);
	eng_chat_free(chat);
	eng_tok_free(tok);
	eng_model_close(m);
	return rc ? 1 : 0;
}
