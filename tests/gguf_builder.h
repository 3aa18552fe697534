/*
 * gguf_builder.h: write small GGUF files in memory for tests and fuzz seeds.
 *
 * A growable byte buffer with typed appenders; the caller lays out the file
 * in GGUF order (header, metadata, tensor infos, padding, data).
 */
#ifndef TESTS_GGUF_BUILDER_H
#define TESTS_GGUF_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/helpers.h"

struct gb {
	uint8_t *p;
	size_t len, cap;
};

static inline void
gb_put(struct gb *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static inline void gb_u32(struct gb *b, uint32_t v) { gb_put(b, &v, 4); }
static inline void gb_u64(struct gb *b, uint64_t v) { gb_put(b, &v, 8); }
static inline void gb_f32(struct gb *b, float v) { gb_put(b, &v, 4); }

static inline void
gb_str(struct gb *b, const char *s)
{
	gb_u64(b, strlen(s));
	gb_put(b, s, strlen(s));
}

/* key + type + value helpers */
static inline void
gb_kv_u32(struct gb *b, const char *k, uint32_t v)
{
	gb_str(b, k);
	gb_u32(b, 4);
	gb_u32(b, v);
}

static inline void
gb_kv_f32(struct gb *b, const char *k, float v)
{
	gb_str(b, k);
	gb_u32(b, 6);
	gb_f32(b, v);
}

static inline void
gb_kv_str(struct gb *b, const char *k, const char *v)
{
	gb_str(b, k);
	gb_u32(b, 8);
	gb_str(b, v);
}

static inline void
gb_kv_bool(struct gb *b, const char *k, int v)
{
	uint8_t x = (uint8_t)(v != 0);
	gb_str(b, k);
	gb_u32(b, 7);
	gb_put(b, &x, 1);
}

/* Tensor info: name, dims, type, offset. */
static inline void
gb_tensor_info(struct gb *b, const char *name, int n_dims, const int64_t *ne, uint32_t type,
    uint64_t offset)
{
	int d;
	gb_str(b, name);
	gb_u32(b, (uint32_t)n_dims);
	for (d = 0; d < n_dims; d++)
		gb_u64(b, (uint64_t)ne[d]);
	gb_u32(b, type);
	gb_u64(b, offset);
}

static inline void
gb_align(struct gb *b, size_t a)
{
	static const uint8_t zero[64];
	while (b->len % a)
		gb_put(b, zero, a - b->len % a > 64 ? 64 : a - b->len % a);
}

/* Write the file to path and release the buffer; 0 or -1. */
static inline int
gb_save(struct gb *b, const char *path)
{
	int rc = th_write(path, b->p, b->len);
	free(b->p);
	b->p = NULL;
	return rc;
}

/* A tiny valid file: 3 metadata keys, 2 f32 tensors ("a" [4], "b" [8, 2]). */
static inline void
gb_tiny(struct gb *b)
{
	int64_t ne_a[1] = { 4 }, ne_b[2] = { 8, 2 };
	int i;
	gb_put(b, "GGUF", 4);
	gb_u32(b, 3);
	gb_u64(b, 2); /* tensors */
	gb_u64(b, 3); /* kv */
	gb_kv_str(b, "general.architecture", "test");
	gb_kv_u32(b, "test.n", 7);
	gb_kv_f32(b, "test.eps", 1e-5f);
	gb_tensor_info(b, "a", 1, ne_a, 0, 0);
	gb_tensor_info(b, "b", 2, ne_b, 0, 32);
	gb_align(b, 32);
	for (i = 0; i < 8; i++)
		gb_f32(b, (float)i); /* a: 4 floats + 16 bytes padding */
	for (i = 0; i < 16; i++)
		gb_f32(b, (float)(100 + i));
}

#endif /* TESTS_GGUF_BUILDER_H */
