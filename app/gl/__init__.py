"""GL objects glshare shares and draws with: buffers, textures, programs, each labelled and counted."""
