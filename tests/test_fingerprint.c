/*
 * test_fingerprint.c: engine/fingerprint_cache.c.  A big file's fingerprint
 * is remembered under $XDG_CACHE_HOME/kvsnap/fp and used again; a write to
 * the file (new mtime and ctime), a malformed entry, or an entry others may
 * write is never believed; small files are not remembered.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/fingerprint.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define BIG ((size_t)64 << 20) /* the cache's threshold (FP_CACHE_MIN) */

static char dir[256], file[300], entry[400];

/* A BIG-byte file with a few non-zero bytes (sparse, so cheap), mapped. */
static int
make_file(unsigned char mark, int *fd, void **map)
{
	struct stat st;

	*fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (*fd < 0 || ftruncate(*fd, (off_t)BIG) || pwrite(*fd, &mark, 1, 12345) != 1 ||
	    fstat(*fd, &st))
		return -1;
	snprintf(entry, sizeof(entry), "%s/kvsnap/fp/%llu-%llu", dir,
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	*map = mmap(NULL, BIG, PROT_READ, MAP_SHARED, *fd, 0);
	return *map == MAP_FAILED ? -1 : 0;
}

/* Replace the entry's hex (the last 64 characters before '\n'). */
static int
forge_entry(const char *hex)
{
	char buf[256];
	FILE *f = fopen(entry, "r+");
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;

	if (!f || n < 65)
		return f ? fclose(f), -1 : -1;
	memcpy(buf + n - 65, hex, 64);
	rewind(f);
	fwrite(buf, 1, n, f);
	return fclose(f);
}

static enum tap_result
test_cache(void)
{
	char want[65], got[65], fake[65];
	struct stat st;
	void *map;
	int fd;

	memset(fake, 'a', 64);
	fake[64] = '\0';
	TAP_CHECK(make_file(7, &fd, &map) == 0, "cannot make %s", file);
	TAP_CHECK(eng_fingerprint(map, BIG, want) == 0, "hash");
	TAP_CHECK(eng_fingerprint_file(fd, map, BIG, got) == 0 && !strcmp(got, want),
	    "first: %s vs %s", got, want);
	TAP_CHECK(stat(entry, &st) == 0 && (st.st_mode & 0777) == 0600, "entry %s", entry);
	/* the entry is what the second open reads: a forged hex shows it */
	TAP_CHECK(forge_entry(fake) == 0, "forge");
	TAP_CHECK(eng_fingerprint_file(fd, map, BIG, got) == 0 && !strcmp(got, fake),
	    "the entry was not used: %s", got);
	/* an entry others may write is not believed */
	TAP_CHECK(chmod(entry, 0620) == 0, "chmod");
	TAP_CHECK(eng_fingerprint_file(fd, map, BIG, got) == 0 && !strcmp(got, want),
	    "a group-writable entry was believed");
	/* (the hash above rewrote the entry, 0600, with the true hex) */
	TAP_CHECK(forge_entry(fake) == 0, "forge");
	/* a write to the file: new ctime, so the entry is stale */
	usleep(20000);
	TAP_CHECK(pwrite(fd, "x", 1, 99) == 1, "write");
	TAP_CHECK(eng_fingerprint(map, BIG, want) == 0, "hash");
	TAP_CHECK(eng_fingerprint_file(fd, map, BIG, got) == 0 && !strcmp(got, want),
	    "a stale entry was believed after a write");
	/* a malformed entry (one hex digit not hex) */
	fake[10] = 'g';
	TAP_CHECK(forge_entry(fake) == 0, "forge");
	TAP_CHECK(eng_fingerprint_file(fd, map, BIG, got) == 0 && !strcmp(got, want),
	    "a malformed entry was believed");
	munmap(map, BIG);
	close(fd);
	unlink(entry);
	return TAP_PASS;
}

static enum tap_result
test_small_not_cached(void)
{
	char path[300], hex[65], want[65];
	static const char data[] = "a small file";
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/small", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	TAP_CHECK(fd >= 0 && write(fd, data, sizeof(data)) == (ssize_t)sizeof(data), "write");
	TAP_CHECK(eng_fingerprint(data, sizeof(data), want) == 0, "hash");
	TAP_CHECK(eng_fingerprint_file(fd, data, sizeof(data), hex) == 0 && !strcmp(hex, want),
	    "small: %s", hex);
	TAP_CHECK(fstat(fd, &st) == 0, "fstat");
	snprintf(entry, sizeof(entry), "%s/kvsnap/fp/%llu-%llu", dir,
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	TAP_CHECK(access(entry, F_OK) != 0, "a small file got an entry");
	close(fd);
	unlink(path);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "cache", test_cache },
	{ "small_not_cached", test_small_not_cached },
};

static int
setup(void)
{
	if (th_tmpdir(dir, sizeof(dir), "fp"))
		return -1;
	snprintf(file, sizeof(file), "%s/model.bin", dir);
	setenv("XDG_CACHE_HOME", dir, 1);
	return 0;
}

static int
teardown(void)
{
	unlink(file);
	return th_rm_rf(dir);
}

TAP_MAIN(setup, teardown)
