"""The module protocol and its host: loading, calling, answers and deadlines."""
