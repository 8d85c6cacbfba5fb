// SPDX-License-Identifier: GPL-2.0-or-later
/* The kernel's counts of TLB flushes: /proc/interrupts and KVM's debugfs (tlb_counters.h). */
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "json_guard.h"
#include "tlb_counters.h"

G_DEFINE_QUARK(vt-tlb-counters-error-quark, vt_tlb_counters_error)

/* More than any host prints (4096 CPUs, a few hundred lines): refused as not the kernel's. */
#define INTERRUPTS_MAX_BYTES (64u << 20)
/* "<fd>" of a KVM directory name: an int */
#define KVM_FD_DIGITS_MAX 10

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

/* One debugfs counter: OK, ABSENT (no file) or BAD (not one decimal number). */
static enum vt_counter_state kvm_counter(const char *dir, const char *file, uint64_t *out,
					 GError **error)
{
	g_autofree char *path = g_build_filename(dir, file, NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	char shown[32];
	guint64 v;
	gsize len;

	if (!g_file_get_contents(path, &text, &len, &e)) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, ENOENT, "%s", e->message);
		return VT_COUNTER_ABSENT;
	}
	if (strlen(text) == len &&
	    g_ascii_string_to_unsigned(g_strstrip(text), 10, 0, G_MAXUINT64, &v, NULL)) {
		*out = v;
		return VT_COUNTER_OK;
	}
	vt_text_printable(shown, sizeof(shown), text, len);
	g_set_error(error, VT_TLB_COUNTERS_ERROR, EPROTO,
		    "%s: '%s' is not a 64-bit decimal count", path, shown);
	return VT_COUNTER_BAD;
}

enum vt_counter_state vt_kvm_tlb_read(const char *debugfs_root, pid_t pid,
				      struct vt_kvm_tlb *out, GError **error)
{
	g_autofree char *kvm = g_build_filename(debugfs_root, "kvm", NULL);
	g_autofree char *prefix = g_strdup_printf("%d-", (int)pid);
	g_autofree char *name = NULL, *dir = NULL;
	struct vt_kvm_tlb r = { 0 };
	g_autoptr(GError) e = NULL;
	enum vt_counter_state st;
	unsigned int found = 0;
	struct dirent *de;
	DIR *d;

	if (pid <= 0) {
		g_set_error(error, VT_TLB_COUNTERS_ERROR, EINVAL, "no KVM counters of pid %d",
			    (int)pid);
		return VT_COUNTER_ABSENT;
	}
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
			name = g_strdup(de->d_name);
	}
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
	dir = g_build_filename(kvm, name, NULL);
	st = kvm_counter(dir, "remote_tlb_flush", &r.flushes, error);
	if (st != VT_COUNTER_OK)
		return st;
	/* remote_tlb_flush_requests: newer kernels only; absent before */
	st = kvm_counter(dir, "remote_tlb_flush_requests", &r.requests, &e);
	if (st == VT_COUNTER_BAD) {
		g_propagate_error(error, g_steal_pointer(&e));
		return st;
	}
	r.has_requests = st == VT_COUNTER_OK;
	*out = r;
	return VT_COUNTER_OK;
}
