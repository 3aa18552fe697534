/*
 * sniff.c: what a document's bytes look like, from its content alone:
 * binary data (a table of magic numbers, NUL bytes, a high share of
 * control bytes), a byte order mark, the start of an HTML page, Markdown
 * structure, valid UTF-8.  Pure functions over the bytes.
 */
#include <string.h>

#include "common/escape.h"
#include "formats/formats.h"

/* Magic numbers at offset 0 (or `at`), most specific first. */
static const struct {
	const char *magic;
	size_t len, at;
	const char *what;
} fs_magic[] = {
	{ "\x7f" "ELF", 4, 0, "an ELF executable" },
	{ "PK\x03\x04", 4, 0, "a ZIP archive (or an Office, OpenDocument or EPUB file)" },
	{ "PK\x05\x06", 4, 0, "an empty ZIP archive" },
	{ "\x89PNG\r\n\x1a\n", 8, 0, "a PNG image" },
	{ "\x1f\x8b", 2, 0, "gzip-compressed data" },
	{ "\xff\xd8\xff", 3, 0, "a JPEG image" },
	{ "GIF87a", 6, 0, "a GIF image" },
	{ "GIF89a", 6, 0, "a GIF image" },
	{ "BZh", 3, 0, NULL }, /* bzip2 only with a block size digit: below */
	{ "\xfd" "7zXZ\0", 6, 0, "xz-compressed data" },
	{ "\x28\xb5\x2f\xfd", 4, 0, "zstd-compressed data" },
	{ "7z\xbc\xaf\x27\x1c", 6, 0, "a 7-Zip archive" },
	{ "Rar!\x1a\x07", 6, 0, "a RAR archive" },
	{ "SQLite format 3\0", 16, 0, "an SQLite database" },
	{ "\xca\xfe\xba\xbe", 4, 0, "a Java class or Mach-O universal binary" },
	{ "\xcf\xfa\xed\xfe", 4, 0, "a Mach-O executable" },
	{ "\xce\xfa\xed\xfe", 4, 0, "a Mach-O executable" },
	{ "\0asm", 4, 0, "a WebAssembly module" },
	{ "OggS", 4, 0, "an Ogg media file" },
	{ "ID3", 3, 0, "an MP3 audio file" },
	{ "fLaC", 4, 0, "a FLAC audio file" },
	{ "RIFF", 4, 0, "a RIFF media file (WAV, AVI or WebP)" },
	{ "ftyp", 4, 4, "an MP4/QuickTime media file" },
	{ "\x1a\x45\xdf\xa3", 4, 0, "a Matroska/WebM media file" },
	{ "II*\0", 4, 0, "a TIFF image" },
	{ "MM\0*", 4, 0, "a TIFF image" },
	{ "GGUF", 4, 0, "a GGUF model file" },
	{ "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 8, 0, "an old Microsoft Office file" },
	{ "ustar", 5, 257, "a tar archive" },
	{ "!<arch>\n", 8, 0, "an ar archive (a static library or .deb)" },
	{ "MZ", 2, 0, NULL }, /* a DOS/Windows executable only with a NUL: below */
};

const char *
fmt_sniff_binary(const unsigned char *p, size_t len)
{
	size_t i, n_ctl = 0;

	for (i = 0; i < sizeof(fs_magic) / sizeof(fs_magic[0]); i++) {
		size_t at = fs_magic[i].at, n = fs_magic[i].len;
		if (len < at + n || memcmp(p + at, fs_magic[i].magic, n))
			continue;
		if (fs_magic[i].what)
			return fs_magic[i].what;
		if (p[0] == 'B' && len > 3 && p[3] >= '1' && p[3] <= '9' && len > 4 && p[4] == '1')
			return "bzip2-compressed data"; /* "BZh9" then a block's 0x31 */
		if (p[0] == 'M' && memchr(p, 0, len < 512 ? len : 512))
			return "a DOS/Windows executable";
	}
	if (memchr(p, 0, len))
		return "NUL bytes";
	/* control bytes other than white space, ESC (terminal colours in a log)
	 * and SUB (an old end-of-file mark): more than 1 in 100 is not text */
	for (i = 0; i < len; i++)
		if ((p[i] < 0x20 && !strchr("\t\n\r\f\v\x1b\x1a", p[i])) || p[i] == 0x7f)
			n_ctl++;
	if (n_ctl * 100 > len)
		return "many control bytes";
	return NULL;
}

const char *
fmt_sniff_bom(const unsigned char *p, size_t len, size_t *bom_len)
{
	/* UTF-32LE's BOM starts with UTF-16LE's: the longer first */
	if (len >= 4 && !memcmp(p, "\xff\xfe\0\0", 4))
		return *bom_len = 4, "UTF-32LE";
	if (len >= 4 && !memcmp(p, "\0\0\xfe\xff", 4))
		return *bom_len = 4, "UTF-32BE";
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		return *bom_len = 3, "UTF-8";
	if (len >= 2 && !memcmp(p, "\xff\xfe", 2))
		return *bom_len = 2, "UTF-16LE";
	if (len >= 2 && !memcmp(p, "\xfe\xff", 2))
		return *bom_len = 2, "UTF-16BE";
	*bom_len = 0;
	return NULL;
}

/* Case-insensitive prefix match of an ASCII word. */
static int
fs_word(const char *p, size_t len, const char *w)
{
	size_t i, n = strlen(w);
	if (len < n)
		return 0;
	for (i = 0; i < n; i++)
		if ((p[i] | 0x20) != w[i] && p[i] != w[i])
			return 0;
	return 1;
}

int
fmt_sniff_html(const char *p, size_t len)
{
	static const char *const tags[] = {
		"!doctype html", "html", "head", "body", "title", "meta", "link", "style",
		"script", "div", "p", "h1", "h2", "h3", "table", "ul", "ol", "section",
		"article", "header", "nav", "main", "span", "a", "pre", "br", "!--",
	};
	size_t i = 0, k, n;

	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < len && strchr(" \t\r\n\f", p[i]))
		i++;
	/* an XML declaration may come first (XHTML) */
	if (fs_word(p + i, len - i, "<?xml")) {
		const char *e = memchr(p + i, '>', len - i);
		if (!e)
			return 0;
		i = (size_t)(e - p) + 1;
		while (i < len && strchr(" \t\r\n\f", p[i]))
			i++;
	}
	if (i >= len || p[i] != '<')
		return 0;
	i++;
	for (k = 0; k < sizeof(tags) / sizeof(tags[0]); k++) {
		n = strlen(tags[k]);
		if (!fs_word(p + i, len - i, tags[k]))
			continue;
		/* the tag's name ends there ("<p>", "<p class", not "<pre" for "p") */
		if (!strcmp(tags[k], "!--") || (i + n < len && strchr(" \t\r\n>/", p[i + n])))
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Markdown                                                                  */

enum { MD_HEADING, MD_FENCE, MD_LIST, MD_LINK, MD_EMPH, MD_QUOTE, MD_SETEXT, MD_N };

/* One line's block markers. */
static void
fs_md_line(const char *s, size_t n, const char *prev, size_t prev_n, int *seen)
{
	size_t i = 0, j;

	while (i < n && i < 3 && s[i] == ' ')
		i++;
	if (i == 0 && n && s[0] == '#') { /* at the margin: " # cmd" is a shell prompt */
		for (j = i; j < n && s[j] == '#'; j++)
			;
		if (j - i <= 6 && j < n && s[j] == ' ' && j + 1 < n && s[j + 1] != ' ')
			seen[MD_HEADING]++;
	}
	if (n - i >= 3 && (!memcmp(s + i, "```", 3) || !memcmp(s + i, "~~~", 3)))
		seen[MD_FENCE]++;
	if (i + 1 < n && strchr("-*+", s[i]) && s[i + 1] == ' ' && i + 2 < n && s[i + 2] != ' ')
		seen[MD_LIST]++;
	for (j = i; j < n && j < i + 9 && s[j] >= '0' && s[j] <= '9'; j++)
		;
	if (j > i && j + 1 < n && (s[j] == '.' || s[j] == ')') && s[j + 1] == ' ')
		seen[MD_LIST]++;
	if (i + 1 < n && s[i] == '>' && s[i + 1] == ' ')
		seen[MD_QUOTE]++;
	/* "===" or "---" under a line of text */
	if (prev_n && n >= 3 && (s[0] == '=' || s[0] == '-')) {
		for (j = 0; j < n && s[j] == s[0]; j++)
			;
		if (j == n && prev[0] != ' ' && prev[0] != '-' && prev[0] != '=')
			seen[MD_SETEXT]++;
	}
	/* inline: [text](target), **strong**, __strong__, `code` */
	for (j = i; j < n; j++) {
		const char *c, *e;
		if (s[j] == '[' && (c = memchr(s + j, ']', n - j)) && c + 1 < s + n && c[1] == '(' &&
		    c > s + j + 1 && (e = memchr(c, ')', (size_t)(s + n - c))) && e > c + 2 &&
		    !memchr(c, ' ', (size_t)(e - c)))
			seen[MD_LINK]++;
		if (j + 2 < n && (s[j] == '*' || s[j] == '_') && s[j + 1] == s[j] &&
		    s[j + 2] != ' ' && s[j + 2] != s[j] && j + 4 < n) {
			char m[2] = { s[j], s[j] };
			size_t k;
			for (k = j + 3; k + 1 < n; k++)
				if (s[k] == m[0] && s[k + 1] == m[1] && s[k - 1] != ' ')
					break;
			if (k + 1 < n)
				seen[MD_EMPH]++;
		}
		if (s[j] == '`' && j + 2 < n && s[j + 1] != '`' && s[j + 1] != ' ' &&
		    (c = memchr(s + j + 1, '`', n - j - 1)) && c[-1] != ' ')
			seen[MD_EMPH]++;
	}
}

int
fmt_sniff_markdown(const char *p, size_t len)
{
	int seen[MD_N] = { 0 }, kinds = 0, k;
	const char *s = p, *e, *end = p + len, *prev = "";
	size_t prev_n = 0;

	/* the first 64 KiB say enough */
	if (len > 65536)
		end = p + 65536;
	while (s < end) {
		size_t n;
		e = memchr(s, '\n', (size_t)(end - s));
		n = (size_t)((e ? e : end) - s);
		if (n && s[n - 1] == '\r')
			n--;
		fs_md_line(s, n, prev, prev_n, seen);
		prev = s;
		prev_n = n;
		if (!e)
			break;
		s = e + 1;
	}
	for (k = 0; k < MD_N; k++)
		kinds += seen[k] > 0;
	/* a link or a fence pair is Markdown by itself; lists, quotes and
	 * underlined titles are common in plain text (licenses, RFCs): they
	 * count only beside a heading, emphasis or inline code */
	return seen[MD_LINK] > 0 || seen[MD_FENCE] >= 2 ||
	    (kinds >= 2 && (seen[MD_HEADING] || seen[MD_EMPH]));
}

int
fmt_utf8_valid(const char *s, size_t len)
{
	return kv_utf8_valid(s, len);
}
