// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The AF_XDP transport (remote_transport.h) through libxdp's xsk API.
 *
 * Open: our XDP program (memd_steer.bpf.o, its .rodata set to the port and
 * address) is attached with libxdp's xdp_program API in native mode, else skb
 * mode, through libxdp's dispatcher (a program already on the interface keeps
 * running); then one XSK per rx queue of the interface (ETHTOOL_GCHANNELS;
 * veth: 1), each with a UMEM of its own (2 x ring frames of 4 KiB: the first
 * half circulates through the fill and rx rings, the second half is the tx
 * frames, back through the completion ring), libxdp told not to load its own
 * program (XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD), and inserted into the
 * program's XSKMAP at its queue. Bound with XDP_USE_SG where the kernel has
 * it, so a datagram larger than one frame's 3840 bytes (4096 less the
 * kernel's XDP headroom) arrives in several frames (XDP_PKT_CONTD).
 *
 * Receive copies the payload into the caller's buffer and gives the frames
 * back to the fill ring at once (the fill ring stays full). Send builds the
 * headers in a tx frame (one frame per datagram: at most 4096 - 42 bytes of
 * payload), kicks the kernel (copy mode sends only from sendto), and drains
 * the completion ring. Close detaches the program and frees the UMEMs.
 */
#include "remote_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/ethtool.h>
#include <net/if_arp.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "bpf/memd_steer.h"
#include "thread_ns.h"

/* Linux 6.6 (multi-buffer AF_XDP); the build machine's uapi headers may predate it */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#define FRAME_SIZE 4096u
#define MAX_QUEUES 64u
/* the largest payload one tx frame holds */
#define TX_MAX_PAYLOAD (FRAME_SIZE - VT_RF_HDR_LEN)
/* copy mode sends at most 32 descriptors per sendto (TX_BATCH_SIZE) */
#define KICK_TRIES 64

struct xq {
	unsigned id;
	void *area;
	size_t area_len;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	int fd;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	uint64_t *free_tx;	/* stack of free tx frames */
	unsigned nfree;
	unsigned pending;	/* tx descriptors submitted since the last kick */
};

#define NEIGH_SLOTS 16
#define NEIGH_RECHECK_NS 1000000000ull	/* a cached MAC is asked of the kernel again after 1 s */

struct vt_rt_xsk {
	struct vt_rt rt;
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint32_t addr;
	uint16_t port;
	uint8_t if_mac[6];
	struct xdp_program *prog;
	enum xdp_attach_mode attach_mode;
	int map_fd;
	int epfd;
	int lock_fd;		/* the interface's steering lock (take_interface) */
	unsigned ring;
	unsigned nq;
	unsigned rr;
	struct xq *q;
	bool need_wakeup, busy_poll, zerocopy;
	uint64_t rx, tx, rx_refused[VT_RF_NR], rx_too_big, tx_busy, tx_refused, tx_unresolved;
	int nfd;		/* a UDP socket: SIOCGARP, and the kernel's resolution of a peer */
	struct neigh {
		uint32_t addr;	/* host order; 0: unused */
		uint8_t mac[6];
		uint64_t checked_ns;
	} neigh[NEIGH_SLOTS];
};

static int fail(char *reason, size_t len, int err, const char *ifname, const char *what)
{
	snprintf(reason, len, "AF_XDP on %s: %s: %s", ifname ? ifname : "(no interface)", what,
		 strerror(err < 0 ? -err : err));
	return err < 0 ? err : -err;
}

/* The interface holding @addr (host order) */
static int ifname_of_addr(uint32_t addr, char name[IF_NAMESIZE])
{
	struct ifaddrs *ifa, *i;
	int r = -ENODEV;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) == addr) {
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			r = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return r;
}

/* rx queues of @ifname (ETHTOOL_GCHANNELS), 1 when the driver does not say */
static unsigned rx_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { 0 };
	unsigned n = 1;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return 1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(s, SIOCETHTOOL, &ifr) == 0) {
		n = ch.rx_count > ch.combined_count ? ch.rx_count : ch.combined_count;
		if (n == 0)
			n = 1;
	}
	close(s);
	return n > MAX_QUEUES ? MAX_QUEUES : n;
}

static int if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
		r = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
	return r;
}

static int set_rodata(struct bpf_object *obj, const struct memd_steer_cfg *cfg)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t l = strlen(n);

		if (l >= 7 && !strcmp(n + l - 7, ".rodata")) {
			if (bpf_map__value_size(m) != sizeof(*cfg))
				return -EINVAL;
			return bpf_map__set_initial_value(m, cfg, sizeof(*cfg));
		}
	}
	return -ENOENT;
}

/*
 * One steering program per interface, a server's while it holds the
 * interface's lock: a file in the lock directory named by the network
 * namespace and the interface index, flock()ed. The kernel drops a lock
 * when its holder dies, and kill -9 detaches no XDP program: a memd_steer
 * found on an interface whose lock we got is a dead server's and is taken
 * off; a held lock is a live server's, and this open fails (-EBUSY). Any
 * other program is left alone (the attach below then fails on it, or
 * shares the interface through libxdp's dispatcher).
 */
static int take_interface(struct vt_rt_xsk *x, const struct vt_rt_config *cfg, char *reason,
			  size_t len)
{
	const char *dir = cfg->lock_dir ? cfg->lock_dir : VT_RT_LOCK_DIR_DEFAULT;
	char path[PATH_MAX], what[PATH_MAX + 64];
	struct xdp_multiprog *mp;
	struct stat ns;

	if (stat("/proc/self/ns/net", &ns) < 0)
		return fail(reason, len, -errno, x->ifname, "stat /proc/self/ns/net");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(what, sizeof(what), "lock directory %s", dir);
		return fail(reason, len, -errno, x->ifname, what);
	}
	snprintf(path, sizeof(path), "%s/steer-%lu-%d.lock", dir, (unsigned long)ns.st_ino,
		 x->ifindex);
	x->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (x->lock_fd < 0) {
		snprintf(what, sizeof(what), "open %s", path);
		return fail(reason, len, -errno, x->ifname, what);
	}
	if (flock(x->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(what, sizeof(what), "another server steers this interface (%s is locked)",
			 path);
		return fail(reason, len, -EBUSY, x->ifname, what);
	}
	mp = xdp_multiprog__get_from_ifindex(x->ifindex);
	if (mp && !libxdp_get_error(mp)) {
		struct xdp_program *p = xdp_multiprog__is_legacy(mp) ?
					xdp_multiprog__main_prog(mp) : NULL;

		if (p && !strcmp(xdp_program__name(p), "memd_steer"))
			xdp_multiprog__detach(mp);	/* a dead server's */
		xdp_multiprog__close(mp);
	}
	return 0;
}

static int attach_prog(struct vt_rt_xsk *x, const struct vt_rt_config *cfg, char *reason, size_t len)
{
	struct memd_steer_cfg sc = { .addr_be = htonl(cfg->addr), .port_be = htons(cfg->port) };
	char what[PATH_MAX + 64];
	int r;

	if (!cfg->xdp_prog)
		return fail(reason, len, -EINVAL, x->ifname, "no XDP program path (xdp_prog)");
	x->prog = xdp_program__open_file(cfg->xdp_prog, NULL, NULL);
	r = libxdp_get_error(x->prog);
	if (r) {
		x->prog = NULL;
		snprintf(what, sizeof(what), "open %s", cfg->xdp_prog);
		return fail(reason, len, r, x->ifname, what);
	}
	r = set_rodata(xdp_program__bpf_obj(x->prog), &sc);
	if (r) {
		snprintf(what, sizeof(what), "%s has no .rodata of %zu bytes (memd_steer_cfg)",
			 cfg->xdp_prog, sizeof(sc));
		return fail(reason, len, r, x->ifname, what);
	}
	r = take_interface(x, cfg, reason, len);
	if (r)
		return r;
	x->attach_mode = XDP_MODE_NATIVE;
	r = cfg->skb_mode ? -EOPNOTSUPP : xdp_program__attach(x->prog, x->ifindex, XDP_MODE_NATIVE, 0);
	if (r) {
		x->attach_mode = XDP_MODE_SKB;
		r = xdp_program__attach(x->prog, x->ifindex, XDP_MODE_SKB, 0);
	}
	if (r) {
		x->attach_mode = XDP_MODE_UNSPEC;
		return fail(reason, len, r, x->ifname, "attach the XDP program (native and skb mode)");
	}
	x->map_fd = bpf_object__find_map_fd_by_name(xdp_program__bpf_obj(x->prog), "xsks_map");
	if (x->map_fd < 0)
		return fail(reason, len, x->map_fd, x->ifname, "the program's xsks_map");
	return 0;
}

static void sockopt_busy_poll(struct vt_rt_xsk *x, struct xq *q, const struct vt_rt_config *cfg, int *err)
{
	int one = 1, us = cfg->busy_poll_us ? (int)cfg->busy_poll_us : 20;
	int budget = cfg->busy_poll_budget ? (int)cfg->busy_poll_budget : 64;

	(void)x;
	if (setsockopt(q->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) < 0 ||
	    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) < 0 ||
	    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)) < 0)
		*err = -errno;
}

static int open_queue(struct vt_rt_xsk *x, struct xq *q, const struct vt_rt_config *cfg,
		      char *reason, size_t len)
{
	struct xsk_umem_config uc = {
		.fill_size = x->ring, .comp_size = x->ring,
		.frame_size = FRAME_SIZE, .frame_headroom = 0,
	};
	struct xsk_socket_config sc = {
		.rx_size = x->ring, .tx_size = x->ring,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	char what[96];
	uint32_t idx;
	unsigned i;
	int r;

	q->area_len = (size_t)2 * x->ring * FRAME_SIZE;
	q->area = mmap(NULL, q->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		return fail(reason, len, -errno, x->ifname, "UMEM mmap");
	}
	r = xsk_umem__create(&q->umem, q->area, q->area_len, &q->fill, &q->comp, &uc);
	if (r) {
		q->umem = NULL;
		return fail(reason, len, r, x->ifname, "xsk_umem__create");
	}
	sc.bind_flags = XDP_USE_SG;
	if (x->need_wakeup)
		sc.bind_flags |= XDP_USE_NEED_WAKEUP;
	if (cfg->bind == VT_RT_BIND_COPY)
		sc.bind_flags |= XDP_COPY;
	else if (cfg->bind == VT_RT_BIND_ZEROCOPY)
		sc.bind_flags |= XDP_ZEROCOPY;
	r = xsk_socket__create(&q->xsk, x->ifname, q->id, q->umem, &q->rx, &q->tx, &sc);
	if (r == -EOPNOTSUPP || r == -EINVAL) {
		/* a kernel or zero-copy driver without multi-buffer AF_XDP: frames of one buffer */
		sc.bind_flags &= (uint16_t)~XDP_USE_SG;
		r = xsk_socket__create(&q->xsk, x->ifname, q->id, q->umem, &q->rx, &q->tx, &sc);
	}
	if (r) {
		q->xsk = NULL;
		snprintf(what, sizeof(what), "xsk_socket__create on queue %u", q->id);
		return fail(reason, len, r, x->ifname, what);
	}
	q->fd = xsk_socket__fd(q->xsk);
	r = xsk_socket__update_xskmap(q->xsk, x->map_fd);
	if (r) {
		snprintf(what, sizeof(what), "insert queue %u's XSK into xsks_map", q->id);
		return fail(reason, len, r, x->ifname, what);
	}
	if (x->busy_poll) {
		r = 0;
		sockopt_busy_poll(x, q, cfg, &r);
		if (r)
			return fail(reason, len, r, x->ifname, "busy-poll socket options");
	}
	/* the fill ring full of the first half's frames */
	if (xsk_ring_prod__reserve(&q->fill, x->ring, &idx) != x->ring)
		return fail(reason, len, -ENOSPC, x->ifname, "fill ring");
	for (i = 0; i < x->ring; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)i * FRAME_SIZE;
	xsk_ring_prod__submit(&q->fill, x->ring);
	q->free_tx = calloc(x->ring, sizeof(*q->free_tx));
	if (!q->free_tx)
		return fail(reason, len, -ENOMEM, x->ifname, "tx frames");
	for (i = 0; i < x->ring; i++)
		q->free_tx[i] = (uint64_t)(x->ring + i) * FRAME_SIZE;
	q->nfree = x->ring;
	ev.data.u32 = q->id;
	if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, q->fd, &ev) < 0)
		return fail(reason, len, -errno, x->ifname, "epoll_ctl");
	return 0;
}

static void xsk_close(struct vt_rt *rt)
{
	struct vt_rt_xsk *x = (struct vt_rt_xsk *)rt;
	unsigned i;

	for (i = 0; x->q && i < x->nq; i++) {
		struct xq *q = &x->q[i];

		if (q->xsk)
			xsk_socket__delete(q->xsk);
		if (q->umem)
			xsk_umem__delete(q->umem);
		if (q->area)
			munmap(q->area, q->area_len);
		free(q->free_tx);
	}
	if (x->prog) {
		if (x->attach_mode != XDP_MODE_UNSPEC)
			xdp_program__detach(x->prog, x->ifindex, x->attach_mode, 0);
		xdp_program__close(x->prog);
	}
	if (x->epfd >= 0)
		close(x->epfd);
	if (x->lock_fd >= 0)
		close(x->lock_fd);	/* after the detach: the next server finds it clean */
	if (x->nfd >= 0)
		close(x->nfd);
	free(x->q);
	free(x);
}

static int xsk_open(const struct vt_rt_config *cfg, struct vt_rt **out, char *reason, size_t len)
{
	struct vt_rt_xsk *x;
	unsigned i;
	int r;

	x = calloc(1, sizeof(*x));
	if (!x)
		return fail(reason, len, -ENOMEM, cfg->ifname, "allocate");
	x->rt.ops = &vt_rt_xsk_ops;
	x->epfd = -1;
	x->lock_fd = -1;
	x->nfd = -1;
	x->map_fd = -1;
	x->addr = cfg->addr;
	x->port = cfg->port;
	x->need_wakeup = !cfg->no_need_wakeup;
	x->busy_poll = cfg->busy_poll;
	x->ring = cfg->ring_size ? cfg->ring_size : 2048;
	if (x->ring < 64 || x->ring > 16384 || (x->ring & (x->ring - 1))) {
		snprintf(reason, len, "AF_XDP: ring_size %u: accepted a power of two 64..16384", x->ring);
		free(x);
		return -EINVAL;
	}
	if (cfg->ifname) {
		snprintf(x->ifname, sizeof(x->ifname), "%s", cfg->ifname);
	} else if (!cfg->addr || ifname_of_addr(cfg->addr, x->ifname) < 0) {
		r = fail(reason, len, -ENODEV, NULL,
			 cfg->addr ? "no interface holds the bind address" :
				     "bound to any address: name the interface");
		free(x);
		return r;
	}
	x->ifindex = (int)if_nametoindex(x->ifname);
	if (!x->ifindex) {
		r = fail(reason, len, -errno, x->ifname, "if_nametoindex");
		free(x);
		return r;
	}
	r = if_mac(x->ifname, x->if_mac);
	if (r) {
		fail(reason, len, r, x->ifname, "SIOCGIFHWADDR");
		goto err;
	}
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (x->epfd < 0) {
		r = fail(reason, len, -errno, x->ifname, "epoll_create1");
		goto err;
	}
	r = attach_prog(x, cfg, reason, len);
	if (r)
		goto err;
	x->nq = rx_queues(x->ifname);
	x->q = calloc(x->nq, sizeof(*x->q));
	if (!x->q) {
		r = fail(reason, len, -ENOMEM, x->ifname, "queues");
		goto err;
	}
	for (i = 0; i < x->nq; i++) {
		x->q[i].id = i;
		x->q[i].fd = -1;
		r = open_queue(x, &x->q[i], cfg, reason, len);
		if (r)
			goto err;
	}
	{
		struct xdp_options o = { 0 };
		socklen_t ol = sizeof(o);

		if (getsockopt(x->q[0].fd, SOL_XDP, XDP_OPTIONS, &o, &ol) == 0)
			x->zerocopy = o.flags & XDP_OPTIONS_ZEROCOPY;
	}
	*out = &x->rt;
	return 0;
err:
	xsk_close(&x->rt);
	return r;
}

static void kick_tx(struct vt_rt_xsk *x, struct xq *q)
{
	int tries;

	if (x->need_wakeup && !xsk_ring_prod__needs_wakeup(&q->tx))
		return;
	for (tries = 0; tries < KICK_TRIES; tries++) {
		if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		if (errno != EAGAIN && errno != EBUSY && errno != EINTR)
			break;
	}
}

static void drain_comp(struct vt_rt_xsk *x, struct xq *q)
{
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&q->comp, x->ring, &idx);
	for (i = 0; i < n; i++)
		q->free_tx[q->nfree++] = xsk_umem__extract_addr(*xsk_ring_cons__comp_addr(&q->comp, idx + i));
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

/* Take whole packets from @q's rx ring into @d[0..n); returns how many */
static unsigned rx_queue(struct vt_rt_xsk *x, struct xq *q, struct vt_rt_dgram *d, unsigned n)
{
	uint32_t idx, fidx, avail, i = 0, j, k, got = 0;

	if (x->busy_poll || (x->need_wakeup && xsk_ring_prod__needs_wakeup(&q->fill)))
		recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	avail = xsk_ring_cons__peek(&q->rx, x->ring, &idx);
	while (i < avail && got < n) {
		const struct xdp_desc *first = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		size_t total = 0, off, plen, copied, skip;
		enum vt_rf_verdict v;
		bool whole = false;

		for (j = i; j < avail;) {
			const struct xdp_desc *dd = xsk_ring_cons__rx_desc(&q->rx, idx + j);

			total += dd->len;
			j++;
			if (!(dd->options & XDP_PKT_CONTD)) {
				whole = true;
				break;
			}
		}
		if (!whole)
			break;	/* the rest of this packet is not in the ring yet */
		if (j - i > 1 && first->len < VT_RF_HDR_LEN) {
			v = VT_RF_TRUNCATED;
		} else {
			v = vt_rf_parse(xsk_umem__get_data(q->area, first->addr),
					j - i > 1 ? total : first->len, x->addr, x->port,
					&d[got].peer, &off, &plen);
		}
		if (v != VT_RF_OK) {
			x->rx_refused[v]++;
		} else if (plen > d[got].cap) {
			x->rx_too_big++;
		} else {
			/* the payload: bytes [off, off + plen) of the frames' concatenation */
			copied = 0;
			skip = off;
			for (k = i; k < j && copied < plen; k++) {
				const struct xdp_desc *dd = xsk_ring_cons__rx_desc(&q->rx, idx + k);
				const uint8_t *p = xsk_umem__get_data(q->area, dd->addr);
				size_t l = dd->len, c;

				if (skip >= l) {
					skip -= l;
					continue;
				}
				c = l - skip < plen - copied ? l - skip : plen - copied;
				memcpy(d[got].buf + copied, p + skip, c);
				copied += c;
				skip = 0;
			}
			d[got].len = plen;
			d[got].queue = q->id;
			got++;
		}
		i = j;
	}
	if (i) {
		/* the frames straight back to the fill ring: it has room for every rx frame */
		if (xsk_ring_prod__reserve(&q->fill, i, &fidx) == i) {
			for (k = 0; k < i; k++)
				*xsk_ring_prod__fill_addr(&q->fill, fidx + k) =
					xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&q->rx, idx + k)->addr);
			xsk_ring_prod__submit(&q->fill, i);
		}
		xsk_ring_cons__release(&q->rx, i);
	}
	/* what was peeked and not taken (@d full, a packet's tail not in yet) stays for next time */
	q->rx.cached_cons -= avail - i;
	return got;
}

static int xsk_recv(struct vt_rt *rt, struct vt_rt_dgram *d, unsigned n)
{
	struct vt_rt_xsk *x = (struct vt_rt_xsk *)rt;
	unsigned got = 0, i;

	for (i = 0; i < x->nq && got < n; i++) {
		struct xq *q = &x->q[(x->rr + i) % x->nq];

		drain_comp(x, q);
		got += rx_queue(x, q, d + got, n - got);
	}
	x->rr++;
	x->rx += got;
	return (int)got;
}

static bool mac_zero(const uint8_t m[6])
{
	return !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]);
}

/*
 * The MAC of on-link peer @addr, for a datagram we start (a client's: a
 * reply takes its request's). From the kernel's neighbour table
 * (SIOCGARP), cached and asked again after NEIGH_RECHECK_NS; when the
 * kernel does not know it yet, a datagram of its own to the discard port
 * (which our program passes to the kernel) makes it resolve the address,
 * and this one is lost: -EAGAIN (the caller's retry finds it).
 */
static int neigh_mac(struct vt_rt_xsk *x, uint32_t addr, uint8_t mac[6])
{
	struct sockaddr_in *pa, to = { .sin_family = AF_INET, .sin_port = htons(9),
				       .sin_addr.s_addr = htonl(addr) };
	struct neigh *slot = &x->neigh[addr % NEIGH_SLOTS];
	uint64_t now = vt_now_ns();
	struct arpreq r;

	if (slot->addr == addr && now - slot->checked_ns < NEIGH_RECHECK_NS) {
		memcpy(mac, slot->mac, 6);
		return 0;
	}
	if (x->nfd < 0)
		x->nfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (x->nfd < 0)
		return -errno;
	memset(&r, 0, sizeof(r));
	pa = (struct sockaddr_in *)&r.arp_pa;
	pa->sin_family = AF_INET;
	pa->sin_addr.s_addr = htonl(addr);
	snprintf(r.arp_dev, sizeof(r.arp_dev), "%s", x->ifname);
	if (ioctl(x->nfd, SIOCGARP, &r) == 0 && (r.arp_flags & ATF_COM)) {
		slot->addr = addr;
		memcpy(slot->mac, r.arp_ha.sa_data, 6);
		slot->checked_ns = now;
		memcpy(mac, slot->mac, 6);
		return 0;
	}
	sendto(x->nfd, "", 0, 0, (struct sockaddr *)&to, sizeof(to));
	return -EAGAIN;
}

static int xsk_send(struct vt_rt *rt, const struct vt_rt_dgram *d, unsigned n)
{
	struct vt_rt_xsk *x = (struct vt_rt_xsk *)rt;
	unsigned i, taken = 0;

	for (i = 0; i < n; i++) {
		const struct vt_rt_dgram *s = &d[i];
		struct xq *q = &x->q[s->queue % x->nq];
		struct vt_rf_peer p = s->peer;
		struct xdp_desc *tx;
		uint8_t *frame;
		uint32_t idx;
		uint64_t addr;

		if (s->len > TX_MAX_PAYLOAD || !p.peer_port || !p.peer_addr) {
			x->tx_refused++;
			taken++;
			continue;
		}
		if (mac_zero(p.peer_mac) && neigh_mac(x, p.peer_addr, p.peer_mac) < 0) {
			x->tx_unresolved++;	/* lost: its sender's retry finds the MAC */
			taken++;
			continue;
		}
		if (!p.local_addr)
			p.local_addr = x->addr;
		if (!p.local_addr) {
			x->tx_refused++;
			taken++;
			continue;
		}
		if (mac_zero(p.local_mac))
			memcpy(p.local_mac, x->if_mac, 6);
		p.local_port = x->port;
		if (!q->nfree)
			drain_comp(x, q);
		if (!q->nfree && q->pending) {
			kick_tx(x, q);
			q->pending = 0;
			drain_comp(x, q);
		}
		if (!q->nfree || xsk_ring_prod__reserve(&q->tx, 1, &idx) != 1) {
			x->tx_busy += n - i;
			break;
		}
		addr = q->free_tx[--q->nfree];
		frame = xsk_umem__get_data(q->area, addr);
		memcpy(frame + VT_RF_HDR_LEN, s->buf, s->len);
		vt_rf_build(frame, &p, frame + VT_RF_HDR_LEN, s->len);
		tx = xsk_ring_prod__tx_desc(&q->tx, idx);
		tx->addr = addr;
		tx->len = (uint32_t)(VT_RF_HDR_LEN + s->len);
		tx->options = 0;
		xsk_ring_prod__submit(&q->tx, 1);
		q->pending++;
		x->tx++;
		taken++;
	}
	for (i = 0; i < x->nq; i++) {
		struct xq *q = &x->q[i];

		if (q->pending) {
			kick_tx(x, q);
			q->pending = 0;
		}
		drain_comp(x, q);
	}
	return (int)taken;
}

static int xsk_fd(const struct vt_rt *rt)
{
	return ((const struct vt_rt_xsk *)rt)->epfd;
}

static void xsk_stats(const struct vt_rt *rt, struct vt_rt_stats *st)
{
	const struct vt_rt_xsk *x = (const struct vt_rt_xsk *)rt;
	unsigned i;

	st->rx = x->rx;
	st->tx = x->tx;
	for (i = 0; i < VT_RF_NR; i++) {
		st->rx_refused[i] = x->rx_refused[i];
		st->rx_dropped += x->rx_refused[i];
	}
	st->rx_too_big = x->rx_too_big;
	for (i = 0; i < x->nq; i++) {
		struct xdp_statistics xs;
		socklen_t l = sizeof(xs);

		if (getsockopt(x->q[i].fd, SOL_XDP, XDP_STATISTICS, &xs, &l) == 0)
			st->rx_kernel_dropped += xs.rx_dropped + xs.rx_ring_full +
						 xs.rx_fill_ring_empty_descs;
	}
	st->rx_dropped += x->rx_too_big + st->rx_kernel_dropped;
	st->tx_busy = x->tx_busy;
	st->tx_refused = x->tx_refused;
	st->tx_unresolved = x->tx_unresolved;
	st->mode = x->zerocopy ? "afxdp-zerocopy" : "afxdp-copy";
	st->queues = x->nq;
	st->need_wakeup = x->need_wakeup;
	st->busy_poll = x->busy_poll;
	st->xdp_native = x->attach_mode == XDP_MODE_NATIVE;
}

const struct vt_rt_ops vt_rt_xsk_ops = {
	.name = "afxdp",
	.open = xsk_open,
	.recv_batch = xsk_recv,
	.send_batch = xsk_send,
	.fd = xsk_fd,
	.stats = xsk_stats,
	.close = xsk_close,
};
