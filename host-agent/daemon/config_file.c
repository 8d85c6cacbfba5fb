// SPDX-License-Identifier: GPL-2.0-or-later
/* vtierd's config file as a whole: tiers, compressed tiers, [policy], [host], [libvirt], [metrics]. */
#include <string.h>
#include <sys/socket.h>

#include "config_file.h"
#include "json_guard.h"
#include "libvirt_domains.h"
#include "metrics_http.h"

/* Names and values from the file go into errors: printable ASCII only. */
static const char *printable(char *buf, size_t len, const char *text)
{
	return vt_text_printable(buf, len, text, strlen(text));
}

/* The keys of vtierd's own groups: a misspelt one is an error, not a silent default. */
static bool config_keys_known(GKeyFile *config, GError **error)
{
	static const char *const known[][3] = {
		{ "libvirt", "uri", "attach" }, { "metrics", "listen", NULL },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(known); i++) {
		g_auto(GStrv) keys = g_key_file_get_keys(config, known[i][0], NULL, NULL);

		for (unsigned int k = 0; keys && keys[k]; k++)
			if (g_strcmp0(keys[k], known[i][1]) && g_strcmp0(keys[k], known[i][2])) {
				char key[96];

				g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
					    "[%s]: unknown key '%s' (%s%s%s)", known[i][0],
					    printable(key, sizeof(key), keys[k]), known[i][1],
					    known[i][2] ? ", " : "", known[i][2] ? known[i][2] : "");
				return false;
			}
	}
	return true;
}

/* [libvirt] attach = and [metrics] listen =, judged as their command-line options are. */
static bool config_values_valid(GKeyFile *config, GError **error)
{
	g_autofree char *attach = g_key_file_get_string(config, "libvirt", "attach", NULL);
	g_autofree char *listen = g_key_file_get_string(config, "metrics", "listen", NULL);
	enum vt_libvirt_attach how;
	struct sockaddr_storage ss;

	if (attach && !vt_libvirt_attach_parse(attach, &how, error))
		return false;	/* "libvirt attach: 'x' is not policy or all" */
	if (listen && !vt_metrics_listen_parse(listen, &ss, error)) {
		g_prefix_error(error, "[metrics] listen: ");
		return false;
	}
	return true;
}

/*
 * A key file's comments are whole lines: "key = 3   # why" makes the value
 * "3   # why", refused later by whoever reads the key, and not for the comment.
 * Say so first, naming group, key and value.
 */
static bool config_no_trailing_comments(GKeyFile *config, GError **error)
{
	g_auto(GStrv) groups = g_key_file_get_groups(config, NULL);

	for (unsigned int i = 0; groups[i]; i++) {
		g_auto(GStrv) keys = g_key_file_get_keys(config, groups[i], NULL, NULL);

		for (unsigned int k = 0; keys && keys[k]; k++) {
			g_autofree char *v = g_key_file_get_value(config, groups[i], keys[k], NULL);
			const char *hash = v ? strchr(v, '#') : NULL;
			char group[96], key[96], shown[96];

			if (!hash || hash == v || !g_ascii_isspace(hash[-1]))
				continue;
			g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
				    "[%s] %s: '%s' ends in a comment: a comment is a line of its "
				    "own, starting with #", printable(group, sizeof(group), groups[i]),
				    printable(key, sizeof(key), keys[k]),
				    printable(shown, sizeof(shown), v));
			return false;
		}
	}
	return true;
}

/*
 * The parsers below quote what they refuse, and the key file parser (GLib's)
 * quotes group names and lines raw: a message with bytes that are not UTF-8
 * has them replaced (U+FFFD), so that what vtierd prints is text.
 */
static struct vt_daemon *refused(GError *e, GError **error)
{
	if (!g_utf8_validate(e->message, -1, NULL)) {
		char *valid = g_utf8_make_valid(e->message, -1);

		g_free(e->message);
		e->message = valid;
	}
	g_propagate_error(error, e);
	return NULL;
}

struct vt_daemon *vt_daemon_from_config(const char *text, size_t len, const char *sysfs,
					vt_log_fn log, GKeyFile **config, GError **error)
{
	g_autoptr(GKeyFile) k = text ? g_key_file_new() : NULL;
	GError *e = NULL;
	struct vt_daemon *d;
	struct vt_tiers tiers;

	if (k && (!g_key_file_load_from_data(k, text, len, G_KEY_FILE_NONE, &e) ||
		  !config_no_trailing_comments(k, &e)))
		return refused(e, error);
	if (!vt_tiers_discover(&tiers, sysfs, k, &e))
		return refused(e, error);
	d = vt_daemon_new(&tiers, log);
	if (!vt_daemon_load_ctiers(d, k, &e) ||
	    (k && (!config_keys_known(k, &e) || !config_values_valid(k, &e))) ||
	    !vt_host_share_config_parse(k, &d->host.share, &e) ||
	    !vt_host_share_config_check_nodes(&d->host.share, &d->host.tiers, &e)) {
		vt_daemon_free(d);
		return refused(e, error);
	}
	if (config)
		*config = g_steal_pointer(&k);
	return d;
}
