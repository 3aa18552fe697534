/*
 * ask.c: `kvsnap ask`, the whole kvsnap path in one process with nothing
 * stored: a document's text (svc_extract, as an ingest reads it), the
 * chunked ingest with the session's policy, then the answer step every
 * answer takes (emit.c's svc_emit_answer: the question prefilled over the
 * compressed cache, a greedy answer to the token hook); with compare, the
 * time a full re-prefill of document and question takes.
 *
 * The document sits in the chat template as the start of the user turn
 * (DESIGN.md §1); the question, the end of the turn and the assistant
 * header are prefilled over the compressed cache at positions n, n+1, ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

int
svc_doc_text(const void *bytes, size_t len, struct svc_doc_text *t, struct svc_status *st)
{
	struct fmt_doc d;

	memset(t, 0, sizeof(*t));
	if (svc_extract(bytes, len, NULL, NULL, &d, st))
		return -1;
	t->text = d.text;
	t->len = d.len;
	return 0;
}

void
svc_doc_text_free(struct svc_doc_text *t)
{
	free(t->text);
	t->text = NULL;
	t->len = 0;
}

/* The failure's whole message in st->why ("what: the engine's words"). */
static int
ask_fail(struct svc_status *st, enum svc_step step, int rc, const char *what)
{
	snprintf(st->why, sizeof(st->why), "%s: %s", what, eng_strerror(rc));
	return svc_fail(st, step, rc);
}

int
svc_ask(struct svc *v, struct svc_session *ss, const struct svc_ask_req *r,
    const struct svc_hooks *hk, struct svc_asked *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	const struct eng_hparams *hp = &v->m->hp;
	struct eng_kv *kv = NULL;
	struct svc_emit em;
	struct svc_answer ans;
	int32_t *ids = NULL, *qids = NULL, *all;
	int64_t n_doc, n_q, n_all, l;
	int64_t chunk = v->chunk, n_max = r->max_tokens;
	float *logits = NULL;
	double t0;
	int rc, ret = -1;

	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	out->policy = eng_policy_name(ss->p);
	/* the document, then the question that ends the user turn */
	n_doc = eng_chat_doc_ids(v->chat, r->doc, r->doc_len, &ids);
	n_q = n_doc < 0 ? n_doc : eng_chat_question_ids(v->chat, r->question, r->question_len,
	    &qids);
	if (n_doc < 0 || n_q < 0) {
		ask_fail(st, SVC_AT_TOKENIZE, (int)(n_doc < 0 ? n_doc : n_q), "cannot tokenize");
		goto out;
	}
	n_all = n_doc + n_q;
	if (!(all = realloc(ids, (size_t)n_all * sizeof(int32_t)))) {
		ask_fail(st, SVC_AT_ENGINE, ENG_ERR_NOMEM, "cannot set up the engine");
		goto out;
	}
	ids = all;
	memcpy(ids + n_doc, qids, (size_t)n_q * sizeof(int32_t));
	out->doc_tokens = n_doc;
	out->question_tokens = n_q;
	if (n_all + n_max > hp->n_ctx_train) {
		snprintf(st->why, sizeof(st->why), "document + question is %lld tokens; with %lld "
		    "to generate that exceeds the model's context window (%d)", (long long)n_all,
		    (long long)n_max, hp->n_ctx_train);
		svc_fail(st, SVC_AT_TOKENIZE, ENG_ERR_CONTEXT);
		goto out;
	}
	logits = malloc((size_t)hp->n_vocab * sizeof(float));
	if (!logits || (rc = eng_kv_init(&kv, v->m, eng_policy_rows_per_head(ss->p, n_doc, chunk,
	    n_all - n_doc + n_max)))) {
		snprintf(st->why, sizeof(st->why), "cannot set up the engine");
		svc_fail(st, SVC_AT_ENGINE, ENG_ERR_NOMEM);
		goto out;
	}
	t0 = eng_now();
	if ((rc = eng_ingest(ss->ctx, kv, ss->p, ids, n_doc, chunk, NULL))) {
		ask_fail(st, SVC_AT_INGEST, rc, "ingest failed");
		goto out;
	}
	out->ingest_s = eng_now() - t0;
	for (l = 0; l < hp->n_layer; l++)
		out->kept += eng_kv_layer_units(kv, (int)l);
	out->full_units = (double)n_doc * hp->n_layer * hp->n_head_kv;
	/* the answer step every answer takes (emit.c): the question's prefill,
	 * then greedy decoding, each token's text as decoded */
	memset(&ans, 0, sizeof(ans));
	svc_emit_init(&em, v, hk ? hk : &none, 0, NULL, 0);
	if (svc_emit_answer(&em, ss, kv, ids + n_doc, n_all - n_doc, n_max, 0.0f, 1.0f, 0, &ans,
	    st) && !(st->rc == ENG_ERR_CONTEXT && ans.tokens > 0)) {
		/* no token yet: the question's prefill failed */
		ask_fail(st, SVC_AT_GENERATE, st->rc, ans.tokens > 0 ? "generation failed" :
		    "question prefill failed");
		goto out;
	}
	memset(st, 0, sizeof(*st)); /* a full window after the first token ends the answer */
	/* no token (the first was end of generation): the prefill and the sample */
	out->ttft_s = ans.tokens > 0 ? ans.ttft : ans.seconds;
	out->generated = ans.generated;
	if (r->compare) {
		struct eng_kv *full = NULL;
		if (!eng_kv_init(&full, v->m, n_all + 1)) {
			t0 = eng_now();
			(void)eng_forward(ss->ctx, full, ids, n_all, NULL, logits);
			out->full_s = eng_now() - t0;
			eng_kv_free(full);
		}
	}
	ret = 0;
out:
	free(ids);
	free(qids);
	free(logits);
	eng_kv_free(kv);
	return ret;
}
