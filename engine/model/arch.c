/*
 * arch.c: the list of architecture descriptions (one engine/model/arch_NAME.c
 * each) and the lookup by GGUF's general.architecture.
 *
 * The list names no architecture's details: adding one is its description
 * file plus a line here.
 */
#include <stdio.h>
#include <string.h>

#include "engine/model/arch.h"

static const struct eng_arch *const arch_list[] = {
	&eng_arch_llama,
	&eng_arch_qwen2,
	&eng_arch_qwen3,
};

#define ARCH_COUNT (sizeof(arch_list) / sizeof(arch_list[0]))

const struct eng_arch *
eng_arch_find(const char *name, size_t len)
{
	size_t i;
	for (i = 0; i < ARCH_COUNT; i++)
		if (strlen(arch_list[i]->name) == len && !memcmp(arch_list[i]->name, name, len))
			return arch_list[i];
	return NULL;
}

void
eng_arch_enabled_list(char *buf, size_t cap)
{
	size_t i, used = 0;
	if (!cap)
		return;
	buf[0] = '\0';
	for (i = 0; i < ARCH_COUNT && used < cap; i++) {
		int w;
		if (!arch_list[i]->enabled)
			continue;
		w = snprintf(buf + used, cap - used, "%s'%s'", used ? ", " : "",
		    arch_list[i]->name);
		if (w < 0)
			return;
		used += (size_t)w;
	}
}
