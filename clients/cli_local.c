/*
 * cli_local.c: `kvsnap ingest --local`, `kvsnap query --local` and
 * `kvsnap shrink`: argument parsing and printing over the service
 * (service/service.h), which runs the daemon's jobs in-process against the
 * store in the state directory.
 *
 * ingest: each file ("-": stdin) is read and handed to svc_ingest (always
 * re-ingested), which reads its text by its format.
 * query: svc_query answers from the profile's snapshot or the document's
 * only snapshot, its tokens printed as they come.  A store this process
 * cannot write (a read-only mount, another user's files) is opened
 * read-only: answering needs no write, and the last-used stamp that prune
 * walks is then left as it was.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clients/cli.h"
#include "engine/engine.h"
#include "service/service.h"

#define LOCAL_MAX_DOC (64u << 20)

/* The profile and engine settings both commands share. */
struct local {
	const char *model_path, *policy, *opts, *state, *name, *quant_name, *encoding;
	long budget, chunk, threads, n_max;
	double ratio; /* > 0: --ratio, in place of the budget */
	int budget_set;
	int local, json, quant;
	struct svc *v;
	struct svc_session *ss;
};

static void
local_usage(FILE *f, const char *cmd)
{
	if (!strcmp(cmd, "ingest"))
		fprintf(f, "usage: kvsnap ingest --local [OPTIONS] FILE|DIR|-... [--name NAME]\n"
		    "Compress documents into snapshots in the store (a DIR: its regular files;\n"
		    "-: stdin).  PDF, HTML, Markdown and plain text, told apart by content.\n"
		    "  --encoding E     the text's encoding (iconv's name; default: UTF-8, UTF-16/32\n"
		    "                   by their BOM, else Windows-1252)\n");
	else
		fprintf(f, "usage: kvsnap query --local [OPTIONS] DOC QUESTION [-n N]\n"
		    "Answer QUESTION from DOC's snapshot; tokens stream to stdout.  A store\n"
		    "this user cannot write is read read-only (its last-used stamp stays).\n");
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
		{ "encoding", required_argument, NULL, 'E' },
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
		case 'E': L->encoding = optarg; break;
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
	svc_session_free(L->ss);
	svc_close(L->v);
}

/* A failed svc_open or svc_session_new: the message and the exit code. */
static int
local_open_fail(const struct svc_status *st, const char *dir)
{
	if (st->step == SVC_AT_MODEL)
		cli_err("cannot load model: %s", st->why);
	else if (st->step == SVC_AT_TOKENIZER)
		cli_err("cannot load the tokenizer: %s", st->why);
	else if (st->step == SVC_AT_ENGINE)
		cli_err("cannot set up the engine: %s", st->why);
	else if (st->step == SVC_AT_STORE_OPEN)
		cli_err("cannot open the store in %s: %s", dir, st->why);
	else
		cli_err("%s", st->why[0] ? st->why : eng_strerror(st->rc));
	if (st->step == SVC_AT_POLICY || st->step == SVC_AT_PROFILE)
		return CLI_EXIT_USAGE;
	if (st->step == SVC_AT_STORE_OPEN)
		return st->rc == STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT : CLI_EXIT_FAILURE;
	return cli_exit_for_engine(st->rc);
}

/* May this process write the store in dir: the directory and, where they
 * exist, LMDB's two files?  access(2) sees a read-only mount (EROFS) and
 * this user's permissions.  A missing directory is created, so writable. */
static int
local_writable(const char *dir)
{
	static const char *const files[2] = { "data.mdb", "lock.mdb" };
	char path[PATH_MAX];
	int i;

	if (access(dir, W_OK) != 0)
		return errno == ENOENT;
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (access(path, W_OK) != 0 && errno != ENOENT)
			return 0;
	}
	return 1;
}

/* Model, tokenizer, policy, profile, store, and a session.  read_only:
 * 1 open the store read-only, 0 read-write, -1 read-only only when this
 * process cannot write it (query: answering needs no write). */
static int
local_open(struct local *L, int read_only)
{
	const char *dir = cli_state_dir(L->state);
	struct svc_conf sc = { .model = L->model_path, .state = dir, .read_only = read_only,
		.policy = L->policy, .opts = L->opts, .budget = L->budget, .ratio = L->ratio,
		.chunk = L->chunk, .quant = L->quant };
	struct svc_status st;

	if (!dir) {
		cli_err("no state directory: pass --state DIR or set KVSNAP_STATE");
		return CLI_EXIT_USAGE;
	}
	if (read_only < 0)
		sc.read_only = !local_writable(dir);
	if (svc_open(&L->v, &sc, &st) || svc_session_new(L->v, (int)L->threads, &L->ss, &st))
		return local_open_fail(&st, dir);
	return CLI_EXIT_OK;
}

/* local_open (read_only as there), then the document DOC names (a
 * doc_id, hex prefix or name). */
static int
local_open_doc(struct local *L, int read_only, const char *ref, uint8_t doc[SNAP_ID_BYTES])
{
	struct svc_status st;
	int ret;
	if ((ret = local_open(L, read_only)))
		return ret;
	if (svc_resolve(L->v->s, ref, doc, &st)) {
		cli_err("%s", st.why);
		return st.rc == STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND : CLI_EXIT_USAGE;
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

/* A failed svc_ingest: the message, naming the file, and the exit code. */
static int
local_ingest_fail(const struct local *L, const char *path, const struct svc_status *st)
{
	if (st->step == SVC_AT_FORMAT) {
		if (st->rc == FMT_ERR_ENCODING) {
			cli_err("--encoding: %s", st->why);
			return CLI_EXIT_USAGE;
		}
		cli_err("%s %s", path, st->why); /* "FILE looks like binary data ..." */
		return st->rc == FMT_ERR_UNSUPPORTED ? CLI_EXIT_CORRUPT :
		    st->rc == FMT_ERR_TOO_LARGE ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_TOKENIZE) {
		cli_err("%s: cannot tokenize: %s", path, st->why);
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_SAVE) {
		cli_err("%s: cannot store the snapshot: %s", path, st->why);
		return local_exit_io(st->rc);
	}
	cli_err("%s: %s%s", path, st->why, st->rc == ENG_ERR_ARG && strstr(L->opts, "from=") ?
	    " (from= names a snapshot kvsnap shrink made; it is not ingested)" : "");
	return cli_exit_for_engine(st->rc);
}

/* Compress and store one document ("-": stdin). */
static int
local_ingest_one(struct local *L, const char *path, const char *name)
{
	const struct eng_model *m = L->v->m;
	struct svc_ingest_req ir;
	struct svc_ingested res;
	struct svc_status st;
	char *text, real[PATH_MAX], source[1024];
	size_t len;
	double t0 = eng_now();
	int rc;

	if (!(text = cli_read_file(path, LOCAL_MAX_DOC, &len)))
		return strcmp(path, "-") ? CLI_EXIT_NOT_FOUND : CLI_EXIT_USAGE;
	if (!strcmp(path, "-")) {
		path = "stdin";
		snprintf(source, sizeof(source), "stdin");
		if (!name)
			cli_err("note: stdin has no name; give it one with --name NAME, or refer to it "
			    "by its doc_id");
	} else {
		snprintf(source, sizeof(source), "%.1023s", realpath(path, real) ? real : path);
	}
	memset(&ir, 0, sizeof(ir));
	ir.text = text;
	ir.len = len;
	ir.encoding = L->encoding;
	ir.name = name;
	ir.source = source;
	/* the running user owns what it stores (kvsnapd shows it to them) */
	ir.who = &(const struct svc_who){ (uint32_t)getuid(), 1 };
	rc = svc_ingest(L->v, L->ss, &ir, NULL, &res, &st);
	free(text);
	if (rc)
		return local_ingest_fail(L, path, &st);
	if (L->json) {
		printf("{\"doc_id\":\"%s\",\"source\":", res.hex);
		cli_json_str(stdout, source, strlen(source));
		printf(",\"format\":");
		cli_json_str(stdout, res.format, strlen(res.format));
		printf(",\"tokens\":%lld,\"units\":%lld,\"seconds\":%.3f}\n", (long long)res.tokens,
		    (long long)res.units, eng_now() - t0);
	} else {
		printf("%.12s  %s  %s, %lld tokens -> %lld units (%.1fx fewer)  %.1f s\n", res.hex,
		    path, res.format, (long long)res.tokens, (long long)res.units, res.units ? (double)res.tokens *
		    m->hp.n_layer * m->hp.n_head_kv / (double)res.units : 0.0, eng_now() - t0);
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

	if (!strcmp(path, "-"))
		return local_ingest_one(L, path, L->name);
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

struct local_emit {
	int json;
};

/* A token's bytes as they come (raw: a character may span two tokens). */
static void
local_emit(void *arg, int32_t id, const char *text, size_t len)
{
	struct local_emit *e = arg;
	(void)id;
	if (!len)
		return;
	if (e->json) {
		printf("{\"token\":");
		cli_json_str(stdout, text, len);
		printf("}\n");
	} else {
		fwrite(text, 1, len, stdout);
	}
	fflush(stdout);
}

/* A failed svc_query: the message and the exit code. */
static int
local_query_fail(const struct svc_status *st, const struct svc_answer *a)
{
	if (st->step == SVC_AT_LOOKUP) {
		cli_err("%s", st->why);
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_PICK) {
		cli_err("%s", a->n_other ? "the document has several snapshots, none of this "
		    "profile: pass the --policy/--budget or --ratio/--chunk/--quant it was ingested "
		    "with" : "the document has no snapshot");
		return CLI_EXIT_NOT_FOUND;
	}
	if (st->step == SVC_AT_TOKENIZE) {
		cli_err("cannot tokenize the question: %s", st->why);
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_LOAD) {
		cli_err("cannot load the snapshot: %s", st->why);
		return local_exit_io(st->rc);
	}
	cli_err("generation failed: %s", st->why);
	return cli_exit_for_engine(st->rc);
}

int
cli_query(int argc, char **argv)
{
	struct local L;
	struct local_emit em;
	struct svc_hooks hk = { NULL, local_emit, &em, NULL };
	struct svc_query_req qr;
	struct svc_answer a;
	struct svc_status st;
	uint8_t doc[SNAP_ID_BYTES];
	int i, ret;

	if (!cli_has_flag(argc, argv, "--local"))
		return cli_daemon_query(argc, argv);
	if ((i = local_parse(argc, argv, &L)) < 0)
		return CLI_EXIT_USAGE;
	if (argc - i != 2) {
		local_usage(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	if ((ret = local_open_doc(&L, -1, argv[i], doc)))
		goto out;
	em.json = L.json;
	memset(&qr, 0, sizeof(qr));
	qr.doc_id = doc;
	qr.pick = SVC_PICK_ONLY; /* the configured profile's snapshot, else the only one */
	qr.question = argv[i + 1];
	qr.question_len = strlen(argv[i + 1]);
	qr.max_tokens = L.n_max;
	if (svc_query(L.v, L.ss, &qr, &hk, &a, &st)) {
		ret = local_query_fail(&st, &a);
		goto out;
	}
	if (L.json)
		printf("{\"done\":true,\"tokens\":%lld,\"ttft_s\":%.4f}\n", (long long)a.generated,
		    a.ttft);
	else
		printf("\n");
	ret = CLI_EXIT_OK;
out:
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
	if ((ret = local_open_doc(&L, 0, argv[i], doc)))
		goto out;
	if ((rc = svc_shrink(L.v, doc, L.ratio, &r, why, sizeof(why)))) {
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
		    (double)r.n_tokens * L.v->m->hp.n_layer * L.v->m->hp.n_head_kv / (double)r.units,
		    eng_now() - t0);
	ret = CLI_EXIT_OK;
out:
	local_close(&L);
	return ret;
}
