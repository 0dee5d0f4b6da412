"""Image filters CL runs on what GL rendered (the post-process scene): the launcher and numpy references."""
