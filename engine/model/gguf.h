/*
 * gguf.h: a bounds-checked reader of GGUF v2/v3 files (mmap'd, read-only).
 *
 * File layout (little-endian; spec/model.md §1):
 *   1. magic "GGUF"            4 bytes
 *   2. version                 u32, 2 or 3
 *   3. tensor_count            u64
 *   4. kv_count                u64
 *   5. kv_count metadata       key (u64 len + bytes), u32 type, value
 *   6. tensor_count infos      name, u32 n_dims (<= 4), u64 ne[n_dims],
 *                              u32 type, u64 offset (from the data section)
 *   7. padding to ALIGNMENT    (general.alignment, default 32)
 *   8. tensor data
 *
 * Every count, length and offset is checked against the bytes present before
 * it is used; a file that lies gets an error, never an out-of-bounds read.
 * Strings point into the map and are NOT NUL-terminated: use (ptr, len).
 *
 * A struct eng_gguf is immutable after open and may be shared by threads.
 */
#ifndef ENGINE_GGUF_H
#define ENGINE_GGUF_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for uint64_t */

#include "kernels/kernels.h" /* for enum kern_type */

enum eng_gguf_vtype {
	ENG_GGUF_U8 = 0,
	ENG_GGUF_I8 = 1,
	ENG_GGUF_U16 = 2,
	ENG_GGUF_I16 = 3,
	ENG_GGUF_U32 = 4,
	ENG_GGUF_I32 = 5,
	ENG_GGUF_F32 = 6,
	ENG_GGUF_BOOL = 7,
	ENG_GGUF_STRING = 8,
	ENG_GGUF_ARRAY = 9,
	ENG_GGUF_U64 = 10,
	ENG_GGUF_I64 = 11,
	ENG_GGUF_F64 = 12
};

struct eng_gguf_str {
	const char *ptr; /* into the file; not NUL-terminated */
	size_t len;
};

struct eng_gguf_kv {
	struct eng_gguf_str key;
	enum eng_gguf_vtype type;
	/* scalars: the value's bytes; STRING: the string; ARRAY: see below */
	const uint8_t *val;
	struct eng_gguf_str str;
	enum eng_gguf_vtype arr_type; /* ARRAY only */
	uint64_t arr_n;               /* ARRAY only */
	const uint8_t *arr_data;      /* ARRAY only: first element */
};

struct eng_gguf_tensor {
	struct eng_gguf_str name;
	int n_dims;
	int64_t ne[4]; /* missing dims are 1 */
	enum kern_type type;
	uint64_t offset; /* from the data section */
	size_t n_bytes;
	const void *data; /* into the map */
};

struct eng_gguf {
	uint32_t version;
	uint64_t n_kv, n_tensors;
	struct eng_gguf_kv *kv;
	struct eng_gguf_tensor *tensors;
	size_t alignment;
	size_t data_offset;
	const uint8_t *base; /* the whole file */
	size_t size;
	int fd;      /* -1 when opened from memory */
	int mapped;  /* 1 when base must be munmap'd */
};

/* Open a file (mmap).  On error returns a negative enum eng_err and, if
 * why/why_len are given, writes a one-line human reason there. */
int eng_gguf_open(struct eng_gguf **out, const char *path, char *why, size_t why_len);
/* Parse a buffer in memory (borrowed; must outlive the handle). */
int eng_gguf_open_mem(struct eng_gguf **out, const void *buf, size_t len, char *why,
    size_t why_len);
void eng_gguf_close(struct eng_gguf *g);
/* Copy n bytes of the file, those at p inside it (a tensor's data), to dst:
 * from the file by pread when it was opened from one (the page cache copied
 * straight in, no page of the map touched), else from the buffer.  0, or
 * ENG_ERR_ARG for a range outside the file, ENG_ERR_IO for a failed or short
 * read (the file truncated since it was opened). */
int eng_gguf_read(const struct eng_gguf *g, const void *p, size_t n, void *dst);

/* Look-ups; NULL when absent. */
const struct eng_gguf_kv *eng_gguf_find_kv(const struct eng_gguf *g, const char *key);
const struct eng_gguf_tensor *eng_gguf_find_tensor(const struct eng_gguf *g,
    const char *name);

/* Typed getters: 0 on success, ENG_ERR_NOT_FOUND if absent, ENG_ERR_FORMAT if
 * the value has a type that does not convert (any integer width converts to
 * integer, f32/f64 to float). */
int eng_gguf_get_u64(const struct eng_gguf *g, const char *key, uint64_t *out);
int eng_gguf_get_f32(const struct eng_gguf *g, const char *key, float *out);
int eng_gguf_get_bool(const struct eng_gguf *g, const char *key, int *out);
int eng_gguf_get_str(const struct eng_gguf *g, const char *key, struct eng_gguf_str *out);
/* Array of strings: i-th element (bounds-checked walk; O(i) unless the caller
 * iterates with eng_gguf_str_array_next). */
int eng_gguf_get_array(const struct eng_gguf *g, const char *key,
    enum eng_gguf_vtype elem_type, const uint8_t **data, uint64_t *n);
/* Iterate a string array: *p starts at arr_data; returns 0 and advances, or
 * ENG_ERR_FORMAT past the end of the file. */
int eng_gguf_str_array_next(const struct eng_gguf *g, const uint8_t **p,
    struct eng_gguf_str *out);

/* 1 if s equals the C string c. */
int eng_gguf_str_eq(struct eng_gguf_str s, const char *c);

#endif /* ENGINE_GGUF_H */
