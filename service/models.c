/*
 * models.c: documents as models (kvsnapd's GET /v1/models and a request's
 * `model`, docs/HTTP.md): each document a caller may read gets an id a
 * tool can show and send back.  The id is the document's name; else its
 * file name (the last part of its source path, as `kvsnap ls` shows an
 * unnamed document) when no other listed document has that name or file
 * name; else its doc_id in hex.  No document takes the plain model's id.
 * The list and the lookup of an id are the same walk, so an id that is
 * listed is answered and one that is not is not.
 */
#include <stdlib.h>
#include <string.h>

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

/* Whether s is the name or file name of a listed document other than
 * v[self]. */
static int
models_taken(const struct svc_model *v, size_t n, size_t self, const char *s)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (i != self && (!strcmp(v[i].name, s) || !strcmp(v[i].file, s)))
			return 1;
	return 0;
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
	for (i = 0; i < mw.n; i++) {
		m = &mw.v[i];
		if (m->name[0] && strcmp(m->name, plain))
			snprintf(m->id, sizeof(m->id), "%s", m->name);
		else if (m->file[0] && !m->name[0] && strcmp(m->file, plain) &&
		    !models_taken(mw.v, mw.n, i, m->file))
			snprintf(m->id, sizeof(m->id), "%s", m->file);
		else
			store_hex(m->doc_id, SNAP_ID_BYTES, m->id);
	}
	*out = mw.v;
	*n = mw.n;
	return 0;
}

int
svc_model_find(struct svc *v, const struct svc_who *w, const char *plain, const char *id,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct svc_model *ms;
	size_t n, i;
	int found = 0;
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
