"""Evaluation: tasks and generators, metrics, the harness and run folders."""
