// SPDX-License-Identifier: GPL-2.0
/*
 * vtier_guest.ko: cooperative memory hints from a guest to vtier's host agent.
 *
 * The channel is BAR 2 of a stock QEMU ivshmem-plain PCI device, backed on
 * the host by a file the agent maps (include/vtier/guest.h,
 * docs/abi-guest.md). The host writes its page (geometry, consumer index,
 * balloon target); this module writes its own page and a ring of hints:
 *
 *  - FREE: free memory, through the kernel's free page reporting. The host
 *    may discard a reported range until it acknowledges the record, so the
 *    report callback returns only once the host's consumer index has passed
 *    the last record, like virtio-balloon waits for its queue.
 *  - COLD: clean, unmapped, unreferenced page cache found by a bounded walk
 *    of the page frames, coalesced into ranges.
 *  - INFLATE/DEFLATE: a balloon that holds what the host asks for
 *    (balloon_target_pages), allocated without retrying so that it never
 *    pushes the guest into OOM, and given back when the target drops.
 *
 * The module trusts the host's page only as far as its own memory safety
 * goes: geometry is checked before use and a host that never acknowledges
 * only keeps the pages it was told about.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/page_reporting.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <vtier/guest.h>

/*
 * Milliseconds between two looks at the host's page (balloon target, cold
 * scan). Default: 1000.
 */
static unsigned int poll_ms __read_mostly = 1000;
module_param(poll_ms, uint, 0644);
MODULE_PARM_DESC(poll_ms, "ms between looks at the host's page (default 1000)");

/* Report free memory (free page reporting) when the host asks. Default: on. */
static bool free_reporting __read_mostly = true;
module_param(free_reporting, bool, 0444);
MODULE_PARM_DESC(free_reporting, "report free memory when the host asks (default Y)");

/*
 * Page frames the cold scan examines per poll; 0 turns it off.
 * Default: 65536 (256 MiB of 4 KiB frames per poll).
 */
static unsigned int cold_scan_pages __read_mostly = 65536;
module_param(cold_scan_pages, uint, 0644);
MODULE_PARM_DESC(cold_scan_pages, "page frames scanned for cold cache per poll, 0 off (default 65536)");

/* MiB the balloon grows or shrinks by at most per poll. Default: 64. */
static unsigned int balloon_step_mib __read_mostly = 64;
module_param(balloon_step_mib, uint, 0644);
MODULE_PARM_DESC(balloon_step_mib, "most MiB inflated or deflated per poll (default 64)");

#define VTG_BALLOON_ORDER	9	/* 2 MiB chunks first, then single pages */
#define VTG_ROOM_FOR_REPORTS	PAGE_REPORTING_CAPACITY
#define VTG_ACK_POLL_MS		10

struct vtg_dev {
	struct pci_dev *pdev;
	void *mem;
	resource_size_t size;
	struct vtier_guest_host *host;
	struct vtier_guest_guest *guest;
	struct vtier_guest_hint *ring;

	struct mutex lock;	/* the producer side: prod, ring, geometry */
	bool attached;		/* the host's page was valid at the last look */
	u32 ring_records;	/* checked copy of the host's geometry */
	u32 epoch;
	u32 prod;
	u64 ring_full;

	struct workqueue_struct *wq;
	struct delayed_work work;

	struct page_reporting_dev_info prdev;
	bool reporting;

	struct list_head balloon;	/* chunks; head page: lru, private = order */
	unsigned long balloon_pages;	/* 4 KiB pages */
	u32 last_inflate;	/* index after the last INFLATE record */
	u32 reclaim_seq;	/* the host's request being answered */

	unsigned long cold_pfn;	/* where the cold scan goes on */
};

static u32 vtg_host_cons(struct vtg_dev *d)
{
	/* pairs with the host's release store after it acted on the records */
	return le32_to_cpu(smp_load_acquire(&d->host->cons));
}

static u32 vtg_host_flags(struct vtg_dev *d)
{
	return le32_to_cpu(READ_ONCE(d->host->flags));
}

/* Has the host acknowledged every record before index @upto? */
static bool vtg_acked(struct vtg_dev *d, u32 upto)
{
	return (s32)(vtg_host_cons(d) - upto) >= 0;
}

/* Records the ring can take now. Caller holds d->lock and d->attached. */
static u32 vtg_room(struct vtg_dev *d)
{
	u32 used = d->prod - vtg_host_cons(d);

	return used >= d->ring_records ? 0 : d->ring_records - used;
}

/* Write one record and publish it. Caller holds d->lock and checked room. */
static void vtg_push(struct vtg_dev *d, u16 kind, u16 flags, u64 gpa, u64 size, u64 arg)
{
	struct vtier_guest_hint *rec = &d->ring[d->prod & (d->ring_records - 1)];

	WRITE_ONCE(rec->seq, cpu_to_le32(d->prod));
	WRITE_ONCE(rec->kind, cpu_to_le16(kind));
	WRITE_ONCE(rec->flags, cpu_to_le16(flags));
	WRITE_ONCE(rec->gpa, cpu_to_le64(gpa));
	WRITE_ONCE(rec->size_bytes, cpu_to_le64(size));
	WRITE_ONCE(rec->arg, cpu_to_le64(arg));
	d->prod++;
	/* the record before the index: pairs with the host's acquire load */
	smp_store_release(&d->guest->prod, cpu_to_le32(d->prod));
}

/*
 * Look at the host's page and take its geometry if it is one we can use.
 * Caller holds d->lock.
 */
static void vtg_check_host(struct vtg_dev *d)
{
	struct vtier_guest_host *h = d->host;
	u32 records, epoch;
	bool ok;

	/* the host stores magic last, with release: the rest is in place */
	ok = le32_to_cpu(smp_load_acquire(&h->magic)) == VTIER_GUEST_HOST_MAGIC &&
	     le16_to_cpu(READ_ONCE(h->abi_version)) == VTIER_GUEST_ABI_VERSION &&
	     le32_to_cpu(READ_ONCE(h->ring_offset)) == VTIER_GUEST_RING_OFFSET &&
	     le32_to_cpu(READ_ONCE(h->record_size)) == sizeof(struct vtier_guest_hint) &&
	     (vtg_host_flags(d) & VTIER_GUEST_HOST_ACTIVE);
	records = le32_to_cpu(READ_ONCE(h->ring_records));
	ok = ok && is_power_of_2(records) && records <= VTIER_GUEST_RING_MAX &&
	     VTIER_GUEST_RING_OFFSET + (u64)records * sizeof(struct vtier_guest_hint) <= d->size;
	if (!ok) {
		if (d->attached)
			pr_info("host agent left\n");
		d->attached = false;
		return;
	}
	epoch = le32_to_cpu(READ_ONCE(h->epoch));
	if (!d->attached || epoch != d->epoch) {
		/* a new agent acknowledged everything up to our index */
		pr_info("host agent attached (epoch %u, %u records)\n", epoch, records);
		d->epoch = epoch;
		d->ring_records = records;
		WRITE_ONCE(d->guest->epoch, cpu_to_le32(epoch));
	}
	d->attached = true;
}

static bool vtg_host_wants(struct vtg_dev *d, u32 flag)
{
	return d->attached && (vtg_host_flags(d) & flag);
}

/* Free page reporting: runs on the reporting worker with up to 32 ranges. */
static int vtg_report(struct page_reporting_dev_info *prdev, struct scatterlist *sgl,
		      unsigned int nents)
{
	struct vtg_dev *d = container_of(prdev, struct vtg_dev, prdev);
	struct scatterlist *sg;
	unsigned int i;
	u32 upto;

	mutex_lock(&d->lock);
	vtg_check_host(d);
	if (!vtg_host_wants(d, VTIER_GUEST_HOST_FREE)) {
		mutex_unlock(&d->lock);
		return -EAGAIN;
	}
	/* all or nothing: a range published must stay free until acknowledged */
	if (vtg_room(d) < nents) {
		d->ring_full += nents;
		WRITE_ONCE(d->guest->ring_full, cpu_to_le64(d->ring_full));
		mutex_unlock(&d->lock);
		return -ENOSPC;
	}
	for_each_sg(sgl, sg, nents, i)
		vtg_push(d, VTIER_GUEST_FREE, 0, page_to_phys(sg_page(sg)), sg->length, 0);
	upto = d->prod;
	mutex_unlock(&d->lock);

	/*
	 * The pages go back to the allocator when we return: the host must be
	 * done with them first. It acknowledges after acting, and an agent that
	 * attaches or detaches acknowledges everything.
	 */
	while (!vtg_acked(d, upto))
		msleep(VTG_ACK_POLL_MS);
	return 0;
}

static void vtg_publish_balloon(struct vtg_dev *d)
{
	WRITE_ONCE(d->guest->balloon_pages, cpu_to_le64(d->balloon_pages));
}

/* Grow the balloon towards @target pages. Caller holds d->lock. */
static void vtg_inflate(struct vtg_dev *d, unsigned long target, unsigned long step)
{
	const gfp_t gfp = GFP_HIGHUSER | __GFP_NORETRY | __GFP_NOWARN | __GFP_NOMEMALLOC;
	unsigned long done = 0;
	unsigned int order = VTG_BALLOON_ORDER;

	while (d->balloon_pages < target && done < step && vtg_room(d) > VTG_ROOM_FOR_REPORTS) {
		unsigned long n;
		struct page *page;

		if (target - d->balloon_pages < (1UL << order))
			order = 0;
		page = alloc_pages(gfp, order);
		if (!page && order) {
			order = 0;
			continue;
		}
		if (!page)
			break;	/* the guest needs its memory: stop here */
		n = 1UL << order;
		set_page_private(page, order);
		list_add(&page->lru, &d->balloon);
		adjust_managed_page_count(page, -(long)n);
		d->balloon_pages += n;
		done += n;
		vtg_push(d, VTIER_GUEST_INFLATE, 0, page_to_phys(page), n << PAGE_SHIFT,
			 d->reclaim_seq);
		d->last_inflate = d->prod;
	}
}

/*
 * Shrink the balloon towards @target pages, once the host has acknowledged
 * every INFLATE record (it may discard balloon pages until then). Caller
 * holds d->lock.
 */
static void vtg_deflate(struct vtg_dev *d, unsigned long target, unsigned long step)
{
	unsigned long done = 0;

	if (!vtg_acked(d, d->last_inflate))
		return;		/* next poll */
	while (d->balloon_pages > target && done < step && vtg_room(d) > VTG_ROOM_FOR_REPORTS) {
		struct page *page = list_first_entry_or_null(&d->balloon, struct page, lru);
		unsigned int order;
		unsigned long n;

		if (!page)
			break;
		order = page_private(page);
		n = 1UL << order;
		list_del(&page->lru);
		set_page_private(page, 0);
		vtg_push(d, VTIER_GUEST_DEFLATE, 0, page_to_phys(page), n << PAGE_SHIFT,
			 d->reclaim_seq);
		adjust_managed_page_count(page, n);
		__free_pages(page, order);
		d->balloon_pages -= n;
		done += n;
	}
}

static void vtg_balloon(struct vtg_dev *d)
{
	unsigned long step = (unsigned long)balloon_step_mib << (20 - PAGE_SHIFT);
	unsigned long target = 0;
	u32 seq;

	if (vtg_host_wants(d, VTIER_GUEST_HOST_RECLAIM)) {
		u64 t = le64_to_cpu(READ_ONCE(d->host->balloon_target_pages));

		/* never more than the guest has */
		target = min_t(u64, t, totalram_pages() + d->balloon_pages);
	}
	if (!d->attached)
		return;		/* keep what we hold until a host says otherwise */
	seq = le32_to_cpu(READ_ONCE(d->host->reclaim_seq));
	if (seq != d->reclaim_seq)
		d->reclaim_seq = seq;
	if (!d->reclaim_seq)
		return;		/* INFLATE/DEFLATE answer a request: none yet */
	if (d->balloon_pages < target)
		vtg_inflate(d, target, step);
	else if (d->balloon_pages > target)
		vtg_deflate(d, target, step);
	vtg_publish_balloon(d);
	if (d->balloon_pages == target)
		WRITE_ONCE(d->guest->reclaim_seq_done, cpu_to_le32(d->reclaim_seq));
}

/*
 * Clean page cache that nobody maps and nobody touched since it went on the
 * LRU: the guest can drop it at no cost but a re-read. Flags are read without
 * a reference (the frame may change under us); a wrong answer costs only a
 * wrong hint, which the host checks against its own telemetry.
 */
static bool vtg_cold_cache(unsigned long pfn)
{
	struct page *page = pfn_to_online_page(pfn);
	struct folio *folio;

	if (!page)
		return false;
	folio = page_folio(page);
	return folio_test_lru(folio) && !folio_test_active(folio) &&
	       !folio_test_referenced(folio) && !folio_test_dirty(folio) &&
	       !folio_test_writeback(folio) && !folio_test_unevictable(folio) &&
	       !folio_test_anon(folio) && !folio_test_swapbacked(folio) &&
	       !folio_mapped(folio);
}

/* Publish a run of cold frames; false when the ring has no room left for it. */
static bool vtg_cold_flush(struct vtg_dev *d, unsigned long start, unsigned long *len)
{
	if (!*len)
		return true;
	if (vtg_room(d) <= VTG_ROOM_FOR_REPORTS)
		return false;
	vtg_push(d, VTIER_GUEST_COLD, VTIER_GUEST_HINT_CLEAN, (u64)start << PAGE_SHIFT,
		 (u64)*len << PAGE_SHIFT, 0);
	*len = 0;
	return true;
}

/* max_pfn is not exported; the nodes' spans are */
static unsigned long vtg_end_pfn(void)
{
	unsigned long end = 0;
	int nid;

	for_each_online_node(nid)
		end = max(end, pgdat_end_pfn(NODE_DATA(nid)));
	return end;
}

/* Walk up to cold_scan_pages frames from where the last walk stopped. */
static void vtg_cold_scan(struct vtg_dev *d)
{
	const unsigned long max_run = VTIER_GUEST_RANGE_MAX >> PAGE_SHIFT;
	u32 max_records = le32_to_cpu(READ_ONCE(d->host->max_records_per_sec));
	unsigned long budget = cold_scan_pages, start = 0, len = 0;
	unsigned long pfn = d->cold_pfn, end = vtg_end_pfn();

	if (!budget || !vtg_host_wants(d, VTIER_GUEST_HOST_COLD))
		return;
	/* at most half the host's record rate */
	max_records = clamp_t(u64, (u64)max_records * poll_ms / 2000, 1, U32_MAX);
	for (; budget; budget--, pfn++) {
		if (pfn >= end) {
			if (!vtg_cold_flush(d, start, &len))
				break;
			pfn = 0;
		}
		if (vtg_cold_cache(pfn) && len < max_run) {
			if (!len)
				start = pfn;
			len++;
			continue;
		}
		if (len) {
			if (!max_records || !vtg_cold_flush(d, start, &len))
				break;
			max_records--;
		}
		if (len == 0 && vtg_cold_cache(pfn)) {
			start = pfn;
			len = 1;
		}
	}
	if (len && max_records)
		vtg_cold_flush(d, start, &len);
	d->cold_pfn = pfn;
}

static void vtg_work(struct work_struct *work)
{
	struct vtg_dev *d = container_of(to_delayed_work(work), struct vtg_dev, work);
	bool want_reporting;

	mutex_lock(&d->lock);
	vtg_check_host(d);
	vtg_balloon(d);
	if (d->attached)
		vtg_cold_scan(d);
	want_reporting = free_reporting && !d->reporting &&
			 vtg_host_wants(d, VTIER_GUEST_HOST_FREE);
	mutex_unlock(&d->lock);

	if (want_reporting) {
		int ret = page_reporting_register(&d->prdev);

		if (ret == -EBUSY)
			pr_warn("free page reporting taken by another driver (virtio_balloon?); free hints off\n");
		else if (ret)
			pr_warn("free page reporting unavailable (%d); free hints off\n", ret);
		d->reporting = !ret;
		free_reporting = free_reporting && !ret;
	}
	queue_delayed_work(d->wq, &d->work, msecs_to_jiffies(max(poll_ms, 10U)));
}

static struct vtg_dev *vtg_the_dev;	/* page reporting allows one device */

static int vtg_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vtier_guest_guest *g;
	struct vtg_dev *d;
	int ret;

	if (vtg_the_dev)
		return -EBUSY;
	/* ivshmem-doorbell has the same ids and an MSI-X BAR 1: not ours */
	if (pci_resource_len(pdev, 1))
		return -ENODEV;
	d = devm_kzalloc(&pdev->dev, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pdev = pdev;
	d->size = pci_resource_len(pdev, VTIER_GUEST_PCI_BAR);
	if (!is_power_of_2(d->size) || d->size < VTIER_GUEST_REGION_MIN ||
	    d->size > VTIER_GUEST_REGION_MAX) {
		dev_info(&pdev->dev, "BAR %d of %pa bytes is no vtier hint region\n",
			 VTIER_GUEST_PCI_BAR, &d->size);
		return -ENODEV;
	}
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_request_region(pdev, VTIER_GUEST_PCI_BAR, KBUILD_MODNAME);
	if (ret)
		return ret;
	/* RAM on the host side: an ordinary cached mapping, coherent with the agent */
	d->mem = devm_memremap(&pdev->dev, pci_resource_start(pdev, VTIER_GUEST_PCI_BAR),
			       d->size, MEMREMAP_WB);
	if (IS_ERR(d->mem))
		return PTR_ERR(d->mem);
	d->host = d->mem + VTIER_GUEST_HOST_OFFSET;
	d->guest = d->mem + VTIER_GUEST_GUEST_OFFSET;
	d->ring = d->mem + VTIER_GUEST_RING_OFFSET;
	mutex_init(&d->lock);
	INIT_LIST_HEAD(&d->balloon);
	d->prdev.report = vtg_report;
	INIT_DELAYED_WORK(&d->work, vtg_work);
	d->wq = alloc_ordered_workqueue(KBUILD_MODNAME, WQ_FREEZABLE);
	if (!d->wq)
		return -ENOMEM;

	/*
	 * Ours if an agent set it up, if we did before (a reboot), or if it
	 * is blank (the agent comes later): an ivshmem-plain device that
	 * holds anything else belongs to someone else.
	 */
	g = d->guest;
	vtg_check_host(d);
	if (le32_to_cpu(READ_ONCE(d->host->magic)) != VTIER_GUEST_HOST_MAGIC &&
	    le32_to_cpu(READ_ONCE(g->magic)) != VTIER_GUEST_GUEST_MAGIC &&
	    memchr_inv(d->mem, 0, VTIER_GUEST_RING_OFFSET)) {
		dev_info(&pdev->dev, "ivshmem region is neither blank nor vtier's: not ours\n");
		destroy_workqueue(d->wq);
		return -ENODEV;
	}
	/* continue from the host's index if an agent is there already */
	d->prod = d->attached ? vtg_host_cons(d) : 0;
	WRITE_ONCE(g->magic, 0);
	WRITE_ONCE(g->abi_version, cpu_to_le16(VTIER_GUEST_ABI_VERSION));
	WRITE_ONCE(g->header_size, cpu_to_le16(sizeof(*g)));
	WRITE_ONCE(g->flags, cpu_to_le32(VTIER_GUEST_F_COLD | VTIER_GUEST_F_RECLAIM |
					 (free_reporting ? VTIER_GUEST_F_FREE : 0)));
	WRITE_ONCE(g->prod, cpu_to_le32(d->prod));
	WRITE_ONCE(g->epoch, cpu_to_le32(d->epoch));
	WRITE_ONCE(g->reclaim_seq_done, 0);
	WRITE_ONCE(g->balloon_pages, 0);
	WRITE_ONCE(g->ram_pages, cpu_to_le64((u64)totalram_pages() << (PAGE_SHIFT - 12)));
	WRITE_ONCE(g->ring_full, 0);
	memset(g->reserved, 0, sizeof(g->reserved));
	/* magic last: the host sees a complete page or none */
	smp_store_release(&g->magic, cpu_to_le32(VTIER_GUEST_GUEST_MAGIC));

	pci_set_drvdata(pdev, d);
	vtg_the_dev = d;
	queue_delayed_work(d->wq, &d->work, 0);
	dev_info(&pdev->dev, "hint region of %pa bytes\n", &d->size);
	return 0;
}

static void vtg_remove(struct pci_dev *pdev)
{
	struct vtg_dev *d = pci_get_drvdata(pdev);
	struct page *page, *next;
	unsigned long kept = 0;

	cancel_delayed_work_sync(&d->work);
	/* waits for a report in progress, which waits for the host's ack */
	if (d->reporting)
		page_reporting_unregister(&d->prdev);
	destroy_workqueue(d->wq);

	mutex_lock(&d->lock);
	WRITE_ONCE(d->guest->magic, 0);
	if (vtg_acked(d, d->last_inflate)) {
		list_for_each_entry_safe(page, next, &d->balloon, lru) {
			unsigned int order = page_private(page);

			list_del(&page->lru);
			set_page_private(page, 0);
			adjust_managed_page_count(page, 1L << order);
			__free_pages(page, order);
		}
	} else {
		/* the host may still discard them: never hand them back */
		kept = d->balloon_pages;
	}
	mutex_unlock(&d->lock);
	if (kept)
		dev_warn(&pdev->dev, "keeping %lu MiB of balloon the host has not acknowledged\n",
			 kept >> (20 - PAGE_SHIFT));
	vtg_the_dev = NULL;
}

static const struct pci_device_id vtg_ids[] = {
	{ PCI_DEVICE(VTIER_GUEST_PCI_VENDOR, VTIER_GUEST_PCI_DEVICE) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vtg_ids);

static struct pci_driver vtg_driver = {
	.name = KBUILD_MODNAME,
	.id_table = vtg_ids,
	.probe = vtg_probe,
	.remove = vtg_remove,
};
module_pci_driver(vtg_driver);

MODULE_DESCRIPTION("vtier guest hints: free, cold and balloon memory for the host agent");
MODULE_LICENSE("GPL");
