/*
 * cli_generate.c: `kvsnap generate` and `kvsnap tokenize`, the in-process
 * commands that run the engine directly (no daemon).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "engine/engine.h"

struct gen_out {
	const struct eng_tok *tok;
	int json;
};

/* Stream one generated token to stdout. */
static int
gen_emit(void *arg, int32_t id)
{
	struct gen_out *o = arg;
	char buf[256];
	int n = eng_tok_decode(o->tok, id, 0, buf, sizeof(buf));
	if (n < 0)
		n = 0;
	if (o->json) {
		cli_json_line("token", json_pack("{s:o, s:i}", "text", cli_json_text(buf, (size_t)n),
		    "token", (int)id));
	} else {
		fwrite(buf, 1, (size_t)n, stdout);
	}
	fflush(stdout);
	return 0;
}

/* Tokenize the prompt: the user's text as one user turn in the model's
 * chat template (the template's pieces with specials parsed, the text
 * without, so text cannot forge control tokens); --raw parses specials in
 * the text as llama.cpp's tools do. */
static int64_t
gen_tokenize_prompt(const struct eng_tok *tok, const struct eng_chat *chat, const char *text,
    int raw, int32_t **out)
{
	struct eng_chat_msg u = { "user", text, strlen(text) };
	size_t cap = strlen(text) + 8;
	int32_t *ids;
	int64_t n;

	*out = NULL;
	if (!raw)
		return eng_chat_messages_ids(chat, &u, 1, out);
	if (!(ids = malloc(cap * sizeof(*ids))))
		return ENG_ERR_NOMEM;
	n = eng_tok_encode(tok, text, strlen(text), 1, ids, (int64_t)cap);
	if (n < 0 || n > (int64_t)cap) {
		free(ids);
		return n < 0 ? n : ENG_ERR_NOMEM;
	}
	*out = ids;
	return n;
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
	const char *model_path, *prompt = NULL;
	long n_max = 128, threads = 0;
	int raw = 0, json, verbose = 0, c, rc, ret = CLI_EXIT_FAILURE;
	const char *stop;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	struct eng_ctx *ctx = NULL;
	struct eng_kv *kv = NULL;
	struct eng_sampler s;
	struct gen_out out;
	int32_t *ids = NULL;
	int64_t n_prompt, n_gen = 0, cap;
	double t0, t1, t2;
	char why[256] = "";

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
	model_path = cli_model();
	json = cli_g.json;

	if (!model_path)
		return cli_model_missing();
	t0 = eng_now();
	rc = eng_model_open(&m, model_path, why, sizeof(why));
	if (rc) {
		cli_err("cannot load model: %s", why);
		return cli_exit_for_engine(rc);
	}
	rc = eng_tok_init(&tok, m->gguf, why, sizeof(why));
	if (rc) {
		cli_err("cannot load the tokenizer of %s: %s", model_path, why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if (!raw && (rc = eng_chat_init(&chat, m->gguf, tok, why, sizeof(why)))) {
		cli_err("%s: %s", model_path, why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	n_prompt = gen_tokenize_prompt(tok, chat, prompt, raw, &ids);
	if (n_prompt < 0) {
		cli_err("cannot tokenize the prompt: %s", eng_strerror((int)n_prompt));
		goto out;
	}
	if (n_prompt == 0) {
		cli_err("the prompt is empty");
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	if (n_prompt > m->hp.n_ctx_train) {
		cli_err("the prompt is %lld tokens; the model's context window is %d",
		    (long long)n_prompt, m->hp.n_ctx_train);
		ret = CLI_EXIT_USAGE;
		goto out;
	}
	cap = n_prompt + n_max;
	if (cap > m->hp.n_ctx_train)
		cap = m->hp.n_ctx_train;
	if ((rc = eng_ctx_init(&ctx, m, (int)threads, 512)) || (rc = eng_kv_init(&kv, m, cap))) {
		cli_err("cannot set up the engine: %s", eng_strerror(rc));
		goto out;
	}
	eng_sampler_init(&s, (float)smp.temp, (float)smp.top_p, smp.seed);
	out.tok = tok;
	out.json = json;
	t1 = eng_now();
	rc = eng_generate(ctx, kv, tok, ids, n_prompt, n_max, &s, gen_emit, &out, &n_gen);
	t2 = eng_now();
	if (rc && rc != ENG_ERR_CONTEXT) {
		cli_err("generation failed: %s", eng_strerror(rc));
		goto out;
	}
	/* the model's end of turn, else the length (or the window) cut it */
	stop = n_gen >= n_max || rc == ENG_ERR_CONTEXT ? "length" : "eos";
	if (json)
		cli_json_line("result", json_pack("{s:I, s:I, s:s, s:f, s:f}", "prompt_tokens",
		    (json_int_t)n_prompt, "generated_tokens", (json_int_t)n_gen, "stop", stop,
		    "load_s", t1 - t0, "generate_s", t2 - t1));
	else
		printf("\n");
	fflush(stdout); /* the answer's line ends before the statistics */
	if (verbose)
		fprintf(stderr, "kvsnap: %lld prompt tokens, %lld generated in %.3f s (load %.3f s)\n",
		    (long long)n_prompt, (long long)n_gen, t2 - t1, t1 - t0);
	ret = CLI_EXIT_OK;
out:
	free(ids);
	eng_kv_free(kv);
	eng_ctx_free(ctx);
	eng_chat_free(chat);
	eng_tok_free(tok);
	eng_model_close(m);
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
	struct eng_gguf *g = NULL;
	struct eng_tok *tok = NULL;
	int32_t *ids = NULL;
	int64_t n, i, cap;
	char why[256] = "";

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
	rc = eng_gguf_open(&g, model_path, why, sizeof(why));
	if (rc) {
		cli_err("cannot load model: %s", why);
		free(text);
		return cli_exit_for_engine(rc);
	}
	rc = eng_tok_init(&tok, g, why, sizeof(why));
	if (rc) {
		cli_err("cannot load the tokenizer of %s: %s", model_path, why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	/* count first: a SentencePiece text may take more ids than bytes
	 * (a leading space, byte fallback of U+2581) */
	cap = eng_tok_encode(tok, text, strlen(text), special, NULL, 0);
	if (cap < 0) {
		cli_err("cannot tokenize: %s", eng_strerror((int)cap));
		goto out;
	}
	ids = malloc((size_t)(cap ? cap : 1) * sizeof(*ids));
	if (!ids)
		goto out;
	n = eng_tok_encode(tok, text, strlen(text), special, ids, cap);
	if (n < 0 || n > cap) {
		cli_err("cannot tokenize: %s", eng_strerror(n < 0 ? (int)n : ENG_ERR_NOMEM));
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
	eng_tok_free(tok);
	eng_gguf_close(g);
	return ret;
}
