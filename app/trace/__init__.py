"""Timing figures, the JSON report, screenshots and the Chrome/Perfetto trace."""
