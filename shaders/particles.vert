#version 330 core
// Particles: positions and colours come straight from the buffers CL just released.
layout(location = 0) in vec4 position;
layout(location = 1) in vec4 color;
uniform mat4 mvp;
// flat: a point has one vertex, so the colour is the same as a smooth one (tests/scenes/test_particles.py
// compares the picture with a numpy rasterization), and llvmpipe shades it as a constant instead of
// interpolating it per pixel: 0.6 ms less rasterization a frame for the fountain's 100,000 points
// (bench/results/README.md, sixteenth session)
flat out vec4 v_color;
void main() {
    gl_Position = mvp * vec4(position.xyz, 1.0);
    v_color = color;
}
