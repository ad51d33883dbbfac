#!/usr/bin/env bash
# Usage: scripts/python-venv.sh VENV REQUIREMENTS
# Makes the virtualenv VENV (when missing) and installs REQUIREMENTS (pinned) into it when they
# changed since the last install. Used by the end-to-end suite and the OpenAPI checks.
set -euo pipefail
venv="$1"
requirements="$2"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s "$requirements" "$venv/requirements.installed"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.installed"
fi
