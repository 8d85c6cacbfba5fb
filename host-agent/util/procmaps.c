// SPDX-License-Identifier: GPL-2.0-or-later
/* /proc/PID/maps parser. */
#include <errno.h>
#include <string.h>

#include "procmaps.h"

G_DEFINE_QUARK(vt-procmaps-error-quark, vt_procmaps_error)

static bool parse_hex(const char *s, size_t n, uint64_t *out)
{
	char buf[17];
	guint64 v;

	if (n == 0 || n > 16)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!g_ascii_string_to_unsigned(buf, 16, 0, G_MAXUINT64, &v, NULL))
		return false;
	*out = v;
	return true;
}

/* "MAJ:MIN", both hex, as the kernel prints a device. */
static bool parse_dev(const char *s, unsigned int *maj, unsigned int *min)
{
	const char *colon = strchr(s, ':');
	uint64_t a, b;

	if (!colon || !parse_hex(s, (size_t)(colon - s), &a) ||
	    !parse_hex(colon + 1, strlen(colon + 1), &b) || a > UINT32_MAX || b > UINT32_MAX)
		return false;
	*maj = (unsigned int)a;
	*min = (unsigned int)b;
	return true;
}

bool vt_procmaps_parse(const char *text, size_t len, GArray *out, GError **error)
{
	const char *p = text, *end = text + len;
	unsigned int lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		size_t linelen = (size_t)(le - p);
		g_autofree char *line = g_strndup(p, linelen);
		g_auto(GStrv) f = NULL;
		struct vt_mapping m = { 0 };
		const char *dash, *path;
		guint64 v;

		lineno++;
		p = nl ? nl + 1 : end;
		if (!*line)
			continue;
		f = g_strsplit_set(line, " ", 6);
		if (strlen(line) != linelen || g_strv_length(f) < 5)
			goto bad;
		dash = strchr(f[0], '-');
		if (!dash || !parse_hex(f[0], (size_t)(dash - f[0]), &m.start) ||
		    !parse_hex(dash + 1, strlen(dash + 1), &m.end) || m.end <= m.start)
			goto bad;
		if (strlen(f[1]) != 4 || !parse_hex(f[2], strlen(f[2]), &m.offset))
			goto bad;
		memcpy(m.perms, f[1], 4);
		if (!parse_dev(f[3], &m.dev_major, &m.dev_minor) ||
		    !g_ascii_string_to_unsigned(f[4], 10, 0, G_MAXUINT64, &v, NULL))
			goto bad;
		m.inode = v;
		path = f[5] ? f[5] : "";
		while (*path == ' ')
			path++;
		g_strlcpy(m.path, path, sizeof(m.path));
		g_array_append_val(out, m);
		if (out->len > 1000000)
			goto bad;
		continue;
bad:
		g_set_error(error, VT_PROCMAPS_ERROR, EPROTO, "maps: malformed line %u: '%.80s'", lineno,
			    line);
		return false;
	}
	return true;
}

bool vt_procmaps_read(pid_t pid, GArray *out, GError **error)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/maps", (int)pid);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	gsize len;

	if (!g_file_get_contents(path, &text, &len, &e)) {
		int code = e->code == G_FILE_ERROR_NOENT ? ESRCH :
			   e->code == G_FILE_ERROR_MFILE || e->code == G_FILE_ERROR_NFILE ? EMFILE :
			   EACCES;

		g_set_error(error, VT_PROCMAPS_ERROR, code, "%s: %s", path, e->message);
		return false;
	}
	return vt_procmaps_parse(text, len, out, error);
}

const struct vt_mapping *vt_procmaps_find(GArray *maps, uint64_t start, uint64_t end)
{
	for (unsigned int i = 0; i < maps->len; i++) {
		const struct vt_mapping *m = &g_array_index(maps, struct vt_mapping, i);

		if (m->start <= start && end <= m->end)
			return m;
	}
	return NULL;
}
