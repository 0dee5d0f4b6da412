"""Full-window quads that show the image CL wrote: ``TexturedQuad`` samples a 2D texture
(shaders/quad.vert + quad.frag), ``BufferTextureQuad`` reads a buffer texture (quad.vert +
quad_buffer.frag) and picks the texel the 2D path picks with nearest filtering; ``ImageQuad``
draws whichever of the two a backend made. Texture row 0 is drawn at the top, so a screenshot
lines up with the image."""
from __future__ import annotations

from typing import ClassVar

from app.gl import api as GL
from app.gl.objects import GlBufferTexture, GlVertexArray
from app.gl.raw import gl_function
from app.gl.shaders import Program


class _Quad:
    fragment: ClassVar[str]

    def __init__(self, label: str, owner: str = "") -> None:
        self.label = label
        self.program = Program(label, "quad.vert", self.fragment, owner=owner)
        self.vao = GlVertexArray(f"{label}.vao", owner=owner)  # no attributes: corners from gl_VertexID
        self.program.use()
        GL.glUniform1i(self.program.uniform("image"), 0)  # the sampler reads texture unit 0, always
        GL.glUseProgram(0)
        # the draw's calls, resolved once (app/gl/raw.py): the render phase checks GL errors once
        self._gl = {name: gl_function(name) for name in (
            "glUseProgram", "glActiveTexture", "glBindTexture", "glBindVertexArray",
            "glDrawArrays", "glUniform2i", "glUniform1i")}

    def _draw(self, target: int, texture: int, uniforms=None) -> None:
        """Bind ``texture`` to unit 0 at ``target`` and draw the quad. No clear before it: the quad
        covers every pixel of the viewport and writes each one (no discard, no blending), so a clear
        would be overwritten; the bars around an image kept to its size are cleared by
        ``Session.render_target``."""
        g = self._gl
        g["glUseProgram"](self.program.name)
        g["glActiveTexture"](GL.GL_TEXTURE0)
        g["glBindTexture"](target, texture)
        if uniforms is not None:
            uniforms()
        g["glBindVertexArray"](self.vao.name)
        g["glDrawArrays"](GL.GL_TRIANGLE_STRIP, 0, 4)
        # the vertex array is unbound (a buffer bound to GL_ELEMENT_ARRAY_BUFFER later would change
        # it); the program and the texture stay bound: whoever draws next binds its own (the panel's
        # renderer saves and restores them), and every frame on a GPU the two calls cost more than
        # they guard
        g["glBindVertexArray"](0)

    def release(self) -> None:
        """Idempotent."""
        self.program.release()
        self.vao.release()


class TexturedQuad(_Quad):
    fragment = "quad.frag"

    def draw(self, texture: int) -> None:
        """Draw 2D texture ``texture`` over the whole viewport."""
        self._draw(GL.GL_TEXTURE_2D, texture)


class BufferTextureQuad(_Quad):
    """The quad for an image kept in a buffer: texel (x, y) is fetched at y * row_length + x.

    For normalized and float formats (a ``samplerBuffer``); integer formats would need a
    ``usamplerBuffer`` shader, and no glshare scene draws one.
    """

    fragment = "quad_buffer.frag"

    _uniforms_set: tuple = ()  # (program, width, height, row length) the program's uniforms hold

    def draw(self, texture: GlBufferTexture) -> None:
        """Draw buffer texture ``texture`` over the whole viewport. The uniforms
        (the image's size and row length) are set where they changed: a program keeps their values,
        and copies of one image in flight share them."""
        key = (self.program.name, texture.width, texture.height, texture.row_length)
        if key == self._uniforms_set:
            self._draw(GL.GL_TEXTURE_BUFFER, texture.name)
            return

        def uniforms() -> None:
            self._gl["glUniform2i"](self.program.uniform("size"), texture.width, texture.height)
            self._gl["glUniform1i"](self.program.uniform("row_length"), texture.row_length)

        self._draw(GL.GL_TEXTURE_BUFFER, texture.name, uniforms)
        self._uniforms_set = key


class ImageQuad:
    """Draws a shared texture whichever GL object its backend made (``SharedObject.gl``): a 2D
    texture or a buffer texture; each quad's program is built the first time it is needed."""

    def __init__(self, label: str, owner: str = "") -> None:
        self.label, self.owner = label, owner
        self._quads: dict[type, _Quad] = {}

    def draw(self, texture) -> None:
        """Draw ``texture`` (a GlTexture or GlBufferTexture) over the viewport."""
        buffer = isinstance(texture, GlBufferTexture)
        kind = BufferTextureQuad if buffer else TexturedQuad
        quad = self._quads.get(kind)
        if quad is None:
            quad = self._quads[kind] = kind(self.label, owner=self.owner)
        quad.draw(texture if buffer else texture.name)

    @property
    def kinds(self) -> list[str]:
        return [k.__name__ for k in self._quads]

    def release(self) -> None:
        """Idempotent."""
        quads, self._quads = self._quads, {}
        for quad in quads.values():
            quad.release()
