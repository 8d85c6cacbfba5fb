// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover's use of a destination's copies made during
 * precopy (ctier_prepared.h): given once, read by the span's storing
 * threads, dropped once placement is done or at their expiry.
 */
#include "ctier_mover_int.h"

/*
 * Mover thread, its queue empty: the prepared copies go once a bulk span
 * ran (the placement they were made for is done) or at their expiry.
 */
void ctm_prepared_drop_idle(struct vt_ctier_mover *m)
{
	struct vt_prepared *p = ctm_prepared(m);

	if (!p || (!m->prepared_bulk && vt_now_ns() < m->prepared_expire_ns))
		return;
	__atomic_store_n(&m->prepared, NULL, __ATOMIC_RELEASE);
	vt_prepared_free(p);
}

void vt_ctier_mover_set_prepared(struct vt_ctier_mover *m, struct vt_prepared *p,
				 unsigned int expire_ms)
{
	struct vt_prepared_stats st;

	if (!m || !p || ctm_prepared(m)) {
		vt_prepared_free(p);
		return;
	}
	vt_prepared_stop(p);
	vt_prepared_get_stats(p, &st);
	g_mutex_lock(&m->lock);
	m->stats.prepared_pages = st.pages;
	m->stats.prepared_bytes = st.bytes;
	m->stats.prepared_ns = st.ns;
	m->prepared_expire_ns = vt_now_ns() + expire_ms * 1000000ull;
	__atomic_store_n(&m->prepared, p, __ATOMIC_RELEASE);
	g_mutex_unlock(&m->lock);
	ctm_kick(m);
}
