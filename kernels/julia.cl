// The animated Julia set of ../shared/WORKLOADS.md (as in SimpleOpenCLSamples' juliagl):
// one work-item per pixel, at most 16 iterations, colour (r, sqrt(r), 1, 1) into an RGBA8 image.
// Where the texture's CL side is a buffer (external_memory without cl_khr_image2d_from_buffer),
// julia_buffer writes the same texels with the rounding of write_imagef to CL_UNORM_INT8
// (round to nearest even, saturated).
inline float4 julia_color(const int x, const int y, const int w, const int h, const float cr, const float ci)
{
    float a = (float)x * 3.0f / (float)w - 1.5f;
    float b = (float)y * 3.0f / (float)h - 1.5f;
    int i = 0;
    for (; i < 16; ++i) {
        const float a2 = a * a;
        const float b2 = b * b;
        if (a2 + b2 >= 4.0f) break;
        const float t = a2 - b2 + cr;
        b = 2.0f * a * b + ci;
        a = t;
    }
    const float r = clamp((float)i / 16.0f, 0.0f, 1.0f);
    return (float4)(r, sqrt(r), 1.0f, 1.0f);
}

__kernel void julia(__write_only image2d_t out, const float cr, const float ci)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int w = get_image_width(out);
    const int h = get_image_height(out);
    if (x >= w || y >= h) return;
    write_imagef(out, (int2)(x, y), julia_color(x, y, w, h, cr, ci));
}

__kernel void julia_buffer(__global uchar4* out, const int w, const int h, const int row_pixels,
                           const float cr, const float ci)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h) return;
    out[y * row_pixels + x] = convert_uchar4_sat_rte(julia_color(x, y, w, h, cr, ci) * 255.0f);
}
