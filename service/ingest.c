/*
 * ingest.c: a document into a snapshot: extract its text (formats/: a
 * file that is not a document kvsnap reads is refused here, before any
 * model work), hash the text, skip it if this
 * profile's snapshot is already stored (when asked), tokenize it as the
 * start of a user turn, compress it by chunked ingest with the session's
 * policy (reporting progress after every chunk, which may cancel), and
 * store the snapshot in one transaction (with a shared tier: skip what
 * it holds, copying it in; copy what was stored there: tiers.c).  A
 * document longer than the model's window is refused before any prefill.  A cancelled ingest stores
 * nothing.  Reading the document is the caller's (a descriptor, a file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

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

/* A document skipped as already stored still takes the name asked for
 * (issue 30: it was dropped silently), when the caller may change it. */
static void
ingest_name_skipped(struct svc *v, const struct svc_ingest_req *r, const uint8_t *doc_id,
    struct svc_ingested *out)
{
	struct store_doc d;
	char why[256];
	int rc;

	if (!r->name || !r->name[0])
		return;
	if ((rc = store_info(v->s, doc_id, &d, why, sizeof(why)))) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "%s", why);
		return;
	}
	if (!strcmp(d.name, r->name))
		return;
	if (!svc_may_change(&d, r->who)) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "only its owners may rename it "
		    "(it is named \"%.200s\")", d.name);
		return;
	}
	if ((rc = store_rename(v->s, doc_id, r->name, why, sizeof(why)))) {
		out->named = -1;
		snprintf(out->name_why, sizeof(out->name_why), "%s", why);
		return;
	}
	out->named = 1;
}

int
svc_ingest(struct svc *v, struct svc_session *ss, const struct svc_ingest_req *r,
    const struct svc_hooks *hk, struct svc_ingested *out, struct svc_status *st)
{
	struct svc_hooks hooks = { NULL, NULL, NULL, NULL };
	struct store_doc doc, had;
	struct fmt_doc fd;
	struct eng_kv *kv = NULL;
	int32_t *ids = NULL;
	uint8_t other[SNAP_ID_BYTES];
	struct svc_picked pk;
	double t0 = eng_now();
	int64_t n, max;
	int rc, ret = -1, seen;
	char why[8];

	if (hk)
		hooks = *hk; /* the chunk callback's argument (not const) */
	memset(st, 0, sizeof(*st));
	memset(out, 0, sizeof(*out));
	memset(&doc, 0, sizeof(doc));
	out->shared = v->tier ? 0 : -1;
	if (svc_extract(r->text, r->len, r->encoding, hooks.cancel, &fd, st))
		return -1;
	snprintf(doc.format, sizeof(doc.format), "%s", fd.name);
	snprintf(out->format, sizeof(out->format), "%s", fd.name);
	store_doc_id(fd.text, fd.len, doc.doc_id);
	memcpy(out->doc_id, doc.doc_id, SNAP_ID_BYTES);
	store_hex(doc.doc_id, SNAP_ID_BYTES, out->hex);
	if (r->check_name && r->name && r->name[0] &&
	    !store_resolve(v->s, r->name, other, why, sizeof(why)) &&
	    memcmp(other, doc.doc_id, SNAP_ID_BYTES)) {
		snprintf(st->why, sizeof(st->why), "the name \"%s\" belongs to another document",
		    r->name);
		svc_fail(st, SVC_AT_NAME, SNAPIO_ERR_ARG);
		goto out;
	}
	if (r->who)
		(void)store_doc_add_owner(&doc, r->who->uid); /* the first of an empty set */
	doc.shared = r->share;
	seen = ingest_seen(v->s, doc.doc_id, r->who, &had);
	if (r->skip_stored) {
		if (svc_pick(v, doc.doc_id, &pk, st) < 0)
			goto out;
		/* Skipped only when it would change nothing: the caller may read
		 * it and asks for no sharing it lacks.  Another user's private
		 * copy is ingested again (adding the caller as an owner: the bytes
		 * are the proof), so `skipped` never tells that it existed. */
		if (pk.found && seen == 1 && (!doc.shared || had.shared)) {
			out->skipped = 1;
			out->fig = pk.fig;
			out->tokens = pk.fig.tokens;
			out->units = pk.fig.units;
			/* stored while the shared tier was away: it gets it now */
			tier_push(v, doc.doc_id, pk.profile_id, 1, out);
			ingest_name_skipped(v, r, doc.doc_id, out);
			ret = 0;
			goto out;
		}
		/* the shared tier holds it: copied in, no model pass (the same
		 * rule for who may skip, over the tier's metadata) */
		if (!pk.found && tier_skip(v, doc.doc_id, r->who, doc.shared) == 1 &&
		    svc_pick(v, doc.doc_id, &pk, st) == 0 && pk.found) {
			out->skipped = out->from_shared = out->shared = 1;
			out->fig = pk.fig;
			out->tokens = pk.fig.tokens;
			out->units = pk.fig.units;
			ingest_name_skipped(v, r, doc.doc_id, out);
			ret = 0;
			goto out;
		}
		memset(st, 0, sizeof(*st));
	}
	/* a document that cannot fit by its bytes alone is refused before
	 * tokenizing (a 50 MB file took 1.8 s) */
	max = eng_policy_max_doc(ss->p, v->m);
	if ((n = eng_tok_min_tokens(v->tok, fd.text, fd.len)) > max) {
		ingest_too_long(st, n, max, 1);
		goto out;
	}
	n = eng_chat_doc_ids(v->chat, fd.text, fd.len, &ids);
	if (n < 0) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)n));
		svc_fail(st, SVC_AT_TOKENIZE, (int)n);
		goto out;
	}
	out->tokens = n;
	if (hooks.progress)
		hooks.progress(hooks.arg, "tokenized", 0, n);
	if (n > max) { /* before any prefill */
		ingest_too_long(st, n, max, 0);
		goto out;
	}
	rc = eng_kv_init(&kv, v->m, eng_policy_rows_per_head(ss->p, n, v->chunk, 0));
	if (!rc)
		rc = eng_ingest_cb(ss->ctx, kv, ss->p, ids, n, v->chunk, NULL, ingest_chunk_cb,
		    &hooks);
	if (rc) {
		snprintf(st->why, sizeof(st->why), "%lld tokens: %s%s", (long long)n,
		    eng_strerror(rc), rc == ENG_ERR_CONTEXT ? " (longer than the model's window "
		    "for this policy's positions)" : "");
		svc_fail(st, SVC_AT_INGEST, rc);
		goto out;
	}
	if (svc_cancelled(&hooks)) { /* a last look before committing */
		svc_fail(st, SVC_AT_COMMIT, ENG_ERR_CANCELLED);
		goto out;
	}
	/* claiming another user's document by its bytes: it keeps the name its
	 * owners gave it (a claim must not break their references) */
	snprintf(doc.name, sizeof(doc.name), "%s",
	    r->name && !(seen == 0 && had.name[0]) ? r->name : "");
	snprintf(doc.source, sizeof(doc.source), "%.1023s", r->source ? r->source : "");
	doc.bytes = r->len; /* the file's bytes, not its text's */
	doc.tokens = (uint64_t)n;
	/* created_us = 0: the store stamps a new document itself (and the last use) */
	rc = snap_save(v->s, &doc, kv, v->m->hp.n_head, eng_model_fingerprint(v->m), v->profile,
	    v->profile_id, v->quant, SNAP_ZLEVEL_DEFAULT, (uint64_t)n, st->why, sizeof(st->why));
	if (rc) {
		svc_fail(st, SVC_AT_SAVE, rc);
		goto out;
	}
	out->units = ingest_units(kv);
	out->seconds = eng_now() - t0;
	/* the stored snapshot's figures (its size as stored); a failed look
	 * leaves them unknown (bytes 0), the snapshot is stored all the same */
	if (svc_pick(v, doc.doc_id, &pk, st) == 0 && pk.found)
		out->fig = pk.fig;
	memset(st, 0, sizeof(*st));
	/* then the shared tier: a failure there is a warning (out->shared 0
	 * with the reason), the local snapshot stays */
	tier_push(v, doc.doc_id, v->profile_id, 0, out);
	ret = 0;
out:
	eng_kv_free(kv);
	free(ids);
	fmt_doc_free(&fd);
	return ret;
}
