/*
 * isolate.c: fmt_extract in a child process, so that what poppler and
 * libxml2 cannot bound from inside is bounded from outside (issue 26,
 * defects 7 and 8: a 466 KB PDF Flate bomb took the daemon from 270 MB to
 * 3.5 GB and it stayed there; an HTML parse held a worker for minutes
 * through disconnects and SIGTERM).
 *
 * The parent (any thread of kvsnapd, or kvsnap --local) writes the bytes
 * into a memfd and starts the binary it is running (/proc/self/exe) with
 * posix_spawn, never fork() alone (a multithreaded process may not call
 * poppler in a forked copy): argv[1] FMT_CHILD_ARG, the memfd as stdin, a
 * pipe as stdout, another memfd as stderr (poppler's and glib's messages,
 * read when the child dies), every other descriptor closed.  The child
 * (fmt_child_main, called first thing by both programs' main) sets its own
 * limits before it reads a byte: RLIMIT_DATA (heap and anonymous maps),
 * RLIMIT_CPU, no core file, stderr bounded; it dies with its parent
 * (PR_SET_PDEATHSIG).  It writes a fixed header (the result) and the text.
 * The parent polls the pipe every 50 ms: the cancel flag or the deadline
 * kill the child (SIGKILL).  Its memory is returned by its exit, whatever
 * the libraries leaked or kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fail.h"
#include "common/fdio.h"
#include "formats/formats.h"

extern char **environ;

/* What the child writes before the text (the same binary reads it). */
struct iso_head {
	char magic[8];
	int32_t rc, kind, pages;
	uint64_t len;
	char encoding[FMT_ENCODING_MAX + 1];
	char name[FMT_NAME_MAX];
	char why[512];
};
#define ISO_MAGIC "kvsnapX"
#define ISO_ERR_KEEP 4096 /* bytes of the child's stderr kept and read */

/* AddressSanitizer reserves terabytes of shadow memory: a data limit would
 * stop its runtime from starting, so SAN=1 builds give the child ASan's
 * own limit on its resident memory instead (iso_env). */
#if defined(__SANITIZE_ADDRESS__)
#define ISO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ISO_ASAN 1
#endif
#endif
#ifndef ISO_ASAN
#define ISO_ASAN 0
#endif

/* ------------------------------------------------------------------------ */
/* The child                                                                 */

/* Lower a limit to cur (soft) and max (hard), never above what it is
 * already (raising a hard limit needs privilege; lowering never does). */
static int
iso_limit(int res, rlim_t cur, rlim_t max)
{
	struct rlimit rl;
	if (getrlimit(res, &rl) != 0)
		return -1;
	if (rl.rlim_max != RLIM_INFINITY && max > rl.rlim_max)
		max = rl.rlim_max;
	if (cur > max)
		cur = max;
	rl.rlim_cur = cur;
	rl.rlim_max = max;
	return setrlimit(res, &rl);
}

void
fmt_child_main(int argc, char **argv)
{
	struct iso_head h;
	struct fmt_doc d;
	struct stat st;
	const char *enc;
	void *p = NULL;
	size_t max;
	int rc;

	if (argc < 2 || strcmp(argv[1], FMT_CHILD_ARG))
		return;
	if (argc != 5)
		_exit(2);
	/* gone with the parent (a second SIGTERM, a crash), never orphaned */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != (pid_t)strtol(argv[4], NULL, 10))
		_exit(2);
	enc = argv[2];
	max = (size_t)strtoull(argv[3], NULL, 10);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ISO_MAGIC, sizeof(h.magic));
	iso_limit(RLIMIT_CORE, 0, 0); /* no core file of a bomb */
	iso_limit(RLIMIT_FSIZE, ISO_ERR_KEEP * 16, ISO_ERR_KEEP * 16); /* stderr, a memfd */
	signal(SIGXFSZ, SIG_IGN); /* a full stderr: writes fail, that is all */
	/* SIGXCPU at the soft limit, SIGKILL at the hard; unlimited, nothing is read */
	rc = iso_limit(RLIMIT_CPU, FMT_SECONDS_MAX, FMT_SECONDS_MAX + 5);
	if (!rc && !ISO_ASAN)
		rc = iso_limit(RLIMIT_DATA, FMT_MEM_MAX, FMT_MEM_MAX);
	if (rc)
		rc = kv_fail(h.why, sizeof(h.why), FMT_ERR_NOMEM, "cannot limit the extraction "
		    "process: %s", strerror(errno));
	else if (fstat(0, &st) != 0)
		_exit(3);
	else if (st.st_size > 0 && (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, 0,
	    0)) == MAP_FAILED)
		_exit(3);
	else if ((rc = fmt_extract(p ? p : "", (size_t)st.st_size, enc[0] ? enc : NULL, max, &d,
	    h.why, sizeof(h.why))) == FMT_ERR_NOMEM) /* malloc said no: the data limit */
		rc = kv_fail(h.why, sizeof(h.why), FMT_ERR_TOO_LARGE, "needs over %zu MiB of memory "
		    "to read, the limit for one document", FMT_MEM_MAX >> 20);
	h.rc = rc;
	if (!rc) {
		h.kind = (int32_t)d.kind;
		h.pages = d.pages;
		h.len = d.len;
		memcpy(h.encoding, d.encoding, sizeof(h.encoding));
		memcpy(h.name, d.name, sizeof(h.name));
	}
	if (kv_write_all(1, &h, sizeof(h)) || (!rc && kv_write_all(1, d.text, d.len)))
		_exit(4);
	_exit(0);
}

/* ------------------------------------------------------------------------ */
/* The parent                                                                */

/* 1 if the child's stderr (the memfd) says an allocation failed: glib's
 * g_malloc and C++'s new abort with these words. */
static int
iso_out_of_memory(int errfd)
{
	char buf[ISO_ERR_KEEP + 1];
	off_t size = lseek(errfd, 0, SEEK_END), at = size > ISO_ERR_KEEP ? size - ISO_ERR_KEEP : 0;
	ssize_t n = size > 0 ? pread(errfd, buf, ISO_ERR_KEEP, at) : 0;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, "alloc") || strstr(buf, "memory") || strstr(buf, "Memory") ||
	    strstr(buf, "rss limit");
}

/* The child's environment: ours, and under ASan its RSS limit added to
 * ASAN_OPTIONS (later options win).  NULL: out of memory. */
static char **
iso_env(char **opt)
{
	size_t n = 0, i, o = 0;
	char **env;
	const char *old = NULL;

	*opt = NULL;
	while (environ[n])
		n++;
	if (!(env = calloc(n + 2, sizeof(*env))))
		return NULL;
	for (i = 0; i < n; i++) {
		if (ISO_ASAN && !strncmp(environ[i], "ASAN_OPTIONS=", 13))
			old = environ[i] + 13;
		else
			env[o++] = environ[i];
	}
	if (ISO_ASAN) {
		size_t len = (old ? strlen(old) : 0) + 64;
		if (!(*opt = malloc(len))) {
			free(env);
			return NULL;
		}
		snprintf(*opt, len, "ASAN_OPTIONS=%s%shard_rss_limit_mb=%zu", old ? old : "",
		    old && old[0] ? ":" : "", FMT_MEM_MAX >> 20);
		env[o++] = *opt;
	}
	env[o] = NULL;
	return env;
}

/* Start the child: its pid, or -1 with the reason. */
static pid_t
iso_spawn(int docfd, int outfd, int errfd, const char *encoding, size_t max, char *why,
    size_t why_len)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	char smax[32], sppid[32], name[] = "kvsnap-extract", flag[] = FMT_CHILD_ARG,
	    enc[FMT_ENCODING_MAX + 1];
	char *argv[6], **env, *opt;
	pid_t pid = -1;
	int rc;

	snprintf(smax, sizeof(smax), "%zu", max);
	snprintf(sppid, sizeof(sppid), "%ld", (long)getpid());
	snprintf(enc, sizeof(enc), "%s", encoding ? encoding : "");
	argv[0] = name;
	argv[1] = flag;
	argv[2] = enc;
	argv[3] = smax;
	argv[4] = sppid;
	argv[5] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, docfd, 0);
	posix_spawn_file_actions_adddup2(&fa, outfd, 1);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&at);
	/* the daemon's threads block signals; the child starts with none
	 * blocked and the defaults for those that stop it */
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGXCPU);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGHUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	env = iso_env(&opt);
	rc = env ? posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, env) : ENOMEM;
	free(env);
	free(opt);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		kv_fail(why, why_len, FMT_ERR_NOMEM, "cannot start the extraction process: %s",
		    strerror(rc));
		return -1;
	}
	return pid;
}

/* The bytes into a memfd the child reads from its start. */
static int
iso_docfd(const void *bytes, size_t len)
{
	int fd = memfd_create("kvsnap-doc", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (kv_write_all(fd, bytes, len) || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The child's result, read from buf[0..n) once it exited 0. */
static int
iso_result(char *buf, size_t n, size_t max, struct fmt_doc *out, char *why, size_t why_len)
{
	struct iso_head h;
	if (n < sizeof(h))
		return kv_fail(why, why_len, FMT_ERR_NOMEM, "the extraction process ended without "
		    "a result");
	memcpy(&h, buf, sizeof(h));
	h.why[sizeof(h.why) - 1] = h.name[sizeof(h.name) - 1] = '\0';
	h.encoding[sizeof(h.encoding) - 1] = '\0';
	if (memcmp(h.magic, ISO_MAGIC, sizeof(h.magic)) || h.len > max || h.rc < 0 ||
	    h.rc > FMT_ERR_CANCELLED || h.kind < 0 || h.kind > FMT_PDF ||
	    (!h.rc && h.len != n - sizeof(h)))
		return kv_fail(why, why_len, FMT_ERR_NOMEM, "the extraction process's result is "
		    "malformed");
	if (h.rc)
		return kv_fail(why, why_len, h.rc, "%s", h.why);
	memmove(buf, buf + sizeof(h), h.len);
	buf[h.len] = '\0';
	out->text = buf;
	out->len = h.len;
	out->kind = (enum fmt_kind)h.kind;
	out->pages = h.pages;
	memcpy(out->encoding, h.encoding, sizeof(out->encoding));
	memcpy(out->name, h.name, sizeof(out->name));
	return 0;
}

int
fmt_extract_isolated(const void *bytes, size_t len, const char *encoding, size_t max,
    atomic_int *cancel, struct fmt_doc *out, char *why, size_t why_len)
{
	int docfd = -1, errfd = -1, pfd[2] = { -1, -1 }, status = 0, rc, killed = 0;
	size_t cap = sizeof(struct iso_head) + max + 1, n = 0, have = 0;
	double deadline = kv_clock_s(CLOCK_MONOTONIC) + 2.0 * FMT_SECONDS_MAX;
	char *buf = NULL;
	struct rusage ru;
	double cpu;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	memset(&ru, 0, sizeof(ru));
	if (encoding && strlen(encoding) > FMT_ENCODING_MAX)
		return kv_fail(why, why_len, FMT_ERR_ENCODING, "the encoding's name is over %d bytes",
		    FMT_ENCODING_MAX);
	if ((docfd = iso_docfd(bytes, len)) < 0 ||
	    (errfd = memfd_create("kvsnap-extract-err", MFD_CLOEXEC)) < 0 ||
	    pipe2(pfd, O_CLOEXEC) != 0) {
		rc = kv_fail(why, why_len, FMT_ERR_NOMEM, "cannot set up the extraction process: %s",
		    strerror(errno));
		goto out;
	}
	if ((pid = iso_spawn(docfd, pfd[1], errfd, encoding, max, why, why_len)) < 0) {
		rc = FMT_ERR_NOMEM;
		goto out;
	}
	close(pfd[1]);
	pfd[1] = -1;
	close(docfd);
	docfd = -1;
	for (;;) {
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		ssize_t r;
		if (cancel && atomic_load(cancel)) {
			killed = 1;
			break;
		}
		if (kv_clock_s(CLOCK_MONOTONIC) > deadline) {
			killed = 2;
			break;
		}
		if (poll(&pf, 1, 50) <= 0)
			continue;
		if (n == have) { /* grow by doubling, never past cap */
			size_t want = have ? have * 2 : 65536;
			char *nb;
			if (have >= cap) {
				killed = 3; /* more than a result can be */
				break;
			}
			if (want > cap)
				want = cap;
			if (!(nb = realloc(buf, want))) {
				killed = 4;
				break;
			}
			buf = nb;
			have = want;
		}
		r = read(pfd[0], buf + n, have - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (killed)
		kill(pid, SIGKILL);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec;
	if (killed == 1)
		rc = kv_fail(why, why_len, FMT_ERR_CANCELLED, "was being read when the request was "
		    "cancelled");
	else if (killed == 2)
		rc = kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "takes over %d s to read, the limit "
		    "for one document", 2 * FMT_SECONDS_MAX);
	else if (killed)
		rc = kv_fail(why, why_len, FMT_ERR_NOMEM, killed == 3 ? "the extraction process's "
		    "result is too long" : "out of memory for the extracted text");
	else if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU ||
	    (WTERMSIG(status) == SIGKILL && cpu >= FMT_SECONDS_MAX)))
		rc = kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "takes over %d s of CPU to read, the "
		    "limit for one document", FMT_SECONDS_MAX);
	else if ((WIFSIGNALED(status) || WEXITSTATUS(status)) &&
	    (iso_out_of_memory(errfd) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)))
		rc = kv_fail(why, why_len, FMT_ERR_TOO_LARGE, "needs over %zu MiB of memory to read, "
		    "the limit for one document (a decompression bomb?)", FMT_MEM_MAX >> 20);
	else if (WIFSIGNALED(status))
		rc = kv_fail(why, why_len, FMT_ERR_UNSUPPORTED, "crashed the %s parser (signal %d): "
		    "damaged or hostile", len >= 5 && !memcmp(bytes, "%PDF-", 5) ? "PDF" : "document",
		    WTERMSIG(status));
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		rc = kv_fail(why, why_len, FMT_ERR_NOMEM, "the extraction process failed (exit %d)",
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	else if (!(rc = iso_result(buf, n, max, out, why, why_len)))
		buf = NULL; /* out->text now */
out:
	free(buf);
	if (docfd >= 0)
		close(docfd);
	if (errfd >= 0)
		close(errfd);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return rc;
}
