/*
 * policy_full.c: `full` keeps every unit (no eviction): the ceiling every
 * other policy is measured against.  Memory grows with the document.
 */
#include <stdio.h>

#include "engine/cache/policy_ops.h"

static int
full_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	(void)p;
	(void)val;
	if (!key)
		return 0;
	return eng_fail(why, why_len, ENG_ERR_ARG, "policy full has no option '%s'", key);
}

static int
full_check(struct eng_policy *p, char *why, size_t why_len)
{
	(void)p;
	(void)why;
	(void)why_len;
	return 0;
}

static size_t
full_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	(void)p;
	if (buf && cap)
		buf[0] = 0;
	return 0;
}

static int64_t
full_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	(void)p;
	(void)n_doc;
	return -1; /* every unit */
}

const struct eng_policy_ops eng_policy_full = {
	.name = "full",
	.set = full_set,
	.check = full_check,
	.describe = full_describe,
	.stat_from = eng_policy_no_stat,
	.window = eng_policy_no_window,
	.select = eng_policy_select_all,
	.kept_per_head = full_kept_per_head,
	.budgetless = 1,
};
