// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target of make bench-remote's TCP baseline server
 * (host-agent/tools/bench_remote_tcp.c): a connection's bytes as frames,
 * each header read by vt_bt_hdr_read() and its body served by
 * vt_bt_serve() against one page table, as `vtier-bench remote --tcp-serve`
 * does. A header refused ends the connection (the input). Every reply must
 * fit the bound, decode as its op's reply body, and a GET reply must name
 * the pages asked for, in order.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "bench_remote_tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[VT_BT_BODY_MAX];
	struct vt_bt_store *s = vt_bt_store_new();
	size_t pos = 0;

	while (size - pos >= VT_BT_HDR_BYTES) {
		struct vt_rp_get_item items[VT_RP_BATCH_MAX];
		uint64_t ids[VT_RP_BATCH_MAX];
		uint16_t st[VT_RP_BATCH_MAX], status;
		unsigned int n, asked = 0;
		struct vt_bt_hdr h;
		const uint8_t *body;
		size_t len;

		if (vt_bt_hdr_read(data + pos, &h) < 0)
			break;
		assert(h.len <= VT_BT_BODY_MAX);
		pos += VT_BT_HDR_BYTES;
		body = data + pos;
		len = MIN((size_t)h.len, size - pos);	/* a short read ends it after this */
		pos += len;
		if (h.op == VT_RP_GET && vt_rp_ids_decode(body, len, ids, &asked) != VT_RP_OK)
			asked = 0;
		len = vt_bt_serve(s, h.op, body, len, out, &status);
		assert(len <= VT_BT_BODY_MAX);
		if (status) {
			assert(status == EINVAL && len == 0);
			continue;
		}
		if (h.op == VT_RP_PUT) {
			assert(vt_rp_status_decode(out, len, st, &n) == VT_RP_OK);
			continue;
		}
		assert(h.op == VT_RP_GET);
		assert(vt_rp_get_reply_decode(out, len, items, &n) == VT_RP_OK && n == asked);
		for (unsigned int i = 0; i < n; i++)
			assert(items[i].page_id == ids[i] &&
			       (items[i].status == 0 || items[i].status == ENOENT));
	}
	vt_bt_store_free(s);
	return 0;
}
