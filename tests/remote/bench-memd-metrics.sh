#!/bin/sh
# What writing the stats and metrics files costs vtier-memd as the namespaces
# grow: a vtier-memd on UDP on 127.0.0.1 (no root), N VMs' clients
# (remote_pages, one namespace each, 4 pages; at most 256 distinct: its VM
# key is seeded by a byte) made one after the other, then ROUNDS seconds of
# idle writes; prints the file sizes and the server's own figures:
# vtier_memd_stats_snapshot_seconds, the serving thread's copy of the
# counters (requests wait for it), and vtier_memd_stats_write_seconds, the
# render and write (the writer thread's); each the last and the most since
# start (namespaces being made meanwhile). The files go to TMPDIR.
# Not part of make check (docs/results/2026-11-30-memd-metrics-cost.md).
# usage: bench-memd-metrics.sh VTIER_MEMD REMOTE_PAGES N [ROUNDS]
set -e
memd=$1 pages=$2 n=$3 rounds=${4:-5}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null && wait $pid; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pk=$("$memd" --state-dir "$dir/st" --show-key 2>/dev/null)
"$memd" --state-dir "$dir/st" --listen 127.0.0.1:"$port" --transport udp --server-cap 1GiB \
	--ns-per-client 4096 --stats-file "$dir/stats.json" --metrics-file "$dir/memd.prom" \
	2>"$dir/log" &
pid=$!
sleep 0.5
i=1
while [ "$i" -le "$n" ]; do
	"$pages" victim --server 127.0.0.1:"$port/$pk" --copies 1 --pages 4 --key-seed "$i" \
		>/dev/null || { echo "remote_pages $i failed"; exit 1; }
	i=$((i + 1))
done
sleep "$rounds"
get() { awk -v k="$1" '$1 == k { print $2 }' "$dir/memd.prom"; }
ms() { get "$1" | awk '{ printf "%.3f", $1 * 1000 }'; }
echo "RESULT-MEMD-METRICS namespaces=$(get vtier_memd_namespaces)" \
	"pages=$(get vtier_memd_pages) json_bytes=$(stat -c %s "$dir/stats.json")" \
	"prom_bytes=$(stat -c %s "$dir/memd.prom")" \
	"prom_lines=$(grep -vc '^#' "$dir/memd.prom")" \
	"snapshot_ms=$(ms vtier_memd_stats_snapshot_seconds)" \
	"snapshot_max_ms=$(ms vtier_memd_stats_snapshot_max_seconds)" \
	"write_ms=$(ms vtier_memd_stats_write_seconds)" \
	"write_max_ms=$(ms vtier_memd_stats_write_max_seconds)"
