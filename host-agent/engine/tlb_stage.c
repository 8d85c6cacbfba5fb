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

void vt_tlb_window(struct vt_vm *vm, uint64_t moved_bytes, struct vt_vm_stats *s)
{
	const char *proc = vm->host && vm->host->proc_root[0] ? vm->host->proc_root : "/proc";
	const char *debugfs = vm->host && vm->host->debugfs_root[0] ? vm->host->debugfs_root :
			      "/sys/kernel/debug";
	g_autoptr(GError) host_e = NULL, kvm_e = NULL;
	struct vt_tlb_sample now = { 0 };

	now.host = vt_interrupts_tlb_read(proc, &now.host_shootdowns, &host_e);
	now.kvm = vt_kvm_tlb_read_held(&vm->tlb_marks.kvm_dir, debugfs, vm->pid, &now.kvm_tlb,
				       &kvm_e);
	say(vm, &vm->tlb_marks.host_shootdowns, now.host, "host TLB shootdowns", host_e);
	say(vm, &vm->tlb_marks.kvm_remote_flushes, now.kvm, "KVM remote TLB flushes", kvm_e);
	vt_tlb_account(&vm->tlb_marks, &now, moved_bytes, &s->tlb);
}
