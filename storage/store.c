/*
 * store.c: the store's front end (store.h): picks a backend, checks
 * arguments and names, parses document references, writes the error texts
 * every backend shares, and dispatches through s->ops (store_backend.h).
 * Also the helpers backends share: errors, ids, hex, prune's limits (their
 * stamps' clock is common/clock.h's kv_wall_us).
 *
 * A store address is a state directory (LMDB, the default), or
 * "NAME:rest" for the backend NAME ("lmdb:/var/lib/kvsnap",
 * "redis-cluster:10.0.0.1:7000,10.0.0.2:7000", "redis://10.0.0.1:7000").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <sodium.h>

#include "common/grow.h"
#include "storage/store_backend.h"

static const struct store_ops *const st_backends[] = { &store_lmdb_ops, &store_redis_ops,
	&store_redis_url_ops };

/* ------------------------------------------------------------------------ */
/* Errors, ids                                                               */

const char *
store_strerror(int err)
{
	switch (err) {
	case STORE_OK: return "ok";
	case STORE_ERR_NOMEM: return "out of memory";
	case STORE_ERR_ARG: return "bad argument";
	case STORE_ERR_IO: return "i/o error";
	case STORE_ERR_FULL: return "store full";
	case STORE_ERR_NOT_FOUND: return "not found";
	case STORE_ERR_AMBIGUOUS: return "ambiguous prefix";
	case STORE_ERR_CORRUPT: return "corrupt data";
	case STORE_ERR_EXISTS: return "name in use";
	case STORE_ERR_BUSY: return "store busy";
	default: return "unknown store error";
	}
}

void
store_hex(const uint8_t *id, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = '\0';
}

void
st_short(const uint8_t *id, char out[13])
{
	store_hex(id, 6, out);
}

static pthread_once_t st_sodium_once = PTHREAD_ONCE_INIT;

static void
st_sodium_init(void)
{
	/* sodium_init() only fails when no entropy source can be opened, which
	 * generichash does not need, so a failure is ignored. */
	if (sodium_init() < 0)
		return;
}

void
st_sodium(void)
{
	pthread_once(&st_sodium_once, st_sodium_init);
}

void
store_doc_id(const void *bytes, size_t len, uint8_t doc_id[STORE_ID_BYTES])
{
	st_sodium();
	crypto_generichash(doc_id, STORE_ID_BYTES, bytes, len, NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* Names and references                                                      */

int
store_name_check(const char *name, char *why, size_t why_len)
{
	size_t n = strlen(name), i, hex = 0;
	if (n == 0 || n > ST_NAME_MAX)
		return store_fail(why, why_len, STORE_ERR_ARG, "a name has 1 to %d bytes", ST_NAME_MAX);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		/* C1 controls are U+0080..U+009F, UTF-8 \xc2\x80..\xc2\x9f */
		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && i + 1 < n && (unsigned char)name[i + 1] >= 0x80 &&
		    (unsigned char)name[i + 1] <= 0x9f))
			return store_fail(why, why_len, STORE_ERR_ARG, "control character in name");
		hex += (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
	}
	if (hex == n && n >= 4)
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "name '%s' reads as a document id prefix; add a non-hex character", name);
	return 0;
}

/* A full id, a prefix of 4+ hex digits, or a name (hex-looking names are
 * refused, so no prefix shadows one). */
static void
st_ref_parse(const char *text, struct st_ref *ref)
{
	size_t i, nhex = 0;

	memset(ref, 0, sizeof(*ref));
	ref->text = text;
	ref->len = strlen(text);
	while (text[nhex] && kv_hex_value((unsigned char)text[nhex]) >= 0)
		nhex++;
	if (nhex != ref->len || ref->len < 4 || ref->len > 2 * STORE_ID_BYTES) {
		ref->kind = ST_REF_NAME;
		return;
	}
	ref->kind = ref->len == 2 * STORE_ID_BYTES ? ST_REF_ID : ST_REF_PREFIX;
	ref->n_digits = ref->len;
	for (i = 0; i < ref->len; i++)
		ref->key[i / 2] |= (uint8_t)(kv_hex_value((unsigned char)text[i]) << (i % 2 ? 0 : 4));
}

int
st_ref_match(const struct st_ref *ref, const uint8_t *id)
{
	size_t n = ref->n_digits;
	if (memcmp(id, ref->key, n / 2) != 0)
		return 0;
	return n % 2 == 0 || (id[n / 2] >> 4) == (ref->key[n / 2] >> 4);
}

/* ------------------------------------------------------------------------ */
/* Prune's limits and victims                                                */

int64_t
st_prune_cutoff(const struct store_prune *p)
{
	return p->older_than_us > 0 ? st_now_us() - p->older_than_us : INT64_MIN;
}

int
st_prune_more(const struct store_prune *p, int64_t cutoff, int64_t stamp, uint64_t n_left,
    uint64_t b_left)
{
	return stamp < cutoff || (p->keep >= 0 && n_left > (uint64_t)p->keep) ||
	    (p->max_bytes > 0 && b_left > p->max_bytes);
}

int
st_victims_damaged(struct st_victims *a, const uint8_t *doc, const char *why)
{
	struct st_damaged *x;
	int64_t i;
	for (i = 0; i < a->n_bad; i++)
		if (!memcmp(a->bad[i].doc, doc, STORE_ID_BYTES))
			return 0;
	if (!(x = kv_grow(a->bad, a->n_bad, &a->cap_bad, 8, sizeof(*x))))
		return STORE_ERR_NOMEM;
	a->bad = x;
	x = &a->bad[a->n_bad++];
	memcpy(x->doc, doc, STORE_ID_BYTES);
	snprintf(x->why, sizeof(x->why), "%s", why);
	return 0;
}

int
st_victims_add(struct st_victims *a, const uint8_t *doc, const uint8_t *prof, uint64_t bytes,
    int64_t last_used_us)
{
	struct st_victim *x;
	if (!(x = kv_grow(a->v, a->n, &a->cap, 64, sizeof(*x))))
		return STORE_ERR_NOMEM;
	a->v = x;
	x = &a->v[a->n++];
	memcpy(x->doc, doc, STORE_ID_BYTES);
	memcpy(x->prof, prof, STORE_ID_BYTES);
	x->bytes = bytes;
	x->last_used_us = last_used_us;
	a->bytes += bytes;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */

/* "NAME:rest" names a backend when NAME is one; anything else is LMDB's
 * state directory. */
static const struct store_ops *
st_pick(const char *where, const char **rest)
{
	size_t i, n;
	for (i = 0; i < sizeof(st_backends) / sizeof(st_backends[0]); i++) {
		n = strlen(st_backends[i]->name);
		if (strncmp(where, st_backends[i]->name, n) == 0 && where[n] == ':') {
			*rest = where + n + 1;
			return st_backends[i];
		}
	}
	*rest = where;
	return &store_lmdb_ops;
}

const char *
store_lmdb_dir(const char *where)
{
	const char *rest;
	if (!where || st_pick(where, &rest) != &store_lmdb_ops)
		return NULL;
	return rest;
}

int
store_open(struct store **out, const char *dir, const struct store_opts *o, char *why,
    size_t why_len)
{
	struct store *s;
	const char *rest;
	int rc;

	if (!out)
		return store_fail(why, why_len, STORE_ERR_ARG, "open: missing argument");
	*out = NULL;
	if (!dir || !*dir || strlen(dir) >= 512)
		return store_fail(why, why_len, STORE_ERR_ARG, "state directory name empty or too long");
	st_sodium();
	if (!(s = calloc(1, sizeof(*s))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	s->ops = st_pick(dir, &rest);
	if (!*rest) {
		free(s);
		return store_fail(why, why_len, STORE_ERR_ARG, "state directory name empty or too long");
	}
	if ((rc = s->ops->open(s, rest, o, why, why_len)) != 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
store_close(struct store *s)
{
	if (!s)
		return;
	if (s->be)
		s->ops->close(s);
	free(s);
}

/* ------------------------------------------------------------------------ */
/* Writes                                                                    */

/* The arguments of a put (what the records hold is the codec's business:
 * the store takes them as bytes); *payload gets their total size. */
static int
st_put_check(const struct store_doc *d, const struct store_snapshot *sn, uint64_t *payload,
    char *why, size_t why_len)
{
	int i, rc;

	if (!d || !sn || !sn->header || !sn->header_len || sn->n_layer < 1 ||
	    sn->n_layer >= (int)STORE_HEAD_RECORD || !sn->layer || !sn->layer_len)
		return store_fail(why, why_len, STORE_ERR_ARG, "put: missing or empty snapshot");
	if (!memchr(d->name, 0, sizeof(d->name)) || !memchr(d->source, 0, sizeof(d->source)) ||
	    !memchr(d->format, 0, sizeof(d->format)))
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "put: name, source or format not terminated");
	if (d->name[0] && (rc = store_name_check(d->name, why, why_len)) != 0)
		return rc;
	if (sn->text && (!sn->text->buf || !sn->text->len ||
	    sn->text->part > STORE_TEXT_PART_MAX))
		return store_fail(why, why_len, STORE_ERR_ARG, "put: empty text record");
	*payload = sn->header_len;
	for (i = 0; i < sn->n_layer; i++) {
		if (!sn->layer[i] || !sn->layer_len[i])
			return store_fail(why, why_len, STORE_ERR_ARG, "put: layer %d empty", i);
		*payload += sn->layer_len[i];
	}
	return 0;
}

int
store_put(struct store *s, const struct store_doc *d, const struct store_snapshot *snap,
    char *why, size_t why_len)
{
	uint64_t payload = 0;
	int rc;
	if (!s)
		return store_fail(why, why_len, STORE_ERR_ARG, "put: no store");
	if ((rc = st_put_check(d, snap, &payload, why, why_len)) != 0)
		return rc;
	if (snap->replaces && !s->ops->rm_snapshot)
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "put: the %s backend cannot replace a snapshot", s->ops->name);
	return s->ops->put(s, d, snap, payload, why, why_len);
}

int
store_touch(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], char *why, size_t why_len)
{
	if (!s || !doc_id || !profile_id)
		return store_fail(why, why_len, STORE_ERR_ARG, "touch: missing argument");
	return s->ops->touch(s, doc_id, profile_id, why, why_len);
}

int
store_rename(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], const char *name,
    char *why, size_t why_len)
{
	int rc;
	if (!s || !doc_id || !name)
		return store_fail(why, why_len, STORE_ERR_ARG, "rename: missing argument");
	if (name[0] && (rc = store_name_check(name, why, why_len)) != 0)
		return rc;
	return s->ops->rename(s, doc_id, name, why, why_len);
}

int
store_rm(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], char *why, size_t why_len)
{
	if (!s || !doc_id)
		return store_fail(why, why_len, STORE_ERR_ARG, "rm: missing argument");
	return s->ops->rm(s, doc_id, why, why_len);
}

int
store_rm_snapshot(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], int *doc_gone, char *why, size_t why_len)
{
	int gone = 0, rc;
	if (doc_gone)
		*doc_gone = 0;
	if (!s || !doc_id || !profile_id)
		return store_fail(why, why_len, STORE_ERR_ARG, "rm: missing argument");
	if (!s->ops->rm_snapshot)
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "rm: the %s backend cannot remove one snapshot (rm removes the document)",
		    s->ops->name);
	rc = s->ops->rm_snapshot(s, doc_id, profile_id, &gone, why, why_len);
	if (!rc && doc_gone)
		*doc_gone = gone;
	return rc;
}

int
store_prune(struct store *s, const struct store_prune *p,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes, int64_t last_used_us),
    void *arg, int64_t *n_dropped, uint64_t *bytes_dropped, char *why, size_t why_len)
{
	struct st_victims v = { NULL, 0, 0, 0, NULL, 0, 0 };
	int64_t j;
	int rc;

	if (n_dropped)
		*n_dropped = 0;
	if (bytes_dropped)
		*bytes_dropped = 0;
	if (!s || !p)
		return store_fail(why, why_len, STORE_ERR_ARG, "prune: missing argument");
	rc = s->ops->prune(s, p, &v, why, why_len);
	/* Report only what is gone (or would go): after the commit. */
	for (j = 0; rc == 0 && fn && j < v.n; j++)
		fn(arg, v.v[j].doc, v.v[j].prof, v.v[j].bytes, v.v[j].last_used_us);
	for (j = 0; rc == 0 && p->damaged && j < v.n_bad; j++)
		p->damaged(p->damaged_arg, v.bad[j].doc, v.bad[j].why);
	if (rc == 0 && n_dropped)
		*n_dropped = v.n;
	if (rc == 0 && bytes_dropped)
		*bytes_dropped = v.bytes;
	free(v.v);
	free(v.bad);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Reads                                                                     */

int
store_resolve(struct store *s, const char *ref, uint8_t doc_id[STORE_ID_BYTES], char *why,
    size_t why_len)
{
	struct st_ref r;
	if (!s || !ref || !doc_id)
		return store_fail(why, why_len, STORE_ERR_ARG, "resolve: missing argument");
	st_ref_parse(ref, &r);
	return s->ops->resolve(s, &r, doc_id, why, why_len);
}

int
store_read_begin(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    const uint8_t profile_id[STORE_ID_BYTES], struct store_reader **out, char *why,
    size_t why_len)
{
	struct store_reader *r;
	const uint8_t *buf;
	size_t len;
	int rc;

	if (!out)
		return store_fail(why, why_len, STORE_ERR_ARG, "read_begin: missing argument");
	*out = NULL;
	if (!s || !doc_id || !profile_id)
		return store_fail(why, why_len, STORE_ERR_ARG, "read_begin: missing argument");
	if (!(r = calloc(1, sizeof(*r))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	r->s = s;
	memcpy(r->doc, doc_id, STORE_ID_BYTES);
	memcpy(r->prof, profile_id, STORE_ID_BYTES);
	if ((rc = s->ops->read_begin(r, why, why_len)) != 0) {
		free(r);
		return rc;
	}
	/* No head record, no snapshot: say so now rather than at the first read. */
	if ((rc = store_read_layer(r, STORE_HEAD_RECORD, &buf, &len, why, why_len)) != 0) {
		store_read_end(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
store_read_layer(struct store_reader *r, unsigned layer, const uint8_t **buf, size_t *len,
    char *why, size_t why_len)
{
	if (!r || !buf || !len)
		return store_fail(why, why_len, STORE_ERR_ARG, "read_layer: missing argument");
	if (layer > STORE_HEAD_RECORD)
		return store_fail(why, why_len, STORE_ERR_ARG, "layer %u out of range", layer);
	return r->s->ops->read_record(r, layer, buf, len, why, why_len);
}

void
store_read_end(struct store_reader *r)
{
	if (!r)
		return;
	r->s->ops->read_end(r);
	free(r);
}

int
store_info(struct store *s, const uint8_t doc_id[STORE_ID_BYTES], struct store_doc *d,
    char *why, size_t why_len)
{
	if (!s || !doc_id || !d)
		return store_fail(why, why_len, STORE_ERR_ARG, "info: missing argument");
	return s->ops->info(s, doc_id, d, why, why_len);
}

/* store_ls's bad: count, keep the first reason. */
struct st_ls_old {
	int (*fn)(void *arg, const struct store_doc *d);
	void *arg;
	size_t bad;
	char first[300];
};

static int
st_ls_old_fn(void *arg, const struct store_doc *d)
{
	struct st_ls_old *o = arg;
	return o->fn(o->arg, d);
}

static int
st_ls_old_bad(void *arg, const uint8_t doc_id[STORE_ID_BYTES], const char *why)
{
	struct st_ls_old *o = arg;
	(void)doc_id;
	if (o->bad++ == 0)
		snprintf(o->first, sizeof(o->first), "%s", why);
	return 0;
}

int
store_ls(struct store *s, int (*fn)(void *arg, const struct store_doc *d), void *arg,
    char *why, size_t why_len)
{
	struct st_ls_old o = { fn, arg, 0, "" };
	int rc;
	if (!s || !fn)
		return store_fail(why, why_len, STORE_ERR_ARG, "ls: missing argument");
	if ((rc = s->ops->ls(s, st_ls_old_fn, st_ls_old_bad, &o, why, why_len)) != 0)
		return rc;
	if (o.bad)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%zu document(s) unreadable; "
		    "first: %s", o.bad, o.first);
	return 0;
}

int
store_ls_each(struct store *s, int (*fn)(void *arg, const struct store_doc *d),
    store_bad_fn bad, void *arg, char *why, size_t why_len)
{
	if (!s || !fn || !bad)
		return store_fail(why, why_len, STORE_ERR_ARG, "ls: missing argument");
	return s->ops->ls(s, fn, bad, arg, why, why_len);
}

int
store_profiles(struct store *s, const uint8_t doc_id[STORE_ID_BYTES],
    int (*fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes,
        const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len)
{
	if (!s || !doc_id || !fn)
		return store_fail(why, why_len, STORE_ERR_ARG, "profiles: missing argument");
	return s->ops->profiles(s, doc_id, fn, arg, why, why_len);
}

int
store_verify(struct store *s, const uint8_t *doc_id, store_check_fn check, void *check_arg,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len)
{
	if (!s)
		return store_fail(why, why_len, STORE_ERR_ARG, "verify: no store");
	return s->ops->verify(s, doc_id, check, check_arg, fn, arg, why, why_len);
}

int
store_stats(struct store *s, struct store_stats *st, char *why, size_t why_len)
{
	if (!s || !st)
		return store_fail(why, why_len, STORE_ERR_ARG, "stats: missing argument");
	memset(st, 0, sizeof(*st));
	return s->ops->stats(s, st, why, why_len);
}

int
store_texts(struct store *s, const uint8_t *doc_id, store_text_fn fn, void *arg, char *why,
    size_t why_len)
{
	if (!s || !fn)
		return store_fail(why, why_len, STORE_ERR_ARG, "texts: missing argument");
	if (!s->ops->texts)
		return 0; /* a backend that keeps no text records */
	return s->ops->texts(s, doc_id, fn, arg, why, why_len);
}
