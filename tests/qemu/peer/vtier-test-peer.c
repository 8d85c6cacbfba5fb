// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-test-peer: the reference agent of the QEMU hand-off, used by the
 * integration tests. It accepts QEMU's hand-off (host-agent/iface), evicts
 * guest pages on command into a page store that survives its own death
 * (files in tmpfs, mapped shared: kill -9 loses nothing), and serves every
 * fault from that store, checking each page against the crc32 it had when
 * it left. A restarted peer reopens the store, reconciles it with the memfd
 * and carries on where the dead one stopped.
 *
 * Control: a unix socket, one command per line, one reply line each:
 *   status               OK key=value ... (see cmd_status)
 *   evict GPA N STRIDE [HOLD_US]
 *                        evict N pages from guest-physical GPA, every STRIDE,
 *                        holding each page write-protected HOLD_US between
 *                        the copy and the punch (to make writes race)
 *   slow US              wait US microseconds before serving each fault
 *   corrupt N            flip a byte of the next N pages served (negative
 *                        control: the guest must then count bad pages)
 *   stats                send a STATS report to QEMU now (per-tier figures)
 *   tco DRAM STORE       from now on add a TCO block to STATS (the VM's
 *                        memory cost with these prices, USD per GiB, of
 *                        its dram and its store) and send one now; replies
 *                        with the figures sent
 *   migration STATE STARTED COMPLETED FAILED EXTRA PEAK BOUND HELD SEEDED
 *             REFUSED CHUNKS
 *                        from now on end STATS with this migration block
 *                        (STATE none, outgoing or placing; the rest the
 *                        block's counters and bytes in its order) and send
 *                        one now; ERR if the hand-off library refuses it
 *   migration off        stop adding it
 *
 * Usage: vtier-test-peer --socket PATH --control PATH --store DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <glib-unix.h>
#include <glib.h>

#include "handoff_pager.h"
#include "handoff_server.h"

#define STORE_MAGIC 0x53505456u	/* "VTPS" */
#define STATE_EMPTY 0
#define STATE_STORED 1
#define STATS_INTERVAL_MS 200
/* Fault latencies kept for the percentiles in STATS (the latest ones). */
#define LAT_SAMPLES 4096

/* Mapped from <store>/meta; outlives the process. */
struct store_meta {
	uint32_t magic;
	uint32_t page_size;
	uint64_t size;
	uint64_t nr_stored;
	uint64_t faults_served;
	uint64_t promotions;
	uint64_t demotions;
	uint8_t pad[16];
	/* then uint8_t state[npages], padded to 8, then uint32_t crc[npages] */
};

struct backend {
	char id[VTIER_HANDOFF_ID_LEN];
	char *dir;
	uint64_t size;
	uint64_t page_size;
	uint64_t npages;
	uint8_t *pages;			/* <dir>/pages, the evicted copies */
	struct store_meta *meta;	/* <dir>/meta */
	uint8_t *state;
	uint32_t *crc;
	size_t meta_len;

	struct vt_handoff_conn *conn;
	struct vt_pager pager;
	bool pager_open;
	guint uffd_watch;
	uint64_t generation;
	uint32_t hello_flags;
	uint32_t n_ranges;
	struct vtier_handoff_range ranges[VTIER_HANDOFF_RANGES_MAX];
	uint64_t reconciled;		/* stale store entries dropped at hello */
	int ranges_updates;		/* RANGES messages received */

	uint32_t profile_in_size, profile_in_crc;
	bool profile_in_ok;
	uint32_t profile_out_size, profile_out_crc;
	int migration[VTIER_MIGRATION_SEND_END + 1];	/* by event */
	int policies;
	uint32_t policy_mode;

	/*
	 * Nanoseconds from reading a fault on a stored page to the kernel
	 * taking the page back, for the last LAT_SAMPLES such faults. Not in
	 * the store: a restarted peer starts counting again.
	 */
	uint64_t lat_ns[LAT_SAMPLES];
	unsigned int lat_n, lat_next;
};

static struct {
	const char *socket_path;
	const char *control_path;
	const char *store_root;
	struct vt_handoff_server *srv;
	GHashTable *backends;		/* id -> struct backend */
	GMainLoop *loop;
	unsigned int slow_us;
	unsigned int corrupt;
	int control_fd;
	/* `tco`: prices of its two tiers, nano-USD per GiB; reports sent with them */
	uint64_t tco_price_nusd[2];
	uint64_t tco_windows;
	/* `migration`: the block every report ends with, if have_migration */
	bool have_migration;
	struct vtier_handoff_migration_stats migration;
} peer;

static void die(const char *fmt, ...) G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vtier-test-peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(3);
}

/* A reason for QEMU, cut to what the protocol carries. */
static void set_msg(char *msg, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void set_msg(char *msg, const char *fmt, ...)
{
	g_autofree char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	s = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_strlcpy(msg, s, VTIER_HANDOFF_MESSAGE_LEN);
}

static uint32_t page_crc(const uint8_t *p, uint64_t len)
{
	return crc32(0, p, len);
}

static void *map_file(const char *path, size_t len, bool create, int *err)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	void *p;

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (create && ftruncate(fd, len)) {
		*err = -errno;
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	return p;
}

/*
 * Open (or with @create, make a fresh) page store for @b. Returns 0 or a
 * negative errno with @msg set.
 */
static int store_open(struct backend *b, bool create, char *msg)
{
	g_autofree char *pages = g_build_filename(b->dir, "pages", NULL);
	g_autofree char *meta = g_build_filename(b->dir, "meta", NULL);
	size_t state_len = (b->npages + 7) & ~7ull;
	int err = 0;

	b->meta_len = sizeof(struct store_meta) + state_len + b->npages * sizeof(uint32_t);
	if (create && g_mkdir_with_parents(b->dir, 0700))
		return -errno;
	b->pages = map_file(pages, b->size, create, &err);
	if (b->pages)
		b->meta = map_file(meta, b->meta_len, create, &err);
	if (!b->pages || !b->meta) {
		set_msg(msg, "no page store for %s in %s: %s", b->id,
			 b->dir, g_strerror(-err));
		return err;
	}
	if (create) {
		b->meta->magic = STORE_MAGIC;
		b->meta->page_size = b->page_size;
		b->meta->size = b->size;
	} else if (b->meta->magic != STORE_MAGIC || b->meta->size != b->size ||
		   b->meta->page_size != b->page_size) {
		set_msg(msg, "page store of %s does not match", b->id);
		return -EINVAL;
	}
	b->state = (uint8_t *)(b->meta + 1);
	b->crc = (uint32_t *)(b->state + state_len);
	return 0;
}

/*
 * A page the store holds but the memfd has again is a leftover of a peer
 * killed between storing and punching, or between serving and forgetting:
 * the memfd is the truth.
 */
static void store_reconcile(struct backend *b)
{
	for (uint64_t i = 0; i < b->npages; i++) {
		if (b->state[i] != STATE_STORED)
			continue;
		if (vt_pager_present(&b->pager, i * b->page_size) == 1) {
			b->state[i] = STATE_EMPTY;
			b->meta->nr_stored--;
			b->reconciled++;
		}
	}
}

static void backend_free(gpointer data)
{
	struct backend *b = data;

	if (b->pages)
		munmap(b->pages, b->size);
	if (b->meta)
		munmap(b->meta, b->meta_len);
	g_free(b->dir);
	g_free(b);
}

static void backend_detach(struct backend *b)
{
	if (b->uffd_watch)
		g_source_remove(b->uffd_watch);
	b->uffd_watch = 0;
	if (b->pager_open)
		vt_pager_close(&b->pager);
	b->pager_open = false;
	b->conn = NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median and 99th percentile (nearest rank) of the kept latencies; 0 if none. */
static void fault_latency(const struct backend *b, uint64_t *p50, uint64_t *p99)
{
	g_autofree uint64_t *v = NULL;

	*p50 = *p99 = 0;
	if (!b->lat_n)
		return;
	v = g_memdup2(b->lat_ns, b->lat_n * sizeof(v[0]));
	qsort(v, b->lat_n, sizeof(v[0]), cmp_u64);
	*p50 = v[(b->lat_n * 50 + 99) / 100 - 1];
	*p99 = v[(b->lat_n * 99 + 99) / 100 - 1];
}

/* Per hour of @bytes at @nusd_per_gib nano-USD per GiB, amortised over 5 years as vtierd does. */
static uint64_t tco_cost(uint64_t bytes, uint64_t nusd_per_gib)
{
	return (uint64_t)((unsigned __int128)bytes * nusd_per_gib / (1ull << 30) / 43800);
}

/*
 * The TCO block (VTIER_STATS_F_TCO) once `tco` set prices: the peer's two
 * tiers, the dram as a NUMA tier, the store (pages as they are, served on a
 * fault) as the compressed kind with ratio 1. No profile: no hot set.
 */
static bool tco_fill(struct backend *b, struct vtier_handoff_tco *tco,
		     struct vtier_handoff_tco_tier *t)
{
	uint64_t stored = b->meta->nr_stored * b->page_size, p99;

	if (!peer.tco_windows)
		return false;
	t[0] = (struct vtier_handoff_tco_tier){ .name = "dram", .kind = VTIER_TCO_TIER_NUMA,
						.ratio_milli = 1000, .bytes = b->size - stored,
						.latency_ns = 100 };
	t[1] = (struct vtier_handoff_tco_tier){ .name = "store",
						.kind = VTIER_TCO_TIER_COMPRESSED,
						.ratio_milli = 1000, .bytes = stored };
	fault_latency(b, &t[1].latency_ns, &p99);
	*tco = (struct vtier_handoff_tco){ .windows = peer.tco_windows, .bytes = b->size,
					   .n_tiers = 2, .placement = "peer" };
	for (unsigned int i = 0; i < 2; i++) {
		t[i].bytes_hour_avg = t[i].bytes;	/* no hour samples */
		t[i].price_nusd_per_gib = peer.tco_price_nusd[i];
		t[i].cost_nusd_per_hour = t[i].cost_hour_avg_nusd_per_hour =
			tco_cost(t[i].bytes, peer.tco_price_nusd[i]);
		tco->cost_nusd_per_hour += t[i].cost_nusd_per_hour;
	}
	tco->cost_hour_avg_nusd_per_hour = tco->cost_nusd_per_hour;
	tco->all_dram_nusd_per_hour = tco_cost(b->size, peer.tco_price_nusd[0]);
	tco->saving_nusd_per_month = ((int64_t)tco->all_dram_nusd_per_hour -
				      (int64_t)tco->cost_nusd_per_hour) * 730;
	if (tco->all_dram_nusd_per_hour)
		tco->saving_pct_milli = (int32_t)(((int64_t)tco->all_dram_nusd_per_hour -
						   (int64_t)tco->cost_nusd_per_hour) * 100000 /
						  (int64_t)tco->all_dram_nusd_per_hour);
	return true;
}

static int send_stats(struct backend *b)
{
	struct vtier_handoff_tco tco;
	struct vtier_handoff_tco_tier tco_tiers[2];
	uint64_t stored = b->meta->nr_stored * b->page_size;
	struct vtier_handoff_stats s = {
		.agent_time_ns = g_get_monotonic_time() * 1000,
		.faults_served = b->meta->faults_served,
		.promotions = b->meta->promotions,
		.demotions = b->meta->demotions,
		.compressed_bytes = 0,	/* this store keeps pages as they are */
		.n_tiers = 2,
	};
	/* The store keeps pages uncompressed: host bytes = guest bytes. */
	struct vtier_handoff_tier_v2 tiers[2] = {
		{ .name = "dram", .resident_bytes = b->size - stored,
		  .stored_bytes = b->size - stored, .compressed_bytes = b->size - stored },
		{ .name = "store", .resident_bytes = stored, .stored_bytes = stored,
		  .compressed_bytes = stored, .pages_evicted = b->meta->demotions,
		  .pages_faulted_back = b->meta->promotions },
	};

	fault_latency(b, &tiers[1].fault_latency_p50_ns, &tiers[1].fault_latency_p99_ns);
	if (!b->conn)
		return -ENOTCONN;
	return vt_handoff_conn_send_stats_tco(b->conn, &s, tiers,
					      tco_fill(b, &tco, tco_tiers) ? &tco : NULL, tco_tiers,
					      peer.have_migration ? &peer.migration : NULL);
}

static void serve_faults(struct backend *b)
{
	g_autofree uint8_t *tmp = g_malloc(b->page_size);
	struct vt_pager_fault f;
	int ret;

	while ((ret = vt_pager_next_fault(&b->pager, &f)) == 0) {
		uint64_t page = f.offset / b->page_size;
		uint64_t start = now_ns();
		const uint8_t *src = NULL;

		if (peer.slow_us)
			g_usleep(peer.slow_us);
		if (f.wp) {
			ret = vt_pager_unprotect(&b->pager, f.offset, b->page_size);
			if (ret)
				die("unprotect page %" PRIu64 ": %s", page, g_strerror(-ret));
			b->meta->faults_served++;
			continue;
		}
		if (b->state[page] == STATE_STORED) {
			src = b->pages + f.offset;
			if (page_crc(src, b->page_size) != b->crc[page])
				die("page store corrupt at page %" PRIu64 " of %s", page, b->id);
			if (peer.corrupt) {
				memcpy(tmp, src, b->page_size);
				tmp[100] ^= 0xff;
				src = tmp;
				peer.corrupt--;
			}
		}
		ret = vt_pager_fill(&b->pager, f.offset, src);
		if (ret < 0) {
			if (ret == -ESRCH || ret == -ENOENT) {
				g_message("%s: QEMU went away (%s)", b->id, g_strerror(-ret));
				return;
			}
			die("serving page %" PRIu64 " of %s: %s", page, b->id, g_strerror(-ret));
		}
		/* The kernel has the page (or had it already): forget our copy. */
		if (src) {
			b->state[page] = STATE_EMPTY;
			b->meta->nr_stored--;
			b->meta->promotions++;
			b->lat_ns[b->lat_next] = now_ns() - start;
			b->lat_next = (b->lat_next + 1) % LAT_SAMPLES;
			if (b->lat_n < LAT_SAMPLES)
				b->lat_n++;
		}
		b->meta->faults_served++;
	}
	if (ret != -EAGAIN)
		die("reading faults of %s: %s", b->id, g_strerror(-ret));
}

static gboolean uffd_ready(gint fd, GIOCondition cond, gpointer data)
{
	(void)fd;
	(void)cond;
	serve_faults(data);
	return G_SOURCE_CONTINUE;
}

static gboolean stats_tick(gpointer data)
{
	GHashTableIter it;
	gpointer b;

	(void)data;
	g_hash_table_iter_init(&it, peer.backends);
	while (g_hash_table_iter_next(&it, NULL, &b))
		send_stats(b);
	return G_SOURCE_CONTINUE;
}

static int on_hello(struct vt_handoff_conn *conn, const struct vt_handoff_hello *hello,
		    int memfd, int uffd, char *msg, void *opaque)
{
	const struct vtier_handoff_hello *h = hello->fixed;
	bool reconnect = h->flags & VTIER_HELLO_F_RECONNECT;
	struct backend *b;
	int ret;

	(void)opaque;
	b = g_hash_table_lookup(peer.backends, h->backend_id);
	if (b && b->conn) {
		/* QEMU reconnected before we saw the old connection die. */
		vt_handoff_conn_close(b->conn, "superseded by a new HELLO");
	}
	if (b && (b->size != h->size_bytes || !reconnect)) {
		g_hash_table_remove(peer.backends, h->backend_id);
		b = NULL;
	}
	if (!b) {
		b = g_new0(struct backend, 1);
		g_strlcpy(b->id, h->backend_id, sizeof(b->id));
		b->dir = g_strdup_printf("%s/%s-%s", peer.store_root,
					 h->vm_name[0] ? h->vm_name : "vm", h->backend_id);
		b->size = h->size_bytes;
		b->page_size = h->page_size;
		b->npages = h->size_bytes / h->page_size;
		/*
		 * A reconnecting QEMU may have evicted pages in our store: without
		 * it we could only serve zeros, so refuse instead.
		 */
		ret = store_open(b, !reconnect, msg);
		if (ret) {
			backend_free(b);
			close(memfd);
			close(uffd);
			return ret;
		}
		g_hash_table_insert(peer.backends, b->id, b);
	}
	ret = vt_pager_open(&b->pager, h, memfd, uffd);
	if (ret) {
		set_msg(msg, "cannot serve %s: %s", b->id,
			 g_strerror(-ret));
		return ret;
	}
	b->pager_open = true;
	b->conn = conn;
	b->generation = h->generation;
	b->hello_flags = h->flags;
	b->n_ranges = h->n_ranges;
	memcpy(b->ranges, hello->ranges, h->n_ranges * sizeof(b->ranges[0]));
	if (hello->profile) {
		char err[VT_HANDOFF_ERR_LEN];

		b->profile_in_size = h->profile_size;
		b->profile_in_crc = crc32(0, hello->profile, h->profile_size);
		b->profile_in_ok = !vt_handoff_check_profile(hello->profile, h->profile_size,
							     h->size_bytes, err, sizeof(err));
		if (!b->profile_in_ok)
			g_warning("%s: migrated profile rejected: %s", b->id, err);
	}
	store_reconcile(b);
	vt_handoff_conn_set_user(conn, b);
	b->uffd_watch = g_unix_fd_add(b->pager.uffd, G_IO_IN, uffd_ready, b);
	g_message("%s: hand-off generation %" PRIu64 " accepted (flags 0x%x, %u ranges, "
		  "%" PRIu64 " pages in store, %" PRIu64 " stale entries dropped)",
		  b->id, h->generation, h->flags, h->n_ranges, b->meta->nr_stored, b->reconciled);
	return 0;
}

static int on_policy(struct vt_handoff_conn *conn, const struct vt_handoff_policy *checked,
		     char *msg, void *opaque)
{
	const struct vtier_handoff_policy *policy = checked->fixed;
	struct backend *b = vt_handoff_conn_get_user(conn);

	(void)opaque;
	if ((policy->flags & VTIER_POLICY_F_DRAM_LIMIT) && policy->dram_limit_bytes > b->size) {
		set_msg(msg, "dram limit %" PRIu64 " exceeds %s's %" PRIu64
			 " bytes", policy->dram_limit_bytes, b->id, b->size);
		return -ERANGE;
	}
	b->policies++;
	b->policy_mode = policy->mode;
	return 0;
}

/* The profile a vtier agent would migrate: heat per 2 MiB, cold = evicted. */
static void send_profile(struct backend *b)
{
	const unsigned int shift = 21;
	uint64_t chunk = 1ull << shift, per_chunk = chunk / b->page_size;
	uint32_t n_chunks = (b->size + chunk - 1) / chunk;
	size_t len = sizeof(struct vtier_profile_v1) + n_chunks;
	g_autofree uint8_t *buf = g_malloc0(len);
	struct vtier_profile_v1 *p = (void *)buf;
	int ret;

	*p = (struct vtier_profile_v1) {
		.magic = VTIER_PROFILE_MAGIC, .version = VTIER_PROFILE_VERSION,
		.chunk_shift = shift, .size_bytes = b->size, .n_chunks = n_chunks,
	};
	for (uint32_t c = 0; c < n_chunks; c++) {
		uint64_t stored = 0;

		for (uint64_t i = c * per_chunk; i < (c + 1) * per_chunk && i < b->npages; i++)
			stored += b->state[i] == STATE_STORED;
		buf[sizeof(*p) + c] = 255 - (uint8_t)(stored * 255 / per_chunk);
	}
	ret = vt_handoff_conn_send_profile(b->conn, buf, len);
	if (ret) {
		g_warning("%s: cannot send profile: %s", b->id, g_strerror(-ret));
		return;
	}
	b->profile_out_size = len;
	b->profile_out_crc = crc32(0, buf, len);
}

static void on_migration(struct vt_handoff_conn *conn, enum vtier_migration_event event,
			 void *opaque)
{
	struct backend *b = vt_handoff_conn_get_user(conn);

	(void)opaque;
	b->migration[event]++;
	if (event == VTIER_MIGRATION_START)
		send_profile(b);
	g_message("%s: migration event %d", b->id, event);
}

static void on_ranges(struct vt_handoff_conn *conn, const struct vtier_handoff_range *ranges,
		      uint32_t n_ranges, void *opaque)
{
	struct backend *b = vt_handoff_conn_get_user(conn);

	(void)opaque;
	b->n_ranges = n_ranges;
	memcpy(b->ranges, ranges, n_ranges * sizeof(b->ranges[0]));
	b->ranges_updates++;
	g_message("%s: now mapped in %u guest-physical ranges", b->id, n_ranges);
}

static void on_closed(struct vt_handoff_conn *conn, const char *why, void *opaque)
{
	struct backend *b = vt_handoff_conn_get_user(conn);

	(void)opaque;
	g_message("%s: connection closed: %s", b->id, why);
	if (b->conn == conn)
		backend_detach(b);
}

static const struct vt_handoff_ops peer_ops = {
	.hello = on_hello,
	.policy = on_policy,
	.migration = on_migration,
	.ranges = on_ranges,
	.closed = on_closed,
};

static struct backend *first_backend(void)
{
	GHashTableIter it;
	gpointer b = NULL;

	g_hash_table_iter_init(&it, peer.backends);
	if (!g_hash_table_iter_next(&it, NULL, &b))
		return NULL;
	return b;
}

static bool gpa_to_offset(const struct backend *b, uint64_t gpa, uint64_t *offset)
{
	for (uint32_t i = 0; i < b->n_ranges; i++) {
		const struct vtier_handoff_range *r = &b->ranges[i];

		if (gpa >= r->gpa && gpa - r->gpa < r->size) {
			*offset = r->offset + (gpa - r->gpa);
			return true;
		}
	}
	return false;
}

static void cmd_evict(struct backend *b, uint64_t gpa, uint64_t n, uint64_t stride,
		      uint64_t hold_us, GString *out)
{
	uint64_t evicted = 0, busy = 0, absent = 0, unmapped = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t off, page;
		int ret;

		/* Faults read while evicting wait in the pager: serve them often. */
		if (i % 64 == 63)
			serve_faults(b);
		if (!gpa_to_offset(b, gpa + i * stride * b->page_size, &off)) {
			unmapped++;
			continue;
		}
		page = off / b->page_size;
		ret = vt_pager_evict_begin(&b->pager, off, b->pages + off);
		if (ret == -ENOENT) {
			absent++;
			continue;
		}
		if (ret == -EBUSY) {
			busy++;
			continue;
		}
		if (ret)
			die("evicting page %" PRIu64 " of %s: %s", page, b->id, g_strerror(-ret));
		if (hold_us)
			g_usleep(hold_us);
		/* The copy is in the store before the page leaves the memfd. */
		b->crc[page] = page_crc(b->pages + off, b->page_size);
		__atomic_store_n(&b->state[page], STATE_STORED, __ATOMIC_RELEASE);
		b->meta->nr_stored++;
		ret = vt_pager_evict_commit(&b->pager, off);
		if (ret) {
			b->state[page] = STATE_EMPTY;
			b->meta->nr_stored--;
			if (ret != -EBUSY)
				die("punching page %" PRIu64 " of %s: %s", page, b->id, g_strerror(-ret));
			busy++;
			continue;
		}
		b->meta->demotions++;
		evicted++;
	}
	serve_faults(b);
	g_string_append_printf(out, "OK evicted=%" PRIu64 " busy=%" PRIu64 " absent=%" PRIu64
			       " unmapped=%" PRIu64, evicted, busy, absent, unmapped);
}

static void cmd_status(struct backend *b, GString *out)
{
	struct vt_pager *p = &b->pager;
	uint64_t p50, p99;

	fault_latency(b, &p50, &p99);
	g_string_append_printf(out,
		"OK id=%s connected=%d generation=%" PRIu64 " hello_flags=0x%x ranges=%u"
		" stored=%" PRIu64 " faults=%" PRIu64 " promotions=%" PRIu64 " demotions=%" PRIu64
		" evicted=%" PRIu64 " aborted=%" PRIu64 " filled=%" PRIu64 " zero=%" PRIu64
		" wp=%" PRIu64 " twice=%" PRIu64 " reconciled=%" PRIu64
		" profile_in=%u:%08x:%d profile_out=%u:%08x migration=%d:%d:%d"
		" policies=%d policy_mode=%u ranges_updates=%d first_gpa=0x%" PRIx64
		" lat_p50=%" PRIu64 " lat_p99=%" PRIu64,
		b->id, b->conn != NULL, b->generation, b->hello_flags, b->n_ranges,
		b->meta->nr_stored, b->meta->faults_served, b->meta->promotions,
		b->meta->demotions, p->nr_evicted, p->nr_evict_aborted, p->nr_filled,
		p->nr_zero_filled, p->nr_unprotected, p->nr_already_present, b->reconciled,
		b->profile_in_size, b->profile_in_crc, b->profile_in_ok,
		b->profile_out_size, b->profile_out_crc,
		b->migration[VTIER_MIGRATION_START], b->migration[VTIER_MIGRATION_COMPLETED],
		b->migration[VTIER_MIGRATION_FAILED], b->policies, b->policy_mode,
		b->ranges_updates, b->n_ranges ? b->ranges[0].gpa : 0, p50, p99);
}

static void cmd_tco(struct backend *b, const char *args, GString *out)
{
	struct vtier_handoff_tco tco;
	struct vtier_handoff_tco_tier t[2];
	double price[2];
	char *end;

	for (unsigned int i = 0; i < 2; i++) {
		price[i] = g_ascii_strtod(args, &end);
		if (end == args || !(price[i] >= 0 && price[i] <= 1e6)) {
			g_string_append(out, "ERR tco needs two prices in USD per GiB, 0..1e6");
			return;
		}
		args = end;
	}
	for (unsigned int i = 0; i < 2; i++)
		peer.tco_price_nusd[i] = (uint64_t)(price[i] * 1e9 + 0.5);
	peer.tco_windows++;
	tco_fill(b, &tco, t);
	send_stats(b);
	g_string_append_printf(out, "OK windows=%" PRIu64 " cost_nusd=%" PRIu64
			       " all_dram_nusd=%" PRIu64 " saving_month_nusd=%" PRId64
			       " saving_pct_milli=%d dram_bytes=%" PRIu64 " dram_nusd=%" PRIu64
			       " store_bytes=%" PRIu64 " store_nusd=%" PRIu64 " store_latency_ns=%"
			       PRIu64, tco.windows, tco.cost_nusd_per_hour, tco.all_dram_nusd_per_hour,
			       tco.saving_nusd_per_month, tco.saving_pct_milli, t[0].bytes,
			       t[0].cost_nusd_per_hour, t[1].bytes, t[1].cost_nusd_per_hour,
			       t[1].latency_ns);
}

static void cmd_migration(struct backend *b, const char *args, GString *out)
{
	static const char *const states[] = {
		[VTIER_MIGRATION_STATE_NONE] = "none",
		[VTIER_MIGRATION_STATE_OUTGOING] = "outgoing",
		[VTIER_MIGRATION_STATE_PLACING] = "placing",
	};
	struct vtier_handoff_migration_stats m = { 0 };
	uint64_t *v[] = { &m.started, &m.completed, &m.failed, &m.extra_bytes,
			  &m.extra_peak_bytes, &m.extra_bound_bytes, &m.promotions_held,
			  &m.profiles_seeded, &m.profiles_refused, &m.plan_chunks };
	g_auto(GStrv) w = g_strsplit(args, " ", -1);
	int ret;

	if (!strcmp(args, "off")) {
		peer.have_migration = false;
		g_string_append(out, "OK");
		return;
	}
	if (g_strv_length(w) != 1 + G_N_ELEMENTS(v)) {
		g_string_append(out, "ERR migration needs a state (none, outgoing, placing) and "
				     "10 numbers, or off");
		return;
	}
	for (m.state = 0; m.state < G_N_ELEMENTS(states); m.state++)
		if (!strcmp(w[0], states[m.state]))
			break;
	if (m.state == G_N_ELEMENTS(states)) {
		g_string_append_printf(out, "ERR unknown migration state '%s'", w[0]);
		return;
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(v); i++) {
		if (!g_ascii_string_to_unsigned(w[1 + i], 10, 0, UINT64_MAX, v[i], NULL)) {
			g_string_append_printf(out, "ERR migration figure %u '%s' is not a number",
					       i + 1, w[1 + i]);
			return;
		}
	}
	peer.migration = m;
	peer.have_migration = true;
	ret = send_stats(b);
	if (ret) {
		/* The library checks the report as QEMU would: never send a bad one. */
		peer.have_migration = false;
		g_string_append_printf(out, "ERR STATS with this migration block not sent: %s",
				       g_strerror(-ret));
		return;
	}
	g_string_append_printf(out, "OK state=%u", m.state);
}

static void run_command(const char *line, GString *out)
{
	struct backend *b = first_backend();
	uint64_t a1, a2, a3, a4 = 0;

	if (sscanf(line, "slow %" SCNu64, &a1) == 1) {
		peer.slow_us = a1;
		g_string_append(out, "OK");
	} else if (sscanf(line, "corrupt %" SCNu64, &a1) == 1) {
		peer.corrupt = a1;
		g_string_append(out, "OK");
	} else if (!b) {
		g_string_append(out, "ERR no backend handed over yet");
	} else if (!strcmp(line, "status")) {
		cmd_status(b, out);
	} else if (!b->conn) {
		g_string_append(out, "ERR QEMU is not connected");
	} else if (!strcmp(line, "stats")) {
		send_stats(b);
		g_string_append(out, "OK");
	} else if (!strncmp(line, "tco ", 4)) {
		cmd_tco(b, line + 4, out);
	} else if (!strncmp(line, "migration ", 10)) {
		cmd_migration(b, line + 10, out);
	} else if (sscanf(line, "evict %" SCNx64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
			  &a1, &a2, &a3, &a4) >= 3 && a3) {
		cmd_evict(b, a1, a2, a3, a4, out);
	} else {
		g_string_append(out, "ERR bad command");
	}
}

static gboolean control_client(gint fd, GIOCondition cond, gpointer data)
{
	GString *buf = data;
	char chunk[512];
	ssize_t n;
	char *nl;

	(void)cond;
	n = read(fd, chunk, sizeof(chunk));
	if (n <= 0) {
		g_string_free(buf, TRUE);
		close(fd);
		return G_SOURCE_REMOVE;
	}
	g_string_append_len(buf, chunk, n);
	while ((nl = strchr(buf->str, '\n'))) {
		g_autoptr(GString) out = g_string_new(NULL);
		g_autofree char *line = g_strndup(buf->str, nl - buf->str);

		g_string_erase(buf, 0, nl - buf->str + 1);
		run_command(g_strstrip(line), out);
		g_string_append_c(out, '\n');
		if (write(fd, out->str, out->len) != (ssize_t)out->len) {
			g_string_free(buf, TRUE);
			close(fd);
			return G_SOURCE_REMOVE;
		}
	}
	return G_SOURCE_CONTINUE;
}

static gboolean control_accept(gint fd, GIOCondition cond, gpointer data)
{
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

	(void)cond;
	(void)data;
	if (c >= 0)
		g_unix_fd_add(c, G_IO_IN | G_IO_HUP, control_client, g_string_new(NULL));
	return G_SOURCE_CONTINUE;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(addr.sun_path))
		die("control path too long: %s", path);
	strcpy(addr.sun_path, path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 8))
		die("cannot listen on %s: %s", path, g_strerror(errno));
	return fd;
}

static gboolean on_signal(gpointer data)
{
	(void)data;
	g_main_loop_quit(peer.loop);
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "control", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 'd' },
		{ "slow-us", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			peer.socket_path = optarg;
			break;
		case 'c':
			peer.control_path = optarg;
			break;
		case 'd':
			peer.store_root = optarg;
			break;
		case 'w':
			peer.slow_us = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!peer.socket_path || !peer.control_path || !peer.store_root) {
		fprintf(stderr, "usage: %s --socket PATH --control PATH --store DIR\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	peer.backends = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, backend_free);
	peer.loop = g_main_loop_new(NULL, FALSE);
	ret = vt_handoff_server_new(peer.socket_path, NULL, &peer_ops, NULL, &peer.srv);
	if (ret)
		die("cannot listen on %s: %s", peer.socket_path, g_strerror(-ret));
	peer.control_fd = listen_unix(peer.control_path);
	g_unix_fd_add(peer.control_fd, G_IO_IN, control_accept, NULL);
	g_timeout_add(STATS_INTERVAL_MS, stats_tick, NULL);
	g_unix_signal_add(SIGTERM, on_signal, NULL);
	g_unix_signal_add(SIGINT, on_signal, NULL);
	g_message("listening on %s (control %s, store %s)", peer.socket_path, peer.control_path,
		  peer.store_root);

	g_main_loop_run(peer.loop);

	vt_handoff_server_free(peer.srv);
	close(peer.control_fd);
	unlink(peer.control_path);
	g_hash_table_destroy(peer.backends);
	g_main_loop_unref(peer.loop);
	return 0;
}
