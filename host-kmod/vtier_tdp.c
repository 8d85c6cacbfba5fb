// SPDX-License-Identifier: GPL-2.0
/*
 * vtier_tdp.ko: read and clear the accessed bits of a KVM VM's second-level
 * page table (AMD NPT; Intel EPT with A/D bits) at every level, for vtier's
 * host agent. ABI in include/vtier/tdp.h, documented in docs/abi-tdp.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/ktime.h>
#include <linux/kvm_host.h>
#include <linux/memory_hotplug.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/page_idle.h>
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
/* How often (entries read) to ask whether someone waits for mmu_lock. */
#define TDP_YIELD_CHECK	256

struct tdp_client {
	struct mutex lock;	/* serialises ioctls on one open file */
	struct kvm *kvm;	/* attached VM, holds a kvm_get_kvm() reference */
	u64 abit;		/* accessed bit of this VM's format */
	u32 format;
	/*
	 * The table page of the root walked last, pinned with get_page() so
	 * that it cannot be freed and reused for another root while we compare
	 * against it: a new root never has this address, so comparing
	 * addresses tells a root swap. root_cookie counts the roots seen.
	 */
	struct page *root_page;
	u64 root_cookie;
	u64 cleared_since_flush;
	u64 nr_flushes, flush_ns, nr_cleared, nr_marked, nr_yields;
};

/* Huge leaves tested in one SAMPLE call: (leaf gpa | level) -> result. */
struct tdp_huge_seen {
	u64 key;		/* 0: empty slot (a huge leaf has level >= 1) */
	int result;
};

/* One walk: the root chosen under mmu_lock, and what it did. */
struct tdp_walk {
	struct tdp_client *cl;
	u64 *root;		/* root page table (kernel virtual) */
	unsigned int top;	/* level of the root's entries: 3 or 4 */
	u64 abit;
	u64 checks[VTIER_TDP_MAX_LEVELS];
	u32 nr_cleared, nr_marked, nr_yields;
	u32 held;		/* entries read since mmu_lock was taken */
	u32 next_check;		/* when to ask again whether to let go */
	bool huge;		/* VTIER_TDP_HUGE_LEAVES: huge leaves answer for below */
	struct tdp_huge_seen *seen;	/* SAMPLE with huge: open addressing */
	u32 seen_mask;
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
 * reported absent and left alone. *@oldp gets the value we replaced.
 */
static int spte_test_clear(u64 *sptep, u64 abit, u64 *oldp)
{
	u64 old = READ_ONCE(*sptep);

	do {
		if (!spte_present(old))
			return VTIER_TDP_ABSENT;
		if (!(old & abit))
			return VTIER_TDP_OLD;
	} while (!try_cmpxchg64(sptep, &old, old & ~abit));
	*oldp = old;
	return VTIER_TDP_YOUNG;
}

/*
 * KVM's aging (kvm_age_gfn, reached from the host's rmap walks through the
 * MMU notifier) reads a leaf's A bit to tell host reclaim that the page is in
 * use. Having cleared a young leaf, tell the host what we saw, as page_idle
 * does when it clears a young PTE (page_idle_clear_pte_refs_one()): the folio
 * is marked young, which folio_referenced() counts (mm/rmap.c), and no longer
 * idle. The folio cannot go away meanwhile: the leaf is present and we hold
 * mmu_lock, so KVM's MMU notifier has not zapped it, so the host still maps
 * the page. Pages without a struct page of their own (PFNMAP, reserved) are
 * left alone, as kvm_set_pfn_accessed() leaves them.
 */
static void tdp_mark_young(struct tdp_walk *w, u64 spte)
{
	struct page *page = pfn_to_online_page((spte & VTIER_SPTE_ADDR_MASK) >> PAGE_SHIFT);
	struct folio *folio;

	if (!page || PageReserved(page))
		return;
	folio = page_folio(page);
	folio_clear_idle(folio);
	folio_set_young(folio);
	w->nr_marked++;
}

/* Test and clear one entry at @level; a young leaf marks its host folio. */
static int tdp_test_clear(struct tdp_walk *w, u64 *sptep, unsigned int level, bool leaf)
{
	u64 old;
	int r;

	w->checks[level]++;
	r = spte_test_clear(sptep, w->abit, &old);
	if (r == VTIER_TDP_YOUNG) {
		w->nr_cleared++;
		if (leaf)
			tdp_mark_young(w, old);
	}
	return r;
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
 *   nothing else (and tdp_scan_unwind(), which gives one back).
 * - When a walk drops the locks (tdp_relock()), every pointer into the
 *   table is stale: the walk starts again from the root, found again.
 *
 * Only the address space 0 root (not SMM) that is not for a nested guest
 * (role.guest_mode) is used; that is the one that maps the VM's memory.
 * Caller holds kvm->mmu_lock for read and rcu_read_lock().
 */
static int tdp_walk_root(struct tdp_walk *w)
{
	struct tdp_client *cl = w->cl;
	struct vtier_kvm_mmu_page *root;

	w->root = NULL;
	list_for_each_entry_rcu(root, &cl->kvm->arch.tdp_mmu_roots, link) {
		union kvm_mmu_page_role role = READ_ONCE(root->role);
		u64 *spt = READ_ONCE(root->spt);
		struct page *page;

		if (role.invalid || role.smm || role.guest_mode)
			continue;
		if (!root->tdp_mmu_page || !role.direct ||
		    (role.level != 4 && role.level != 5) ||
		    !spt || !PAGE_ALIGNED(spt) || !virt_addr_valid(spt) ||
		    page_private(virt_to_page(spt)) != (unsigned long)root) {
			pr_err_ratelimited("TDP MMU root does not match the 6.12 layout this module was built for\n");
			return -EPROTO;
		}
		if (w->abit == VTIER_EPT_ACCESSED && role.ad_disabled)
			return -EOPNOTSUPP;
		page = virt_to_page(spt);
		if (page != cl->root_page) {
			/* A valid root's table is in use: taking a reference is safe. */
			get_page(page);
			if (cl->root_page)
				put_page(cl->root_page);
			cl->root_page = page;
			cl->root_cookie++;
		}
		w->root = spt;
		w->top = role.level - 1;
		return 0;
	}
	return -ENOENT;
}

static int tdp_walk_begin(struct tdp_client *cl, struct tdp_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->cl = cl;
	w->abit = cl->abit;
	w->next_check = TDP_YIELD_CHECK;
	return tdp_walk_root(w);
}

/* Fold a finished walk into the file's totals. */
static void tdp_walk_end(struct tdp_walk *w)
{
	struct tdp_client *cl = w->cl;

	cl->cleared_since_flush += w->nr_cleared;
	cl->nr_cleared += w->nr_cleared;
	cl->nr_marked += w->nr_marked;
	cl->nr_yields += w->nr_yields;
}

/*
 * Bounded lock hold: after VTIER_TDP_HOLD_ENTRIES entries read, or earlier
 * when the scheduler or a writer waiting for mmu_lock (KVM's page faults take
 * it for read too, its zaps for write) asks, the walk must let go.
 */
static bool tdp_need_yield(struct tdp_walk *w)
{
	if (w->held >= VTIER_TDP_HOLD_ENTRIES)
		return true;
	if (w->held < w->next_check)
		return false;
	w->next_check = w->held + TDP_YIELD_CHECK;
	return need_resched() || rwlock_needbreak(&w->cl->kvm->mmu_lock);
}

/*
 * Drop rcu_read_lock() and mmu_lock, let others run, take them again and
 * find the root again (KVM may have replaced it meanwhile: the cookie says
 * so). Returns tdp_walk_root()'s result; -ENOENT: no root any more.
 */
static int tdp_relock(struct tdp_walk *w)
{
	struct kvm *kvm = w->cl->kvm;

	rcu_read_unlock();
	read_unlock(&kvm->mmu_lock);
	cond_resched();
	read_lock(&kvm->mmu_lock);
	rcu_read_lock();
	w->held = 0;
	w->next_check = TDP_YIELD_CHECK;
	w->nr_yields++;
	return tdp_walk_root(w);
}

/* SAMPLE's memory of huge leaves tested in this call. */
static struct tdp_huge_seen *tdp_seen_slot(struct tdp_walk *w, u64 key)
{
	u32 i = hash_64(key, 32) & w->seen_mask;

	while (w->seen[i].key && w->seen[i].key != key)
		i = (i + 1) & w->seen_mask;
	return &w->seen[i];
}

/* Test-and-clear the entry at @level covering @gpa. */
static int tdp_probe(struct tdp_walk *w, u64 gpa, unsigned int level)
{
	u64 *table = w->root;
	unsigned int l;
	u64 spte;

	/* Beyond what the root maps: nothing there (tdp_index() would wrap). */
	if (gpa >> tdp_shift(w->top + 1))
		return VTIER_TDP_ABSENT;
	for (l = w->top; l >= level; l--) {
		u64 *sptep = &table[tdp_index(gpa, l)];

		w->held++;
		spte = READ_ONCE(*sptep);
		if (!spte_present(spte))
			return VTIER_TDP_ABSENT;
		if (l > 0 && spte_leaf(spte, l) && (l > level || w->seen)) {
			/*
			 * A huge leaf maps @gpa: its A bit is the only one the
			 * walker sets for it. Test it once per call, so that
			 * every probe of the call under it (or of it) agrees.
			 */
			u64 key = (gpa & ~((1ULL << tdp_shift(l)) - 1)) | l;
			struct tdp_huge_seen *seen;

			if (l > level && !w->huge)
				return VTIER_TDP_ABSENT;
			seen = tdp_seen_slot(w, key);
			if (!seen->key) {
				seen->key = key;
				seen->result = tdp_test_clear(w, sptep, l, true);
			}
			return seen->result;
		}
		if (l == level)
			return tdp_test_clear(w, sptep, l, spte_leaf(spte, l));
		table = spte_child(spte);
	}
	return VTIER_TDP_ABSENT;	/* not reached: the loop ends at @level */
}

struct tdp_scan_ctx {
	struct tdp_walk *w;
	u64 end, pos;
	unsigned int level, skip_from;
	u64 checks_left;
	u64 visits_left;	/* entries read, present or not: bounds one call */
	u64 *young;
	u32 nr_young, max_young;
	bool stop;		/* budget spent: return to the caller at @pos */
	bool yield;		/* let go of mmu_lock, then go on from @pos */
	bool census;		/* INFO: count present leaves, test nothing */
	u64 *leaves;		/* census: per level */
	/*
	 * Upper entries tested young and descended into, with no entry below
	 * them finished yet (@pos still at their start). A call that must stop
	 * or yield there gives them their A bit back (tdp_scan_unwind()), so
	 * that the walk that resumes at @pos tests them young again and
	 * descends instead of skipping a subtree it never looked at.
	 */
	u64 *pending[VTIER_TDP_MAX_LEVELS];
	unsigned int nr_pending;
};

static void tdp_scan_advance(struct tdp_scan_ctx *c, u64 pos)
{
	c->pos = pos;
	c->nr_pending = 0;
}

static void tdp_scan_unwind(struct tdp_scan_ctx *c)
{
	while (c->nr_pending) {
		u64 *sptep = c->pending[--c->nr_pending];
		u64 old = READ_ONCE(*sptep);

		do {
			if (!spte_present(old))
				break;
		} while (!try_cmpxchg64(sptep, &old, old | c->w->abit));
	}
}

static void tdp_scan_table(struct tdp_scan_ctx *c, u64 *table, unsigned int l, u64 base)
{
	u64 size = 1ULL << tdp_shift(l);
	unsigned int i = c->pos > base ? (c->pos - base) >> tdp_shift(l) : 0;

	for (; i < TDP_ENTRIES; i++) {
		u64 es = base + i * size, ee = es + size;
		u64 *sptep = &table[i];
		u64 spte;

		if (es >= c->end)
			return;
		if (!c->visits_left) {
			c->stop = true;
			return;
		}
		if (tdp_need_yield(c->w)) {
			c->yield = true;
			return;
		}
		c->visits_left--;
		c->w->held++;
		spte = READ_ONCE(*sptep);
		if (!spte_present(spte)) {
			tdp_scan_advance(c, ee);
			continue;
		}
		if (c->census) {
			if (spte_leaf(spte, l)) {
				c->leaves[l]++;
				tdp_scan_advance(c, ee);
				continue;
			}
			tdp_scan_table(c, spte_child(spte), l - 1, es);
			if (c->stop || c->yield)
				return;
			continue;
		}
		if (l == c->level || spte_leaf(spte, l)) {
			/*
			 * At the level asked, or a huge leaf above it: nothing
			 * below. A huge leaf's A bit answers for all of it
			 * when the caller asked so; else it is skipped.
			 */
			if (l == c->level || c->w->huge) {
				if (!c->checks_left || c->nr_young == c->max_young) {
					c->stop = true;
					return;
				}
				c->checks_left--;
				if (tdp_test_clear(c->w, sptep, l, spte_leaf(spte, l)) ==
				    VTIER_TDP_YOUNG)
					c->young[c->nr_young++] = es | l;
			}
			tdp_scan_advance(c, ee);
			continue;
		}
		/*
		 * An upper entry wholly inside what is left of the range: test
		 * it and skip its subtree when old. One that starts before
		 * @pos was tested by the call (or hold) that descended into it.
		 */
		if (l <= c->skip_from && es >= c->pos && ee <= c->end) {
			if (!c->checks_left) {
				c->stop = true;
				return;
			}
			c->checks_left--;
			if (tdp_test_clear(c->w, sptep, l, false) != VTIER_TDP_YOUNG) {
				tdp_scan_advance(c, ee);
				continue;
			}
			c->pending[c->nr_pending++] = sptep;
		}
		tdp_scan_table(c, spte_child(spte), l - 1, es);
		if (c->stop || c->yield)
			return;
	}
}

/*
 * Walk [c->pos, c->end) from the root, letting go of the locks whenever the
 * hold is long enough. Caller holds mmu_lock for read and rcu_read_lock(),
 * and has found the root (tdp_walk_begin()).
 */
static int tdp_scan_run(struct tdp_scan_ctx *c)
{
	struct tdp_walk *w = c->w;
	int ret;

	for (;;) {
		c->nr_pending = 0;
		if (c->pos < c->end)
			tdp_scan_table(c, w->root, w->top, 0);
		if (c->stop || c->yield)
			tdp_scan_unwind(c);
		if (!c->yield)
			return 0;
		c->yield = false;
		ret = tdp_relock(w);
		if (ret == -ENOENT) {
			/* no root any more: nothing is mapped in the rest */
			c->pos = c->end;
			return 0;
		}
		if (ret)
			return ret;
	}
}

/* ------------------------------------------------------------------ ioctls */

/*
 * Copy a request in: the ioctl number's size says which version of the
 * structure the caller has (@v1_size or the current @size); fields it lacks
 * read as zero.
 */
static int tdp_copy_req(void *req, size_t size, unsigned int cmd, void __user *arg,
			size_t copy)
{
	u32 version;

	memset(req, 0, size);
	if (copy_from_user(req, arg, min_t(size_t, copy, _IOC_SIZE(cmd))))
		return -EFAULT;
	version = *(u32 *)req;
	if (version < 1 || version > VTIER_TDP_ABI_VERSION)
		return -EPROTO;
	return 0;
}

static long tdp_attach(struct tdp_client *cl, void __user *arg)
{
	struct vtier_tdp_attach a;
	struct kvm *kvm;
	struct file *f;
	int ret;

	ret = tdp_copy_req(&a, sizeof(a), VTIER_TDP_ATTACH, arg, sizeof(a));
	if (ret)
		return ret;
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
	/* KVM's own test (f_op == &kvm_vm_fops), exported for VFIO and friends. */
	if (!file_is_kvm(f)) {
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

/*
 * mmput_async(): if the VMM exited meanwhile, ours is the last reference and
 * the teardown (exit_mmap(), KVM's MMU notifier release, which takes mmu_lock
 * for write) runs from a workqueue, not inside our ioctl.
 */
static void tdp_leave(struct tdp_client *cl, int srcu_idx)
{
	srcu_read_unlock(&cl->kvm->srcu, srcu_idx);
	mmput_async(cl->kvm->mm);
}

/*
 * VTIER_TDP_FLUSH_TLB: flush the VM's TLBs once, outside mmu_lock, if this
 * file cleared a bit since its last flush. Returns the time taken (>= 1) or 0.
 */
static u64 tdp_flush(struct tdp_client *cl)
{
	u64 t0, dt;

	if (!cl->cleared_since_flush)
		return 0;
	t0 = ktime_get_ns();
	kvm_flush_remote_tlbs(cl->kvm);
	dt = max_t(u64, ktime_get_ns() - t0, 1);
	cl->cleared_since_flush = 0;
	cl->nr_flushes++;
	cl->flush_ns += dt;
	return dt;
}

static long tdp_info(struct tdp_client *cl, unsigned int cmd, void __user *arg)
{
	struct vtier_tdp_info info;
	struct kvm_memory_slot *slot;
	struct kvm_memslots *slots;
	struct tdp_scan_ctx c = {};
	struct tdp_walk w;
	int idx, bkt, ret;

	ret = tdp_copy_req(&info, sizeof(info), cmd, arg, sizeof(info.abi_version));
	if (ret)
		return ret;
	ret = tdp_enter(cl, &idx);
	if (ret)
		return ret;
	slots = kvm_memslots(cl->kvm);
	kvm_for_each_memslot(slot, bkt, slots)
		info.nr_memslots++;
	read_lock(&cl->kvm->mmu_lock);
	rcu_read_lock();
	ret = tdp_walk_begin(cl, &w);
	if (!ret) {
		info.levels = w.top + 1;
		c.w = &w;
		c.census = true;
		c.leaves = info.leaves;
		c.end = 1ULL << tdp_shift(w.top + 1);
		c.visits_left = (u64)VTIER_TDP_MAX_SCAN_CHECKS * 16;
		ret = tdp_scan_run(&c);
		info.leaves_truncated = c.stop;
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	tdp_leave(cl, idx);
	/* No root yet (no vCPU ran): the VM still has a format, levels unknown. */
	if (ret == -ENOENT)
		ret = 0;
	else
		tdp_walk_end(&w);
	if (ret)
		return ret;
	info.format = cl->format;
	info.features = VTIER_TDP_F_UPPER_ACCESSED | VTIER_TDP_F_SAMPLE | VTIER_TDP_F_SCAN |
			VTIER_TDP_F_HUGE_LEAVES | VTIER_TDP_F_FLUSH_TLB | VTIER_TDP_F_ROOT_COOKIE |
			VTIER_TDP_F_MARK_YOUNG | VTIER_TDP_F_YIELD;
	info.accessed_bit = __ffs64(cl->abit);
	info.max_batch = VTIER_TDP_MAX_BATCH;
	info.max_scan_checks = VTIER_TDP_MAX_SCAN_CHECKS;
	info.root_cookie = w.root ? cl->root_cookie : 0;
	info.nr_flushes = cl->nr_flushes;
	info.flush_ns = cl->flush_ns;
	info.nr_cleared = cl->nr_cleared;
	info.nr_marked = cl->nr_marked;
	info.nr_yields = cl->nr_yields;
	if (copy_to_user(arg, &info, _IOC_SIZE(cmd)))
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

	ret = tdp_copy_req(&req, sizeof(req), VTIER_TDP_MEMSLOTS, arg, sizeof(req));
	if (ret)
		return ret;
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

static long tdp_sample(struct tdp_client *cl, unsigned int cmd, void __user *arg)
{
	struct vtier_tdp_sample req;
	struct tdp_huge_seen *seen = NULL;
	struct vtier_tdp_probe *p;
	struct tdp_walk w;
	u32 i, nr_seen = 0;
	int idx, ret;

	ret = tdp_copy_req(&req, sizeof(req), cmd, arg, sizeof(req));
	if (ret)
		return ret;
	if (req.flags & ~(VTIER_TDP_HUGE_LEAVES | VTIER_TDP_FLUSH_TLB))
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
	if (req.flags & VTIER_TDP_HUGE_LEAVES) {
		nr_seen = roundup_pow_of_two(2 * req.n);
		seen = kvcalloc(nr_seen, sizeof(*seen), GFP_KERNEL_ACCOUNT);
		if (!seen) {
			ret = -ENOMEM;
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
	ret = tdp_walk_begin(cl, &w);
	if (!ret) {
		w.huge = req.flags & VTIER_TDP_HUGE_LEAVES;
		w.seen = seen;
		w.seen_mask = nr_seen - 1;
		/* Every level checked before any bit is cleared. */
		for (i = 0; i < req.n; i++) {
			if (p[i].result != VTIER_TDP_NOSLOT && p[i].level > w.top)
				ret = -EINVAL;
		}
		for (i = 0; !ret && i < req.n; i++) {
			if (p[i].result == VTIER_TDP_NOSLOT)
				continue;
			if (tdp_need_yield(&w)) {
				ret = tdp_relock(&w);
				if (ret)
					break;
			}
			p[i].result = tdp_probe(&w, p[i].gpa, p[i].level);
		}
		/* The root went away mid-call: the rest is unmapped (ABSENT). */
		if (ret == -ENOENT)
			ret = 0;
		tdp_walk_end(&w);
	} else if (ret == -ENOENT) {
		ret = 0;	/* no root: nothing is mapped, every probe is absent */
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	if (!ret && (req.flags & VTIER_TDP_FLUSH_TLB))
		req.flush_ns = tdp_flush(cl);
	tdp_leave(cl, idx);
	if (ret)
		goto out_free;
	memcpy(req.checks, w.checks, sizeof(req.checks));
	req.root_cookie = w.root ? cl->root_cookie : 0;
	req.nr_cleared = w.nr_cleared;
	req.nr_marked = w.nr_marked;
	req.nr_yields = w.nr_yields;
	if (copy_to_user(u64_to_user_ptr(req.probes), p, req.n * sizeof(*p)) ||
	    copy_to_user(arg, &req, _IOC_SIZE(cmd)))
		ret = -EFAULT;
out_free:
	kvfree(seen);
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

static long tdp_scan(struct tdp_client *cl, unsigned int cmd, void __user *arg)
{
	struct vtier_tdp_scan req;
	struct tdp_scan_ctx c = {};
	struct tdp_walk w;
	int idx, ret;

	ret = tdp_copy_req(&req, sizeof(req), cmd, arg, sizeof(req));
	if (ret)
		return ret;
	if ((req.flags & ~(VTIER_TDP_HUGE_LEAVES | VTIER_TDP_FLUSH_TLB)) ||
	    req.level >= VTIER_TDP_MAX_LEVELS || req.skip_from < req.level ||
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
	c.pos = req.start;
	c.level = req.level;
	c.skip_from = req.skip_from;
	c.checks_left = req.max_checks ? req.max_checks : VTIER_TDP_MAX_SCAN_CHECKS;
	c.visits_left = c.checks_left * 16;
	c.max_young = req.max_young;
	read_lock(&cl->kvm->mmu_lock);
	rcu_read_lock();
	ret = tdp_walk_begin(cl, &w);
	if (!ret) {
		w.huge = req.flags & VTIER_TDP_HUGE_LEAVES;
		/* Nothing beyond the root's reach is mapped. */
		c.end = min(req.end, 1ULL << tdp_shift(w.top + 1));
		if (req.level > w.top) {
			ret = -EINVAL;
		} else {
			if (c.skip_from > w.top)
				c.skip_from = w.top;
			ret = tdp_scan_run(&c);
			if (!c.stop)
				c.pos = req.end;
		}
		tdp_walk_end(&w);
	} else if (ret == -ENOENT) {
		memset(&w, 0, sizeof(w));
		c.pos = req.end;
		ret = 0;
	}
	rcu_read_unlock();
	read_unlock(&cl->kvm->mmu_lock);
	if (!ret && (req.flags & VTIER_TDP_FLUSH_TLB))
		req.flush_ns = tdp_flush(cl);
	tdp_leave(cl, idx);
	if (ret)
		goto out_free;
	req.nr_young = c.nr_young;
	req.next = c.pos;
	memcpy(req.checks, w.checks, sizeof(req.checks));
	req.root_cookie = w.root ? cl->root_cookie : 0;
	req.nr_cleared = w.nr_cleared;
	req.nr_marked = w.nr_marked;
	req.nr_yields = w.nr_yields;
	if ((c.nr_young && copy_to_user(u64_to_user_ptr(req.young), c.young,
					c.nr_young * sizeof(u64))) ||
	    copy_to_user(arg, &req, _IOC_SIZE(cmd)))
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
	case VTIER_TDP_INFO_V1:
		ret = tdp_info(cl, cmd, uarg);
		break;
	case VTIER_TDP_MEMSLOTS:
		ret = tdp_memslots(cl, uarg);
		break;
	case VTIER_TDP_SAMPLE:
	case VTIER_TDP_SAMPLE_V1:
		ret = tdp_sample(cl, cmd, uarg);
		break;
	case VTIER_TDP_SCAN:
	case VTIER_TDP_SCAN_V1:
		ret = tdp_scan(cl, cmd, uarg);
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

	if (cl->root_page)
		put_page(cl->root_page);
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
	BUILD_BUG_ON(sizeof(struct vtier_tdp_scan) != 136);
	BUILD_BUG_ON(sizeof(struct vtier_tdp_sample) != 96);
	BUILD_BUG_ON(sizeof(struct vtier_tdp_info) != 128);
	BUILD_BUG_ON(offsetof(struct vtier_tdp_info, root_cookie) != VTIER_TDP_INFO_SIZE_V1);
	BUILD_BUG_ON(offsetof(struct vtier_tdp_sample, root_cookie) != VTIER_TDP_SAMPLE_SIZE_V1);
	BUILD_BUG_ON(offsetof(struct vtier_tdp_scan, root_cookie) != VTIER_TDP_SCAN_SIZE_V1);
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
