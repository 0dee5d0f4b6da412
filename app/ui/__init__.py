"""Dear ImGui (imgui-bundle, ImPlot) drawn over the scene from a state snapshot."""
from app.window import layout  # noqa: F401 - the window's layout, read by app/ui/panel.py as app.ui.layout
