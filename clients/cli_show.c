/*
 * cli_show.c: numbers and stamps as people read them: sizes in binary
 * units ("2.7 MiB"), times relative to now ("3 min ago", "yesterday", a
 * date for old ones, local time), a document's label (its name, else its
 * source file's base name), and the kept share and compression ratio of a
 * snapshot against the full cache.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clients/cli.h"

void
cli_show_size(uint64_t bytes, char *out, size_t cap)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = -1;
	if (bytes < 1024) {
		snprintf(out, cap, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024.0 && u < 3) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, cap, v < 10.0 ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* Days since the epoch of a local calendar date. */
static long
show_day(time_t t)
{
	struct tm tm;
	if (!localtime_r(&t, &tm))
		return 0;
	return (long)(tm.tm_year) * 366 + tm.tm_yday;
}

void
cli_show_ago(int64_t us, char *out, size_t cap)
{
	time_t now = time(NULL), t = (time_t)(us / 1000000);
	long d = (long)(now - t), days;
	struct tm tm;

	if (us <= 0) {
		snprintf(out, cap, "never");
		return;
	}
	days = show_day(now) - show_day(t);
	if (d >= -60 && d < 10)
		snprintf(out, cap, "just now");
	else if (d >= 0 && d < 60)
		snprintf(out, cap, "%ld s ago", d);
	else if (d >= 0 && d < 3600)
		snprintf(out, cap, "%ld min ago", d / 60);
	else if (d >= 0 && (days == 0 || d < 6 * 3600))
		snprintf(out, cap, "%ld h ago", d / 3600);
	else if (d >= 0 && days == 1)
		snprintf(out, cap, "yesterday");
	else if (d >= 0 && days < 7)
		snprintf(out, cap, "%ld days ago", days);
	else if (!localtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%d", &tm))
		snprintf(out, cap, "-");
}

void
cli_show_label(const char *name, const char *source, const char *hex, char *out, size_t cap)
{
	const char *base = strrchr(source, '/');
	base = base && base[1] ? base + 1 : source;
	/* the daemon records "(descriptor)" / "(inline text)" when it had no path */
	if (name[0])
		cli_term_str(name, out, cap);
	else if (base[0] && base[0] != '(')
		cli_term_str(base, out, cap);
	else
		snprintf(out, cap, "%.12s", hex);
}

void
cli_show_kept(int64_t units, int64_t full_units, uint64_t bytes, uint64_t full_bytes,
    char *kept, size_t kcap, char *ratio, size_t rcap)
{
	double share = full_units > 0 ? 100.0 * (double)units / (double)full_units : -1.0;
	if (share < 0)
		snprintf(kept, kcap, "?");
	else
		snprintf(kept, kcap, share < 1.0 && share > 0 ? "%.1f %%" : "%.0f %%", share);
	if (!bytes || !full_bytes)
		snprintf(ratio, rcap, "?");
	else
		snprintf(ratio, rcap, "%.1fx", (double)full_bytes / (double)bytes);
}

void
cli_show_ingested(int64_t tokens, int64_t units, int64_t full_units, uint64_t bytes,
    uint64_t full_bytes, char *out, size_t cap)
{
	char size[32], kept[32], ratio[32];
	if (!bytes) { /* the figures are not known (a failed look after storing) */
		snprintf(out, cap, "%lld tokens -> %lld units", (long long)tokens, (long long)units);
		return;
	}
	cli_show_size(bytes, size, sizeof(size));
	cli_show_kept(units, full_units, bytes, full_bytes, kept, sizeof(kept), ratio,
	    sizeof(ratio));
	snprintf(out, cap, "%lld tokens -> %s snapshot (%s kept, %s smaller than the full cache)",
	    (long long)tokens, size, kept, ratio);
}
