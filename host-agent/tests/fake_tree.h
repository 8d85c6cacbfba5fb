/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For tests of readers that take a root path (/proc, debugfs): a fake tree
 * in a temporary directory, its files written, removed whole at the end.
 * cmocka's setup/teardown give the root as *state. Include after <cmocka.h>.
 */
#ifndef VTIER_TESTS_FAKE_TREE_H
#define VTIER_TESTS_FAKE_TREE_H

#include <glib.h>
#include <glib/gstdio.h>

/* Write @text to @root/@rel, making the directories on the way. */
static inline void fake_tree_put(const char *root, const char *rel, const char *text)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);
	g_autofree char *dir = g_path_get_dirname(path);

	assert_int_equal(g_mkdir_with_parents(dir, 0700), 0);
	assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Make the directory @root/@rel (and those on the way). */
static inline void fake_tree_mkdir(const char *root, const char *rel)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);

	assert_int_equal(g_mkdir_with_parents(path, 0700), 0);
}

static inline void fake_tree_rm(const char *path)
{
	GDir *d = g_dir_open(path, 0, NULL);
	const char *name;

	if (!d) {
		g_unlink(path);
		return;
	}
	while ((name = g_dir_read_name(d))) {
		g_autofree char *sub = g_build_filename(path, name, NULL);

		fake_tree_rm(sub);
	}
	g_dir_close(d);
	g_rmdir(path);
}

static inline int fake_tree_setup(void **state)
{
	*state = g_dir_make_tmp("vt-tree-XXXXXX", NULL);
	return *state ? 0 : -1;
}

static inline int fake_tree_teardown(void **state)
{
	fake_tree_rm(*state);
	g_free(*state);
	return 0;
}

#endif
