"""Dear ImGui (imgui-bundle, ImPlot) drawn over the scene from a state snapshot."""
