/*
 * cpu_ctx.h: the CPU backend's context, shared by the files of kernels/cpu/.
 * Not for use outside kernels/cpu/.
 */
#ifndef KERNELS_CPU_CTX_H
#define KERNELS_CPU_CTX_H

#include <pthread.h>   /* for pthread_t */
#include <stdatomic.h> /* for atomic_uint */

#include "kernels/backend.h"
#include "kernels/kernels.h"

#define KERN_MAX_THREADS 64

struct kern_worker;

struct kern_ctx {
	int n_threads;
	int n_started; /* highest worker index started */
	struct kern_worker *workers;
	pthread_t *threads;
	/* the current job */
	void (*fn)(void *arg, int ith, int nth);
	void *arg;
	atomic_uint gen;    /* bumped once per job */
	atomic_int done;    /* workers finished with the current job */
	atomic_int stop;
	atomic_int sleeping;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* per-thread scratch, grown on demand, 64-byte aligned */
	void *scratch[KERN_MAX_THREADS];
	size_t scratch_len[KERN_MAX_THREADS];
	const struct kern_ops *ops;
	int exact; /* f32 activations in every matmul */
	int prefill; /* enum kern_prefill */
	/* the attached device backend, NULL on the CPU */
	const struct kern_dev_backend *backend;
	void *dev;
	struct kern_res *res; /* resident ranges on its device, or NULL */
	char err[256]; /* last device error or backend message */
};

/* Scratch of at least `bytes` for thread ith (contents not preserved when it
 * grows); NULL on OOM. */
void *kern_ctx_scratch(struct kern_ctx *ctx, int ith, size_t bytes);

/* Make OpenBLAS run on the calling thread only: our pool owns parallelism. */
void kern_cpu_blas_single_thread(void);

/* Split [0, n) into nth parts aligned to `align`; part ith is [*lo, *hi). */
void kern_cpu_split(int64_t n, int64_t align, int ith, int nth, int64_t *lo, int64_t *hi);

#endif /* KERNELS_CPU_CTX_H */
