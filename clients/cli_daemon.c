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
#include "storage/store.h"

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
	const char *sock, *name, *file, *encoding;
	long n_max;
	int json, force, share, tty, verbose;
	int gone;               /* the daemon closed the connection */
	int stdin_fd;           /* "-": stdin in a memfd, read before connecting */
	struct cli_conn c;
	int64_t next_id;
	int n_done, n_skipped, n_failed;
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
		    "  --share      let every user of the daemon query it\n");
	else
		fprintf(f, "usage: kvsnap query [-s SOCK] [-n N] [--file PATH] [--json] DOC QUESTION\n"
		    "Answer QUESTION from DOC's snapshot through kvsnapd; tokens stream to stdout.\n"
		    "  -n N         at most N answer tokens (default 128)\n"
		    "  --file PATH  pass PATH, your copy of the document: the daemon lets you read\n"
		    "               another user's snapshot of the same text\n"
		    "  --encoding E PATH's encoding, as it was ingested with\n");
	fprintf(f, "  -s, --socket SOCK  kvsnapd's socket (default $KVSNAP_SOCKET, else\n"
	    "               $XDG_RUNTIME_DIR/kvsnap/kvsnapd.sock, else /run/kvsnap/kvsnapd.sock)\n"
	    "  --json       one JSON object per line\n"
	    "  -v           query: time to first token and totals on stderr\n"
	    "  --local      run in this process instead (kvsnap %s --local -h)\n"
	    "exit codes: 0 ok, 1 usage, 2 not found, 3 daemon unreachable, 4 corrupt data,\n"
	    "snapshot of another profile (re-ingest) or not a document (binary data), 5 other\n"
	    "failure\n", cmd);
}

static int
dmn_parse(int argc, char **argv, struct dmn *D)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "name", required_argument, NULL, 'N' },
		{ "force", no_argument, NULL, 'F' },
		{ "share", no_argument, NULL, 'A' },
		{ "file", required_argument, NULL, 'f' },
		{ "encoding", required_argument, NULL, 'E' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = 0;

	memset(D, 0, sizeof(*D));
	D->c.fd = -1;
	D->stdin_fd = -1;
	D->n_max = 128;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:n:vh", opts, NULL)) != -1) {
		switch (c) {
		case 's': D->sock = optarg; break;
		case 'N': D->name = optarg; break;
		case 'F': D->force = 1; break;
		case 'A': D->share = 1; break;
		case 'f': D->file = optarg; break;
		case 'E': D->encoding = optarg; break;
		case 'j': D->json = 1; break;
		case 'v': D->verbose = 1; break;
		case 'n': bad |= cli_parse_long(optarg, 1, 4096, &D->n_max) != 0; break;
		case 'h': dmn_usage(stdout, argv[0]); exit(CLI_EXIT_OK);
		default: bad = 1;
		}
	}
	if (bad) {
		fprintf(stderr, "(engine settings such as --budget belong to kvsnapd, or use --local)\n");
		dmn_usage(stderr, argv[0]);
		return -1;
	}
	return optind;
}

/* The error event's code and message to stderr; its exit code. */
static int
dmn_error(const char *what, json_t *ev)
{
	const char *code = json_string_value(json_object_get(ev, "code"));
	const char *msg = json_string_value(json_object_get(ev, "message"));
	cli_err("%s: %s (%s)", what, msg ? msg : "error", code ? code : "?");
	return cli_exit_for_code(code);
}

/* ------------------------------------------------------------------------ */
/* ingest                                                                    */

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
		if (!strcmp(kind, "progress")) {
			if (D->tty && !D->json)
				dmn_bar(path, json_integer_value(json_object_get(ev, "done")),
				    json_integer_value(json_object_get(ev, "total")),
				    json_real_value(json_object_get(ev, "elapsed_s")));
			if (D->json) { /* one line per progress event, for scripts */
				printf("{\"progress\":true,\"path\":");
				cli_json_str(stdout, path, strlen(path));
				printf(",\"done\":%lld,\"total\":%lld}\n",
				    (long long)json_integer_value(json_object_get(ev, "done")),
				    (long long)json_integer_value(json_object_get(ev, "total")));
				fflush(stdout);
			}
			json_decref(ev);
			continue;
		}
		if (D->tty && !D->json)
			fprintf(stderr, "\r\033[K");
		if (!strcmp(kind, "error")) {
			ret = dmn_error(path, ev);
			D->n_failed++;
			D->gone = ret == CLI_EXIT_UNREACHABLE; /* shutting_down: stop here */
		} else {
			const char *hex = json_string_value(json_object_get(ev, "doc_id"));
			int skipped = json_is_true(json_object_get(ev, "skipped"));
			if (D->json) {
				json_object_del(ev, "id");
				json_object_del(ev, "event");
				src = json_string(path); /* not UTF-8: "?" */
				json_object_set_new(ev, "path", src ? src : json_string("?"));
				json_dumpf(ev, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
				printf("\n");
			} else if (skipped) {
				printf("%.12s  %s  already stored (skipped)\n", hex ? hex : "?", path);
			} else {
				const char *fmt = json_string_value(json_object_get(ev, "format"));
				printf("%.12s  %s  %s, %lld tokens -> %lld units  %.1f s\n",
				    hex ? hex : "?", path, fmt ? fmt : "?",
				    (long long)json_integer_value(json_object_get(ev, "tokens")),
				    (long long)json_integer_value(json_object_get(ev, "units")),
				    json_real_value(json_object_get(ev, "seconds")));
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
		int k = snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		free(names[i]);
		if (k < 0 || (size_t)k >= sizeof(full)) {
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
		if ((r = dmn_ingest_path(D, full, NULL, depth + 1)))
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
	int i = dmn_parse(argc, argv, &D), ret = CLI_EXIT_OK, r, rc;
	char why[256];

	if (i < 0)
		return CLI_EXIT_USAGE;
	if (i >= argc) {
		dmn_usage(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	if (D.name && argc - i != 1) {
		cli_err("--name needs exactly one document");
		return CLI_EXIT_USAGE;
	}
	if (D.name && store_name_check(D.name, why, sizeof(why))) {
		cli_err("--name: %s", why);
		return CLI_EXIT_USAGE;
	}
	D.tty = isatty(STDERR_FILENO);
	/* stdin first: a slow pipe must not keep an idle connection open
	 * (the daemon's --idle-timeout) */
	for (r = i; r < argc; r++)
		if (!strcmp(argv[r], "-") && D.stdin_fd < 0 && (D.stdin_fd = dmn_stdin_fd(&rc)) < 0)
			return rc;
	if (cli_conn_open(&D.c, cli_socket_path(D.sock))) {
		if (D.stdin_fd >= 0)
			close(D.stdin_fd);
		return CLI_EXIT_UNREACHABLE;
	}
	for (; i < argc; i++) {
		if ((r = dmn_ingest_path(&D, argv[i], D.name, 0)))
			ret = r;
		if (D.gone)
			break;
	}
	if (D.stdin_fd >= 0) /* not sent: the daemon went away first */
		close(D.stdin_fd);
	if (!D.json && D.n_done + D.n_skipped + D.n_failed > 1)
		printf("%d ingested, %d already stored, %d failed\n", D.n_done, D.n_skipped,
		    D.n_failed);
	cli_conn_close(&D.c);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* query                                                                     */

int
cli_daemon_query(int argc, char **argv)
{
	struct dmn D;
	json_t *req, *ev;
	int i = dmn_parse(argc, argv, &D), ret = CLI_EXIT_UNREACHABLE, r, fd = -1;

	if (i < 0)
		return CLI_EXIT_USAGE;
	if (argc - i != 2) {
		dmn_usage(stderr, argv[0]);
		return CLI_EXIT_USAGE;
	}
	/* O_NONBLOCK: a FIFO must not hang us (the daemon refuses it anyway) */
	if (D.file && (fd = open(D.file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
		cli_err("cannot open %s: %s", D.file, strerror(errno));
		return CLI_EXIT_NOT_FOUND;
	}
	if (cli_conn_open(&D.c, cli_socket_path(D.sock))) {
		if (fd >= 0)
			close(fd);
		return CLI_EXIT_UNREACHABLE;
	}
	req = json_pack("{s:i, s:i, s:s, s:s, s:s, s:i, s:b}", "v", 1, "id", 1, "op", "query",
	    "doc", argv[i], "question", argv[i + 1], "max_tokens", (int)D.n_max, "fd", fd >= 0);
	if (req && D.encoding && json_object_set_new(req, "encoding", json_string(D.encoding))) {
		json_decref(req);
		req = NULL;
	}
	if (!req) {
		cli_err("the question (or --encoding) is not valid UTF-8");
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
			if (D.json) {
				printf("{\"token\":");
				cli_json_str(stdout, json_string_value(t), json_string_length(t));
				printf("}\n");
			} else {
				fwrite(json_string_value(t), 1, json_string_length(t), stdout);
			}
			fflush(stdout);
		} else if (kind && !strcmp(kind, "result")) {
			if (D.json)
				printf("{\"done\":true,\"tokens\":%lld,\"ttft_s\":%.4f}\n",
				    (long long)json_integer_value(json_object_get(ev, "tokens")),
				    json_real_value(json_object_get(ev, "ttft_s")));
			else
				printf("\n");
			if (D.verbose)
				fprintf(stderr, "kvsnap: time to first token %.3f s from the snapshot "
				    "(%lld question tokens), %lld answer tokens in %.2f s\n",
				    json_real_value(json_object_get(ev, "ttft_s")),
				    (long long)json_integer_value(json_object_get(ev, "prompt_tokens")),
				    (long long)json_integer_value(json_object_get(ev, "tokens")),
				    json_real_value(json_object_get(ev, "seconds")));
			ret = CLI_EXIT_OK;
			json_decref(ev);
			break;
		} else if (kind && !strcmp(kind, "error")) {
			if (!D.json)
				fflush(stdout);
			ret = dmn_error("query", ev);
			json_decref(ev);
			break;
		}
		json_decref(ev);
	}
	cli_conn_close(&D.c);
	return ret;
}
