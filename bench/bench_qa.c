/*
 * bench_qa.c: KV-cache compression judged by answers to questions about
 * real documents (bench/qa/: license texts and READMEs with invented facts
 * inserted at several depths, and questions on each text's subject).
 *
 * usage: bench_qa [-m GGUF] [-t THREADS] [--qa DIR] [--docs N] [--doc NAME,...]
 *        [--questions LIST] [--policies a,b,c] [--policy NAME:OPTS]
 *        [--ratios 0.5,0.25,0.125,0.0625] [--chunk 512] [--max-new 48]
 *        [--quants fp16,q8,q4,...] [--json FILE] [--list] [-v]
 *
 * Each document is read once as `kvsnap ingest FILE` reads it (the file's
 * bytes as they are, through eng_chat_doc_ids: the start of the user turn)
 * into a full cache, and every question is asked on it
 * (eng_chat_question_ids: "\n\n" QUESTION, end of turn, assistant header;
 * greedy, up to --max-new tokens or the end of generation).  Then, for
 * every policy and ratio R, the document is ingested again with the budget
 * max(1, ceil(R·n)) units per KV head per layer (n = the document's tokens,
 * template included), and the same questions are asked on that cache.
 * After each question the cache is cut back (eng_kv_drop_tail) by the units
 * eng_generate appended, and every head's length and the next position are
 * checked against what they were (a mismatch is an error).  `full` as a
 * policy is one row at R = 1; the policy rows ask the questions in reverse
 * order, so a cut that leaves something behind which changes an answer
 * shows up as a `full` row that disagrees with the reference.  A policy the
 * engine does not know is skipped with a note; one that refuses a budget
 * skips that document (noted in the table and the JSON).  The JSON names
 * each document's policy with its budget; a row's "policy" is the first
 * document's with "ratio=R" for the budget.
 *
 * Scores per (policy, R):
 *   answered   the reply holds one of the expected answers (alternatives
 *              split on '|', case-insensitive substrings); counted over the
 *              questions the full cache answers (share = answered / those),
 *              and raw over all questions;
 *   ROUGE-L    F1 of the longest common subsequence of lower-cased words
 *              (runs of letters and digits) of the reply and the full
 *              cache's reply to the same question, mean over all questions;
 * also per kind (fact / subject) and per depth band of the facts.
 *
 * --qa DIR holds questions.tsv (columns: doc file relative to DIR, kind
 * fact|subject, depth 0..1 or -1, question, expected; a header line "doc…"
 * and lines starting with '#' are skipped) and the documents; see
 * bench/qa/README.md.  --docs N keeps the first N documents, --doc the ones
 * whose file name contains one of the given strings, --questions the
 * given 1-based question numbers of each document ("1,3-4").  --list
 * prints the documents' token counts and the questions, and stops;
 * --policies none runs only the full-cache reference.
 *
 * --quants LIST: every (policy, R) row becomes one row per stored precision
 * (snap_quant_parse names): the cache is ingested once, put through the
 * snapshot codec at that precision (zstd level 3, as kvsnap stores it), and
 * the questions are asked on what comes back; such a row also reports the
 * stored bytes (every record, header included) per document token and the
 * decode time of the records (snap_roundtrip_measured).  Without it the
 * questions are asked on the in-memory cache, as before.
 *
 * kvzip:from=R0 ingests each document once at R0, keeps that cache as its
 * fp16 snapshot would hold it (codec round trip: fp16 rows and scores),
 * and makes every row's cache from a copy of it, cut to the row's budget by
 * the stored scores (eng_kvzip_shrink, as `kvsnap shrink` does; the row
 * at R >= R0 is the copy itself).
 *
 * Units: every row also reports, per document and over all, the share of
 * each kind of the document's units its cache holds (qa_units.h: the
 * template prefix, the facts' answers, the rest of their sentences, the
 * last 16 tokens, structural tokens, the rest), and every reply the share
 * of its fact's answer and sentence units held ("units", "answer_kept",
 * "fact_kept" in the JSON): what a cut keeps and what the failures lost.
 *
 * Output: the table on stdout (with each document's token count and the
 * full cache's results), progress on stderr, and with --json FILE every
 * reply and the summary (rewritten after each document, "complete": true
 * at the end).  Exit status: 0, 1 on bad input or a failure, 2 on a bad
 * option.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/ctx.h"
#include "common/grow.h"
#include "common/strbuf.h"
#include "engine/engine.h"
#include "snapshot/snapshot_io.h"

#include "qa_units.h"

#define QA_MAX_POLICIES 32
#define QA_MAX_RATIOS 16
#define QA_MAX_FILTER 64
#define QA_N_BANDS 5 /* depth bands of the facts: [0, .2), …, [.8, 1] */

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

struct qa_opts {
	const char *model, *dir, *json;
	int threads, chunk, max_new, n_docs, list, verbose;
	char *spec[QA_MAX_POLICIES]; /* "name" or "name:opts" */
	int n_spec;
	double ratios[QA_MAX_RATIOS];
	int n_ratios;
	char *doc_filter[QA_MAX_FILTER];
	int n_doc_filter;
	unsigned char *qsel; /* qsel[i] != 0: ask question i (1-based) of each doc */
	int qsel_max;
	int quants[16];      /* --quants: enum snap_quant; n_quants 0: in memory */
	int n_quants;
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

/* Read a whole file (NUL-terminated); NULL with errno set on failure. */
static char *
qa_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct kv_strbuf b = { NULL, 0, 0 };
	char tmp[65536];
	size_t n;
	if (!f)
		return NULL;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		if (kv_strbuf_add(&b, tmp, n)) {
			fclose(f);
			free(b.p);
			errno = ENOMEM;
			return NULL;
		}
	if (ferror(f)) {
		fclose(f);
		free(b.p);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	if (!b.p && kv_strbuf_add(&b, "", 0))
		return NULL;
	*len = b.len;
	return b.p;
}

/* Comma-separated positive ratios (0, 1] into out[]; 0 on success. */
static int
qa_parse_ratios(const char *s, double *out, int *n, int cap)
{
	char *end;
	double v;
	*n = 0;
	while (*s) {
		errno = 0;
		v = strtod(s, &end);
		if (errno || end == s || !(v > 0.0) || v > 1.0 || *n == cap)
			return -1;
		out[(*n)++] = v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *n ? 0 : -1;
}

/* Append the comma-separated items of s to list[]; ';' inside an item
 * becomes ',' (so "nacl:rho=0;seed=1" passes options).  0 on success. */
static int
qa_add_list(char **list, int *n, int cap, const char *s)
{
	const char *p = s;
	char *c;
	while (*p) {
		size_t len = strcspn(p, ",");
		if (len) {
			if (*n == cap || !(list[*n] = strndup(p, len)))
				return -1;
			for (c = list[*n]; *c; c++)
				if (*c == ';')
					*c = ',';
			(*n)++;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

/* "1,3-4" into the selection mask (1-based); 0 on success. */
static int
qa_parse_qsel(struct qa_opts *o, const char *s)
{
	char *end;
	long a, b, i;
	while (*s) {
		errno = 0;
		a = strtol(s, &end, 10);
		if (errno || end == s || a < 1 || a > 4096)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > 4096)
				return -1;
			s = end;
		}
		if (!o->qsel && !(o->qsel = calloc(4097, 1)))
			return -1;
		if (b > o->qsel_max)
			o->qsel_max = (int)b;
		for (i = a; i <= b; i++)
			o->qsel[i] = 1;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return o->qsel_max ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Questions and documents                                                   */

enum qa_kind { QA_FACT = 0, QA_SUBJECT = 1 };
static const char *const qa_kind_name[2] = { "fact", "subject" };

struct qa_q {
	char *question, *expected;
	enum qa_kind kind;
	double depth;     /* 0..1 for facts, -1 for subject questions */
	int num;          /* 1-based number within its document */
	int32_t *ids;     /* eng_chat_question_ids */
	int64_t n_ids;
	char *ref;        /* the full cache's reply */
	int ref_ok;
	int64_t range[4]; /* qu_classify: answer tokens [0, 1), its sentence [2, 3) */
};

struct qa_doc {
	char *file;       /* as written in the TSV */
	int32_t *ids;     /* eng_chat_doc_ids */
	int64_t n;
	struct qa_q *q;
	int n_q;
	int64_t cap_q;
	int first_q;      /* index of q[0] in the run's global question list */
	double ref_ingest_s, ref_answer_s;
	double full_fp16_bytes; /* the full cache's fp16 snapshot (with --quants) */
	int ref_done;
	uint8_t *kind;    /* (n) enum qu_kind of every position */
	int64_t n_kind[QU_N];
};

struct qa_set {
	struct qa_doc *d;
	int n_d;
	int64_t cap_d;
	int n_q;          /* questions over all (selected) documents */
};

/* The TSV line's doc entry (added when new). */
static struct qa_doc *
qa_doc_get(struct qa_set *set, const char *file)
{
	struct qa_doc *d;
	int i;
	for (i = 0; i < set->n_d; i++)
		if (!strcmp(set->d[i].file, file))
			return &set->d[i];
	if (!(d = kv_grow(set->d, set->n_d, &set->cap_d, 16, sizeof(*d))))
		return NULL;
	set->d = d;
	memset(&set->d[set->n_d], 0, sizeof(set->d[0]));
	if (!(set->d[set->n_d].file = strdup(file)))
		return NULL;
	return &set->d[set->n_d++];
}

static void
qa_set_free(struct qa_set *set)
{
	int i, k;
	for (i = 0; i < set->n_d; i++) {
		struct qa_doc *d = &set->d[i];
		for (k = 0; k < d->n_q; k++) {
			free(d->q[k].question);
			free(d->q[k].expected);
			free(d->q[k].ids);
			free(d->q[k].ref);
		}
		free(d->q);
		free(d->ids);
		free(d->kind);
		free(d->file);
	}
	free(set->d);
	memset(set, 0, sizeof(*set));
}

/* Parse DIR/questions.tsv; on error a message in why (file:line: …). */
static int
qa_load_tsv(const char *dir, struct qa_set *set, char *why, size_t why_len)
{
	char path[4096], *text, *line, *next;
	size_t len;
	int lineno = 0;

	snprintf(path, sizeof(path), "%s/questions.tsv", dir);
	if (!(text = qa_read_file(path, &len)))
		return eng_fail(why, why_len, ENG_ERR_IO, "%s: %s", path, strerror(errno));
	if (strlen(text) != len) {
		free(text);
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: holds a NUL byte", path);
	}
	for (line = text; line && *line; line = next) {
		char *f[6], *end, *p;
		int nf = 0, rc = ENG_ERR_FORMAT;
		struct qa_doc *d;
		struct qa_q *q;
		double depth;
		enum qa_kind kind;

		lineno++;
		if ((next = strchr(line, '\n')))
			*next++ = 0;
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = 0;
		if (!*line || *line == '#')
			continue;
		for (p = line; nf < 6; ) {
			f[nf++] = p;
			if (!(p = strchr(p, '\t')))
				break;
			*p++ = 0;
		}
		if (nf == 5 && lineno == 1 && !strcmp(f[0], "doc"))
			continue; /* the header */
		if (nf != 5) {
			eng_fail(why, why_len, rc, "%s:%d: expected 5 tab-separated fields (doc, kind, "
			    "depth, question, expected), got %d%s", path, lineno, nf > 5 ? 6 : nf,
			    nf > 5 ? " or more" : "");
			goto fail;
		}
		if (!strcmp(f[1], "fact"))
			kind = QA_FACT;
		else if (!strcmp(f[1], "subject"))
			kind = QA_SUBJECT;
		else {
			eng_fail(why, why_len, rc, "%s:%d: kind \"%.40s\" is neither fact nor subject",
			    path, lineno, f[1]);
			goto fail;
		}
		errno = 0;
		depth = strtod(f[2], &end);
		if (errno || end == f[2] || *end || (kind == QA_FACT && !(depth >= 0.0 && depth <= 1.0)) ||
		    (kind == QA_SUBJECT && depth != -1.0)) {
			eng_fail(why, why_len, rc, "%s:%d: depth \"%.40s\" is not %s", path, lineno, f[2],
			    kind == QA_FACT ? "a number in [0, 1]" : "-1");
			goto fail;
		}
		if (!*f[0] || !*f[3] || !*f[4] || strstr(f[4], "||") || *f[4] == '|' ||
		    f[4][strlen(f[4]) - 1] == '|') {
			eng_fail(why, why_len, rc, "%s:%d: empty doc, question or expected answer", path,
			    lineno);
			goto fail;
		}
		rc = ENG_ERR_NOMEM;
		if (!(d = qa_doc_get(set, f[0])))
			goto nomem;
		if (!(q = kv_grow(d->q, d->n_q, &d->cap_q, 8, sizeof(*q))))
			goto nomem;
		d->q = q;
		q = &d->q[d->n_q];
		memset(q, 0, sizeof(*q));
		q->kind = kind;
		q->depth = depth;
		q->num = d->n_q + 1;
		q->question = strdup(f[3]);
		q->expected = strdup(f[4]);
		d->n_q++;
		if (!q->question || !q->expected)
			goto nomem;
		continue;
nomem:
		eng_fail(why, why_len, rc, "out of memory");
fail:
		free(text);
		return rc;
	}
	free(text);
	if (!set->n_d)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: no questions", path);
	return 0;
}

/* Keep the documents and questions the options select. */
static int
qa_select(const struct qa_opts *o, struct qa_set *set, char *why, size_t why_len)
{
	int i, j, k, keep, n = 0;
	for (i = 0; i < set->n_d; i++) {
		struct qa_doc *d = &set->d[i];
		keep = !o->n_docs || n < o->n_docs;
		if (keep && o->n_doc_filter) {
			const char *base = strrchr(d->file, '/') ? strrchr(d->file, '/') + 1 : d->file;
			for (keep = 0, j = 0; j < o->n_doc_filter && !keep; j++)
				keep = strstr(base, o->doc_filter[j]) != NULL;
		}
		if (keep && o->qsel) {
			for (j = k = 0; k < d->n_q; k++) {
				if (d->q[k].num <= o->qsel_max && o->qsel[d->q[k].num]) {
					d->q[j++] = d->q[k];
				} else {
					free(d->q[k].question);
					free(d->q[k].expected);
				}
			}
			d->n_q = j;
			keep = j > 0;
		}
		if (keep) {
			set->d[n++] = *d;
		} else {
			for (k = 0; k < d->n_q; k++) {
				free(d->q[k].question);
				free(d->q[k].expected);
			}
			free(d->q);
			free(d->file);
		}
	}
	set->n_d = n;
	set->n_q = 0;
	for (i = 0; i < n; i++) {
		set->d[i].first_q = set->n_q;
		set->n_q += set->d[i].n_q;
	}
	if (!n)
		return eng_fail(why, why_len, ENG_ERR_ARG, "no document or question matches the selection");
	return 0;
}

/* Read and tokenize every document and question. */
static int
qa_tokenize(const struct qa_opts *o, struct qa_set *set, const struct eng_chat *chat, char *why,
    size_t why_len)
{
	char path[4096];
	int i, k;
	for (i = 0; i < set->n_d; i++) {
		struct qa_doc *d = &set->d[i];
		size_t len;
		char *text;
		int64_t n;
		snprintf(path, sizeof(path), "%s/%s", o->dir, d->file);
		if (!(text = qa_read_file(path, &len)))
			return eng_fail(why, why_len, ENG_ERR_IO, "%s: %s", path, strerror(errno));
		/* the bytes as they are, as `kvsnap ingest FILE` reads them (a
		 * trailing newline included: the question's "\n\n" follows it) */
		if (!len) {
			free(text);
			return eng_fail(why, why_len, ENG_ERR_FORMAT, "%s: empty document", path);
		}
		n = eng_chat_doc_ids(chat, text, len, &d->ids);
		free(text);
		if (n < 0)
			return eng_fail(why, why_len, (int)n, "%s: tokenizer: %s", path, eng_strerror((int)n));
		d->n = n;
		for (k = 0; k < d->n_q; k++) {
			struct qa_q *q = &d->q[k];
			n = eng_chat_question_ids(chat, q->question, strlen(q->question), &q->ids);
			if (n < 0)
				return eng_fail(why, why_len, (int)n, "%s: question %d: %s", d->file, q->num,
				    eng_strerror((int)n));
			q->n_ids = n;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Scoring                                                                   */

/* 1 if reply holds one of the '|'-separated alternatives (case-insensitive). */
static int
qa_match(const char *reply, const char *expected)
{
	char alt[512];
	const char *p = expected;
	while (*p) {
		size_t len = strcspn(p, "|");
		if (len && len < sizeof(alt)) {
			memcpy(alt, p, len);
			alt[len] = 0;
			if (strcasestr(reply, alt))
				return 1;
		}
		p += len + (p[len] == '|');
	}
	return 0;
}

/* Words of s: runs of ASCII letters and digits (and of non-ASCII bytes),
 * lower-cased, each a NUL-terminated string in buf; returns the count. */
static int
qa_words(const char *s, char *buf, const char **w, int cap)
{
	int n = 0;
	while (*s && n < cap) {
		unsigned char c = (unsigned char)*s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c >= 0x80)) {
			s++;
			continue;
		}
		w[n++] = buf;
		for (; *s; s++) {
			c = (unsigned char)*s;
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c >= 0x80))
				break;
			*buf++ = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		*buf++ = 0;
	}
	return n;
}

/* ROUGE-L F1 of cand against ref over qa_words; 1 when both have none. */
static double
qa_rouge_l(const char *cand, const char *ref)
{
	size_t lc = strlen(cand), lr = strlen(ref);
	char *bc = malloc(2 * lc + 1), *br = malloc(2 * lr + 1);
	const char **wc = malloc((lc + 1) * sizeof(char *)), **wr = malloc((lr + 1) * sizeof(char *));
	int *row = NULL, nc, nr, i, j, prev, tmp;
	double f = 0.0, p, r;
	if (!bc || !br || !wc || !wr)
		goto out;
	nc = qa_words(cand, bc, wc, (int)lc + 1);
	nr = qa_words(ref, br, wr, (int)lr + 1);
	if (!nc || !nr) {
		f = nc == nr ? 1.0 : 0.0;
		goto out;
	}
	if (!(row = calloc((size_t)nr + 1, sizeof(int))))
		goto out;
	for (i = 1; i <= nc; i++) { /* LCS, one row */
		prev = 0;
		for (j = 1; j <= nr; j++) {
			tmp = row[j];
			row[j] = !strcmp(wc[i - 1], wr[j - 1]) ? prev + 1 :
			    (row[j] > row[j - 1] ? row[j] : row[j - 1]);
			prev = tmp;
		}
	}
	if (row[nr]) {
		p = (double)row[nr] / nc;
		r = (double)row[nr] / nr;
		f = 2.0 * p * r / (p + r);
	}
out:
	free(row);
	free(bc);
	free(br);
	free(wc);
	free(wr);
	return f;
}

/* Counters of one slice (all, a kind, a depth band). */
struct qa_count {
	int n, raw, full_ok, answered; /* answered: right where the full cache is right */
	double rouge;
};

static void
qa_count_add(struct qa_count *c, int ok, int full_ok, double rouge)
{
	c->n++;
	c->raw += ok;
	c->full_ok += full_ok;
	c->answered += ok && full_ok;
	c->rouge += rouge;
}

/* One (policy, ratio) row. */
struct qa_row {
	char spec[256];       /* as given */
	char desc[768];       /* eng_policy_describe, "ratio=R" for the budget */
	double ratio;         /* 1 for full */
	int quant;            /* enum snap_quant, -1: the in-memory cache */
	double bytes, load_s; /* stored bytes and decode seconds (sums; quant >= 0) */
	int skip;             /* the policy is not run (why in note) */
	char note[512];
	struct qa_count all, kind[2], band[QA_N_BANDS];
	double kept, n_tok;   /* units per KV head per layer kept, document tokens (sums) */
	double ingest_s, answer_s;
	int docs_run;
	/* per question (global index): reply, ok, rouge; per doc: numbers */
	char **reply;
	unsigned char *ok, *done;
	double *rouge;
	double *ans_kept, *fact_kept; /* per question: qu_share of its ranges, -1 none */
	double units_held[QU_N], units_all[QU_N]; /* sums over documents */
	struct qa_row_doc {
		int run;
		char note[256];
		char desc[768];   /* eng_policy_describe, with this document's budget */
		int64_t budget;
		double kept, ingest_s, answer_s, bytes, load_s;
		double units[QU_N]; /* share held per kind, -1: none of it */
		struct qa_count c;
	} *doc;
};

/* ------------------------------------------------------------------------ */
/* Running the model                                                         */

struct qa_bench {
	const struct qa_opts *o;
	struct eng_model *m;
	struct eng_tok *tok;
	struct eng_chat *chat;
	struct eng_ctx *ctx;
	int64_t ctx_chunk, n_extra;
	int64_t *len0, *len1; /* (n_layer * n_head_kv) scratch */
	char why[512];
	/* the cache of the last (document, spec, ratio), shared by its
	 * precision rows, and its ingest's numbers */
	struct eng_kv *cur_kv;
	int cur_doc;
	char cur_spec[256];
	double cur_ratio, cur_kept, cur_ingest_s;
	char cur_desc[768];
	/* kvzip:from=R0: the document's cache at R0 as its fp16 snapshot
	 * holds it, for (src_doc, src_opts) */
	struct eng_kv *src_kv;
	const struct qa_doc *src_doc;
	char src_opts[512];
	double src_ingest_s;
};

/* A ctx whose chunks hold at least `chunk` tokens. */
static int
qa_ctx(struct qa_bench *b, int64_t chunk)
{
	return bench_ctx_fit(&b->ctx, &b->ctx_chunk, b->m, b->o->threads, chunk);
}

/* Every head's fill into out[]. */
static void
qa_lens(const struct eng_kv *kv, int64_t *out)
{
	int l, h;
	for (l = 0; l < kv->n_layer; l++)
		for (h = 0; h < kv->n_head_kv; h++)
			out[l * kv->n_head_kv + h] = eng_kv_len(kv, l, h);
}

/* Mean units per (layer, KV head). */
static double
qa_mean_units(const struct eng_kv *kv)
{
	double s = 0.0;
	int l;
	for (l = 0; l < kv->n_layer; l++)
		s += (double)eng_kv_layer_units(kv, l);
	return s / ((double)kv->n_layer * kv->n_head_kv);
}

struct qa_gen {
	const struct eng_tok *tok;
	struct kv_strbuf text;
	int err;
};

static int
qa_gen_cb(void *arg, int32_t id)
{
	struct qa_gen *g = arg;
	char piece[256];
	int n = eng_tok_decode(g->tok, id, 0, piece, sizeof(piece));
	if (n > 0 && kv_strbuf_add(&g->text, piece, (size_t)(n < (int)sizeof(piece) ? n :
	    (int)sizeof(piece)))) {
		g->err = ENG_ERR_NOMEM;
		return 1;
	}
	return 0;
}

/* Ask q on kv (greedy), then cut the cache back to what it held and check
 * every head.  *reply is malloc'd. */
static int
qa_ask(struct qa_bench *b, struct eng_kv *kv, const struct qa_q *q, char **reply)
{
	struct eng_sampler s;
	struct qa_gen g;
	int64_t n_out = 0, appended, i, n_heads = (int64_t)kv->n_layer * kv->n_head_kv;
	uint32_t pos0 = kv->next_pos;
	int rc;

	*reply = NULL;
	memset(&g, 0, sizeof(g));
	g.tok = b->tok;
	qa_lens(kv, b->len0);
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	rc = eng_generate(b->ctx, kv, b->tok, q->ids, q->n_ids, b->o->max_new, &s, qa_gen_cb, &g,
	    &n_out);
	if (!rc && g.err)
		rc = g.err;
	if (rc) {
		free(g.text.p);
		return eng_fail(b->why, sizeof(b->why), rc, "generation: %s", eng_strerror(rc));
	}
	/* eng_generate feeds the prompt and every generated token but the one
	 * it stops on: an end-of-generation token is never counted, and the
	 * n_max-th token is returned without being run */
	appended = q->n_ids + n_out - (n_out > 0 && n_out == b->o->max_new);
	qa_lens(kv, b->len1);
	for (i = 0; i < n_heads; i++)
		if (b->len1[i] - b->len0[i] != appended)
			break;
	if (i < n_heads || (int64_t)(kv->next_pos - pos0) != appended) {
		free(g.text.p);
		return eng_fail(b->why, sizeof(b->why), ENG_ERR_ARG, "question %d: expected %lld "
		    "appended units, head %lld grew by %lld, next_pos by %lld", q->num,
		    (long long)appended, (long long)(i < n_heads ? i : 0),
		    (long long)(b->len1[i < n_heads ? i : 0] - b->len0[i < n_heads ? i : 0]),
		    (long long)(kv->next_pos - pos0));
	}
	if ((rc = eng_kv_drop_tail(kv, appended))) {
		free(g.text.p);
		return eng_fail(b->why, sizeof(b->why), rc, "eng_kv_drop_tail(%lld): %s",
		    (long long)appended, eng_strerror(rc));
	}
	qa_lens(kv, b->len1);
	if (kv->next_pos != pos0 || memcmp(b->len0, b->len1, (size_t)n_heads * sizeof(int64_t))) {
		free(g.text.p);
		return eng_fail(b->why, sizeof(b->why), ENG_ERR_ARG, "question %d: the cache is not "
		    "back to the document after eng_kv_drop_tail", q->num);
	}
	if (!g.text.p && kv_strbuf_add(&g.text, "", 0))
		return eng_fail(b->why, sizeof(b->why), ENG_ERR_NOMEM, "out of memory");
	*reply = g.text.p;
	return 0;
}

/* Ingest d with policy name/opts at budget (0: full) into a fresh cache;
 * *kept_out = mean units per head kept. */
static int
qa_ingest(struct qa_bench *b, const struct qa_doc *d, const char *name, const char *opts,
    int64_t budget, struct eng_kv **kv, double *kept_out, int *refused, char *desc,
    size_t desc_cap)
{
	struct eng_policy *p = NULL, *src = NULL;
	const char *from = strstr(opts, "from=");
	char src_opts[512];
	double r0 = 0.0;
	int rc;
	*kv = NULL;
	*refused = 0;
	/* kvzip with from=R0: ingest at R0, then shrink to the budget by the
	 * stored scores (kvsnap shrink), to compare with ingesting at it */
	if (from && !strcmp(name, "kvzip")) {
		const char *end = strchr(from, ',');
		size_t head = (size_t)(from - opts);
		char val[32];
		snprintf(val, sizeof(val), "%.*s", (int)(end ? (size_t)(end - from - 5) :
		    strlen(from + 5)), from + 5);
		snprintf(src_opts, sizeof(src_opts), "%.*s%s", (int)(head && !end ? head - 1 : head),
		    opts, end ? end + 1 : "");
		if (eng_parse_ratio(val, &r0) ||
		    (rc = eng_policy_create(&src, name, src_opts, (int64_t)ceil(r0 * (double)d->n),
		    b->why, sizeof(b->why)))) {
			*refused = 1;
			return ENG_ERR_ARG;
		}
	}
	if ((rc = eng_policy_create(&p, name, opts, budget, b->why, sizeof(b->why))) ||
	    (rc = eng_policy_bind(p, b->m, b->why, sizeof(b->why)))) {
		*refused = 1;
		goto out;
	}
	if (desc)
		eng_policy_describe(p, desc, desc_cap);
	if ((rc = qa_ctx(b, eng_policy_max_chunk(p, b->o->chunk)))) {
		eng_fail(b->why, sizeof(b->why), rc, "eng_ctx_init: %s", eng_strerror(rc));
		goto out;
	}
	if (src) {
		/* the source at R0 once per document, then a copy of it per row */
		if (b->src_doc != d || strcmp(b->src_opts, opts)) {
			struct eng_kv *full = NULL;
			double t0 = eng_now();
			eng_kv_free(b->src_kv);
			b->src_kv = NULL;
			b->src_doc = NULL;
			if ((rc = eng_kv_init(&full, b->m, eng_policy_rows_per_head(src, d->n,
			    b->o->chunk, b->n_extra)))) {
				eng_fail(b->why, sizeof(b->why), rc, "eng_kv_init: %s", eng_strerror(rc));
				goto out;
			}
			rc = eng_ingest(b->ctx, full, src, d->ids, d->n, b->o->chunk, NULL);
			if (rc)
				eng_fail(b->why, sizeof(b->why), rc, "ingest of %lld tokens: %s",
				    (long long)d->n, eng_strerror(rc));
			else
				rc = snap_roundtrip(full, b->m, SNAP_FP16, b->n_extra, &b->src_kv, b->why,
				    sizeof(b->why));
			eng_kv_free(full);
			if (rc)
				goto out;
			b->src_doc = d;
			snprintf(b->src_opts, sizeof(b->src_opts), "%s", opts);
			b->src_ingest_s = eng_now() - t0;
		}
		/* fp16 rows and scores go through the codec unchanged: a copy */
		if ((rc = snap_roundtrip(b->src_kv, b->m, SNAP_FP16, b->n_extra, kv, b->why,
		    sizeof(b->why))))
			goto out;
		if (budget < (int64_t)ceil(r0 * (double)d->n) &&
		    (rc = eng_kvzip_shrink(p, *kv, d->n, b->why, sizeof(b->why))))
			goto out;
	} else {
		if ((rc = eng_kv_init(kv, b->m, eng_policy_rows_per_head(p, d->n, b->o->chunk,
		    b->n_extra)))) {
			eng_fail(b->why, sizeof(b->why), rc, "eng_kv_init: %s", eng_strerror(rc));
			goto out;
		}
		if ((rc = eng_ingest(b->ctx, *kv, p, d->ids, d->n, b->o->chunk, NULL))) {
			eng_fail(b->why, sizeof(b->why), rc, "ingest of %lld tokens: %s",
			    (long long)d->n, eng_strerror(rc));
			goto out;
		}
	}
	*kept_out = qa_mean_units(*kv);
out:
	if (rc) {
		eng_kv_free(*kv);
		*kv = NULL;
	}
	eng_policy_free(p);
	eng_policy_free(src);
	return rc;
}

/* Split spec "name:opts" and add the model-path defaults (locret heads). */
static int
qa_spec(const struct qa_bench *b, const char *spec, char *name, size_t name_cap, char *opts,
    size_t opts_cap)
{
	const char *colon = strchr(spec, ':');
	size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
	char *def;
	snprintf(name, name_cap, "%.*s", (int)nl, spec);
	def = eng_policy_default_opts(name, colon ? colon + 1 : "", b->o->model);
	if (!def)
		return ENG_ERR_NOMEM;
	snprintf(opts, opts_cap, "%s", def);
	free(def);
	return 0;
}

/* The policy's description with "budget=N" (of the probe policy) made
 * "ratio=R": the budget follows each document's length. */
static void
qa_desc(const char *d, double ratio, char *out, size_t cap)
{
	const char *at = strstr(d, ":budget="), *rest;
	if (!at) {
		snprintf(out, cap, "%s", d);
		return;
	}
	rest = at + strcspn(at, ",");
	snprintf(out, cap, "%.*s:ratio=%g%s", (int)(at - d), d, ratio, rest);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* A JSON string: UTF-8 kept, invalid bytes as U+FFFD, controls escaped. */
static void
qa_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	while (*p) {
		unsigned char c = *p;
		int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
		    (c & 0xF8) == 0xF0 ? 4 : 0, k;
		if (n == 1) {
			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", f);
			else if (c == '\t')
				fputs("\\t", f);
			else if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
			p++;
			continue;
		}
		for (k = 1; n && k < n; k++)
			if ((p[k] & 0xC0) != 0x80)
				n = 0;
		if (n == 2 && c < 0xC2)
			n = 0; /* overlong */
		if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)))
			n = 0; /* overlong, surrogate */
		if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || c > 0xF4 || (c == 0xF4 && p[1] >= 0x90)))
			n = 0;
		if (!n) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		fwrite(p, 1, (size_t)n, f);
		p += n;
	}
	fputc('"', f);
}

static void
qa_json_count(FILE *f, const struct qa_count *c)
{
	fprintf(f, "{\"n\":%d,\"full_answered\":%d,\"answered\":%d,\"share\":", c->n, c->full_ok,
	    c->answered);
	if (c->full_ok)
		fprintf(f, "%.4f", (double)c->answered / c->full_ok);
	else
		fputs("null", f);
	fprintf(f, ",\"raw_answered\":%d,\"raw_share\":", c->raw);
	if (c->n)
		fprintf(f, "%.4f,\"rougeL\":%.4f}", (double)c->raw / c->n, c->rouge / c->n);
	else
		fputs("null,\"rougeL\":null}", f);
}

/* The whole JSON report (rewritten after every document). */
static int
qa_json_write(const struct qa_bench *b, const struct qa_set *set, struct qa_row *rows,
    int n_rows, int complete, double elapsed)
{
	const struct qa_opts *o = b->o;
	char tmp[4200];
	FILE *f;
	int i, k, r, r2, first;

	snprintf(tmp, sizeof(tmp), "%s.tmp", o->json);
	if (!(f = fopen(tmp, "w"))) {
		fprintf(stderr, "bench_qa: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	fputs("{\"model\":", f);
	qa_json_str(f, o->model);
	fputs(",\"qa\":", f);
	qa_json_str(f, o->dir);
	fprintf(f, ",\"chunk\":%d,\"max_new\":%d,\"threads\":%d,\"complete\":%s,\"seconds\":%.1f,"
	    "\"ratios\":[", o->chunk, o->max_new, o->threads, complete ? "true" : "false", elapsed);
	for (i = 0; i < o->n_ratios; i++)
		fprintf(f, "%s%g", i ? "," : "", o->ratios[i]);
	fputs("],\n\"docs\":[", f);
	for (i = 0; i < set->n_d; i++) {
		const struct qa_doc *d = &set->d[i];
		fprintf(f, "%s\n{\"file\":", i ? "," : "");
		qa_json_str(f, d->file);
		fprintf(f, ",\"tokens\":%lld,\"questions\":%d,\"done\":%s", (long long)d->n, d->n_q,
		    d->ref_done ? "true" : "false");
		if (d->ref_done) {
			int ok = 0;
			for (k = 0; k < d->n_q; k++)
				ok += d->q[k].ref_ok;
			fprintf(f, ",\"full_answered\":%d,\"ingest_s\":%.2f,\"answer_s\":%.2f", ok,
			    d->ref_ingest_s, d->ref_answer_s);
			if (o->n_quants)
				fprintf(f, ",\"full_fp16_bytes\":%.0f", d->full_fp16_bytes);
		}
		fputc('}', f);
	}
	fputs("],\n\"questions\":[", f);
	for (i = 0, first = 1; i < set->n_d; i++) {
		const struct qa_doc *d = &set->d[i];
		for (k = 0; k < d->n_q; k++, first = 0) {
			const struct qa_q *q = &d->q[k];
			fprintf(f, "%s\n{\"i\":%d,\"doc\":", first ? "" : ",", d->first_q + k);
			qa_json_str(f, d->file);
			fprintf(f, ",\"num\":%d,\"kind\":\"%s\",\"depth\":%g,\"question\":", q->num,
			    qa_kind_name[q->kind], q->depth);
			qa_json_str(f, q->question);
			fputs(",\"expected\":", f);
			qa_json_str(f, q->expected);
			fprintf(f, ",\"tokens\":%lld", (long long)q->n_ids);
			if (q->ref) {
				fputs(",\"full_reply\":", f);
				qa_json_str(f, q->ref);
				fprintf(f, ",\"full_ok\":%s", q->ref_ok ? "true" : "false");
			}
			fputc('}', f);
		}
	}
	fputs("],\n\"rows\":[", f);
	for (r = 0, first = 1; r < n_rows; r++) {
		const struct qa_row *w = &rows[r];
		if (w->skip)
			continue;
		fprintf(f, "%s\n{\"spec\":", first ? "" : ",");
		first = 0;
		qa_json_str(f, w->spec);
		fputs(",\"policy\":", f);
		qa_json_str(f, w->desc);
		if (w->quant >= 0)
			fprintf(f, ",\"quant\":\"%s\",\"bytes\":%.0f,\"bytes_per_token\":%.2f,"
			    "\"load_s\":%.4f", snap_quant_name(w->quant), w->bytes,
			    w->n_tok > 0 ? w->bytes / w->n_tok : 0.0, w->load_s);
		fprintf(f, ",\"ratio\":%g,\"docs_run\":%d,\"doc_tokens\":%.0f,\"kept_units\":%.1f,"
		    "\"kept_share\":%.4f,\"ingest_s\":%.2f,\"answer_s\":%.2f,", w->ratio, w->docs_run,
		    w->n_tok, w->kept, w->n_tok > 0 ? w->kept / w->n_tok : 0.0, w->ingest_s, w->answer_s);
		fputs("\"units\":{", f);
		for (k = 0; k < QU_N; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", qu_kind_name[k]);
			if (w->units_all[k] > 0)
				fprintf(f, "%.4f", w->units_held[k] / w->units_all[k]);
			else
				fputs("null", f);
		}
		fputs("},\"all\":", f);
		qa_json_count(f, &w->all);
		fputs(",\"by_kind\":{", f);
		for (k = 0; k < 2; k++) {
			fprintf(f, "%s\"%s\":", k ? "," : "", qa_kind_name[k]);
			qa_json_count(f, &w->kind[k]);
		}
		fputs("},\"by_depth\":[", f);
		for (k = 0; k < QA_N_BANDS; k++) {
			fprintf(f, "%s{\"lo\":%g,\"hi\":%g,\"count\":", k ? "," : "", (double)k / QA_N_BANDS,
			    (double)(k + 1) / QA_N_BANDS);
			qa_json_count(f, &w->band[k]);
			fputc('}', f);
		}
		fputs("],\n \"per_doc\":[", f);
		for (i = 0, k = 0; i < set->n_d; i++) {
			const struct qa_row_doc *rd = &w->doc[i];
			if (!rd->run && !rd->note[0])
				continue;
			fprintf(f, "%s{\"doc\":", k++ ? "," : "");
			qa_json_str(f, set->d[i].file);
			fprintf(f, ",\"tokens\":%lld", (long long)set->d[i].n);
			if (!rd->run) {
				fputs(",\"skipped\":", f);
				qa_json_str(f, rd->note);
				fputc('}', f);
				continue;
			}
			fputs(",\"policy\":", f);
			qa_json_str(f, rd->desc);
			fprintf(f, ",\"budget\":%lld,\"kept_units\":%.1f,\"ingest_s\":%.2f,\"answer_s\":%.2f,",
			    (long long)rd->budget, rd->kept, rd->ingest_s, rd->answer_s);
			if (w->quant >= 0)
				fprintf(f, "\"bytes\":%.0f,\"load_s\":%.4f,", rd->bytes, rd->load_s);
			fputs("\"units\":{", f);
			for (r2 = 0; r2 < QU_N; r2++) {
				fprintf(f, "%s\"%s\":", r2 ? "," : "", qu_kind_name[r2]);
				if (rd->units[r2] >= 0)
					fprintf(f, "%.4f", rd->units[r2]);
				else
					fputs("null", f);
			}
			fputs("},\"count\":", f);
			qa_json_count(f, &rd->c);
			fputc('}', f);
		}
		fputs("],\n \"replies\":[", f);
		for (i = 0, k = 0; i < set->n_q; i++) {
			if (!w->done[i])
				continue;
			fprintf(f, "%s\n  {\"i\":%d,\"ok\":%s,\"rougeL\":%.4f,", k++ ? "," : "", i,
			    w->ok[i] ? "true" : "false", w->rouge[i]);
			if (w->ans_kept[i] >= 0)
				fprintf(f, "\"answer_kept\":%.4f,\"fact_kept\":%.4f,", w->ans_kept[i],
				    w->fact_kept[i]);
			fputs("\"reply\":", f);
			qa_json_str(f, w->reply[i]);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("],\n\"skipped\":[", f);
	for (r = 0, first = 1; r < n_rows; r++) {
		if (!rows[r].skip)
			continue;
		fprintf(f, "%s{\"spec\":", first ? "" : ",");
		first = 0;
		qa_json_str(f, rows[r].spec);
		fprintf(f, ",\"ratio\":%g,\"why\":", rows[r].ratio);
		qa_json_str(f, rows[r].note);
		fputc('}', f);
	}
	fputs("]}\n", f);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		fprintf(stderr, "bench_qa: %s: write failed\n", tmp);
		return -1;
	}
	fclose(f);
	if (rename(tmp, o->json)) {
		fprintf(stderr, "bench_qa: %s: %s\n", o->json, strerror(errno));
		return -1;
	}
	return 0;
}

/* "a/b" of a count, or "-" */
static const char *
qa_frac(char *buf, size_t cap, int a, int b)
{
	if (b)
		snprintf(buf, cap, "%d/%d", a, b);
	else
		snprintf(buf, cap, "-");
	return buf;
}

/* The summary tables. */
static void
qa_table(const struct qa_set *set, const struct qa_row *rows, int n_rows)
{
	char a[32], sh[32], kept[48], raw[32];
	int r, k, n_full_ok = 0, i, j;

	for (i = 0; i < set->n_d; i++)
		for (j = 0; j < set->d[i].n_q; j++)
			n_full_ok += set->d[i].q[j].ref_ok;
	printf("\nfull cache (reference): %d/%d questions answered\n\n", n_full_ok, set->n_q);
	printf("%-16s %6s %7s %16s %9s %7s %8s %9s %9s %9s %8s %8s\n", "policy", "quant", "R",
	    "kept (share)", "answered", "share", "ROUGE-L", "raw", "ingest_s", "answer_s", "B/token",
	    "load_ms");
	for (r = 0; r < n_rows; r++) {
		const struct qa_row *w = &rows[r];
		if (w->skip || !w->docs_run)
			continue;
		snprintf(kept, sizeof(kept), "%.0f (%.1f%%)", w->kept,
		    w->n_tok > 0 ? 100.0 * w->kept / w->n_tok : 0.0);
		if (w->all.full_ok)
			snprintf(sh, sizeof(sh), "%.1f%%", 100.0 * w->all.answered / w->all.full_ok);
		else
			snprintf(sh, sizeof(sh), "-");
		printf("%-16.16s %6s %7.4g %16s %9s %7s %8.3f %9s %9.1f %9.1f", w->spec,
		    w->quant >= 0 ? snap_quant_name(w->quant) : "mem", w->ratio, kept,
		    qa_frac(a, sizeof(a), w->all.answered, w->all.full_ok), sh,
		    w->all.n ? w->all.rouge / w->all.n : 0.0,
		    qa_frac(raw, sizeof(raw), w->all.raw, w->all.n), w->ingest_s, w->answer_s);
		if (w->quant >= 0)
			printf(" %8.1f %8.1f\n", w->n_tok > 0 ? w->bytes / w->n_tok : 0.0,
			    1e3 * w->load_s);
		else
			printf(" %8s %8s\n", "-", "-");
	}
	printf("\nanswered / full-cache answered, by kind and by depth of the fact\n");
	printf("%-16s %6s %7s %9s %9s", "policy", "quant", "R", "fact", "subject");
	for (k = 0; k < QA_N_BANDS; k++) {
		char hd[32];
		snprintf(hd, sizeof(hd), "%.1f-%.1f", (double)k / QA_N_BANDS,
		    (double)(k + 1) / QA_N_BANDS);
		printf(" %7s", hd);
	}
	printf("\n");
	for (r = 0; r < n_rows; r++) {
		const struct qa_row *w = &rows[r];
		if (w->skip || !w->docs_run)
			continue;
		printf("%-16.16s %6s %7.4g %9s", w->spec,
		    w->quant >= 0 ? snap_quant_name(w->quant) : "mem", w->ratio,
		    qa_frac(a, sizeof(a), w->kind[QA_FACT].answered, w->kind[QA_FACT].full_ok));
		printf(" %9s", qa_frac(a, sizeof(a), w->kind[QA_SUBJECT].answered,
		    w->kind[QA_SUBJECT].full_ok));
		for (k = 0; k < QA_N_BANDS; k++)
			printf(" %7s", qa_frac(a, sizeof(a), w->band[k].answered, w->band[k].full_ok));
		printf("\n");
	}
	for (r = 0; r < n_rows; r++)
		if (rows[r].skip)
			printf("not run: %s at R=%g: %s\n", rows[r].spec, rows[r].ratio, rows[r].note);
		else
			for (i = 0; i < set->n_d; i++)
				if (!rows[r].doc[i].run && rows[r].doc[i].note[0])
					printf("not run: %s at R=%g on %s: %s\n", rows[r].spec, rows[r].ratio,
					    set->d[i].file, rows[r].doc[i].note);
	fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */

static void
qa_usage(void)
{
	fprintf(stderr,
	    "usage: bench_qa [-m GGUF] [-t THREADS] [--qa DIR] [--docs N] [--doc NAME,...]\n"
	    "       [--questions LIST] [--policies a,b,c] [--policy NAME:OPTS]\n"
	    "       [--ratios 0.5,0.25,0.125,0.0625] [--chunk 512] [--max-new 48]\n"
	    "       [--quants fp16,q8,q4,...] [--json FILE] [--list] [-v]\n");
}

/* A positive int option; -1 when it is not one. */
static int
qa_int(const char *s, int lo, int hi)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return (int)v;
}

static void
qa_opts_free(struct qa_opts *o)
{
	int i;
	for (i = 0; i < o->n_spec; i++)
		free(o->spec[i]);
	for (i = 0; i < o->n_doc_filter; i++)
		free(o->doc_filter[i]);
	free(o->qsel);
	o->n_spec = o->n_doc_filter = 0;
	o->qsel = NULL;
}

static int
qa_args(struct qa_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' }, { "threads", required_argument, NULL, 't' },
		{ "qa", required_argument, NULL, 'q' }, { "docs", required_argument, NULL, 'N' },
		{ "doc", required_argument, NULL, 'd' }, { "questions", required_argument, NULL, 'Q' },
		{ "policies", required_argument, NULL, 'P' }, { "policy", required_argument, NULL, 'p' },
		{ "ratios", required_argument, NULL, 'R' }, { "chunk", required_argument, NULL, 'c' },
		{ "max-new", required_argument, NULL, 'n' }, { "json", required_argument, NULL, 'j' },
		{ "list", no_argument, NULL, 'l' }, { "verbose", no_argument, NULL, 'v' },
		{ "quants", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	int c, have_p = 0, have_r = 0;

	memset(o, 0, sizeof(*o));
	o->model = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
	o->dir = "bench/qa";
	o->threads = 2;
	o->chunk = 512;
	o->max_new = 48;
	while ((c = getopt_long(argc, argv, "m:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': o->model = optarg; break;
		case 't':
			if ((o->threads = qa_int(optarg, 1, 1024)) < 0)
				goto bad;
			break;
		case 'q': o->dir = optarg; break;
		case 'N':
			if ((o->n_docs = qa_int(optarg, 1, 1 << 20)) < 0)
				goto bad;
			break;
		case 'd':
			if (qa_add_list(o->doc_filter, &o->n_doc_filter, QA_MAX_FILTER, optarg))
				goto bad;
			break;
		case 'Q':
			if (qa_parse_qsel(o, optarg))
				goto bad;
			break;
		case 'P':
			have_p = 1;
			if (qa_add_list(o->spec, &o->n_spec, QA_MAX_POLICIES, optarg))
				goto bad;
			break;
		case 'p':
			have_p = 1;
			if (o->n_spec == QA_MAX_POLICIES || !(o->spec[o->n_spec++] = strdup(optarg)))
				goto bad;
			break;
		case 'R':
			have_r = 1;
			if (qa_parse_ratios(optarg, o->ratios, &o->n_ratios, QA_MAX_RATIOS))
				goto bad;
			break;
		case 'c':
			if ((o->chunk = qa_int(optarg, 1, 1 << 20)) < 0)
				goto bad;
			break;
		case 'n':
			if ((o->max_new = qa_int(optarg, 1, 4096)) < 0)
				goto bad;
			break;
		case 'j': o->json = optarg; break;
		case 'K': {
			char *names[16];
			int n = 0, i, bad = 0;
			if (qa_add_list(names, &n, 16, optarg))
				goto bad;
			for (i = 0; i < n; i++) {
				if ((o->quants[i] = snap_quant_parse(names[i])) < 0)
					bad = 1;
				free(names[i]);
			}
			o->n_quants = n;
			if (bad || !n)
				goto bad;
			break;
		}
		case 'l': o->list = 1; break;
		case 'v': o->verbose = 1; break;
		case 'h':
			qa_usage();
			qa_opts_free(o);
			exit(0);
		default: goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if (!have_p && qa_add_list(o->spec, &o->n_spec, QA_MAX_POLICIES,
	    "full,snapkv,adakv,locret,kvzip"))
		goto bad;
	if (!have_r) {
		static const double def[] = { 0.5, 0.25, 0.125, 0.0625 };
		o->n_ratios = 4;
		memcpy(o->ratios, def, sizeof(def));
	}
	for (c = 0; c < o->n_spec; c++)
		if (!strcmp(o->spec[c], "none")) { /* the full-cache reference only */
			free(o->spec[c]);
			o->spec[c--] = o->spec[--o->n_spec];
		}
	return 0;
bad:
	qa_usage();
	qa_opts_free(o);
	return 2;
}

/* Free a row's arrays. */
static void
qa_row_free(struct qa_row *w, int n_q)
{
	int i;
	if (w->reply)
		for (i = 0; i < n_q; i++)
			free(w->reply[i]);
	free(w->reply);
	free(w->ok);
	free(w->done);
	free(w->rouge);
	free(w->ans_kept);
	free(w->fact_kept);
	free(w->doc);
}

/* The reference: full cache, questions in order. */
static int
qa_reference(struct qa_bench *b, struct qa_doc *d)
{
	struct eng_kv *kv = NULL;
	double t0 = eng_now(), kept;
	int k, rc, refused;
	if ((rc = qa_ingest(b, d, "full", "", 0, &kv, &kept, &refused, NULL, 0)))
		return rc;
	d->ref_ingest_s = eng_now() - t0;
	if (b->o->n_quants) { /* the bytes every precision is measured against */
		struct eng_kv *back = NULL;
		struct snap_rt_stats st;
		if ((rc = snap_roundtrip_measured(kv, b->m, SNAP_FP16, SNAP_ZLEVEL_DEFAULT, 1, &back,
		    &st, b->why, sizeof(b->why)))) {
			eng_kv_free(kv);
			return rc;
		}
		eng_kv_free(back);
		d->full_fp16_bytes = (double)st.bytes;
	}
	t0 = eng_now();
	for (k = 0; k < d->n_q && !rc; k++) {
		struct qa_q *q = &d->q[k];
		if (!(rc = qa_ask(b, kv, q, &q->ref))) {
			q->ref_ok = qa_match(q->ref, q->expected);
			if (b->o->verbose)
				fprintf(stderr, "  full q%d [%s] %s -> \"%s\"%s\n", q->num, q->expected,
				    q->question, q->ref, q->ref_ok ? "" : "  MISS");
		}
	}
	d->ref_answer_s = eng_now() - t0;
	d->ref_done = !rc;
	eng_kv_free(kv);
	return rc;
}

/* What the row's cache holds of each kind of d's units (qa_units.h). */
static int
qa_row_units(const struct eng_kv *kv, const struct qa_doc *d, struct qa_row *w,
    struct qa_row_doc *rd)
{
	uint32_t *held = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof(uint32_t));
	double sum[QU_N] = { 0 };
	int per_pos = kv->n_layer * kv->n_head_kv, k;
	int64_t i;
	if (!held)
		return ENG_ERR_NOMEM;
	qu_held(kv, d->n, held);
	for (i = 0; i < d->n; i++)
		sum[d->kind[i]] += held[i];
	for (k = 0; k < QU_N; k++) {
		rd->units[k] = d->n_kind[k] ? sum[k] / ((double)d->n_kind[k] * per_pos) : -1.0;
		w->units_held[k] += sum[k] / per_pos;
		w->units_all[k] += (double)d->n_kind[k];
	}
	for (k = 0; k < d->n_q; k++) {
		const struct qa_q *q = &d->q[k];
		w->ans_kept[d->first_q + k] = qu_share(held, q->range[0], q->range[1], per_pos);
		w->fact_kept[d->first_q + k] = qu_share(held, q->range[2], q->range[3], per_pos);
	}
	free(held);
	return 0;
}

/* Row w on document di: ingest with the row's policy, ask in reverse
 * order, score against the reference.  1: skipped (note), <0: error. */
static int
qa_row_doc(struct qa_bench *b, struct qa_set *set, struct qa_row *w, int di, const char *name,
    const char *opts)
{
	struct qa_doc *d = &set->d[di];
	struct qa_row_doc *rd = &w->doc[di];
	struct eng_kv *kv = NULL;
	int is_full = !strcmp(name, "full"), k, rc, refused;
	double t0 = eng_now(), kept = 0.0;
	int64_t budget = is_full ? 0 : (int64_t)ceil(w->ratio * (double)d->n);

	if (!is_full && budget < 1)
		budget = 1;
	rd->budget = is_full ? d->n : budget;
	b->why[0] = 0;
	/* the precision rows of one (spec, R) share its cache */
	if (!b->cur_kv || b->cur_doc != di || strcmp(b->cur_spec, w->spec) ||
	    b->cur_ratio != w->ratio) {
		eng_kv_free(b->cur_kv);
		b->cur_kv = NULL;
		rc = qa_ingest(b, d, name, opts, budget, &b->cur_kv, &kept, &refused, b->cur_desc,
		    sizeof(b->cur_desc));
		if (rc) {
			/* a policy that refuses this budget skips the document */
			/* the note keeps the reason's first sizeof(note) - 1 bytes */
			snprintf(rd->note, sizeof(rd->note), "%.*s", (int)sizeof(rd->note) - 1,
			    b->why[0] ? b->why : eng_strerror(rc));
			b->cur_kv = NULL;
			return refused ? 1 : rc;
		}
		b->cur_doc = di;
		snprintf(b->cur_spec, sizeof(b->cur_spec), "%s", w->spec);
		b->cur_ratio = w->ratio;
		b->cur_kept = kept;
		b->cur_ingest_s = eng_now() - t0;
	}
	snprintf(rd->desc, sizeof(rd->desc), "%s", b->cur_desc);
	if ((rc = qa_row_units(b->cur_kv, d, w, rd)))
		return rc;
	kept = b->cur_kept;
	rd->ingest_s = b->cur_ingest_s;
	kv = b->cur_kv;
	if (w->quant >= 0) {
		struct snap_rt_stats st;
		if ((rc = snap_roundtrip_measured(b->cur_kv, b->m, w->quant, SNAP_ZLEVEL_DEFAULT,
		    b->n_extra, &kv, &st, b->why, sizeof(b->why)))) {
			snprintf(rd->note, sizeof(rd->note), "%.*s", (int)sizeof(rd->note) - 1, b->why);
			return rc;
		}
		rd->bytes = (double)st.bytes;
		rd->load_s = st.load_s;
	}
	rd->run = 1;
	rd->kept = kept;
	if (!w->docs_run) /* parameters derived from the budget: the first document's */
		qa_desc(rd->desc, w->ratio, w->desc, sizeof(w->desc));
	t0 = eng_now();
	for (k = d->n_q - 1; k >= 0; k--) {
		struct qa_q *q = &d->q[k];
		int gi = d->first_q + k;
		char *reply;
		if ((rc = qa_ask(b, kv, q, &reply)))
			break;
		w->reply[gi] = reply;
		w->ok[gi] = (unsigned char)qa_match(reply, q->expected);
		w->rouge[gi] = qa_rouge_l(reply, q->ref);
		w->done[gi] = 1;
		qa_count_add(&rd->c, w->ok[gi], q->ref_ok, w->rouge[gi]);
		qa_count_add(&w->all, w->ok[gi], q->ref_ok, w->rouge[gi]);
		qa_count_add(&w->kind[q->kind], w->ok[gi], q->ref_ok, w->rouge[gi]);
		if (q->kind == QA_FACT) {
			int band = (int)(q->depth * QA_N_BANDS);
			qa_count_add(&w->band[band < QA_N_BANDS ? band : QA_N_BANDS - 1], w->ok[gi],
			    q->ref_ok, w->rouge[gi]);
		}
		if (b->o->verbose)
			fprintf(stderr, "  %s R=%g q%d [%s] -> \"%s\"%s rougeL %.2f\n", w->spec, w->ratio,
			    q->num, q->expected, reply, w->ok[gi] ? "" : "  MISS", w->rouge[gi]);
	}
	if (kv != b->cur_kv)
		eng_kv_free(kv);
	rd->answer_s = eng_now() - t0;
	if (rc)
		return rc;
	w->bytes += rd->bytes;
	w->load_s += rd->load_s;
	w->kept += kept;
	w->n_tok += (double)d->n;
	w->ingest_s += rd->ingest_s;
	w->answer_s += rd->answer_s;
	w->docs_run++;
	return 0;
}

/* Every document's unit kinds and its facts' token ranges (qa_units.h). */
static int
qa_kinds(const struct qa_bench *b, struct qa_set *set)
{
	int i, k;
	for (i = 0; i < set->n_d; i++) {
		struct qa_doc *d = &set->d[i];
		const char **qs = malloc((size_t)d->n_q * sizeof(char *) + 1);
		const char **es = malloc((size_t)d->n_q * sizeof(char *) + 1);
		int *fact = malloc((size_t)d->n_q * sizeof(int) + 1);
		int64_t (*range)[4] = malloc((size_t)d->n_q * sizeof(*range) + 1);
		int64_t j;
		int rc = ENG_ERR_NOMEM;
		d->kind = malloc((size_t)d->n + 1);
		if (qs && es && fact && range && d->kind) {
			for (k = 0; k < d->n_q; k++) {
				qs[k] = d->q[k].question;
				es[k] = d->q[k].expected;
				fact[k] = d->q[k].kind == QA_FACT;
			}
			rc = qu_classify(b->tok, b->chat, d->ids, d->n, d->n_q, qs, es, fact, d->kind,
			    range);
		}
		if (!rc) {
			for (k = 0; k < d->n_q; k++)
				memcpy(d->q[k].range, range[k], sizeof(range[k]));
			for (j = 0; j < d->n; j++)
				d->n_kind[d->kind[j]]++;
		}
		free(qs);
		free(es);
		free(fact);
		free(range);
		if (rc)
			return rc;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct qa_opts o;
	struct qa_bench b;
	struct qa_set set;
	struct qa_row *rows = NULL;
	char name[64], opts[4096], desc[1024];
	int rc, i, k, r, n_rows = 0, status = 0, si, ri;
	int64_t max_q = 0;
	double t_start = eng_now();

	if ((rc = qa_args(&o, argc, argv)))
		return rc;
	memset(&b, 0, sizeof(b));
	memset(&set, 0, sizeof(set));
	b.o = &o;
	if (qa_load_tsv(o.dir, &set, b.why, sizeof(b.why)) ||
	    qa_select(&o, &set, b.why, sizeof(b.why))) {
		fprintf(stderr, "bench_qa: %s\n", b.why);
		status = 1;
		goto out;
	}
	if (eng_model_open(&b.m, o.model, b.why, sizeof(b.why)) ||
	    eng_tok_init(&b.tok, b.m->gguf, b.why, sizeof(b.why)) ||
	    eng_chat_init(&b.chat, b.m->gguf, b.tok, b.why, sizeof(b.why))) {
		fprintf(stderr, "bench_qa: %s: %s\n", o.model, b.why);
		status = 1;
		goto out;
	}
	if (qa_tokenize(&o, &set, b.chat, b.why, sizeof(b.why))) {
		fprintf(stderr, "bench_qa: %s\n", b.why);
		status = 1;
		goto out;
	}
	if (qa_kinds(&b, &set)) {
		fprintf(stderr, "bench_qa: out of memory\n");
		status = 1;
		goto out;
	}
	for (i = 0; i < set.n_d; i++)
		for (k = 0; k < set.d[i].n_q; k++)
			if (set.d[i].q[k].n_ids > max_q)
				max_q = set.d[i].q[k].n_ids;
	b.n_extra = max_q + o.max_new + 1;
	for (i = 0; i < set.n_d; i++) {
		printf("doc %-28s %5lld tokens, %d questions\n", set.d[i].file, (long long)set.d[i].n,
		    set.d[i].n_q);
		if (set.d[i].n + b.n_extra > b.m->hp.n_ctx_train) {
			fprintf(stderr, "bench_qa: %s: %lld tokens + %lld for a question and its answer "
			    "pass the model's window of %d\n", set.d[i].file, (long long)set.d[i].n,
			    (long long)b.n_extra, b.m->hp.n_ctx_train);
			status = 1;
		}
	}
	fflush(stdout);
	if (status)
		goto out;
	if (o.list) {
		for (i = 0; i < set.n_d; i++)
			for (k = 0; k < set.d[i].n_q; k++)
				printf("%s\t%d\t%s\t%g\t%s\t%s\n", set.d[i].file, set.d[i].q[k].num,
				    qa_kind_name[set.d[i].q[k].kind], set.d[i].q[k].depth,
				    set.d[i].q[k].question, set.d[i].q[k].expected);
		goto out;
	}
	b.len0 = malloc((size_t)b.m->hp.n_layer * (size_t)b.m->hp.n_head_kv * sizeof(int64_t));
	b.len1 = malloc((size_t)b.m->hp.n_layer * (size_t)b.m->hp.n_head_kv * sizeof(int64_t));
	rows = calloc(((size_t)o.n_spec * (size_t)o.n_ratios + 1) *
	    (size_t)(o.n_quants ? o.n_quants : 1), sizeof(*rows));
	if (!b.len0 || !b.len1 || !rows) {
		fprintf(stderr, "bench_qa: out of memory\n");
		status = 1;
		goto out;
	}
	/* the rows: `full` once at R = 1; a policy the engine refuses is noted */
	for (si = 0; si < o.n_spec; si++) {
		struct eng_policy *p = NULL;
		int skip, is_full;
		if (qa_spec(&b, o.spec[si], name, sizeof(name), opts, sizeof(opts))) {
			status = 1;
			goto out;
		}
		b.why[0] = 0;
		skip = eng_policy_create(&p, name, opts, 64, b.why, sizeof(b.why)) != 0;
		if (!skip && eng_policy_bind(p, b.m, b.why, sizeof(b.why)))
			skip = 1;
		desc[0] = 0;
		if (!skip)
			eng_policy_describe(p, desc, sizeof(desc));
		eng_policy_free(p);
		is_full = !strcmp(name, "full");
		for (ri = 0; ri < (is_full || skip ? 1 : o.n_ratios) * (o.n_quants ? o.n_quants : 1);
		    ri++) {
			struct qa_row *w = &rows[n_rows++];
			int qi = o.n_quants ? ri % o.n_quants : 0;
			snprintf(w->spec, sizeof(w->spec), "%s", o.spec[si]);
			w->quant = o.n_quants ? o.quants[qi] : -1;
			w->ratio = is_full ? 1.0 : skip ? 0.0 : o.ratios[o.n_quants ? ri / o.n_quants : ri];
			w->skip = skip;
			qa_desc(desc, w->ratio, w->desc, sizeof(w->desc));
			if (skip) {
				snprintf(w->note, sizeof(w->note), "%s", b.why[0] ? b.why : "refused");
				fprintf(stderr, "bench_qa: skipping %s: %s\n", o.spec[si], w->note);
				continue;
			}
			w->reply = calloc((size_t)set.n_q, sizeof(char *));
			w->ok = calloc((size_t)set.n_q, 1);
			w->done = calloc((size_t)set.n_q, 1);
			w->rouge = calloc((size_t)set.n_q, sizeof(double));
			w->ans_kept = calloc((size_t)set.n_q, sizeof(double));
			w->fact_kept = calloc((size_t)set.n_q, sizeof(double));
			w->doc = calloc((size_t)set.n_d, sizeof(*w->doc));
			if (!w->reply || !w->ok || !w->done || !w->rouge || !w->doc || !w->ans_kept ||
			    !w->fact_kept) {
				fprintf(stderr, "bench_qa: out of memory\n");
				status = 1;
				goto out;
			}
		}
	}
	for (i = 0; i < set.n_d && !status; i++) {
		struct qa_doc *d = &set.d[i];
		int ok = 0;
		fprintf(stderr, "bench_qa: [%.0f s] %s (%lld tokens): full-cache reference\n",
		    eng_now() - t_start, d->file, (long long)d->n);
		if ((rc = qa_reference(&b, d))) {
			fprintf(stderr, "bench_qa: %s: full cache: %s\n", d->file, b.why[0] ? b.why :
			    eng_strerror(rc));
			status = 1;
			break;
		}
		for (k = 0; k < d->n_q; k++)
			ok += d->q[k].ref_ok;
		printf("doc %-28s %5lld tokens: full cache answers %d/%d (ingest %.1f s, answers %.1f s)",
		    d->file, (long long)d->n, ok, d->n_q, d->ref_ingest_s, d->ref_answer_s);
		printf("; right:");
		for (k = 0; k < d->n_q; k++)
			if (d->q[k].ref_ok)
				printf(" q%d", d->q[k].num);
		printf("\n");
		fflush(stdout);
		for (r = 0; r < n_rows && !status; r++) {
			struct qa_row *w = &rows[r];
			if (w->skip)
				continue;
			if (qa_spec(&b, w->spec, name, sizeof(name), opts, sizeof(opts))) {
				status = 1;
				break;
			}
			rc = qa_row_doc(&b, &set, w, i, name, opts);
			if (rc == 1) {
				fprintf(stderr, "bench_qa: skipping %s at R=%g on %s: %s\n", w->spec, w->ratio,
				    d->file, w->doc[i].note);
				continue;
			}
			if (rc) {
				fprintf(stderr, "bench_qa: %s at R=%g on %s: %s\n", w->spec, w->ratio, d->file,
				    w->doc[i].note[0] ? w->doc[i].note : b.why[0] ? b.why : eng_strerror(rc));
				status = 1;
				break;
			}
			fprintf(stderr, "bench_qa: [%.0f s] %s %s %s R=%g: kept %.0f of %lld, answered %d/%d "
			    "(raw %d/%d), ROUGE-L %.3f (ingest %.1f s, answers %.1f s)\n",
			    eng_now() - t_start, d->file, w->spec, w->quant >= 0 ?
			    snap_quant_name(w->quant) : "mem", w->ratio, w->doc[i].kept, (long long)d->n,
			    w->doc[i].c.answered, w->doc[i].c.full_ok, w->doc[i].c.raw, w->doc[i].c.n,
			    w->doc[i].c.n ? w->doc[i].c.rouge / w->doc[i].c.n : 0.0, w->doc[i].ingest_s,
			    w->doc[i].answer_s);
			fprintf(stderr, "bench_qa:   held:");
			for (k = 0; k < QU_N; k++)
				fprintf(stderr, " %s %.3f", qu_kind_name[k], w->doc[i].units[k]);
			fputc('\n', stderr);
		}
		eng_kv_free(b.cur_kv); /* the next document's rows ingest their own */
		b.cur_kv = NULL;
		eng_kv_free(b.src_kv);
		b.src_kv = NULL;
		b.src_doc = NULL;
		if (o.json && qa_json_write(&b, &set, rows, n_rows, 0, eng_now() - t_start))
			status = 1;
	}
	if (!status) {
		qa_table(&set, rows, n_rows);
		if (o.json && qa_json_write(&b, &set, rows, n_rows, 1, eng_now() - t_start))
			status = 1;
		fprintf(stderr, "bench_qa: done in %.0f s\n", eng_now() - t_start);
	}
out:
	eng_kv_free(b.cur_kv);
	eng_kv_free(b.src_kv);
	for (r = 0; r < n_rows; r++)
		qa_row_free(&rows[r], set.n_q);
	free(rows);
	qa_opts_free(&o);
	free(b.len0);
	free(b.len1);
	qa_set_free(&set);
	eng_ctx_free(b.ctx);
	eng_chat_free(b.chat);
	eng_tok_free(b.tok);
	eng_model_close(b.m);
	return status;
}
