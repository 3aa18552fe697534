/*
 * fingerprint_cache.c: a mapped file's fingerprint (engine/fingerprint.c),
 * remembered between runs.  Hashing a 1 GB model takes seconds, and every
 * `kvsnap --local` run and every kvsnapd start opens the model, so the hex
 * of a file of 64 MiB or more (smaller ones hash at once) is kept in the
 * user's cache directory (common/paths.h, kv_cache_default) under
 * fp/DEV-INO, with the file's size, mtime and ctime to the nanosecond.  Any
 * write to the file changes its ctime (set by the kernel: no user can
 * choose it) and a file renamed into place or copied is another inode, so
 * a stale entry never matches; an entry is trusted only in a directory and
 * file owned by this user that nobody else can write.  A cache that cannot
 * be read or written costs only the hashing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/paths.h"
#include "engine/base.h"
#include "engine/fingerprint.h"

#define FP_MAGIC "kvsnap-model-fp 1"
/* Smaller files hash in under ~0.1 s: not worth an entry each (tests make
 * hundreds of tiny models). */
#define FP_CACHE_MIN ((size_t)64 << 20)

/* The entry's path for the file st: 0, or -1 when there is no cache dir. */
static int
fp_entry_path(const struct stat *st, char *out, size_t cap, char *dir, size_t dir_cap)
{
	char base[4096];
	int n;

	if (kv_cache_default(base, sizeof(base)))
		return -1;
	n = snprintf(dir, dir_cap, "%s/fp", base);
	if (n < 0 || (size_t)n >= dir_cap)
		return -1;
	n = snprintf(out, cap, "%s/%" PRIu64 "-%" PRIu64, dir, (uint64_t)st->st_dev,
	    (uint64_t)st->st_ino);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The line an entry holds for st and the hex fingerprint hex. */
static void
fp_line(const struct stat *st, const char *hex, char *out, size_t cap)
{
	snprintf(out, cap, FP_MAGIC " %" PRIu64 " %" PRId64 ".%09ld %" PRId64 ".%09ld %s\n",
	    (uint64_t)st->st_size, (int64_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	    (int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, hex);
}

/* Mine and writable by nobody else: the only entries trusted. */
static int
fp_private(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* The remembered hex for st into hex[65]: 0, or -1 (no entry, a stale or
 * malformed one, or one this user does not own alone). */
static int
fp_lookup(const struct stat *st, char *hex)
{
	char path[4200], dir[4200], want[256], got[256];
	struct stat ds, fs;
	ssize_t n;
	size_t k;
	int fd;

	if (fp_entry_path(st, path, sizeof(path), dir, sizeof(dir)) ||
	    stat(dir, &ds) || !S_ISDIR(ds.st_mode) || !fp_private(&ds))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = -1;
	if (!fstat(fd, &fs) && S_ISREG(fs.st_mode) && fp_private(&fs))
		n = read(fd, got, sizeof(got) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	got[n] = '\0';
	fp_line(st, "", want, sizeof(want));
	k = strlen(want) - 1; /* the line up to the hex, without its '\n' */
	if ((size_t)n != k + 65 || memcmp(got, want, k) || got[k + 64] != '\n')
		return -1;
	for (size_t i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", got[k + i]) || !got[k + i])
			return -1;
	memcpy(hex, got + k, 64);
	hex[64] = '\0';
	return 0;
}

/* Remember hex for st (a temporary file renamed over the entry, so a
 * reader never sees half a line); failures are ignored. */
static void
fp_store(const struct stat *st, const char *hex)
{
	char path[4200], dir[4200], tmp[4300], line[256], why[64];
	size_t len;
	int fd, ok;

	if (fp_entry_path(st, path, sizeof(path), dir, sizeof(dir)) ||
	    kv_mkdir_parents(dir, why, sizeof(why)) ||
	    (mkdir(dir, 0700) && errno != EEXIST))
		return;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return;
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0)
		return;
	fp_line(st, hex, line, sizeof(line));
	len = strlen(line);
	ok = write(fd, line, len) == (ssize_t)len;
	ok = !close(fd) && ok;
	if (!ok || rename(tmp, path))
		unlink(tmp);
}

int
eng_fingerprint_file(int fd, const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1])
{
	struct stat st;
	int rc, have_st = n >= FP_CACHE_MIN && fd >= 0 && !fstat(fd, &st) &&
	    S_ISREG(st.st_mode) && (uint64_t)st.st_size == (uint64_t)n;

	if (have_st && !fp_lookup(&st, hex))
		return 0;
	if ((rc = eng_fingerprint(p, n, hex)))
		return rc;
	if (have_st)
		fp_store(&st, hex);
	return 0;
}
