// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stores whose QEMU exited for good are removed here (backend.h,
 * vt_store_remove). A store that never used a remote tier is removed at
 * once: its files are on tmpfs, the main loop only unlinks. One that may have
 * pages on memory servers is renamed out of the way first (".gone-..." in the
 * store root, which nothing else reads: a new QEMU of the same VM gets a new
 * store under the old name at once), then, on the removals' own thread, each
 * remote tier's servers are asked to forget its namespace
 * (vt_store_remote_forget) and its files are removed. The main loop never
 * waits on a server. A removal cut short by a kill of the agent is found
 * under its ".gone-" name at the next start and done then.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "ctier.h"
#include "registry.h"

#define GONE_PREFIX ".gone-"

static bool host_has_remote(const struct vt_host_config *h)
{
	for (unsigned int i = 0; i < h->nr_ctier; i++)
		if (h->ctier[i].medium == VT_MEDIUM_REMOTE)
			return true;
	return false;
}

static void removal_run(gpointer data, gpointer user)
{
	g_autofree char *dir = data;
	struct vt_handoffs *d = user;
	const struct vt_host_config *h = d->host;

	for (unsigned int i = 0; i < h->nr_ctier; i++) {
		unsigned int asked;
		char why[256];
		int r;

		if (h->ctier[i].medium != VT_MEDIUM_REMOTE)
			continue;
		r = vt_store_remote_forget(dir, &h->remote[i].rc, &asked, why, sizeof(why));
		if (r < 0)
			vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "remote tier %s: store %s "
					"removed, its copies on the servers not forgotten: %s",
					h->ctier[i].name, dir, why);
		else if ((unsigned int)r < asked)
			vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "remote tier %s: store %s "
					"removed, %d of %u servers forgot its copies (the others "
					"keep them until they restart)", h->ctier[i].name, dir, r,
					asked);
		else if (asked)
			vt_registry_log(d->reg, G_LOG_LEVEL_MESSAGE, NULL, "remote tier %s: store %s "
					"removed, its copies forgotten on %u servers",
					h->ctier[i].name, dir, asked);
	}
	vt_store_destroy(dir);
}

void vt_store_remove(struct vt_handoffs *d, const char *dir)
{
	g_autofree char *base = g_path_get_basename(dir);
	char *gone;

	if (!d->removals || !host_has_remote(d->host)) {
		vt_store_destroy(dir);
		return;
	}
	gone = g_strdup_printf("%s/%s%08x-%s", d->host->store_root, GONE_PREFIX, g_random_int(),
			       base);
	if (rename(dir, gone) < 0) {
		vt_registry_log(d->reg, G_LOG_LEVEL_WARNING, NULL, "store %s: not renamed for its "
				"removal (%s): removed now, its remote copies not forgotten", dir,
				g_strerror(errno));
		vt_store_destroy(dir);
		g_free(gone);
		return;
	}
	g_thread_pool_push(d->removals, gone, NULL);
}

void vt_store_removals_start(struct vt_handoffs *d)
{
	GDir *root;
	const char *n;

	d->removals = g_thread_pool_new(removal_run, d, 1, FALSE, NULL);
	root = g_dir_open(d->host->store_root, 0, NULL);
	if (!root)
		return;
	while ((n = g_dir_read_name(root)))
		if (g_str_has_prefix(n, GONE_PREFIX))
			g_thread_pool_push(d->removals,
					   g_strdup_printf("%s/%s", d->host->store_root, n), NULL);
	g_dir_close(root);
}

void vt_store_removals_finish(struct vt_handoffs *d)
{
	if (!d->removals)
		return;
	/* the ones queued are done: each waits on its servers for a bounded time */
	g_thread_pool_free(d->removals, FALSE, TRUE);
	d->removals = NULL;
}
