/*
 * models.c: documents as models (kvsnapd's GET /v1/models and a request's
 * `model`, docs/HTTP.md): each document a caller may read gets an id a
 * tool can show and send back.  The id is the document's name; else its
 * file name (the last part of its source path, as `kvsnap ls` shows an
 * unnamed document) when no other listed document has that name or file
 * name; else its doc_id in hex.  No document takes the plain model's id or
 * `library` (SVC_LIBRARY_MODEL).
 * The list and the lookup of an id are the same walk, so an id that is
 * listed is answered and one that is not is not; but a name, the id of
 * most documents tools pick, is looked up through the store's name index
 * first (one read instead of every document's metadata).
 *
 * Scale (bench/bench_models.c, bench/RESULTS.md "Documents as models"):
 * whether a file name is taken by another listed document was one pass
 * over the list per document, quadratic (seconds at 20,000 documents);
 * it is a sort and binary searches now.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/store.h"

#include "common/escape.h"
#include "service/service_internal.h"

struct models_walk {
	const struct svc_who *w;
	struct svc_model *v;
	size_t n, cap;
	int nomem;
};

static int
models_cb(void *arg, const struct store_doc *d)
{
	struct models_walk *mw = arg;
	struct svc_model *m, *nv;
	if (!svc_may_read(d, mw->w))
		return 0;
	if (mw->n == mw->cap) {
		mw->cap = mw->cap ? 2 * mw->cap : 16;
		if (!(nv = realloc(mw->v, mw->cap * sizeof(*nv)))) {
			mw->nomem = 1;
			return 1;
		}
		mw->v = nv;
	}
	m = &mw->v[mw->n++];
	memset(m, 0, sizeof(*m));
	memcpy(m->doc_id, d->doc_id, SNAP_ID_BYTES);
	if (kv_utf8_valid(d->name, strlen(d->name)))
		snprintf(m->name, sizeof(m->name), "%s", d->name);
	snprintf(m->file, sizeof(m->file), "%s", svc_doc_file_name(d));
	m->created_us = d->created_us;
	m->shared = d->shared;
	m->owner = d->n_owners ? (int64_t)d->owners[0] : -1;
	return 0;
}

static int
models_bad(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], const char *why)
{
	(void)arg;
	(void)doc_id;
	(void)why; /* a damaged document is no model; `kvsnap verify` reports it */
	return 0;
}

static int
models_strcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* How many of the sorted strings all[0..n) are s. */
static size_t
models_count(const char *const *all, size_t n, const char *s)
{
	size_t lo = 0, hi = n, mid, k;
	while (lo < hi) { /* the first not below s */
		mid = lo + (hi - lo) / 2;
		if (strcmp(all[mid], s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < n && !strcmp(all[k], s); k++)
		;
	return k - lo;
}

int
svc_models(struct svc *v, const struct svc_who *w, const char *plain, struct svc_model **out,
    size_t *n, struct svc_status *st)
{
	struct models_walk mw = { w, NULL, 0, 0, 0 };
	struct svc_model *m;
	char why[512];
	size_t i;
	int rc;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	*n = 0;
	rc = store_ls_each(v->s, models_cb, models_bad, &mw, why, sizeof(why));
	if (rc || mw.nomem) {
		free(mw.v);
		snprintf(st->why, sizeof(st->why), "%s", mw.nomem ? "out of memory" : why);
		return svc_fail(st, SVC_AT_LOOKUP, mw.nomem ? STORE_ERR_NOMEM : rc);
	}
	/* every listed name and file name, sorted: a file name is an id when
	 * it is there once (its own document's file, the document unnamed) */
	const char **all = malloc((2 * mw.n + 1) * sizeof(*all));
	size_t n_all = 0;
	if (!all) {
		free(mw.v);
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_LOOKUP, STORE_ERR_NOMEM);
	}
	for (i = 0; i < mw.n; i++) {
		if (mw.v[i].name[0])
			all[n_all++] = mw.v[i].name;
		if (mw.v[i].file[0])
			all[n_all++] = mw.v[i].file;
	}
	qsort(all, n_all, sizeof(*all), models_strcmp);
	for (i = 0; i < mw.n; i++) {
		m = &mw.v[i];
		if (m->name[0] && strcmp(m->name, plain) && strcmp(m->name, SVC_LIBRARY_MODEL))
			snprintf(m->id, sizeof(m->id), "%s", m->name);
		else if (m->file[0] && !m->name[0] && strcmp(m->file, plain) &&
		    strcmp(m->file, SVC_LIBRARY_MODEL) &&
		    models_count(all, n_all, m->file) == 1)
			snprintf(m->id, sizeof(m->id), "%s", m->file);
		else
			store_hex(m->doc_id, SNAP_ID_BYTES, m->id);
	}
	free(all);
	*out = mw.v;
	*n = mw.n;
	return 0;
}

int
svc_model_find(struct svc *v, const struct svc_who *w, const char *plain, const char *id,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct svc_model *ms;
	struct store_doc d;
	char why[512];
	size_t n, i;
	int found = 0;
	memset(st, 0, sizeof(*st));
	/* a document's name is its id (unless it is the plain model's): the
	 * name index answers it without the walk */
	if (strcmp(id, plain) && strcmp(id, SVC_LIBRARY_MODEL) && !store_resolve(v->s, id, doc_id, why, sizeof(why)) &&
	    !store_info(v->s, doc_id, &d, why, sizeof(why)) && !strcmp(d.name, id) &&
	    kv_utf8_valid(d.name, strlen(d.name)) && svc_may_read(&d, w))
		return 1;
	if (svc_models(v, w, plain, &ms, &n, st))
		return -1;
	for (i = 0; i < n && !found; i++)
		if (!strcmp(ms[i].id, id)) {
			memcpy(doc_id, ms[i].doc_id, SNAP_ID_BYTES);
			found = 1;
		}
	free(ms);
	return found;
}
