/*
 * library.c: a question answered from several documents' snapshots, with
 * no re-read of any text (issue 29, items 3-4), two ways:
 *
 *  side:  the snapshots loaded and placed side by side in one cache
 *         (eng_kv_concat: positions re-laid one after another, keys
 *         re-rotated), the question prefilled once and answered once;
 *  parts: each snapshot answered alone, and the answer the model is
 *         surest of kept: the highest mean log-probability of its own
 *         tokens (its end of turn included);
 *  pick:  each snapshot scores the question alone (the mean log-probability
 *         of the question's tokens given the document, one prefill each),
 *         and only the best one answers.
 *
 * Either way the answer is decoded in full before a token is handed on:
 * its mean log-probability is the confidence, and below the threshold the
 * reply says the library does not contain the answer, naming the
 * documents consulted (abstention), instead of the answer.  The sources
 * are reported per document: consulted or not (no snapshot of this
 * profile, the window full), and in parts mode each one's score.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

const char *
svc_lib_mode_name(enum svc_lib_mode mode)
{
	return mode == SVC_LIB_PARTS ? "parts" : mode == SVC_LIB_PICK ? "pick" : "side";
}

int
svc_lib_mode_parse(const char *s, enum svc_lib_mode *out)
{
	if (!strcmp(s, "side"))
		*out = SVC_LIB_SIDE;
	else if (!strcmp(s, "parts"))
		*out = SVC_LIB_PARTS;
	else if (!strcmp(s, "pick"))
		*out = SVC_LIB_PICK;
	else
		return -1;
	return 0;
}

/* One answer decoded through svc_emit_answer (the one answer step),
 * judged (r->judge_tokens first tokens, then streamed) or kept whole
 * (keep: answered part by part, the best handed on later).  e is set up
 * here; the caller frees it (svc_emit_judge_free).  q[0..n_q) is
 * prefilled on kv unless first holds the logits after it. */
static int
lib_answer(struct svc *v, struct svc_session *ss, struct eng_kv *kv, const int32_t *q,
    int64_t n_q, const float *first, const struct svc_lib_req *r, const struct svc_hooks *hk,
    double t0, int keep, struct svc_emit *e, struct svc_answer *sa, struct svc_status *st)
{
	int64_t k = r->judge_tokens > 0 ? r->judge_tokens : SVC_LIB_JUDGE_DEFAULT;

	memset(sa, 0, sizeof(*sa));
	svc_emit_init(e, v, hk, r->whole_utf8, r->stop, r->n_stop);
	e->t0 = t0;
	if (svc_emit_judge(e, k, keep, r->min_conf, first, r->max_tokens)) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_GENERATE, ENG_ERR_NOMEM);
	}
	return svc_emit_answer(e, ss, kv, q, n_q, r->max_tokens, r->temperature, r->top_p, r->seed,
	    sa, st);
}

static double
lib_mean(double sum, int64_t n)
{
	return n ? sum / (double)n : -HUGE_VAL;
}

/* Prefill the question over kv with every position's logits: the mean
 * log-probability of the question's tokens after its first (each given
 * the document and the tokens before it) into *score, the logits after
 * its last into last (n_vocab). */
static int
lib_question_score(struct svc *v, struct svc_session *ss, struct eng_kv *kv, const int32_t *q,
    int64_t n_q, double *score, float *last)
{
	int32_t n_vocab = eng_tok_n_vocab(v->tok);
	uint8_t *want = malloc((size_t)n_q);
	float *lg = malloc((size_t)n_q * (size_t)n_vocab * sizeof(float));
	double sum = 0.0;
	int64_t i;
	int rc = ENG_ERR_NOMEM;

	if (want && lg) {
		memset(want, 1, (size_t)n_q);
		if (!(rc = eng_forward(ss->ctx, kv, q, n_q, want, lg))) {
			for (i = 0; i + 1 < n_q; i++)
				sum += eng_logprob(lg + i * n_vocab, n_vocab, q[i + 1]);
			*score = n_q > 1 ? sum / (double)(n_q - 1) : 0.0;
			memcpy(last, lg + (n_q - 1) * n_vocab, (size_t)n_vocab * sizeof(float));
		}
	}
	free(want);
	free(lg);
	return rc;
}

/* The label a source is named by: its name, else its file name, else the
 * first 12 digits of its doc_id. */
static void
lib_label(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], char *out, size_t cap)
{
	struct store_doc d;
	char why[256], hex[2 * SNAP_ID_BYTES + 1];
	const char *f;

	if (!store_info(v->s, doc, &d, why, sizeof(why))) {
		if (d.name[0]) {
			snprintf(out, cap, "%s", d.name);
			return;
		}
		if ((f = svc_doc_file_name(&d))[0]) {
			snprintf(out, cap, "%s", f);
			return;
		}
	}
	store_hex(doc, SNAP_ID_BYTES, hex);
	snprintf(out, cap, "%.12s", hex);
}

/* The abstention's text: the library does not hold it, and what was
 * consulted. */
static void
lib_abstain_text(const struct svc_lib_answer *out, char *buf, size_t cap)
{
	size_t i, at;
	int k = 0;

	at = (size_t)snprintf(buf, cap, "The library does not contain the answer to this "
	    "question (consulted: ");
	for (i = 0; i < out->n_src && at < cap; i++)
		if (out->src[i].used)
			at += (size_t)snprintf(buf + at, cap - at, "%s%s", k++ ? ", " : "",
			    out->src[i].label);
	if (!k && at < cap)
		at += (size_t)snprintf(buf + at, cap - at, "no document");
	if (at < cap)
		snprintf(buf + at, cap - at, ").");
}

/* A new source for doc (its label; not consulted until said so), or NULL
 * when SVC_LIB_MAX are there. */
static struct svc_lib_source *
lib_src_new(struct svc *v, struct svc_lib_answer *out, const uint8_t *doc, unsigned part,
    unsigned n_parts)
{
	struct svc_lib_source *s;
	size_t k;

	if (out->n_src == SVC_LIB_MAX)
		return NULL;
	s = &out->src[out->n_src++];
	memset(s, 0, sizeof(*s));
	memcpy(s->doc_id, doc, SNAP_ID_BYTES);
	s->part = part;
	s->n_parts = n_parts;
	s->score = NAN;
	s->bm25 = NAN;
	lib_label(v, doc, s->label, sizeof(s->label));
	if (n_parts && (k = strlen(s->label)) < sizeof(s->label))
		snprintf(s->label + k, sizeof(s->label) - k, " (part %u/%u)", part + 1, n_parts);
	return s;
}

/* Is (doc, part) a source already (a whole document's entry covers its
 * parts)? */
static int
lib_src_seen(const struct svc_lib_answer *out, const uint8_t *doc, unsigned part)
{
	size_t j;
	for (j = 0; j < out->n_src; j++)
		if (!memcmp(out->src[j].doc_id, doc, SNAP_ID_BYTES) &&
		    (part == SVC_LIB_PART_ALL || out->src[j].part == part))
			return 1;
	return 0;
}

/* A source consulted: its snapshot and tokens, and, side by side, room in
 * the window (else why not). */
static void
lib_src_use(struct svc_lib_source *s, struct svc_picked *p, const uint8_t *profile_id,
    int64_t tokens, const struct svc_lib_req *r, int64_t window, int64_t n_pre,
    int64_t n_extra, int64_t *placed, int *n)
{
	memcpy(p->profile_id, profile_id, SNAP_ID_BYTES);
	s->tokens = tokens;
	if (r->mode == SVC_LIB_SIDE) {
		/* every part after the first without its template prefix */
		int64_t add = *n ? s->tokens - n_pre : s->tokens;
		if (*placed + add + n_extra > window) {
			snprintf(s->why, sizeof(s->why), "the model's window (%lld tokens) is "
			    "full with the documents before it", (long long)window);
			return;
		}
		*placed += add;
	}
	s->used = 1;
	(*n)++;
}

/* Pick each document's snapshot (the shared tier's on a local miss, as
 * svc_query), a document in parts as its parts; mark what cannot be
 * consulted.  pk: one per source (SVC_LIB_MAX).  The number usable. */
static int
lib_pick(struct svc *v, const struct svc_lib_req *r, int64_t n_pre, int64_t n_extra,
    struct svc_lib_answer *out, struct svc_picked *pk, struct svc_status *st)
{
	int64_t window = v->m->hp.n_ctx_train, placed = 0;
	struct svc_part_info *pl;
	struct svc_picked dp;
	struct svc_lib_source *s;
	unsigned want, np, p;
	size_t i;
	int n = 0, rc;

	for (i = 0; i < r->n_docs; i++) {
		const uint8_t *doc = r->docs[i];
		want = r->parts ? r->parts[i] : SVC_LIB_PART_ALL;
		if (lib_src_seen(out, doc, want)) /* named twice: once */
			continue;
		if (svc_pick(v, doc, &dp, st) < 0)
			return -1;
		if (!dp.found && v->tier && !r->local_only) {
			if ((rc = tier_fetch(v, doc, st)) < 0)
				return -1;
			if (rc == 1 && svc_pick(v, doc, &dp, st) < 0)
				return -1;
		}
		if (!dp.found || !dp.n_parts) {
			if (!(s = lib_src_new(v, out, doc, 0, 0)))
				break;
			if (!dp.found)
				snprintf(s->why, sizeof(s->why), "no snapshot of this profile%s",
				    dp.parts_of ? " (only some of its parts: ingest it again)" :
				    dp.n_other ? " (stored under another: re-ingest)" : "");
			else if (want != SVC_LIB_PART_ALL && want != 0)
				snprintf(s->why, sizeof(s->why), "no part %u: stored whole now", want + 1);
			else
				lib_src_use(s, &pk[out->n_src - 1], dp.profile_id, dp.fig.tokens, r, window,
				    n_pre, n_extra, &placed, &n);
			continue;
		}
		if (svc_parts_list(v, doc, &pl, &np, st) < 0)
			return -1;
		for (p = 0; p < np; p++) {
			if (want != SVC_LIB_PART_ALL && p != want)
				continue;
			if (lib_src_seen(out, doc, p))
				continue;
			if (!(s = lib_src_new(v, out, doc, p, np)))
				break;
			lib_src_use(s, &pk[out->n_src - 1], pl[p].profile_id, pl[p].fig.tokens, r,
			    window, n_pre, n_extra, &placed, &n);
		}
		if (want != SVC_LIB_PART_ALL && want >= np && (s = lib_src_new(v, out, doc, want, np)))
			snprintf(s->why, sizeof(s->why), "no part %u: stored in %u parts now", want + 1,
			    np);
		free(pl);
	}
	return n;
}

int
svc_library(struct svc *v, struct svc_session *ss, const struct svc_lib_req *r,
    const struct svc_hooks *hk, struct svc_lib_answer *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	struct svc_picked *pk = NULL;
	struct eng_kv **parts = NULL, *kv = NULL, *pick_kv = NULL;
	float *pick_logits = NULL, *cur_logits = NULL;
	double pick_score = -HUGE_VAL;
	struct snap_header h;
	struct svc_emit best, cur;
	struct svc_answer sa;
	uint32_t *skip = NULL;
	int32_t *qids = NULL, *pids = NULL;
	int64_t n_q, n_pre, n_extra;
	double t0 = eng_now();
	char why[8], text[4096];
	size_t i;
	int n_used, k, rc, ret = -1;

	if (!hk)
		hk = &none;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&best, 0, sizeof(best));
	memset(&cur, 0, sizeof(cur));
	out->chosen = -1;
	out->confidence = NAN;
	if (r->n_docs == 0 && r->max_tokens >= 1) { /* retrieval found nothing */
		snprintf(text, sizeof(text), "The library does not contain the answer to this "
		    "question (no document matches it).");
		out->abstained = 1;
		out->ttft = eng_now() - t0;
		if (hk->token)
			hk->token(hk->arg, -1, text, strlen(text));
		out->tokens = 1;
		out->seconds = out->ttft;
		return 0;
	}
	if (r->n_docs < 1 || r->n_docs > SVC_LIB_MAX || r->max_tokens < 1) {
		snprintf(st->why, sizeof(st->why), "a library question takes 1 to %d documents",
		    SVC_LIB_MAX);
		return svc_fail(st, SVC_AT_TOKENIZE, ENG_ERR_ARG);
	}
	if ((n_q = eng_chat_question_ids(v->chat, r->question, r->question_len, &qids)) < 0 ||
	    (n_pre = eng_chat_doc_ids(v->chat, "", 0, &pids)) < 0) {
		rc = (int)(n_q < 0 ? n_q : n_pre);
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		svc_fail(st, SVC_AT_TOKENIZE, rc);
		goto out;
	}
	out->prompt_tokens = n_q;
	n_extra = n_q + r->max_tokens;
	pk = calloc(SVC_LIB_MAX, sizeof(*pk)); /* one per source: a document in parts has many */
	parts = calloc(SVC_LIB_MAX, sizeof(*parts));
	skip = calloc(SVC_LIB_MAX, sizeof(*skip));
	if (!pk || !parts || !skip) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		svc_fail(st, SVC_AT_LOAD, SNAPIO_ERR_NOMEM);
		goto out;
	}
	if ((n_used = lib_pick(v, r, n_pre, n_extra, out, pk, st)) < 0)
		goto out;
	if (n_used == 0) {
		snprintf(st->why, sizeof(st->why), "none of the %zu documents has a snapshot this "
		    "profile answers from", out->n_src);
		svc_fail(st, SVC_AT_PICK, 0);
		goto out;
	}
	/* load: side keeps every part for the concatenation, parts answers
	 * each as it comes */
	for (i = 0, k = 0; i < out->n_src; i++) {
		struct svc_lib_source *s = &out->src[i];
		if (!s->used)
			continue;
		rc = snap_load_ex(v->s, s->doc_id, pk[i].profile_id, v->m,
		    r->mode == SVC_LIB_SIDE ? 0 : n_extra, eng_ctx_kern(ss->ctx), &parts[k], &h, NULL,
		    st->why, sizeof(st->why));
		snap_header_free(&h);
		if (rc) {
			svc_fail(st, SVC_AT_LOAD, rc);
			goto out;
		}
		if (r->mode == SVC_LIB_SIDE) {
			skip[k++] = (uint32_t)n_pre;
			continue;
		}
		if (r->mode == SVC_LIB_PICK) {
			double sc;
			int32_t nv = eng_tok_n_vocab(v->tok);
			if ((!cur_logits && !(cur_logits = malloc((size_t)nv * sizeof(float)))) ||
			    (!pick_logits && !(pick_logits = malloc((size_t)nv * sizeof(float))))) {
				snprintf(st->why, sizeof(st->why), "out of memory");
				svc_fail(st, SVC_AT_GENERATE, ENG_ERR_NOMEM);
				goto out;
			}
			if ((rc = lib_question_score(v, ss, parts[k], qids, n_q, &sc, cur_logits))) {
				snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
				svc_fail(st, SVC_AT_GENERATE, rc);
				goto out;
			}
			s->score = sc;
			if (out->chosen < 0 || sc > pick_score) { /* keep its cache, questioned */
				float *t = pick_logits;
				eng_kv_free(pick_kv);
				pick_kv = parts[k];
				pick_logits = cur_logits;
				cur_logits = t;
				pick_score = sc;
				out->chosen = (int)i;
			} else
				eng_kv_free(parts[k]);
			parts[k] = NULL;
			if (svc_cancelled(hk))
				break;
			continue;
		}
		rc = lib_answer(v, ss, parts[k], qids, n_q, NULL, r, hk, t0, 1, &cur, &sa, st);
		eng_kv_free(parts[k]);
		parts[k] = NULL;
		if (rc)
			goto out;
		s->score = lib_mean(cur.j.sum, cur.j.n_lp);
		if (out->chosen < 0 || s->score > lib_mean(best.j.sum, best.j.n_lp)) {
			svc_emit_judge_free(&best);
			best = cur;
			out->chosen = (int)i;
		} else
			svc_emit_judge_free(&cur);
		memset(&cur, 0, sizeof(cur));
		if (svc_cancelled(hk))
			break;
	}
	memset(&sa, 0, sizeof(sa));
	if (r->mode == SVC_LIB_SIDE) {
		if ((rc = eng_kv_concat(&kv, v->m, parts, skip, k, n_extra))) {
			snprintf(st->why, sizeof(st->why), "cannot place the snapshots side by side: %s "
			    "(the part-by-part mode answers from any)", eng_strerror(rc));
			svc_fail(st, SVC_AT_LOAD, rc == ENG_ERR_NOMEM ? SNAPIO_ERR_NOMEM :
			    SNAPIO_ERR_ENGINE);
			goto out;
		}
		for (i = 0; i < (size_t)k; i++) {
			eng_kv_free(parts[i]);
			parts[i] = NULL;
		}
		if (lib_answer(v, ss, kv, qids, n_q, NULL, r, hk, t0, 0, &best, &sa, st))
			goto out;
	} else if (r->mode == SVC_LIB_PICK && pick_kv && !svc_cancelled(hk) &&
	    lib_answer(v, ss, pick_kv, NULL, 0, pick_logits, r, hk, t0, 0, &best, &sa, st))
		goto out;
	/* side, pick: judged on the first tokens and streamed (or stopped);
	 * parts: the best answer kept whole, judged on its whole mean here */
	out->confidence = lib_mean(best.j.sum, best.j.n_lp);
	out->judged_confidence = best.j.judged ? lib_mean(best.j.sum_held, best.j.n_lp_held) :
	    out->confidence;
	out->judged_tokens = best.j.judged ? best.j.n_lp_held : best.j.n_lp;
	out->ttft_model = best.j.t_first > 0 ? best.j.t_first - t0 : 0;
	out->generated = r->mode == SVC_LIB_PARTS ? best.j.n_held : sa.generated;
	out->abstained = r->mode == SVC_LIB_PARTS ? !(out->confidence >= r->min_conf) :
	    best.j.abstain;
	if (svc_cancelled(hk)) {
		out->cancelled = 1;
		out->stop = SVC_STOP_CANCELLED;
	} else if (out->abstained) {
		lib_abstain_text(out, text, sizeof(text));
		out->ttft = eng_now() - t0;
		if (hk->token)
			hk->token(hk->arg, -1, text, strlen(text));
		out->tokens = 1;
		out->stop = SVC_STOP_EOS;
	} else if (r->mode == SVC_LIB_PARTS) { /* the chosen answer handed on now */
		struct svc_emit em;
		int64_t j;
		svc_emit_init(&em, v, hk, r->whole_utf8, r->stop, r->n_stop);
		em.t0 = t0;
		for (j = 0; j < best.j.n_held; j++)
			if (svc_emit_cb(&em, best.j.held[j]))
				break;
		svc_emit_flush(&em);
		out->tokens = em.n;
		out->ttft = em.n ? em.ttft : eng_now() - t0;
		out->stop = em.stop.matched >= 0 ? SVC_STOP_SEQUENCE :
		    best.j.ended ? SVC_STOP_EOS : SVC_STOP_LENGTH;
		out->stop_index = em.stop.matched;
	} else {
		out->tokens = sa.tokens;
		out->ttft = sa.tokens ? sa.ttft : eng_now() - t0;
		out->stop = sa.stop;
		out->stop_index = sa.stop_index;
	}
	if (!out->cancelled) /* every consulted snapshot was used */
		for (i = 0; i < out->n_src; i++)
			if (out->src[i].used)
				store_touch(v->s, out->src[i].doc_id, pk[i].profile_id, why, sizeof(why));
	out->seconds = eng_now() - t0;
	ret = 0;
out:
	if (parts)
		for (i = 0; i < SVC_LIB_MAX; i++)
			eng_kv_free(parts[i]);
	eng_kv_free(kv);
	eng_kv_free(pick_kv);
	free(pick_logits);
	free(cur_logits);
	svc_emit_judge_free(&best);
	svc_emit_judge_free(&cur);
	free(parts);
	free(skip);
	free(pk);
	free(qids);
	free(pids);
	return ret;
}

/* Every part found whose document is not a source yet: one, not
 * consulted, with why (it does not name the question's rare names). */
static void
lib_src_ungrounded(struct svc *v, struct svc_lib_answer *out, const struct svc_hit *hits,
    unsigned n, const int *grounded, const char *names)
{
	struct svc_lib_source *s;
	struct svc_part_info *pl;
	struct svc_status st;
	unsigned i, np;

	for (i = 0; i < n; i++) {
		if (grounded[i] || lib_src_seen(out, hits[i].doc_id, hits[i].part))
			continue;
		if (svc_parts_list(v, hits[i].doc_id, &pl, &np, &st) < 0)
			np = 0; /* labelled without its part count */
		else
			free(pl);
		if (!(s = lib_src_new(v, out, hits[i].doc_id, hits[i].part, np)))
			break;
		s->bm25 = hits[i].score;
		snprintf(s->why, sizeof(s->why), "does not name %s", names);
	}
}

int
svc_library_search(struct svc *v, struct svc_session *ss, const struct svc_who *w,
    const struct svc_lib_req *r, unsigned k, const struct svc_hooks *hk,
    struct svc_lib_answer *out, struct svc_status *st)
{
	static const struct svc_hooks none;
	struct svc_hit hits[SVC_LIB_MAX];
	uint8_t docs[SVC_LIB_MAX][SNAP_ID_BYTES];
	unsigned parts[SVC_LIB_MAX];
	int grounded[SVC_LIB_MAX];
	struct svc_lib_req q = *r;
	char *question, names[160], text[4096];
	unsigned n = 0, i, j, m = 0;
	double t0 = eng_now();
	int ret, n_rare;

	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	if (!hk)
		hk = &none;
	if (k < 1 || k > SVC_LIB_MAX)
		k = SVC_LIB_SEARCH_K;
	/* the question as text: svc_search takes a C string */
	if (!(question = malloc(r->question_len + 1))) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_LOOKUP, STORE_ERR_NOMEM);
	}
	memcpy(question, r->question, r->question_len);
	question[r->question_len] = 0;
	ret = svc_search(v, w, question, NULL, k, hits, &n, st->why, sizeof(st->why));
	n_rare = ret < 0 ? 0 : svc_ground(v, question, hits, n, grounded, names, sizeof(names),
	    st->why, sizeof(st->why));
	free(question);
	if (ret < 0 || n_rare < 0)
		return svc_fail(st, SVC_AT_SEARCH, 0);
	for (i = 0; i < n && m < SVC_LIB_MAX; i++) { /* each grounded part found: a source */
		if (!grounded[i])
			continue;
		for (j = 0; j < m; j++)
			if (!memcmp(docs[j], hits[i].doc_id, SNAP_ID_BYTES) && parts[j] == hits[i].part)
				break;
		if (j == m) {
			memcpy(docs[m], hits[i].doc_id, SNAP_ID_BYTES);
			parts[m++] = hits[i].part;
		}
	}
	if (n && !m) { /* found, but none names the question's subject: no model asked */
		size_t at;
		out->chosen = -1;
		out->confidence = NAN;
		out->judged_confidence = NAN;
		out->abstained = 1;
		lib_src_ungrounded(v, out, hits, n, grounded, names);
		at = (size_t)snprintf(text, sizeof(text), "The library does not contain the answer "
		    "to this question (consulted: ");
		for (i = 0; i < out->n_src && at < sizeof(text); i++)
			at += (size_t)snprintf(text + at, sizeof(text) - at, "%s%s", i ? ", " : "",
			    out->src[i].label);
		if (at < sizeof(text))
			snprintf(text + at, sizeof(text) - at, "; none names %s).", names);
		for (i = 0; i < out->n_src; i++)
			out->src[i].used = 0;
		out->ttft = eng_now() - t0;
		if (hk->token)
			hk->token(hk->arg, -1, text, strlen(text));
		out->tokens = 1;
		out->stop = SVC_STOP_EOS;
		out->seconds = eng_now() - t0;
		return 0;
	}
	q.docs = (const uint8_t (*)[SNAP_ID_BYTES])docs;
	q.n_docs = m;
	q.parts = parts;
	ret = svc_library(v, ss, &q, hk, out, st);
	if (!ret && n_rare)
		lib_src_ungrounded(v, out, hits, n, grounded, names);
	for (i = 0; !ret && i < out->n_src; i++) /* each source's best retrieval score */
		for (j = 0; j < n; j++)
			if (!memcmp(out->src[i].doc_id, hits[j].doc_id, SNAP_ID_BYTES) &&
			    out->src[i].part == hits[j].part) {
				out->src[i].bm25 = hits[j].score;
				break;
			}
	return ret;
}

int
svc_library_doc(struct svc *v, struct svc_session *ss, const struct svc_lib_req *r,
    const struct svc_hooks *hk, struct svc_lib_answer *out, struct svc_status *st)
{
	struct svc_hit hits[SVC_LIB_MAX];
	uint8_t docs[SVC_LIB_MAX][SNAP_ID_BYTES];
	unsigned parts[SVC_LIB_MAX], i, j, n = 0, m = 0, np = 0;
	struct svc_part_info *pl = NULL;
	struct svc_doc_filter f;
	struct svc_lib_req q = *r;
	char *question, why[256];

	memset(out, 0, sizeof(*out));
	if (r->n_docs != 1)
		return svc_library(v, ss, r, hk, out, st);
	if (svc_parts_list(v, r->docs[0], &pl, &np, st) < 0)
		return -1;
	free(pl);
	if (np <= SVC_LIB_MAX) /* every part */
		return svc_library(v, ss, r, hk, out, st);
	/* the parts the index ranks best for the question, then the first ones */
	f.ids = r->docs;
	f.n = 1;
	if ((question = malloc(r->question_len + 1))) {
		memcpy(question, r->question, r->question_len);
		question[r->question_len] = 0;
		if (svc_search(v, NULL, question, &f, SVC_LIB_MAX, hits, &n, why, sizeof(why)))
			n = 0; /* no index: the first parts */
		free(question);
	}
	for (i = 0; i < n; i++)
		if (hits[i].part < np)
			parts[m++] = hits[i].part;
	for (i = 0; i < np && m < SVC_LIB_MAX; i++) {
		for (j = 0; j < m && parts[j] != i; j++)
			;
		if (j == m)
			parts[m++] = i;
	}
	for (i = 0; i < m; i++)
		memcpy(docs[i], r->docs[0], SNAP_ID_BYTES);
	q.docs = (const uint8_t (*)[SNAP_ID_BYTES])docs;
	q.n_docs = m;
	q.parts = parts;
	return svc_library(v, ss, &q, hk, out, st);
}
