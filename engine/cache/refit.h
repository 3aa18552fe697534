/*
 * refit.h: Attention Matching's refit of one cut head (engine/cache/refit.c),
 * which kvzip's refit=1 runs at every selection (engine/cache/kvzip_refit.c);
 * engine/ and its tests only.
 */
#ifndef ENGINE_CACHE_REFIT_H
#define ENGINE_CACHE_REFIT_H

#include <stdint.h> /* for int64_t */

/* A bias per kept key and least-squares values so that the cut head's
 * attention matches the full head's on reference queries (issue 28). */
#define ENG_REFIT_BIAS_MIN (-12.0) /* log of the smallest weight a kept key gets */
struct eng_refit_in {
	const float *k, *v;  /* (n, d) the head's keys as attention sees them, values */
	const float *bias_in; /* (n) biases the head carries already (an earlier refit), or NULL */
	int64_t n;
	int d;
	const int64_t *keep; /* (m) kept units, ascending */
	int64_t m;
	const float *q;      /* (t, d) reference queries */
	int64_t t;
	float scale;         /* of q·k (1/sqrt(d)) */
	double ridge;        /* λ over the mean diagonal of PᵀP (1e-3) */
	int sweeps;          /* NNLS coordinate-descent sweeps (50) */
};
/* bias (m) and v_out (m, d); 0, ENG_ERR_ARG (bad input), ENG_ERR_NOMEM. */
int eng_refit_head(const struct eng_refit_in *in, float *bias, float *v_out);

#endif /* ENGINE_CACHE_REFIT_H */
