/*
 * store_internal.h: what the store's files (store.c, store_meta.c,
 * store_write.c, store_verify.c) share and nothing else sees: the handle,
 * the transaction gate that makes map growth safe, key builders, the
 * document metadata codec and the write-with-retry loop.
 *
 * Why a gate: mdb_env_set_mapsize() unmaps and remaps the file, so it may
 * only run while no transaction of this process is open (readers hold
 * pointers into the map).  Every transaction we open enters the gate and
 * leaves it when it ends; growth closes the gate, waits (bounded) for the
 * count to reach zero, remaps and reopens it.  A counter under a mutex, not a
 * pthread rwlock, because MDB_NOTLS lets a reader end on another thread than
 * the one that began it, and a rwlock must be released by its owner.
 */
#ifndef STORAGE_STORE_INTERNAL_H
#define STORAGE_STORE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

#define ST_SNAP_KEY 66  /* doc_id ‖ profile_id ‖ layer (u16 BE) */
#define ST_PREFIX 64    /* doc_id ‖ profile_id */
#define ST_LRU_KEY 72   /* last_used (u64 BE) ‖ doc_id ‖ profile_id */
#define ST_NAME_MAX 255 /* bytes of a name, NUL excluded */
#define ST_SOURCE_MAX 1023
#define ST_GROW_WAIT_S 10 /* growth waits this long for open transactions */

/* Internal result: the map is full (the write loop grows and retries). */
#define ST_MAPFULL (-100)

struct store {
	MDB_env *env;
	MDB_dbi docs, snaps, names, lru;
	size_t max_map;
	int read_only;
	char dir[512]; /* for messages */

	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int n_txn;   /* transactions open in this process */
	int growing; /* a remap is waiting for n_txn == 0 */
};

/* One snapshot as the document metadata lists it. */
struct st_prof {
	uint8_t id[STORE_ID_BYTES];
	int64_t last_used_us; /* also its lru key */
	uint64_t bytes;       /* its records, as stored */
};

/* Decoded document metadata: d.n_profiles and d.stored_bytes are derived
 * from the profile table p (sorted by id, unique). */
struct st_meta {
	struct store_doc d;
	int n;
	struct st_prof *p;
};

/* Errors (store.c): store_fail writes the reason (printf-style) into why
 * (when given) and returns err.  st_mdb maps an
 * LMDB / errno code to a store_err (ST_MAPFULL for MDB_MAP_FULL) with
 * "what: reason". */
int store_fail(char *why, size_t why_len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int st_mdb(int rc, const char *what, char *why, size_t why_len);
/* libsodium initialised (once per process; metadata sums use it). */
void st_sodium(void);
/* Short hex of an id for messages ("1a2b3c4d5e6f"): 12 digits. */
void st_short(const uint8_t *id, char out[13]);

/* Transactions through the gate (store.c). */
int st_begin(struct store *s, int write, MDB_txn **t, char *why, size_t why_len);
void st_abort(struct store *s, MDB_txn *t);
int st_commit(struct store *s, MDB_txn *t, size_t payload, char *why, size_t why_len);

/* Run op in a write transaction and commit; on a full map grow it (to at
 * least twice, or by 2×payload) and run op once more (store.c).  op returns
 * 0 to commit or an error (ST_MAPFULL included) to abort. */
typedef int (*st_op_fn)(struct store *s, MDB_txn *t, void *arg, char *why, size_t why_len);
int st_write(struct store *s, st_op_fn op, void *arg, size_t payload, char *why,
    size_t why_len);

/* Keys. */
void st_snap_key(uint8_t k[ST_SNAP_KEY], const uint8_t *doc, const uint8_t *prof,
    unsigned layer);
void st_lru_key(uint8_t k[ST_LRU_KEY], int64_t stamp, const uint8_t *doc, const uint8_t *prof);
int64_t st_lru_stamp(const uint8_t *k);
int64_t st_now_us(void);

/* Metadata codec (store_meta.c). */
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
/* Read / write the metadata of doc in t: STORE_ERR_NOT_FOUND,
 * STORE_ERR_CORRUPT (reason names the document). */
int st_meta_get(struct store *s, MDB_txn *t, const uint8_t *doc, struct st_meta *m,
    char *why, size_t why_len);
int st_meta_put(struct store *s, MDB_txn *t, const struct st_meta *m, char *why,
    size_t why_len);

/* Delete every snaps record of doc ‖ prof (prof NULL: of every profile of
 * doc); *bytes (may be NULL) gets their stored size (store_write.c). */
int st_del_records(struct store *s, MDB_txn *t, const uint8_t *doc, const uint8_t *prof,
    uint64_t *bytes, char *why, size_t why_len);

/* Remove the snapshot listed at m->p[i]: its records, its lru key and its
 * table entry; the document (and its name) goes with its last snapshot.  m
 * is updated, and written back unless the document went (store_write.c). */
int st_drop(struct store *s, MDB_txn *t, struct st_meta *m, int i, char *why, size_t why_len);

#endif /* STORAGE_STORE_INTERNAL_H */
