#!/usr/bin/env bash
# run.sh PYTHON: the Python package's tests (test_shardc.py) under pytest,
# with python/ on the path; exit 77 (skipped) without pytest or numpy.
set -euo pipefail
py=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import pytest, numpy' 2> /dev/null; then
    echo "skipped: $py has no pytest or numpy (scripts/setup-debian.sh installs them)"
    exit 77
fi
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" -m pytest -q -p no:cacheprovider "$here"
