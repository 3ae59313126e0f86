"""Analyses: the papers' analyses, ambiguity, position bias and calibration."""
