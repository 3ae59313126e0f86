"""Cost: estimates and dry runs, budgets, prices and token tallies."""
