"""One router per subject; each route is a few lines over a service or a read."""
