/*
 * cli_local.c: `kvsnap ingest --local` and `kvsnap query --local`: the
 * daemon's two jobs run in-process against the store in the state
 * directory (the daemon path comes with kvsnapd).
 *
 * ingest: each document is read, tokenized as the start of a user turn,
 * compressed by chunked ingest with the profile's policy and stored as one
 * snapshot (one LMDB transaction).  query: the snapshot of the profile (or
 * the document's only snapshot) is loaded into a pool and the question is
 * prefilled over it at positions n, n+1, …, then the answer is decoded.
 */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/cli.h"
#include "engine/engine.h"
#include "service/service.h"
#include "snapshot/snapshot_io.h"
#include "storage/store.h"

#define LOCAL_MAX_DOC (64u << 20)

/* The profile and engine settings both commands share. */
struct local {
	const char *model_path, *policy, *opts, *state, *name, *quant_name;
	long budget, chunk, threads, n_max;
	double ratio; /* > 0: --ratio, in place of the budget */
	int budget_set;
	int local, json, quant;
	struct eng_model *m;
	struct eng_tok *tok;
	struct eng_policy *p;
	struct eng_ctx *c;
	struct store *s;
	char profile[SNAP_MAX_PROFILE];
	uint8_t profile_id[SNAP_ID_BYTES];
};

static void
local_usage(FILE *f, const char *cmd)
{
	if (!strcmp(cmd, "ingest"))
		fprintf(f, "usage: kvsnap ingest --local [OPTIONS] FILE|DIR... [--name NAME]\n"
		    "Compress documents into snapshots in the store (a DIR: its regular files).\n");
	else
		fprintf(f, "usage: kvsnap query --local [OPTIONS] DOC QUESTION [-n N]\n"
		    "Answer QUESTION from DOC's snapshot; tokens stream to stdout.\n");
	fprintf(f,
	    "  --local          run in this process (without it: through kvsnapd, see\n"
	    "                   kvsnap %s -h)\n"
	    "  --state DIR      the store (default $KVSNAP_STATE, else ~/.local/state/kvsnap)\n"
	    "  -m, --model GGUF the model (default $KVSNAP_MODEL, else the bundled one)\n"
	    "  --policy NAME    eviction policy (default kvzip; docs/POLICIES.md)\n"
	    "  --ratio R        share of each document's units kept (default 1/4)\n"
	    "  --budget N       units kept per KV head per layer instead of a ratio\n"
	    "  --chunk N        ingest chunk size (default 512)\n"
	    "  --opts K=V,...   policy options\n"
	    "  --quant Q        fp16, q4 or q4kc (default fp16)\n"
	    "  -t N             threads (default: all cores)\n"
	    "  --json           one JSON object per line\n", cmd);
}

static int
local_parse(int argc, char **argv, struct local *L)
{
	static const struct option opts[] = {
		{ "local", no_argument, NULL, 'L' },
		{ "state", required_argument, NULL, 'S' },
		{ "model", required_argument, NULL, 'm' },
		{ "policy", required_argument, NULL, 'P' },
		{ "budget", required_argument, NULL, 'b' },
		{ "ratio", required_argument, NULL, 'R' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "opts", required_argument, NULL, 'o' },
		{ "quant", required_argument, NULL, 'q' },
		{ "threads", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = 0, ratio_set = 0;

	memset(L, 0, sizeof(*L));
	L->model_path = cli_default_model();
	L->policy = "kvzip"; /* the QA bench's choice (bench/RESULTS.md) */
	L->opts = "";
	L->quant_name = "fp16";
	L->budget = 1024;
	L->ratio = 0.25;
	L->chunk = 512;
	L->n_max = 128;
	optind = 1;
	while ((c = getopt_long(argc, argv, "m:t:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'L': L->local = 1; break;
		case 'S': L->state = optarg; break;
		case 'm': L->model_path = optarg; break;
		case 'P': L->policy = optarg; break;
		case 'b':
			bad |= cli_parse_long(optarg, 1, 1L << 30, &L->budget) != 0;
			L->budget_set = 1;
			break;
		case 'R':
			ratio_set = 1;
			if (eng_parse_ratio(optarg, &L->ratio)) {
				cli_err("--ratio needs a share in (0, 1] such as 0.25 or 1/4, got '%s'",
				    optarg);
				bad = 1;
			}
			break;
		case 'c': bad |= cli_parse_long(optarg, 1, 1L << 20, &L->chunk) != 0; break;
		case 'o': L->opts = optarg; break;
		case 'q': L->quant_name = optarg; break;
		case 't': bad |= cli_parse_long(optarg, 0, 1024, &L->threads) != 0; break;
		case 'n': bad |= cli_parse_long(optarg, 1, 1L << 20, &L->n_max) != 0; break;
		case 'N': L->name = optarg; break;
		case 'j': L->json = 1; break;
		case 'h': local_usage(stdout, argv[0]); exit(CLI_EXIT_OK);
		default: bad = 1;
		}
	}
	if (ratio_set && L->budget_set) {
		cli_err("give --budget or --ratio, not both");
		bad = 1;
	}
	if (L->budget_set)
		L->ratio = 0.0; /* the budget form replaces the default ratio */
	if ((L->quant = snap_quant_parse(L->quant_name)) < 0) {
		cli_err("unknown --quant '%s' (fp16, q4, q4kc)", L->quant_name);
		bad = 1;
	}
	if (bad) {
		local_usage(stderr, argv[0]);
		return -1;
	}
	return optind;
}

static void
local_close(struct local *L)
{
	if (L->s)
		store_close(L->s);
	eng_ctx_free(L->c);
	eng_policy_free(L->p);
	eng_tok_free(L->tok);
	eng_model_close(L->m);
}

/* Model, tokenizer, policy, profile and store. */
static int
local_open(struct local *L, int read_only)
{
	struct store_opts so = { 0, 0, read_only };
	const char *dir = cli_state_dir(L->state);
	char why[512] = "";
	int rc;

	if (!dir) {
		cli_err("no state directory: pass --state DIR or set KVSNAP_STATE");
		return CLI_EXIT_USAGE;
	}
	{
		char *opts = eng_policy_default_opts(L->policy, L->opts, L->model_path);
		rc = !opts ? ENG_ERR_NOMEM : L->ratio > 0.0 ?
		    eng_policy_create_ratio(&L->p, L->policy, opts, L->ratio, why, sizeof(why)) :
		    eng_policy_create(&L->p, L->policy, opts, L->budget, why, sizeof(why));
		free(opts);
	}
	if (rc) {
		cli_err("%s", why[0] ? why : eng_strerror(rc));
		return CLI_EXIT_USAGE;
	}
	if ((rc = eng_model_open(&L->m, L->model_path, why, sizeof(why)))) {
		cli_err("cannot load model: %s", why);
		return cli_exit_for_engine(rc);
	}
	if ((rc = eng_tok_init(&L->tok, L->m->gguf, why, sizeof(why)))) {
		cli_err("cannot load the tokenizer: %s", why);
		return cli_exit_for_engine(rc);
	}
	if ((rc = eng_policy_bind(L->p, L->m, why, sizeof(why)))) {
		cli_err("%s", why);
		return cli_exit_for_engine(rc);
	}
	if (snap_profile(L->profile, sizeof(L->profile), L->profile_id,
	    eng_model_fingerprint(L->m), L->p, L->chunk, L->quant)) {
		cli_err("the profile description is too long");
		return CLI_EXIT_USAGE;
	}
	if ((rc = eng_ctx_init(&L->c, L->m, (int)L->threads,
	    eng_policy_max_chunk(L->p, L->chunk)))) {
		cli_err("cannot set up the engine: %s", eng_strerror(rc));
		return cli_exit_for_engine(rc);
	}
	if ((rc = store_open(&L->s, dir, &so, why, sizeof(why)))) {
		L->s = NULL;
		cli_err("cannot open the store in %s: %s", dir, why);
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

/* local_open, then the document DOC names (a doc_id, hex prefix or name). */
static int
local_open_doc(struct local *L, const char *ref, uint8_t doc[SNAP_ID_BYTES])
{
	char why[512] = "";
	int ret, rc;
	if ((ret = local_open(L, 0)))
		return ret;
	if ((rc = store_resolve(L->s, ref, doc, why, sizeof(why)))) {
		cli_err("%s", why);
		return rc == STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND : CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

static int
local_exit_io(int rc)
{
	switch (rc) {
	case SNAPIO_OK: return CLI_EXIT_OK;
	case SNAPIO_ERR_NOT_FOUND: return CLI_EXIT_NOT_FOUND;
	case SNAPIO_ERR_CORRUPT: case SNAPIO_ERR_MISMATCH: return CLI_EXIT_CORRUPT;
	case SNAPIO_ERR_ARG: return CLI_EXIT_USAGE;
	default: return CLI_EXIT_FAILURE;
	}
}

/* ------------------------------------------------------------------------ */
/* ingest                                                                    */

/* Compress and store one document. */
static int
local_ingest_one(struct local *L, const char *path, const char *name)
{
	struct store_doc d;
	struct eng_kv *kv = NULL;
	int32_t *ids = NULL;
	char *text, why[512] = "", hex[2 * SNAP_ID_BYTES + 1], real[PATH_MAX];
	size_t len;
	int64_t n, units = 0;
	double t0 = eng_now();
	int rc, l, h;

	if (!(text = cli_read_file(path, LOCAL_MAX_DOC, &len)))
		return CLI_EXIT_NOT_FOUND;
	memset(&d, 0, sizeof(d));
	store_doc_id(text, len, d.doc_id);
	n = eng_chat_doc_ids(L->tok, text, len, &ids);
	free(text);
	if (n < 0) {
		cli_err("%s: cannot tokenize: %s", path, eng_strerror((int)n));
		return CLI_EXIT_FAILURE;
	}
	rc = eng_kv_init(&kv, L->m, eng_policy_rows_per_head(L->p, n, L->chunk, 0));
	if (!rc)
		rc = eng_ingest(L->c, kv, L->p, ids, n, L->chunk, NULL);
	free(ids);
	if (rc) {
		cli_err("%s: %lld tokens: %s%s", path, (long long)n, eng_strerror(rc),
		    rc == ENG_ERR_CONTEXT ? " (longer than the model's window for this policy's "
		    "positions)" : rc == ENG_ERR_ARG && strstr(L->opts, "from=") ? " (from= names "
		    "a snapshot kvsnap shrink made; it is not ingested)" : "");
		eng_kv_free(kv);
		return cli_exit_for_engine(rc);
	}
	snprintf(d.name, sizeof(d.name), "%s", name ? name : "");
	snprintf(d.source, sizeof(d.source), "%.1023s", realpath(path, real) ? real : path);
	d.bytes = len;
	d.tokens = (uint64_t)n;
	/* created_us = 0: the store stamps a new document itself (and the last use) */
	rc = snap_save(L->s, &d, kv, L->m->hp.n_head, eng_model_fingerprint(L->m), L->profile,
	    L->profile_id, L->quant, SNAP_ZLEVEL_DEFAULT, (uint64_t)n, why, sizeof(why));
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			units += eng_kv_len(kv, l, h);
	eng_kv_free(kv);
	if (rc) {
		cli_err("%s: cannot store the snapshot: %s", path, why);
		return local_exit_io(rc);
	}
	store_hex(d.doc_id, SNAP_ID_BYTES, hex);
	if (L->json) {
		printf("{\"doc_id\":\"%s\",\"source\":", hex);
		cli_json_str(stdout, d.source, strlen(d.source));
		printf(",\"tokens\":%lld,\"units\":%lld,\"seconds\":%.3f}\n", (long long)n,
		    (long long)units, eng_now() - t0);
	} else {
		printf("%.12s  %s  %lld tokens -> %lld units (%.1fx fewer)  %.1f s\n", hex, path,
		    (long long)n, (long long)units,
		    units ? (double)n * L->m->hp.n_layer * L->m->hp.n_head_kv / (double)units : 0.0,
		    eng_now() - t0);
	}
	fflush(stdout);
	return CLI_EXIT_OK;
}

/* A file, or each regular file of a directory in name order. */
static int
local_ingest_path(struct local *L, const char *path)
{
	struct stat sb;
	char **names, full[PATH_MAX];
	size_t n, i;
	int ret = CLI_EXIT_OK, r;

	if (stat(path, &sb)) {
		cli_err("cannot open %s", path);
		return CLI_EXIT_NOT_FOUND;
	}
	if (!S_ISDIR(sb.st_mode))
		return local_ingest_one(L, path, L->name);
	if (cli_dir_names(path, &names, &n)) {
		cli_err("cannot read directory %s", path);
		return CLI_EXIT_NOT_FOUND;
	}
	for (i = 0; i < n; i++) {
		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		if (stat(full, &sb) || !S_ISREG(sb.st_mode))
			continue;
		if ((r = local_ingest_one(L, full, NULL)))
			ret = r; /* go on with the others; report the last failure */
	}
	cli_free_names(names, n);
	return ret;
}

int
cli_ingest(int argc, char **argv)
{
	struct local L;
	int i, ret, r;
	char why[256];

	if (!cli_has_flag(argc, argv, "--local"))
		return cli_daemon_ingest(argc, argv);
	if ((i = local_parse(argc, argv, &L)) < 0)
		return CLI_EXIT_USAGE;
	if (i >= argc) {
		local_usage(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	if (L.name && argc - i != 1) {
		cli_err("--name needs exactly one document");
		return CLI_EXIT_USAGE;
	}
	if (L.name && store_name_check(L.name, why, sizeof(why))) {
		cli_err("--name: %s", why);
		return CLI_EXIT_USAGE;
	}
	if ((ret = local_open(&L, 0)) == CLI_EXIT_OK)
		for (; i < argc; i++)
			if ((r = local_ingest_path(&L, argv[i])))
				ret = r;
	local_close(&L);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* query                                                                     */

struct local_pick {
	const uint8_t *want;
	uint8_t only[SNAP_ID_BYTES];
	int n, found;
};

static int
local_pick_cb(void *arg, const uint8_t pid[SNAP_ID_BYTES], uint64_t bytes,
    const struct snap_header *h, const char *why, int64_t last_used_us)
{
	struct local_pick *pk = arg;
	(void)bytes;
	(void)h;
	(void)why;
	(void)last_used_us;
	pk->n++;
	memcpy(pk->only, pid, SNAP_ID_BYTES);
	if (!memcmp(pid, pk->want, SNAP_ID_BYTES))
		pk->found = 1;
	return 0;
}

struct local_emit {
	const struct eng_tok *tok;
	int json;
	int64_t n;
	double t0, ttft;
};

static int
local_emit(void *arg, int32_t id)
{
	struct local_emit *e = arg;
	char buf[256];
	int n = eng_tok_decode(e->tok, id, 0, buf, sizeof(buf));
	if (e->n++ == 0)
		e->ttft = eng_now() - e->t0;
	if (n <= 0)
		return 0;
	if (e->json) {
		printf("{\"token\":");
		cli_json_str(stdout, buf, (size_t)n);
		printf("}\n");
	} else {
		fwrite(buf, 1, (size_t)n, stdout);
	}
	fflush(stdout);
	return 0;
}

int
cli_query(int argc, char **argv)
{
	struct local L;
	struct local_pick pk;
	struct local_emit em;
	struct snap_header h;
	struct eng_kv *kv = NULL;
	struct eng_sampler smp;
	uint8_t doc[SNAP_ID_BYTES];
	int32_t *qids = NULL;
	int64_t n_q, n_gen = 0;
	char why[512] = "";
	int i, ret, rc;

	if (!cli_has_flag(argc, argv, "--local"))
		return cli_daemon_query(argc, argv);
	if ((i = local_parse(argc, argv, &L)) < 0)
		return CLI_EXIT_USAGE;
	if (argc - i != 2) {
		local_usage(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	memset(&h, 0, sizeof(h));
	if ((ret = local_open_doc(&L, argv[i], doc)))
		goto out;
	/* the configured profile's snapshot, else the document's only one */
	memset(&pk, 0, sizeof(pk));
	pk.want = L.profile_id;
	if ((rc = snap_profiles(L.s, doc, local_pick_cb, &pk, why, sizeof(why))) ||
	    (!pk.found && pk.n != 1)) {
		cli_err("%s", rc ? why : pk.n ? "the document has several snapshots, none of this "
		    "profile: pass the --policy/--budget or --ratio/--chunk/--quant it was ingested with" :
		    "the document has no snapshot");
		ret = rc ? CLI_EXIT_FAILURE : CLI_EXIT_NOT_FOUND;
		goto out;
	}
	n_q = eng_chat_question_ids(L.tok, argv[i + 1], strlen(argv[i + 1]), &qids);
	if (n_q < 0) {
		cli_err("cannot tokenize the question: %s", eng_strerror((int)n_q));
		ret = CLI_EXIT_FAILURE;
		goto out;
	}
	em.t0 = eng_now();
	if ((rc = snap_load(L.s, doc, pk.found ? L.profile_id : pk.only, L.m, n_q + L.n_max, &kv,
	    &h, why, sizeof(why)))) {
		cli_err("cannot load the snapshot: %s", why);
		ret = local_exit_io(rc);
		goto out;
	}
	em.tok = L.tok;
	em.json = L.json;
	em.n = 0;
	em.ttft = 0;
	eng_sampler_init(&smp, 0.0f, 1.0f, 0);
	rc = eng_generate(L.c, kv, L.tok, qids, n_q, L.n_max, &smp, local_emit, &em, &n_gen);
	if (rc) {
		cli_err("generation failed: %s", eng_strerror(rc));
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	store_touch(L.s, doc, pk.found ? L.profile_id : pk.only, why, sizeof(why));
	if (L.json)
		printf("{\"done\":true,\"tokens\":%lld,\"ttft_s\":%.4f}\n", (long long)n_gen, em.ttft);
	else
		printf("\n");
	ret = CLI_EXIT_OK;
out:
	free(qids);
	eng_kv_free(kv);
	snap_header_free(&h);
	local_close(&L);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* shrink                                                                    */

int
cli_shrink(int argc, char **argv)
{
	struct local L;
	struct svc_shrunk r;
	uint8_t doc[SNAP_ID_BYTES];
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1];
	double t0 = eng_now();
	int i, ret, rc;

	if ((i = local_parse(argc, argv, &L)) < 0)
		return CLI_EXIT_USAGE;
	if (argc - i != 1 || !cli_has_flag(argc, argv, "--ratio")) {
		fprintf(stderr, "usage: kvsnap shrink [--state DIR] [-m GGUF] DOC --ratio R\n"
		    "Derive a smaller snapshot of DOC from its largest kvzip snapshot by the\n"
		    "stored scores (no model run), kept as share R of the document's units;\n"
		    "filed under the kvzip profile with ratio=R and from=<the source's ratio>.\n");
		return CLI_EXIT_USAGE;
	}
	if (!cli_has_flag(argc, argv, "--policy"))
		L.policy = "kvzip";
	if ((ret = local_open_doc(&L, argv[i], doc)))
		goto out;
	if ((rc = svc_shrink(L.s, L.m, doc, L.ratio, &r, why, sizeof(why)))) {
		cli_err("cannot shrink: %s", why);
		ret = local_exit_io(rc);
		goto out;
	}
	store_hex(doc, SNAP_ID_BYTES, hex);
	if (L.json)
		printf("{\"doc_id\":\"%s\",\"units_from\":%lld,\"units\":%lld,\"seconds\":%.3f}\n",
		    hex, (long long)r.units_from, (long long)r.units, eng_now() - t0);
	else
		printf("%.12s  %lld units -> %lld units (%.1fx fewer than the document)  %.1f s\n",
		    hex, (long long)r.units_from, (long long)r.units,
		    (double)r.n_tokens * L.m->hp.n_layer * L.m->hp.n_head_kv / (double)r.units,
		    eng_now() - t0);
	ret = CLI_EXIT_OK;
out:
	local_close(&L);
	return ret;
}
