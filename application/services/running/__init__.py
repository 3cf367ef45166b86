"""The runner's legs: starting due occurrences, dispatching due steps to their modules, and
the loop that paces them with the cleanup leg."""
