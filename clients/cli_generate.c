/*
 * cli_generate.c: `kvsnap generate` and `kvsnap tokenize`, the in-process
 * commands over the plain model (no daemon, no store): the flags, the
 * output and exit codes here; the work is the service's (svc_chat, the
 * one generate step kvsnapd's plain-model requests take; svc_tokenize).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "service/service.h"

/* Stream one generated token to stdout. */
static void
gen_emit(void *arg, int32_t id, const char *text, size_t len)
{
	const int *json = arg;
	if (*json) {
		cli_json_line("token", json_pack("{s:o, s:i}", "text", cli_json_text(text, len),
		    "token", (int)id));
	} else {
		fwrite(text, 1, len, stdout);
	}
	fflush(stdout);
}

static void
gen_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap generate [-m GGUF] -p TEXT [-n N] [--temp T] [--top-p P] [--seed S]\n"
	    "                       [--raw] [-t THREADS] [--json] [-v]\n"
	    "Run the model in-process (no daemon) and stream the answer to stdout.\n"
	    "  -m, --model GGUF   model file (default $KVSNAP_MODEL or the bundled model)\n"
	    "  --backend NAME     cpu or cuda (default $KVSNAP_BACKEND, else cpu)\n"
	    "  -p, --prompt TEXT  the user's message (or the whole prompt with --raw)\n"
	    "  -n N               tokens to generate at most (default 128)\n"
	    "  --temp T           temperature, 0 (greedy, the default) to 2\n"
	    "  --top-p P          nucleus sampling share in (0, 1] (default 1 = off)\n"
	    "  --seed S           sampling seed (default 0)\n"
	    "  --raw              no chat template; control tokens in TEXT are parsed\n"
	    "  -t, --threads N    threads (default: all cores)\n"
	    "  --json             one JSON object per line (token events, then a result)\n"
	    "  -v, --verbose      timings on stderr\n");
}

int
cli_generate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prompt", required_argument, NULL, 'p' },
		CLI_SAMPLE_OPTIONS,
		{ "raw", no_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_opts o = { .shortopts = "p:n:t:v", .longopts = opts,
		.globals = CLI_G_MODEL | CLI_G_BACKEND | CLI_G_JSON, .usage = gen_usage };
	struct cli_sample smp = { .temp = 0.0, .top_p = 1.0, .seed = 0 };
	/* the model alone; the profile is ask's and ingest's default (unused) */
	struct svc_conf sc;
	const char *prompt = NULL;
	long n_max = 128, threads = 0;
	int raw = 0, json, verbose = 0, c, rc, ret = CLI_EXIT_FAILURE;
	struct svc *v = NULL;
	struct svc_session *ss = NULL;
	struct svc_status st;
	struct svc_hooks hk = { .token = gen_emit, .arg = &json };
	struct svc_msg u;
	struct svc_chat_req cr = { 0 };
	struct svc_answer an;
	double t0, t1, t2;

	svc_conf_defaults(&sc);
	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case 'p': prompt = optarg; break;
		case 'n':
			if (cli_long(&o, optarg, 0, 1 << 24, &n_max))
				return CLI_EXIT_USAGE;
			break;
		case 'r': raw = 1; break;
		case 't':
			if (cli_long(&o, optarg, 0, 1024, &threads))
				return CLI_EXIT_USAGE;
			break;
		case 'v': verbose = 1; break;
		default:
			if (cli_sample_flag(&o, c, optarg, &smp))
				return CLI_EXIT_USAGE; /* '?' too: cli_getopt said why */
		}
	}
	if ((rc = cli_operands(&o, argc, argv, 0, 0)))
		return rc;
	if (!prompt) {
		cli_usage_err(&o, "missing -p TEXT (kvsnap generate -p TEXT)");
		return CLI_EXIT_USAGE;
	}
	sc.model = cli_model();
	json = cli_g.json;

	if (!sc.model)
		return cli_model_missing();
	t0 = svc_now();
	if (svc_open(&v, &sc, &st) || svc_session_new(v, (int)threads, &ss, &st)) {
		if (st.step == SVC_AT_MODEL)
			cli_err("cannot load model: %s", st.why);
		else if (st.step == SVC_AT_TOKENIZER)
			cli_err("cannot load the tokenizer of %s: %s", sc.model, st.why);
		else if (st.step == SVC_AT_ENGINE)
			cli_err("cannot set up the engine: %s", st.why);
		else
			cli_err("%s: %s", sc.model, st.why);
		ret = st.step == SVC_AT_ENGINE ? CLI_EXIT_FAILURE : cli_exit_for_engine(st.rc);
		goto out;
	}
	/* the user's text as one user turn in the model's chat template (the
	 * template's pieces with specials parsed, the text without, so text
	 * cannot forge control tokens); --raw parses specials in the text as
	 * llama.cpp's tools do */
	if (raw) {
		cr.prompt = prompt;
		cr.prompt_len = strlen(prompt);
	} else {
		u = (struct svc_msg){ "user", prompt, strlen(prompt) };
		cr.msgs = &u;
		cr.n_msgs = 1;
	}
	cr.max_tokens = n_max;
	cr.temperature = (float)smp.temp;
	cr.top_p = (float)smp.top_p;
	cr.seed = smp.seed;
	t1 = svc_now();
	rc = svc_chat(v, ss, &cr, &hk, &an, &st);
	t2 = svc_now();
	if (rc) {
		if (st.step == SVC_AT_TOKENIZE && (st.rc == SVC_ENG_ERR_ARG ||
		    st.rc == SVC_ENG_ERR_CONTEXT)) { /* empty, or it fills the window */
			cli_err("%s", st.why);
			ret = CLI_EXIT_USAGE;
		} else if (st.step == SVC_AT_TOKENIZE)
			cli_err("cannot tokenize the prompt: %s", st.why);
		else if (st.step == SVC_AT_ENGINE)
			cli_err("cannot set up the engine: %s", st.why);
		else
			cli_err("generation failed: %s", st.why);
		goto out;
	}
	if (json)
		cli_json_line("result", json_pack("{s:I, s:I, s:s, s:f, s:f}", "prompt_tokens",
		    (json_int_t)an.prompt_tokens, "generated_tokens", (json_int_t)an.generated,
		    "stop", svc_stop_name(an.stop), "load_s", t1 - t0, "generate_s", t2 - t1));
	else
		printf("\n");
	fflush(stdout); /* the answer's line ends before the statistics */
	if (verbose)
		fprintf(stderr, "kvsnap: %lld prompt tokens, %lld generated in %.3f s (load %.3f s)\n",
		    (long long)an.prompt_tokens, (long long)an.generated, t2 - t1, t1 - t0);
	ret = CLI_EXIT_OK;
out:
	svc_session_free(ss);
	svc_close(v);
	return ret;
}

static void
tok_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap tokenize [-m GGUF] [--no-special] [--json] TEXT...\n"
	    "Print the token ids of TEXT, space-separated (control tokens written\n"
	    "literally in TEXT are parsed unless --no-special; the words of an\n"
	    "unquoted TEXT are joined by single spaces).\n");
}

int
cli_tokenize(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-special", no_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 }
	};
	struct cli_opts o = { .longopts = opts, .globals = CLI_G_MODEL | CLI_G_JSON,
		.operands = "TEXT...", .usage = tok_usage };
	const char *model_path;
	char *text = NULL;
	int special = 1, json, c, rc, ret = CLI_EXIT_FAILURE;
	struct svc_status st;
	int32_t *ids = NULL;
	int64_t n, i;

	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case 'N': special = 0; break;
		default: return CLI_EXIT_USAGE; /* cli_getopt said why */
		}
	}
	if ((rc = cli_operands(&o, argc, argv, 1, -1)))
		return rc;
	model_path = cli_model();
	json = cli_g.json;
	if (!model_path)
		return cli_model_missing();
	if (!(text = cli_join(argc - optind, argv + optind)))
		return CLI_EXIT_FAILURE;
	if (svc_tokenize(model_path, text, strlen(text), special, &ids, &n, &st)) {
		if (st.step == SVC_AT_MODEL)
			cli_err("cannot load model: %s", st.why);
		else if (st.step == SVC_AT_TOKENIZER)
			cli_err("cannot load the tokenizer of %s: %s", model_path, st.why);
		else
			cli_err("cannot tokenize: %s", st.why);
		ret = st.step == SVC_AT_TOKENIZE ? CLI_EXIT_FAILURE : cli_exit_for_engine(st.rc);
		goto out;
	}
	if (json)
		printf("{\"event\":\"result\",\"ids\":[");
	for (i = 0; i < n; i++)
		printf(json ? "%s%d" : "%s%d", i ? (json ? "," : " ") : "", (int)ids[i]);
	printf(json ? "],\"count\":%lld}\n" : "\n", (long long)n);
	ret = CLI_EXIT_OK;
out:
	free(text);
	free(ids);
	return ret;
}
