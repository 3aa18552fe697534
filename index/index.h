/*
 * index.h: the full-text index of what each document says: one SQLite
 * FTS5 table (BM25 ranking, the unicode61 tokenizer with diacritics
 * removed) of document parts, in one file beside the LMDB store.  It knows
 * ids, part numbers, texts and their checksums, nothing of the store,
 * snapshots or access: the service keeps it in step with the store's text
 * records (service/index_sync.c) and filters what a caller may read.
 *
 * Schema (PRAGMA user_version = IDX_SCHEMA):
 *   rows      id INTEGER PRIMARY KEY, doc BLOB(32), part INTEGER,
 *             sum BLOB(16) (the text record's checksum), UNIQUE(doc, part)
 *   passages  FTS5(body)   rowid = rows.id << IDX_PASSAGE_BITS | j
 * A part's text is indexed as passages of IDX_PASSAGE_WORDS words, one
 * every IDX_PASSAGE_STEP words (half overlapping: a fact cut by one
 * passage's edge is whole in the next), each the text's own bytes from its
 * first word to the next passage-but-one's (index.c, idx_insert_passages);
 * a part scores as its best passage.  Schema 1 indexed whole parts, and
 * BM25's length normalisation ranked a 2,000-token part holding a
 * question's rare word below short documents sharing its common words
 * (bench/RESULTS.md, the library bench); passages of one width make parts
 * of any length compete on equal terms.  The text is held twice (overlap)
 * plus FTS5's postings: 12.5 bytes per token of text on the library
 * bench (schema 1: 7.5), ~11 GB per million documents of ~900 tokens
 * (bench/RESULTS.md, "Passages in the index").
 *
 * A handle may be shared by threads (SQLite's serialized mode); processes
 * share the file through SQLite's locks (WAL, a 5 s busy timeout).
 * Errors: 0 or a negative enum idx_err with a one-line reason in why.
 */
#ifndef INDEX_INDEX_H
#define INDEX_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_ID_BYTES 32
#define IDX_SUM_BYTES 16
#define IDX_SCHEMA 2
/* 120 words (~160 tokens, about a short document's length): the library
 * bench's prototype (bench/library/passages_recall.py) found the right part
 * among the 3 best for 17 / 17 questions at 60, 120 and 250 words (9 / 17
 * as whole parts); 120 is the middle: wide enough that a question's subject
 * and its answer's words share a passage, narrow enough that one mention of
 * a rare word is not drowned by a long part's length. */
#define IDX_PASSAGE_WORDS 120u
#define IDX_PASSAGE_STEP 60u   /* half overlapping */
#define IDX_PASSAGE_BITS 20    /* passages per part: at most 1 << 20 */
#define IDX_PASSAGES_MAX (1LL << IDX_PASSAGE_BITS)
#define IDX_STR_(x) #x
#define IDX_STR(x) IDX_STR_(x) /* a number in SQL text */
#define IDX_TERMS_MAX 32     /* words of a query that are matched */
#define IDX_TERM_MAX 64      /* bytes of one word */
/* a MATCH expression of IDX_TERMS_MAX quoted words joined by " OR " */
#define IDX_MATCH_MAX (IDX_TERMS_MAX * (IDX_TERM_MAX + 6) + 1)

enum idx_err {
	IDX_OK = 0,
	IDX_ERR_NOMEM = -1,
	IDX_ERR_ARG = -2,
	IDX_ERR_IO = -3,      /* cannot open or write the file */
	IDX_ERR_CORRUPT = -4, /* not an index, or SQLite finds it damaged */
	IDX_ERR_STALE = -5,   /* another schema version: rebuild it */
	IDX_ERR_BUSY = -6     /* locked by another process past the timeout */
};

struct idx;

/* Open (creating when writable and missing) the index at path (":memory:"
 * for one in memory).  Refuses a symbolic link.  A file of another schema
 * is IDX_ERR_STALE, one SQLite cannot read IDX_ERR_CORRUPT. */
int idx_open(struct idx **out, const char *path, int read_only, char *why, size_t why_len);
void idx_close(struct idx *x);
/* Remove an index file and its WAL and shared-memory files (a rebuild). */
int idx_unlink(const char *path, char *why, size_t why_len);

/* A write transaction around many changes (faster, and all or nothing). */
int idx_begin(struct idx *x, char *why, size_t why_len);
int idx_commit(struct idx *x, char *why, size_t why_len);
void idx_rollback(struct idx *x);

/* Index text[0..len) as (doc, part) with checksum sum, replacing that
 * part's row; nothing when the row holds that sum already. */
int idx_put(struct idx *x, const uint8_t doc[IDX_ID_BYTES], unsigned part,
    const uint8_t sum[IDX_SUM_BYTES], const char *text, size_t len, char *why, size_t why_len);
/* Remove every row of doc (part < 0) or one part. */
int idx_del(struct idx *x, const uint8_t doc[IDX_ID_BYTES], long part, char *why,
    size_t why_len);
/* Every row, in (doc, part) order: fn returns non-zero to stop. */
typedef int (*idx_row_fn)(void *arg, const uint8_t doc[IDX_ID_BYTES], unsigned part,
    const uint8_t sum[IDX_SUM_BYTES]);
int idx_rows(struct idx *x, idx_row_fn fn, void *arg, char *why, size_t why_len);
/* SQLite's quick_check of the file, FTS5's integrity-check of its table
 * (on a handle opened writable: SQLite refuses it read-only) and the rows
 * against the texts: 0, or IDX_ERR_CORRUPT with the first problem. */
int idx_check(struct idx *x, char *why, size_t why_len);

/* The user's words as a safe MATCH expression (index/match.c): words are
 * runs of ASCII letters and digits and of non-ASCII UTF-8 characters
 * (invalid bytes, punctuation and FTS5's operators are separators), ASCII
 * folded to lower case, a few English question words dropped, duplicates
 * dropped, at most IDX_TERMS_MAX of at most IDX_TERM_MAX bytes (a longer
 * one cut on a character boundary), each in double quotes, joined by
 * " OR ".  out has IDX_MATCH_MAX bytes.  Returns the number of words (0:
 * out is "", nothing to search for). */
int idx_match(const char *query, size_t len, char out[IDX_MATCH_MAX]);

/* The user's words as idx_match splits them (each once, in order, NUL-
 * terminated, ASCII folded): stop, one of the question words idx_match
 * drops; name, written with an ASCII capital first somewhere but as the
 * query's first word (and not a stop word): a proper name, likely.  The
 * number of words. */
struct idx_word {
	char w[IDX_TERM_MAX + 1];
	size_t n;
	int stop, name;
};
int idx_words(const char *query, size_t len, struct idx_word words[IDX_TERMS_MAX]);

/* Grounding (index/ground.c): word is one of idx_words' (no quote can be
 * in it), matched as a prefix ("weigh" holds "weighs").  idx_parts_with:
 * the number of parts holding it, counted up to cap (a common word stops
 * early).  idx_part_has: *yes 1 when part (doc, part) holds it (0 when no
 * such part is indexed).  idx_n_parts: the parts indexed. */
int idx_parts_with(struct idx *x, const char *word, long cap, long *n, char *why,
    size_t why_len);
int idx_part_has(struct idx *x, const uint8_t doc[IDX_ID_BYTES], unsigned part,
    const char *word, int *yes, char *why, size_t why_len);
int idx_n_parts(struct idx *x, long *n, char *why, size_t why_len);

/* Searching: parts matching expr (from idx_match) best first, each once,
 * scored by their best passage's BM25 (ties: the part indexed first).
 * next: 1 with a hit (score > 0, higher is better), 0 at the end, or an
 * error.  snippet: the last hit's snippet, from its best passage,
 * NUL-terminated, one line, cut to cap on a character boundary (asked only
 * for the hits kept: it is the costly part).  The handle's lock is held
 * from begin to end. */
struct idx_search;
int idx_search_begin(struct idx *x, const char *expr, struct idx_search **out, char *why,
    size_t why_len);
int idx_search_next(struct idx_search *q, uint8_t doc[IDX_ID_BYTES], unsigned *part,
    double *score, char *why, size_t why_len);
int idx_search_snippet(struct idx_search *q, char *snippet, size_t cap, char *why,
    size_t why_len);
void idx_search_end(struct idx_search *q);

#endif /* INDEX_INDEX_H */
