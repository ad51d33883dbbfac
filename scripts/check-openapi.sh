#!/usr/bin/env bash
# Validates docs/openapi.yaml against the OpenAPI 3.1 specification (openapi-spec-validator,
# pinned in docs/tools/requirements.txt, installed in a virtualenv under .build/).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/tools-venv
scripts/python-venv.sh "$venv" docs/tools/requirements.txt
"$venv/bin/openapi-spec-validator" docs/openapi.yaml
