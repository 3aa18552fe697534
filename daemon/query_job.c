/*
 * query_job.c: the query job, the protocol around svc_query (the same
 * steps as `kvsnap query --local`): resolve DOC in the local tier (a miss,
 * with a shared tier, goes to the tier worker: resolved there, its
 * snapshot copied in, then back here), answer from the snapshot
 * svc_pick's one rule picks (on a mismatch, its advice), streaming each
 * token as a "token" event (whole UTF-8 characters: the service holds back
 * the bytes of a character split across tokens), and map the outcome to
 * the protocol's result or error.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"

/* One token event (with the token id); the chat job's too. */
void
job_token(void *arg, int32_t id, const char *text, size_t len)
{
	json_t *s = json_stringn(text, len);
	if (!s) /* not valid UTF-8: U+FFFD in its place */
		s = json_string("\xEF\xBF\xBD");
	job_event(arg, "token", json_pack("{s:o, s:i}", "text", s, "token", (int)id));
}

_Static_assert(PROTO_STOP_MAX == SVC_STOP_MAX && PROTO_STOP_LEN_MAX == SVC_STOP_LEN_MAX,
    "the protocol's stop limits are the service's");

void
job_stop_sequence(json_t *o, const struct proto_req *r, const struct svc_answer *a)
{
	if (o && a->stop == SVC_STOP_SEQUENCE && a->stop_index >= 0 &&
	    (size_t)a->stop_index < r->n_stop)
		json_object_set_new(o, "stop_sequence", json_string(r->stop[a->stop_index]));
}

/* A failed svc_query as the protocol's error. */
static void
query_fail(struct job *j, const struct svc_status *st, const struct svc_answer *a,
    const uint8_t doc[SVC_ID_BYTES], const char *hex)
{
	int rc = st->rc;
	if (st->step == SVC_AT_TIER_DOWN)
		job_error(j, PROTO_E_TIER_UNAVAILABLE, "%s", st->why);
	else if (st->step == SVC_AT_LOOKUP)
		job_lookup_error(j, st);
	else if (st->step == SVC_AT_PICK && a->n_other) {
		char name[256], advice[900];
		svc_pick_advice_doc(daemon_g->v, &a->pick, doc, 0, name, sizeof(name), advice,
		    sizeof(advice));
		job_error(j, PROTO_E_PROFILE, "%s (%.12s): %s", name[0] ? name : "the document", hex,
		    advice);
	}
	else if (st->step == SVC_AT_PICK)
		job_error(j, PROTO_E_NOT_FOUND, "%.12s has no snapshot", hex);
	else if (st->step == SVC_AT_TOKENIZE && rc == SVC_ENG_ERR_ARG)
		job_error(j, PROTO_E_BAD_REQUEST, "%s", st->why);
	else if (st->step == SVC_AT_TOKENIZE)
		job_error(j, PROTO_E_ENGINE, "cannot tokenize the question: %s", st->why);
	else if (st->step == SVC_AT_LOAD)
		job_error(j, rc == SVC_SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
		    rc == SVC_SNAPIO_ERR_MISMATCH ? PROTO_E_PROFILE :
		    rc == SVC_SNAPIO_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
		    rc == SVC_SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL : PROTO_E_STORE,
		    "cannot load the snapshot of %.12s: %s%s", hex, st->why,
		    rc == SVC_SNAPIO_ERR_MISMATCH ? " (re-ingest the document)" : "");
	else if (st->step == SVC_AT_SHARED)
		job_error(j, rc == SVC_SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
		    rc == SVC_SNAPIO_ERR_FULL ? PROTO_E_STORE_FULL :
		    rc == SVC_SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL : PROTO_E_STORE,
		    "the shared tier's snapshot of %.12s %s: %s; nothing was copied", hex,
		    rc == SVC_SNAPIO_ERR_CORRUPT ? "is corrupt" : "could not be copied in", st->why);
	else /* SVC_AT_GENERATE */
		job_error(j, PROTO_E_ENGINE, "generation failed: %s", st->why);
}

/* DOC as the peer may read it: theirs, shared, or proved by a passed
 * descriptor whose content hashes to the doc_id (its extracted text, as
 * the ingest hashed it: the peer could open the document; this proof is
 * for this query only).  A failed proof answers as a missing document; a
 * file that is no document kvsnap reads is refused as such.  tiers: 0 the
 * local tier only (a model worker: a miss is not answered, *miss is set
 * and the job goes to the tier worker), 1 the local tier then the shared
 * one (the tier worker). */
static int
query_resolve(struct job *j, int tiers, uint8_t doc[SVC_ID_BYTES], int *miss)
{
	struct svc_status st;
	struct svc *v = daemon_g->v;
	size_t len;
	char *text;
	int rc;

	*miss = 0;
	if (j->fd >= 0) {
		/* the file first: a bad one is refused alike whatever DOC names */
		if (!(text = job_read_fd(j, j->fd, &len)))
			return PROTO_E_BAD_FILE;
		rc = svc_doc_id(text, len, j->req.encoding, &j->cancel, j->held, &st);
		free(text);
		close(j->fd);
		j->fd = -1;
		if (rc && st.step == SVC_AT_INGEST && st.rc == SVC_ENG_ERR_CANCELLED) {
			/* a disconnect or cancel killed the file's reading child */
			job_error(j, atomic_load(&daemon_g->stopping) ? PROTO_E_SHUTTING_DOWN :
			    PROTO_E_CANCELLED, "query cancelled while its file was read");
			return PROTO_E_CANCELLED;
		}
		if (rc) {
			job_format_error(j, &st, "the file");
			return PROTO_E_UNSUPPORTED;
		}
		j->held_known = 1;
	}
	if (j->held_known) {
		rc = tiers ? svc_tier_resolve_as(v, j->req.doc, NULL, doc, &st)
		           : svc_doc_resolve(v, j->req.doc, NULL, doc, &st);
		if (rc == 0 && !memcmp(j->held, doc, SVC_ID_BYTES))
			return 0;
	}
	/* else as the caller sees the store: theirs or shared, or not_found (an
	 * ambiguity among others' documents is not shown either) */
	if (tiers)
		return job_resolve_tiers(j, j->req.doc, doc);
	if (!svc_has_tier(v))
		return job_resolve(j, j->req.doc, doc);
	if (svc_doc_resolve(v, j->req.doc, &j->who, doc, &st) == 0)
		return 0;
	if (st.rc == SVC_STORE_ERR_NOT_FOUND) {
		*miss = 1;
		return PROTO_E_NOT_FOUND;
	}
	return job_resolve(j, j->req.doc, doc); /* the same failure, answered */
}

/* Hand the job to the tier worker (jobs.c queues it when this worker is
 * done with it). */
static void
query_to_tier(struct job *j)
{
	j->requeue = 1;
	j->then = JOB_TIER;
}

/* The tier worker's step of a query: resolve DOC in both tiers and copy
 * the snapshot in from the shared one when the local tier lacks it, then
 * back to the query queue.  An outage is tier_unavailable at once while
 * the tier is known down (tiers.c's breaker); a document in neither tier
 * is not_found. */
void
tier_job_run(struct worker *w, struct job *j)
{
	struct svc_status st;
	struct svc_answer a;
	char hex[2 * SVC_ID_BYTES + 1];
	int miss, rc;

	(void)w;
	if (query_resolve(j, 1, j->doc, &miss))
		return;
	svc_hex(j->doc, SVC_ID_BYTES, hex);
	memset(&a, 0, sizeof(a));
	if ((rc = svc_tier_prefetch(daemon_g->v, j->doc, &st)) < 0) {
		query_fail(j, &st, &a, j->doc, hex);
		return;
	}
	j->doc_known = 1;
	j->tier_done = 1;
	j->from_shared = rc == 1;
	j->requeue = 1;
	j->then = JOB_QUERY;
}

void
query_job_run(struct worker *w, struct job *j)
{
	const struct proto_req *r = &j->req;
	struct svc_hooks hk = { NULL, job_token, j, &j->cancel };
	struct svc_query_req qr;
	struct svc_msg *msgs = NULL;
	struct svc_answer a;
	struct svc_status st;
	uint8_t doc[SVC_ID_BYTES];
	char hex[2 * SVC_ID_BYTES + 1];
	int miss;

	if (r->n_docs || r->lib_all) {
		library_job_run(w, j);
		return;
	}
	if (!j->doc_known && r->doc_model) { /* HTTP's `model`: an id /v1/models lists */
		int found = svc_model_find(daemon_g->v, &j->who, r->plain_model ? r->plain_model : "",
		    r->doc, j->doc, &st);
		if (found < 0) {
			job_lookup_error(j, &st);
			return;
		}
		j->doc_known = found; /* else a doc_id prefix, or the shared tier's, as DOC */
	}
	if (j->doc_known) {
		memcpy(doc, j->doc, SVC_ID_BYTES);
	} else if (query_resolve(j, 0, doc, &miss)) {
		if (miss)
			query_to_tier(j); /* not here: the shared tier's step, off this worker */
		return;
	}
	{
		struct svc_picked pk;
		if (svc_pick(daemon_g->v, doc, &pk, &st) < 0) {
			job_lookup_error(j, &st);
			return;
		}
		if (!pk.found && svc_has_tier(daemon_g->v) && !j->tier_done) {
			/* the shared tier may hold this profile's snapshot */
			query_to_tier(j);
			return;
		}
		if (pk.found && pk.n_parts) { /* in parts: a library question over them */
			library_job_parts(w, j, doc);
			return;
		}
	}
	svc_hex(doc, SVC_ID_BYTES, hex);
	memset(&qr, 0, sizeof(qr));
	qr.doc_id = doc;
	qr.question = r->question;
	qr.question_len = r->question_len;
	if (r->n_msgs > 1 && (msgs = calloc(r->n_msgs, sizeof(*msgs)))) { /* HTTP's turns */
		for (qr.n_msgs = 0; qr.n_msgs < r->n_msgs; qr.n_msgs++)
			msgs[qr.n_msgs] = (struct svc_msg){ r->msgs[qr.n_msgs].role,
				r->msgs[qr.n_msgs].content, r->msgs[qr.n_msgs].content_len };
		qr.msgs = msgs;
	}
	qr.max_tokens = r->max_tokens;
	qr.whole_utf8 = 1;
	qr.temperature = (float)r->temperature;
	qr.top_p = (float)r->top_p;
	qr.seed = (uint64_t)r->seed;
	qr.local_only = svc_has_tier(daemon_g->v); /* the tier worker did the shared part */
	qr.stop = (const char *const *)r->stop;
	qr.n_stop = r->n_stop;
	if (svc_query(daemon_g->v, w->ss, &qr, &hk, &a, &st))
		query_fail(j, &st, &a, doc, hex);
	else if (a.cancelled)
		job_error(j, PROTO_E_CANCELLED, "query cancelled after %lld tokens",
		    (long long)a.tokens);
	else {
		a.from_shared |= j->from_shared;
		if (a.from_shared)
			dlog(DLOG_INFO, "%s: query %.12s: a shared-tier hit, copied into the local tier "
			    "(ttft %.3f s)", j->label, hex, a.ttft);
		json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:f, s:f, s:s}", "doc_id", hex,
		    "tokens", (json_int_t)a.tokens, "prompt_tokens", (json_int_t)a.prompt_tokens,
		    "stop", svc_stop_name(a.stop), "ttft_s", a.ttft, "seconds", a.seconds, "tier",
		    a.from_shared ? "shared" : "local");
		job_stop_sequence(o, r, &a);
		job_result(j, o);
	}
	free(msgs);
}
