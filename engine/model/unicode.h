/*
 * unicode.h: code-point classes and UTF-8 as the tokenizer sees them
 * (engine/model/unicode.c, engine/model/unicode_tables.c); engine/ and its
 * tests only.
 */
#ifndef ENGINE_MODEL_UNICODE_H
#define ENGINE_MODEL_UNICODE_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for uint32_t */

/* Code-point class as the pre-tokenizers see it (llama.cpp unicode flags):
 * \p{L}, \p{N}, \s, \p{P}, \p{M}, \p{S}, or anything else.  eng_ucd_cat
 * folds the last three into OTHER (what the GPT-2 / Llama 3 splitters test);
 * eng_ucd_class keeps them (the regex matcher's \p{P}, \p{M}, \p{S}). */
enum eng_ucat {
	ENG_UCAT_OTHER = 0,  /* control, format, private use, surrogate, unassigned */
	ENG_UCAT_LETTER = 1, /* Lu Ll Lt Lm Lo */
	ENG_UCAT_NUMBER = 2, /* Nd Nl No */
	ENG_UCAT_SPACE = 3,  /* White_Space (spec/model.md section 7.1) */
	ENG_UCAT_PUNCT = 4,  /* Pc Pd Ps Pe Pi Pf Po */
	ENG_UCAT_MARK = 5,   /* Mn Mc Me */
	ENG_UCAT_SYMBOL = 6  /* Sm Sc Sk So */
};

struct eng_ucd_range {
	uint32_t first, last; /* inclusive */
	uint8_t cat;          /* enum eng_ucat */
};

/* Generated table (scripts/gen-unicode-tables.py): sorted, disjoint. */
extern const struct eng_ucd_range eng_ucd_ranges[];
extern const size_t eng_ucd_n_ranges;

/* Class of a code point with P, M and S folded into OTHER; code points past
 * U+10FFFF are ENG_UCAT_OTHER. */
enum eng_ucat eng_ucd_cat(uint32_t cp);
/* Class of a code point, P, M and S kept. */
enum eng_ucat eng_ucd_class(uint32_t cp);

/* Decode one code point from s[0..len) (len >= 1) the way llama.cpp's
 * unicode_cpts_from_utf8 does: lead and continuation bits are checked but
 * overlong forms and surrogates pass; anything else, and any sequence
 * decoding past U+10FFFF (which aborts llama.cpp), yields U+FFFD and
 * consumes one byte.  *adv receives the bytes consumed. */
uint32_t eng_utf8_decode(const uint8_t *s, size_t len, size_t *adv);

/* Encode cp (<= U+10FFFF) into out; returns 1..4. */
size_t eng_utf8_encode(uint32_t cp, uint8_t out[4]);

#endif /* ENGINE_MODEL_UNICODE_H */
