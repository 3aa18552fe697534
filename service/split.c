/*
 * split.c: a text cut into parts under a token limit at its own boundaries
 * (split.h says where and in which order).  Counting is the caller's and
 * costs a tokenization, so a part is found with few counts: probes that
 * double in bytes until one is over the limit, then a binary search over
 * the word starts before it (a prefix's tokens grow with its length), then
 * at most one count per better kind of boundary.  Every part's count is
 * measured, never inferred, so the limit holds even where the tokenizer is
 * not monotone (a later candidate is then stepped back from).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/split.h"

enum cut_level { CUT_PAGE = 0, CUT_HEADING, CUT_PARA, CUT_SENTENCE, CUT_WORD };

struct cand {
	size_t pos;
	int level;
	int64_t tokens; /* -1: not counted yet */
};

struct splitter {
	const char *t;
	size_t len;
	int64_t limit;
	svc_split_count_fn count;
	void *arg;
	int err;        /* a count's error */
};

static int
is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int
is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

/* Tokens of t[a..b), or -1 with sp->err set. */
static int64_t
sp_count(struct splitter *sp, size_t a, size_t b)
{
	int64_t n = sp->count(sp->arg, sp->t + a, b - a);
	if (n < 0) {
		sp->err = (int)(n < -1000000 ? -1 : n);
		return -1;
	}
	return n;
}

/* The closing marks a sentence may end in before its white space: ASCII
 * quotes and brackets, and the UTF-8 right quotes U+2019 and U+201D. */
static size_t
skip_closers_back(const char *t, size_t q, size_t lo)
{
	const unsigned char *u = (const unsigned char *)t;
	for (;;) {
		if (q > lo && (u[q - 1] == '"' || u[q - 1] == '\'' || u[q - 1] == ')' ||
		    u[q - 1] == ']'))
			q--;
		else if (q >= lo + 3 && u[q - 3] == 0xE2 && u[q - 2] == 0x80 &&
		    (u[q - 1] == 0x99 || u[q - 1] == 0x9D))
			q -= 3;
		else
			return q;
	}
}

/* The kind of boundary at p: the start of a non-space character after the
 * white space t[q..p). */
static int
cut_level(const char *t, size_t q, size_t p, size_t lo)
{
	size_t i, nl = 0, e;
	int ff = 0;
	for (i = q; i < p; i++) {
		nl += t[i] == '\n';
		ff |= t[i] == '\f';
	}
	if (ff)
		return CUT_PAGE;
	if (nl && t[p] == '#')
		return CUT_HEADING;
	if (nl >= 2)
		return CUT_PARA;
	e = skip_closers_back(t, q, lo);
	if (e > lo && (t[e - 1] == '.' || t[e - 1] == '!' || t[e - 1] == '?'))
		return CUT_SENTENCE;
	return CUT_WORD;
}

/* The word starts in (start, end): positions of a non-space byte after
 * white space.  *out malloc'd (NULL when none). */
static int
find_cands(const char *t, size_t start, size_t end, struct cand **out, size_t *n)
{
	size_t i, q = 0, cap = 0;
	int in_ws = 0;

	*out = NULL;
	*n = 0;
	for (i = start; i < end; i++) {
		if (is_space((unsigned char)t[i])) {
			if (!in_ws)
				q = i;
			in_ws = 1;
			continue;
		}
		/* (never at a continuation byte: text that is not UTF-8) */
		if (in_ws && i > start && q > start && !is_cont((unsigned char)t[i])) {
			if (*n == cap) {
				struct cand *c;
				cap = cap ? 2 * cap : 256;
				if (!(c = realloc(*out, cap * sizeof(**out))))
					return -1;
				*out = c;
			}
			(*out)[*n].pos = i;
			(*out)[*n].level = cut_level(t, q, i, start);
			(*out)[(*n)++].tokens = -1;
		}
		in_ws = 0;
	}
	return 0;
}

/* 1 when t(lo..mid] holds no non-space character start: a cut there must
 * fall in white space. */
static int
nonspace_only_ws(const struct splitter *sp, size_t lo, size_t mid)
{
	size_t i;
	for (i = lo + 1; i <= mid; i++)
		if (!is_space((unsigned char)sp->t[i]) && !is_cont((unsigned char)sp->t[i]))
			return 0;
	return 1;
}

/* A cut inside a run with no white space: the longest prefix of t[start..
 * end) ending at a character's start that fits.  0 with *cut, *tokens;
 * 1 when not even one character fits; -1 a count's error. */
static int
char_cut(struct splitter *sp, size_t start, size_t end, size_t *cut, int64_t *tokens)
{
	size_t lo = start, hi = end, mid;
	int64_t c, lo_c = 0;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		/* a character's start, not white space (the next part would
		 * begin blank), where there is one */
		while (mid > lo && (is_cont((unsigned char)sp->t[mid]) ||
		    (!nonspace_only_ws(sp, lo, mid) && is_space((unsigned char)sp->t[mid]))))
			mid--;
		if (mid == lo) { /* the next character's start after lo */
			mid = lo + 1;
			while (mid < hi && is_cont((unsigned char)sp->t[mid]))
				mid++;
			if (mid >= hi)
				break;
		}
		if ((c = sp_count(sp, start, mid)) < 0)
			return -1;
		if (c <= sp->limit) {
			lo = mid;
			lo_c = c;
		} else
			hi = mid;
	}
	if (lo == start)
		return 1;
	*cut = lo;
	*tokens = lo_c;
	return 0;
}

/* The end of the part that starts at start: 0 with *cut (len: the rest
 * fits) and *tokens; -1 with why. */
static int
next_cut(struct splitter *sp, size_t start, size_t *cut, int64_t *tokens, char *why,
    size_t why_len)
{
	size_t step = sp->limit > (int64_t)(SIZE_MAX / 8) ? SIZE_MAX / 2 : (size_t)sp->limit * 4;
	size_t ok = start, e, i;
	struct cand *cd = NULL;
	size_t n_cd = 0;
	int64_t c, half = (sp->limit + 1) / 2;
	long lo, hi, mid, best;
	int level, ret = -1;

	if (step < 64)
		step = 64;
	/* probes doubling in bytes until one is over the limit */
	for (;;) {
		e = sp->len - start <= step ? sp->len : start + step;
		while (e > start + 1 && e < sp->len && is_cont((unsigned char)sp->t[e]))
			e--;
		if ((c = sp_count(sp, start, e)) < 0)
			goto count_err;
		if (c <= sp->limit) {
			if (e == sp->len) {
				*cut = e;
				*tokens = c;
				return 0;
			}
			ok = e;
			step = step > SIZE_MAX / 4 ? SIZE_MAX / 2 : step * 2;
			continue;
		}
		break;
	}
	if (find_cands(sp->t, start, e, &cd, &n_cd)) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	/* the last word start that fits: those up to ok fit (a prefix of one
	 * that does) */
	lo = -1;
	hi = (long)n_cd;
	while (lo + 1 < hi && cd[lo + 1].pos <= ok)
		lo++;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if ((cd[mid].tokens = sp_count(sp, start, cd[mid].pos)) < 0)
			goto count_err;
		if (cd[mid].tokens <= sp->limit)
			lo = mid;
		else
			hi = mid;
	}
	if (lo < 0) /* no word start fits: one run too long for a part */
		goto by_char;
	/* the best kind of boundary that still fills half the limit */
	best = lo;
	for (level = CUT_PAGE; level < CUT_WORD; level++) {
		for (i = (size_t)lo + 1; i-- > 0;)
			if (cd[i].level <= level)
				break;
		if (i == SIZE_MAX)
			continue;
		if (cd[i].tokens < 0 && (cd[i].tokens = sp_count(sp, start, cd[i].pos)) < 0)
			goto count_err;
		if (cd[i].tokens >= half && cd[i].tokens <= sp->limit) {
			best = (long)i;
			break;
		}
	}
	/* measured, never inferred: step back while it does not fit */
	for (;;) {
		if (cd[best].tokens < 0 && (cd[best].tokens = sp_count(sp, start,
		    cd[best].pos)) < 0)
			goto count_err;
		if (cd[best].tokens <= sp->limit || best == 0)
			break;
		best--;
	}
	if (cd[best].tokens > sp->limit)
		goto by_char;
	*cut = cd[best].pos;
	*tokens = cd[best].tokens;
	ret = 0;
	goto out;
by_char: { /* no boundary fits: cut between characters */
	int r = char_cut(sp, start, e, cut, tokens);
	if (r < 0)
		goto count_err;
	if (r > 0)
		snprintf(why, why_len, "one character of the text at byte %zu counts over "
		    "the limit of %lld tokens", start, (long long)sp->limit);
	else
		ret = 0;
	goto out;
}
count_err:
	snprintf(why, why_len, "counting the tokens of a part failed");
out:
	free(cd);
	return ret;
}

int
svc_split(const char *text, size_t len, int64_t limit, svc_split_count_fn count, void *arg,
    struct svc_split_part **parts, size_t *n, char *why, size_t why_len)
{
	struct splitter sp = { text, len, limit, count, arg, 0 };
	struct svc_split_part *p = NULL, *q;
	size_t start = 0, cut, cap = 0;
	int64_t tokens;

	*parts = NULL;
	*n = 0;
	if (!text || !len || limit < 1 || !count) {
		snprintf(why, why_len, "nothing to split (an empty text or a limit under 1)");
		return -1;
	}
	while (start < len) {
		if (next_cut(&sp, start, &cut, &tokens, why, why_len)) {
			free(p);
			return sp.err ? sp.err : -1;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			if (!(q = realloc(p, cap * sizeof(*p)))) {
				free(p);
				snprintf(why, why_len, "out of memory");
				return -1;
			}
			p = q;
		}
		p[*n].off = start;
		p[*n].len = cut - start;
		p[(*n)++].tokens = tokens;
		start = cut;
	}
	/* a blank tail (white space a run's cut left alone) joins the part
	 * before it when they fit together */
	if (*n > 1) {
		size_t i, k = *n - 1;
		for (i = 0; i < p[k].len && is_space((unsigned char)text[p[k].off + i]); i++)
			;
		if (i == p[k].len && (tokens = count(arg, text + p[k - 1].off, p[k - 1].len +
		    p[k].len)) >= 0 && tokens <= limit) {
			p[k - 1].len += p[k].len;
			p[k - 1].tokens = tokens;
			(*n)--;
		}
	}
	*parts = p;
	return 0;
}
