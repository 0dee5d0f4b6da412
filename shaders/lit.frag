#version 330 core
// Lambert lighting from one directional light plus ambient; the floor (checker = 1) is a
// checkerboard in world space, so the Sobel filter has edges to find on it too.
in vec3 v_normal;
in vec3 v_color;
in vec3 v_world;
uniform vec3 light_dir;  // towards the light, world space, normalised
uniform int checker;
out vec4 frag_color;
void main() {
    vec3 n = normalize(v_normal);
    float diffuse = max(dot(n, light_dir), 0.0);
    vec3 base = v_color;
    if (checker == 1) {
        float cell = mod(floor(v_world.x * 1.5) + floor(v_world.z * 1.5), 2.0);
        base *= mix(0.55, 1.0, cell);
    }
    frag_color = vec4(base * (0.25 + 0.75 * diffuse), 1.0);
}
