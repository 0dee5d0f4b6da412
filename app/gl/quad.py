"""A full-window textured quad (shaders/quad.vert + quad.frag): how the image and yuv scenes show
the texture CL wrote. Texture row 0 is drawn at the top, so a screenshot lines up with the image."""
from __future__ import annotations

from OpenGL import GL

from app.gl.objects import GlVertexArray
from app.gl.shaders import Program


class TexturedQuad:
    def __init__(self, label: str, owner: str = "") -> None:
        self.label = label
        self.program = Program(label, "quad.vert", "quad.frag", owner=owner)
        self.vao = GlVertexArray(f"{label}.vao", owner=owner)  # no attributes: corners from gl_VertexID

    def draw(self, texture: int) -> None:
        """Clear to black and draw ``texture`` over the whole viewport."""
        GL.glClearColor(0, 0, 0, 1)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        self.program.use()
        GL.glActiveTexture(GL.GL_TEXTURE0)
        GL.glBindTexture(GL.GL_TEXTURE_2D, texture)
        GL.glUniform1i(self.program.uniform("image"), 0)
        GL.glBindVertexArray(self.vao.name)
        GL.glDrawArrays(GL.GL_TRIANGLE_STRIP, 0, 4)
        GL.glBindVertexArray(0)
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        GL.glUseProgram(0)

    def release(self) -> None:
        """Idempotent."""
        self.program.release()
        self.vao.release()
