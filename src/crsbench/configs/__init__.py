"""Shipped benchmark configs (package data): ``paper.yaml`` and ``demo.yaml``.

Load them with :func:`crsbench.config.load_packaged_config`.
"""
