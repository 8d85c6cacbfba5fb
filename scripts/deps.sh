#!/usr/bin/env bash
# Install every Debian package vtier needs. Idempotent: safe to run again.
#
# Package lists live in scripts/deps/*.pkgs, one file per part of the tree
# (build, testbed, qemu, ...), one package per line, '#' comments allowed.
# Lines of the form "backports:NAME" are installed from bookworm-backports.
# Adds bookworm-backports and deb-src entries to apt's sources when missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stamp_dir=${VTIER_STATE_DIR:-/var/lib/vtier}
sources=/etc/apt/sources.list.d/vtier-debian.sources

if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: must run as root to install packages (try: sudo $0)" >&2
    exit 1
fi

want_sources() {
    cat <<'SRC'
# Added by vtier scripts/deps.sh: bookworm-backports and deb-src entries.
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
}

# Only add what is not already configured somewhere.
need_sources=0
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    need_sources=1
fi
if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    need_sources=1
fi
if [ "$need_sources" = 1 ] && [ ! -f "$sources" ]; then
    want_sources > "$sources"
    rm -f "$stamp_dir/apt-updated"
fi

pkgs=()
bpo=()
for list in "$here"/deps/*.pkgs; do
    while read -r line; do
        line=${line%%#*}
        line=$(echo "$line" | xargs)
        [ -n "$line" ] || continue
        case "$line" in
            backports:*) bpo+=("${line#backports:}") ;;
            *) pkgs+=("$line") ;;
        esac
    done < "$list"
done

missing=()
for p in "${pkgs[@]}" "${bpo[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

echo "deps.sh: installing ${missing[*]}"
mkdir -p "$stamp_dir"
if [ ! -f "$stamp_dir/apt-updated" ] || [ -n "$(find "$stamp_dir/apt-updated" -mmin +1440)" ]; then
    apt-get -o DPkg::Lock::Timeout=600 update -q
    touch "$stamp_dir/apt-updated"
fi
export DEBIAN_FRONTEND=noninteractive
if [ "${#pkgs[@]}" -gt 0 ]; then
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${pkgs[@]}"
fi
if [ "${#bpo[@]}" -gt 0 ]; then
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends -t bookworm-backports "${bpo[@]}"
fi
