#version 330 core
// A full-window quad from gl_VertexID; texture row 0 is drawn at the top of the window,
// so a screenshot (top row first) lines up with the image CL wrote (row 0 first).
// Shared by quad.frag (a 2D texture) and quad_buffer.frag (a buffer texture).
out vec2 uv;
void main() {
    vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
    uv = vec2(corner.x, 1.0 - corner.y);
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
