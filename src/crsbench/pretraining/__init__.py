"""Shipped, versioned catalogue of what each encoder saw while it was pretrained (``v1.yaml``).

Load it with :func:`crsbench.core.pretraining.load_pretraining`; the overlap flags of the
results are computed by :mod:`crsbench.stats.contamination`.
"""
