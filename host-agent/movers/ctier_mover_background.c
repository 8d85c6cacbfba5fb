// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The compressed-tier mover's background rule: while an incoming migration
 * still writes guest RAM, the mover thread runs at BACKGROUND_NICE.
 */
#include <sys/resource.h>
#include <unistd.h>

#include "ctier_mover_int.h"

void vt_ctier_mover_set_background(struct vt_ctier_mover *m, bool on)
{
	__atomic_store_n(&m->background, on, __ATOMIC_RELAXED);
	ctm_kick(m);
}

/*
 * Mover thread, each turn: the nice vt_ctier_mover_set_background() asks
 * for, set when it changed (*@nice_now: the nice asked for last; asked once,
 * not again every turn). This thread alone: the span helpers it starts
 * after inherit it.
 */
void ctm_background_apply(struct vt_ctier_mover *m, int *nice_now)
{
	int want = __atomic_load_n(&m->background, __ATOMIC_RELAXED) ? BACKGROUND_NICE : 0;

	if (want == *nice_now)
		return;
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), want))
		g_debug("ctier mover: nice %d: %s", want, g_strerror(errno));
	*nice_now = want;
}
