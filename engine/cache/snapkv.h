/*
 * snapkv.h: the SnapKV family's shared pieces (engine/cache/policy_snapkv.c),
 * used by SnapKV, Ada-KV and PyramidKV, PyramidKV's layer budget among them;
 * engine/ and its tests only.
 */
#ifndef ENGINE_CACHE_SNAPKV_H
#define ENGINE_CACHE_SNAPKV_H

#include "engine/cache/policy_ops.h"

/* The SnapKV family's shared pieces (engine/cache/policy_snapkv.c): options
 * i[0..3] = window, kernel, pool, slack. */
int eng_snapkv_set(struct eng_policy *p, const char *key, const char *val, char *why,
    size_t why_len);
int eng_snapkv_check(struct eng_policy *p, char *why, size_t why_len);
size_t eng_snapkv_describe(const struct eng_policy *p, char *buf, size_t cap);
int64_t eng_snapkv_stat_from(const struct eng_policy *p, int64_t n_tok);
int64_t eng_snapkv_window(const struct eng_policy *p);
/* Units per head kept between chunks: the budget (or a pyramid schedule's
 * first layer) plus the family's `slack`. */
int64_t eng_snapkv_kept(const struct eng_policy *p, int64_t n_doc, int pyramid);
/* Pool head m's window statistics into its candidates' scores; the
 * candidates (units before the window) are the first n returned, listed in
 * cand[0..n). */
int64_t eng_snapkv_score(const struct eng_policy *p, struct eng_evict *e, int m, int64_t *cand);
/* Keep head h's `a` best candidates (score desc, position asc) + window. */
void eng_snapkv_keep(struct eng_evict_head *h, int64_t *cand, int64_t n_cand, int64_t a);

/* PyramidKV's selectable budget b'_l of a layer (policy_pyramidkv.c's schedule),
 * for a policy with SnapKV parameters and f[0] = beta. */
int64_t eng_pyramid_layer_budget(const struct eng_policy *p, int layer, int n_layer,
    int64_t n_doc);

#endif /* ENGINE_CACHE_SNAPKV_H */
