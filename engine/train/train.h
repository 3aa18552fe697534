/*
 * train.h: what is learned or measured offline (engine/train/): Locret's
 * retaining heads trained on CIS or kvzip labels, PoD's block-map
 * calibration.
 */
#ifndef ENGINE_TRAIN_TRAIN_H
#define ENGINE_TRAIN_TRAIN_H

#include "engine/run/run.h"

/* ------------------------------------------------------------------------ */
/* Retaining-head training (spec/locret.md §2–§4, §7.1–7.2;
 * engine/train/locret_labels.c, engine/train/locret_train.c)
 *
 * One example = (prompt P, answer A).  eng_train_collect() runs the frozen
 * model once over P ++ A and keeps, per layer, the prompt tokens' pre-RoPE
 * [Q|K|V] (the heads' input) and the CIS labels: the largest scaled
 * pre-softmax logit of any answer query of the KV head's GQA group against
 * each prompt key.  eng_train_step() then takes one AdamW step of every
 * layer's head (Smooth-L1 + α·adjacent smoothness, clip by value, the
 * reference schedule scaled to the step count).  Weights and moments are
 * fp32; a trainer is deterministic for its seed whatever the thread count,
 * and a checkpoint resumes bit-identically.  One thread at a time.          */

struct eng_train_opts {
	int d_r;          /* hidden width (256) */
	uint64_t seed;    /* initialization seed (0) */
	int64_t n_steps;  /* schedule length: optimizer steps of the run */
	int64_t warmup;   /* linear warmup steps (round(2/3 n_steps)) */
	double lr;        /* peak learning rate (5e-4) */
	double beta1, beta2, eps, wd; /* AdamW (0.9, 0.95, 1e-8, 0.01) */
	double clip;      /* gradient clip by value (0.5) */
	double alpha;     /* smoothness weight α (0.0025) */
	double sigma;     /* init N(0, σ²) (SmolLM2 initializer_range 1/24) */
	int64_t t_max;    /* prompt tokens trained on (10240) */
};

/* One collected example: features and labels of its first n_p tokens. */
struct eng_train_example {
	int n_layer, n_head_kv;
	int64_t d_in, n_p, n_a;
	float *u;          /* (n_layer, n_p, d_in) pre-RoPE [q | k | v] per token */
	float *s;          /* (n_layer, n_head_kv, n_p) CIS labels */
	int32_t *answer;   /* (n_a) the answer tokens that were fed */
};

struct eng_train_stats {
	double loss;       /* L_reg + α·L_smooth (spec §3) */
	double reg;        /* L_reg (mean over layers, heads, tokens) */
	double smooth;     /* L_smooth (per-layer MSEs summed over layers) */
	double overlap;    /* top-10 % overlap of predictions and labels */
	double lr;         /* the learning rate of this step */
	int64_t t;         /* tokens trained on */
};

struct eng_train;

/* Defaults for a run of n_steps steps. */
void eng_train_opts_default(struct eng_train_opts *o, int64_t n_steps);
/* lr(s) after s steps: lr·s/warmup during warmup, then linear to 0 at
 * n_steps (spec §4.1, 3000/2000 being the reference). */
double eng_train_lr(const struct eng_train_opts *o, int64_t s);
/* A fresh trainer for model m (weights drawn from opts->seed).  ENG_ERR_ARG
 * for bad options, ENG_ERR_NOMEM. */
int eng_train_init(struct eng_train **out, const struct eng_model *m,
    const struct eng_train_opts *opts);
void eng_train_free(struct eng_train *t);
int64_t eng_train_steps_done(const struct eng_train *t);
const struct eng_train_opts *eng_train_get_opts(const struct eng_train *t);
/* Layer weights: fc1.weight (d_r, d_in) and fc2.weight (n_head_kv, d_r). */
float *eng_train_w1(struct eng_train *t, int layer);
float *eng_train_w2(struct eng_train *t, int layer);

/* Label pass (spec §2, §7.1).  With answer != NULL the n_a answer tokens
 * are teacher-forced; with answer == NULL the model answers greedily from
 * the full prompt, up to gen_max tokens, the end-of-generation token (tok
 * given) included and fed (gen_max 0: the prompt's features only, no
 * labels).  Errors: ENG_ERR_ARG, ENG_ERR_CONTEXT (P ++ A
 * longer than the window), ENG_ERR_NOMEM, forward errors. */
int eng_train_collect(struct eng_ctx *c, const int32_t *prompt, int64_t n_p,
    const int32_t *answer, int64_t n_a, int64_t gen_max, const struct eng_tok *tok,
    struct eng_train_example **out);
void eng_train_example_free(struct eng_train_example *ex);
/* kvzip labels (issue 19): replace ex's labels by log of the score our
 * kvzip policy gives each unit of ids[0..n) (n == ex->n_p; ex collected
 * with answer NULL, gen_max 0: features only): p is a bound kvzip policy at
 * ratio 1, so nothing is evicted and every unit keeps its score; sinks get
 * log 1 = 0, scores under ENG_KVZIP_LABEL_FLOOR the floor's log.  One
 * implementation of the score: the policy's own ingest. */
#define ENG_KVZIP_LABEL_FLOOR 1e-12f
int eng_train_label_kvzip(struct eng_ctx *c, struct eng_policy *p, const int32_t *ids, int64_t n,
    int64_t chunk, struct eng_train_example *ex);

/* Loss and overlap on ex (update == 0), or the same plus one optimizer step
 * (update != 0; the stats are those before the step).  Threads: c's pool,
 * one layer per task. */
int eng_train_step(struct eng_train *t, struct eng_ctx *c, const struct eng_train_example *ex,
    int update, struct eng_train_stats *st);

/* Checkpoint: weights, moments, step, options and the model fingerprint,
 * with a BLAKE2b-256 trailer; written to PATH.tmp, synced and renamed.  Load
 * refuses another model (ENG_ERR_ARG), a bad file (ENG_ERR_FORMAT) and
 * ENG_ERR_IO / ENG_ERR_NOMEM, with a reason. */
int eng_train_save(const struct eng_train *t, const char *path, char *why, size_t why_len);
int eng_train_load(struct eng_train **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len);
/* The sidecar (f16 tensors, base fingerprint = the model's) for --policy
 * locret heads=PATH; labels "cis" or "kvzip" (what the heads learned). */
int eng_train_write_heads(const struct eng_train *t, const char *path, const char *labels,
    const char *recipe, const char *data, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* PoD calibration (the block map: engine/cache/cache.h)                     */

/* Calibrate (spec/pod.md §3.2): run the dense model over n_texts token
 * sequences (2 <= length <= the model's window; chunked by the ctx's max
 * chunk), record the attention rows of the last q queries per layer and
 * query head, average 1 − JS over texts, rows and each GQA group, and group
 * with delta (or target_saving >= 0).  progress (may be NULL) is called
 * after each text. */
int eng_pod_calibrate(struct eng_ctx *c, const int32_t *const *texts, const int64_t *lens,
    int n_texts, int q, double delta, double target_saving, struct eng_pod_map **out,
    void (*progress)(void *arg, int done, int total), void *arg, char *why, size_t why_len);

#endif /* ENGINE_TRAIN_TRAIN_H */
