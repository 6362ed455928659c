#!/usr/bin/env bash
# Create datatrove's own virtual environment for the benchmarks (never a project dependency).
#
# Usage: bash benchmarks/datatrove_env.sh [VENV_DIR]   (default: benchmarks/.venv-datatrove)
# Idempotent: does nothing when the venv already imports datatrove 0.10.1.
# Packages as in shared/STACK-NOTES.md; python-magic needs Debian's libmagic1 only for WarcReader,
# which quality_agreement.py does not use (it feeds documents directly).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${1:-$HERE/.venv-datatrove}"
PY="${PYTHON:-python3}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version('datatrove') != '0.10.1')" 2>/dev/null; then
  echo "datatrove venv ready: $VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "datatrove[processing]==0.10.1" warcio faust-cchardet python-magic orjson spacy
"$VENV/bin/python" -c "import datatrove, spacy; spacy.blank('en'); print('datatrove venv ready:', '$VENV')"
