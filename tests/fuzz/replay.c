// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Runs a libFuzzer target over every file of corpus directories, without
 * libFuzzer: how the corpora run in `make check` (and under ASan/UBSan there).
 * Prints one TAP line per file.
 */
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	GPtrArray *files = g_ptr_array_new_with_free_func(g_free);

	for (int i = 1; i < argc; i++) {
		GDir *dir = g_dir_open(argv[i], 0, NULL);
		const char *name;

		if (!dir) {
			fprintf(stderr, "replay: cannot open %s\n", argv[i]);
			return 1;
		}
		while ((name = g_dir_read_name(dir)))
			g_ptr_array_add(files, g_build_filename(argv[i], name, NULL));
		g_dir_close(dir);
	}
	if (files->len == 0) {
		fprintf(stderr, "replay: empty corpus\n");
		return 1;
	}
	printf("1..%u\n", files->len);
	for (unsigned int i = 0; i < files->len; i++) {
		g_autofree char *data = NULL;
		gsize len;

		if (!g_file_get_contents(files->pdata[i], &data, &len, NULL)) {
			printf("not ok %u - %s (unreadable)\n", i + 1, (char *)files->pdata[i]);
			continue;
		}
		LLVMFuzzerTestOneInput((const uint8_t *)data, len);
		printf("ok %u - %s\n", i + 1, (char *)files->pdata[i]);
	}
	g_ptr_array_free(files, TRUE);
	return 0;
}
