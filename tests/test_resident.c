/*
 * test_resident.c: device residency (kernels.h, kernels/resident.c) on the
 * simulated device (kernels/simdev/): an op writes a resident range's device
 * copy and the host's pages go stale (0xff bytes) page by page, the host's
 * pages it did not write keep their bytes; kern_ctx_host_sync brings them
 * back (read) or makes the device reload them (write); the end flushes every
 * newer page; overlapping ranges and operands that leave their range are
 * refused; and on the CPU all of it does nothing.  With the model: a
 * question (prefill and decode) run resident on the simulated device gives
 * the CPU's logits and pool bit for bit, and writes one result to host
 * memory per forward pass, its logits (on a GPU the one wait of a step).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "kernels/resident.h"
#include "tests/tap.h"

#define RS_N ((int64_t)(3 * KERN_RES_PAGE / sizeof(float)) + 100) /* 3 pages and a part */
#define RS_PAGE_F ((int64_t)(KERN_RES_PAGE / sizeof(float)))

static int
rs_stale(const float *p)
{
	uint32_t u;
	memcpy(&u, p, 4);
	return u == 0xffffffffu;
}

/* A resident range a of RS_N floats a[i] = i on the simulated device. */
static int
rs_setup(struct kern_ctx **k, float **a, float **b)
{
	int64_t i;
	*a = malloc((size_t)RS_N * sizeof(float));
	*b = malloc((size_t)RS_N * sizeof(float));
	if (!*a || !*b || kern_ctx_init(k, 1) || kern_ctx_set_backend(*k, "simdev"))
		return -1;
	for (i = 0; i < RS_N; i++) {
		(*a)[i] = (float)i;
		(*b)[i] = 1.0f;
	}
	return kern_ctx_resident_add(*k, *a, (size_t)RS_N * sizeof(float));
}

static enum tap_result
rs_done(struct kern_ctx *k, float *a, float *b, int ok)
{
	kern_ctx_free(k);
	free(a);
	free(b);
	return ok ? TAP_PASS : TAP_FAIL;
}

static enum tap_result
test_pages(void)
{
	struct kern_ctx *k = NULL;
	float *a = NULL, *b = NULL;
	int ok = 1;
	int64_t i;

	TAP_EXPECT(!rs_setup(&k, &a, &b), "setup");
	/* add 1 to 10 floats of page 1: page 1 goes stale, the rest not */
	TAP_EXPECT(!kern_ctx_ops(k)->add(k, a + RS_PAGE_F + 5, b, 10), "add");
	TAP_EXPECT(rs_stale(a + RS_PAGE_F) && rs_stale(a + 2 * RS_PAGE_F - 1), "page 1 stale");
	TAP_EXPECT(a[RS_PAGE_F - 1] == (float)(RS_PAGE_F - 1) && a[2 * RS_PAGE_F] ==
	    (float)(2 * RS_PAGE_F), "pages 0 and 2 kept");
	/* read back a part: the whole page returns, the sum done on the copy */
	TAP_EXPECT(!kern_ctx_host_sync(k, a + RS_PAGE_F + 7, 4, 0), "sync");
	for (i = RS_PAGE_F; i < 2 * RS_PAGE_F; i++) {
		float want = (float)i + (i >= RS_PAGE_F + 5 && i < RS_PAGE_F + 15 ? 1.0f : 0.0f);
		TAP_EXPECT(a[i] == want, "a[%lld] = %g, want %g", (long long)i, a[i], want);
	}
	/* a second op on the page, then the end: flushed, nothing stale */
	TAP_EXPECT(!kern_ctx_ops(k)->add(k, a + RS_N - 3, b, 3), "add at the end");
	TAP_EXPECT(rs_stale(a + RS_N - 1), "last page stale");
	TAP_EXPECT(!kern_ctx_resident_end(k), "end");
	for (i = 0; i < RS_N; i++) {
		float want = (float)i + ((i >= RS_PAGE_F + 5 && i < RS_PAGE_F + 15) ||
		    i >= RS_N - 3 ? 1.0f : 0.0f);
		TAP_EXPECT(a[i] == want, "after the end a[%lld] = %g, want %g", (long long)i, a[i],
		    want);
	}
out:
	return rs_done(k, a, b, ok);
}

/* A host write announced reaches the next op; one the device's newer page
 * then overwrites is the bug the announcement prevents. */
static enum tap_result
test_host_write(void)
{
	struct kern_ctx *k = NULL;
	float *a = NULL, *b = NULL, out[8];
	int ok = 1;
	int64_t i;

	TAP_EXPECT(!rs_setup(&k, &a, &b), "setup");
	TAP_EXPECT(!kern_ctx_ops(k)->add(k, a, b, 8), "add"); /* device copy of page 0 newer */
	TAP_EXPECT(!kern_ctx_host_sync(k, a, 8 * sizeof(float), 1), "sync for a write");
	for (i = 0; i < 8; i++) {
		TAP_EXPECT(a[i] == (float)i + 1.0f, "the write sync reads first: a[%lld] = %g",
		    (long long)i, a[i]);
		a[i] = 100.0f + (float)i;
	}
	/* copy_rows to an unregistered buffer: the device reloads page 0 */
	TAP_EXPECT(!kern_ctx_ops(k)->copy_rows(k, out, 0, a, 0, 1, 8), "copy");
	for (i = 0; i < 8; i++)
		TAP_EXPECT(out[i] == 100.0f + (float)i, "out[%lld] = %g", (long long)i, out[i]);
	/* strided rows into the range: rows 0, 2, 4 of width 3 */
	TAP_EXPECT(!kern_ctx_ops(k)->copy_rows(k, a + 2 * RS_PAGE_F, 6, out, 2, 3, 3), "rows");
	TAP_EXPECT(!kern_ctx_host_sync(k, a + 2 * RS_PAGE_F, 64, 0), "sync");
	TAP_EXPECT(a[2 * RS_PAGE_F] == 100.0f && a[2 * RS_PAGE_F + 2] == 102.0f &&
	    a[2 * RS_PAGE_F + 3] == (float)(2 * RS_PAGE_F + 3) && a[2 * RS_PAGE_F + 6] == 102.0f &&
	    a[2 * RS_PAGE_F + 14] == 106.0f, "strided rows");
out:
	return rs_done(k, a, b, ok);
}

static enum tap_result
test_refused(void)
{
	struct kern_ctx *k = NULL;
	float *a = NULL, *b = NULL;
	int ok = 1, rc;

	TAP_EXPECT(!rs_setup(&k, &a, &b), "setup");
	rc = kern_ctx_resident_add(k, a + 10, 16);
	TAP_EXPECT(rc == KERN_ERR_SHAPE, "an overlapping range: rc %d", rc);
	rc = kern_ctx_ops(k)->add(k, a + RS_N - 4, b, 8);
	TAP_EXPECT(rc == KERN_ERR_SHAPE && strstr(kern_ctx_error(k), "leave"),
	    "an operand past the range's end: rc %d (%s)", rc, kern_ctx_error(k));
	TAP_EXPECT(a[RS_N - 1] == (float)(RS_N - 1), "and nothing written");
out:
	return rs_done(k, a, b, ok); /* resident ranges dropped with the device */
}

static enum tap_result
test_cpu_nothing(void)
{
	struct kern_ctx *k = NULL;
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 1, 1, 1 };
	int ok = 1;

	TAP_EXPECT(!kern_ctx_init(&k, 1), "ctx");
	TAP_EXPECT(!kern_ctx_resident_add(k, a, sizeof(a)), "add");
	TAP_EXPECT(!kern_ctx_ops(k)->add(k, a, b, 4), "op");
	TAP_EXPECT(a[0] == 2.0f && a[3] == 5.0f, "written on the host: %g %g", a[0], a[3]);
	TAP_EXPECT(!kern_ctx_host_sync(k, a, sizeof(a), 0) && !kern_ctx_resident_end(k), "noop");
	TAP_EXPECT(a[0] == 2.0f && a[3] == 5.0f, "unchanged");
out:
	kern_ctx_free(k);
	return ok ? TAP_PASS : TAP_FAIL;
}

/* The same token stream through a ctx on the CPU and one on simdev: a
 * 64-token document outside residency, then a 16-token question and 8
 * greedy tokens inside it. */
static enum tap_result
test_question(void)
{
	struct eng_model *m = NULL;
	struct eng_ctx *c[2] = { NULL, NULL };
	struct eng_kv *kv[2] = { NULL, NULL };
	float *lg[2] = { NULL, NULL };
	int32_t ids[80], tok;
	char why[256];
	long before = -1, after = -1;
	int ok = 1, i, s, l, g, nv = 0;

	for (i = 0; i < 80; i++)
		ids[i] = 100 + (int32_t)((i * 7919u) % 40000u);
	TAP_EXPECT(!eng_model_open(&m, tap_model_path(), why, sizeof(why)), "model: %s", why);
	nv = (int)m->hp.n_vocab;
	for (s = 0; s < 2; s++) {
		TAP_EXPECT(!eng_use_backend(s ? "simdev" : "cpu", why, sizeof(why)), "%s", why);
		TAP_EXPECT(!eng_ctx_init(&c[s], m, 0, 64) && !eng_kv_init(&kv[s], m, 128) &&
		    (lg[s] = malloc((size_t)nv * sizeof(float))), "init");
		eng_ctx_set_exact(c[s], 1);
		TAP_EXPECT(!eng_forward(c[s], kv[s], ids, 64, NULL, lg[s]), "document");
	}
	eng_use_backend("cpu", NULL, 0);
	before = kern_simdev_host_results(eng_ctx_kern(c[1]));
	TAP_EXPECT(before == 0, "outside residency nothing is counted: %ld", before);
	for (s = 0; s < 2; s++)
		TAP_EXPECT(eng_ctx_resident_begin(c[s], kv[s]) == 1, "begin");
	for (i = 0; i < 9; i++) {
		for (s = 0; s < 2; s++) {
			tok = i ? (int32_t)(100 + i) : 0;
			TAP_EXPECT(!eng_forward(c[s], kv[s], i ? &tok : ids + 64, i ? 1 : 16, NULL,
			    lg[s]), "forward %d", i);
		}
		TAP_EXPECT(!memcmp(lg[0], lg[1], (size_t)nv * sizeof(float)),
		    "logits of pass %d differ from the CPU's", i);
	}
	after = kern_simdev_host_results(eng_ctx_kern(c[1]));
	TAP_EXPECT(after - before == 9, "results to the host in 9 passes: %ld", after - before);
	for (s = 0; s < 2; s++)
		TAP_EXPECT(!eng_ctx_resident_end(c[s]), "end");
	for (l = 0; l < m->hp.n_layer; l++)
		for (g = 0; g < m->hp.n_head_kv; g++) {
			const struct eng_kv_layer *a = &kv[0]->layer[l], *b = &kv[1]->layer[l];
			size_t off = (size_t)(a->off[g] * m->hp.head_dim) * sizeof(float);
			size_t n = (size_t)(a->len[g] * m->hp.head_dim) * sizeof(float);
			TAP_EXPECT(a->len[g] == 88 && b->len[g] == 88, "rows %lld",
			    (long long)b->len[g]);
			TAP_EXPECT(!memcmp((char *)a->k + off, (char *)b->k + off, n) &&
			    !memcmp((char *)a->kr + off, (char *)b->kr + off, n) &&
			    !memcmp((char *)a->v + off, (char *)b->v + off, n),
			    "layer %d head %d: the pool back on the host differs", l, g);
		}
out:
	eng_use_backend("cpu", NULL, 0);
	for (s = 0; s < 2; s++) {
		eng_ctx_free(c[s]);
		eng_kv_free(kv[s]);
		free(lg[s]);
	}
	eng_model_close(m);
	return ok ? TAP_PASS : TAP_FAIL;
}

static const struct tap_test tests[] = {
	{ "pages", test_pages },
	{ "host_write", test_host_write },
	{ "refused", test_refused },
	{ "cpu_nothing", test_cpu_nothing },
	{ "question", test_question },
};

TAP_MAIN(NULL, NULL)
