// Planar YUV 4:2:0 (NV12 / P010) -> RGBA8, one work-item per 2x2 block (one chroma sample).
// Planes as ../shared/spec/cl_amd_planar_yuv.txt (version 1.0) gives them: Y CL_R (W x H), UV CL_RG with R = U,
// G = V (W/2 x H/2), CL_UNSIGNED_INT8 (NV12) or CL_UNSIGNED_INT16 (P010: sample = word >> 6).
// Built with -DGLSHARE_UV_PAIRS where the device has no CL_RG (PoCL 3.1): UV is then CL_R,
// W x H/2, U at even x and V at odd x (app/cl/planar.py).
// yuv420_to_rgba_buffer does the same on pitched buffers of GLSHARE_WORD (uchar or ushort) for
// textures whose CL side is a buffer (external_memory without cl_khr_image2d_from_buffer).
// Conversion (app/yuv/formats.py holds the float64 reference):
//   Y' = (Y - y_off) / y_scale, Cb = (U - c_off) / c_scale, Cr = (V - c_off) / c_scale
//   R = Y' + 2(1 - Kr) Cr, B = Y' + 2(1 - Kb) Cb, G = (Y' - Kr R - Kb B) / Kg
//   clipped to [0, 1], rounded to the nearest 8-bit value (floor(255 x + 0.5)).
#ifndef GLSHARE_WORD
#define GLSHARE_WORD uchar
#endif

// RGB in 0..255 (whole numbers) of one pixel: its Y code and its block's chroma (cb, cr).
inline float4 yuv_rgb255(const uint y_code, const float cb, const float cr, const float kr, const float kb,
                         const float y_off, const float y_scale)
{
    const float kg = 1.0f - kr - kb;
    const float y = ((float)y_code - y_off) / y_scale;
    const float r = y + 2.0f * (1.0f - kr) * cr;
    const float b = y + 2.0f * (1.0f - kb) * cb;
    const float g = (y - kr * r - kb * b) / kg;
    return floor(clamp((float4)(r, g, b, 1.0f), 0.0f, 1.0f) * 255.0f + 0.5f);
}

__kernel void yuv420_to_rgba(__read_only image2d_t y_plane, __read_only image2d_t uv_plane,
                             __write_only image2d_t out, const uint shift, const float kr, const float kb,
                             const float y_off, const float y_scale, const float c_off, const float c_scale)
{
    const int bx = get_global_id(0);
    const int by = get_global_id(1);
    if (2 * bx >= get_image_width(out) || 2 * by >= get_image_height(out)) return;
#ifdef GLSHARE_UV_PAIRS
    const float u = (float)(read_imageui(uv_plane, (int2)(2 * bx, by)).x >> shift);
    const float v = (float)(read_imageui(uv_plane, (int2)(2 * bx + 1, by)).x >> shift);
#else
    const uint4 c = read_imageui(uv_plane, (int2)(bx, by));
    const float u = (float)(c.x >> shift);
    const float v = (float)(c.y >> shift);
#endif
    const float cb = (u - c_off) / c_scale;
    const float cr = (v - c_off) / c_scale;
    for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
            const int2 p = (int2)(2 * bx + dx, 2 * by + dy);
            const uint y_code = read_imageui(y_plane, p).x >> shift;
            // whole numbers / 255: CL_UNORM_INT8 stores exactly that code
            write_imagef(out, p, yuv_rgb255(y_code, cb, cr, kr, kb, y_off, y_scale) / 255.0f);
        }
    }
}

// Pitches in elements: words for the planes, pixels for out.
__kernel void yuv420_to_rgba_buffer(__global const GLSHARE_WORD* y_plane, const int y_pitch,
                                    __global const GLSHARE_WORD* uv_plane, const int uv_pitch,
                                    __global uchar4* out, const int out_pitch, const int w, const int h,
                                    const uint shift, const float kr, const float kb, const float y_off,
                                    const float y_scale, const float c_off, const float c_scale)
{
    const int bx = get_global_id(0);
    const int by = get_global_id(1);
    if (2 * bx >= w || 2 * by >= h) return;
    const float cb = ((float)(uv_plane[by * uv_pitch + 2 * bx] >> shift) - c_off) / c_scale;
    const float cr = ((float)(uv_plane[by * uv_pitch + 2 * bx + 1] >> shift) - c_off) / c_scale;
    for (int dy = 0; dy < 2; ++dy) {
        for (int dx = 0; dx < 2; ++dx) {
            const int x = 2 * bx + dx;
            const int y = 2 * by + dy;
            const uint y_code = (uint)y_plane[y * y_pitch + x] >> shift;
            out[y * out_pitch + x] = convert_uchar4(yuv_rgb255(y_code, cb, cr, kr, kb, y_off, y_scale));
        }
    }
}
