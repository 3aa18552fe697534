/*
 * test_hadamard.c: the Hadamard rotation of snapshot rows (snapshot/hadamard.c)
 * against a double-precision reference, the same for the loader's float
 * rotation back, their round trip, and rotated q4
 * through qpack (the SNAP_Q4_H path: rotate, pack, unpack, rotate back).
 *
 * Tolerances, each with its reason (u = 2^-24, float's unit roundoff):
 * - forward: y = fl(ỹ) where ỹ is the transform computed in double (log2 d
 *   rounds of exact-ish additions: |ỹ_i − y_i| <= d·2^-53·‖x‖₁/√d), so
 *   |ŷ_i − y_i| <= u·|y_i| + 2·d·2^-53·‖x‖₁/√d;
 * - round trip: ŷ = y + e with |e_j| <= u·|y_j|, so ‖e‖₂ <= u·‖y‖₂ =
 *   u·‖x‖₂ (H orthogonal); rotating back gives x + He + e' where |(He)_i|
 *   <= ‖e‖₂ (every row of H has unit norm) and |e'_i| <= u·|x_i + (He)_i|:
 *   |x̂_i − x_i| <= 2u·‖x‖₂·(1 + u) plus the double terms as above;
 * - the loader's rotation back (hd_rotate_back_rows: k = log2 d rounds of
 *   butterflies in float, then the product by c = fl(1/√d), |c·√d − 1| <=
 *   u; y = Hx/√d):
 *   - per value: each output of the rounds is a signed sum of the d inputs
 *     over a tree of depth k, within γ_k·‖x‖₁ of the exact sum (γ_k =
 *     k·u/(1 − k·u), the usual bound of summation); the product by c and
 *     its rounding add (2u + u²)·|y_i|: |ŷ_i − y_i| <= (2u + u²)·|y_i| +
 *     γ_k·(1 + u)²·‖x‖₁/√d;
 *   - in L2: each round is √2 times an orthogonal map; its rounding adds a
 *     vector of norm <= u·√2·‖its input‖, which the rounds after it grow by
 *     √2 each, so the rounds end within k·u·√d·(1 + u)^(k−1)·‖x‖₂ of Hx, and
 *     after the scaling ‖ŷ − y‖₂ <= E1·‖x‖₂, E1 = k·u·(1 + u)^(k+1) + 2u +
 *     u² (~8u at d = 64);
 *   - (the double reference adds its own d·2^-53·‖x‖₁/√d per value);
 *   - a round trip, forward in double and back in float: x̂ = H(y + e)/√d +
 *     e' with ‖e‖₂ <= u·‖x‖₂ + √d·D (D the double terms above) and ‖e'‖₂
 *     <= E1·‖y + e‖₂, each value bounded by the norms;
 * - rotated q4: the codec bounds every value of a group of the rotated row
 *   by δ/2 (qpack.h, with the fp16 and float slack test_snapshot.c uses);
 *   rotating back keeps the L2 norm of the error, so a row's L2 error is at
 *   most the L2 norm of its values' bounds, plus the forward rotation's
 *   error (as the round trip's e), all times (1 + E1), plus E1·‖x‖₂.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/hadamard.h"
#include "snapshot/qpack.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

#define U (1.0 / 16777216.0) /* 2^-24 */

/* k = log2 d */
static int
log2i(int d)
{
	int k = 0;
	while ((1 << k) < d)
		k++;
	return k;
}

/* γ_k and E1 of the comment above */
static double
gamma_k(int k)
{
	return k * U / (1 - k * U);
}

static double
e1(int k)
{
	return k * U * pow(1 + U, k + 1) + 2 * U + U * U;
}

/* y = H_d x / sqrt(d) in double, from the definition. */
static void
ref_rotate(const float *x, int d, double *y)
{
	int i, j;
	for (i = 0; i < d; i++) {
		double s = 0;
		for (j = 0; j < d; j++)
			s += (__builtin_popcount((unsigned)(i & j)) & 1) ? -(double)x[j] : (double)x[j];
		y[i] = s / sqrt((double)d);
	}
}

/* Rows with a wide spread of magnitudes and two outlier channels. */
static void
fill(float *x, int64_t n, int d, uint64_t seed)
{
	struct tiny_rng r = { seed * 0x9E3779B97F4A7C15u + 3 };
	int64_t i;
	int j;
	for (i = 0; i < n; i++)
		for (j = 0; j < d; j++) {
			double v = tiny_rng_normal(&r) * pow(10.0, (double)(i % 5) - 2.0);
			x[i * d + j] = (float)(j == 3 || j == d / 2 + 1 ? 25.0 * v : v + 0.3 * (j % 5));
		}
}

static enum tap_result
test_dims(void)
{
	int d;
	for (d = 2; d <= HD_MAX_DIM; d *= 2)
		TAP_CHECK(hd_dim_ok(d), "%d", d);
	TAP_CHECK(!hd_dim_ok(0) && !hd_dim_ok(1) && !hd_dim_ok(3) && !hd_dim_ok(48) &&
	    !hd_dim_ok(96) && !hd_dim_ok(2 * HD_MAX_DIM) && !hd_dim_ok(-64), "not powers of two");
	return TAP_PASS;
}

static enum tap_result
test_against_reference(void)
{
	static const int dims[] = { 2, 8, 32, 64, 128, 1024 };
	enum { N = 14 };
	static float x[N * HD_MAX_DIM], y[N * HD_MAX_DIM], z[N * HD_MAX_DIM];
	static double ref[HD_MAX_DIM];
	double worst_f = 0, worst_rt = 0;
	size_t k;
	for (k = 0; k < sizeof(dims) / sizeof(dims[0]); k++) {
		int d = dims[k], i, j;
		fill(x, N, d, (uint64_t)d);
		memcpy(y, x, sizeof(float) * N * (size_t)d);
		hd_rotate_rows(y, N, d);
		memcpy(z, y, sizeof(float) * N * (size_t)d);
		hd_rotate_rows(z, N, d);
		for (i = 0; i < N; i++) {
			const float *xi = x + i * d;
			double l1 = 0, l2 = 0, dbl;
			for (j = 0; j < d; j++) {
				l1 += fabs(xi[j]);
				l2 += (double)xi[j] * xi[j];
			}
			l2 = sqrt(l2);
			dbl = 2.0 * d * ldexp(1.0, -53) * l1 / sqrt((double)d);
			ref_rotate(xi, d, ref);
			for (j = 0; j < d; j++) {
				double ef = fabs(y[i * d + j] - ref[j]), bf = U * fabs(ref[j]) + dbl;
				double er = fabs((double)z[i * d + j] - xi[j]);
				double br = 2 * U * l2 * (1 + U) + 2 * dbl;
				TAP_CHECK(ef <= bf, "d %d row %d value %d: forward error %g over %g", d, i, j,
				    ef, bf);
				TAP_CHECK(er <= br, "d %d row %d value %d: round trip error %g over %g", d, i,
				    j, er, br);
				worst_f = fmax(worst_f, bf > 0 ? ef / bf : 0);
				worst_rt = fmax(worst_rt, br > 0 ? er / br : 0);
			}
		}
	}
	tap_diag("worst error / bound: forward %.3f, round trip %.3f", worst_f, worst_rt);
	/* a transform that is not H fails the reference: a sign flipped */
	fill(x, 1, 64, 5);
	memcpy(y, x, 64 * sizeof(float));
	hd_rotate_rows(y, 1, 64);
	ref_rotate(x, 64, ref);
	y[17] = -y[17];
	TAP_CHECK(fabs(y[17] - ref[17]) > U * fabs(ref[17]) * 4, "the reference sees a flip");
	/* a bad d leaves the rows alone */
	memcpy(y, x, 48 * sizeof(float));
	hd_rotate_rows(y, 1, 48);
	TAP_CHECK(!memcmp(x, y, 48 * sizeof(float)), "d 48 changed the row");
	return TAP_PASS;
}

/* The loader's float rotation back against the exact transform (per
 * value and in L2), and after the encoder's double rotation (the round
 * trip a rotated form's rows make, less the quantizer). */
static enum tap_result
test_back_against_reference(void)
{
	static const int dims[] = { 2, 8, 32, 64, 128, 1024 };
	enum { N = 14 };
	static float x[N * HD_MAX_DIM], y[N * HD_MAX_DIM], z[N * HD_MAX_DIM];
	static double ref[HD_MAX_DIM];
	double worst_f = 0, worst_l2 = 0, worst_rt = 0;
	size_t k;
	for (k = 0; k < sizeof(dims) / sizeof(dims[0]); k++) {
		int d = dims[k], i, j, kk = log2i(d);
		double E = e1(kk);
		fill(x, N, d, (uint64_t)d + 99);
		memcpy(y, x, sizeof(float) * N * (size_t)d);
		hd_rotate_back_rows(y, N, d);
		memcpy(z, x, sizeof(float) * N * (size_t)d);
		hd_rotate_rows(z, N, d);
		hd_rotate_back_rows(z, N, d);
		for (i = 0; i < N; i++) {
			const float *xi = x + i * d;
			double l1 = 0, l2 = 0, dbl, e2 = 0, bl2, ee, br;
			for (j = 0; j < d; j++) {
				l1 += fabs(xi[j]);
				l2 += (double)xi[j] * xi[j];
			}
			l2 = sqrt(l2);
			dbl = d * ldexp(1.0, -53) * l1 / sqrt((double)d); /* the reference's */
			ref_rotate(xi, d, ref);
			/* the round trip: ‖e‖ and then the bound of the comment */
			ee = U * l2 + sqrt((double)d) * 2 * dbl;
			br = ee + E * (l2 + ee);
			for (j = 0; j < d; j++) {
				double ef = fabs(y[i * d + j] - ref[j]);
				double bf = (2 * U + U * U) * fabs(ref[j]) +
				    gamma_k(kk) * (1 + U) * (1 + U) * l1 / sqrt((double)d) + dbl;
				double er = fabs((double)z[i * d + j] - xi[j]);
				TAP_CHECK(ef <= bf, "d %d row %d value %d: error %g over %g", d, i, j, ef, bf);
				TAP_CHECK(er <= br, "d %d row %d value %d: round trip error %g over %g", d, i,
				    j, er, br);
				worst_f = fmax(worst_f, bf > 0 ? ef / bf : 0);
				worst_rt = fmax(worst_rt, br > 0 ? er / br : 0);
				e2 += ef * ef;
			}
			bl2 = E * l2 + sqrt((double)d) * dbl;
			TAP_CHECK(sqrt(e2) <= bl2, "d %d row %d: L2 error %g over %g", d, i, sqrt(e2),
			    bl2);
			worst_l2 = fmax(worst_l2, bl2 > 0 ? sqrt(e2) / bl2 : 0);
		}
	}
	tap_diag("rotation back: worst error / bound: per value %.3f, L2 %.3f, round trip %.3f",
	    worst_f, worst_l2, worst_rt);
	/* a bad d leaves the rows alone */
	fill(x, 1, 48, 5);
	memcpy(y, x, 48 * sizeof(float));
	hd_rotate_back_rows(y, 1, 48);
	TAP_CHECK(!memcmp(x, y, 48 * sizeof(float)), "d 48 changed the row");
	return TAP_PASS;
}

/* |x − x̂| bound of a q4 group spanning [lo, hi] (as test_snapshot.c). */
static double
q4_bound(double lo, double hi)
{
	return 0.5 * (hi - lo) / 15.0 * (1.0 + 1.0 / 256) + (fabs(lo) + fabs(hi)) / 4096.0 +
	    1.0 / (1 << 23);
}

static enum tap_result
test_rotated_q4(void)
{
	enum { N = 70, D = 64 };
	static float x[N * D], y[N * D], back[N * D], plain[N * D];
	static uint8_t buf[N * D];
	double e_rot = 0, e_plain = 0;
	int i, j, g;
	fill(x, N, D, 11);
	memcpy(y, x, sizeof(x));
	hd_rotate_rows(y, N, D);
	TAP_CHECK(qp_encode(QP_Q4, y, N, D, buf) == 0 && qp_decode(QP_Q4, buf, N, D, back) == 0,
	    "q4 of the rotated rows");
	hd_rotate_back_rows(back, N, D); /* as the loader does */
	TAP_CHECK(qp_encode(QP_Q4, x, N, D, buf) == 0 && qp_decode(QP_Q4, buf, N, D, plain) == 0,
	    "q4 of the rows");
	for (i = 0; i < N; i++) {
		double b2 = 0, e2 = 0, l2 = 0, p2 = 0, bound;
		for (g = 0; g < D; g += QP_GROUP) {
			const float *a = y + i * D + g;
			double lo = a[0], hi = a[0], b;
			for (j = 0; j < QP_GROUP; j++) {
				lo = fmin(lo, a[j]);
				hi = fmax(hi, a[j]);
			}
			b = q4_bound(lo, hi);
			b2 += QP_GROUP * b * b;
		}
		for (j = 0; j < D; j++) {
			double e = (double)back[i * D + j] - x[i * D + j];
			double p = (double)plain[i * D + j] - x[i * D + j];
			e2 += e * e;
			p2 += p * p;
			l2 += (double)x[i * D + j] * x[i * D + j];
		}
		/* D = 2^6 (√D = 8): the forward rotation's error as the round trip's, the
		 * quantizer's, through the float rotation back */
		bound = (sqrt(b2) + U * sqrt(l2) + 2 * ldexp(1.0, -53) * D * 8 * sqrt(l2)) * (1 + e1(6)) +
		    e1(6) * sqrt(l2);
		TAP_CHECK(sqrt(e2) <= bound, "row %d: L2 error %g over %g", i, sqrt(e2), bound);
		e_rot += e2;
		e_plain += p2;
	}
	tap_diag("q4 on rows with outlier channels: RMS error %.4g, rotated %.4g",
	    sqrt(e_plain / (N * D)), sqrt(e_rot / (N * D)));
	/* the point of the rotation: the outliers no longer set the step */
	TAP_CHECK(e_rot < e_plain / 2, "rotation did not help: %g vs %g", e_rot, e_plain);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "dims", test_dims },
	{ "against_reference", test_against_reference },
	{ "back_against_reference", test_back_against_reference },
	{ "rotated_q4", test_rotated_q4 },
};

TAP_MAIN(NULL, NULL)
