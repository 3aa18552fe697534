/*
 * store_change.c: rm and rename (store.h), and the text index following
 * what rm and prune took away.  Whether the caller may change the
 * document is the front end's check first (svc_doc_may_change).
 */
#include <string.h>

#include "service/service_internal.h"

void
store_index_follow(const struct svc_target *t, const uint8_t *doc, char *why, size_t why_len)
{
	struct svc_index *ix = t->ix;
	int rc = 0;

	why[0] = '\0';
	if (!ix && t->state)
		rc = svc_index_open(t->s, t->state, 0, 0, &ix, NULL, why, why_len);
	if (!rc && ix)
		rc = doc ? svc_index_forget(ix, doc, why, why_len) :
		    svc_index_sync(ix, t->s, NULL, why, why_len);
	if (ix != t->ix)
		svc_index_close(ix);
	if (!rc)
		why[0] = '\0';
	else if (!why[0])
		snprintf(why, why_len, "the index could not be brought in step");
}

int
svc_rm(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], const char *profile_ref,
    struct svc_removed *out, char *why, size_t why_len)
{
	char w2[512];
	int rc;

	memset(out, 0, sizeof(*out));
	/* its names for the report; unreadable metadata: named by its id */
	if (svc_doc_get(t, doc_id, 0, &out->doc, w2, sizeof(w2)))
		memset(&out->doc, 0, sizeof(out->doc));
	memcpy(out->doc.doc_id, doc_id, SVC_ID_BYTES);
	out->gone = 1;
	if (profile_ref) {
		out->one = 1;
		if ((rc = svc_profile_ref(t->s, doc_id, profile_ref, out->profile_id, why,
		    why_len)) ||
		    (rc = store_rm_snapshot(t->s, doc_id, out->profile_id, &out->gone, why,
		    why_len)))
			return rc;
	} else if ((rc = store_rm(t->s, doc_id, why, why_len))) {
		return rc;
	}
	/* its index rows (a failure loses nothing: a search skips rows of
	 * missing documents, the next sync drops them) */
	if (out->gone)
		store_index_follow(t, doc_id, out->index_why, sizeof(out->index_why));
	return 0;
}

int
svc_rename(const struct svc_target *t, const uint8_t doc_id[SVC_ID_BYTES], const char *name,
    char old_name[256], char *why, size_t why_len)
{
	struct svc_doc d;
	char w2[512];
	old_name[0] = '\0';
	if (!svc_doc_get(t, doc_id, 0, &d, w2, sizeof(w2)))
		memcpy(old_name, d.name, sizeof(d.name));
	return store_rename(t->s, doc_id, name, why, why_len);
}
