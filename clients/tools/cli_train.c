/*
 * cli_train.c: `kvsnap train-heads`: train Locret retaining heads against
 * the frozen model (spec/locret.md §2–§4) and write the sidecar that
 * `--policy locret --opts heads=FILE` loads.
 *
 * One pass over N generated examples (clients/tools/train_data.c), one optimizer
 * step each: for example i, the label pass over prompt ++ answer
 * (eng_train_collect: gold answers teacher-forced, document-QA answers
 * generated greedily by the model), then eng_train_step.  Example i depends
 * only on (seed, i), so a run resumed from a checkpoint (taken every K
 * examples, and at the end) continues exactly where it stopped.
 *
 * Output: a progress bar on a terminal (examples/s, loss and top-10 %
 * overlap averaged over the last 20 examples, ETA), or with --json one JSON
 * object per example on stdout.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clients/cli.h"
#include "clients/tools/tools.h"
#include "engine/engine.h"

#define TRAIN_WINDOW 20
#define TRAIN_CHARS_PER_TOKEN 3.6 /* fortunes prose, SmolLM2 tokenizer (measured ~3.7) */

enum { TRAIN_LABELS_CIS = 0, TRAIN_LABELS_KVZIP = 1 };

struct train_cfg {
	const char *model, *out, *ckpt, *fortunes, *words, *label_cache;
	long examples, d_r, max_tok, min_tok, gen_max, every, threads, eval;
	double label_floor; /* --labels kvzip: labels below log(floor) raised to it (0: none) */
	unsigned long long seed;
	int resume, json, dump, eval_only, labels;
};

/* What every example's label pass needs. */
struct train_env {
	struct eng_ctx *c;
	const struct eng_model *m;
	const struct eng_tok *tok;
	const struct eng_chat *chat;
	const struct td_corpus *co;
	int32_t im_end;
	struct eng_policy *kz; /* --labels kvzip: the scorer, bound, ratio 1 */
	char kz_desc[512];
	int64_t cache_hits;
};

/* CPU seconds of the process (all threads): on a shared machine, cpu_s /
 * threads estimates the wall time the run would take alone. */
static double
train_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void
train_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap train-heads [-m GGUF] [-o SIDECAR] [--examples N] [--d-r D] [--seed S]\n"
	    "                          [--max-tokens T] [--min-tokens T] [--gen-max N]\n"
	    "                          [--checkpoint FILE] [--checkpoint-every K] [--resume] [--eval-only]\n"
	    "                          [--json] [--eval K] [-t THREADS] [--labels cis|kvzip]\n"
	    "                          [--label-cache DIR]\n"
	    "Train Locret retaining heads (spec/locret.md) on generated data: retrieval of\n"
	    "numbers and key-value facts hidden in Debian's fortunes, and document QA\n"
	    "answered by the model itself.  One AdamW step per example.\n"
	    "  -o SIDECAR            output (default models/<model>.locret.gguf)\n"
	    "  --examples N          examples = optimizer steps (default 500)\n"
	    "  --d-r D               hidden width of every head (default 256)\n"
	    "  --seed S              initialization and data seed (default 0)\n"
	    "  --max-tokens T        longest prompt (default 1536)\n"
	    "  --min-tokens T        shortest prompt (default max/4)\n"
	    "  --gen-max N           longest self-generated answer (default 48)\n"
	    "  --checkpoint FILE     checkpoint (default SIDECAR.ckpt; SIDECAR.kvzip.ckpt\n"
	    "                        with --labels kvzip)\n"
	    "  --checkpoint-every K  examples between checkpoints (default 25)\n"
	    "  --resume              continue from the checkpoint\n"
	    "  --eval-only           no training: evaluate (--eval K) and write the heads as\n"
	    "                        they are (initialised, or the --resume checkpoint's)\n"
	    "  --json                one JSON line per example on stdout\n"
	    "  --fortunes DIR        prose (default /usr/share/games/fortunes)\n"
	    "  --words FILE          key words (default /usr/share/dict/american-english)\n"
	    "  --eval K              held-out loss on examples N..N+K-1 before and after\n"
	    "  --dump                print the examples' texts instead of training\n"
	    "  --labels cis|kvzip    what the heads learn: cis (default), the largest attention\n"
	    "                        logit of the answer to each prompt unit (spec/locret.md);\n"
	    "                        kvzip, log of kvzip's score of each unit of the document\n"
	    "                        alone (the attention its reconstruction pays it)\n"
	    "  --label-cache DIR     kvzip labels computed once (default SIDECAR.labels)\n"
	    "  --label-floor F       kvzip labels below log(F) are raised to it (0 < F < 1;\n"
	    "                        default none): the heads fit the units selection can reach\n");
}

/* Prompt ids (document + question in the chat template) of example i,
 * shrinking the document until the prompt fits max_tok; the first *n_doc
 * are the document's (what an ingest reads). */
static int
train_prompt(const struct train_cfg *cf, const struct td_corpus *co,
    const struct eng_chat *chat, int64_t i, struct td_example *ex, int32_t **ids, int64_t *n, int64_t *n_doc)
{
	uint64_t s = (cf->seed + 1) * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)i * 0x632BE59BD9B4E019u;
	long target = cf->min_tok + (long)((s >> 17) % (uint64_t)(cf->max_tok - cf->min_tok + 1));
	double chars = (double)target * TRAIN_CHARS_PER_TOKEN;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		int32_t *d = NULL, *q = NULL;
		int64_t nd, nq;
		if (td_make(co, cf->seed, i, (size_t)chars, ex))
			return CLI_EXIT_FAILURE;
		nd = eng_chat_doc_ids(chat, ex->doc, strlen(ex->doc), &d);
		nq = nd < 0 ? nd : eng_chat_question_ids(chat, ex->question, strlen(ex->question), &q);
		if (nd < 0 || nq < 0) {
			free(d);
			free(q);
			cli_err("example %lld: cannot tokenize", (long long)i);
			td_example_free(ex);
			return CLI_EXIT_FAILURE;
		}
		if (nd + nq <= cf->max_tok || tries == 7) {
			int32_t *all;
			if (nd + nq > cf->max_tok) /* last resort: cut the document's end */
				nd = cf->max_tok - nq > 1 ? cf->max_tok - nq : 1;
			all = realloc(d, (size_t)(nd + nq) * sizeof(int32_t));
			if (!all) {
				free(d);
				free(q);
				td_example_free(ex);
				cli_err("out of memory");
				return CLI_EXIT_FAILURE;
			}
			memcpy(all + nd, q, (size_t)nq * sizeof(int32_t));
			free(q);
			*ids = all;
			*n = nd + nq;
			*n_doc = nd;
			return 0;
		}
		chars *= 0.95 * (double)cf->max_tok / (double)(nd + nq);
		free(d);
		free(q);
		td_example_free(ex);
	}
	return CLI_EXIT_FAILURE;
}

/* Gold answer ids + <|im_end|>. */
static int64_t
train_answer(const struct eng_tok *tok, const char *answer, int32_t im_end, int32_t **ids)
{
	size_t len = strlen(answer);
	int64_t n;
	*ids = malloc((len + 2) * sizeof(int32_t));
	if (!*ids)
		return ENG_ERR_NOMEM;
	n = eng_tok_encode(tok, answer, len, 0, *ids, (int64_t)len + 1);
	if (n < 0 || n > (int64_t)len + 1) {
		free(*ids);
		return n < 0 ? n : ENG_ERR_TOKENIZER;
	}
	(*ids)[n++] = im_end;
	return n;
}

static void
train_bar(const struct train_cfg *cf, int64_t done, double rate, double loss, double ov,
    double eta)
{
	char bar[31];
	int w = (int)(30.0 * (double)done / (double)cf->examples), k;
	for (k = 0; k < 30; k++)
		bar[k] = k < w ? '#' : '.';
	bar[30] = 0;
	fprintf(stderr, "\r[%s] %lld/%ld  %.3f ex/s  loss %.4f  top-10%% %.3f  eta %dm%02ds ",
	    bar, (long long)done, cf->examples, rate, loss, ov, (int)(eta / 60), (int)eta % 60);
	fflush(stderr);
}

/* Example i with its labels (*te, NULL on error with the message printed):
 * cis, over the prompt and the answer (gold, teacher-forced, or the
 * model's own); kvzip, over the document alone, from the label cache or
 * our kvzip policy.  *n_p: the tokens trained on. */
static int
train_example(const struct train_cfg *cf, struct train_env *env, int64_t i, int *kind,
    struct eng_train_example **te, int64_t *n_p)
{
	struct td_example ex;
	int32_t *p = NULL, *a = NULL;
	int64_t n_all = 0, n_doc = 0, n_a = 0;
	uint8_t key[TL_KEY_BYTES];
	int rc = 0, ret;

	*te = NULL;
	if ((ret = train_prompt(cf, env->co, env->chat, i, &ex, &p, &n_all, &n_doc)))
		return ret;
	*kind = ex.kind;
	if (cf->labels == TRAIN_LABELS_KVZIP) {
		*n_p = n_doc;
		rc = eng_train_collect(env->c, p, n_doc, NULL, 0, 0, env->tok, te);
		if (!rc) {
			tl_key(eng_model_fingerprint(env->m), env->kz_desc, p, n_doc, key);
			if (!tl_read(cf->label_cache, key, *te)) {
				env->cache_hits++;
			} else if (!(rc = eng_train_label_kvzip(env->c, env->kz, p, n_doc, 512, *te)) &&
			    tl_write(cf->label_cache, key, *te))
				fprintf(stderr, "train-heads: warning: cannot write the label cache "
				    "%s\n", cf->label_cache);
		}
		if (!rc && cf->label_floor > 0.0) { /* after the cache: it holds raw labels */
			float lo = logf((float)cf->label_floor);
			size_t k, nl = (size_t)(*te)->n_layer * (size_t)(*te)->n_head_kv *
			    (size_t)(*te)->n_p;
			for (k = 0; k < nl; k++)
				(*te)->s[k] = (*te)->s[k] < lo ? lo : (*te)->s[k];
		}
	} else {
		*n_p = n_all;
		if (ex.answer && (n_a = train_answer(env->tok, ex.answer, env->im_end, &a)) < 0)
			rc = (int)n_a;
		else
			rc = eng_train_collect(env->c, p, n_all, a, n_a, cf->gen_max, env->tok, te);
	}
	if (rc) {
		cli_err("example %lld (%s, %lld tokens): %s", (long long)i, td_kind_name(ex.kind),
		    (long long)*n_p, eng_strerror(rc));
		eng_train_example_free(*te);
		*te = NULL;
		ret = cli_exit_for_engine(rc);
	}
	td_example_free(&ex);
	free(p);
	free(a);
	return ret;
}

/* Mean loss and overlap of the held-out examples N .. N+eval−1 (never
 * trained on: the run uses 0 .. N−1), without updating. */
static int
train_eval(const struct train_cfg *cf, struct eng_train *tr, struct train_env *env,
    const char *when)
{
	double loss = 0.0, ov = 0.0;
	long k;
	for (k = 0; k < cf->eval; k++) {
		struct eng_train_example *te = NULL;
		struct eng_train_stats st;
		int64_t n_p;
		int kind, rc, ret = train_example(cf, env, cf->examples + k, &kind, &te, &n_p);
		if (ret)
			return ret;
		rc = eng_train_step(tr, env->c, te, 0, &st);
		eng_train_example_free(te);
		if (rc) {
			cli_err("held-out example %ld: %s", k, eng_strerror(rc));
			return cli_exit_for_engine(rc);
		}
		loss += st.loss;
		ov += st.overlap;
	}
	if (cf->json)
		printf("{\"event\":\"eval\",\"eval\":\"%s\",\"examples\":%ld,\"loss\":%.6g,\"overlap\":%.4f}\n", when,
		    cf->eval, loss / (double)cf->eval, ov / (double)cf->eval);
	else
		fprintf(stderr, "train-heads: held-out loss %s training %.5f, top-10%% overlap %.4f "
		    "(%ld examples)\n", when, loss / (double)cf->eval, ov / (double)cf->eval, cf->eval);
	fflush(stdout);
	return 0;
}

static int
train_run(const struct train_cfg *cf, struct eng_model *m, struct eng_tok *tok,
    const struct eng_chat *chat, const struct td_corpus *co)
{
	struct eng_train *tr = NULL;
	struct eng_ctx *c = NULL;
	struct eng_train_opts o;
	struct train_env env;
	char why[512] = "", recipe[1024], data[1024];
	double t0 = eng_now(), c0 = train_cpu(), wl[TRAIN_WINDOW], wo[TRAIN_WINDOW];
	int64_t i, start, n_done = 0;
	int ret = CLI_EXIT_FAILURE, rc, tty = isatty(2) && !cf->json;
	struct stat sb;

	memset(&env, 0, sizeof(env));
	env.m = m;
	env.tok = tok;
	env.chat = chat;
	env.co = co;
	{
		int32_t t[4];
		if (eng_tok_encode(tok, "<|im_end|>", 10, 1, t, 4) != 1) {
			cli_err("the model's tokenizer has no <|im_end|> token");
			return CLI_EXIT_FAILURE;
		}
		env.im_end = t[0];
	}
	eng_train_opts_default(&o, cf->examples);
	o.d_r = (int)cf->d_r;
	o.seed = cf->seed;
	if (cf->resume && stat(cf->ckpt, &sb) == 0) {
		const struct eng_train_opts *lo;
		if ((rc = eng_train_load(&tr, cf->ckpt, m, why, sizeof(why)))) {
			cli_err("%s", why);
			return cli_exit_for_engine(rc);
		}
		lo = eng_train_get_opts(tr);
		if (lo->d_r != o.d_r || lo->seed != o.seed || lo->n_steps != o.n_steps) {
			cli_err("%s was made with --d-r %d --seed %llu --examples %lld; pass the same "
			    "options to resume", cf->ckpt, lo->d_r, (unsigned long long)lo->seed,
			    (long long)lo->n_steps);
			eng_train_free(tr);
			return CLI_EXIT_USAGE;
		}
		if (!cf->json)
			fprintf(stderr, "train-heads: resuming %s at example %lld\n", cf->ckpt,
			    (long long)eng_train_steps_done(tr));
	} else if ((rc = eng_train_init(&tr, m, &o))) {
		cli_err("cannot set up training: %s", eng_strerror(rc));
		return cli_exit_for_engine(rc);
	}
	if ((rc = eng_ctx_init(&c, m, (int)cf->threads, 512))) {
		cli_err("cannot set up the engine: %s", eng_strerror(rc));
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	env.c = c;
	if (cf->labels == TRAIN_LABELS_KVZIP &&
	    ((rc = eng_policy_create_ratio(&env.kz, "kvzip", "", 1.0, why, sizeof(why))) ||
	    (rc = eng_policy_bind(env.kz, m, why, sizeof(why))))) {
		cli_err("cannot set up the kvzip scorer: %s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if (env.kz)
		eng_policy_describe(env.kz, env.kz_desc, sizeof(env.kz_desc));
	start = eng_train_steps_done(tr);
	if (cf->eval && (ret = train_eval(cf, tr, &env, "before")))
		goto out;
	ret = CLI_EXIT_FAILURE;
	t0 = eng_now(); /* rates count training only */
	c0 = train_cpu();
	for (i = cf->eval_only ? cf->examples : start; i < cf->examples; i++) {
		struct eng_train_example *te = NULL;
		struct eng_train_stats st;
		int64_t n_p = 0;
		double el, avg_l = 0, avg_o = 0, tc, ts;
		int k, nw, kind;

		tc = eng_now();
		if ((ret = train_example(cf, &env, i, &kind, &te, &n_p)))
			goto out;
		ret = CLI_EXIT_FAILURE;
		ts = eng_now();
		rc = eng_train_step(tr, c, te, 1, &st);
		ts = eng_now() - ts;
		tc = eng_now() - tc - ts;
		if (rc) {
			cli_err("example %lld (%s, %lld tokens): %s", (long long)i, td_kind_name(kind),
			    (long long)n_p, eng_strerror(rc));
			eng_train_example_free(te);
			ret = cli_exit_for_engine(rc);
			goto out;
		}
		n_done++;
		wl[i % TRAIN_WINDOW] = st.loss;
		wo[i % TRAIN_WINDOW] = st.overlap;
		nw = n_done < TRAIN_WINDOW ? (int)n_done : TRAIN_WINDOW;
		for (k = 0; k < nw; k++) {
			int j = (int)((i - k) % TRAIN_WINDOW);
			avg_l += wl[j];
			avg_o += wo[j];
		}
		avg_l /= nw;
		avg_o /= nw;
		el = eng_now() - t0;
		if (cf->json) {
			printf("{\"event\":\"example\",\"example\":%lld,\"examples\":%ld,\"kind\":\"%s\",\"prompt_tokens\":%lld,"
			    "\"answer_tokens\":%lld,\"loss\":%.6g,\"reg\":%.6g,\"smooth\":%.6g,"
			    "\"overlap\":%.4f,\"lr\":%.6g,\"loss_avg\":%.6g,\"overlap_avg\":%.4f,"
			    "\"label_s\":%.2f,\"step_s\":%.2f,\"examples_per_s\":%.4f,\"elapsed_s\":%.1f,"
			    "\"cpu_s\":%.1f}\n",
			    (long long)i + 1, cf->examples, td_kind_name(kind), (long long)n_p,
			    (long long)te->n_a, st.loss, st.reg, st.smooth, st.overlap, st.lr, avg_l,
			    avg_o, tc, ts, (double)n_done / el, el, train_cpu() - c0);
			fflush(stdout);
		} else if (tty) {
			double rate = (double)n_done / el;
			train_bar(cf, i + 1, rate, avg_l, avg_o, (double)(cf->examples - i - 1) / rate);
		}
		eng_train_example_free(te);
		if ((i + 1) % cf->every == 0 && i + 1 < cf->examples &&
		    (rc = eng_train_save(tr, cf->ckpt, why, sizeof(why)))) {
			cli_err("%s", why);
			ret = cli_exit_for_engine(rc);
			goto out;
		}
	}
	if (tty)
		fprintf(stderr, "\n");
	if (!cf->eval_only && cf->eval &&
	    (ret = train_eval(cf, tr, &env, "after")))
		goto out;
	ret = CLI_EXIT_FAILURE;
	if (!cf->eval_only && (rc = eng_train_save(tr, cf->ckpt, why, sizeof(why)))) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	snprintf(recipe, sizeof(recipe),
	    "kvsnap train-heads --examples %ld --d-r %ld --seed %llu --min-tokens %ld "
	    "--max-tokens %ld --gen-max %ld; one pass, batch 1; Smooth-L1 + %.4g x adjacent MSE "
	    "(summed over layers); AdamW lr %.3g betas (%.3g, %.3g) eps %.3g wd %.3g; clip by value "
	    "%.3g; linear warmup %lld of %lld steps then linear decay to 0; init N(0, %.6f^2); fp32; "
	    "labels: %s%s",
	    cf->examples, cf->d_r, cf->seed, cf->min_tok, cf->max_tok, cf->gen_max, o.alpha, o.lr,
	    o.beta1, o.beta2, o.eps, o.wd, o.clip, (long long)eng_train_get_opts(tr)->warmup,
	    (long long)o.n_steps, o.sigma, env.kz ? "--labels kvzip: log of the score of " :
	    "max scaled pre-softmax logit of the answer tokens (spec/locret.md)",
	    env.kz ? env.kz_desc : "");
	if (env.kz && cf->label_floor > 0.0)
		snprintf(recipe + strlen(recipe), sizeof(recipe) - strlen(recipe),
		    ", floored at log(%g) (--label-floor)", cf->label_floor);
	snprintf(data, sizeof(data),
	    "clients/tools/train_data.c: Debian fortunes + fortunes-min entries (%zu) as prose, "
	    "wamerican words as keys; 1/4 number retrieval (repeated filler or prose), 1/4 "
	    "key-value facts in prose (gold answers), 1/4 document QA and 1/4 questions on the "
	    "ending, answered greedily by the model (<= %ld tokens); disjoint from "
	    "bench/quality_data.h",
	    co->n_para, cf->gen_max);
	if ((rc = eng_train_write_heads(tr, cf->out, env.kz ? "kvzip" : "cis", recipe, data, why,
	    sizeof(why)))) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if (!cf->json)
		fprintf(stderr, "train-heads: %lld examples in %.1f s (%lld kvzip labels from %s); "
		    "heads written to %s\n", (long long)n_done, eng_now() - t0,
		    (long long)env.cache_hits, env.kz ? cf->label_cache : "-", cf->out);
	ret = CLI_EXIT_OK;
out:
	eng_policy_free(env.kz);
	eng_ctx_free(c);
	eng_train_free(tr);
	return ret;
}

/* --dump: the examples' texts and prompt lengths, no training. */
static int
train_dump(const struct train_cfg *cf, const struct eng_chat *chat, const struct td_corpus *co)
{
	int64_t i;
	for (i = 0; i < cf->examples; i++) {
		struct td_example ex;
		int32_t *p = NULL;
		int64_t n_p = 0, n_doc = 0;
		int ret = train_prompt(cf, co, chat, i, &ex, &p, &n_p, &n_doc);
		if (ret)
			return ret;
		printf("=== example %lld (%s, %lld prompt tokens)\n%s\n--- question: %s\n--- answer: %s\n",
		    (long long)i, td_kind_name(ex.kind), (long long)n_p, ex.doc, ex.question,
		    ex.answer ? ex.answer : "(the model's own)");
		td_example_free(&ex);
		free(p);
	}
	return CLI_EXIT_OK;
}

int
cli_train_heads(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "examples", required_argument, NULL, 'N' },
		{ "d-r", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "max-tokens", required_argument, NULL, 'T' },
		{ "min-tokens", required_argument, NULL, 'M' },
		{ "gen-max", required_argument, NULL, 'g' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "checkpoint-every", required_argument, NULL, 'k' },
		{ "resume", no_argument, NULL, 'r' },
		{ "eval-only", no_argument, NULL, 'O' },
		{ "threads", required_argument, NULL, 't' },
		{ "fortunes", required_argument, NULL, 'F' },
		{ "words", required_argument, NULL, 'W' },
		{ "dump", no_argument, NULL, 'D' },
		{ "eval", required_argument, NULL, 'E' },
		{ "labels", required_argument, NULL, 'L' },
		{ "label-cache", required_argument, NULL, 'C' },
		{ "label-floor", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	struct train_cfg cf;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	struct td_corpus co;
	char why[256] = "", out_buf[4096], ck_buf[4200], lc_buf[4200];
	struct cli_opts o = { .shortopts = "o:t:", .longopts = opts,
		.globals = CLI_G_MODEL | CLI_G_BACKEND | CLI_G_JSON, .usage = train_usage };
	long seed = 0;
	int opt, rc, ret;

	memset(&cf, 0, sizeof(cf));
	memset(&co, 0, sizeof(co));
	cf.fortunes = "/usr/share/games/fortunes";
	cf.words = "/usr/share/dict/american-english";
	cf.examples = 500;
	cf.d_r = 256;
	cf.max_tok = 1536;
	cf.gen_max = 48;
	cf.every = 25;
	while ((opt = cli_getopt(&o, argc, argv)) != -1) {
		switch (opt) {
		case 'o': cf.out = optarg; break;
		case 'N': if (cli_long(&o, optarg, 1, 100000000, &cf.examples)) return CLI_EXIT_USAGE; break;
		case 'd': if (cli_long(&o, optarg, 1, 65536, &cf.d_r)) return CLI_EXIT_USAGE; break;
		case 'S': if (cli_long(&o, optarg, 0, 1L << 62, &seed)) return CLI_EXIT_USAGE; break;
		case 'T': if (cli_long(&o, optarg, 64, 1 << 20, &cf.max_tok)) return CLI_EXIT_USAGE; break;
		case 'M': if (cli_long(&o, optarg, 32, 1 << 20, &cf.min_tok)) return CLI_EXIT_USAGE; break;
		case 'g': if (cli_long(&o, optarg, 1, 4096, &cf.gen_max)) return CLI_EXIT_USAGE; break;
		case 'c': cf.ckpt = optarg; break;
		case 'k': if (cli_long(&o, optarg, 1, 100000000, &cf.every)) return CLI_EXIT_USAGE; break;
		case 'r': cf.resume = 1; break;
		case 'O': cf.eval_only = 1; break;
		case 't': if (cli_long(&o, optarg, 0, 1024, &cf.threads)) return CLI_EXIT_USAGE; break;
		case 'F': cf.fortunes = optarg; break;
		case 'W': cf.words = optarg; break;
		case 'D': cf.dump = 1; break;
		case 'E': if (cli_long(&o, optarg, 0, 100000, &cf.eval)) return CLI_EXIT_USAGE; break;
		case 'L':
			if (!strcmp(optarg, "cis"))
				cf.labels = TRAIN_LABELS_CIS;
			else if (!strcmp(optarg, "kvzip"))
				cf.labels = TRAIN_LABELS_KVZIP;
			else {
				cli_usage_err(&o, "--labels needs cis or kvzip, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'C': cf.label_cache = optarg; break;
		case 'B': {
			char *end;
			cf.label_floor = strtod(optarg, &end);
			if (*end || !(cf.label_floor > 0.0 && cf.label_floor < 1.0)) {
				cli_usage_err(&o, "--label-floor needs a number between 0 and 1, "
				    "got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		}
		default: return CLI_EXIT_USAGE; /* cli_getopt said why */
		}
	}
	if ((rc = cli_operands(&o, argc, argv, 0, 0)))
		return rc;
	cf.model = cli_model();
	if (!cf.model)
		return cli_model_missing();
	cf.json = cli_g.json;
	cf.seed = (unsigned long long)seed;
	if (!cf.min_tok)
		cf.min_tok = cf.max_tok / 4 > 32 ? cf.max_tok / 4 : 32;
	if (cf.min_tok > cf.max_tok) {
		cli_usage_err(&o, "--min-tokens %ld is above --max-tokens %ld", cf.min_tok,
		    cf.max_tok);
		return CLI_EXIT_USAGE;
	}
	if (!cf.out) {
		const char *base = strrchr(cf.model, '/');
		size_t len;
		base = base ? base + 1 : cf.model;
		len = strlen(base);
		if (len > 5 && !strcmp(base + len - 5, ".gguf"))
			len -= 5;
		snprintf(out_buf, sizeof(out_buf), "models/%.*s.locret.gguf", (int)len, base);
		cf.out = out_buf;
	}
	if (!cf.ckpt) { /* per label kind: a resume never mixes the two */
		snprintf(ck_buf, sizeof(ck_buf), "%s%s.ckpt", cf.out,
		    cf.labels == TRAIN_LABELS_KVZIP ? ".kvzip" : "");
		cf.ckpt = ck_buf;
	}
	if (!cf.label_cache) {
		snprintf(lc_buf, sizeof(lc_buf), "%s.labels", cf.out);
		cf.label_cache = lc_buf;
	}
	if ((rc = eng_model_open(&m, cf.model, why, sizeof(why)))) {
		cli_err("cannot load model: %s", why);
		return cli_exit_for_engine(rc);
	}
	if (cf.max_tok + cf.gen_max + 64 > m->hp.n_ctx_train) {
		cli_err("--max-tokens %ld + --gen-max %ld exceed the model's window %d", cf.max_tok,
		    cf.gen_max, m->hp.n_ctx_train);
		eng_model_close(m);
		return CLI_EXIT_USAGE;
	}
	if ((rc = eng_tok_init(&tok, m->gguf, why, sizeof(why))) ||
	    (rc = eng_chat_init(&chat, m->gguf, tok, why, sizeof(why)))) {
		cli_err("cannot load the tokenizer: %s", why);
		eng_tok_free(tok);
		eng_model_close(m);
		return cli_exit_for_engine(rc);
	}
	if (td_corpus_load(&co, cf.fortunes, cf.words)) {
		ret = CLI_EXIT_NOT_FOUND;
	} else {
		ret = cf.dump ? train_dump(&cf, chat, &co) : train_run(&cf, m, tok, chat, &co);
		td_corpus_free(&co);
	}
	eng_chat_free(chat);
	eng_tok_free(tok);
	eng_model_close(m);
	return ret;
}
