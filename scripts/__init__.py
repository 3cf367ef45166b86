"""Benchmarks and drills: scripts, not tests. Each runs from the project root as
``python -m scripts.NAME`` (``--help`` for its options); they share helpers inside this package
(``scripts.pg``, ``scripts.drills``) and import nothing of ``tests``. The tests may import these."""
