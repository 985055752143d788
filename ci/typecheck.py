"""mypy over src/ against a baseline that may only shrink.

``python ci/typecheck.py`` runs mypy on ``src/crsbench`` and compares each file's error count
with ``ci/mypy_baseline.json``: a file with more errors than its baseline (or a new file with
any) fails, naming the file and its new errors; a file with fewer is reported so the baseline
can be lowered with ``--update`` (which never raises a count).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "ci" / "mypy_baseline.json"
ERROR = re.compile(r"^(?P<file>[^:]+):\d+: error: ")


def mypy_errors() -> dict[str, list[str]]:
    """Each file's mypy error lines (mypy's config in pyproject.toml)."""
    done = subprocess.run([sys.executable, "-m", "mypy", "src/crsbench", "--no-error-summary"],
                          cwd=REPO, capture_output=True, text=True)  # fmt: skip
    if done.returncode not in (0, 1):
        sys.exit(f"mypy failed to run:\n{done.stdout}\n{done.stderr}")
    errors: dict[str, list[str]] = collections.defaultdict(list)
    for line in done.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            errors[m["file"]].append(line)
    return dict(errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="lower the baseline's counts")
    args = parser.parse_args()
    baseline: dict[str, int] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    errors = mypy_errors()
    worse = {f: e for f, e in errors.items() if len(e) > baseline.get(f, 0)}
    better = {f: n for f, n in baseline.items() if len(errors.get(f, ())) < n}
    if args.update:
        lowered = {f: min(n, len(errors.get(f, ()))) for f, n in baseline.items()}
        if not BASELINE.exists():
            lowered = {f: len(e) for f, e in errors.items()}
        BASELINE.write_text(json.dumps({f: n for f, n in sorted(lowered.items()) if n},
                                       indent=1) + "\n")  # fmt: skip
    total = sum(len(e) for e in errors.values())
    print(f"mypy: {total} errors in {len(errors)} files (baseline {sum(baseline.values())})")
    for f, n in sorted(better.items()):
        print(f"  fewer than the baseline: {f} {len(errors.get(f, ()))} < {n} "
              "(python ci/typecheck.py --update lowers it)")  # fmt: skip
    for f, lines in sorted(worse.items()):
        print(f"  more than the baseline ({baseline.get(f, 0)}): {f}")
        print("\n".join(f"    {line}" for line in lines))
    return 1 if worse and not args.update else 0


if __name__ == "__main__":
    sys.exit(main())
