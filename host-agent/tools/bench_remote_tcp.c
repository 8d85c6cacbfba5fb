// SPDX-License-Identifier: GPL-2.0-or-later
/* The TCP baseline's frames and server (bench_remote_tcp.h). */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "bench_remote_tcp.h"

struct vt_bt_store {
	GHashTable *pages;		/* u64 id -> GBytes, the sealed blob */
};

int vt_bt_hdr_read(const uint8_t buf[VT_BT_HDR_BYTES], struct vt_bt_hdr *h)
{
	h->len = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
		 (uint32_t)buf[3] << 24;
	h->op = buf[4];
	h->status = (uint16_t)(buf[6] | buf[7] << 8);
	if (buf[5])
		return -EPROTO;
	return h->len > VT_BT_BODY_MAX ? -EMSGSIZE : 0;
}

void vt_bt_hdr_write(uint8_t buf[VT_BT_HDR_BYTES], const struct vt_bt_hdr *h)
{
	buf[0] = (uint8_t)h->len;
	buf[1] = (uint8_t)(h->len >> 8);
	buf[2] = (uint8_t)(h->len >> 16);
	buf[3] = (uint8_t)(h->len >> 24);
	buf[4] = h->op;
	buf[5] = 0;
	buf[6] = (uint8_t)h->status;
	buf[7] = (uint8_t)(h->status >> 8);
}

static void blob_free(gpointer p)
{
	g_bytes_unref(p);
}

struct vt_bt_store *vt_bt_store_new(void)
{
	struct vt_bt_store *s = g_new0(struct vt_bt_store, 1);

	s->pages = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, blob_free);
	return s;
}

void vt_bt_store_free(struct vt_bt_store *s)
{
	if (!s)
		return;
	g_hash_table_destroy(s->pages);
	g_free(s);
}

size_t vt_bt_serve(struct vt_bt_store *s, uint8_t op, const uint8_t *body, size_t len,
		   uint8_t *out, uint16_t *status)
{
	struct vt_rp_put_item put[VT_RP_BATCH_MAX];
	struct vt_rp_get_item get[VT_RP_BATCH_MAX];
	uint64_t ids[VT_RP_BATCH_MAX];
	uint16_t st[VT_RP_BATCH_MAX];
	unsigned int n = 0;
	long r = -1;

	*status = 0;
	if (op == VT_RP_PUT && vt_rp_put_decode(body, len, put, &n) == VT_RP_OK) {
		for (unsigned int i = 0; i < n; i++) {
			st[i] = !put[i].blob_len || put[i].blob_len > VT_RP_BLOB_MAX ? EINVAL :
				g_hash_table_size(s->pages) >= VT_BT_PAGES_MAX &&
				!g_hash_table_contains(s->pages, &put[i].page_id) ? ENOSPC : 0;
			if (!st[i])
				g_hash_table_replace(s->pages,
						     g_memdup2(&put[i].page_id, sizeof(uint64_t)),
						     g_bytes_new(put[i].blob, put[i].blob_len));
		}
		r = vt_rp_status_encode(st, n, out, VT_BT_BODY_MAX);
	} else if (op == VT_RP_GET && vt_rp_ids_decode(body, len, ids, &n) == VT_RP_OK) {
		for (unsigned int i = 0; i < n; i++) {
			GBytes *b = g_hash_table_lookup(s->pages, &ids[i]);
			gsize bl = 0;

			get[i] = (struct vt_rp_get_item){ .page_id = ids[i],
							  .status = b ? 0 : ENOENT };
			if (b) {
				get[i].blob = g_bytes_get_data(b, &bl);
				get[i].blob_len = (uint16_t)bl;
			}
		}
		r = vt_rp_get_reply_encode(get, n, out, VT_BT_BODY_MAX);
	}
	if (r < 0) {
		*status = EINVAL;
		return 0;
	}
	return (size_t)r;
}
