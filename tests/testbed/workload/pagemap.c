// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest-physical addresses of the region's pages, from /proc/self/pagemap
 * (bit 63 present, bits 0-54 PFN; the PFN reads as 0 without CAP_SYS_ADMIN,
 * which is an error here, never a silent empty hot set).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_PFN_MASK ((1ULL << 55) - 1)

/* Fills pfn[0..n) for the n pages from @start on; 0 for a page not present. */
static int read_pfns(const void *start, size_t n, uint64_t *pfn)
{
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    off_t off = (off_t)((uintptr_t)start / WL_PAGE_SIZE * 8);
    size_t done = 0;
    bool any_present = false, any_pfn = false;

    if (fd < 0) {
        return -errno;
    }
    while (done < n) {
        ssize_t got = pread(fd, pfn + done, (n - done) * 8, off + (off_t)done * 8);

        if (got <= 0) {
            int e = got < 0 ? -errno : -EIO;

            close(fd);
            return e;
        }
        done += (size_t)got / 8;
    }
    close(fd);
    for (size_t i = 0; i < n; i++) {
        uint64_t e = pfn[i];

        if ((e & PM_PRESENT) && !(e & PM_SWAPPED)) {
            any_present = true;
            pfn[i] = e & PM_PFN_MASK;
            any_pfn |= pfn[i] != 0;
        } else {
            pfn[i] = 0;
        }
    }
    if (any_present && !any_pfn) {
        return -EPERM;   /* PFNs hidden: not CAP_SYS_ADMIN */
    }
    return 0;
}

struct extent_writer {
    FILE *out;
    uint64_t start_pfn, npfn;
    size_t extents, pages, missing;
};

static void extent_flush(struct extent_writer *x)
{
    if (!x->npfn) {
        return;
    }
    if (x->out) {
        fprintf(x->out, "gpa=0x%llx bytes=0x%llx\n",
                (unsigned long long)(x->start_pfn * WL_PAGE_SIZE),
                (unsigned long long)(x->npfn * WL_PAGE_SIZE));
    }
    x->extents++;
    x->npfn = 0;
}

static void extent_add(struct extent_writer *x, uint64_t pfn)
{
    x->pages++;
    if (x->npfn && pfn == x->start_pfn + x->npfn) {
        x->npfn++;
        return;
    }
    extent_flush(x);
    x->start_pfn = pfn;
    x->npfn = 1;
}

static bool in_ranges(const struct wl_phase *p, size_t page)
{
    for (int i = 0; i < p->nranges; i++) {
        if (page >= p->ranges[i].first && page < p->ranges[i].first + p->ranges[i].npages) {
            return true;
        }
    }
    return false;
}

static int compare_pfn(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * Guest-physical extents, in address order, of the region's pages that
 * @want selects; a selected page not present counts as not_present.
 */
static int write_extents(const struct wl_region *r, bool (*want)(size_t page, const void *ctx),
                         const void *ctx, FILE *out, char *summary, size_t summary_len)
{
    uint64_t *pfn = malloc(r->npages * sizeof(*pfn));
    size_t got = 0;
    struct extent_writer x = { .out = out };
    int rc;

    if (!pfn) {
        return -ENOMEM;
    }
    rc = read_pfns(r->base, r->npages, pfn);
    if (rc) {
        free(pfn);
        return rc;
    }
    for (size_t i = 0; i < r->npages; i++) {   /* compacted in place: pfn[got] with got <= i */
        if (!want(i, ctx)) {
            continue;
        }
        if (!pfn[i]) {
            x.missing++;
            continue;
        }
        pfn[got++] = pfn[i];
    }
    qsort(pfn, got, sizeof(*pfn), compare_pfn);
    for (size_t i = 0; i < got; i++) {
        extent_add(&x, pfn[i]);
    }
    extent_flush(&x);
    snprintf(summary, summary_len, "pages=%zu extents=%zu bytes=%zu not_present=%zu",
             x.pages, x.extents, x.pages * WL_PAGE_SIZE, x.missing);
    free(pfn);
    return 0;
}

struct hot_sel {
    const struct wl_region *r;
    const struct wl_phase *last;
    enum wl_hotset_source src;
    uint32_t min_accesses;
};

static bool is_hot(size_t page, const void *ctx)
{
    const struct hot_sel *h = ctx;

    return h->src == WL_HOTSET_RANGES ? in_ranges(h->last, page)
                                      : h->r->accesses[page] >= h->min_accesses;
}

int wl_hotset(const struct wl_region *r, const struct wl_phase *last,
              enum wl_hotset_source src, uint32_t min_accesses, FILE *out,
              char *summary, size_t summary_len)
{
    struct hot_sel h = { r, last, src, min_accesses };

    return write_extents(r, is_hot, &h, out, summary, summary_len);
}

static bool from_page(size_t page, const void *ctx)
{
    return page >= *(const size_t *)ctx;
}

int wl_extents(const struct wl_region *r, size_t from, FILE *out, char *summary,
               size_t summary_len)
{
    return write_extents(r, from_page, &from, out, summary, summary_len);
}

int wl_pagemap_dump(const struct wl_region *r, FILE *out, char *summary, size_t summary_len)
{
    uint64_t *pfn = malloc(r->npages * sizeof(*pfn));
    size_t present = 0;
    int rc;

    if (!pfn) {
        return -ENOMEM;
    }
    rc = read_pfns(r->base, r->npages, pfn);
    if (rc) {
        free(pfn);
        return rc;
    }
    for (size_t i = 0; i < r->npages; i++) {
        fprintf(out, "%zu 0x%llx 0x%llx\n", i,
                (unsigned long long)(uintptr_t)(r->base + i * WL_PAGE_SIZE),
                (unsigned long long)(pfn[i] * WL_PAGE_SIZE));
        present += pfn[i] != 0;
    }
    snprintf(summary, summary_len, "pages=%zu present=%zu", r->npages, present);
    free(pfn);
    return 0;
}

int wl_gpa_of(const void *addr, uint64_t *gpa)
{
    uint64_t pfn;
    int rc = read_pfns(addr, 1, &pfn);

    if (rc) {
        return rc;
    }
    if (!pfn) {
        return -ENOENT;   /* not present */
    }
    *gpa = pfn * WL_PAGE_SIZE + (uintptr_t)addr % WL_PAGE_SIZE;
    return 0;
}
