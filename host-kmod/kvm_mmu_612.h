/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few KVM TDP MMU internals vtier_tdp.ko reads, which are not in
 * linux-headers. Copied from Linux 6.12.95 (Debian 6.12.95-1~bpo12+1,
 * `apt-get source linux=6.12.95-1~bpo12+1`), arch/x86/kvm/mmu/mmu_internal.h
 * and spte.h. Only the prefix of struct kvm_mmu_page up to @spt is declared;
 * the module never allocates one and never reads past @spt.
 *
 * The layout is checked at run time on every root the walker uses: KVM sets
 * page_private() of a TDP MMU page table's struct page to its kvm_mmu_page
 * (tdp_mmu_init_sp()), so a root whose @spt page does not point back at the
 * root, or whose @role is not a direct 4/5-level TDP role, means the layout
 * differs and the module refuses to walk (EPROTO) instead of guessing.
 */
#ifndef VTIER_KVM_MMU_612_H
#define VTIER_KVM_MMU_612_H

#include <linux/kvm_host.h>

struct vtier_kvm_mmu_page {
	struct list_head link;		/* on kvm->arch.tdp_mmu_roots for roots */
	struct hlist_node hash_link;
	bool tdp_mmu_page;
	bool unsync;
	u8 mmu_valid_gen;
	bool nx_huge_page_disallowed;
	union kvm_mmu_page_role role;
	gfn_t gfn;
	u64 *spt;			/* the page table page */
};

/* spte.h: KVM's software "present" bit; FROZEN_SPTE and MMIO SPTEs lack it. */
#define VTIER_SPTE_MMU_PRESENT	BIT_ULL(11)
/* Bit 7 (PS) in NPT and EPT: the entry maps a huge page, nothing below it. */
#define VTIER_SPTE_HUGE		BIT_ULL(7)
#define VTIER_NPT_ACCESSED	BIT_ULL(5)
#define VTIER_EPT_ACCESSED	BIT_ULL(8)
/* spte.h SPTE_BASE_ADDR_MASK with CONFIG_DYNAMIC_PHYSICAL_MASK. */
#define VTIER_SPTE_ADDR_MASK	(__PHYSICAL_MASK & ~(u64)(PAGE_SIZE - 1))

#endif
