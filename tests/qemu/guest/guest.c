// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier test guest: a bare-metal multiboot program that owns a region of
 * its RAM, fills it with patterns derived from (page, word, seed), and on
 * command re-reads every page and counts the pages that differ from what
 * it wrote. It is the judge of every hand-off test: pages evicted by the
 * agent and served back must read back bit for bit.
 *
 * Talks over COM1 (0x3f8), one command per line, one reply line each:
 *   fill SEED            all pages: both halves get SEED, rewritten
 *   write SEED K M       pages with index % K == M: whole page rewritten
 *   half SEED K M        pages with index % K == M: first half rewritten,
 *                        second half must keep its old content
 *   scribble SEED ROUNDS rounds of 'half' over a moving 1/7 of the pages
 *                        (a writer racing the agent's eviction)
 *   hammer P ROUNDS SEED rewrite the first half of page P ROUNDS times
 *   verify               "OK verify pages=N bad=B first_bad=I"
 *   verify-down          the same, last page first: reads in descending
 *                        order fault page by page (no agent reads ahead
 *                        of them), so a fault storm lasts as long as before
 *   check FIRST COUNT    the same over pages FIRST .. FIRST+COUNT-1 only:
 *                        "OK check pages=N bad=B first_bad=I" (reads no
 *                        other page: a test can keep one page untouched)
 *   lat K M              read one word of pages with index % K == M, timing
 *                        each read with rdtsc: "OK lat n=N p50=T p90=T p99=T
 *                        max=T" in TSC ticks (faults served by the agent
 *                        show up here as the hand-off round trip)
 *   tsc                  "OK tsc=0x..." (to calibrate the TSC from outside)
 *   content random|mixed how later writes fill a page (default random: does
 *                        not compress). mixed: by page index % 8, 0 zeros,
 *                        1 one repeated word, 7 random, the rest runs of 512
 *                        equal bytes (compress well); verify follows suit
 * On boot it prints "READY region=0xGPA pages=N page_size=4096".
 * The multiboot command line may say "pages=N" (default 16384, 64 MiB).
 */
#include <stdint.h>
#include <stddef.h>

#define COM1            0x3f8
#define PAGE_SIZE       4096u
#define WORDS_PER_PAGE  (PAGE_SIZE / 4)
#define HALF_WORDS      (WORDS_PER_PAGE / 2)
#define REGION_BASE     (16u << 20)
#define MAX_PAGES       65536u
#define MB_BOOT_MAGIC   0x2badb002u

struct multiboot_info {
	uint32_t flags;
	uint32_t mem_lower;
	uint32_t mem_upper;
	uint32_t boot_device;
	uint32_t cmdline;
};

/* What every page of the region must hold: seed of each half. */
static uint32_t seed_lo[MAX_PAGES];
static uint32_t seed_hi[MAX_PAGES];
static uint32_t n_pages;
static volatile uint32_t *region = (volatile uint32_t *)REGION_BASE;

void guest_main(uint32_t magic, struct multiboot_info *mbi);

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void serial_init(void)
{
	outb(COM1 + 1, 0x00);       /* no interrupts */
	outb(COM1 + 3, 0x80);       /* DLAB */
	outb(COM1 + 0, 0x01);       /* 115200 */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);       /* 8N1 */
	outb(COM1 + 2, 0xc7);       /* FIFO */
	outb(COM1 + 4, 0x03);
}

static void putc_serial(char c)
{
	while (!(inb(COM1 + 5) & 0x20)) {
	}
	outb(COM1, (uint8_t)c);
}

static char getc_serial(void)
{
	while (!(inb(COM1 + 5) & 0x01)) {
		__asm__ volatile("pause");
	}
	return (char)inb(COM1);
}

static void puts_serial(const char *s)
{
	while (*s) {
		putc_serial(*s++);
	}
}

static void put_dec(uint32_t v)
{
	char buf[11];
	int i = 0;

	do {
		buf[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i) {
		putc_serial(buf[--i]);
	}
}

static void put_hex(uint32_t v)
{
	static const char digits[] = "0123456789abcdef";

	puts_serial("0x");
	for (int shift = 28; shift >= 0; shift -= 4) {
		putc_serial(digits[(v >> shift) & 0xf]);
	}
}

/* A 32-bit mix (lowbias32): every word of every page differs. */
static inline uint32_t mix32(uint32_t seed, uint32_t page, uint32_t word)
{
	uint32_t x = seed ^ (page * 0x9e3779b1u) ^ (word * 0x85ebca6bu);

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* "content mixed": pages that compress like a guest's (see the header) */
static int content_mixed;

static inline uint32_t pattern(uint32_t seed, uint32_t page, uint32_t word)
{
	if (!content_mixed) {
		return mix32(seed, page, word);
	}
	switch (page % 8) {
	case 0:
		return 0;
	case 1:
		return mix32(seed, page, 0);
	case 7:
		return mix32(seed, page, word);
	default:
		return mix32(seed, page, word / 128);
	}
}

static void write_words(uint32_t page, uint32_t from, uint32_t to,
						uint32_t seed)
{
	volatile uint32_t *p = region + (size_t)page * WORDS_PER_PAGE;

	for (uint32_t w = from; w < to; w++) {
		p[w] = pattern(seed, page, w);
	}
}

static int page_ok(uint32_t page)
{
	volatile uint32_t *p = region + (size_t)page * WORDS_PER_PAGE;

	for (uint32_t w = 0; w < HALF_WORDS; w++) {
		if (p[w] != pattern(seed_lo[page], page, w)) {
			return 0;
		}
	}
	for (uint32_t w = HALF_WORDS; w < WORDS_PER_PAGE; w++) {
		if (p[w] != pattern(seed_hi[page], page, w)) {
			return 0;
		}
	}
	return 1;
}

static uint32_t lat_ticks[MAX_PAGES];

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

static void sift_down(uint32_t *a, uint32_t start, uint32_t n)
{
	uint32_t root = start;

	while (2 * root + 1 < n) {
		uint32_t child = 2 * root + 1;

		if (child + 1 < n && a[child] < a[child + 1]) {
			child++;
		}
		if (a[root] >= a[child]) {
			return;
		}
		uint32_t t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

static void heap_sort(uint32_t *a, uint32_t n)
{
	for (uint32_t i = n / 2; i-- > 0;) {
		sift_down(a, i, n);
	}
	for (uint32_t end = n; end-- > 1;) {
		uint32_t t = a[0];
		a[0] = a[end];
		a[end] = t;
		sift_down(a, 0, end);
	}
}

static void cmd_lat(uint32_t k, uint32_t m)
{
	uint32_t n = 0;
	volatile uint32_t sink = 0;

	for (uint32_t i = m; i < n_pages; i += k) {
		uint64_t t0 = rdtsc();
		sink += region[(size_t)i * WORDS_PER_PAGE + 5];
		uint64_t t1 = rdtsc();
		uint64_t d = t1 - t0;

		lat_ticks[n++] = d > 0xffffffffu ? 0xffffffffu : (uint32_t)d;
	}
	(void)sink;
	if (!n) {
		puts_serial("ERR no pages\n");
		return;
	}
	heap_sort(lat_ticks, n);
	puts_serial("OK lat n=");
	put_dec(n);
	puts_serial(" p50=");
	put_dec(lat_ticks[n / 2]);
	puts_serial(" p90=");
	put_dec(lat_ticks[(uint32_t)((uint64_t)n * 90 / 100)]);
	puts_serial(" p99=");
	put_dec(lat_ticks[(uint32_t)((uint64_t)n * 99 / 100)]);
	puts_serial(" max=");
	put_dec(lat_ticks[n - 1]);
	puts_serial("\n");
}

static void cmd_tsc(void)
{
	uint64_t t = rdtsc();

	puts_serial("OK tsc=0x");
	for (int shift = 60; shift >= 0; shift -= 4) {
		putc_serial("0123456789abcdef"[(t >> shift) & 0xf]);
	}
	puts_serial("\n");
}

static const char *skip_spaces(const char *s)
{
	while (*s == ' ') {
		s++;
	}
	return s;
}

/* Parses a decimal or 0x number; returns the rest of the string. */
static const char *parse_u32(const char *s, uint32_t *out, int *ok)
{
	uint32_t v = 0;
	int base = 10, digits = 0;

	s = skip_spaces(s);
	if (s[0] == '0' && s[1] == 'x') {
		base = 16;
		s += 2;
	}
	for (;; s++) {
		uint32_t d;

		if (*s >= '0' && *s <= '9') {
			d = (uint32_t)(*s - '0');
		} else if (base == 16 && *s >= 'a' && *s <= 'f') {
			d = (uint32_t)(*s - 'a' + 10);
		} else {
			break;
		}
		v = v * (uint32_t)base + d;
		digits++;
	}
	if (!digits) {
		*ok = 0;
	}
	*out = v;
	return s;
}

static int starts_with(const char *s, const char *word)
{
	while (*word) {
		if (*s++ != *word++) {
			return 0;
		}
	}
	return *s == ' ' || *s == '\0';
}

static void cmd_fill(uint32_t seed)
{
	for (uint32_t i = 0; i < n_pages; i++) {
		seed_lo[i] = seed_hi[i] = seed;
		write_words(i, 0, WORDS_PER_PAGE, seed);
	}
	puts_serial("OK fill pages=");
	put_dec(n_pages);
	puts_serial("\n");
}

static uint32_t rewrite(uint32_t seed, uint32_t k, uint32_t m, int half)
{
	uint32_t n = 0;

	for (uint32_t i = m; i < n_pages; i += k) {
		seed_lo[i] = seed;
		if (!half) {
			seed_hi[i] = seed;
		}
		write_words(i, 0, half ? HALF_WORDS : WORDS_PER_PAGE, seed);
		n++;
	}
	return n;
}

static void cmd_verify(const char *what, uint32_t from, uint32_t count, int down)
{
	uint32_t bad = 0, first = 0xffffffffu;

	for (uint32_t k = 0; k < count; k++) {
		uint32_t i = down ? from + count - 1 - k : from + k;

		if (!page_ok(i)) {
			if (!bad) {
				first = i;
			}
			bad++;
		}
	}
	puts_serial(what);
	put_dec(count);
	puts_serial(" bad=");
	put_dec(bad);
	puts_serial(" first_bad=");
	put_hex(first);
	puts_serial("\n");
}

static void run_command(const char *line)
{
	uint32_t seed = 0, k = 1, m = 0;
	int ok = 1;

	if (starts_with(line, "fill")) {
		parse_u32(line + 4, &seed, &ok);
		if (ok) {
			cmd_fill(seed);
			return;
		}
	} else if (starts_with(line, "write") || starts_with(line, "half")) {
		int half = line[0] == 'h';
		const char *s = line + (half ? 4 : 5);

		s = parse_u32(s, &seed, &ok);
		s = parse_u32(s, &k, &ok);
		parse_u32(s, &m, &ok);
		if (ok && k) {
			uint32_t n = rewrite(seed, k, m, half);

			puts_serial(half ? "OK half pages=" : "OK write pages=");
			put_dec(n);
			puts_serial("\n");
			return;
		}
	} else if (starts_with(line, "scribble")) {
		uint32_t rounds = 0, n = 0;
		const char *s = parse_u32(line + 8, &seed, &ok);

		parse_u32(s, &rounds, &ok);
		if (ok) {
			for (uint32_t r = 0; r < rounds; r++) {
				n += rewrite(seed + r, 7, r % 7, 1);
			}
			puts_serial("OK scribble pages=");
			put_dec(n);
			puts_serial("\n");
			return;
		}
	} else if (starts_with(line, "hammer")) {
		uint32_t page = 0, rounds = 0;
		const char *s = parse_u32(line + 6, &page, &ok);

		s = parse_u32(s, &rounds, &ok);
		parse_u32(s, &seed, &ok);
		if (ok && page < n_pages) {
			seed_lo[page] = seed;
			for (uint32_t r = 0; r < rounds; r++) {
				write_words(page, 0, HALF_WORDS, seed);
			}
			puts_serial("OK hammer rounds=");
			put_dec(rounds);
			puts_serial("\n");
			return;
		}
	} else if (starts_with(line, "verify")) {
		cmd_verify("OK verify pages=", 0, n_pages, 0);
		return;
	} else if (starts_with(line, "verify-down")) {
		cmd_verify("OK verify pages=", 0, n_pages, 1);
		return;
	} else if (starts_with(line, "check")) {
		uint32_t from = 0, count = 0;
		const char *s = parse_u32(line + 5, &from, &ok);

		parse_u32(s, &count, &ok);
		if (ok && from < n_pages && count <= n_pages - from) {
			cmd_verify("OK check pages=", from, count, 0);
			return;
		}
	} else if (starts_with(line, "lat")) {
		const char *s = parse_u32(line + 3, &k, &ok);

		parse_u32(s, &m, &ok);
		if (ok && k) {
			cmd_lat(k, m);
			return;
		}
	} else if (starts_with(line, "tsc")) {
		cmd_tsc();
		return;
	} else if (starts_with(line, "content")) {
		const char *s = line + 7;

		while (*s == ' ') {
			s++;
		}
		if (starts_with(s, "mixed") || starts_with(s, "random")) {
			content_mixed = s[0] == 'm';
			puts_serial(content_mixed ? "OK content mixed\n" : "OK content random\n");
			return;
		}
	}
	puts_serial("ERR bad command\n");
}

static uint32_t cmdline_pages(const struct multiboot_info *mbi)
{
	const char *s;

	if (!(mbi->flags & (1u << 2)) || !mbi->cmdline) {
		return 16384;
	}
	for (s = (const char *)mbi->cmdline; *s; s++) {
		if (s[0] == 'p' && s[1] == 'a' && s[2] == 'g' && s[3] == 'e' &&
			s[4] == 's' && s[5] == '=') {
			uint32_t v;
			int ok = 1;

			parse_u32(s + 6, &v, &ok);
			return ok ? v : 0;
		}
	}
	return 16384;
}

void guest_main(uint32_t magic, struct multiboot_info *mbi)
{
	char line[128];
	uint32_t len = 0, avail;

	serial_init();
	if (magic != MB_BOOT_MAGIC || !(mbi->flags & 1)) {
		puts_serial("FATAL no multiboot memory info\n");
		return;
	}
	/* mem_upper: KiB above 1 MiB. Keep the top MiB away from the region. */
	avail = (mbi->mem_upper * 1024u + (1u << 20) - (1u << 20) - REGION_BASE) /
			PAGE_SIZE;
	n_pages = cmdline_pages(mbi);
	if (!n_pages || n_pages > MAX_PAGES || n_pages > avail) {
		puts_serial("FATAL pages= must be 1..");
		put_dec(avail < MAX_PAGES ? avail : MAX_PAGES);
		puts_serial("\n");
		return;
	}
	puts_serial("READY region=");
	put_hex(REGION_BASE);
	puts_serial(" pages=");
	put_dec(n_pages);
	puts_serial(" page_size=4096\n");

	for (;;) {
		char c = getc_serial();

		if (c == '\r') {
			continue;
		}
		if (c != '\n') {
			if (len < sizeof(line) - 1) {
				line[len++] = c;
			}
			continue;
		}
		line[len] = '\0';
		len = 0;
		if (line[0]) {
			run_command(line);
		}
	}
}
