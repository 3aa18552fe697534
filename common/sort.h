/*
 * sort.h: qsort comparators of plain numbers (header-only, libc only), one
 * for each element type and order the tree sorts by: doubles ascending
 * (medians, the block map's thresholds), 64-bit indices ascending, 32-bit
 * positions ascending, floats descending (the tests' best scores first).
 */
#ifndef COMMON_SORT_H
#define COMMON_SORT_H

#include <stdint.h>

/* qsort order of doubles, ascending. */
static inline int
kv_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* qsort order of int64_t, ascending. */
static inline int
kv_cmp_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* qsort order of uint32_t, ascending. */
static inline int
kv_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* qsort order of floats, descending. */
static inline int
kv_cmp_float_desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x < y) - (x > y);
}

#endif /* COMMON_SORT_H */
