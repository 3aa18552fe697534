/*
 * emit.c: generated token ids to the caller's token hook as text, and the
 * answer step around it (the query over a snapshot and the plain chat
 * both decode through svc_emit_answer).  With
 * whole_utf8, the bytes of a character split across tokens wait for the
 * token that completes it (the daemon's events are JSON strings, which
 * must be valid UTF-8); the time to the first token is taken here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

#define EMIT_PIECE_MAX 256 /* bytes of one token's text */

/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence (invalid bytes count as complete: the caller replaces
 * them). */
static size_t
emit_utf8_complete(const unsigned char *s, size_t n)
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

void
svc_emit_init(struct svc_emit *e, const struct svc *v, const struct svc_hooks *hk,
    int whole_utf8, const char *const *stop, size_t n_stop)
{
	memset(e, 0, sizeof(*e));
	e->v = v;
	e->hk = hk;
	e->whole_utf8 = whole_utf8;
	e->t0 = eng_now();
	svc_stopper_init(&e->stop, stop, n_stop);
}

/* The stop sequences' decided text to the token hook. */
static void
emit_out(void *arg, const char *text, size_t len)
{
	struct svc_emit *e = arg;
	if (e->hk->token)
		e->hk->token(e->hk->arg, e->id, text, len);
}

int
svc_emit_cb(void *arg, int32_t id)
{
	struct svc_emit *e = arg;
	char buf[EMIT_PIECE_MAX + sizeof(e->pend)];
	int n;
	size_t have, ok;

	if (e->n++ == 0)
		e->ttft = eng_now() - e->t0;
	memcpy(buf, e->pend, e->n_pend);
	n = eng_tok_decode(e->v->tok, id, 0, buf + e->n_pend, EMIT_PIECE_MAX);
	have = e->n_pend + (n > 0 ? (size_t)n : 0);
	ok = e->whole_utf8 ? emit_utf8_complete((unsigned char *)buf, have) : have;
	if (have - ok > sizeof(e->pend)) /* cannot happen with 4-byte sequences */
		ok = have;
	e->n_pend = have - ok;
	memcpy(e->pend, buf + ok, e->n_pend);
	e->id = id;
	if (!e->stop.n) { /* every token's text, even empty, as before */
		if (e->hk->token)
			e->hk->token(e->hk->arg, id, buf, ok);
	} else if (svc_stopper_feed(&e->stop, buf, ok, emit_out, e)) {
		e->n_pend = 0;
		return 1;
	}
	return svc_cancelled(e->hk);
}

void
svc_emit_flush(struct svc_emit *e)
{
	e->id = -1;
	if (e->stop.matched >= 0)
		return;
	if (e->n_pend)
		svc_stopper_feed(&e->stop, e->pend, e->n_pend, emit_out, e);
	e->n_pend = 0;
	if (e->stop.matched < 0)
		svc_stopper_flush(&e->stop, emit_out, e);
}

int
svc_emit_judge(struct svc_emit *e, int64_t hold, int keep, double min_conf, const float *first,
    int64_t n_max)
{
	int64_t cap = keep ? n_max : hold;
	e->j.hold = keep ? n_max + 1 : hold;
	e->j.keep = keep;
	e->j.min_conf = min_conf;
	e->j.first = first;
	if (cap > 0 && !(e->j.held = malloc((size_t)cap * sizeof(int32_t))))
		return ENG_ERR_NOMEM;
	return 0;
}

void
svc_emit_judge_free(struct svc_emit *e)
{
	free(e->j.held);
	e->j.held = NULL;
}

/* The held prefix judged: abstain (1: stop) or hand it on. */
static int
emit_judge(struct svc_emit *e)
{
	int64_t i;
	e->j.judged = 1;
	e->j.sum_held = e->j.sum;
	e->j.n_lp_held = e->j.n_lp;
	if (!(e->j.n_lp && e->j.sum / (double)e->j.n_lp >= e->j.min_conf)) {
		e->j.abstain = 1;
		return 1;
	}
	for (i = 0; i < e->j.n_held; i++)
		if (svc_emit_cb(e, e->j.held[i]))
			return 1;
	return 0;
}

/* eng_generate_lp's callback: each token's log-probability counted, the
 * first hold tokens held until judged, the rest handed on. */
static int
emit_lp_cb(void *arg, int32_t id, double lp, int eog)
{
	struct svc_emit *e = arg;
	if (!e->j.t_first)
		e->j.t_first = eng_now();
	e->j.sum += lp;
	e->j.n_lp++;
	e->j.ended = eog;
	if (e->j.judged || !e->j.hold)
		return eog ? 1 : svc_emit_cb(e, id);
	if (!eog)
		e->j.held[e->j.n_held++] = id;
	if (!e->j.keep && (eog || e->j.n_held == e->j.hold))
		return emit_judge(e) || eog;
	return eog || svc_cancelled(e->hk);
}

int
svc_emit_answer(struct svc_emit *e, struct svc_session *ss, struct eng_kv *kv,
    const int32_t *ids, int64_t n, int64_t n_max, float temperature, float top_p,
    uint64_t seed, struct svc_answer *out, struct svc_status *st)
{
	struct eng_sampler smp;
	int rc;

	eng_sampler_init(&smp, temperature, top_p > 0.0f ? top_p : 1.0f, seed);
	if (e->j.hold || e->j.first)
		rc = eng_generate_lp(ss->ctx, kv, e->v->tok, e->j.first ? NULL : ids,
		    e->j.first ? 0 : n, e->j.first, n_max, &smp, emit_lp_cb, e, &out->generated);
	else
		rc = eng_generate(ss->ctx, kv, e->v->tok, ids, n, n_max, &smp, svc_emit_cb, e,
		    &out->generated);
	if (!rc && e->j.hold && !e->j.keep && !e->j.judged && !svc_cancelled(e->hk))
		emit_judge(e); /* n_max came before hold tokens */
	out->tokens = e->n;
	out->ttft = e->ttft;
	if (rc) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		return svc_fail(st, SVC_AT_GENERATE, rc);
	}
	svc_emit_flush(e);
	out->tokens = e->n;
	out->ttft = e->ttft;
	out->stop = e->stop.matched >= 0 ? SVC_STOP_SEQUENCE :
	    out->generated >= n_max ? SVC_STOP_LENGTH : SVC_STOP_EOS;
	out->stop_index = e->stop.matched;
	if (svc_cancelled(e->hk)) {
		out->cancelled = 1;
		out->stop = SVC_STOP_CANCELLED;
	}
	out->seconds = eng_now() - e->t0;
	return 0;
}
