"""The sandbox module: a small, deterministic game world with fault knobs."""
