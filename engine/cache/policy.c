/*
 * policy.c: the policy registry: the list, a policy made by its name, the
 * options a named policy runs with for a model.  What a policy object does
 * through its ops table is policy_object.c; the helpers the policy_*.c files
 * share are policy_helpers.c; neither names a policy, so no policy file and
 * the list call each other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/policy_ops.h"

/* The policies, one file each (engine/cache/policy_NAME.c); adding one is
 * its file, a line in each list here and its page in docs/POLICIES.md. */
extern const struct eng_policy_ops eng_policy_full, eng_policy_streaming, eng_policy_h2o,
    eng_policy_snapkv, eng_policy_pyramidkv, eng_policy_adakv, eng_policy_nacl,
    eng_policy_locret, eng_policy_pod, eng_policy_kvzip;

static const struct eng_policy_ops *const policy_registry[] = {
	&eng_policy_full,
	&eng_policy_streaming,
	&eng_policy_h2o,
	&eng_policy_snapkv,
	&eng_policy_pyramidkv,
	&eng_policy_adakv,
	&eng_policy_nacl,
	&eng_policy_locret,
	&eng_policy_pod,
	&eng_policy_kvzip,
};

int
eng_policy_create(struct eng_policy **out, const char *name, const char *opts,
    int64_t budget, char *why, size_t why_len)
{
	const struct eng_policy_ops *ops = NULL;
	size_t i;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	for (i = 0; i < sizeof(policy_registry) / sizeof(policy_registry[0]); i++)
		if (name && !strcmp(name, policy_registry[i]->name))
			ops = policy_registry[i];
	if (!ops)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "unknown policy '%s'", name ? name : "(null)");
	return eng_policy_new(out, ops, opts, budget, why, why_len);
}

int
eng_policy_create_ratio(struct eng_policy **out, const char *name, const char *opts,
    double ratio, char *why, size_t why_len)
{
	struct eng_policy *p;
	int rc;
	*out = NULL;
	if (!(ratio > 0.0 && ratio <= 1.0))
		return eng_fail(why, why_len, ENG_ERR_ARG, "ratio %g is not in (0, 1]", ratio);
	/* the options are checked against the largest budget a ratio can give;
	 * eng_policy_resolve checks them again per document */
	if ((rc = eng_policy_create(&p, name, opts, INT32_MAX, why, why_len)))
		return rc;
	p->ratio = ratio;
	*out = p;
	return 0;
}

char *
eng_policy_default_opts(const char *name, const char *opts, const char *model_path)
{
	size_t i;
	for (i = 0; i < sizeof(policy_registry) / sizeof(policy_registry[0]); i++)
		if (!strcmp(name, policy_registry[i]->name) && policy_registry[i]->default_opts)
			return policy_registry[i]->default_opts(opts, model_path);
	return strdup(opts);
}
