/*
 * ingest_job.c: the ingest job, the same steps as `kvsnap ingest --local`
 * (clients/cli_local.c): read the document (from the descriptor the client
 * passed, so the daemon reads only what the client could, or inline text),
 * hash it, skip it if this profile's snapshot is already stored, tokenize
 * it as the start of a user turn, compress it by chunked ingest with
 * progress events, and store the snapshot in one transaction.  A cancelled
 * ingest stops between chunks and stores nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

#define INGEST_PROGRESS_EVERY_S 0.2 /* at most five progress events a second */

/* The whole regular file behind fd (malloc'd), or NULL with the error sent. */
static char *
ingest_read_fd(struct job *j, int fd, size_t *len)
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

/* After each chunk: a progress event (rate-limited); stop if cancelled. */
static int
ingest_progress(void *arg, int64_t done, int64_t total)
{
	struct ingest_prog *pg = arg;
	double now = eng_now();
	if (done == total || now - pg->last >= INGEST_PROGRESS_EVERY_S) {
		pg->last = now;
		job_event(pg->j, "progress", json_pack("{s:s, s:I, s:I, s:f}", "stage", "prefill",
		    "done", (json_int_t)done, "total", (json_int_t)total, "elapsed_s", now - pg->t0));
	}
	return atomic_load(&pg->j->cancel);
}

static enum proto_code
ingest_code_for_io(int rc, int named)
{
	switch (rc) {
	case SNAPIO_ERR_FULL: return PROTO_E_STORE_FULL;
	case SNAPIO_ERR_CORRUPT: return PROTO_E_CORRUPT;
	case SNAPIO_ERR_NOMEM: return PROTO_E_INTERNAL;
	case SNAPIO_ERR_ARG: return named ? PROTO_E_NAME_TAKEN : PROTO_E_INTERNAL;
	default: return PROTO_E_STORE;
	}
}

void
ingest_job_run(struct worker *w, struct job *j)
{
	struct daemon *d = daemon_g;
	const struct proto_req *r = &j->req;
	struct ingest_prog pg;
	struct store_doc doc;
	struct eng_kv *kv = NULL;
	int32_t *ids = NULL;
	char *text = NULL, why[512] = "", hex[2 * SNAP_ID_BYTES + 1];
	size_t len = 0;
	int64_t n, units = 0;
	uint8_t other[SNAP_ID_BYTES];
	int rc, l, h, n_other;

	pg.j = j;
	pg.t0 = pg.last = eng_now();
	if (r->use_fd) {
		if (!(text = ingest_read_fd(j, j->fd, &len)))
			return;
		close(j->fd);
		j->fd = -1;
	} else {
		text = r->text;
		len = r->text_len;
	}
	memset(&doc, 0, sizeof(doc));
	store_doc_id(text, len, doc.doc_id);
	store_hex(doc.doc_id, SNAP_ID_BYTES, hex);
	if (r->name && !store_resolve(d->s, r->name, other, why, sizeof(why)) &&
	    memcmp(other, doc.doc_id, SNAP_ID_BYTES)) {
		job_error(j, PROTO_E_NAME_TAKEN, "the name \"%s\" belongs to another document",
		    r->name);
		goto out;
	}
	if (!r->force) {
		if ((rc = job_has_profile(j, doc.doc_id, &n_other)) < 0)
			goto out;
		if (rc == 1) {
			job_result(j, json_pack("{s:s, s:b, s:I, s:s}", "doc_id", hex, "skipped", 1,
			    "bytes", (json_int_t)len, "reason",
			    "already stored for this profile"));
			goto out;
		}
	}
	n = eng_chat_doc_ids(d->tok, text, len, &ids);
	if (n < 0) {
		job_error(j, PROTO_E_ENGINE, "cannot tokenize the document: %s", eng_strerror((int)n));
		goto out;
	}
	job_event(j, "progress", json_pack("{s:s, s:I, s:I, s:f}", "stage", "tokenized", "done",
	    (json_int_t)0, "total", (json_int_t)n, "elapsed_s", eng_now() - pg.t0));
	rc = eng_kv_init(&kv, d->m, eng_policy_rows_per_head(w->p, n, d->cfg.chunk, 0));
	if (!rc)
		rc = eng_ingest_cb(w->ctx, kv, w->p, ids, n, d->cfg.chunk, NULL, ingest_progress, &pg);
	if (rc == ENG_ERR_CANCELLED) {
		job_error(j, atomic_load(&d->stopping) ? PROTO_E_SHUTTING_DOWN : PROTO_E_CANCELLED,
		    "ingest cancelled; nothing was stored");
		goto out;
	}
	if (rc) {
		job_error(j, rc == ENG_ERR_CONTEXT ? PROTO_E_TOO_LONG : PROTO_E_ENGINE,
		    "%lld tokens: %s%s", (long long)n, eng_strerror(rc), rc == ENG_ERR_CONTEXT ?
		    " (longer than the model's window for this policy's positions)" : "");
		goto out;
	}
	if (atomic_load(&j->cancel)) { /* a last look before committing */
		job_error(j, PROTO_E_CANCELLED, "ingest cancelled; nothing was stored");
		goto out;
	}
	snprintf(doc.name, sizeof(doc.name), "%s", r->name ? r->name : "");
	snprintf(doc.source, sizeof(doc.source), "%s", r->source ? r->source :
	    r->use_fd ? "(descriptor)" : "(inline text)");
	doc.bytes = len;
	doc.tokens = (uint64_t)n;
	/* created_us = 0: the store stamps a new document itself (and the last use) */
	rc = snap_save(d->s, &doc, kv, d->m->hp.n_head, eng_model_fingerprint(d->m), d->profile,
	    d->profile_id, d->quant, SNAP_ZLEVEL_DEFAULT, (uint64_t)n, why, sizeof(why));
	if (rc) {
		job_error(j, ingest_code_for_io(rc, r->name != NULL), "cannot store the snapshot: %s",
		    why);
		goto out;
	}
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			units += eng_kv_len(kv, l, h);
	dlog(DLOG_INFO, "conn %llu: ingested %.12s (%lld tokens -> %lld units, %.1f s)",
	    (unsigned long long)conn_serial(j->conn), hex, (long long)n, (long long)units,
	    eng_now() - pg.t0);
	job_result(j, json_pack("{s:s, s:b, s:I, s:I, s:I, s:f}", "doc_id", hex, "skipped", 0,
	    "bytes", (json_int_t)len, "tokens", (json_int_t)n, "units", (json_int_t)units,
	    "seconds", eng_now() - pg.t0));
out:
	eng_kv_free(kv);
	free(ids);
	if (text != r->text)
		free(text);
}
