"""runledger: remembers everything an automated game-event run changes, and gives it all back.

The distribution installs this one package; its sub-packages live in the project's top-level
folders (``domain/``, ``projections/``, ``application/``), mapped here by ``pyproject.toml``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("runledger")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0.0.0+unknown"
