#!/bin/sh
# promtool test rules on the rules' test file (meson.build); its directory is
# where the rule file's relative path starts.
set -e
promtool=$1
test_file=$2
command -v "$promtool" >/dev/null 2>&1 ||
    { echo "promtool not found (package prometheus, scripts/deps/libvirt.pkgs)"; exit 1; }
cd "$(dirname "$test_file")"
exec "$promtool" test rules "$(basename "$test_file")"
