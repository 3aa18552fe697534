/*
 * unicode.c: code-point classes and UTF-8 helpers for the tokenizer.
 *
 * The class table itself is generated (unicode_tables.c, from Debian's
 * unicode-data); this file owns the look-up (ASCII by a small table, the rest
 * by binary search over the ranges) and a UTF-8 decoder that reproduces
 * llama.cpp's unicode_cpts_from_utf8 byte for byte, because the tokenizer's
 * output on invalid input must match llama.cpp's.
 */
#include "engine/model/unicode.h"

/* Classes of U+0000..U+007F: spaces are 0x09-0x0D and 0x20; punctuation
 * and symbols as llama.cpp's flags (S: $ + < = > ^ ` | ~). */
static const uint8_t eng_ucd_ascii[128] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 0, 0, /* 0x00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
	3, 4, 4, 4, 6, 4, 4, 4, 4, 4, 4, 6, 4, 4, 4, 4, /* 0x20 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 6, 6, 6, 4, /* 0x30 */
	4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 6, 4, /* 0x50 */
	6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 6, 4, 6, 0, /* 0x70 */
};

/* Class of cp: ASCII table, else binary search over the generated ranges. */
enum eng_ucat
eng_ucd_class(uint32_t cp)
{
	size_t lo = 0, hi = eng_ucd_n_ranges;

	if (cp < 128)
		return (enum eng_ucat)eng_ucd_ascii[cp];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < eng_ucd_ranges[mid].first)
			hi = mid;
		else if (cp > eng_ucd_ranges[mid].last)
			lo = mid + 1;
		else
			return (enum eng_ucat)eng_ucd_ranges[mid].cat;
	}
	return ENG_UCAT_OTHER;
}

/* Class with P, M and S folded into OTHER. */
enum eng_ucat
eng_ucd_cat(uint32_t cp)
{
	enum eng_ucat c = eng_ucd_class(cp);
	return c > ENG_UCAT_SPACE ? ENG_UCAT_OTHER : c;
}

/* One code point, llama.cpp style (see unicode.h). */
uint32_t
eng_utf8_decode(const uint8_t *s, size_t len, size_t *adv)
{
	uint32_t c = s[0], cp;

	*adv = 1;
	if (!(c & 0x80))
		return c;
	if (!(c & 0x40))
		return 0xFFFD; /* stray continuation byte */
	if (!(c & 0x20)) {
		if (len < 2 || (s[1] & 0xC0) != 0x80)
			return 0xFFFD;
		*adv = 2;
		return ((c & 0x1F) << 6) | (s[1] & 0x3F);
	}
	if (!(c & 0x10)) {
		if (len < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
			return 0xFFFD;
		*adv = 3;
		return ((c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	}
	if (!(c & 0x08)) {
		if (len < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
		    (s[3] & 0xC0) != 0x80)
			return 0xFFFD;
		cp = ((c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
		    ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
		if (cp > 0x10FFFF)
			return 0xFFFD; /* llama.cpp aborts here; we degrade */
		*adv = 4;
		return cp;
	}
	return 0xFFFD; /* 0xF8..0xFF */
}

/* UTF-8 bytes of cp (no validation beyond the caller's cp <= U+10FFFF). */
size_t
eng_utf8_encode(uint32_t cp, uint8_t out[4])
{
	if (cp <= 0x7F) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp <= 0x7FF) {
		out[0] = (uint8_t)(0xC0 | (cp >> 6));
		out[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp <= 0xFFFF) {
		out[0] = (uint8_t)(0xE0 | (cp >> 12));
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t)(0xF0 | ((cp >> 18) & 0x07));
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}
