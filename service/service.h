/*
 * service.h: the steps kvsnapd's jobs and `kvsnap --local` both take,
 * written once: open (model, tokenizer, profile, store), ingest, query,
 * the snapshot a document answers from, shrink.  A service call reports in
 * plain values: which step failed (enum svc_step), that module's own code
 * (an eng_err, STORE_ERR_ or SNAPIO_ value, by name here as enum
 * svc_eng_code and its kin) and a reason; turning it into a protocol
 * event or an exit code and a line on a terminal is the caller's
 * business.  Every call this program makes into storage/ for these steps
 * is in service/.  This header is the front ends' whole view of what lies
 * below: it includes none of engine/, storage/, snapshot/, formats/ or
 * index/, and struct svc and struct svc_session are opaque here
 * (service_internal.h).
 *
 * Threads: a struct svc (the model, tokenizer and store) is shared
 * read-only by every thread; a struct svc_session (an engine scratch and
 * its own policy object: policies keep per-ingest state) belongs to one
 * thread at a time.
 */
#ifndef KVSNAP_SERVICE_H
#define KVSNAP_SERVICE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The folders below (engine/, storage/, snapshot/, formats/, index/) are
 * not included: daemon/ and clients/ see them through this header only
 * (tests/sh/layers.sh).  These are opaque here. */
struct store;
struct store_doc;
struct snap_header;
struct fmt_doc;

#define SVC_ID_BYTES 32          /* a doc_id or profile_id (BLAKE2b-256) */
#define SVC_PROFILE_MAX 1024     /* a profile's canonical text, NUL included */
#define SVC_FORMAT_MAX 47        /* bytes of a format description ("pdf (3 pages)") */

/* ------------------------------------------------------------------------ */
/* Status                                                                    */

/* The step a call stopped at; `rc` says how, in that step's own codes. */
enum svc_step {
	SVC_OK = 0,
	SVC_AT_POLICY,      /* policy options (eng_err): a usage error */
	SVC_AT_MODEL,       /* loading the model (eng_err) */
	SVC_AT_TOKENIZER,   /* loading the tokenizer (eng_err) */
	SVC_AT_BIND,        /* checking the policy's files against the model (eng_err) */
	SVC_AT_PROFILE,     /* the profile description is too long */
	SVC_AT_STORE_OPEN,  /* opening the store (STORE_ERR_) */
	SVC_AT_ENGINE,      /* an engine context for a session (eng_err) */
	SVC_AT_RESOLVE,     /* a DOC reference (STORE_ERR_) */
	SVC_AT_NAME,        /* ingest: the name belongs to another document */
	SVC_AT_FORMAT,      /* reading the document's text (enum fmt_err): not a
	                     * document kvsnap reads, an unknown encoding */
	SVC_AT_LOOKUP,      /* reading a document's snapshots (STORE_ERR_) */
	SVC_AT_PICK,        /* query: no snapshot to answer from (see n_other) */
	SVC_AT_TOKENIZE,    /* tokenizing the document or question (eng_err) */
	SVC_AT_INGEST,      /* the ingest (eng_err; ENG_ERR_CANCELLED: stopped) */
	SVC_AT_COMMIT,      /* cancelled after the ingest, before storing */
	SVC_AT_SAVE,        /* storing the snapshot (SNAPIO_) */
	SVC_AT_LOAD,        /* loading the snapshot (SNAPIO_) */
	SVC_AT_GENERATE,    /* decoding (eng_err) */
	SVC_AT_SHARED_AUTH, /* open: the shared tier's credentials file (STORE_ERR_) */
	SVC_AT_SHARED,      /* query: the shared tier's copy failed its checks (SNAPIO_) */
	SVC_AT_TIER_DOWN,   /* not in the local tier, and the shared tier could not be
	                     * asked (an outage: STORE_ERR_IO): never "not found" */
	SVC_AT_SEARCH       /* a library question: the index could not be searched */
};

struct svc_status {
	enum svc_step step;
	int rc;
	char why[512];      /* the reason, without the step's own words */
};

/* The codes svc_status.rc holds, by the module its step names: the values
 * of engine/'s enum eng_err, storage/'s enum store_err, snapshot/'s enum
 * snapio_err and formats/' enum fmt_err (service/base.c checks that they
 * agree), so a front end maps an outcome to its protocol error or exit
 * code without including those folders. */
enum svc_eng_code {
	SVC_ENG_OK = 0,
	SVC_ENG_ERR_NOMEM = -1,
	SVC_ENG_ERR_IO = -10,
	SVC_ENG_ERR_FORMAT = -11,
	SVC_ENG_ERR_VERSION = -12,
	SVC_ENG_ERR_NOT_FOUND = -13,
	SVC_ENG_ERR_ARCH = -20,
	SVC_ENG_ERR_TYPE = -21,
	SVC_ENG_ERR_SHAPE = -22,
	SVC_ENG_ERR_TOKENIZER = -23,
	SVC_ENG_ERR_CONTEXT = -30,   /* more tokens than the context window */
	SVC_ENG_ERR_TOKEN = -31,
	SVC_ENG_ERR_ARG = -32,
	SVC_ENG_ERR_CANCELLED = -33, /* the cancel flag was set */
	SVC_ENG_ERR_KERNEL = -40,
	SVC_ENG_ERR_BACKEND = -41
};
enum svc_store_code {
	SVC_STORE_OK = 0,
	SVC_STORE_ERR_NOMEM = -1,
	SVC_STORE_ERR_ARG = -2,
	SVC_STORE_ERR_IO = -3,
	SVC_STORE_ERR_FULL = -4,      /* map or disk full: nothing was written */
	SVC_STORE_ERR_NOT_FOUND = -5,
	SVC_STORE_ERR_AMBIGUOUS = -6, /* a hex prefix that names several documents */
	SVC_STORE_ERR_CORRUPT = -7,
	SVC_STORE_ERR_EXISTS = -8,
	SVC_STORE_ERR_BUSY = -9
};
enum svc_snapio_code {
	SVC_SNAPIO_OK = 0,
	SVC_SNAPIO_ERR_NOMEM = -1,
	SVC_SNAPIO_ERR_ARG = -2,
	SVC_SNAPIO_ERR_NOT_FOUND = -3,
	SVC_SNAPIO_ERR_CORRUPT = -4,
	SVC_SNAPIO_ERR_MISMATCH = -5, /* a snapshot of another model or shape */
	SVC_SNAPIO_ERR_FULL = -6,
	SVC_SNAPIO_ERR_IO = -7,
	SVC_SNAPIO_ERR_ENGINE = -8
};
enum svc_fmt_code {
	SVC_FMT_OK = 0,
	SVC_FMT_ERR_UNSUPPORTED,      /* not a document kvsnap reads */
	SVC_FMT_ERR_ENCODING,         /* an encoding iconv does not know */
	SVC_FMT_ERR_TOO_LARGE,
	SVC_FMT_ERR_NOMEM,
	SVC_FMT_ERR_CANCELLED
};
/* An engine code's words (eng_strerror), for a status without a reason. */
const char *svc_eng_strerror(int rc);

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */

/* The settings that make a profile, and where things are. */
struct svc_conf {
	const char *model;       /* GGUF path */
	const char *state;       /* the store's directory; NULL: no store (the model
	                          * alone: svc_ask, svc_chat) */
	int read_only;           /* open the store read-only */
	const char *policy;      /* policy name */
	const char *opts;        /* its options; the policy's defaults are added */
	long budget;             /* units per KV head per layer, when ratio is 0 */
	double ratio;            /* > 0: the share of each document kept */
	long chunk;              /* ingest chunk size */
	int quant;               /* enum snap_quant */
	const char *shared;      /* the shared tier's store address, or NULL (tiers.c) */
	const char *shared_auth; /* its credentials file, or NULL */
	/* where the shared tier's warnings go (NULL: stderr); warn: 1 for a
	 * warning, 0 for news */
	void (*log)(void *arg, int warn, const char *msg);
	void *log_arg;
	int index;               /* open the text index now and bring it in step
	                          * (kvsnapd); else the first svc_search does */
};

/* The default profile, the one definition every client and kvsnapd start
 * from: the issue-28 rule (bench/RESULTS.md "Answers per byte" and "the
 * b-bit forms on all 13 documents"), the fewest bytes keeping >= 95 % of
 * the full cache's answers on the tuning documents of both models, picks
 * kvzip keeping 1/2 stored q6h (6-bit rows after a Hadamard rotation:
 * SmolLM2 98 %, Qwen 0.5B 98 % tuning, at 22.2 % of the full cache's fp16
 * bytes; q8 at 1/2, the default before, answered as well at 28.5 %).  The
 * budget is the --budget form's default, used only when a ratio is not
 * given. */
#define SVC_DEFAULT_POLICY "kvzip"
#define SVC_DEFAULT_BUDGET 1024L
#define SVC_DEFAULT_RATIO 0.5
#define SVC_DEFAULT_CHUNK 512L
#define SVC_DEFAULT_QUANT 6 /* SNAP_Q6_H (service/base.c checks it) */
/* The defaults before it, the latest first (kvzip 1/2 q8, then kvzip 1/4
 * fp16): a store written under one keeps answering under the default
 * (svc_pick, the latest found first). */
#define SVC_PREV_DEFAULTS 2
/* c zeroed, then the default profile (policy, opts "", budget, ratio,
 * chunk, quant); the caller sets where things are. */
void svc_conf_defaults(struct svc_conf *c);

struct svc_tier;
struct svc_index;

/* An open service: the model, tokenizer, profile, store (service_internal.h). */
struct svc;

/* The profile's settings by flag name without dashes (policy, opts,
 * budget, ratio, chunk, quant; the same names in kvsnapd.conf): 0 with
 * c's member set (policy and opts point at value: keep it alive; budget
 * also sets ratio 0, the budget form), 1 when flag is none of them, -1
 * with why = "needs ..., got 'VALUE'" (the caller names the flag). */
#define SVC_BUDGET_MIN 1
#define SVC_BUDGET_MAX (1L << 30)
#define SVC_CHUNK_MIN 1
#define SVC_CHUNK_MAX 65536
int svc_profile_flag(struct svc_conf *c, const char *flag, const char *value, char *why,
    size_t why_len);

/* What one thread runs the model with: an engine scratch and its own
 * policy object (service_internal.h). */
struct svc_session;

/* Policy (checked before the model loads), model, tokenizer, the policy
 * bound to the model, profile, store.  On failure *out is NULL. */
/* The policy step of svc_open alone (its name and options, the budget or
 * ratio), before any file is read: 0, or -1 with st (SVC_AT_POLICY). */
int svc_conf_check(const struct svc_conf *conf, struct svc_status *st);
int svc_open(struct svc **out, const struct svc_conf *conf, struct svc_status *st);
void svc_close(struct svc *v);
/* A session of `threads` threads (0: all cores) with its own policy. */
int svc_session_new(struct svc *v, int threads, struct svc_session **out,
    struct svc_status *st);
void svc_session_free(struct svc_session *ss);


/* ------------------------------------------------------------------------ */
/* Documents and their snapshots                                             */

/* A DOC reference (doc_id, unique hex prefix of 4+ digits, name, or the file
 * name ls shows when one document has it: access.c);
 * -1 with st (SVC_AT_RESOLVE, a STORE_ERR_ code, always a reason). */
int svc_resolve(struct store *s, const char *ref, uint8_t doc_id[SVC_ID_BYTES],
    struct svc_status *st);

/* Who asks (access.c).  kvsnapd: the peer's uid; all for root and the
 * daemon's own user.  A NULL svc_who sees all (`kvsnap --local`). */
struct svc_who {
	uint32_t uid;
	int all;                 /* sees and may change every document */
};
/* May w read d (an owner, shared, or all)?  Change it (an owner, or all)? */
int svc_may_read(const struct store_doc *d, const struct svc_who *w);
int svc_may_change(const struct store_doc *d, const struct svc_who *w);
/* svc_resolve as w sees the store: a document w may not read is not found
 * (the store's own words), and a hex prefix is matched among w's
 * documents when it is ambiguous among all. */
int svc_resolve_as(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st);
/* Documents as models (models.c; kvsnapd's GET /v1/models and `model`):
 * every document w may read, with an id a tool can show: its name, else
 * its file name (its source's last path part) when no other listed
 * document has that name or file name, else its doc_id in hex; never
 * `plain`, the plain model's id.  Damaged documents are left out. */
struct svc_model {
	uint8_t doc_id[SVC_ID_BYTES];
	char id[1024];
	char name[256];          /* "" when unnamed */
	char file[1024];         /* "" when the source is no path */
	int64_t created_us;
	int64_t owner;           /* its first owner's uid, or -1 */
	int shared;
};
/* The model id of a library question over everything a caller may read
 * (kvsnapd's HTTP model `library`): like the plain model's, no document's
 * listed id. */
#define SVC_LIBRARY_MODEL "library"
/* The list (malloc'd, in doc_id order): 0, or -1 with st (SVC_AT_LOOKUP). */
int svc_models(struct svc *v, const struct svc_who *w, const char *plain,
    struct svc_model **out, size_t *n, struct svc_status *st);
/* The document whose listed id is exactly id: 1 with doc_id, 0 none, -1
 * with st. */
int svc_model_find(struct svc *v, const struct svc_who *w, const char *plain, const char *id,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st);

/* The units (kept positions over every layer and KV head) of a snapshot. */
int64_t svc_snapshot_units(const struct snap_header *h);
/* A profile reference: 4 to 64 hex digits of one of the document's
 * profile ids (as info shows them) into profile_id; STORE_ERR_ARG (not
 * hex), STORE_ERR_NOT_FOUND, STORE_ERR_AMBIGUOUS, with a reason. */
int svc_profile_ref(struct store *s, const uint8_t doc_id[SVC_ID_BYTES], const char *ref,
    uint8_t profile_id[SVC_ID_BYTES], char *why, size_t why_len);

/* The size in bytes of the full fp16 KV cache of n_tokens tokens (K and V
 * of every layer and KV head): what a snapshot is compared against. */
uint64_t svc_full_cache_bytes(int64_t n_tokens, int n_layer, int n_head_kv, int head_dim);

/* The figures of one stored snapshot. */
struct svc_snap_figures {
	uint64_t bytes;          /* as stored */
	int64_t tokens;          /* the document's tokens */
	int64_t units;           /* kept positions over every layer and KV head */
	int64_t full_units;      /* tokens x layers x KV heads */
	uint64_t full_bytes;     /* svc_full_cache_bytes */
};
/* A snapshot's figures from its decoded header and stored size. */
void svc_snap_figures(const struct snap_header *h, uint64_t bytes, struct svc_snap_figures *f);

#define SVC_PICK_LISTED 4 /* other profiles kept for the advice */

/* What svc_pick found among a document's snapshots. */
struct svc_picked {
	int found;               /* a snapshot to answer from */
	uint8_t profile_id[SVC_ID_BYTES]; /* it, when found (in parts: part 0's) */
	struct svc_snap_figures fig; /* its figures, when found (in parts: summed) */
	unsigned n_parts;        /* found in parts: their count (svc_parts_list); else 0 */
	unsigned parts_have, parts_of; /* an incomplete set of this profile's parts (an
	                          * ingest stopped between parts): parts stored, of */
	int n_other;             /* snapshots of other profiles (not answerable) */
	int n_listed;            /* of them, the profiles kept in `other` */
	char other[SVC_PICK_LISTED][SVC_PROFILE_MAX];
};

/* The one rule for the snapshot a document answers from, for kvsnapd and
 * `kvsnap --local` alike: this profile's, else one `shrink` cut to exactly
 * this profile's budget, else, when this is the default profile (its
 * chunk size may differ), one stored under a previous default with the
 * same chunk size (SVC_PREV_DEFAULTS, the latest first; one-part
 * documents): an old store
 * keeps answering, and a plain ingest skips it as stored; nothing else.  0 with pk filled (pk->found 0: no
 * such snapshot), -1 with st (SVC_AT_LOOKUP). */
int svc_pick(struct svc *v, const uint8_t doc_id[SVC_ID_BYTES], struct svc_picked *pk,
    struct svc_status *st);
/* Documents longer than the window, in parts (parts.c; issue 29): part I of
 * N (N >= 2) is a snapshot under the profile text with " part=I/N" added
 * (svc_part_profile: the text and its id); one-part documents are stored as
 * before.  svc_pick finds a document in parts when every part of one set is
 * stored (several sets of other counts: the one stored or used last), and
 * a set with parts missing answers from none of them. */
#define SVC_PARTS_MAX 1024       /* parts of one document */
int svc_part_profile(const char *base, unsigned part, unsigned n, char *text, size_t cap,
    uint8_t id[SVC_ID_BYTES]);
/* 1 when profile is a part's (base_len: the base profile's length), else 0. */
int svc_part_parse(const char *profile, size_t *base_len, unsigned *part, unsigned *n);
struct svc_part_info {
	unsigned part;
	uint8_t profile_id[SVC_ID_BYTES];
	struct svc_snap_figures fig;
	int64_t last_used_us;
};
/* The parts of doc for v's profile, in order (*out malloc'd; *n 0 when it
 * is not stored in parts).  0, or -1 with st (SVC_AT_LOOKUP). */
int svc_parts_list(struct svc *v, const uint8_t doc_id[SVC_ID_BYTES], struct svc_part_info **out,
    unsigned *n, struct svc_status *st);
/* verify: fn gets each set of parts of doc (any profile) with parts
 * missing.  The count of such sets, or -1 with why. */
int svc_parts_check(struct store *s, const uint8_t doc_id[SVC_ID_BYTES],
    void (*fn)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why), void *arg,
    char *why, size_t why_len);

/* The same rule over another store (the shared tier's). */
int svc_pick_in(struct svc *v, struct store *s, const uint8_t doc_id[SVC_ID_BYTES],
    struct svc_picked *pk, struct svc_status *st);

/* A stored profile in words: "kvzip ratio 0.5, chunk 512, q8" (the
 * policy, its ratio or budget, a shrink's source, chunk, quantization;
 * "another model" when its fingerprint is not v's). */
void svc_profile_words(const struct svc *v, const char *profile, char *out, size_t cap);
/* The flags of `kvsnap --local` that select a stored profile:
 * "--policy kvzip --budget 64 --chunk 128 --quant fp16 [--opts K=V,...]"
 * (the options that differ from the policy's defaults; file options,
 * stored by fingerprint, are left to their defaults). */
void svc_profile_flags(const char *profile, char *out, size_t cap);

/* ------------------------------------------------------------------------ */
/* Ingest and query                                                          */

/* Where an ingest or query reports as it goes (any member may be NULL). */
struct svc_hooks {
	/* ingest: stage "tokenized" (0, tokens) once, then "prefill" (done,
	 * total) after every chunk; a document in parts: "part" (K, N) before
	 * part K of N (from 1), then its own "tokenized" and "prefill" */
	void (*progress)(void *arg, const char *stage, int64_t done, int64_t total);
	/* query: one generated token's text (id -1: the bytes held back at the
	 * end) */
	void (*token)(void *arg, int32_t id, const char *text, size_t len);
	void *arg;
	/* set from any thread to stop: read after every chunk or token, and a
	 * last time before storing (ingest: SVC_AT_COMMIT) or marking the
	 * snapshot used (query: the answer says `cancelled`) */
	atomic_int *cancel;
};

/* Stop sequences (stop.c): the answer's text matched, as it is decoded,
 * against up to SVC_STOP_MAX strings across token boundaries.  The text
 * that could still begin a stop string is held back until it is decided;
 * at a match the text before it is handed on and the rest is dropped. */
#define SVC_STOP_MAX 4
#define SVC_STOP_LEN_MAX 256 /* bytes of one stop string */
typedef void (*svc_stop_out)(void *arg, const char *text, size_t len);
struct svc_stopper {
	const char *const *stops; /* borrowed */
	size_t n;
	char held[SVC_STOP_LEN_MAX]; /* text that may begin a stop string */
	size_t n_held;
	int matched;             /* the stop string that matched, or -1 */
};
/* 0 when stops[0..n) are a valid set (at most SVC_STOP_MAX, each 1 to
 * SVC_STOP_LEN_MAX bytes), else -1 with why. */
int svc_stops_check(const char *const *stops, size_t n, char *why, size_t why_len);
void svc_stopper_init(struct svc_stopper *s, const char *const *stops, size_t n);
/* Hand text on through out as far as it is decided; 1 once a stop string
 * matched (then nothing more is handed on), else 0. */
int svc_stopper_feed(struct svc_stopper *s, const char *text, size_t len, svc_stop_out out,
    void *arg);
/* The end of the answer: the held-back text (no stop string came) on. */
void svc_stopper_flush(struct svc_stopper *s, svc_stop_out out, void *arg);

struct svc_ingest_req {
	const char *text;        /* the document's bytes (any format formats/ reads) */
	size_t len;
	const char *encoding;    /* NULL: detected; else its encoding (iconv's name) */
	const char *name;        /* "" or NULL: none */
	const char *source;      /* a description of where it came from */
	int skip_stored;         /* skip a document this profile already holds */
	int check_name;          /* refuse a name of another document before the work */
	const struct svc_who *who; /* recorded as an owner (NULL: none recorded);
	                            * a stored document is skipped only when who
	                            * may read it, else ingested again (no leak) */
	int share;               /* readable by every user (never turned off) */
	int64_t part_tokens;     /* > 0: a document longer is stored in parts of at most
	                          * this many tokens (never more than the window's
	                          * limit); 0: parts only past that limit */
};

struct svc_ingested {
	uint8_t doc_id[SVC_ID_BYTES];
	char hex[2 * SVC_ID_BYTES + 1];
	int skipped;             /* already stored for this profile */
	char format[SVC_FORMAT_MAX + 1]; /* what it was read as ("pdf (3 pages)") */
	int64_t tokens, units;
	unsigned parts;          /* stored in parts: their count (skipped too); else 0 */
	double seconds;
	struct svc_snap_figures fig; /* the stored snapshot (skipped too; in parts: summed);
	                          * bytes 0: unknown */
	int from_shared;         /* skipped: copied from the shared tier, no model pass */
	int shared;              /* the shared tier holds the snapshot now: 1, it does not
	                          * (shared_why says why): 0, no shared tier: -1 */
	char shared_why[256];
	/* skipped with a name asked for (issue 30): 1 named so now, 0 already
	 * so or none asked, -1 not named (name_why says why) */
	int named;
	char name_why[256];
};

/* The most bytes of text a document may extract to (the daemon's and the
 * CLI's limit on a document's bytes). */
#define SVC_DOC_MAX ((size_t)64 << 20)

/* A document's text (formats/: the format by content; encoding NULL to
 * detect) into *out (fmt_doc_free), read in a child process under the
 * parser budgets (fmt_extract_isolated: memory, CPU and wall time; killed
 * when *cancel, which may be NULL, is set).  0, or -1 with st
 * (SVC_AT_FORMAT, an enum fmt_err, the reason without the document's name;
 * cancelled: SVC_AT_INGEST, ENG_ERR_CANCELLED, as an ingest cancelled
 * later). */
int svc_extract(const void *bytes, size_t len, const char *encoding, atomic_int *cancel,
    struct fmt_doc *out, struct svc_status *st);
/* The doc_id of a document's bytes: the hash of its extracted text (what
 * svc_ingest files it under).  0, or -1 with st as svc_extract. */
int svc_doc_id(const void *bytes, size_t len, const char *encoding, atomic_int *cancel,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st);

/* Extract the text (refused before any model work when it is not a
 * document kvsnap reads), hash it, (skip), tokenize as the start of a user
 * turn, chunked ingest with the session's policy, one store transaction.
 * A document longer than the window's limit (or part_tokens) is split
 * (split.h) and each part ingested and stored in turn, one transaction
 * each (parts.c says what an ingest stopped between parts leaves).
 * 0, or -1 with st. */
int svc_ingest(struct svc *v, struct svc_session *ss, const struct svc_ingest_req *r,
    const struct svc_hooks *hk, struct svc_ingested *out, struct svc_status *st);
/* svc_ingest in its steps, for a caller that runs the shared tier's part
 * on another thread than the model's (kvsnapd's tier worker, so no model
 * worker waits on the network; issue 26).  svc_ingest is these in order.
 *  begin: extract, hash, the name check, the local skip (out->skipped);
 *    no shared tier.  0 with *pd (svc_ingest_end), or -1 with st.
 *  tier: the shared tier's part before the model (network): a document
 *    skipped locally is copied there if it lacks it; else one the tier
 *    holds for this profile (readable by the caller) is copied in and
 *    skipped (out->from_shared).  1 when the ingest is done (skipped), 0
 *    when the model step follows (always 0 without a shared tier).
 *  model: tokenize, chunked ingest, the local store's transaction (a
 *    model worker's; no network).  0, or -1 with st.
 *  publish: the stored snapshot to the shared tier (network); a failure is
 *    a warning in out->shared / shared_why (an outage: queued, copied
 *    there when the tier is back). */
struct svc_ingest_doc;
int svc_ingest_begin(struct svc *v, const struct svc_ingest_req *r, const struct svc_hooks *hk,
    struct svc_ingest_doc **pd, struct svc_ingested *out, struct svc_status *st);
int svc_ingest_tier(struct svc *v, struct svc_ingest_doc *pd, struct svc_ingested *out);
int svc_ingest_model(struct svc *v, struct svc_session *ss, struct svc_ingest_doc *pd,
    const struct svc_hooks *hk, struct svc_ingested *out, struct svc_status *st);
void svc_ingest_publish(struct svc *v, struct svc_ingest_doc *pd, struct svc_ingested *out);
void svc_ingest_end(struct svc_ingest_doc *pd);

/* One message of a conversation (the chat template's turns). */
struct svc_msg {
	const char *role;        /* "system", "user", "assistant" */
	const char *content;
	size_t len;
};

struct svc_query_req {
	const uint8_t *doc_id;   /* resolved (svc_resolve) */
	const char *question;
	size_t question_len;
	/* optional: the question as a conversation, its messages turns of the
	 * chat template after the document (eng_chat_followup_ids: a first user
	 * message continues the document's turn; a system message first follows
	 * the document's turn); then the question above is not used.  A
	 * conversation the template refuses is SVC_AT_TOKENIZE, ENG_ERR_ARG */
	const struct svc_msg *msgs;
	size_t n_msgs;
	int64_t max_tokens;
	int whole_utf8;          /* token texts end on whole UTF-8 characters */
	float temperature;       /* 0 (the default when zeroed): greedy */
	float top_p;             /* nucleus share in (0, 1]; 0 is taken as 1 (off) */
	uint64_t seed;           /* the sampler's seed (temperature > 0) */
	int local_only;          /* never ask the shared tier (the caller did: kvsnapd's
	                          * tier worker, svc_tier_prefetch) */
	const char *const *stop; /* stop sequences (svc_stops_check), or NULL */
	size_t n_stop;
};
/* Why decoding ended. */
enum svc_stop {
	SVC_STOP_EOS = 0,        /* the model ended its turn */
	SVC_STOP_LENGTH,         /* max_tokens reached */
	SVC_STOP_CANCELLED,      /* the cancel flag was set */
	SVC_STOP_SEQUENCE        /* a stop sequence matched (svc_answer.stop_index) */
};
/* "eos", "length", "cancelled", "stop_sequence": the stop reason's name in
 * every output. */
const char *svc_stop_name(enum svc_stop stop);

struct svc_answer {
	uint8_t profile_id[SVC_ID_BYTES]; /* the snapshot answered from */
	int n_other;             /* SVC_AT_PICK: snapshots of other profiles */
	struct svc_picked pick;  /* the pick in full (the two above are from it) */
	int64_t prompt_tokens;   /* the question's tokens */
	int64_t tokens;          /* token callbacks */
	int64_t generated;       /* eng_generate's count */
	int cancelled;           /* the cancel flag was set when decoding ended */
	enum svc_stop stop;      /* why decoding ended */
	int stop_index;          /* SVC_STOP_SEQUENCE: which stop sequence matched */
	double ttft, seconds;
	int from_shared;         /* the snapshot came from the shared tier (now local too) */
};

/* Pick the snapshot, load it, prefill the question over it, decode with
 * the token hook, touch.  0, or -1 with st. */
int svc_query(struct svc *v, struct svc_session *ss, const struct svc_query_req *r,
    const struct svc_hooks *hk, struct svc_answer *out, struct svc_status *st);

/* A question over several documents' snapshots, no text read again
 * (library.c; issue 29).  side: the snapshots placed side by side in one
 * cache (eng_kv_concat) and answered once; parts: each answered alone and
 * the answer of the highest mean log-probability kept; pick: each scores
 * the question (its mean log-probability given the document) and the
 * best answers alone.  The answer is
 * decoded in full before it is handed on: below min_conf (its mean
 * log-probability) the reply is the abstention, one text saying the
 * library does not contain the answer and naming the documents consulted. */
#define SVC_LIB_MAX 16           /* documents of one library question */
/* The default threshold, chosen on the tuning half of bench/library_qa
 * (bench/RESULTS.md, "Library questions"). */
#define SVC_LIB_MIN_CONF_DEFAULT (-0.40)
/* The answer tokens judged before any is handed on (svc_lib_req), chosen
 * on the tuning questions of the library bench (bench/RESULTS.md). */
#define SVC_LIB_JUDGE_DEFAULT 5
enum svc_lib_mode {
	SVC_LIB_SIDE = 0,        /* side by side, one answer */
	SVC_LIB_PARTS = 1,       /* part by part, the surest answer */
	SVC_LIB_PICK = 2         /* part by part, the likeliest question answers (the default) */
};
/* The mode a library question takes when none is asked for (bench/RESULTS.md). */
#define SVC_LIB_DEFAULT_MODE SVC_LIB_PICK
const char *svc_lib_mode_name(enum svc_lib_mode mode);
/* "side", "parts" or "pick": 0, else -1. */
int svc_lib_mode_parse(const char *s, enum svc_lib_mode *out);
#define SVC_LIB_PART_ALL 0xFFFFFFFFu /* svc_lib_req.parts: the whole document */
struct svc_lib_req {
	const uint8_t (*docs)[SVC_ID_BYTES]; /* resolved, in retrieval order */
	size_t n_docs;           /* 1 to SVC_LIB_MAX */
	/* each document's part (NULL: every one SVC_LIB_PART_ALL): a document
	 * stored in parts is consulted as its parts, each a source, as many as
	 * SVC_LIB_MAX sources hold */
	const unsigned *parts;
	const char *question;
	size_t question_len;
	int64_t max_tokens;
	enum svc_lib_mode mode;
	double min_conf;         /* abstain below it; -HUGE_VAL: never */
	float temperature, top_p;
	uint64_t seed;
	int whole_utf8;
	int local_only;          /* never ask the shared tier */
	const char *const *stop;
	size_t n_stop;
	/* side, pick: the answer's first tokens whose mean log-probability is
	 * judged against min_conf before any is handed on (the rest then
	 * streams as decoded); 0: SVC_LIB_JUDGE_DEFAULT */
	int64_t judge_tokens;
};
struct svc_lib_source {
	uint8_t doc_id[SVC_ID_BYTES];
	unsigned part, n_parts;  /* a document in parts: this part (from 0) of n_parts;
	                          * else 0 and 0 */
	char label[256];         /* its name, else file name, else 12 hex digits; a part:
	                          * " (part K/N)" added, K from 1 */
	int used;                /* consulted (placed, or answered alone) */
	char why[160];           /* not consulted: why */
	double score;            /* parts: its answer's mean log-probability; pick: the
	                          * question's given it; side: NaN */
	double bm25;             /* svc_library_search: its retrieval score; else NaN */
	int64_t tokens;          /* the document's tokens */
};
struct svc_lib_answer {
	struct svc_lib_source src[SVC_LIB_MAX]; /* each document once, in request order */
	size_t n_src;
	int chosen;              /* parts, pick: the source answered from; side: -1 */
	double confidence;       /* the answer's mean log-probability (end of turn included) */
	int abstained;           /* the reply is the abstention text */
	int64_t prompt_tokens, tokens, generated;
	enum svc_stop stop;
	int stop_index;
	int cancelled;
	double judged_confidence; /* side, pick: the judged first tokens' mean (parts: the
	                          * whole answer's) */
	int64_t judged_tokens;   /* how many tokens it is over (the end of turn included) */
	double ttft;             /* to the first token handed on (after the judged tokens) */
	double ttft_model;       /* to the model's first answer token */
	double seconds;
};
/* 0, or -1 with st: SVC_AT_PICK (no document has a snapshot of this
 * profile), SVC_AT_LOOKUP, SVC_AT_SHARED / _TIER_DOWN, SVC_AT_TOKENIZE,
 * SVC_AT_LOAD, SVC_AT_GENERATE. */
int svc_library(struct svc *v, struct svc_session *ss, const struct svc_lib_req *r,
    const struct svc_hooks *hk, struct svc_lib_answer *out, struct svc_status *st);
/* A library question over everything w may read (NULL: all): the k best
 * parts svc_search finds for the question (k 0: SVC_LIB_SEARCH_K), their
 * documents (once each, best first) as r's documents to svc_library
 * (r->docs is not read); nothing found: the abstention, naming no
 * document.  -1 with st as svc_library's, or SVC_AT_SEARCH (no index). */
#define SVC_LIB_SEARCH_K 3
/* A question to one document stored in parts (`query DOC` when svc_pick
 * says n_parts): svc_library over its parts, r->docs[0] the document; over
 * SVC_LIB_MAX parts, the ones svc_search ranks best for the question
 * (then the first ones in order).  Returns as svc_library. */
int svc_library_doc(struct svc *v, struct svc_session *ss, const struct svc_lib_req *r,
    const struct svc_hooks *hk, struct svc_lib_answer *out, struct svc_status *st);
int svc_library_search(struct svc *v, struct svc_session *ss, const struct svc_who *w,
    const struct svc_lib_req *r, unsigned k, const struct svc_hooks *hk,
    struct svc_lib_answer *out, struct svc_status *st);

/* The plain model, no document (chat.c). */
struct svc_chat_req {
	const struct svc_msg *msgs; /* the conversation (chat template), or NULL: */
	size_t n_msgs;
	const char *prompt;      /* a raw prompt (control tokens parsed, no template) */
	size_t prompt_len;
	int64_t max_tokens;      /* cut to what the model's window leaves (stop: length) */
	int whole_utf8;
	float temperature, top_p;
	uint64_t seed;
	const char *const *stop; /* stop sequences (svc_stops_check), or NULL */
	size_t n_stop;
};
/* Tokenize, prefill into a fresh cache, decode with the token hook.  0, or
 * -1 with st: SVC_AT_TOKENIZE (ENG_ERR_CONTEXT: the prompt fills the
 * window; ENG_ERR_ARG: it is empty), SVC_AT_ENGINE, SVC_AT_GENERATE.
 * out: prompt_tokens, tokens, generated, stop, cancelled, ttft, seconds. */
int svc_chat(struct svc *v, struct svc_session *ss, const struct svc_chat_req *r,
    const struct svc_hooks *hk, struct svc_answer *out, struct svc_status *st);

/* `kvsnap ask` (ask.c): a document and a question in one process, nothing
 * stored (v opened without a store: svc_conf.state NULL). */
struct svc_doc_text {
	char *text;              /* UTF-8, NUL-terminated (malloc'd) */
	size_t len;
};
/* A document's text as svc_ingest reads it (svc_extract: formats/ in a
 * child process); svc_doc_text_free.  0, or -1 with st (SVC_AT_FORMAT). */
int svc_doc_text(const void *bytes, size_t len, struct svc_doc_text *t, struct svc_status *st);
void svc_doc_text_free(struct svc_doc_text *t);
struct svc_ask_req {
	const char *doc;         /* the document's text (svc_doc_text) */
	size_t doc_len;
	const char *question;
	size_t question_len;
	int64_t max_tokens;      /* answer tokens at most */
	int compare;             /* also time a full re-prefill of document and question */
};
struct svc_asked {
	const char *policy;      /* the session's policy, by name */
	int64_t doc_tokens, question_tokens, generated;
	int64_t kept;            /* units the cache kept over every layer and KV head */
	double full_units;       /* doc_tokens x layers x KV heads */
	double ingest_s;         /* the chunked ingest */
	double ttft_s;           /* the question's prefill to the first token */
	double full_s;           /* compare: the full re-prefill */
};
/* The chunked ingest with ss's policy, the question over the compressed
 * cache, a greedy answer token by token to hk->token (each token's text as
 * decoded).  0, or -1 with st, st->why the whole message:
 * SVC_AT_TOKENIZE (ENG_ERR_CONTEXT: document, question and answer exceed
 * the window), SVC_AT_ENGINE, SVC_AT_INGEST, SVC_AT_GENERATE. */
int svc_ask(struct svc *v, struct svc_session *ss, const struct svc_ask_req *r,
    const struct svc_hooks *hk, struct svc_asked *out, struct svc_status *st);

/* `kvsnap tokenize` (tokenize.c): text's ids by model's tokenizer alone
 * (special: control tokens written in the text are parsed); *ids malloc'd.
 * 0, or -1 with st: SVC_AT_MODEL (the GGUF), SVC_AT_TOKENIZER,
 * SVC_AT_TOKENIZE. */
int svc_tokenize(const char *model, const char *text, size_t len, int special, int32_t **ids,
    int64_t *n, struct svc_status *st);

/* ------------------------------------------------------------------------ */
/* Shrink                                                                    */

/* What a shrink made. */
struct svc_shrunk {
	uint8_t profile_id[SVC_ID_BYTES]; /* the new snapshot's profile */
	char profile[SVC_PROFILE_MAX];
	int64_t units_from;                /* units of the snapshot it was cut from */
	int64_t units;                     /* units kept */
	uint64_t n_tokens;                 /* the document's tokens */
	int replaced;                      /* the source went in the same transaction */
	uint8_t from_id[SVC_ID_BYTES];    /* the source's profile */
};

/* Derive a snapshot of doc keeping share `ratio` of its units from its
 * largest kvzip snapshot, by the stored scores (no model run), and store
 * it under the kvzip profile with ratio=R,from=<the source's budget form>;
 * with replace the source is removed in the same store transaction.
 * Returns SNAPIO_OK, SNAPIO_ERR_NOT_FOUND (no kvzip snapshot to cut),
 * SNAPIO_ERR_ARG (a ratio that keeps no fewer units than the source),
 * SNAPIO_ERR_CORRUPT / _MISMATCH / _FULL / _IO / _NOMEM, with a reason. */
int svc_shrink(struct svc *v, const uint8_t doc[SVC_ID_BYTES], double ratio, int replace,
    struct svc_shrunk *out, char *why, size_t why_len);

/* 1 if stored profile `have` is `want` with one ",from=..." option added
 * to its policy: a snapshot svc_shrink cut to exactly that profile's
 * budget, which a reader of `want` may answer from. */
int svc_profile_is_shrunk(const char *have, const char *want);

/* ------------------------------------------------------------------------ */
/* The shared tier (tiers.c)                                                 */

/* A second store behind the local one (svc_conf.shared), shared by every
 * host: an ingest skips what it holds for this profile (copying it in),
 * else stores locally and then copies the snapshot there; a query that
 * misses locally copies it in (verified) and answers.  An unreachable tier
 * is warned about once per outage and retried on later requests (backoff);
 * the local tier goes on answering.  Corruption there is reported, never
 * answered from, never copied. */
struct svc_tier_stats {
	int configured;          /* 0: no shared tier (the rest is zero) */
	char addr[512];
	int up;                  /* reachable at the last try */
	char error[256];         /* the outage's reason when down */
	uint64_t hits;           /* snapshots copied in (queries and skipped ingests) */
	uint64_t misses;         /* looked for, not there */
	uint64_t errors;         /* unreachable, corrupt, or a failed copy in */
	uint64_t writes;         /* snapshots copied out */
	uint64_t write_errors;   /* copies out that failed (the local one stays) */
};
void svc_tier_stats(struct svc *v, struct svc_tier_stats *out);

/* svc_resolve_as over the local tier, then (when it finds nothing) the
 * shared one. */
int svc_tier_resolve_as(struct svc *v, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st);
/* A query's shared-tier step alone: when the local tier has no snapshot
 * for this profile, copy the shared tier's in (verified).  1 copied, 0
 * nothing to copy (local already, no tier, not there), -1 with st
 * (SVC_AT_LOOKUP, SVC_AT_SHARED, SVC_AT_TIER_DOWN: the tier is down). */
int svc_tier_prefetch(struct svc *v, const uint8_t doc_id[SVC_ID_BYTES],
    struct svc_status *st);

/* ------------------------------------------------------------------------ */
/* Search: the full-text index of what each document says (search.c)       */

/* The index is a SQLite FTS5 file beside the LMDB store (STATE/index.sqlite;
 * index/), one row per document part, derived from the text records the
 * store keeps beside each document's snapshots: rebuilt from them when
 * missing, stale or corrupt (docs/ARCHITECTURE.md, "The text index"). */
#define SVC_SNIPPET_MAX 320    /* bytes of a hit's snippet, NUL included */
#define SVC_SEARCH_K_MAX 100   /* hits one search returns at most */

/* The documents a search may return: ids[0..n) (the caller's resolved
 * DOCs); a NULL filter: every document the caller may read. */
struct svc_doc_filter {
	const uint8_t (*ids)[SVC_ID_BYTES];
	size_t n;
};

/* One retrieved part. */
struct svc_hit {
	uint8_t doc_id[SVC_ID_BYTES];
	unsigned part;           /* the document's part (0: a single-part document) */
	double score;            /* BM25 (FTS5's bm25(), negated): > 0, higher = better;
	                          * comparable within one search only (it grows with
	                          * the query's matched terms and their rarity in the
	                          * library) */
	char name[256];          /* the document's name, "" when unnamed */
	char snippet[SVC_SNIPPET_MAX]; /* the best-matching passage: one line of UTF-8,
	                          * "..." where it is cut */
};

/* The k best parts for query, the user's question as typed: it is cut into
 * words (letters and digits), each matched as a plain term, any of them
 * (never FTS5 syntax: quotes, NEAR, column filters, '*' are just
 * separators).  Only documents w may read (svc_may_read; NULL: all, as
 * `kvsnap --local`) and, with a filter, only those in it.  hits has room
 * for k (1..SVC_SEARCH_K_MAX); *n gets the count, best first (ties in
 * the index's order).  0 (a query of no words finds nothing: *n = 0), or
 * -1 with why: no index (a store of another backend, or it could not be
 * opened: the reason), a bad k, the index unreadable. */
int svc_search(struct svc *v, const struct svc_who *w, const char *query,
    const struct svc_doc_filter *filter, unsigned k, struct svc_hit *hits, unsigned *n,
    char *why, size_t why_len);

/* The store of a state directory alone, no model (`kvsnap search --local`,
 * the store commands): 0, or a STORE_ERR_ code with why. */
int svc_store_open(struct store **out, const char *state, int read_only, char *why,
    size_t why_len);
void svc_store_close(struct store *s);

/* The index of a store without a struct svc (the store commands, `kvsnap
 * search --local`; index_sync.c).  open: STATE/index.sqlite for the LMDB
 * store s opened from state (another backend: -1, it keeps no text
 * records).  sync set: brought in step with the store's text records
 * (rows added, replaced, removed), and a file that is missing, of another
 * schema or that SQLite finds corrupt is rebuilt from them (sy says what
 * was done; may be NULL); a read-only open of an index that is missing or
 * out of step builds one in memory instead.  sync 0: opened as it is, or
 * *out NULL when there is none (nothing to keep in step).  0, or -1 with
 * why. */
struct svc_index_sync {
	long added, updated, removed, kept;
	long bad;                /* text records that fail their checks (verify names them) */
	int rebuilt;             /* the file was (re)made: rebuilt_why says why */
	int in_memory;           /* read-only: built in memory, the file left alone */
	char rebuilt_why[256];
};
int svc_index_open(struct store *s, const char *state, int read_only, int sync,
    struct svc_index **out, struct svc_index_sync *sy, char *why, size_t why_len);
void svc_index_close(struct svc_index *x);
int svc_index_sync(struct svc_index *x, struct store *s, struct svc_index_sync *sy, char *why,
    size_t why_len);
/* A removed document's rows out (rm; prune syncs). */
int svc_index_forget(struct svc_index *x, const uint8_t doc_id[SVC_ID_BYTES], char *why,
    size_t why_len);
/* svc_search over a store and its index. */
int svc_search_in(struct store *s, struct svc_index *x, const struct svc_who *w,
    const char *query, const struct svc_doc_filter *filter, unsigned k, struct svc_hit *hits,
    unsigned *n, char *why, size_t why_len);

/* `kvsnap verify`'s look at the index: SQLite's and FTS5's checks, then
 * every row against the store's text records.  fn gets each finding (part
 * -1: the document as a whole) with problem 1 (a row without its text
 * record or document, a text record without a row or with a stale one, a
 * text record that fails its checks, a damaged index) or 0 (a note: a
 * document with no text record, stored before text records, so not
 * searchable).  0 with the counts, or -1 with why (the store unreadable). */
struct svc_index_verified {
	int exists;              /* an index file is there (else: built by the next search
	                          * or kvsnapd start; nothing else checked) */
	long rows, texts, problems, docs_without_text;
};
int svc_index_verify(struct store *s, const char *state,
    void (*fn)(void *arg, const uint8_t doc_id[SVC_ID_BYTES], long part, int problem,
        const char *why),
    void *arg, struct svc_index_verified *out, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* What else the front ends take from below, under service/'s name (base.c,  */
/* about.c): daemon/ and clients/ include this header and common/ only.     */

/* Seconds on the monotonic clock (eng_now: the one timer of the program). */
double svc_now(void);
/* bytes[0..n) as 2n lowercase hex digits and a NUL (store_hex). */
void svc_hex(const uint8_t *bytes, size_t n, char *out);
/* A document name the store takes: 0, or -1 with why (store_name_check). */
int svc_name_check(const char *name, char *why, size_t why_len);
/* The compute backend by name ("cpu", "cuda"), or with name NULL the one
 * $KVSNAP_BACKEND names (eng_use_backend, eng_use_backend_env): 0, or
 * non-zero with why (ENG_ERR_BACKEND: not usable here). */
int svc_use_backend(const char *name, char *why, size_t why_len);
/* A snapshot quantization's name ("fp16", "q4", ...) and back (-1: not one). */
#define SVC_QUANT_FP16 0
const char *svc_quant_name(int quant);
int svc_quant_parse(const char *name);
/* First thing in main of both programs: when started as the document
 * reader's child (svc_extract), read and exit; else return. */
void svc_child_main(int argc, char **argv);

/* An open service, read-only (about.c). */
const char *svc_model_fingerprint(const struct svc *v);
const char *svc_profile_text(const struct svc *v);  /* the canonical profile text */
const char *svc_profile_hex(const struct svc *v);   /* its id in hex */
const uint8_t *svc_profile_id(const struct svc *v); /* SVC_ID_BYTES */
int svc_profile_quant(const struct svc *v);         /* enum snap_quant */
int svc_has_tier(const struct svc *v);              /* a shared tier is configured */

/* A DOC reference in v's store as w sees it (svc_resolve_as; w NULL: all). */
int svc_doc_resolve(struct svc *v, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SVC_ID_BYTES], struct svc_status *st);
/* What to say when pk found nothing but snapshots of other profiles: the
 * stored profiles in words and the exact command that re-ingests d for
 * v's profile (`kvsnap ingest --force PATH`, with --local and the
 * profile's flags when local; FILE when d's source path is unknown), and
 * for local also the flags that answer from a stored snapshot.
 * d is looked up by doc_id in v's store (unknown: neither path nor name
 * said); name gets its name ("" when unnamed or unknown). */
void svc_pick_advice_doc(struct svc *v, const struct svc_picked *pk,
    const uint8_t doc_id[SVC_ID_BYTES], int local, char *name, size_t name_cap, char *out,
    size_t cap);
/* The figures of doc's stored snapshot of profile_id (all 0 when it is not
 * there or cannot be read). */
void svc_snapshot_figures(struct svc *v, const uint8_t doc_id[SVC_ID_BYTES],
    const uint8_t profile_id[SVC_ID_BYTES], struct svc_snap_figures *fig);
/* The local store's totals (store_stats), for kvsnapd's /metrics. */
struct svc_store_totals {
	uint64_t n_docs, n_snapshots;
	uint64_t stored_bytes;   /* the snapshots' bytes as stored */
	uint64_t map_size;       /* LMDB's map (reserved address space; 0: another backend) */
	uint64_t map_used;       /* bytes of the store's file in use (LMDB's map) */
};
int svc_store_totals(struct svc *v, struct svc_store_totals *out, char *why, size_t why_len);

/* The store commands and the one JSON shape of a document (store.h). */
#include "service/store.h"

/* ------------------------------------------------------------------------ */
/* Version                                                                   */

/* "PROG 0.2.0", the protocol and snapshot format versions and the compute
 * backends this build has, one per line (--version of both programs). */
void svc_version(FILE *f, const char *prog);

#endif
