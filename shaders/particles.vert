#version 330 core
// Particles: positions and colours come straight from the buffers CL just released.
layout(location = 0) in vec4 position;
layout(location = 1) in vec4 color;
uniform mat4 mvp;
out vec4 v_color;
void main() {
    gl_Position = mvp * vec4(position.xyz, 1.0);
    v_color = color;
}
