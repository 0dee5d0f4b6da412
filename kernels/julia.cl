// The animated Julia set of ../shared/WORKLOADS.md (as in SimpleOpenCLSamples' juliagl): at most
// 16 iterations per pixel, colour (r, sqrt(r), 1, 1) into an RGBA8 image.
//
// Each work-item computes JULIA_LANES horizontally adjacent pixels of one row (a build option: 1,
// 4, 8 or 16; app/scenes/image.py picks it per device). With several lanes the iteration runs as
// vectors: the iteration count of each pixel is data-dependent, so a compiler that vectorizes
// across work-items (PoCL's) cannot vectorize this loop, while explicit vectors always run it as
// SIMD. A lane whose orbit escaped stops changing (select) and stops counting; the loop ends when
// every lane escaped. Every lane does exactly the arithmetic of one pixel of the scalar
// formulation, in the same order and the same expressions, so the texels are bit for bit those of
// one work-item per pixel. Launch: global size (ceil(width / JULIA_LANES), height); lanes past the
// width write nothing.
//
// julia writes an image2d_t (write_imagef rounds to CL_UNORM_INT8); julia_buffer writes the same
// texels into a pitched buffer with write_imagef's rounding (round to nearest even, saturated),
// for textures whose CL side is a buffer (external_memory without cl_khr_image2d_from_buffer,
// host_mapped on a CPU device).
#ifndef JULIA_LANES
#define JULIA_LANES 8
#endif
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)

#if JULIA_LANES == 1
#define floatL float
#define intL int
#define ucharL uchar
#define LANE(v, k) (v)
#define LANE_INDEX 0
#define CONVERT_FLOAT(v) ((float)(v))
#define CONVERT_UCHAR_SAT_RTE(v) convert_uchar_sat_rte(v)
#define ALL_LANES 1  // scalar comparisons give 1 for true
#define ANY(mask) (mask)
#define COUNT(n, mask) ((n) += (mask))
#else
#define floatL XCAT(float, JULIA_LANES)
#define intL XCAT(int, JULIA_LANES)
#define ucharL XCAT(uchar, JULIA_LANES)
#define LANE(v, k) ((v)[k])
#if JULIA_LANES == 4
#define LANE_INDEX ((int4)(0, 1, 2, 3))
#elif JULIA_LANES == 8
#define LANE_INDEX ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#elif JULIA_LANES == 16
#define LANE_INDEX ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#else
#error "JULIA_LANES must be 1, 4, 8 or 16"
#endif
#define CONVERT_FLOAT(v) XCAT(convert_float, JULIA_LANES)(v)
#define CONVERT_UCHAR_SAT_RTE(v) XCAT(XCAT(convert_uchar, JULIA_LANES), _sat_rte)(v)
#define ALL_LANES (-1)  // vector comparisons give -1 (all bits set) for true
#define ANY(mask) any(mask)
#define COUNT(n, mask) ((n) -= (mask))
#endif

// The iteration counts of pixels x0 .. x0 + JULIA_LANES - 1 of row y of a w x h image.
inline intL julia_counts(const int x0, const int y, const int w, const int h, const float cr, const float ci)
{
    floatL a = CONVERT_FLOAT(x0 + LANE_INDEX) * 3.0f / (float)w - 1.5f;
    floatL b = (floatL)((float)y * 3.0f / (float)h - 1.5f);
    intL n = (intL)(0);
    intL alive = (intL)(ALL_LANES);  // not escaped yet
    for (int i = 0; i < 16; ++i) {
        const floatL a2 = a * a;
        const floatL b2 = b * b;
        alive &= a2 + b2 < 4.0f;
        if (!ANY(alive)) break;
        COUNT(n, alive);  // one more iteration where still alive
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
    const int h = get_image_height(out);
    if (x0 >= w || y >= h) return;  // a --local-size rounds the launch up: the extra work-items do nothing
    const intL n = julia_counts(x0, y, w, h, cr, ci);
    const floatL r = clamp(CONVERT_FLOAT(n) / 16.0f, 0.0f, 1.0f);
    const floatL s = sqrt(r);
    for (int k = 0; k < JULIA_LANES && x0 + k < w; ++k)
        write_imagef(out, (int2)(x0 + k, y), (float4)(LANE(r, k), LANE(s, k), 1.0f, 1.0f));
}

__kernel void julia_buffer(__global uchar4* out, const int w, const int h, const int row_pixels,
                           const float cr, const float ci)
{
    const int x0 = get_global_id(0) * JULIA_LANES;
    const int y = get_global_id(1);
    if (x0 >= w || y >= h) return;  // a --local-size rounds the launch up: the extra work-items do nothing
    const intL n = julia_counts(x0, y, w, h, cr, ci);
    const floatL r = clamp(CONVERT_FLOAT(n) / 16.0f, 0.0f, 1.0f);
    const ucharL red = CONVERT_UCHAR_SAT_RTE(r * 255.0f);
    const ucharL green = CONVERT_UCHAR_SAT_RTE(sqrt(r) * 255.0f);
    __global uchar4* row = out + y * row_pixels + x0;
    for (int k = 0; k < JULIA_LANES && x0 + k < w; ++k)
        row[k] = (uchar4)(LANE(red, k), LANE(green, k), 255, 255);
}
