/*
 * tiers.c: the shared snapshot tier behind the local one (issue 17): a
 * second store (any backend: "lmdb:DIR", "redis-cluster:..."), shared by
 * every host.  An ingest skips a document the shared tier holds for this
 * profile (copying it into the local tier, no model pass), else stores it
 * locally and then copies it there; a query that misses locally copies it
 * in and answers from the local copy.  Every copy is snap_copy's: the same
 * record bytes, each record checked before anything is written, so a
 * corrupt shared copy is reported and never lands locally.
 *
 * The tier may be unreachable at start or later: the service then runs on
 * its local tier, warns once per outage (and says it is back when it is).
 * A circuit breaker (issue 26, defect 10): the first call that meets the
 * outage takes the tier down, and while it is down every caller is told
 * so at once (a document only the tier could hold is tier_unavailable,
 * never not_found: SVC_AT_TIER_DOWN); no request thread reconnects.  One
 * prober thread opens the store again after a backoff (0.5 s doubling to
 * 8 s) and probes it with a lookup of an id no document has (a backend
 * that answers "not found" serves), and only then brings the tier back up.
 * The store handle is reference counted, so one thread may drop a broken
 * handle while others still hold it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/service_internal.h"

#define TIER_BACKOFF_MIN_S 0.5
#define TIER_BACKOFF_MAX_S 8.0
/* Snapshots stored locally during an outage, waiting to be copied to the
 * tier (a document id and profile each: 64 bytes; a linear look for a
 * duplicate, so kept small); past this many, the
 * rest are copied by their next ingest (it pushes a skipped snapshot the
 * tier lacks) */
#define TIER_PENDING_MAX 4096

struct tier_pending {
	uint8_t doc[SNAP_ID_BYTES], prof[SNAP_ID_BYTES];
};

struct tier_conn {
	struct store *s;
	int refs;                /* the tier's own, and one per caller holding it */
	int dropped;             /* no longer the tier's (an outage): closed at refs 0 */
};

struct svc_tier {
	struct svc *v;           /* the local tier the pending copies come from */
	char *addr;
	char user[256], pass[1024]; /* credentials (the store gets them at every open) */
	void (*log)(void *arg, int warn, const char *msg);
	void *log_arg;
	pthread_mutex_t mu;      /* guards the members below it */
	pthread_cond_t cv;       /* wakes the prober: down, drained, or stopping */
	pthread_t prober;
	int prober_on, stop;
	struct tier_conn *c;     /* NULL while down */
	int draining;            /* dropped handles still held: no reopen before they
	                          * close (LMDB forbids two opens of one store in a
	                          * process) */
	int connecting;          /* one thread is opening the store (unlocked) */
	int warned;              /* this outage was warned about */
	char error[256];
	double retry_at, backoff;
	uint64_t hits, misses, errors, writes, write_errors;
	struct tier_pending *pend; /* stored during an outage: copied when it is back */
	size_t n_pend, cap_pend;
	int pend_dropped;        /* the list was full (warned once per outage) */
};

static void
tier_say(const struct svc_tier *t, int warn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
tier_say(const struct svc_tier *t, int warn, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t->log)
		t->log(t->log_arg, warn, msg);
	else
		fprintf(stderr, "kvsnap: %s%s\n", warn ? "warning: " : "", msg);
}

/* A copy's size and time in the daemon's log (info; bench/shared_tier.sh
 * reads the rates from it), checks of every record included. */
static void
tier_timed(const struct svc_tier *t, const char *way, const char *hex, uint64_t bytes, double t0)
{
	double s = eng_now() - t0;
	if (t->log)
		tier_say(t, 0, "shared tier: copied the snapshot of %.12s %s (%llu bytes in %.1f ms, "
		    "%.1f MB/s)", hex, way, (unsigned long long)bytes, s * 1e3,
		    s > 0 ? (double)bytes / s / 1e6 : 0.0);
}

/* A counter, under the lock. */
static void
tier_count(struct svc_tier *t, uint64_t *n)
{
	pthread_mutex_lock(&t->mu);
	(*n)++;
	pthread_mutex_unlock(&t->mu);
}

/* One reference less (mu held); the last closes the store. */
static void
tier_conn_drop(struct svc_tier *t, struct tier_conn *c)
{
	if (c && --c->refs == 0) {
		t->draining -= c->dropped;
		store_close(c->s);
		free(c);
		pthread_cond_broadcast(&t->cv); /* the prober may reopen now */
	}
}

/* The tier is down (mu held): drop the handle, warn once per outage. */
static void
tier_mark_down(struct svc_tier *t, const char *why)
{
	double now = eng_now();
	snprintf(t->error, sizeof(t->error), "%s", why);
	if (t->c) {
		t->c->dropped = 1;
		t->draining++;
		tier_conn_drop(t, t->c);
		t->c = NULL;
	}
	t->backoff = t->backoff > 0 ? t->backoff * 2 : TIER_BACKOFF_MIN_S;
	if (t->backoff > TIER_BACKOFF_MAX_S)
		t->backoff = TIER_BACKOFF_MAX_S;
	t->retry_at = now + t->backoff;
	if (!t->warned) {
		t->warned = 1;
		tier_say(t, 1, "shared tier %s unreachable: %s; answering from the local tier only "
		    "(ingests are stored locally) until it is back; probing it again in the "
		    "background", t->addr, why);
	}
	pthread_cond_broadcast(&t->cv);
}

/* The probe: a lookup of an id no document has.  "Not found" (or found)
 * means the backend serves; an i/o error (a Redis Cluster without quorum
 * answers CLUSTERDOWN) means it does not. */
static int
tier_probe(struct store *s, char *why, size_t why_len)
{
	static const uint8_t none[SNAP_ID_BYTES];
	struct store_doc d;
	int rc = store_info(s, none, &d, why, why_len);
	return rc == STORE_ERR_NOT_FOUND ? 0 : rc;
}

/* Open the store and probe it: called with mu held, which it lets go
 * during the open (a network backend may take up to its budget; other
 * threads meanwhile find the tier down), and holds again on return. */
static void
tier_connect(struct svc_tier *t)
{
	struct store_opts so = { .user = t->user, .password = t->pass };
	struct tier_conn *c;
	char why[256] = "";
	int rc = STORE_ERR_NOMEM;

	t->connecting = 1;
	pthread_mutex_unlock(&t->mu);
	if ((c = calloc(1, sizeof(*c))) && (rc = store_open(&c->s, t->addr, &so, why,
	    sizeof(why)))) {
		free(c);
		c = NULL;
	}
	if (c && (rc = tier_probe(c->s, why, sizeof(why)))) {
		store_close(c->s);
		free(c);
		c = NULL;
	}
	pthread_mutex_lock(&t->mu);
	t->connecting = 0;
	if (!c) {
		tier_mark_down(t, why[0] ? why : store_strerror(rc));
		return;
	}
	c->refs = 1;
	t->c = c;
	t->backoff = 0;
	if (t->warned)
		tier_say(t, 0, "shared tier %s reachable again", t->addr);
	t->warned = 0;
	t->error[0] = '\0';
}

static void tier_push_one(struct svc_tier *t, const uint8_t *doc, const uint8_t *prof,
    int only_if_missing, struct svc_ingested *out);

/* The tier is back (mu held, let go meanwhile): the snapshots stored
 * locally during the outage are copied there, each unless it holds it
 * already.  One that meets the outage again is queued again (tier_push). */
static void
tier_drain(struct svc_tier *t)
{
	struct tier_pending *p = t->pend;
	size_t n = t->n_pend, i, done = 0;
	struct svc_ingested o;

	t->pend = NULL;
	t->n_pend = t->cap_pend = 0;
	t->pend_dropped = 0;
	pthread_mutex_unlock(&t->mu);
	for (i = 0; i < n; i++) {
		memset(&o, 0, sizeof(o));
		tier_push_one(t, p[i].doc, p[i].prof, 1, &o);
		done += o.shared == 1;
	}
	free(p);
	tier_say(t, 0, "shared tier %s: %zu of %zu snapshot%s stored locally during the outage "
	    "copied there", t->addr, done, n, n == 1 ? "" : "s");
	pthread_mutex_lock(&t->mu);
}

/* Queue (doc, prof) to be copied when the tier is back (mu held): 1, or 0
 * when the list is full. */
static int
tier_defer(struct svc_tier *t, const uint8_t *doc, const uint8_t *prof)
{
	size_t i;
	for (i = 0; i < t->n_pend; i++)
		if (!memcmp(t->pend[i].doc, doc, SNAP_ID_BYTES) &&
		    !memcmp(t->pend[i].prof, prof, SNAP_ID_BYTES))
			return 1;
	if (t->n_pend == t->cap_pend) {
		size_t cap = t->cap_pend ? 2 * t->cap_pend : 64;
		struct tier_pending *p;
		if (cap > TIER_PENDING_MAX || !(p = realloc(t->pend, cap * sizeof(*p)))) {
			if (!t->pend_dropped)
				tier_say(t, 1, "shared tier %s: %zu snapshots wait for it; later ones are "
				    "copied there by their next ingest", t->addr, t->n_pend);
			t->pend_dropped = 1;
			return 0;
		}
		t->pend = p;
		t->cap_pend = cap;
	}
	memcpy(t->pend[t->n_pend].doc, doc, SNAP_ID_BYTES);
	memcpy(t->pend[t->n_pend].prof, prof, SNAP_ID_BYTES);
	t->n_pend++;
	return 1;
}

/* The prober: while the tier is down, reopen and probe it when the
 * backoff allows and no dropped handle is still held (LMDB forbids two
 * opens of one store in a process). */
static void *
tier_prober(void *arg)
{
	struct svc_tier *t = arg;
	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		double now = eng_now();
		if (t->c && t->n_pend) {
			tier_drain(t);
		} else if (t->c || t->draining) {
			pthread_cond_wait(&t->cv, &t->mu);
		} else if (now < t->retry_at) {
			struct timespec ts;
			double at = t->retry_at - now;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)at;
			ts.tv_nsec += (long)((at - (double)(time_t)at) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&t->cv, &t->mu, &ts);
		} else {
			tier_connect(t);
		}
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* The tier's store for one use, or NULL at once while it is down (the
 * prober brings it back).  Give it back with tier_put. */
static struct tier_conn *
tier_get(struct svc_tier *t)
{
	struct tier_conn *c;
	pthread_mutex_lock(&t->mu);
	if ((c = t->c))
		c->refs++;
	else
		t->errors++; /* a request the tier could not serve */
	pthread_mutex_unlock(&t->mu);
	return c;
}

/* Done with c; an outage (STORE_ERR_IO, _BUSY, or SNAPIO_ERR_IO) seen
 * while using it (io != 0) takes the tier down. */
static void
tier_put(struct svc_tier *t, struct tier_conn *c, int io, const char *why)
{
	pthread_mutex_lock(&t->mu);
	if (io && t->c == c)
		tier_mark_down(t, why);
	tier_conn_drop(t, c);
	pthread_mutex_unlock(&t->mu);
}

static int
tier_store_io(int rc)
{
	return rc == STORE_ERR_IO || rc == STORE_ERR_BUSY;
}

/* ------------------------------------------------------------------------ */
/* Open, close, figures                                                      */

int
tier_open(struct svc *v, const struct svc_conf *conf, struct svc_status *st)
{
	struct svc_tier *t;
	int rc;

	if (!conf->shared || !conf->shared[0])
		return 0;
	if (!(t = calloc(1, sizeof(*t))) || !(t->addr = strdup(conf->shared))) {
		free(t);
		snprintf(st->why, sizeof(st->why), "out of memory");
		return svc_fail(st, SVC_AT_SHARED_AUTH, STORE_ERR_NOMEM);
	}
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->log = conf->log;
	t->log_arg = conf->log_arg;
	t->v = v;
	v->tier = t;
	if (conf->shared_auth && (rc = store_redis_auth_file(conf->shared_auth, t->user,
	    sizeof(t->user), t->pass, sizeof(t->pass), st->why, sizeof(st->why))))
		return svc_fail(st, SVC_AT_SHARED_AUTH, rc);
	/* unreachable now is no reason not to start: warned, retried later */
	pthread_mutex_lock(&t->mu);
	tier_connect(t);
	pthread_mutex_unlock(&t->mu);
	if (pthread_create(&t->prober, NULL, tier_prober, t) == 0)
		t->prober_on = 1;
	else
		tier_say(t, 1, "shared tier %s: cannot start its prober: it will not be retried "
		    "after an outage", t->addr);
	return 0;
}

void
tier_close(struct svc_tier *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	if (t->prober_on)
		pthread_join(t->prober, NULL);
	tier_conn_drop(t, t->c);
	if (t->n_pend)
		tier_say(t, 1, "shared tier %s: %zu snapshot%s stored during its outage not copied "
		    "there (each is, at its next ingest)", t->addr, t->n_pend, t->n_pend == 1 ? "" :
		    "s");
	free(t->pend);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	explicit_bzero(t->pass, sizeof(t->pass));
	free(t->addr);
	free(t);
}

void
svc_tier_stats(struct svc *v, struct svc_tier_stats *out)
{
	struct svc_tier *t = v->tier;
	memset(out, 0, sizeof(*out));
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	out->configured = 1;
	snprintf(out->addr, sizeof(out->addr), "%s", t->addr);
	out->up = t->c != NULL;
	snprintf(out->error, sizeof(out->error), "%s", t->c ? "" : t->error);
	out->hits = t->hits;
	out->misses = t->misses;
	out->errors = t->errors;
	out->writes = t->writes;
	out->write_errors = t->write_errors;
	pthread_mutex_unlock(&t->mu);
}

/* ------------------------------------------------------------------------ */
/* Lookups and copies                                                        */

/* A lookup the tier could not answer (down, or an outage met now): st is
 * SVC_AT_TIER_DOWN with the outage's reason, -1.  A document only the
 * tier could hold is then unavailable, not missing (issue 26, defect 11). */
static int
tier_down(struct svc_tier *t, struct svc_status *st, const char *ref, const uint8_t *doc)
{
	char msg[1024], hex[2 * SNAP_ID_BYTES + 1] = "";
	size_t n;
	if (!ref)
		store_hex(doc, SNAP_ID_BYTES, hex);
	pthread_mutex_lock(&t->mu);
	snprintf(msg, sizeof(msg), "%s%.200s%s%.12s%s in the local tier, and the shared tier %.200s "
	    "cannot be asked (%.255s); try again when it is back", ref ? "no document matches '" : "",
	    ref ? ref : "", ref ? "'" : "", hex, ref ? "" : " has no snapshot for this profile",
	    t->addr, t->error[0] ? t->error : "down");
	pthread_mutex_unlock(&t->mu);
	n = strlen(msg);
	if (n >= sizeof(st->why))
		n = sizeof(st->why) - 1;
	memcpy(st->why, msg, n);
	st->why[n] = '\0';
	return svc_fail(st, SVC_AT_TIER_DOWN, STORE_ERR_IO);
}

int
svc_tier_resolve_as(struct svc *v, const char *ref, const struct svc_who *w,
    uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct tier_conn *c;
	struct svc_status st2;
	int rc;

	if (svc_resolve_as(v->s, ref, w, doc_id, st) == 0)
		return 0;
	if (st->rc != STORE_ERR_NOT_FOUND || !v->tier)
		return -1;
	if (!(c = tier_get(v->tier)))
		return tier_down(v->tier, st, ref, NULL);
	rc = svc_resolve_as(c->s, ref, w, doc_id, &st2);
	tier_put(v->tier, c, rc && tier_store_io(st2.rc), st2.why);
	if (rc && tier_store_io(st2.rc))
		return tier_down(v->tier, st, ref, NULL);
	if (rc && st2.rc == STORE_ERR_NOT_FOUND)
		tier_count(v->tier, &v->tier->misses);
	if (rc == 0)
		memset(st, 0, sizeof(*st));
	else if (st2.rc != STORE_ERR_NOT_FOUND && !tier_store_io(st2.rc)) {
		*st = st2; /* an ambiguity or corruption there: its words */
		if (st2.rc != STORE_ERR_AMBIGUOUS)
			tier_count(v->tier, &v->tier->errors);
	}
	return rc ? -1 : 0;
}

/* Copy (doc, prof) from the tier into the local one, with the tier's
 * metadata.  SNAPIO_ codes with why; the tier's outages are handled. */
static int
tier_copy_in(struct svc *v, struct tier_conn *c, const uint8_t *doc, const uint8_t *prof,
    int *tier_io, char *why, size_t why_len)
{
	struct svc_tier *t = v->tier;
	struct store_doc d;
	char hex[2 * SNAP_ID_BYTES + 1];
	int rc, at_write = 0;
	double t0 = eng_now();

	if ((rc = store_info(c->s, doc, &d, why, why_len)))
		rc = snapio_from_store(rc);
	else
		rc = snap_copy(c->s, v->s, doc, prof, &d, &at_write, why, why_len);
	store_hex(doc, SNAP_ID_BYTES, hex);
	/* an outage while reading there takes the tier down (warned once) */
	*tier_io = rc == SNAPIO_ERR_IO && !at_write;
	tier_put(t, c, *tier_io, why);
	if (rc == 0) {
		tier_count(t, &t->hits);
		tier_timed(t, "in", hex, d.stored_bytes, t0);
	} else if (rc != SNAPIO_ERR_IO || at_write) {
		tier_count(t, &t->errors);
		tier_say(t, 1, "shared tier %s: cannot copy the snapshot of %.12s in: %s%s", t->addr,
		    hex, rc == SNAPIO_ERR_CORRUPT && !at_write ? "corrupt there: " : "", why);
	}
	return rc;
}

int
tier_fetch(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], struct svc_status *st)
{
	struct svc_tier *t = v->tier;
	struct tier_conn *c;
	struct svc_picked pk;
	struct svc_status ps;
	int rc, tier_io = 0;

	if (!t)
		return 0;
	if (!(c = tier_get(t)))
		return tier_down(t, st, NULL, doc);
	if (svc_pick_in(v, c->s, doc, &pk, &ps) < 0) {
		if (tier_store_io(ps.rc)) {
			tier_put(t, c, 1, ps.why);
			return tier_down(t, st, NULL, doc);
		} else {
			tier_put(t, c, 0, NULL);
			tier_count(t, &t->errors);
			if (ps.rc == STORE_ERR_CORRUPT) {
				*st = ps;
				st->step = SVC_AT_SHARED;
				st->rc = SNAPIO_ERR_CORRUPT;
				return -1;
			}
		}
		return 0;
	}
	if (!pk.found) {
		tier_put(t, c, 0, NULL);
		tier_count(t, &t->misses);
		return 0;
	}
	/* tier_copy_in gives c back */
	if ((rc = tier_copy_in(v, c, doc, pk.profile_id, &tier_io, st->why, sizeof(st->why))) == 0)
		return 1;
	if (tier_io)
		return tier_down(t, st, NULL, doc); /* the tier went away while copying */
	return svc_fail(st, SVC_AT_SHARED, rc);
}

int
svc_tier_prefetch(struct svc *v, const uint8_t doc_id[SNAP_ID_BYTES], struct svc_status *st)
{
	struct svc_picked pk;
	memset(st, 0, sizeof(*st));
	if (!v->tier)
		return 0;
	if (svc_pick(v, doc_id, &pk, st) < 0)
		return -1;
	return pk.found ? 0 : tier_fetch(v, doc_id, st);
}

int
tier_skip(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], const struct svc_who *who,
    int share)
{
	struct svc_tier *t = v->tier;
	struct tier_conn *c;
	struct svc_picked pk;
	struct svc_status ps;
	struct store_doc had;
	char why[256];

	if (!t || !(c = tier_get(t)))
		return 0;
	if (svc_pick_in(v, c->s, doc, &pk, &ps) < 0) {
		/* unreachable: down; unreadable there: an error, the ingest runs */
		tier_put(t, c, tier_store_io(ps.rc), ps.why);
		if (!tier_store_io(ps.rc))
			tier_count(t, &t->errors);
		return 0;
	}
	if (!pk.found) {
		tier_put(t, c, 0, NULL);
		tier_count(t, &t->misses);
		return 0;
	}
	/* as a local skip: only when the caller may read it and asks for no
	 * sharing it lacks (else the ingest runs, as for a local copy) */
	if (store_info(c->s, doc, &had, why, sizeof(why)) || !svc_may_read(&had, who) ||
	    (share && !had.shared)) {
		tier_put(t, c, 0, NULL);
		return 0;
	}
	{
		int tier_io;
		return tier_copy_in(v, c, doc, pk.profile_id, &tier_io, why, sizeof(why)) == 0;
	}
}

/* tier_push, given the tier: an outage (down now, or met while writing)
 * queues the copy for when it is back. */
static void
tier_push_one(struct svc_tier *t, const uint8_t *doc, const uint8_t *prof, int only_if_missing,
    struct svc_ingested *out)
{
	struct svc *v = t->v;
	struct tier_conn *c;
	struct svc_picked pk;
	struct svc_status ps;
	struct store_doc d;
	char hex[2 * SNAP_ID_BYTES + 1];
	int rc, at_write = 0, io;
	double t0 = eng_now();

	out->shared = 0;
	if (!(c = tier_get(t))) {
		pthread_mutex_lock(&t->mu);
		snprintf(out->shared_why, sizeof(out->shared_why), "shared tier unreachable: %.160s; "
		    "%s", t->error, tier_defer(t, doc, prof) ? "stored locally, copied there when "
		    "it is back" : "stored locally only");
		pthread_mutex_unlock(&t->mu);
		return;
	}
	if (only_if_missing && svc_pick_in(v, c->s, doc, &pk, &ps) == 0 && pk.found &&
	    !memcmp(pk.profile_id, prof, SNAP_ID_BYTES)) {
		tier_put(t, c, 0, NULL);
		out->shared = 1;
		return;
	}
	if ((rc = store_info(v->s, doc, &d, out->shared_why, sizeof(out->shared_why))) == 0)
		rc = snap_copy(v->s, c->s, doc, prof, &d, &at_write, out->shared_why,
		    sizeof(out->shared_why));
	else
		rc = snapio_from_store(rc);
	io = rc == SNAPIO_ERR_IO && at_write;
	tier_put(t, c, io, out->shared_why);
	store_hex(doc, SNAP_ID_BYTES, hex);
	if (rc == 0) {
		tier_count(t, &t->writes);
		tier_timed(t, "out", hex, d.stored_bytes, t0);
		out->shared = 1;
		out->shared_why[0] = '\0';
		return;
	}
	tier_count(t, &t->write_errors);
	if (io) {
		size_t n = strlen(out->shared_why);
		pthread_mutex_lock(&t->mu);
		snprintf(out->shared_why + n, sizeof(out->shared_why) - n, "; %s",
		    tier_defer(t, doc, prof) ? "stored locally, copied there when it is back" :
		    "stored locally only");
		pthread_mutex_unlock(&t->mu);
	}
	tier_say(t, 1, "shared tier %s: cannot store the snapshot of %.12s there (kept locally): "
	    "%s", t->addr, hex, out->shared_why);
}

void
tier_push(struct svc *v, const uint8_t doc[SNAP_ID_BYTES], const uint8_t prof[SNAP_ID_BYTES],
    int only_if_missing, struct svc_ingested *out)
{
	out->shared = -1;
	if (v->tier)
		tier_push_one(v->tier, doc, prof, only_if_missing, out);
}
