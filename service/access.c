/*
 * access.c: who may see a document.  kvsnapd asks on behalf of the uid at
 * the other end of the socket (SO_PEERCRED): a document is readable by its
 * owners (the uids that ingested it), by everyone when it is shared, and by
 * the daemon's own user and root always; changing it (rm, shrink) is for
 * its owners and those two.  A document the caller may not read does not
 * exist for them: it resolves as not found, with the store's own words, and
 * a hex prefix is unique or ambiguous among the caller's documents only.
 * `kvsnap --local` callers see all (the file system is their gate).
 */
#include <stdio.h>
#include <string.h>

#include "service/service_internal.h"

int
svc_may_read(const struct store_doc *d, const struct svc_who *w)
{
	return !w || w->all || d->shared || store_doc_owned(d, w->uid);
}

int
svc_may_change(const struct store_doc *d, const struct svc_who *w)
{
	return !w || w->all || store_doc_owned(d, w->uid);
}

/* The store's not-found reasons, word for word, so that a hidden document
 * answers exactly as a missing one. */
static int
access_not_found(const char *ref, struct svc_status *st)
{
	if (strlen(ref) == 2 * SNAP_ID_BYTES)
		snprintf(st->why, sizeof(st->why), "no document %s", ref);
	else
		snprintf(st->why, sizeof(st->why), "no document matches '%s'", ref);
	return svc_fail(st, SVC_AT_RESOLVE, STORE_ERR_NOT_FOUND);
}

struct access_scan {
	const char *prefix;
	const struct svc_who *w;
	int n;
	uint8_t doc_id[SNAP_ID_BYTES];
};

static int
access_scan_cb(void *arg, const struct store_doc *d)
{
	struct access_scan *a = arg;
	char hex[2 * SNAP_ID_BYTES + 1];
	size_t i;
	store_hex(d->doc_id, SNAP_ID_BYTES, hex);
	for (i = 0; a->prefix[i]; i++)
		if (hex[i] != (a->prefix[i] | 0x20)) /* the store takes either case */
			return 0;
	if (svc_may_read(d, a->w) && a->n++ == 0)
		memcpy(a->doc_id, d->doc_id, SNAP_ID_BYTES);
	return 0;
}

int
svc_resolve_as(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct store_doc d;
	char why[512];
	int rc;

	if (svc_resolve(s, ref, doc_id, st) == 0) {
		if (!w || w->all)
			return 0;
		if ((rc = store_info(s, doc_id, &d, st->why, sizeof(st->why))) != 0)
			return svc_fail(st, SVC_AT_RESOLVE, rc);
		return svc_may_read(&d, w) ? 0 : access_not_found(ref, st);
	}
	if (st->rc != STORE_ERR_AMBIGUOUS || !w || w->all)
		return -1;
	/* Several documents share the prefix: is it unique among the caller's? */
	struct access_scan a = { ref, w, 0, { 0 } };
	if ((rc = store_ls(s, access_scan_cb, &a, why, sizeof(why))) != 0 &&
	    rc != STORE_ERR_CORRUPT) {
		snprintf(st->why, sizeof(st->why), "%s", why);
		return svc_fail(st, SVC_AT_RESOLVE, rc);
	}
	if (a.n == 0)
		return access_not_found(ref, st);
	if (a.n > 1)
		return -1; /* ambiguous among the caller's own as well */
	memset(st, 0, sizeof(*st));
	memcpy(doc_id, a.doc_id, SNAP_ID_BYTES);
	return 0;
}
