/*
 * ctx.h: the engine context a bench keeps across its runs (header-only:
 * each bench is one program), made anew only when a run needs longer
 * chunks than it was made for; bench_qa and bench_quality.
 */
#ifndef BENCH_CTX_H
#define BENCH_CTX_H

#include <stdint.h>

#include "engine/engine.h"

/* *ctx (its chunk size in *ctx_chunk) with chunks of at least `chunk`
 * tokens: the one there when it has them, else a new one of m on
 * `threads` threads; 0 or an ENG_ERR code. */
static inline int
bench_ctx_fit(struct eng_ctx **ctx, int64_t *ctx_chunk, const struct eng_model *m, int threads,
    int64_t chunk)
{
	if (*ctx && *ctx_chunk >= chunk)
		return 0;
	eng_ctx_free(*ctx);
	*ctx = NULL;
	*ctx_chunk = chunk;
	return eng_ctx_init(ctx, m, threads, chunk);
}

#endif /* BENCH_CTX_H */
