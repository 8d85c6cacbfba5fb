/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtier-workload: the ground truth and the integrity check of the VM tests.
 *
 * A region of pages whose content is a function of (seed, page index, page
 * version); access phases (uniform, gaussian, zipf, sequential; read/write mix)
 * that count what they touch; the guest-physical addresses of the hot set via
 * /proc/self/pagemap; and a verify pass that regenerates every page.
 */
#ifndef VTIER_WORKLOAD_H
#define VTIER_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WL_PAGE_SIZE 4096UL
#define WL_WORDS_PER_PAGE (WL_PAGE_SIZE / sizeof(uint64_t))
#define WL_MAX_RANGES 16

struct wl_region;
/* Mix content from @corpus_path (>= 64 KiB); 0 or -errno. */
int wl_region_set_mix(struct wl_region *r, const char *corpus_path, unsigned int zero_pct,
                      unsigned int random_pct);

/*
 * Page content: WL_CONTENT_RANDOM (every page an xorshift stream: does not
 * compress) or WL_CONTENT_MIX (per page and version: zero_pct % zero pages,
 * random_pct % random pages, the rest a window of the corpus file, e.g. text
 * and binaries from /usr: compresses like a real guest's memory).
 */
enum wl_content { WL_CONTENT_RANDOM, WL_CONTENT_MIX };

/*
 * The progress page: one locked page holding the count of every access of
 * every phase so far, stored every 1024 accesses. "ctl progress" gives its
 * guest-physical address and cookie, so that L1 reads two guests' counts at
 * the same instant from their QEMUs' memory (tests/vtierd/tbprogress.c)
 * instead of asking each guest in turn, a command's latency apart.
 */
#define WL_PROGRESS_MAGIC 0x7674696572707267ULL   /* "vtierprg" */
struct wl_progress {
    uint64_t magic;       /* WL_PROGRESS_MAGIC */
    uint64_t cookie;      /* random, per server */
    uint64_t accesses;    /* stored with __atomic_store_n, relaxed */
};

struct wl_region {
    uint8_t *base;
    size_t npages;
    uint64_t seed;
    enum wl_content content;
    unsigned int zero_pct, random_pct;
    const uint8_t *corpus;    /* WL_CONTENT_MIX */
    size_t corpus_len;
    uint32_t *version;    /* per page; 0: never written */
    uint32_t *accesses;   /* per page, counted by the last phase */
    struct wl_progress *progress;   /* a page of its own, locked */
};

struct wl_range {
    size_t first, npages;   /* in pages */
};

enum wl_dist {
    WL_DIST_UNIFORM,
    WL_DIST_GAUSSIAN,
    WL_DIST_ZIPF,
    WL_DIST_SEQ,
};

struct wl_phase {
    enum wl_dist dist;
    struct wl_range ranges[WL_MAX_RANGES];
    int nranges;
    uint64_t duration_ms;   /* stop after this long (0: no limit) */
    uint64_t accesses;      /* or after this many accesses (0: no limit) */
    unsigned write_pct;     /* 0..100 */
    double sigma;           /* gaussian: stddev as a fraction of the ranges' pages */
    double mu;              /* gaussian: mean as a fraction of the ranges' pages */
    double zipf_s;          /* zipf exponent */
    bool scatter;           /* zipf/gaussian: spread ranks over the ranges' pages */
    uint64_t seed;
};

struct wl_phase_result {
    uint64_t accesses, reads, writes, elapsed_us;
    size_t touched_pages;
    uint64_t sink;
};

struct wl_bad_page {
    size_t index;
    char what[96];
};

/* region.c */
int wl_region_init(struct wl_region *r, size_t size_bytes, uint64_t seed, const char *thp);
void wl_region_fill(struct wl_region *r, uint32_t version);
void wl_page_write(struct wl_region *r, size_t index, uint32_t version);
/* Returns the number of bad pages; the first max_report are described in bad[]. */
size_t wl_region_verify(const struct wl_region *r, struct wl_bad_page *bad, size_t max_report);
size_t wl_region_corrupt(struct wl_region *r, size_t npages, uint64_t seed);
/* How many pages from page @from on hold zeros, random bytes, corpus text. */
void wl_region_kinds(const struct wl_region *r, size_t from, size_t *zero, size_t *random,
                     size_t *corpus);
uint64_t wl_mix64(uint64_t x);

/* phase.c */
int wl_phase_parse(struct wl_phase *p, const struct wl_region *r, char **kv, int nkv,
                   char *err, size_t errlen);
int wl_phase_run(struct wl_region *r, const struct wl_phase *p, struct wl_phase_result *res);
const char *wl_dist_name(enum wl_dist d);
int wl_parse_size(const char *s, size_t region_bytes, uint64_t *out);

/* pagemap.c */
enum wl_hotset_source {
    WL_HOTSET_RANGES,     /* the pages of the last phase's ranges */
    WL_HOTSET_ACCESSED,   /* pages the last phase touched >= min_accesses times */
};
/*
 * Writes one line per extent of guest-physical memory, "gpa=0x... bytes=0x...",
 * to out (may be NULL), and a summary to summary. Returns 0 or -errno.
 */
int wl_hotset(const struct wl_region *r, const struct wl_phase *last,
              enum wl_hotset_source src, uint32_t min_accesses, FILE *out,
              char *summary, size_t summary_len);
/* All pages: "index vaddr gpa" per line. */
/* Guest-physical extents ("gpa=0x.. bytes=0x..") of the pages from @from on. */
int wl_extents(const struct wl_region *r, size_t from, FILE *out, char *summary,
               size_t summary_len);
int wl_pagemap_dump(const struct wl_region *r, FILE *out, char *summary, size_t summary_len);
/* The guest-physical address of the page at @addr (present, needs root); 0 or -errno. */
int wl_gpa_of(const void *addr, uint64_t *gpa);

#endif
