/*
 * test_qpack_simd.c: the SIMD unpacking of the b-bit row forms (qpack.h
 * QP_B2, QP_B3, QP_B5, QP_B6, and q8 where the rotated load shares it)
 * against qpack.c's scalar decode, byte for byte.
 *
 * Blocks are random bytes with random (δ, μ) pairs that qpack.c accepts:
 * ordinary ones, extreme ones (δ and μ at ±65504, subnormals, zeros), so
 * every code bit and every float path is exercised.  Each block ends at a
 * page that may not be read (mmap, PROT_NONE): a kernel whose 16-byte loads
 * read past its block's end faults here.  Row lengths include odd group
 * counts (96, 160: 3 and 5 groups); the layout has no partial group (d is
 * a multiple of 32).
 *
 *  - rows: qp_decode at every SIMD level this CPU has (qp_simd_force),
 *    and qp_avx2_bits_rows called directly (so the kernel surely runs),
 *    equal qp_decode at level 0; a refused pair (negative δ, infinite μ,
 *    NaN δ) in the middle gives -1 at every level with the same groups
 *    before it written and none after; validation alone (dst NULL) agrees.
 *  - rotated: hd_unpack_rows of the rotated forms (the b-bit ones, q8 and
 *    q4) at every level, and hd_avx2_bits_rows / hd_512_bits_rows called
 *    directly, equal level 0's scalar decode then scalar rotation; a
 *    refused pair gives -1 at every level, the fused kernels with the rows
 *    before its row the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/rng.h"
#include "snapshot/hadamard.h"
#include "snapshot/hadamard_simd.h"
#include "snapshot/qpack.h"
#include "snapshot/qpack_avx2.h"
#include "tests/tap.h"

static uint64_t ts_rng = 0x2545f4914f6cdd1dull;

static uint32_t
ts_rand(void)
{
	return (uint32_t)(kv_xorshift64s(&ts_rng) >> 32);
}

/* A block of `bytes` bytes whose end is the start of an unreadable page. */
struct ts_guarded {
	uint8_t *map, *p;
	size_t map_bytes;
};

static int
ts_guard(struct ts_guarded *g, size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t body = (bytes + page - 1) / page * page;
	g->map_bytes = body + page;
	g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		return -1;
	if (mprotect(g->map + body, page, PROT_NONE))
		return -1;
	g->p = g->map + body - bytes;
	return 0;
}

static void
ts_unguard(struct ts_guarded *g)
{
	munmap(g->map, g->map_bytes);
}

/* A case's end: the CPU's own SIMD level again, its buffers freed. */
static void
ts_done(struct ts_guarded *g, float *want, float *got)
{
	qp_simd_force(-1);
	ts_unguard(g);
	free(want);
	free(got);
}

/* A (δ, μ) pair qpack.c accepts: mode 0 ordinary, 1 extreme. */
static void
ts_pair(uint8_t *p, int mode)
{
	static const uint16_t d_extreme[] = { 0x0000, 0x0001, 0x03ff, 0x7bff, 0x7bfe, 0x3c00 };
	static const uint16_t m_extreme[] = { 0x7bff, 0xfbff, 0x8000, 0x0000, 0x8001, 0x0001 };
	uint16_t d16, m16;
	if (mode) {
		d16 = d_extreme[ts_rand() % 6];
		m16 = m_extreme[ts_rand() % 6];
	} else {
		d16 = (uint16_t)(0x1000 + ts_rand() % 0x3000);   /* about 2^-11 .. 2^1 */
		m16 = (uint16_t)((ts_rand() & 0x8000) | (0x2000 + ts_rand() % 0x3000));
	}
	p[0] = (uint8_t)d16;
	p[1] = (uint8_t)(d16 >> 8);
	p[2] = (uint8_t)m16;
	p[3] = (uint8_t)(m16 >> 8);
}

/* Fill a block of n·(d/32) groups of `step` bytes: random codes, random
 * accepted pairs (a quarter extreme). */
static void
ts_fill(uint8_t *p, int64_t groups, int step)
{
	int64_t g;
	int i;
	for (g = 0; g < groups; g++, p += step) {
		for (i = 4; i < step; i++)
			p[i] = (uint8_t)ts_rand();
		ts_pair(p, ts_rand() % 4 == 0);
	}
}

/* The SIMD levels of the snapshot kernels this CPU runs. */
static int
ts_levels(void)
{
	qp_simd_force(-1);
	return qp_simd_level() + 1;
}

/* Three ways to spoil a pair, each one qp_pair_ok refuses. */
static void
ts_spoil(uint8_t *pair, int how)
{
	if (how == 0)
		pair[1] |= 0x80; /* δ negative */
	else if (how == 1) {
		pair[2] = 0x00; /* μ +inf */
		pair[3] = 0x7c;
	} else {
		pair[0] = 0x01; /* δ NaN */
		pair[1] = 0x7e;
	}
}

static const int ts_schemes[] = { QP_B2, QP_B3, QP_B5, QP_B6, QP_Q8, QP_Q4 };
#define TS_N_SCHEMES (int)(sizeof(ts_schemes) / sizeof(ts_schemes[0]))

static enum tap_result
test_rows(void)
{
	static const int dims[] = { 32, 64, 96, 128, 160 };
	static const int64_t rows[] = { 1, 2, 3, 7, 45 };
	int si, di, ri, level, n_levels = ts_levels(), direct = 0;
	for (si = 0; si < TS_N_SCHEMES; si++)
		for (di = 0; di < 5; di++)
			for (ri = 0; ri < 5; ri++) {
				enum qp_scheme s = (enum qp_scheme)ts_schemes[si];
				int d = dims[di], b = qp_row_bits(s), step = 4 + 4 * b, how;
				int64_t n = rows[ri], groups = n * (d / 32), bad;
				size_t bytes = (size_t)qp_bytes(s, (uint64_t)n, d), vals = (size_t)(n * d);
				struct ts_guarded g;
				float *want = malloc(vals * sizeof(float)), *got = malloc(vals * sizeof(float));
				TAP_CHECK(want && got && ts_guard(&g, bytes) == 0, "out of memory");
				TAP_CHECK(bytes == (size_t)groups * (size_t)step, "layout");
				ts_fill(g.p, groups, step);
				TAP_CHECK(qp_simd_force(0) == 0 && qp_simd_level() == 0, "level 0");
				TAP_CHECK(qp_decode(s, g.p, n, d, want) == 0, "scalar decode");
				for (level = 1; level < n_levels; level++) {
					TAP_CHECK(qp_simd_force(level) == 0 && qp_simd_level() == level,
					    "level %d", level);
					memset(got, 0xa5, vals * sizeof(float));
					TAP_CHECK(qp_decode(s, g.p, n, d, got) == 0, "decode");
					TAP_CHECK(!memcmp(got, want, vals * sizeof(float)),
					    "scheme %d d %d n %lld level %d: not the scalar bytes", (int)s, d,
					    (long long)n, level);
					if (b != 4 && b != 8) { /* the kernel itself, not only qp_decode */
						memset(got, 0xa5, vals * sizeof(float));
						TAP_CHECK(qp_avx2_bits_rows(g.p, groups, b, got) == 0, "kernel");
						TAP_CHECK(!memcmp(got, want, vals * sizeof(float)),
						    "qp_avx2_bits_rows b %d d %d n %lld", b, d, (long long)n);
						direct++;
					}
				}
				/* a refused pair in the middle: the groups before it alone written */
				how = (int)(ts_rand() % 3);
				bad = groups / 2;
				ts_spoil(g.p + (size_t)bad * (size_t)step, how);
				TAP_CHECK(qp_simd_force(0) == 0, "level 0");
				memset(want, 0x5a, vals * sizeof(float));
				TAP_CHECK(qp_decode(s, g.p, n, d, want) == -1, "scalar took a bad pair");
				TAP_CHECK(qp_decode(s, g.p, n, d, NULL) == -1, "validation took a bad pair");
				for (level = 1; level < n_levels; level++) {
					TAP_CHECK(qp_simd_force(level) == 0, "level %d", level);
					memset(got, 0x5a, vals * sizeof(float));
					TAP_CHECK(qp_decode(s, g.p, n, d, got) == -1,
					    "scheme %d level %d: spoilt pair (%d) taken", (int)s, level, how);
					TAP_CHECK(!memcmp(got, want, vals * sizeof(float)),
					    "scheme %d d %d level %d: groups around a bad pair differ", (int)s,
					    d, level);
					TAP_CHECK(qp_decode(s, g.p, n, d, NULL) == -1, "validation, level %d",
					    level);
				}
				ts_done(&g, want, got);
			}
	tap_diag("%d SIMD levels; the b-bit kernel called directly %d times", n_levels, direct);
	TAP_CHECK(n_levels < 2 || direct > 0, "the SIMD kernel never ran");
	return TAP_PASS;
}

/* The rotated forms' load: level 0 is qp_decode's scalar loop then the
 * scalar butterflies; every SIMD level (and the fused kernels called
 * directly) must give the same bytes. */
static enum tap_result
test_rotated(void)
{
	static const int dims[] = { 32, 64, 128, 256 };
	static const int64_t rows[] = { 1, 2, 3, 45 };
	int si, di, ri, level, n_levels = ts_levels(), direct = 0;
	for (si = 0; si < TS_N_SCHEMES; si++)
		for (di = 0; di < 4; di++)
			for (ri = 0; ri < 4; ri++) {
				enum qp_scheme s = (enum qp_scheme)ts_schemes[si];
				int d = dims[di], b = qp_row_bits(s), step = 4 + 4 * b;
				int64_t n = rows[ri], groups = n * (d / 32), bad_row;
				size_t bytes = (size_t)qp_bytes(s, (uint64_t)n, d), vals = (size_t)(n * d);
				float scale = (float)(1.0 / __builtin_sqrt((double)d)); /* hd_scale */
				struct ts_guarded g;
				/* got on a 64-byte line, 4 floats spare: streamed rows at got,
				 * and at got + 4 (16 bytes off: plain stores) */
				float *want = malloc(vals * sizeof(float)), *got = NULL;
				if (posix_memalign((void **)&got, 64, (vals + 4) * sizeof(float)))
					got = NULL;
				TAP_CHECK(want && got && ts_guard(&g, bytes) == 0, "out of memory");
				ts_fill(g.p, groups, step);
				TAP_CHECK(qp_simd_force(0) == 0, "level 0");
				TAP_CHECK(hd_unpack_rows(s, g.p, n, d, want, 0) == 0, "scalar unpack");
				for (level = 1; level < n_levels; level++) {
					int stream, off;
					TAP_CHECK(qp_simd_force(level) == 0, "level %d", level);
					for (stream = 0; stream < 2; stream++)
						for (off = 0; off <= 4; off += 4) {
							float *x = got + off;
							memset(x, 0xa5, vals * sizeof(float));
							TAP_CHECK(hd_unpack_rows(s, g.p, n, d, x, stream) == 0, "unpack");
							TAP_CHECK(!memcmp(x, want, vals * sizeof(float)),
							    "scheme %d d %d n %lld level %d stream %d off %d: not the "
							    "scalar bytes", (int)s, d, (long long)n, level, stream, off);
						}
					if (hd_avx2_dim_ok(d))
						for (stream = 0; stream < 2; stream++) {
							memset(got, 0xa5, vals * sizeof(float));
							TAP_CHECK((level >= 2 ?
							    hd_512_bits_rows(g.p, n, d, b, scale, got, stream) :
							    hd_avx2_bits_rows(g.p, n, d, b, scale, got, stream)) == 0,
							    "kernel");
							TAP_CHECK(!memcmp(got, want, vals * sizeof(float)),
							    "fused kernel level %d b %d d %d n %lld stream %d", level, b,
							    d, (long long)n, stream);
							direct++;
						}
				}
				/* a refused pair in the last group of a middle row */
				bad_row = n / 2;
				ts_spoil(g.p + (size_t)((bad_row + 1) * (d / 32) - 1) * (size_t)step,
				    (int)(ts_rand() % 3));
				for (level = 0; level < n_levels; level++) {
					TAP_CHECK(qp_simd_force(level) == 0, "level %d", level);
					memset(got, 0xa5, vals * sizeof(float));
					TAP_CHECK(hd_unpack_rows(s, g.p, n, d, got, level % 2) == -1,
					    "scheme %d d %d level %d: spoilt pair taken", (int)s, d, level);
					/* the fused kernels write the rows before it (the scalar
					 * path leaves them unrotated: a refused block is dropped) */
					TAP_CHECK(level == 0 || !hd_avx2_dim_ok(d) ||
					    !memcmp(got, want, (size_t)(bad_row * d) * sizeof(float)),
					    "scheme %d d %d level %d: rows before a bad pair differ", (int)s, d,
					    level);
				}
				ts_done(&g, want, got);
			}
	tap_diag("%d SIMD levels; the fused kernels called directly %d times", n_levels, direct);
	TAP_CHECK(n_levels < 2 || direct > 0, "the fused kernels never ran");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "rows", test_rows },
	{ "rotated", test_rotated },
};

TAP_MAIN(NULL, NULL)
