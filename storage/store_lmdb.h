/*
 * store_lmdb.h: what the LMDB backend's files (store_lmdb*.c) share and
 * nothing else sees: its state, the transaction gate that makes map growth
 * safe, key builders, metadata reads and writes, the write-with-retry loop,
 * and the ops the table in store_lmdb.c lists.
 *
 * Why a gate: mdb_env_set_mapsize() unmaps and remaps the file, so it may
 * only run while no transaction of this process is open (readers hold
 * pointers into the map).  Every transaction we open enters the gate and
 * leaves it when it ends; growth closes the gate, waits (bounded) for the
 * count to reach zero, remaps and reopens it.  A counter under a mutex, not a
 * pthread rwlock, because MDB_NOTLS lets a reader end on another thread than
 * the one that began it, and a rwlock must be released by its owner.
 */
#ifndef STORAGE_STORE_LMDB_H
#define STORAGE_STORE_LMDB_H

#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/store_backend.h"

#define ST_SNAP_KEY 66  /* doc_id ‖ profile_id ‖ layer (u16 BE) */
#define ST_PREFIX 64    /* doc_id ‖ profile_id */
#define ST_LRU_KEY 72   /* last_used (u64 BE) ‖ doc_id ‖ profile_id */
#define ST_TEXT_KEY 36  /* doc_id ‖ part (u32 BE) */
#define ST_GROW_WAIT_S 10 /* growth waits this long for open transactions */
/* Tries of one write in a full map: each retry follows a growth (ours or
 * another thread's), so this bounds only a pathological race. */
#define ST_WRITE_TRIES 32

/* Internal result: the map is full (the write loop grows and retries). */
#define ST_MAPFULL (-100)

struct store_lmdb {
	MDB_env *env;
	int fd; /* data.mdb (LMDB's descriptor), for st_file_check; -1 before the open */
	MDB_dbi docs, snaps, names, lru, texts;
	int has_texts; /* texts is open (absent from an older store opened read-only) */
	size_t max_map;
	int read_only;
	char dir[512]; /* for messages */

	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int n_txn;   /* transactions open in this process */
	int growing; /* a remap is waiting for n_txn == 0 */
};

/* Errors (store_lmdb.c): st_mdb maps an LMDB / errno code to a store_err
 * (ST_MAPFULL for MDB_MAP_FULL) with "what: reason". */
int st_mdb(int rc, const char *what, char *why, size_t why_len);
/* The end of a cursor walk: MDB_NOTFOUND (past the last key) is success
 * like 0; another code through st_mdb. */
int st_walk_end(int rc, const char *what, char *why, size_t why_len);

/* Is data.mdb as long as its newest meta page says (store_lmdb_size.c)?
 * 0, or STORE_ERR_CORRUPT naming the file and both sizes.  opened: the
 * environment is open, so a file without its two meta pages is corrupt too
 * (before the open that is left to LMDB).  _path: before the open, by
 * name; 0 when there is no file to read. */
int st_file_check(int fd, const char *dir, int opened, char *why, size_t why_len);
int st_file_check_path(const char *dir, char *why, size_t why_len);

/* Transactions through the gate (store_lmdb.c); st_begin runs
 * st_file_check first. */
int st_begin(struct store_lmdb *s, int write, MDB_txn **t, char *why, size_t why_len);
void st_abort(struct store_lmdb *s, MDB_txn *t);
int st_commit(struct store_lmdb *s, MDB_txn *t, size_t payload, char *why, size_t why_len);

/* Run op in a write transaction and commit; on a full map grow it (to at
 * least twice, or by 2×payload) and run op once more (store_lmdb.c).  op
 * returns 0 to commit or an error (ST_MAPFULL included) to abort. */
typedef int (*st_op_fn)(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len);
int st_write(struct store_lmdb *s, st_op_fn op, void *arg, size_t payload, char *why,
    size_t why_len);

/* Keys. */
void st_snap_key(uint8_t k[ST_SNAP_KEY], const uint8_t *doc, const uint8_t *prof,
    unsigned layer);
void st_lru_key(uint8_t k[ST_LRU_KEY], int64_t stamp, const uint8_t *doc, const uint8_t *prof);
int64_t st_lru_stamp(const uint8_t *k);

/* Read / write the metadata of doc in t (store_lmdb_meta.c):
 * STORE_ERR_NOT_FOUND, STORE_ERR_CORRUPT (reason names the document). */
int st_meta_get(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, struct st_meta *m,
    char *why, size_t why_len);
int st_meta_put(struct store_lmdb *s, MDB_txn *t, const struct st_meta *m, char *why,
    size_t why_len);

/* Delete every snaps record of doc ‖ prof (prof NULL: of every profile of
 * doc); *bytes (may be NULL) gets their stored size (store_lmdb_write.c). */
int st_del_records(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, const uint8_t *prof,
    uint64_t *bytes, char *why, size_t why_len);

/* Text records (store_lmdb_text.c): one part's written (replaced), every
 * part of doc deleted. */
void st_text_key(uint8_t k[ST_TEXT_KEY], const uint8_t *doc, unsigned part);
int st_text_put(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, const struct store_text *x,
    char *why, size_t why_len);
int st_del_texts(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, char *why,
    size_t why_len);

/* Remove the snapshot listed at m->p[i]: its records, its lru key and its
 * table entry; the document (its name, its text records) goes with its last snapshot.  m
 * is updated, and written back unless the document went
 * (store_lmdb_write.c). */
int st_drop(struct store_lmdb *s, MDB_txn *t, struct st_meta *m, int i, char *why,
    size_t why_len);

/* The ops (store_lmdb.c lists them; their signatures: store_backend.h). */
store_open_op stl_open;
store_close_op stl_close;
store_put_op stl_put;
store_rm_snapshot_op stl_rm_snapshot;
store_resolve_op stl_resolve;
store_read_begin_op stl_read_begin;
store_read_record_op stl_read_record;
store_read_end_op stl_read_end;
store_touch_op stl_touch;
store_info_op stl_info;
store_ls_op stl_ls;
store_profiles_op stl_profiles;
store_rm_op stl_rm;
store_rename_op stl_rename;
store_prune_op stl_prune;
store_verify_op stl_verify;
store_stats_op stl_stats;
store_texts_op stl_texts;

#endif /* STORAGE_STORE_LMDB_H */
