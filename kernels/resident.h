/*
 * resident.h: the device copies of host ranges a ctx made resident
 * (kern_ctx_resident_add), page by page.  Internal to kernels/: a device
 * backend supplies its memory (struct kern_res_mem) and maps an op's
 * pointers through kern_res_in / kern_res_out; ctx.c answers the engine's
 * kern_ctx_host_sync and kern_ctx_resident_end with the rest.
 *
 * Each page (KERN_RES_PAGE bytes of a range) is in one of three states:
 * the host's copy alone is valid (the device's not yet loaded, or stale
 * after a host write), both are, or the device's is newer (an op wrote it).
 * A page moves only as a whole, so an op may write any part of one.
 */
#ifndef KERNELS_RESIDENT_H
#define KERNELS_RESIDENT_H

#include <stddef.h> /* for size_t */

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERN_RES_PAGE ((size_t)64 << 10)

/* A backend's device memory.  d2h has finished when it returns (the host
 * reads the bytes next); h2d may still run, ordered before the next op. */
struct kern_res_mem {
	void *(*alloc)(void *dev, size_t bytes); /* NULL on failure */
	void (*free)(void *dev, void *p);
	int (*h2d)(void *dev, void *d, const void *h, size_t n);
	int (*d2h)(void *dev, void *h, const void *d, size_t n);
	/* Fill a host page with 0xff bytes (a float NaN) while the device's copy
	 * is newer: the simulated device's check that the host never reads a
	 * stale copy without kern_ctx_host_sync. */
	int poison;
};

struct kern_res;

/* The table of ctx's device; NULL when the ctx's backend has no device
 * memory (the CPU). */
struct kern_res *kern_ctx_res(struct kern_ctx *ctx);

/* The device copy of [h, h + n) for an op to read: 1 and *d set when the
 * range is resident (the pages the device lacked loaded first), 0 when it
 * is not (*d = NULL), or a kern_err (a range that leaves its resident
 * range, a failed copy: kern_ctx_error says which). */
int kern_res_in(struct kern_ctx *ctx, const void *h, size_t n, void **d);
/* The same for an op to write: the pages are marked newer on the device.
 * whole: the op writes every byte of the range, so a page it covers needs
 * no load first (a strided copy's gaps do). */
int kern_res_out(struct kern_ctx *ctx, void *h, size_t n, int whole, void **d);

/* For ctx.c. */
int kern_res_add(struct kern_ctx *ctx, struct kern_res **t, const struct kern_res_mem *mem,
    void *dev, void *h, size_t n);
int kern_res_host(struct kern_ctx *ctx, struct kern_res *t, const void *h, size_t n, int write);
/* Every newer device page back to the host (flush), then every device copy
 * freed; with flush 0 (the device is closing under a ctx being freed) only
 * the latter. */
int kern_res_end(struct kern_ctx *ctx, struct kern_res *t, int flush);
void kern_res_free(struct kern_res *t);
/* How many ranges are resident now (0 for NULL). */
int kern_res_ranges(const struct kern_res *t);

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_RESIDENT_H */
