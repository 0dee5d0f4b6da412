#version 330 core
// The post-process scene's 3-D pass: lit solids with per-vertex colours (a floor, cubes).
layout(location = 0) in vec3 position;
layout(location = 1) in vec3 normal;
layout(location = 2) in vec3 color;
uniform mat4 mvp;     // projection * view * model
uniform mat4 model;   // model -> world (rotations, uniform scale and translation only)
uniform vec3 tint;    // multiplies the vertex colour
out vec3 v_normal;
out vec3 v_color;
out vec3 v_world;
void main() {
    vec4 world = model * vec4(position, 1.0);
    v_world = world.xyz;
    v_normal = mat3(model) * normal;  // no shear or non-uniform scale: no inverse-transpose needed
    v_color = color * tint;
    gl_Position = mvp * vec4(position, 1.0);
}
