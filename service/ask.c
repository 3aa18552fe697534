/*
 * ask.c: `kvsnap ask`, the whole kvsnap path in one process with nothing
 * stored: a document's text (svc_extract, as an ingest reads it), the
 * chunked ingest with the session's policy, the question prefilled over the
 * compressed cache, a greedy answer to the token hook; with compare, the
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

/* One answer token's text to the hook (as decoded, whole or not). */
static void
ask_emit_one(const struct svc *v, const struct svc_hooks *hk, int32_t id)
{
	char buf[256];
	int n = eng_tok_decode(v->tok, id, 0, buf, sizeof(buf));
	if (hk->token)
		hk->token(hk->arg, id, buf, n > 0 ? (size_t)n : 0);
}

struct ask_emit {
	const struct svc *v;
	const struct svc_hooks *hk;
};

static int
ask_emit_cb(void *arg, int32_t id)
{
	struct ask_emit *e = arg;
	ask_emit_one(e->v, e->hk, id);
	return 0;
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
	struct eng_sampler s;
	struct ask_emit em = { v, hk ? hk : &none };
	int32_t *ids = NULL, *qids = NULL, *all, first;
	int64_t n_doc, n_q, n_all, n_gen = 0, l;
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
	t0 = eng_now();
	if ((rc = eng_forward(ss->ctx, kv, ids + n_doc, n_all - n_doc, NULL, logits))) {
		ask_fail(st, SVC_AT_GENERATE, rc, "question prefill failed");
		goto out;
	}
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	first = eng_sample(&s, logits, hp->n_vocab);
	out->ttft_s = eng_now() - t0;
	if (!eng_tok_is_eog(v->tok, first)) {
		ask_emit_one(v, em.hk, first);
		rc = eng_generate(ss->ctx, kv, v->tok, &first, 1, n_max - 1, &s, ask_emit_cb, &em,
		    &n_gen);
		if (rc && rc != ENG_ERR_CONTEXT) {
			ask_fail(st, SVC_AT_GENERATE, rc, "generation failed");
			goto out;
		}
		n_gen++;
	}
	out->generated = n_gen;
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
