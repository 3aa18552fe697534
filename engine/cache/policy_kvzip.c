/*
 * policy_kvzip.c: KVzip, query-agnostic compression by context
 * reconstruction (Kim et al., NeurIPS 2025, arXiv 2505.23416; docs/POLICIES.md
 * and docs/KVZIP.md): options, the reconstruction prompt, pool sizing.
 *
 * The document is read in segments; after each, the model is asked to
 * repeat the segment (teacher-forced) and every cached unit is scored by
 * the largest attention any reconstruction query pays it
 * (engine/run/kvzip_ingest.c); then one selection over all layers and heads
 * cuts the cache to its budget (eng_kvzip_select, over
 * engine/cache/select_scores.c).
 *
 * Options: seg=N (2048) tokens per segment, at most what fits the model's
 * window with the reconstruction; alloc=global|uniform|adakv (global);
 * sinks=N|auto (auto: the chat template's system turn and user header when
 * the document starts with them, else 4); norm=prob|plus (prob; plus
 * weights each probability by ‖W_O v‖/‖h‖, KVzip+); floor=F (0.1) share of
 * the mean per-head budget every head keeps under alloc=global;
 * alpha=A (0.2) Ada-KV's uniform share under alloc=adakv; from=R or
 * from=budgetN names the snapshot a `kvsnap shrink` derived this one from
 * (0: ingested directly; an ingest refuses it); tail=N (0) the document's
 * last N tokens kept like sinks; demote=F (1: off) scales the scores of
 * structural units (kvpress PR #288: a token of no letter or digit that
 * repeats in the document, not glued between two word characters) by F.
 * refit=1 (0) refits every cut head to the full head's attention on the
 * reconstruction's queries (kvzip_refit.c; snapshot format 3).  tail,
 * demote and refit are named in the description only when set, so the
 * profiles of existing snapshots do not change.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kvzip.h"
#include "engine/cache/select.h"

static const char kvzip_first_text[] = "\n\nRepeat the previous context exactly.";
static const char kvzip_pre_text[] =
    "\n\nRepeat the part of the previous context exactly, starting with ";
/* i[1]'s values (enum eng_alloc) and i[3]'s, by index. */
static const char *const allocs[] = { "global", "uniform", "adakv", NULL };
static const char *const norms[] = { "prob", "plus", NULL };

static void
kvzip_prompt_free(struct kvzip_prompt *pr)
{
	if (!pr)
		return;
	free(pr->first);
	free(pr->pre);
	free(pr->post);
	free(pr->tpl);
	free(pr->gram);
	free(pr->cls);
	free(pr);
}

static void
kvzip_destroy(struct eng_policy *p)
{
	kvzip_prompt_free(p->priv);
	p->priv = NULL;
}

static int
kvzip_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	if (!key) {
		p->i[0] = 2048;
		p->i[1] = ENG_ALLOC_GLOBAL;
		p->i[2] = -1;
		p->i[3] = 0;
		p->f[0] = 0.1;
		p->f[1] = 0.2;
		p->f[2] = 0.0;
		p->i[4] = 0;
		p->i[5] = 0;
		p->f[3] = 1.0;
		p->i[6] = 0;
		return 0;
	}
	if (!strcmp(key, "from")) {
		p->f[2] = 0.0;
		p->i[4] = 0;
		if (!strcmp(val, "0"))
			return 0;
		if (!strncmp(val, "budget", 6))
			return eng_policy_parse_int(val + 6, 1, INT32_MAX, &p->i[4]);
		return eng_parse_ratio(val, &p->f[2]);
	}
	if (!strcmp(key, "seg"))
		return eng_policy_parse_int(val, 64, 1 << 20, &p->i[0]);
	if (!strcmp(key, "alloc")) {
		if (eng_policy_parse_name(val, allocs, &p->i[1]))
			return eng_fail(why, why_len, ENG_ERR_ARG,
			    "kvzip: alloc=%s (global, uniform or adakv)", val);
		return 0;
	}
	if (!strcmp(key, "sinks")) {
		if (!strcmp(val, "auto")) {
			p->i[2] = -1;
			return 0;
		}
		return eng_policy_parse_int(val, 0, 1 << 20, &p->i[2]);
	}
	if (!strcmp(key, "norm")) {
		if (eng_policy_parse_name(val, norms, &p->i[3]))
			return eng_fail(why, why_len, ENG_ERR_ARG, "kvzip: norm=%s (prob or plus)", val);
		return 0;
	}
	if (!strcmp(key, "floor"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[0]);
	if (!strcmp(key, "alpha"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[1]);
	if (!strcmp(key, "tail"))
		return eng_policy_parse_int(val, 0, 1 << 20, &p->i[5]);
	if (!strcmp(key, "demote"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[3]);
	if (!strcmp(key, "refit"))
		return eng_policy_parse_int(val, 0, 1, &p->i[6]);
	return eng_fail(why, why_len, ENG_ERR_ARG, "policy kvzip has no option '%s' (seg, alloc, "
	    "sinks, norm, floor, alpha, tail, demote, refit, from)", key);
}

static int
kvzip_check(struct eng_policy *p, char *why, size_t why_len)
{
	if (p->i[2] >= 0 && p->ratio <= 0.0 && p->i[2] >= p->budget)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "kvzip: sinks (%lld) must be below the budget (%lld)", (long long)p->i[2],
		    (long long)p->budget);
	return 0;
}

static size_t
kvzip_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	char sinks[24];
	int n;
	if (p->i[2] < 0)
		snprintf(sinks, sizeof(sinks), "auto");
	else
		snprintf(sinks, sizeof(sinks), "%lld", (long long)p->i[2]);
	n = snprintf(buf, cap, ",seg=%lld,alloc=%s,sinks=%s,norm=%s,floor=%g,alpha=%g",
	    (long long)p->i[0], allocs[p->i[1]], sinks, norms[p->i[3]], p->f[0], p->f[1]);
	if (n > 0 && p->i[5] > 0) { /* named only when set: older profiles stay as they were */
		size_t u = (size_t)n;
		int k = snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",tail=%lld",
		    (long long)p->i[5]);
		n += k > 0 ? k : 0;
	}
	if (n > 0 && p->f[3] < 1.0) {
		size_t u = (size_t)n;
		int k = snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",demote=%g", p->f[3]);
		n += k > 0 ? k : 0;
	}
	if (n > 0 && p->i[6]) {
		size_t u = (size_t)n;
		int k = snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",refit=1");
		n += k > 0 ? k : 0;
	}
	if (n > 0 && (p->f[2] > 0.0 || p->i[4] > 0)) { /* a shrunk snapshot's origin */
		size_t u = (size_t)n;
		int k = p->f[2] > 0.0 ?
		    snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",from=%g", p->f[2]) :
		    snprintf(u < cap ? buf + u : NULL, u < cap ? cap - u : 0, ",from=budget%lld",
			(long long)p->i[4]);
		n += k > 0 ? k : 0;
	}
	return n > 0 ? (size_t)n : 0;
}

/* Append the ids of text to a malloc'd array. */
static int
kvzip_encode(const struct eng_tok *t, const char *text, int special, int32_t **ids,
    int64_t *n)
{
	size_t len = strlen(text);
	int64_t cap = (int64_t)len + 8, r;
	*ids = malloc((size_t)cap * sizeof(int32_t));
	if (!*ids)
		return ENG_ERR_NOMEM;
	r = eng_tok_encode(t, text, len, special, *ids, cap);
	if (r < 0)
		return (int)r;
	if (r > cap || r > KVZIP_PROMPT_MAX)
		return ENG_ERR_TOKENIZER;
	*n = r;
	return 0;
}

/* The end of the user's turn and the assistant header, in the model's chat
 * template: what follows the reconstruction request. */
static int
kvzip_turn_end(const struct eng_chat *chat, struct kvzip_prompt *pr)
{
	int64_t n = eng_chat_turn_end_ids(chat, &pr->post);
	if (n < 0)
		return (int)n;
	if (n > KVZIP_PROMPT_MAX)
		return ENG_ERR_TOKENIZER;
	pr->n_post = n;
	return 0;
}

/* A byte of a word: ASCII letter or digit, or any byte of a multi-byte
 * UTF-8 character (letters of other scripts count as content). */
static int
kvzip_word_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    c >= 0x80;
}

/* demote=F: classify every vocabulary id by its text (KVZIP_CLS_*). */
static int
kvzip_classify(const struct eng_tok *t, struct kvzip_prompt *pr)
{
	int32_t n = eng_tok_n_vocab(t), id;
	if (n <= 0 || !(pr->cls = calloc((size_t)n, 1)))
		return ENG_ERR_NOMEM;
	pr->n_cls = n;
	for (id = 0; id < n; id++) {
		size_t len = 0, i;
		const unsigned char *s = (const unsigned char *)eng_tok_piece(t, id, 0, &len);
		int word = 0;
		if (!s || !len)
			continue; /* a special token or an empty piece: never demoted */
		for (i = 0; i < len && !word; i++)
			word = kvzip_word_byte(s[i]);
		pr->cls[id] = (uint8_t)((word ? 0 : KVZIP_CLS_STRUCT) |
		    (kvzip_word_byte(s[0]) ? KVZIP_CLS_HEAD : 0) |
		    (kvzip_word_byte(s[len - 1]) ? KVZIP_CLS_TAIL : 0));
	}
	return 0;
}

/* Tokenize the reconstruction prompt with the model's own tokenizer and
 * chat template. */
static int
kvzip_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len)
{
	struct kvzip_prompt *pr;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	int32_t *a = NULL, *b = NULL;
	int64_t na = 0, nb = 0;
	int rc;

	if (p->priv)
		return 0;
	if ((rc = eng_tok_init(&tok, m->gguf, why, why_len)))
		return rc;
	if ((rc = eng_chat_init(&chat, m->gguf, tok, why, why_len))) {
		eng_tok_free(tok);
		return rc;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		eng_chat_free(chat);
		eng_tok_free(tok);
		return ENG_ERR_NOMEM;
	}
	rc = kvzip_encode(tok, kvzip_pre_text, 0, &pr->pre, &pr->n_pre);
	if (!rc)
		rc = kvzip_turn_end(chat, pr);
	if (!rc)
		rc = kvzip_encode(tok, kvzip_first_text, 0, &a, &na);
	if (!rc && !(pr->first = malloc((size_t)(na + pr->n_post) * sizeof(int32_t))))
		rc = ENG_ERR_NOMEM;
	if (!rc) {
		memcpy(pr->first, a, (size_t)na * sizeof(int32_t));
		memcpy(pr->first + na, pr->post, (size_t)pr->n_post * sizeof(int32_t));
		pr->n_first = na + pr->n_post;
		nb = eng_chat_doc_ids(chat, "", 0, &b);
		if (nb < 0)
			rc = (int)nb;
		else {
			pr->tpl = b;
			pr->n_tpl = nb;
		}
	}
	free(a);
	if (!rc && p->f[3] < 1.0)
		rc = kvzip_classify(tok, pr);
	eng_chat_free(chat);
	eng_tok_free(tok);
	if (rc) {
		kvzip_prompt_free(pr);
		return eng_fail(why, why_len, rc, "kvzip: cannot tokenize the reconstruction prompt");
	}
	p->priv = pr;
	return 0;
}

int
eng_kvzip_select(const struct eng_policy *p, struct eng_kv *kv, int64_t n_sink, int64_t target,
    int64_t cap_layer,
    int (*before_compact)(void *, struct eng_kv *, int, const int64_t *const *, const int64_t *),
    void *arg)
{
	struct eng_select sel = { (enum eng_alloc)p->i[1], p->f[0], p->f[1], n_sink, UINT32_MAX,
		cap_layer, before_compact, arg };
	return eng_select_scores(kv, &sel, target);
}

int64_t
eng_kvzip_keep(const struct eng_policy *p, int64_t seen, int64_t n_sink)
{
	int64_t t;
	if (p->ratio <= 0.0)
		return p->budget < 1 ? 1 : p->budget;
	/* the ratio is of the document: the chat template's system turn and user
	 * header (the sinks) are kept on top, as KVzip's reference prunes only
	 * the context range [start_idx, end_idx) and keeps the system prompt
	 * (attention/kvcache.py); counted inside, they took most of a short
	 * document's budget (a 166-token page at 1/4 kept an eighth of its text) */
	if (n_sink > seen)
		n_sink = seen;
	t = (int64_t)ceil(p->ratio * (double)(seen - n_sink) - 1e-9) + n_sink;
	return t < 1 ? 1 : t;
}

int
eng_kvzip_shrink(struct eng_policy *p, struct eng_kv *kv, int64_t n_doc, char *why,
    size_t why_len)
{
	int64_t n_sink = 0, total = 0, rc;
	const struct eng_kv_layer *L0 = &kv->layer[0];
	int l;

	if (p->ops != &eng_policy_kvzip)
		return eng_fail(why, why_len, ENG_ERR_ARG, "shrink selects by kvzip's scores: "
		    "policy %s has none", p->ops->name);
	if ((rc = eng_policy_resolve(p, n_doc, why, why_len)))
		return (int)rc;
	/* the sinks are the leading units scored +inf (engine/run/kvzip_ingest.c) */
	while (n_sink < L0->len[0] && isinf(L0->score[L0->off[0] + n_sink]) &&
	    L0->score[L0->off[0] + n_sink] > 0)
		n_sink++;
	if (p->ratio > 0.0)
		p->budget = eng_kvzip_keep(p, n_doc, n_sink);
	for (l = 0; l < kv->n_layer; l++)
		total += eng_kv_layer_units(kv, l);
	if (p->budget * kv->n_layer * kv->n_head_kv >= total)
		return eng_fail(why, why_len, ENG_ERR_ARG, "the snapshot keeps %lld units, no more "
		    "than %lld per head at this budget: nothing to shrink", (long long)total,
		    (long long)p->budget);
	return eng_kvzip_select(p, kv, n_sink, p->budget, INT64_MAX / 4, NULL, NULL);
}

int64_t
eng_kvzip_rows(const struct eng_policy *p, int64_t n_doc, int64_t chunk, int64_t n_extra)
{
	const struct kvzip_prompt *pr = p->priv;
	/* the most sinks a document can have: the template's, or sinks=N, or 4;
	 * before the bind knows the template, a bound above any chat template's
	 * system turn (this only sizes the pool) */
	int64_t sinks = !pr ? 256 : pr->n_tpl > 4 ? pr->n_tpl : 4;
	int64_t target;
	if (p->i[2] > sinks)
		sinks = p->i[2];
	target = eng_kvzip_keep(p, n_doc, sinks < n_doc ? sinks : n_doc);
	int64_t seg = p->i[0] < n_doc ? p->i[0] : n_doc;
	/* a segment (a short remainder may join it) and its reconstruction */
	int64_t room = 2 * (seg + KVZIP_MIN_SEG) + KVZIP_PROMPT_MAX + KVZIP_ANCHOR;
	(void)chunk;
	if (target >= n_doc)
		return n_doc + (room > n_extra ? room : n_extra) + 1;
	if (room < n_extra)
		room = n_extra;
	return ENG_SELECT_LAYER_CAP * target + room + 1;
}

const struct eng_policy_ops eng_policy_kvzip = {
	.name = "kvzip",
	.set = kvzip_set,
	.check = kvzip_check,
	.describe = kvzip_describe,
	.stat_from = eng_policy_no_stat,
	.window = eng_policy_no_window,
	/* not reached: kvzip's own ingest selects (eng_kvzip_select) */
	.select = eng_policy_select_all,
	.destroy = kvzip_destroy,
	.bind = kvzip_bind,
	.rows_per_head = eng_kvzip_rows,
};
