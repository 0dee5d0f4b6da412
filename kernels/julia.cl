// The animated Julia set of ../shared/WORKLOADS.md (as in SimpleOpenCLSamples' juliagl): at most
// 16 iterations per pixel, colour (r, sqrt(r), 1, 1) into an RGBA8 image.
//
// Each work-item computes JULIA_LANES horizontally adjacent pixels of one row as vectors: the
// iteration of every pixel is data-dependent, so a compiler that vectorizes across work-items
// (PoCL's) cannot vectorize it, while explicit vectors always run it as SIMD. A lane whose orbit
// escaped stops changing (select) and stops counting; the loop ends when every lane escaped.
// Every lane does exactly the arithmetic of one pixel of the scalar formulation, in the same
// order and the same expressions, so the texels are bit for bit those of one work-item per pixel.
// Launch: global size (ceil(width / JULIA_LANES), height); lanes past the width write nothing.
//
// julia writes an image2d_t (write_imagef rounds to CL_UNORM_INT8); julia_buffer writes the same
// texels into a pitched buffer with write_imagef's rounding (round to nearest even, saturated),
// for textures whose CL side is a buffer (external_memory without cl_khr_image2d_from_buffer,
// host_mapped on a CPU device).
#define JULIA_LANES 8
#define floatL float8
#define intL int8
#define LANE_INDEX ((int8)(0, 1, 2, 3, 4, 5, 6, 7))

// The iteration counts of pixels x0 .. x0 + JULIA_LANES - 1 of row y of a w x h image.
inline intL julia_counts(const int x0, const int y, const int w, const int h, const float cr, const float ci)
{
    floatL a = convert_float8(x0 + LANE_INDEX) * 3.0f / (float)w - 1.5f;
    floatL b = (floatL)((float)y * 3.0f / (float)h - 1.5f);
    intL n = (intL)(0);
    intL alive = (intL)(-1);  // -1: not escaped yet (vector comparisons give -1 for true)
    for (int i = 0; i < 16; ++i) {
        const floatL a2 = a * a;
        const floatL b2 = b * b;
        alive &= a2 + b2 < 4.0f;
        if (!any(alive)) break;
        n -= alive;
        const floatL t = a2 - b2 + cr;
        b = select(b, 2.0f * a * b + ci, alive);
        a = select(a, t, alive);
    }
    return n;
}

__kernel void julia(__write_only image2d_t out, const float cr, const float ci)
{
    const int x0 = get_global_id(0) * JULIA_LANES;
    const int y = get_global_id(1);
    const int w = get_image_width(out);
    const intL n = julia_counts(x0, y, w, get_image_height(out), cr, ci);
    const floatL r = clamp(convert_float8(n) / 16.0f, 0.0f, 1.0f);
    const floatL s = sqrt(r);
    for (int k = 0; k < JULIA_LANES && x0 + k < w; ++k)
        write_imagef(out, (int2)(x0 + k, y), (float4)(r[k], s[k], 1.0f, 1.0f));
}

__kernel void julia_buffer(__global uchar4* out, const int w, const int h, const int row_pixels,
                           const float cr, const float ci)
{
    const int x0 = get_global_id(0) * JULIA_LANES;
    const int y = get_global_id(1);
    const intL n = julia_counts(x0, y, w, h, cr, ci);
    const floatL r = clamp(convert_float8(n) / 16.0f, 0.0f, 1.0f);
    const uchar8 red = convert_uchar8_sat_rte(r * 255.0f);
    const uchar8 green = convert_uchar8_sat_rte(sqrt(r) * 255.0f);
    __global uchar4* row = out + y * row_pixels + x0;
    if (x0 + JULIA_LANES <= w) {  // a whole run of texels: two 16-byte stores
        __global uchar* bytes = (__global uchar*)row;
        vstore16((uchar16)(red.s0, green.s0, 255, 255, red.s1, green.s1, 255, 255,
                           red.s2, green.s2, 255, 255, red.s3, green.s3, 255, 255), 0, bytes);
        vstore16((uchar16)(red.s4, green.s4, 255, 255, red.s5, green.s5, 255, 255,
                           red.s6, green.s6, 255, 255, red.s7, green.s7, 255, 255), 1, bytes);
    } else {
        for (int k = 0; x0 + k < w; ++k)
            row[k] = (uchar4)(red[k], green[k], 255, 255);
    }
}
