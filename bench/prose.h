/*
 * prose.h: the benches' stock text (header-only: each bench is one
 * program): every license text Debian ships, concatenated in name order.
 */
#ifndef BENCH_PROSE_H
#define BENCH_PROSE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

/* The license texts of /usr/share/common-licenses, concatenated in name
 * order (malloc'd, *len bytes); NULL if the folder cannot be read. */
static char *
bench_prose(size_t *len)
{
	const char *dir = "/usr/share/common-licenses";
	struct dirent **ents;
	char *buf = NULL, path[1024];
	size_t n = 0;
	int k, i;
	if ((k = scandir(dir, &ents, NULL, alphasort)) < 0)
		return NULL;
	for (i = 0; i < k; i++) {
		FILE *f;
		long sz;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && (f = fopen(path, "rb"))) {
			if (!fseek(f, 0, SEEK_END) && (sz = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
				char *nb = realloc(buf, n + (size_t)sz + 1);
				if (nb) {
					buf = nb;
					n += fread(buf + n, 1, (size_t)sz, f);
				}
			}
			fclose(f);
		}
		free(ents[i]);
	}
	free(ents);
	*len = n;
	return buf;
}

#endif /* BENCH_PROSE_H */
