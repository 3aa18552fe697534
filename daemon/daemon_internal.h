/*
 * daemon_internal.h: what kvsnapd's own files share: logging, settings,
 * the process-wide state (model, store, profile), connections as the
 * workers see them, and the job queue.
 *
 * Threads: one libevent loop (server.c) owns every socket; model workers
 * and one admin worker (jobs.c) run jobs.  Workers hand events back with
 * conn_send(), which is safe from any thread.  Lock order: jobs_mu, then a
 * connection's mu (never the reverse).
 */
#ifndef DAEMON_INTERNAL_H
#define DAEMON_INTERNAL_H

#include <stdatomic.h> /* for atomic_int */
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "engine/engine.h"
#include "service/service.h"
#include "snapshot/snapshot_io.h"

/* ------------------------------------------------------------------------ */
/* Logging (log.c): levels, to stderr (journald keeps the rest).            */

enum dlog_level { DLOG_ERROR = 0, DLOG_WARN = 1, DLOG_INFO = 2, DLOG_DEBUG = 3 };
extern int dlog_level;
void dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse "error", "warn", "info", "debug" (or 0..3); -1 if unknown. */
int dlog_parse_level(const char *s);

/* ------------------------------------------------------------------------ */
/* Settings (config.c): defaults < config file < flags.                     */

struct dcfg {
	char *socket, *state, *model, *heads, *policy, *opts, *quant, *config, *backend;
	long budget, chunk, threads, workers, max_conns, max_jobs;
	double ratio; /* > 0: keep this share of each document (wins over budget) */
	int log_level, foreground;
};

/* Fill c from defaults, the config file (--config or none) and argv.
 * Returns 0, or an exit status (0 after -h/--version is returned as -1:
 * the caller exits 0). */
int dcfg_load(struct dcfg *c, int argc, char **argv);
void dcfg_free(struct dcfg *c);
/* The configured policy: ratio form when ratio > 0, else the budget. */
int dcfg_policy(const struct dcfg *c, struct eng_policy **out, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* Process-wide state (main.c).                                             */

struct daemon {
	struct dcfg cfg;
	struct eng_model *m;        /* shared read-only by every worker */
	struct eng_tok *tok;        /* encode/decode are read-only after init */
	struct store *s;            /* one per process; thread-safe */
	int quant;
	char profile[SNAP_MAX_PROFILE];
	uint8_t profile_id[SNAP_ID_BYTES];
	char profile_hex[2 * SNAP_ID_BYTES + 1];
	atomic_int stopping;        /* SIGTERM seen */
};
extern struct daemon *daemon_g;

/* ------------------------------------------------------------------------ */
/* Connections (server.c), as jobs see them.                                */

struct conn;
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);
/* Queue an event line for the client (any thread).  -1 if it is gone. */
int conn_send(struct conn *c, const char *line, size_t len);
/* The connection's serial number (for logs). */
uint64_t conn_serial(const struct conn *c);
/* A job of this connection ended (any thread): frees a per-connection slot. */
void conn_job_done(struct conn *c);

/* Start / stop the listener and the loop. */
int srv_run(struct daemon *d, int listen_fd);
/* Create the listening socket (0660 under a restrictive umask); -1 with a
 * message logged. */
int srv_listen(const char *path);

/* ------------------------------------------------------------------------ */
/* Jobs (jobs.c; one file per kind: ingest_job.c, query_job.c, admin_job.c) */

enum job_kind { JOB_ADMIN = 0, JOB_QUERY = 1, JOB_INGEST = 2 };

/* What a model worker owns: its engine scratch and its own policy object
 * (policies keep per-ingest state). */
struct worker {
	int index;
	struct eng_ctx *ctx;       /* NULL for the admin worker */
	struct eng_policy *p;
};

struct job {
	enum job_kind kind;
	struct conn *conn;         /* a reference */
	struct proto_req req;
	int fd;                    /* ingest by descriptor, else -1 */
	atomic_int cancel;         /* set by disconnect, cancel, or shutdown */
	atomic_int replied;        /* its last event (result or error) was sent */
	uint64_t seq;
	struct job *next;
};

int jobs_init(struct daemon *d);
/* Queue a job (takes ownership).  0, or PROTO_E_BUSY / _SHUTTING_DOWN (the
 * job is then still the caller's). */
int jobs_submit(struct job *j);
/* Cancel every job of a connection (queued ones are dropped). */
void jobs_cancel_conn(struct conn *c);
/* Cancel the job of connection c with request id `target`; 1 if found. */
int jobs_cancel_id(struct conn *c, json_t *target);
/* Stop: drop queued jobs (error replies), cancel running ingests, let
 * running queries and admin jobs finish.  Returns immediately. */
void jobs_stop(void);
/* Jobs running or queued. */
int jobs_busy(void);
/* Join the workers and free them (after jobs_stop and the loop ended). */
void jobs_free(void);
/* Job memory (closes the fd, drops the connection reference). */
void job_free(struct job *j);

/* Replies from a job. */
void job_event(struct job *j, const char *event, json_t *body);
void job_result(struct job *j, json_t *body);
void job_error(struct job *j, enum proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void ingest_job_run(struct worker *w, struct job *j);
void query_job_run(struct worker *w, struct job *j);
void admin_job_run(struct worker *w, struct job *j);

/* Resolve a DOC reference to an id with the protocol's error codes; 0 or
 * a proto_code (the error already sent). */
int job_resolve(struct job *j, const char *ref, uint8_t doc_id[SNAP_ID_BYTES]);
/* The profile's snapshot of a document: 1 stored, 0 not, <0 on error (the
 * error already sent); *n_other gets the count of other profiles. */
int job_has_profile(struct job *j, const uint8_t doc_id[SNAP_ID_BYTES], int *n_other);
/* The snapshot a query answers from: this profile's, else one `shrink` cut
 * to exactly this profile's budget from a larger kvzip snapshot (its
 * profile adds from=).  1 with *profile_id set, 0 none, <0 error sent. */
int job_answer_profile(struct job *j, const uint8_t doc_id[SNAP_ID_BYTES],
    uint8_t profile_id[SNAP_ID_BYTES], int *n_other);

#endif /* DAEMON_INTERNAL_H */
