"""Sharing backends: one module each, behind ``SharingBackend``; ``registry`` probes and says why."""
