"""Versioned label maps: each shift target's finding names → CheXpert's 14 labels (YAML)."""
