"""What each measured span is called in the report and the trace: the names live in app/legend.py,
below every layer that draws or writes them (the panel reads them too)."""
from app.legend import CPU_NAMES, DEVICE_NAMES, cpu_name, device_name

__all__ = ["CPU_NAMES", "DEVICE_NAMES", "cpu_name", "device_name"]
