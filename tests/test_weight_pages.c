/*
 * test_weight_pages.c: the streamed weights copied onto huge pages
 * (engine/model/weight_pages.c) on the real model: eng_gguf_read's bytes
 * are the map's, a range outside the file is refused and a file truncated
 * after it was opened is a read error, not a short copy; a model opened
 * with the copy points every streamed matrix into it, with the map's bytes
 * (the tied token embedding with them), one opened with $KVSNAP_MMAP=1
 * into the map, and both give the same logits bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tests/forward_logits.h"
#include "tests/helpers.h"
#include "tests/tap.h"

/* Whether this kernel hands out transparent huge pages: the copy is made
 * only then. */
static int
thp_available(void)
{
	char buf[96];
	size_t n;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0 && !strstr(buf, "[never]");
}

static enum tap_result
test_read(void)
{
	char path[256], why[256] = "";
	size_t len = 0;
	char *file = kv_slurp(tap_model_path(), 0, &len);
	uint8_t *buf = NULL;
	struct eng_gguf *g = NULL;
	const struct eng_gguf_tensor *t;
	int ok = 1;

	TAP_CHECK(file && !th_tmp(path, sizeof(path), "wpages") && !th_write(path, file, len),
	    "a copy of the model");
	TAP_EXPECT(!eng_gguf_open(&g, path, why, sizeof(why)), "open: %s", why);
	t = eng_gguf_find_tensor(g, "blk.29.ffn_down.weight");
	TAP_EXPECT(t && (buf = malloc(t->n_bytes)), "the last layer's ffn_down");
	TAP_EXPECT(!eng_gguf_read(g, t->data, t->n_bytes, buf) && !memcmp(buf, t->data, t->n_bytes),
	    "read: the map's bytes");
	TAP_EXPECT(eng_gguf_read(g, g->base + g->size - 8, 16, buf) == ENG_ERR_ARG,
	    "a range past the end: refused");
	TAP_EXPECT(eng_gguf_read(g, file, 16, buf) == ENG_ERR_ARG, "a pointer outside the file: refused");
	TAP_EXPECT(!truncate(path, (off_t)(g->size / 2)), "truncated after the open");
	TAP_EXPECT(eng_gguf_read(g, t->data, t->n_bytes, buf) == ENG_ERR_IO,
	    "a read past the new end: an I/O error, not a short copy");
out:
	eng_gguf_close(g);
	unlink(path);
	free(buf);
	free(file);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* Whether every streamed matrix of m lies in [lo, lo + n) */
static int
mats_within(const struct eng_model *m, const void *lo, size_t n)
{
	const uint8_t *a = lo;
	int l;
#define IN(w) ((const uint8_t *)(w).data >= a && \
	(const uint8_t *)(w).data + (size_t)(w).rows * (w).row_bytes <= a + n)
	if (!IN(m->output))
		return 0;
	for (l = 0; l < m->hp.n_layer; l++) {
		const struct eng_layer *L = &m->layers[l];
		if (!IN(L->wq) || !IN(L->wk) || !IN(L->wv) || !IN(L->wo) || !IN(L->w_gate) ||
		    !IN(L->w_up) || !IN(L->w_down))
			return 0;
	}
#undef IN
	return 1;
}

/* Whether the streamed matrices of a and b hold the same bytes */
static int
mats_equal(const struct eng_model *a, const struct eng_model *b)
{
	int l;
#define EQ(f) (!memcmp(a->f.data, b->f.data, (size_t)a->f.rows * a->f.row_bytes))
	if (!EQ(output))
		return 0;
	for (l = 0; l < a->hp.n_layer; l++)
		if (!EQ(layers[l].wq) || !EQ(layers[l].wk) || !EQ(layers[l].wv) ||
		    !EQ(layers[l].wo) || !EQ(layers[l].w_gate) || !EQ(layers[l].w_up) ||
		    !EQ(layers[l].w_down))
			return 0;
#undef EQ
	return 1;
}

static enum tap_result
test_pages(void)
{
	struct eng_model *cp = NULL, *mp = NULL;
	const struct th_fwd o = { 2, 16, 16, 0, KERN_PREFILL_AUTO };
	enum { N = 16 };
	int32_t ids[N];
	float *la = NULL, *lb = NULL;
	char why[256] = "";
	int ok = 1, i, huge = thp_available();

	unsetenv("KVSNAP_MMAP");
	TAP_EXPECT(!eng_model_open(&cp, tap_model_path(), why, sizeof(why)), "open: %s", why);
	setenv("KVSNAP_MMAP", "1", 1);
	TAP_EXPECT(!eng_model_open(&mp, tap_model_path(), why, sizeof(why)), "open, KVSNAP_MMAP=1: %s",
	    why);
	unsetenv("KVSNAP_MMAP");
	if (huge) {
		TAP_EXPECT(cp->pages && cp->pages_bytes % (2u << 20) == 0 &&
		    (uintptr_t)cp->pages % (2u << 20) == 0, "a copy on 2 MiB boundaries");
		TAP_EXPECT(mats_within(cp, cp->pages, cp->pages_bytes), "every streamed matrix in it");
		/* SmolLM2's output is its token embedding */
		TAP_EXPECT(cp->tok_embd.data == cp->output.data, "the tied embedding follows the output");
	} else {
		TAP_EXPECT(!cp->pages, "no transparent huge pages here: the weights stay in the map");
	}
	TAP_EXPECT(!mp->pages && mats_within(mp, mp->gguf->base, mp->gguf->size),
	    "KVSNAP_MMAP=1: every matrix in the map");
	TAP_EXPECT(mats_equal(cp, mp), "the copy holds the map's bytes");
	for (i = 0; i < N; i++)
		ids[i] = (int32_t)(1000 + 97 * i);
	la = malloc(sizeof(float) * N * (size_t)cp->hp.n_vocab);
	lb = malloc(sizeof(float) * N * (size_t)cp->hp.n_vocab);
	TAP_EXPECT(la && lb && !th_forward_logits(cp, ids, N, &o, la) &&
	    !th_forward_logits(mp, ids, N, &o, lb), "16 tokens through both");
	TAP_EXPECT(!memcmp(la, lb, sizeof(float) * N * (size_t)cp->hp.n_vocab),
	    "the same logits bit for bit");
out:
	free(la);
	free(lb);
	eng_model_close(cp);
	eng_model_close(mp);
	return ok ? TAP_PASS : TAP_FAIL;
}

static const struct tap_test tests[] = {
	{ "read", test_read },
	{ "pages", test_pages },
};

TAP_MAIN(NULL, NULL)
