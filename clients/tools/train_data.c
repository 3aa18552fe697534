/*
 * train_data.c: the training data of the Locret retaining heads (spec/
 * locret.md §4.2), generated locally from Debian-packaged text; the recipe
 * is this file.
 *
 * Sources: the `fortunes` and `fortunes-min` packages (/usr/share/games/
 * fortunes: quotations, literature, jokes; entries separated by "%" lines)
 * as prose, and `wamerican` (/usr/share/dict/american-english) for key
 * words.  Nothing here touches /usr/share/common-licenses or the needle
 * templates of bench/quality_data.h, which the quality benchmark uses: the
 * evaluation stays disjoint from training (other haystacks, other needles,
 * other questions).
 *
 * Example i of a recipe with seed s is a pure function of (s, i, corpus,
 * length range): a resumed run sees the same examples.  Kinds, by i % 4:
 *   0  retrieval of one number: a "secret code" needle in repeated filler
 *      sentences (even i/4) or in fortunes prose (odd i/4); gold answer;
 *   1  document QA over fortunes (summaries, names, "what does the text say
 *      about W", first/last passage); answered by the backbone itself;
 *   2  key→value facts: 2–8 word→number facts in fortunes prose, one asked;
 *      gold answer;
 *   3  questions about the end of the document (continue the last passage,
 *      what it says, its last sentence); answered by the backbone.  They
 *      teach the heads that the document's tail matters to whatever comes
 *      next: without them the heads kept the needles but dropped the local
 *      context a continuation needs (bench/RESULTS.md, Locret evidence).
 * So half the examples are synthetic retrieval, half self-answered QA.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "common/rng.h"
#include "clients/tools/tools.h"

#define TD_MAX_FILE (16u << 20)

/* Repeated filler of the passkey kind; not the benchmark's sentences. */
static const char *const td_filler[] = {
	"The river runs down to the sea.", "Birds sing in the morning light.",
	"The old road winds over the hill.", "Stars come out when the day is done.",
	"Rain falls softly on the roof.", "The market opens at dawn.",
	"A cat sleeps by the warm stove.", "Leaves turn red in the autumn.",
};

struct td_needle {
	const char *fact;     /* %s: the value */
	const char *question;
	const char *answer;   /* %s: the value */
};

static const struct td_needle td_code_needles[] = {
	{ " The secret code is %s. Keep it safe.", "What is the secret code in the text?",
	    "The secret code is %s." },
	{ " Your access number is %s. Do not forget it.",
	    "What is the access number mentioned above?", "The access number is %s." },
	{ " The combination of the lock is %s.", "What is the combination of the lock?",
	    "The combination of the lock is %s." },
	{ " (The locker number is %s.)", "Which locker number is given in the text?",
	    "The locker number is %s." },
};

/* key→value facts: first %s the key word, second the number */
static const struct td_needle td_fact_needles[] = {
	{ " Note that the number for %s is %s.", "What is the number for %s?",
	    "The number for %s is %s." },
	{ " In the ledger, %s is listed under %s.", "Under which number is %s listed?",
	    "%s is listed under %s." },
	{ " The box labelled %s holds ticket %s.", "Which ticket does the box labelled %s hold?",
	    "The box labelled %s holds ticket %s." },
};

static const char *const td_doc_questions[] = {
	"Summarize the text above in a few sentences.",
	"Which people are quoted or named in the text? List them.",
	"What does the text say about %s?",
	"What is the first passage about?",
	"What is the last passage about?",
	"Pick one passage of the text and explain it.",
	"What is the general mood of these passages?",
	"Quote one line from the text that mentions %s.",
};

/* kind 3: about the end of the document */
static const char *const td_tail_questions[] = {
	"Continue the last passage of the text in the same style.",
	"What does the last passage say? Quote its last sentence.",
	"How does the text end?",
	"Write one more sentence that could follow the end of the text.",
};

/* ------------------------------------------------------------------------ */
/* Corpus                                                                    */

/* Append s to a growing array of strings. */
static int
td_push(char ***v, size_t *n, size_t *cap, char *s)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		char **nv = realloc(*v, nc * sizeof(**v));
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	return 0;
}

/* Split one fortune file into entries (lines "%" separate them); entries
 * are kept whole, trimmed, and dropped if empty or art-like. */
static int
td_split_fortunes(char *text, size_t len, struct td_corpus *c, size_t *cap)
{
	char *p = text, *end = text + len;
	while (p < end) {
		char *q = p, *e;
		size_t i, alpha = 0, n;
		/* find "\n%\n" or the end */
		while (q < end && !(q[0] == '%' && (q == text || q[-1] == '\n') &&
		    (q + 1 == end || q[1] == '\n')))
			q++;
		e = q;
		while (p < e && isspace((unsigned char)*p))
			p++;
		while (e > p && isspace((unsigned char)e[-1]))
			e--;
		n = (size_t)(e - p);
		for (i = 0; i < n; i++)
			alpha += isalpha((unsigned char)p[i]) != 0;
		if (n >= 20 && n <= 4000 && alpha * 2 > n) {
			p[n] = 0;
			if (td_push(&c->para, &c->n_para, cap, p))
				return -1;
		}
		p = q + 2;
	}
	return 0;
}

int
td_corpus_load(struct td_corpus *c, const char *fortune_dir, const char *words_path)
{
	char **names = NULL, full[4096];
	size_t n = 0, pcap = 0, wcap = 0, i, len;
	int ret = -1;

	memset(c, 0, sizeof(*c));
	if (cli_dir_names(fortune_dir, &names, &n)) {
		cli_err("cannot read %s (install the fortunes package: make deps)", fortune_dir);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char *text;
		/* data files have no extension; .dat/.u8 are indexes and links */
		if (strchr(names[i], '.') || strstr(names[i], "art"))
			continue;
		snprintf(full, sizeof(full), "%s/%s", fortune_dir, names[i]);
		if (!(text = cli_read_file(full, TD_MAX_FILE, &len)))
			continue;
		if (td_push(&c->blobs, &c->n_blobs, &c->blob_cap, text) ||
		    td_split_fortunes(text, len, c, &pcap))
			goto out;
	}
	if (c->n_para < 100) {
		cli_err("%s holds too little text (%zu entries)", fortune_dir, c->n_para);
		goto out;
	}
	{
		char *w = cli_read_file(words_path, TD_MAX_FILE, &len), *p, *e;
		if (!w) {
			cli_err("install wamerican (make deps) for %s", words_path);
			goto out;
		}
		if (td_push(&c->blobs, &c->n_blobs, &c->blob_cap, w))
			goto out;
		for (p = w; p < w + len; p = e + 1) {
			size_t k, wl;
			int ok = 1;
			e = memchr(p, '\n', (size_t)(w + len - p));
			if (!e)
				e = w + len;
			wl = (size_t)(e - p);
			for (k = 0; k < wl; k++)
				ok &= islower((unsigned char)p[k]) != 0;
			if (ok && wl >= 4 && wl <= 10) {
				*e = 0;
				if (td_push(&c->words, &c->n_words, &wcap, p))
					goto out;
			}
			if (e == w + len)
				break;
		}
	}
	if (c->n_words < 100) {
		cli_err("%s holds too few words", words_path);
		goto out;
	}
	ret = 0;
out:
	kv_strv_free(names, n);
	if (ret)
		td_corpus_free(c);
	return ret;
}

void
td_corpus_free(struct td_corpus *c)
{
	size_t i;
	for (i = 0; i < c->n_blobs; i++)
		free(c->blobs[i]);
	free(c->blobs);
	free(c->para);
	free(c->words);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------------------ */
/* Examples                                                                  */

/* splitmix64 (kv_splitmix64_next): the documented generator of every
 * random choice here. */
static size_t
td_below(uint64_t *s, size_t n)
{
	return (size_t)(kv_splitmix64_next(s) % n);
}

struct td_buf {
	char *p;
	size_t n, cap;
	int err;
};

static void
td_add(struct td_buf *b, const char *s)
{
	size_t l = strlen(s);
	if (b->err)
		return;
	if (b->n + l + 1 > b->cap) {
		size_t nc = (b->n + l + 1) * 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->err = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, l + 1);
	b->n += l;
}

/* A number of 4..7 digits, no leading zero. */
static void
td_number(uint64_t *s, char *out, size_t cap)
{
	int digits = 4 + (int)td_below(s, 4), i;
	uint64_t v = 1 + td_below(s, 9);
	for (i = 1; i < digits; i++)
		v = v * 10 + td_below(s, 10);
	snprintf(out, cap, "%llu", (unsigned long long)v);
}

/* A word of some entry that is at least 6 letters long (for "about W"). */
static void
td_topic(const struct td_corpus *c, uint64_t *s, const char *doc, char *out, size_t cap)
{
	int tries;
	snprintf(out, cap, "life");
	for (tries = 0; tries < 50; tries++) {
		size_t len = strlen(doc), at = td_below(s, len ? len : 1), n = 0;
		while (at > 0 && isalpha((unsigned char)doc[at - 1]))
			at--;
		while (isalpha((unsigned char)doc[at + n]))
			n++;
		if (n >= 6 && n < cap && islower((unsigned char)doc[at])) {
			memcpy(out, doc + at, n);
			out[n] = 0;
			return;
		}
	}
	(void)c;
}

/* tmpl with its first "%s" replaced by a and its second by b (templates
 * are data, so not printf formats). */
static void
td_fill(char *out, size_t cap, const char *tmpl, const char *a, const char *b)
{
	size_t n = 0;
	int k = 0;
	while (*tmpl && n + 1 < cap) {
		if (tmpl[0] == '%' && tmpl[1] == 's') {
			const char *v = k++ == 0 ? a : b;
			while (v && *v && n + 1 < cap)
				out[n++] = *v++;
			tmpl += 2;
		} else {
			out[n++] = *tmpl++;
		}
	}
	out[n] = 0;
}

void
td_example_free(struct td_example *ex)
{
	free(ex->doc);
	free(ex->question);
	free(ex->answer);
	memset(ex, 0, sizeof(*ex));
}

int
td_make(const struct td_corpus *c, uint64_t seed, int64_t index, size_t doc_chars,
    struct td_example *ex)
{
	uint64_t s = seed * UINT64_C(0xD1B54A32D192ED03) ^ (uint64_t)index;
	struct td_buf doc = { NULL, 0, 0, 0 };
	char val[32], q[512], a[512], topic[64];
	size_t n_ins = 0, ins_at[8], i, k;
	const char *key[8];
	char keyval[8][32];
	int kind = (int)(index % 4), filler = kind == 0 && (index / 4) % 2 == 0;
	const struct td_needle *nd = NULL;

	memset(ex, 0, sizeof(*ex));
	kv_splitmix64_next(&s);
	ex->kind = kind;
	if (kind == 0) {
		nd = &td_code_needles[td_below(&s, sizeof(td_code_needles) / sizeof(*nd))];
		td_number(&s, val, sizeof(val));
		n_ins = 1;
		ins_at[0] = td_below(&s, 1000); /* depth in permille */
	} else if (kind == 2) {
		nd = &td_fact_needles[td_below(&s, sizeof(td_fact_needles) / sizeof(*nd))];
		n_ins = 2 + td_below(&s, 7);
		for (i = 0; i < n_ins; i++) {
			key[i] = c->words[td_below(&s, c->n_words)];
			td_number(&s, keyval[i], sizeof(keyval[i]));
			ins_at[i] = td_below(&s, 1000);
		}
	}
	/* body: filler sentences or fortunes, with the needles at their depths */
	{
		size_t done_ins = 0;
		int redraw = 0;
		while (doc.n < doc_chars && !doc.err) {
			size_t depth = doc.n * 1000 / doc_chars;
			for (k = 0; k < n_ins; k++) {
				char line[256];
				if (ins_at[k] == (size_t)-1 || ins_at[k] > depth)
					continue;
				if (kind == 0)
					td_fill(line, sizeof(line), nd->fact, val, NULL);
				else
					td_fill(line, sizeof(line), nd->fact, key[k], keyval[k]);
				td_add(&doc, filler ? line : line + 1);
				td_add(&doc, filler ? "" : "\n\n");
				ins_at[k] = (size_t)-1;
				done_ins++;
			}
			if (filler) {
				td_add(&doc, doc.n ? " " : "");
				td_add(&doc, td_filler[td_below(&s, sizeof(td_filler) / sizeof(*td_filler))]);
			} else {
				/* whole entries; one that would overshoot ends the
				 * document (or is redrawn while it is empty) */
				const char *e = c->para[td_below(&s, c->n_para)];
				if (doc.n + strlen(e) > doc_chars && redraw++ < 100) {
					if (doc.n > 0)
						break;
					continue;
				}
				td_add(&doc, e);
				td_add(&doc, "\n\n");
			}
		}
		for (k = 0; k < n_ins && !doc.err; k++) /* depths past the end */
			if (ins_at[k] != (size_t)-1) {
				char line[256];
				if (kind == 0)
					td_fill(line, sizeof(line), nd->fact, val, NULL);
				else
					td_fill(line, sizeof(line), nd->fact, key[k], keyval[k]);
				td_add(&doc, line + (filler ? 0 : 1));
			}
		(void)done_ins;
	}
	if (doc.err || !doc.p)
		goto nomem;
	while (doc.n && isspace((unsigned char)doc.p[doc.n - 1]))
		doc.p[--doc.n] = 0;
	if (kind == 0) {
		snprintf(q, sizeof(q), "%s", nd->question);
		td_fill(a, sizeof(a), nd->answer, val, NULL);
	} else if (kind == 2) {
		size_t pick = td_below(&s, n_ins);
		td_fill(q, sizeof(q), nd->question, key[pick], NULL);
		td_fill(a, sizeof(a), nd->answer, key[pick], keyval[pick]);
		a[0] = (char)toupper((unsigned char)a[0]);
	} else if (kind == 3) {
		snprintf(q, sizeof(q), "%s", td_tail_questions[td_below(&s,
		    sizeof(td_tail_questions) / sizeof(*td_tail_questions))]);
	} else {
		const char *tq = td_doc_questions[td_below(&s,
		    sizeof(td_doc_questions) / sizeof(*td_doc_questions))];
		td_topic(c, &s, doc.p, topic, sizeof(topic));
		td_fill(q, sizeof(q), tq, topic, NULL);
	}
	ex->doc = doc.p;
	ex->question = strdup(q);
	ex->answer = kind == 0 || kind == 2 ? strdup(a) : NULL;
	if (!ex->question || ((kind == 0 || kind == 2) && !ex->answer))
		goto nomem;
	return 0;
nomem:
	free(doc.p);
	ex->doc = NULL;
	td_example_free(ex);
	cli_err("out of memory");
	return -1;
}

const char *
td_kind_name(int kind)
{
	switch (kind) {
	case 0: return "code";
	case 2: return "facts";
	case 3: return "tail";
	default: return "docqa";
	}
}
