"""Checks of every acquire and release against the spec, and the ownership state of shared objects."""
