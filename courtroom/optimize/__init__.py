"""Optimization: DSPy optimizers (:mod:`.compile`) and Optuna studies (:mod:`.study`, :mod:`.spaces`)."""
