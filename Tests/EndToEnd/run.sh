#!/usr/bin/env bash
# End-to-end suite: the official Python Supabase client against a running AuthGate.
# Installs its Python packages (pinned in requirements.txt) in a virtualenv under .build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.build/e2e-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s Tests/EndToEnd/requirements.txt "$venv/requirements.installed"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r Tests/EndToEnd/requirements.txt
    cp Tests/EndToEnd/requirements.txt "$venv/requirements.installed"
fi
cd Tests/EndToEnd
exec "../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
