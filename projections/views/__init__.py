"""The read models, one module per view; `base` holds what they share."""
