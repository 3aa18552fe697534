/*
 * query.c: a question answered from a stored snapshot: pick the snapshot
 * (pick.c's one rule), load it into a fresh
 * pool, prefill only the question suffix (the rest of the user turn and
 * the assistant header) over it at positions n, n+1, ..., and decode
 * (greedily unless the request sets a temperature), handing each token's text to the caller; then mark the
 * snapshot used.  With whole_utf8, the bytes of a character split across
 * tokens wait for the token that completes it (the daemon's events are
 * JSON strings, which must be valid UTF-8).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

#define QUERY_PIECE_MAX 256 /* bytes of one token's text */

struct query_emit {
	const struct svc *v;
	const struct svc_hooks *hk;
	int whole_utf8;
	char pend[16];   /* an incomplete UTF-8 sequence carried over */
	size_t n_pend;
	int64_t n;
	double t0, ttft;
};

/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence (invalid bytes count as complete: the caller replaces
 * them). */
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

static int
query_emit_cb(void *arg, int32_t id)
{
	struct query_emit *e = arg;
	char buf[QUERY_PIECE_MAX + sizeof(e->pend)];
	int n;
	size_t have, ok;

	if (e->n++ == 0)
		e->ttft = eng_now() - e->t0;
	memcpy(buf, e->pend, e->n_pend);
	n = eng_tok_decode(e->v->tok, id, 0, buf + e->n_pend, QUERY_PIECE_MAX);
	have = e->n_pend + (n > 0 ? (size_t)n : 0);
	ok = e->whole_utf8 ? query_utf8_complete((unsigned char *)buf, have) : have;
	if (have - ok > sizeof(e->pend)) /* cannot happen with 4-byte sequences */
		ok = have;
	e->n_pend = have - ok;
	memcpy(e->pend, buf + ok, e->n_pend);
	if (e->hk->token)
		e->hk->token(e->hk->arg, id, buf, ok);
	return svc_cancelled(e->hk);
}

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
	}
	return "eos";
}

int
svc_query(struct svc *v, struct svc_session *ss, const struct svc_query_req *r,
    const struct svc_hooks *hk, struct svc_answer *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	struct query_emit em;
	struct snap_header h;
	struct eng_kv *kv = NULL;
	struct eng_sampler smp;
	int32_t *qids = NULL;
	int64_t n_q;
	char why[8];
	int rc, ret = -1;

	if (!hk)
		hk = &none;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&h, 0, sizeof(h));
	memset(&em, 0, sizeof(em));
	em.t0 = eng_now();
	if (svc_pick(v, r->doc_id, &out->pick, st) < 0)
		return -1;
	out->n_other = out->pick.n_other;
	if (!out->pick.found)
		return svc_fail(st, SVC_AT_PICK, 0);
	memcpy(out->profile_id, out->pick.profile_id, SNAP_ID_BYTES);
	n_q = eng_chat_question_ids(v->tok, r->question, r->question_len, &qids);
	if (n_q < 0) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)n_q));
		return svc_fail(st, SVC_AT_TOKENIZE, (int)n_q);
	}
	out->prompt_tokens = n_q;
	if ((rc = snap_load(v->s, r->doc_id, out->profile_id, v->m, n_q + r->max_tokens, &kv, &h,
	    st->why, sizeof(st->why)))) {
		svc_fail(st, SVC_AT_LOAD, rc);
		goto out;
	}
	em.v = v;
	em.hk = hk;
	em.whole_utf8 = r->whole_utf8;
	eng_sampler_init(&smp, r->temperature, r->top_p > 0.0f ? r->top_p : 1.0f, r->seed);
	rc = eng_generate(ss->ctx, kv, v->tok, qids, n_q, r->max_tokens, &smp, query_emit_cb, &em,
	    &out->generated);
	out->tokens = em.n;
	out->ttft = em.ttft;
	if (rc) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		svc_fail(st, SVC_AT_GENERATE, rc);
		goto out;
	}
	if (em.n_pend && hk->token)
		hk->token(hk->arg, -1, em.pend, em.n_pend);
	out->stop = out->generated >= r->max_tokens ? SVC_STOP_LENGTH : SVC_STOP_EOS;
	if (svc_cancelled(hk)) {
		out->cancelled = 1; /* not marked used: the answer did not finish */
		out->stop = SVC_STOP_CANCELLED;
	} else
		store_touch(v->s, r->doc_id, out->profile_id, why, sizeof(why));
	out->seconds = eng_now() - em.t0;
	ret = 0;
out:
	free(qids);
	eng_kv_free(kv);
	snap_header_free(&h);
	return ret;
}
