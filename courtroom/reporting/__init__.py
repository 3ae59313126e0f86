"""Reporting: the HTML report, plots, table formatting and the progress display."""
