/*
 * service_internal.h: what the service's own files share and its callers
 * do not see.
 */
#ifndef SERVICE_INTERNAL_H
#define SERVICE_INTERNAL_H

#include "engine/engine.h"
#include "formats/formats.h"
#include "service/service.h"
#include "snapshot/snapshot_io.h"
#include "storage/store.h"

/* An open service (opaque in service.h).  Shared read-only by every
 * thread. */
struct svc {
	struct eng_model *m;     /* shared read-only */
	struct eng_tok *tok;     /* encode/decode are read-only after init */
	struct eng_chat *chat;   /* the model's chat template (borrows tok) */
	struct store *s;         /* thread-safe */
	char *policy, *opts;     /* the policy and its effective options */
	long budget, chunk;
	double ratio;
	int quant;
	char profile[SNAP_MAX_PROFILE];
	uint8_t profile_id[SNAP_ID_BYTES];
	char profile_hex[2 * SNAP_ID_BYTES + 1];
	int n_prev;              /* this is the default profile: a snapshot under */
	uint8_t prev_id[SVC_PREV_DEFAULTS][SNAP_ID_BYTES]; /* a previous default's
	                          * answers (svc_pick; the latest first) */
	struct svc_tier *tier;   /* the shared tier, or NULL (tiers.c) */
	struct svc_index *index; /* the text index, or NULL (index_sync.c; why not:
	                          * index_why) */
	char index_why[256];
	int index_tried;         /* opened (or failed) once: not again */
	char *state;             /* the store's address (the index's place) */
	int read_only;
};

/* What one thread runs the model with (opaque in service.h). */
struct svc_session {
	struct eng_ctx *ctx;
	struct eng_policy *p;
	struct eng_kv *pool; /* svc_query's pool, kept for the next load (its pages
	                      * faulted in once) when at most SVC_POOL_KEEP bytes;
	                      * NULL between loads otherwise */
};

/* The largest pool a session keeps between questions: a thread's memory
 * held while idle (SmolLM2's 4K-token kvzip snapshot at 1/4: ~75 MB; at
 * the default 1/2 about twice that: the pool holds the units kept, in the
 * compute precision whatever the stored one). */
#define SVC_POOL_KEEP ((uint64_t)256 << 20)

/* The policy of the profile (ratio form when conf.ratio > 0), unbound. */
int svc_policy_create(const struct svc *v, struct eng_policy **out, char *why, size_t why_len);

/* svc_pick_advice_doc with the document's record (NULL: unknown; advice.c). */
void svc_pick_advice(const struct svc *v, const struct svc_picked *pk, const struct store_doc *d,
    int local, char *out, size_t cap);

/* Record in st that `step` failed with `rc` (the reason, if any, is
 * already in st->why); returns -1. */
int svc_fail(struct svc_status *st, enum svc_step step, int rc);

/* A document's file name, as `kvsnap ls` shows an unnamed one: its source's
 * last path part; "" when the daemon had no path ("(descriptor)",
 * "(HTTP)") or it is not UTF-8 (access.c; models.c lists it). */
const char *svc_doc_file_name(const struct store_doc *d);

/* A DOC reference as the store resolves it (id, prefix, name), nothing
 * more: svc_resolve and svc_resolve_as add the file name. */
int svc_resolve_store(struct store *s, const char *ref, uint8_t doc_id[SNAP_ID_BYTES],
    struct svc_status *st);
/* After a store's not_found (st->rc STORE_ERR_NOT_FOUND, its words in
 * st->why): the file name ls shows when one document w may read has it
 * (w NULL: any), else why not (ambiguous, listing them; a hex prefix too
 * short); -1 with st (the store's words kept when nothing better). */
int svc_resolve_file(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st);

/* A conversation's ids (chat.c; *ids malloc'd): the template's whole prompt
 * (eng_chat_messages_ids), or with followup its turns after a document's
 * (eng_chat_followup_ids).  The count, or a negative eng_err. */
int64_t svc_msgs_ids(const struct svc *v, const struct svc_msg *msgs, size_t n, int followup,
    int32_t **ids);
/* A prompt that did not tokenize (n < 0; msgs: a conversation, followup:
 * its turns after a document): the reason in st, and svc_fail's return
 * (SVC_AT_TOKENIZE). */
int svc_prompt_fail(const struct svc *v, int64_t n, int msgs, int followup,
    struct svc_status *st);

/* Whether the hooks' cancel flag is set. */
int svc_cancelled(const struct svc_hooks *hk);

/* Generated ids to the token hook as text (emit.c), through the stop
 * sequences (stop.c): svc_emit_cb is the eng_generate callback (non-zero
 * when the cancel flag is set or a stop sequence matched: e->stop.matched);
 * flush hands over the bytes held back at the end. */
struct svc_emit {
	const struct svc *v;
	const struct svc_hooks *hk;
	int whole_utf8;
	char pend[16];   /* an incomplete UTF-8 sequence carried over */
	size_t n_pend;
	int64_t n;       /* tokens seen */
	double t0, ttft; /* start, and the time to the first token */
	struct svc_stopper stop; /* the stop sequences the text goes through */
	int32_t id;      /* the token being handed on */
	/* The library's judged answer (svc_emit_judge; all 0 otherwise): */
	struct svc_judge {
		int64_t hold;    /* tokens held back until judged (0: none held) */
		int keep;        /* hold every token, judge none (answered part by part) */
		double min_conf; /* the held prefix's mean log-probability under it: abstain */
		const float *first; /* the logits after the prompt, prefilled already */
		int32_t *held;   /* the held tokens (hold, or n_max when keep) */
		int64_t n_held;
		double sum, sum_held; /* log-probabilities: all, and the judged prefix's */
		int64_t n_lp, n_lp_held; /* their counts (the end of turn included) */
		int judged, abstain, ended; /* abstain: the prefix was under min_conf */
		double t_first;  /* eng_now() at the model's first token */
	} j;
};
void svc_emit_init(struct svc_emit *e, const struct svc *v, const struct svc_hooks *hk,
    int whole_utf8, const char *const *stop, size_t n_stop);
int svc_emit_cb(void *arg, int32_t id);
void svc_emit_flush(struct svc_emit *e);
/* The answer step the query and the plain chat share (emit.c): the
 * sampler from the request's temperature, top_p (0: off) and seed, at
 * most n_max tokens decoded after ids[0..n) on kv through e (initialised
 * by the caller; judged first when svc_emit_judge said so), flushed; out's tokens, generated, ttft, stop reason
 * (length at n_max) and cancellation, and seconds since e started.  0, or
 * -1 with st (SVC_AT_GENERATE). */
/* Hold back the first hold tokens of the answer (or all to the end of
 * turn, if sooner), then judge them: their mean log-probability (the end
 * of turn included) under min_conf stops the decode with e->j.abstain set
 * and nothing handed on; else they are handed on and the rest streams as
 * decoded.  keep: hold every token (the caller picks among answers and
 * hands one on).  first: as eng_generate_lp's.  0, or ENG_ERR_NOMEM. */
int svc_emit_judge(struct svc_emit *e, int64_t hold, int keep, double min_conf,
    const float *first, int64_t n_max);
void svc_emit_judge_free(struct svc_emit *e);
int svc_emit_answer(struct svc_emit *e, struct svc_session *ss, struct eng_kv *kv,
    const int32_t *ids, int64_t n, int64_t n_max, float temperature, float top_p,
    uint64_t seed, struct svc_answer *out, struct svc_status *st);

/* The shared tier (tiers.c).  tier_open: nothing without conf->shared; a
 * credentials file that will not do fails (SVC_AT_SHARED_AUTH), an
 * unreachable tier does not (warned, probed again in the background).
 * tier_fetch (a query's local miss): 1 copied into the local tier, 0 not
 * there, -1 with st (SVC_AT_SHARED: corrupt there, or the local write
 * failed; SVC_AT_TIER_DOWN: the tier is down or went down now).
 * tier_skip (an ingest): 1 when the tier held it for this profile, readable
 * by who, and it was copied in.  tier_push: the local snapshot (doc, prof)
 * to the tier (only_if_missing: unless it holds it already); out->shared
 * and shared_why say how it went (a failure is a warning). */
int tier_open(struct svc *v, const struct svc_conf *conf, struct svc_status *st);
void tier_close(struct svc_tier *t);
int tier_fetch(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], struct svc_status *st);
int tier_skip(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], const struct svc_who *who,
    int share);
void tier_push(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], const uint8_t prof[SNAP_ID_BYTES],
    int only_if_missing, struct svc_ingested *out);

/* The text index (index_sync.c): one part just stored, indexed (rec its
 * text record, for the checksum; ix NULL: nothing).  0, or -1 with why. */
int index_put_text(struct svc_index *ix, const uint8_t doc_id[SNAP_ID_BYTES], unsigned part,
    const uint8_t *rec, size_t rec_len, const char *text, size_t len, char *why,
    size_t why_len);

/* Open v's text index (open.c): at svc_open for kvsnapd, else at the first
 * search (search.c, under its lock); sets v->index or v->index_why. */
void open_index(struct svc *v, const struct svc_conf *conf);

/* The index handle's idx (index_sync.c; search.c searches it). */
struct idx;
struct idx *index_idx(struct svc_index *ix);

/* The grounding check (ground.c): grounded[i] (n of them) 1 when part
 * hits[i] holds every rare name of the question (all 1 when it has none,
 * or there is no index); names: those names, ", " between (cut to cap).
 * The number of rare names, or -1 with why (the index failed). */
#define SVC_GROUND_RARE_PER 20 /* rare: held by at most 1 part in 20 (at least 1) */
int svc_ground(struct svc *v, const char *question, const struct svc_hit *hits, unsigned n,
    int *grounded, char *names, size_t cap, char *why, size_t why_len);

/* The sets of parts of one base profile among a document's snapshots
 * (parts.c): add each snapshot's header (1 when it is a part of base),
 * then end: chosen is the complete set (every part there) stored or used
 * last, or -1. */
#define PARTS_GROUPS 8
struct parts_group {
	unsigned n, have;        /* its part count, the parts stored */
	int64_t last_us;         /* the latest last use among them */
	struct svc_snap_figures fig; /* summed over the parts stored */
};
struct parts_scan {
	const char *base;
	size_t base_len;
	struct parts_group g[PARTS_GROUPS];
	int n_groups;
	int chosen;
};
void parts_scan_init(struct parts_scan *ps, const char *base);
int parts_scan_add(struct parts_scan *ps, const struct snap_header *h, uint64_t bytes,
    int64_t last_used_us);
void parts_scan_end(struct parts_scan *ps);

/* After rm (doc) or prune (NULL): the target's text index follows, opened
 * from t->state when it is not open (store_change.c).  why "" when it did
 * (or there is none), else why not: a warning, the index is derived data
 * that the next search or kvsnapd start brings in step. */
void store_index_follow(const struct svc_target *t, const uint8_t *doc, char *why,
    size_t why_len);

#endif /* SERVICE_INTERNAL_H */
