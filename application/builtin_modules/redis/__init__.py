"""The redis module: a live Redis whose keys are creatures and zones."""
