"""A subprocess used by the lock and kill tests.

``python store_worker.py hold OUT``: open the store for writing, print ``ready``, wait for stdin EOF.
``python store_worker.py append OUT B``: append batches of ``B`` rows forever, one transaction
each, resuming after the batches already stored; print ``committed I`` after each commit.
``python store_worker.py efbig OUT B BYTES``: the same under ``RLIMIT_FSIZE = BYTES`` with
SIGXFSZ ignored, so a write fails with EFBIG; print ``error <message>`` and exit 3.
"""

from __future__ import annotations

import resource
import signal
import sys

from store_helpers import HASH, make_frame

from crsbench.store import ResultsStore


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
        if mode == "efbig":
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            limit = int(sys.argv[4])
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        done = store.count()
        if done % size:
            raise SystemExit(f"store holds {done} rows: not whole batches of {size}")
        i = done // size
        while True:
            try:
                store.append_frame(batch(i, size))
            except Exception as exc:  # the write error must surface, never be swallowed
                print(f"error {type(exc).__name__}: {exc}", flush=True)
                raise SystemExit(3) from None
            print(f"committed {i}", flush=True)
            i += 1


if __name__ == "__main__":
    main()
