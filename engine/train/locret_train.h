/*
 * locret_train.h: retaining-head training, one layer's loss and gradients
 * (engine/train/locret_train.c; spec/locret.md §3); engine/ and its tests
 * only.
 */
#ifndef ENGINE_TRAIN_LOCRET_TRAIN_H
#define ENGINE_TRAIN_LOCRET_TRAIN_H

#include <stdint.h> /* for int64_t */

/* One layer's share of the loss and its gradients.  u (T, d_in) features,
 * s labels of head m at s[m·ld_s + t], w1 (d_r, d_in), w2 (n_kv, d_r).
 * Out: *reg = (1/(L·n_kv·T))·Σ SL1 (this layer's part of L_reg), *smooth =
 * the layer's adjacent MSE (unweighted), *overlap = its top-10 % overlap;
 * g1, g2 (shapes of w1, w2) the gradients of reg + α·smooth (unclipped).
 * ENG_ERR_NOMEM or 0. */
int eng_train_layer_grad(const float *u, const float *s, int64_t ld_s, int64_t T,
    int64_t d_in, int d_r, int n_kv, int n_layer, double alpha, const float *w1,
    const float *w2, float *g1, float *g2, double *reg, double *smooth, double *overlap);
/* The same in double with plain loops (tests: finite differences); returns
 * reg + α·smooth; g1/g2 may be NULL (loss only). */
double eng_train_layer_grad_d(const double *u, const double *s, int64_t ld_s, int64_t T,
    int64_t d_in, int d_r, int n_kv, int n_layer, double alpha, const double *w1,
    const double *w2, double *g1, double *g2);
/* Top-k overlap of pred[t·stride] and lab[t] (t < T), k = max(1, ⌊0.1·T⌋);
 * ties broken towards the lower index.  idx: scratch of 2·T int64. */
double eng_train_overlap(const float *pred, int64_t stride, const float *lab, int64_t T,
    int64_t *idx);

#endif /* ENGINE_TRAIN_LOCRET_TRAIN_H */
