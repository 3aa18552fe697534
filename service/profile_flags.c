/*
 * profile_flags.c: the one parser of the profile's settings (--policy,
 * --opts, --budget, --ratio, --chunk, --quant) for kvsnapd's flags and
 * config file, `kvsnap --local`, `kvsnap shrink` and `kvsnap ask`: one
 * range per setting and one error text; and the default profile they start
 * from (service.h, SVC_DEFAULT_*).
 */
#include <stdio.h>
#include <string.h>

#include "common/cmdline.h"
#include "common/paths.h"
#include "service/service_internal.h"

void
svc_conf_defaults(struct svc_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->policy = SVC_DEFAULT_POLICY;
	c->opts = "";
	c->budget = SVC_DEFAULT_BUDGET;
	c->ratio = SVC_DEFAULT_RATIO;
	c->chunk = SVC_DEFAULT_CHUNK;
	c->quant = SVC_DEFAULT_QUANT;
}

int
svc_profile_flag(struct svc_conf *c, const char *flag, const char *value, char *why,
    size_t why_len)
{
	int q;

	if (!strcmp(flag, "policy")) {
		if (!*value) {
			snprintf(why, why_len, "needs a policy name such as kvzip or snapkv "
			    "(%s/POLICIES.md), got ''", kv_doc_dir());
			return -1;
		}
		c->policy = value;
		return 0;
	}
	if (!strcmp(flag, "opts")) {
		c->opts = value;
		return 0;
	}
	if (!strcmp(flag, "budget")) {
		if (cmdline_parse_long(value, SVC_BUDGET_MIN, SVC_BUDGET_MAX, &c->budget, why,
		    why_len))
			return -1;
		c->ratio = 0.0; /* the budget form replaces the ratio */
		return 0;
	}
	if (!strcmp(flag, "ratio")) {
		if (eng_parse_ratio(value, &c->ratio)) {
			snprintf(why, why_len, "needs a share in (0, 1] such as 0.25 or 1/4, got '%s'",
			    value);
			return -1;
		}
		return 0;
	}
	if (!strcmp(flag, "chunk"))
		return cmdline_parse_long(value, SVC_CHUNK_MIN, SVC_CHUNK_MAX, &c->chunk, why,
		    why_len);
	if (!strcmp(flag, "quant")) {
		if ((q = snap_quant_parse(value)) < 0) {
			snprintf(why, why_len, "needs one of " SNAP_QUANT_NAMES ", got '%s'", value);
			return -1;
		}
		c->quant = q;
		return 0;
	}
	return 1;
}
