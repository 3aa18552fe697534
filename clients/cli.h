/*
 * cli.h: shared pieces of the kvsnap command-line client.
 *
 * Exit codes (documented in README and `kvsnap -h`; never renumber):
 *   0 ok, 1 usage, 2 not found, 3 daemon unreachable, 4 corrupt or
 *   unsupported data, 5 other failure (out of memory, I/O, engine error).
 */
#ifndef CLIENTS_CLI_H
#define CLIENTS_CLI_H

#include <stdio.h> /* for FILE */

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 1,
	CLI_EXIT_NOT_FOUND = 2,
	CLI_EXIT_UNREACHABLE = 3,
	CLI_EXIT_CORRUPT = 4,
	CLI_EXIT_FAILURE = 5
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

/* Map an engine error (enum eng_err) to an exit code. */
int cli_exit_for_engine(int err);

/* Print "kvsnap: <fmt>\n" to stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write a JSON string literal (quotes and escapes) for s[0..len) to f. */
void cli_json_str(FILE *f, const char *s, size_t len);

/* Parse a non-negative integer / float option value; -1 on error. */
int cli_parse_long(const char *s, long lo, long hi, long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

/* Read a whole file of at most max bytes (malloc'd; *len its size); NULL
 * with a message on stderr when it cannot be read or is too large. */
char *cli_read_file(const char *path, size_t max, size_t *len);

/* The state directory (the store): flag, else $KVSNAP_STATE, else
 * $XDG_STATE_HOME/kvsnap, else ~/.local/state/kvsnap; NULL if none. */
const char *cli_state_dir(const char *flag);

/* Default model path: $KVSNAP_MODEL, else the bundled one. */
const char *cli_default_model(void);

#endif /* CLIENTS_CLI_H */
