"""The sweep: how ended runs' entries are claimed in groups, given back through their
modules, and what each answer makes of them. A pass works runs in lanes, at a pace; the
cleanup service and the runner drive it."""
