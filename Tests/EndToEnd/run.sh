#!/usr/bin/env bash
# End-to-end suite: the official Python Supabase client against a running AuthGate.
# Installs its Python packages (pinned in requirements.txt) in a virtualenv under .build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.build/e2e-venv
scripts/python-venv.sh "$venv" Tests/EndToEnd/requirements.txt
cd Tests/EndToEnd
exec "../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
