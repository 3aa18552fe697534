/*
 * bench_quality.c: answer quality of the KV-cache eviction policies against
 * the full cache, question-agnostic as kvsnap uses them: the document is
 * ingested (chunked prefill with eviction) into a compressed cache first,
 * and only then does the question arrive.
 *
 * usage: bench_quality [-m GGUF] [-t THREADS] [--policies a,b,c] [--policy NAME:OPTS]
 *        [--lengths 2048,4096,8192] [--fractions 4,8,16,32] [--depths N] [--keys K]
 *        [--tasks passkey,multikey,fidelity] [--haystack noise|prose] [--chunk 512]
 *        [--seed S] [--heads PATH] [--pod-map PATH] [--quant fp16|q4|q4kc] [--prose FILE]
 *        [--resume JSONL] [--json] [-v] [--smoke]
 *
 * For every document length L, policy and budget fraction f (budget = n/f
 * units per KV head per layer, n the ingested tokens), one row:
 *   passkey   N documents of repeated noise with "The pass key is NNNNN…" at
 *             depths 0..100 %; ask, greedy-decode, count the digits found;
 *   multikey  one prose document holding K needles "One of the special magic
 *             numbers for <word> is: NNNNNNN." (RULER); ask for each word;
 *   fidelity  the 64 prose tokens that follow that document run on the
 *             compressed cache and on a full one: mean KL(full ‖ policy) of
 *             the next-token distributions and top-1 agreement.
 * Each document is ingested once per row; every question runs on that cache
 * and is then cut off again (the pool's per-head lengths and next position
 * are restored), so multikey and fidelity share one ingest.  The full-cache
 * reference for fidelity is a plain eng_forward, once per length; `full`
 * (the ceiling) is one row per length, not one per fraction.
 *
 * Texts and prompts are in bench/quality_data.h: the prose is the license
 * texts every Debian system has (--prose FILE for others), and a question is
 * the end of the user turn plus the start of the assistant's answer ("The
 * pass key is"), the form the 135M model answers with the full cache.  A
 * document is L tokens after the chat template, fewer where the template,
 * the question and its answer would pass the model's context window (8192
 * for SmolLM2: "8K" documents are ~8090 tokens).  Everything random (keys,
 * words, the prose start) comes from --seed.
 *
 * --quant Q answers every question from the cache as its snapshot would
 * hold it (the codec's round trip, snapshot/snapshot_io.h: fp16, q4, q4kc).
 *
 * Output: a table, or with --json one object per row (bench/quality.sh turns
 * them into the markdown table and bench/plot_quality.py into the plot).
 * Progress goes to stderr.  --resume skips rows already in a JSON file.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/ctx.h"
#include "bench/quality_data.h"
#include "common/rng.h" /* splitmix64: the only random source, so a seed fixes everything */
#include "engine/engine.h"
#include "snapshot/snapshot_io.h"

#define QUAL_MAX_LIST 16     /* lengths, fractions */
#define QUAL_MAX_POLICIES 32 /* policy specs */
#define QUAL_MAX_KEYS 16     /* multikey needles */
#define QUAL_MAX_DEPTHS 64   /* passkey documents per length */
#define QUAL_N_CONT 64       /* fidelity continuation tokens */
#define QUAL_GEN_PASSKEY 10  /* decoded tokens: " 12345." and some slack */
#define QUAL_GEN_MULTIKEY 14 /* " 1234567." and some slack */

#define QUAL_TASK_PASSKEY 0x1
#define QUAL_TASK_MULTIKEY 0x2
#define QUAL_TASK_FIDELITY 0x4

#define QUAL_SKIP 1 /* a row whose policy refuses the budget (reason in why) */

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

struct qual_opts {
	const char *model, *heads, *pod_map, *resume;
	int quant; /* -1, or the snapshot quantization each cache goes through */
	const char *prose[QUAL_MAX_LIST];
	int n_prose;
	int threads, chunk, depths, keys, tasks, json, verbose, prose_haystack;
	uint64_t seed;
	int lengths[QUAL_MAX_LIST], n_lengths;
	int fracs[QUAL_MAX_LIST], n_fracs;
	char *spec[QUAL_MAX_POLICIES]; /* "name" or "name:opts" */
	int n_spec;
};

/* Parse "a,b,c" positive integers into out[]; 0 on success. */
static int
qual_parse_ints(const char *s, int *out, int *n, int cap)
{
	char *end;
	long v;
	*n = 0;
	while (*s) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v <= 0 || v > 1 << 20 || *n == cap)
			return -1;
		out[(*n)++] = (int)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *n ? 0 : -1;
}

/* Add the comma-separated names of s as policy specs; 0 on success. */
static int
qual_add_policies(struct qual_opts *o, const char *s)
{
	const char *p = s;
	while (*p) {
		size_t len = strcspn(p, ",");
		if (len && o->n_spec < QUAL_MAX_POLICIES) {
			o->spec[o->n_spec] = strndup(p, len);
			if (!o->spec[o->n_spec++])
				return -1;
		} else if (len) {
			return -1;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

/* Parse "passkey,multikey,fidelity" into a QUAL_TASK_* mask. */
static int
qual_parse_tasks(const char *s)
{
	int mask = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		if (len == 7 && !strncmp(s, "passkey", 7))
			mask |= QUAL_TASK_PASSKEY;
		else if (len == 8 && !strncmp(s, "multikey", 8))
			mask |= QUAL_TASK_MULTIKEY;
		else if (len == 8 && !strncmp(s, "fidelity", 8))
			mask |= QUAL_TASK_FIDELITY;
		else if (len)
			return -1;
		s += len + (s[len] == ',');
	}
	return mask;
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

/* A growable token list. */
struct qual_ids {
	int32_t *v;
	int64_t n, cap;
};

/* Append ids[0..n) to a. */
static int
qual_ids_add(struct qual_ids *a, const int32_t *ids, int64_t n)
{
	if (a->n + n > a->cap) {
		int64_t cap = a->cap ? a->cap : 256;
		int32_t *v;
		while (cap < a->n + n)
			cap *= 2;
		v = realloc(a->v, (size_t)cap * sizeof(int32_t));
		if (!v)
			return ENG_ERR_NOMEM;
		a->v = v;
		a->cap = cap;
	}
	memcpy(a->v + a->n, ids, (size_t)n * sizeof(int32_t));
	a->n += n;
	return 0;
}

/* Tokenize text (control tokens parsed) into a fresh list. */
static int
qual_encode(const struct eng_tok *tok, const char *text, struct qual_ids *out)
{
	size_t len = strlen(text);
	int64_t n = eng_tok_encode(tok, text, len, 1, NULL, 0);
	memset(out, 0, sizeof(*out));
	if (n < 0)
		return (int)n;
	out->v = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
	if (!out->v)
		return ENG_ERR_NOMEM;
	out->cap = n ? n : 1;
	out->n = eng_tok_encode(tok, text, len, 1, out->v, out->cap);
	return out->n == n ? 0 : ENG_ERR_TOKENIZER;
}

/* Sentence starts of ids[0..n): sent[i] = 1 when token i begins with a space
 * and token i-1 ends a sentence, so a needle (" The pass key…") can go in
 * before token i exactly as the tokenizer would have split the joined text. */
static uint8_t *
qual_sentence_starts(const struct eng_tok *tok, const int32_t *ids, int64_t n)
{
	uint8_t *sent = calloc((size_t)n + 1, 1);
	char prev[64], cur[64];
	int lp = 0, lc;
	int64_t i;
	if (!sent)
		return NULL;
	for (i = 0; i < n; i++) {
		lc = eng_tok_decode(tok, ids[i], 0, cur, sizeof(cur));
		if (i > 0 && lc > 0 && lp > 0 && cur[0] == ' ' &&
		    (prev[lp - 1] == '.' || prev[lp - 1] == '?' || prev[lp - 1] == '!'))
			sent[i] = 1;
		memcpy(prev, cur, sizeof(prev));
		lp = lc > (int)sizeof(prev) ? (int)sizeof(prev) : lc;
	}
	sent[0] = sent[n] = 1;
	return sent;
}

/* The sentence start in [lo, hi] nearest to target (lo itself if none). */
static int64_t
qual_nearest_start(const uint8_t *sent, int64_t lo, int64_t hi, int64_t target)
{
	int64_t d;
	for (d = 0; target - d >= lo || target + d <= hi; d++) {
		if (target - d >= lo && target - d <= hi && sent[target - d])
			return target - d;
		if (target + d <= hi && target + d >= lo && sent[target + d])
			return target + d;
	}
	return lo;
}

/* Read a text file and reflow it: whitespace runs holding a blank line
 * become one paragraph break, other runs one space.  Appends to *buf. */
static int
qual_read_prose(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "r");
	int ch, nl = 0, sp = 0;
	size_t cap;
	char *b;
	if (!f)
		return -1;
	cap = *len + 4096;
	b = realloc(*buf, cap);
	if (!b)
		goto fail;
	*buf = b;
	if (*len) {
		memcpy(b + *len, "\n\n", 2);
		*len += 2;
	}
	while ((ch = fgetc(f)) != EOF) {
		if (ch == '\n') {
			nl++;
			continue;
		}
		if (ch == ' ' || ch == '\t' || ch == '\f' || ch == '\r') {
			sp = 1;
			continue;
		}
		if (*len + 4 > cap) {
			cap *= 2;
			b = realloc(*buf, cap);
			if (!b)
				goto fail;
			*buf = b;
		}
		if (*len && b[*len - 1] != '\n' && (nl || sp)) {
			if (nl >= 2) {
				b[(*len)++] = '\n';
				b[(*len)++] = '\n';
			} else {
				b[(*len)++] = ' ';
			}
		}
		nl = sp = 0;
		b[(*len)++] = (char)ch;
	}
	fclose(f);
	(*buf)[*len] = 0;
	return 0;
fail:
	fclose(f);
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                 */

/* One question on a document: its tokens and the digits that answer it. */
struct qual_query {
	struct qual_ids ids;
	char answer[16];
	int n_gen;
};

struct qual_doc {
	struct qual_ids ids;           /* template prefix + document */
	int is_prose;                  /* the multikey/fidelity document */
	double depth;                  /* passkey: where the needle went */
	struct qual_query q[QUAL_MAX_KEYS];
	int n_q;
	int32_t cont[QUAL_N_CONT];     /* prose: the tokens after the document */
	float *ref;                    /* (QUAL_N_CONT, n_vocab) full-cache logits */
};

/* Everything shared by the rows of one length. */
struct qual_len {
	int length;      /* nominal document tokens */
	int64_t n_ref;   /* ingested tokens the budgets are fractions of */
	struct qual_doc docs[QUAL_MAX_DEPTHS + 1];
	int n_docs;
};

struct qual_bench {
	struct qual_opts *o;
	struct eng_model *m;
	struct eng_tok *tok;
	struct eng_chat *chat;
	struct eng_ctx *ctx;
	int64_t ctx_chunk;
	int32_t n_vocab;
	struct qual_ids pre;    /* system turn + "<|im_start|>user\n" */
	struct qual_ids noise;  /* the passkey haystack */
	uint8_t *noise_sent;
	struct qual_ids prose;  /* the reflowed corpus */
	uint8_t *prose_sent;
	float *logits;          /* (QUAL_N_CONT, n_vocab) scratch */
	int64_t n_extra;        /* tokens appended after a document, at most */
	char why[512];
};

/* Build haystack[0..n_hay) of src with needles spliced in before sentence
 * starts nearest to the given depths (ascending), after the template. */
static int
qual_doc_splice(struct qual_bench *b, struct qual_doc *d, const int32_t *src,
    const uint8_t *sent, int64_t n_src, int64_t n_hay, const struct qual_ids *needle,
    const double *depth, int n_needle)
{
	int64_t at = 0, cut, i;
	int k, rc;
	/* end the haystack at a sentence start so it ends with a whole sentence */
	if (n_hay > n_src)
		n_hay = n_src;
	cut = n_hay;
	while (cut > 0 && !sent[cut])
		cut--;
	if (cut == 0)
		cut = n_hay;
	if ((rc = qual_ids_add(&d->ids, b->pre.v, b->pre.n)))
		return rc;
	for (k = 0; k < n_needle; k++) {
		int64_t lo = at, target = (int64_t)(depth[k] * (double)cut + 0.5);
		if (target < lo)
			target = lo;
		i = qual_nearest_start(sent, lo, cut, target);
		if ((rc = qual_ids_add(&d->ids, src + at, i - at)) ||
		    (rc = qual_ids_add(&d->ids, needle[k].v, needle[k].n)))
			return rc;
		at = i;
	}
	return qual_ids_add(&d->ids, src + at, cut - at);
}

/* Passkey document number `idx` of `n` at length n_doc: noise (or prose)
 * with the needle at depth idx/(n-1). */
static int
qual_doc_passkey(struct qual_bench *b, struct qual_doc *d, int idx, int n, int64_t n_doc,
    uint64_t seed)
{
	char text[256], key[16];
	struct qual_ids needle;
	const struct qual_ids *hay = b->o->prose_haystack ? &b->prose : &b->noise;
	const uint8_t *sent = b->o->prose_haystack ? b->prose_sent : b->noise_sent;
	uint64_t rng = seed;
	int rc;

	d->depth = n > 1 ? (double)idx / (n - 1) : 0.5;
	snprintf(key, sizeof(key), "%05u", (unsigned)(10000 + kv_splitmix64_next(&rng) % 90000));
	snprintf(text, sizeof(text), QUAL_PASSKEY_NEEDLE, key, key);
	if ((rc = qual_encode(b->tok, text, &needle)))
		return rc;
	rc = qual_doc_splice(b, d, hay->v, sent, hay->n, n_doc - needle.n, &needle, &d->depth, 1);
	free(needle.v);
	if (rc || (rc = qual_encode(b->tok, QUAL_PASSKEY_QUESTION, &d->q[0].ids)))
		return rc;
	memcpy(d->q[0].answer, key, sizeof(key));
	d->q[0].n_gen = QUAL_GEN_PASSKEY;
	d->n_q = 1;
	return 0;
}

/* The prose document: K multikey needles at depths (k+½)/K, words shuffled
 * by the seed, and the QUAL_N_CONT tokens that follow it in the corpus. */
static int
qual_doc_prose(struct qual_bench *b, struct qual_doc *d, int64_t n_doc, uint64_t seed)
{
	const int n_words = (int)(sizeof(qual_words) / sizeof(qual_words[0]));
	struct qual_ids needle[QUAL_MAX_KEYS];
	double depth[QUAL_MAX_KEYS];
	int word[QUAL_MAX_KEYS], K = b->o->tasks & QUAL_TASK_MULTIKEY ? b->o->keys : 0, k, j, rc = 0;
	int64_t n_hay = n_doc, start = 0, span, tail;
	uint64_t rng = seed;
	char text[512], num[16];

	memset(needle, 0, sizeof(needle));
	d->is_prose = 1;
	for (k = 0; k < K; k++) { /* distinct words */
		do {
			word[k] = (int)(kv_splitmix64_next(&rng) % (uint64_t)n_words);
			for (j = 0; j < k && word[j] != word[k]; j++)
				;
		} while (j < k);
	}
	for (k = 0; k < K; k++) {
		snprintf(num, sizeof(num), "%07u", (unsigned)(1000000 + kv_splitmix64_next(&rng) % 9000000));
		snprintf(text, sizeof(text), QUAL_MULTIKEY_NEEDLE, qual_words[word[k]], num);
		if ((rc = qual_encode(b->tok, text, &needle[k])))
			goto out;
		n_hay -= needle[k].n;
		depth[k] = (k + 0.5) / K;
		snprintf(text, sizeof(text), QUAL_MULTIKEY_QUESTION, qual_words[word[k]]);
		if ((rc = qual_encode(b->tok, text, &d->q[k].ids)))
			goto out;
		memcpy(d->q[k].answer, num, sizeof(num));
		d->q[k].n_gen = QUAL_GEN_MULTIKEY;
	}
	d->n_q = K;
	/* a seeded start in the corpus, at a sentence, leaving room for the tail */
	span = b->prose.n - n_hay - QUAL_N_CONT;
	if (span > 0)
		start = qual_nearest_start(b->prose_sent, 0, span, (int64_t)(kv_splitmix64_next(&rng) %
		    (uint64_t)span));
	rc = qual_doc_splice(b, d, b->prose.v + start, b->prose_sent + start, b->prose.n - start,
	    n_hay, needle, depth, K);
	if (rc)
		goto out;
	/* the continuation: the corpus right after the document's last token */
	tail = start + (d->ids.n - b->pre.n);
	for (k = 0; k < K; k++)
		tail -= needle[k].n;
	for (k = 0; k < QUAL_N_CONT; k++)
		d->cont[k] = b->prose.v[(tail + k) % b->prose.n];
out:
	for (k = 0; k < QUAL_MAX_KEYS; k++)
		free(needle[k].v);
	return rc;
}

/* Free a document and its questions; leaves it zeroed. */
static void
qual_doc_free(struct qual_doc *d)
{
	int k;
	free(d->ids.v);
	for (k = 0; k < QUAL_MAX_KEYS; k++)
		free(d->q[k].ids.v);
	free(d->ref);
	memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------------------ */
/* Running the model                                                         */

/* A ctx whose chunks hold at least `chunk` tokens. */
static int
qual_ctx(struct qual_bench *b, int64_t chunk)
{
	return bench_ctx_fit(&b->ctx, &b->ctx_chunk, b->m, b->o->threads, chunk);
}

/* The pool's fill after ingest, so a question can be cut off again. */
struct qual_mark {
	uint32_t next_pos;
	int64_t *len; /* (n_layer, n_head_kv) */
};

/* Record the fill of every head segment and the next position. */
static int
qual_mark_take(struct qual_mark *mk, const struct eng_kv *kv)
{
	int l, h;
	mk->len = malloc((size_t)kv->n_layer * (size_t)kv->n_head_kv * sizeof(int64_t));
	if (!mk->len)
		return ENG_ERR_NOMEM;
	mk->next_pos = kv->next_pos;
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			mk->len[l * kv->n_head_kv + h] = kv->layer[l].len[h];
	return 0;
}

/* Drop everything appended since the mark: the query path only appends at
 * the end of each head segment (engine.h), so this restores the cache. */
static void
qual_mark_restore(const struct qual_mark *mk, struct eng_kv *kv)
{
	int l, h;
	kv->next_pos = mk->next_pos;
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			kv->layer[l].len[h] = mk->len[l * kv->n_head_kv + h];
}

/* A reply being decoded. */
struct qual_gen {
	const struct eng_tok *tok;
	char text[256];
	size_t len;
};

/* Collect the reply; stop once it holds a whole number (the answer is
 * judged on the digits only, so decoding on would only cost time). */
static int
qual_gen_cb(void *arg, int32_t id)
{
	struct qual_gen *g = arg;
	int n = eng_tok_decode(g->tok, id, 0, g->text + g->len, sizeof(g->text) - 1 - g->len);
	size_t i;
	if (n > 0)
		g->len += (size_t)n;
	g->text[g->len] = 0;
	for (i = 0; i < g->len && (g->text[i] < '0' || g->text[i] > '9'); i++)
		;
	while (i < g->len && g->text[i] >= '0' && g->text[i] <= '9')
		i++;
	return i < g->len || g->len + 1 >= sizeof(g->text);
}

/* Ask q on the cache (then cut it off again): 1 if the answer's digits
 * appear in the greedy reply, 0 if not, negative on error. */
static int
qual_ask(struct qual_bench *b, struct eng_kv *kv, const struct qual_mark *mk,
    const struct qual_query *q, char *reply, size_t reply_cap)
{
	struct eng_sampler s;
	struct qual_gen g;
	int64_t n_out;
	int rc;
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	memset(&g, 0, sizeof(g));
	g.tok = b->tok;
	rc = eng_generate(b->ctx, kv, b->tok, q->ids.v, q->ids.n, q->n_gen, &s, qual_gen_cb, &g,
	    &n_out);
	qual_mark_restore(mk, kv);
	if (rc)
		return rc;
	if (reply)
		snprintf(reply, reply_cap, "%s", g.text);
	return strstr(g.text, q->answer) != NULL;
}

/* Run the continuation on the cache with logits for every token into out. */
static int
qual_continue(struct qual_bench *b, struct eng_kv *kv, const struct qual_doc *d, float *out)
{
	uint8_t want[QUAL_N_CONT];
	memset(want, 1, sizeof(want));
	return eng_forward(b->ctx, kv, d->cont, QUAL_N_CONT, want, out);
}

/* Mean KL(ref ‖ got) over the continuation and the share of positions
 * whose argmax agrees. */
static void
qual_fidelity(const float *ref, const float *got, int32_t n_vocab, double *kl, double *top1)
{
	int t;
	int32_t i;
	*kl = *top1 = 0.0;
	for (t = 0; t < QUAL_N_CONT; t++) {
		const float *r = ref + (size_t)t * (size_t)n_vocab, *g = got + (size_t)t * (size_t)n_vocab;
		double mr = r[0], mg = g[0], zr = 0.0, zg = 0.0, acc = 0.0;
		int32_t ar = 0, ag = 0;
		for (i = 1; i < n_vocab; i++) {
			if (r[i] > r[ar])
				ar = i;
			if (g[i] > g[ag])
				ag = i;
		}
		mr = r[ar];
		mg = g[ag];
		for (i = 0; i < n_vocab; i++) {
			zr += exp(r[i] - mr);
			zg += exp(g[i] - mg);
		}
		zr = log(zr);
		zg = log(zg);
		for (i = 0; i < n_vocab; i++) {
			double lr = r[i] - mr - zr, lg = g[i] - mg - zg;
			acc += exp(lr) * (lr - lg);
		}
		*kl += acc > 0.0 ? acc : 0.0; /* rounding can dip below 0 */
		*top1 += ar == ag;
	}
	*kl /= QUAL_N_CONT;
	*top1 /= QUAL_N_CONT;
}

/* Full-cache logits of the prose document's continuation: the document
 * through eng_forward in slices of the ingest chunk (as `full` ingests it),
 * then the continuation. */
static int
qual_reference(struct qual_bench *b, struct qual_doc *d)
{
	struct eng_kv *kv = NULL;
	int64_t s;
	int rc;
	d->ref = malloc((size_t)QUAL_N_CONT * (size_t)b->n_vocab * sizeof(float));
	if (!d->ref)
		return ENG_ERR_NOMEM;
	if ((rc = qual_ctx(b, b->o->chunk)) || (rc = eng_kv_init(&kv, b->m, d->ids.n + QUAL_N_CONT + 1)))
		goto out;
	for (s = 0; s < d->ids.n && !rc; s += b->o->chunk) {
		int64_t len = d->ids.n - s < b->o->chunk ? d->ids.n - s : b->o->chunk;
		rc = eng_forward(b->ctx, kv, d->ids.v + s, len, NULL, b->logits);
	}
	if (!rc)
		rc = qual_continue(b, kv, d, d->ref);
out:
	eng_kv_free(kv);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */

struct qual_row {
	char desc[512];
	int64_t budget;
	int pk_hits, pk_n, mk_hits, mk_n;
	char pk_depths[QUAL_MAX_DEPTHS + 1]; /* '1' / '0' per passkey document */
	double kl, top1;
	int has_fid;
	double seconds;
};

/* Ingest every document of ql with policy spec at fraction frac (0: full)
 * and ask its questions.  Returns 0, QUAL_SKIP when the policy cannot be
 * created with this budget, or a negative error (reason in b->why). */
static int
qual_row_run(struct qual_bench *b, struct qual_len *ql, const char *name, const char *opts,
    int frac, struct qual_row *row)
{
	struct eng_policy *p = NULL;
	struct eng_kv *kv = NULL;
	struct qual_mark mk = { 0, NULL };
	double t0 = eng_now();
	char reply[256];
	int i, k, rc;

	memset(row, 0, sizeof(*row));
	row->budget = frac ? (ql->n_ref + frac / 2) / frac : ql->n_ref;
	if (eng_policy_create(&p, name, opts, frac ? row->budget : 0, b->why, sizeof(b->why)))
		return QUAL_SKIP;
	eng_policy_describe(p, row->desc, sizeof(row->desc));
	if ((rc = qual_ctx(b, eng_policy_max_chunk(p, b->o->chunk))))
		goto out;
	for (i = 0; i < ql->n_docs; i++) {
		struct qual_doc *d = &ql->docs[i];
		double td = eng_now();
		rc = eng_kv_init(&kv, b->m, eng_policy_rows_per_head(p, d->ids.n, b->o->chunk,
		    b->n_extra));
		if (!rc)
			rc = eng_ingest(b->ctx, kv, p, d->ids.v, d->ids.n, b->o->chunk, NULL);
		if (!rc && b->o->quant >= 0) {
			/* answer from what the snapshot would hold (codec round trip) */
			struct eng_kv *back = NULL;
			rc = snap_roundtrip(kv, b->m, b->o->quant, b->n_extra, &back, b->why,
			    sizeof(b->why)) ? ENG_ERR_ARG : 0;
			eng_kv_free(kv);
			kv = back;
		}
		if (!rc)
			rc = qual_mark_take(&mk, kv);
		if (rc) {
			snprintf(b->why, sizeof(b->why), "%.400s: ingest of %lld tokens: %s", row->desc,
			    (long long)d->ids.n, eng_strerror(rc));
			goto out;
		}
		for (k = 0; k < d->n_q; k++) {
			rc = qual_ask(b, kv, &mk, &d->q[k], reply, sizeof(reply));
			if (rc < 0) {
				snprintf(b->why, sizeof(b->why), "%.400s: question: %s", row->desc,
				    eng_strerror(rc));
				goto out;
			}
			if (d->is_prose) {
				row->mk_hits += rc;
				row->mk_n++;
			} else {
				row->pk_depths[row->pk_n++] = rc ? '1' : '0';
				row->pk_hits += rc;
			}
			if (b->o->verbose)
				fprintf(stderr, "  %s doc %d q %d want %s got \"%s\"%s\n", row->desc, i, k,
				    d->q[k].answer, reply, rc ? "" : "  MISS");
		}
		if (d->is_prose && (b->o->tasks & QUAL_TASK_FIDELITY)) {
			if ((rc = qual_continue(b, kv, d, b->logits))) {
				snprintf(b->why, sizeof(b->why), "%.400s: continuation: %s", row->desc,
				    eng_strerror(rc));
				goto out;
			}
			qual_fidelity(d->ref, b->logits, b->n_vocab, &row->kl, &row->top1);
			row->has_fid = 1;
		}
		if (b->o->verbose)
			fprintf(stderr, "  %s doc %d: %lld tokens in %.1f s\n", row->desc, i,
			    (long long)d->ids.n, eng_now() - td);
		free(mk.len);
		mk.len = NULL;
		eng_kv_free(kv);
		kv = NULL;
	}
	rc = 0;
out:
	free(mk.len);
	eng_kv_free(kv);
	eng_policy_free(p);
	row->seconds = eng_now() - t0;
	return rc;
}

/* Build the documents of one length and the fidelity reference. */
static int
qual_len_init(struct qual_bench *b, struct qual_len *ql, int length)
{
	const struct qual_opts *o = b->o;
	int64_t n_doc = length, room = b->m->hp.n_ctx_train - b->pre.n - b->n_extra - 1;
	uint64_t seed = o->seed * 0x100000001B3ull + (uint64_t)length;
	int i, rc;

	memset(ql, 0, sizeof(*ql));
	ql->length = length;
	if (n_doc > room)
		n_doc = room; /* the question must still fit the context window */
	if (o->tasks & QUAL_TASK_PASSKEY)
		for (i = 0; i < o->depths; i++) {
			uint64_t s = seed + 7919u * (uint64_t)(i + 1);
			if ((rc = qual_doc_passkey(b, &ql->docs[ql->n_docs++], i, o->depths, n_doc, s)))
				return rc;
		}
	if (o->tasks & (QUAL_TASK_MULTIKEY | QUAL_TASK_FIDELITY)) {
		struct qual_doc *d = &ql->docs[ql->n_docs++];
		if ((rc = qual_doc_prose(b, d, n_doc, seed)))
			return rc;
		if ((o->tasks & QUAL_TASK_FIDELITY) && (rc = qual_reference(b, d))) {
			snprintf(b->why, sizeof(b->why), "full-cache reference: %s", eng_strerror(rc));
			return rc;
		}
	}
	for (i = 0; i < ql->n_docs; i++)
		if (ql->docs[i].ids.n > ql->n_ref)
			ql->n_ref = ql->docs[i].ids.n;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* JSON string body: escape quotes and backslashes (specs are plain text). */
static void
qual_json_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* One row: a JSON object or a table line. */
static void
qual_row_print(const struct qual_bench *b, const struct qual_len *ql, const char *spec,
    int frac, const struct qual_row *r)
{
	if (b->o->json) {
		printf("{\"length\":%d,\"n\":%lld,\"spec\":\"", ql->length, (long long)ql->n_ref);
		qual_json_str(stdout, spec);
		printf("\",\"fraction\":%d,\"budget\":%lld,\"policy\":\"", frac ? frac : 1,
		    (long long)r->budget);
		qual_json_str(stdout, r->desc);
		printf("\",\"seed\":%llu,\"chunk\":%d", (unsigned long long)b->o->seed, b->o->chunk);
		if (r->pk_n)
			printf(",\"passkey_hits\":%d,\"passkey_n\":%d,\"passkey_depths\":\"%s\"",
			    r->pk_hits, r->pk_n, r->pk_depths);
		if (r->mk_n)
			printf(",\"multikey_hits\":%d,\"multikey_n\":%d", r->mk_hits, r->mk_n);
		if (r->has_fid)
			printf(",\"kl\":%.6g,\"top1\":%.4f", r->kl, r->top1);
		printf(",\"seconds\":%.1f}\n", r->seconds);
	} else {
		char pk[96] = "-", mk[32] = "-", kl[32] = "-", t1[32] = "-", fr[16];
		if (r->pk_n)
			snprintf(pk, sizeof(pk), "%d/%d %s", r->pk_hits, r->pk_n, r->pk_depths);
		if (r->mk_n)
			snprintf(mk, sizeof(mk), "%d/%d", r->mk_hits, r->mk_n);
		if (r->has_fid) {
			snprintf(kl, sizeof(kl), "%.4f", r->kl);
			snprintf(t1, sizeof(t1), "%.3f", r->top1);
		}
		snprintf(fr, sizeof(fr), "1/%d", frac ? frac : 1);
		printf("%6d %6lld  %-12s %5s %6lld  %-16s %-8s %8s %6s %7.1f\n", ql->length,
		    (long long)ql->n_ref, spec, fr, (long long)r->budget, pk, mk, kl, t1, r->seconds);
	}
	fflush(stdout);
}

/* The progress line of a finished row (stderr). */
static void
qual_row_progress(const struct qual_row *r, int row_i, int n_rows, double elapsed, int length,
    const char *spec, int frac)
{
	fprintf(stderr, "bench_quality: [%d/%d, %.0f s] %d %s 1/%d:", row_i, n_rows, elapsed, length,
	    spec, frac ? frac : 1);
	if (r->pk_n)
		fprintf(stderr, " passkey %d/%d", r->pk_hits, r->pk_n);
	if (r->mk_n)
		fprintf(stderr, " multikey %d/%d", r->mk_hits, r->mk_n);
	if (r->has_fid)
		fprintf(stderr, " kl %.4f top1 %.3f", r->kl, r->top1);
	fprintf(stderr, " (%.1f s)\n", r->seconds);
}

/* 1 if the resume file already holds the row (length, spec, frac). */
static int
qual_done(const char *resume, int length, const char *spec, int frac)
{
	char line[4096], a[64], s[300], f[64];
	FILE *fp;
	int found = 0;
	if (!resume || !(fp = fopen(resume, "r")))
		return 0;
	snprintf(a, sizeof(a), "{\"length\":%d,", length);
	snprintf(s, sizeof(s), "\"spec\":\"%s\",", spec);
	snprintf(f, sizeof(f), "\"fraction\":%d,", frac ? frac : 1);
	while (!found && fgets(line, sizeof(line), fp))
		found = !strncmp(line, a, strlen(a)) && strstr(line, s) && strstr(line, f);
	fclose(fp);
	return found;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */

/* The synopsis, on a bad option. */
static void
qual_usage(void)
{
	fprintf(stderr,
	    "usage: bench_quality [-m GGUF] [-t THREADS] [--policies a,b,c] [--policy NAME:OPTS]\n"
	    "       [--lengths 2048,4096,8192] [--fractions 4,8,16,32] [--depths N] [--keys K]\n"
	    "       [--tasks passkey,multikey,fidelity] [--haystack noise|prose] [--chunk 512]\n"
	    "       [--seed S] [--heads PATH] [--pod-map PATH] [--quant fp16|q4|q4kc] [--prose FILE]\n"
	    "       [--resume JSONL] [--json] [-v] [--smoke]\n");
}

/* Options, then --smoke's reduced grid; 0 or an exit status. */
static int
qual_args(struct qual_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "policies", required_argument, NULL, 'P' }, { "policy", required_argument, NULL, 'p' },
		{ "lengths", required_argument, NULL, 'L' }, { "fractions", required_argument, NULL, 'F' },
		{ "depths", required_argument, NULL, 'D' }, { "keys", required_argument, NULL, 'K' },
		{ "tasks", required_argument, NULL, 'T' }, { "haystack", required_argument, NULL, 'H' },
		{ "chunk", required_argument, NULL, 'c' }, { "seed", required_argument, NULL, 's' },
		{ "heads", required_argument, NULL, 'h' }, { "prose", required_argument, NULL, 'r' },
		{ "pod-map", required_argument, NULL, 'M' }, { "quant", required_argument, NULL, 'Q' },
		{ "resume", required_argument, NULL, 'R' }, { "json", no_argument, NULL, 'j' },
		{ "smoke", no_argument, NULL, 'S' }, { "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	int c, smoke = 0, have_l = 0, have_f = 0, have_d = 0, have_k = 0, have_p = 0;

	memset(o, 0, sizeof(*o));
	o->quant = -1;
	o->model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
	o->threads = 2;
	o->chunk = 512;
	o->depths = 5;
	o->keys = 8;
	o->seed = 1;
	o->tasks = QUAL_TASK_PASSKEY | QUAL_TASK_MULTIKEY | QUAL_TASK_FIDELITY;
	while ((c = getopt_long(argc, argv, "m:t:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': o->model = optarg; break;
		case 't': o->threads = atoi(optarg); break;
		case 'P':
			have_p = 1;
			if (qual_add_policies(o, optarg))
				goto bad;
			break;
		case 'p':
			have_p = 1;
			if (o->n_spec == QUAL_MAX_POLICIES || !(o->spec[o->n_spec++] = strdup(optarg)))
				goto bad;
			break;
		case 'L':
			have_l = 1;
			if (qual_parse_ints(optarg, o->lengths, &o->n_lengths, QUAL_MAX_LIST))
				goto bad;
			break;
		case 'F':
			have_f = 1;
			if (qual_parse_ints(optarg, o->fracs, &o->n_fracs, QUAL_MAX_LIST))
				goto bad;
			break;
		case 'D': have_d = 1; o->depths = atoi(optarg); break;
		case 'K': have_k = 1; o->keys = atoi(optarg); break;
		case 'T':
			if ((o->tasks = qual_parse_tasks(optarg)) <= 0)
				goto bad;
			break;
		case 'H':
			if (strcmp(optarg, "noise") && strcmp(optarg, "prose"))
				goto bad;
			o->prose_haystack = !strcmp(optarg, "prose");
			break;
		case 'c': o->chunk = atoi(optarg); break;
		case 's': o->seed = strtoull(optarg, NULL, 10); break;
		case 'h': o->heads = optarg; break;
		case 'M': o->pod_map = optarg; break;
		case 'Q':
			if ((o->quant = snap_quant_parse(optarg)) < 0)
				goto bad;
			break;
		case 'r':
			if (o->n_prose == QUAL_MAX_LIST)
				goto bad;
			o->prose[o->n_prose++] = optarg;
			break;
		case 'R': o->resume = optarg; break;
		case 'j': o->json = 1; break;
		case 'S': smoke = 1; break;
		case 'v': o->verbose = 1; break;
		default: goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	/* --smoke: a reduced grid for make check (explicit options still win) */
	if (!have_l) {
		o->n_lengths = smoke ? 1 : 3;
		memcpy(o->lengths, smoke ? (const int[]){ 1024 } : (const int[]){ 2048, 4096, 8192 },
		    (size_t)o->n_lengths * sizeof(int));
	}
	if (!have_f) {
		o->n_fracs = smoke ? 2 : 4;
		memcpy(o->fracs, smoke ? (const int[]){ 4, 16 } : (const int[]){ 4, 8, 16, 32 },
		    (size_t)o->n_fracs * sizeof(int));
	}
	if (smoke && !have_d)
		o->depths = 2;
	if (smoke && !have_k)
		o->keys = 4;
	if (!have_p && qual_add_policies(o, smoke ? "full,snapkv,streaming" :
	    "full,streaming,h2o,snapkv,pyramidkv,adakv,nacl,locret,nacl:rho=0,pod,"
	    "pod:budget_mode=equal_bytes"))
		goto bad;
	if (o->threads < 1 || o->chunk < 1 || o->depths < 1 || o->depths > QUAL_MAX_DEPTHS ||
	    o->keys < 1 || o->keys > QUAL_MAX_KEYS)
		goto bad;
	return 0;
bad:
	qual_usage();
	return 2;
}

/* Tokenize the fixed texts: template prefix, noise, prose corpus. */
static int
qual_texts(struct qual_bench *b, int64_t max_len)
{
	const struct qual_opts *o = b->o;
	char *s = NULL, *t;
	size_t need, len = 0, i, n_files;
	int rc;

	/* the template up to the user's content (the questions in
	 * quality_data.h are ChatML's: this bench runs ChatML models) */
	{
		int64_t n = eng_chat_doc_ids(b->chat, "", 0, &b->pre.v);
		if (n < 0)
			return (int)n;
		b->pre.n = b->pre.cap = n;
	}
	/* noise: enough repetitions for the longest document (~22 tokens each) */
	need = (size_t)(max_len / 16 + 8) * strlen(QUAL_NOISE);
	if (!(s = malloc(need + 1)))
		return ENG_ERR_NOMEM;
	for (t = s; t + strlen(QUAL_NOISE) <= s + need; t += strlen(QUAL_NOISE))
		memcpy(t, QUAL_NOISE, strlen(QUAL_NOISE));
	*t = 0;
	rc = qual_encode(b->tok, s, &b->noise);
	free(s);
	s = NULL;
	if (rc || !(b->noise_sent = qual_sentence_starts(b->tok, b->noise.v, b->noise.n)))
		return rc ? rc : ENG_ERR_NOMEM;
	if (!(o->tasks & (QUAL_TASK_MULTIKEY | QUAL_TASK_FIDELITY)) && !o->prose_haystack)
		return 0;
	n_files = o->n_prose ? (size_t)o->n_prose : sizeof(qual_prose_files) / sizeof(qual_prose_files[0]);
	for (i = 0; i < n_files; i++) {
		const char *path = o->n_prose ? o->prose[i] : qual_prose_files[i];
		if (qual_read_prose(path, &s, &len) && o->n_prose) {
			snprintf(b->why, sizeof(b->why), "cannot read %s", path);
			free(s);
			return ENG_ERR_IO;
		}
	}
	if (!s || len < 1000) {
		snprintf(b->why, sizeof(b->why), "no prose found (%s …): pass --prose FILE",
		    qual_prose_files[0]);
		free(s);
		return ENG_ERR_IO;
	}
	rc = qual_encode(b->tok, s, &b->prose);
	free(s);
	if (rc || !(b->prose_sent = qual_sentence_starts(b->tok, b->prose.v, b->prose.n)))
		return rc ? rc : ENG_ERR_NOMEM;
	if (b->prose.n < max_len + QUAL_N_CONT)
		fprintf(stderr, "bench_quality: note: the prose corpus has %lld tokens; longer "
		    "documents wrap around\n", (long long)b->prose.n);
	return 0;
}

/* Split spec "name:opts" (opts may be empty) and add heads= for locret,
 * map= for pod.
 * Returns 0, or 1 to skip the policy with a reason in b->why. */
static int
qual_spec(struct qual_bench *b, const char *spec, char *name, size_t name_cap, char *opts,
    size_t opts_cap)
{
	const char *colon = strchr(spec, ':');
	struct eng_policy *p = NULL;
	size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
	int rc;
	snprintf(name, name_cap, "%.*s", (int)nl, spec);
	snprintf(opts, opts_cap, "%s", colon ? colon + 1 : "");
	if (!strcmp(name, "locret") && !strstr(opts, "heads=")) {
		if (!b->o->heads) {
			snprintf(b->why, sizeof(b->why), "locret needs retaining heads (--heads PATH)");
			return 1;
		}
		snprintf(opts + strlen(opts), opts_cap - strlen(opts), "%sheads=%s", *opts ? "," : "",
		    b->o->heads);
	}
	if (!strcmp(name, "pod") && !strstr(opts, "map=")) {
		if (!b->o->pod_map) {
			snprintf(b->why, sizeof(b->why),
			    "pod needs a block map (--pod-map PATH, from kvsnap pod-calibrate)");
			return 1;
		}
		snprintf(opts + strlen(opts), opts_cap - strlen(opts), "%smap=%s", *opts ? "," : "",
		    b->o->pod_map);
	}
	rc = eng_policy_create(&p, name, opts, 64, b->why, sizeof(b->why));
	eng_policy_free(p);
	return rc ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct qual_opts o;
	struct qual_bench b;
	struct qual_len ql;
	char name[64], opts[1024];
	int li, si, fi, rc, max_len = 0, n_rows = 0, row_i = 0, status = 0, k;
	int skip[QUAL_MAX_POLICIES];
	double t_start = eng_now();

	if ((rc = qual_args(&o, argc, argv)))
		return rc;
	memset(&b, 0, sizeof(b));
	memset(&ql, 0, sizeof(ql));
	b.o = &o;
	if (eng_model_open(&b.m, o.model, b.why, sizeof(b.why)) ||
	    eng_tok_init(&b.tok, b.m->gguf, b.why, sizeof(b.why)) ||
	    eng_chat_init(&b.chat, b.m->gguf, b.tok, b.why, sizeof(b.why))) {
		fprintf(stderr, "bench_quality: %s: %s\n", o.model, b.why);
		return 1;
	}
	b.n_vocab = b.m->hp.n_vocab;
	b.logits = malloc((size_t)QUAL_N_CONT * (size_t)b.n_vocab * sizeof(float));
	if (!b.logits)
		return 1;
	for (li = 0; li < o.n_lengths; li++)
		if (o.lengths[li] > max_len)
			max_len = o.lengths[li];
	if ((rc = qual_texts(&b, max_len))) {
		fprintf(stderr, "bench_quality: %s\n", b.why[0] ? b.why : eng_strerror(rc));
		return 1;
	}
	/* what follows a document: the longest question and its answer, or the
	 * fidelity continuation */
	b.n_extra = QUAL_N_CONT;
	{
		struct qual_ids q;
		char text[512];
		snprintf(text, sizeof(text), QUAL_MULTIKEY_QUESTION, "xxxxxxxxxxxx");
		if (qual_encode(b.tok, text, &q) == 0 && q.n + QUAL_GEN_MULTIKEY + 8 > b.n_extra)
			b.n_extra = q.n + QUAL_GEN_MULTIKEY + 8;
		free(q.v);
	}
	for (si = 0; si < o.n_spec; si++) {
		skip[si] = qual_spec(&b, o.spec[si], name, sizeof(name), opts, sizeof(opts));
		if (skip[si]) {
			fprintf(stderr, "bench_quality: skipping %s: %s\n", o.spec[si], b.why);
			if (o.json) {
				printf("{\"skip\":\"");
				qual_json_str(stdout, o.spec[si]);
				printf("\",\"why\":\"");
				qual_json_str(stdout, b.why);
				printf("\"}\n");
			}
		} else {
			n_rows += strcmp(name, "full") ? o.n_fracs : 1;
		}
	}
	n_rows *= o.n_lengths;
	if (!o.json)
		printf("%6s %6s  %-12s %5s %6s  %-16s %-8s %8s %6s %7s\n", "length", "n", "policy",
		    "frac", "budget", "passkey", "multikey", "KL", "top1", "seconds");
	for (li = 0; li < o.n_lengths && !status; li++) {
		int built = 0;
		for (si = 0; si < o.n_spec && !status; si++) {
			int is_full;
			if (skip[si])
				continue;
			qual_spec(&b, o.spec[si], name, sizeof(name), opts, sizeof(opts));
			is_full = !strcmp(name, "full");
			for (fi = 0; fi < (is_full ? 1 : o.n_fracs) && !status; fi++) {
				int frac = is_full ? 0 : o.fracs[fi];
				struct qual_row row;
				row_i++;
				if (qual_done(o.resume, o.lengths[li], o.spec[si], frac))
					continue;
				if (!built) {
					double t0 = eng_now();
					fprintf(stderr, "bench_quality: length %d: building documents%s\n",
					    o.lengths[li], o.tasks & QUAL_TASK_FIDELITY ?
					    " and the full-cache reference" : "");
					if ((rc = qual_len_init(&b, &ql, o.lengths[li]))) {
						fprintf(stderr, "bench_quality: %s\n",
						    b.why[0] ? b.why : eng_strerror(rc));
						status = 1;
						break;
					}
					built = 1;
					fprintf(stderr, "bench_quality: length %d: %d documents of ~%lld tokens "
					    "(%.1f s)\n", o.lengths[li], ql.n_docs, (long long)ql.n_ref,
					    eng_now() - t0);
				}
				b.why[0] = 0;
				rc = qual_row_run(&b, &ql, name, opts, frac, &row);
				if (rc == QUAL_SKIP) {
					fprintf(stderr, "bench_quality: skipping %s at 1/%d: %s\n", o.spec[si],
					    frac, b.why);
					if (o.json) {
						printf("{\"skip\":\"");
						qual_json_str(stdout, o.spec[si]);
						printf("\",\"length\":%d,\"fraction\":%d,\"why\":\"", o.lengths[li], frac);
						qual_json_str(stdout, b.why);
						printf("\"}\n");
					}
					continue;
				}
				if (rc) {
					fprintf(stderr, "bench_quality: %s\n", b.why[0] ? b.why : eng_strerror(rc));
					status = 1;
					break;
				}
				qual_row_print(&b, &ql, o.spec[si], frac, &row);
				qual_row_progress(&row, row_i, n_rows, eng_now() - t_start,
				    o.lengths[li], o.spec[si], frac);
			}
		}
		for (k = 0; k < ql.n_docs; k++)
			qual_doc_free(&ql.docs[k]);
		ql.n_docs = 0;
	}
	for (si = 0; si < o.n_spec; si++)
		free(o.spec[si]);
	free(b.pre.v);
	free(b.noise.v);
	free(b.noise_sent);
	free(b.prose.v);
	free(b.prose_sent);
	free(b.logits);
	eng_ctx_free(b.ctx);
	eng_chat_free(b.chat);
	eng_tok_free(b.tok);
	eng_model_close(b.m);
	return status;
}
