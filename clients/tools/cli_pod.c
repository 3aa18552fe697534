/*
 * cli_pod.c: `kvsnap pod-calibrate`: PoD's offline layer grouping
 * (spec/pod.md §3.2) into a block-map file for `--policy pod --opts map=FILE`.
 *
 * --regroup MAP skips the model: it groups the similarity matrix stored in
 * an earlier map again with another δ or target saving (a δ sweep costs one
 * calibration).
 *
 * The texts (a file, or every regular file of a directory in name order)
 * are tokenized and concatenated into one stream, which is cut into N
 * consecutive samples of n_cal tokens: any corpus gives the same samples
 * every time, and a short corpus gives fewer samples (at least one).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clients/cli.h"
#include "clients/tools/tools.h"
#include "engine/engine.h"

#define POD_MAX_TEXT (64u << 20)

struct pod_stream {
	int32_t *ids;
	int64_t n, cap;
};

/* Tokenize one file and append it to the stream. */
static int
pod_add_file(const struct eng_tok *tok, const char *path, struct pod_stream *st)
{
	size_t len;
	char *text = cli_read_file(path, POD_MAX_TEXT, &len);
	int64_t need, r;
	if (!text)
		return CLI_EXIT_NOT_FOUND;
	need = (int64_t)len + 1;
	if (st->n + need > st->cap) {
		int32_t *nb = realloc(st->ids, (size_t)(st->n + need) * sizeof(int32_t));
		if (!nb) {
			free(text);
			cli_err("out of memory");
			return CLI_EXIT_FAILURE;
		}
		st->ids = nb;
		st->cap = st->n + need;
	}
	r = eng_tok_encode(tok, text, len, 0, st->ids + st->n, st->cap - st->n);
	free(text);
	if (r < 0 || r > st->cap - st->n) {
		cli_err("%s: cannot tokenize: %s", path, eng_strerror(r < 0 ? (int)r : ENG_ERR_ARG));
		return CLI_EXIT_FAILURE;
	}
	st->n += r;
	return 0;
}

/* A file, or the regular files of a directory in name order. */
static int
pod_add_texts(const struct eng_tok *tok, const char *path, struct pod_stream *st)
{
	struct stat sb;
	char **names, full[4096];
	size_t n, i;
	int ret = 0;

	if (stat(path, &sb)) {
		cli_err("cannot open %s", path);
		return CLI_EXIT_NOT_FOUND;
	}
	if (!S_ISDIR(sb.st_mode))
		return pod_add_file(tok, path, st);
	if (cli_dir_names(path, &names, &n)) {
		cli_err("cannot read directory %s", path);
		return CLI_EXIT_NOT_FOUND;
	}
	for (i = 0; i < n && !ret; i++) {
		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		if (!stat(full, &sb) && S_ISREG(sb.st_mode))
			ret = pod_add_file(tok, full, st);
	}
	kv_strv_free(names, n);
	if (!ret && st->n == 0) {
		cli_err("%s holds no text", path);
		ret = CLI_EXIT_NOT_FOUND;
	}
	return ret;
}

static void
pod_progress(void *arg, int done, int total)
{
	(void)arg;
	if (!isatty(2))
		return;
	fprintf(stderr, "\rpod-calibrate: %d/%d texts", done, total);
	if (done == total)
		fprintf(stderr, "\n");
}

static void
pod_print(const struct eng_pod_map *pm, const char *path)
{
	int h, l;
	printf("block map: %s (%d samples of %d tokens, q %d)\n", path, pm->n_texts, pm->n_cal,
	    pm->q);
	printf("delta %.4f, non-anchor fraction f %.3f, key saving up to %.1f %%\n", pm->delta,
	    pm->f, 50.0 * pm->f);
	for (h = 0; h < pm->n_head_kv; h++) {
		printf("KV head %d blocks:", h);
		for (l = 0; l < pm->n_layer; l++)
			printf(pm->anc[h * pm->n_layer + l] == l && l ? " | %d" : " %d", l);
		printf("\n");
	}
}

/* Group an earlier map's similarities again. */
static int
pod_regroup(const char *in, double delta, double target, const char *out)
{
	struct eng_pod_map *old = NULL, *pm = NULL;
	char why[256] = "";
	int rc;
	if ((rc = eng_pod_map_load(&old, in, NULL, why, sizeof(why)))) {
		cli_err("%s", why);
		return cli_exit_for_engine(rc);
	}
	if (!old->sim) {
		cli_err("%s holds no similarity matrix to regroup", in);
		eng_pod_map_free(old);
		return CLI_EXIT_CORRUPT;
	}
	rc = eng_pod_map_from_sim(&pm, old->sim, old->n_layer, old->n_head, old->n_head_kv, delta,
	    target);
	if (!rc) {
		pm->n_texts = old->n_texts;
		pm->q = old->q;
		pm->n_cal = old->n_cal;
		memcpy(pm->model_fp, old->model_fp, sizeof(pm->model_fp));
		rc = eng_pod_map_save(pm, out, why, sizeof(why));
	}
	if (rc)
		cli_err("regroup: %s", why[0] ? why : eng_strerror(rc));
	else
		pod_print(pm, out);
	eng_pod_map_free(old);
	eng_pod_map_free(pm);
	return rc ? cli_exit_for_engine(rc) : CLI_EXIT_OK;
}

static void
pod_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f,
	    "usage: kvsnap pod-calibrate [-m GGUF] [--texts PATH] [-N N] [--tokens N] [-q N]\n"
	    "                            [--delta D | --target-saving S] [-t THREADS] -o FILE\n"
	    "       kvsnap pod-calibrate --regroup MAP [--delta D | --target-saving S] -o FILE\n"
	    "Group layers for PoD (spec/pod.md): run the model over sample texts, compare the\n"
	    "attention of every layer pair (1 - Jensen-Shannon) and write the block map.\n"
	    "  --texts PATH        a file or a directory of text files\n"
	    "                      (default /usr/share/common-licenses)\n"
	    "  -N N                samples (default 32)\n"
	    "  --tokens N          tokens per sample (default min(2048, context))\n"
	    "  -q N                attention rows per sample: its last N queries (default 16)\n"
	    "  --delta D           similarity threshold (default 0.5)\n"
	    "  --target-saving S   choose delta so that the key saving is about S (0..0.5)\n"
	    "  --regroup MAP       regroup MAP's stored similarities (no model run)\n"
	    "  -o FILE             the block map to write (JSON)\n");
}

int
cli_pod_calibrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "texts", required_argument, NULL, 'T' },
		{ "tokens", required_argument, NULL, 'n' },
		{ "delta", required_argument, NULL, 'd' },
		{ "target-saving", required_argument, NULL, 'S' },
		{ "threads", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "regroup", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_opts co = { .shortopts = "N:q:t:o:", .longopts = opts,
		.globals = CLI_G_MODEL | CLI_G_BACKEND, .usage = pod_usage };
	const char *model_path, *texts = "/usr/share/common-licenses";
	const char *out_path = NULL, *regroup = NULL;
	long n_samples = 32, n_cal = 0, q = 16, threads = 0;
	double delta = 0.5, target = -1.0;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_ctx *c = NULL;
	struct eng_pod_map *pm = NULL;
	struct pod_stream st = { NULL, 0, 0 };
	const int32_t **tx = NULL;
	int64_t *lens = NULL;
	char why[256] = "";
	int ret = CLI_EXIT_FAILURE, rc, opt, n_tx, i;

	while ((opt = cli_getopt(&co, argc, argv)) != -1) {
		switch (opt) {
		case 'T': texts = optarg; break;
		case 'N': if (cli_long(&co, optarg, 1, 100000, &n_samples)) return CLI_EXIT_USAGE; break;
		case 'n': if (cli_long(&co, optarg, 2, 1 << 20, &n_cal)) return CLI_EXIT_USAGE; break;
		case 'q': if (cli_long(&co, optarg, 1, 4096, &q)) return CLI_EXIT_USAGE; break;
		case 'd':
			if (cli_double(&co, optarg, -1e9, 0, 1e9, &delta))
				return CLI_EXIT_USAGE;
			break;
		case 'S':
			if (cli_double(&co, optarg, 0.0, 0, 0.5, &target))
				return CLI_EXIT_USAGE;
			break;
		case 't': if (cli_long(&co, optarg, 0, 1024, &threads)) return CLI_EXIT_USAGE; break;
		case 'o': out_path = optarg; break;
		case 'R': regroup = optarg; break;
		default: return CLI_EXIT_USAGE; /* cli_getopt said why */
		}
	}
	if ((rc = cli_operands(&co, argc, argv, 0, 0)))
		return rc;
	if (!out_path) {
		cli_usage_err(&co, "missing -o FILE, the block map to write");
		return CLI_EXIT_USAGE;
	}
	model_path = cli_model();
	if (regroup)
		return pod_regroup(regroup, delta, target, out_path);
	if (!model_path)
		return cli_model_missing();
	if ((rc = eng_model_open(&m, model_path, why, sizeof(why)))) {
		cli_err("cannot load model: %s", why);
		return cli_exit_for_engine(rc);
	}
	if ((rc = eng_tok_init(&tok, m->gguf, why, sizeof(why)))) {
		cli_err("cannot load the tokenizer: %s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if (n_cal == 0 || n_cal > m->hp.n_ctx_train)
		n_cal = m->hp.n_ctx_train < 2048 ? m->hp.n_ctx_train : 2048;
	if ((ret = pod_add_texts(tok, texts, &st)))
		goto out;
	ret = CLI_EXIT_FAILURE;
	if (st.n < 2) {
		cli_err("%s: too little text", texts);
		goto out;
	}
	/* consecutive samples of n_cal tokens; a short corpus gives one, shorter */
	n_tx = (int)(st.n / n_cal < n_samples ? st.n / n_cal : n_samples);
	if (n_tx == 0)
		n_tx = 1;
	tx = calloc((size_t)n_tx, sizeof(*tx));
	lens = calloc((size_t)n_tx, sizeof(*lens));
	if (!tx || !lens || (rc = eng_ctx_init(&c, m, (int)threads, 512))) {
		cli_err("out of memory");
		goto out;
	}
	for (i = 0; i < n_tx; i++) {
		tx[i] = st.ids + (int64_t)i * n_cal;
		lens[i] = st.n - (int64_t)i * n_cal < n_cal ? st.n - (int64_t)i * n_cal : n_cal;
	}
	rc = eng_pod_calibrate(c, tx, lens, n_tx, (int)q, delta, target, &pm, pod_progress, NULL,
	    why, sizeof(why));
	if (rc) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if ((rc = eng_pod_map_save(pm, out_path, why, sizeof(why)))) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	pod_print(pm, out_path);
	ret = CLI_EXIT_OK;
out:
	eng_pod_map_free(pm);
	eng_ctx_free(c);
	free(tx);
	free(lens);
	free(st.ids);
	eng_tok_free(tok);
	eng_model_close(m);
	return ret;
}
