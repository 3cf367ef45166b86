"""The event store: opening it on SQLite or PostgreSQL, and its JSON transcoding."""
