/*
 * chat.c: every prompt kvsnap gives a model, rendered in its GGUF's chat
 * template (tokenizer.chat_template; chat_template.c says which family it
 * is).  One renderer per family turns a conversation into pieces, each
 * template text (its control tokens parsed) or a message's content (never
 * parsed: a document or a question cannot forge a turn); everything else
 * is built from those pieces:
 *
 *   eng_chat_render       the text (tests compare it with jinja2's);
 *   eng_chat_messages_ids a whole conversation's ids (kvsnapd's HTTP chat);
 *   eng_chat_doc_ids /    kvsnap's prompt in two halves: the conversation
 *   eng_chat_question_ids [user: DOC "\n\n" QUESTION] split where the
 *                         document ends, so the snapshot holds the first and
 *                         a query adds the second;
 *   eng_chat_turn_end_ids the pieces after the user's content (kvzip's
 *                         reconstruction prompt ends its turn with them).
 *
 * Runs of pieces of one kind are tokenized together, each continuing the
 * one before (eng_tok_encode_cont: no SentencePiece leading space inside
 * the text).  The separator "\n\n" goes to the half the tokenizer keeps it
 * with (sep_in_doc) so that the halves' ids are those of the whole
 * conversation (tests/test_chat.c checks it per family and vocabulary).
 */
#include <stdlib.h> /* for realloc, free */
#include <string.h> /* for strlen, memcpy */

#include "engine/model/model.h"
#include "engine/model/chat_internal.h"

struct chat_piece {
	const char *p;
	size_t len;
	int msg; /* the message whose content this is, or -1: template text */
};

struct chat_pieces {
	struct chat_piece *v;
	size_t n, cap;
	int rc;
	int cont; /* 1: message 0's content continues a document (no leading trim) */
};

static void
put(struct chat_pieces *ps, const char *p, size_t len, int msg)
{
	struct chat_piece *nv;
	if (ps->rc || !len)
		return;
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 32;
		if (!(nv = realloc(ps->v, ps->cap * sizeof(*nv)))) {
			ps->rc = ENG_ERR_NOMEM;
			return;
		}
		ps->v = nv;
	}
	ps->v[ps->n++] = (struct chat_piece){ p, len, msg };
}

static void
tpl(struct chat_pieces *ps, const char *s)
{
	put(ps, s, strlen(s), -1);
}

/* Python's str.isspace() for the UTF-8 character at s[0..n) (Jinja's trim
 * is str.strip()): its length, 0 when not white space. */
static size_t
space_at(const unsigned char *s, size_t n)
{
	if (*s == ' ' || (*s >= 0x09 && *s <= 0x0d) || (*s >= 0x1c && *s <= 0x1f))
		return 1;
	if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;
	if (n < 3)
		return 0;
	if ((s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80) ||
	    (s[0] == 0xe2 && s[1] == 0x80 && (s[2] <= 0x8a || s[2] == 0xa8 || s[2] == 0xa9 ||
	    s[2] == 0xaf)) ||
	    (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) ||
	    (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80))
		return 3;
	return 0;
}

/* Jinja's trim: leading (lead) and trailing (trail) white space off. */
static void
trim(const char **p, size_t *len, int lead, int trail)
{
	const unsigned char *s = (const unsigned char *)*p;
	size_t n = *len, k, b;
	while (lead && n && (k = space_at(s, n))) {
		s += k;
		n -= k;
	}
	while (trail && n) {
		for (b = 1; b <= 3 && b <= n; b++)
			if (space_at(s + n - b, b) == b)
				break;
		if (b > 3 || b > n)
			break;
		n -= b;
	}
	*p = (const char *)s;
	*len = n;
}

/* A message's content, trimmed when the template trims it. */
static void
content(struct chat_pieces *ps, const struct eng_chat_msg *m, int i, int trimmed)
{
	const char *p = m->content ? m->content : "";
	size_t len = m->content ? m->len : 0;
	if (trimmed)
		trim(&p, &len, !(ps->cont && i == 0), 1);
	put(ps, p, len, i);
}

static int
is_role(const struct eng_chat_msg *m, const char *role)
{
	return !strcmp(m->role, role);
}

/* user/assistant alternate from msgs[from], as the templates that raise
 * "Conversation roles must alternate" demand. */
static int
check_alternate(const struct eng_chat *c, const struct eng_chat_msg *m, size_t n, size_t from)
{
	size_t i;
	for (i = from; c->alternate && i < n; i++)
		if (is_role(&m[i], "user") != ((i - from) % 2 == 0))
			return ENG_ERR_ARG;
	return 0;
}

static int
render_chatml(const struct eng_chat *c, struct chat_pieces *ps, const struct eng_chat_msg *m,
    size_t n, int gen)
{
	size_t i;
	if (c->sys && !is_role(&m[0], "system")) {
		tpl(ps, "<|im_start|>system\n");
		tpl(ps, c->sys);
		tpl(ps, "<|im_end|>\n");
	}
	for (i = 0; i < n; i++) {
		tpl(ps, "<|im_start|>");
		tpl(ps, m[i].role);
		tpl(ps, "\n");
		content(ps, &m[i], (int)i, 0);
		tpl(ps, "<|im_end|>\n");
	}
	if (gen)
		tpl(ps, "<|im_start|>assistant\n");
	return 0;
}

static int
render_llama3(const struct eng_chat *c, struct chat_pieces *ps, const struct eng_chat_msg *m,
    size_t n, int gen)
{
	size_t i = 0;
	tpl(ps, c->bos);
	if (c->head) { /* 3.1+: always a system turn, the message's trimmed */
		tpl(ps, "<|start_header_id|>system<|end_header_id|>\n\n");
		tpl(ps, c->head);
		if (is_role(&m[0], "system"))
			content(ps, &m[i++], 0, 1);
		tpl(ps, "<|eot_id|>");
	}
	for (; i < n; i++) {
		tpl(ps, "<|start_header_id|>");
		tpl(ps, m[i].role);
		tpl(ps, "<|end_header_id|>\n\n");
		content(ps, &m[i], (int)i, 1);
		tpl(ps, "<|eot_id|>");
	}
	if (gen)
		tpl(ps, "<|start_header_id|>assistant<|end_header_id|>\n\n");
	return 0;
}

static int
render_gemma(const struct eng_chat *c, struct chat_pieces *ps, const struct eng_chat_msg *m,
    size_t n, int gen)
{
	size_t i;
	if (is_role(&m[0], "system") || check_alternate(c, m, n, 0))
		return ENG_ERR_ARG;
	tpl(ps, c->bos);
	for (i = 0; i < n; i++) {
		tpl(ps, "<start_of_turn>");
		tpl(ps, is_role(&m[i], "assistant") ? "model" : m[i].role);
		tpl(ps, "\n");
		content(ps, &m[i], (int)i, 1);
		tpl(ps, "<end_of_turn>\n");
	}
	if (gen)
		tpl(ps, "<start_of_turn>model\n");
	return 0;
}

static int
render_phi3(const struct eng_chat *c, struct chat_pieces *ps, const struct eng_chat_msg *m,
    size_t n, int gen)
{
	size_t i;
	if (!c->variant) { /* Phi-3 mini: no system turn, the assistant header always */
		tpl(ps, c->bos);
		for (i = 0; i < n; i++)
			if (is_role(&m[i], "user")) {
				tpl(ps, "<|user|>\n");
				content(ps, &m[i], (int)i, 0);
				tpl(ps, "<|end|>\n<|assistant|>\n");
			} else if (is_role(&m[i], "assistant")) {
				content(ps, &m[i], (int)i, 0);
				tpl(ps, "<|end|>\n");
			}
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (is_role(&m[i], "system") && !(m[i].content && m[i].len))
			continue;
		tpl(ps, is_role(&m[i], "system") ? "<|system|>\n" : is_role(&m[i], "user") ?
		    "<|user|>\n" : "<|assistant|>\n");
		content(ps, &m[i], (int)i, 0);
		tpl(ps, "<|end|>\n");
	}
	tpl(ps, gen ? "<|assistant|>\n" : c->eos);
	return 0;
}

static int
render_inst(const struct eng_chat *c, struct chat_pieces *ps, const struct eng_chat_msg *m,
    size_t n, int gen)
{
	size_t i, from = is_role(&m[0], "system") ? 1 : 0;
	(void)gen; /* these templates have no generation prompt */
	if ((from && c->no_system) || check_alternate(c, m, n, from))
		return ENG_ERR_ARG;
	tpl(ps, c->bos);
	for (i = from; i < n; i++) {
		if (is_role(&m[i], "user")) {
			tpl(ps, c->variant == 2 ? "[INST]" : "[INST] ");
			if (from && i == n - 1) { /* Nemo: the system message opens the last */
				content(ps, &m[0], 0, 0);
				tpl(ps, "\n\n");
			}
			content(ps, &m[i], (int)i, 0);
			tpl(ps, c->variant == 2 ? "[/INST]" : " [/INST]");
		} else if (is_role(&m[i], "assistant")) {
			content(ps, &m[i], (int)i, 0);
			tpl(ps, c->eos);
			if (c->variant == 1)
				tpl(ps, " ");
		} else
			return ENG_ERR_ARG;
	}
	return 0;
}

/* Whether the family's templates take no system turn (Gemma's raise on
 * one; so do Mistral's v1 [INST] ones): a system message opening the
 * conversation is then folded into the first user turn instead of refused,
 * as llama.cpp's own renderer (llm_chat_apply_template) and minja's
 * polyfill do, so a tool that always sends one (LangChain, Open WebUI)
 * gets its instruction where the model reads it rather than a 400. */
static int
folds_system(const struct eng_chat *c)
{
	return c->fam == ENG_CHAT_GEMMA || (c->fam == ENG_CHAT_INST && c->no_system);
}

/* msgs with their leading system messages folded, for a family that takes
 * none: one user message "S1\n\nS2...\n\nU" (U: the first user message, if
 * one follows them; empty system messages are left out), then the rest.
 * *out is a malloc'd array and *buf its first content (both freed by the
 * caller), or NULL when msgs need no folding.  0 or ENG_ERR_NOMEM. */
static int
fold_system(const struct eng_chat *c, const struct eng_chat_msg *m, size_t n,
    struct eng_chat_msg **out, size_t *n_out, char **buf)
{
	size_t k, i, len = 0, at = 0;
	int user;

	*out = NULL;
	*buf = NULL;
	*n_out = n;
	if (!c || !m || !n || !m[0].role || strcmp(m[0].role, "system") || !folds_system(c))
		return 0;
	for (k = 0; k < n && m[k].role && !strcmp(m[k].role, "system"); k++)
		len += m[k].len + 2;
	user = k < n && m[k].role && !strcmp(m[k].role, "user");
	if (user)
		len += m[k].len;
	*n_out = 1 + n - k - (size_t)user;
	if (!(*buf = malloc(len + 1)) || !(*out = malloc(*n_out * sizeof(**out)))) {
		free(*buf);
		*buf = NULL;
		return ENG_ERR_NOMEM;
	}
	for (i = 0; i < k + (size_t)user; i++) {
		if (!m[i].len || !m[i].content)
			continue;
		if (at) {
			memcpy(*buf + at, "\n\n", 2);
			at += 2;
		}
		memcpy(*buf + at, m[i].content, m[i].len);
		at += m[i].len;
	}
	(*buf)[at] = '\0';
	(*out)[0] = (struct eng_chat_msg){ "user", *buf, at };
	if (n > k + (size_t)user)
		memcpy(*out + 1, m + k + (size_t)user, (n - k - (size_t)user) * sizeof(**out));
	return 0;
}

/* The pieces of msgs[0..n) (+ the generation prompt when gen). */
static int
render(const struct eng_chat *c, const struct eng_chat_msg *m, size_t n, int gen,
    struct chat_pieces *ps)
{
	size_t i;
	int rc, cont = ps->cont;
	memset(ps, 0, sizeof(*ps));
	ps->cont = cont;
	if (!c || (!m && n))
		return ENG_ERR_ARG;
	if (!n)
		return ENG_ERR_ARG;
	for (i = 0; i < n; i++)
		if (!m[i].role || (!is_role(&m[i], "system") && !is_role(&m[i], "user") &&
		    !is_role(&m[i], "assistant")))
			return ENG_ERR_ARG;
	switch (c->fam) {
	case ENG_CHAT_CHATML: rc = render_chatml(c, ps, m, n, gen); break;
	case ENG_CHAT_LLAMA3: rc = render_llama3(c, ps, m, n, gen); break;
	case ENG_CHAT_GEMMA: rc = render_gemma(c, ps, m, n, gen); break;
	case ENG_CHAT_PHI3: rc = render_phi3(c, ps, m, n, gen); break;
	case ENG_CHAT_INST: rc = render_inst(c, ps, m, n, gen); break;
	default: rc = ENG_ERR_ARG; break;
	}
	if (!rc)
		rc = ps->rc;
	if (rc) {
		free(ps->v);
		ps->v = NULL;
	}
	return rc;
}

int64_t
eng_chat_render(const struct eng_chat *c, const struct eng_chat_msg *msgs, size_t n, int gen,
    char *buf, size_t cap)
{
	struct chat_pieces ps = { 0 };
	struct eng_chat_msg *fm;
	size_t i, k = 0, take;
	char *fb;
	int rc = fold_system(c, msgs, n, &fm, &n, &fb);
	if (!rc)
		rc = render(c, fm ? fm : msgs, n, gen, &ps);
	free(fm);
	if (rc) {
		free(fb);
		return rc;
	}
	for (i = 0; i < ps.n; i++) {
		if (buf && k + 1 < cap) {
			take = cap - 1 - k < ps.v[i].len ? cap - 1 - k : ps.v[i].len;
			memcpy(buf + k, ps.v[i].p, take);
		}
		k += ps.v[i].len;
	}
	if (buf && cap)
		buf[k < cap ? k : cap - 1] = '\0';
	free(ps.v);
	free(fb);
	return (int64_t)k;
}

/* Append the ids of text[0..len), which continues the text before it
 * (*cont: eng_tok_encode_cont), to a malloc'd array (grown as needed). */
static int
append(const struct eng_tok *t, const char *text, size_t len, int special, int *cont,
    int32_t **ids, int64_t *n)
{
	int64_t cap = *n + (int64_t)len + 8, r;
	int32_t *nb;
	int tries;
	for (tries = 0; tries < 2; tries++) { /* a second time when the ids outgrow the bytes */
		if (!(nb = realloc(*ids, (size_t)cap * sizeof(int32_t))))
			return ENG_ERR_NOMEM;
		*ids = nb;
		r = eng_tok_encode_cont(t, text, len, special, cont, *ids + *n, cap - *n);
		if (r < 0)
			return (int)r;
		if (r <= cap - *n) {
			*n += r;
			return 0;
		}
		cap = *n + r;
	}
	return ENG_ERR_TOKENIZER;
}

/* Tokenize pieces [from, to): each run of one kind (template or content)
 * as one text, continuing the one before (*cont).  A template run's
 * trailing spaces go to the start of the run after it (Mistral's
 * "[INST] " DOC): every tokenizer joins a space to the word after it
 * (SentencePiece's "▁DOC", the regexes' " ?\p{L}+"), so the cut falls
 * where the whole text's pre-tokens break.  *spaces: pending spaces to
 * begin with and, when not NULL, those left after the last run (the
 * caller puts them first in what follows); NULL: none, keep none. */
static int
append_pieces(const struct eng_tok *t, const struct chat_pieces *ps, size_t from, size_t to,
    int *cont, size_t *spaces, int32_t **ids, int64_t *n)
{
	char *run = NULL, *nr;
	size_t i, j, len, sp = spaces ? *spaces : 0, tail;
	int rc = 0, kind;
	for (i = from; !rc && i < to; i = j) {
		kind = ps->v[i].msg < 0;
		for (j = i, len = sp; j < to && (ps->v[j].msg < 0) == kind; j++)
			len += ps->v[j].len;
		if (!(nr = realloc(run, len + 1))) {
			rc = ENG_ERR_NOMEM;
			break;
		}
		run = nr;
		memset(run, ' ', sp);
		for (len = sp; i < j; i++) {
			memcpy(run + len, ps->v[i].p, ps->v[i].len);
			len += ps->v[i].len;
		}
		for (tail = 0; kind && (j < to || spaces) && tail < len && run[len - 1 - tail] == ' ';)
			tail++;
		sp = tail;
		if (len > tail)
			rc = append(t, run, len - tail, kind, cont, ids, n);
	}
	free(run);
	if (spaces)
		*spaces = rc ? 0 : sp;
	return rc;
}

static int64_t
done(int rc, int32_t **ids, int64_t n)
{
	if (rc) {
		free(*ids);
		*ids = NULL;
		return rc;
	}
	return n;
}

int64_t
eng_chat_messages_ids(const struct eng_chat *c, const struct eng_chat_msg *msgs, size_t n,
    int32_t **ids)
{
	struct chat_pieces ps = { 0 };
	struct eng_chat_msg *fm;
	int64_t k = 0;
	int rc, cont = 0;
	char *fb;
	*ids = NULL;
	if ((rc = fold_system(c, msgs, n, &fm, &n, &fb)))
		return rc;
	if (!(rc = render(c, fm ? fm : msgs, n, 1, &ps)))
		rc = append_pieces(c->tok, &ps, 0, ps.n, &cont, NULL, ids, &k);
	free(ps.v);
	free(fm);
	free(fb);
	return done(rc, ids, k);
}

/* kvsnap's conversation, [user: CONTENT] with the generation prompt: the
 * pieces and where the user's content sits among them (*at; the content
 * itself is empty, so not a piece: pieces [0, at) come before it). */
static int
kvsnap_frame(const struct eng_chat *c, struct chat_pieces *ps, size_t *at)
{
	static const char mark = '\0';
	struct eng_chat_msg u = { "user", &mark, 1 };
	size_t i;
	int rc;
	memset(ps, 0, sizeof(*ps));
	if ((rc = render(c, &u, 1, 1, ps)))
		return rc;
	for (i = 0; i < ps->n && ps->v[i].msg != 0; i++)
		;
	if (i == ps->n) { /* every family renders the user's content */
		free(ps->v);
		ps->v = NULL;
		return ENG_ERR_ARG;
	}
	*at = i;
	memmove(ps->v + i, ps->v + i + 1, (ps->n - i - 1) * sizeof(*ps->v));
	ps->n--;
	return 0;
}

/* The content trims of the family (Llama 3, Gemma trim a message). */
static int
trims(const struct eng_chat *c)
{
	return c->fam == ENG_CHAT_LLAMA3 || c->fam == ENG_CHAT_GEMMA;
}

/* Which half the separator "\n\n" between the document and the question
 * goes to: the cut between the halves must fall where the tokenizer,
 * given the whole conversation, ends a pre-token, so that the two halves'
 * ids are the whole's (eng_tok_nl_joins_before):
 *
 *   - Llama 3 / Qwen2 regexes keep a run of line breaks with the text
 *     before it ("DOC.\n\n" | "Q", "DOC \n\n" | "Q", "DOC\n\n" | "Q"):
 *     the separator ends the document half; exact for every document
 *     ending (letter, digit, punctuation, space, line break), unless the
 *     question itself begins with white space up to a line break (it
 *     would join the run).
 *   - GPT-2's regex (SmolLM2; its document half is what stored snapshots
 *     hold, never to change) and SentencePiece split a line break from the
 *     text before it: the separator begins the question half; exact when
 *     the document ends in a character other than white space.  A document
 *     ending in a space or a line break is not exact (GPT-2 joins that
 *     white space with the separator's first "\n"; SentencePiece joins
 *     spaces into "▁" words): the halves still read the same text, in
 *     ids a whole-text tokenization would not choose.
 *
 * An empty document's half is the template prefix alone, without the
 * separator or the prefix's trailing spaces, so that it begins every
 * document half (kvzip's and Locret's sinks are those ids).  The question half
 * continues raw text (no SentencePiece leading space): exact when the
 * document half ends in raw text, not in a user-defined token's text, nor
 * empty. */
static int
sep_in_doc(const struct eng_chat *c)
{
	return eng_tok_nl_joins_before(c->tok);
}

int64_t
eng_chat_doc_ids(const struct eng_chat *c, const char *doc, size_t len, int32_t **ids)
{
	struct chat_pieces ps;
	size_t at, sp = 0, sep = sep_in_doc(c) ? 2 : 0;
	int64_t k = 0;
	int rc, cont = 0;
	char *d = NULL;
	*ids = NULL;
	if ((rc = kvsnap_frame(c, &ps, &at)))
		return rc;
	rc = append_pieces(c->tok, &ps, 0, at, &cont, &sp, ids, &k);
	free(ps.v);
	if (trims(c))
		trim(&doc, &len, 1, 0);
	if (!len) /* the template prefix alone (the sinks' tokens): no separator, and
	           * not its trailing spaces, which begin a document's first word */
		sep = sp = 0;
	if (!rc && (sp || sep)) { /* the frame's trailing spaces, DOC, "\n\n": one run */
		if (!(d = malloc(sp + len + sep)))
			rc = ENG_ERR_NOMEM;
		else {
			memset(d, ' ', sp);
			if (len)
				memcpy(d + sp, doc, len);
			memcpy(d + sp + len, "\n\n", sep);
			doc = d;
			len += sp + sep;
		}
	}
	if (!rc && len)
		rc = append(c->tok, doc, len, 0, &cont, ids, &k);
	free(d);
	return done(rc, ids, k);
}

int64_t
eng_chat_followup_ids(const struct eng_chat *c, const struct eng_chat_msg *msgs, size_t n,
    int32_t **ids)
{
	static const char mark = '\0';
	struct chat_pieces ps = { .cont = 1 };
	struct eng_chat_msg *m, *fm;
	size_t i, sep, own;
	int64_t k = 0;
	char *first, *fb;
	int rc, cont = ENG_TOK_CONT_RAW; /* after the document's text */
	*ids = NULL;
	if (!c || !msgs || !n)
		return ENG_ERR_ARG;
	/* a family without a system turn: a system message first joins the
	 * document's user turn ("DOC\n\nSYSTEM\n\nUSER"), as it would join the
	 * first user turn without a document */
	if ((rc = fold_system(c, msgs, n, &fm, &n, &fb)))
		return rc;
	if (fm)
		msgs = fm;
	/* a conversation that opens with a user message continues the
	 * document's turn; else (a system message first, or an assistant's)
	 * the document is a user turn of its own and the messages follow it */
	own = strcmp(msgs[0].role, "user") != 0;
	sep = own || sep_in_doc(c) ? 0 : 2; /* "\n\n" unless the document half ends with it */
	if (!(m = malloc((n + own) * sizeof(*m))) || !(first = malloc(msgs[0].len + 2))) {
		free(m);
		free(fm);
		free(fb);
		return ENG_ERR_NOMEM;
	}
	memcpy(m + own, msgs, n * sizeof(*m));
	if (own) /* the document's turn, its content a mark the pieces are cut after */
		m[0] = (struct eng_chat_msg){ "user", &mark, 1 };
	else {
		memcpy(first, "\n\n", sep);
		if (msgs[0].len)
			memcpy(first + sep, msgs[0].content, msgs[0].len);
		m[0].content = first;
		m[0].len += sep;
	}
	rc = render(c, m, n + own, 1, &ps);
	if (!rc && own) { /* cut after the mark: the document's turn end, then the messages */
		for (i = 0; i < ps.n && ps.v[i].msg != 0; i++)
			;
		if (i < ps.n)
			ps.v[i].len = 0;
	}
	for (i = 0; !rc && i < ps.n && ps.v[i].msg != 0; i++)
		;
	if (!rc)
		rc = i < ps.n ? append_pieces(c->tok, &ps, i, ps.n, &cont, NULL, ids, &k) :
		    ENG_ERR_ARG;
	free(ps.v);
	free(first);
	free(m);
	free(fm);
	free(fb);
	return done(rc, ids, k);
}

int64_t
eng_chat_question_ids(const struct eng_chat *c, const char *q, size_t len, int32_t **ids)
{
	struct eng_chat_msg u = { "user", q, len };
	return eng_chat_followup_ids(c, &u, 1, ids);
}

int64_t
eng_chat_turn_end_ids(const struct eng_chat *c, int32_t **ids)
{
	struct chat_pieces ps;
	size_t at;
	int64_t k = 0;
	int rc, cont = ENG_TOK_CONT_RAW; /* after the user's content */
	*ids = NULL;
	if ((rc = kvsnap_frame(c, &ps, &at)))
		return rc;
	rc = append_pieces(c->tok, &ps, at, ps.n, &cont, NULL, ids, &k);
	free(ps.v);
	return done(rc, ids, k);
}

static char *
dup_piece(const struct eng_tok *t, int32_t id)
{
	size_t len = 0;
	const char *p = t && id >= 0 ? eng_tok_piece(t, id, 1, &len) : NULL;
	char *s = malloc(len + 1);
	if (s) {
		if (p)
			memcpy(s, p, len);
		s[p ? len : 0] = '\0';
	}
	return s;
}

int
eng_chat_init_text(struct eng_chat **out, const char *tpl_text, size_t len, const char *bos,
    const char *eos, const struct eng_tok *t, char *why, size_t why_len)
{
	struct eng_chat *c;
	int rc;
	*out = NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return ENG_ERR_NOMEM;
	c->tok = t;
	c->bos = bos ? strdup(bos) : dup_piece(t, t ? eng_tok_bos(t) : -1);
	c->eos = eos ? strdup(eos) : dup_piece(t, t ? eng_tok_eos(t) : -1);
	if (!c->bos || !c->eos) {
		eng_chat_free(c);
		return ENG_ERR_NOMEM;
	}
	if ((rc = eng_chat_recognize(c, tpl_text, len, why, why_len))) {
		eng_chat_free(c);
		return rc == ENG_ERR_NOMEM ? eng_fail(why, why_len, rc, "out of memory") : rc;
	}
	*out = c;
	return 0;
}

int
eng_chat_init(struct eng_chat **out, const struct eng_gguf *g, const struct eng_tok *t,
    char *why, size_t why_len)
{
	struct eng_gguf_str s;
	int rc = eng_gguf_get_str(g, "tokenizer.chat_template", &s);
	if (rc == ENG_ERR_NOT_FOUND)
		return eng_chat_init_text(out, NULL, 0, NULL, NULL, t, why, why_len);
	if (rc)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "tokenizer.chat_template is not a "
		    "string");
	return eng_chat_init_text(out, s.ptr, s.len, NULL, NULL, t, why, why_len);
}

void
eng_chat_free(struct eng_chat *c)
{
	if (!c)
		return;
	free(c->sys);
	free(c->head);
	free(c->bos);
	free(c->eos);
	free(c);
}

const char *
eng_chat_name(const struct eng_chat *c)
{
	static const char *const names[] = { "chatml", "llama3", "mistral", "gemma", "phi3" };
	return c ? names[c->fam] : "none";
}
