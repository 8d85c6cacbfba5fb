/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Subcommands of vtier-bench; each returns the process exit status. */
#ifndef VTIER_TOOLS_VTIER_BENCH_H
#define VTIER_TOOLS_VTIER_BENCH_H

#include <stdbool.h>

#include <glib.h>

int vt_bench_telemetry(int argc, char **argv);
int vt_bench_tdp(int argc, char **argv);
int vt_bench_ctier(int argc, char **argv);
int vt_bench_move(int argc, char **argv);
int vt_bench_agent(int argc, char **argv);
int vt_bench_remote(int argc, char **argv);
int vt_bench_mover(int argc, char **argv);

/*
 * A subcommand's options: @entries into @ctx, parsed from @argc and @argv; a bad
 * option or a stray argument is said on stderr as "vtier-bench @cmd: ...".
 * False: exit with status 2.
 */
bool vt_bench_options(GOptionContext *ctx, const GOptionEntry *entries, int *argc,
		      char ***argv, const char *cmd);

/*
 * A compressed tier's spec from its codec, pool and medium as a [ctier.NAME]
 * group of vtierd's config spells them (vt_ctier_spec_parse()). 0, or -EINVAL
 * with the parser's message in @why.
 */
struct vt_ctier_spec;
int vt_bench_tier_spec(const char *codec, const char *pool, const char *medium,
		       struct vt_ctier_spec *out, char *why, size_t wl);

/* The median of the doubles in @v (0 if empty); its least and greatest in @lo, @hi if not NULL. */
double vt_bench_median(const GArray *v, double *lo, double *hi);

#endif
