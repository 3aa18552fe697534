/*
 * jobs.c: the job queue and the workers.
 *
 * Three queues by kind: admin (store operations), query, ingest.  Model
 * workers take a query before an ingest, and at most workers−1 of them run
 * ingests at once (with one worker, it may), so a query never waits behind
 * more than the ingests already running; the admin worker serves only
 * store operations, so ls/info/rm never wait for the model.  Each model
 * worker owns a service session (an eng_ctx and its own policy object);
 * the weights and the tokenizer are shared read-only.  A query whose
 * document is not in the local tier goes to the tier worker (JOB_TIER:
 * resolve in the shared tier, copy the snapshot in) and then back to the
 * query queue; an ingest, with a shared tier, goes there before its model
 * step (the tier may hold it) and after (the copy out, then the result);
 * so a slow or failing shared tier never holds a model worker.  Replies go through
 * the job's sink (struct job_sink: server.c's conn_post, http.c's post
 * queue) to the event loop, which alone writes to connections.
 *
 * Cancellation is a flag per job, read by the running job between chunks
 * (ingest) or tokens (query).  Lock order: jobs_mu, then a connection's mu.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_internal.h"
#include "daemon/metrics.h"

#define JOBS_N_KINDS 4
/* threads: n_workers model workers, then the admin worker, then the tier worker */
#define JOBS_THREADS (jobs.n_workers + 2)

struct jobq {
	struct job *head, *tail;
};

static struct {
	struct daemon *d;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct jobq q[JOBS_N_KINDS];
	int queued, running, running_ingests, max_ingests;
	int stop;
	uint64_t seq;
	struct job **run;          /* (JOBS_THREADS) the job each worker runs */
	struct worker *w;          /* (JOBS_THREADS): model workers, admin, tier */
	pthread_t *th;
	int n_workers, started;
} jobs = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

void
job_event(struct job *j, const char *event, json_t *body)
{
	if (!strcmp(event, "result")) {
		atomic_store(&j->replied, 1);
		metrics_job_result(j->req.op, body);
	}
	j->sink->event(j, event, body);
}

void
job_result(struct job *j, json_t *body)
{
	job_event(j, "result", body);
}

void
job_error(struct job *j, enum proto_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dlog(code == PROTO_E_CANCELLED ? DLOG_INFO : DLOG_WARN, "%s: %s: %s: %s", j->label,
	    proto_op_name(j->req.op), proto_code_name(code), msg);
	atomic_store(&j->replied, 1);
	metrics_job_error(j->req.op, code);
	j->sink->error(j, code, msg);
}

void
job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	proto_req_free(&j->req);
	svc_ingest_end(j->ing);
	free(j->ing_out);
	if (j->owner)
		j->sink->release(j);
	free(j);
}

/* ------------------------------------------------------------------------ */
/* Queue                                                                     */

/* Jobs in q. */
static int
jobs_count(const struct jobq *q)
{
	const struct job *j;
	int n = 0;
	for (j = q->head; j; j = j->next)
		n++;
	return n;
}

/* A model job that cannot start at once says so (a "queued" event with
 * the jobs before it), so a client can tell waiting from working.  Called
 * with jobs_mu held, before the job is queued (a worker may take and free
 * it as soon as the lock drops). */
static void
jobs_tell_queued(struct job *j)
{
	int running = 0, ingests = 0, ahead, i;
	if (j->kind == JOB_ADMIN || j->kind == JOB_TIER)
		return;
	/* a job whose last event is out is over for its client, and its
	 * worker is about to be free: counting it told a folder ingest that
	 * it waited for "1 job running", its own previous file (issue 30) */
	for (i = 0; i < jobs.n_workers; i++)
		if (jobs.run[i] && !atomic_load(&jobs.run[i]->replied)) {
			running++;
			ingests += jobs.run[i]->kind == JOB_INGEST;
		}
	ahead = jobs_count(&jobs.q[JOB_QUERY]);
	if (j->kind == JOB_INGEST)
		ahead += jobs_count(&jobs.q[JOB_INGEST]);
	if (running + ahead < jobs.n_workers &&
	    !(j->kind == JOB_INGEST && ingests >= jobs.max_ingests))
		return;
	job_event(j, "queued", json_pack("{s:i, s:i}", "ahead", ahead, "running", running));
}

/* Queue j at q's end (jobs_mu held). */
static void
jobs_append(struct jobq *q, struct job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	jobs.queued++;
}

int
jobs_submit(struct job *j)
{
	int rc = 0;
	pthread_mutex_lock(&jobs.mu);
	if (jobs.stop)
		rc = PROTO_E_SHUTTING_DOWN;
	else if (jobs.queued >= jobs.d->cfg.max_jobs)
		rc = PROTO_E_BUSY;
	else {
		jobs_tell_queued(j);
		j->seq = ++jobs.seq;
		jobs_append(&jobs.q[j->kind], j);
		pthread_cond_broadcast(&jobs.cv);
	}
	pthread_mutex_unlock(&jobs.mu);
	return rc;
}

/* Unlink and return the first job of q for which match() holds. */
static struct job *
jobs_take_if(struct jobq *q, int (*match)(const struct job *, const void *), const void *arg)
{
	struct job *prev = NULL, *j;
	for (j = q->head; j; prev = j, j = j->next) {
		if (match && !match(j, arg))
			continue;
		if (prev)
			prev->next = j->next;
		else
			q->head = j->next;
		if (q->tail == j)
			q->tail = prev;
		j->next = NULL;
		jobs.queued--;
		return j;
	}
	return NULL;
}

/* The next job for worker w (jobs_mu held), or NULL. */
static struct job *
jobs_next(const struct worker *w)
{
	struct job *j;
	if (w->tier)
		return jobs_take_if(&jobs.q[JOB_TIER], NULL, NULL);
	if (!w->ss)
		return jobs_take_if(&jobs.q[JOB_ADMIN], NULL, NULL);
	if ((j = jobs_take_if(&jobs.q[JOB_QUERY], NULL, NULL)))
		return j;
	if (jobs.running_ingests < jobs.max_ingests &&
	    (j = jobs_take_if(&jobs.q[JOB_INGEST], NULL, NULL)))
		return j;
	return NULL;
}

static void *
jobs_worker(void *arg)
{
	struct worker *w = arg;
	struct job *j;
	enum job_kind kind;

	for (;;) {
		pthread_mutex_lock(&jobs.mu);
		while (!(j = jobs_next(w)) && !jobs.stop)
			pthread_cond_wait(&jobs.cv, &jobs.mu);
		if (!j) {
			pthread_mutex_unlock(&jobs.mu);
			return NULL;
		}
		jobs.running++;
		kind = j->kind;
		if (kind == JOB_INGEST)
			jobs.running_ingests++;
		jobs.run[w->index] = j;
		pthread_mutex_unlock(&jobs.mu);

		if (atomic_load(&j->cancel)) {
			if (!ingest_job_unpublished(j)) /* a stored ingest says so */
				job_error(j, PROTO_E_CANCELLED, "cancelled before it started");
		} else if (j->kind == JOB_TIER && j->req.op == PROTO_OP_INGEST)
			ingest_tier_run(w, j);
		else if (j->kind == JOB_TIER)
			tier_job_run(w, j);
		else if (j->kind == JOB_INGEST)
			ingest_job_run(w, j);
		else if (j->kind == JOB_QUERY && j->req.op == PROTO_OP_CHAT)
			chat_job_run(w, j);
		else if (j->kind == JOB_QUERY)
			query_job_run(w, j);
		else
			admin_job_run(w, j);

		pthread_mutex_lock(&jobs.mu);
		jobs.run[w->index] = NULL;
		jobs.running--;
		if (kind == JOB_INGEST)
			jobs.running_ingests--;
		if (j->requeue && !jobs.stop && !atomic_load(&j->cancel)) {
			/* on to its next step's queue (a query to or from the tier worker) */
			j->requeue = 0;
			j->kind = j->then;
			jobs_append(&jobs.q[j->kind], j);
			j = NULL;
		}
		pthread_cond_broadcast(&jobs.cv); /* an ingest slot may be free */
		pthread_mutex_unlock(&jobs.mu);
		if (j && j->requeue && !atomic_load(&j->replied) && !ingest_job_unpublished(j))
			job_error(j, atomic_load(&j->cancel) ? PROTO_E_CANCELLED : PROTO_E_SHUTTING_DOWN,
			    atomic_load(&j->cancel) ? "cancelled" : "the daemon is stopping; the job "
			    "did not run");
		job_free(j);
	}
}

/* ------------------------------------------------------------------------ */
/* Cancellation                                                              */

static int
jobs_of_owner(const struct job *j, const void *owner)
{
	return j->owner == owner;
}

void
jobs_cancel_owner(const void *c)
{
	struct job *dropped = NULL, *j;
	int k, i;

	pthread_mutex_lock(&jobs.mu);
	for (k = 0; k < JOBS_N_KINDS; k++)
		while ((j = jobs_take_if(&jobs.q[k], jobs_of_owner, c))) {
			j->next = dropped;
			dropped = j;
		}
	for (i = 0; jobs.run && i < JOBS_THREADS; i++) /* none before jobs_init */
		if (jobs.run[i] && jobs.run[i]->owner == c && !atomic_load(&jobs.run[i]->replied)) {
			atomic_store(&jobs.run[i]->cancel, 1);
			dlog(DLOG_INFO, "%s: client left; cancelling its %s", jobs.run[i]->label,
			    proto_op_name(jobs.run[i]->req.op));
		}
	pthread_mutex_unlock(&jobs.mu);
	while ((j = dropped)) {
		dropped = j->next;
		job_free(j);
	}
}

int
jobs_cancel_id(const void *c, json_t *target)
{
	int k, i, found = 0;
	struct job *j;

	pthread_mutex_lock(&jobs.mu);
	for (k = 0; k < JOBS_N_KINDS; k++)
		for (j = jobs.q[k].head; j; j = j->next)
			if (j->owner == c && json_equal(j->req.id, target)) {
				atomic_store(&j->cancel, 1); /* answered when a worker takes it */
				found = 1;
			}
	for (i = 0; jobs.run && i < JOBS_THREADS; i++)
		if (jobs.run[i] && jobs.run[i]->owner == c &&
		    json_equal(jobs.run[i]->req.id, target)) {
			atomic_store(&jobs.run[i]->cancel, 1);
			found = 1;
		}
	pthread_mutex_unlock(&jobs.mu);
	return found;
}

void
jobs_stop(void)
{
	struct job *dropped = NULL, *j;
	int k, i;

	pthread_mutex_lock(&jobs.mu);
	jobs.stop = 1;
	for (k = 0; k < JOBS_N_KINDS; k++)
		while ((j = jobs_take_if(&jobs.q[k], NULL, NULL))) {
			j->next = dropped;
			dropped = j;
		}
	/* ingests are abandoned (store_put is atomic: nothing partial is
	 * stored); queries and admin jobs finish */
	for (i = 0; jobs.run && i < JOBS_THREADS; i++)
		if (jobs.run[i] && jobs.run[i]->kind == JOB_INGEST)
			atomic_store(&jobs.run[i]->cancel, 1);
	pthread_cond_broadcast(&jobs.cv);
	pthread_mutex_unlock(&jobs.mu);
	while ((j = dropped)) {
		dropped = j->next;
		if (!ingest_job_unpublished(j))
			job_error(j, PROTO_E_SHUTTING_DOWN, "the daemon is stopping; the job did not "
			    "run");
		job_free(j);
	}
}

void
jobs_depth(int *queued, int *running)
{
	pthread_mutex_lock(&jobs.mu);
	*queued = jobs.queued;
	*running = jobs.running;
	pthread_mutex_unlock(&jobs.mu);
}

int
jobs_busy(void)
{
	int n;
	pthread_mutex_lock(&jobs.mu);
	n = jobs.running + jobs.queued;
	pthread_mutex_unlock(&jobs.mu);
	return n;
}

/* ------------------------------------------------------------------------ */
/* Workers                                                                   */

int
jobs_init(struct daemon *d)
{
	struct svc_status st;
	int i, n = (int)d->cfg.workers;
	long nt;
	struct job **run = calloc((size_t)n + 2, sizeof(*jobs.run));
	struct worker *ws = calloc((size_t)n + 2, sizeof(*jobs.w));
	pthread_t *th = calloc((size_t)n + 2, sizeof(*jobs.th));

	/* published under the lock: the loop thread may already look at them
	 * (a connection that closes while kvsnapd loads: jobs_cancel_owner) */
	pthread_mutex_lock(&jobs.mu);
	jobs.d = d;
	jobs.n_workers = n;
	jobs.max_ingests = n > 1 ? n - 1 : 1;
	jobs.run = run;
	jobs.w = ws;
	jobs.th = th;
	if (!run || !ws || !th) {
		free(run);
		free(ws);
		free(th);
		jobs.run = NULL;
		jobs.w = NULL;
		jobs.th = NULL;
	}
	pthread_mutex_unlock(&jobs.mu);
	if (!jobs.run)
		return -1;
	for (i = 0; i < n + 2; i++) {
		jobs.w[i].index = i;
		jobs.w[i].tier = i == n + 1;
		if (i >= n)
			continue; /* the admin and tier workers need no engine */
		if (svc_session_new(d->v, (int)d->cfg.threads, &jobs.w[i].ss, &st)) {
			if (st.step == SVC_AT_ENGINE)
				dlog(DLOG_ERROR, "worker %d: engine: %s", i, st.why);
			else
				dlog(DLOG_ERROR, "policy: %s", st.why);
			return -1;
		}
	}
	for (i = 0; i < n + 2; i++) {
		if (pthread_create(&jobs.th[i], NULL, jobs_worker, &jobs.w[i])) {
			dlog(DLOG_ERROR, "cannot start worker %d", i);
			jobs_stop();
			return -1;
		}
		jobs.started++;
	}
	/* threads 0: every online core, as the kernels' pool counts them */
	nt = d->cfg.threads > 0 ? d->cfg.threads : sysconf(_SC_NPROCESSORS_ONLN);
	dlog(DLOG_INFO, "%d model worker%s (%ld thread%s each%s) and an admin worker", n,
	    n == 1 ? "" : "s", nt > 0 ? nt : 1, nt == 1 ? "" : "s",
	    d->cfg.threads > 0 ? "" : ": all cores");
	return 0;
}

void
jobs_free(void)
{
	int i;
	pthread_mutex_lock(&jobs.mu);
	jobs.stop = 1;
	pthread_cond_broadcast(&jobs.cv);
	pthread_mutex_unlock(&jobs.mu);
	for (i = 0; i < jobs.started; i++)
		pthread_join(jobs.th[i], NULL);
	for (i = 0; jobs.w && i < JOBS_THREADS; i++)
		svc_session_free(jobs.w[i].ss);
	free(jobs.w);
	free(jobs.th);
	free(jobs.run);
	jobs.w = NULL;
	jobs.th = NULL;
	jobs.run = NULL;
	jobs.started = 0;
}
