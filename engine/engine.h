/*
 * engine.h: the public face of kvsnap's inference engine.
 *
 * Lifecycle: eng_model_open() maps a GGUF and borrows its weights;
 * eng_tok_init() builds the tokenizer from the same file; eng_kv_init()
 * allocates a KV cache for that model; eng_forward() runs any chunk of tokens
 * against a cache; eng_generate() decodes.  Close in reverse order.
 *
 * Errors: every function returns 0 or a negative enum eng_err and never
 * prints, exits or aborts on bad input.  Functions that can fail for reasons
 * a person must read take `char *why, size_t why_len` and write one line.
 *
 * Threads: a model is read-only after open and may be shared; a kv cache,
 * a tokenizer's scratch and a kern_ctx belong to one thread at a time.
 */
#ifndef ENGINE_H
#define ENGINE_H

/* The parts, each depending only on those before it. */
#include "engine/base.h"         /* status codes, failures, the clock */
#include "engine/model/model.h"  /* model, tokenizer, chat prompt */
#include "engine/cache/cache.h"  /* KV pool, policies, retaining heads, PoD maps */
#include "engine/run/run.h"      /* forward pass, ingest, generation */
#include "engine/train/train.h"  /* head training, PoD calibration */

#endif /* ENGINE_H */
