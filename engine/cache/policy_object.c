/*
 * policy_object.c: a policy object through its ops table: made from a table
 * and options, described, its ratio resolved per document, the pool it needs,
 * bound to a model, freed.  Names no policy (the registry, policy.c, does),
 * so a policy may make another (PoD its NaCl bases) or resolve itself (kvzip's
 * shrink) without a file circle.
 *
 * Options are "key=value" pairs separated by commas; each policy's `set`
 * interprets its keys.  eng_policy_describe() prints every parameter, so two
 * profiles with the same description evict identically.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/policy_ops.h"

int
eng_policy_new(struct eng_policy **out, const struct eng_policy_ops *ops, const char *opts,
    int64_t budget, char *why, size_t why_len)
{
	const char *name = ops->name;
	struct eng_policy *p;
	char *copy = NULL, *item, *save = NULL;
	int rc = 0;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	if (budget <= 0 && !ops->budgetless)
		return eng_fail(why, why_len, ENG_ERR_ARG, "policy %s needs a budget > 0", name);
	p = calloc(1, sizeof(*p));
	if (!p)
		return ENG_ERR_NOMEM;
	p->ops = ops;
	p->budget = budget;
	/* defaults: set() with a NULL key resets every parameter */
	rc = ops->set(p, NULL, NULL, why, why_len);
	if (!rc && opts && *opts) {
		copy = strdup(opts);
		if (!copy)
			rc = ENG_ERR_NOMEM;
		for (item = copy ? strtok_r(copy, ",", &save) : NULL; !rc && item;
		     item = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(item, '=');
			if (!eq) {
				if (why)
					snprintf(why, why_len, "policy option '%s' is not key=value", item);
				rc = ENG_ERR_ARG;
				break;
			}
			*eq = 0;
			rc = ops->set(p, item, eq + 1, why, why_len);
			if (rc && why && !why[0])
				snprintf(why, why_len, "bad policy option %s=%s for %s", item, eq + 1,
				    name);
		}
	}
	if (!rc)
		rc = ops->check(p, why, why_len);
	free(copy);
	if (rc) {
		eng_policy_free(p); /* releases what set() may have allocated */
		return rc;
	}
	*out = p;
	return 0;
}

void
eng_policy_free(struct eng_policy *p)
{
	if (p && p->ops->destroy)
		p->ops->destroy(p);
	free(p);
}

const char *
eng_policy_name(const struct eng_policy *p)
{
	return p->ops->name;
}

double
eng_policy_ratio(const struct eng_policy *p)
{
	return p->ratio;
}

int
eng_policy_resolve(struct eng_policy *p, int64_t n_doc, char *why, size_t why_len)
{
	int64_t b;
	if (p->ratio <= 0.0)
		return 0;
	b = (int64_t)ceil(p->ratio * (double)n_doc - 1e-9);
	p->budget = b < 1 ? 1 : b;
	return p->ops->check(p, why, why_len);
}

size_t
eng_policy_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	int n = p->ratio > 0.0 ?
	    snprintf(buf, cap, "%s:ratio=%g", p->ops->name, p->ratio) :
	    snprintf(buf, cap, "%s:budget=%lld", p->ops->name, (long long)p->budget);
	size_t used = n > 0 ? (size_t)n : 0;
	return used + p->ops->describe(p, used < cap ? buf + used : NULL,
	    used < cap ? cap - used : 0);
}

size_t
eng_policy_profile(const struct eng_policy *p, char *buf, size_t cap)
{
	char d[2048], key[64];
	const char *at, *end;
	size_t n = eng_policy_describe(p, d, sizeof(d));
	int r;
	if (!p->ops->file_key || n >= sizeof(d))
		return eng_policy_describe(p, buf, cap);
	/* ",key=PATH" -> ",key=FINGERPRINT" (option values never hold commas) */
	snprintf(key, sizeof(key), ",%s=", p->ops->file_key);
	if (!(at = strstr(d, key)))
		return eng_policy_describe(p, buf, cap);
	at += strlen(key);
	end = strchr(at, ',');
	r = snprintf(buf, cap, "%.*s%s%s", (int)(at - d), d, p->ops->file_fingerprint(p),
	    end ? end : "");
	return r > 0 ? (size_t)r : 0;
}

int64_t
eng_policy_max_chunk(const struct eng_policy *p, int64_t chunk)
{
	int64_t w = p->ops->window(p);
	return chunk + (w > 1 ? w - 1 : 0);
}

int64_t
eng_policy_max_doc(const struct eng_policy *p, const struct eng_model *m)
{
	/* eng_ingest_cb takes the policy's mode, original positions without
	 * one; fwd_check_room is the check this mirrors */
	if (p->ops->pos_mode && p->ops->pos_mode(p) == ENG_POS_SLOT)
		return (int64_t)UINT32_MAX;
	return m->hp.n_ctx_train;
}

int64_t
eng_policy_rows_per_head(struct eng_policy *p, int64_t n_doc, int64_t chunk,
    int64_t n_extra)
{
	int64_t room = eng_policy_max_chunk(p, chunk), kept;
	if (eng_policy_resolve(p, n_doc, NULL, 0))
		return n_doc + n_extra + 1; /* eng_ingest refuses it with the reason */
	if (p->ops->rows_per_head)
		return p->ops->rows_per_head(p, n_doc, chunk, n_extra);
	kept = p->ops->kept_per_head ? p->ops->kept_per_head(p, n_doc) : p->budget;
	if (kept < 0 || p->budget >= n_doc)
		return n_doc + n_extra + 1; /* keeps everything */
	if (n_extra > room)
		room = n_extra;
	return kept + room;
}

int
eng_policy_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len)
{
	return p->ops->bind ? p->ops->bind(p, m, why, why_len) : 0;
}
