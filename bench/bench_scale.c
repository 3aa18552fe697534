/*
 * bench_scale.c: ingest speed and peak memory against document length.
 *
 * usage: bench_scale [-m GGUF] [-p POLICY] [-o OPTS] [-b BUDGET] [-c CHUNK]
 *                    [-t THREADS] -n TOKENS [--json]
 * Ingests one synthetic document of TOKENS tokens (English prose from the
 * GPL text, repeated, tokenized once) with the policy and prints tokens/s and
 * the process's peak RSS.  Run one length per process (bench/scale.sh does),
 * since peak RSS only grows: a flat column across lengths is the claim that
 * memory is bounded by budget + chunk, whatever the document length.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/backend.h"
#include "engine/engine.h"

/* Fill ids[0..n) with the tokens of a prose text, repeated. */
static int
scale_tokens(const struct eng_tok *tok, int32_t *ids, int64_t n)
{
	static char text[64 << 10];
	FILE *f = fopen("/usr/share/common-licenses/GPL-3", "r");
	size_t len = 0;
	int64_t have, i;
	int32_t *base;

	if (f) {
		len = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	if (len < 1000) {
		const char *fb = "The quick brown fox jumps over the lazy dog. ";
		for (len = 0; len + strlen(fb) < sizeof(text) - 1; len += strlen(fb))
			memcpy(text + len, fb, strlen(fb));
	}
	base = malloc(sizeof(text) * sizeof(int32_t));
	if (!base)
		return -1;
	have = eng_tok_encode(tok, text, len, 0, base, (int64_t)sizeof(text));
	if (have <= 0) {
		free(base);
		return -1;
	}
	for (i = 0; i < n; i++)
		ids[i] = base[i % have];
	free(base);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 }
	};
	const char *path = "models/SmolLM2-135M-Instruct.Q4_1.gguf", *pname = "snapkv", *popts = "";
	int64_t n = 8192, budget = 1024, chunk = 512;
	int threads = 2, json = 0, c, rc;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_policy *p = NULL;
	struct eng_ctx *ctx = NULL;
	struct eng_kv *kv = NULL;
	struct rusage ru;
	int32_t *ids;
	float *logits;
	char why[256], desc[512], *eff;
	double t0, dt;
	if (bench_backend()) /* KVSNAP_BACKEND=cuda runs this bench on the GPU */
		return 6;

	while ((c = getopt_long(argc, argv, "m:p:o:b:c:t:n:", lopts, NULL)) != -1) {
		switch (c) {
		case 'm': path = optarg; break;
		case 'p': pname = optarg; break;
		case 'o': popts = optarg; break;
		case 'b': budget = atoll(optarg); break;
		case 'c': chunk = atoll(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'n': n = atoll(optarg); break;
		case 'j': json = 1; break;
		default: return 1;
		}
	}
	/* the policy's defaults for this model (Locret's sidecar beside it) */
	if (!(eff = eng_policy_default_opts(pname, popts, path))) {
		fprintf(stderr, "bench_scale: out of memory\n");
		return 1;
	}
	if (eng_model_open(&m, path, why, sizeof(why)) ||
	    eng_tok_init(&tok, m->gguf, why, sizeof(why)) ||
	    eng_policy_create(&p, pname, eff, budget, why, sizeof(why))) {
		fprintf(stderr, "bench_scale: %s\n", why);
		return 1;
	}
	free(eff);
	ids = malloc((size_t)n * sizeof(int32_t));
	logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
	if (!ids || !logits || scale_tokens(tok, ids, n)) {
		fprintf(stderr, "bench_scale: cannot build the document\n");
		return 1;
	}
	if (eng_ctx_init(&ctx, m, threads, eng_policy_max_chunk(p, chunk)) ||
	    eng_kv_init(&kv, m, eng_policy_rows_per_head(p, n, chunk, 64))) {
		fprintf(stderr, "bench_scale: cannot allocate\n");
		return 1;
	}
	t0 = eng_now();
	rc = eng_ingest(ctx, kv, p, ids, n, chunk, logits);
	dt = eng_now() - t0;
	if (rc) {
		fprintf(stderr, "bench_scale: ingest failed: %s\n", eng_strerror(rc));
		return 1;
	}
	getrusage(RUSAGE_SELF, &ru);
	eng_policy_describe(p, desc, sizeof(desc));
	if (json)
		printf("{\"tokens\":%lld,\"policy\":\"%s\",\"chunk\":%lld,\"tok_s\":%.1f,"
		    "\"peak_rss_mib\":%.1f,\"units_layer0\":%lld}\n",
		    (long long)n, desc, (long long)chunk, (double)n / dt, ru.ru_maxrss / 1024.0,
		    (long long)eng_kv_layer_units(kv, 0));
	else
		printf("%-8lld %-50s %8.1f tok/s  peak RSS %7.1f MiB  units/layer %lld\n",
		    (long long)n, desc, (double)n / dt, ru.ru_maxrss / 1024.0,
		    (long long)eng_kv_layer_units(kv, 0));
	eng_kv_free(kv);
	eng_ctx_free(ctx);
	eng_policy_free(p);
	eng_tok_free(tok);
	eng_model_close(m);
	free(ids);
	free(logits);
	return 0;
}
