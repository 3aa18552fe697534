/*
 * snapshot_internal.h: the steps of snap_layer_decode one by one, for the
 * loader (snapshot_load.c), which times them and runs them on several
 * threads.  snapshot/ only.  snap_layer_decode is, in order:
 * snap_layer_sum_check, snap_layer_unseal, snap_record_sum_check,
 * snap_layer_fill.  Every step is a pure function of its arguments (no
 * state): any thread may run any of them on its own record and layer.
 */
#ifndef SNAPSHOT_SNAPSHOT_INTERNAL_H
#define SNAPSHOT_SNAPSHOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "snapshot/snapshot.h"

/* The stored record against the header's checksum of it (snap_layer_sum:
 * BLAKE2b-128 in versions 1 to 3, XXH3-128 in 4); SNAP_ERR_CORRUPT naming
 * the layer. */
int snap_layer_sum_check(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    char *why, size_t why_len);

/* The most decoded bytes a record of this layer may declare (the zip-bomb
 * bound snap_layer_unseal enforces). */
uint64_t snap_layer_max_bytes(const struct snap_header *h, int layer);

/* The decoded record: the stored frame decompressed into dst (cap bytes,
 * at least snap_layer_max_bytes) with zstd context dctx (one thread's,
 * reused from record to record; NULL: a new one each call), *rec = dst;
 * or, when the snapshot's layers are raw (snap_record_raw), *rec = buf
 * itself, nothing copied.  *rec_len the decoded length.  Checks the frame
 * (one frame, declared size within the bound) or the raw length (within
 * the bound) first. */
int snap_layer_unseal_into(const uint8_t *buf, size_t len, const struct snap_header *h,
    int layer, ZSTD_DCtx *dctx, uint8_t *dst, size_t cap, const uint8_t **rec, size_t *rec_len,
    char *why, size_t why_len);

/* The same into a new exactly sized buffer (*rec, free it; a raw record
 * copied). */
int snap_layer_unseal(const uint8_t *buf, size_t len, const struct snap_header *h, int layer,
    uint8_t **rec, size_t *rec_len, char *why, size_t why_len);

/* The decoded record's own trailing BLAKE2b-128 (a record too short to
 * hold one passes here and is refused by snap_layer_fill; a version-4
 * record has none and passes). */
int snap_record_sum_check(const uint8_t *rec, size_t len, const struct snap_header *h,
    int layer, char *why, size_t why_len);

/* Flags of snap_layer_fill. */
#define SNAP_FILL_SUMMED 1   /* snap_record_sum_check passed: not hashed again */
#define SNAP_FILL_ONE_PASS 2 /* validate while writing: on a bad record the
                              * layer's rows are left half written (for a
                              * fresh pool the caller drops on error) */
#define SNAP_FILL_STREAM 4   /* the rotated forms' values written past the
                              * cache (hd_unpack_rows): a pool read only
                              * later, by the question's attention */

/* A decoded record into kv's layer `layer` (laid out by
 * eng_kv_prepare_layer from the header's counts): every field checked as
 * snap_layer_decode checks it.  Without SNAP_FILL_ONE_PASS the record is
 * parsed once to validate, then again to write, so a bad one leaves the
 * pool as it was. */
int snap_layer_fill(const uint8_t *rec, size_t len, const struct snap_header *h, int layer,
    struct eng_kv *kv, int flags, char *why, size_t why_len);

/* snapshot_io.c: a SNAP_ code as the SNAPIO_ code callers see; the rows
 * per head a pool needs for h's largest layer plus n_extra per head. */
int snapio_from_snap(int rc);
int64_t snap_rows_per_head(const struct snap_header *h, int64_t n_extra);

#endif /* SNAPSHOT_SNAPSHOT_INTERNAL_H */
