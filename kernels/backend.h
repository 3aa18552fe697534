/*
 * backend.h: how a device backend (kernels/cuda/) plugs into a kern_ctx.
 * Internal to kernels/: the engine sees only kernels.h.
 *
 * A device backend attaches to a CPU ctx (which keeps its thread pool for
 * engine-side work) and replaces the ctx's op table.  Its ops find their
 * device state with kern_ctx_dev(ctx) and report failures in words with
 * kern_ctx_set_error() before returning KERN_ERR_DEVICE (or another code).
 */
#ifndef KERNELS_BACKEND_H
#define KERNELS_BACKEND_H

#include <stddef.h> /* for size_t */

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kern_res_mem;

struct kern_dev_backend {
	const char *name;
	const struct kern_ops *ops;
	/* Open the device: KERN_ERR_NODEV (with err filled in) if none. */
	int (*open)(void **dev, char *err, size_t errlen);
	void (*close)(void *dev);
	/* Its memory, for resident ranges (kernels/resident.h); NULL: none. */
	const struct kern_res_mem *mem;
};

/* The CUDA backend, or NULL when this build has none (kernels/cuda_absent.c). */
const struct kern_dev_backend *kern_cuda_backend(void);
/* The CPU ops behind a simulated device memory (kernels/simdev/). */
const struct kern_dev_backend *kern_simdev_backend(void);
/* On a simdev ctx: the op results written to host memory while ranges
 * were resident (each one a wait for the device on a GPU); -1 on another
 * backend. */
long kern_simdev_host_results(struct kern_ctx *ctx);
/* The CPU op table, which the simulated device wraps. */
const struct kern_ops *kern_cpu_ops(void);

void *kern_ctx_dev(struct kern_ctx *ctx);
int kern_ctx_is_exact(const struct kern_ctx *ctx);
void kern_ctx_set_error(struct kern_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* KERNELS_BACKEND_H */
