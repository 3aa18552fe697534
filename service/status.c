/*
 * status.c: how a service call reports: the step that failed with that
 * module's code, and the caller's cancel flag.
 */
#include "service/service_internal.h"

int
svc_fail(struct svc_status *st, enum svc_step step, int rc)
{
	st->step = step;
	st->rc = rc;
	return -1;
}

int
svc_cancelled(const struct svc_hooks *hk)
{
	return hk->cancel && atomic_load(hk->cancel);
}
