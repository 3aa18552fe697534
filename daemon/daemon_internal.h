/*
 * daemon_internal.h: what kvsnapd's own files share: logging, settings,
 * the process-wide state (the service: model, store, profile),
 * connections as the workers see them, and the job queue.
 *
 * Threads: one libevent loop (server.c) owns every socket and is the only
 * thread that writes to one; model workers and one admin worker (jobs.c)
 * run jobs and post their events with conn_post(), which queues them for
 * the loop.  Lock order: jobs_mu, then a connection's mu, then the post
 * queue's (never the reverse).
 */
#ifndef DAEMON_INTERNAL_H
#define DAEMON_INTERNAL_H

#include <stdatomic.h> /* for atomic_int */
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "service/service.h"

/* ------------------------------------------------------------------------ */
/* Logging (log.c): levels, to stderr (journald keeps the rest).            */

enum dlog_level { DLOG_ERROR = 0, DLOG_WARN = 1, DLOG_INFO = 2, DLOG_DEBUG = 3 };
extern int dlog_level;
void dlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message that a flood could repeat (refused connections, accept errors):
 * logged at most once per DLOG_LIMIT_S seconds per struct dlog_limit, the
 * lines held back counted in the next one.  One thread per limit. */
#define DLOG_LIMIT_S 10.0
struct dlog_limit {
	int logged;
	double last;
	long held;
};
void dlog_limited(struct dlog_limit *l, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parse "error", "warn", "info", "debug" (or 0..3); -1 if unknown. */
int dlog_parse_level(const char *s);

/* ------------------------------------------------------------------------ */
/* Settings (config.c): defaults < config file < flags.                     */

struct dcfg {
	char *socket, *state, *model, *heads, *policy, *opts, *quant, *config, *backend;
	long budget, chunk, threads, workers, max_conns, max_jobs;
	long max_conns_user;        /* connections one uid may hold open */
	long idle_timeout;          /* s without a request (no job in flight); 0: none */
	long request_timeout;       /* s for one request line to arrive; 0: none */
	double ratio; /* > 0: keep this share of each document (wins over budget) */
	int log_level, foreground;
	int share;    /* every ingest readable by every user (single-user installs) */
	int state_xdg; /* state is the XDG default: its missing parents are made (main.c) */
	char *http;   /* --http ADDR: the OpenAI-compatible endpoint (http.c); NULL: off */
	char *http_allow; /* --http-allow LIST: who may use it (http_peer.c); NULL: socket-group */
	char *shared;      /* --shared ADDR: the shared snapshot tier's store; NULL: none */
	char *shared_auth; /* --shared-auth FILE: its credentials file */
};

/* Fill c from defaults, the config file (--config or none) and argv.
 * Returns 0, or an exit status (0 after -h/--version is returned as -1:
 * the caller exits 0). */
int dcfg_load(struct dcfg *c, int argc, char **argv);
void dcfg_free(struct dcfg *c);

/* ------------------------------------------------------------------------ */
/* Process-wide state (main.c).                                             */

struct daemon {
	struct dcfg cfg;
	struct svc *v;              /* model, tokenizer, store, profile: shared */
	atomic_int stopping;        /* SIGTERM seen */
	atomic_int ready;           /* the model, the store and the workers are up (set by
	                             * the loop once the loader thread ended): until then
	                             * every request but /health is answered `loading` */
	const char *own_socket;     /* the socket file we made (removed on exit), or NULL */
};
extern struct daemon *daemon_g;
/* A second stop signal (main.c): the socket file removed, exit 0 at once,
 * whatever the workers are doing (an extraction's child dies with us, an
 * ingest's transaction is never committed). */
void main_stop_now(void) __attribute__((noreturn));

/* ------------------------------------------------------------------------ */
/* Connections (server.c), as jobs see them.                                */

struct conn;
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);
/* Hand an event line to the loop, which writes it to the client (any
 * thread; a connection's lines keep their order).  The line is copied.
 * -1 if the connection is gone or out of memory. */
int conn_post(struct conn *c, const char *line, size_t len);
/* The connection's serial number (for logs). */
uint64_t conn_serial(const struct conn *c);
/* A job of this connection ended (any thread): frees a per-connection slot. */
void conn_job_done(struct conn *c);

/* Start the listeners and the loop at once, and load (the model, the
 * store, the workers: `load`, 0 or -1 with the reason logged) on a thread
 * of its own meanwhile; d->ready is set, and systemd told READY=1, when it
 * succeeds.  Returns 0 after a stop signal, -1 when set-up or the load
 * failed.  A stop signal while loading exits at once (main_stop_now). */
int srv_run(struct daemon *d, int listen_fd, int (*load)(struct daemon *d));
/* Create the listening socket (0660 under a restrictive umask); -1 with a
 * message logged. */
int srv_listen(const char *path);

/* ------------------------------------------------------------------------ */
/* The HTTP front end (http.c; docs/HTTP.md), on the same loop.             */

struct event_base;
/* Listen on d->cfg.http (checked by http_addr_parse); -1 with a message
 * logged.  listen_fd: the main socket, whose group http-allow's default
 * lets in. */
int http_start(struct daemon *d, struct event_base *base, int listen_fd);
/* SIGTERM: stop accepting requests (loop thread). */
void http_stop_accepting(void);
/* Replies still being written (loop thread). */
int http_pending(void);
/* Close every connection and free the server (loop thread, loop ended). */
void http_free(void);

/* ------------------------------------------------------------------------ */
/* Jobs (jobs.c; one file per kind: ingest_job.c, query_job.c, chat_job.c,  */
/* admin_job.c)                                                             */

/* JOB_TIER: a query's or an ingest's shared-tier step (resolve there, copy
 * the snapshot in or out), run on the tier worker so no model worker waits
 * on the network (issue 26, defect 10); the job then goes back to the
 * query or ingest queue, or ends there. */
enum job_kind { JOB_ADMIN = 0, JOB_QUERY = 1, JOB_INGEST = 2, JOB_TIER = 3 };

struct job;
/* Where a job's replies go: the front end that submitted it (server.c:
 * protocol lines on a socket connection; http.c: OpenAI-shaped HTTP
 * replies).  Called on the job's worker thread, or on the loop thread for
 * a job dropped before it ran.  A job reports only through these, so one
 * job implementation serves both front ends. */
struct job_sink {
	/* "queued", "progress", "token" or "result" (the last); body is stolen
	 * (may be NULL) */
	void (*event)(struct job *j, const char *event, json_t *body);
	/* the job failed: its last reply */
	void (*error)(struct job *j, enum proto_code code, const char *msg);
	/* the job is being freed: drop the front end's references */
	void (*release)(struct job *j);
};

/* What a model worker owns: a service session (its engine scratch and
 * its own policy object: policies keep per-ingest state). */
struct worker {
	int index;
	struct svc_session *ss;    /* NULL for the admin and tier workers */
	int tier;                  /* the tier worker (JOB_TIER) */
};

struct job {
	enum job_kind kind;
	const struct job_sink *sink;
	void *owner;               /* the connection or HTTP request (a reference
	                            * the sink's release drops): what
	                            * jobs_cancel_owner matches */
	char label[32];            /* "conn 12", "http 3": for the log */
	struct proto_req req;
	int fd;                    /* ingest or query by descriptor, else -1 */
	struct svc_who who;        /* the peer (SO_PEERCRED uid); all: root, our user */
	atomic_int cancel;         /* set by disconnect, cancel, or shutdown */
	atomic_int replied;        /* its last event (result or error) was sent */
	/* a query's trip through the tier worker (query_job.c) */
	int requeue;               /* its worker queues it under `then` instead of freeing it */
	enum job_kind then;
	int tier_done;             /* the shared tier was consulted (and copied from) */
	int doc_known, from_shared;
	uint8_t doc[SVC_ID_BYTES]; /* resolved, when doc_known */
	int held_known;
	uint8_t held[SVC_ID_BYTES]; /* the passed descriptor's doc_id (the proof) */
	/* an ingest's steps (ingest_job.c): 0 read and extract, 1 the shared
	 * tier before the model (tier worker), 2 the model (a model worker), 3
	 * the copy to the shared tier (tier worker) */
	int ing_step;
	struct svc_ingest_doc *ing;
	struct svc_ingested *ing_out;
	size_t ing_bytes;
	double t0;
	int model_missing;         /* HTTP: the request's `model` is no model or document
	                            * the peer may read (the error was sent) */
	uint64_t seq;
	struct job *next;
};

int jobs_init(struct daemon *d);
/* Queue a job (takes ownership).  0, or PROTO_E_BUSY / _SHUTTING_DOWN (the
 * job is then still the caller's). */
int jobs_submit(struct job *j);
/* Cancel every job of an owner (a connection or an HTTP request; queued
 * ones are dropped without a reply). */
void jobs_cancel_owner(const void *owner);
/* Cancel the job of owner c with request id `target`; 1 if found. */
int jobs_cancel_id(const void *owner, json_t *target);
/* Stop: drop queued jobs (error replies), cancel running ingests, let
 * running queries and admin jobs finish.  Returns immediately. */
void jobs_stop(void);
/* Jobs running or queued. */
int jobs_busy(void);
/* Jobs queued and running now (for /metrics). */
void jobs_depth(int *queued, int *running);
/* Join the workers and free them (after jobs_stop and the loop ended). */
void jobs_free(void);
/* Job memory (closes the fd, releases the owner through the sink). */
void job_free(struct job *j);

/* Replies from a job. */
void job_event(struct job *j, const char *event, json_t *body);
void job_result(struct job *j, json_t *body);
void job_error(struct job *j, enum proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void ingest_job_run(struct worker *w, struct job *j);
void query_job_run(struct worker *w, struct job *j);
/* A query with "docs": a library question (library_job.c). */
void library_job_run(struct worker *w, struct job *j);
/* A query of one document stored in parts: a library question over them. */
void library_job_parts(struct worker *w, struct job *j, const uint8_t doc[SVC_ID_BYTES]);
void tier_job_run(struct worker *w, struct job *j);
void ingest_tier_run(struct worker *w, struct job *j);
/* An ingest stored locally whose copy to the shared tier will not run
 * (cancelled, the daemon stopping): its result, saying so; 1 if it was
 * one (answered), else 0. */
int ingest_job_unpublished(struct job *j);
void chat_job_run(struct worker *w, struct job *j);
void admin_job_run(struct worker *w, struct job *j);

/* Resolve a DOC reference to an id with the protocol's error codes, as
 * the job's peer sees the store (a document they may not read is
 * not_found); 0 or a proto_code (the error already sent). */
int job_resolve(struct job *j, const char *ref, uint8_t doc_id[SVC_ID_BYTES]);
/* job_resolve over the local tier, then the shared one (a query). */
int job_resolve_tiers(struct job *j, const char *ref, uint8_t doc_id[SVC_ID_BYTES]);
/* Read a passed descriptor (a readable regular file, at most
 * PROTO_FILE_MAX): a malloc'd copy, or NULL with the error sent. */
char *job_read_fd(struct job *j, int fd, size_t *len);
/* The token hook of svc_query and svc_chat (arg: the job): a "token"
 * event {text, token}. */
void job_token(void *arg, int32_t id, const char *text, size_t len);
/* A document svc_extract refused (SVC_AT_FORMAT) as the protocol's error:
 * unsupported_format, bad_request (an unknown encoding), too_large;
 * what ("the file") is put before the reason. */
void job_format_error(struct job *j, const struct svc_status *st, const char *what);
/* A query's or chat's result: "stop_sequence", the one that matched, when
 * a stop sequence ended the answer. */
void job_stop_sequence(json_t *o, const struct proto_req *r, const struct svc_answer *a);
/* A failed service lookup (SVC_AT_LOOKUP) as an error event. */
void job_lookup_error(struct job *j, const struct svc_status *st);
/* The shared tier as hello and stats show it ({addr, up, error when down}
 * and, with counters, hits, misses, errors, writes, write_errors); NULL
 * without a shared tier. */
json_t *job_tier_json(int counters);

#endif /* DAEMON_INTERNAL_H */
