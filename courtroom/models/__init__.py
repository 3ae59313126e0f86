"""Language models: the role -> LM map, mixed panels, the LM cache, the adapter, usage metering and the embedded model (local/)."""
