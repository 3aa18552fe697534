/*
 * loop_queue.h: the one way a worker hands something to the event loop
 * (the socket protocol's event lines, server.c, and the HTTP endpoint's
 * reply pieces, http.c): a first-in-first-out list under a mutex and an
 * event that wakes the loop, which runs every queued item in the order it
 * came.  Items are the callers' own structs with a struct loopq_item
 * first; what "run" means (write it out, free it, drop a reference) is
 * theirs.  Lock order: the caller's own lock (a connection's or a
 * request's), then the queue's.
 */
#ifndef DAEMON_LOOP_QUEUE_H
#define DAEMON_LOOP_QUEUE_H

#include <pthread.h>

struct event;
struct event_base;

struct loopq_item {
	struct loopq_item *next;
};

struct loopq {
	pthread_mutex_t mu;
	struct loopq_item *head, *tail;
	struct event *ev;                 /* the loop's wake-up; NULL when no loop runs */
	void (*run)(struct loopq_item *); /* loop thread: the item's work; frees it */
};
#define LOOPQ_INIT(run_fn) { .mu = PTHREAD_MUTEX_INITIALIZER, .run = (run_fn) }

/* Start taking items on base's loop.  0, or -1 (out of memory). */
int loopq_open(struct loopq *q, struct event_base *base);
/* Queue it (any thread): 0, and the loop will run it; -1 when no loop
 * runs (before loopq_open, after loopq_close): it is still the caller's. */
int loopq_push(struct loopq *q, struct loopq_item *it);
/* loopq_push for an item that holds a reference to its owner (a
 * connection, a request) whose count *refs and flag *gone are under mu:
 * when the owner is not gone, the item takes a reference and is queued:
 * 0; else, or when no loop runs, -1: the count as it was, the item still
 * the caller's. */
int loopq_push_ref(struct loopq *q, struct loopq_item *it, pthread_mutex_t *mu, int *refs,
    const int *gone);
/* Drop one of such an owner's references: 1 when it was the last (the
 * caller then frees the owner, mu included), else 0. */
int loopq_unref(pthread_mutex_t *mu, int *refs);
/* Items queued and not yet run? */
int loopq_pending(struct loopq *q);
/* Take no more (a later push is -1), then run what is queued, on the
 * calling thread (the loop's, as it ends). */
void loopq_close(struct loopq *q);

#endif /* DAEMON_LOOP_QUEUE_H */
