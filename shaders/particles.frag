#version 330 core
flat in vec4 v_color;  // as particles.vert writes it
out vec4 frag_color;
void main() {
    frag_color = v_color;  // alpha = remaining life: blended by color.w
}
