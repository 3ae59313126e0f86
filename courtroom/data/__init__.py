"""Data: the task registry, the catalog of built-in tasks, generators and loaders (local files, the Hub)."""
