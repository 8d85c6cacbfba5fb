// SPDX-License-Identifier: GPL-2.0-or-later
/* vtier-bench: benchmarks of vtier's parts. `vtier-bench SUBCOMMAND --help`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtier_bench.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} subcommands[] = {
	{ "telemetry", vt_bench_telemetry,
	  "score profilers on simulated workloads (accuracy, convergence, cost)" },
	{ "tdp", vt_bench_tdp,
	  "profile a live QEMU/KVM VM through vtier_tdp.ko (EPT/NPT accessed bits)" },
	{ "ctier", vt_bench_ctier,
	  "compressed tiers: ratio, speed, metadata, userfaultfd fault latency" },
	{ "move", vt_bench_move,
	  "NUMA mover throughput on a live VM against move_pages loops and memcpy" },
	{ "agent", vt_bench_agent,
	  "vtierd's CPU per window (profiler, residency, policy, movers) against guest RAM" },
	{ "remote", vt_bench_remote,
	  "one round of the remote tier's 4 KiB fetch (make bench-remote runs them)" },
	{ "mover", vt_bench_mover,
	  "faults on stored pages while the compressed-tier mover works elsewhere" },
};

bool vt_bench_options(GOptionContext *ctx, const GOptionEntry *entries, int *argc,
		      char ***argv, const char *cmd)
{
	g_autoptr(GError) error = NULL;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, argc, argv, &error)) {
		fprintf(stderr, "vtier-bench %s: %s\n", cmd, error->message);
		return false;
	}
	if (*argc > 1) {
		fprintf(stderr, "vtier-bench %s: unexpected argument '%s'\n", cmd, (*argv)[1]);
		return false;
	}
	return true;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: vtier-bench SUBCOMMAND [OPTIONS]\n\nsubcommands:\n");
	for (unsigned int i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(f, "\nRun 'vtier-bench SUBCOMMAND --help' for its options.\n");
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout);
	for (unsigned int i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "vtier-bench: unknown subcommand '%s'\n\n", argv[1]);
	return usage(stderr);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double vt_bench_median(const GArray *v, double *lo, double *hi)
{
	g_autofree double *s = NULL;
	unsigned int n = v ? v->len : 0;

	if (!n) {
		if (lo)
			*lo = 0;
		if (hi)
			*hi = 0;
		return 0;
	}
	s = g_memdup2(v->data, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	if (lo)
		*lo = s[0];
	if (hi)
		*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
