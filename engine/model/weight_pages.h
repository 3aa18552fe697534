/*
 * weight_pages.h: the weights a decode step streams, copied onto 2 MiB pages
 * (weight_pages.c); model.c's, at open and close.
 */
#ifndef ENGINE_MODEL_WEIGHT_PAGES_H
#define ENGINE_MODEL_WEIGHT_PAGES_H

#include <stddef.h>

struct eng_model;

/* Point the output projection and every layer's matrices at a private
 * copy on huge pages (m->pages), when wanted and possible; else leave them
 * in the map.  0, or the error of a failed read with a reason in why. */
int model_weights_to_pages(struct eng_model *m, char *why, size_t why_len);
void model_weights_pages_free(struct eng_model *m);

#endif
