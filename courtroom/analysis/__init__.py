"""Analyses: the papers' analyses, ambiguity, position bias, calibration, flips and where to settle."""
