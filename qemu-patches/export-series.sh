#!/usr/bin/env bash
# Regenerate the series in this directory from a development tree made by
# `build.sh --src DIR` (a git tree whose tag "base" is the pristine tarball),
# with cover-letter.txt as the cover letter. Patch files are stable for the
# same commits (zeroed "From" hashes), so the build cache key only changes
# when a patch does.
#   qemu-patches/export-series.sh DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dev=${1:?usage: export-series.sh DEVTREE}

git -C "$dev" rev-parse -q --verify base >/dev/null ||
    { echo "export-series.sh: $dev has no 'base' tag (make it with build.sh --src)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$dev" -c "branch.$(git -C "$dev" branch --show-current).description=$(cat "$here/cover-letter.txt")" \
    format-patch -q --zero-commit --cover-letter --cover-from-description=subject \
    --subject-prefix=PATCH -o "$tmp" base..HEAD
rm -f "$here"/[0-9][0-9][0-9][0-9]-*.patch
cp "$tmp"/*.patch "$here"/
ls "$here"/[0-9][0-9][0-9][0-9]-*.patch
