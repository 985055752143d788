"""Backends: each module imports its library (timm, open_clip, transformers) lazily."""
