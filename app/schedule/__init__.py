"""The frame: acquire -> compute -> release -> render, one FrameRecord each."""
