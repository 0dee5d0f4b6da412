#version 330 core
// Particles as round, smooth points (--round-points): gl_PointCoord runs 0..1 across the point
// sprite; fragments outside the unit disc are discarded and the last quarter of the radius fades
// out, so the disc's edge is antialiased by blending (alpha = remaining life x edge).
flat in vec4 v_color;  // as particles.vert writes it
out vec4 frag_color;
void main() {
    vec2 d = gl_PointCoord * 2.0 - 1.0;
    float r = length(d);
    if (r > 1.0) discard;
    float edge = 1.0 - smoothstep(0.75, 1.0, r);
    frag_color = vec4(v_color.rgb, v_color.a * edge);
}
