/*
 * service_internal.h: what the service's own files share and its callers
 * do not see.
 */
#ifndef SERVICE_INTERNAL_H
#define SERVICE_INTERNAL_H

#include "service/service.h"

/* Record in st that `step` failed with `rc` (the reason, if any, is
 * already in st->why); returns -1. */
int svc_fail(struct svc_status *st, enum svc_step step, int rc);

/* Whether the hooks' cancel flag is set. */
int svc_cancelled(const struct svc_hooks *hk);

/* Generated ids to the token hook as text (emit.c): svc_emit_cb is the
 * eng_generate callback (non-zero when the cancel flag is set); flush
 * hands over the bytes held back at the end. */
struct svc_emit {
	const struct svc *v;
	const struct svc_hooks *hk;
	int whole_utf8;
	char pend[16];   /* an incomplete UTF-8 sequence carried over */
	size_t n_pend;
	int64_t n;       /* tokens seen */
	double t0, ttft; /* start, and the time to the first token */
};
void svc_emit_init(struct svc_emit *e, const struct svc *v, const struct svc_hooks *hk,
    int whole_utf8);
int svc_emit_cb(void *arg, int32_t id);
void svc_emit_flush(struct svc_emit *e);

#endif /* SERVICE_INTERNAL_H */
