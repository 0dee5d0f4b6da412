#version 330 core
// The textured quad's fragment shader for an image kept in a buffer (a buffer texture, GL 3.1;
// OpenGL 4.6 core, section 8.9): no sampler state, so the texel is picked by hand as GL_NEAREST
// with GL_CLAMP_TO_EDGE would pick it (section 8.14.2: i = floor(u * width), clamped), and
// fetched at y * row_length + x. Same uv as quad.frag (quad.vert): row 0 at the top.
in vec2 uv;
uniform samplerBuffer image;
uniform ivec2 size;       // the image's width and height in texels
uniform int row_length;   // texels from one row to the next: pitch / bytes per texel
out vec4 frag_color;
void main() {
    ivec2 texel = clamp(ivec2(floor(uv * vec2(size))), ivec2(0), size - 1);
    frag_color = texelFetch(image, texel.y * row_length + texel.x);
}
