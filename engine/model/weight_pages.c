/*
 * weight_pages.c: the weights a decode step streams (every layer's seven
 * matrices and the output projection) copied out of the file's map into
 * private memory on 2 MiB pages.
 *
 * Decode reads the whole model per token (0.98 GB on Qwen2.5-1.5B Q4_K_M)
 * and is bound by memory.  Through the map every 4 KiB page costs a TLB
 * miss and a page walk; on 2 MiB pages the 1.5B decoded 19.7-20.0 against
 * 18.6-18.8 tok/s on the 2-core Sapphire Rapids VM, the same binary taking
 * turns (bench/RESULTS.md).  The price: the copy is the process's own
 * memory (the map's pages were the page cache's, shared with other
 * processes), and ~0.3 s at open.  $KVSNAP_MMAP=1 keeps the weights in the map; so
 * does a kernel without transparent huge pages, a model whose streamed
 * weights are under one huge page, and a failed allocation (slower, not
 * wrong).  The token embedding stays in the map unless the output is tied
 * to it: a token reads one row of it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/model/model.h"
#include "engine/model/weight_pages.h"

#define WP_HUGE ((size_t)2 << 20)
#define WP_ALIGN 64 /* each matrix's start, as a cache line */
#define WP_LAYER_MATS 7

/* The i-th matrix to copy: 0 the output projection, then each layer's. */
static struct kern_mat *
wp_mat(struct eng_model *m, int i)
{
	struct eng_layer *L;

	if (i == 0)
		return &m->output;
	L = &m->layers[(i - 1) / WP_LAYER_MATS];
	switch ((i - 1) % WP_LAYER_MATS) {
	case 0: return &L->wq;
	case 1: return &L->wk;
	case 2: return &L->wv;
	case 3: return &L->wo;
	case 4: return &L->w_gate;
	case 5: return &L->w_up;
	default: return &L->w_down;
	}
}

static size_t
wp_mat_bytes(const struct kern_mat *w)
{
	return (size_t)w->rows * w->row_bytes;
}

/* Its room in the copy: the next one starts on a cache line */
static size_t
wp_mat_room(const struct kern_mat *w)
{
	return (wp_mat_bytes(w) + WP_ALIGN - 1) & ~(size_t)(WP_ALIGN - 1);
}

/* Whether to copy at all: not asked to keep the map, and the kernel hands
 * out transparent huge pages ("always" or "madvise"). */
static int
wp_wanted(void)
{
	const char *e = getenv("KVSNAP_MMAP");
	char buf[96];
	size_t n;
	FILE *f;

	if (e && *e && strcmp(e, "0"))
		return 0;
	if (!(f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0 && !strstr(buf, "[never]");
}

/* [base, base + len) on 2 MiB boundaries, asked for huge pages; NULL when
 * the memory is not there. */
static uint8_t *
wp_alloc(size_t len)
{
	size_t span = len + WP_HUGE;
	uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *base;

	if (raw == MAP_FAILED)
		return NULL;
	base = (uint8_t *)(((uintptr_t)raw + WP_HUGE - 1) & ~(uintptr_t)(WP_HUGE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	munmap(base + len, (size_t)(raw + span - (base + len)));
	/* a kernel that refuses it still gives memory: slower, not wrong */
	(void)madvise(base, len, MADV_HUGEPAGE);
	return base;
}

int
model_weights_to_pages(struct eng_model *m, char *why, size_t why_len)
{
	int n = 1 + WP_LAYER_MATS * m->hp.n_layer, i, rc;
	const void *tied = m->tok_embd.data == m->output.data ? m->output.data : NULL;
	size_t bytes = 0, len, at = 0;
	uint8_t *base;

	if (!wp_wanted())
		return 0;
	for (i = 0; i < n; i++)
		bytes += wp_mat_room(wp_mat(m, i));
	/* tensors of a hostile file may share their bytes: never more memory
	 * than the file's size */
	if (bytes < WP_HUGE || bytes > m->gguf->size)
		return 0;
	len = (bytes + WP_HUGE - 1) & ~(WP_HUGE - 1);
	if (!(base = wp_alloc(len)))
		return 0;
	for (i = 0; i < n; i++) {
		struct kern_mat *w = wp_mat(m, i);
		size_t room = wp_mat_room(w);
		if ((rc = eng_gguf_read(m->gguf, w->data, wp_mat_bytes(w), base + at))) {
			munmap(base, len);
			return eng_fail(why, why_len, rc,
			    "cannot read the model's weights (was the file changed since it was opened?)");
		}
		w->data = base + at;
		at += room;
	}
	if (tied)
		m->tok_embd.data = m->output.data;
	(void)mprotect(base, len, PROT_READ); /* the weights are never written */
	m->pages = base;
	m->pages_bytes = len;
	return 0;
}

void
model_weights_pages_free(struct eng_model *m)
{
	if (m->pages)
		munmap(m->pages, m->pages_bytes);
	m->pages = NULL;
	m->pages_bytes = 0;
}
