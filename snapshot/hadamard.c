/*
 * hadamard.c: the orthonormal Walsh-Hadamard rotation of rows (contract in
 * hadamard.h).  Pure function of its arguments, safe from any thread.
 */
#include <math.h>
#include <stddef.h>

#include "snapshot/hadamard.h"

int
hd_dim_ok(int d)
{
	return d >= 2 && d <= HD_MAX_DIM && (d & (d - 1)) == 0;
}

void
hd_rotate_rows(float *x, int64_t n, int d)
{
	double t[HD_MAX_DIM], scale;
	int64_t r;
	int i, j, len;

	if (!hd_dim_ok(d))
		return;
	scale = 1.0 / sqrt((double)d);
	for (r = 0; r < n; r++) {
		float *row = x + (size_t)r * (size_t)d;
		for (i = 0; i < d; i++)
			t[i] = row[i];
		/* butterflies: after the round of span len, t holds the rows'
		 * transforms over blocks of 2·len */
		for (len = 1; len < d; len <<= 1)
			for (i = 0; i < d; i += len << 1)
				for (j = i; j < i + len; j++) {
					double a = t[j], b = t[j + len];
					t[j] = a + b;
					t[j + len] = a - b;
				}
		for (i = 0; i < d; i++)
			row[i] = (float)(t[i] * scale);
	}
}
