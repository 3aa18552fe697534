/*
 * tok_bpe.c: the merge loop, shared by byte-level BPE and SentencePiece.
 *
 * Both of llama.cpp's tokenizers repeatedly merge the best adjacent pair of
 * symbols, using a priority queue with lazy invalidation: BPE ranks a pair
 * by its merge's index (lower first), SentencePiece by the score of the
 * token the pair spells (higher first; tok_spm.c turns scores into dense
 * ranks at load, so one order serves both).  Ties go to the leftmost pair in
 * both.  eng_tok_bpe() is BPE's word: map bytes through GPT-2's table,
 * merge, then look every symbol up (a symbol that is not a token falls back
 * to its single bytes, and bytes that are not tokens are dropped).
 */
#include <stdlib.h> /* for realloc */
#include <string.h> /* for memcpy */

#include "engine/model/tok_internal.h"

/* 1 if heap entry a pops before b: lower rank, then leftmost. */
static int
eng_tok_bigram_less(const struct eng_tok_bigram *a, const struct eng_tok_bigram *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

/* Rank of merging symbols l and r, or -1 when they do not merge. */
static int32_t
eng_tok_pair_rank(const struct eng_tok_enc *e, int32_t l, int32_t r)
{
	const struct eng_tok *t = e->t;
	const char *p = e->buf + e->sym[l].start;
	int32_t id;

	if (t->model == ENG_TOK_MODEL_BPE)
		return eng_tok_merge_rank(t, p, (size_t)e->sym[l].n, (size_t)e->sym[r].n);
	id = eng_tok_lookup(t, p, (size_t)e->sym[l].n + (size_t)e->sym[r].n);
	return id >= 0 ? t->spm_rank[id] : -1;
}

/* Push the pair (l, r) if it merges. */
static void
eng_tok_bigram_push(struct eng_tok_enc *e, int32_t l, int32_t r)
{
	struct eng_tok_bigram b, *h;
	int32_t rank;
	size_t i;

	if (l < 0 || r < 0)
		return;
	rank = eng_tok_pair_rank(e, l, r);
	if (rank < 0)
		return;
	if (e->heap_n == e->heap_cap) {
		size_t nc = e->heap_cap ? 2 * e->heap_cap : 64;
		h = realloc(e->heap, nc * sizeof(*h));
		if (!h) {
			e->err = ENG_ERR_NOMEM;
			return;
		}
		e->heap = h;
		e->heap_cap = nc;
	}
	b.rank = rank;
	b.left = l;
	b.size = e->sym[l].n + e->sym[r].n;
	h = e->heap;
	i = e->heap_n++;
	while (i > 0 && eng_tok_bigram_less(&b, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = b;
}

/* Pop the best pair into *out. */
static void
eng_tok_bigram_pop(struct eng_tok_enc *e, struct eng_tok_bigram *out)
{
	struct eng_tok_bigram *h = e->heap, last;
	size_t i = 0, n;

	*out = h[0];
	n = --e->heap_n;
	if (n == 0)
		return;
	last = h[n];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && eng_tok_bigram_less(&h[c + 1], &h[c]))
			c++;
		if (!eng_tok_bigram_less(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
}

/* Room for n_bytes of word buffer and as many symbols. */
int
eng_tok_reserve(struct eng_tok_enc *e, size_t n_bytes)
{
	if (n_bytes > e->buf_cap) {
		char *b = realloc(e->buf, n_bytes);
		if (!b)
			return ENG_ERR_NOMEM;
		e->buf = b;
		e->buf_cap = n_bytes;
	}
	if (n_bytes > e->sym_cap) {
		struct eng_tok_sym *s = realloc(e->sym, n_bytes * sizeof(*s));
		if (!s)
			return ENG_ERR_NOMEM;
		e->sym = s;
		e->sym_cap = n_bytes;
	}
	return 0;
}

/* Merge the symbols e->sym[0..ns) (ns >= 1, linked in order) until no
 * adjacent pair merges. */
void
eng_tok_merge(struct eng_tok_enc *e, int32_t ns)
{
	struct eng_tok_sym *sym = e->sym;
	struct eng_tok_bigram b;
	int32_t i;

	e->heap_n = 0;
	for (i = 1; i < ns; i++)
		eng_tok_bigram_push(e, i - 1, i);
	while (e->heap_n > 0 && !e->err) {
		struct eng_tok_sym *l, *r;
		eng_tok_bigram_pop(e, &b);
		l = &sym[b.left];
		/* stale unless both sides are unchanged: the left symbol only
		 * grows by absorbing its right neighbour, which either kills the
		 * pair or makes the summed length larger */
		if (l->n == 0 || l->next < 0)
			continue;
		r = &sym[l->next];
		if (l->n + r->n != b.size)
			continue;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			sym[r->next].prev = b.left;
		eng_tok_bigram_push(e, l->prev, b.left);
		eng_tok_bigram_push(e, b.left, l->next);
	}
}

/* Byte-map one pre-tokenized word, run BPE on it and emit its ids. */
void
eng_tok_bpe(struct eng_tok_enc *e, const uint32_t *cps, size_t n_cps)
{
	const struct eng_tok *t = e->t;
	struct eng_tok_sym *sym;
	int32_t ns = 0, i;
	size_t nb = 0, k, j;
	uint8_t u[4];

	if (e->err || n_cps == 0)
		return;
	/* 4 UTF-8 bytes per code point, each mapped to at most 2 */
	if ((e->err = eng_tok_reserve(e, n_cps * 8)) != 0)
		return;
	sym = e->sym;
	for (k = 0; k < n_cps; k++) {
		size_t m = eng_utf8_encode(cps[k], u);
		for (j = 0; j < m; j++) {
			const struct eng_tok_bytemap *bm = &t->map[u[j]];
			memcpy(e->buf + nb, bm->s, bm->n);
			sym[ns].start = (int32_t)nb;
			sym[ns].n = bm->n;
			sym[ns].prev = ns - 1;
			sym[ns].next = ns + 1;
			nb += bm->n;
			ns++;
		}
	}
	sym[ns - 1].next = -1;

	if (t->pre == ENG_TOK_PRE_LLAMA3) {
		/* llama.cpp's ignore_merges: a word that is a token is that token */
		int32_t whole = eng_tok_lookup(t, e->buf, nb);
		if (whole >= 0) {
			eng_tok_emit(e, whole);
			return;
		}
	}

	eng_tok_merge(e, ns);
	if (e->err)
		return;

	for (i = 0; i >= 0; i = sym[i].next) {
		const char *p = e->buf + sym[i].start;
		int32_t id = eng_tok_lookup(t, p, (size_t)sym[i].n);
		if (id >= 0) {
			eng_tok_emit(e, id);
			continue;
		}
		for (j = 0; j < (size_t)sym[i].n; j++) /* byte fallback */
			if (t->byte_tok[(uint8_t)p[j]] >= 0)
				eng_tok_emit(e, t->byte_tok[(uint8_t)p[j]]);
	}
}
