// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The UDP transport: a kernel UDP socket bound to (addr, port), non-blocking,
 * datagrams in batches of up to VT_RT_UDP_BATCH through recvmmsg/sendmmsg.
 * IP_PKTINFO gives each datagram's local address, and a reply leaves from the
 * address its request came to (a server bound to 0.0.0.0 on a multi-homed host).
 */
#include "remote_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VT_RT_UDP_BATCH 64u

struct vt_rt_udp {
	struct vt_rt rt;
	int fd;
	uint64_t rx, tx, rx_too_big, tx_busy, tx_refused;
};

#define CMSG_SPACE_PKTINFO CMSG_SPACE(sizeof(struct in_pktinfo))

static int udp_open(const struct vt_rt_config *cfg, struct vt_rt **out, char *reason, size_t reason_len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct vt_rt_udp *u;
	char a[INET_ADDRSTRLEN];
	int one = 1, r;

	sa.sin_addr.s_addr = htonl(cfg->addr);
	sa.sin_port = htons(cfg->port);
	inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a));
	u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(reason, reason_len, "UDP on %s:%u: out of memory", a, cfg->port);
		return -ENOMEM;
	}
	u->rt.ops = &vt_rt_udp_ops;
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		r = -errno;
		snprintf(reason, reason_len, "UDP on %s:%u: socket: %s", a, cfg->port, strerror(-r));
		free(u);
		return r;
	}
	if (setsockopt(u->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    bind(u->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		snprintf(reason, reason_len, "UDP on %s:%u: bind: %s", a, cfg->port, strerror(-r));
		close(u->fd);
		free(u);
		return r;
	}
	*out = &u->rt;
	return 0;
}

static int udp_recv(struct vt_rt *rt, struct vt_rt_dgram *d, unsigned n)
{
	struct vt_rt_udp *u = (struct vt_rt_udp *)rt;
	struct mmsghdr mm[VT_RT_UDP_BATCH];
	struct sockaddr_in from[VT_RT_UDP_BATCH];
	struct iovec iov[VT_RT_UDP_BATCH];
	union {
		char buf[CMSG_SPACE_PKTINFO];
		struct cmsghdr align;
	} ctl[VT_RT_UDP_BATCH];
	unsigned i, got = 0;
	int r;

	if (n > VT_RT_UDP_BATCH)
		n = VT_RT_UDP_BATCH;
	if (n == 0)
		return 0;
	memset(mm, 0, sizeof(mm[0]) * n);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = d[i].buf;
		iov[i].iov_len = d[i].cap;
		mm[i].msg_hdr.msg_name = &from[i];
		mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_control = ctl[i].buf;
		mm[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
	}
	r = recvmmsg(u->fd, mm, n, MSG_DONTWAIT, NULL);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	for (i = 0; i < (unsigned)r; i++) {
		struct vt_rt_dgram *o = &d[got];
		struct cmsghdr *c;

		if (mm[i].msg_hdr.msg_flags & MSG_TRUNC) {
			u->rx_too_big++;
			continue;
		}
		memset(&o->peer, 0, sizeof(o->peer));
		o->peer.peer_addr = ntohl(from[i].sin_addr.s_addr);
		o->peer.peer_port = ntohs(from[i].sin_port);
		for (c = CMSG_FIRSTHDR(&mm[i].msg_hdr); c; c = CMSG_NXTHDR(&mm[i].msg_hdr, c)) {
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				o->peer.local_addr = ntohl(pi.ipi_addr.s_addr);
			}
		}
		o->queue = 0;
		/* a datagram moved to d[got] from d[i]: its bytes are in d[i].buf */
		if (got != i) {
			uint8_t *b = o->buf;
			size_t cap = o->cap;

			if (cap < mm[i].msg_len) {
				u->rx_too_big++;
				continue;
			}
			memcpy(b, d[i].buf, mm[i].msg_len);
		}
		o->len = mm[i].msg_len;
		got++;
	}
	u->rx += got;
	return (int)got;
}

static int udp_send(struct vt_rt *rt, const struct vt_rt_dgram *d, unsigned n)
{
	struct vt_rt_udp *u = (struct vt_rt_udp *)rt;
	struct mmsghdr mm[VT_RT_UDP_BATCH];
	struct sockaddr_in to[VT_RT_UDP_BATCH];
	struct iovec iov[VT_RT_UDP_BATCH];
	union {
		char buf[CMSG_SPACE_PKTINFO];
		struct cmsghdr align;
	} ctl[VT_RT_UDP_BATCH];
	unsigned i, done = 0;
	int r;

	while (done < n) {
		unsigned k = n - done < VT_RT_UDP_BATCH ? n - done : VT_RT_UDP_BATCH;

		memset(mm, 0, sizeof(mm[0]) * k);
		for (i = 0; i < k; i++) {
			const struct vt_rt_dgram *s = &d[done + i];

			memset(&to[i], 0, sizeof(to[i]));
			to[i].sin_family = AF_INET;
			to[i].sin_addr.s_addr = htonl(s->peer.peer_addr);
			to[i].sin_port = htons(s->peer.peer_port);
			iov[i].iov_base = s->buf;
			iov[i].iov_len = s->len;
			mm[i].msg_hdr.msg_name = &to[i];
			mm[i].msg_hdr.msg_namelen = sizeof(to[i]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			if (s->peer.local_addr) {
				struct cmsghdr *c;
				struct in_pktinfo pi = { 0 };

				pi.ipi_spec_dst.s_addr = htonl(s->peer.local_addr);
				memset(ctl[i].buf, 0, sizeof(ctl[i].buf));
				mm[i].msg_hdr.msg_control = ctl[i].buf;
				mm[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
				c = CMSG_FIRSTHDR(&mm[i].msg_hdr);
				c->cmsg_level = IPPROTO_IP;
				c->cmsg_type = IP_PKTINFO;
				c->cmsg_len = CMSG_LEN(sizeof(pi));
				memcpy(CMSG_DATA(c), &pi, sizeof(pi));
			}
		}
		r = sendmmsg(u->fd, mm, k, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
				u->tx_busy += n - done;
				break;
			}
			/* this datagram is refused (EMSGSIZE, EINVAL, unreachable): skip it */
			if (errno == EMSGSIZE || errno == EINVAL || errno == EHOSTUNREACH ||
			    errno == ENETUNREACH || errno == EACCES || errno == EPERM) {
				u->tx_refused++;
				done++;
				continue;
			}
			return done ? (int)done : -errno;
		}
		u->tx += (unsigned)r;
		done += (unsigned)r;
	}
	return (int)done;
}

static int udp_fd(const struct vt_rt *rt)
{
	return ((const struct vt_rt_udp *)rt)->fd;
}

static void udp_stats(const struct vt_rt *rt, struct vt_rt_stats *st)
{
	const struct vt_rt_udp *u = (const struct vt_rt_udp *)rt;

	st->rx = u->rx;
	st->tx = u->tx;
	st->rx_too_big = u->rx_too_big;
	st->rx_dropped = u->rx_too_big;
	st->tx_busy = u->tx_busy;
	st->tx_refused = u->tx_refused;
	st->mode = "udp";
	st->queues = 1;
}

static void udp_close(struct vt_rt *rt)
{
	struct vt_rt_udp *u = (struct vt_rt_udp *)rt;

	close(u->fd);
	free(u);
}

const struct vt_rt_ops vt_rt_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.recv_batch = udp_recv,
	.send_batch = udp_send,
	.fd = udp_fd,
	.stats = udp_stats,
	.close = udp_close,
};
