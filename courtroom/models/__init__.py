"""Language models: the role -> LM map, mixed panels, the LM cache, the adapter, usage metering, the embedded model."""
