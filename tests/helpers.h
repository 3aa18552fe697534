/*
 * helpers.h: small set-up pieces more than one test program needs, static
 * inline so each test takes only what it calls: a whole file written out
 * (read in: common/fdio.h's kv_slurp), a fresh temporary file or folder, a
 * scratch folder removed, the relative error of computed values against
 * their reference, seeded random floats (a float's bits: common/bits.h),
 * libsodium started.
 */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <math.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bits.h" /* kv_f32_bits, kv_bits_f32: a float's bits */
#include "common/fdio.h" /* kv_slurp: a whole file read into memory */
#include "common/rng.h"

/* Write p[0..n) to path (created or truncated); 0 or -1. */
static inline int
th_write(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	size_t w;
	if (!f)
		return -1;
	w = fwrite(p, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* path[0..cap) = $TMPDIR (or /tmp) + "/kvsnap-TAG-XXXXXX", the template of
 * th_tmp and th_tmpdir; 0 or -1 when it does not fit. */
static inline int
th_tmp_name(char *path, size_t cap, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	return (size_t)snprintf(path, cap, "%s/kvsnap-%s-XXXXXX", dir, tag) >= cap ? -1 : 0;
}

/* A fresh empty temporary file (mkstemp) named by th_tmp_name, its path in
 * path[0..cap); 0 or -1. */
static inline int
th_tmp(char *path, size_t cap, const char *tag)
{
	int fd;
	if (th_tmp_name(path, cap, tag))
		return -1;
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* A fresh empty folder (mkdtemp) named by th_tmp_name; 0 or -1. */
static inline int
th_tmpdir(char *path, size_t cap, const char *tag)
{
	return th_tmp_name(path, cap, tag) || !mkdtemp(path) ? -1 : 0;
}

/* max |got − ref| / max |ref| over n values: the tests' relative error.
 * NaN when either holds a NaN (so a check `err <= tol` fails); with ref
 * all zeros, 0 when got is too, else infinity. */
static inline double
th_rel_err(const float *got, const float *ref, int64_t n)
{
	double md = 0.0, mr = 0.0;
	int64_t i;
	for (i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)ref[i]), r = fabs((double)ref[i]);
		if (isnan(got[i]) || isnan(ref[i]))
			return NAN;
		md = d > md ? d : md;
		mr = r > mr ? r : mr;
	}
	return mr > 0.0 ? md / mr : (md > 0.0 ? INFINITY : 0.0);
}

/* Uniform in [0, 1) from the top 24 bits of the xorshift64* stream at *s
 * (common/rng.h), and uniform in [lo, hi): the tests' random floats. */
static inline float
th_unit(uint64_t *s)
{
	return (float)((kv_xorshift64s(s) >> 40) * (1.0 / 16777216.0));
}

static inline float
th_uniform(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * th_unit(s);
}

/* rm -rf dir (a test's scratch folder); 0 or -1. */
static inline int
th_rm_rf(const char *dir)
{
	char cmd[600];
	if ((size_t)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir) >= sizeof(cmd))
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/* libsodium started, as a TAP_MAIN set-up: 0, or -1 after a bail-out line. */
static inline int
th_sodium_setup(void)
{
	if (sodium_init() < 0) {
		printf("Bail out! libsodium\n");
		return -1;
	}
	return 0;
}

#endif
