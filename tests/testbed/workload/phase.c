// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Access phases, after MASIM: random loads (and page rewrites for the write
 * share) over given ranges with a uniform, gaussian, zipf or sequential
 * distribution, for a duration or a number of accesses. Every access is
 * counted per page: that count is the ground truth the profilers are judged by.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload.h"

static const char *const dist_names[] = {
    [WL_DIST_UNIFORM] = "uniform",
    [WL_DIST_GAUSSIAN] = "gaussian",
    [WL_DIST_ZIPF] = "zipf",
    [WL_DIST_SEQ] = "seq",
};

const char *wl_dist_name(enum wl_dist d)
{
    return dist_names[d];
}

/* "123" bytes, "4K"/"64M"/"1G" bytes, "10p" pages, "25%" of the region. */
int wl_parse_size(const char *s, size_t region_bytes, uint64_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0) {
        return -EINVAL;
    }
    switch (toupper((unsigned char)*end)) {
    case '\0':
        break;
    case 'K':
        v *= 1024;
        end++;
        break;
    case 'M':
        v *= 1024 * 1024;
        end++;
        break;
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'P':
        v *= WL_PAGE_SIZE;
        end++;
        break;
    case '%':
        if (v > 100) {
            return -EINVAL;
        }
        v = v / 100.0 * (double)region_bytes;
        end++;
        break;
    default:
        return -EINVAL;
    }
    if (*end) {
        return -EINVAL;
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_ranges(struct wl_phase *p, const struct wl_region *r, const char *spec,
                        char *err, size_t errlen)
{
    size_t region_bytes = r->npages * WL_PAGE_SIZE;
    char *copy = strdup(spec), *save = NULL, *tok;

    p->nranges = 0;
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        uint64_t a, b;

        if (!dash || p->nranges == WL_MAX_RANGES) {
            snprintf(err, errlen, "bad range '%s' (want START-END, at most %d)", tok,
                     WL_MAX_RANGES);
            goto fail;
        }
        *dash = '\0';
        if (wl_parse_size(tok, region_bytes, &a) || wl_parse_size(dash + 1, region_bytes, &b)) {
            snprintf(err, errlen, "bad range bound in '%s-%s'", tok, dash + 1);
            goto fail;
        }
        a /= WL_PAGE_SIZE;
        b = (b + WL_PAGE_SIZE - 1) / WL_PAGE_SIZE;
        if (b > r->npages || a >= b) {
            snprintf(err, errlen, "range %s-%s empty or outside the region (%zu pages)", tok,
                     dash + 1, r->npages);
            goto fail;
        }
        p->ranges[p->nranges].first = a;
        p->ranges[p->nranges].npages = b - a;
        p->nranges++;
    }
    free(copy);
    if (p->nranges == 0) {
        snprintf(err, errlen, "empty ranges");
        return -EINVAL;
    }
    return 0;
fail:
    free(copy);
    return -EINVAL;
}

int wl_phase_parse(struct wl_phase *p, const struct wl_region *r, char **kv, int nkv,
                   char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->dist = WL_DIST_UNIFORM;
    p->nranges = 1;
    p->ranges[0].first = 0;
    p->ranges[0].npages = r->npages;
    p->sigma = 0.1;
    p->mu = 0.5;
    p->zipf_s = 1.0;
    p->seed = 1;
    for (int i = 0; i < nkv; i++) {
        char *eq = strchr(kv[i], '=');
        const char *k = kv[i], *v;
        char *end = NULL;

        if (!eq) {
            snprintf(err, errlen, "expected key=value, got '%s'", kv[i]);
            return -EINVAL;
        }
        *eq = '\0';
        v = eq + 1;
        errno = 0;
        if (!strcmp(k, "dist")) {
            int d;

            for (d = 0; d <= WL_DIST_SEQ; d++) {
                if (!strcmp(v, dist_names[d])) {
                    break;
                }
            }
            if (d > WL_DIST_SEQ) {
                snprintf(err, errlen, "unknown dist '%s' (uniform, gaussian, zipf, seq)", v);
                return -EINVAL;
            }
            p->dist = (enum wl_dist)d;
            continue;
        }
        if (!strcmp(k, "ranges")) {
            if (parse_ranges(p, r, v, err, errlen)) {
                return -EINVAL;
            }
            continue;
        }
        if (!strcmp(k, "duration_ms")) {
            p->duration_ms = strtoull(v, &end, 0);
        } else if (!strcmp(k, "accesses")) {
            p->accesses = strtoull(v, &end, 0);
        } else if (!strcmp(k, "write_pct")) {
            p->write_pct = (unsigned)strtoul(v, &end, 0);
            if (p->write_pct > 100) {
                errno = ERANGE;
            }
        } else if (!strcmp(k, "sigma")) {
            p->sigma = strtod(v, &end);
            if (p->sigma <= 0) {
                errno = ERANGE;
            }
        } else if (!strcmp(k, "mu")) {
            p->mu = strtod(v, &end);
            if (p->mu < 0 || p->mu > 1) {
                errno = ERANGE;
            }
        } else if (!strcmp(k, "zipf_s")) {
            p->zipf_s = strtod(v, &end);
            if (p->zipf_s <= 0) {
                errno = ERANGE;
            }
        } else if (!strcmp(k, "scatter")) {
            p->scatter = strtoul(v, &end, 0) != 0;
        } else if (!strcmp(k, "seed")) {
            p->seed = strtoull(v, &end, 0);
        } else {
            snprintf(err, errlen, "unknown phase key '%s'", k);
            return -EINVAL;
        }
        if (errno || !end || *end || end == v) {
            snprintf(err, errlen, "bad value for %s: '%s'", k, v);
            return -EINVAL;
        }
    }
    if (!p->duration_ms && !p->accesses) {
        p->duration_ms = 1000;
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Slot k of the concatenated ranges -> page index. */
static size_t slot_to_page(const struct wl_phase *p, uint64_t k)
{
    for (int i = 0; i < p->nranges; i++) {
        if (k < p->ranges[i].npages) {
            return p->ranges[i].first + k;
        }
        k -= p->ranges[i].npages;
    }
    return p->ranges[p->nranges - 1].first + p->ranges[p->nranges - 1].npages - 1;
}

int wl_phase_run(struct wl_region *r, const struct wl_phase *p, struct wl_phase_result *res)
{
    uint64_t total = 0, rng = wl_mix64(p->seed) | 1, perm_a = 1, perm_b = 0, seq = 0;
    uint64_t t0, deadline, sink = 0, done0;
    double *cdf = NULL;

    memset(res, 0, sizeof(*res));
    for (int i = 0; i < p->nranges; i++) {
        total += p->ranges[i].npages;
    }
    memset(r->accesses, 0, r->npages * sizeof(*r->accesses));
    if (p->scatter && total > 1) {
        /* (a*k + b) mod total with gcd(a, total) = 1 is a bijection */
        perm_a = (wl_mix64(p->seed ^ 0xa5a5) % total) | 1;
        while (gcd64(perm_a, total) != 1) {
            perm_a = (perm_a + 2) % total;
            if (perm_a == 0) {
                perm_a = 1;
            }
        }
        perm_b = wl_mix64(p->seed ^ 0x5a5a) % total;
    }
    if (p->dist == WL_DIST_ZIPF) {
        double sum = 0;

        cdf = malloc(total * sizeof(*cdf));
        if (!cdf) {
            return -ENOMEM;
        }
        for (uint64_t k = 0; k < total; k++) {
            sum += 1.0 / pow((double)(k + 1), p->zipf_s);
            cdf[k] = sum;
        }
        for (uint64_t k = 0; k < total; k++) {
            cdf[k] /= sum;
        }
    }
    done0 = __atomic_load_n(&r->progress->accesses, __ATOMIC_RELAXED);
    t0 = now_us();
    deadline = p->duration_ms ? t0 + p->duration_ms * 1000 : UINT64_MAX;
    for (;;) {
        uint64_t k;
        size_t page;
        uint64_t word;

        if (p->accesses && res->accesses >= p->accesses) {
            break;
        }
        if ((res->accesses & 1023) == 0) {
            __atomic_store_n(&r->progress->accesses, done0 + res->accesses, __ATOMIC_RELAXED);
            if (now_us() >= deadline) {
                break;
            }
        }
        switch (p->dist) {
        case WL_DIST_UNIFORM:
            k = rng_next(&rng) % total;
            break;
        case WL_DIST_GAUSSIAN: {
            double g, u1, u2;

            do {
                u1 = rng_unit(&rng);
                u2 = rng_unit(&rng);
                if (u1 < 1e-300) {
                    u1 = 1e-300;
                }
                g = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
                g = p->mu * (double)total + g * p->sigma * (double)total;
            } while (g < 0 || g >= (double)total);
            k = (uint64_t)g;
            break;
        }
        case WL_DIST_ZIPF: {
            double u = rng_unit(&rng);
            uint64_t lo = 0, hi = total - 1;

            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;

                if (cdf[mid] > u) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            k = lo;
            break;
        }
        case WL_DIST_SEQ:
        default:
            k = seq++ % total;
            break;
        }
        if (p->scatter && p->dist != WL_DIST_SEQ) {
            k = (perm_a * k + perm_b) % total;
        }
        page = slot_to_page(p, k);
        word = rng_next(&rng);
        if (p->write_pct && (word >> 32) % 100 < p->write_pct) {
            wl_page_write(r, page, r->version[page] + 1);
            res->writes++;
        } else {
            const volatile uint64_t *w = (const volatile uint64_t *)(r->base + page * WL_PAGE_SIZE);

            sink += w[word % WL_WORDS_PER_PAGE];
            res->reads++;
        }
        if (r->accesses[page] != UINT32_MAX) {
            if (r->accesses[page]++ == 0) {
                res->touched_pages++;
            }
        }
        res->accesses++;
    }
    __atomic_store_n(&r->progress->accesses, done0 + res->accesses, __ATOMIC_RELAXED);
    res->elapsed_us = now_us() - t0;
    res->sink = sink;
    free(cdf);
    return 0;
}
