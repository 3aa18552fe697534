/*
 * tap.h: the tiny test harness every tests/test_*.c uses.
 *
 * A test program defines `static const struct tap_test tests[]` ({name, fn}
 * pairs, fn returning TAP_PASS, TAP_FAIL or TAP_SKIP) and writes its main()
 * as TAP_MAIN(setup, teardown).  Output is TAP ("ok 3 - name"); the last line
 * is "N passed, N failed, N skipped".  alarm() is a watchdog.
 */
#ifndef TESTS_TAP_H
#define TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum tap_result { TAP_PASS = 0, TAP_FAIL = 1, TAP_SKIP = 2 };

struct tap_test {
	const char *name;
	enum tap_result (*fn)(void);
};

/* Say where and why a check failed (TAP_CHECK, TAP_EXPECT). */
#define TAP_SAY_FAILED(cond_text, ...)                                         \
	do {                                                                   \
		printf("#   %s:%d: check failed: %s\n#   ", __FILE__, __LINE__, \
		    cond_text);                                                \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
	} while (0)

/* Check a condition inside a test fn; on failure print where and why and
 * return TAP_FAIL from the test. */
#define TAP_CHECK(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			TAP_SAY_FAILED(#cond, __VA_ARGS__);                    \
			return TAP_FAIL;                                       \
		}                                                              \
	} while (0)

/* The same in a test fn that cleans up: on failure set its `ok` to 0 and
 * jump to its `out:` label. */
#define TAP_EXPECT(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			TAP_SAY_FAILED(#cond, __VA_ARGS__);                    \
			ok = 0;                                                \
			goto out;                                              \
		}                                                              \
	} while (0)

/* Diagnostic line in the TAP stream. */
static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void
tap_diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Runs the tests named on the command line (all when none), prints TAP and
 * a summary line, returns the exit status. */
static inline int
tap_main(const struct tap_test *tests, size_t n, int argc, char **argv)
{
	size_t i;
	int pass = 0, fail = 0, skip = 0, j;
	const char *wd = getenv("TAP_TIMEOUT");
	struct timespec t0, t1;

	alarm(wd ? (unsigned)atoi(wd) : 1200);
	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		int selected = argc <= 1;
		enum tap_result r;
		for (j = 1; j < argc; j++)
			if (strcmp(argv[j], tests[i].name) == 0)
				selected = 1;
		if (!selected) {
			printf("ok %zu - %s # SKIP not selected\n", i + 1, tests[i].name);
			skip++;
			continue;
		}
		fflush(stdout);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = tests[i].fn();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		/* where a slow test program spends its time, per subtest */
		printf("# time %s %.2f s\n", tests[i].name,
		    (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
		if (r == TAP_PASS) {
			printf("ok %zu - %s\n", i + 1, tests[i].name);
			pass++;
		} else if (r == TAP_SKIP) {
			printf("ok %zu - %s # SKIP\n", i + 1, tests[i].name);
			skip++;
		} else {
			printf("not ok %zu - %s\n", i + 1, tests[i].name);
			fail++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
	return fail ? 1 : 0;
}

/* tap_main between a program's set-up and tear-down (either NULL): a
 * set-up that returns non-zero (after printing why) ends the program with
 * status 1 before any test; a tear-down that returns non-zero fails a run
 * whose tests passed. */
static inline int
tap_run(const struct tap_test *tests, size_t n, int (*setup)(void), int (*teardown)(void),
    int argc, char **argv)
{
	int rc;
	if (setup && setup() != 0)
		return 1;
	rc = tap_main(tests, n, argc, argv);
	if (teardown && teardown() != 0 && rc == 0)
		rc = 1;
	return rc;
}

/* The main() of a test program over its `tests` table. */
#define TAP_MAIN(setup, teardown)                                              \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		return tap_run(tests, sizeof(tests) / sizeof(tests[0]), setup, \
		    teardown, argc, argv);                                     \
	}

/* Path of the bundled model (KVSNAP_MODEL overrides). */
static inline const char *
tap_model_path(void)
{
	const char *p = getenv("KVSNAP_MODEL");
	return p ? p : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

#endif /* TESTS_TAP_H */
