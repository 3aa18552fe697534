/*
 * tokenize.c: `kvsnap tokenize`: a text's token ids by a model's tokenizer
 * alone (the GGUF's metadata read, no weights touched, no store).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service_internal.h"

int
svc_tokenize(const char *model, const char *text, size_t len, int special, int32_t **ids,
    int64_t *n, struct svc_status *st)
{
	struct eng_gguf *g = NULL;
	struct eng_tok *tok = NULL;
	int64_t cap, got;
	int rc, ret = -1;

	memset(st, 0, sizeof(*st));
	*ids = NULL;
	*n = 0;
	if ((rc = eng_gguf_open(&g, model, st->why, sizeof(st->why))))
		return svc_fail(st, SVC_AT_MODEL, rc);
	if ((rc = eng_tok_init(&tok, g, st->why, sizeof(st->why)))) {
		svc_fail(st, SVC_AT_TOKENIZER, rc);
		goto out;
	}
	/* count first: a SentencePiece text may take more ids than bytes
	 * (a leading space, byte fallback of U+2581) */
	if ((cap = eng_tok_encode(tok, text, len, special, NULL, 0)) < 0) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror((int)cap));
		svc_fail(st, SVC_AT_TOKENIZE, (int)cap);
		goto out;
	}
	if (!(*ids = malloc((size_t)(cap ? cap : 1) * sizeof(**ids)))) {
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(ENG_ERR_NOMEM));
		svc_fail(st, SVC_AT_TOKENIZE, ENG_ERR_NOMEM);
		goto out;
	}
	got = eng_tok_encode(tok, text, len, special, *ids, cap);
	if (got < 0 || got > cap) {
		rc = got < 0 ? (int)got : ENG_ERR_NOMEM;
		snprintf(st->why, sizeof(st->why), "%s", eng_strerror(rc));
		svc_fail(st, SVC_AT_TOKENIZE, rc);
		free(*ids);
		*ids = NULL;
		goto out;
	}
	*n = got;
	ret = 0;
out:
	eng_tok_free(tok);
	eng_gguf_close(g);
	return ret;
}
