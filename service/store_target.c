/*
 * store_target.c: what the store commands act on (store.h): kvsnapd's
 * open service, or a store the CLI opens itself (a state directory, or a
 * shared tier's store by address and credentials file); and the store's
 * totals (stats).
 */
#include <string.h>

#include "service/service_internal.h"

_Static_assert(SVC_OWNERS_MAX == STORE_OWNERS_MAX, "svc_doc.owners holds a store_doc's");
_Static_assert(SVC_FORMAT_MAX == STORE_FORMAT_MAX, "svc_doc.format holds a store_doc's");

void
svc_target_of(struct svc *v, const struct svc_who *who, struct svc_target *t)
{
	memset(t, 0, sizeof(*t));
	t->s = v->s;
	t->ix = v->index;
	t->who = who;
	t->active = v->profile_id;
}

int
svc_target_open(struct svc_target *t, const char *addr, const char *auth_file, int read_only,
    int index_too, struct svc_status *st)
{
	struct store_opts so = { .read_only = read_only };
	char user[256], pass[1024];
	int rc;

	memset(t, 0, sizeof(*t));
	memset(st, 0, sizeof(*st));
	if (auth_file && (rc = store_redis_auth_file(auth_file, user, sizeof(user), pass,
	    sizeof(pass), st->why, sizeof(st->why))))
		return svc_fail(st, SVC_AT_SHARED_AUTH, rc);
	if (auth_file) {
		so.user = user;
		so.password = pass;
	}
	rc = store_open(&t->s, addr, &so, st->why, sizeof(st->why));
	explicit_bzero(pass, sizeof(pass));
	if (rc)
		return svc_fail(st, SVC_AT_STORE_OPEN, rc);
	if (index_too)
		t->state = svc_lmdb_dir(addr) ? addr : NULL;
	return 0;
}

void
svc_target_close(struct svc_target *t)
{
	if (t->s)
		store_close(t->s);
	t->s = NULL;
}

const char *
svc_store_strerror(int rc)
{
	return store_strerror(rc);
}

const char *
svc_lmdb_dir(const char *addr)
{
	return store_lmdb_dir(addr);
}

int
svc_stats(const struct svc_target *t, struct svc_store_totals *out, char *why, size_t why_len)
{
	struct store_stats ss;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = store_stats(t->s, &ss, why, why_len)) != 0)
		return rc;
	out->n_docs = ss.n_docs;
	out->n_snapshots = ss.n_snapshots;
	out->stored_bytes = ss.stored_bytes;
	out->map_size = ss.map_size;
	out->map_used = ss.map_used;
	return 0;
}
