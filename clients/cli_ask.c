/*
 * cli_ask.c: `kvsnap ask`: the whole kvsnap path in one process, no daemon
 * and nothing stored: compress a document (its text by formats/: PDF,
 * HTML, Markdown, text) with a policy (chunked ingest), then answer a
 * question from the compressed cache (service/ask.c: svc_ask).  With
 * --compare it also times a full re-prefill and prints both times to first
 * token.  Here: the flags, the file, the messages and exit codes.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "common/paths.h"
#include "service/service.h"

#define ASK_MAX_DOC SVC_DOC_MAX /* bytes */

/* An answer token's text to stdout as it comes. */
static void
ask_emit(void *arg, int32_t id, const char *text, size_t len)
{
	(void)arg;
	(void)id;
	if (len > 0)
		fwrite(text, 1, len, stdout);
	fflush(stdout);
}

/* svc_open's or svc_session_new's failure, in ask's words: an exit code. */
static int
ask_open_fail(const struct svc_status *st)
{
	if (st->step == SVC_AT_POLICY) {
		cli_err("%s", st->why[0] ? st->why : svc_eng_strerror(st->rc));
		return CLI_EXIT_USAGE;
	}
	if (st->step == SVC_AT_ENGINE) {
		cli_err("cannot set up the engine");
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_MODEL)
		cli_err("cannot load model: %s", st->why);
	else if (st->step == SVC_AT_TOKENIZER)
		cli_err("cannot load the tokenizer: %s", st->why);
	else
		cli_err("%s", st->why[0] ? st->why : svc_eng_strerror(st->rc));
	return cli_exit_for_engine(st->rc);
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
	    "  --ratio R         share of the document's units kept (default 1/2)\n"
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
	struct svc_conf sc; /* the default profile (service.h), as ingest's */
	struct svc *v = NULL;
	struct svc_session *ss = NULL;
	struct svc_status st;
	struct svc_hooks hk = { .token = ask_emit };
	struct svc_doc_text text = { 0 };
	struct svc_ask_req ar = { 0 };
	struct svc_asked a;
	long n_max = 128, threads = 0;
	int compare = 0, verbose = 0, c, rc, ret = CLI_EXIT_FAILURE;
	char *doc = NULL, *question = NULL;
	size_t doc_len = 0;

	svc_conf_defaults(&sc);
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
	if (!(sc.model = cli_model()))
		return cli_model_missing();
	if (svc_conf_check(&sc, &st)) /* before the file is read */
		return ask_open_fail(&st);
	/* an unquoted question's words, joined by single spaces */
	question = cli_join(argc - optind - 1, argv + optind + 1);
	doc = question ? cli_read_file(argv[optind], ASK_MAX_DOC, &doc_len) : NULL;
	if (!doc) {
		ret = CLI_EXIT_NOT_FOUND;
		goto out;
	}
	/* its text, as ingest reads it (formats/), before the model loads */
	if (svc_doc_text(doc, doc_len, &text, &st)) {
		cli_err("%s %s", argv[optind], st.why);
		ret = st.step == SVC_AT_FORMAT && st.rc == SVC_FMT_ERR_UNSUPPORTED ? CLI_EXIT_CORRUPT :
		    st.step == SVC_AT_FORMAT && st.rc == SVC_FMT_ERR_NOMEM ? CLI_EXIT_FAILURE :
		    CLI_EXIT_USAGE;
		goto out;
	}
	if (svc_open(&v, &sc, &st) || svc_session_new(v, (int)threads, &ss, &st)) {
		ret = ask_open_fail(&st);
		goto out;
	}
	ar.doc = text.text;
	ar.doc_len = text.len;
	ar.question = question;
	ar.question_len = strlen(question);
	ar.max_tokens = n_max;
	ar.compare = compare;
	if (svc_ask(v, ss, &ar, &hk, &a, &st)) {
		cli_err("%s", st.why);
		ret = st.step == SVC_AT_TOKENIZE && st.rc == SVC_ENG_ERR_CONTEXT ? CLI_EXIT_USAGE :
		    CLI_EXIT_FAILURE;
		goto out;
	}
	printf("\n");
	if (verbose || compare) {
		/* the kept share, as ls shows it (no snapshot here, so no bytes
		 * to compare); a cache that kept everything is not "compressed" */
		int whole = (double)a.kept >= a.full_units;
		char share[64];
		if (whole)
			snprintf(share, sizeof(share), "kept all %.0f units (nothing evicted)",
			    a.full_units);
		else
			snprintf(share, sizeof(share), "kept %lld of %.0f units (%.1f %%)",
			    (long long)a.kept, a.full_units,
			    a.full_units > 0 ? 100.0 * (double)a.kept / a.full_units : 0.0);
		fprintf(stderr,
		    "kvsnap: %s: document %lld tokens, %s, ingest %.2f s (%.0f tok/s)\n"
		    "kvsnap: question %lld tokens, time to first token %.3f s from the %s cache",
		    a.policy, (long long)a.doc_tokens, share, a.ingest_s,
		    (double)a.doc_tokens / a.ingest_s, (long long)a.question_tokens, a.ttft_s,
		    whole ? "whole" : "compressed");
		if (compare)
			fprintf(stderr, " vs %.3f s re-reading the document (%.0fx faster)", a.full_s,
			    a.ttft_s > 0 ? a.full_s / a.ttft_s : 0.0);
		fprintf(stderr, "; %lld answer tokens\n", (long long)a.generated);
	}
	ret = CLI_EXIT_OK;
out:
	free(question);
	free(doc);
	svc_doc_text_free(&text);
	svc_session_free(ss);
	svc_close(v);
	return ret;
}
