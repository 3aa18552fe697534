/*
 * snapshot_io.h: a compressed pool to and from the store, end to end:
 * the profile a snapshot is filed under, saving every record of a pool in
 * one store transaction, and loading a snapshot into a fresh pool ready for
 * a question (the codec never runs the model; the caller does).
 */
#ifndef SNAPSHOT_SNAPSHOT_IO_H
#define SNAPSHOT_SNAPSHOT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "snapshot/snapshot.h"
#include "storage/store.h"

#define SNAP_ZLEVEL_DEFAULT 3

/* Results of this module: 0 or a negative enum snapio_err, with a reason. */
enum snapio_err {
	SNAPIO_OK = 0,
	SNAPIO_ERR_NOMEM = -1,
	SNAPIO_ERR_ARG = -2,
	SNAPIO_ERR_NOT_FOUND = -3, /* no such document or snapshot */
	SNAPIO_ERR_CORRUPT = -4,   /* stored bytes fail their checks */
	SNAPIO_ERR_MISMATCH = -5,  /* a snapshot of another model or shape */
	SNAPIO_ERR_FULL = -6,      /* map or disk full: nothing written */
	SNAPIO_ERR_IO = -7,
	SNAPIO_ERR_ENGINE = -8     /* the engine refused (see the reason) */
};

/* A store status as the SNAPIO_ code a caller of this layer reports. */
int snapio_from_store(int store_rc);

/* Everything that changes a snapshot, as canonical text, and its
 * BLAKE2b-256 (profile_id): format version, model fingerprint, policy with
 * every parameter (sidecars and maps by content hash), chunk size,
 * quantization.  text gets at most SNAP_MAX_PROFILE bytes. */
int snap_profile(char *text, size_t cap, uint8_t id[SNAP_ID_BYTES], const char *model_fp,
    const struct eng_policy *p, int64_t chunk, int quant);

/* Save pool kv (of a model with n_head query heads) as the snapshot of
 * document d under profile (text, id): encode every record, then one
 * store_put.  n_tokens is the document's token count. */
int snap_save(struct store *s, const struct store_doc *d, const struct eng_kv *kv, int n_head,
    const char *model_fp, const char *profile, const uint8_t profile_id[SNAP_ID_BYTES],
    int quant, int zlevel, uint64_t n_tokens, char *why, size_t why_len);

/* The same, with the document part's text record (opaque bytes; NULL:
 * none) written in the same store transaction (store_snapshot.text). */
int snap_save_text(struct store *s, const struct store_doc *d, const struct eng_kv *kv,
    int n_head, const char *model_fp, const char *profile,
    const uint8_t profile_id[SNAP_ID_BYTES], int quant, int zlevel, uint64_t n_tokens,
    const struct store_text *text, char *why, size_t why_len);

/* The same, removing the document's snapshot `replaces` in the same store
 * transaction (`kvsnap shrink --replace`; store_snapshot.replaces). */
int snap_save_replacing(struct store *s, const struct store_doc *d, const struct eng_kv *kv,
    int n_head, const char *model_fp, const char *profile,
    const uint8_t profile_id[SNAP_ID_BYTES], int quant, int zlevel, uint64_t n_tokens,
    const uint8_t replaces[SNAP_ID_BYTES], char *why, size_t why_len);

/* Load a snapshot into a new pool for model m with room for n_extra more
 * tokens per head (question + answer); *h receives the decoded header
 * (free with snap_header_free).  Checks the model's fingerprint and shape. */
int snap_load(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct eng_kv **out, struct snap_header *h, char *why, size_t why_len);

/* Where a load's time went (snap_load_ex): the CPU seconds of each phase
 * summed over the threads that ran it (thread CPU time, so a busy machine
 * does not count the waits for a core), and the load's wall time.  Stored
 * MB over a phase's seconds / threads is that phase's speed on all the
 * threads when each has a core. */
struct snap_load_stats {
	uint64_t stored_bytes; /* header and layer records as stored */
	int threads;
	double read_s;   /* the store's reader: records found, header decoded */
	double verify_s; /* every record's checksums: as stored (XXH3-128 in
	                  * version 4, BLAKE2b-128 before) and, in versions 1
	                  * to 3, decoded (first touch of the stored bytes:
	                  * their page faults) */
	double unzip_s;  /* zstd (a raw version-4 record: its length checked) */
	double decode_s; /* fields checked, rows unpacked into the pool */
	double place_s;  /* the pool allocated and laid out, keys rotated */
	double total_s;  /* wall time of the whole load */
};

/* snap_load, measured (st: NULL for none), on the threads of kc (NULL: the
 * caller's alone).  kc must not be in use by another thread meanwhile. */
int snap_load_ex(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct kern_ctx *kc, struct eng_kv **out, struct snap_header *h,
    struct snap_load_stats *st, char *why, size_t why_len);

/* snap_load_ex into the caller's pool: *pool (NULL or a pool of an earlier
 * load, now unused) is taken again when it has this model's shape and
 * room (cleared first: nothing of its old contents is seen), else freed
 * and a new one made; on success *pool is the loaded pool, on failure
 * NULL (freed).  The same pool contents as snap_load_ex, bit for bit: a
 * caller that loads again and again (a session) keeps one pool, whose
 * pages are faulted in once, and bounds it itself (eng_kv_bytes). */
int snap_load_into(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct eng_model *m, int64_t n_extra,
    struct kern_ctx *kc, struct eng_kv **pool, struct snap_header *h,
    struct snap_load_stats *st, char *why, size_t why_len);

/* The profiles stored for a document, as store_profiles() lists them, with
 * each header record decoded: fn gets the header, or NULL and the reason
 * when it is missing or does not decode (snapshot_check.c). */
int snap_profiles(struct store *s, const uint8_t doc_id[SNAP_ID_BYTES],
    int (*fn)(void *arg, const uint8_t profile_id[SNAP_ID_BYTES], uint64_t bytes,
        const struct snap_header *h, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len);

/* store_verify() with the codec's content check: every snapshot's header
 * decodes and names its profile, and each layer record is present once and
 * passes snap_layer_check (its checksum as the header lists it, then its
 * own checksum (versions 1 to 3) and shape).  Reports and results as store_verify's. */
int snap_verify(struct store *s, const uint8_t *doc_id,
    int (*fn)(void *arg, const uint8_t doc_id[SNAP_ID_BYTES],
        const uint8_t profile_id[SNAP_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len);
/* The content check alone (a store_check_fn; arg unused). */
int snap_verify_records(void *arg, const uint8_t profile_id[SNAP_ID_BYTES],
    const struct store_rec *rec, int n_rec, char *why, size_t why_len);

/* Copy the snapshot (doc_id, profile_id) from store `from` to store `to` as
 * stored, under document metadata d (a name that is another document's in
 * `to` is dropped), verified first: every record is read and passes
 * snap_verify_records, else nothing is written (snapshot_copy.c).
 * *at_write: 0 when the read or the check failed, 1 when the put did. */
int snap_copy(struct store *from, struct store *to, const uint8_t doc_id[SNAP_ID_BYTES],
    const uint8_t profile_id[SNAP_ID_BYTES], const struct store_doc *d, int *at_write,
    char *why, size_t why_len);

/* A pool through the codec and back, in memory (no store): what a query
 * of its snapshot would see.  For benches and tests. */
int snap_roundtrip(const struct eng_kv *kv, const struct eng_model *m, int quant, int64_t n_extra,
    struct eng_kv **out, char *why, size_t why_len);

/* The same at zstd level zlevel, measured: the bytes of every record as the
 * store would keep them (layers and header; the header's profile text is
 * empty here, a stored one adds its length) and the seconds the decode into
 * a fresh pool takes (what a load spends after reading the store). */
struct snap_rt_stats {
	uint64_t bytes;
	double load_s;
};
int snap_roundtrip_measured(const struct eng_kv *kv, const struct eng_model *m, int quant,
    int zlevel, int64_t n_extra, struct eng_kv **out, struct snap_rt_stats *st, char *why,
    size_t why_len);

#endif /* SNAPSHOT_SNAPSHOT_IO_H */
