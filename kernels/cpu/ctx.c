/*
 * ctx.c: the CPU backend's context: one thread pool, created once, and
 * per-thread scratch memory.
 *
 * Decode runs a few hundred parallel regions per token, so waking workers must
 * cost well under a microsecond: workers spin on a generation counter for a
 * while after each job and only then sleep on a condition variable.  The
 * caller is thread 0 and always works too.
 *
 * Every wait spins only briefly before it yields the core (sched_yield):
 * when there are more runnable threads than cores (two kvsnapd workers of
 * nproc threads each, a busy machine), the thread being waited for may be
 * the one this core should run, and a pure spin burns the rest of its time
 * slice first, hundreds of times per token (a test's decode took 25x its
 * time on a loaded 2-core machine).  On an idle machine the yield returns
 * at once.
 *
 * Lock order: ctx->mu only (it guards nothing but the sleep/wake handshake).
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/cpu_ctx.h"
#include "kernels/resident.h"

static void kern_ctx_close_backend(struct kern_ctx *ctx);

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h> /* for _mm_pause */
#define KERN_CPU_RELAX() _mm_pause()
#else
#define KERN_CPU_RELAX() ((void)0)
#endif

/* Spins with only a pause before a wait starts yielding (512 pauses: 5-70
 * µs, by the CPU's pause latency). */
#define KERN_POOL_PAUSES (1 << 9)
/* Spins, pauses and yields, before a worker goes to sleep (~0.5-1 ms idle). */
#define KERN_POOL_SPINS (KERN_POOL_PAUSES + (1 << 11))

/* One step of a wait: a pause while the wait is young, then a yield. */
static inline void
kern_wait_step(int spins)
{
	if (spins < KERN_POOL_PAUSES)
		KERN_CPU_RELAX();
	else
		sched_yield();
}

struct kern_worker {
	struct kern_ctx *ctx;
	int ith;
};

static void *
kern_pool_main(void *arg)
{
	struct kern_worker *w = arg;
	struct kern_ctx *ctx = w->ctx;
	unsigned seen = 0;

	for (;;) {
		unsigned gen;
		int spins = 0;
		while ((gen = atomic_load_explicit(&ctx->gen, memory_order_acquire)) == seen) {
			if (atomic_load_explicit(&ctx->stop, memory_order_acquire))
				return NULL;
			if (++spins < KERN_POOL_SPINS) {
				kern_wait_step(spins);
				continue;
			}
			pthread_mutex_lock(&ctx->mu);
			atomic_fetch_add(&ctx->sleeping, 1);
			while (atomic_load(&ctx->gen) == seen && !atomic_load(&ctx->stop))
				pthread_cond_wait(&ctx->cv, &ctx->mu);
			atomic_fetch_sub(&ctx->sleeping, 1);
			pthread_mutex_unlock(&ctx->mu);
			spins = 0;
		}
		seen = gen;
		if (atomic_load_explicit(&ctx->stop, memory_order_acquire))
			return NULL;
		ctx->fn(ctx->arg, w->ith, ctx->n_threads);
		atomic_fetch_add_explicit(&ctx->done, 1, memory_order_release);
	}
}

void
kern_parallel(struct kern_ctx *ctx, void (*fn)(void *arg, int ith, int nth), void *arg)
{
	if (ctx->n_threads == 1) {
		fn(arg, 0, 1);
		return;
	}
	ctx->fn = fn;
	ctx->arg = arg;
	atomic_store_explicit(&ctx->done, 0, memory_order_relaxed);
	atomic_fetch_add(&ctx->gen, 1);
	if (atomic_load(&ctx->sleeping)) {
		pthread_mutex_lock(&ctx->mu);
		pthread_cond_broadcast(&ctx->cv);
		pthread_mutex_unlock(&ctx->mu);
	}
	fn(arg, 0, ctx->n_threads);
	for (int spins = 0;
	    atomic_load_explicit(&ctx->done, memory_order_acquire) != ctx->n_threads - 1; spins++)
		kern_wait_step(spins);
}

int
kern_ctx_init(struct kern_ctx **out, int n_threads)
{
	struct kern_ctx *ctx;
	int i;

	*out = NULL;
	if (n_threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 0 ? (int)n : 1;
	}
	/* the last scratch slot is ops.c's shared buffer (the quantized
	 * activations the caller hands every thread, the attention's packed
	 * keys), never a thread's own:
	 * with 64 threads (a 64-core machine's default) thread 63's scratch
	 * was that buffer, and growing it freed what the others read */
	if (n_threads > KERN_MAX_THREADS - 1)
		n_threads = KERN_MAX_THREADS - 1;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return KERN_ERR_NOMEM;
	ctx->n_threads = n_threads;
	pthread_mutex_init(&ctx->mu, NULL);
	pthread_cond_init(&ctx->cv, NULL);
	ctx->workers = calloc((size_t)n_threads, sizeof(*ctx->workers));
	ctx->threads = calloc((size_t)n_threads, sizeof(*ctx->threads));
	if (!ctx->workers || !ctx->threads) {
		kern_ctx_free(ctx);
		return KERN_ERR_NOMEM;
	}
	kern_cpu_blas_single_thread();
	for (i = 1; i < n_threads; i++) {
		ctx->workers[i].ctx = ctx;
		ctx->workers[i].ith = i;
		if (pthread_create(&ctx->threads[i], NULL, kern_pool_main, &ctx->workers[i])) {
			ctx->n_threads = i; /* join only the ones started */
			kern_ctx_free(ctx);
			return KERN_ERR_THREAD;
		}
		ctx->n_started = i;
	}
	ctx->ops = kern_cpu_ops();
	*out = ctx;
	return KERN_OK;
}

void
kern_ctx_free(struct kern_ctx *ctx)
{
	int i;

	if (!ctx)
		return;
	kern_ctx_close_backend(ctx);
	atomic_store(&ctx->stop, 1);
	pthread_mutex_lock(&ctx->mu);
	pthread_cond_broadcast(&ctx->cv);
	pthread_mutex_unlock(&ctx->mu);
	for (i = 1; i <= ctx->n_started; i++)
		pthread_join(ctx->threads[i], NULL);
	for (i = 0; i < KERN_MAX_THREADS; i++)
		free(ctx->scratch[i]);
	pthread_mutex_destroy(&ctx->mu);
	pthread_cond_destroy(&ctx->cv);
	free(ctx->workers);
	free(ctx->threads);
	free(ctx);
}

void
kern_ctx_set_exact(struct kern_ctx *ctx, int exact)
{
	ctx->exact = exact != 0;
}

void
kern_ctx_set_prefill(struct kern_ctx *ctx, enum kern_prefill how)
{
	ctx->prefill = (int)how;
}

int
kern_ctx_threads(const struct kern_ctx *ctx)
{
	return ctx->n_threads;
}

const struct kern_ops *
kern_ctx_ops(const struct kern_ctx *ctx)
{
	return ctx->ops;
}

void *
kern_ctx_scratch(struct kern_ctx *ctx, int ith, size_t bytes)
{
	if (bytes > ctx->scratch_len[ith]) {
		void *p;
		/* 64-byte aligned, rounded up so small growth does not thrash */
		size_t want = (bytes + (bytes >> 2) + 63) & ~(size_t)63;
		if (posix_memalign(&p, 64, want))
			return NULL;
		free(ctx->scratch[ith]);
		ctx->scratch[ith] = p;
		ctx->scratch_len[ith] = want;
	}
	return ctx->scratch[ith];
}

int
kern_have_cuda(void)
{
	return kern_cuda_backend() != NULL;
}

/* Detach the device backend: its resident copies dropped (not flushed: a
 * ctx being freed may outlive the host ranges), then the device closed. */
static void
kern_ctx_close_backend(struct kern_ctx *ctx)
{
	if (ctx->res) {
		kern_res_end(ctx, ctx->res, 0);
		kern_res_free(ctx->res);
		ctx->res = NULL;
	}
	if (ctx->backend)
		ctx->backend->close(ctx->dev);
	ctx->backend = NULL;
	ctx->dev = NULL;
}

int
kern_ctx_set_backend(struct kern_ctx *ctx, const char *name)
{
	const struct kern_dev_backend *b;
	void *dev = NULL;
	int rc;

	ctx->err[0] = '\0';
	if (!strcmp(name, "cpu")) {
		kern_ctx_close_backend(ctx);
		ctx->ops = kern_cpu_ops();
		return KERN_OK;
	}
	if (!strcmp(name, "simdev")) {
		b = kern_simdev_backend();
	} else if (!strcmp(name, "cuda")) {
		b = kern_cuda_backend();
		if (!b) {
			snprintf(ctx->err, sizeof(ctx->err),
			    "this build has no CUDA backend (built with CUDA=0 or without nvcc)");
			return KERN_ERR_NOBACKEND;
		}
	} else {
		snprintf(ctx->err, sizeof(ctx->err), "unknown backend '%s' (cpu, cuda, simdev)",
		    name);
		return KERN_ERR_NOBACKEND;
	}
	if (ctx->backend == b)
		return KERN_OK;
	rc = b->open(&dev, ctx->err, sizeof(ctx->err));
	if (rc)
		return rc;
	kern_ctx_close_backend(ctx);
	ctx->backend = b;
	ctx->dev = dev;
	ctx->ops = b->ops;
	return KERN_OK;
}

const char *
kern_ctx_backend(const struct kern_ctx *ctx)
{
	return ctx->ops->name;
}

const char *
kern_ctx_error(const struct kern_ctx *ctx)
{
	return ctx->err;
}

void *
kern_ctx_dev(struct kern_ctx *ctx)
{
	return ctx->dev;
}

int
kern_ctx_is_exact(const struct kern_ctx *ctx)
{
	return ctx->exact;
}

void
kern_ctx_set_error(struct kern_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
}

const char *
kern_strerror(int err)
{
	switch (err) {
	case KERN_OK: return "ok";
	case KERN_ERR_NOMEM: return "out of memory";
	case KERN_ERR_TYPE: return "tensor type not supported by this operation";
	case KERN_ERR_SHAPE: return "tensor shapes do not fit";
	case KERN_ERR_THREAD: return "cannot start threads";
	case KERN_ERR_NODEV: return "no device for this backend";
	case KERN_ERR_DEVICE: return "device call failed";
	case KERN_ERR_NOBACKEND: return "backend not available in this build";
	default: return "unknown kernel error";
	}
}

struct kern_res *
kern_ctx_res(struct kern_ctx *ctx)
{
	return ctx->res;
}

int
kern_ctx_resident_add(struct kern_ctx *ctx, void *p, size_t bytes)
{
	if (!ctx->backend || !ctx->backend->mem)
		return KERN_OK; /* the host's copy is the only one */
	return kern_res_add(ctx, &ctx->res, ctx->backend->mem, ctx->dev, p, bytes);
}

int
kern_ctx_host_sync(struct kern_ctx *ctx, const void *p, size_t bytes, int write)
{
	return ctx->res ? kern_res_host(ctx, ctx->res, p, bytes, write) : KERN_OK;
}

int
kern_ctx_resident_end(struct kern_ctx *ctx)
{
	return ctx->res ? kern_res_end(ctx, ctx->res, 1) : KERN_OK;
}
