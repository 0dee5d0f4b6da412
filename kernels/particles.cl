// The particle fountain of ../shared/WORKLOADS.md (as in pyopencl's gl_particle_animation example).
// position and color are shared with GL; velocity and the start state live on CL only.
__kernel void particle_fountain(__global float4* position,
                                __global float4* color,
                                __global float4* velocity,
                                __global const float4* start_position,
                                __global const float4* start_velocity,
                                const float dt,
                                const uint count)
{
    const uint i = get_global_id(0);
    if (i >= count) return;
    float4 p = position[i];
    float4 v = velocity[i];
    float life = v.w - dt;
    if (life <= 0.0f) {
        p = start_position[i];
        v = start_velocity[i];
        life = 1.0f;
    }
    v.z -= 9.8f * dt;
    p.xyz += v.xyz * dt;
    v.w = life;
    position[i] = p;
    velocity[i] = v;
    float4 c = color[i];
    c.w = life;
    color[i] = c;
}
