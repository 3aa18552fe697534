/*
 * search.c: retrieval over the text index (svc_search, service.h).  The
 * index ranks every matching part (BM25); this walks them best first and
 * keeps those the caller may read (access.c's rule over each document's
 * current metadata, so a share or a new owner counts at once and the index
 * need not know owners) and the filter allows, until k.  A row whose
 * document is gone (a removal the index has not heard of yet) is skipped.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "index/index.h"
#include "service/service_internal.h"

/* The first search of a process that did not open the index at start opens it. */
static pthread_mutex_t search_open_mu = PTHREAD_MUTEX_INITIALIZER;

static int
search_in_filter(const struct svc_doc_filter *f, const uint8_t *doc)
{
	size_t i;
	if (!f)
		return 1;
	for (i = 0; i < f->n; i++)
		if (!memcmp(f->ids[i], doc, SNAP_ID_BYTES))
			return 1;
	return 0;
}

int
svc_search_in(struct store *s, struct svc_index *ix, const struct svc_who *w,
    const char *query, const struct svc_doc_filter *filter, unsigned k, struct svc_hit *hits,
    unsigned *n, char *why, size_t why_len)
{
	char expr[IDX_MATCH_MAX], iwhy[256];
	struct idx_search *q;
	struct store_doc d;
	struct svc_hit h;
	int rc;

	if (n)
		*n = 0;
	if (!s || !query || !hits || !n || k < 1 || k > SVC_SEARCH_K_MAX)
		return kv_fail(why, why_len, -1, "search: k must be 1 to %d", SVC_SEARCH_K_MAX);
	if (!ix)
		return kv_fail(why, why_len, -1, "search: no text index");
	if (filter && filter->n && !filter->ids)
		return kv_fail(why, why_len, -1, "search: a filter without ids");
	if (idx_match(query, strlen(query), expr) == 0)
		return 0;
	if (idx_search_begin(index_idx(ix), expr, &q, why, why_len))
		return -1;
	while (*n < k) {
		memset(&h, 0, sizeof(h));
		rc = idx_search_next(q, h.doc_id, &h.part, &h.score, why, why_len);
		if (rc <= 0) {
			idx_search_end(q);
			return rc < 0 ? -1 : 0;
		}
		if (!search_in_filter(filter, h.doc_id))
			continue;
		if (store_info(s, h.doc_id, &d, iwhy, sizeof(iwhy)) != 0 || !svc_may_read(&d, w))
			continue; /* gone, unreadable, or not the caller's to read */
		if (idx_search_snippet(q, h.snippet, sizeof(h.snippet), why, why_len)) {
			idx_search_end(q);
			return -1;
		}
		snprintf(h.name, sizeof(h.name), "%s", d.name);
		hits[(*n)++] = h;
	}
	idx_search_end(q);
	return 0;
}

int
svc_search(struct svc *v, const struct svc_who *w, const char *query,
    const struct svc_doc_filter *filter, unsigned k, struct svc_hit *hits, unsigned *n,
    char *why, size_t why_len)
{
	if (n)
		*n = 0;
	if (!v)
		return kv_fail(why, why_len, -1, "search: no service");
	pthread_mutex_lock(&search_open_mu);
	if (!v->index_tried) {
		struct svc_conf c;
		memset(&c, 0, sizeof(c));
		c.state = v->state;
		open_index(v, &c);
	}
	pthread_mutex_unlock(&search_open_mu);
	if (!v->index)
		return kv_fail(why, why_len, -1, "search: no text index (%s)",
		    v->index_why[0] ? v->index_why : "not opened");
	return svc_search_in(v->s, v->index, w, query, filter, k, hits, n, why, why_len);
}
