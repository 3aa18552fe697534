/*
 * cli_ask.c: `kvsnap ask`: the whole kvsnap path in one process, no daemon:
 * compress a document (its text by formats/: PDF, HTML, Markdown, text)
 * with a policy (chunked ingest), then answer a question
 * from the compressed cache.  With --compare it also answers from a full
 * re-prefill and prints both times to first token.
 *
 * The document sits in the chat template as the start of the user turn
 * (DESIGN.md §1); the question, the end of the turn and the assistant header
 * are prefilled over the compressed cache at positions n, n+1, …
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "common/paths.h"
#include "engine/engine.h"
#include "service/service.h"
#include "formats/formats.h"

#define ASK_MAX_DOC (64u << 20) /* bytes */

struct ask_out {
	const struct eng_tok *tok;
};

static int
ask_emit(void *arg, int32_t id)
{
	struct ask_out *o = arg;
	char buf[256];
	int n = eng_tok_decode(o->tok, id, 0, buf, sizeof(buf));
	if (n > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	fflush(stdout);
	return 0;
}

static void
ask_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap ask [-m GGUF] [--policy NAME] [--budget N|--ratio R] [--chunk N] [--opts K=V,...]\n"
	    "                  [-n N] [-t THREADS] [--compare] [-v] FILE QUESTION...\n"
	    "Compress FILE with an eviction policy, then answer QUESTION from the compressed\n"
	    "cache (in-process; no daemon).  The words of an unquoted QUESTION are joined by\n"
	    "single spaces.\n"
	    "  -m, --model GGUF  model file (default $KVSNAP_MODEL or the bundled model)\n"
	    "  --backend NAME    cpu or cuda (default $KVSNAP_BACKEND, else cpu)\n"
	    "  --policy NAME     kvzip, snapkv, adakv, locret, ... (default kvzip; each is\n"
	    "                    described in %s/POLICIES.md)\n"
	    "  --ratio R         share of the document's units kept (default 1/4)\n"
	    "  --budget N        units kept per KV head per layer instead of a ratio\n"
	    "  --chunk N         ingest chunk size in tokens, 1 to 65536 (default 512)\n"
	    "  --opts K=V,...    policy options (POLICIES.md)\n"
	    "  -n N              answer tokens at most (default 128)\n"
	    "  -t, --threads N   threads (default: all cores)\n"
	    "  --compare         also answer from a full re-prefill and compare times\n"
	    "  -v, --verbose     statistics on stderr\n", kv_doc_dir());
}

/* ask keeps no snapshot: --quant does not apply */
static const struct option ask_elsewhere[] = {
	{ "quant", required_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 },
};

int
cli_ask(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, CLI_O_PROFILE },
		{ "budget", required_argument, NULL, CLI_O_PROFILE },
		{ "ratio", required_argument, NULL, CLI_O_PROFILE },
		{ "chunk", required_argument, NULL, CLI_O_PROFILE },
		{ "opts", required_argument, NULL, CLI_O_PROFILE },
		{ "threads", required_argument, NULL, 't' },
		{ "compare", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_opts o = { .shortopts = "n:t:v", .longopts = opts,
		.globals = CLI_G_MODEL | CLI_G_BACKEND, .operands = "FILE QUESTION...",
		.usage = ask_usage, .elsewhere = ask_elsewhere,
		.hint = "ask stores no snapshot; %s belongs to ingest" };
	/* the QA bench's choice: kvzip keeping a quarter (as ingest) */
	struct svc_conf sc = { .policy = "kvzip", .opts = "", .budget = 1024, .ratio = 0.25,
		.chunk = 512 };
	const char *model_path, *pname, *popts;
	long budget, chunk, n_max = 128, threads = 0;
	int compare = 0, verbose = 0, c, rc, ret = CLI_EXIT_FAILURE;
	double ratio;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	struct eng_policy *p = NULL;
	struct eng_ctx *ctx = NULL;
	struct eng_kv *kv = NULL;
	struct eng_sampler s;
	struct ask_out out;
	int32_t *ids = NULL, *qids = NULL, *all, first;
	int64_t n_doc, n_q, n_all = 0, n_gen = 0, kept = 0, l;
	float *logits = NULL;
	char *doc = NULL, *question = NULL, why[256] = "";
	size_t doc_len = 0;
	double t0, t_ingest, t_ttft, t_full = 0.0;

	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case CLI_O_PROFILE:
			if (cli_profile_flag(&o, &sc, optarg))
				return CLI_EXIT_USAGE;
			break;
		case 'C': compare = 1; break;
		case 'v': verbose = 1; break;
		case 'n':
			if (cli_long(&o, optarg, 1, 1 << 20, &n_max))
				return CLI_EXIT_USAGE;
			break;
		case 't':
			if (cli_long(&o, optarg, 0, 1024, &threads))
				return CLI_EXIT_USAGE;
			break;
		default: return CLI_EXIT_USAGE; /* cli_getopt said why */
		}
	}
	if (cli_profile_done(&o))
		return CLI_EXIT_USAGE;
	if ((rc = cli_operands(&o, argc, argv, 2, -1)))
		return rc;
	model_path = cli_model();
	pname = sc.policy;
	popts = sc.opts;
	budget = sc.budget;
	ratio = sc.ratio;
	chunk = sc.chunk;
	if (!model_path)
		return cli_model_missing();
	{
		char *eff = eng_policy_default_opts(pname, popts, model_path);
		rc = !eff ? ENG_ERR_NOMEM : ratio > 0.0 ?
		    eng_policy_create_ratio(&p, pname, eff, ratio, why, sizeof(why)) :
		    eng_policy_create(&p, pname, eff, budget, why, sizeof(why));
		free(eff);
	}
	if (rc) {
		cli_err("%s", why[0] ? why : eng_strerror(rc));
		return CLI_EXIT_USAGE;
	}
	/* an unquoted question's words, joined by single spaces */
	question = cli_join(argc - optind - 1, argv + optind + 1);
	doc = question ? cli_read_file(argv[optind], ASK_MAX_DOC, &doc_len) : NULL;
	if (!doc) {
		ret = CLI_EXIT_NOT_FOUND;
		goto out;
	}
	{ /* its text, as ingest reads it (formats/), before the model loads */
		struct fmt_doc fd;
		if ((rc = fmt_extract(doc, doc_len, NULL, ASK_MAX_DOC, &fd, why, sizeof(why)))) {
			cli_err("%s %s", argv[optind], why);
			ret = rc == FMT_ERR_UNSUPPORTED ? CLI_EXIT_CORRUPT :
			    rc == FMT_ERR_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
			goto out;
		}
		free(doc);
		doc = fd.text;
		doc_len = fd.len;
	}
	rc = eng_model_open(&m, model_path, why, sizeof(why));
	if (rc) {
		cli_err("cannot load model: %s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if ((rc = eng_tok_init(&tok, m->gguf, why, sizeof(why))) ||
	    (rc = eng_chat_init(&chat, m->gguf, tok, why, sizeof(why)))) {
		cli_err("cannot load the tokenizer: %s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if ((rc = eng_policy_bind(p, m, why, sizeof(why)))) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	/* the document, then the question that ends the user turn */
	n_doc = eng_chat_doc_ids(chat, doc, doc_len, &ids);
	n_q = n_doc < 0 ? n_doc : eng_chat_question_ids(chat, question,
	    strlen(question), &qids);
	if (n_doc < 0 || n_q < 0) {
		cli_err("cannot tokenize: %s", eng_strerror((int)(n_doc < 0 ? n_doc : n_q)));
		goto out;
	}
	n_all = n_doc + n_q;
	all = realloc(ids, (size_t)n_all * sizeof(int32_t));
	if (!all)
		goto out;
	ids = all;
	memcpy(ids + n_doc, qids, (size_t)n_q * sizeof(int32_t));
	if (n_all + n_max > m->hp.n_ctx_train) {
		cli_err("document + question is %lld tokens; with %ld to generate that exceeds the "
		    "model's context window (%d)", (long long)n_all, n_max, m->hp.n_ctx_train);
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
	if (!logits ||
	    (rc = eng_ctx_init(&ctx, m, (int)threads, eng_policy_max_chunk(p, chunk))) ||
	    (rc = eng_kv_init(&kv, m, eng_policy_rows_per_head(p, n_doc, chunk,
	    n_all - n_doc + n_max)))) {
		cli_err("cannot set up the engine");
		goto out;
	}
	t0 = eng_now();
	if ((rc = eng_ingest(ctx, kv, p, ids, n_doc, chunk, NULL))) {
		cli_err("ingest failed: %s", eng_strerror(rc));
		goto out;
	}
	t_ingest = eng_now() - t0;
	for (l = 0; l < m->hp.n_layer; l++)
		kept += eng_kv_layer_units(kv, (int)l);
	t0 = eng_now();
	if ((rc = eng_forward(ctx, kv, ids + n_doc, n_all - n_doc, NULL, logits))) {
		cli_err("question prefill failed: %s", eng_strerror(rc));
		goto out;
	}
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	first = eng_sample(&s, logits, m->hp.n_vocab);
	t_ttft = eng_now() - t0;
	out.tok = tok;
	if (!eng_tok_is_eog(tok, first)) {
		ask_emit(&out, first);
		rc = eng_generate(ctx, kv, tok, &first, 1, n_max - 1, &s, ask_emit, &out, &n_gen);
		if (rc && rc != ENG_ERR_CONTEXT) {
			cli_err("generation failed: %s", eng_strerror(rc));
			goto out;
		}
		n_gen++;
	}
	printf("\n");
	if (compare) {
		struct eng_kv *full = NULL;
		if (!eng_kv_init(&full, m, n_all + 1)) {
			t0 = eng_now();
			rc = eng_forward(ctx, full, ids, n_all, NULL, logits);
			t_full = eng_now() - t0;
			eng_kv_free(full);
		}
	}
	if (verbose || compare) {
		double full_units = (double)n_doc * m->hp.n_layer * m->hp.n_head_kv;
		/* the kept share, as ls shows it (no snapshot here, so no bytes
		 * to compare); a cache that kept everything is not "compressed" */
		int whole = (double)kept >= full_units;
		char share[64];
		if (whole)
			snprintf(share, sizeof(share), "kept all %.0f units (nothing evicted)", full_units);
		else
			snprintf(share, sizeof(share), "kept %lld of %.0f units (%.1f %%)", (long long)kept,
			    full_units, full_units > 0 ? 100.0 * (double)kept / full_units : 0.0);
		fprintf(stderr,
		    "kvsnap: %s: document %lld tokens, %s, ingest %.2f s (%.0f tok/s)\n"
		    "kvsnap: question %lld tokens, time to first token %.3f s from the %s cache",
		    eng_policy_name(p), (long long)n_doc, share, t_ingest, (double)n_doc / t_ingest,
		    (long long)(n_all - n_doc), t_ttft, whole ? "whole" : "compressed");
		if (compare)
			fprintf(stderr, " vs %.3f s re-reading the document (%.0fx faster)", t_full,
			    t_ttft > 0 ? t_full / t_ttft : 0.0);
		fprintf(stderr, "; %lld answer tokens\n", (long long)n_gen);
	}
	ret = CLI_EXIT_OK;
out:
	free(question);
	free(doc);
	free(ids);
	free(qids);
	free(logits);
	eng_kv_free(kv);
	eng_ctx_free(ctx);
	eng_policy_free(p);
	eng_chat_free(chat);
	eng_tok_free(tok);
	eng_model_close(m);
	return ret;
}
