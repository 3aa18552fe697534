/*
 * cli.h: shared pieces of the kvsnap command-line client.
 *
 * Exit codes (documented in README and `kvsnap -h`; never renumber):
 *   0 ok, 1 usage, 2 not found, 3 daemon unreachable, 4 corrupt or
 *   unsupported data, 5 other failure (out of memory, I/O, engine error),
 *   6 compute backend not available (--backend cuda without a device).
 */
#ifndef CLIENTS_CLI_H
#define CLIENTS_CLI_H

#include <stdint.h> /* for uint64_t */
#include <stdio.h> /* for FILE */

#include <jansson.h> /* for json_t (the daemon protocol) */

#include "common/cmdline.h"
#include "common/strv.h" /* kv_strv_free: cli_dir_names' names */

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 1,
	CLI_EXIT_NOT_FOUND = 2,
	CLI_EXIT_UNREACHABLE = 3,
	CLI_EXIT_CORRUPT = 4,
	CLI_EXIT_FAILURE = 5,
	CLI_EXIT_NO_BACKEND = 6
};

/* One subcommand: name, one-line summary, entry point (argv[0] is its name). */
struct cli_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/* The command line (clients/cli_args.c).  Global flags, accepted before
 * or after the command (before a "--"); a command they do not apply to
 * refuses them with the reason. */
#define CLI_G_SOCKET 1u  /* -s, --socket SOCK: kvsnapd's socket */
#define CLI_G_JSON 2u    /* --json: one JSON object per line */
#define CLI_G_STATE 4u   /* --state DIR: the store */
#define CLI_G_MODEL 8u   /* -m, --model GGUF */
#define CLI_G_BACKEND 16u /* --backend cpu|cuda: where in-process model work runs */
struct cli_global {
	const char *socket, *state, *model, *backend;
	int json, help;
	unsigned given;     /* CLI_G_ bits given on the command line */
	const char *cmd;    /* the command's name */
};
extern struct cli_global cli_g;
/* Parse the global flags before the command into cli_g (-h sets help;
 * --version prints and exits 0): the index of the command, or -1 with a
 * usage error printed. */
int cli_global_lead(int argc, char **argv);

/* Values of options several commands share (above any char). */
#define CLI_O_TEMP 0x80
#define CLI_O_TOP_P 0x81
#define CLI_O_SEED 0x82
#define CLI_O_PROFILE 0x83  /* every profile flag: cli_profile_flag */
#define CLI_O_STOP 0x84     /* query's --stop S (repeatable) */
#define CLI_O_DOCS 0x85     /* query's --docs A,B: a library question */
#define CLI_O_MODE 0x86     /* query's --mode side|parts */
#define CLI_O_MIN_CONF 0x87 /* query's --min-conf X */
#define CLI_O_ALL 0x88      /* query's --all: a library question over all one may read */
#define CLI_O_PART_TOKENS 0x89 /* ingest's --part-tokens N: parts of at most N tokens */
#define CLI_PART_TOKENS_MAX 1048576
#define CLI_O_TOP 0x8A      /* query's --top N with --all: the parts retrieved */
#define CLI_O_JUDGE 0x8B    /* query's --judge-tokens N: the answer tokens judged first */
#define CLI_LIB_OPTIONS \
	{ "all", no_argument, NULL, CLI_O_ALL }, \
	{ "top", required_argument, NULL, CLI_O_TOP }, \
	{ "docs", required_argument, NULL, CLI_O_DOCS }, \
	{ "mode", required_argument, NULL, CLI_O_MODE }, \
	{ "min-conf", required_argument, NULL, CLI_O_MIN_CONF }, \
	{ "judge-tokens", required_argument, NULL, CLI_O_JUDGE }
#define CLI_STOP_MAX 4      /* = SVC_STOP_MAX */
#define CLI_STOP_OPTION { "stop", required_argument, NULL, CLI_O_STOP }
#define CLI_TEMP_MAX 2.0    /* as the protocol's temperature */
#define CLI_SEED_MAX INT64_MAX
#define CLI_SAMPLE_OPTIONS \
	{ "temp", required_argument, NULL, CLI_O_TEMP }, \
	{ "top-p", required_argument, NULL, CLI_O_TOP_P }, \
	{ "seed", required_argument, NULL, CLI_O_SEED }
#define CLI_PROFILE_OPTIONS \
	{ "policy", required_argument, NULL, CLI_O_PROFILE }, \
	{ "budget", required_argument, NULL, CLI_O_PROFILE }, \
	{ "ratio", required_argument, NULL, CLI_O_PROFILE }, \
	{ "chunk", required_argument, NULL, CLI_O_PROFILE }, \
	{ "opts", required_argument, NULL, CLI_O_PROFILE }, \
	{ "quant", required_argument, NULL, CLI_O_PROFILE }

/* One command's parser: fill the first members, then
 *   while ((c = cli_getopt(&o, argc, argv)) != -1) switch (c) {...;
 *       default: return CLI_EXIT_USAGE; }   (cli_getopt said why)
 *   if ((r = cli_operands(&o, argc, argv, MIN, MAX))) return r;
 * and the operands are argv[optind..argc).  -h/--help prints usage to
 * stdout and exits 0. */
struct cli_opts {
	const char *shortopts;          /* the command's own (no s, m, h) */
	const struct option *longopts;  /* its own (no socket/json/state/model/backend/help) */
	unsigned globals;               /* CLI_G_ bits that apply */
	const char *operands;           /* "DOC QUESTION...", for messages */
	void (*usage)(FILE *f, const char *cmd);
	const struct option *elsewhere; /* the other mode's options (or NULL) */
	const char *hint;               /* said of them ("%s": the option) */
	int backend_own;                /* the command uses --backend itself (selftest) */
	/* cli_getopt's */
	int started, budget_set, ratio_set;
	struct cmdline cl;
	struct option all[64];
	char shorts[64], prog[64], help[80];
};
int cli_getopt(struct cli_opts *o, int argc, char **argv);
/* After the options: refuse a global flag that does not apply, check the
 * operand count (max < 0: no limit), switch to the compute backend
 * (commands with CLI_G_BACKEND).  0, or an exit code with the message. */
int cli_operands(struct cli_opts *o, int argc, char **argv, int min, int max);
/* "kvsnap CMD: <message>" and "run 'kvsnap CMD -h' for help" on stderr. */
void cli_usage_err(const struct cli_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Option values with the usage error printed (the flag as typed); 0 / -1. */
int cli_long(const struct cli_opts *o, const char *v, long lo, long hi, long *out);
int cli_double(const struct cli_opts *o, const char *v, double lo, int lo_open, double hi,
    double *out);
/* The sampling flags (CLI_SAMPLE_OPTIONS; generate and query) and query's
 * CLI_STOP_OPTION: 0 set, 1 c is not one, -1 a usage error printed. */
struct cli_sample {
	double temp, top_p;     /* 0 (greedy) .. 2; (0, 1] */
	uint64_t seed;
	const char *stop[CLI_STOP_MAX]; /* query: --stop S, in order (argv's) */
	size_t n_stop;
};
int cli_sample_flag(const struct cli_opts *o, int c, const char *v, struct cli_sample *s);
/* A profile flag (CLI_PROFILE_OPTIONS) into sc by the service's one parser
 * (svc_profile_flag): 0, or -1 with the usage error printed.
 * cli_profile_done: -1 (printed) when both --budget and --ratio came. */
struct svc_conf;
int cli_profile_flag(struct cli_opts *o, struct svc_conf *sc, const char *v);
int cli_profile_done(const struct cli_opts *o);
/* A library question's flags (CLI_LIB_OPTIONS; clients/cli_library.c):
 * --docs A,B (1 to CLI_LIB_MAX references), --mode, --min-conf.
 * cli_lib_flag: 0 set, 1 c is not one, -1 a usage error printed. */
#define CLI_LIB_MAX 16      /* = SVC_LIB_MAX */
struct cli_lib {
	int on;                 /* --docs or --all given */
	int all;                /* --all: the documents search finds (svc_search) */
	char *list;             /* --docs' value, split in place (malloc'd) */
	const char *refs[CLI_LIB_MAX];
	size_t n;
	const char *mode;       /* "side" or "parts"; NULL: the default */
	int min_conf_set;
	double min_conf;
	long top;               /* --all: the best parts retrieved (0: SVC_LIB_SEARCH_K) */
	long judge;             /* --judge-tokens (0: SVC_LIB_JUDGE_DEFAULT) */
};
int cli_lib_flag(const struct cli_opts *o, int c, const char *v, struct cli_lib *lib);
/* --mode or --min-conf without --docs: -1 with the usage error printed. */
int cli_lib_done(const struct cli_opts *o, const struct cli_lib *lib);
void cli_lib_free(struct cli_lib *lib);
/* A library question's result event (the protocol's, docs/PROTOCOL.md;
 * `--local` builds the same): after the answer's line, "sources: ..." on
 * stdout (consulted documents, the one answered from, scores) and, with
 * verbose, the timings on stderr. */
void cli_lib_print(json_t *res, int verbose);
/* The model: -m/--model, else cli_default_model(). */
const char *cli_model(void);
/* words[0..n) joined by single spaces (malloc'd; NULL: out of memory). */
char *cli_join(int n, char **words);
/* 1 when words[0..n) hold nothing but white space (an empty question). */
int cli_blank(int n, char **words);
/* The command nearest to a mistyped name, or NULL. */
struct cli_cmd;
const char *cli_nearest_cmd(const char *name, const struct cli_cmd *cmds, size_t n);

int cli_generate(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_ask(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_rm(int argc, char **argv);
int cli_rename(int argc, char **argv);
int cli_stats(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_prune(int argc, char **argv);
int cli_ingest(int argc, char **argv);
int cli_query(int argc, char **argv);
int cli_shrink(int argc, char **argv);
int cli_search(int argc, char **argv);

/* The daemon paths of ingest and query (clients/cli_daemon.c). */
int cli_daemon_ingest(int argc, char **argv);
int cli_daemon_query(int argc, char **argv);
/* 1 if argv holds `flag` before a "--". */
int cli_has_flag(int argc, char **argv, const char *flag);

/* A connection to kvsnapd (clients/client_proto.c; docs/PROTOCOL.md). */
struct cli_conn {
	int fd;
	char *buf;          /* bytes read, not yet a whole line */
	size_t len, cap;
};
/* The socket: flag, else $KVSNAP_SOCKET, else $XDG_RUNTIME_DIR/kvsnap/
 * kvsnapd.sock, else /run/kvsnap/kvsnapd.sock. */
const char *cli_socket_path(const char *flag);
/* Connect; -1 with a message (exit CLI_EXIT_UNREACHABLE). */
int cli_conn_open(struct cli_conn *c, const char *path);
void cli_conn_close(struct cli_conn *c);
/* kvsnapd listens before its model is loaded and answers `loading` until
 * it is: ask (hello) until it is ready, saying once on stderr that we
 * wait (at most CLI_LOAD_WAIT_S).  0, or an exit code with a message. */
#define CLI_LOAD_WAIT_S 600
int cli_conn_ready(struct cli_conn *c);
/* Send one request line; fd >= 0 travels with it (SCM_RIGHTS).  0, or an
 * exit code with a message printed: when the daemon had closed the
 * connection, its reason (an error event waiting to be read) and the exit
 * code for its code, else CLI_EXIT_UNREACHABLE. */
int cli_conn_send(struct cli_conn *c, json_t *req, int fd);
/* Print a connection-level error event (the daemon closes after it:
 * too_many_connections, timeout); its exit code. */
int cli_conn_refused(json_t *ev);
/* The next event (a JSON object, caller decrefs); NULL with a message. */
json_t *cli_conn_recv(struct cli_conn *c);
/* The exit code for a daemon error code (docs/PROTOCOL.md). */
int cli_exit_for_code(const char *code);

/* Map an engine error (enum eng_err) to an exit code. */
int cli_exit_for_engine(int err);

/* Print "kvsnap: <fmt>\n" to stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --json output (clients/cli_json.c; docs/JSON.md).  cli_json_mode: the
 * command was given --json (set by main). */
extern int cli_json_mode;
/* One line on stdout: {"event":EVENT, then fields' members}; fields
 * (may be NULL) is consumed. */
void cli_json_line(const char *event, json_t *fields);
/* A JSON string of s[0..len) / of s (NULL: ""); bytes that are not UTF-8
 * become U+FFFD. */
json_t *cli_json_text(const char *s, size_t len);
json_t *cli_json_cstr(const char *s);
/* An error event: code (NULL: the exit code's name), message, exit, and
 * extra's members (may be NULL; consumed). */
void cli_json_error(const char *code, int rc, const char *message, json_t *extra);
/* An error event with the message cli_err printed last. */
void cli_json_error_last(int rc, json_t *extra);
/* The name of an exit code: "usage", "not_found", "unreachable", ... */
const char *cli_exit_name(int rc);
/* The message cli_err printed last (for the error event). */
void cli_json_note(const char *msg);
/* main's last step: with --json, a failure no error event reported yet
 * gets one (the last message printed); returns rc. */
int cli_json_finish(int rc);

/* What people read (clients/cli_show.c): "2.7 MiB"; "3 min ago",
 * "yesterday", "2026-11-01"; a document's label (its name, else its
 * source file's base name, else its short id), made safe for a terminal. */
void cli_show_size(uint64_t bytes, char *out, size_t cap);
void cli_show_ago(int64_t us, char *out, size_t cap);
void cli_show_label(const char *name, const char *source, const char *hex, char *out, size_t cap);
/* "25 % kept, 3.9x smaller": units kept of the full units, and the full
 * cache's bytes over the stored ones ("" parts when unknown). */
void cli_show_kept(int64_t units, int64_t full_units, uint64_t bytes, uint64_t full_bytes,
    char *kept, size_t kcap, char *ratio, size_t rcap);
/* How an ingest ends: "358 tokens -> 1.9 MiB snapshot (25 % kept, 2.8x
 * smaller than the full cache)"; bytes 0: only tokens and units. */
void cli_show_ingested(int64_t tokens, int64_t units, int64_t full_units, uint64_t bytes,
    uint64_t full_bytes, char *out, size_t cap);

/* Write a JSON string literal (quotes and escapes) for s[0..len) to f. */
void cli_json_str(FILE *f, const char *s, size_t len);
/* s made safe for a terminal into out (cap bytes, always terminated):
 * control bytes (C0, DEL), C1 controls and the Unicode bidi controls
 * (U+200E/F, U+202A..E, U+2066..9) become \xNN / \uNNNN, and a backslash
 * "\\", so a name cannot move the cursor, recolour or reorder the line. */
void cli_term_str(const char *s, char *out, size_t cap);

/* Read a whole file of at most max bytes (malloc'd; *len its size); NULL
 * with a message on stderr when it cannot be read or is too large.  "-"
 * reads stdin. */
char *cli_read_file(const char *path, size_t max, size_t *len);

/* The entries of a directory not starting with '.', in name order
 * (strcmp); *names malloc'd (free with kv_strv_free).  -1 if it cannot
 * be read. */
int cli_dir_names(const char *dir, char ***names, size_t *n);
/* DIR/NAME into out (one '/' between, however many DIR ends with, so
 * "lib/" gives "lib/file"); -1 when it does not fit. */
int cli_path_join(char *out, size_t cap, const char *dir, const char *name);

/* The state directory (the store): flag, else $KVSNAP_STATE, else the XDG
 * default (common/paths.h: $XDG_STATE_HOME/kvsnap when absolute, else
 * ~/.local/state/kvsnap); NULL if none. */
const char *cli_state_dir(const char *flag);

/* Before a store is opened for writing: when cli_state_dir(flag) is the XDG
 * default, its missing parents are made, 0700 (kv_mkdir_parents).  0, or
 * -1 with the message printed. */
int cli_state_parents(const char *flag);

/* The default model (common/paths.h: $KVSNAP_MODEL, else the installed
 * share directory, else the source tree's models/); NULL when there is none,
 * and a command that needs the model then returns cli_model_missing(): the
 * error naming every place looked, CLI_EXIT_NOT_FOUND. */
const char *cli_default_model(void);
int cli_model_missing(void);

#endif /* CLIENTS_CLI_H */
