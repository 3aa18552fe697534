/*
 * library_job.c: a library question, the query op with "docs" or "all" (issue
 * 29; "all": the documents svc_search finds for the question, as the peer may read them):
 * every DOC resolved as the peer sees the store (a document they may not
 * read is not_found, as for one query), then svc_library (the same steps
 * as `kvsnap query --local --docs`): the answer's tokens as "token"
 * events (or the abstention's one text), then the result naming the
 * sources.  With a shared tier, only the local tier's snapshots are
 * consulted (local_only: no model worker waits on the network); a
 * document whose snapshot is only in the shared tier is reported as not
 * consulted.  A query of one document stored in parts comes here too
 * (library_job_parts: svc_library_doc over its parts).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_internal.h"

_Static_assert(PROTO_DOCS_MAX == SVC_LIB_MAX, "the protocol's document limit is the service's");

/* The question over docs[0..n) (one: a document in parts, over its
 * parts), or the library (all). */
static void
library_job_answer(struct worker *w, struct job *j, const uint8_t (*docs)[SVC_ID_BYTES],
    size_t n, int one)
{
	const struct proto_req *r = &j->req;
	struct svc_hooks hk = { NULL, job_token, j, &j->cancel };
	struct svc_lib_req lr;
	struct svc_lib_answer a;
	struct svc_status st;
	enum svc_lib_mode mode = SVC_LIB_DEFAULT_MODE;
	json_t *o;

	if (r->mode)
		(void)svc_lib_mode_parse(r->mode, &mode); /* checked by the parser */
	memset(&lr, 0, sizeof(lr));
	lr.docs = docs;
	lr.n_docs = n;
	lr.question = r->question;
	lr.question_len = r->question_len;
	lr.max_tokens = r->max_tokens;
	lr.mode = mode;
	lr.min_conf = r->min_conf_set ? r->min_conf : SVC_LIB_MIN_CONF_DEFAULT;
	lr.judge_tokens = r->lib_judge;
	lr.temperature = (float)r->temperature;
	lr.top_p = (float)r->top_p;
	lr.seed = (uint64_t)r->seed;
	lr.whole_utf8 = 1;
	lr.local_only = svc_has_tier(daemon_g->v);
	lr.stop = (const char *const *)r->stop;
	lr.n_stop = r->n_stop;
	if (r->lib_all ? svc_library_search(daemon_g->v, w->ss, &j->who, &lr, (unsigned)r->lib_top,
	    &hk, &a, &st) :
	    one ? svc_library_doc(daemon_g->v, w->ss, &lr, &hk, &a, &st) :
	    svc_library(daemon_g->v, w->ss, &lr, &hk, &a, &st)) {
		if (st.step == SVC_AT_SEARCH)
			job_error(j, PROTO_E_STORE, "cannot search the library: %s", st.why);
		else if (st.step == SVC_AT_LOOKUP)
			job_lookup_error(j, &st);
		else if (st.step == SVC_AT_PICK)
			job_error(j, PROTO_E_NOT_FOUND, "%s", st.why);
		else if (st.step == SVC_AT_TOKENIZE)
			job_error(j, st.rc == SVC_ENG_ERR_ARG ? PROTO_E_BAD_REQUEST : PROTO_E_ENGINE,
			    "%s", st.why);
		else if (st.step == SVC_AT_LOAD)
			job_error(j, st.rc == SVC_SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
			    st.rc == SVC_SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL :
			    st.rc == SVC_SNAPIO_ERR_ENGINE ? PROTO_E_ENGINE : PROTO_E_STORE,
			    "cannot load a snapshot: %s", st.why);
		else if (st.step == SVC_AT_SHARED || st.step == SVC_AT_TIER_DOWN)
			job_error(j, PROTO_E_TIER_UNAVAILABLE, "%s", st.why);
		else
			job_error(j, PROTO_E_ENGINE, "generation failed: %s", st.why);
		return;
	}
	if (a.cancelled) {
		job_error(j, PROTO_E_CANCELLED, "library question cancelled");
		return;
	}
	o = svc_lib_json(&a, mode);
	if (o && a.stop == SVC_STOP_SEQUENCE && a.stop_index >= 0 &&
	    (size_t)a.stop_index < r->n_stop)
		json_object_set_new(o, "stop_sequence", json_string(r->stop[a.stop_index]));
	job_result(j, o);
}

void
library_job_run(struct worker *w, struct job *j)
{
	uint8_t docs[PROTO_DOCS_MAX][SVC_ID_BYTES];
	size_t k;

	for (k = 0; k < j->req.n_docs; k++)
		if (job_resolve(j, j->req.docs[k], docs[k]))
			return; /* the error was sent */
	library_job_answer(w, j, (const uint8_t (*)[SVC_ID_BYTES])docs, j->req.n_docs, 0);
}

void
library_job_parts(struct worker *w, struct job *j, const uint8_t doc[SVC_ID_BYTES])
{
	uint8_t docs[1][SVC_ID_BYTES];

	memcpy(docs[0], doc, SVC_ID_BYTES);
	library_job_answer(w, j, (const uint8_t (*)[SVC_ID_BYTES])docs, 1, 1);
}
