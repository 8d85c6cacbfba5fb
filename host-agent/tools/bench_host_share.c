// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-host-share: the cost of one round of host-wide DRAM sharing
 * (policy/host_share.c) for N VMs, as the daemon's host stage would run it:
 * each round a fifth of the VMs get a new hot set, allotments carried to the
 * next round, the budget contested (half the VMs' hot bytes fit). Prints the
 * thread CPU time per round (p50, p99, max) and per VM:
 *
 *   bench-host-share [VMS [ROUNDS [SEED]]]     (defaults 100 1000 1)
 *
 * Under `valgrind --tool=callgrind` it gives instruction counts instead of
 * times (callgrind_annotate: vt_host_share_round's inclusive Ir / ROUNDS).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "host_share.h"
#include "thread_ns.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static void new_hot_set(GRand *rng, struct vt_share_vm *v)
{
	uint64_t left = v->ram_bytes;

	memset(v->hist_bytes, 0, sizeof(v->hist_bytes));
	for (int b = VT_MTM_BINS - 1; b > 0 && left; b--) {
		uint64_t x = MIN(left, (uint64_t)g_rand_int_range(rng, 0, 512) * 2 * MIB);

		if (g_rand_int_range(rng, 0, 3) == 0)
			continue;
		v->hist_bytes[b] = x;
		left -= x;
	}
	v->hist_bytes[0] = left;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned long vms = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	guint32 seed = argc > 3 ? (guint32)strtoul(argv[3], NULL, 10) : 1;
	struct vt_share_params p = { .step = 256 * MIB, .deadband = 4 * MIB };
	struct vt_share_vm *v;
	struct vt_share_out *out;
	uint64_t *ns, hot = 0, total = 0, sum_last = 0;
	GRand *rng;

	if (argc > 4 || !vms || vms > 100000 || !rounds || rounds > 1000000) {
		fprintf(stderr, "usage: %s [VMS (1..100000) [ROUNDS (1..1000000) [SEED]]]\n",
			argv[0]);
		return 2;
	}
	rng = g_rand_new_with_seed(seed);
	v = g_new0(struct vt_share_vm, vms);
	out = g_new0(struct vt_share_out, vms);
	ns = g_new0(uint64_t, rounds);
	for (unsigned long i = 0; i < vms; i++) {
		v[i].id = i + 1;
		v[i].ram_bytes = (uint64_t)g_rand_int_range(rng, 1, 33) * GIB;
		v[i].weight = (uint32_t)g_rand_int_range(rng, 1, 10001);
		v[i].dram_min = g_rand_int_range(rng, 0, 4) == 0 ? 256 * MIB : 0;
		v[i].dram_max = g_rand_boolean(rng) ? v[i].ram_bytes / 2 : 0;
		new_hot_set(rng, &v[i]);
		for (int b = 1; b < VT_MTM_BINS; b++)
			hot += v[i].hist_bytes[b];
	}
	p.budget = hot / 2;
	for (unsigned long r = 0; r < rounds; r++) {
		uint64_t t0;
		struct vt_share_round info;
		int ret;

		for (unsigned long i = 0; i < vms; i++)
			if (r && g_rand_int_range(rng, 0, 5) == 0)
				new_hot_set(rng, &v[i]);
		t0 = vt_thread_ns();
		ret = vt_host_share_round(&p, v, vms, out, &info);
		ns[r] = vt_thread_ns() - t0;
		if (ret || info.sum > p.budget) {
			fprintf(stderr, "round %lu: %s\n", r, ret ? g_strerror(-ret) : "over budget");
			return 1;
		}
		for (unsigned long i = 0; i < vms; i++)
			v[i].prev = out[i].allot;
		sum_last = info.sum;
	}
	for (unsigned long r = 0; r < rounds; r++)
		total += ns[r];
	qsort(ns, rounds, sizeof(*ns), cmp_u64);
	printf("bench-host-share vms=%lu rounds=%lu budget_mib=%llu given_mib=%llu "
	       "us_per_round_p50=%.1f p99=%.1f max=%.1f ns_per_vm=%.0f\n", vms, rounds,
	       (unsigned long long)(p.budget / MIB), (unsigned long long)(sum_last / MIB),
	       ns[rounds / 2] / 1e3, ns[rounds * 99 / 100] / 1e3, ns[rounds - 1] / 1e3,
	       (double)total / rounds / vms);
	g_free(ns);
	g_free(out);
	g_free(v);
	g_rand_free(rng);
	return 0;
}
