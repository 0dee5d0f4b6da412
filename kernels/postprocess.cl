// Post-process filters, RGBA8 in, RGBA8 out, one work-item per output pixel (global size w x h):
// the CL half of a frame in which GL renders, CL filters what GL rendered, and GL shows the result.
//
// Images: CL_RGBA / CL_UNORM_INT8, the source read_only, the destination write_only, both w x h.
// Pitched buffers (textures whose CL side is a buffer, as julia_buffer in julia.cl): uchar4 texels,
// row pitch given in pixels, w x h of them used.
//
// Every texel is handled as whole codes 0..255: read_imagef of CL_UNORM_INT8 gives c / 255, and
// rounding x * 255 to the nearest integer gives c back exactly (the OpenCL C conversion rules for
// normalized integer channel types allow far less than half a code of error); write_imagef of
// e / 255 stores e (float -> CL_UNORM_INT8 rounds x * 255 to nearest even). Between the two, the
// arithmetic is integer only, so app/postprocess/reference.py matches it exactly.
//
// Edges: clamp to edge. A neighbour outside the image is the nearest edge pixel (the sampler's
// CLK_ADDRESS_CLAMP_TO_EDGE for images, clamped coordinates for buffers).
//
// sobel: edge magnitude of the luma.
//   L = (77 R + 150 G + 29 B + 128) >> 8            (BT.601 weights in 1/256, white stays 255)
//   Gx = [-1 0 +1; -2 0 +2; -1 0 +1] * L,  Gy = [-1 -2 -1; 0 0 0; +1 +2 +1] * L  (rows top to bottom)
//   E = min(255, floor(sqrt(Gx^2 + Gy^2)))             (integer square root, exact)
//   out = (E, E, E, 255)
// box_blur: box filter of radius r >= 0 on all four channels (alpha too).
//   out = (sum of the (2r+1) x (2r+1) texels around the pixel + n / 2) / n,  n = (2r+1)^2
//   in integers: rounded to nearest; n is odd, so there are no ties. r = 0 copies the image.

__constant sampler_t CLAMP = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;

inline uint4 texel_image(__read_only image2d_t src, const int x, const int y)
{
    return convert_uint4_sat_rte(read_imagef(src, CLAMP, (int2)(x, y)) * 255.0f);
}

inline uint4 texel_buffer(__global const uchar4* src, const int pitch, const int w, const int h, const int x,
                          const int y)
{
    return convert_uint4(src[clamp(y, 0, h - 1) * pitch + clamp(x, 0, w - 1)]);
}

inline uint luma(const uint4 c)
{
    return (77u * c.x + 150u * c.y + 29u * c.z + 128u) >> 8;
}

// floor(sqrt(m)) exactly: the float estimate (sqrt is not correctly rounded in OpenCL C) corrected
inline uint isqrt_floor(const uint m)
{
    uint r = (uint)sqrt((float)m);
    while (r * r > m) --r;
    while ((r + 1u) * (r + 1u) <= m) ++r;
    return r;
}

// l: the 3x3 lumas around the pixel, row by row from the top
inline uint4 sobel_texel(const int l[9])
{
    const int gx = (l[2] + 2 * l[5] + l[8]) - (l[0] + 2 * l[3] + l[6]);
    const int gy = (l[6] + 2 * l[7] + l[8]) - (l[0] + 2 * l[1] + l[2]);
    const uint e = min(255u, isqrt_floor((uint)(gx * gx + gy * gy)));
    return (uint4)(e, e, e, 255u);
}

inline uint4 box_texel(const uint4 sum, const int radius)
{
    const uint n = (uint)((2 * radius + 1) * (2 * radius + 1));
    return (sum + n / 2u) / n;
}

__kernel void sobel(__read_only image2d_t src, __write_only image2d_t dst)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= get_image_width(dst) || y >= get_image_height(dst)) return;
    int l[9];
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            l[(dy + 1) * 3 + dx + 1] = (int)luma(texel_image(src, x + dx, y + dy));
    write_imagef(dst, (int2)(x, y), convert_float4(sobel_texel(l)) / 255.0f);
}

__kernel void box_blur(__read_only image2d_t src, __write_only image2d_t dst, const int radius)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= get_image_width(dst) || y >= get_image_height(dst)) return;
    uint4 sum = (uint4)(0u);
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx)
            sum += texel_image(src, x + dx, y + dy);
    write_imagef(dst, (int2)(x, y), convert_float4(box_texel(sum, radius)) / 255.0f);
}

__kernel void sobel_buffer(__global const uchar4* src, const int src_pitch, __global uchar4* dst,
                           const int dst_pitch, const int w, const int h)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h) return;
    int l[9];
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            l[(dy + 1) * 3 + dx + 1] = (int)luma(texel_buffer(src, src_pitch, w, h, x + dx, y + dy));
    dst[y * dst_pitch + x] = convert_uchar4(sobel_texel(l));
}

__kernel void box_blur_buffer(__global const uchar4* src, const int src_pitch, __global uchar4* dst,
                              const int dst_pitch, const int w, const int h, const int radius)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= w || y >= h) return;
    uint4 sum = (uint4)(0u);
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx)
            sum += texel_buffer(src, src_pitch, w, h, x + dx, y + dy);
    dst[y * dst_pitch + x] = convert_uchar4(box_texel(sum, radius));
}
