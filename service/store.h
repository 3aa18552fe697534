/*
 * store.h: the store commands (ls, info, rm, rename, stats, verify,
 * prune), written once for kvsnapd's admin jobs and the kvsnap CLI alike
 * (issue 32 item 2), and the one JSON shape of a document and of a
 * snapshot (docs/JSON.md, types `document` and `snapshot`), of a
 * library question's result and of search hits.  Included by
 * service.h, after its types; like it, it shows nothing of storage/ or
 * snapshot/.  The front ends keep their own framing: the protocol's
 * events, the CLI's lines and tables.
 */
#ifndef KVSNAP_SERVICE_STORE_H
#define KVSNAP_SERVICE_STORE_H

#include <jansson.h>
#include <stdint.h>

#define SVC_OWNERS_MAX 64        /* uids a document's owner set holds */

/* What a store command acts on: kvsnapd's local store (svc_target_of), or
 * a store the CLI opened (svc_target_open). */
struct svc_target {
	struct store *s;
	struct svc_index *ix;    /* its open text index, or NULL */
	const char *state;       /* with ix NULL: the LMDB state directory whose
	                          * text index rm and prune bring in step and a
	                          * whole-store verify checks; NULL: none */
	const struct svc_who *who; /* the caller; NULL sees all (the CLI) */
	const uint8_t *active;   /* the profile id kvsnapd answers from, or NULL */
};
/* kvsnapd's: v's store and text index, as who. */
void svc_target_of(struct svc *v, const struct svc_who *who, struct svc_target *t);
/* The CLI's: the store at addr (a state directory, or with auth_file a
 * shared tier's address and its credentials file).  0, or -1 with st:
 * SVC_AT_SHARED_AUTH (the credentials file) or SVC_AT_STORE_OPEN, a
 * STORE_ERR_ code.  index_too: t->state is addr when it is an LMDB
 * directory. */
int svc_target_open(struct svc_target *t, const char *addr, const char *auth_file,
    int read_only, int index_too, struct svc_status *st);
void svc_target_close(struct svc_target *t);
/* A STORE_ERR_ code's words (store_strerror), for a failure without a reason. */
const char *svc_store_strerror(int rc);
/* The directory of an LMDB store address ("DIR" or "lmdb:DIR"), else NULL. */
const char *svc_lmdb_dir(const char *addr);

/* A document as ls and info report it: its record, and the figures of its
 * largest snapshot (most units kept; a document in parts: the set with the
 * most parts, summed). */
struct svc_doc {
	uint8_t doc_id[SVC_ID_BYTES];
	char name[256];          /* "" when unnamed */
	char source[1024];
	char format[SVC_FORMAT_MAX + 1]; /* "" from a store before formats: "text" */
	uint64_t bytes, tokens;
	int64_t created_us, last_used_us;
	int snapshots;
	uint64_t stored_bytes;   /* all its records, as stored */
	int shared;
	int mine;                /* the caller is an owner (who NULL: 0) */
	int n_owners;
	uint32_t owners[SVC_OWNERS_MAX];
	int figured;             /* the figures below were looked for */
	struct svc_snap_figures fig; /* zeros when no header could be read */
	unsigned parts;          /* the parts it is stored in; 0: whole */
};

/* One of a document's snapshots (info). */
struct svc_snap {
	uint8_t profile_id[SVC_ID_BYTES];
	uint64_t stored_bytes;
	int64_t last_used_us;
	int readable;            /* its header was read: the members below */
	char error[512];         /* else why not */
	char profile[SVC_PROFILE_MAX];
	int quant;               /* svc_quant_name */
	int pos_slot;            /* slot positions (else the original ones) */
	struct svc_snap_figures fig;
	unsigned part, parts;    /* a part of a document in parts (parts 0: whole) */
	int active;              /* the target's active profile */
};

/* A document whose metadata cannot be read costs only itself (issue 26):
 * fn (may be NULL) gets its id and a reason that names it. */
typedef void (*svc_damaged_fn)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why);

/* ls: the documents the target's caller may read, in doc_id order (*out
 * malloc'd), with their figures when figures is set (each document's
 * snapshot headers are read).  0, or a STORE_ERR_ code with why. */
int svc_ls(const struct svc_target *t, int figures, svc_damaged_fn damaged, void *arg,
    struct svc_doc **out, size_t *n, char *why, size_t why_len);
/* One document's record (mine set, figures when figures is set).  0, or a
 * STORE_ERR_ code with why. */
int svc_doc_get(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], int figures,
    struct svc_doc *d, char *why, size_t why_len);
/* May who change d (an owner, or all; NULL: all)? */
int svc_doc_may_change(const struct svc_doc *d, const struct svc_who *who);
/* info: the document with its figures and its snapshots (*snaps
 * malloc'd).  0, or a STORE_ERR_ code with why. */
int svc_info(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], struct svc_doc *d,
    struct svc_snap **snaps, size_t *n, char *why, size_t why_len);

/* The one JSON shape of a document and of a snapshot (docs/JSON.md).
 * owners: for a caller who sees all (who NULL or all); mine: for a caller
 * (who set); active: with the target's active profile (kvsnapd). */
json_t *svc_doc_json(const struct svc_doc *d, const struct svc_who *who);
json_t *svc_snap_json(const struct svc_snap *sn, int with_active);
/* The one JSON shape of a library question's result, the members after
 * "event" (docs/PROTOCOL.md, "Library questions"): the mode, each source,
 * the answer's figures. */
json_t *svc_lib_json(const struct svc_lib_answer *a, enum svc_lib_mode mode);
/* The one JSON shape of search hits (kvsnapd's search op, `kvsnap search
 * --local --json`): an array of {doc_id, name, part, score, snippet}, best
 * first; str makes the JSON string of a name or snippet (the front end's
 * rule for bytes that are not UTF-8).  NULL on no memory. */
json_t *svc_hits_json(const struct svc_hit *hits, unsigned n, json_t *(*str)(const char *));
/* A JSON string of stored free text: bytes that are not UTF-8 become
 * U+FFFD each (never NULL but on no memory). */
json_t *svc_json_text(const char *s, size_t len);
/* A stamp for JSON: UTC, ISO 8601 ("2026-11-01T09:30:00Z"); "-" when never. */
void svc_json_time(int64_t us, char *buf, size_t cap);
/* Stored bytes per document token (0 for no tokens). */
double svc_per_token(uint64_t bytes, uint64_t tokens);

/* rm: the document, or with profile_ref (4+ hex digits of a profile id)
 * that one snapshot (the document goes with its last one); the text index
 * follows (index_why: why it did not, a warning: it is derived data). */
struct svc_removed {
	struct svc_doc doc;      /* its record before (zeros but doc_id when unreadable) */
	int one;                 /* one snapshot: profile_id */
	uint8_t profile_id[SVC_ID_BYTES];
	int gone;                /* the document went */
	char index_why[256];     /* "" unless the index could not follow */
};
/* 0, or a STORE_ERR_ code with why (a bad or ambiguous profile_ref:
 * STORE_ERR_ARG, STORE_ERR_AMBIGUOUS). */
int svc_rm(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES],
    const char *profile_ref, struct svc_removed *out, char *why, size_t why_len);
/* rename: old_name gets the name it had ("" none).  0, or a STORE_ERR_
 * code with why. */
int svc_rename(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES],
    const char *name, char old_name[256], char *why, size_t why_len);
/* stats: the store's totals (struct svc_store_totals).  0, or a STORE_ERR_
 * code with why. */
struct svc_store_totals;
int svc_stats(const struct svc_target *t, struct svc_store_totals *out, char *why,
    size_t why_len);

/* verify: every snapshot's checksums and records (of one document, or all),
 * then, when asked, every set of parts whole and (a whole-store verify
 * with t->state) the text index against the store's text records. */
struct svc_verify_req {
	const uint8_t *doc;      /* one document, or NULL: all */
	/* each snapshot checked (why NULL: sound) */
	void (*snapshot)(void *arg, const uint8_t doc_id[SVC_ID_BYTES],
	    const uint8_t profile_id[SVC_ID_BYTES], const char *why);
	/* each set of parts with parts missing; NULL: not checked */
	void (*parts)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why);
	/* each finding in the text index (svc_index_verify); NULL: not checked */
	void (*index)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], long part, int problem,
	    const char *why);
	void *arg;
};
struct svc_verified {
	long checked, corrupt, parts_bad;
	int index_checked;
	struct svc_index_verified index;
};
/* 0 (every snapshot sound), STORE_ERR_CORRUPT (counted in out), or another
 * STORE_ERR_ code with why (the text index unreadable: STORE_ERR_IO). */
int svc_verify(const struct svc_target *t, const struct svc_verify_req *rq,
    struct svc_verified *out, char *why, size_t why_len);

/* prune: the least recently used snapshots over the limits, dropped (or
 * with dry_run listed); the text index follows (index_why, a warning). */
struct svc_prune_req {
	int64_t older_than_us;   /* 0: no age limit */
	uint64_t max_bytes;      /* 0: no size limit */
	int64_t keep;            /* -1: no count limit */
	int dry_run;
	/* each snapshot dropped (or that would be); d: its document's record,
	 * NULL when unknown */
	void (*snapshot)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const struct svc_doc *d,
	    const uint8_t profile_id[SVC_ID_BYTES], uint64_t bytes, int64_t last_used_us);
	svc_damaged_fn damaged;  /* a document skipped for its metadata */
	void *arg;
};
struct svc_pruned {
	int64_t dropped;
	uint64_t bytes;
	char index_why[256];     /* "" unless the index could not follow */
};
int svc_prune(const struct svc_target *t, const struct svc_prune_req *rq,
    struct svc_pruned *out, char *why, size_t why_len);

#endif /* KVSNAP_SERVICE_STORE_H */
