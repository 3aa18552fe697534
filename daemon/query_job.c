/*
 * query_job.c: the query job, the same steps as `kvsnap query --local`
 * (clients/cli_local.c): resolve DOC, load this profile's snapshot into a
 * fresh pool, prefill only the question suffix (the rest of the user turn
 * and the assistant header) over it, and decode, streaming each token as
 * a "token" event.  Token text is sent as valid UTF-8: bytes of a
 * character split across tokens wait for the token that completes it.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_internal.h"

struct query_emit {
	struct job *j;
	const struct eng_tok *tok;
	char pend[16];   /* an incomplete UTF-8 sequence carried over */
	size_t n_pend;
	int64_t n;
	double t0, ttft;
};

/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence (invalid bytes count as complete: jansson refuses them,
 * and query_send replaces them). */
static size_t
query_utf8_complete(const unsigned char *s, size_t n)
{
	size_t i = n, k;
	int need;
	for (k = 0; k < 4 && i > 0; k++) {
		unsigned char c = s[--i];
		if ((c & 0xC0) == 0x80)
			continue;
		need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		return n - i < (size_t)need ? i : n;
	}
	return n;
}

/* Send text[0..n) as one token event (with the token id). */
static void
query_send(struct query_emit *e, int32_t id, const char *text, size_t n)
{
	json_t *s = json_stringn(text, n);
	if (!s) /* not valid UTF-8: U+FFFD in its place */
		s = json_string("\xEF\xBF\xBD");
	job_event(e->j, "token", json_pack("{s:o, s:i}", "text", s, "token", (int)id));
}

static int
query_emit_cb(void *arg, int32_t id)
{
	struct query_emit *e = arg;
	char buf[256 + sizeof(e->pend)];
	int n;
	size_t have, ok;

	if (e->n++ == 0)
		e->ttft = eng_now() - e->t0;
	memcpy(buf, e->pend, e->n_pend);
	n = eng_tok_decode(e->tok, id, 0, buf + e->n_pend, 256);
	have = e->n_pend + (n > 0 ? (size_t)n : 0);
	ok = query_utf8_complete((unsigned char *)buf, have);
	if (have - ok > sizeof(e->pend)) /* cannot happen with 4-byte sequences */
		ok = have;
	query_send(e, id, buf, ok);
	e->n_pend = have - ok;
	memcpy(e->pend, buf + ok, e->n_pend);
	return atomic_load(&e->j->cancel);
}

void
query_job_run(struct worker *w, struct job *j)
{
	struct daemon *d = daemon_g;
	const struct proto_req *r = &j->req;
	struct query_emit em;
	struct snap_header h;
	struct eng_kv *kv = NULL;
	struct eng_sampler smp;
	uint8_t doc[SNAP_ID_BYTES], pid[SNAP_ID_BYTES];
	int32_t *qids = NULL;
	int64_t n_q, n_gen = 0;
	char why[512] = "", hex[2 * SNAP_ID_BYTES + 1];
	int rc, n_other;

	memset(&h, 0, sizeof(h));
	memset(&em, 0, sizeof(em));
	em.t0 = eng_now();
	if (job_resolve(j, r->doc, doc))
		return;
	store_hex(doc, SNAP_ID_BYTES, hex);
	if ((rc = job_answer_profile(j, doc, pid, &n_other)) < 0)
		return;
	if (rc == 0) {
		if (n_other)
			job_error(j, PROTO_E_PROFILE, "%.12s has %d snapshot%s, none of this daemon's "
			    "profile (%.12s): re-ingest the document", hex, n_other,
			    n_other == 1 ? "" : "s", d->profile_hex);
		else
			job_error(j, PROTO_E_NOT_FOUND, "%.12s has no snapshot", hex);
		return;
	}
	n_q = eng_chat_question_ids(d->tok, r->question, r->question_len, &qids);
	if (n_q < 0) {
		job_error(j, PROTO_E_ENGINE, "cannot tokenize the question: %s",
		    eng_strerror((int)n_q));
		return;
	}
	if ((rc = snap_load(d->s, doc, pid, d->m, n_q + r->max_tokens, &kv, &h, why,
	    sizeof(why)))) {
		job_error(j, rc == SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
		    rc == SNAPIO_ERR_MISMATCH ? PROTO_E_PROFILE :
		    rc == SNAPIO_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
		    rc == SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL : PROTO_E_STORE,
		    "cannot load the snapshot of %.12s: %s%s", hex, why,
		    rc == SNAPIO_ERR_MISMATCH ? " (re-ingest the document)" : "");
		goto out;
	}
	em.j = j;
	em.tok = d->tok;
	eng_sampler_init(&smp, 0.0f, 1.0f, 0);
	rc = eng_generate(w->ctx, kv, d->tok, qids, n_q, r->max_tokens, &smp, query_emit_cb, &em,
	    &n_gen);
	if (rc) {
		job_error(j, PROTO_E_ENGINE, "generation failed: %s", eng_strerror(rc));
		goto out;
	}
	if (em.n_pend)
		query_send(&em, -1, em.pend, em.n_pend);
	if (atomic_load(&j->cancel)) {
		job_error(j, PROTO_E_CANCELLED, "query cancelled after %lld tokens", (long long)em.n);
		goto out;
	}
	store_touch(d->s, doc, pid, why, sizeof(why));
	job_result(j, json_pack("{s:s, s:I, s:I, s:f, s:f}", "doc_id", hex, "tokens",
	    (json_int_t)em.n, "prompt_tokens", (json_int_t)n_q, "ttft_s", em.ttft, "seconds",
	    eng_now() - em.t0));
out:
	free(qids);
	eng_kv_free(kv);
	snap_header_free(&h);
}
