"""The admin HTTP API: FastAPI routes over the composition root, and the schemas they answer."""
