"""Role signatures, one module per framework."""
