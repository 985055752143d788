"""Evaluation of one cell from its cached features: arrays in, run rows out.

The probe grid and its selection, the metrics of every condition and shift target, the
post-hoc recalibrators, the per-sample predictions kept beside the rows, and the bf16 check
of an encoder. It knows nothing of configs, stores being written, executors or Ray:
:mod:`crsbench.runs` plans the grid, feeds each cell's arrays here and writes what comes back.
"""
