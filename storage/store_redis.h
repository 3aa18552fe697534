/*
 * store_redis.h: what the redis-cluster backend's files (store_redis*.c)
 * share and nothing else sees: its state, the key layout, the manifest
 * codec, the WATCH transaction helper and the ops.  The layout and the
 * atomicity argument are in docs/STORAGE.md; in short, with P the
 * address's prefix and DOC / PROF the ids in hex:
 *
 *   P kvsnap:{DOC}:meta                  store_meta.c bytes (the truth:
 *                                        profiles, stamps, sizes, name)
 *   P kvsnap:{DOC}:PROF:manifest         generation, every record's length
 *                                        and BLAKE2b-128 (rs_manifest)
 *   P kvsnap:{DOC}:PROF:GEN:r:INDEX      a record (INDEX 65535: the head)
 *   P kvsnap:name:{NAME}                 DOC (32 bytes): the name index
 *
 * A document's keys share the hash tag {DOC}, so one slot, one master and
 * one MULTI/EXEC hold them; a put writes its records under a fresh GEN
 * first and then, in one MULTI/EXEC, the manifest and the metadata, so a
 * reader sees the old snapshot or the new one, never a mix.
 */
#ifndef STORAGE_STORE_REDIS_H
#define STORAGE_STORE_REDIS_H

#include "storage/rcluster.h"
#include "storage/store_backend.h"

#define RS_PREFIX_MAX 64
#define RS_KEY_MAX (RS_PREFIX_MAX + 2 * ST_NAME_MAX + 200)
#define RS_SUM 16
#define RS_TXN_TRIES 32 /* WATCH transactions retried this often */

struct store_redis {
	struct rcluster *c;
	char prefix[RS_PREFIX_MAX + 2]; /* "PREFIX:" or "" */
	char addr[512]; /* for messages */
	int read_only;
};

/* A snapshot's manifest, decoded: record k is the head for k == 0 and
 * layer k - 1 after. */
struct rs_manifest {
	uint64_t gen;
	int64_t stamp;
	int n; /* records, head included: 2..65535 */
	uint64_t *len;
	uint8_t (*sum)[RS_SUM];
};
/* 0, or STORE_ERR_CORRUPT with the reason (rs_manifest.c). */
int rs_manifest_decode(const uint8_t *buf, size_t len, struct rs_manifest *m, char *why,
    size_t why_len);
size_t rs_manifest_size(int n);
void rs_manifest_encode(const struct rs_manifest *m, uint8_t *out);
void rs_manifest_free(struct rs_manifest *m);
void rs_sum(const uint8_t *buf, size_t len, uint8_t out[RS_SUM]);
/* Record k of m (0 head, k layer k - 1) against buf: 0 or CORRUPT naming
 * the record, never its bytes. */
int rs_record_check(const struct rs_manifest *m, int k, const uint8_t *buf, size_t len,
    const char *what, char *why, size_t why_len);

/* Keys (store_redis.c); each returns its length. */
size_t rs_key_meta(const struct store_redis *s, char *k, const uint8_t *doc);
size_t rs_key_manifest(const struct store_redis *s, char *k, const uint8_t *doc,
    const uint8_t *prof);
size_t rs_key_record(const struct store_redis *s, char *k, const uint8_t *doc,
    const uint8_t *prof, uint64_t gen, unsigned index);
size_t rs_key_name(const struct store_redis *s, char *k, const char *name);
/* VERB followed by every record key of mf's generation (one slot: doc's),
 * ready for rc_exec; rs_records_cmd_free releases it.  0, or -1 out of
 * memory (nothing held). */
struct rs_records_cmd {
	struct rc_cmd cmd;
	const char **argv;
	size_t *len;
	char *keys;
};
int rs_records_cmd(const struct store_redis *s, const char *verb, const uint8_t *doc,
    const uint8_t *prof, const struct rs_manifest *mf, struct rs_records_cmd *rc);
void rs_records_cmd_free(struct rs_records_cmd *rc);
unsigned rs_doc_slot(const struct store_redis *s, const uint8_t *doc);
/* "what DOCSHORT/PROFSHORT" for messages. */
void rs_what(char *out, size_t n, const uint8_t *doc, const uint8_t *prof);

/* GET of one key: *r the reply (a string or nil), or an error. */
int rs_get(struct store_redis *s, const char *key, size_t klen, redisReply **r, char *why,
    size_t why_len);
/* The metadata of doc: NOT_FOUND / CORRUPT (naming the document). */
int rs_meta_get(struct store_redis *s, const uint8_t *doc, struct st_meta *m, char *why,
    size_t why_len);
/* The manifest of doc/prof: NOT_FOUND / CORRUPT. */
int rs_manifest_get(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    struct rs_manifest *mf, char *why, size_t why_len);
/* UNLINK the records of manifest mf (best effort: orphans are invisible,
 * verify sweeps them). */
void rs_records_unlink(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    const struct rs_manifest *mf);

/* A transaction on one document (store_redis_txn.c): WATCH its metadata,
 * read it (found: 0 or NOT_FOUND), let edit change m and queue commands on
 * the document's slot (rs_txn_add), then MULTI, SET meta (DEL when
 * m->n == 0 and *del), the queued commands, EXEC; retried from the WATCH
 * when another writer got there first.  edit returns 0, or an error that
 * ends the call (nothing written). */
struct rs_txn;
typedef int (*rs_edit_fn)(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found,
    void *arg, char *why, size_t why_len);
int rs_txn_add(struct rs_txn *t, int argc, const char **argv, const size_t *len);
int rs_txn(struct store_redis *s, const uint8_t *doc, rs_edit_fn edit, void *arg, char *why,
    size_t why_len);
/* Set by edit: delete the metadata instead of writing it. */
void rs_txn_delete(struct rs_txn *t);

/* Every document's metadata key (SCAN on every master); *docs gets the
 * ids, sorted, unique (store_redis_read.c). */
int rs_docs(struct store_redis *s, uint8_t (**docs)[STORE_ID_BYTES], size_t *n, char *why,
    size_t why_len);

/* The ops (their signatures: store_backend.h). */
store_put_op srd_put;
store_resolve_op srd_resolve;
store_read_begin_op srd_read_begin;
store_read_record_op srd_read_record;
store_read_end_op srd_read_end;
store_touch_op srd_touch;
store_info_op srd_info;
store_ls_op srd_ls;
store_profiles_op srd_profiles;
store_rm_op srd_rm;
store_rename_op srd_rename;
store_prune_op srd_prune;
store_verify_op srd_verify;
store_stats_op srd_stats;

/* Names (store_redis_write.c): claim name for doc (free, stale, or doc's
 * already), or EXISTS naming its holder; release it if it points at doc. */
int rs_name_claim(struct store_redis *s, const char *name, const uint8_t *doc, char *why,
    size_t why_len);
void rs_name_release(struct store_redis *s, const char *name, const uint8_t *doc);

#endif /* STORAGE_STORE_REDIS_H */
