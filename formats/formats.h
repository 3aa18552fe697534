/*
 * formats.h: a document's bytes into plain UTF-8 text, the format chosen
 * by content, never by file name.  PDF (poppler's glib API: the text of
 * every page), HTML (libxml2's HTML parser: the title, then the text with
 * block structure kept as newlines, scripts and styles dropped), Markdown
 * (cmark: the text without its markup), plain text in UTF-8 (a BOM
 * stripped), UTF-16/32 with a BOM, else Windows-1252 (every byte
 * ISO-8859-1 where Windows-1252 has none), or any encoding iconv knows
 * when the caller names it.  Anything else (executables, archives, images,
 * NUL bytes, many control bytes) is refused with a reason that says what
 * it looks like.  Hostile input is bounded: the output at `max` bytes, a
 * PDF at FMT_PDF_PAGES_MAX pages, an HTML page's elements, attributes and
 * nesting by a scan before libxml2 sees it (html_scan.c).  What libraries
 * cannot bound from inside (a PDF's inflated streams, libxml2's tree, any
 * parse's time) is bounded by fmt_extract_isolated: the parse in a child
 * process under memory and CPU limits, killed on cancel or deadline.
 *
 * Depends on common/ and the libraries only; safe to call from several
 * threads at once (fmt_init, or the first call, sets libxml2 up once).
 */
#ifndef KVSNAP_FORMATS_H
#define KVSNAP_FORMATS_H

#include <stdatomic.h>
#include <stddef.h>

/* What went wrong (fmt_extract's return; the reason says it in words). */
enum fmt_err {
	FMT_OK = 0,
	FMT_ERR_UNSUPPORTED,  /* not a document kvsnap reads: binary data, a PDF
	                       * that is damaged, encrypted or has no text layer,
	                       * bytes invalid in the named encoding, no text */
	FMT_ERR_ENCODING,     /* the caller named an encoding iconv does not know */
	FMT_ERR_TOO_LARGE,    /* the text would be over `max` bytes, or reading
	                       * it over a budget (memory, time, elements...) */
	FMT_ERR_NOMEM,
	FMT_ERR_CANCELLED     /* fmt_extract_isolated: the cancel flag was set */
};

/* The formats, by the name `info` shows. */
enum fmt_kind {
	FMT_TEXT = 0,
	FMT_MARKDOWN,
	FMT_HTML,
	FMT_PDF
};

#define FMT_NAME_MAX 48          /* the format's description, NUL included */
#define FMT_ENCODING_MAX 63      /* an encoding's name */
#define FMT_PDF_PAGES_MAX 5000   /* a PDF with more pages is refused */
/* An HTML page is refused before libxml2 parses it with more elements, or
 * one element with more attributes (libxml2 checks them for duplicates in
 * quadratic time); nested deeper than FMT_HTML_DEPTH_MAX, libxml2 stops
 * reading (its own limit), and the page is refused saying so. */
#define FMT_HTML_ELEMENTS_MAX 1000000
#define FMT_HTML_ATTRS_MAX 1000
#define FMT_HTML_DEPTH_MAX 256
/* fmt_extract_isolated's child: its data segment (heap and anonymous
 * maps: a PDF's inflated streams, libxml2's tree) and its CPU time; the
 * parent's wall-clock deadline is twice the CPU time (a busy machine). */
#define FMT_MEM_MAX ((size_t)1 << 30)
#define FMT_SECONDS_MAX 60

/* The extracted document. */
struct fmt_doc {
	char *text;               /* UTF-8, NUL-terminated (malloc'd) */
	size_t len;               /* its bytes, without the NUL */
	enum fmt_kind kind;
	int pages;                /* PDF: its page count; else 0 */
	char encoding[FMT_ENCODING_MAX + 1]; /* what the bytes were decoded from
	                          * ("UTF-8", "UTF-16LE", "WINDOWS-1252", a PDF's
	                          * and HTML's as the library read them: "") */
	char name[FMT_NAME_MAX];  /* "pdf (3 pages)", "html", "markdown", "text",
	                          * "text (UTF-16LE)", "html (WINDOWS-1252)" */
};

/* Set up the libraries once (also done by the first fmt_extract). */
void fmt_init(void);

/* Detect the format of bytes[0..len) and extract its text into *out (free
 * with fmt_doc_free).  encoding: NULL or "" to detect; else the bytes'
 * encoding, as iconv names it (a BOM for that encoding is dropped).  max:
 * the most bytes of text accepted.  0, or an enum fmt_err with a reason in
 * why (the reason starts with a verb phrase about the document: "looks like
 * binary data (an ELF executable), not a document: ..."; the caller puts
 * the file's name before it). */
int fmt_extract(const void *bytes, size_t len, const char *encoding, size_t max,
    struct fmt_doc *out, char *why, size_t why_len);
void fmt_doc_free(struct fmt_doc *d);

/* fmt_extract in a child process: the binary running now (/proc/self/exe)
 * started with posix_spawn as FMT_CHILD_ARG (its main hands it to
 * fmt_child_main before anything else), the bytes passed in a memfd, the
 * result read from a pipe.  The child runs under FMT_MEM_MAX of data and
 * FMT_SECONDS_MAX of CPU, dies with its parent (PR_SET_PDEATHSIG), and is
 * killed when *cancel (may be NULL) is set or 2 * FMT_SECONDS_MAX pass:
 * whatever it allocated is returned by its exit.  A child that ran out of
 * memory or time: FMT_ERR_TOO_LARGE naming the limit; cancelled:
 * FMT_ERR_CANCELLED.  Same arguments and results as fmt_extract. */
int fmt_extract_isolated(const void *bytes, size_t len, const char *encoding, size_t max,
    atomic_int *cancel, struct fmt_doc *out, char *why, size_t why_len);
#define FMT_CHILD_ARG "--kvsnap-extract-child"
/* A program's main calls this first: when argv is a child's (argv[1] is
 * FMT_CHILD_ARG), it extracts and exits; else it returns. */
void fmt_child_main(int argc, char **argv);

/* The name of a kind: "text", "markdown", "html", "pdf". */
const char *fmt_kind_name(enum fmt_kind k);

/* ------------------------------------------------------------------------ */
/* The steps, for the format files and the tests                            */

/* Binary data?  Its description ("an ELF executable", "NUL bytes") or NULL
 * for bytes that may be text in some 8-bit or UTF-8 encoding. */
const char *fmt_sniff_binary(const unsigned char *p, size_t len);
/* A byte order mark: its encoding's iconv name and *bom_len, or NULL. */
const char *fmt_sniff_bom(const unsigned char *p, size_t len, size_t *bom_len);
/* 1 if the text starts like HTML (after whitespace and a BOM: a doctype,
 * a comment or a common tag). */
int fmt_sniff_html(const char *p, size_t len);
/* 1 if UTF-8 text shows Markdown structure: a link, a fenced block, or
 * two kinds of markers of which one is an ATX heading, emphasis or inline
 * code (lists, quotes and underlined titles alone are plain text's too). */
int fmt_sniff_markdown(const char *p, size_t len);
/* 1 if p[0..len) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int fmt_utf8_valid(const char *p, size_t len);

/* A growing UTF-8 output bounded by max (formats/buf.c). */
struct fmt_buf {
	char *p;
	size_t len, cap, max;
	int err;                  /* FMT_ERR_TOO_LARGE or _NOMEM once failed */
};
void fmt_buf_put(struct fmt_buf *b, const char *s, size_t n);
/* Text with runs of white space as one space (pre: as it is). */
void fmt_buf_text(struct fmt_buf *b, const char *s, size_t n, int pre);
/* Ends the current line: a newline unless the output is empty or ends in
 * one; blank: also an empty line after it (paragraphs). */
void fmt_buf_break(struct fmt_buf *b, int blank);
/* Trailing white space removed, NUL-terminated; 0 or the error. */
int fmt_buf_finish(struct fmt_buf *b);
/* 0, or b's error with its reason in why: `what` ("a PDF") with over max
 * bytes of text, or out of memory. */
int fmt_buf_fail(const struct fmt_buf *b, const char *what, char *why, size_t why_len);

/* Convert from an encoding to UTF-8 (formats/text.c); 0 or an fmt_err. */
int fmt_decode(const char *p, size_t len, const char *from, size_t max, struct fmt_buf *out,
    char *why, size_t why_len);

/* The extractors (formats/pdf.c, html.c, markdown.c): text into out. */
int fmt_pdf(const void *p, size_t len, struct fmt_buf *out, int *pages, char *why,
    size_t why_len);
/* The HTML budgets, counted by a scan of the bytes: 0, or FMT_ERR_TOO_LARGE
 * naming the limit (formats/html_scan.c). */
int fmt_html_scan(const char *p, size_t len, char *why, size_t why_len);
/* encoding: "UTF-8" for decoded text; NULL: libxml2 decides (meta charset). */
int fmt_html(const char *p, size_t len, const char *encoding, struct fmt_buf *out,
    char *why, size_t why_len);
int fmt_markdown(const char *p, size_t len, struct fmt_buf *out, char *why, size_t why_len);

#endif
