/*
 * bench_engine.c: kvsnap engine speed: prefill tokens/s at several lengths,
 * decode tokens/s, and the machine's sgemm GFLOP/s (the prefill ceiling).
 *
 * usage: bench_engine [-m GGUF] [-t THREADS] [-r REPS] [-L MAX_LEN] [--min-len N]
 *                     [--no-decode] [--cpu] [--json]
 * Prints a table; with --json one object per line (bench/engine.sh merges
 * it with llama.cpp's numbers).  --cpu adds "decode_cpu": each decode
 * step's time in the calling thread's CPU time (best and median ms), which
 * other jobs' load barely moves where wall time does; run it with -t 1, where
 * that thread does all the work.  With more threads it adds "decode_step":
 * each step's wall time (best and median ms), whose best comes from steps
 * that ran with every thread on a core even on a busy machine.
 */
#include <cblas.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/backend.h"
#include "bench/clock.h"
#include "engine/engine.h"

void openblas_set_num_threads(int n);

/* The best and median of n per-step times (sorted in place), as a table
 * line or a JSON line named what. */
static void
print_steps(const char *what, const char *clock_name, double *v, int n, int threads, int json)
{
	qsort(v, (size_t)n, sizeof(double), kv_cmp_double);
	if (json)
		printf("{\"what\":\"%s\",\"threads\":%d,\"best_ms\":%.3f,\"median_ms\":%.3f}\n",
		    what, threads, v[0] * 1e3, v[n / 2] * 1e3);
	else
		printf("%-14s %10s best %.3f ms, median %.3f ms per step (%s)\n", what, "",
		    v[0] * 1e3, v[n / 2] * 1e3, clock_name);
}

/* sgemm GFLOP/s for an (m × k) · (k × n) product, OpenBLAS on n_threads. */
static double
bench_sgemm(int threads, int m, int n, int k)
{
	float *a = calloc((size_t)m * k, 4), *b = calloc((size_t)k * n, 4), *c = calloc((size_t)m * n, 4);
	double t0, best = 1e9;
	int r;
	openblas_set_num_threads(threads);
	for (r = 0; r < 5; r++) {
		t0 = eng_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
		if (eng_now() - t0 < best)
			best = eng_now() - t0;
	}
	free(a);
	free(b);
	free(c);
	return 2.0 * m * n * k / best / 1e9;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "cpu", no_argument, NULL, 'c' },
		{ "min-len", required_argument, NULL, 'M' }, { "no-decode", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 }
	};
	const char *path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
	int threads = 2, reps = 2, json = 0, cpu = 0, max_len = 8192, min_len = 0, decode = 1, c, i,
	    r, n_ids;
	static const int lens[] = { 512, 2048, 8192, 32768 }; /* 32K only when -L asks for it */
	struct eng_model *m = NULL;
	struct eng_ctx *ctx = NULL;
	struct eng_kv *kv = NULL;
	float *logits;
	int32_t *ids;
	char why[256];
	double gf;
	if (bench_backend()) /* KVSNAP_BACKEND=cuda runs this bench on the GPU */
		return 6;

	while ((c = getopt_long(argc, argv, "m:t:r:L:", opts, NULL)) != -1) {
		switch (c) {
		case 'm': path = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'L': max_len = atoi(optarg); break; /* skip longer prefills (a big model) */
		case 'j': json = 1; break;
		case 'c': cpu = 1; break;
		case 'M': min_len = atoi(optarg); break; /* skip shorter prefills */
		case 'D': decode = 0; break;
		default: return 1;
		}
	}
	if (eng_model_open(&m, path, why, sizeof(why))) {
		fprintf(stderr, "bench_engine: %s\n", why);
		return 1;
	}
	n_ids = max_len > 8192 ? 32768 : 8192;
	if (eng_ctx_init(&ctx, m, threads, 512) || eng_kv_init(&kv, m, n_ids > 8192 ? n_ids : n_ids + 200)) {
		fprintf(stderr, "bench_engine: cannot allocate\n");
		return 1;
	}
	logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
	ids = malloc((size_t)n_ids * sizeof(int32_t));
	for (i = 0; i < n_ids; i++)
		ids[i] = 100 + (int32_t)((i * 7919u) % 40000u); /* deterministic tokens */

	gf = bench_sgemm(threads, 512, 1536, 576);
	openblas_set_num_threads(1);
	if (json)
		printf("{\"what\":\"sgemm\",\"threads\":%d,\"gflops\":%.1f}\n", threads, gf);
	else
		printf("kvsnap engine, %d threads, simd %s, sgemm (512x576x1536, %d threads) %.1f GFLOP/s\n\n"
		    "%-14s %10s %12s\n", threads, kern_simd_name(), threads, gf, "test", "tokens", "tokens/s");
	for (i = 0; i < 4 && lens[i] <= max_len; i++) {
		double best = 1e9;
		if (lens[i] < min_len)
			continue;
		for (r = 0; r < (lens[i] >= 8192 ? 1 : reps); r++) {
			double t0;
			eng_kv_clear(kv);
			t0 = eng_now();
			if (eng_forward(ctx, kv, ids, lens[i], NULL, logits))
				return 1;
			if (eng_now() - t0 < best)
				best = eng_now() - t0;
		}
		if (json)
			printf("{\"what\":\"prefill\",\"tokens\":%d,\"tok_s\":%.1f}\n", lens[i], lens[i] / best);
		else
			printf("%-14s %10d %12.1f\n", "prefill", lens[i], lens[i] / best);
		fflush(stdout);
	}
	/* decode: 128 tokens after a 64-token prompt (llama-bench tg128 style) */
	if (decode) {
		double best = 1e9, *step = malloc((size_t)reps * 128 * sizeof(double));
		double *wall = malloc((size_t)reps * 128 * sizeof(double));
		if (!step || !wall)
			return 1;
		for (r = 0; r < reps; r++) {
			double t0;
			int32_t id = ids[0];
			eng_kv_clear(kv);
			/* as eng_generate runs a question: on a device, the pool and
			 * the op buffers stay there (a no-op on the CPU) */
			if (eng_ctx_resident_begin(ctx, kv) < 0 ||
			    eng_forward(ctx, kv, ids, 64, NULL, logits))
				return 1;
			t0 = eng_now();
			for (i = 0; i < 128; i++) {
				double c0 = kv_thread_cpu_s(), w0 = eng_now();
				if (eng_forward(ctx, kv, &id, 1, NULL, logits))
					return 1;
				step[r * 128 + i] = kv_thread_cpu_s() - c0;
				wall[r * 128 + i] = eng_now() - w0;
				id = ids[(i + 1) % 8192];
			}
			if (eng_now() - t0 < best)
				best = eng_now() - t0;
			if (eng_ctx_resident_end(ctx))
				return 1;
		}
		if (json)
			printf("{\"what\":\"decode\",\"tokens\":128,\"tok_s\":%.1f}\n", 128 / best);
		else
			printf("%-14s %10d %12.1f\n", "decode", 128, 128 / best);
		if (cpu)
			print_steps("decode_cpu", "thread CPU time", step, reps * 128, threads, json);
		if (cpu && threads > 1)
			print_steps("decode_step", "wall", wall, reps * 128, threads, json);
		free(step);
		free(wall);
	}
	free(ids);
	free(logits);
	eng_kv_free(kv);
	eng_ctx_free(ctx);
	eng_model_close(m);
	return 0;
}
