/*
 * chat.c: the plain model, no document: a conversation rendered with the
 * chat template (or a raw prompt, its control tokens parsed as
 * `kvsnap generate --raw` does), prefilled into a fresh cache and decoded
 * with the token hook.  kvsnapd's HTTP endpoint answers requests that name
 * no document with it, so the daemon never calls the engine itself.  Also
 * what a conversation's turns tokenize to and why they did not (a document
 * question's follow-up turns too: query.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

int64_t
svc_msgs_ids(const struct svc *v, const struct svc_msg *msgs, size_t n, int followup,
    int32_t **ids)
{
	struct eng_chat_msg *m = NULL;
	int64_t r;
	size_t i;

	if (n && !(m = calloc(n, sizeof(*m))))
		return ENG_ERR_NOMEM;
	for (i = 0; i < n; i++) {
		m[i].role = msgs[i].role;
		m[i].content = msgs[i].content;
		m[i].len = msgs[i].len;
	}
	r = followup ? eng_chat_followup_ids(v->chat, m, n, ids) :
	    eng_chat_messages_ids(v->chat, m, n, ids);
	free(m);
	return r;
}

int
svc_prompt_fail(const struct svc *v, int64_t n, int msgs, int followup, struct svc_status *st)
{
	if (n == ENG_ERR_ARG && msgs) /* the template raises on it */
		snprintf(st->why, sizeof(st->why), "the model's chat template (%s) does not take "
		    "this conversation%s, or user and assistant turns that do not alternate",
		    eng_chat_name(v->chat), followup ? " after the document: a system turn there" :
		    ": a system message it has no turn for");
	else
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)n));
	return svc_fail(st, SVC_AT_TOKENIZE, (int)n);
}

/* The prompt's ids (malloc'd) or a negative eng_err. */
static int64_t
chat_prompt_ids(const struct svc *v, const struct svc_chat_req *r, int32_t **ids)
{
	int64_t cap, n;
	if (r->msgs)
		return svc_msgs_ids(v, r->msgs, r->n_msgs, 0, ids);
	cap = (int64_t)r->prompt_len + 8;
	if (!(*ids = malloc((size_t)cap * sizeof(**ids))))
		return ENG_ERR_NOMEM;
	n = eng_tok_encode(v->tok, r->prompt, r->prompt_len, 1, *ids, cap);
	if (n < 0 || n > cap) {
		free(*ids);
		*ids = NULL;
		return n < 0 ? n : ENG_ERR_TOKENIZER;
	}
	return n;
}

int
svc_chat(struct svc *v, struct svc_session *ss, const struct svc_chat_req *r,
    const struct svc_hooks *hk, struct svc_answer *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	struct svc_emit em;
	struct eng_kv *kv = NULL;
	int32_t *ids = NULL;
	int64_t n, n_max, window = v->m->hp.n_ctx_train;
	int rc, ret = -1;

	if (!hk)
		hk = &none;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	svc_emit_init(&em, v, hk, r->whole_utf8, r->stop, r->n_stop);
	if ((n = chat_prompt_ids(v, r, &ids)) < 0)
		return svc_prompt_fail(v, n, r->msgs != NULL, 0, st);
	out->prompt_tokens = n;
	if (n == 0 || n >= window) {
		snprintf(st->why, sizeof(st->why), n ? "the prompt is %lld tokens; the model's "
		    "window is %lld" : "the prompt is empty", (long long)n, (long long)window);
		free(ids);
		return svc_fail(st, SVC_AT_TOKENIZE, n ? ENG_ERR_CONTEXT : ENG_ERR_ARG);
	}
	/* what the window leaves: the answer then stops as `length` */
	n_max = r->max_tokens < window - n ? r->max_tokens : window - n;
	if ((rc = eng_kv_init(&kv, v->m, n + n_max))) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		svc_fail(st, SVC_AT_ENGINE, rc);
		goto out;
	}
	if (svc_emit_answer(&em, ss, kv, ids, n, n_max, r->temperature, r->top_p, r->seed, out,
	    st))
		goto out;
	ret = 0;
out:
	free(ids);
	eng_kv_free(kv);
	return ret;
}
