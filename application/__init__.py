"""Use cases over the ledger: recording, giving back, reconciling, and the composition root."""
