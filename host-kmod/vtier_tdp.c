// SPDX-License-Identifier: GPL-2.0
/*
 * vtier_tdp.ko: read and clear the accessed bits of a KVM VM's second-level
 * page table (AMD NPT; Intel EPT with A/D bits) at every level, for vtier's
 * host agent. ABI in include/vtier/tdp.h, documented in docs/abi-tdp.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kvm_host.h>
#include <linux/magic.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include <vtier/tdp.h>

#include "kvm_mmu_612.h"

#define TDP_ENTRIES	512
#define TDP_LEVEL_BITS	9

struct tdp_client {
	struct mutex lock;	/* serialises ioctls on one open file */
	struct kvm *kvm;	/* attached VM, holds a kvm_get_kvm() reference */
	u64 abit;		/* accessed bit of this VM's format */
	u32 format;
};

/* One walk: the root chosen under mmu_lock, and what it tested. */
struct tdp_walk {
	u64 *root;		/* root page table (kernel virtual) */
	unsigned int top;	/* level of the root's entries: 3 or 4 */
	u64 abit;
	u64 checks[VTIER_TDP_MAX_LEVELS];
	bool huge;		/* VTIER_TDP_HUGE_LEAVES: huge leaves answer for below */
	u64 *last_huge;		/* SAMPLE: the huge leaf tested last in this call */
	int last_huge_result;
};

static unsigned int tdp_shift(unsigned int level)
{
	return PAGE_SHIFT + TDP_LEVEL_BITS * level;
}

static unsigned int tdp_index(u64 gpa, unsigned int level)
{
	return (gpa >> tdp_shift(level)) & (TDP_ENTRIES - 1);
}

static bool spte_present(u64 spte)
{
	return spte & VTIER_SPTE_MMU_PRESENT;
}

static bool spte_leaf(u64 spte, unsigned int level)
{
	return level == 0 || (spte & VTIER_SPTE_HUGE);
}

static u64 *spte_child(u64 spte)
{
	return __va(spte & VTIER_SPTE_ADDR_MASK);
}

/*
 * Test and clear the accessed bit of one entry. The entry may change under us:
 * the CPU's page walker sets A/D bits with locked operations, and KVM modifies
 * entries with cmpxchg under mmu_lock held for read (and freezes them to
 * FROZEN_SPTE, which has no present bit, during multi-step updates). A
 * cmpxchg loop therefore never loses an update of theirs, and theirs fails
 * and retries if we cleared A in between; a frozen or zapped entry is
 * reported absent and left alone.
 */
static int spte_test_clear(u64 *sptep, u64 abit)
{
	u64 old = READ_ONCE(*sptep);

	do {
		if (!spte_present(old))
			return VTIER_TDP_ABSENT;
		if (!(old & abit))
			return VTIER_TDP_OLD;
	} while (!try_cmpxchg64(sptep, &old, old & ~abit));
	return VTIER_TDP_YOUNG;
}

/*
 * What the walker reads, and why that is safe (Linux 6.12, TDP MMU):
 *
 * - kvm->arch.tdp_mmu_roots, a list of struct kvm_mmu_page (private layout,
 *   see kvm_mmu_612.h, validated per root below). Walked with
 *   list_for_each_entry_rcu() under rcu_read_lock() and mmu_lock held for
 *   read, as KVM's own readers do (tdp_mmu_next_root()): roots leave the list
 *   with list_del_rcu() and are freed by call_rcu(), and role.invalid only
 *   changes with mmu_lock held for write, so a valid root stays valid while
 *   we hold the lock for read.
 * - The page-table pages below a root, reached through the physical
 *   address in each non-leaf entry. KVM frees a detached page-table page only
 *   after an RCU grace period (handle_removed_pt() -> call_rcu()), which is
 *   the reason tdp_iter walks under RCU; we do the same and read every entry
 *   once with READ_ONCE(), deciding from that one value.
 * - Entries are written only through spte_test_clear(), which clears A and
 *   nothing else.
 *
 * Only the address space 0 root (not SMM) that is not for a nested guest
 * (role.guest_mode) is used; that is the one that maps the VM's memory.
 * Caller holds kvm->mmu_lock for read and rcu_read_lock().
 */
static int tdp_walk_begin(struct kvm *kvm, struct tdp_walk *w, u64 abit)
{
	struct vtier_kvm_mmu_page *root;

	memset(w, 0, sizeof(*w));
	w->abit = abit;
	list_for_each_entry_rcu(root, &kvm->arch.tdp_mmu_roots, link) {
		union kvm_mmu_page_role role = READ_ONCE(root->role);
		u64 *spt = READ_ONCE(root->spt);

		if (role.invalid || role.smm || role.guest_mode)
			continue;
		if (!root->tdp_mmu_page || !role.direct ||
		    (role.level != 4 && role.level != 5) ||
		    !spt || !PAGE_ALIGNED(spt) || !virt_addr_valid(spt) ||
		    page_private(virt_to_page(spt)) != (unsigned long)root) {
			pr_err_ratelimited("TDP MMU root does not match the 6.12 layout this module was built for\n");
			return -EPROTO;
		}
		if (abit == VTIER_EPT_ACCESSED && role.ad_disabled)
			return -EOPNOTSUPP;
		w->root = spt;
		w->top = role.level - 1;
		return 0;
	}
	return -ENOENT;
}

/* Test-and-clear the entry at @level covering @gpa. */
static int tdp_probe(struct tdp_walk *w, u64 gpa, unsigned int level)
{
	u64 *table = w->root;
	unsigned int l;
	u64 spte;

	for (l = w->top; l > level; l--) {
		u64 *sptep = &table[tdp_index(gpa, l)];

		spte = READ_ONCE(*sptep);
		if (!spte_present(spte))
			return VTIER_TDP_ABSENT;
		if (spte_leaf(spte, l)) {
			/*
			 * A huge leaf maps @gpa: its A bit is the only one the
			 * walker sets for it. Test it once per call, so that
			 * probes of the same leaf agree.
			 */
			if (!w->huge)
				return VTIER_TDP_ABSENT;
			if (sptep != w->last_huge) {
				w->checks[l]++;
				w->last_huge = sptep;
				w->last_huge_result = spte_test_clear(sptep, w->abit);
			}
			return w->last_huge_result;
		}
		table = spte_child(spte);
	}
	w->checks[level]++;
	return spte_test_clear(&table[tdp_index(gpa, level)], w->abit);
}

struct tdp_scan_ctx {
	struct tdp_walk *w;
	u64 start, end, pos;
	unsigned int level, skip_from;
	u64 checks_left;
	u64 visits_left;	/* entries read, present or not: bounds the lock hold */
	u64 *young;
	u32 nr_young, max_young;
	bool stop;
};

static void tdp_scan_table(struct tdp_scan_ctx *c, u64 *table, unsigned int l, u64 base)
{
	u64 size = 1ULL << tdp_shift(l);
	unsigned int i = c->pos > base ? (c->pos - base) >> tdp_shift(l) : 0;

	for (; i < TDP_ENTRIES; i++) {
		u64 es = base + i * size, ee = es + size;
		u64 *sptep = &table[i];
		u64 spte;
		int r;

		if (es >= c->end)
			return;
		if (!c->visits_left--) {
			c->stop = true;
			return;
		}
		spte = READ_ONCE(*sptep);
		if (!spte_present(spte)) {
			c->pos = ee;
			continue;
		}
		if (l == c->level) {
			if (!c->checks_left || c->nr_young == c->max_young) {
				c->stop = true;
				return;
			}
			c->checks_left--;
			c->w->checks[l]++;
			r = spte_test_clear(sptep, c->w->abit);
			if (r == VTIER_TDP_YOUNG)
				c->young[c->nr_young++] = es | l;
			c->pos = ee;
			continue;
		}
		if (spte_leaf(spte, l)) {
			/* A huge leaf: nothing at c->level below it; its own A bit
			 * answers for all of it when the caller asked so.
			 */
			if (c->w->huge) {
				if (!c->checks_left || c->nr_young == c->max_young) {
					c->stop = true;
					return;
				}
				c->checks_left--;
				c->w->checks[l]++;
				if (spte_test_clear(sptep, c->w->abit) == VTIER_TDP_YOUNG)
					c->young[c->nr_young++] = es | l;
			}
			c->pos = ee;
			continue;
		}
		if (l <= c->skip_from && es >= c->start && ee <= c->end) {
			if (!c->checks_left) {
				c->stop = true;
				return;
			}
			c->checks_left--;
			c->w->checks[l]++;
			if (spte_test_clear(sptep, c->w->abit) != VTIER_TDP_YOUNG) {
				c->pos = ee;
				continue;
			}
		}
		tdp_scan_table(c, spte_child(spte), l - 1, es);
		if (c->stop)
			return;
	}
}

/* Present leaves per level, for INFO; bounded. */
static void tdp_census(u64 *table, unsigned int l, u64 *leaves, u64 *budget)
{
	unsigned int i;

	for (i = 0; i < TDP_ENTRIES && *budget; i++) {
		u64 spte = READ_ONCE(table[i]);

		(*budget)--;
		if (!spte_present(spte))
			continue;
		if (spte_leaf(spte, l))
			leaves[l]++;
		else
			tdp_census(spte_child(spte), l - 1, leaves, budget);
	}
}

/* ------------------------------------------------------------------ ioctls */

/* kvm.ko, found among the modules this one uses (we resolve kvm_get_kvm there). */
static struct module *kvm_module(void)
{
	struct module_use *use;

	list_for_each_entry(use, &THIS_MODULE->target_list, target_list) {
		if (!strcmp(use->target->name, "kvm"))
			return use->target;
	}
	return NULL;
}

/*
 * Is @f a KVM VM file? kvm_vm_fops is not exported, so check what identifies
 * it without KVM's private symbols: an anon inode named "kvm-vm" (KVM_CREATE_VM
 * makes it with anon_inode_getfile("kvm-vm", &kvm_vm_fops, kvm, O_RDWR)) whose
 * ioctl handler (kvm_vm_ioctl) lies in kvm.ko's code. The fops' owner is the
 * vendor module (kvm_init() sets it), so it cannot tell. vCPU fds
 * ("kvm-vcpu:N"), stats fds ("kvm-vm-stats") and /dev/kvm fail the name check.
 */
static bool file_is_kvm_vm(struct file *f)
{
	const struct file_operations *fops = f->f_op;
	struct module *kvm = kvm_module();

	if (!kvm || !fops || !fops->unlocked_ioctl ||
	    !within_module((unsigned long)fops->unlocked_ioctl, kvm))
		return false;
	if (file_inode(f)->i_sb->s_magic != ANON_INODE_FS_MAGIC)
		return false;
	if (strcmp(f->f_path.dentry->d_name.name, "kvm-vm"))
		return false;
	return f->private_data;
}

static long tdp_attach(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_attach a;
	struct kvm *kvm;
	struct file *f;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.abi_version != VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	if (a.flags || a.pad)
		return -EINVAL;
	if (cl->kvm)
		return -EBUSY;
	if (boot_cpu_data.x86_vendor == X86_VENDOR_AMD ||
	    boot_cpu_data.x86_vendor == X86_VENDOR_HYGON) {
		cl->format = VTIER_TDP_FORMAT_NPT;
		cl->abit = VTIER_NPT_ACCESSED;
	} else if (boot_cpu_data.x86_vendor == X86_VENDOR_INTEL) {
		cl->format = VTIER_TDP_FORMAT_EPT;
		cl->abit = VTIER_EPT_ACCESSED;
	} else {
		return -EOPNOTSUPP;
	}
	f = fget(a.vm_fd);
	if (!f)
		return -EBADF;
	if (!file_is_kvm_vm(f)) {
		fput(f);
		return -ENOTTY;
	}
	kvm = f->private_data;
	/* kvm_mmu_init_tdp_mmu() ran only if kvm.tdp_mmu=Y; struct kvm is zeroed. */
	if (!kvm->arch.tdp_mmu_roots.next) {
		fput(f);
		return -EOPNOTSUPP;
	}
	/* Our file reference keeps users_count above zero while we take one. */
	kvm_get_kvm(kvm);
	fput(f);
	cl->kvm = kvm;
	return 0;
}

/*
 * Enter the VM for a walk: the VMM process must still be alive (after it
 * exits, its mm is torn down and KVM zaps every root; our reference keeps
 * struct kvm, not the mappings). Returns with kvm->srcu held.
 */
static int tdp_enter(struct tdp_client *cl, int *srcu_idx)
{
	if (!cl->kvm)
		return -ENXIO;
	if (!mmget_not_zero(cl->kvm->mm))
		return -ESRCH;
	*srcu_idx = srcu_read_lock(&cl->kvm->srcu);
	return 0;
}

static void tdp_leave(struct tdp_client *cl, int srcu_idx)
{
	srcu_read_unlock(&cl->kvm->srcu, srcu_idx);
	mmput(cl->kvm->mm);
}

static long tdp_info(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_info info;
	struct kvm_memory_slot *slot;
	struct kvm_memslots *slots;
	struct tdp_walk w;
	u64 budget = (u64)VTIER_TDP_MAX_SCAN_CHECKS * 16;
	int idx, bkt, ret;

	if (copy_from_user(&info, arg, sizeof(info.abi_version)))
		return -EFAULT;
	if (info.abi_version != VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	memset(&info, 0, sizeof(info));
	info.abi_version = VTIER_TDP_ABI_VERSION;
	ret = tdp_enter(cl, &idx);
	if (ret)
		return ret;
	slots = kvm_memslots(cl->kvm);
	kvm_for_each_memslot(slot, bkt, slots)
		info.nr_memslots++;
	read_lock(&cl->kvm->mmu_lock);
	rcu_read_lock();
	ret = tdp_walk_begin(cl->kvm, &w, cl->abit);
	if (!ret) {
		info.levels = w.top + 1;
		tdp_census(w.root, w.top, info.leaves, &budget);
		info.leaves_truncated = !budget;
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	tdp_leave(cl, idx);
	/* No root yet (no vCPU ran): the VM still has a format, levels unknown. */
	if (ret && ret != -ENOENT)
		return ret;
	info.format = cl->format;
	info.features = VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN |
			VTIER_TDP_F_HUGE_LEAVES;
	info.accessed_bit = __ffs64(cl->abit);
	info.max_batch = VTIER_TDP_MAX_BATCH;
	info.max_scan_checks = VTIER_TDP_MAX_SCAN_CHECKS;
	if (copy_to_user(arg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static int memslot_cmp(const void *a, const void *b)
{
	const struct vtier_tdp_memslot *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static long tdp_memslots(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_memslots req;
	struct vtier_tdp_memslot *out;
	struct kvm_memory_slot *slot;
	struct kvm_memslots *slots;
	u32 n = 0, count = 0;
	int idx, bkt, ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.abi_version != VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	if (req.max > VTIER_TDP_MAX_MEMSLOTS)
		return -E2BIG;
	out = kvcalloc(max_t(u32, req.max, 1), sizeof(*out), GFP_KERNEL_ACCOUNT);
	if (!out)
		return -ENOMEM;
	ret = tdp_enter(cl, &idx);
	if (ret)
		goto out_free;
	slots = kvm_memslots(cl->kvm);
	kvm_for_each_memslot(slot, bkt, slots) {
		count++;
		if (n == req.max)
			continue;
		out[n].gpa = slot->base_gfn << PAGE_SHIFT;
		out[n].size = slot->npages << PAGE_SHIFT;
		out[n].hva = slot->userspace_addr;
		out[n].id = slot->id;
		out[n].flags = (slot->flags & KVM_MEM_READONLY ? VTIER_TDP_SLOT_READONLY : 0) |
			       (slot->id >= KVM_USER_MEM_SLOTS ? VTIER_TDP_SLOT_INTERNAL : 0);
		n++;
	}
	tdp_leave(cl, idx);
	sort(out, n, sizeof(*out), memslot_cmp, NULL);
	req.count = count;
	if (n && copy_to_user(u64_to_user_ptr(req.slots), out, n * sizeof(*out)))
		ret = -EFAULT;
	else if (copy_to_user(arg, &req, sizeof(req)))
		ret = -EFAULT;
out_free:
	kvfree(out);
	return ret;
}

static long tdp_sample(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_sample req;
	struct vtier_tdp_probe *p;
	struct tdp_walk w;
	u32 i;
	int idx, ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.abi_version != VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	if (req.flags & ~VTIER_TDP_HUGE_LEAVES)
		return -EINVAL;
	if (!req.n || req.n > VTIER_TDP_MAX_BATCH)
		return -E2BIG;
	p = kvmalloc_array(req.n, sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	if (copy_from_user(p, u64_to_user_ptr(req.probes), req.n * sizeof(*p))) {
		ret = -EFAULT;
		goto out_free;
	}
	for (i = 0; i < req.n; i++) {
		if (p[i].level >= VTIER_TDP_MAX_LEVELS) {
			ret = -EINVAL;
			goto out_free;
		}
	}
	ret = tdp_enter(cl, &idx);
	if (ret)
		goto out_free;
	req.nr_noslot = 0;
	for (i = 0; i < req.n; i++) {
		if (!gfn_to_memslot(cl->kvm, p[i].gpa >> PAGE_SHIFT)) {
			p[i].result = VTIER_TDP_NOSLOT;
			req.nr_noslot++;
		} else {
			p[i].result = VTIER_TDP_ABSENT;
		}
	}
	read_lock(&cl->kvm->mmu_lock);
	rcu_read_lock();
	ret = tdp_walk_begin(cl->kvm, &w, cl->abit);
	if (!ret) {
		w.huge = req.flags & VTIER_TDP_HUGE_LEAVES;
		for (i = 0; i < req.n; i++) {
			if (p[i].result == VTIER_TDP_NOSLOT)
				continue;
			if (p[i].level > w.top) {
				ret = -EINVAL;
				break;
			}
			p[i].result = tdp_probe(&w, p[i].gpa, p[i].level);
		}
	} else if (ret == -ENOENT) {
		ret = 0;	/* no root: nothing is mapped, every probe is absent */
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	tdp_leave(cl, idx);
	if (ret)
		goto out_free;
	memcpy(req.checks, w.checks, sizeof(req.checks));
	if (copy_to_user(u64_to_user_ptr(req.probes), p, req.n * sizeof(*p)) ||
	    copy_to_user(arg, &req, sizeof(req)))
		ret = -EFAULT;
out_free:
	kvfree(p);
	return ret;
}

/* Does [start, end) intersect a memslot? Caller holds kvm->srcu. */
static bool range_has_memslot(struct kvm *kvm, u64 start, u64 end)
{
	struct kvm_memory_slot *slot;
	struct kvm_memslots *slots = kvm_memslots(kvm);
	int bkt;

	kvm_for_each_memslot(slot, bkt, slots) {
		u64 s = slot->base_gfn << PAGE_SHIFT;
		u64 e = s + (slot->npages << PAGE_SHIFT);

		if (s < end && start < e)
			return true;
	}
	return false;
}

static long tdp_scan(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_scan req;
	struct tdp_scan_ctx c = {};
	struct tdp_walk w;
	int idx, ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.abi_version != VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	if ((req.flags & ~VTIER_TDP_HUGE_LEAVES) || req.level >= VTIER_TDP_MAX_LEVELS ||
	    req.skip_from < req.level ||
	    req.skip_from >= VTIER_TDP_MAX_LEVELS || req.start >= req.end)
		return -EINVAL;
	if (req.max_checks > VTIER_TDP_MAX_SCAN_CHECKS || req.max_young > VTIER_TDP_MAX_SCAN_CHECKS)
		return -E2BIG;
	if (!req.max_young)
		return -EINVAL;
	c.young = kvmalloc_array(req.max_young, sizeof(u64), GFP_KERNEL_ACCOUNT);
	if (!c.young)
		return -ENOMEM;
	ret = tdp_enter(cl, &idx);
	if (ret)
		goto out_free;
	if (!range_has_memslot(cl->kvm, req.start, req.end)) {
		tdp_leave(cl, idx);
		ret = -ENOENT;
		goto out_free;
	}
	c.w = &w;
	c.start = req.start;
	c.pos = req.start;
	c.level = req.level;
	c.skip_from = req.skip_from;
	c.checks_left = req.max_checks ? req.max_checks : VTIER_TDP_MAX_SCAN_CHECKS;
	c.visits_left = c.checks_left * 16;
	c.max_young = req.max_young;
	read_lock(&cl->kvm->mmu_lock);
	rcu_read_lock();
	ret = tdp_walk_begin(cl->kvm, &w, cl->abit);
	if (!ret) {
		u64 limit = 1ULL << tdp_shift(w.top + 1);

		w.huge = req.flags & VTIER_TDP_HUGE_LEAVES;
		c.end = min(req.end, limit);
		if (req.level > w.top) {
			ret = -EINVAL;
		} else {
			if (c.skip_from > w.top)
				c.skip_from = w.top;
			if (c.pos < c.end)
				tdp_scan_table(&c, w.root, w.top, 0);
			if (!c.stop)
				c.pos = req.end;
		}
	} else if (ret == -ENOENT) {
		memset(&w, 0, sizeof(w));
		c.pos = req.end;
		ret = 0;
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	tdp_leave(cl, idx);
	if (ret)
		goto out_free;
	req.nr_young = c.nr_young;
	req.next = c.pos;
	memcpy(req.checks, w.checks, sizeof(req.checks));
	if ((c.nr_young && copy_to_user(u64_to_user_ptr(req.young), c.young,
					c.nr_young * sizeof(u64))) ||
	    copy_to_user(arg, &req, sizeof(req)))
		ret = -EFAULT;
out_free:
	kvfree(c.young);
	return ret;
}

static long tdp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct tdp_client *cl = file->private_data;
	void __user *uarg = (void __user *)arg;
	long ret;

	mutex_lock(&cl->lock);
	switch (cmd) {
	case VTIER_TDP_ATTACH:
		ret = tdp_attach(cl, uarg);
		break;
	case VTIER_TDP_INFO:
		ret = tdp_info(cl, uarg);
		break;
	case VTIER_TDP_MEMSLOTS:
		ret = tdp_memslots(cl, uarg);
		break;
	case VTIER_TDP_SAMPLE:
		ret = tdp_sample(cl, uarg);
		break;
	case VTIER_TDP_SCAN:
		ret = tdp_scan(cl, uarg);
		break;
	default:
		ret = -ENOTTY;
	}
	mutex_unlock(&cl->lock);
	return ret;
}

static int tdp_open(struct inode *inode, struct file *file)
{
	struct tdp_client *cl;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	cl = kzalloc(sizeof(*cl), GFP_KERNEL_ACCOUNT);
	if (!cl)
		return -ENOMEM;
	mutex_init(&cl->lock);
	file->private_data = cl;
	return 0;
}

static int tdp_release(struct inode *inode, struct file *file)
{
	struct tdp_client *cl = file->private_data;

	if (cl->kvm)
		kvm_put_kvm(cl->kvm);
	mutex_destroy(&cl->lock);
	kfree(cl);
	return 0;
}

static const struct file_operations tdp_fops = {
	.owner = THIS_MODULE,
	.open = tdp_open,
	.release = tdp_release,
	.unlocked_ioctl = tdp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice tdp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "vtier-tdp",
	.fops = &tdp_fops,
	.mode = 0600,
};

static int __init vtier_tdp_init(void)
{
	BUILD_BUG_ON(offsetof(struct vtier_kvm_mmu_page, link) != 0);
	BUILD_BUG_ON(sizeof(struct vtier_tdp_probe) != 16);
	BUILD_BUG_ON(sizeof(struct vtier_tdp_scan) != 104);
	return misc_register(&tdp_misc);
}

static void __exit vtier_tdp_exit(void)
{
	misc_deregister(&tdp_misc);
}

module_init(vtier_tdp_init);
module_exit(vtier_tdp_exit);
MODULE_DESCRIPTION("vtier: EPT/NPT accessed bits at every level for memory tiering");
MODULE_AUTHOR("vtier developers");
MODULE_LICENSE("GPL");
