/*
 * paths.c: the default model's lookup and the default state directory
 * (paths.h), shared by kvsnap and kvsnapd so that both find the same file
 * and the same store from any working directory.
 *
 * The share directory is found from the running executable, not from a
 * prefix compiled in, so an installed tree still works after it is moved
 * (DESTDIR staging, a copied /opt tree) and a build directory's binary
 * finds the source tree's models/ beside it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "common/paths.h"

/* PREFIX, the parent of the executable's directory, into out: 0, or -1
 * with the reason in why. */
static int
paths_prefix(char *out, size_t cap, char *why, size_t why_len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;
	int i;

	if (n < 0)
		return kv_fail(why, why_len, -1, "/proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	for (i = 0; i < 2; i++) { /* bin/kvsnap -> bin -> PREFIX */
		if (!(slash = strrchr(exe, '/')))
			return kv_fail(why, why_len, -1, "/proc/self/exe is not a path");
		*slash = '\0';
	}
	if ((size_t)snprintf(out, cap, "%s", exe) >= cap)
		return kv_fail(why, why_len, -1, "the executable's path is too long");
	return 0;
}

const char *
kv_doc_dir(void)
{
	static char dir[PATH_MAX + 32];
	static const char *const under[2] = { "share/doc/kvsnap", "docs" };
	char prefix[PATH_MAX], probe[PATH_MAX + 64], why[128];
	int i;

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "docs");
	if (paths_prefix(prefix, sizeof(prefix), why, sizeof(why)))
		return dir;
	for (i = 0; i < 2; i++) {
		/* HTTP.md: in both places, and only a documentation folder has it */
		snprintf(probe, sizeof(probe), "%s/%s/HTTP.md", prefix, under[i]);
		if (!access(probe, R_OK)) {
			snprintf(dir, sizeof(dir), "%s/%s", prefix, under[i]);
			break;
		}
	}
	return dir;
}

/* Append ", PLACE (REASON)" to the list of places looked at. */
static void
paths_looked(char *list, size_t cap, const char *place, const char *reason)
{
	size_t len = strlen(list);
	if (len < cap)
		snprintf(list + len, cap - len, "%s%s (%s)", len ? ", " : "", place, reason);
}

int
kv_model_find(char *out, size_t cap, char *why, size_t why_len)
{
	static const char *const under[2] = { "share/kvsnap", "models" };
	const char *env = getenv("KVSNAP_MODEL");
	char prefix[PATH_MAX], path[PATH_MAX + 64], looked[3 * PATH_MAX] = "", reason[128];
	int i;

	if (env && *env) {
		if (access(env, R_OK) != 0)
			return kv_fail(why, why_len, -1, "$KVSNAP_MODEL names %s, which cannot "
			    "be read: %s (fix or unset KVSNAP_MODEL, or pass -m GGUF)", env,
			    strerror(errno));
		if ((size_t)snprintf(out, cap, "%s", env) >= cap)
			return kv_fail(why, why_len, -1, "$KVSNAP_MODEL is too long");
		return 0;
	}
	paths_looked(looked, sizeof(looked), "$KVSNAP_MODEL", "not set");
	if (paths_prefix(prefix, sizeof(prefix), reason, sizeof(reason)) == 0) {
		for (i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/%s/" KV_MODEL_FILE, prefix, under[i]);
			if (access(path, R_OK) == 0) {
				if ((size_t)snprintf(out, cap, "%s", path) >= cap)
					return kv_fail(why, why_len, -1, "%s: path too long", path);
				return 0;
			}
			paths_looked(looked, sizeof(looked), path, strerror(errno));
		}
	} else {
		paths_looked(looked, sizeof(looked), "the share directory beside the program",
		    reason);
	}
	return kv_fail(why, why_len, -1, "no model found; looked at %s; pass -m GGUF, "
	    "set KVSNAP_MODEL, or install the model (make install; in a source tree, "
	    "make model)", looked);
}

/* $XDG_var/kvsnap when that is an absolute path, else $HOME/home_rel. */
static int
kv_xdg_dir(char *out, size_t cap, const char *xdg_var, const char *home_rel)
{
	const char *xdg = getenv(xdg_var), *home = getenv("HOME");
	int n;

	if (xdg && xdg[0] == '/')
		n = snprintf(out, cap, "%s/kvsnap", xdg);
	else if (home && *home)
		n = snprintf(out, cap, "%s/%s", home, home_rel);
	else
		return -1;
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int
kv_state_default(char *out, size_t cap)
{
	return kv_xdg_dir(out, cap, "XDG_STATE_HOME", ".local/state/kvsnap");
}

int
kv_cache_default(char *out, size_t cap)
{
	return kv_xdg_dir(out, cap, "XDG_CACHE_HOME", ".cache/kvsnap");
}

int
kv_mkdir_parents(const char *dir, char *why, size_t why_len)
{
	char path[PATH_MAX];
	char *p, *last, c;

	if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
		return kv_fail(why, why_len, -1, "%s: path too long", dir);
	last = strrchr(path, '/');
	while (last && last > path && last[1] == '\0') { /* "a/b/" names b */
		*last = '\0';
		last = strrchr(path, '/');
	}
	if (!last || last == path)
		return 0; /* no parent, or the root */
	*last = '\0';
	/* each component from the top; mkdir's EEXIST is the common case */
	for (p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return kv_fail(why, why_len, -1, "create %s: %s", path, strerror(errno));
		if (!(*p = c))
			break;
	}
	return 0;
}
