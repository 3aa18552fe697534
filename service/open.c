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

#include "service/service_internal.h"

int
svc_policy_create(const struct svc *v, struct eng_policy **out, char *why, size_t why_len)
{
	if (v->ratio > 0.0)
		return eng_policy_create_ratio(out, v->policy, v->opts, v->ratio, why, why_len);
	return eng_policy_create(out, v->policy, v->opts, v->budget, why, why_len);
}

void
svc_close(struct svc *v)
{
	if (!v)
		return;
	tier_close(v->tier);
	svc_index_close(v->index);
	store_close(v->s);
	free(v->state);
	eng_chat_free(v->chat);
	eng_tok_free(v->tok);
	eng_model_close(v->m);
	free(v->policy);
	free(v->opts);
	free(v);
}

void
svc_session_free(struct svc_session *ss)
{
	if (!ss)
		return;
	eng_ctx_free(ss->ctx);
	eng_policy_free(ss->p);
	eng_kv_free(ss->pool);
	free(ss);
}

/* The text index beside an LMDB store, brought in step with its text
 * records (index_sync.c).  Never fatal: without it the service answers as
 * before and svc_search says why (v->index_why); a rebuild is told to the
 * log (conf: log and state; the rest is v's). */
void
open_index(struct svc *v, const struct svc_conf *conf)
{
	struct svc_index_sync sy;
	char msg[400];

	v->index_tried = 1;
	if (!store_lmdb_dir(conf->state)) {
		snprintf(v->index_why, sizeof(v->index_why), "the store keeps no text records (a "
		    "text index is kept beside an LMDB store only)");
		return;
	}
	if (svc_index_open(v->s, conf->state, v->read_only, 1, &v->index, &sy, v->index_why,
	    sizeof(v->index_why))) {
		v->index = NULL;
		snprintf(msg, sizeof(msg), "text index: %s; searches are refused", v->index_why);
		if (conf->log)
			conf->log(conf->log_arg, 1, msg);
		return;
	}
	if (sy.rebuilt && strcmp(sy.rebuilt_why, "there was none") != 0) {
		snprintf(msg, sizeof(msg), "text index rebuilt from the store (%s): %ld parts",
		    sy.rebuilt_why, sy.added);
		if (conf->log)
			conf->log(conf->log_arg, 1, msg);
	}
}

/* The defaults before today's (service.h), the latest first. */
static const struct {
	double ratio;
	int quant;
} prev_defaults[SVC_PREV_DEFAULTS] = {
	{ 0.5, SNAP_Q8 },    /* issue 28's first pick */
	{ 0.25, SNAP_FP16 }, /* the first default */
};

/* When v's profile is the default one (service.h; any chunk size: a
 * chunk-size setting kept through the change of default), the ids of the
 * previous defaults' profiles with the same model and chunk (v->prev_id,
 * the latest first), so that a store written under one keeps answering
 * (svc_pick). */
static int
open_prev_defaults(struct svc *v, const struct svc_conf *conf, char *why, size_t cap)
{
	char text[SNAP_MAX_PROFILE];
	int i, rc;

	if (strcmp(conf->policy, SVC_DEFAULT_POLICY) || (conf->opts && *conf->opts) ||
	    v->ratio != SVC_DEFAULT_RATIO || v->quant != SVC_DEFAULT_QUANT)
		return 0;
	for (i = 0; i < SVC_PREV_DEFAULTS; i++) {
		struct svc prev = *v;
		struct eng_policy *p = NULL;
		prev.ratio = prev_defaults[i].ratio;
		if ((rc = svc_policy_create(&prev, &p, why, cap)) ||
		    (rc = eng_policy_bind(p, v->m, why, cap))) {
			eng_policy_free(p);
			return rc;
		}
		if (snap_profile(text, sizeof(text), v->prev_id[v->n_prev],
		    eng_model_fingerprint(v->m), p, v->chunk, prev_defaults[i].quant) == 0)
			v->n_prev++;
		eng_policy_free(p);
	}
	return 0;
}

/* The steps of svc_open after the settings are copied; *p is the policy
 * that describes the profile. */
static int
open_steps(struct svc *v, const struct svc_conf *conf, struct eng_policy **p,
    struct svc_status *st)
{
	struct store_opts so = { .read_only = conf->read_only };
	char *why = st->why;
	size_t cap = sizeof(st->why);
	int rc;

	if ((rc = svc_policy_create(v, p, why, cap)))
		return svc_fail(st, SVC_AT_POLICY, rc);
	if ((rc = eng_model_open(&v->m, conf->model, why, cap)))
		return svc_fail(st, SVC_AT_MODEL, rc);
	if ((rc = eng_tok_init(&v->tok, v->m->gguf, why, cap)))
		return svc_fail(st, SVC_AT_TOKENIZER, rc);
	if ((rc = eng_chat_init(&v->chat, v->m->gguf, v->tok, why, cap)))
		return svc_fail(st, SVC_AT_TOKENIZER, rc);
	if ((rc = eng_policy_bind(*p, v->m, why, cap)))
		return svc_fail(st, SVC_AT_BIND, rc);
	if (snap_profile(v->profile, sizeof(v->profile), v->profile_id,
	    eng_model_fingerprint(v->m), *p, v->chunk, v->quant)) {
		snprintf(why, cap, "the profile description is too long");
		return svc_fail(st, SVC_AT_PROFILE, ENG_ERR_ARG);
	}
	store_hex(v->profile_id, SNAP_ID_BYTES, v->profile_hex);
	if ((rc = open_prev_defaults(v, conf, why, cap)))
		return svc_fail(st, SVC_AT_PROFILE, rc);
	if (!conf->state) /* the model alone (svc_ask, svc_chat) */
		return 0;
	if ((rc = store_open(&v->s, conf->state, &so, why, cap))) {
		v->s = NULL;
		return svc_fail(st, SVC_AT_STORE_OPEN, rc);
	}
	if (conf->index)
		open_index(v, conf);
	return tier_open(v, conf, st);
}

int
svc_open(struct svc **out, const struct svc_conf *conf, struct svc_status *st)
{
	struct eng_policy *p = NULL; /* one just to describe the profile (each
	                              * session makes its own) */
	struct svc *v = calloc(1, sizeof(*v));
	int rc;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	if (!v || !(v->policy = strdup(conf->policy)) ||
	    !(v->opts = eng_policy_default_opts(conf->policy, conf->opts, conf->model))) {
		svc_close(v);
		return svc_fail(st, SVC_AT_POLICY, ENG_ERR_NOMEM);
	}
	if (!(v->state = strdup(conf->state ? conf->state : ""))) {
		svc_close(v);
		return svc_fail(st, SVC_AT_POLICY, ENG_ERR_NOMEM);
	}
	v->read_only = conf->read_only;
	v->budget = conf->budget;
	v->ratio = conf->ratio;
	v->chunk = conf->chunk;
	v->quant = conf->quant;
	rc = open_steps(v, conf, &p, st);
	eng_policy_free(p);
	if (rc) {
		svc_close(v);
		return -1;
	}
	*out = v;
	return 0;
}

int
svc_conf_check(const struct svc_conf *conf, struct svc_status *st)
{
	struct svc v = { .budget = conf->budget, .ratio = conf->ratio };
	struct eng_policy *p = NULL;
	int rc = ENG_ERR_NOMEM;

	memset(st, 0, sizeof(*st));
	if ((v.policy = strdup(conf->policy)) &&
	    (v.opts = eng_policy_default_opts(conf->policy, conf->opts, conf->model)))
		rc = svc_policy_create(&v, &p, st->why, sizeof(st->why));
	eng_policy_free(p);
	free(v.policy);
	free(v.opts);
	return rc ? svc_fail(st, SVC_AT_POLICY, rc) : 0;
}

int
svc_session_new(struct svc *v, int threads, struct svc_session **out, struct svc_status *st)
{
	struct svc_session *ss = calloc(1, sizeof(*ss));
	int rc = ENG_ERR_NOMEM;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	if (!ss || (rc = svc_policy_create(v, &ss->p, st->why, sizeof(st->why))))
		svc_fail(st, SVC_AT_POLICY, rc);
	else if ((rc = eng_policy_bind(ss->p, v->m, st->why, sizeof(st->why))))
		svc_fail(st, SVC_AT_BIND, rc);
	else if ((rc = eng_ctx_init(&ss->ctx, v->m, threads,
	    eng_policy_max_chunk(ss->p, v->chunk)))) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		svc_fail(st, SVC_AT_ENGINE, rc);
	}
	if (rc) {
		svc_session_free(ss);
		return -1;
	}
	*out = ss;
	return 0;
}
