"""The drills' machinery, shared by a script and its test: runner processes with a module of
their own (``runner_proc``) or the built-in ones (``world_audit_runner``), and the checks that
hold the world against the ledger. ``scripts/chaos_drill.py`` and
``tests/application/test_crash_walks.py`` share ``crash_walks`` (the runner processes, the specs,
the reads) and ``world_model`` (the check); ``scripts/world_audit.py`` and
``tests/application/test_world_audit.py`` share ``world_audit_drill`` and its ``world_audit_*``.
``scripts/bench_runner.py`` runs ``runner_proc`` too."""
