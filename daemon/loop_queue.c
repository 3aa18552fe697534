/*
 * loop_queue.c: workers to the event loop, first in first out
 * (loop_queue.h).
 */
#include <stddef.h>

#include <event2/event.h>

#include "daemon/loop_queue.h"

/* Take the whole list (NULL if empty). */
static struct loopq_item *
loopq_take(struct loopq *q)
{
	struct loopq_item *list;
	pthread_mutex_lock(&q->mu);
	list = q->head;
	q->head = q->tail = NULL;
	pthread_mutex_unlock(&q->mu);
	return list;
}

/* Every queued item, in the order it came (loop thread). */
static void
loopq_drain(struct loopq *q)
{
	struct loopq_item *it = loopq_take(q), *next;
	for (; it; it = next) {
		next = it->next;
		q->run(it);
	}
}

static void
loopq_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	loopq_drain(arg);
}

int
loopq_open(struct loopq *q, struct event_base *base)
{
	struct event *ev = event_new(base, -1, 0, loopq_drain_cb, q);
	if (!ev)
		return -1;
	pthread_mutex_lock(&q->mu);
	q->ev = ev;
	pthread_mutex_unlock(&q->mu);
	return 0;
}

int
loopq_push(struct loopq *q, struct loopq_item *it)
{
	int rc = -1;
	it->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->ev) {
		if (q->tail)
			q->tail->next = it;
		else
			q->head = it;
		q->tail = it;
		event_active(q->ev, EV_READ, 0);
		rc = 0;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int
loopq_push_ref(struct loopq *q, struct loopq_item *it, pthread_mutex_t *mu, int *refs,
    const int *gone)
{
	int rc = -1;
	pthread_mutex_lock(mu);
	if (!*gone) {
		(*refs)++;
		rc = loopq_push(q, it);
		if (rc)
			(*refs)--;
	}
	pthread_mutex_unlock(mu);
	return rc;
}

int
loopq_unref(pthread_mutex_t *mu, int *refs)
{
	int last;
	pthread_mutex_lock(mu);
	last = --*refs == 0;
	pthread_mutex_unlock(mu);
	return last;
}

int
loopq_pending(struct loopq *q)
{
	int n;
	pthread_mutex_lock(&q->mu);
	n = q->head != NULL;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void
loopq_close(struct loopq *q)
{
	pthread_mutex_lock(&q->mu);
	if (q->ev)
		event_free(q->ev);
	q->ev = NULL;
	pthread_mutex_unlock(&q->mu);
	loopq_drain(q);
}
