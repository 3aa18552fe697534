/*
 * fingerprint.h: files' content fingerprints (engine/fingerprint.c,
 * engine/fingerprint_cache.c), which the model and the policies' sidecars are
 * recorded by; engine/ and its tests only.
 */
#ifndef ENGINE_FINGERPRINT_H
#define ENGINE_FINGERPRINT_H

#include <stddef.h> /* for size_t */

/* A file's content fingerprint (engine/fingerprint.c): BLAKE2b-256 of
 * p[0..n) as lowercase hex into hex[ENG_FINGERPRINT_HEX + 1]; ENG_ERR_NOMEM
 * if libsodium cannot start.  And 1 if s[0..len) is at most max hex digits
 * (either case; empty counts), the form a file's recorded fingerprint must
 * have. */
#define ENG_FINGERPRINT_HEX 64
int eng_fingerprint(const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1]);
int eng_is_hex(const char *s, size_t len, size_t max);
/* The same for the whole of file fd mapped at p[0..n), remembered between
 * runs in the user's cache directory by the file's identity, size, mtime
 * and ctime (engine/fingerprint_cache.c): a 1 GB model is hashed once. */
int eng_fingerprint_file(int fd, const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1]);

#endif /* ENGINE_FINGERPRINT_H */
