/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TCP baseline of make bench-remote (vtier-bench remote --tcp-serve):
 * the remote tier's PUT and GET bodies (remote_proto.h) in frames on one TCP
 * connection. A frame is an 8-byte header, then its body:
 *   u32 body length (LE, at most VT_BT_BODY_MAX), u8 op (VT_RP_PUT or
 *   VT_RP_GET; a reply: | VT_RP_REPLY), u8 0, u16 status (LE; replies: 0
 *   or an errno value)
 * A GET reply holds every page asked for (no 8-fragment bound: TCP has
 * none). Pure functions and the server's page table; the sockets are
 * bench_remote.c's. Fuzzed: tests/fuzz/fuzz_bench_tcp.c.
 */
#ifndef VTIER_TOOLS_BENCH_REMOTE_TCP_H
#define VTIER_TOOLS_BENCH_REMOTE_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "remote_proto.h"

#define VT_BT_HDR_BYTES 8
#define VT_BT_BODY_MAX (2 + VT_RP_BATCH_MAX * (12 + VT_RP_BLOB_MAX))
#define VT_BT_PAGES_MAX (1u << 18)	/* the server's cap: 1 GiB of pages */

struct vt_bt_hdr {
	uint32_t len;
	uint8_t op;
	uint16_t status;
};

/* -EMSGSIZE: a body over VT_BT_BODY_MAX; -EPROTO: the byte after op is not 0. */
int vt_bt_hdr_read(const uint8_t buf[VT_BT_HDR_BYTES], struct vt_bt_hdr *h);
void vt_bt_hdr_write(uint8_t buf[VT_BT_HDR_BYTES], const struct vt_bt_hdr *h);

struct vt_bt_store;

struct vt_bt_store *vt_bt_store_new(void);
void vt_bt_store_free(struct vt_bt_store *s);
/*
 * The reply to one request: its body into @out (VT_BT_BODY_MAX bytes), its
 * length returned, its status in *@status: 0, or EINVAL for an op other than
 * PUT or GET or a body that does not decode (an empty body). Per page: PUT
 * 0, EINVAL (an empty or over-long blob), ENOSPC (VT_BT_PAGES_MAX pages
 * held); GET 0 with the blob, or ENOENT.
 */
size_t vt_bt_serve(struct vt_bt_store *s, uint8_t op, const uint8_t *body, size_t len,
		   uint8_t *out, uint16_t *status);

#endif
