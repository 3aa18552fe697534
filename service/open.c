/*
 * open.c: the service's set-up and tear-down: the policy (checked before
 * the model loads, so a bad option costs nothing), the model, the
 * tokenizer, the profile every snapshot of this process is filed under,
 * the store; and a session per thread that runs the model (an engine
 * scratch and its own policy object).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service.h"

/* Record where and how a step failed. */
static int
open_fail(struct svc_status *st, enum svc_step step, int rc)
{
	st->step = step;
	st->rc = rc;
	return -1;
}

int
svc_policy_create(const struct svc *v, struct eng_policy **out, char *why, size_t why_len)
{
	if (v->ratio > 0.0)
		return eng_policy_create_ratio(out, v->policy, v->opts, v->ratio, why, why_len);
	return eng_policy_create(out, v->policy, v->opts, v->budget, why, why_len);
}

int
svc_open(struct svc **out, const struct svc_conf *conf, struct svc_status *st)
{
	struct store_opts so = { 0, 0, conf->read_only };
	struct eng_policy *p = NULL;
	struct svc *v;
	int rc;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	if (!(v = calloc(1, sizeof(*v))) || !(v->policy = strdup(conf->policy)) ||
	    !(v->opts = eng_policy_default_opts(conf->policy, conf->opts, conf->model))) {
		svc_close(v);
		return open_fail(st, SVC_AT_POLICY, ENG_ERR_NOMEM);
	}
	v->budget = conf->budget;
	v->ratio = conf->ratio;
	v->chunk = conf->chunk;
	v->quant = conf->quant;
	/* the profile: one policy object just to describe it (each session
	 * makes its own) */
	if ((rc = svc_policy_create(v, &p, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_POLICY, rc);
		goto fail;
	}
	if ((rc = eng_model_open(&v->m, conf->model, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_MODEL, rc);
		goto fail;
	}
	if ((rc = eng_tok_init(&v->tok, v->m->gguf, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_TOKENIZER, rc);
		goto fail;
	}
	if ((rc = eng_policy_bind(p, v->m, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_BIND, rc);
		goto fail;
	}
	if (snap_profile(v->profile, sizeof(v->profile), v->profile_id,
	    eng_model_fingerprint(v->m), p, v->chunk, v->quant)) {
		snprintf(st->why, sizeof(st->why), "the profile description is too long");
		open_fail(st, SVC_AT_PROFILE, ENG_ERR_ARG);
		goto fail;
	}
	store_hex(v->profile_id, SNAP_ID_BYTES, v->profile_hex);
	eng_policy_free(p);
	p = NULL;
	if ((rc = store_open(&v->s, conf->state, &so, st->why, sizeof(st->why)))) {
		v->s = NULL;
		open_fail(st, SVC_AT_STORE_OPEN, rc);
		goto fail;
	}
	*out = v;
	return 0;
fail:
	eng_policy_free(p);
	svc_close(v);
	return -1;
}

void
svc_close(struct svc *v)
{
	if (!v)
		return;
	if (v->s)
		store_close(v->s);
	eng_tok_free(v->tok);
	eng_model_close(v->m);
	free(v->policy);
	free(v->opts);
	free(v);
}

int
svc_session_new(struct svc *v, int threads, struct svc_session **out, struct svc_status *st)
{
	struct svc_session *ss;
	int rc;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	if (!(ss = calloc(1, sizeof(*ss))))
		return open_fail(st, SVC_AT_ENGINE, ENG_ERR_NOMEM);
	if ((rc = svc_policy_create(v, &ss->p, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_POLICY, rc);
		goto fail;
	}
	if ((rc = eng_policy_bind(ss->p, v->m, st->why, sizeof(st->why)))) {
		open_fail(st, SVC_AT_BIND, rc);
		goto fail;
	}
	if ((rc = eng_ctx_init(&ss->ctx, v->m, threads, eng_policy_max_chunk(ss->p, v->chunk)))) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		open_fail(st, SVC_AT_ENGINE, rc);
		goto fail;
	}
	*out = ss;
	return 0;
fail:
	svc_session_free(ss);
	return -1;
}

void
svc_session_free(struct svc_session *ss)
{
	if (!ss)
		return;
	eng_ctx_free(ss->ctx);
	eng_policy_free(ss->p);
	free(ss);
}
