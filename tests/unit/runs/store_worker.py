"""A subprocess used by the lock and kill tests.

``python store_worker.py hold OUT``: open the store for writing, print ``ready``, wait for stdin EOF.
``python store_worker.py append OUT B``: append batches of ``B`` rows forever, one transaction
each, resuming after the batches already stored; print ``committed I`` after each commit.
"""

from __future__ import annotations

import sys

from store_helpers import HASH, make_frame

from crsbench.runs import ResultsStore


def batch(i: int, size: int):
    frame = make_frame(size, seed=i)
    frame["encoder"] = f"b{i:05d}_" + frame["encoder"]
    return frame


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    with ResultsStore(out, HASH) as store:
        if mode == "hold":
            print("ready", flush=True)
            sys.stdin.read()
            return
        size = int(sys.argv[3])
        done = store.count()
        if done % size:
            raise SystemExit(f"store holds {done} rows: not whole batches of {size}")
        i = done // size
        while True:
            store.append_frame(batch(i, size))
            print(f"committed {i}", flush=True)
            i += 1


if __name__ == "__main__":
    main()
