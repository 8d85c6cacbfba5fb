#!/bin/sh
# vtier-bench agent (docs/bench-agent.md) on vtierd before issue 11 item 3 (BASE,
# default b2d3949: every chunk's residency read each window, every chunk visited by
# the policy and the heatmap) and on this tree, size after size in one run.
#   usage: bench/agent-before-after.sh BUILD [SIZES_GIB] [WINDOWS]
# The baseline is BASE's tree (git archive) with this tree's bench ported to its API
# (bench/agent-baseline.patch), built once in BUILD/agent-baseline.
set -e
build=$1
sizes=${2:-1,4,16,64,256,1024}
windows=${3:-10}
base=${BASE:-b2d3949}
src=$build/agent-baseline/src
bdir=$build/agent-baseline/build

if [ ! -x "$bdir/host-agent/tools/vtier-bench" ]; then
	rm -rf "$src" "$bdir"
	mkdir -p "$src"
	git archive "$base" | tar -x -C "$src"
	cp host-agent/tools/bench_agent.c "$src/host-agent/tools/bench_agent.c"
	patch -s "$src/host-agent/tools/bench_agent.c" bench/agent-baseline.patch
	sed -i "s/'bench_move.c',/'bench_move.c', 'bench_agent.c',/; s/dependencies : \[telemetry_dep, movers_dep,/dependencies : [vtier_core_dep, telemetry_dep, movers_dep,/" \
	    "$src/host-agent/tools/meson.build"
	# this tree's driver (its subcommand table names agent; its helpers, e.g.
	# vt_bench_options, are what bench_agent.c calls)
	cp host-agent/tools/vtier-bench.c host-agent/tools/vtier_bench.h "$src/host-agent/tools/"
	meson setup "$bdir" "$src" -Dwerror=false -Dvm_tests=false >/dev/null
	nice ninja -C "$bdir" -j2 host-agent/tools/vtier-bench >/dev/null
fi
echo "# baseline $base ($(git log -1 --format=%s "$base" | cut -c1-60)), now $(git rev-parse --short HEAD)"
"$build/host-agent/tools/vtier-bench" agent --sizes 1 --windows 1 --refresh round-robin | head -1
for s in $(echo "$sizes" | tr , ' '); do
	nice "$bdir/host-agent/tools/vtier-bench" agent --sizes "$s" --windows "$windows" | grep '^RESULT-AGENT'
	nice "$build/host-agent/tools/vtier-bench" agent --sizes "$s" --windows "$windows" | grep '^RESULT-AGENT'
done
