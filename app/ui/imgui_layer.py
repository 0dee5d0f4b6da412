"""The ImGui renderer: imgui-bundle's C++ OpenGL 3 backend, with its GLFW backend in a window.

Headless, the display size and time step are fed by hand, so the same panel code draws into the
FBO. The OpenGL 3 backend saves and restores the GL bindings around its draw. This is the only
module of ``ui/`` that touches GL; panel code draws from a snapshot.
"""
from __future__ import annotations

import time

from imgui_bundle import imgui, implot


class ImGuiLayer:
    def __init__(self, surface) -> None:
        self.surface = surface
        self._ctx = imgui.create_context()
        self._plot_ctx = implot.create_context()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini written into the user's folder
        io.config_flags |= imgui.ConfigFlags_.nav_enable_keyboard.value
        self.windowed = surface.kind == "window"
        if self.windowed:
            imgui.backends.glfw_init_for_opengl(surface.window_address, True)
        imgui.backends.opengl3_init("#version 330")
        self._last = time.perf_counter()
        self._open = True

    def draw(self, build) -> None:
        """One ImGui frame: ``build()`` issues the widgets; then render into the bound framebuffer."""
        if self.windowed:
            imgui.backends.glfw_new_frame()
        else:
            io = imgui.get_io()
            io.display_size = tuple(float(x) for x in self.surface.framebuffer_size)
            now = time.perf_counter()
            io.delta_time = max(now - self._last, 1e-4)
            self._last = now
        imgui.backends.opengl3_new_frame()
        imgui.new_frame()
        try:
            build()
        finally:
            imgui.render()
        imgui.backends.opengl3_render_draw_data(imgui.get_draw_data())

    @property
    def wants_keyboard(self) -> bool:
        return bool(imgui.get_io().want_capture_keyboard)

    def close(self) -> None:
        """Idempotent: GL objects of the renderer first, while the context is current."""
        if not self._open:
            return
        self._open = False
        imgui.backends.opengl3_shutdown()
        if self.windowed:
            imgui.backends.glfw_shutdown()
        implot.destroy_context(self._plot_ctx)
        imgui.destroy_context(self._ctx)
