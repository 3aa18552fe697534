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

int cli_generate(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_ask(int argc, char **argv);
int cli_pod_calibrate(int argc, char **argv);
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
int cli_train_heads(int argc, char **argv);
int cli_selftest(int argc, char **argv);

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

/* Write a JSON string literal (quotes and escapes) for s[0..len) to f. */
void cli_json_str(FILE *f, const char *s, size_t len);
/* s made safe for a terminal into out (cap bytes, always terminated):
 * control bytes (C0, DEL), C1 controls and the Unicode bidi controls
 * (U+200E/F, U+202A..E, U+2066..9) become \xNN / \uNNNN, and a backslash
 * "\\", so a name cannot move the cursor, recolour or reorder the line. */
void cli_term_str(const char *s, char *out, size_t cap);

/* Parse a non-negative integer / float option value; -1 on error. */
int cli_parse_long(const char *s, long lo, long hi, long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

/* Read a whole file of at most max bytes (malloc'd; *len its size); NULL
 * with a message on stderr when it cannot be read or is too large.  "-"
 * reads stdin. */
char *cli_read_file(const char *path, size_t max, size_t *len);

/* The entries of a directory not starting with '.', in name order
 * (strcmp); *names malloc'd (free with cli_free_names).  -1 if it cannot
 * be read. */
int cli_dir_names(const char *dir, char ***names, size_t *n);
void cli_free_names(char **names, size_t n);

/* The state directory (the store): flag, else $KVSNAP_STATE, else
 * $XDG_STATE_HOME/kvsnap, else ~/.local/state/kvsnap; NULL if none. */
const char *cli_state_dir(const char *flag);

/* Default model path: $KVSNAP_MODEL, else the bundled one. */
const char *cli_default_model(void);

/* Training data of the retaining heads (clients/train_data.c): a corpus of
 * Debian-packaged prose (fortunes) and key words (wamerican), and example
 * i of a recipe with a seed, a pure function of both. */
struct td_corpus {
	char **para;        /* fortune entries (point into blobs) */
	size_t n_para;
	char **words;       /* lowercase words, 4..10 letters */
	size_t n_words;
	char **blobs;       /* the files read, owned */
	size_t n_blobs, blob_cap;
};

struct td_example {
	int kind;           /* 0 code retrieval, 2 key-value facts, 1/3 document QA */
	char *doc;          /* the document (user turn, before the question) */
	char *question;
	char *answer;       /* gold answer, or NULL: the backbone answers */
};

int td_corpus_load(struct td_corpus *c, const char *fortune_dir, const char *words_path);
void td_corpus_free(struct td_corpus *c);
/* Example `index` with a document of about doc_chars characters; -1 on OOM. */
int td_make(const struct td_corpus *c, uint64_t seed, int64_t index, size_t doc_chars,
    struct td_example *ex);
void td_example_free(struct td_example *ex);
const char *td_kind_name(int kind);

/* The cache of kvzip labels (clients/train_labels.c): one checksummed file
 * per example in dir, keyed by (model fingerprint, scorer description,
 * token ids).  tl_read fills ex->s (0) or finds no valid file (-1);
 * tl_write creates dir if needed (0 / -1). */
#define TL_KEY_BYTES 32
struct eng_train_example;
void tl_key(const char *model_fp, const char *scorer, const int32_t *ids, int64_t n,
    uint8_t key[TL_KEY_BYTES]);
int tl_read(const char *dir, const uint8_t key[TL_KEY_BYTES], struct eng_train_example *ex);
int tl_write(const char *dir, const uint8_t key[TL_KEY_BYTES],
    const struct eng_train_example *ex);

#endif /* CLIENTS_CLI_H */
