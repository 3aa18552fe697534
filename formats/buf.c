/*
 * buf.c: the extractors' output, a growing UTF-8 buffer bounded by the
 * document limit (a hostile file cannot make it grow past it), with what
 * every extractor needs: white space collapsed in running text, line
 * breaks between blocks without runs of empty lines, and the buffer's
 * error worded as the reason (fmt_buf_fail).
 */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "formats/formats.h"

void
fmt_buf_put(struct fmt_buf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->err || !n)
		return;
	if (n > b->max - b->len || b->len > b->max) {
		b->err = FMT_ERR_TOO_LARGE;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(p = realloc(b->p, cap))) {
			b->err = FMT_ERR_NOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static int
fb_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void
fmt_buf_text(struct fmt_buf *b, const char *s, size_t n, int pre)
{
	size_t i = 0, j;

	if (pre) {
		fmt_buf_put(b, s, n);
		return;
	}
	while (i < n) {
		if (fb_space(s[i])) {
			while (i < n && fb_space(s[i]))
				i++;
			/* one space between words, none at a line's start */
			if (b->len && !fb_space(b->p[b->len - 1]))
				fmt_buf_put(b, " ", 1);
			continue;
		}
		for (j = i; j < n && !fb_space(s[j]); j++)
			;
		fmt_buf_put(b, s + i, j - i);
		i = j;
	}
}

void
fmt_buf_break(struct fmt_buf *b, int blank)
{
	/* a space left at the end of a line goes */
	while (b->len && (b->p[b->len - 1] == ' ' || b->p[b->len - 1] == '\t'))
		b->len--;
	if (!b->len)
		return;
	if (b->p[b->len - 1] != '\n')
		fmt_buf_put(b, "\n", 1);
	if (blank && !(b->len >= 2 && b->p[b->len - 2] == '\n'))
		fmt_buf_put(b, "\n", 1);
}

int
fmt_buf_finish(struct fmt_buf *b)
{
	if (b->err)
		return b->err;
	while (b->len && fb_space(b->p[b->len - 1]))
		b->len--;
	if (!b->p && !(b->p = malloc(1)))
		return b->err = FMT_ERR_NOMEM;
	b->p[b->len] = '\0'; /* put keeps room for it */
	return 0;
}

int
fmt_buf_fail(const struct fmt_buf *b, const char *what, char *why, size_t why_len)
{
	if (b->err == FMT_ERR_TOO_LARGE)
		return kv_fail(why, why_len, b->err, "is %s with over %zu bytes of text", what, b->max);
	if (b->err)
		return kv_fail(why, why_len, b->err, "out of memory");
	return 0;
}
