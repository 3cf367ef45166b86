"""runledger: remembers everything an automated game-event run changes, and gives it all back.

The distribution installs this one package; its sub-packages live in the project's top-level
folders (``domain/``, ``projections/``, ``application/``), linked here by symbolic links, so the
checkout, an editable install, a wheel and mypy all see one tree.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("runledger")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0.0.0+unknown"
