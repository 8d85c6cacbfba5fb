// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the hand-off budget (handoff/peer_budget.h) driven by a script,
 * one command per line:
 *   peer KEY VALUE | host KEY VALUE     a bound as its vtierd option takes it
 *   take PID R SIZE TIERS KEY           a HELLO (R 1: RECONNECT) of SIZE bytes
 *   prepare PID                         a PREPARE
 *   give N | fail N                     the Nth ticket's hand-off ends | fails
 *   reserve KEY PID SIZE                a store kept for its reconnect
 *   unreserve KEY PID
 * After each: a refused bound string changes nothing and says why; an
 * accepted take that did not come from the reserve leaves its peer within
 * every bound it was charged on, and the host (with the reserve) too; a
 * refused take names the option and changes nothing. At the end, once every
 * ticket is given back and every reservation dropped, nothing is held.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer_budget.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TICKETS 64

static int bound_of(const char *key)
{
	for (int b = 0; b < VT_BOUND_NR; b++)
		if (!strcmp(key, vt_bound_key(b)))
			return b;
	return -1;
}

static uint64_t num(const char *s)
{
	return s ? g_ascii_strtoull(s, NULL, 10) : 0;
}

static void same(const struct vt_charge *a, const struct vt_charge *b)
{
	for (int i = 0; i < VT_BOUND_NR; i++)
		if (i != VT_BOUND_PREPARE_BYTES && a->v[i] != b->v[i])
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = g_strndup((const char *)data, MIN(size, 1 << 16));
	char **lines = g_strsplit(text, "\n", 512);
	struct vt_ctier_spec specs[VT_CTIER_MAX];
	struct vt_budget_ticket *t = g_new0(struct vt_budget_ticket, TICKETS);
	struct vt_budget_limits l;
	struct vt_budget *bu = NULL;
	struct vt_charge held, res;
	GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
	unsigned int nt = 0;

	vt_budget_limits_default(&l);
	l.host[VT_BOUND_FDS] = 4096;	/* not this process's limit: the same run everywhere */
	memset(specs, 0, sizeof(specs));
	for (unsigned int i = 0; i < VT_CTIER_MAX; i++)
		specs[i].medium = i % 2 ? VT_MEDIUM_FILE : VT_MEDIUM_NODE;
	for (unsigned int n = 0; lines[n]; n++) {
		char **w = g_strsplit(lines[n], " ", 8);
		unsigned int nw = g_strv_length(w);
		char msg[128] = "";

		if (nw == 3 && (!strcmp(w[0], "peer") || !strcmp(w[0], "host")) && !bu) {
			struct vt_budget_limits before = l;
			GError *e = NULL;
			int b = bound_of(w[1]);

			if (b >= 0 && !vt_budget_limit_parse(&l, b, w[0][0] == 'h', w[2], &e)) {
				if (!e || !strstr(e->message, vt_bound_option(b, w[0][0] == 'h')) ||
				    memcmp(&l, &before, sizeof(l)))
					__builtin_trap();
				g_error_free(e);
			}
		} else if (!bu) {
			bu = vt_budget_new(&l);
		}
		if (!bu) {
			g_strfreev(w);
			continue;
		}
		if ((nw == 6 && !strcmp(w[0], "take")) || (nw == 2 && !strcmp(w[0], "prepare"))) {
			struct vt_peer_id who = { .pid = (pid_t)(num(w[1]) % 8 + 1), .start_time = 1 };
			struct vt_charge c, before, peer_before;
			bool prep = w[0][0] == 'p';
			int r;

			if (nt == TICKETS)
				goto next;
			if (prep)
				vt_budget_prepare_charge(&c);
			else
				vt_budget_backend_charge(num(w[3]) << 12, specs, NULL,
							 (unsigned int)(num(w[4]) % (VT_CTIER_MAX + 1)), &c);
			vt_budget_totals(bu, &before, NULL, NULL);
			vt_budget_peer_held(bu, &who, &peer_before);
			r = vt_budget_take(bu, &who, prep ? NULL : w[5], !prep && num(w[2]) == 1, &c,
					   &t[nt], msg, sizeof(msg));
			vt_budget_peer_held(bu, &who, &held);
			vt_budget_totals(bu, &res, NULL, NULL);
			if (r) {
				if (r != -EDQUOT || !strstr(msg, "(--max-") || t[nt].taken)
					__builtin_trap();
				same(&held, &peer_before);
				same(&res, &before);
			} else if (!t[nt].from_reserve) {
				struct vt_charge all, reserved;

				vt_budget_totals(bu, &all, &reserved, NULL);
				for (int b = 0; b < VT_BOUND_NR; b++) {
					if (b == VT_BOUND_PREPARE_BYTES || !c.v[b])
						continue;
					if (l.peer[b] && held.v[b] > l.peer[b])
						__builtin_trap();
					if (vt_budget_limits(bu)->host[b] &&
					    all.v[b] + reserved.v[b] > vt_budget_limits(bu)->host[b])
						__builtin_trap();
				}
			}
			if (!r)
				nt++;
		} else if (nw == 2 && (!strcmp(w[0], "give") || !strcmp(w[0], "fail")) && nt) {
			vt_budget_give(bu, &t[num(w[1]) % nt], w[0][0] == 'f');
		} else if (nw == 4 && !strcmp(w[0], "reserve")) {
			struct vt_charge c;

			vt_budget_backend_charge(num(w[3]) << 12, specs, NULL, 1, &c);
			vt_budget_reserve(bu, w[1], (pid_t)(num(w[2]) % 8), 1, &c, 0);
			g_ptr_array_add(keys, g_strdup(w[1]));
		} else if (nw == 3 && !strcmp(w[0], "unreserve")) {
			vt_budget_unreserve(bu, w[1], (pid_t)(num(w[2]) % 8), 1);
		}
next:
		g_strfreev(w);
	}
	if (bu) {
		/* everything given back (a failed reconnect's reservation comes back: drop it) */
		for (unsigned int i = 0; i < nt; i++)
			vt_budget_give(bu, &t[i], false);
		for (unsigned int i = 0; i < nt; i++)
			if (t[i].from_reserve)
				vt_budget_unreserve(bu, t[i].key, 0, 0);
		for (unsigned int i = 0; i < keys->len; i++)
			for (pid_t p = 0; p < 8; p++)
				vt_budget_unreserve(bu, keys->pdata[i], p, 1);
		vt_budget_totals(bu, &held, &res, NULL);
		for (int b = 0; b < VT_BOUND_NR; b++)
			if (held.v[b] || res.v[b])
				__builtin_trap();
		vt_budget_free(bu);
	}
	g_ptr_array_free(keys, TRUE);
	g_free(t);
	g_strfreev(lines);
	g_free(text);
	return 0;
}
