/*
 * gguf.c: bounds-checked GGUF reader (layout in gguf.h).
 *
 * The parser walks the header with a cursor that refuses to move past the end
 * of the buffer; every count is checked against the bytes that could possibly
 * hold it before anything is allocated, so a hostile file can neither read out
 * of bounds nor make us allocate more than a small multiple of its own size.
 */
#include "engine/model/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/base.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" read as little-endian u32 */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64 /* llama.cpp's limit on tensor names */

/* ------------------------------------------------------------------------ */
/* Cursor                                                                    */

struct gguf_cur {
	const uint8_t *p, *end;
};

/* Take n bytes from the cursor; NULL if fewer remain. */
static const uint8_t *
gguf_cur_take(struct gguf_cur *c, size_t n)
{
	const uint8_t *p = c->p;
	if ((size_t)(c->end - c->p) < n)
		return NULL;
	c->p += n;
	return p;
}

static int
gguf_cur_u32(struct gguf_cur *c, uint32_t *v)
{
	const uint8_t *p = gguf_cur_take(c, 4);
	if (!p)
		return -1;
	memcpy(v, p, 4);
	return 0;
}

static int
gguf_cur_u64(struct gguf_cur *c, uint64_t *v)
{
	const uint8_t *p = gguf_cur_take(c, 8);
	if (!p)
		return -1;
	memcpy(v, p, 8);
	return 0;
}

static int
gguf_cur_str(struct gguf_cur *c, struct eng_gguf_str *s)
{
	uint64_t len;
	const uint8_t *p;
	if (gguf_cur_u64(c, &len) || len > (uint64_t)(c->end - c->p))
		return -1;
	p = gguf_cur_take(c, (size_t)len);
	if (!p)
		return -1;
	s->ptr = (const char *)p;
	s->len = (size_t)len;
	return 0;
}

/* Size in bytes of one scalar of a metadata type; 0 for STRING/ARRAY/unknown. */
static size_t
gguf_scalar_size(uint32_t t)
{
	switch (t) {
	case ENG_GGUF_U8: case ENG_GGUF_I8: case ENG_GGUF_BOOL: return 1;
	case ENG_GGUF_U16: case ENG_GGUF_I16: return 2;
	case ENG_GGUF_U32: case ENG_GGUF_I32: case ENG_GGUF_F32: return 4;
	case ENG_GGUF_U64: case ENG_GGUF_I64: case ENG_GGUF_F64: return 8;
	default: return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */


/* Parse one metadata value of type t at the cursor into kv. */
static int
gguf_parse_value(struct gguf_cur *c, uint32_t t, struct eng_gguf_kv *kv)
{
	size_t sz;

	kv->type = (enum eng_gguf_vtype)t;
	if (t == ENG_GGUF_STRING)
		return gguf_cur_str(c, &kv->str);
	if (t == ENG_GGUF_ARRAY) {
		uint32_t et;
		uint64_t n, i;
		if (gguf_cur_u32(c, &et) || gguf_cur_u64(c, &n))
			return -1;
		kv->arr_type = (enum eng_gguf_vtype)et;
		kv->arr_n = n;
		kv->arr_data = c->p;
		if (et == ENG_GGUF_STRING) {
			struct eng_gguf_str s;
			/* each string needs at least its 8-byte length */
			if (n > (uint64_t)(c->end - c->p) / 8)
				return -1;
			for (i = 0; i < n; i++)
				if (gguf_cur_str(c, &s))
					return -1;
			return 0;
		}
		sz = gguf_scalar_size(et);
		if (!sz || n > (uint64_t)(c->end - c->p) / sz)
			return -1; /* nested arrays and unknown types are rejected */
		return gguf_cur_take(c, (size_t)n * sz) ? 0 : -1;
	}
	sz = gguf_scalar_size(t);
	if (!sz)
		return -1;
	kv->val = gguf_cur_take(c, sz);
	return kv->val ? 0 : -1;
}

static int
gguf_str_eq_str(struct eng_gguf_str a, struct eng_gguf_str b)
{
	return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

/* Parse the whole header of g->base[0..g->size). */
static int
gguf_parse(struct eng_gguf *g, char *why, size_t why_len)
{
	struct gguf_cur c = { g->base, g->base + g->size };
	uint32_t magic, u32;
	uint64_t i, j, data_size;
	const struct eng_gguf_kv *akv;

	if (gguf_cur_u32(&c, &magic) || magic != GGUF_MAGIC)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "not a GGUF file (bad magic)");
	if (gguf_cur_u32(&c, &g->version))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "truncated GGUF header");
	if (g->version == 0x03000000u || g->version == 0x02000000u)
		return eng_fail(why, why_len, ENG_ERR_VERSION,
		    "big-endian GGUF files are not supported");
	if (g->version != 2 && g->version != 3)
		return eng_fail(why, why_len, ENG_ERR_VERSION,
		    "unsupported GGUF version %u (need 2 or 3)", g->version);
	if (gguf_cur_u64(&c, &g->n_tensors) || gguf_cur_u64(&c, &g->n_kv))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "truncated GGUF header");

	/* A kv record needs >= 12 bytes (key length + type); a tensor info
	 * >= 28 (name length, n_dims, one dim, type, offset). */
	if (g->n_kv > (uint64_t)(c.end - c.p) / 12)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "metadata count %llu does not fit in the file",
		    (unsigned long long)g->n_kv);
	if (g->n_tensors > (uint64_t)(c.end - c.p) / 28)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "tensor count %llu does not fit in the file",
		    (unsigned long long)g->n_tensors);

	g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof(*g->kv));
	g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof(*g->tensors));
	if (!g->kv || !g->tensors)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");

	for (i = 0; i < g->n_kv; i++) {
		struct eng_gguf_kv *kv = &g->kv[i];
		if (gguf_cur_str(&c, &kv->key) || gguf_cur_u32(&c, &u32))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "metadata record %llu is truncated", (unsigned long long)i);
		if (gguf_parse_value(&c, u32, kv))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "metadata '%.*s' has a bad type (%u) or is truncated",
			    (int)(kv->key.len > 80 ? 80 : kv->key.len), kv->key.ptr, u32);
	}
	/* Duplicate keys are an error (as in llama.cpp).  Quadratic, but n_kv is
	 * small in real files and bounded by the file size in hostile ones. */
	if (g->n_kv <= 4096)
		for (i = 0; i < g->n_kv; i++)
			for (j = i + 1; j < g->n_kv; j++)
				if (gguf_str_eq_str(g->kv[i].key, g->kv[j].key))
					return eng_fail(why, why_len, ENG_ERR_FORMAT,
					    "duplicate metadata key '%.*s'",
					    (int)(g->kv[i].key.len > 80 ? 80 : g->kv[i].key.len),
					    g->kv[i].key.ptr);

	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	akv = eng_gguf_find_kv(g, "general.alignment");
	if (akv) {
		uint64_t a;
		if (eng_gguf_get_u64(g, "general.alignment", &a) || a == 0 || (a & (a - 1)) ||
		    a > 1u << 20)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "general.alignment must be a power of two");
		g->alignment = (size_t)a;
	}

	for (i = 0; i < g->n_tensors; i++) {
		struct eng_gguf_tensor *t = &g->tensors[i];
		uint32_t nd, type;
		int d;
		if (gguf_cur_str(&c, &t->name) || gguf_cur_u32(&c, &nd))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor info %llu is truncated", (unsigned long long)i);
		if (t->name.len >= GGUF_MAX_NAME)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor %llu has a name longer than %d bytes",
			    (unsigned long long)i, GGUF_MAX_NAME - 1);
		if (nd < 1 || nd > GGUF_MAX_DIMS)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor '%.*s' has %u dimensions", (int)t->name.len,
			    t->name.ptr, nd);
		t->n_dims = (int)nd;
		for (d = 0; d < GGUF_MAX_DIMS; d++)
			t->ne[d] = 1;
		for (d = 0; d < (int)nd; d++) {
			uint64_t ne;
			if (gguf_cur_u64(&c, &ne))
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "tensor info %llu is truncated", (unsigned long long)i);
			if (ne > (uint64_t)INT64_MAX)
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "tensor '%.*s' has a negative dimension",
				    (int)t->name.len, t->name.ptr);
			t->ne[d] = (int64_t)ne;
		}
		if (gguf_cur_u32(&c, &type) || gguf_cur_u64(&c, &t->offset))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor info %llu is truncated", (unsigned long long)i);
		t->type = (enum kern_type)type;
		for (j = 0; j < i; j++)
			if (gguf_str_eq_str(g->tensors[j].name, t->name))
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "duplicate tensor '%.*s'", (int)t->name.len, t->name.ptr);
	}

	/* Data section starts at the next multiple of the alignment. */
	{
		size_t off = (size_t)(c.p - g->base);
		size_t pad = (g->alignment - off % g->alignment) % g->alignment;
		/* a vocab-only file (no tensors) may end right after its metadata */
		if (g->n_tensors == 0 && pad > (size_t)(c.end - c.p))
			pad = (size_t)(c.end - c.p);
		if (pad > (size_t)(c.end - c.p))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "file ends before its tensor data");
		g->data_offset = off + pad;
	}
	data_size = g->size - g->data_offset;

	for (i = 0; i < g->n_tensors; i++) {
		struct eng_gguf_tensor *t = &g->tensors[i];
		int be = kern_type_block_elems(t->type);
		size_t row;
		uint64_t rows, bytes;
		if (!kern_type_is_weight(t->type))
			return eng_fail(why, why_len, ENG_ERR_TYPE,
			    "tensor '%.*s' has unsupported type %d", (int)t->name.len,
			    t->name.ptr, (int)t->type);
		if (t->ne[0] % be)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor '%.*s': row length %lld is not a multiple of the block size %d",
			    (int)t->name.len, t->name.ptr, (long long)t->ne[0], be);
		row = kern_type_row_bytes(t->type, t->ne[0]);
		/* rows = ne1*ne2*ne3 without overflow, then bytes = rows*row */
		rows = 1;
		for (j = 1; j < GGUF_MAX_DIMS; j++) {
			if (t->ne[j] != 0 && rows > UINT64_MAX / (uint64_t)t->ne[j])
				return eng_fail(why, why_len, ENG_ERR_FORMAT,
				    "tensor '%.*s' is impossibly large", (int)t->name.len,
				    t->name.ptr);
			rows *= (uint64_t)t->ne[j];
		}
		if (row && rows > UINT64_MAX / row)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor '%.*s' is impossibly large", (int)t->name.len, t->name.ptr);
		bytes = rows * row;
		if (t->offset % g->alignment)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor '%.*s' offset is not aligned", (int)t->name.len,
			    t->name.ptr);
		if (t->offset > data_size || bytes > data_size - t->offset)
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "tensor '%.*s' lies past the end of the file (truncated?)",
			    (int)t->name.len, t->name.ptr);
		t->n_bytes = (size_t)bytes;
		t->data = g->base + g->data_offset + t->offset;
	}
	return ENG_OK;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */

int
eng_gguf_open_mem(struct eng_gguf **out, const void *buf, size_t len, char *why,
    size_t why_len)
{
	struct eng_gguf *g;
	int rc;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	g->fd = -1;
	g->base = buf;
	g->size = len;
	rc = gguf_parse(g, why, why_len);
	if (rc) {
		eng_gguf_close(g);
		return rc;
	}
	*out = g;
	return ENG_OK;
}

int
eng_gguf_open(struct eng_gguf **out, const char *path, char *why, size_t why_len)
{
	struct eng_gguf *g = NULL;
	struct stat st;
	void *map;
	int fd, rc, saved;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot open %s: %s", path,
		    strerror(saved));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_IO, "%s is not a regular file", path);
	}
	if (st.st_size < 24) {
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "%s is too small to be a GGUF file", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		saved = errno;
		close(fd);
		return eng_fail(why, why_len, ENG_ERR_IO, "cannot map %s: %s", path,
		    strerror(saved));
	}
	rc = eng_gguf_open_mem(&g, map, (size_t)st.st_size, why, why_len);
	if (rc) {
		munmap(map, (size_t)st.st_size);
		close(fd);
		return rc;
	}
	g->fd = fd;
	g->mapped = 1;
	*out = g;
	return ENG_OK;
}

void
eng_gguf_close(struct eng_gguf *g)
{
	if (!g)
		return;
	if (g->mapped)
		munmap((void *)(uintptr_t)g->base, g->size);
	if (g->fd >= 0)
		close(g->fd);
	free(g->kv);
	free(g->tensors);
	free(g);
}

int
eng_gguf_read(const struct eng_gguf *g, const void *p, size_t n, void *dst)
{
	size_t off = (size_t)((const uint8_t *)p - g->base), done = 0;

	if ((const uint8_t *)p < g->base || off > g->size || n > g->size - off)
		return ENG_ERR_ARG;
	if (g->fd < 0) {
		memcpy(dst, p, n);
		return 0;
	}
	while (done < n) {
		ssize_t r = pread(g->fd, (uint8_t *)dst + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return ENG_ERR_IO;
		done += (size_t)r;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Look-ups                                                                  */

int
eng_gguf_str_eq(struct eng_gguf_str s, const char *c)
{
	size_t n = strlen(c);
	return s.len == n && memcmp(s.ptr, c, n) == 0;
}

const struct eng_gguf_kv *
eng_gguf_find_kv(const struct eng_gguf *g, const char *key)
{
	uint64_t i;
	for (i = 0; i < g->n_kv; i++)
		if (eng_gguf_str_eq(g->kv[i].key, key))
			return &g->kv[i];
	return NULL;
}

const struct eng_gguf_tensor *
eng_gguf_find_tensor(const struct eng_gguf *g, const char *name)
{
	uint64_t i;
	for (i = 0; i < g->n_tensors; i++)
		if (eng_gguf_str_eq(g->tensors[i].name, name))
			return &g->tensors[i];
	return NULL;
}

int
eng_gguf_get_u64(const struct eng_gguf *g, const char *key, uint64_t *out)
{
	const struct eng_gguf_kv *kv = eng_gguf_find_kv(g, key);
	uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;
	int8_t i8; int16_t i16; int32_t i32; int64_t i64;

	if (!kv)
		return ENG_ERR_NOT_FOUND;
	switch (kv->type) {
	case ENG_GGUF_U8: memcpy(&u8, kv->val, 1); *out = u8; return 0;
	case ENG_GGUF_U16: memcpy(&u16, kv->val, 2); *out = u16; return 0;
	case ENG_GGUF_U32: memcpy(&u32, kv->val, 4); *out = u32; return 0;
	case ENG_GGUF_U64: memcpy(&u64, kv->val, 8); *out = u64; return 0;
	case ENG_GGUF_I8: memcpy(&i8, kv->val, 1); i64 = i8; break;
	case ENG_GGUF_I16: memcpy(&i16, kv->val, 2); i64 = i16; break;
	case ENG_GGUF_I32: memcpy(&i32, kv->val, 4); i64 = i32; break;
	case ENG_GGUF_I64: memcpy(&i64, kv->val, 8); break;
	case ENG_GGUF_F32: case ENG_GGUF_BOOL: case ENG_GGUF_STRING:
	case ENG_GGUF_ARRAY: case ENG_GGUF_F64:
	default:
		return ENG_ERR_FORMAT;
	}
	if (i64 < 0)
		return ENG_ERR_FORMAT;
	*out = (uint64_t)i64;
	return 0;
}

int
eng_gguf_get_f32(const struct eng_gguf *g, const char *key, float *out)
{
	const struct eng_gguf_kv *kv = eng_gguf_find_kv(g, key);
	double d;
	if (!kv)
		return ENG_ERR_NOT_FOUND;
	if (kv->type == ENG_GGUF_F32) {
		memcpy(out, kv->val, 4);
		return 0;
	}
	if (kv->type == ENG_GGUF_F64) {
		memcpy(&d, kv->val, 8);
		*out = (float)d;
		return 0;
	}
	return ENG_ERR_FORMAT;
}

int
eng_gguf_get_bool(const struct eng_gguf *g, const char *key, int *out)
{
	const struct eng_gguf_kv *kv = eng_gguf_find_kv(g, key);
	if (!kv)
		return ENG_ERR_NOT_FOUND;
	if (kv->type != ENG_GGUF_BOOL)
		return ENG_ERR_FORMAT;
	*out = kv->val[0] != 0;
	return 0;
}

int
eng_gguf_get_str(const struct eng_gguf *g, const char *key, struct eng_gguf_str *out)
{
	const struct eng_gguf_kv *kv = eng_gguf_find_kv(g, key);
	if (!kv)
		return ENG_ERR_NOT_FOUND;
	if (kv->type != ENG_GGUF_STRING)
		return ENG_ERR_FORMAT;
	*out = kv->str;
	return 0;
}

int
eng_gguf_get_array(const struct eng_gguf *g, const char *key,
    enum eng_gguf_vtype elem_type, const uint8_t **data, uint64_t *n)
{
	const struct eng_gguf_kv *kv = eng_gguf_find_kv(g, key);
	if (!kv)
		return ENG_ERR_NOT_FOUND;
	if (kv->type != ENG_GGUF_ARRAY || kv->arr_type != elem_type)
		return ENG_ERR_FORMAT;
	*data = kv->arr_data;
	*n = kv->arr_n;
	return 0;
}

int
eng_gguf_str_array_next(const struct eng_gguf *g, const uint8_t **p,
    struct eng_gguf_str *out)
{
	struct gguf_cur c;
	if (*p < g->base || *p > g->base + g->size)
		return ENG_ERR_FORMAT;
	c.p = *p;
	c.end = g->base + g->size;
	if (gguf_cur_str(&c, out))
		return ENG_ERR_FORMAT;
	*p = c.p;
	return 0;
}
