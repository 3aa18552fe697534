/*
 * cli_local.c: `kvsnap ingest --local`, `kvsnap query --local` and
 * `kvsnap shrink`: argument parsing and printing over the service
 * (service/service.h), which runs the daemon's jobs in-process against the
 * store in the state directory.
 *
 * ingest: each file ("-": stdin) is read and handed to svc_ingest (always
 * re-ingested), which reads its text by its format.
 * query: svc_query answers from the snapshot svc_pick's one rule picks
 * (the daemon's too; a mismatch names the stored profiles, the flags that
 * answer from one and the command that re-ingests), its tokens printed as
 * they come.  A store this process
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
#include "common/paths.h"
#include "service/service.h"

#define LOCAL_MAX_DOC (64u << 20)

/* The profile and engine settings both commands share. */
struct local {
	const char *model_path, *policy, *opts, *state, *name, *encoding;
	long budget, chunk, threads, n_max;
	double ratio; /* > 0: --ratio, in place of the budget */
	int local, json, quant, verbose;
	int in_dir, n_done, n_not_doc; /* ingest: a folder's walk (as cli_daemon.c's) */
	struct cli_sample smp; /* query: --temp, --top-p, --seed */
	struct cli_lib lib;    /* query: --docs, --mode, --min-conf */
	long part_tokens;      /* ingest: --part-tokens (0: the window's limit) */
	struct svc *v;
	struct svc_session *ss;
	int replace;           /* shrink --replace */
};

static void
local_usage(FILE *f, const char *cmd)
{
	if (!strcmp(cmd, "shrink")) {
		fprintf(f, "usage: kvsnap shrink [--state DIR] [-m GGUF] [--json] DOC --ratio R "
		    "[--replace]\n"
		    "Derive a smaller snapshot of DOC from its largest kvzip snapshot by the\n"
		    "stored scores (no model run), kept as share R of the document's units;\n"
		    "filed under the kvzip profile with ratio=R and from=<the source's ratio>.\n"
		    "  --ratio R        the share kept, such as 1/8 (required)\n"
		    "  --replace        remove the snapshot it is cut from, in the same store\n"
		    "                   transaction (never a moment with neither)\n"
		    "  --state DIR      the store (default $KVSNAP_STATE, else ~/.local/state/kvsnap)\n"
		    "  -m, --model GGUF the model (default $KVSNAP_MODEL, else the bundled one)\n"
		    "  --json           one JSON object per line\n");
		return;
	}
	if (!strcmp(cmd, "ingest"))
		fprintf(f, "usage: kvsnap ingest --local [OPTIONS] FILE|DIR|-... [--name NAME]\n"
		    "Compress documents into snapshots in the store (a DIR: its regular files;\n"
		    "-: stdin).  PDF, HTML, Markdown and plain text, told apart by content.\n"
		    "  --name NAME      name the document (one FILE only)\n"
		    "  --encoding E     the text's encoding (iconv's name; default: UTF-8, UTF-16/32\n"
		    "                   by their BOM, else Windows-1252)\n"
		    "  --part-tokens N  store a document longer than N tokens in parts of at most\n"
		    "                   N, cut at its pages, headings, paragraphs or sentences\n"
		    "                   (default: only one longer than the model's window)\n");
	else
		fprintf(f, "usage: kvsnap query --local [OPTIONS] DOC QUESTION... [-n N]\n"
		    "       kvsnap query --local [OPTIONS] --docs A,B|--all QUESTION...\n"
		    "Answer QUESTION from DOC's snapshot; tokens stream to stdout.  A store\n"
		    "this user cannot write is read read-only (its last-used stamp stays).\n"
		    "The words of an unquoted QUESTION are joined by single spaces.\n"
		    "  --docs A,B       a library question: answered from these documents'\n"
		    "                   snapshots (no text read again), its sources named after\n"
		    "                   the answer; an answer the model is not sure of is the\n"
		    "                   library does not contain it\n"
		    "  --all            a library question over every document: those the full-\n"
		    "                   text index finds for QUESTION (the best 3), as --docs\n"
		    "  --top N          with --all: the best N parts (1 to 16, default 3)\n"
		    "  --mode M         pick (each snapshot scores the question, the likeliest\n"
		    "                   answers; the default), parts (each answers alone, the\n"
		    "                   surest answer kept) or side (the snapshots side by side\n"
		    "                   in one cache, answered once)\n"
		    "  --min-conf X     abstain below this mean log-probability of the\n"
		    "                   answer's first tokens (default -0.4), judged before any\n"
		    "                   is handed on\n"
		    "  --judge-tokens N how many first tokens are judged (side, pick;\n"
		    "                   default 5); the rest streams as decoded\n"
		    "  -n N             at most N answer tokens, 1 to 4096 (default 128)\n"
		    "  --temp T         temperature, 0 (greedy, the default) to 2\n"
		    "  --top-p P        nucleus sampling share in (0, 1] (default 1: off)\n"
		    "  --seed S         sampling seed (default 0)\n"
		    "  -v, --verbose    time to first token and totals on stderr\n"
		    "  --stop S         end the answer before S (up to 4; matched across tokens)\n");
	fprintf(f,
	    "  --local          run in this process (without it: through kvsnapd, see\n"
	    "                   kvsnap %s -h)\n"
	    "  --state DIR      the store (default $KVSNAP_STATE, else ~/.local/state/kvsnap)\n"
	    "  -m, --model GGUF the model (default $KVSNAP_MODEL, else the bundled one)\n"
	    "  --backend NAME   cpu or cuda (default $KVSNAP_BACKEND, else cpu)\n"
	    "  --policy NAME    eviction policy (default kvzip; %s/POLICIES.md)\n"
	    "  --ratio R        share of each document's units kept (default 1/2)\n"
	    "  --budget N       units kept per KV head per layer instead of a ratio\n"
	    "  --chunk N        ingest chunk size, 1 to 65536 (default 512)\n"
	    "  --opts K=V,...   policy options\n"
	    "  --quant Q        fp16, q8, q4, q4kc, q4h, q4kch, q6h, q5h, q3h,\n"
	    "                   k5v3h, k4v2h, k8v4h (default q6h)\n"
	    "  -t, --threads N  threads (default 0: all cores)\n"
	    "  --json           one JSON object per line\n", cmd, kv_doc_dir());
}

/* What only the daemon path takes: named when given with --local. */
static const struct option local_daemon_only[] = {
	{ "force", no_argument, NULL, 'F' },
	{ "share", no_argument, NULL, 'A' },
	{ "file", required_argument, NULL, 'f' },
	{ NULL, 0, NULL, 0 },
};

/* Options and operands (ingest: 1 or more, query: 2 or more, shrink: 1);
 * the index of the first operand, or -1 with the exit code in *rc. */
static int
local_parse(int argc, char **argv, struct local *L, int *rc)
{
	static const struct option ingest_opts[] = {
		{ "local", no_argument, NULL, 'L' },
		CLI_PROFILE_OPTIONS,
		{ "threads", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'N' },
		{ "encoding", required_argument, NULL, 'E' },
		{ "part-tokens", required_argument, NULL, CLI_O_PART_TOKENS },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option query_opts[] = {
		{ "local", no_argument, NULL, 'L' },
		CLI_PROFILE_OPTIONS,
		{ "threads", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		CLI_SAMPLE_OPTIONS,
		CLI_STOP_OPTION,
		CLI_LIB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	static const struct option shrink_opts[] = {
		{ "ratio", required_argument, NULL, CLI_O_PROFILE },
		{ "replace", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int ingest = !strcmp(argv[0], "ingest"), shrink = !strcmp(argv[0], "shrink"), c, rc2;
	struct cli_opts o = { .shortopts = ingest ? "t:" : shrink ? "" : "t:n:v",
		.longopts = ingest ? ingest_opts : shrink ? shrink_opts : query_opts,
		.globals = CLI_G_STATE | CLI_G_MODEL | CLI_G_JSON | (shrink ? 0 : CLI_G_BACKEND),
		.operands = ingest ? "FILE|DIR..." : shrink ? "DOC" : "DOC QUESTION...",
		.usage = local_usage, .elsewhere = shrink ? NULL : local_daemon_only,
		.hint = "%s belongs to the daemon path, without --local" };
	struct svc_conf sc; /* the default profile (service.h), before the flags */

	svc_conf_defaults(&sc);
	memset(L, 0, sizeof(*L));
	L->n_max = 128;
	L->smp.top_p = 1.0;
	*rc = CLI_EXIT_USAGE;
	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case 'L': L->local = 1; break;
		case 'R': L->replace = 1; break;
		case CLI_O_PROFILE:
			if (cli_profile_flag(&o, &sc, optarg))
				return -1;
			break;
		case 't':
			if (cli_long(&o, optarg, 0, 1024, &L->threads))
				return -1;
			break;
		case 'n':
			if (cli_long(&o, optarg, 1, 4096, &L->n_max))
				return -1;
			break;
		case 'N': L->name = optarg; break;
		case 'E': L->encoding = optarg; break;
		case CLI_O_PART_TOKENS:
			if (cli_long(&o, optarg, 1, CLI_PART_TOKENS_MAX, &L->part_tokens))
				return -1;
			break;
		case 'v': L->verbose = 1; break;
		default:
			if ((rc2 = cli_lib_flag(&o, c, optarg, &L->lib)) < 0)
				return -1;
			if (rc2 && cli_sample_flag(&o, c, optarg, &L->smp))
				return -1; /* '?' too: cli_getopt said why */
		}
	}
	if (cli_profile_done(&o) || cli_lib_done(&o, &L->lib))
		return -1;
	if (shrink && !o.ratio_set) {
		cli_usage_err(&o, "missing --ratio R (kvsnap shrink DOC --ratio R)");
		return -1;
	}
	if (L->lib.on)
		o.operands = "QUESTION...";
	if ((*rc = cli_operands(&o, argc, argv, ingest || shrink || L->lib.on ? 1 : 2,
	    shrink ? 1 : -1)))
		return -1;
	if (L->lib.on && cli_blank(argc - optind, argv + optind)) {
		cli_usage_err(&o, "QUESTION is empty: ask something (kvsnap query --docs A,B \"What "
		    "does it say about X?\")");
		*rc = CLI_EXIT_USAGE;
		return -1;
	}
	if (!ingest && !shrink && !L->lib.on && cli_blank(argc - optind - 1, argv + optind + 1)) {
		cli_usage_err(&o, "QUESTION is empty: ask something (kvsnap query DOC \"What does "
		    "it say about X?\")");
		*rc = CLI_EXIT_USAGE;
		return -1;
	}
	L->model_path = cli_model();
	L->state = cli_g.state;
	L->json = cli_g.json;
	L->policy = sc.policy;
	L->opts = sc.opts;
	L->budget = sc.budget;
	L->ratio = sc.ratio;
	L->chunk = sc.chunk;
	L->quant = sc.quant;
	return optind;
}

static void
local_close(struct local *L)
{
	cli_lib_free(&L->lib);
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
		cli_err("%s", st->why[0] ? st->why : svc_eng_strerror(st->rc));
	if (st->step == SVC_AT_POLICY || st->step == SVC_AT_PROFILE)
		return CLI_EXIT_USAGE;
	if (st->step == SVC_AT_STORE_OPEN)
		return st->rc == SVC_STORE_ERR_CORRUPT ? CLI_EXIT_CORRUPT : CLI_EXIT_FAILURE;
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
	if (!L->model_path)
		return cli_model_missing();
	if (read_only < 0)
		sc.read_only = !local_writable(dir);
	if (!sc.read_only && cli_state_parents(L->state))
		return CLI_EXIT_FAILURE;
	if (svc_open(&L->v, &sc, &st) || svc_session_new(L->v, (int)L->threads, &L->ss, &st))
		return local_open_fail(&st, dir);
	return CLI_EXIT_OK;
}

/* local_open (read_only as there), then the document DOC names (a
 * doc_id, hex prefix or name). */
static int
local_open_doc(struct local *L, int read_only, const char *ref, uint8_t doc[SVC_ID_BYTES])
{
	struct svc_status st;
	int ret;
	if ((ret = local_open(L, read_only)))
		return ret;
	if (svc_doc_resolve(L->v, ref, NULL, doc, &st)) {
		cli_err("%s", st.why);
		return st.rc == SVC_STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND : CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

static int
local_exit_io(int rc)
{
	switch (rc) {
	case SVC_SNAPIO_OK: return CLI_EXIT_OK;
	case SVC_SNAPIO_ERR_NOT_FOUND: return CLI_EXIT_NOT_FOUND;
	case SVC_SNAPIO_ERR_CORRUPT: case SVC_SNAPIO_ERR_MISMATCH: return CLI_EXIT_CORRUPT;
	case SVC_SNAPIO_ERR_ARG: return CLI_EXIT_USAGE;
	default: return CLI_EXIT_FAILURE;
	}
}

/* ------------------------------------------------------------------------ */
/* ingest                                                                    */

/* A failed svc_ingest: the message, naming the file, and the exit code. */
static int
local_ingest_fail(struct local *L, const char *path, const struct svc_status *st)
{
	if (st->step == SVC_AT_FORMAT && st->rc == SVC_FMT_ERR_UNSUPPORTED && L->in_dir) {
		/* a folder's stray binary: skipped with a warning (cli_daemon.c) */
		char shown[6 * PATH_MAX];
		cli_term_str(path, shown, sizeof(shown));
		fprintf(stderr, "kvsnap: warning: %s: skipped: %s\n", shown, st->why);
		if (cli_json_mode)
			cli_json_line("skipped", json_pack("{s:o, s:s, s:s}", "path", cli_json_cstr(path),
			    "code", "unsupported_format", "message", st->why));
		L->n_not_doc++;
		return CLI_EXIT_OK;
	}
	if (st->step == SVC_AT_FORMAT) {
		if (st->rc == SVC_FMT_ERR_ENCODING) {
			cli_err("--encoding: %s", st->why);
			return CLI_EXIT_USAGE;
		}
		cli_err("%s %s", path, st->why); /* "FILE looks like binary data ..." */
		return st->rc == SVC_FMT_ERR_UNSUPPORTED ? CLI_EXIT_CORRUPT :
		    st->rc == SVC_FMT_ERR_TOO_LARGE ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_TOKENIZE) {
		cli_err("%s: cannot tokenize: %s", path, st->why);
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_SAVE) {
		cli_err("%s: cannot store the snapshot: %s", path, st->why);
		return local_exit_io(st->rc);
	}
	cli_err("%s: %s%s", path, st->why, st->rc == SVC_ENG_ERR_ARG && strstr(L->opts, "from=") ?
	    " (from= names a snapshot kvsnap shrink made; it is not ingested)" : "");
	/* a document too long for the window: the input's fault, not the
	 * command line's (exit 4, as kvsnapd's too_long) */
	return st->rc == SVC_ENG_ERR_CONTEXT ? CLI_EXIT_CORRUPT : cli_exit_for_engine(st->rc);
}

/* Compress and store one document ("-": stdin). */
static int
local_ingest_one(struct local *L, const char *path, const char *name)
{
	struct svc_ingest_req ir;
	struct svc_ingested res;
	struct svc_status st;
	char *text, real[PATH_MAX], source[1024], line[256], shown[6 * PATH_MAX];
	size_t len;
	double t0 = svc_now();
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
	ir.part_tokens = L->part_tokens;
	rc = svc_ingest(L->v, L->ss, &ir, NULL, &res, &st);
	free(text);
	if (rc) {
		if (!(rc = local_ingest_fail(L, path, &st)))
			return CLI_EXIT_OK;
		if (cli_json_mode) /* one error per document: the others go on */
			cli_json_error_last(rc, json_pack("{s:o}", "path", cli_json_cstr(path)));
		return rc;
	}
	if (L->json) {
		cli_json_line("result", json_pack("{s:o, s:s, s:o, s:o, s:b, s:I, s:I, s:I, s:I, s:I, "
		    "s:I, s:f, s:I}", "path", cli_json_cstr(path), "doc_id", res.hex, "source",
		    cli_json_cstr(source), "format", cli_json_cstr(res.format), "skipped", 0, "bytes",
		    (json_int_t)len, "tokens",
		    (json_int_t)res.tokens, "units", (json_int_t)res.units, "full_units",
		    (json_int_t)res.fig.full_units, "snapshot_bytes", (json_int_t)res.fig.bytes,
		    "full_bytes", (json_int_t)res.fig.full_bytes, "seconds", svc_now() - t0,
		    "parts", (json_int_t)(res.parts ? res.parts : 1)));
	} else {
		cli_show_ingested(res.tokens, res.units, res.fig.full_units, res.fig.bytes,
		    res.fig.full_bytes, line, sizeof(line));
		cli_term_str(path, shown, sizeof(shown));
		printf("%s (%.12s), %.1f s: %s, %s", shown, res.hex, svc_now() - t0, res.format,
		    line);
		if (res.parts)
			printf(", in %u parts", res.parts);
		printf("\n");
	}
	fflush(stdout);
	L->n_done++;
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
		if (cli_path_join(full, sizeof(full), path, names[i]) || stat(full, &sb) ||
		    !S_ISREG(sb.st_mode))
			continue;
		L->in_dir = 1;
		r = local_ingest_one(L, full, NULL);
		L->in_dir = 0;
		if (r)
			ret = r; /* go on with the others; report the last failure */
	}
	kv_strv_free(names, n);
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
	if ((i = local_parse(argc, argv, &L, &ret)) < 0)
		return ret;
	if (L.name && argc - i != 1) {
		cli_err("--name needs exactly one document");
		return CLI_EXIT_USAGE;
	}
	if (L.name && svc_name_check(L.name, why, sizeof(why))) {
		cli_err("--name: %s", why);
		return CLI_EXIT_USAGE;
	}
	if ((ret = local_open(&L, 0)) == CLI_EXIT_OK)
		for (; i < argc; i++)
			if ((r = local_ingest_path(&L, argv[i])))
				ret = r;
	if (ret == CLI_EXIT_OK && L.n_not_doc && !L.n_done) {
		cli_err("no document found: the %d file%s read %s not a document", L.n_not_doc,
		    L.n_not_doc == 1 ? "" : "s", L.n_not_doc == 1 ? "is" : "are");
		ret = CLI_EXIT_CORRUPT;
	}
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
	if (!len)
		return;
	if (e->json) {
		cli_json_line("token", json_pack("{s:o, s:i}", "text", cli_json_text(text, len), "token",
		    (int)id));
	} else {
		fwrite(text, 1, len, stdout);
	}
	fflush(stdout);
}

/* A failed svc_query: the message and the exit code. */
static int
local_query_fail(const struct local *L, const uint8_t doc[SVC_ID_BYTES],
    const struct svc_status *st, const struct svc_answer *a)
{
	if (st->step == SVC_AT_LOOKUP) {
		cli_err("%s", st->why);
		return CLI_EXIT_FAILURE;
	}
	if (st->step == SVC_AT_PICK && a->n_other) {
		/* the one rule (svc_pick): say what is stored and how to get on */
		char name[256], hex[2 * SVC_ID_BYTES + 1], advice[2400], label[6 * 256];
		svc_hex(doc, SVC_ID_BYTES, hex);
		svc_pick_advice_doc(L->v, &a->pick, doc, 1, name, sizeof(name), advice,
		    sizeof(advice));
		cli_term_str(name[0] ? name : "the document", label, sizeof(label));
		cli_err("%s (%.12s): %s", label, hex, advice);
		if (cli_json_mode)
			cli_json_error("profile_mismatch", CLI_EXIT_CORRUPT, advice, NULL);
		return CLI_EXIT_CORRUPT;
	}
	if (st->step == SVC_AT_PICK) {
		cli_err("the document has no snapshot");
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

/* kvsnap query --local --docs A,B QUESTION...: each DOC resolved, then
 * svc_library; one: a DOC stored in parts, already open (svc_library_doc
 * over its parts). */
static int
local_library(struct local *L, int argc, char **argv, const uint8_t *one)
{
	struct local_emit em;
	struct svc_hooks hk = { NULL, local_emit, &em, NULL };
	struct svc_lib_req lr;
	struct svc_lib_answer a;
	struct svc_status st;
	uint8_t docs[CLI_LIB_MAX][SVC_ID_BYTES];
	enum svc_lib_mode mode = SVC_LIB_DEFAULT_MODE;
	char *question;
	size_t k;
	int ret;
	json_t *res;

	if (!one && (ret = local_open(L, L->lib.all ? 0 : -1))) /* --all: the index in step */
		return ret;
	if (one)
		memcpy(docs[0], one, SVC_ID_BYTES);
	for (k = 0; !one && k < L->lib.n; k++)
		if (svc_doc_resolve(L->v, L->lib.refs[k], NULL, docs[k], &st)) {
			cli_err("%s", st.why);
			return st.rc == SVC_STORE_ERR_NOT_FOUND ? CLI_EXIT_NOT_FOUND :
			    CLI_EXIT_USAGE;
		}
	if (L->lib.mode)
		(void)svc_lib_mode_parse(L->lib.mode, &mode);
	if (!(question = cli_join(argc, argv))) {
		cli_err("out of memory");
		return CLI_EXIT_FAILURE;
	}
	em.json = L->json;
	memset(&lr, 0, sizeof(lr));
	lr.docs = (const uint8_t (*)[SVC_ID_BYTES])docs;
	lr.n_docs = one ? 1 : L->lib.n;
	lr.question = question;
	lr.question_len = strlen(question);
	lr.max_tokens = L->n_max;
	lr.mode = mode;
	lr.min_conf = L->lib.min_conf_set ? L->lib.min_conf : SVC_LIB_MIN_CONF_DEFAULT;
	lr.judge_tokens = L->lib.judge;
	lr.temperature = (float)L->smp.temp;
	lr.top_p = (float)L->smp.top_p;
	lr.seed = L->smp.seed;
	lr.whole_utf8 = L->json;
	lr.stop = L->smp.stop;
	lr.n_stop = L->smp.n_stop;
	if (L->lib.all ? svc_library_search(L->v, L->ss, NULL, &lr, (unsigned)L->lib.top, &hk, &a,
	    &st) :
	    one ? svc_library_doc(L->v, L->ss, &lr, &hk, &a, &st) :
	    svc_library(L->v, L->ss, &lr, &hk, &a, &st)) {
		free(question);
		if (st.step == SVC_AT_SEARCH) {
			cli_err("cannot search the library: %s", st.why);
			return CLI_EXIT_FAILURE;
		}
		if (st.step == SVC_AT_PICK) {
			cli_err("%s", st.why);
			return CLI_EXIT_NOT_FOUND;
		}
		return local_query_fail(L, docs[0], &st, (const struct svc_answer *)NULL);
	}
	free(question);
	res = svc_lib_json(&a, mode);
	if (L->json) {
		if (res && a.stop == SVC_STOP_SEQUENCE && a.stop_index >= 0)
			json_object_set_new(res, "stop_sequence", json_string(L->smp.stop[a.stop_index]));
		cli_json_line("result", json_incref(res));
	} else
		printf("\n");
	fflush(stdout);
	if (!L->json && res)
		cli_lib_print(res, L->verbose);
	json_decref(res);
	return CLI_EXIT_OK;
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
	uint8_t doc[SVC_ID_BYTES];
	char hex[2 * SVC_ID_BYTES + 1];
	char *question;
	int i, ret;

	if (!cli_has_flag(argc, argv, "--local"))
		return cli_daemon_query(argc, argv);
	if ((i = local_parse(argc, argv, &L, &ret)) < 0) {
		cli_lib_free(&L.lib);
		return ret;
	}
	if (L.lib.on) {
		ret = local_library(&L, argc - i, argv + i, NULL);
		local_close(&L);
		return ret;
	}
	/* an unquoted question's words, joined by single spaces */
	if (!(question = cli_join(argc - i - 1, argv + i + 1))) {
		cli_err("out of memory");
		return CLI_EXIT_FAILURE;
	}
	if ((ret = local_open_doc(&L, -1, argv[i], doc)))
		goto out;
	{
		struct svc_picked pk;
		if (svc_pick(L.v, doc, &pk, &st) == 0 && pk.found && pk.n_parts) {
			/* stored in parts: a library question over them */
			ret = local_library(&L, argc - i - 1, argv + i + 1, doc);
			goto out;
		}
	}
	em.json = L.json;
	memset(&qr, 0, sizeof(qr));
	qr.doc_id = doc;
	qr.whole_utf8 = L.json; /* JSON strings hold whole characters */
	qr.question = question;
	qr.question_len = strlen(question);
	qr.max_tokens = L.n_max;
	qr.temperature = (float)L.smp.temp;
	qr.top_p = (float)L.smp.top_p;
	qr.seed = L.smp.seed;
	qr.stop = L.smp.stop;
	qr.n_stop = L.smp.n_stop;
	if (svc_query(L.v, L.ss, &qr, &hk, &a, &st)) {
		ret = local_query_fail(&L, doc, &st, &a);
		goto out;
	}
	svc_hex(doc, SVC_ID_BYTES, hex);
	if (L.json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:f, s:f}", "doc_id", hex,
		    "tokens", (json_int_t)a.tokens, "prompt_tokens", (json_int_t)a.prompt_tokens,
		    "stop", svc_stop_name(a.stop), "ttft_s", a.ttft, "seconds", a.seconds);
		if (o && a.stop == SVC_STOP_SEQUENCE && a.stop_index >= 0)
			json_object_set_new(o, "stop_sequence", json_string(L.smp.stop[a.stop_index]));
		cli_json_line("result", o);
	} else
		printf("\n");
	fflush(stdout);
	if (L.verbose) /* the daemon path's line (cli_daemon.c), same words */
		fprintf(stderr, "kvsnap: time to first token %.3f s from the snapshot (%lld question "
		    "tokens), %lld answer tokens in %.2f s, stop: %s\n", a.ttft,
		    (long long)a.prompt_tokens, (long long)a.tokens, a.seconds, svc_stop_name(a.stop));
	ret = CLI_EXIT_OK;
out:
	free(question);
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
	uint8_t doc[SVC_ID_BYTES];
	char why[512] = "", hex[2 * SVC_ID_BYTES + 1], line[256];
	struct svc_snap_figures fig;
	double t0 = svc_now();
	int i, ret, rc;

	if ((i = local_parse(argc, argv, &L, &ret)) < 0)
		return ret;
	if ((ret = local_open_doc(&L, 0, argv[i], doc)))
		goto out;
	if ((rc = svc_shrink(L.v, doc, L.ratio, L.replace, &r, why, sizeof(why)))) {
		cli_err("cannot shrink: %s", why);
		ret = local_exit_io(rc);
		goto out;
	}
	svc_hex(doc, SVC_ID_BYTES, hex);
	if (L.json)
		cli_json_line("result", json_pack("{s:s, s:I, s:I, s:I, s:b, s:f}", "doc_id", hex,
		    "tokens", (json_int_t)r.n_tokens, "units_from", (json_int_t)r.units_from, "units",
		    (json_int_t)r.units, "replaced", r.replaced, "seconds", svc_now() - t0));
	else {
		/* the figure ingest, ls and info give (cli_show.c): the full fp16
		 * cache's bytes over the snapshot's as stored, not a units ratio */
		svc_snapshot_figures(L.v, doc, r.profile_id, &fig);
		cli_show_ingested((int64_t)r.n_tokens, r.units, fig.full_units, fig.bytes,
		    fig.full_bytes, line, sizeof(line));
		printf("%.12s  cut from %lld units%s: %s  %.1f s\n", hex, (long long)r.units_from,
		    r.replaced ? " (replaced)" : "", line, svc_now() - t0);
	}
	ret = CLI_EXIT_OK;
out:
	local_close(&L);
	return ret;
}
