/*
 * escape.c: untrusted bytes as one printable line (escape.h).
 */
#include <stdio.h>
#include <string.h>

#include "common/escape.h"

/* The length of the well-formed UTF-8 character at s (at most n bytes
 * available) and its code point, or 0 if the bytes there are not one. */
static size_t
utf8_char(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0], v;
	size_t len, i;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Code points kept out of a line though they are valid: C1 controls, the
 * line and paragraph separators, bidi marks, embeddings, overrides and
 * isolates, and the byte-order mark. */
static int
invisible(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0x200e ||
	    cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	    cp == 0xfeff;
}

size_t
kv_escape(char *out, size_t out_len, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k = 0, len;
	char esc[16];
	unsigned cp;

	if (!out_len)
		return 0;
	while (i < n) {
		len = utf8_char(u + i, n - i, &cp);
		if (!len || cp < 0x20 || cp == 0x7f) {
			len = 1;
			if (u[i] == '\n')
				snprintf(esc, sizeof(esc), "\\n");
			else if (u[i] == '\r')
				snprintf(esc, sizeof(esc), "\\r");
			else if (u[i] == '\t')
				snprintf(esc, sizeof(esc), "\\t");
			else
				snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
		} else if (cp == '\\') {
			snprintf(esc, sizeof(esc), "\\\\");
		} else if (invisible(cp)) {
			snprintf(esc, sizeof(esc), "\\u{%04x}", cp);
		} else {
			if (k + len >= out_len)
				break;
			memcpy(out + k, u + i, len);
			k += len;
			i += len;
			continue;
		}
		if (k + strlen(esc) >= out_len)
			break;
		memcpy(out + k, esc, strlen(esc));
		k += strlen(esc);
		i += len;
	}
	out[k] = '\0';
	return k;
}

int
kv_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, len;
	unsigned cp;
	while (i < n) {
		if (!(len = utf8_char(u + i, n - i, &cp)))
			return 0;
		i += len;
	}
	return 1;
}
