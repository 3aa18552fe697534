/*
 * bench_qpack.c: how fast each stored form's rows unpack (issue 28 items 2
 * and 5: the b-bit forms of format version 5 against q4h's and q8's), on
 * one thread, apart from the store and the model.
 *
 * Rows of head_dim 64 drawn N(0,1) with two outlier channels (×20, as
 * pre-RoPE keys have), packed once per scheme; then unpacked REPS times
 * the way snapshot.c does (qp_decode, or hd_unpack_rows for a rotated
 * form: unpack and rotate back), a key block and a value block per rep
 * (the same rows, each in its form's scheme).  Thread CPU time, so a busy machine
 * slows the wall clock but not the figure much; best and median of the
 * reps.  MB/s is of stored bytes, ns per decoded float.
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

/* One block unpacked as snapshot.c does: qp_decode, or hd_unpack_rows for
 * a rotated form (unpack and rotate back). */
static int
bq_unpack(enum qp_scheme s, int rotated, const uint8_t *src, int64_t n, float *dst)
{
	return rotated ? hd_unpack_rows(s, src, n, BQ_D, dst, 0) : qp_decode(s, src, n, BQ_D, dst);
}

int
main(int argc, char **argv)
{
	/* a form's keys in scheme k, its values in v (the same for most) */
	static const struct {
		const char *name;
		enum qp_scheme k, v;
		int rotated;
	} forms[] = {
		{ "fp16", QP_F16, QP_F16, 0 }, { "q8", QP_Q8, QP_Q8, 0 }, { "q4", QP_Q4, QP_Q4, 0 },
		{ "q4h", QP_Q4, QP_Q4, 1 }, { "q6h", QP_B6, QP_B6, 1 }, { "q5h", QP_B5, QP_B5, 1 },
		{ "q3h", QP_B3, QP_B3, 1 }, { "k5v3h", QP_B5, QP_B3, 1 },
		{ "k4v2h", QP_Q4, QP_B2, 1 }, { "k8v4h", QP_Q8, QP_Q4, 1 },
		{ "b5 unrotated", QP_B5, QP_B5, 0 }, { "b2 unrotated", QP_B2, QP_B2, 0 },
	};
	int64_t n = 92160, i;
	int reps = 7, c, f, k;
	uint64_t rng = 12345;
	float *x, *y, *z;
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
	z = malloc((size_t)n * BQ_D * sizeof(float));
	buf = malloc(2 * (size_t)qp_bytes(QP_F16, (uint64_t)n, BQ_D));
	if (!x || !y || !z || !buf)
		return 1;
	for (i = 0; i < n * BQ_D; i++)
		x[i] = (float)(bq_normal(&rng) * (i % BQ_D == 5 || i % BQ_D == 40 ? 20.0 : 1.0));
	printf("%lld rows of %d values, %d reps, one thread, qp_simd_level %d\n\n", (long long)n,
	    BQ_D, reps, qp_simd_level());
	printf("| form | K+V bytes/row | unpack ms best / median | MB/s stored (best) | "
	    "ns/value (best) | rms error |\n|---|---:|---:|---:|---:|---:|\n");
	for (f = 0; f < (int)(sizeof(forms) / sizeof(forms[0])); f++) {
		double t[BQ_MAX_REPS], e2 = 0;
		uint64_t kb = qp_bytes(forms[f].k, (uint64_t)n, BQ_D);
		uint64_t bytes = kb + qp_bytes(forms[f].v, (uint64_t)n, BQ_D);
		const float *src = x;
		if (forms[f].rotated) { /* pack the rotated rows, as snapshot.c does */
			memcpy(y, x, (size_t)n * BQ_D * sizeof(float));
			hd_rotate_rows(y, n, BQ_D);
			src = y;
		}
		/* the same rows stand for the keys and the values */
		if (qp_encode(forms[f].k, src, n, BQ_D, buf) ||
		    qp_encode(forms[f].v, src, n, BQ_D, buf + kb))
			return 1;
		for (k = 0; k < reps; k++) {
			double t0 = kv_thread_cpu_s();
			int rc = bq_unpack(forms[f].k, forms[f].rotated, buf, n, y) ||
			    bq_unpack(forms[f].v, forms[f].rotated, buf + kb, n, z);
			t[k] = kv_thread_cpu_s() - t0;
			if (rc)
				return 1;
		}
		for (i = 0; i < n * BQ_D; i++)
			e2 += ((double)x[i] - y[i]) * ((double)x[i] - y[i]) +
			    ((double)x[i] - z[i]) * ((double)x[i] - z[i]);
		qsort(t, (size_t)reps, sizeof(double), kv_cmp_double);
		printf("| %s | %.0f | %.1f / %.1f | %.0f | %.2f | %.4f |\n", forms[f].name,
		    (double)bytes / (double)n, t[0] * 1e3, t[reps / 2] * 1e3, (double)bytes / t[0] / 1e6,
		    t[0] * 1e9 / (2.0 * (double)n * BQ_D), sqrt(e2 / (2.0 * (double)(n * BQ_D))));
	}
	free(z);
	free(x);
	free(y);
	free(buf);
	return 0;
}
