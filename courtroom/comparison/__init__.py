"""Comparisons: several frameworks on the same examples, matched majority-vote baselines, the papers' suites."""
