/*
 * split.h: a document's text cut into parts that each fit a token limit,
 * at the text's own boundaries (issue 29, item 1).  libc only: the caller
 * counts tokens (the ingest: the prompt's document half, as the
 * single-document limit counts them), so tests can count their own way.
 *
 * Where a cut may go, best first:
 *   page       a form feed in the white space before it (plain text with
 *              page marks; formats/ writes a PDF's pages with a blank line
 *              between them, so they are paragraphs here);
 *   heading    a line starting with '#' (Markdown), after a blank line or
 *              not;
 *   paragraph  a blank line (two line ends, white space between);
 *   sentence   after '.', '!', '?' (closing quotes and brackets after them
 *              allowed) and white space;
 *   word       any white space;
 *   character  only where a run with no white space alone exceeds the
 *              limit: at a UTF-8 character's start, never inside one.
 * A cut is always at the start of a non-space character, so no part is
 * empty or white space only (leading white space stays with the first
 * part, trailing white space with the last), and the parts laid end to
 * end are the text, byte for byte.  Each part is the longest the limit
 * allows at the best boundary that still fills at least half the limit;
 * a lower kind of boundary is used only when a better one would leave the
 * part less than half full.
 */
#ifndef SERVICE_SPLIT_H
#define SERVICE_SPLIT_H

#include <stddef.h>
#include <stdint.h>

/* The tokens of text[0..n) as one part, or < 0 on an error (then the
 * split fails with that value). */
typedef int64_t (*svc_split_count_fn)(void *arg, const char *text, size_t n);

struct svc_split_part {
	size_t off, len;          /* bytes of the text */
	int64_t tokens;           /* count() of it */
};

/* Cut text[0..len) (len > 0) into parts of at most limit tokens (limit >=
 * 1).  *parts (malloc'd) gets n >= 1 parts; one part when the whole text
 * fits.  0; or a count's negative value; or -1 (out of memory, or a single
 * character counting over the limit) with why. */
int svc_split(const char *text, size_t len, int64_t limit, svc_split_count_fn count, void *arg,
    struct svc_split_part **parts, size_t *n, char *why, size_t why_len);

#endif /* SERVICE_SPLIT_H */
