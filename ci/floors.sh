#!/usr/bin/env bash
# Install the declared lower bounds of the encoder backends and run the encoder tests.
#
#   ci/floors.sh [VENV]        (default VENV: .venv-floors; needs the package index)
#
# The constraints file pins each package named in FLOORS (default: transformers, timm,
# open_clip_torch) to the `>=` bound pyproject.toml declares for it, as uv's
# --resolution=lowest-direct would; every other package resolves as usual. FLOORS=all pins
# every `>=` bound of the dependencies and extras. Not part of `make test`: it downloads
# packages (docs/encoders.md, "Version floors").
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-floors}
FLOORS=${FLOORS:-"transformers timm open_clip_torch"}
PYTHON=${PYTHON:-python3}

"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" - "$FLOORS" > "$VENV/floors.txt" <<'PY'
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

wanted = sys.argv[1].split()
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
specs = list(project["dependencies"])
for extra in project["optional-dependencies"].values():
    specs += extra
for spec in specs:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)", spec.strip())
    if m is None:
        continue
    name = m.group(1)
    norm = re.sub(r"[-_.]+", "-", name).lower()
    if wanted == ["all"] or norm in {re.sub(r"[-_.]+", "-", w).lower() for w in wanted}:
        print(f"{name}=={m.group(3)}")
PY
echo "floors:"; sed 's/^/  /' "$VENV/floors.txt"
"$VENV/bin/python" -m pip install -q -c "$VENV/floors.txt" -e ".[dev]"
"$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(transformers|timm|open.clip.torch|huggingface.hub) '
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/unit/encoders
