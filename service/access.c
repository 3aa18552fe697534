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

#include "common/fail.h"
#include "common/escape.h"
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

/* ------------------------------------------------------------------------ */
/* What ls shows: a document's file name (issue 30)                          */

#define ACCESS_FILE_LISTED 4   /* candidates named in an ambiguity */

struct access_file {
	const char *ref;
	const struct svc_who *w;
	int n;
	uint8_t doc_id[SNAP_ID_BYTES];
	char listed[ACCESS_FILE_LISTED * 128];
};

const char *
svc_doc_file_name(const struct store_doc *d)
{
	const char *base = strrchr(d->source, '/');
	base = base && base[1] ? base + 1 : d->source;
	return base[0] && base[0] != '(' && kv_utf8_valid(base, strlen(base)) ? base : "";
}

static int
access_file_cb(void *arg, const struct store_doc *d)
{
	struct access_file *a = arg;
	char hex[2 * SNAP_ID_BYTES + 1];
	size_t len;

	if (strcmp(svc_doc_file_name(d), a->ref) || !svc_may_read(d, a->w))
		return 0;
	if (a->n == 0)
		memcpy(a->doc_id, d->doc_id, SNAP_ID_BYTES);
	if (a->n < ACCESS_FILE_LISTED) {
		store_hex(d->doc_id, SNAP_ID_BYTES, hex);
		len = strlen(a->listed);
		snprintf(a->listed + len, sizeof(a->listed) - len, "%s%.12s (%s%.60s%s)", a->n ? ", " : "",
		    hex, d->name[0] ? "named '" : "", d->name[0] ? d->name : d->source,
		    d->name[0] ? "'" : "");
	}
	a->n++;
	return 0;
}

/* After the store found nothing: the file name ls shows, when exactly one
 * document w may read came from a file of that name; else why not (several
 * such, listed; a hex prefix too short to be one). */
static int
access_by_file(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct access_file a;
	char why[256];
	size_t nhex = 0;
	int rc;

	memset(&a, 0, sizeof(a));
	a.ref = ref;
	a.w = w;
	if (ref[0] && !strchr(ref, '/') &&
	    (rc = store_ls(s, access_file_cb, &a, why, sizeof(why))) != 0 && rc != STORE_ERR_CORRUPT)
		return -1; /* the store's own not-found stands */
	if (a.n == 1) {
		memset(st, 0, sizeof(*st));
		memcpy(doc_id, a.doc_id, SNAP_ID_BYTES);
		return 0;
	}
	if (a.n > 1) {
		snprintf(st->why, sizeof(st->why), "'%.60s' is the file name of %d documents: %.300s%s; "
		    "give a doc_id prefix or a name (kvsnap rename DOC NAME)", ref, a.n, a.listed,
		    a.n > ACCESS_FILE_LISTED ? ", ..." : "");
		return svc_fail(st, SVC_AT_RESOLVE, STORE_ERR_AMBIGUOUS);
	}
	while (ref[nhex] && kv_hex_value((unsigned char)ref[nhex]) >= 0)
		nhex++;
	if (nhex && !ref[nhex] && nhex < 4) {
		snprintf(st->why, sizeof(st->why), "prefix too short: '%.60s' has %zu hex digit%s; give "
		    "at least 4 of the doc_id (kvsnap ls shows them), or a name", ref, nhex,
		    nhex == 1 ? "" : "s");
		return svc_fail(st, SVC_AT_RESOLVE, STORE_ERR_NOT_FOUND);
	}
	return -1;
}

int
svc_resolve_file(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	if (st->rc != STORE_ERR_NOT_FOUND)
		return -1;
	return access_by_file(s, ref, w, doc_id, st);
}

int
svc_resolve_as(struct store *s, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct store_doc d;
	char why[512];
	int rc;

	if (svc_resolve_store(s, ref, doc_id, st) == 0) {
		if (!w || w->all)
			return 0;
		if ((rc = store_info(s, doc_id, &d, st->why, sizeof(st->why))) != 0)
			return svc_fail(st, SVC_AT_RESOLVE, rc);
		if (svc_may_read(&d, w))
			return 0;
		access_not_found(ref, st);
		return svc_resolve_file(s, ref, w, doc_id, st);
	}
	if (st->rc == STORE_ERR_NOT_FOUND)
		return svc_resolve_file(s, ref, w, doc_id, st);
	if (st->rc != STORE_ERR_AMBIGUOUS || !w || w->all)
		return -1;
	/* Several documents share the prefix: is it unique among the caller's? */
	struct access_scan a = { ref, w, 0, { 0 } };
	if ((rc = store_ls(s, access_scan_cb, &a, why, sizeof(why))) != 0 &&
	    rc != STORE_ERR_CORRUPT) {
		snprintf(st->why, sizeof(st->why), "%s", why);
		return svc_fail(st, SVC_AT_RESOLVE, rc);
	}
	if (a.n == 0) {
		access_not_found(ref, st);
		return svc_resolve_file(s, ref, w, doc_id, st);
	}
	if (a.n > 1)
		return -1; /* ambiguous among the caller's own as well */
	memset(st, 0, sizeof(*st));
	memcpy(doc_id, a.doc_id, SNAP_ID_BYTES);
	return 0;
}
