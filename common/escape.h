/*
 * escape.h: untrusted bytes made fit for one line of a log or a message:
 * printable UTF-8 is kept, everything else is written as an escape, so a
 * document reference or a request path cannot start a new log line, move
 * the terminal's cursor (ESC), reorder text (bidi controls) or carry bytes
 * that are not UTF-8.  libc only.
 */
#ifndef COMMON_ESCAPE_H
#define COMMON_ESCAPE_H

#include <stddef.h>

/* Write s[0..n) into out (NUL-terminated, at most out_len - 1 bytes):
 * backslash as "\\", newline, CR and tab as "\n", "\r", "\t", other
 * control bytes, DEL and every byte of an invalid, overlong or surrogate
 * UTF-8 sequence as "\xHH", the invisible code points that break or
 * reorder lines (C1 controls, U+2028/U+2029, bidi marks, overrides and
 * isolates, U+FEFF) as "\u{HHHH}".  An escape or a character never comes
 * cut: what does not fit is left out.  Returns the bytes written. */
size_t kv_escape(char *out, size_t out_len, const char *s, size_t n);

/* 1 when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing past U+10FFFF), else 0. */
int kv_utf8_valid(const char *s, size_t n);

#endif /* COMMON_ESCAPE_H */
