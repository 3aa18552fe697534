/*
 * test_split.c: service/split.c, a text cut into parts under a token limit
 * at its own boundaries.  Tokens are counted here by a simple monotone
 * rule (one for the template, one per 4 bytes), so the cuts are exact and
 * need no model: what is checked is where the cuts fall, that the parts
 * are the text end to end, that none is empty or white space only, that
 * each fits, and that few counts are spent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/split.h"
#include "tests/tap.h"

struct counter {
	long calls;
	int fail_after;  /* > 0: the count fails after so many calls */
};

static int64_t
count_bytes(void *arg, const char *s, size_t n)
{
	struct counter *c = arg;
	(void)s;
	c->calls++;
	if (c->fail_after > 0 && c->calls > c->fail_after)
		return -7;
	return 1 + (int64_t)((n + 3) / 4);
}

static int
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The invariants every split keeps; 0 when they hold, else says why. */
static int
check_parts(const char *t, size_t len, int64_t limit, const struct svc_split_part *p, size_t n,
    int word_cuts)
{
	size_t i, j, at = 0;
	for (i = 0; i < n; i++) {
		int all_ws = 1;
		if (p[i].off != at) {
			tap_diag("part %zu starts at %zu, not %zu", i, p[i].off, at);
			return -1;
		}
		if (!p[i].len) {
			tap_diag("part %zu is empty", i);
			return -1;
		}
		for (j = 0; j < p[i].len; j++)
			all_ws &= is_ws(t[p[i].off + j]);
		if (all_ws) {
			tap_diag("part %zu is white space only", i);
			return -1;
		}
		if (p[i].tokens > limit || p[i].tokens != 1 + (int64_t)((p[i].len + 3) / 4)) {
			tap_diag("part %zu: %lld tokens (limit %lld)", i, (long long)p[i].tokens,
			    (long long)limit);
			return -1;
		}
		if (i && word_cuts && (is_ws(t[p[i].off]) || !is_ws(t[p[i].off - 1]))) {
			tap_diag("part %zu is cut inside a word (byte %zu)", i, p[i].off);
			return -1;
		}
		if (i && ((unsigned char)t[p[i].off] & 0xC0) == 0x80) {
			tap_diag("part %zu starts inside a UTF-8 character", i);
			return -1;
		}
		at += p[i].len;
	}
	if (at != len) {
		tap_diag("parts cover %zu of %zu bytes", at, len);
		return -1;
	}
	return 0;
}

/* svc_split of t[0..len) under limit (count_bytes over c) into *p (the
 * previous parts freed first) and *n, then check_parts; 0 when both
 * succeed, else -1 with why in the TAP diagnostics. */
static int
split_checked(const char *t, size_t len, int64_t limit, struct counter *c,
    struct svc_split_part **p, size_t *n, int word_cuts)
{
	char why[256];

	free(*p);
	*p = NULL;
	if (svc_split(t, len, limit, count_bytes, c, p, n, why, sizeof(why))) {
		tap_diag("%s", why);
		return -1;
	}
	return check_parts(t, len, limit, *p, *n, word_cuts);
}

static enum tap_result
fits_whole(void)
{
	const char *t = "A short text.\n\nTwo paragraphs.";
	struct counter c = { 0, 0 };
	struct svc_split_part *p;
	size_t n;
	char why[256];

	TAP_CHECK(svc_split(t, strlen(t), 100, count_bytes, &c, &p, &n, why, sizeof(why)) == 0,
	    "%s", why);
	TAP_CHECK(n == 1 && p[0].off == 0 && p[0].len == strlen(t), "%zu parts", n);
	TAP_CHECK(c.calls == 1, "%ld counts for a text that fits", c.calls);
	free(p);
	return TAP_PASS;
}

/* Paragraphs of sentences: every cut falls after a blank line. */
static enum tap_result
paragraphs_first(void)
{
	char *t = malloc(200000);
	struct counter c = { 0, 0 };
	struct svc_split_part *p = NULL;
	size_t n, len = 0, i;
	int ok = 1;

	for (i = 0; i < 300; i++)
		len += (size_t)sprintf(t + len, "Paragraph %zu has a sentence. And another one, a "
		    "little longer than the first. Then a third.\n\n", i);
	TAP_EXPECT(split_checked(t, len, 400, &c, &p, &n, 1) == 0, "split under 400");
	TAP_EXPECT(n > 10, "%zu parts", n);
	for (i = 1; i < n; i++)
		TAP_EXPECT(p[i].off >= 2 && t[p[i].off - 1] == '\n' && t[p[i].off - 2] == '\n',
		    "part %zu does not start a paragraph: \"%.20s\"", i, t + p[i].off);
	for (i = 0; i + 1 < n; i++) /* each at least half full */
		TAP_EXPECT(p[i].tokens >= 200, "part %zu: %lld tokens", i, (long long)p[i].tokens);
	TAP_EXPECT(c.calls < 40 * (long)n, "%ld counts for %zu parts", c.calls, n);
out:
	free(p);
	free(t);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* Form feeds (pages) win over blank lines, headings over paragraphs. */
static enum tap_result
pages_and_headings(void)
{
	char *t = malloc(400000);
	struct counter c = { 0, 0 };
	struct svc_split_part *p = NULL;
	size_t n, len = 0, i, k;
	int ok = 1;

	for (i = 0; i < 20; i++) { /* pages of ~1200 bytes, paragraphs within */
		for (k = 0; k < 8; k++)
			len += (size_t)sprintf(t + len, "Page %zu, paragraph %zu: words words words "
			    "words words words words words words words words.\n\n", i, k);
		t[len++] = '\f';
	}
	TAP_EXPECT(split_checked(t, len, 700, &c, &p, &n, 1) == 0, "split under 700");
	for (i = 1; i < n; i++)
		TAP_EXPECT(t[p[i].off - 1] == '\f', "part %zu starts mid-page: \"%.20s\"", i,
		    t + p[i].off);
	len = 0;
	for (i = 0; i < 30; i++) { /* sections of paragraphs */
		len += (size_t)sprintf(t + len, "# Section %zu\n\n", i);
		for (k = 0; k < 6; k++)
			len += (size_t)sprintf(t + len, "Text of section %zu, paragraph %zu, with "
			    "several more words after it.\n\n", i, k);
	}
	TAP_EXPECT(split_checked(t, len, 300, &c, &p, &n, 1) == 0, "split under 300");
	for (i = 1; i < n; i++)
		TAP_EXPECT(t[p[i].off] == '#', "part %zu does not start a section: \"%.20s\"", i,
		    t + p[i].off);
out:
	free(p);
	free(t);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* One 50 KB paragraph of sentences: cut after sentence ends; of words with
 * no punctuation: cut between words, never inside one. */
static enum tap_result
one_big_paragraph(void)
{
	size_t cap = 60000, len, i, n;
	char *t = malloc(cap);
	struct counter c = { 0, 0 };
	struct svc_split_part *p = NULL;
	int ok = 1;

	for (len = 0; len < 50000;)
		len += (size_t)sprintf(t + len, "The clause %zu runs on for a while (so it says). ",
		    len);
	TAP_EXPECT(split_checked(t, len, 1000, &c, &p, &n, 1) == 0, "split under 1000");
	TAP_EXPECT(n >= 12, "%zu parts", n);
	for (i = 1; i < n; i++)
		TAP_EXPECT(t[p[i].off - 2] == '.', "part %zu is not after a sentence end", i);
	c.calls = 0;
	for (len = 0, i = 0; len < 50000; i++) /* words of 1 to 13 letters */
		len += (size_t)sprintf(t + len, "%.*s ", (int)(1 + i * 7 % 13), "abcdefghijklm");
	TAP_EXPECT(split_checked(t, len, 1000, &c, &p, &n, 1) == 0, "split under 1000");
	for (i = 0; i + 1 < n; i++) /* word cuts fill the part */
		TAP_EXPECT(p[i].tokens > 990, "part %zu: %lld tokens", i, (long long)p[i].tokens);
	TAP_EXPECT(c.calls < 40 * (long)n, "%ld counts for %zu parts", c.calls, n);
out:
	free(p);
	free(t);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* No white space at all in 50 KB of two- and three-byte characters: cut
 * at character starts, each part valid UTF-8 of whole characters. */
static enum tap_result
utf8_run(void)
{
	size_t len = 0, i, n;
	char *t = malloc(60000);
	struct counter c = { 0, 0 };
	struct svc_split_part *p = NULL;
	int ok = 1;

	for (i = 0; len < 50000; i++)
		len += (size_t)sprintf(t + len, "%s", i % 3 ? "\xc3\xa9" : "\xe2\x82\xac");
	TAP_EXPECT(split_checked(t, len, 333, &c, &p, &n, 0) == 0, "split under 333");
	TAP_EXPECT(n > 30, "%zu parts", n);
	for (i = 0; i < n; i++) {
		unsigned char last = (unsigned char)t[p[i].off + p[i].len - 1];
		unsigned char prev = (unsigned char)t[p[i].off + p[i].len - 2];
		/* a part ends on a whole character: é's second byte or €'s third */
		TAP_EXPECT((last == 0xa9 && prev == 0xc3) || (last == 0xac && prev == 0x82),
		    "part %zu ends inside a character", i);
		TAP_EXPECT(i + 1 == n || p[i].tokens >= 330, "part %zu: %lld tokens", i,
		    (long long)p[i].tokens);
	}
	/* a word before the run is cut before the run, not inside the word */
	memmove(t + 6, t, len);
	memcpy(t, "Hello ", 6);
	len += 6;
	TAP_EXPECT(split_checked(t, len, 333, &c, &p, &n, 0) == 0, "split under 333");
	TAP_EXPECT(p[0].len == 6, "first part %zu bytes, not \"Hello \"", p[0].len);
out:
	free(p);
	free(t);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* White space everywhere: leading, trailing, long runs; never an empty or
 * blank part. */
static enum tap_result
never_empty(void)
{
	size_t len = 0, i, n;
	char *t = malloc(100000);
	struct counter c = { 0, 0 };
	struct svc_split_part *p = NULL;
	int ok = 1;

	len += (size_t)sprintf(t, "\n\n   \n\t\n");
	for (i = 0; i < 200; i++) {
		len += (size_t)sprintf(t + len, "word%zu.", i);
		memset(t + len, i % 2 ? ' ' : '\n', 40);
		len += 40;
	}
	TAP_EXPECT(split_checked(t, len, 50, &c, &p, &n, 1) == 0, "split under 50");
	TAP_EXPECT(p[n - 1].len > 40, "the trailing white space is a part of its own");
out:
	free(p);
	free(t);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* A count's error is the split's; a character over the limit is refused;
 * bad arguments. */
static enum tap_result
errors(void)
{
	char t[4000];
	struct counter c = { 0, 3 };
	struct svc_split_part *p = (struct svc_split_part *)t;
	size_t n = 9;
	char why[256];

	memset(t, 'a', sizeof(t));
	for (n = 5; n < sizeof(t); n += 6)
		t[n] = ' ';
	TAP_CHECK(svc_split(t, sizeof(t), 100, count_bytes, &c, &p, &n, why, sizeof(why)) == -7,
	    "a failing count");
	TAP_CHECK(!p && n == 0, "nothing handed out");
	c.fail_after = 0;
	TAP_CHECK(svc_split("\xe2\x82\xac", 3, 1, count_bytes, &c, &p, &n, why,
	    sizeof(why)) == -1 && strstr(why, "one character"), "%s", why);
	TAP_CHECK(svc_split("", 0, 10, count_bytes, &c, &p, &n, why, sizeof(why)) == -1,
	    "an empty text");
	TAP_CHECK(svc_split("abc", 3, 0, count_bytes, &c, &p, &n, why, sizeof(why)) == -1,
	    "a limit of 0");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "fits_whole", fits_whole },
	{ "paragraphs_first", paragraphs_first },
	{ "pages_and_headings", pages_and_headings },
	{ "one_big_paragraph", one_big_paragraph },
	{ "utf8_run", utf8_run },
	{ "never_empty", never_empty },
	{ "errors", errors },
};

TAP_MAIN(NULL, NULL)
