"""The use cases: short services the CLI, the runner and the tests all call."""
