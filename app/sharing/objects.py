"""A shared object: a GL object and the CL memory object kernels use for it, with its hand-over state."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from app.gl.objects import GlBuffer


@dataclass(eq=False)
class SharedObject:
    """A GL object and the CL memory object kernels use for it, with the hand-over state."""

    label: str
    gl: Any  # GlBuffer, GlTexture or GlBufferTexture
    mem: cl.MemoryObjectHolder  # what kernels take
    access: str
    backend: str
    live_kind: str = "cl_buffer"  # its name in the live-object counters
    handover: cl.MemoryObjectHolder | None = None  # what acquire/release name, when not ``mem``
    storage: GlBuffer | None = None  # the GL buffer holding a texture's texels (imported memory)
    row_pitch: int = 0  # bytes per row when a texture's texels lie in a buffer
    display_path: str = ""  # how GL shows a texture ("2D texture", "buffer texture", "copy into texture: why")
    owned: list = field(default_factory=list)  # GL objects released after ``gl`` (memory objects, storage)
    gl_generation: int = 0  # bumped whenever GL writes the data
    synced_generation: int = -1  # the GL generation CL's copy holds (copying backends)

    @property
    def is_image(self) -> bool:
        """Whether kernels see a texture as an image (else as a pitched buffer of texels)."""
        return isinstance(self.mem, cl.Image)

    @property
    def kind(self) -> str:
        return self.gl.kind

    @property
    def nbytes(self) -> int:
        return self.gl.nbytes

    @property
    def pitch(self) -> int:
        """Bytes from one row of a texture's texels to the next, as CL sees them."""
        return self.row_pitch or self.gl.width * self.gl.bytes_per_pixel

    @property
    def handover_mem(self) -> cl.MemoryObjectHolder:
        return self.mem if self.handover is None else self.handover

    @property
    def gl_memory(self) -> int:
        """The GL buffer or texture name that holds the data (what GL semaphore operations name)."""
        return self.storage.name if self.storage is not None else self.gl.name

    def gl_wrote(self) -> None:
        """GL changed the data (upload, GL pass): a copying backend must bring it to CL at acquire."""
        self.gl_generation += 1

    def __repr__(self) -> str:
        return f"<SharedObject {self.label!r} {self.kind} via {self.backend}>"
