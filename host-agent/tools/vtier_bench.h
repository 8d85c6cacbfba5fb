/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Subcommands of vtier-bench; each returns the process exit status. */
#ifndef VTIER_TOOLS_VTIER_BENCH_H
#define VTIER_TOOLS_VTIER_BENCH_H

int vt_bench_telemetry(int argc, char **argv);
int vt_bench_tdp(int argc, char **argv);
int vt_bench_ctier(int argc, char **argv);
int vt_bench_move(int argc, char **argv);
int vt_bench_agent(int argc, char **argv);

#endif
