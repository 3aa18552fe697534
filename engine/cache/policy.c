/*
 * policy.c: the policy registry, option parsing, and helpers shared by the
 * policy_*.c files (ranking with the specs' tie rules).
 *
 * Options are "key=value" pairs separated by commas; each policy's `set`
 * interprets its keys.  eng_policy_describe() prints every parameter, so two
 * profiles with the same description evict identically.
 */
#include <errno.h>
#include <math.h>
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
eng_policy_parse_int(const char *val, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;
	if (!val || !*val)
		return ENG_ERR_ARG;
	errno = 0;
	v = strtoll(val, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return ENG_ERR_ARG;
	*out = v;
	return 0;
}

int
eng_policy_parse_float(const char *val, double lo, double hi, double *out)
{
	char *end;
	double v;
	if (!val || !*val)
		return ENG_ERR_ARG;
	errno = 0;
	v = strtod(val, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return ENG_ERR_ARG;
	*out = v;
	return 0;
}

int
eng_policy_create(struct eng_policy **out, const char *name, const char *opts,
    int64_t budget, char *why, size_t why_len)
{
	const struct eng_policy_ops *ops = NULL;
	struct eng_policy *p;
	char *copy = NULL, *item, *save = NULL;
	size_t i;
	int rc = 0;

	*out = NULL;
	if (why && why_len)
		why[0] = 0;
	for (i = 0; i < sizeof(policy_registry) / sizeof(policy_registry[0]); i++)
		if (name && !strcmp(name, policy_registry[i]->name))
			ops = policy_registry[i];
	if (!ops) {
		if (why)
			snprintf(why, why_len, "unknown policy '%s'", name ? name : "(null)");
		return ENG_ERR_ARG;
	}
	if (budget <= 0 && !ops->budgetless) {
		if (why)
			snprintf(why, why_len, "policy %s needs a budget > 0", name);
		return ENG_ERR_ARG;
	}
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

int
eng_parse_ratio(const char *s, double *out)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	double num, den = 1.0;
	char head[64];
	if (!s || !*s)
		return ENG_ERR_ARG;
	if (slash) {
		if ((size_t)(slash - s) >= sizeof(head))
			return ENG_ERR_ARG;
		memcpy(head, s, (size_t)(slash - s));
		head[slash - s] = 0;
		if (eng_policy_parse_float(head, 0.0, 1e9, &num) ||
		    eng_policy_parse_float(slash + 1, 1e-9, 1e9, &den))
			return ENG_ERR_ARG;
	} else if (eng_policy_parse_float(s, 0.0, 1.0, &num)) {
		return ENG_ERR_ARG;
	}
	if (!(num / den > 0.0 && num / den <= 1.0))
		return ENG_ERR_ARG;
	*out = num / den;
	return 0;
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

char *
eng_policy_default_opts(const char *name, const char *opts, const char *model_path)
{
	size_t i;
	for (i = 0; i < sizeof(policy_registry) / sizeof(policy_registry[0]); i++)
		if (!strcmp(name, policy_registry[i]->name) && policy_registry[i]->default_opts)
			return policy_registry[i]->default_opts(opts, model_path);
	return strdup(opts);
}

int64_t
eng_doc_template_len(const int32_t *tpl, int64_t n_tpl, const int32_t *ids, int64_t n)
{
	if (n_tpl > 0 && n_tpl < n && !memcmp(ids, tpl, (size_t)n_tpl * sizeof(int32_t)))
		return n_tpl;
	return 0;
}

int64_t
eng_doc_sinks(int64_t opt, int64_t tpl, int64_t n)
{
	if (opt >= 0)
		return opt < n ? opt : n;
	return tpl ? tpl : (n < 4 ? n : 4);
}

int
eng_doc_template_ids(const struct eng_model *m, int32_t **ids, int64_t *n, char *why,
    size_t why_len)
{
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	int64_t r;
	int rc;
	if ((rc = eng_tok_init(&tok, m->gguf, why, why_len)))
		return rc;
	if ((rc = eng_chat_init(&chat, m->gguf, tok, why, why_len))) {
		eng_tok_free(tok);
		return rc;
	}
	r = eng_chat_doc_ids(chat, "", 0, ids);
	eng_chat_free(chat);
	eng_tok_free(tok);
	if (r < 0)
		return eng_fail(why, why_len, (int)r, "cannot tokenize the chat template");
	*n = r;
	return 0;
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

/* ------------------------------------------------------------------------ */
/* Ranking                                                                   */

/* qsort has no context argument: the key array and tie rule go through
 * thread-local state (policies may run on several threads later). */
static _Thread_local const float *rank_key;
static _Thread_local const uint32_t *rank_pos;
static _Thread_local int rank_newer_first;

static int
policy_rank_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	float kx = rank_key[x], ky = rank_key[y];
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (rank_pos[x] != rank_pos[y]) {
		int older = rank_pos[x] < rank_pos[y] ? -1 : 1;
		return rank_newer_first ? -older : older;
	}
	return 0;
}

void
eng_policy_rank(const struct eng_evict_head *h, const float *key, int64_t *idx, int64_t n,
    int newer_first)
{
	rank_key = key;
	rank_pos = h->pos;
	rank_newer_first = newer_first;
	qsort(idx, (size_t)n, sizeof(*idx), policy_rank_cmp);
}

static int
policy_idx_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void
eng_policy_sort_idx(int64_t *idx, int64_t n)
{
	qsort(idx, (size_t)n, sizeof(*idx), policy_idx_cmp);
}

void
eng_policy_keep_all(struct eng_evict *e)
{
	int m;
	int64_t i;
	for (m = 0; m < e->n_head_kv; m++) {
		struct eng_evict_head *h = &e->h[m];
		for (i = 0; i < h->n; i++)
			h->keep[i] = i;
		h->n_keep = h->n;
	}
}

/* ------------------------------------------------------------------------ */
/* Ada-KV allocation                                                         */

void
eng_adakv_allocate(const int64_t *n_cand, int H, int64_t b_sel, double alpha,
    const int *rank_head, int64_t n_rank, int64_t *a, int64_t *work, double *frac)
{
	int64_t total = (int64_t)H * b_sel, sum = 0, excess = 0, i, R, *c = work;
	int m, best;

	/* 1. how many of the global top H·b_sel each head owns */
	for (m = 0; m < H; m++)
		c[m] = 0;
	for (i = 0; i < n_rank && i < total; i++)
		c[rank_head[i]]++;
	/* 2-3. mix with the uniform share, integerize exactly */
	for (m = 0; m < H; m++) {
		double x = (1.0 - alpha) * (double)c[m] + alpha * (double)b_sel;
		a[m] = (int64_t)floor(x + 1e-9);
		frac[m] = x - (double)a[m];
		sum += a[m];
	}
	for (R = total - sum; R > 0; R--) {
		best = 0;
		for (m = 1; m < H; m++)
			if (frac[m] > frac[best])
				best = m;
		a[best]++;
		frac[best] = -2.0;
	}
	/* capacity clamp: hand the excess on down the global ranking */
	for (m = 0; m < H; m++) {
		if (a[m] > n_cand[m]) {
			excess += a[m] - n_cand[m];
			a[m] = n_cand[m];
		}
		c[m] = 0; /* now: entries of head m seen in the walk */
	}
	for (i = 0; i < n_rank && excess > 0; i++) {
		m = rank_head[i];
		if (c[m]++ == a[m] && a[m] < n_cand[m]) {
			a[m]++;
			excess--;
		}
	}
}
