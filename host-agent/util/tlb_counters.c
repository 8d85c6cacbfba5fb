// SPDX-License-Identifier: GPL-2.0-or-later
/* The kernel's counts of TLB flushes: /proc/interrupts and KVM's debugfs (tlb_counters.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "json_guard.h"
#include "tlb_counters.h"

G_DEFINE_QUARK(vt-tlb-counters-error-quark, vt_tlb_counters_error)

/* More than any host prints (4096 CPUs, a few hundred lines): refused as not the kernel's. */
#define INTERRUPTS_MAX_BYTES (64u << 20)
/* "<fd>" of a KVM directory name: an int */
#define KVM_FD_DIGITS_MAX 10
/* What a debugfs count may take: 20 digits and a newline, with room to spare */
#define KVM_COUNTER_MAX_BYTES 31

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

/* Digits of [p, end) as a number; false when none, too big, or not followed by a blank/end. */
static bool parse_count(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (p == end || !g_ascii_isdigit(*p))
		return false;
	for (; p < end && g_ascii_isdigit(*p); p++) {
		if (v > (G_MAXUINT64 - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p < end && !is_blank(*p))
		return false;
	*pp = p;
	*out = v;
	return true;
}

/* The header's CPU columns ("CPU0 CPU1 ..."; offline CPUs are left out): their number, or 0. */
static unsigned int header_cpus(const char *p, const char *end)
{
	unsigned int n = 0;

	for (p = skip_blanks(p, end); p < end; p = skip_blanks(p, end)) {
		uint64_t cpu;

		if ((size_t)(end - p) < 4 || memcmp(p, "CPU", 3) != 0)
			return 0;
		p += 3;
		if (!parse_count(&p, end, &cpu))
			return 0;
		n++;
	}
	return n;
}

/* The "TLB:" line after its label: @cpus counts, summed into *total. */
static bool tlb_line(const char *p, const char *end, unsigned int cpus, uint64_t *total,
		     GError **error)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < cpus; i++) {
		char shown[24];
		uint64_t v;

		p = skip_blanks(p, end);
		if (p == end || !g_ascii_isdigit(*p)) {
			g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
				    "/proc/interrupts: the TLB: line has %u counts, the header names %u "
				    "CPUs", i, cpus);
			return false;
		}
		if (!parse_count(&p, end, &v)) {
			vt_text_printable(shown, sizeof(shown), p, (size_t)(end - p));
			g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
				    "/proc/interrupts: the TLB: line's count %u ('%s') is not a 64-bit "
				    "decimal number", i + 1, shown);
			return false;
		}
		if (sum > G_MAXUINT64 - v) {
			g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
				    "/proc/interrupts: the TLB: line's counts add up to more than 64 bits");
			return false;
		}
		sum += v;
	}
	*total = sum;
	return true;
}

enum vt_counter_state vt_interrupts_tlb_parse(const char *text, size_t len, uint64_t *total,
					      GError **error)
{
	const char *p = text, *end = text + len;
	unsigned int cpus = 0, lineno = 0;
	bool found = false;
	uint64_t sum = 0;

	if (len > INTERRUPTS_MAX_BYTES) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, E2BIG,
			    "/proc/interrupts: %zu bytes, over the %u a kernel prints at most", len,
			    INTERRUPTS_MAX_BYTES);
		return VT_COUNTER_BAD;
	}
	if (memchr(text, '\0', len)) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
			    "/proc/interrupts: a NUL byte in the text");
		return VT_COUNTER_BAD;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q = skip_blanks(p, le);

		lineno++;
		p = nl ? nl + 1 : end;
		if (lineno == 1) {
			cpus = header_cpus(q, le);
			if (!cpus) {
				char shown[48];

				vt_text_printable(shown, sizeof(shown), q, (size_t)(le - q));
				g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
					    "/proc/interrupts: the first line is not the CPUs' names "
					    "(\"CPU0 CPU1 ...\"): '%s'", shown);
				return VT_COUNTER_BAD;
			}
			continue;
		}
		if ((size_t)(le - q) < 4 || memcmp(q, "TLB:", 4) != 0)
			continue;
		if (found) {
			g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
				    "/proc/interrupts: a second TLB: line (line %u)", lineno);
			return VT_COUNTER_BAD;
		}
		if (!tlb_line(q + 4, le, cpus, &sum, error))
			return VT_COUNTER_BAD;
		found = true;
	}
	if (!cpus) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO, "/proc/interrupts: empty");
		return VT_COUNTER_BAD;
	}
	if (!found) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT,
			    "/proc/interrupts has no TLB: line (TLB shootdowns are counted on x86)");
		return VT_COUNTER_ABSENT;
	}
	*total = sum;
	return VT_COUNTER_OK;
}

enum vt_counter_state vt_interrupts_tlb_read(const char *proc_root, uint64_t *total,
					     GError **error)
{
	g_autofree char *path = g_build_filename(proc_root, "interrupts", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	gsize len;

	if (!g_file_get_contents(path, &text, &len, &e)) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT, "%s", e->message);
		return VT_COUNTER_ABSENT;
	}
	return vt_interrupts_tlb_parse(text, len, total, error);
}

/* @name is "<pid>-<fd>", both decimal, <fd> of 1..KVM_FD_DIGITS_MAX digits. */
static bool kvm_dir_of(const char *name, const char *prefix)
{
	size_t n;

	if (!g_str_has_prefix(name, prefix))
		return false;
	name += strlen(prefix);
	n = strlen(name);
	if (n == 0 || n > KVM_FD_DIGITS_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isdigit(name[i]))
			return false;
	return true;
}

/* The name of @dir's counter @file, for messages: @kvm/<pid>-<fd>/@file. */
static char *kvm_path(const struct vt_kvm_dir *dir, const char *kvm, const char *file)
{
	return g_build_filename(kvm, dir->name, file, NULL);
}

/* One counter of the held directory: OK, ABSENT (gone, unreadable) or BAD (not a number). */
static enum vt_counter_state kvm_counter(const struct vt_kvm_dir *dir, const char *kvm,
					 const char *file, uint64_t *out, GError **error)
{
	/* a count is at most 20 digits and a newline: a full buffer is not one */
	char text[KVM_COUNTER_MAX_BYTES + 1], shown[32];
	g_autofree char *path = NULL;
	size_t len = 0;
	guint64 v;
	ssize_t n;
	int fd, err;

	fd = openat(dir->fd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		path = kvm_path(dir, kvm, file);
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT, "%s: %s", path, g_strerror(err));
		return VT_COUNTER_ABSENT;
	}
	while (len < sizeof(text) - 1 &&
	       (n = read(fd, text + len, sizeof(text) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			close(fd);
			path = kvm_path(dir, kvm, file);
			g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT, "%s: %s", path,
				    g_strerror(err));
			return VT_COUNTER_ABSENT;
		}
		len += (size_t)n;
	}
	close(fd);
	text[len] = '\0';
	if (len < sizeof(text) - 1 && strlen(text) == len &&
	    g_ascii_string_to_unsigned(g_strstrip(text), 10, 0, G_MAXUINT64, &v, NULL)) {
		*out = v;
		return VT_COUNTER_OK;
	}
	vt_text_printable(shown, sizeof(shown), text, len);
	path = kvm_path(dir, kvm, file);
	g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
		    "%s: '%s' is not a 64-bit decimal count", path, shown);
	return VT_COUNTER_BAD;
}

/* Both counters of the held directory. */
static enum vt_counter_state kvm_counters(const struct vt_kvm_dir *dir, const char *kvm,
					  struct vt_kvm_tlb *out, GError **error)
{
	struct vt_kvm_tlb r = { 0 };
	g_autoptr(GError) e = NULL;
	enum vt_counter_state st;

	st = kvm_counter(dir, kvm, "remote_tlb_flush", &r.flushes, error);
	if (st != VT_COUNTER_OK)
		return st;
	/* remote_tlb_flush_requests: newer kernels only; absent before */
	st = kvm_counter(dir, kvm, "remote_tlb_flush_requests", &r.requests, &e);
	if (st == VT_COUNTER_BAD) {
		g_propagate_error(error, g_steal_pointer(&e));
		return st;
	}
	r.has_requests = st == VT_COUNTER_OK;
	*out = r;
	return VT_COUNTER_OK;
}

/* List @kvm for @pid's one "<pid>-<fd>" directory and hold it open in @dir. */
static enum vt_counter_state kvm_find(struct vt_kvm_dir *dir, const char *kvm, pid_t pid,
				      GError **error)
{
	g_autofree char *prefix = g_strdup_printf("%d-", (int)pid);
	char name[sizeof(dir->name)] = "";
	unsigned int found = 0;
	struct dirent *de;
	int fd, err;
	DIR *d;

	d = opendir(kvm);
	if (!d) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT,
			    "%s: %s (debugfs not mounted, or kvm not loaded)", kvm, g_strerror(errno));
		return VT_COUNTER_ABSENT;
	}
	while ((de = readdir(d))) {
		if (!kvm_dir_of(de->d_name, prefix))
			continue;
		if (!found++)
			g_strlcpy(name, de->d_name, sizeof(name));
	}
	fd = found == 1 ? openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	err = errno;
	closedir(d);
	if (found != 1) {
		if (found)
			g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT,
				    "%s: %u VMs of pid %d, not one", kvm, found, (int)pid);
		else
			g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT,
				    "%s: no VM of pid %d (no directory %s<fd>)", kvm, (int)pid, prefix);
		return VT_COUNTER_ABSENT;
	}
	if (fd < 0) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT, "%s/%s: %s", kvm, name,
			    g_strerror(err));
		return VT_COUNTER_ABSENT;
	}
	*dir = (struct vt_kvm_dir){ .held = true, .fd = fd, .pid = pid };
	g_strlcpy(dir->name, name, sizeof(dir->name));
	return VT_COUNTER_OK;
}

void vt_kvm_dir_release(struct vt_kvm_dir *dir)
{
	if (dir->held)
		close(dir->fd);
	*dir = (struct vt_kvm_dir){ .held = false };
}

enum vt_counter_state vt_kvm_tlb_read_held(struct vt_kvm_dir *dir, const char *debugfs_root,
					   pid_t pid, struct vt_kvm_tlb *out, GError **error)
{
	g_autofree char *kvm = g_build_filename(debugfs_root, "kvm", NULL);
	enum vt_counter_state st;

	/* another pid (QEMU restarted): never a read of the old one's directory */
	if (dir->held && dir->pid != pid)
		vt_kvm_dir_release(dir);
	if (pid <= 0) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, EINVAL, "no KVM counters of pid %d",
			    (int)pid);
		return VT_COUNTER_ABSENT;
	}
	if (dir->held) {
		g_autoptr(GError) e = NULL;

		st = kvm_counters(dir, kvm, out, &e);
		if (st == VT_COUNTER_OK)
			return st;
		if (st == VT_COUNTER_BAD) {
			g_propagate_error(error, g_steal_pointer(&e));
			return st;
		}
		/* gone (the VM's KVM fd was closed): the directory of now, if any */
		vt_kvm_dir_release(dir);
	}
	st = kvm_find(dir, kvm, pid, error);
	if (st != VT_COUNTER_OK)
		return st;
	st = kvm_counters(dir, kvm, out, error);
	if (st == VT_COUNTER_ABSENT)
		vt_kvm_dir_release(dir);
	return st;
}

enum vt_counter_state vt_kvm_tlb_read(const char *debugfs_root, pid_t pid,
				      struct vt_kvm_tlb *out, GError **error)
{
	struct vt_kvm_dir dir = { .held = false };
	enum vt_counter_state st = vt_kvm_tlb_read_held(&dir, debugfs_root, pid, out, error);

	vt_kvm_dir_release(&dir);
	return st;
}
