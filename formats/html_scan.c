/*
 * html_scan.c: an HTML page's budgets counted before libxml2 parses it, in
 * one linear pass over the bytes: its elements (each a node of libxml2's
 * tree: 56 MB of `<p>x` took the daemon past 4 GB) and the attributes of
 * each element (libxml2 checks an element's attributes for duplicates in
 * quadratic time: one element with 1M attributes held a worker for over 9
 * minutes).  The tokenizing follows HTML's: comments, doctypes and
 * processing instructions are skipped, attribute values quoted or not,
 * <script> and <style> raw text up to their end tag.  It need not match
 * libxml2's recovery from broken markup exactly: the limits are far above
 * real pages, and the parse runs under memory and time limits anyway
 * (fmt_extract_isolated).
 */
#include <string.h>
#include <strings.h>

#include "common/fail.h"
#include "formats/formats.h"

static int
hs_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int
hs_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The offset just past the first `end` at or after i (len if none). */
static size_t
hs_past(const char *p, size_t len, size_t i, const char *end)
{
	size_t n = strlen(end);
	while (i < len) {
		const char *c = memchr(p + i, end[0], len - i);
		if (!c)
			return len;
		i = (size_t)(c - p);
		if (len - i >= n && !strncasecmp(p + i, end, n))
			return i + n;
		i++;
	}
	return len;
}

int
fmt_html_scan(const char *p, size_t len, char *why, size_t why_len)
{
	size_t i = 0, elements = 0, attrs, n0, nl;
	const char *lt;

	while (i < len && (lt = memchr(p + i, '<', len - i))) {
		i = (size_t)(lt - p) + 1;
		if (i < len && p[i] == '!') { /* a comment, a doctype, CDATA */
			i = len - i >= 3 && p[i + 1] == '-' && p[i + 2] == '-' ?
			    hs_past(p, len, i + 3, "-->") : hs_past(p, len, i, ">");
			continue;
		}
		if (i < len && p[i] == '?') {
			i = hs_past(p, len, i, ">");
			continue;
		}
		if (i >= len || !hs_alpha(p[i]))
			continue; /* an end tag, or a '<' in text */
		for (n0 = i; i < len && !hs_space(p[i]) && p[i] != '>' && p[i] != '/'; i++)
			;
		nl = i - n0;
		if (++elements > FMT_HTML_ELEMENTS_MAX)
			return kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "is an HTML page of over %d "
			    "elements, the limit (split it)", FMT_HTML_ELEMENTS_MAX);
		attrs = 0;
		while (i < len) {
			while (i < len && (hs_space(p[i]) || p[i] == '/'))
				i++;
			if (i >= len)
				break;
			if (p[i] == '>') {
				i++;
				break;
			}
			if (++attrs > FMT_HTML_ATTRS_MAX)
				return kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "is an HTML page with an "
				    "element <%.*s> of over %d attributes, the limit", (int)(nl < 32 ? nl : 32),
				    p + n0, FMT_HTML_ATTRS_MAX);
			while (i < len && !hs_space(p[i]) && p[i] != '>' && p[i] != '=' && p[i] != '/')
				i++;
			while (i < len && hs_space(p[i]))
				i++;
			if (i < len && p[i] == '=') { /* a value: quoted, or up to a space or '>' */
				for (i++; i < len && hs_space(p[i]); i++)
					;
				if (i < len && (p[i] == '"' || p[i] == '\'')) {
					const char *q = memchr(p + i + 1, p[i], len - i - 1);
					i = q ? (size_t)(q - p) + 1 : len;
				} else {
					while (i < len && !hs_space(p[i]) && p[i] != '>')
						i++;
				}
			}
		}
		/* raw text: no elements inside, whatever it holds */
		if (nl == 6 && !strncasecmp(p + n0, "script", 6))
			i = hs_past(p, len, i, "</script");
		else if (nl == 5 && !strncasecmp(p + n0, "style", 5))
			i = hs_past(p, len, i, "</style");
	}
	return 0;
}
