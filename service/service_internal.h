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

#endif /* SERVICE_INTERNAL_H */
