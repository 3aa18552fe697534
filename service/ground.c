/*
 * ground.c: the library's grounding check (svc_ground, service_internal.h).
 * A part found for a question holding a fact of the same kind about
 * another subject ("The river that flows through Torombe is called X" for
 * a question about Halwick) makes the model answer confidently and wrong:
 * the retrieval matched the question's common words, and the model reads
 * its question's name over the part's.  So before a part may answer, the
 * question's rare names must occur in it: its words written with a capital
 * (not its first word, nor a stop word) that the index holds in at most 1
 * part in SVC_GROUND_RARE_PER (at least 1) -- a name it holds nowhere too.
 * A common capitalised word ("Python" in a library of Python's documents)
 * says nothing of which part answers, and is not asked for.  The rule was
 * set on the library bench's tuning questions (bench/RESULTS.md): their
 * names are held by 0 or 1 of 64 parts, their other words by 3 or more,
 * and some of those ("mountain", for a text's "Mount") by none, which is
 * why only names are asked for, not every rare word.
 */
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "index/index.h"
#include "service/service_internal.h"

int
svc_ground(struct svc *v, const char *question, const struct svc_hit *hits, unsigned n,
    int *grounded, char *names, size_t cap, char *why, size_t why_len)
{
	struct idx_word w[IDX_TERMS_MAX];
	struct idx *x;
	long n_parts, df, rare_max;
	size_t at = 0;
	unsigned i;
	int n_w, k, yes, n_rare = 0;

	for (i = 0; i < n; i++)
		grounded[i] = 1;
	if (cap)
		names[0] = '\0';
	if (!v->index || !n)
		return 0;
	x = index_idx(v->index);
	if (idx_n_parts(x, &n_parts, why, why_len))
		return -1;
	rare_max = n_parts / SVC_GROUND_RARE_PER > 1 ? n_parts / SVC_GROUND_RARE_PER : 1;
	n_w = idx_words(question, strlen(question), w);
	for (k = 0; k < n_w; k++) {
		if (!w[k].name)
			continue;
		if (idx_parts_with(x, w[k].w, rare_max + 1, &df, why, why_len))
			return -1;
		if (df > rare_max)
			continue;
		n_rare++;
		if (at < cap)
			at += (size_t)snprintf(names + at, cap - at, "%s%s", at ? ", " : "", w[k].w);
		for (i = 0; i < n; i++) {
			if (!grounded[i])
				continue;
			if (idx_part_has(x, hits[i].doc_id, hits[i].part, w[k].w, &yes, why, why_len))
				return -1;
			grounded[i] = yes;
		}
	}
	if (at >= cap && cap > 4) /* cut: say so */
		memcpy(names + cap - 4, "...", 4);
	return n_rare;
}
