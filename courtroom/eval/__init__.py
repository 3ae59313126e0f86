"""Evaluation: the harness that runs a program over examples, metrics, and a run's status."""
