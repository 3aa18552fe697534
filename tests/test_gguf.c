/*
 * test_gguf.c: the GGUF reader on the real model (spec/model.md §9.4) and on
 * hostile files built in memory: every one is refused with an error, none is
 * read out of bounds (run under ASan with SAN=1).
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "tests/gguf_builder.h"
#include "tests/tap.h"

/* Parse buf[0..len) from an exact-size heap copy, so ASan sees overreads. */
static int
parse_copy(const uint8_t *buf, size_t len, char *why, size_t why_len)
{
	struct eng_gguf *g = NULL;
	uint8_t *copy = malloc(len ? len : 1);
	int rc;
	memcpy(copy, buf, len);
	rc = eng_gguf_open_mem(&g, copy, len, why, why_len);
	eng_gguf_close(g);
	free(copy);
	return rc;
}

static enum tap_result
test_real_model(void)
{
	struct eng_gguf *g = NULL;
	const struct eng_gguf_tensor *t, *last = NULL;
	struct eng_gguf_str s;
	const uint8_t *data;
	uint64_t n, i;
	int b, n_q41 = 0, n_q80 = 0, n_f32 = 0;
	char why[256] = "";

	TAP_CHECK(!eng_gguf_open(&g, tap_model_path(), why, sizeof(why)), "open: %s", why);
	TAP_CHECK(g->version == 3, "version %u", g->version);
	TAP_CHECK(g->n_tensors == 272, "tensors %llu", (unsigned long long)g->n_tensors);
	TAP_CHECK(!eng_gguf_get_str(g, "general.architecture", &s) && eng_gguf_str_eq(s, "llama"),
	    "architecture");
	TAP_CHECK(!eng_gguf_get_str(g, "tokenizer.ggml.pre", &s) && eng_gguf_str_eq(s, "smollm"),
	    "pre-tokenizer");
	TAP_CHECK(!eng_gguf_get_array(g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, &data, &n) &&
	    n == 49152, "tokens");
	TAP_CHECK(!eng_gguf_get_array(g, "tokenizer.ggml.merges", ENG_GGUF_STRING, &data, &n) &&
	    n == 48900, "merges");
	TAP_CHECK(!eng_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && b == 0, "add_bos");
	TAP_CHECK(!eng_gguf_find_tensor(g, "output.weight"), "no output.weight (tied)");
	for (i = 0; i < g->n_tensors; i++) {
		t = &g->tensors[i];
		n_q41 += t->type == KERN_TYPE_Q4_1;
		n_q80 += t->type == KERN_TYPE_Q8_0;
		n_f32 += t->type == KERN_TYPE_F32;
		if (!last || t->offset > last->offset)
			last = t;
	}
	TAP_CHECK(n_q41 == 210 && n_q80 == 1 && n_f32 == 61, "types %d/%d/%d", n_q41, n_q80, n_f32);
	t = eng_gguf_find_tensor(g, "token_embd.weight");
	TAP_CHECK(t && t->type == KERN_TYPE_Q8_0 && t->ne[0] == 576 && t->ne[1] == 49152, "embd");
	TAP_CHECK(g->data_offset + last->offset + last->n_bytes == g->size,
	    "data section + last tensor = file size");
	tap_diag("report: %s: %llu kv, %llu tensors, data at %zu, alignment %zu",
	    tap_model_path(), (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors,
	    g->data_offset, g->alignment);
	eng_gguf_close(g);
	return TAP_PASS;
}

static enum tap_result
test_tiny_valid(void)
{
	struct gb b = { 0 };
	struct eng_gguf *g = NULL;
	const struct eng_gguf_tensor *t;
	uint64_t v;
	float f;
	char why[256] = "";

	gb_tiny(&b);
	TAP_CHECK(!eng_gguf_open_mem(&g, b.p, b.len, why, sizeof(why)), "%s", why);
	TAP_CHECK(!eng_gguf_get_u64(g, "test.n", &v) && v == 7, "u32 kv");
	TAP_CHECK(!eng_gguf_get_f32(g, "test.eps", &f) && f == 1e-5f, "f32 kv");
	TAP_CHECK(eng_gguf_get_u64(g, "test.eps", &v) == ENG_ERR_FORMAT, "type mismatch");
	TAP_CHECK(eng_gguf_get_u64(g, "missing", &v) == ENG_ERR_NOT_FOUND, "missing key");
	t = eng_gguf_find_tensor(g, "b");
	TAP_CHECK(t && t->ne[0] == 8 && t->ne[1] == 2 && ((const float *)t->data)[0] == 100.0f,
	    "tensor b");
	eng_gguf_close(g);
	free(b.p);
	return TAP_PASS;
}

/* Every truncation of a valid file is refused (or, at full length, parsed). */
static enum tap_result
test_truncation(void)
{
	struct gb b = { 0 };
	size_t len;
	char why[256];

	gb_tiny(&b);
	for (len = 0; len < b.len; len++)
		TAP_CHECK(parse_copy(b.p, len, why, sizeof(why)) != 0, "truncated at %zu accepted",
		    len);
	TAP_CHECK(parse_copy(b.p, b.len, why, sizeof(why)) == 0, "full file refused: %s", why);
	free(b.p);
	return TAP_PASS;
}

/* Hand-made lies, each refused with a reason. */
static enum tap_result
test_hostile(void)
{
	struct gb b;
	char why[256];
	int64_t ne1[1] = { 4 }, ne5[5] = { 1, 1, 1, 1, 1 }, big[2] = { 32, INT64_MAX / 2 };
	int rc;

#define HOSTILE(label, build, expect_err)                                         \
	do {                                                                      \
		memset(&b, 0, sizeof(b));                                         \
		build;                                                            \
		why[0] = 0;                                                       \
		rc = parse_copy(b.p, b.len, why, sizeof(why));                    \
		tap_diag("%-28s -> %d %s", label, rc, why);                       \
		TAP_CHECK(rc == (expect_err), "%s: got %d (%s)", label, rc, why); \
		free(b.p);                                                        \
	} while (0)

	HOSTILE("bad magic", (gb_put(&b, "GGUX", 4), gb_u32(&b, 3), gb_u64(&b, 0), gb_u64(&b, 0)),
	    ENG_ERR_FORMAT);
	HOSTILE("version 1", (gb_put(&b, "GGUF", 4), gb_u32(&b, 1), gb_u64(&b, 0), gb_u64(&b, 0)),
	    ENG_ERR_VERSION);
	HOSTILE("big-endian", (gb_put(&b, "GGUF", 4), gb_u32(&b, 0x03000000), gb_u64(&b, 0),
	    gb_u64(&b, 0)), ENG_ERR_VERSION);
	HOSTILE("huge kv count", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, UINT64_MAX)), ENG_ERR_FORMAT);
	HOSTILE("huge tensor count", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3),
	    gb_u64(&b, UINT64_MAX / 3), gb_u64(&b, 0)), ENG_ERR_FORMAT);
	HOSTILE("string length lies", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_u64(&b, 1000), gb_put(&b, "abc", 3)), ENG_ERR_FORMAT);
	HOSTILE("string length 2^64-1", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_u64(&b, UINT64_MAX)), ENG_ERR_FORMAT);
	HOSTILE("unknown value type", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_str(&b, "k"), gb_u32(&b, 99), gb_u32(&b, 0)), ENG_ERR_FORMAT);
	HOSTILE("nested array", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_str(&b, "k"), gb_u32(&b, 9), gb_u32(&b, 9), gb_u64(&b, 1)),
	    ENG_ERR_FORMAT);
	HOSTILE("array count lies", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_str(&b, "k"), gb_u32(&b, 9), gb_u32(&b, 4),
	    gb_u64(&b, 1ull << 40), gb_u32(&b, 1)), ENG_ERR_FORMAT);
	HOSTILE("string array count lies", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_str(&b, "k"), gb_u32(&b, 9), gb_u32(&b, 8),
	    gb_u64(&b, 3), gb_str(&b, "x")), ENG_ERR_FORMAT);
	HOSTILE("duplicate key", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 2), gb_kv_u32(&b, "k", 1), gb_kv_u32(&b, "k", 2)), ENG_ERR_FORMAT);
	HOSTILE("bad alignment", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 0),
	    gb_u64(&b, 1), gb_kv_u32(&b, "general.alignment", 24)), ENG_ERR_FORMAT);
	HOSTILE("5 dims", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1), gb_u64(&b, 0),
	    gb_tensor_info(&b, "t", 5, ne5, 0, 0), gb_align(&b, 32)), ENG_ERR_FORMAT);
	HOSTILE("unknown tensor type", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1),
	    gb_u64(&b, 0), gb_tensor_info(&b, "t", 1, ne1, 77, 0), gb_align(&b, 32),
	    gb_put(&b, "0123456789abcdef", 16)), ENG_ERR_TYPE);
	HOSTILE("offset past end", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1),
	    gb_u64(&b, 0), gb_tensor_info(&b, "t", 1, ne1, 0, 1ull << 40), gb_align(&b, 32),
	    gb_put(&b, "0123456789abcdef", 16)), ENG_ERR_FORMAT);
	HOSTILE("size overflows", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1),
	    gb_u64(&b, 0), gb_tensor_info(&b, "t", 2, big, 2, 0), gb_align(&b, 32)),
	    ENG_ERR_FORMAT);
	HOSTILE("misaligned offset", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1),
	    gb_u64(&b, 0), gb_tensor_info(&b, "t", 1, ne1, 0, 4), gb_align(&b, 32),
	    gb_put(&b, "0123456789abcdef0123456789abcdef", 32)), ENG_ERR_FORMAT);
	HOSTILE("row not whole blocks", (gb_put(&b, "GGUF", 4), gb_u32(&b, 3), gb_u64(&b, 1),
	    gb_u64(&b, 0), gb_tensor_info(&b, "t", 1, ne1, 3, 0), gb_align(&b, 32),
	    gb_put(&b, "0123456789abcdef0123456789abcdef", 32)), ENG_ERR_FORMAT);
#undef HOSTILE
	return TAP_PASS;
}

/* Model-level refusals: another architecture, a missing file. */
static enum tap_result
test_model_refusals(void)
{
	struct eng_model *m = NULL;
	char why[256] = "", path[] = "/tmp/kvsnap-test-gguf-XXXXXX";
	struct gb b = { 0 };
	FILE *f;
	int fd, rc;

	rc = eng_model_open(&m, "/nonexistent/model.gguf", why, sizeof(why));
	tap_diag("missing file -> %s", why);
	TAP_CHECK(rc == ENG_ERR_IO && strstr(why, "/nonexistent/model.gguf"), "missing: %s", why);
	gb_tiny(&b); /* architecture "test" */
	fd = mkstemp(path);
	TAP_CHECK(fd >= 0, "mkstemp");
	f = fdopen(fd, "wb");
	fwrite(b.p, 1, b.len, f);
	fclose(f);
	rc = eng_model_open(&m, path, why, sizeof(why));
	unlink(path);
	free(b.p);
	tap_diag("other architecture -> %s", why);
	TAP_CHECK(rc == ENG_ERR_ARCH && strstr(why, "test"), "arch: %d %s", rc, why);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "real_model", test_real_model },
	{ "tiny_valid", test_tiny_valid },
	{ "truncation", test_truncation },
	{ "hostile", test_hostile },
	{ "model_refusals", test_model_refusals },
};

TAP_MAIN(NULL, NULL)
