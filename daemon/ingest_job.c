/*
 * ingest_job.c: the ingest job, the protocol around svc_ingest (the same
 * steps as `kvsnap ingest --local`): read the document (from the
 * descriptor the client passed, so the daemon reads only what the client
 * could, or inline text), run the service's ingest (skipping a document
 * this profile already holds unless forced) with its progress as
 * "progress" events and the job's cancel flag, and map its outcome to the
 * protocol's result or error.  A cancelled ingest stops between chunks and
 * stores nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

#define INGEST_PROGRESS_EVERY_S 0.2 /* at most five progress events a second */

/* The whole regular file behind fd (malloc'd), or NULL with the error sent
 * (the query's proof by descriptor reads it too). */
char *
job_read_fd(struct job *j, int fd, size_t *len)
{
	struct stat sb;
	size_t got = 0;
	char *buf;
	ssize_t n;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		job_error(j, PROTO_E_BAD_FILE, "the descriptor is not a regular file");
		return NULL;
	}
	if ((uint64_t)sb.st_size > PROTO_FILE_MAX) {
		job_error(j, PROTO_E_TOO_LARGE, "the document is %lld bytes, over the limit of %llu",
		    (long long)sb.st_size, (unsigned long long)PROTO_FILE_MAX);
		return NULL;
	}
	if (sb.st_size == 0) {
		job_error(j, PROTO_E_BAD_FILE, "the document is empty");
		return NULL;
	}
	if (!(buf = malloc((size_t)sb.st_size))) {
		job_error(j, PROTO_E_INTERNAL, "out of memory");
		return NULL;
	}
	/* pread: the client's file offset stays where it was */
	while (got < (size_t)sb.st_size) {
		n = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			job_error(j, PROTO_E_BAD_FILE, "cannot read the document: %s",
			    n < 0 ? strerror(errno) : "it shrank while being read");
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	*len = got;
	return buf;
}

struct ingest_prog {
	struct job *j;
	double t0, last;
};

/* "tokenized" once, then "prefill" after each chunk (rate-limited). */
static void
ingest_progress(void *arg, const char *stage, int64_t done, int64_t total)
{
	struct ingest_prog *pg = arg;
	double now = svc_now();
	int prefill = !strcmp(stage, "prefill");
	if (!prefill || done == total || now - pg->last >= INGEST_PROGRESS_EVERY_S) {
		if (prefill)
			pg->last = now;
		job_event(pg->j, "progress", json_pack("{s:s, s:I, s:I, s:f}", "stage", stage,
		    "done", (json_int_t)done, "total", (json_int_t)total, "elapsed_s", now - pg->t0));
	}
}

/* A document svc_extract refused as the protocol's error; what: "the
 * file", "the text" (the reason goes on from there). */
void
job_format_error(struct job *j, const struct svc_status *st, const char *what)
{
	job_error(j, st->rc == SVC_FMT_ERR_UNSUPPORTED ? PROTO_E_UNSUPPORTED :
	    st->rc == SVC_FMT_ERR_ENCODING ? PROTO_E_BAD_REQUEST :
	    st->rc == SVC_FMT_ERR_TOO_LARGE ? PROTO_E_TOO_LARGE : PROTO_E_INTERNAL, "%s%s%s",
	    st->rc == SVC_FMT_ERR_ENCODING ? "" : what, st->rc == SVC_FMT_ERR_ENCODING ? "" : " ",
	    st->why);
}

/* A failed svc_ingest as the protocol's error. */
static void
ingest_fail(struct job *j, const struct svc_status *st, int named)
{
	int rc = st->rc;
	if (st->step == SVC_AT_FORMAT)
		job_format_error(j, st, j->req.use_fd ? "the file" : "the text");
	else if (st->step == SVC_AT_NAME)
		job_error(j, PROTO_E_NAME_TAKEN, "%s", st->why);
	else if (st->step == SVC_AT_LOOKUP)
		job_lookup_error(j, st);
	else if (st->step == SVC_AT_TOKENIZE)
		job_error(j, PROTO_E_ENGINE, "cannot tokenize the document: %s", st->why);
	else if ((st->step == SVC_AT_INGEST && rc == SVC_ENG_ERR_CANCELLED) ||
	    st->step == SVC_AT_COMMIT)
		/* a document in parts: the parts before are stored (svc_ingest_model) */
		job_error(j, st->step == SVC_AT_INGEST && atomic_load(&daemon_g->stopping) ?
		    PROTO_E_SHUTTING_DOWN : PROTO_E_CANCELLED, "ingest cancelled; nothing was "
		    "stored%s%s", strstr(st->why, " (at part ") ? " of this part" : "",
		    strstr(st->why, " (at part ") ? strstr(st->why, " (at part ") : "");
	else if (st->step == SVC_AT_INGEST)
		job_error(j, rc == SVC_ENG_ERR_CONTEXT ? PROTO_E_TOO_LONG : PROTO_E_ENGINE, "%s",
		    st->why);
	else /* SVC_AT_SAVE */
		job_error(j, rc == SVC_SNAPIO_ERR_FULL ? PROTO_E_STORE_FULL :
		    rc == SVC_SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
		    rc == SVC_SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL :
		    rc == SVC_SNAPIO_ERR_ARG ? (named ? PROTO_E_NAME_TAKEN : PROTO_E_INTERNAL) :
		    PROTO_E_STORE, "cannot store the snapshot: %s", st->why);
}

/* The shared tier's part of an ingest result: where a skipped snapshot
 * came from, and whether the shared tier holds it now (with the reason
 * when it does not: a warning, the local snapshot stays). */
static json_t *
ingest_tier(json_t *o, const struct svc_ingested *res)
{
	if (!o || res->shared < 0)
		return o;
	json_object_set_new(o, "shared", json_boolean(res->shared));
	if (!res->shared)
		json_object_set_new(o, "shared_error", json_string(res->shared_why[0] ?
		    res->shared_why : "the shared tier's copy failed"));
	if (res->skipped)
		json_object_set_new(o, "tier", json_string(res->from_shared ? "shared" : "local"));
	return o;
}

/* A skipped document and the name asked for: "named", or why not. */
static json_t *
ingest_named(json_t *o, const struct svc_ingested *res, const char *name)
{
	if (o && res->named > 0)
		json_object_set_new(o, "named", json_string(name));
	else if (o && res->named < 0)
		json_object_set_new(o, "name_error", json_string(res->name_why));
	return o;
}

/* The job's result: skipped, or stored (with the shared tier's part). */
/* The parts it is stored in (1: whole). */
static json_t *
ingest_parts(json_t *o, const struct svc_ingested *res)
{
	if (o)
		json_object_set_new(o, "parts", json_integer(res->parts ? (json_int_t)res->parts : 1));
	return o;
}

static void
ingest_result(struct job *j, const struct svc_ingested *res)
{
	size_t len = j->ing_bytes;
	if (res->skipped) {
		if (res->from_shared)
			dlog(DLOG_INFO, "%s: skipped %.12s: a shared-tier hit, copied into the local "
			    "tier (no model pass)", j->label, res->hex);
		job_result(j, ingest_parts(ingest_named(ingest_tier(json_pack("{s:s, s:b, s:I, s:s, s:s, s:I, "
		    "s:I, s:I, s:I, s:I}", "doc_id", res->hex, "skipped", 1, "bytes", (json_int_t)len,
		    "format", res->format, "reason",
		    "already stored for this profile", "tokens", (json_int_t)res->tokens, "units",
		    (json_int_t)res->units, "full_units", (json_int_t)res->fig.full_units,
		    "snapshot_bytes", (json_int_t)res->fig.bytes, "full_bytes",
		    (json_int_t)res->fig.full_bytes), res), res, j->req.name), res));
	} else {
		job_result(j, ingest_parts(ingest_tier(json_pack("{s:s, s:b, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:f}",
		    "doc_id", res->hex, "skipped", 0, "bytes", (json_int_t)len, "format", res->format,
		    "tokens", (json_int_t)res->tokens, "units", (json_int_t)res->units, "full_units",
		    (json_int_t)res->fig.full_units, "snapshot_bytes", (json_int_t)res->fig.bytes,
		    "full_bytes", (json_int_t)res->fig.full_bytes, "seconds", svc_now() - j->t0),
		    res), res));
	}
}

/* On to the job's next step on another queue (jobs.c moves it there once
 * this worker is done with it). */
static void
ingest_next(struct job *j, int step, enum job_kind then)
{
	j->ing_step = step;
	j->requeue = 1;
	j->then = then;
}

/* The first step (a model worker): read, extract, hash, the local skip.
 * Without a shared tier the model step follows at once on this worker;
 * with one, the tier worker's step comes first. */
static void
ingest_begin(struct worker *w, struct job *j)
{
	const struct proto_req *r = &j->req;
	struct svc_hooks hk = { NULL, NULL, NULL, &j->cancel };
	struct svc_ingest_req ir;
	struct svc_status st;
	char *text = NULL;
	size_t len = 0;
	int rc;

	j->t0 = svc_now();
	if (r->use_fd) {
		if (!(text = job_read_fd(j, j->fd, &len)))
			return;
		close(j->fd);
		j->fd = -1;
	} else {
		text = r->text;
		len = r->text_len;
	}
	memset(&ir, 0, sizeof(ir));
	ir.text = text;
	ir.len = len;
	ir.name = r->name;
	ir.encoding = r->encoding;
	ir.source = r->source ? r->source : r->use_fd ? "(descriptor)" : "(inline text)";
	ir.skip_stored = !r->force;
	ir.check_name = 1;
	ir.who = &j->who;
	ir.share = r->share || daemon_g->cfg.share;
	ir.part_tokens = r->part_tokens;
	j->ing_bytes = len;
	if (!(j->ing_out = calloc(1, sizeof(*j->ing_out))))
		job_error(j, PROTO_E_INTERNAL, "out of memory");
	else if ((rc = svc_ingest_begin(daemon_g->v, &ir, &hk, &j->ing, j->ing_out, &st)))
		ingest_fail(j, &st, r->name != NULL);
	if (text != r->text)
		free(text);
	if (!j->ing)
		return;
	if (svc_has_tier(daemon_g->v))
		ingest_next(j, 1, JOB_TIER); /* the shared tier, off this worker */
	else if (j->ing_out->skipped)
		ingest_result(j, j->ing_out);
	else {
		j->ing_step = 2;
		ingest_job_run(w, j); /* the model step, here */
	}
}

/* The tier worker's steps of an ingest: before the model (1: the shared
 * tier holds it, or a locally skipped one is copied there), after it (3:
 * the stored snapshot copied there, then the result).  A shared tier that
 * is down answers at once (tiers.c's breaker); one that fails now holds
 * only this worker, never a model worker (issue 26). */
void
ingest_tier_run(struct worker *w, struct job *j)
{
	(void)w;
	if (j->ing_step == 1) {
		if (svc_ingest_tier(daemon_g->v, j->ing, j->ing_out) || j->ing_out->skipped)
			ingest_result(j, j->ing_out);
		else
			ingest_next(j, 2, JOB_INGEST); /* the model's step */
		return;
	}
	svc_ingest_publish(daemon_g->v, j->ing, j->ing_out);
	ingest_result(j, j->ing_out);
}

int
ingest_job_unpublished(struct job *j)
{
	struct svc_ingested *res = j->ing_out;
	if (j->req.op != PROTO_OP_INGEST || j->ing_step != 3 || !res)
		return 0;
	res->shared = 0;
	snprintf(res->shared_why, sizeof(res->shared_why), "%s before its copy to the shared "
	    "tier; stored locally (its next ingest copies it there)",
	    atomic_load(&daemon_g->stopping) ? "kvsnapd is stopping" : "cancelled");
	ingest_result(j, res);
	return 1;
}

void
ingest_job_run(struct worker *w, struct job *j)
{
	struct ingest_prog pg;
	struct svc_hooks hk = { ingest_progress, NULL, &pg, &j->cancel };
	struct svc_status st;
	struct svc_ingested *res;

	if (j->ing_step == 0) {
		ingest_begin(w, j);
		return;
	}
	res = j->ing_out;
	pg.j = j;
	pg.t0 = j->t0;
	pg.last = svc_now();
	if (svc_ingest_model(daemon_g->v, w->ss, j->ing, &hk, res, &st)) {
		ingest_fail(j, &st, j->req.name != NULL);
		return;
	}
	dlog(DLOG_INFO, "%s: ingested %.12s (%lld tokens -> %lld units, %.1f s)", j->label, res->hex,
	    (long long)res->tokens, (long long)res->units, svc_now() - j->t0);
	if (svc_has_tier(daemon_g->v))
		ingest_next(j, 3, JOB_TIER); /* the copy to the shared tier, off this worker */
	else
		ingest_result(j, res);
}
