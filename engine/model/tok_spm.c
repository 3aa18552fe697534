/*
 * tok_spm.c: SentencePiece's text handling (tokenizer.ggml.model = "llama":
 * Llama 2, Mistral, Phi-3), as llama.cpp's llm_tokenizer_spm_session.
 *
 * A raw-text fragment gets a leading space when tokenizer.c asks for it
 * (add_space_prefix at the start or after a special token), every ' '
 * becomes U+2581, and the bytes are cut into symbols by the length their
 * lead byte announces (no validation: a broken sequence swallows the bytes
 * after it, as in llama.cpp).  The merge loop (tok_bpe.c) then joins the
 * adjacent pair whose text is the token of highest score, leftmost first.
 * Each final symbol is its token, or else its bytes as "<0xXX>" tokens (or
 * the raw byte's token); a byte with neither is dropped.
 */
#include <string.h> /* for memcpy */

#include "engine/model/tok_internal.h"

/* Bytes of a UTF-8 sequence by its lead byte's high nibble (llama.cpp's
 * unicode_len_utf8: continuation bytes count as one). */
static const uint8_t eng_spm_len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };

void
eng_tok_spm_encode(struct eng_tok_enc *e, const char *s, size_t len, int prefix)
{
	const struct eng_tok *t = e->t;
	struct eng_tok_sym *sym;
	size_t spaces = 0, nb = 0, i, j;
	int32_t ns = 0, k;

	if (e->err)
		return;
	for (i = 0; i < len; i++)
		spaces += s[i] == ' ';
	if ((e->err = eng_tok_reserve(e, (prefix ? 3 : 0) + len + 2 * spaces)) != 0)
		return;
	if (prefix) {
		memcpy(e->buf, "\xe2\x96\x81", 3);
		nb = 3;
	}
	for (i = 0; i < len; i++) {
		if (s[i] == ' ') {
			memcpy(e->buf + nb, "\xe2\x96\x81", 3);
			nb += 3;
		} else {
			e->buf[nb++] = s[i];
		}
	}
	if (nb == 0)
		return;
	sym = e->sym;
	for (i = 0; i < nb; i += (size_t)sym[ns - 1].n) {
		size_t n = eng_spm_len[(uint8_t)e->buf[i] >> 4];
		if (n > nb - i)
			n = nb - i;
		sym[ns].start = (int32_t)i;
		sym[ns].n = (int32_t)n;
		sym[ns].prev = ns - 1;
		sym[ns].next = ns + 1;
		ns++;
	}
	sym[ns - 1].next = -1;

	eng_tok_merge(e, ns);
	if (e->err)
		return;
	for (k = 0; k >= 0; k = sym[k].next) {
		const char *p = e->buf + sym[k].start;
		int32_t id = eng_tok_lookup(t, p, (size_t)sym[k].n);
		if (id >= 0) {
			eng_tok_emit(e, id);
			continue;
		}
		for (j = 0; j < (size_t)sym[k].n; j++)
			if (t->byte_tok[(uint8_t)p[j]] >= 0)
				eng_tok_emit(e, t->byte_tok[(uint8_t)p[j]]);
	}
}
