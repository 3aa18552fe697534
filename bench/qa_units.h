/*
 * qa_units.h: which of a document's units a compressed cache keeps, by kind
 * (issue 28: what a cut at 1/8 loses).  Included by bench_qa.c only.
 *
 * Every position of a document is put in one kind: the chat template's
 * prefix (what eng_chat_doc_ids puts before the text), the answer of a fact
 * question (the tokens of the expected string inside the fact's sentence),
 * the rest of that sentence, the document's last QU_TAIL tokens, a
 * structural token (its text holds no letter or digit: punctuation,
 * spaces, newlines, symbols), or the rest.  A cache's share of a kind is
 * the units it holds at those positions over (positions × layers × KV
 * heads).  A fact's sentence is the one around an occurrence of an
 * expected string that shares the most words (4 letters or more) with the
 * question (the inserted sentence repeats its question's words).
 */
#ifndef KVSNAP_BENCH_QA_UNITS_H
#define KVSNAP_BENCH_QA_UNITS_H

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/engine.h"

#define QU_TAIL 16
enum qu_kind { QU_TPL, QU_ANSWER, QU_FACT, QU_TAILK, QU_STRUCT, QU_REST, QU_N };
static const char *const qu_kind_name[QU_N] = { "template", "answer", "fact", "tail",
	"structural", "rest" };

/* A byte of a word: ASCII letter or digit, or part of a multi-byte character. */
static int
qu_word_byte(unsigned char c)
{
	return isalnum(c) || c >= 0x80;
}

/* Lower-cased words of 4 or more letters of s: does text[a, b) hold each? */
static int
qu_shared_words(const char *q, const char *text, size_t a, size_t b)
{
	char w[64];
	int n = 0;
	while (*q) {
		size_t k = 0;
		while (*q && !isalpha((unsigned char)*q))
			q++;
		while (*q && isalpha((unsigned char)*q)) {
			if (k + 1 < sizeof(w))
				w[k++] = (char)tolower((unsigned char)*q);
			q++;
		}
		w[k] = 0;
		if (k >= 4) {
			size_t i;
			for (i = a; i + k <= b; i++)
				if (!strncasecmp(text + i, w, k)) {
					n++;
					break;
				}
		}
	}
	return n;
}

/* Token range [lo, hi) of the tokens overlapping bytes [a, b). */
static void
qu_tokens(const size_t *off, int64_t n, size_t a, size_t b, int64_t *lo, int64_t *hi)
{
	int64_t i;
	*lo = *hi = -1;
	for (i = 0; i < n; i++)
		if (off[i + 1] > a && off[i] < b) {
			if (*lo < 0)
				*lo = i;
			*hi = i + 1;
		}
}

/* Kinds of every position of d (kind[n]) and each fact question's answer
 * and sentence token ranges (-1 when not found).  0, or ENG_ERR_NOMEM. */
static int
qu_classify(const struct eng_tok *tok, const struct eng_chat *chat, const int32_t *ids,
    int64_t n, int n_q, const char *const *question, const char *const *expected,
    const int *is_fact, uint8_t *kind, int64_t (*range)[4])
{
	int32_t *tpl_ids = NULL;
	int64_t n_tpl = eng_chat_doc_ids(chat, "", 0, &tpl_ids), i;
	size_t *off = malloc((size_t)(n + 1) * sizeof(size_t)), len = 0, cap = 0;
	char *text = NULL;
	int k;

	free(tpl_ids);
	if (n_tpl < 0)
		n_tpl = 0;
	if (!off)
		return ENG_ERR_NOMEM;
	for (i = 0; i < n; i++) { /* the decoded text and each token's offset */
		size_t pl = 0;
		const char *p = eng_tok_piece(tok, ids[i], 0, &pl);
		off[i] = len;
		if (!p)
			pl = 0;
		if (len + pl + 1 > cap) {
			char *t;
			cap = 2 * (len + pl + 1) + 256;
			if (!(t = realloc(text, cap))) {
				free(text);
				free(off);
				return ENG_ERR_NOMEM;
			}
			text = t;
		}
		memcpy(text + len, p ? p : "", pl);
		len += pl;
		text[len] = 0;
		kind[i] = QU_REST;
		if (i < n_tpl)
			kind[i] = QU_TPL;
		else if (i >= n - QU_TAIL)
			kind[i] = QU_TAILK;
		else {
			size_t j;
			int word = 0;
			for (j = 0; j < pl && !word; j++)
				word = qu_word_byte((unsigned char)p[j]);
			if (pl && !word)
				kind[i] = QU_STRUCT;
		}
	}
	off[n] = len;
	for (k = 0; k < n_q; k++) {
		const char *e = expected[k];
		size_t best_a = 0, best_b = 0, best_s = 0, best_e = 0;
		int best = -1;
		range[k][0] = range[k][1] = range[k][2] = range[k][3] = -1;
		if (!is_fact[k] || !text)
			continue;
		while (*e) { /* every alternative, every occurrence after the template */
			size_t el = strcspn(e, "|"), at;
			for (at = n_tpl < n ? off[n_tpl] : len; el && at + el <= len; at++) {
				size_t s = at, t = at + el;
				int sc;
				if (strncasecmp(text + at, e, el))
					continue;
				while (s > 0 && text[s - 1] != '\n' && !(text[s - 1] == ' ' && s >= 2 &&
				    text[s - 2] == '.'))
					s--;
				while (t < len && text[t] != '\n' && text[t] != '.')
					t++;
				sc = qu_shared_words(question[k], text, s, t);
				if (sc > best) {
					best = sc;
					best_a = at;
					best_b = at + el;
					best_s = s;
					best_e = t;
				}
			}
			e += el + (e[el] == '|');
		}
		if (best < 0)
			continue;
		qu_tokens(off, n, best_a, best_b, &range[k][0], &range[k][1]);
		qu_tokens(off, n, best_s, best_e, &range[k][2], &range[k][3]);
		for (i = range[k][2]; i >= 0 && i < range[k][3]; i++)
			if (kind[i] != QU_TPL)
				kind[i] = QU_FACT;
		for (i = range[k][0]; i >= 0 && i < range[k][1]; i++)
			if (kind[i] != QU_TPL)
				kind[i] = QU_ANSWER;
	}
	free(text);
	free(off);
	return 0;
}

/* held[pos]: how many (layer, KV head) of kv hold position pos < n. */
static void
qu_held(const struct eng_kv *kv, int64_t n, uint32_t *held)
{
	int l, h;
	int64_t u;
	memset(held, 0, (size_t)n * sizeof(*held));
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			for (u = 0; u < L->len[h]; u++)
				if ((int64_t)L->pos[L->off[h] + u] < n)
					held[L->pos[L->off[h] + u]]++;
		}
}

/* Share of the units of positions [lo, hi) that held[] counts. */
static double
qu_share(const uint32_t *held, int64_t lo, int64_t hi, int per_pos)
{
	double s = 0.0;
	int64_t i;
	if (lo < 0 || hi <= lo)
		return -1.0;
	for (i = lo; i < hi; i++)
		s += held[i];
	return s / ((double)(hi - lo) * per_pos);
}

#endif
