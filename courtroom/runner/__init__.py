"""Runs: run folders, resume, repeat groups, the history of past runs and provenance."""
