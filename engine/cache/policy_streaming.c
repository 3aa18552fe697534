/*
 * policy_streaming.c: StreamingLLM as Ada-KV evaluates it (spec/adakv.md
 * §1.1): keep the first `sinks` positions and the most recent b − sinks;
 * identical whether evicted once or after every chunk.
 *
 * With positions=slot it is the original StreamingLLM: keys are renumbered
 * 0…C−1 after each eviction, so documents longer than the model's context
 * window stream through.
 *
 * Options: sinks=N (default 4), positions=original|slot (original).
 * Parameters: i[0] = sinks, i[1] = position mode (enum eng_pos_mode).
 */
#include <stdio.h>
#include <string.h>

#include "engine/cache/policy_ops.h"

/* i[1]'s values (enum eng_pos_mode), by index. */
static const char *const positions[] = { "original", "slot", NULL };

static int
streaming_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	if (!key) {
		p->i[0] = 4;
		p->i[1] = ENG_POS_ORIGINAL;
		return 0;
	}
	if (!strcmp(key, "positions"))
		return eng_policy_parse_name(val, positions, &p->i[1]);
	if (!strcmp(key, "sinks"))
		return eng_policy_parse_int(val, 0, 1 << 20, &p->i[0]);
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "policy streaming has no option '%s' (sinks, positions)", key);
}

static int
streaming_check(struct eng_policy *p, char *why, size_t why_len)
{
	return eng_policy_below_budget(p, p->i[0], "streaming: sinks", why, why_len);
}

static size_t
streaming_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, ",sinks=%lld,positions=%s", (long long)p->i[0],
	    positions[p->i[1]]);
	return n > 0 ? (size_t)n : 0;
}

static enum eng_pos_mode
streaming_pos_mode(const struct eng_policy *p)
{
	return (enum eng_pos_mode)p->i[1];
}

static int
streaming_select(struct eng_policy *p, struct eng_evict *e)
{
	int64_t b = p->budget, sinks = p->i[0], i;
	int m;

	for (m = 0; m < e->n_head_kv; m++) {
		struct eng_evict_head *h = &e->h[m];
		int64_t n_sink = 0, recent_from;
		if (eng_policy_keep_if_fits(h, b))
			continue;
		while (n_sink < h->n && h->pos[n_sink] < (uint32_t)sinks)
			n_sink++;
		recent_from = h->n - (b - n_sink);
		for (i = 0; i < n_sink; i++)
			h->keep[h->n_keep++] = i;
		for (i = recent_from > n_sink ? recent_from : n_sink; i < h->n; i++)
			h->keep[h->n_keep++] = i;
	}
	return 0;
}

const struct eng_policy_ops eng_policy_streaming = {
	.name = "streaming",
	.set = streaming_set,
	.check = streaming_check,
	.describe = streaming_describe,
	.stat_from = eng_policy_no_stat,
	.window = eng_policy_no_window,
	.pos_mode = streaming_pos_mode,
	.select = streaming_select,
};
