/*
 * ingest.c: a document into a snapshot: extract its text (formats/: a
 * file that is not a document kvsnap reads is refused here, before any
 * model work), hash the text, skip it if this
 * profile's snapshot is already stored (when asked), tokenize it as the
 * start of a user turn, compress it by chunked ingest with the session's
 * policy (reporting progress after every chunk, which may cancel), and
 * store the snapshot and the text record in one transaction, then index
 * the text (index_sync.c) (with a shared tier: skip what
 * it holds, copying it in; copy what was stored there: tiers.c).  A
 * document longer than the model's window (or the part size asked for) is
 * split at its own boundaries (split.c) and stored in parts, one snapshot
 * each (parts.c).  A cancelled ingest stores nothing of the part it was
 * in.  Reading the document is the caller's (a descriptor, a file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"
#include "service/split.h"
#include "service/text_record.h"

/* After every chunk: the caller's progress hook; stop if cancelled. */
static int
ingest_chunk_cb(void *arg, int64_t done, int64_t total)
{
	const struct svc_hooks *hk = arg;
	if (hk->progress)
		hk->progress(hk->arg, "prefill", done, total);
	return svc_cancelled(hk);
}

/* Refuse a document longer than the policy can place in the model's window
 * (issue 15): the engine would find out only after a window's prefill.
 * at_least: n is a lower bound from the byte count. */
static int
ingest_too_long(struct svc_status *st, int64_t n, int64_t max, int at_least)
{
	snprintf(st->why, sizeof(st->why), "%s%lld tokens: %s (longer than the model's window "
	    "for this policy's positions: at most %lld)", at_least ? "at least " : "",
	    (long long)n, eng_strerror(ENG_ERR_CONTEXT), (long long)max);
	return svc_fail(st, SVC_AT_INGEST, ENG_ERR_CONTEXT);
}

/* Refuse a document that would need over SVC_PARTS_MAX parts of limit
 * tokens (at_least: n from the byte count alone). */
static int
ingest_too_many(struct svc_status *st, int64_t n, int64_t limit, int at_least)
{
	snprintf(st->why, sizeof(st->why), "%s%lld tokens: %s in %d parts of at most %lld tokens "
	    "(the most one document is stored in)", at_least ? "at least " : "", (long long)n,
	    eng_strerror(ENG_ERR_CONTEXT), SVC_PARTS_MAX, (long long)limit);
	return svc_fail(st, SVC_AT_INGEST, ENG_ERR_CONTEXT);
}

/* Units kept over every layer and KV head. */
static int64_t
ingest_units(const struct eng_kv *kv)
{
	int64_t units = 0;
	int l, h;
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			units += eng_kv_len(kv, l, h);
	return units;
}

/* Is the document stored already (*had: its metadata), and may who read
 * it?  -1 not stored (or unreadable metadata: the put will say), 0 stored
 * but not who's to read, 1 readable. */
static int
ingest_seen(struct store *s, const uint8_t *doc_id, const struct svc_who *who,
    struct store_doc *had)
{
	char why[256];
	memset(had, 0, sizeof(*had));
	if (store_info(s, doc_id, had, why, sizeof(why)) != 0)
		return -1;
	return svc_may_read(had, who);
}

/* The stored part into the text index: v's, or (a process that opens it
 * only to search: `kvsnap ingest --local`) the file beside the store when
 * there is one, so a search made earlier does not go stale.  A failure
 * loses nothing: the next sync adds the row from the text record. */
static void
ingest_index(struct svc *v, const uint8_t *doc_id, unsigned part, const uint8_t *rec,
    size_t rec_len, const char *text, size_t len)
{
	struct svc_index *ix = NULL;
	char why[256];

	if (v->index || v->index_tried) {
		(void)index_put_text(v->index, doc_id, part, rec, rec_len, text, len, why, sizeof(why));
		return;
	}
	if (store_lmdb_dir(v->state) && svc_index_open(v->s, v->state, 0, 0, &ix, NULL, why,
	    sizeof(why)) == 0 && ix)
		(void)index_put_text(ix, doc_id, part, rec, rec_len, text, len, why, sizeof(why));
	svc_index_close(ix);
}

/* What an ingest carries from one step to the next (service.h). */
struct svc_ingest_doc {
	struct fmt_doc fd;        /* the extracted text */
	struct store_doc doc;     /* what will be stored: id, name, owners, format */
	struct store_doc had;     /* the local metadata, when seen >= 0 */
	int seen;                 /* ingest_seen's answer */
	int share, has_who, skip;
	struct svc_who who;
	uint8_t prof[SNAP_ID_BYTES]; /* skipped locally: its snapshot's profile */
	double t0;                /* when the ingest began (out->seconds) */
	char name_asked[256];     /* the request's name: a skipped document takes it */
	int64_t part_tokens;      /* the request's */
	unsigned n_parts;         /* stored in parts: their count, else 0 */
};

void
svc_ingest_end(struct svc_ingest_doc *pd)
{
	if (!pd)
		return;
	fmt_doc_free(&pd->fd);
	free(pd);
}

/* Skipped: the figures of the snapshot pk picked. */
static void
ingest_skipped(struct svc_ingested *out, const struct svc_picked *pk)
{
	out->skipped = 1;
	out->fig = pk->fig;
	out->tokens = pk->fig.tokens;
	out->units = pk->fig.units;
	out->parts = pk->n_parts;
}

/* A document skipped as already stored still takes the name asked for
 * (issue 30: it was dropped silently), when the caller may change it. */
static void
ingest_name_skipped(struct svc *v, const struct svc_ingest_doc *pd, struct svc_ingested *out)
{
	const uint8_t *doc_id = pd->doc.doc_id;
	struct store_doc d;
	char why[256];
	int rc;

	if (!pd->name_asked[0])
		return;
	if ((rc = store_info(v->s, doc_id, &d, why, sizeof(why)))) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "%s", why);
		return;
	}
	if (!strcmp(d.name, pd->name_asked))
		return;
	if (!svc_may_change(&d, pd->has_who ? &pd->who : NULL)) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "only its owners may rename it "
		    "(it is named \"%.200s\")", d.name);
		return;
	}
	if ((rc = store_rename(v->s, doc_id, pd->name_asked, why, sizeof(why)))) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "%s", why);
		return;
	}
	out->named = 1;
}

int
svc_ingest_begin(struct svc *v, const struct svc_ingest_req *r, const struct svc_hooks *hk,
    struct svc_ingest_doc **pdp, struct svc_ingested *out, struct svc_status *st)
{
	struct svc_ingest_doc *pd;
	uint8_t other[SNAP_ID_BYTES];
	struct svc_picked pk;
	char why[8];

	*pdp = NULL;
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	out->shared = v->tier ? 0 : -1;
	if (!(pd = calloc(1, sizeof(*pd)))) {
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_SAVE, SNAPIO_ERR_NOMEM);
	}
	pd->t0 = eng_now();
	if (svc_extract(r->text, r->len, r->encoding, hk ? hk->cancel : NULL, &pd->fd, st)) {
		free(pd);
		return -1;
	}
	snprintf(pd->doc.format, sizeof(pd->doc.format), "%s", pd->fd.name);
	snprintf(out->format, sizeof(out->format), "%s", pd->fd.name);
	store_doc_id(pd->fd.text, pd->fd.len, pd->doc.doc_id);
	memcpy(out->doc_id, pd->doc.doc_id, SNAP_ID_BYTES);
	store_hex(pd->doc.doc_id, SNAP_ID_BYTES, out->hex);
	if (r->check_name && r->name && r->name[0] &&
	    !store_resolve(v->s, r->name, other, why, sizeof(why)) &&
	    memcmp(other, pd->doc.doc_id, SNAP_ID_BYTES)) {
		snprintf(st->why, sizeof(st->why), "the name \"%s\" belongs to another document",
		    r->name);
		svc_ingest_end(pd);
		return svc_fail(st, SVC_AT_NAME, SNAPIO_ERR_ARG);
	}
	if (r->who) {
		pd->who = *r->who;
		pd->has_who = 1;
		(void)store_doc_add_owner(&pd->doc, r->who->uid); /* the first of an empty set */
	}
	pd->share = pd->doc.shared = r->share;
	pd->skip = r->skip_stored;
	pd->part_tokens = r->part_tokens;
	pd->seen = ingest_seen(v->s, pd->doc.doc_id, r->who, &pd->had);
	/* claiming another user's document by its bytes: it keeps the name its
	 * owners gave it (a claim must not break their references) */
	snprintf(pd->doc.name, sizeof(pd->doc.name), "%s",
	    r->name && !(pd->seen == 0 && pd->had.name[0]) ? r->name : "");
	snprintf(pd->doc.source, sizeof(pd->doc.source), "%.1023s", r->source ? r->source : "");
	pd->doc.bytes = r->len; /* the file's bytes, not its text's */
	snprintf(pd->name_asked, sizeof(pd->name_asked), "%s", r->name ? r->name : "");
	if (r->skip_stored) {
		if (svc_pick(v, pd->doc.doc_id, &pk, st) < 0) {
			svc_ingest_end(pd);
			return -1;
		}
		/* Skipped only when it would change nothing: the caller may read
		 * it and asks for no sharing it lacks.  Another user's private
		 * copy is ingested again (adding the caller as an owner: the bytes
		 * are the proof), so `skipped` never tells that it existed. */
		if (pk.found && pd->seen == 1 && (!pd->doc.shared || pd->had.shared)) {
			ingest_skipped(out, &pk);
			memcpy(pd->prof, pk.profile_id, SNAP_ID_BYTES);
			ingest_name_skipped(v, pd, out);
		}
	}
	*pdp = pd;
	return 0;
}

int
svc_ingest_tier(struct svc *v, struct svc_ingest_doc *pd, struct svc_ingested *out)
{
	struct svc_picked pk;
	struct svc_status st;

	if (!v->tier)
		return 0;
	if (out->skipped) {
		/* stored while the shared tier was away: it gets it now */
		tier_push(v, pd->doc.doc_id, pd->prof, 1, out);
		return 1;
	}
	if (!pd->skip)
		return 0;
	/* the shared tier holds it: copied in, no model pass (the same rule
	 * for who may skip, over the tier's metadata) */
	if (tier_skip(v, pd->doc.doc_id, pd->has_who ? &pd->who : NULL, pd->share) == 1 &&
	    svc_pick(v, pd->doc.doc_id, &pk, &st) == 0 && pk.found) {
		ingest_skipped(out, &pk);
		out->from_shared = out->shared = 1;
		ingest_name_skipped(v, pd, out);
		return 1;
	}
	return 0;
}

/* One part (the whole document when n_parts is 1) through the model into
 * the store: tokenize, chunked ingest, the snapshot and its text record in
 * one transaction, then the index.  *tokens and *units get its figures. */
static int
ingest_one(struct svc *v, struct svc_session *ss, struct svc_ingest_doc *pd,
    struct svc_hooks *hooks, const char *text, size_t len, unsigned part, unsigned n_parts,
    int64_t max, int64_t *tokens, int64_t *units, struct svc_status *st)
{
	struct eng_kv *kv = NULL;
	int32_t *ids = NULL;
	struct store_text tr = { part, NULL, 0 };
	uint8_t *rec = NULL;
	char profile[SNAP_MAX_PROFILE];
	uint8_t profile_id[SNAP_ID_BYTES];
	int64_t n;
	int rc, ret = -1;

	if (n_parts < 2) {
		snprintf(profile, sizeof(profile), "%s", v->profile);
		memcpy(profile_id, v->profile_id, SNAP_ID_BYTES);
	} else if (svc_part_profile(v->profile, part, n_parts, profile, sizeof(profile),
	    profile_id)) {
		snprintf(st->why, sizeof(st->why), "the profile with a part number is over %d bytes",
		    SNAP_MAX_PROFILE - 1);
		return svc_fail(st, SVC_AT_SAVE, SNAPIO_ERR_ARG);
	}
	n = eng_chat_doc_ids(v->chat, text, len, &ids);
	if (n < 0) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)n));
		svc_fail(st, SVC_AT_TOKENIZE, (int)n);
		goto out;
	}
	*tokens = n;
	if (hooks->progress)
		hooks->progress(hooks->arg, "tokenized", 0, n);
	if (n > max) { /* before any prefill */
		ingest_too_long(st, n, max, 0);
		goto out;
	}
	rc = eng_kv_init(&kv, v->m, eng_policy_rows_per_head(ss->p, n, v->chunk, 0));
	if (!rc)
		rc = eng_ingest_cb(ss->ctx, kv, ss->p, ids, n, v->chunk, NULL, ingest_chunk_cb,
		    hooks);
	if (rc) {
		snprintf(st->why, sizeof(st->why), "%lld tokens: %s%s", (long long)n,
		    eng_strerror(rc), rc == ENG_ERR_CONTEXT ? " (longer than the model's window "
		    "for this policy's positions)" : "");
		svc_fail(st, SVC_AT_INGEST, rc);
		goto out;
	}
	if (svc_cancelled(hooks)) { /* a last look before committing */
		svc_fail(st, SVC_AT_COMMIT, ENG_ERR_CANCELLED);
		goto out;
	}
	/* the text record beside the snapshot, in its transaction: the index
	 * can always be rebuilt from the store (index_sync.c) */
	if (textrec_encode(part, text, len, &rec, &tr.len, st->why, sizeof(st->why))) {
		svc_fail(st, SVC_AT_SAVE, SNAPIO_ERR_NOMEM);
		goto out;
	}
	tr.buf = rec;
	/* created_us = 0: the store stamps a new document itself (and the last use) */
	rc = snap_save_text(v->s, &pd->doc, kv, v->m->hp.n_head, eng_model_fingerprint(v->m),
	    profile, profile_id, v->quant, SNAP_ZLEVEL_DEFAULT, (uint64_t)n, &tr, st->why,
	    sizeof(st->why));
	if (rc) {
		svc_fail(st, SVC_AT_SAVE, rc);
		goto out;
	}
	/* then the index; a failure here loses nothing (the next sync adds the
	 * row from the record) */
	ingest_index(v, pd->doc.doc_id, part, rec, tr.len, text, len);
	*units = ingest_units(kv);
	ret = 0;
out:
	eng_kv_free(kv);
	free(ids);
	free(rec);
	return ret;
}

/* A part's tokens as the ingest counts them: the prompt's document half. */
static int64_t
ingest_count(void *arg, const char *text, size_t len)
{
	struct svc *v = arg;
	int32_t *ids = NULL;
	int64_t n = eng_chat_doc_ids(v->chat, text, len, &ids);
	free(ids);
	return n;
}

int
svc_ingest_model(struct svc *v, struct svc_session *ss, struct svc_ingest_doc *pd,
    const struct svc_hooks *hk, struct svc_ingested *out, struct svc_status *st)
{
	struct svc_hooks hooks = { NULL, NULL, NULL, NULL };
	struct fmt_doc *fd = &pd->fd;
	struct svc_split_part *sp = NULL;
	struct svc_picked pk;
	size_t n_sp = 0, i;
	int64_t n, max, limit, tokens = 0, units = 0, t, u;
	int32_t *ids = NULL;
	int rc;

	if (hk)
		hooks = *hk; /* the chunk callback's argument (not const) */
	memset(st, 0, sizeof(*st));
	max = eng_policy_max_doc(ss->p, v->m);
	limit = pd->part_tokens > 0 && pd->part_tokens < max ? pd->part_tokens : max;
	/* tokenized whole (the parts it needs at least: its tokens over a
	 * part's), unless its bytes alone prove it needs over SVC_PARTS_MAX (a
	 * 50 MB file took 1.8 s to tokenize) */
	if ((n = eng_tok_min_tokens(v->tok, fd->text, fd->len)) / limit > SVC_PARTS_MAX)
		return ingest_too_many(st, n, limit, 1);
	n = eng_chat_doc_ids(v->chat, fd->text, fd->len, &ids);
	free(ids);
	if (n < 0) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)n));
		return svc_fail(st, SVC_AT_TOKENIZE, (int)n);
	}
	if (hooks.progress && n > limit) /* a part's own "tokenized" follows */
		hooks.progress(hooks.arg, "tokenized", 0, n);
	if (n / limit > SVC_PARTS_MAX) /* before any prefill */
		return ingest_too_many(st, n, limit, 0);
	if (n <= limit) {
		pd->doc.tokens = (uint64_t)n;
		if (ingest_one(v, ss, pd, &hooks, fd->text, fd->len, 0, 1, max, &tokens, &units, st))
			return -1;
	} else {
		if ((rc = svc_split(fd->text, fd->len, limit, ingest_count, v, &sp, &n_sp, st->why,
		    sizeof(st->why)))) {
			svc_fail(st, SVC_AT_TOKENIZE, rc < -1 ? rc : ENG_ERR_NOMEM);
			return -1;
		}
		if (n_sp > SVC_PARTS_MAX) {
			free(sp);
			return ingest_too_many(st, n, limit, 0);
		}
		for (i = 0, n = 0; i < n_sp; i++)
			n += sp[i].tokens;
		pd->doc.tokens = (uint64_t)n; /* every part's metadata: the whole document's */
		for (i = 0; i < n_sp; i++) {
			if (n_sp > 1 && hooks.progress)
				hooks.progress(hooks.arg, "part", (int64_t)i + 1, (int64_t)n_sp);
			if (ingest_one(v, ss, pd, &hooks, fd->text + sp[i].off, sp[i].len, (unsigned)i,
			    (unsigned)n_sp, max, &t, &u, st)) {
				if (i) { /* say what stays */
					size_t k = strlen(st->why);
					snprintf(st->why + k, sizeof(st->why) - k, " (at part %zu of %zu; the "
					    "%zu before it are stored, and answer nothing until an ingest "
					    "completes the set)", i + 1, n_sp, i);
				}
				free(sp);
				return -1;
			}
			tokens += t;
			units += u;
		}
		free(sp);
		pd->n_parts = n_sp > 1 ? (unsigned)n_sp : 0;
	}
	out->tokens = tokens;
	out->units = units;
	out->parts = pd->n_parts;
	out->seconds = eng_now() - pd->t0;
	/* the stored snapshot's figures (its size as stored); a failed look
	 * leaves them unknown (bytes 0), the snapshot is stored all the same */
	if (svc_pick(v, pd->doc.doc_id, &pk, st) == 0 && pk.found)
		out->fig = pk.fig;
	memset(st, 0, sizeof(*st));
	return 0;
}

void
svc_ingest_publish(struct svc *v, struct svc_ingest_doc *pd, struct svc_ingested *out)
{
	char text[SNAP_MAX_PROFILE];
	uint8_t id[SNAP_ID_BYTES];
	unsigned i;

	/* a failure there is a warning (out->shared 0 with the reason), the
	 * local snapshot stays; a document in parts: each part's */
	if (!pd->n_parts) {
		tier_push(v, pd->doc.doc_id, v->profile_id, 0, out);
		return;
	}
	for (i = 0; i < pd->n_parts; i++)
		if (!svc_part_profile(v->profile, i, pd->n_parts, text, sizeof(text), id))
			tier_push(v, pd->doc.doc_id, id, 0, out);
}

int
svc_ingest(struct svc *v, struct svc_session *ss, const struct svc_ingest_req *r,
    const struct svc_hooks *hk, struct svc_ingested *out, struct svc_status *st)
{
	struct svc_ingest_doc *pd;
	int ret = 0;

	if (svc_ingest_begin(v, r, hk, &pd, out, st))
		return -1;
	if (!svc_ingest_tier(v, pd, out) && !out->skipped) {
		if ((ret = svc_ingest_model(v, ss, pd, hk, out, st)) == 0)
			svc_ingest_publish(v, pd, out);
	}
	svc_ingest_end(pd);
	return ret;
}
