/*
 * http_route.c: an HTTP request's route as /metrics labels it (metrics.h):
 * the path's template, never the reference or id it holds.  Pure (libc),
 * driven by tests/fuzz/fuzz_http_route.c: the URI is the client's bytes.
 */
#include <string.h>

#include "daemon/metrics.h"

static const char *const route_names[MR_N] = {
	[MR_MODELS] = "/v1/models", [MR_MODEL] = "/v1/models/{id}",
	[MR_CHAT] = "/v1/chat/completions", [MR_COMPLETIONS] = "/v1/completions",
	[MR_DOCS] = "/v1/documents", [MR_DOC] = "/v1/documents/{ref}",
	[MR_HEALTH] = "/health", [MR_METRICS] = "/metrics", [MR_OTHER] = "other",
};

enum metrics_route
metrics_route_of(const char *uri)
{
	size_t n = strcspn(uri ? uri : "", "?#");
	static const struct {
		const char *prefix;
		enum metrics_route exact, below;
	} tab[] = {
		{ "/v1/models", MR_MODELS, MR_MODEL },
		{ "/v1/documents", MR_DOCS, MR_DOC },
		{ "/v1/chat/completions", MR_CHAT, MR_OTHER },
		{ "/v1/completions", MR_COMPLETIONS, MR_OTHER },
		{ "/health", MR_HEALTH, MR_OTHER },
		{ "/metrics", MR_METRICS, MR_OTHER },
	};
	size_t i, p;

	if (!uri)
		return MR_OTHER;
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		p = strlen(tab[i].prefix);
		if (n < p || memcmp(uri, tab[i].prefix, p))
			continue;
		if (n == p || (n == p + 1 && uri[p] == '/'))
			return tab[i].exact;
		if (uri[p] == '/')
			return tab[i].below;
	}
	return MR_OTHER;
}

const char *
metrics_route_name(enum metrics_route r)
{
	return (unsigned)r < MR_N ? route_names[r] : "other";
}

