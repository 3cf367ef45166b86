"""The suite writes bytecode even where PYTHONDONTWRITEBYTECODE is set (this machine's shells
set it). Each of the four workers imports every test module, rewritten for pytest's asserts, and
the tests start ~150 Python processes (serve, runners, CLI commands, drills) that import the
package: without bytecode on disk every one of them compiled it all again. Collecting the suite
took 10.9 s of CPU a worker without, 4.0 s with (scripts/MEASUREMENTS.md, "The routes built
once"). Set here, the package the conftest belongs to, so it holds before any test module or
runledger module is imported; __pycache__ is ignored by git."""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
