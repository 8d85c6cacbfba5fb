// SPDX-License-Identifier: GPL-2.0-or-later
/* The TLB flushes of a VM's window, from the kernel's counters (tlb_stage.h). */
#include "tlb_stage.h"
#include "vm.h"

/* One counter of a window: the delta counted when both ends were read; @now marked. */
static void count(struct vt_tlb_mark *m, bool ok, uint64_t now, uint64_t moved_bytes,
		  struct vt_tlb_count *c)
{
	bool both = ok && m->ok && now >= m->value;
	uint64_t d = both ? now - m->value : 0;

	c->ok = ok;
	c->last = d;
	c->total += d;
	if (both && moved_bytes) {
		c->moving += d;
		c->moved_bytes += moved_bytes;
	}
	m->ok = ok;
	m->value = ok ? now : 0;
}

void vt_tlb_account(struct vt_tlb_marks *m, const struct vt_tlb_sample *now,
		    uint64_t moved_bytes, struct vt_tlb_stats *s)
{
	bool kvm = now->kvm == VT_COUNTER_OK;

	count(&m->host_shootdowns, now->host == VT_COUNTER_OK, now->host_shootdowns, moved_bytes,
	      &s->host_shootdowns);
	count(&m->kvm_remote_flushes, kvm, now->kvm_tlb.flushes, moved_bytes,
	      &s->kvm_remote_flushes);
	count(&m->kvm_flush_requests, kvm && now->kvm_tlb.has_requests, now->kvm_tlb.requests,
	      moved_bytes, &s->kvm_flush_requests);
}

void vt_tlb_marks_drop(struct vt_tlb_marks *m)
{
	m->host_shootdowns.ok = false;
	m->kvm_remote_flushes.ok = false;
	m->kvm_flush_requests.ok = false;
}

void vt_tlb_release(struct vt_tlb_marks *m)
{
	vt_kvm_dir_release(&m->kvm_dir);
}

double vt_tlb_per_gib(const struct vt_tlb_count *c)
{
	return c->moved_bytes ? (double)c->moving / ((double)c->moved_bytes / (double)(1ull << 30)) :
				0;
}

/* The log told once when @what turns missing or malformed (@e says why), and when it is back. */
static void say(struct vt_vm *vm, struct vt_tlb_mark *m, enum vt_counter_state st,
		const char *what, const GError *e)
{
	if (st == m->said)
		return;
	m->said = st;
	if (st == VT_COUNTER_OK)
		vt_registry_log(vm->reg, G_LOG_LEVEL_MESSAGE, vm->name, "%s: counted again", what);
	else
		vt_registry_log(vm->reg, st == VT_COUNTER_BAD ? G_LOG_LEVEL_WARNING :
				G_LOG_LEVEL_MESSAGE, vm->name, "%s: not available: %s", what,
				e ? e->message : "?");
}

void vt_tlb_host_init(struct vt_tlb_host *h)
{
	*h = (struct vt_tlb_host){ .read = false };
	g_mutex_init(&h->lock);
}

void vt_tlb_host_clear(struct vt_tlb_host *h)
{
	g_mutex_clear(&h->lock);
}

/*
 * The host's shootdowns at @now_us: vm->tlb_host's when read less than
 * VT_TLB_HOST_MAX_AGE_US before, else read now into it (under its lock: a
 * window that finds it being read waits for that read, not a second one).
 */
static enum vt_counter_state host_shootdowns(struct vt_vm *vm, const char *proc, gint64 now_us,
					     uint64_t *value, GError **error)
{
	struct vt_tlb_host *h = vm->tlb_host;
	enum vt_counter_state st;

	if (!h)
		return vt_interrupts_tlb_read(proc, value, error);
	g_mutex_lock(&h->lock);
	if (!h->read || now_us - h->read_us >= VT_TLB_HOST_MAX_AGE_US) {
		g_autoptr(GError) e = NULL;

		h->state = vt_interrupts_tlb_read(proc, &h->value, &e);
		h->code = e ? e->code : 0;
		g_strlcpy(h->error, e ? e->message : "", sizeof(h->error));
		h->read_us = now_us;
		h->read = true;
	}
	st = h->state;
	*value = h->value;
	if (st != VT_COUNTER_OK)
		g_set_error_literal(error, VT_TLB_COUNTERS_ERROR, h->code, h->error);
	g_mutex_unlock(&h->lock);
	return st;
}

void vt_tlb_window(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s)
{
	vt_tlb_window_at(vm, moved_bytes, s, g_get_monotonic_time());
}

void vt_tlb_window_at(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s,
		      gint64 now_us)
{
	const char *proc = vm->host && vm->host->proc_root[0] ? vm->host->proc_root : "/proc";
	const char *debugfs = vm->host && vm->host->debugfs_root[0] ? vm->host->debugfs_root :
			      "/sys/kernel/debug";
	g_autoptr(GError) host_e = NULL, kvm_e = NULL;
	struct vt_tlb_sample now = { 0 };

	now.host = host_shootdowns(vm, proc, now_us, &now.host_shootdowns, &host_e);
	now.kvm = vt_kvm_tlb_read_held(&vm->tlb_marks.kvm_dir, debugfs, vm->pid, &now.kvm_tlb,
				       &kvm_e);
	say(vm, &vm->tlb_marks.host_shootdowns, now.host, "host TLB shootdowns", host_e);
	say(vm, &vm->tlb_marks.kvm_remote_flushes, now.kvm, "KVM remote TLB flushes", kvm_e);
	vt_tlb_account(&vm->tlb_marks, &now, moved_bytes, &s->tlb);
}
