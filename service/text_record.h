/*
 * text_record.h: the codec of a document part's text record (internal to
 * service/): what the store keeps beside a document's snapshots so the
 * text index can be rebuilt from the store alone.  Layout (little-endian):
 *
 *   0  "KVTX"            magic
 *   4  u8 version (1), 3 bytes zero
 *   8  u32 part          the document's part (0 for a single-part one)
 *  12  u32 zero
 *  16  u64 text bytes    before compression (at most SVC_DOC_MAX)
 *  24  16 bytes          BLAKE2b-128 of bytes 0..24 ‖ the text
 *  40  a zstd frame      the text (level 3)
 *
 * The checksum is also the text's identity in the index (a row is stale
 * when its sum differs from the record's), read without decompressing.
 */
#ifndef SERVICE_TEXT_RECORD_H
#define SERVICE_TEXT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define TEXTREC_HEAD 40
#define TEXTREC_SUM 16

/* The record of text[0..len) as part `part`: *out malloc'd.  0, or -1 with
 * why (too long, out of memory, zstd's error). */
int textrec_encode(unsigned part, const char *text, size_t len, uint8_t **out, size_t *out_len,
    char *why, size_t why_len);
/* Its head alone: part and checksum.  0, or -1 with why (not a text
 * record, an unknown version, a length out of range). */
int textrec_peek(const uint8_t *buf, size_t len, unsigned *part, uint8_t sum[TEXTREC_SUM],
    char *why, size_t why_len);
/* The whole record, checked (head, frame, length, checksum): *text
 * malloc'd and NUL-terminated, at most SVC_DOC_MAX bytes.  0, or -1 with
 * why. */
int textrec_decode(const uint8_t *buf, size_t len, unsigned *part, uint8_t sum[TEXTREC_SUM],
    char **text, size_t *text_len, char *why, size_t why_len);

#endif /* SERVICE_TEXT_RECORD_H */
