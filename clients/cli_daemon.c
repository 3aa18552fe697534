/*
 * cli_daemon.c: `kvsnap ingest` and `kvsnap query` through kvsnapd (the
 * default; --local runs them in-process, clients/cli_local.c).
 *
 * ingest: every FILE, and every regular file under every DIR (recursive,
 * hidden names skipped, in name order), is opened here and passed to the
 * daemon as a descriptor, so the daemon reads only what this user can;
 * documents already stored for the daemon's profile are skipped by the
 * daemon (--force re-ingests).  "-" is stdin, read here into a memfd
 * that is passed like a file.  On a terminal a progress bar with tokens/s
 * and ETA goes to stderr; otherwise one plain line per document.
 * query: the answer's tokens are written to stdout as they arrive.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clients/cli.h"
#include "common/version.h"
#include "service/service.h"

#define CLI_DAEMON_DEPTH_MAX 32 /* directory recursion */
#define CLI_DAEMON_STDIN_MAX ((size_t)64 << 20) /* the daemon's limit on a document */

int
cli_has_flag(int argc, char **argv, const char *flag)
{
	size_t n = strlen(flag);
	int i;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return 0;
		/* "--flag" or getopt's "--flag=value" */
		if (!strncmp(argv[i], flag, n) && (argv[i][n] == 0 || argv[i][n] == '='))
			return 1;
	}
	return 0;
}

struct dmn {
	const char *name, *file, *encoding;
	long n_max;
	int json, force, share, tty, verbose;
	long part_tokens;       /* ingest: --part-tokens (0: not sent) */
	int gone;               /* the daemon closed the connection */
	struct cli_sample smp;  /* query: --temp, --top-p, --seed */
	struct cli_lib lib;     /* query: --docs, --mode, --min-conf */
	int stdin_fd;           /* "-": stdin in a memfd, read before connecting */
	struct cli_conn c;
	int64_t next_id;
	int n_done, n_skipped, n_failed;
	int in_dir;             /* the file came from a folder's walk */
	int n_not_doc;          /* of those, skipped: not a document */
};

static void
dmn_usage(FILE *f, const char *cmd)
{
	if (!strcmp(cmd, "ingest"))
		fprintf(f, "usage: kvsnap ingest [-s SOCK] [--name NAME] [--force] [--share] [--json] "
		    "FILE|DIR|-...\n"
		    "Compress documents into snapshots through kvsnapd (DIR: recursively; -: stdin).\n"
		    "PDF, HTML, Markdown and plain text, told apart by their content.  Documents\n"
		    "already stored for the daemon's profile are skipped.  A document is yours (and\n"
		    "root's and the daemon's user's) unless shared.\n"
		    "  --name NAME  name the document (one FILE only; give one to stdin)\n"
		    "  --encoding E the text's encoding (iconv's name, e.g. ISO-8859-15; default:\n"
		    "               UTF-8, UTF-16/32 by their BOM, else Windows-1252)\n"
		    "  --force      ingest again even if stored\n"
		    "  --share      let every user of the daemon query it\n"
		    "  --part-tokens N  store a document longer than N tokens in parts of at most\n"
		    "               N, cut at its pages, headings, paragraphs or sentences\n"
		    "               (default: only one longer than the model's window)\n");
	else
		fprintf(f, "usage: kvsnap query [-s SOCK] [-n N] [--temp T] [--top-p P] [--seed S]\n"
		    "                   [--stop S]... [--file PATH] [-v] [--json] DOC QUESTION...\n"
		    "       kvsnap query [OPTIONS] --docs A,B|--all [--mode side|parts|pick] QUESTION...\n"
		    "Answer QUESTION from DOC's snapshot through kvsnapd; tokens stream to stdout.\n"
		    "The words of an unquoted QUESTION are joined by single spaces.\n"
		    "  --docs A,B   a library question: answered from these documents' snapshots\n"
		    "               (no text read again), the sources named after the answer; an\n"
		    "               answer the model is not sure of becomes \"the library does not\n"
		    "               contain the answer\" (abstention)\n"
		    "  --all        a library question over every document you may read: those\n"
		    "               the full-text index finds for QUESTION (the best 3), as --docs\n"
		    "  --top N      with --all: the best N parts (1 to 16, default 3)\n"
		    "  --mode M     pick (each snapshot scores the question, the likeliest answers;\n"
		    "               the default), parts (each alone, the surest answer kept) or\n"
		    "               side (the snapshots side by side in one cache, answered once)\n"
		    "  --min-conf X abstain below this mean log-probability of the\n"
		    "               answer's first tokens (default -0.4), judged before any\n"
		    "               is handed on\n"
		    "  --judge-tokens N\n"
		    "               how many first tokens are judged (side, pick; default 5);\n"
		    "               the rest streams as decoded\n"
		    "  -n N         at most N answer tokens, 1 to 4096 (default 128)\n"
		    "  --temp T     temperature, 0 (greedy, the default) to 2\n"
		    "  --top-p P    nucleus sampling share in (0, 1] (default 1: off)\n"
		    "  --seed S     sampling seed (default 0): the same seed gives the same answer\n"
		    "  --stop S     end the answer before S (up to 4; matched across tokens)\n"
		    "  --file PATH  pass PATH, your copy of the document: the daemon lets you read\n"
		    "               another user's snapshot of the same text\n"
		    "  --encoding E PATH's encoding, as it was ingested with\n"
		    "  -v, --verbose  time to first token and totals on stderr\n");
	fprintf(f, "  -s, --socket SOCK  kvsnapd's socket (default $KVSNAP_SOCKET, else\n"
	    "               $XDG_RUNTIME_DIR/kvsnap/kvsnapd.sock, else /run/kvsnap/kvsnapd.sock)\n"
	    "  --json       one JSON object per line\n"
	    "  --local      run in this process instead (kvsnap %s --local -h); engine\n"
	    "               settings (--policy, --budget, ...) belong to kvsnapd or --local\n"
	    "A kvsnapd whose model workers are busy queues the job and says so on stderr.\n"
	    "exit codes: 0 ok, 1 usage, 2 not found, 3 daemon unreachable, 4 corrupt data,\n"
	    "snapshot of another profile (re-ingest) or not a document (binary data), 5 other\n"
	    "failure\n", cmd);
}

/* What the in-process path takes and the daemon path does not: named, when
 * given here, as belonging to kvsnapd or --local. */
static const struct option dmn_local_only[] = {
	CLI_PROFILE_OPTIONS,
	{ "threads", required_argument, NULL, 't' },
	{ NULL, 0, NULL, 0 },
};

/* Options and operands; the index of the first operand, or -1 with an exit
 * code in *rc (a usage error printed). */
static int
dmn_parse(int argc, char **argv, struct dmn *D, int *rc)
{
	static const struct option ingest_opts[] = {
		{ "name", required_argument, NULL, 'N' },
		{ "force", no_argument, NULL, 'F' },
		{ "share", no_argument, NULL, 'A' },
		{ "encoding", required_argument, NULL, 'E' },
		{ "part-tokens", required_argument, NULL, CLI_O_PART_TOKENS },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option query_opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "encoding", required_argument, NULL, 'E' },
		{ "verbose", no_argument, NULL, 'v' },
		CLI_SAMPLE_OPTIONS,
		CLI_STOP_OPTION,
		CLI_LIB_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int ingest = !strcmp(argv[0], "ingest"), c, rc2;
	struct cli_opts o = { .shortopts = ingest ? "" : "n:v",
		.longopts = ingest ? ingest_opts : query_opts,
		.globals = CLI_G_SOCKET | CLI_G_JSON,
		.operands = ingest ? "FILE|DIR..." : "DOC QUESTION...", .usage = dmn_usage,
		.elsewhere = dmn_local_only,
		.hint = "engine settings such as %s belong to kvsnapd or --local" };

	memset(D, 0, sizeof(*D));
	D->c.fd = -1;
	D->stdin_fd = -1;
	D->n_max = 128;
	D->smp.top_p = 1.0;
	*rc = CLI_EXIT_USAGE;
	while ((c = cli_getopt(&o, argc, argv)) != -1) {
		switch (c) {
		case 'N': D->name = optarg; break;
		case 'F': D->force = 1; break;
		case 'A': D->share = 1; break;
		case 'f': D->file = optarg; break;
		case 'E': D->encoding = optarg; break;
		case CLI_O_PART_TOKENS:
			if (cli_long(&o, optarg, 1, CLI_PART_TOKENS_MAX, &D->part_tokens))
				return -1;
			break;
		case 'v': D->verbose = 1; break;
		case 'n':
			if (cli_long(&o, optarg, 1, 4096, &D->n_max))
				return -1;
			break;
		default:
			if ((rc2 = cli_lib_flag(&o, c, optarg, &D->lib)) < 0)
				return -1;
			if (rc2 && cli_sample_flag(&o, c, optarg, &D->smp))
				return -1; /* '?' too: cli_getopt said why */
		}
	}
	if (cli_lib_done(&o, &D->lib))
		return -1;
	if (D->lib.on && D->file) {
		cli_usage_err(&o, "--file proves one document (DOC), not a library question");
		return -1;
	}
	if (D->lib.on)
		o.operands = "QUESTION...";
	if ((*rc = cli_operands(&o, argc, argv, ingest || D->lib.on ? 1 : 2, -1)))
		return -1;
	if (D->lib.on && cli_blank(argc - optind, argv + optind)) {
		cli_usage_err(&o, "QUESTION is empty: ask something (kvsnap query --docs A,B \"What "
		    "does it say about X?\")");
		*rc = CLI_EXIT_USAGE;
		return -1;
	}
	if (!ingest && !D->lib.on && cli_blank(argc - optind - 1, argv + optind + 1)) {
		cli_usage_err(&o, "QUESTION is empty: ask something (kvsnap query DOC \"What does "
		    "it say about X?\")");
		*rc = CLI_EXIT_USAGE;
		return -1;
	}
	D->json = cli_g.json;
	return optind;
}

/* The error event's code and message to stderr (with --json also as an
 * error event on stdout, path: the document's, or NULL); its exit code. */
static int
dmn_error(const char *what, const char *path, json_t *ev)
{
	const char *code = json_string_value(json_object_get(ev, "code"));
	const char *msg = json_string_value(json_object_get(ev, "message"));
	int rc = cli_exit_for_code(code);
	cli_err("%s: %s (%s)", what, msg ? msg : "error", code ? code : "?");
	if (cli_json_mode)
		cli_json_error(code, rc, msg ? msg : "error", path ? json_pack("{s:o}", "path",
		    cli_json_cstr(path)) : NULL);
	return rc;
}

/* The daemon's event for --json: its members, less the request's id, as
 * this command's line (extra members first). */
static void
dmn_json_event(const char *kind, json_t *ev, json_t *extra)
{
	json_t *o = extra ? extra : json_object();
	json_object_del(ev, "id");
	json_object_del(ev, "event");
	json_object_update(o, ev);
	cli_json_line(kind, o);
}

/* A "queued" event: the job waits for a model worker (docs/PROTOCOL.md
 * "Scheduling").  One line on stderr; with --json the event as it came. */
static void
dmn_queued(const struct dmn *D, json_t *ev)
{
	long long ahead = json_integer_value(json_object_get(ev, "ahead"));
	long long running = json_integer_value(json_object_get(ev, "running"));

	if (D->json) {
		dmn_json_event("queued", ev, NULL);
		fflush(stdout);
		return;
	}
	fprintf(stderr, "%skvsnap: waiting for kvsnapd: %lld job%s running, %lld queued before "
	    "this one\n", D->tty ? "\r\033[K" : "", running, running == 1 ? "" : "s", ahead);
}

/* ------------------------------------------------------------------------ */
/* ingest                                                                    */

/* ", in N parts" for a result stored in parts, else "" (in buf). */
static const char *
dmn_parts_words(json_t *ev, char *buf, size_t cap)
{
	json_int_t n = json_integer_value(json_object_get(ev, "parts"));
	if (n < 2)
		return "";
	snprintf(buf, cap, ", in %lld parts", (long long)n);
	return buf;
}

/* The progress bar on stderr: fraction, tokens/s, ETA. */
static void
dmn_bar(const char *path, int64_t done, int64_t total, double elapsed)
{
	char bar[31];
	int i, w = total > 0 ? (int)(30 * done / total) : 0;
	double rate = elapsed > 0 ? (double)done / elapsed : 0;
	const char *base = strrchr(path, '/');
	for (i = 0; i < 30; i++)
		bar[i] = i < w ? '#' : '.';
	bar[30] = '\0';
	fprintf(stderr, "\r\033[K%-24.24s [%s] %3d%% %lld/%lld tok  %.0f tok/s  ETA %.0fs",
	    base ? base + 1 : path, bar, total > 0 ? (int)(100 * done / total) : 0,
	    (long long)done, (long long)total, rate,
	    rate > 0 ? (double)(total - done) / rate : 0.0);
	fflush(stderr);
}

/* stdin in a memfd (at most the daemon's limit), to pass as a file; -1
 * with a message and *rc set. */
static int
dmn_stdin_fd(int *rc)
{
	size_t len, off = 0;
	char *buf = cli_read_file("-", CLI_DAEMON_STDIN_MAX, &len);
	int fd;

	*rc = CLI_EXIT_USAGE;
	if (!buf)
		return -1;
	if ((fd = memfd_create("kvsnap-stdin", MFD_CLOEXEC)) < 0) {
		cli_err("cannot hold stdin: memfd_create: %s", strerror(errno));
		free(buf);
		*rc = CLI_EXIT_FAILURE;
		return -1;
	}
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			cli_err("cannot hold stdin: %s", w < 0 ? strerror(errno) : "short write");
			free(buf);
			close(fd);
			*rc = CLI_EXIT_FAILURE;
			return -1;
		}
		off += (size_t)w;
	}
	free(buf);
	return fd;
}

/* One file through the daemon ("-": stdin). */
static int
dmn_ingest_one(struct dmn *D, const char *path, const char *name)
{
	char real[PATH_MAX];
	json_t *req, *ev, *src;
	int fd, ret = CLI_EXIT_FAILURE, in = !strcmp(path, "-");
	int64_t id = ++D->next_id;

	if (in) {
		if ((fd = D->stdin_fd) < 0) {
			cli_err("stdin (-) is read once");
			D->n_failed++;
			return CLI_EXIT_USAGE;
		}
		D->stdin_fd = -1; /* ours now: closed once sent */
		if (!name)
			cli_err("note: stdin has no name; give it one with --name NAME, or refer to it "
			    "by its doc_id");
		path = "stdin";
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
		/* O_NONBLOCK: a FIFO must not hang us (the daemon refuses it anyway) */
		cli_err("cannot open %s: %s", path, strerror(errno));
		D->n_failed++;
		return CLI_EXIT_NOT_FOUND;
	}
	req = json_pack("{s:i, s:I, s:s, s:b, s:b, s:b}", "v", 1, "id", (json_int_t)id, "op",
	    "ingest", "fd", 1, "force", D->force, "share", D->share);
	if (req && D->part_tokens)
		json_object_set_new(req, "part_tokens", json_integer(D->part_tokens));
	/* a path that is not UTF-8 cannot travel as JSON: the source stays unset */
	src = json_string(in ? "stdin" : realpath(path, real) ? real : path);
	if (req)
		json_object_set_new(req, "source", src ? src : json_null());
	else
		json_decref(src);
	if (req && name && json_object_set_new(req, "name", json_string(name))) {
		cli_err("--name must be UTF-8");
		json_decref(req);
		close(fd);
		return CLI_EXIT_USAGE;
	}
	if (req && D->encoding && json_object_set_new(req, "encoding", json_string(D->encoding))) {
		cli_err("--encoding must be UTF-8");
		json_decref(req);
		close(fd);
		return CLI_EXIT_USAGE;
	}
	if (!req) {
		cli_err("out of memory");
		close(fd);
		return CLI_EXIT_FAILURE;
	}
	if ((ret = cli_conn_send(&D->c, req, fd))) {
		json_decref(req);
		close(fd);
		D->gone = 1;
		return ret;
	}
	ret = CLI_EXIT_FAILURE;
	json_decref(req);
	close(fd); /* the daemon holds its own copy now */
	while ((ev = cli_conn_recv(&D->c))) {
		const char *kind = json_string_value(json_object_get(ev, "event"));
		if (kind && !strcmp(kind, "error") && json_is_null(json_object_get(ev, "id"))) {
			/* about the connection, not a request (we send only good
			 * lines): a refusal or a timeout, and the daemon closes */
			ret = cli_conn_refused(ev);
			json_decref(ev);
			D->n_failed++;
			D->gone = 1;
			return ret;
		}
		if (json_integer_value(json_object_get(ev, "id")) != id || !kind) {
			json_decref(ev);
			continue;
		}
		if (!strcmp(kind, "queued")) {
			if (D->json)
				dmn_json_event("queued", ev, json_pack("{s:o}", "path", cli_json_cstr(path)));
			else
				dmn_queued(D, ev);
			json_decref(ev);
			continue;
		}
		if (!strcmp(kind, "progress")) {
			const char *stage = json_string_value(json_object_get(ev, "stage"));
			if (stage && !strcmp(stage, "part") && D->tty && !D->json)
				fprintf(stderr, "\r\033[Kpart %lld/%lld\n",
				    (long long)json_integer_value(json_object_get(ev, "done")),
				    (long long)json_integer_value(json_object_get(ev, "total")));
			else if (D->tty && !D->json)
				dmn_bar(path, json_integer_value(json_object_get(ev, "done")),
				    json_integer_value(json_object_get(ev, "total")),
				    json_real_value(json_object_get(ev, "elapsed_s")));
			if (D->json) /* one line per progress event, for scripts */
				dmn_json_event("progress", ev, json_pack("{s:o}", "path",
				    cli_json_cstr(path)));
			json_decref(ev);
			continue;
		}
		if (D->tty && !D->json)
			fprintf(stderr, "\r\033[K");
		if (!strcmp(kind, "error") && D->in_dir && json_string_value(json_object_get(ev,
		    "code")) && !strcmp(json_string_value(json_object_get(ev, "code")),
		    "unsupported_format")) {
			/* a folder's stray binary is not the folder's failure (issue 30):
			 * skipped with a warning, as git add or rsync go on past a file */
			char shown[6 * PATH_MAX];
			const char *msg = json_string_value(json_object_get(ev, "message"));
			cli_term_str(path, shown, sizeof(shown));
			fprintf(stderr, "kvsnap: warning: %s: skipped: %s\n", shown, msg ? msg : "?");
			if (D->json)
				dmn_json_event("skipped", ev, json_pack("{s:o}", "path", cli_json_cstr(path)));
			D->n_not_doc++;
			ret = CLI_EXIT_OK;
		} else if (!strcmp(kind, "error")) {
			ret = dmn_error(path, path, ev);
			D->n_failed++;
			D->gone = ret == CLI_EXIT_UNREACHABLE; /* shutting_down: stop here */
		} else {
			const char *hex = json_string_value(json_object_get(ev, "doc_id"));
			int skipped = json_is_true(json_object_get(ev, "skipped"));
			char line[256], shown[6 * PATH_MAX];
			if (D->json) {
				dmn_json_event("result", ev, json_pack("{s:o}", "path", cli_json_cstr(path)));
			} else {
				cli_show_ingested(json_integer_value(json_object_get(ev, "tokens")),
				    json_integer_value(json_object_get(ev, "units")),
				    json_integer_value(json_object_get(ev, "full_units")),
				    (uint64_t)json_integer_value(json_object_get(ev, "snapshot_bytes")),
				    (uint64_t)json_integer_value(json_object_get(ev, "full_bytes")), line,
				    sizeof(line));
				cli_term_str(path, shown, sizeof(shown));
				const char *tier = json_string_value(json_object_get(ev, "tier"));
				const char *serr = json_string_value(json_object_get(ev, "shared_error"));
				const char *named = json_string_value(json_object_get(ev, "named"));
				const char *nerr = json_string_value(json_object_get(ev, "name_error"));
				char term[6 * 256], nm[6 * 256 + 32] = "", pw[48];
				if (named) {
					cli_term_str(named, term, sizeof(term));
					snprintf(nm, sizeof(nm), ", now named \"%s\"", term);
				}
				if (skipped)
					printf("%s (%.12s): already stored%s (skipped)%s: %s\n", shown,
					    hex ? hex : "?", tier && !strcmp(tier, "shared") ?
					    " in the shared tier, copied here" : "", nm, line);
				if (nerr)
					fprintf(stderr, "kvsnap: warning: %s: stored already and not named "
					    "\"%s\": %s\n", shown, D->name ? D->name : "?", nerr);
				else
					printf("%s (%.12s), %.1f s: %s, %s%s\n", shown, hex ? hex : "?",
					    json_real_value(json_object_get(ev, "seconds")),
					    json_string_value(json_object_get(ev, "format")) ?
					    json_string_value(json_object_get(ev, "format")) : "?", line,
					    dmn_parts_words(ev, pw, sizeof(pw)));
				/* kvsnapd with a shared tier that did not take it: stored here only */
				if (json_is_false(json_object_get(ev, "shared")))
					fprintf(stderr, "kvsnap: warning: %s: stored by kvsnapd but not in its "
					    "shared tier: %s\n", shown, serr ? serr : "unknown reason");
			}
			fflush(stdout);
			if (skipped)
				D->n_skipped++;
			else
				D->n_done++;
			ret = CLI_EXIT_OK;
		}
		json_decref(ev);
		return ret;
	}
	D->gone = 1;
	return CLI_EXIT_UNREACHABLE;
}

/* A file, or every regular file under a directory (name order). */
static int
dmn_ingest_path(struct dmn *D, const char *path, const char *name, int depth)
{
	struct stat sb;
	char **names = NULL, full[PATH_MAX];
	size_t n = 0, i;
	int ret = CLI_EXIT_OK, r;

	if (!strcmp(path, "-"))
		return dmn_ingest_one(D, path, name);
	if (stat(path, &sb)) {
		cli_err("cannot open %s: %s", path, strerror(errno));
		D->n_failed++;
		return CLI_EXIT_NOT_FOUND;
	}
	if (!S_ISDIR(sb.st_mode))
		return dmn_ingest_one(D, path, name);
	if (depth >= CLI_DAEMON_DEPTH_MAX) {
		cli_err("%s: directories nested too deep; skipped", path);
		return CLI_EXIT_FAILURE;
	}
	if (cli_dir_names(path, &names, &n)) {
		cli_err("cannot read directory %s: %s", path, strerror(errno));
		D->n_failed++;
		return CLI_EXIT_NOT_FOUND;
	}
	for (i = 0; i < n; i++) {
		int k = cli_path_join(full, sizeof(full), path, names[i]);
		free(names[i]);
		if (k) {
			cli_err("%s/...: path too long; skipped", path);
			continue;
		}
		if (lstat(full, &sb))
			continue;
		/* a symlink to a directory is not followed (no loops) */
		if (S_ISLNK(sb.st_mode) && (stat(full, &sb) || S_ISDIR(sb.st_mode)))
			continue;
		if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
			continue;
		D->in_dir = 1;
		r = dmn_ingest_path(D, full, NULL, depth + 1);
		D->in_dir = 0;
		if (r)
			ret = r;
		if (D->gone) {
			while (++i < n)
				free(names[i]);
			break;
		}
	}
	free(names);
	return ret;
}

int
cli_daemon_ingest(int argc, char **argv)
{
	struct dmn D;
	int r, rc, i = dmn_parse(argc, argv, &D, &r), ret = CLI_EXIT_OK;
	char why[256];

	if (i < 0)
		return r;
	if (D.name && argc - i != 1) {
		cli_err("--name needs exactly one document");
		return CLI_EXIT_USAGE;
	}
	if (D.name && svc_name_check(D.name, why, sizeof(why))) {
		cli_err("--name: %s", why);
		return CLI_EXIT_USAGE;
	}
	D.tty = isatty(STDERR_FILENO);
	/* stdin first: a slow pipe must not keep an idle connection open
	 * (the daemon's --idle-timeout) */
	for (r = i; r < argc; r++)
		if (!strcmp(argv[r], "-") && D.stdin_fd < 0 && (D.stdin_fd = dmn_stdin_fd(&rc)) < 0)
			return rc;
	if (cli_conn_open(&D.c, cli_socket_path(cli_g.socket))) {
		if (D.stdin_fd >= 0)
			close(D.stdin_fd);
		return CLI_EXIT_UNREACHABLE;
	}
	if ((r = cli_conn_ready(&D.c))) {
		if (D.stdin_fd >= 0)
			close(D.stdin_fd);
		cli_conn_close(&D.c);
		return r;
	}
	for (; i < argc; i++) {
		if ((r = dmn_ingest_path(&D, argv[i], D.name, 0)))
			ret = r;
		if (D.gone)
			break;
	}
	if (D.stdin_fd >= 0) /* not sent: the daemon went away first */
		close(D.stdin_fd);
	if (!D.json && D.n_done + D.n_skipped + D.n_failed + D.n_not_doc > 1) {
		printf("%d ingested, %d already stored, %d failed", D.n_done, D.n_skipped, D.n_failed);
		if (D.n_not_doc)
			printf(", %d skipped (not documents)", D.n_not_doc);
		printf("\n");
	}
	/* folders that held no document at all: that is an error still */
	if (ret == CLI_EXIT_OK && D.n_not_doc && !D.n_done && !D.n_skipped) {
		cli_err("no document found: the %d file%s read %s not a document", D.n_not_doc,
		    D.n_not_doc == 1 ? "" : "s", D.n_not_doc == 1 ? "is" : "are");
		ret = CLI_EXIT_CORRUPT;
	}
	cli_conn_close(&D.c);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* query                                                                     */

/* A library question's options in the request: mode, min_conf. */
static int
dmn_lib_opts(json_t *req, const struct cli_lib *lib)
{
	if (lib->mode && json_object_set_new(req, "mode", json_string(lib->mode)))
		return -1;
	if (lib->min_conf_set && json_object_set_new(req, "min_conf", json_real(lib->min_conf)))
		return -1;
	if (lib->top && json_object_set_new(req, "top", json_integer(lib->top)))
		return -1;
	if (lib->judge && json_object_set_new(req, "judge_tokens", json_integer(lib->judge)))
		return -1;
	return 0;
}

/* --docs as the request's docs, with the options. */
static int
dmn_lib_fields(json_t *req, const struct cli_lib *lib)
{
	json_t *a = json_array();
	size_t k;
	for (k = 0; a && k < lib->n; k++)
		if (json_array_append_new(a, json_string(lib->refs[k])))
			break;
	if (!a || k < lib->n || json_object_set_new(req, "docs", a))
		return -1;
	return dmn_lib_opts(req, lib);
}

int
cli_daemon_query(int argc, char **argv)
{
	struct dmn D;
	json_t *req, *ev;
	char *question;
	int r, i = dmn_parse(argc, argv, &D, &r), ret = CLI_EXIT_UNREACHABLE, fd = -1;

	if (i < 0) {
		cli_lib_free(&D.lib);
		return r;
	}
	/* O_NONBLOCK: a FIFO must not hang us (the daemon refuses it anyway) */
	if (D.file && (fd = open(D.file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
		cli_err("cannot open %s: %s", D.file, strerror(errno));
		return CLI_EXIT_NOT_FOUND;
	}
	if (cli_conn_open(&D.c, cli_socket_path(cli_g.socket))) {
		if (fd >= 0)
			close(fd);
		cli_lib_free(&D.lib);
		return CLI_EXIT_UNREACHABLE;
	}
	if ((r = cli_conn_ready(&D.c))) {
		if (fd >= 0)
			close(fd);
		cli_conn_close(&D.c);
		return r;
	}
	/* an unquoted question's words, joined by single spaces */
	question = D.lib.on ? cli_join(argc - i, argv + i) : cli_join(argc - i - 1, argv + i + 1);
	req = !question ? NULL : json_pack("{s:i, s:i, s:s, s:s, s:i, s:b, s:f, s:f, s:I}",
	    "v", 1, "id", 1, "op", "query", "question",
	    question, "max_tokens", (int)D.n_max, "fd", fd >= 0, "temperature", D.smp.temp,
	    "top_p", D.smp.top_p, "seed", (json_int_t)D.smp.seed);
	free(question);
	if (req && !D.lib.on && json_object_set_new(req, "doc", json_string(argv[i]))) {
		json_decref(req);
		req = NULL;
	}
	if (req && D.lib.on && (D.lib.all ? json_object_set_new(req, "all", json_true()) ||
	    dmn_lib_opts(req, &D.lib) : dmn_lib_fields(req, &D.lib))) {
		json_decref(req);
		req = NULL;
	}
	if (req && D.smp.n_stop) { /* version 2: a daemon without stop sequences refuses it */
		json_t *a = json_array();
		size_t k;
		for (k = 0; a && k < D.smp.n_stop; k++)
			if (json_array_append_new(a, json_string(D.smp.stop[k])))
				break;
		if (!a || k < D.smp.n_stop || json_object_set_new(req, "stop", a) ||
		    json_object_set_new(req, "v", json_integer(KVSNAP_PROTOCOL_VERSION))) {
			json_decref(req);
			req = NULL;
		}
	}
	if (req && D.encoding && json_object_set_new(req, "encoding", json_string(D.encoding))) {
		json_decref(req);
		req = NULL;
	}
	if (!req) {
		cli_err("the question (or DOC, --docs, --encoding, --stop) is not valid UTF-8");
		cli_lib_free(&D.lib);
		cli_conn_close(&D.c);
		if (fd >= 0)
			close(fd);
		return CLI_EXIT_USAGE;
	}
	if ((r = cli_conn_send(&D.c, req, fd))) {
		json_decref(req);
		cli_conn_close(&D.c);
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (fd >= 0)
		close(fd);
	json_decref(req);
	while ((ev = cli_conn_recv(&D.c))) {
		const char *kind = json_string_value(json_object_get(ev, "event"));
		if (kind && !strcmp(kind, "token")) {
			json_t *t = json_object_get(ev, "text");
			if (D.json)
				dmn_json_event("token", ev, NULL);
			else
				fwrite(json_string_value(t), 1, json_string_length(t), stdout);
			fflush(stdout);
		} else if (kind && !strcmp(kind, "queued")) {
			dmn_queued(&D, ev);
		} else if (kind && !strcmp(kind, "result")) {
			const char *stop = json_string_value(json_object_get(ev, "stop"));
			if (D.json)
				dmn_json_event("result", ev, NULL); /* stop included */
			else
				printf("\n");
			/* the answer's line is ended and out before the statistics */
			fflush(stdout);
			/* a library answer: asked as one, or a document stored in parts */
			int lib = D.lib.on || json_is_array(json_object_get(ev, "sources"));
			if (lib && !D.json)
				cli_lib_print(ev, D.verbose);
			else if (D.verbose && !lib)
				fprintf(stderr, "kvsnap: time to first token %.3f s from the snapshot%s "
				    "(%lld question tokens), %lld answer tokens in %.2f s, stop: %s\n",
				    json_real_value(json_object_get(ev, "ttft_s")),
				    json_string_value(json_object_get(ev, "tier")) &&
				    !strcmp(json_string_value(json_object_get(ev, "tier")), "shared") ?
				    " (fetched from the shared tier)" : "",
				    (long long)json_integer_value(json_object_get(ev, "prompt_tokens")),
				    (long long)json_integer_value(json_object_get(ev, "tokens")),
				    json_real_value(json_object_get(ev, "seconds")), stop ? stop : "?");
			ret = CLI_EXIT_OK;
			json_decref(ev);
			break;
		} else if (kind && !strcmp(kind, "error")) {
			if (!D.json)
				fflush(stdout);
			ret = dmn_error("query", NULL, ev);
			json_decref(ev);
			break;
		}
		json_decref(ev);
	}
	cli_conn_close(&D.c);
	cli_lib_free(&D.lib);
	return ret;
}
