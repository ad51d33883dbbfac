#!/usr/bin/env bash
# Installs the Debian packages AuthGate needs, only those that are missing.
# Usage: scripts/install-deps.sh PACKAGE...
set -euo pipefail

missing=()
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if ! command -v swift >/dev/null 2>&1; then
    echo "error: swift is not on PATH; install Swift 6.2 or later first (https://www.swift.org/install/linux/)" >&2
    exit 1
fi

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

echo "installing missing packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "error: ${missing[*]} must be installed and this user is not root (and sudo is missing)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
