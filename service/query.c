/*
 * query.c: a question answered from a stored snapshot: pick the snapshot
 * (pick.c's one rule; on a local miss, the shared tier's copy, copied
 * into the local tier by tiers.c), load it into the session's pool (the
 * one the question before used, when it fits: snap_load_into), prefill only the question suffix (the rest of the user turn and
 * the assistant header) over it at positions n, n+1, ..., and decode
 * (greedily unless the request sets a temperature), handing each token's text to the caller; then mark the
 * snapshot used.  Token texts go to the caller through emit.c (whole
 * UTF-8 characters on request).  The session keeps the pool for the next
 * question when it is at most SVC_POOL_KEEP bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

const char *
svc_stop_name(enum svc_stop stop)
{
	switch (stop) {
	case SVC_STOP_EOS:
		return "eos";
	case SVC_STOP_LENGTH:
		return "length";
	case SVC_STOP_CANCELLED:
		return "cancelled";
	case SVC_STOP_SEQUENCE:
		return "stop_sequence";
	}
	return "eos";
}

int
svc_query(struct svc *v, struct svc_session *ss, const struct svc_query_req *r,
    const struct svc_hooks *hk, struct svc_answer *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	struct svc_emit em;
	struct snap_header h;
	struct eng_kv *kv = NULL;
	int32_t *qids = NULL;
	int64_t n_q;
	char why[8];
	int rc, ret = -1;

	if (!hk)
		hk = &none;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&h, 0, sizeof(h));
	svc_emit_init(&em, v, hk, r->whole_utf8, r->stop, r->n_stop);
	if (svc_pick(v, r->doc_id, &out->pick, st) < 0)
		return -1;
	/* a local miss: the shared tier's copy, copied in (verified) */
	if (!out->pick.found && v->tier && !r->local_only) {
		if ((rc = tier_fetch(v, r->doc_id, st)) < 0)
			return -1;
		if (rc == 1 && svc_pick(v, r->doc_id, &out->pick, st) < 0)
			return -1;
		out->from_shared = rc == 1 && out->pick.found;
	}
	out->n_other = out->pick.n_other;
	if (!out->pick.found)
		return svc_fail(st, SVC_AT_PICK, 0);
	if (out->pick.n_parts) { /* the callers ask svc_library_doc */
		snprintf(st->why, sizeof(st->why), "the document is stored in %u parts: a question "
		    "to it is a library question over them", out->pick.n_parts);
		return svc_fail(st, SVC_AT_PICK, 0);
	}
	memcpy(out->profile_id, out->pick.profile_id, SNAP_ID_BYTES);
	n_q = r->msgs ? svc_msgs_ids(v, r->msgs, r->n_msgs, 1, &qids) :
	    eng_chat_question_ids(v->chat, r->question, r->question_len, &qids);
	if (n_q < 0)
		return svc_prompt_fail(v, n_q, r->msgs != NULL, 1, st);
	out->prompt_tokens = n_q;
	/* on the session's threads: the records decode in parallel */
	kv = ss->pool;
	ss->pool = NULL;
	if ((rc = snap_load_into(v->s, r->doc_id, out->profile_id, v->m, n_q + r->max_tokens,
	    eng_ctx_kern(ss->ctx), &kv, &h, NULL, st->why, sizeof(st->why)))) {
		svc_fail(st, SVC_AT_LOAD, rc);
		goto out;
	}
	if (svc_emit_answer(&em, ss, kv, qids, n_q, r->max_tokens, r->temperature, r->top_p,
	    r->seed, out, st))
		goto out;
	if (!out->cancelled) /* a cancelled answer did not finish: not marked used */
		store_touch(v->s, r->doc_id, out->profile_id, why, sizeof(why));
	ret = 0;
out:
	free(qids);
	if (kv && eng_kv_bytes(kv) <= SVC_POOL_KEEP)
		ss->pool = kv; /* the next question's load takes it again */
	else
		eng_kv_free(kv);
	snap_header_free(&h);
	return ret;
}
