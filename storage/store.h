/*
 * store.h: the snapshot store (DESIGN.md §5), content-blind: it keeps
 * opaque records and knows nothing of what they hold (the codec in
 * snapshot/ does).  A document (doc_id, 32 bytes) has metadata, an optional
 * name and one or more snapshots; a snapshot (doc_id, profile_id) is a head
 * record (index STORE_HEAD_RECORD) plus records 0..n-1, all put at once.
 * Least recent use orders snapshots for prune.
 *
 * Behind this API sits a backend (store_backend.h); the first is LMDB
 * (store_lmdb.h): one environment in a state directory, five databases:
 *   docs   doc_id (32 B) → document metadata (binary layout in store_meta.c)
 *   snaps  doc_id ‖ profile_id ‖ index (u16 big-endian) → stored record
 *   names  name → doc_id
 *   lru    last_used (u64 big-endian, µs) ‖ doc_id ‖ profile_id → ∅
 *   texts  doc_id ‖ part (u32 big-endian) → text record (opaque; absent in
 *          stores written before text records: a read-only open lists none)
 *
 * A snapshot is written in one write transaction (all there or not at
 * all).  When the map is full the transaction is retried with a map twice
 * as large (again if other writers fill the grown map first; up to
 * max_map); a full disk or map is an error and the
 * store stays as it was.  Readers use their own read transactions and never
 * block the writer.  Used by the daemon and, with the daemon stopped, by the
 * CLI (LMDB's lock file arbitrates between processes).
 *
 * Errors: 0 or a negative enum store_err with a one-line reason in why.
 */
#ifndef STORAGE_STORE_H
#define STORAGE_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_ID_BYTES 32         /* doc_id, profile_id */
#define STORE_HEAD_RECORD 0xFFFFu /* index of a snapshot's head record */
#define STORE_OWNERS_MAX 64       /* uids a document's owner set holds */
#define STORE_FORMAT_MAX 47       /* bytes of a format description */

enum store_err {
	STORE_OK = 0,
	STORE_ERR_NOMEM = -1,
	STORE_ERR_ARG = -2,
	STORE_ERR_IO = -3,        /* cannot open / create the state directory or files */
	STORE_ERR_FULL = -4,      /* map or disk full: nothing was written */
	STORE_ERR_NOT_FOUND = -5,
	STORE_ERR_AMBIGUOUS = -6, /* a hex prefix that names several documents */
	STORE_ERR_CORRUPT = -7,   /* stored bytes fail their checks */
	STORE_ERR_EXISTS = -8,    /* rename onto a name in use */
	STORE_ERR_BUSY = -9       /* LMDB lock or reader table trouble */
};
const char *store_strerror(int err);

struct store;

struct store_opts {
	size_t map_size;     /* LMDB: initial map size in bytes (0: 64 MiB) */
	size_t max_map;      /* LMDB: growth limit (0: 1 TiB) */
	int read_only;       /* open without write access (CLI ls/info/verify) */
	/* redis-cluster: the ACL user (NULL or "": the default user) and
	 * password (NULL or "": no AUTH), read with store_redis_auth_file, never
	 * from argv; each connect's and command's timeout and a whole call's
	 * budget, retries included, in ms (0: 2000 and 15000). */
	const char *user, *password;
	int timeout_ms, budget_ms;
};

/* Read redis-cluster credentials from path: lines "user = NAME" and
 * "password = SECRET" (# comments, blank lines; user optional).  The file
 * must be a regular file owned by the caller (effective uid) and not
 * readable or writable by group or others: else STORE_ERR_ARG naming the
 * problem and the fix (chmod 600 / chown).  user and pass are set ("" for
 * an absent user). */
int store_redis_auth_file(const char *path, char *user, size_t user_len, char *pass,
    size_t pass_len, char *why, size_t why_len);
/* The same file's content alone, buf[0..len) (at most 4096 bytes): 0, or
 * STORE_ERR_ARG with the line at fault (user and pass then ""). */
int store_redis_auth_parse(const char *buf, size_t len, char *user, size_t user_len, char *pass,
    size_t pass_len, char *why, size_t why_len);

/* Open (creating the directory and environment if needed, unless
 * read_only) the store in dir: a state directory (LMDB), or "NAME:rest"
 * for backend NAME ("lmdb:DIR"; "redis-cluster:HOST:PORT[,HOST:PORT...]
 * [/PREFIX]" or "redis://HOST:PORT[,...]" for a Redis Cluster, see
 * docs/STORAGE.md).  Close only after every reader has ended. */
/* The directory an address names when it names LMDB (a plain directory
 * or "lmdb:DIR"); NULL for another backend's address (no local files to
 * look at: open it to learn what it holds). */
const char *store_lmdb_dir(const char *where);

int store_open(struct store **out, const char *dir, const struct store_opts *o, char *why,
    size_t why_len);
void store_close(struct store *s);

/* Metadata of one document. */
struct store_doc {
	uint8_t doc_id[STORE_ID_BYTES];
	char name[256];      /* "" when unnamed */
	char source[1024];   /* where it came from (path), free text */
	char format[STORE_FORMAT_MAX + 1]; /* what it was read as ("pdf (3 pages)",
	                      * "text (UTF-16LE)"; formats/); metadata before
	                      * version 3 reads as "text"; a put with "" keeps
	                      * the stored one */
	uint64_t bytes;      /* document size */
	uint64_t tokens;     /* document tokens */
	int64_t created_us;  /* CLOCK_REALTIME µs */
	int64_t last_used_us;
	int n_profiles;      /* snapshots stored for it */
	uint64_t stored_bytes; /* all its records, as stored */
	/* Who may read it (kvsnapd enforces it; the store only keeps it): the
	 * uids that ingested it, and whether every user may.  A put adds its
	 * owners to the stored set and may turn shared on, never off.  Metadata
	 * from before owners has none and is not shared: the daemon's own user's
	 * and root's only. */
	int shared;
	int n_owners;
	uint32_t owners[STORE_OWNERS_MAX];
};

/* 1 if uid is one of d's owners. */
int store_doc_owned(const struct store_doc *d, uint32_t uid);
/* Add uid to d's owners (nothing if it is one): 0, or STORE_ERR_FULL when
 * the set already holds STORE_OWNERS_MAX uids. */
int store_doc_add_owner(struct store_doc *d, uint32_t uid);

/* A document part's text record: opaque bytes to the store (the service
 * encodes them: service/text_record.c), kept per document and part beside
 * its snapshots, and removed with the document. */
#define STORE_TEXT_PART_MAX 0xFFFFFFFEu
struct store_text {
	unsigned part;
	const uint8_t *buf;
	size_t len;
};

/* One snapshot, as a writer hands it over: its head record and n_layer
 * records, opaque bytes (the codec, snapshot/, writes and reads them), and
 * optionally its document part's text record, written in the same
 * transaction (replacing that part's; NULL: the stored one is kept).  A
 * backend that keeps no text records (redis-cluster, today) ignores it. */
struct store_snapshot {
	uint8_t profile_id[STORE_ID_BYTES];
	const uint8_t *header;
	size_t header_len;
	const uint8_t *const *layer;
	const size_t *layer_len;
	int n_layer;
	const struct store_text *text;
	/* Another snapshot of the same document this put removes in the same
	 * transaction (`kvsnap shrink --replace`: never a moment with neither),
	 * or NULL; STORE_ERR_NOT_FOUND, nothing written, when the document has
	 * no snapshot of that profile; a backend that cannot remove one
	 * snapshot (store_rm_snapshot) refuses it with STORE_ERR_ARG. */
	const uint8_t *replaces;
};

/* Put a snapshot for document d (metadata created or updated; its name
 * claimed if given and free, else STORE_ERR_EXISTS and nothing written),
 * replacing a snapshot with the same profile.  Atomic: readers see all of
 * it or none of it. */
int store_put(struct store *s, const struct store_doc *d, const struct store_snapshot *snap,
    char *why, size_t why_len);

/* Resolve a document reference: full hex doc_id, unique hex prefix (>= 4
 * digits), or a name.  STORE_ERR_NOT_FOUND / STORE_ERR_AMBIGUOUS. */
int store_resolve(struct store *s, const char *ref, uint8_t doc_id[STORE_ID_BYTES], char *why,
    size_t why_len);

/* Reading a snapshot record by record: one consistent view (LMDB: a read
 * transaction) held by the reader handle; the returned bytes stay valid
 * until store_read_end (LMDB: pages of the transaction's map; Redis: the
 * reply the reader holds), so a loader may find every record first and
 * decode them on other threads (snapshot/snapshot_load.c).  read_begin:
 * STORE_ERR_NOT_FOUND when the snapshot has no head record. */
struct store_reader;
int store_read_begin(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], struct store_reader **out, char *why,
    size_t why_len);
/* layer = STORE_HEAD_RECORD for the header. */
int store_read_layer(struct store_reader *r, unsigned layer, const uint8_t **buf, size_t *len,
    char *why, size_t why_len);
void store_read_end(struct store_reader *r);
/* Mark a snapshot used now (moves it in the lru order; a small write). */
int store_touch(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], char *why, size_t why_len);

/* Listing: calls fn for every document (in doc_id order) with its
 * metadata; fn returns non-zero to stop.  Documents whose metadata is
 * unreadable are skipped, and the call then returns STORE_ERR_CORRUPT
 * naming the first. */
int store_ls(struct store *s, int (*fn)(void *arg, const struct store_doc *d), void *arg,
    char *why, size_t why_len);
/* The same, where one damaged document costs only itself (issue 26): bad
 * is called for each document whose metadata is unreadable, with its id
 * and a reason naming it ("metadata of document 78e925529fd6: ..."), in
 * the listing's order; fn and bad return non-zero to stop.  0 unless the
 * listing itself fails. */
typedef int (*store_bad_fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES], const char *why);
int store_ls_each(struct store *s, int (*fn)(void *arg, const struct store_doc *d),
    store_bad_fn bad, void *arg, char *why, size_t why_len);
int store_info(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], struct store_doc *d,
    char *why, size_t why_len);
/* The profiles stored for a document: fn gets each profile_id, the stored
 * bytes of that snapshot, its head record's bytes (or NULL with a reason
 * when it cannot be read; valid during the call) and its last use.  The
 * codec's snap_profiles() hands out decoded headers instead. */
int store_profiles(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    int (*fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes,
        const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len);

/* The text records of doc (NULL: of every document), in (doc_id, part)
 * order, in one consistent view: fn gets each record's bytes (valid during
 * the call); fn returns non-zero to stop.  A store without text records
 * (an older store opened read-only, a backend that keeps none) lists
 * none. */
typedef int (*store_text_fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES], unsigned part,
    const uint8_t *buf, size_t len);
int store_texts(struct store *s, const uint8_t *doc_id, store_text_fn fn, void *arg, char *why,
    size_t why_len);

/* Remove a document with all its snapshots, its text records and its name. */
int store_rm(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], char *why, size_t why_len);
/* Remove one snapshot of a document; its last one removes the document as
 * store_rm does (*doc_gone, may be NULL, is then 1).  STORE_ERR_NOT_FOUND
 * when the document has no snapshot of that profile; STORE_ERR_ARG from a
 * backend that cannot (redis-cluster, today). */
int store_rm_snapshot(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], int *doc_gone, char *why, size_t why_len);
/* Give a document a (new) name; "" removes its name.  A name has 1..255
 * bytes, no control characters, and is not 4+ hex digits alone (it would
 * read as an id prefix): else STORE_ERR_ARG. */
int store_rename(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], const char *name,
    char *why, size_t why_len);
/* A name a document may carry: 1..255 bytes, no control characters (C0,
 * DEL, C1), not a hex string of 4+ digits (resolve would read it as an id
 * prefix); else STORE_ERR_ARG with the reason.  Callers check a name before
 * any work (kvsnapd when a request arrives, the CLI before it reads). */
int store_name_check(const char *name, char *why, size_t why_len);

/* Prune snapshots, least recently used first, until every given limit
 * holds: older_than_us > 0 drops those last used before now − older_than;
 * max_bytes > 0 caps the stored bytes; keep >= 0 keeps at most that many
 * snapshots.  A document left without snapshots is removed.  dry_run
 * reports without deleting.  fn (may be NULL) is told every snapshot
 * dropped, after the commit (its return value is ignored).  An lru entry
 * that leads to no snapshot stops the prune: STORE_ERR_CORRUPT; a
 * document with damaged metadata does not (p->damaged). */
struct store_prune {
	int64_t older_than_us;
	uint64_t max_bytes;
	int64_t keep;         /* -1: no count limit */
	int dry_run;
	/* A document whose metadata is unreadable is skipped (nothing of it
	 * dropped or counted) and, when damaged is set, reported to it once
	 * with a reason naming it, after the commit. */
	void (*damaged)(void *arg, const uint8_t doc_id[STORE_ID_BYTES], const char *why);
	void *damaged_arg;
};
int store_prune(struct store *s, const struct store_prune *p,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes, int64_t last_used_us),
    void *arg, int64_t *n_dropped, uint64_t *bytes_dropped, char *why, size_t why_len);

/* One stored record of a snapshot, as verify shows it to a content check. */
struct store_rec {
	unsigned index; /* 0..n-1, or STORE_HEAD_RECORD */
	const uint8_t *buf;
	size_t len;
};
/* A content check (the codec's: snap_verify): the records of one snapshot
 * in index order, the head record last; 0 when sound, else non-zero with
 * a reason. */
typedef int (*store_check_fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES],
    const struct store_rec *rec, int n_rec, char *why, size_t why_len);

/* Verify the store (one document, or all when doc_id is NULL): metadata
 * checksums, names, lru entries, a head record present, and the content
 * check (may be NULL) on every snapshot's records.  fn gets one report per
 * snapshot (why == NULL when it is sound).  Problems that belong to no one
 * snapshot (a document's metadata or name, a name that leads nowhere) come
 * with an all-zero profile_id.  Returns STORE_ERR_CORRUPT if any report
 * failed. */
int store_verify(struct store *s, const uint8_t *doc_id, store_check_fn check,
    void *check_arg,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len);

struct store_stats {
	uint64_t n_docs, n_snapshots, stored_bytes;
	uint64_t map_size, map_used; /* bytes (LMDB's map; 0 for a backend without one) */
};
int store_stats(struct store *s, struct store_stats *st, char *why, size_t why_len);

/* doc_id of document bytes (BLAKE2b-256), and hex helpers. */
void store_doc_id(const void *bytes, size_t len, uint8_t doc_id[STORE_ID_BYTES]);
void store_hex(const uint8_t *id, size_t n, char *out /* 2n+1 */);

#endif /* STORAGE_STORE_H */
