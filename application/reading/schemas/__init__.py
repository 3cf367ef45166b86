"""What the API (and the CLI's --json) answers and accepts: kept apart from domain types."""
