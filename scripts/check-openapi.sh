#!/usr/bin/env bash
# Validates docs/openapi.yaml against the OpenAPI 3.1 specification (openapi-spec-validator,
# pinned in docs/tools/requirements.txt, installed in a virtualenv under .build/).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/tools-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s docs/tools/requirements.txt "$venv/requirements.installed"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r docs/tools/requirements.txt
    cp docs/tools/requirements.txt "$venv/requirements.installed"
fi
"$venv/bin/openapi-spec-validator" docs/openapi.yaml
