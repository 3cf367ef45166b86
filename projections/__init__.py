"""Read models derived from the ledger's events: resources, runs and the run log."""
