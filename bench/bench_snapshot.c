/*
 * bench_snapshot.c: snapshot sizes and speeds (issue: snapshot store, §6).
 *
 * One prose document (the license texts every Debian system has, cut to N
 * tokens) is ingested once per policy spec; the compressed pool is then
 * encoded with every quantization scheme, written to a fresh store, and
 * loaded back.  Per row: units kept, bytes per unit before and after zstd,
 * snapshot bytes against the document's full fp16 KV cache, q4 error,
 * encode + write and read + decode speeds, and the time to load the
 * snapshot into a pool ready for a question.
 *
 * usage: bench_snapshot [-m GGUF] [-n TOKENS] [-t THREADS] [--chunk N]
 *        [--policy NAME:OPTS@BUDGET]... [--zlevel L] [--quants fp16,q4,...]
 *
 * --quants: the stored forms measured, by snap_quant_parse name (default
 * fp16,q4,q4kc, the table bench/RESULTS.md started with).
 */
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "bench/backend.h"
#include "bench/prose.h"
#include "engine/engine.h"
#include "snapshot/snapshot_io.h"

#define BS_MAX_SPECS 16

/* Sum of zstd content sizes of records: the bytes before compression. */
static uint64_t
bs_raw(uint8_t **rec, size_t *len, int n)
{
	uint64_t s = 0;
	int i;
	for (i = 0; i < n; i++) {
		unsigned long long c = ZSTD_getFrameContentSize(rec[i], len[i]);
		s += c == ZSTD_CONTENTSIZE_UNKNOWN || c == ZSTD_CONTENTSIZE_ERROR ? len[i] : c;
	}
	return s;
}

struct bs_row {
	int64_t units;
	uint64_t raw, stored;
	double enc_s, put_s, load_s;
	struct snap_qerr qe;
};

/* Encode, store and load one pool with one quantization scheme. */
static int
bs_measure(struct eng_model *m, struct eng_kv *kv, struct eng_policy *p, int64_t chunk,
    int quant, int zlevel, int64_t n_tok, struct bs_row *r)
{
	char dir[] = "/tmp/kvsnap-bench-snap-XXXXXX", why[512] = "", prof[SNAP_MAX_PROFILE];
	uint8_t pid[SNAP_ID_BYTES], **rec;
	size_t *len;
	struct snap_header h;
	struct store *s = NULL;
	struct store_opts so = { .read_only = 0 };
	struct store_doc d;
	struct eng_kv *back = NULL;
	double t0;
	int l, rc;

	memset(r, 0, sizeof(*r));
	memset(&h, 0, sizeof(h));
	rec = calloc((size_t)kv->n_layer, sizeof(*rec));
	len = calloc((size_t)kv->n_layer, sizeof(*len));
	if (!rec || !len || !mkdtemp(dir))
		return -1;
	rc = snap_profile(prof, sizeof(prof), pid, eng_model_fingerprint(m), p, chunk, quant);
	if (!rc)
		rc = snap_header_from_kv(&h, kv, m->hp.n_head);
	h.quant = quant;
	t0 = eng_now();
	for (l = 0; !rc && l < kv->n_layer; l++)
		rc = snap_layer_encode(kv, l, &h, zlevel, &rec[l], &len[l]);
	r->enc_s = eng_now() - t0;
	for (l = 0; !rc && l < kv->n_layer; l++) {
		struct snap_qerr e;
		int64_t mm;
		r->stored += len[l];
		if (snap_layer_qerr(kv, l, &h, &e) == 0) {
			r->qe.k_max = e.k_max > r->qe.k_max ? e.k_max : r->qe.k_max;
			r->qe.v_max = e.v_max > r->qe.v_max ? e.v_max : r->qe.v_max;
			r->qe.k_rms += e.k_rms * e.k_rms / kv->n_layer;
			r->qe.v_rms += e.v_rms * e.v_rms / kv->n_layer;
		}
		for (mm = 0; mm < kv->n_head_kv; mm++)
			r->units += eng_kv_len(kv, l, (int)mm);
	}
	r->raw = rc ? 0 : bs_raw(rec, len, kv->n_layer);
	/* through the store: encode again inside snap_save (timed end to end) */
	memset(&d, 0, sizeof(d));
	store_doc_id(&n_tok, sizeof(n_tok), d.doc_id);
	d.tokens = (uint64_t)n_tok;
	if (!rc)
		rc = store_open(&s, dir, &so, why, sizeof(why));
	t0 = eng_now();
	if (!rc)
		rc = snap_save(s, &d, kv, m->hp.n_head, eng_model_fingerprint(m), prof, pid, quant,
		    zlevel, (uint64_t)n_tok, why, sizeof(why));
	r->put_s = eng_now() - t0;
	snap_header_free(&h);
	t0 = eng_now();
	if (!rc)
		rc = snap_load(s, d.doc_id, pid, m, 64, &back, &h, why, sizeof(why));
	r->load_s = eng_now() - t0;
	if (rc)
		fprintf(stderr, "bench_snapshot: %s: %s\n", snap_quant_name(quant), why);
	r->qe.k_rms = r->qe.k_rms > 0 ? sqrt(r->qe.k_rms) : 0;
	r->qe.v_rms = r->qe.v_rms > 0 ? sqrt(r->qe.v_rms) : 0;
	eng_kv_free(back);
	snap_header_free(&h);
	if (s)
		store_close(s);
	for (l = 0; l < kv->n_layer; l++)
		free(rec[l]);
	free(rec);
	free(len);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_snapshot: could not remove %s\n", dir);
	}
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' }, { "chunk", required_argument, NULL, 'c' },
		{ "zlevel", required_argument, NULL, 'z' }, { "quants", required_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 }
	};
	int quants[SNAP_QUANT_MAX + 1] = { SNAP_FP16, SNAP_Q4, SNAP_Q4_KC }, n_quants = 3, qi;
	char *list, *tok_save, *name_q;
	const char *model = "models/SmolLM2-135M-Instruct.Q4_1.gguf", *specs[BS_MAX_SPECS];
	int n_specs = 0, threads = 0, zlevel = SNAP_ZLEVEL_DEFAULT, c, si, q;
	int64_t n_tok = 8192, chunk = 512;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	char why[512], *text;
	size_t text_len;
	int32_t *ids;
	int64_t n_ids;
	if (bench_backend()) /* KVSNAP_BACKEND=cuda runs this bench on the GPU */
		return 6;

	while ((c = getopt_long(argc, argv, "m:n:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'm': model = optarg; break;
		case 'n': n_tok = atoll(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'c': chunk = atoll(optarg); break;
		case 'z': zlevel = atoi(optarg); break;
		case 'p': if (n_specs < BS_MAX_SPECS) specs[n_specs++] = optarg; break;
		case 'K':
			n_quants = 0;
			list = optarg;
			for (name_q = strtok_r(list, ",", &tok_save); name_q;
			    name_q = strtok_r(NULL, ",", &tok_save)) {
				if ((q = snap_quant_parse(name_q)) < 0 || n_quants > SNAP_QUANT_MAX) {
					fprintf(stderr, "bench_snapshot: --quants: '%s' (%s)\n", name_q,
					    SNAP_QUANT_NAMES);
					return 1;
				}
				quants[n_quants++] = q;
			}
			break;
		default:
			fprintf(stderr, "usage: bench_snapshot [-m GGUF] [-n TOKENS] [-t THREADS] "
			    "[--chunk N] [--policy NAME:OPTS@BUDGET]... [--zlevel L] [--quants LIST]\n");
			return 1;
		}
	}
	if (!n_specs) {
		specs[n_specs++] = "snapkv@1024";
		specs[n_specs++] = "snapkv@256";
		specs[n_specs++] = "adakv@512";
	}
	if (eng_model_open(&m, model, why, sizeof(why)) ||
	    eng_tok_init(&tok, m->gguf, why, sizeof(why))) {
		fprintf(stderr, "bench_snapshot: %s\n", why);
		return 1;
	}
	if (!(text = bench_prose(&text_len)) || (n_ids = eng_tok_encode(tok, text, text_len, 0,
	    (ids = malloc(text_len * sizeof(int32_t))), (int64_t)text_len)) < n_tok) {
		fprintf(stderr, "bench_snapshot: not enough prose for %lld tokens\n",
		    (long long)n_tok);
		return 1;
	}
	if (n_tok > m->hp.n_ctx_train)
		n_tok = m->hp.n_ctx_train;
	printf("document: %lld tokens of license prose; full fp16 KV = %.2f MiB\n\n",
	    (long long)n_tok,
	    (double)n_tok * m->hp.n_layer * m->hp.n_head_kv * m->hp.head_dim * 4 / 1048576.0);
	printf("| policy | budget | quant | units | B/unit raw | B/unit zstd | snapshot MiB | vs full "
	    "fp16 | K err max / rms | V err max / rms | encode+put MB/s | load ms | load MB/s |\n");
	printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (si = 0; si < n_specs; si++) {
		char name[64], popts[512] = "";
		const char *at = strrchr(specs[si], '@'), *colon = strchr(specs[si], ':');
		long budget = at ? atol(at + 1) : 1024;
		size_t nl = (size_t)((colon && (!at || colon < at) ? colon : at ? at : specs[si] +
		    strlen(specs[si])) - specs[si]);
		struct eng_policy *p = NULL;
		struct eng_ctx *ctx = NULL;
		struct eng_kv *kv = NULL;
		double full = (double)n_tok * m->hp.n_layer * m->hp.n_head_kv * m->hp.head_dim * 4;
		snprintf(name, sizeof(name), "%.*s", (int)nl, specs[si]);
		if (colon && (!at || colon < at))
			snprintf(popts, sizeof(popts), "%.*s", (int)((at ? at : colon + strlen(colon)) -
			    colon - 1), colon + 1);
		if (eng_policy_create(&p, name, popts, budget, why, sizeof(why)) ||
		    eng_ctx_init(&ctx, m, threads, eng_policy_max_chunk(p, chunk)) ||
		    eng_kv_init(&kv, m, eng_policy_rows_per_head(p, n_tok, chunk, 64)) ||
		    eng_ingest(ctx, kv, p, ids, n_tok, chunk, NULL)) {
			fprintf(stderr, "bench_snapshot: %s: cannot ingest (%s)\n", specs[si], why);
			return 1;
		}
		for (qi = 0; qi < n_quants; qi++) {
			struct bs_row r;
			q = quants[qi];
			if (bs_measure(m, kv, p, chunk, q, zlevel, n_tok, &r))
				return 1;
			printf("| %s | %ld | %s | %lld | %.1f | %.1f | %.3f | %.2f %% | %.4f / %.5f | "
			    "%.4f / %.5f | %.0f | %.1f | %.0f |\n", name, budget, snap_quant_name(q),
			    (long long)r.units, (double)r.raw / (double)r.units,
			    (double)r.stored / (double)r.units, (double)r.stored / 1048576.0,
			    100.0 * (double)r.stored / full, r.qe.k_max, r.qe.k_rms, r.qe.v_max,
			    r.qe.v_rms, (double)r.raw / r.put_s / 1e6, r.load_s * 1e3,
			    (double)r.raw / r.load_s / 1e6);
			fflush(stdout);
		}
		eng_kv_free(kv);
		eng_ctx_free(ctx);
		eng_policy_free(p);
	}
	free(ids);
	free(text);
	eng_tok_free(tok);
	eng_model_close(m);
	return 0;
}
