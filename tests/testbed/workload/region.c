// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The region and its content. Page i at version v holds:
 *   word 0       i
 *   word 1       v << 32 | WL_MAGIC
 *   words 2..    an xorshift64* stream seeded from (seed, i, v)
 * so a verify pass can say not only that a page is wrong but what it holds
 * instead: zeros (a lost page refaulted empty), another page, an older version.
 */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define WL_MAGIC 0x76747266u   /* "vtrf" */
#define HUGE_2M (2UL << 20)

uint64_t wl_mix64(uint64_t x)
{
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t stream_seed(uint64_t seed, size_t index, uint32_t version)
{
    uint64_t s = wl_mix64(seed ^ wl_mix64((uint64_t)index * 2 + 1) ^ ((uint64_t)version << 40));

    return s ? s : 1;   /* xorshift state must not be zero */
}

static inline uint64_t xs_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

int wl_region_init(struct wl_region *r, size_t size_bytes, uint64_t seed, const char *thp)
{
    size_t len = size_bytes & ~(WL_PAGE_SIZE - 1);
    uint8_t *raw, *base;

    memset(r, 0, sizeof(*r));
    if (len == 0) {
        return -EINVAL;
    }
    /* 2 MiB aligned, so that THP (when allowed) can back it. */
    raw = mmap(NULL, len + HUGE_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (raw == MAP_FAILED) {
        return -errno;
    }
    base = (uint8_t *)(((uintptr_t)raw + HUGE_2M - 1) & ~(HUGE_2M - 1));
    if (base > raw) {
        munmap(raw, (size_t)(base - raw));
    }
    munmap(base + len, (size_t)(raw + len + HUGE_2M - (base + len)));
    if (thp && !strcmp(thp, "never")) {
        madvise(base, len, MADV_NOHUGEPAGE);
    } else if (thp && !strcmp(thp, "always")) {
        madvise(base, len, MADV_HUGEPAGE);
    }
    /* the progress page: locked, so that its guest-physical address holds */
    r->progress = mmap(NULL, WL_PAGE_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (r->progress == MAP_FAILED) {
        r->progress = NULL;
        return -errno;
    }
    mlock(r->progress, WL_PAGE_SIZE);
    r->progress->magic = WL_PROGRESS_MAGIC;
    r->progress->cookie = wl_mix64(seed ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)base) | 1;
    r->base = base;
    r->npages = len / WL_PAGE_SIZE;
    r->seed = seed;
    r->version = calloc(r->npages, sizeof(*r->version));
    r->accesses = calloc(r->npages, sizeof(*r->accesses));
    if (!r->version || !r->accesses) {
        return -ENOMEM;
    }
    return 0;
}

int wl_region_set_mix(struct wl_region *r, const char *corpus_path, unsigned int zero_pct,
                      unsigned int random_pct)
{
    FILE *f = fopen(corpus_path, "rb");
    uint8_t *buf;
    long len;

    if (!f) {
        return -errno;
    }
    if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 65536 || fseek(f, 0, SEEK_SET) ||
        zero_pct + random_pct > 100) {
        fclose(f);
        return -EINVAL;
    }
    buf = malloc((size_t)len);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        fclose(f);
        return -EIO;
    }
    fclose(f);
    r->content = WL_CONTENT_MIX;
    r->corpus = buf;
    r->corpus_len = (size_t)len;
    r->zero_pct = zero_pct;
    r->random_pct = random_pct;
    return 0;
}

enum page_kind { PAGE_RANDOM, PAGE_ZERO, PAGE_CORPUS };

static enum page_kind page_kind(const struct wl_region *r, size_t index, uint32_t version,
                                uint64_t *pick)
{
    uint64_t h = wl_mix64(stream_seed(r->seed, index, version) ^ 0x6d6978ULL);
    unsigned int roll = (unsigned int)(h % 100);

    *pick = h >> 8;
    if (r->content != WL_CONTENT_MIX) {
        return PAGE_RANDOM;
    }
    if (roll < r->zero_pct) {
        return PAGE_ZERO;
    }
    return roll < r->zero_pct + r->random_pct ? PAGE_RANDOM : PAGE_CORPUS;
}

void wl_region_kinds(const struct wl_region *r, size_t from, size_t *zero, size_t *random,
                     size_t *corpus)
{
    *zero = *random = *corpus = 0;
    for (size_t i = from; i < r->npages; i++) {
        uint64_t pick;

        switch (page_kind(r, i, r->version[i], &pick)) {
        case PAGE_ZERO:
            (*zero)++;
            break;
        case PAGE_RANDOM:
            (*random)++;
            break;
        case PAGE_CORPUS:
            (*corpus)++;
            break;
        }
    }
}

/* The content of page @index at @version (a zero page has no header: all zeros). */
static void page_content(const struct wl_region *r, size_t index, uint32_t version, uint64_t *w)
{
    uint64_t s = stream_seed(r->seed, index, version), pick;

    switch (page_kind(r, index, version, &pick)) {
    case PAGE_ZERO:
        memset(w, 0, WL_PAGE_SIZE);
        return;
    case PAGE_CORPUS:
        memcpy(w, r->corpus + (pick % (r->corpus_len - WL_PAGE_SIZE)) / 64 * 64, WL_PAGE_SIZE);
        break;
    case PAGE_RANDOM:
        for (size_t i = 2; i < WL_WORDS_PER_PAGE; i++) {
            w[i] = xs_next(&s);
        }
        break;
    }
    w[0] = index;
    w[1] = (uint64_t)version << 32 | WL_MAGIC;
}

void wl_page_write(struct wl_region *r, size_t index, uint32_t version)
{
    uint64_t *w = (uint64_t *)(r->base + index * WL_PAGE_SIZE);

    if (r->content == WL_CONTENT_MIX) {
        uint64_t tmp[WL_WORDS_PER_PAGE];

        /* one store per word: a page half old, half new is never what a reader sees twice */
        page_content(r, index, version, tmp);
        memcpy(w, tmp, WL_PAGE_SIZE);
    } else {
        page_content(r, index, version, w);
    }
    r->version[index] = version;
}

void wl_region_fill(struct wl_region *r, uint32_t version)
{
    for (size_t i = 0; i < r->npages; i++) {
        wl_page_write(r, i, version);
    }
}

static void describe(const struct wl_region *r, size_t index, const uint64_t *w,
                     size_t first_bad_word, struct wl_bad_page *bad)
{
    bool zero = true;

    for (size_t i = 0; i < WL_WORDS_PER_PAGE && zero; i++) {
        zero = w[i] == 0;
    }
    bad->index = index;
    if (zero) {
        snprintf(bad->what, sizeof(bad->what), "all zeros (expected version %u)",
                 r->version[index]);
    } else if ((uint32_t)w[1] == WL_MAGIC && (w[0] != index || (w[1] >> 32) != r->version[index])) {
        snprintf(bad->what, sizeof(bad->what), "holds page %llu version %llu (expected version %u)",
                 (unsigned long long)w[0], (unsigned long long)(w[1] >> 32),
                 r->version[index]);
    } else {
        snprintf(bad->what, sizeof(bad->what), "content differs from word %zu (version %u)",
                 first_bad_word, r->version[index]);
    }
}

size_t wl_region_verify(const struct wl_region *r, struct wl_bad_page *bad, size_t max_report)
{
    size_t nbad = 0;

    for (size_t p = 0; p < r->npages; p++) {
        const uint64_t *w = (const uint64_t *)(r->base + p * WL_PAGE_SIZE);
        uint32_t v = r->version[p];
        uint64_t s = stream_seed(r->seed, p, v);
        size_t first_bad = WL_WORDS_PER_PAGE;

        if (r->content == WL_CONTENT_MIX) {
            uint64_t want[WL_WORDS_PER_PAGE];

            page_content(r, p, v, want);
            for (size_t i = 0; i < WL_WORDS_PER_PAGE; i++) {
                if (w[i] != want[i]) {
                    first_bad = i;
                    break;
                }
            }
        } else if (w[0] != p || w[1] != ((uint64_t)v << 32 | WL_MAGIC)) {
            first_bad = w[0] != p ? 0 : 1;
        } else {
            for (size_t i = 2; i < WL_WORDS_PER_PAGE; i++) {
                if (w[i] != xs_next(&s)) {
                    first_bad = i;
                    break;
                }
            }
        }
        if (first_bad == WL_WORDS_PER_PAGE) {
            continue;
        }
        if (nbad < max_report) {
            describe(r, p, w, first_bad, &bad[nbad]);
        }
        nbad++;
    }
    return nbad;
}

/*
 * Fault injection for the checker's own tests: flip one byte in npages
 * distinct pages without recording a new version.
 */
size_t wl_region_corrupt(struct wl_region *r, size_t npages, uint64_t seed)
{
    size_t start, stride, n = r->npages;

    if (npages > n) {
        npages = n;
    }
    if (npages == 0) {
        return 0;
    }
    /* A stride coprime with n visits distinct pages. */
    start = wl_mix64(seed) % n;
    stride = (wl_mix64(seed + 1) % n) | 1;
    while (n > 1 && stride > 1) {
        size_t a = stride, b = n;

        while (b) {
            size_t t = a % b;

            a = b;
            b = t;
        }
        if (a == 1) {
            break;
        }
        stride += 2;
        if (stride >= n) {
            stride = 1;
        }
    }
    for (size_t i = 0; i < npages; i++) {
        size_t p = (start + i * stride) % n;
        uint8_t *b = r->base + p * WL_PAGE_SIZE + 100 + (i % 3000);

        *b ^= 0x5a;
    }
    return npages;
}
