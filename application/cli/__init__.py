"""The terminal interface: the `runledger` command and how things look in a terminal."""
