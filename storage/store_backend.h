/*
 * store_backend.h: the seam between the store's front end (store.c) and a
 * backend that keeps the bytes (internal to storage/).  The front end
 * checks arguments and names, parses document references, writes the
 * error texts callers share, and dispatches every call through s->ops; a
 * backend fills in struct store_ops and nothing else sees it.  The first
 * backend is LMDB (store_lmdb*.c); a second (issue 17: a shared tier on a
 * Redis Cluster) is one more file and one more row in store.c's table.
 *
 * What every backend guarantees (the callers rely on it):
 *   - put is atomic: a reader sees every record of the new snapshot and
 *     its metadata, or none of them (LMDB: one write transaction; a
 *     key-value store: records under one hash tag, the manifest written
 *     last), and it replaces a snapshot of the same profile;
 *   - a reader (read_begin .. read_end) sees one consistent snapshot, record
 *     by record, and the bytes it hands out stay valid until the next call
 *     on that reader;
 *   - rm, rename, touch and prune change all they touch or nothing;
 *   - every snapshot has one last-use stamp, unique and ordered (prune walks
 *     them oldest first);
 *   - errors are enum store_err with a one-line reason, and a full backend
 *     is STORE_ERR_FULL with nothing written.
 * Ops may assume the front end's checks passed: s, ids and callbacks non-
 * NULL, names valid, references parsed.
 */
#ifndef STORAGE_STORE_BACKEND_H
#define STORAGE_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/fail.h"
#include "storage/store.h"

#define ST_NAME_MAX 255 /* bytes of a name, NUL excluded */
#define ST_SOURCE_MAX 1023

/* A document reference, parsed by the front end (store.c). */
enum st_ref_kind {
	ST_REF_ID,     /* 64 hex digits: key is the id */
	ST_REF_PREFIX, /* 4..63 hex digits: key holds them as high nibbles, zeros after;
	                  a prefix that matches nothing is tried as a name */
	ST_REF_NAME    /* anything else */
};
struct st_ref {
	enum st_ref_kind kind;
	const char *text; /* as the caller gave it (messages, names) */
	size_t len;
	uint8_t key[STORE_ID_BYTES];
	size_t n_digits;
};

struct st_victims;

struct store_reader;

/* Each op's signature, once: the table below points at them and each
 * backend declares its functions by them (store_lmdb.h, store_redis.h). */
typedef int store_open_op(struct store *s, const char *where, const struct store_opts *o,
    char *why, size_t why_len);
typedef void store_close_op(struct store *s);
typedef int store_put_op(struct store *s, const struct store_doc *d,
    const struct store_snapshot *snap, uint64_t payload, char *why, size_t why_len);
typedef int store_resolve_op(struct store *s, const struct st_ref *ref,
    uint8_t doc_id[STORE_ID_BYTES], char *why, size_t why_len);
typedef int store_read_begin_op(struct store_reader *r, char *why, size_t why_len);
typedef int store_read_record_op(struct store_reader *r, unsigned index, const uint8_t **buf,
    size_t *len, char *why, size_t why_len);
typedef void store_read_end_op(struct store_reader *r);
typedef int store_touch_op(struct store *s, const uint8_t *doc, const uint8_t *prof, char *why,
    size_t why_len);
typedef int store_info_op(struct store *s, const uint8_t *doc, struct store_doc *d, char *why,
    size_t why_len);
typedef int store_ls_op(struct store *s, int (*fn)(void *arg, const struct store_doc *d),
    store_bad_fn bad, void *arg, char *why, size_t why_len);
typedef int store_profiles_op(struct store *s, const uint8_t *doc,
    int (*fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes,
        const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len);
typedef int store_rm_op(struct store *s, const uint8_t *doc, char *why, size_t why_len);
typedef int store_rename_op(struct store *s, const uint8_t *doc, const char *name, char *why,
    size_t why_len);
typedef int store_prune_op(struct store *s, const struct store_prune *p, struct st_victims *v,
    char *why, size_t why_len);
typedef int store_verify_op(struct store *s, const uint8_t *doc, store_check_fn check,
    void *check_arg,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len);
typedef int store_stats_op(struct store *s, struct store_stats *st, char *why, size_t why_len);
typedef int store_texts_op(struct store *s, const uint8_t *doc, store_text_fn fn, void *arg,
    char *why, size_t why_len);
typedef int store_rm_snapshot_op(struct store *s, const uint8_t *doc, const uint8_t *prof,
    int *doc_gone, char *why, size_t why_len);

struct store_ops {
	const char *name; /* "lmdb"; a store address "NAME:rest" picks it */
	/* Open (creating unless o->read_only) the store at where; sets s->be. */
	store_open_op *open;
	store_close_op *close;

	/* snapshot put, atomic (payload: the bytes of all its records). */
	store_put_op *put;
	/* ref to a doc_id: NOT_FOUND, AMBIGUOUS (a prefix of several ids), or 0. */
	store_resolve_op *resolve;

	/* Reading a snapshot record by record (r->s, r->doc, r->prof are set;
	 * read_begin sets r->be).  read_record: STORE_ERR_NOT_FOUND for a
	 * missing head record, STORE_ERR_CORRUPT for another missing record;
	 * the bytes it returns stay valid until read_end (store.h). */
	store_read_begin_op *read_begin;
	store_read_record_op *read_record;
	store_read_end_op *read_end;

	store_touch_op *touch;
	store_info_op *info;
	/* every document to fn, every damaged one to bad (never NULL) */
	store_ls_op *ls;
	store_profiles_op *profiles;
	store_rm_op *rm;
	/* name is valid or "" (remove the name). */
	store_rename_op *rename;
	/* The lru walk and the drops (st_prune_more decides), all or nothing;
	 * victims are appended to *v (st_victims_add). */
	store_prune_op *prune;
	store_verify_op *verify;
	store_stats_op *stats;
	/* text records (NULL: the backend keeps none; store_texts lists none) */
	store_texts_op *texts;
	/* one snapshot out, the document with its last (NULL: the backend
	 * cannot; then put refuses snap->replaces too) */
	store_rm_snapshot_op *rm_snapshot;
};

/* The handle: the front end's part; the backend's state hangs off be. */
struct store {
	const struct store_ops *ops;
	void *be;
};

struct store_reader {
	struct store *s;
	uint8_t doc[STORE_ID_BYTES], prof[STORE_ID_BYTES];
	void *be;
};

/* The backends (one file or file group each). */
extern const struct store_ops store_lmdb_ops;
extern const struct store_ops store_redis_ops;     /* "redis-cluster:" (store_redis*.c) */
extern const struct store_ops store_redis_url_ops; /* "redis://": the same */

/* Prune's victims, collected by a backend's walk, reported by the front
 * end after the commit. */
struct st_victim {
	uint8_t doc[STORE_ID_BYTES], prof[STORE_ID_BYTES];
	uint64_t bytes;
	int64_t last_used_us;
};
struct st_damaged {
	uint8_t doc[STORE_ID_BYTES];
	char why[200];
};
struct st_victims {
	struct st_victim *v;
	int64_t n, cap;
	uint64_t bytes;
	struct st_damaged *bad; /* documents skipped for damaged metadata */
	int64_t n_bad, cap_bad;
};
/* 0 or STORE_ERR_NOMEM. */
int st_victims_add(struct st_victims *a, const uint8_t *doc, const uint8_t *prof,
    uint64_t bytes, int64_t last_used_us);
/* A document prune skips for its damaged metadata (once each): 0 or
 * STORE_ERR_NOMEM. */
int st_victims_damaged(struct st_victims *a, const uint8_t *doc, const char *why);
/* Must the walk go on past a snapshot last used at stamp, with n_left
 * snapshots and b_left bytes stored before dropping it?  cutoff is
 * st_prune_cutoff(p).  Each limit, once met, stays met further along the
 * walk (ages only grow, counts and bytes only shrink), so a walk stops at
 * the first keeper. */
int64_t st_prune_cutoff(const struct store_prune *p);
int st_prune_more(const struct store_prune *p, int64_t cutoff, int64_t stamp, uint64_t n_left,
    uint64_t b_left);

/* Helpers every backend may use (store.c). */
#define store_fail kv_fail /* a reason into why, err returned (common/fail.h) */
/* Short hex of an id for messages ("1a2b3c4d5e6f"): 12 digits. */
void st_short(const uint8_t *id, char out[13]);
/* libsodium initialised (once per process; metadata sums use it). */
void st_sodium(void);
#define st_now_us kv_wall_us /* the stamps' clock, µs (common/clock.h) */
/* Does id start with ref's prefix (ST_REF_PREFIX)? */
int st_ref_match(const struct st_ref *ref, const uint8_t *id);

/* Document metadata, decoded (the codec in store_meta.c; backends store
 * its bytes as the document's value). */
struct st_prof {
	uint8_t id[STORE_ID_BYTES];
	int64_t last_used_us; /* also its lru key */
	uint64_t bytes;       /* its records, as stored */
};

/* d.n_profiles and d.stored_bytes are derived from the profile table p
 * (sorted by id, unique). */
struct st_meta {
	struct store_doc d;
	int n;
	struct st_prof *p;
};

int st_meta_decode(const uint8_t *buf, size_t len, struct st_meta *m, char *why,
    size_t why_len);
size_t st_meta_size(const struct st_meta *m);
void st_meta_encode(const struct st_meta *m, uint8_t *out /* st_meta_size */);
void st_meta_free(struct st_meta *m);
int st_meta_find(const struct st_meta *m, const uint8_t *prof);
/* Insert or update a profile entry (keeps p sorted); 0 or STORE_ERR_NOMEM. */
int st_meta_set(struct st_meta *m, const uint8_t *prof, int64_t last_used_us,
    uint64_t bytes);
void st_meta_del(struct st_meta *m, int idx);
/* A put's document d over the stored one (or over a new document's copy of
 * d), the one rule of both backends: d's owners added, shared if d is, and
 * the fields d names (source and format when not empty, bytes and tokens
 * when not 0) replacing the stored ones; the name is the backend's (its
 * index).  0, or STORE_ERR_FULL with the reason when the owners are too
 * many. */
int st_doc_merge(struct store_doc *stored, const struct store_doc *d, char *why,
    size_t why_len);

#endif /* STORAGE_STORE_BACKEND_H */
