/*
 * fuzz_split.c: libFuzzer target for svc_split (service/split.c), which cuts
 * a document's text (untrusted: whatever formats/ made of a file) into
 * parts.  The first byte sets the limit (2..257 tokens), the rest is the
 * text, counted one token for the template and one per 4 bytes.  Whatever
 * the bytes, the parts cover the text end to end, none is empty, none is
 * white space only unless it could join neither neighbour (a run of
 * white space longer than a part), each counts at most the limit, and a cut never falls inside
 * a UTF-8 sequence; the only refusal is a "character" (a run of
 * continuation bytes, in text that is not UTF-8) counting over the limit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t
count(void *arg, const char *s, size_t n)
{
	(void)arg;
	(void)s;
	return 1 + (int64_t)((n + 3) / 4);
}

static int
blank(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (!strchr(" \t\n\r\f\v", s[i]) || !s[i])
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct svc_split_part *p;
	const char *t = (const char *)data + 1;
	size_t n, i, at = 0, len;
	int64_t limit;
	char why[256];

	if (size < 2)
		return 0;
	limit = 2 + data[0];
	len = size - 1;
	if (svc_split(t, len, limit, count, NULL, &p, &n, why, sizeof(why))) {
		if (!strstr(why, "one character"))
			abort();
		return 0;
	}
	if (n < 1)
		abort();
	for (i = 0; i < n; i++) {
		if (p[i].off != at || !p[i].len || p[i].tokens > limit ||
		    p[i].tokens != count(NULL, t + p[i].off, p[i].len))
			abort();
		/* blank only where white space could join no neighbour: a run
		 * longer than what the part before left room for */
		if (blank(t + p[i].off, p[i].len) && n > 1 &&
		    ((i && count(NULL, t + p[i - 1].off, p[i - 1].len + p[i].len) <= limit) ||
		    (i + 1 < n && count(NULL, t + p[i].off, p[i].len + p[i + 1].len) <= limit)))
			abort();
		if (i && ((unsigned char)t[p[i].off] & 0xC0) == 0x80)
			abort();
		at += p[i].len;
	}
	if (at != len)
		abort();
	free(p);
	return 0;
}
