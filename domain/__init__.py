"""The ledger's aggregates: what a run changed, and what became of each change."""
