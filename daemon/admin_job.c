/*
 * admin_job.c: the store operations (has, ls, info, rm, stats, verify,
 * prune, shrink), run on the admin worker, never on the event loop and
 * never behind the model: a request to a service call (service/store.h,
 * the CLI's store commands' too), its outcome to the protocol's events;
 * and the protocol's form of the lookups every job shares (a DOC
 * reference, a document's snapshots).
 */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/escape.h"
#include "daemon/daemon_internal.h"

/* ------------------------------------------------------------------------ */
/* Shared lookups                                                            */

/* A failed resolve as the protocol's error. */
static int
job_resolve_fail(struct job *j, const struct svc_status *st)
{
	enum proto_code code;
	code = st->step == SVC_AT_TIER_DOWN ? PROTO_E_TIER_UNAVAILABLE :
	    st->rc == SVC_STORE_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
	    st->rc == SVC_STORE_ERR_AMBIGUOUS ? PROTO_E_AMBIGUOUS :
	    st->rc == SVC_STORE_ERR_CORRUPT ? PROTO_E_CORRUPT :
	    st->rc == SVC_STORE_ERR_ARG ? PROTO_E_BAD_REQUEST : PROTO_E_STORE;
	if (code == PROTO_E_NOT_FOUND && j->req.doc_model) { /* HTTP's `model` */
		j->model_missing = 1;
		job_error(j, code, "The model '%s' does not exist or you do not have access to it: "
		    "it is neither this daemon's model ('%s') nor a document you may read (GET "
		    "/v1/models lists them)", j->req.doc, j->req.plain_model ? j->req.plain_model :
		    "?");
		return code;
	}
	job_error(j, code, "%s", st->why);
	return code;
}

int
job_resolve(struct job *j, const char *ref, uint8_t doc_id[SVC_ID_BYTES])
{
	struct svc_status st;
	if (!svc_doc_resolve(daemon_g->v, ref, &j->who, doc_id, &st))
		return 0;
	return job_resolve_fail(j, &st);
}

int
job_resolve_tiers(struct job *j, const char *ref, uint8_t doc_id[SVC_ID_BYTES])
{
	struct svc_status st;
	if (!svc_tier_resolve_as(daemon_g->v, ref, &j->who, doc_id, &st))
		return 0;
	return job_resolve_fail(j, &st);
}

/* Resolve a document the peer is to change (rm, shrink): its owners, root
 * and the service user may; another reader of a shared one is denied. */
static int
job_resolve_owned(struct job *j, const char *ref, uint8_t doc_id[SVC_ID_BYTES])
{
	struct svc_target t;
	struct svc_doc dd;
	char why[512] = "";
	int rc;
	if ((rc = job_resolve(j, ref, doc_id)) != 0 || j->who.all)
		return rc;
	svc_target_of(daemon_g->v, &j->who, &t);
	if ((rc = svc_doc_get(&t, doc_id, 0, &dd, why, sizeof(why))) != 0) {
		rc = rc == SVC_STORE_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
		    rc == SVC_STORE_ERR_CORRUPT ? PROTO_E_CORRUPT : PROTO_E_STORE;
		job_error(j, (enum proto_code)rc, "%s", why);
		return rc;
	}
	if (svc_doc_may_change(&dd, &j->who))
		return 0;
	job_error(j, PROTO_E_DENIED, "%s is shared with you but not yours: only its owners may "
	    "change it", ref);
	return PROTO_E_DENIED;
}

/* The store-wide operations (stats, verify of all, prune) see and drop
 * every user's snapshots: root's and the service user's only. */
static int
job_admin_only(struct job *j)
{
	if (j->who.all)
		return 0;
	job_error(j, PROTO_E_DENIED, "%s of the whole store is for root and the daemon's user "
	    "(uid %u)", proto_op_name(j->req.op), (unsigned)geteuid());
	return PROTO_E_DENIED;
}

void
job_lookup_error(struct job *j, const struct svc_status *st)
{
	job_error(j, st->rc == SVC_STORE_ERR_CORRUPT ? PROTO_E_CORRUPT : PROTO_E_STORE, "%s", st->why);
}

/* ------------------------------------------------------------------------ */
/* Operations                                                                */

/* A JSON string of stored free text ("?" if it is not UTF-8). */
static json_t *
admin_str(const char *s)
{
	json_t *v = json_string(s);
	return v ? v : json_string("?");
}

/* A document whose metadata is damaged costs only itself (issue 26):
 * logged with its name, and for root and the daemon's user (who may see
 * every document) listed under "damaged"; others cannot be shown whose it
 * is, so it is left out of theirs. */
struct admin_damaged {
	json_t *arr;             /* NULL: not listed */
	const char *label, *op;
};

static void
admin_damaged_cb(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why)
{
	struct admin_damaged *a = arg;
	char hex[2 * SVC_ID_BYTES + 1];
	dlog(DLOG_WARN, "%s: %s: skipped a damaged document: %s (kvsnap verify reports it)",
	    a->label, a->op, why);
	svc_hex(doc_id, SVC_ID_BYTES, hex);
	if (a->arr)
		json_array_append_new(a->arr, json_pack("{s:s, s:s}", "doc_id", hex, "error", why));
}

static void
admin_verify_cb(void *arg, const uint8_t doc_id[SVC_ID_BYTES],
    const uint8_t profile_id[SVC_ID_BYTES], const char *why)
{
	char dh[2 * SVC_ID_BYTES + 1], ph[2 * SVC_ID_BYTES + 1];
	if (!why)
		return;
	svc_hex(doc_id, SVC_ID_BYTES, dh);
	svc_hex(profile_id, SVC_ID_BYTES, ph);
	json_array_append_new(arg, json_pack("{s:s, s:s, s:s}", "doc_id", dh, "profile_id", ph,
	    "error", why));
}

struct admin_prune {
	struct admin_damaged bad;
	json_t *snaps;
};

static void
admin_prune_cb(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const struct svc_doc *d,
    const uint8_t profile_id[SVC_ID_BYTES], uint64_t bytes, int64_t last_used_us)
{
	struct admin_prune *p = arg;
	char dh[2 * SVC_ID_BYTES + 1], ph[2 * SVC_ID_BYTES + 1];
	(void)d;
	svc_hex(doc_id, SVC_ID_BYTES, dh);
	svc_hex(profile_id, SVC_ID_BYTES, ph);
	json_array_append_new(p->snaps, json_pack("{s:s, s:s, s:I, s:I}", "doc_id", dh,
	    "profile_id", ph, "bytes", (json_int_t)bytes, "last_used_us",
	    (json_int_t)last_used_us));
}

static void
admin_prune_bad(void *arg, const uint8_t doc_id[SVC_ID_BYTES], const char *why)
{
	admin_damaged_cb(&((struct admin_prune *)arg)->bad, doc_id, why);
}

json_t *
job_tier_json(int counters)
{
	struct svc_tier_stats ts;
	json_t *o;
	svc_tier_stats(daemon_g->v, &ts);
	if (!ts.configured)
		return NULL;
	o = json_pack("{s:s, s:b}", "addr", ts.addr, "up", ts.up);
	if (o && !ts.up)
		json_object_set_new(o, "error", admin_str(ts.error));
	if (o && counters) {
		json_object_set_new(o, "hits", json_integer((json_int_t)ts.hits));
		json_object_set_new(o, "misses", json_integer((json_int_t)ts.misses));
		json_object_set_new(o, "errors", json_integer((json_int_t)ts.errors));
		json_object_set_new(o, "writes", json_integer((json_int_t)ts.writes));
		json_object_set_new(o, "write_errors", json_integer((json_int_t)ts.write_errors));
	}
	return o;
}

/* Documents as models (HTTP's GET /v1/models, or one with doc: GET
 * /v1/models/{id}): {"models":[{id, doc_id, created_us, owner, shared}]},
 * owner the first owner's user name (or "uid N"; absent when none). */
static void
admin_models(struct job *j)
{
	const struct proto_req *r = &j->req;
	struct svc_model *ms;
	struct svc_status st;
	char hex[2 * SVC_ID_BYTES + 1], owner[64];
	json_t *arr, *o;
	size_t n, i;

	if (svc_models(daemon_g->v, &j->who, r->plain_model ? r->plain_model : "", &ms, &n, &st)) {
		job_lookup_error(j, &st);
		return;
	}
	arr = json_array();
	for (i = 0; arr && i < n; i++) {
		if (r->doc && strcmp(ms[i].id, r->doc))
			continue;
		svc_hex(ms[i].doc_id, SVC_ID_BYTES, hex);
		o = json_pack("{s:s, s:s, s:I, s:b}", "id", ms[i].id, "doc_id", hex, "created_us",
		    (json_int_t)ms[i].created_us, "shared", ms[i].shared);
		if (o && ms[i].owner >= 0) {
			struct passwd pw, *pp = NULL;
			char pwbuf[1024];
			if (!getpwuid_r((uid_t)ms[i].owner, &pw, pwbuf, sizeof(pwbuf), &pp) && pp)
				snprintf(owner, sizeof(owner), "%s", pp->pw_name);
			else
				snprintf(owner, sizeof(owner), "uid %lld", (long long)ms[i].owner);
			json_object_set_new(o, "owner", admin_str(owner));
		}
		json_array_append_new(arr, o);
	}
	free(ms);
	if (r->doc && !json_array_size(arr)) {
		json_decref(arr);
		j->model_missing = 1;
		job_error(j, PROTO_E_NOT_FOUND, "The model '%s' does not exist or you do not have "
		    "access to it", r->doc);
		return;
	}
	job_result(j, json_pack("{s:o}", "models", arr));
}

/* A store failure as an error event. */
static void
admin_fail(struct job *j, int rc, const char *why)
{
	job_error(j, rc == SVC_STORE_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
	    rc == SVC_STORE_ERR_CORRUPT ? PROTO_E_CORRUPT :
	    rc == SVC_STORE_ERR_FULL ? PROTO_E_STORE_FULL : PROTO_E_STORE, "%s",
	    why[0] ? why : svc_store_strerror(rc));
}

/* A JSON string of s, or "" when it is not UTF-8 (a name from an older
 * store; snippets are cut on character boundaries). */
static json_t *
admin_utf8(const char *s)
{
	return json_string(kv_utf8_valid(s, strlen(s)) ? s : "");
}

/* search: {"hits":[{doc_id, name, part, score, snippet}]}, best first,
 * among the documents the peer may read (svc_search). */
static void
admin_search(struct job *j)
{
	struct svc_hit *hits = calloc((size_t)j->req.k, sizeof(*hits));
	char why[512] = "";
	unsigned n = 0;
	json_t *arr;

	if (!hits) {
		job_error(j, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	if (svc_search(daemon_g->v, &j->who, j->req.question, NULL, (unsigned)j->req.k, hits, &n,
	    why, sizeof(why))) {
		free(hits);
		job_error(j, PROTO_E_STORE, "%s", why);
		return;
	}
	arr = svc_hits_json(hits, n, admin_utf8);
	free(hits);
	job_result(j, json_pack("{s:o}", "hits", arr));
}

void
admin_job_run(struct worker *w, struct job *j)
{
	const struct proto_req *r = &j->req;
	struct svc_target t;
	uint8_t doc[SVC_ID_BYTES];
	char why[512] = "", hex[2 * SVC_ID_BYTES + 1];
	struct svc_doc dd, *docs;
	struct svc_snap *snaps;
	struct svc_status sst;
	json_t *arr, *o;
	size_t n, i;
	int rc;
	struct svc_picked pk;

	(void)w;
	svc_target_of(daemon_g->v, &j->who, &t);
	switch (r->op) {
	case PROTO_OP_HAS:
		if (job_resolve(j, r->doc, doc))
			return;
		if (svc_pick(daemon_g->v, doc, &pk, &sst) < 0) {
			job_lookup_error(j, &sst);
			return;
		}
		svc_hex(doc, SVC_ID_BYTES, hex);
		job_result(j, json_pack("{s:s, s:b, s:i}", "doc_id", hex, "stored", pk.found,
		    "other_profiles", pk.n_other));
		return;
	case PROTO_OP_LS: {
		struct admin_damaged bad = { j->who.all ? json_array() : NULL, j->label, "ls" };
		if ((rc = svc_ls(&t, 1, admin_damaged_cb, &bad, &docs, &n, why, sizeof(why)))) {
			json_decref(bad.arr);
			admin_fail(j, rc, why);
			return;
		}
		arr = json_array();
		for (i = 0; arr && i < n; i++)
			json_array_append_new(arr, svc_doc_json(&docs[i], &j->who));
		free(docs);
		o = json_pack("{s:o}", "docs", arr);
		if (o && bad.arr && json_array_size(bad.arr))
			json_object_set(o, "damaged", bad.arr);
		json_decref(bad.arr);
		job_result(j, o);
		return;
	}
	case PROTO_OP_INFO:
		if (job_resolve(j, r->doc, doc))
			return;
		if ((rc = svc_info(&t, doc, &dd, &snaps, &n, why, sizeof(why)))) {
			admin_fail(j, rc, why);
			return;
		}
		arr = json_array();
		for (i = 0; arr && i < n; i++)
			json_array_append_new(arr, svc_snap_json(&snaps[i], 1));
		free(snaps);
		job_result(j, json_pack("{s:o, s:o}", "doc", svc_doc_json(&dd, &j->who), "snapshots",
		    arr));
		return;
	case PROTO_OP_RM: {
		struct svc_removed rm;
		char phex[2 * SVC_ID_BYTES + 1] = "";
		if (job_resolve_owned(j, r->doc, doc))
			return;
		/* one snapshot, its document with the last one; or the document */
		if ((rc = svc_rm(&t, doc, r->profile, &rm, why, sizeof(why)))) {
			if (r->profile && (rc == SVC_STORE_ERR_ARG || rc == SVC_STORE_ERR_AMBIGUOUS))
				job_error(j, PROTO_E_BAD_REQUEST, "%s", why);
			else
				admin_fail(j, rc, why);
			return;
		}
		svc_hex(doc, SVC_ID_BYTES, hex);
		if (!r->profile) {
			job_result(j, json_pack("{s:s, s:b}", "doc_id", hex, "removed", 1));
			return;
		}
		svc_hex(rm.profile_id, SVC_ID_BYTES, phex);
		job_result(j, json_pack("{s:s, s:s, s:b}", "doc_id", hex, "profile_id", phex,
		    "removed", rm.gone));
		return;
	}
	case PROTO_OP_STATS: {
		struct svc_store_totals st;
		if (job_admin_only(j))
			return;
		if ((rc = svc_stats(&t, &st, why, sizeof(why)))) {
			admin_fail(j, rc, why);
			return;
		}
		o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "docs", (json_int_t)st.n_docs,
		    "snapshots", (json_int_t)st.n_snapshots, "stored_bytes",
		    (json_int_t)st.stored_bytes, "map_size", (json_int_t)st.map_size, "map_used",
		    (json_int_t)st.map_used);
		if (o && svc_has_tier(daemon_g->v)) /* the shared tier's state and counters */
			json_object_set_new(o, "shared", job_tier_json(1));
		job_result(j, o);
		return;
	}
	case PROTO_OP_VERIFY: {
		struct svc_verify_req vr = { NULL, admin_verify_cb, NULL, NULL, NULL };
		struct svc_verified vd;
		if (!r->doc && job_admin_only(j))
			return;
		if (r->doc && job_resolve(j, r->doc, doc))
			return;
		vr.doc = r->doc ? doc : NULL;
		vr.arg = arr = json_array();
		rc = svc_verify(&t, &vr, &vd, why, sizeof(why));
		if (rc && rc != SVC_STORE_ERR_CORRUPT) {
			json_decref(arr);
			admin_fail(j, rc, why);
			return;
		}
		job_result(j, json_pack("{s:b, s:I, s:o}", "ok", rc == 0, "checked",
		    (json_int_t)vd.checked, "problems", arr));
		return;
	}
	case PROTO_OP_SHRINK: {
		struct svc_shrunk sh;
		char phex[2 * SVC_ID_BYTES + 1];
		double t0 = svc_now();
		if (job_resolve_owned(j, r->doc, doc))
			return;
		if ((rc = svc_shrink(daemon_g->v, doc, r->ratio, r->replace, &sh, why, sizeof(why)))) {
			job_error(j, rc == SVC_SNAPIO_ERR_NOT_FOUND ? PROTO_E_NOT_FOUND :
			    rc == SVC_SNAPIO_ERR_ARG ? PROTO_E_BAD_REQUEST :
			    rc == SVC_SNAPIO_ERR_CORRUPT ? PROTO_E_CORRUPT :
			    rc == SVC_SNAPIO_ERR_MISMATCH ? PROTO_E_PROFILE :
			    rc == SVC_SNAPIO_ERR_FULL ? PROTO_E_STORE_FULL :
			    rc == SVC_SNAPIO_ERR_NOMEM ? PROTO_E_INTERNAL : PROTO_E_STORE, "%s", why);
			return;
		}
		svc_hex(doc, SVC_ID_BYTES, hex);
		svc_hex(sh.profile_id, SVC_ID_BYTES, phex);
		job_result(j, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:b, s:f}", "doc_id", hex,
		    "profile_id", phex, "profile", sh.profile, "tokens", (json_int_t)sh.n_tokens,
		    "units_from", (json_int_t)sh.units_from, "units", (json_int_t)sh.units,
		    "serves", svc_profile_is_shrunk(sh.profile, svc_profile_text(daemon_g->v)),
		    "replaced", sh.replaced, "seconds", svc_now() - t0));
		return;
	}
	case PROTO_OP_PRUNE: {
		struct admin_prune ap = { { NULL, j->label, "prune" }, NULL };
		struct svc_prune_req pr = { 0, 0, 0, 0, admin_prune_cb, admin_prune_bad, &ap };
		struct svc_pruned pd;
		if (job_admin_only(j))
			return;
		ap.snaps = json_array();
		ap.bad.arr = json_array();
		pr.older_than_us = r->older_than_s * 1000000;
		pr.max_bytes = (uint64_t)r->max_bytes;
		pr.keep = r->keep;
		pr.dry_run = r->dry_run;
		if ((rc = svc_prune(&t, &pr, &pd, why, sizeof(why)))) {
			json_decref(ap.snaps);
			json_decref(ap.bad.arr);
			admin_fail(j, rc, why);
			return;
		}
		o = json_pack("{s:I, s:I, s:b, s:o}", "dropped", (json_int_t)pd.dropped,
		    "bytes", (json_int_t)pd.bytes, "dry_run", r->dry_run, "snapshots", ap.snaps);
		if (o && json_array_size(ap.bad.arr))
			json_object_set(o, "damaged", ap.bad.arr);
		json_decref(ap.bad.arr);
		job_result(j, o);
		return;
	}
	case PROTO_OP_MODELS:
		admin_models(j);
		return;
	case PROTO_OP_SEARCH:
		admin_search(j);
		return;
	case PROTO_OP_HELLO:
	case PROTO_OP_INGEST:
	case PROTO_OP_QUERY:
	case PROTO_OP_CANCEL:
	case PROTO_OP_CHAT:
		break;
	}
	job_error(j, PROTO_E_INTERNAL, "op %s reached the admin worker", proto_op_name(r->op));
}
