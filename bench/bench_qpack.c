/*
 * bench_qpack.c: how fast each stored form's rows unpack (issue 28 item 2:
 * the scalar b-bit decoder of format version 5 against q4h's and q8's
 * SIMD ones), on one thread, apart from the store and the model.
 *
 * Rows of head_dim 64 drawn N(0,1) with two outlier channels (×20, as
 * pre-RoPE keys have), packed once per scheme; then unpacked REPS times
 * the way snapshot.c does (qp_decode, or hd_unpack_rows for a rotated
 * form: unpack and rotate back).  Thread CPU time, so a busy machine
 * slows the wall clock but not the figure much; best and median of the
 * reps.  MB/s is of stored bytes, Mvalues/s of decoded floats.
 *
 * usage: bench_qpack [-n ROWS] [-r REPS]     (default 92160 rows, 7 reps)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/clock.h"
#include "common/rng.h"
#include "snapshot/hadamard.h"
#include "snapshot/qpack.h"
#include "snapshot/qpack_avx2.h" /* for qp_simd_level */

#define BQ_D 64
#define BQ_MAX_REPS 64

/* N(0,1) by Box-Muller from the xorshift stream. */
static double
bq_normal(uint64_t *s)
{
	double u = ((double)(kv_xorshift64s(s) >> 11) + 0.5) / 9007199254740992.0;
	double v = (double)(kv_xorshift64s(s) >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum qp_scheme s;
		int rotated;
	} forms[] = {
		{ "fp16", QP_F16, 0 }, { "q8", QP_Q8, 0 }, { "q4", QP_Q4, 0 }, { "q4h", QP_Q4, 1 },
		{ "q6h (b6)", QP_B6, 1 }, { "q5h (b5)", QP_B5, 1 }, { "q3h (b3)", QP_B3, 1 },
		{ "b2 (k4v2h's V)", QP_B2, 1 }, { "b5 unrotated", QP_B5, 0 },
	};
	int64_t n = 92160, i;
	int reps = 7, c, f, k;
	uint64_t rng = 12345;
	float *x, *y;
	uint8_t *buf;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		switch (c) {
		case 'n': n = atoll(optarg); break;
		case 'r': reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_qpack [-n ROWS] [-r REPS]\n");
			return 1;
		}
	}
	if (n < 1 || reps < 1 || reps > BQ_MAX_REPS) {
		fprintf(stderr, "bench_qpack: -n >= 1, -r 1 to %d\n", BQ_MAX_REPS);
		return 1;
	}
	x = malloc((size_t)n * BQ_D * sizeof(float));
	y = malloc((size_t)n * BQ_D * sizeof(float));
	buf = malloc((size_t)qp_bytes(QP_F16, (uint64_t)n, BQ_D));
	if (!x || !y || !buf)
		return 1;
	for (i = 0; i < n * BQ_D; i++)
		x[i] = (float)(bq_normal(&rng) * (i % BQ_D == 5 || i % BQ_D == 40 ? 20.0 : 1.0));
	printf("%lld rows of %d values, %d reps, one thread, qp_simd_level %d\n\n", (long long)n,
	    BQ_D, reps, qp_simd_level());
	printf("| form | bytes/row | unpack ms best / median | MB/s stored (best) | "
	    "Mvalues/s (best) | rms error |\n|---|---:|---:|---:|---:|---:|\n");
	for (f = 0; f < (int)(sizeof(forms) / sizeof(forms[0])); f++) {
		double t[BQ_MAX_REPS], e2 = 0;
		uint64_t bytes = qp_bytes(forms[f].s, (uint64_t)n, BQ_D);
		float *src = x;
		if (forms[f].rotated) { /* pack the rotated rows, as snapshot.c does */
			memcpy(y, x, (size_t)n * BQ_D * sizeof(float));
			hd_rotate_rows(y, n, BQ_D);
			src = y;
		}
		if (qp_encode(forms[f].s, src, n, BQ_D, buf))
			return 1;
		for (k = 0; k < reps; k++) {
			double t0 = bench_thread_cpu_s();
			int rc = forms[f].rotated ? hd_unpack_rows(forms[f].s, buf, n, BQ_D, y) :
			    qp_decode(forms[f].s, buf, n, BQ_D, y);
			t[k] = bench_thread_cpu_s() - t0;
			if (rc)
				return 1;
		}
		for (i = 0; i < n * BQ_D; i++)
			e2 += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		qsort(t, (size_t)reps, sizeof(double), bench_cmp_double);
		printf("| %s | %.0f | %.1f / %.1f | %.0f | %.0f | %.4f |\n", forms[f].name,
		    (double)bytes / (double)n, t[0] * 1e3, t[reps / 2] * 1e3, (double)bytes / t[0] / 1e6,
		    (double)n * BQ_D / t[0] / 1e6, sqrt(e2 / (double)(n * BQ_D)));
	}
	free(x);
	free(y);
	free(buf);
	return 0;
}
