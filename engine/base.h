/*
 * base.h: what every part of the engine shares: status codes, the shape of a
 * failure that explains itself, the clock (engine/errors.c, engine/clock.c).
 */
#ifndef ENGINE_BASE_H
#define ENGINE_BASE_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for int32_t */

#include "common/fail.h"

/* Status codes (grouped by family in tens; never renumber). */
enum eng_err {
	ENG_OK = 0,
	ENG_ERR_NOMEM = -1,
	ENG_ERR_IO = -10,        /* open/stat/mmap failed */
	ENG_ERR_FORMAT = -11,    /* malformed or hostile file */
	ENG_ERR_VERSION = -12,   /* unsupported file version */
	ENG_ERR_NOT_FOUND = -13, /* key or tensor missing */
	ENG_ERR_ARCH = -20,      /* architecture we do not run */
	ENG_ERR_TYPE = -21,      /* unsupported tensor type */
	ENG_ERR_SHAPE = -22,     /* tensor shape does not fit the model */
	ENG_ERR_TOKENIZER = -23, /* tokenizer data missing or inconsistent */
	ENG_ERR_CONTEXT = -30,   /* more tokens than the context window */
	ENG_ERR_TOKEN = -31,     /* token id out of range */
	ENG_ERR_ARG = -32,       /* bad argument */
	ENG_ERR_CANCELLED = -33, /* a progress callback asked to stop */
	ENG_ERR_KERNEL = -40,    /* a kernel failed (see kern_strerror) */
	ENG_ERR_BACKEND = -41    /* the compute backend asked for is not usable */
};
const char *eng_strerror(int err);
/* Write a one-line human reason into why (when given) and return err: the
 * shape of every failure path that explains itself (common/fail.h). */
#define eng_fail kv_fail
/* Seconds on the monotonic clock (engine/clock.c): the one timer of the
 * engine, the daemon, the CLI, the benches and the tests. */
double eng_now(void);

#endif /* ENGINE_BASE_H */
