/*
 * resident.c: the page table of a ctx's resident host ranges and their
 * device copies (resident.h).  Few ranges (the engine's op buffers and
 * three arrays a layer of its cache pool), so a list searched from the
 * last hit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/resident.h"

enum { RES_HOST = 0, RES_BOTH = 1, RES_DEV = 2 };

struct kern_res_range {
	uint8_t *h, *d; /* host range and its device copy (d ≡ h mod 64) */
	size_t n;
	void *base;      /* what mem->alloc returned */
	uint8_t *state;  /* (pages) RES_* */
};

struct kern_res {
	const struct kern_res_mem *mem;
	void *dev;
	struct kern_res_range *r;
	int n, cap, last;
};

static size_t
res_pages(size_t n)
{
	return (n + KERN_RES_PAGE - 1) / KERN_RES_PAGE;
}

/* The range holding h, or NULL. */
static struct kern_res_range *
res_find(struct kern_res *t, const void *h)
{
	const uint8_t *p = (const uint8_t *)h;
	int i;
	if (!t || !t->n)
		return NULL;
	for (i = 0; i < t->n; i++) {
		struct kern_res_range *r = &t->r[(t->last + i) % t->n];
		if (p >= r->h && p < r->h + r->n) {
			t->last = (t->last + i) % t->n;
			return r;
		}
	}
	return NULL;
}

/* Copy every page of [p0, p1] in state `from` one way (runs of such pages in
 * one call) and set them to `to`. */
static int
res_move(struct kern_ctx *ctx, struct kern_res *t, struct kern_res_range *r, size_t p0,
    size_t p1, int from, int to, int to_device)
{
	size_t p = p0;
	while (p <= p1) {
		size_t q, off, end;
		int rc;
		if (r->state[p] != from) {
			p++;
			continue;
		}
		for (q = p; q + 1 <= p1 && r->state[q + 1] == from; q++)
			;
		off = p * KERN_RES_PAGE;
		end = (q + 1) * KERN_RES_PAGE < r->n ? (q + 1) * KERN_RES_PAGE : r->n;
		rc = to_device ? t->mem->h2d(t->dev, r->d + off, r->h + off, end - off) :
				 t->mem->d2h(t->dev, r->h + off, r->d + off, end - off);
		if (rc) {
			kern_ctx_set_error(ctx, "resident range: a %s copy of %zu bytes failed",
			    to_device ? "host-to-device" : "device-to-host", end - off);
			return KERN_ERR_DEVICE;
		}
		memset(r->state + p, to, q - p + 1);
		p = q + 1;
	}
	return KERN_OK;
}

/* The range of [h, h + n) and its pages, or a kern_err when it leaves it. */
static int
res_span(struct kern_ctx *ctx, struct kern_res_range *r, const void *h, size_t n, size_t *p0,
    size_t *p1)
{
	size_t off = (size_t)((const uint8_t *)h - r->h);
	if (n > r->n - off) {
		kern_ctx_set_error(ctx, "resident range: %zu bytes at offset %zu leave a range of %zu",
		    n, off, r->n);
		return KERN_ERR_SHAPE;
	}
	*p0 = off / KERN_RES_PAGE;
	*p1 = (off + (n ? n - 1 : 0)) / KERN_RES_PAGE;
	return KERN_OK;
}

int
kern_res_in(struct kern_ctx *ctx, const void *h, size_t n, void **d)
{
	struct kern_res *t = kern_ctx_res(ctx);
	struct kern_res_range *r = res_find(t, h);
	size_t p0, p1;
	int rc;

	*d = NULL;
	if (!r)
		return 0;
	if ((rc = res_span(ctx, r, h, n, &p0, &p1)) ||
	    (rc = res_move(ctx, t, r, p0, p1, RES_HOST, RES_BOTH, 1)))
		return rc;
	*d = r->d + ((const uint8_t *)h - r->h);
	return 1;
}

int
kern_res_out(struct kern_ctx *ctx, void *h, size_t n, int whole, void **d)
{
	struct kern_res *t = kern_ctx_res(ctx);
	struct kern_res_range *r = res_find(t, h);
	size_t p0, p1, p, off, end;
	int rc;

	*d = NULL;
	if (!r)
		return 0;
	if ((rc = res_span(ctx, r, h, n, &p0, &p1)))
		return rc;
	off = (size_t)((uint8_t *)h - r->h);
	end = off + n;
	for (p = p0; p <= p1; p++) {
		size_t lo = p * KERN_RES_PAGE;
		size_t hi = lo + KERN_RES_PAGE < r->n ? lo + KERN_RES_PAGE : r->n;
		/* a page the op only partly writes needs the rest from the host */
		if (!(whole && off <= lo && end >= hi) &&
		    (rc = res_move(ctx, t, r, p, p, RES_HOST, RES_BOTH, 1)))
			return rc;
		if (r->state[p] != RES_DEV && t->mem->poison)
			memset(r->h + lo, 0xff, hi - lo);
		r->state[p] = RES_DEV;
	}
	*d = r->d + off;
	return 1;
}

int
kern_res_add(struct kern_ctx *ctx, struct kern_res **tp, const struct kern_res_mem *mem,
    void *dev, void *h, size_t n)
{
	struct kern_res *t = *tp;
	struct kern_res_range *r;
	int i;

	if (!n)
		return KERN_OK;
	if (!t) {
		if (!(t = (struct kern_res *)calloc(1, sizeof(*t))))
			return KERN_ERR_NOMEM;
		t->mem = mem;
		t->dev = dev;
		*tp = t;
	}
	for (i = 0; i < t->n; i++)
		if ((uint8_t *)h < t->r[i].h + t->r[i].n && t->r[i].h < (uint8_t *)h + n) {
			kern_ctx_set_error(ctx, "resident range: %zu bytes overlap a resident range", n);
			return KERN_ERR_SHAPE;
		}
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 32;
		struct kern_res_range *nr = (struct kern_res_range *)realloc(t->r,
		    (size_t)cap * sizeof(*nr));
		if (!nr)
			return KERN_ERR_NOMEM;
		t->r = nr;
		t->cap = cap;
	}
	r = &t->r[t->n];
	memset(r, 0, sizeof(*r));
	r->h = (uint8_t *)h;
	r->n = n;
	if (!(r->state = (uint8_t *)calloc(res_pages(n), 1)))
		return KERN_ERR_NOMEM;
	if (!(r->base = mem->alloc(dev, n + 64))) {
		free(r->state);
		kern_ctx_set_error(ctx, "resident range: cannot allocate %zu bytes on the device", n);
		return KERN_ERR_NOMEM;
	}
	/* the same alignment as the host's (64-byte aligned base) */
	r->d = (uint8_t *)r->base + ((uintptr_t)h & 63);
	t->n++;
	return KERN_OK;
}

int
kern_res_host(struct kern_ctx *ctx, struct kern_res *t, const void *h, size_t n, int write)
{
	struct kern_res_range *r = res_find(t, h);
	size_t p0, p1;
	int rc;

	if (!r)
		return KERN_OK; /* not resident: the host's copy is the only one */
	if ((rc = res_span(ctx, r, h, n, &p0, &p1)) ||
	    (rc = res_move(ctx, t, r, p0, p1, RES_DEV, RES_BOTH, 0)))
		return rc;
	if (write)
		memset(r->state + p0, RES_HOST, p1 - p0 + 1);
	return KERN_OK;
}

int
kern_res_end(struct kern_ctx *ctx, struct kern_res *t, int flush)
{
	int i, rc = KERN_OK;
	if (!t)
		return KERN_OK;
	for (i = 0; i < t->n; i++) {
		struct kern_res_range *r = &t->r[i];
		if (flush && !rc)
			rc = res_move(ctx, t, r, 0, res_pages(r->n) - 1, RES_DEV, RES_BOTH, 0);
		t->mem->free(t->dev, r->base);
		free(r->state);
	}
	t->n = 0;
	t->last = 0;
	return rc;
}

void
kern_res_free(struct kern_res *t)
{
	if (!t)
		return;
	free(t->r);
	free(t);
}

int
kern_res_ranges(const struct kern_res *t)
{
	return t ? t->n : 0;
}
