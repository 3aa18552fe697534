/*
 * fuzz_http_route.c: libFuzzer target for the route /metrics files an HTTP
 * request under (daemon/http_route.c): any bytes as a URI give one of the
 * known routes, whose label is one of the fixed names (a client's bytes
 * never become a label), and the query string never changes the route.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri = malloc(size + 3), *q;
	enum metrics_route r;
	const char *name;

	if (!uri)
		return 0;
	memcpy(uri, data, size);
	uri[size] = '\0'; /* evhttp hands over a C string: up to the first NUL */
	r = metrics_route_of(uri);
	assert((unsigned)r < MR_N);
	name = metrics_route_name(r);
	assert(name && (name[0] == '/' || !strcmp(name, "other")));
	assert(!strchr(name, '"') && !strchr(name, '\\') && !strchr(name, '\n'));
	/* a query string after the path leaves the route as it was */
	if (!strpbrk(uri, "?#")) {
		q = uri + strlen(uri);
		memcpy(q, "?x", 3);
		assert(metrics_route_of(uri) == r);
	}
	assert(metrics_route_of(NULL) == MR_OTHER);
	free(uri);
	return 0;
}
