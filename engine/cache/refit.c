/*
 * refit.c: Attention Matching's refit of one cut head (Zweiger et al.,
 * arXiv 2602.16284 §3; issue 28, item 3): after a selection keeps units S
 * of a (layer, KV head), a bias per kept key and new values, chosen so that
 * the cut head's attention matches the full head's on reference queries
 * (kvzip's reconstruction queries).
 *
 * With z_ij = scale · q_i·k_j (+ the unit's bias from an earlier refit)
 * over the n units before the cut, and each
 * query's weights normalised over them, a_ij = exp(z_ij − c_i) / M_i
 * (c_i = max_j z_ij, M_i = Σ_j exp(z_ij − c_i), so Σ_j a_ij = 1):
 *   mass    w = argmin_{w >= 0} Σ_i (Σ_{j∈S} a_ij w_j − 1)²   (NNLS, by
 *           coordinate descent on the normal equations from w = 1, i.e.
 *           from plain eviction); bias β_j = log w_j, w_j floored at
 *           exp(ENG_REFIT_BIAS_MIN) so no key is switched off for good;
 *   output  p_ij = a_ij w_j / Σ_{l∈S} a_il w_l (the cut head's softmax with
 *           the bias), o_i = Σ_j a_ij v_j (the full head's output); the new
 *           values V' = argmin ‖P V' − O‖² + λ‖V' − V_S‖², λ = ridge · the
 *           mean diagonal of PᵀP: the least-squares fit, pulled towards the
 *           kept values where the queries say little about a unit.
 * Double precision throughout.  Memory: (t·m + m² + t·d + m·d) doubles for
 * t queries and m kept units; time O(t·n·d + t·m² + m³ + sweeps·m²).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base.h"
#include "engine/cache/refit.h"

/* Cholesky solve of the SPD system A x = B (A m×m, B m×r, in place: A is
 * destroyed, B becomes x).  0, or ENG_ERR_ARG when A is not positive. */
static int
refit_cholesky(double *A, double *B, int64_t m, int64_t r)
{
	int64_t i, j, k;
	for (j = 0; j < m; j++) {
		double d = A[j * m + j];
		for (k = 0; k < j; k++)
			d -= A[j * m + k] * A[j * m + k];
		if (!(d > 0.0))
			return ENG_ERR_ARG;
		d = sqrt(d);
		A[j * m + j] = d;
		for (i = j + 1; i < m; i++) {
			double s = A[i * m + j];
			for (k = 0; k < j; k++)
				s -= A[i * m + k] * A[j * m + k];
			A[i * m + j] = s / d;
		}
	}
	for (k = 0; k < r; k++) { /* L y = b, then Lᵀ x = y, column k of B */
		for (i = 0; i < m; i++) {
			double s = B[i * r + k];
			for (j = 0; j < i; j++)
				s -= A[i * m + j] * B[j * r + k];
			B[i * r + k] = s / A[i * m + i];
		}
		for (i = m - 1; i >= 0; i--) {
			double s = B[i * r + k];
			for (j = i + 1; j < m; j++)
				s -= A[j * m + i] * B[j * r + k];
			B[i * r + k] = s / A[i * m + i];
		}
	}
	return 0;
}

int
eng_refit_head(const struct eng_refit_in *in, float *bias, float *v_out)
{
	int64_t n = in->n, m = in->m, t = in->t, i, j, l, e;
	int d = in->d, s;
	double *a = NULL, *o = NULL, *G = NULL, *h = NULL, *w = NULL, *B = NULL, *z = NULL;
	double wmin = exp(ENG_REFIT_BIAS_MIN), lam = 0.0;
	int rc = ENG_ERR_NOMEM;

	if (n < 1 || m < 1 || m > n || t < 1 || d < 1 || !in->k || !in->v || !in->q || !in->keep)
		return ENG_ERR_ARG;
	for (j = 0; j < m; j++)
		if (in->keep[j] < 0 || in->keep[j] >= n || (j && in->keep[j] <= in->keep[j - 1]))
			return ENG_ERR_ARG;
	a = malloc((size_t)t * (size_t)m * sizeof(double));
	o = calloc((size_t)t * (size_t)d, sizeof(double));
	G = malloc((size_t)m * (size_t)m * sizeof(double));
	h = malloc((size_t)m * sizeof(double));
	w = malloc((size_t)m * sizeof(double));
	B = malloc((size_t)m * (size_t)d * sizeof(double));
	z = malloc((size_t)n * sizeof(double));
	if (!a || !o || !G || !h || !w || !B || !z)
		goto out;
	/* a (kept columns) and o, one query at a time over all n units */
	for (i = 0; i < t; i++) {
		const float *q = in->q + (size_t)i * (size_t)d;
		double c = -INFINITY, M = 0.0;
		for (j = 0; j < n; j++) {
			const float *k = in->k + (size_t)j * (size_t)d;
			double dot = 0.0;
			for (e = 0; e < d; e++)
				dot += (double)q[e] * (double)k[e];
			z[j] = (double)in->scale * dot + (in->bias_in ? (double)in->bias_in[j] : 0.0);
			c = z[j] > c ? z[j] : c;
		}
		for (j = 0; j < n; j++) {
			z[j] = exp(z[j] - c);
			M += z[j];
		}
		for (j = 0; j < n; j++) {
			const float *v = in->v + (size_t)j * (size_t)d;
			double p = z[j] / M;
			for (e = 0; e < d; e++)
				o[i * d + e] += p * (double)v[e];
		}
		for (j = 0; j < m; j++)
			a[i * m + j] = z[in->keep[j]] / M;
	}
	/* mass: NNLS on G = aᵀa, h = aᵀ1, from w = 1 */
	for (j = 0; j < m; j++) {
		double sh = 0.0;
		for (l = 0; l <= j; l++) {
			double sg = 0.0;
			for (i = 0; i < t; i++)
				sg += a[i * m + j] * a[i * m + l];
			G[j * m + l] = G[l * m + j] = sg;
		}
		for (i = 0; i < t; i++)
			sh += a[i * m + j];
		h[j] = sh;
		w[j] = 1.0;
	}
	for (s = 0; s < in->sweeps; s++)
		for (j = 0; j < m; j++) {
			double g = -h[j];
			if (!(G[j * m + j] > 0.0))
				continue; /* no query sees it: keep its weight */
			for (l = 0; l < m; l++)
				g += G[j * m + l] * w[l];
			w[j] -= g / G[j * m + j];
			if (w[j] < wmin)
				w[j] = wmin;
		}
	/* output: p (into a), then (PᵀP + λI) V' = PᵀO + λ V_S */
	for (i = 0; i < t; i++) {
		double sum = 0.0;
		for (j = 0; j < m; j++)
			sum += a[i * m + j] * w[j];
		for (j = 0; j < m; j++)
			a[i * m + j] = sum > 0.0 ? a[i * m + j] * w[j] / sum : 0.0;
	}
	for (j = 0; j < m; j++) {
		for (l = 0; l <= j; l++) {
			double sg = 0.0;
			for (i = 0; i < t; i++)
				sg += a[i * m + j] * a[i * m + l];
			G[j * m + l] = G[l * m + j] = sg;
		}
		lam += G[j * m + j];
		for (e = 0; e < d; e++) {
			double sb = 0.0;
			for (i = 0; i < t; i++)
				sb += a[i * m + j] * o[i * d + e];
			B[j * d + e] = sb;
		}
	}
	lam = in->ridge * (lam > 0.0 ? lam / (double)m : 1.0);
	if (!(lam > 0.0))
		lam = 1e-12;
	for (j = 0; j < m; j++) {
		const float *v = in->v + (size_t)in->keep[j] * (size_t)d;
		G[j * m + j] += lam;
		for (e = 0; e < d; e++)
			B[j * d + e] += lam * (double)v[e];
	}
	if ((rc = refit_cholesky(G, B, m, d)))
		goto out;
	for (j = 0; j < m; j++) {
		bias[j] = (float)(log(w[j]) + (in->bias_in ? (double)in->bias_in[in->keep[j]] : 0.0));
		for (e = 0; e < d; e++)
			v_out[j * d + e] = (float)B[j * d + e];
	}
	rc = 0;
out:
	free(a);
	free(o);
	free(G);
	free(h);
	free(w);
	free(B);
	free(z);
	return rc;
}
