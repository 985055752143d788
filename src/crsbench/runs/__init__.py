"""Orchestration: grid planning, cells, executors (local, Ray), the LoRA stage and the driver.

:func:`crsbench.runs.pipeline.run_benchmark` plans the grid (:mod:`~crsbench.runs.plan`),
prepares each cell's data and features, evaluates cells locally or on Ray and writes their
records through the results store (:mod:`crsbench.store`), which this package never
bypasses. The store itself (schema, writer, lock, reader) lives in :mod:`crsbench.store`.
"""
