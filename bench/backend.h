/*
 * backend.h: the benches' backend choice (header-only: each bench is one
 * program): KVSNAP_BACKEND=cuda runs a bench on the GPU.
 */
#ifndef BENCH_BACKEND_H
#define BENCH_BACKEND_H

#include <stdio.h>

#include "engine/engine.h"

/* 0, or 6 with the reason on stderr when KVSNAP_BACKEND names a backend
 * this build or machine cannot run. */
static inline int
bench_backend(void)
{
	char why[512];
	if (eng_use_backend_env(why, sizeof(why))) {
		fprintf(stderr, "%s\n", why);
		return 6;
	}
	return 0;
}

#endif /* BENCH_BACKEND_H */
