/*
 * vpc_pixels.c -- the pixel work of the VPC: a region of any supported
 * format is read into Y, U, V planes (chroma at the resolution the source
 * stores it), resampled (bilinear or nearest neighbour, pixel centres
 * aligned) plane by plane to the target region's size and chroma resolution,
 * and written in the target format, so a crop without scaling copies the
 * source's chroma samples exactly.  RGB and YUV convert with the
 * full-range BT.601 (JFIF) matrix, the one JPEG uses, so a decoded JPEG
 * converts back to the colours libjpeg gives (docs/simulator.md, "DVPP").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dvpp_internal.h"

/* Y at w x h; U and V at cw x ch (the chroma resolution the planes carry). */
typedef struct {
    uint32_t w, h, cw, ch;
    uint8_t *y, *u, *v;
} planes;

static int planes_alloc(planes *p, uint32_t w, uint32_t h, uint32_t cw, uint32_t ch)
{
    size_t n = (size_t)w * h, c = (size_t)cw * ch;
    p->w = w;
    p->h = h;
    p->cw = cw;
    p->ch = ch;
    p->y = malloc(n + 2 * c ? n + 2 * c : 1);
    p->u = p->y + n;
    p->v = p->u + c;
    return p->y ? 0 : -1;
}

static void planes_free(planes *p)
{
    free(p->y);
    p->y = NULL;
}

static uint8_t clamp_u8(double v)
{
    return v <= 0.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)lrint(v);
}

static void rgb_to_yuv(uint8_t r, uint8_t g, uint8_t b, uint8_t *y, uint8_t *u, uint8_t *v)
{
    *y = clamp_u8(0.299 * r + 0.587 * g + 0.114 * b);
    *u = clamp_u8(-0.168736 * r - 0.331264 * g + 0.5 * b + 128.0);
    *v = clamp_u8(0.5 * r - 0.418688 * g - 0.081312 * b + 128.0);
}

static void yuv_to_rgb(uint8_t y, uint8_t u, uint8_t v, uint8_t *r, uint8_t *g, uint8_t *b)
{
    double cb = u - 128.0, cr = v - 128.0;
    *r = clamp_u8(y + 1.402 * cr);
    *g = clamp_u8(y - 0.344136 * cb - 0.714136 * cr);
    *b = clamp_u8(y + 1.772 * cb);
}

/* Byte positions of R, G, B (and alpha, -1 for none) in a packed RGB pixel. */
static int rgb_layout(uint32_t format, int pos[4])
{
    static const struct {
        uint32_t format;
        int pos[4];
    } layouts[] = {
        {PIXEL_FORMAT_RGB_888, {0, 1, 2, -1}},   {PIXEL_FORMAT_BGR_888, {2, 1, 0, -1}},
        {PIXEL_FORMAT_ARGB_8888, {1, 2, 3, 0}},  {PIXEL_FORMAT_ABGR_8888, {3, 2, 1, 0}},
        {PIXEL_FORMAT_RGBA_8888, {0, 1, 2, 3}},  {PIXEL_FORMAT_BGRA_8888, {2, 1, 0, 3}},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].format == format) {
            memcpy(pos, layouts[i].pos, sizeof layouts[i].pos);
            return 1;
        }
    return 0;
}

/* Byte positions of Y0, U, Y1, V in a packed 4:2:2 pixel pair. */
static int yuv422_layout(uint32_t format, int pos[4])
{
    static const struct {
        uint32_t format;
        int pos[4];
    } layouts[] = {
        {PIXEL_FORMAT_YUYV_PACKED_422, {0, 1, 2, 3}},
        {PIXEL_FORMAT_UYVY_PACKED_422, {1, 0, 3, 2}},
        {PIXEL_FORMAT_YVYU_PACKED_422, {0, 3, 2, 1}},
        {PIXEL_FORMAT_VYUY_PACKED_422, {1, 2, 3, 0}},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].format == format) {
            memcpy(pos, layouts[i].pos, sizeof layouts[i].pos);
            return 1;
        }
    return 0;
}

static int v_first(uint32_t format)
{
    return format == PIXEL_FORMAT_YVU_SEMIPLANAR_420 || format == PIXEL_FORMAT_YVU_SEMIPLANAR_422 ||
           format == PIXEL_FORMAT_YVU_SEMIPLANAR_444 || format == PIXEL_FORMAT_YVU_SEMIPLANAR_440;
}

/* ---- reading a region into planes ------------------------------------------------------------------ */

static void chroma_divs(uint32_t format, uint32_t *wd, uint32_t *hd);

/* One pixel's Y, U, V at (sx, sy) of the source. */
static void read_pixel(const dvpp_pic *s, uint32_t sx, uint32_t sy, uint8_t *py, uint8_t *pu, uint8_t *pv)
{
    const dvpp_format_info *f = dvpp_format(s->format);
    size_t ws = s->width_stride;
    const uint8_t *line = s->data + sy * ws;
    int pos[4];
    if (rgb_layout(s->format, pos)) {
        const uint8_t *px = line + (size_t)sx * f->line_bytes_per_pixel;
        rgb_to_yuv(px[pos[0]], px[pos[1]], px[pos[2]], py, pu, pv);
    } else if (yuv422_layout(s->format, pos)) {
        const uint8_t *pair = line + (size_t)(sx / 2) * 4;
        *py = pair[sx % 2 ? pos[2] : pos[0]];
        *pu = pair[pos[1]];
        *pv = pair[pos[3]];
    } else if (s->format == PIXEL_FORMAT_YUV_PACKED_444) {
        const uint8_t *px = line + (size_t)sx * 3;
        *py = px[0];
        *pu = px[1];
        *pv = px[2];
    } else if (!f->chroma_w_div) {   /* YUV400 */
        *py = line[sx];
        *pu = *pv = 0x80;
    } else {
        const uint8_t *chroma = s->data + ws * s->height_stride;
        size_t cline = ws * 2 / f->chroma_w_div;
        const uint8_t *c = chroma + (sy / f->chroma_h_div) * cline + (size_t)(sx / f->chroma_w_div) * 2;
        *py = line[sx];
        *pu = v_first(s->format) ? c[1] : c[0];
        *pv = v_first(s->format) ? c[0] : c[1];
    }
}

/* The region r of s into planes: luma at full resolution, chroma at the
 * source's own resolution when `native` (so chroma is resampled from the
 * samples the picture stores), else replicated to full resolution. */
static int read_region(const dvpp_pic *s, dvpp_rect r, int native, planes *out)
{
    uint32_t wd = 1, hd = 1;
    if (native)
        chroma_divs(s->format, &wd, &hd);
    uint32_t cw = (r.width + wd - 1) / wd, ch = (r.height + hd - 1) / hd;
    if (planes_alloc(out, r.width, r.height, cw, ch))
        return -1;
    const dvpp_format_info *f = dvpp_format(s->format);
    if (native && !f->packed) {
        /* semi-planar and YUV400, the common case: plane rows copied as they are */
        size_t ws = s->width_stride;
        for (uint32_t y = 0; y < r.height; y++)
            memcpy(out->y + (size_t)y * r.width, s->data + (r.top + y) * ws + r.left, r.width);
        if (!f->chroma_w_div) {
            memset(out->u, 0x80, (size_t)cw * ch * 2);
            return 0;
        }
        const uint8_t *chroma = s->data + ws * s->height_stride;
        size_t cline = ws * 2 / f->chroma_w_div;
        int vf = v_first(s->format);
        for (uint32_t cy = 0; cy < ch; cy++) {
            const uint8_t *c = chroma + (r.top / hd + cy) * cline + (size_t)(r.left / wd) * 2;
            uint8_t *pu = out->u + (size_t)cy * cw, *pv = out->v + (size_t)cy * cw;
            for (uint32_t cx = 0; cx < cw; cx++) {
                pu[cx] = c[cx * 2 + vf];
                pv[cx] = c[cx * 2 + !vf];
            }
        }
        return 0;
    }
    uint8_t u, v;
    for (uint32_t y = 0; y < r.height; y++)
        for (uint32_t x = 0; x < r.width; x++) {
            uint32_t sx = r.left + x, sy = r.top + y;
            read_pixel(s, sx, sy, &out->y[(size_t)y * r.width + x], &u, &v);
            if (x % wd == 0 && y % hd == 0) {
                size_t c = (size_t)(y / hd) * cw + x / wd;
                out->u[c] = u;
                out->v[c] = v;
            }
        }
    return 0;
}

/* ---- resampling one plane ------------------------------------------------------------------------- */

/* Bilinear taps along one axis: target index i at scale k (source / target
 * size) reads source indices *i0 and *i1 (half-pixel centres, clamped to the
 * edge of `size`), the second with weight *w. */
static void bilinear_taps(uint32_t i, double k, uint32_t size, uint32_t *i0, uint32_t *i1, double *w)
{
    double f = (i + 0.5) * k - 0.5;
    if (f < 0)
        f = 0;
    uint32_t lo = (uint32_t)f, hi = lo + 1 < size ? lo + 1 : size - 1;
    double weight = f - lo;
    if (lo >= size - 1) {
        lo = hi = size - 1;
        weight = 0;
    }
    *i0 = lo;
    *i1 = hi;
    *w = weight;
}

static void resample(const uint8_t *src, uint32_t sw, uint32_t sh, uint8_t *dst, uint32_t dw, uint32_t dh,
                     dvpp_resample how)
{
    double kx = (double)sw / dw, ky = (double)sh / dh;
    for (uint32_t y = 0; y < dh; y++) {
        if (how == DVPP_RESAMPLE_NEAREST) {
            /* the source pixel whose area holds the target pixel's centre, in exact integers */
            uint32_t sy = (uint32_t)(((uint64_t)y * 2 + 1) * sh / ((uint64_t)dh * 2));
            for (uint32_t x = 0; x < dw; x++) {
                uint32_t sx = (uint32_t)(((uint64_t)x * 2 + 1) * sw / ((uint64_t)dw * 2));
                dst[(size_t)y * dw + x] = src[(size_t)sy * sw + sx];
            }
            continue;
        }
        uint32_t y0, y1;
        double wy;
        bilinear_taps(y, ky, sh, &y0, &y1, &wy);
        for (uint32_t x = 0; x < dw; x++) {
            uint32_t x0, x1;
            double wx;
            bilinear_taps(x, kx, sw, &x0, &x1, &wx);
            double top = src[(size_t)y0 * sw + x0] * (1 - wx) + src[(size_t)y0 * sw + x1] * wx;
            double bottom = src[(size_t)y1 * sw + x0] * (1 - wx) + src[(size_t)y1 * sw + x1] * wx;
            dst[(size_t)y * dw + x] = clamp_u8(top * (1 - wy) + bottom * wy);
        }
    }
}

/* ---- writing planes into a region of the target ------------------------------------------------- */

/* Chroma resolution a format stores: divisors of the region's width/height. */
static void chroma_divs(uint32_t format, uint32_t *wd, uint32_t *hd)
{
    const dvpp_format_info *f = dvpp_format(format);
    int pos[4];
    if (yuv422_layout(format, pos)) {
        *wd = 2;
        *hd = 1;
    } else if (f->packed || !f->chroma_w_div) {
        *wd = *hd = 1;
    } else {
        *wd = f->chroma_w_div;
        *hd = f->chroma_h_div;
    }
}

static void store(const dvpp_pic *d, dvpp_rect r, const planes *p)
{
    const dvpp_format_info *f = dvpp_format(d->format);
    size_t ws = d->width_stride;
    int rgb[4], yuyv[4];
    int is_rgb = rgb_layout(d->format, rgb), is_422 = yuv422_layout(d->format, yuyv);
    uint32_t wd, hd;
    chroma_divs(d->format, &wd, &hd);
    for (uint32_t y = 0; !f->packed && y < r.height; y++)   /* semi-planar and YUV400: luma rows as they are */
        memcpy(d->data + (r.top + y) * ws + r.left, p->y + (size_t)y * r.width, r.width);
    for (uint32_t y = 0; f->packed && y < r.height; y++) {
        uint8_t *line = d->data + (r.top + y) * ws;
        for (uint32_t x = 0; x < r.width; x++) {
            uint32_t dx = r.left + x;
            uint8_t Y = p->y[(size_t)y * r.width + x];
            /* vpc.c keeps regions a whole number of chroma samples; clamp anyway */
            uint32_t cx = x / wd < p->cw ? x / wd : p->cw - 1, cy = y / hd < p->ch ? y / hd : p->ch - 1;
            size_t co = (size_t)cy * p->cw + cx;
            uint8_t U = p->u[co], V = p->v[co];
            if (is_rgb) {
                uint8_t *px = line + (size_t)dx * f->line_bytes_per_pixel;
                yuv_to_rgb(Y, U, V, &px[rgb[0]], &px[rgb[1]], &px[rgb[2]]);
                if (rgb[3] >= 0)
                    px[rgb[3]] = 0xff;
            } else if (is_422) {
                uint8_t *pair = line + (size_t)(dx / 2) * 4;
                pair[dx % 2 ? yuyv[2] : yuyv[0]] = Y;
                pair[yuyv[1]] = U;
                pair[yuyv[3]] = V;
            } else {   /* YUV444 packed */
                uint8_t *px = line + (size_t)dx * 3;
                px[0] = Y;
                px[1] = U;
                px[2] = V;
            }
        }
    }
    if (f->packed || !f->chroma_w_div)
        return;
    uint8_t *plane = d->data + ws * d->height_stride;
    size_t cline = ws * 2 / wd;
    for (uint32_t cy = 0; cy < p->ch; cy++) {
        uint8_t *c = plane + (size_t)(r.top / hd + cy) * cline + (size_t)(r.left / wd) * 2;
        for (uint32_t cx = 0; cx < p->cw; cx++) {
            uint8_t U = p->u[(size_t)cy * p->cw + cx], V = p->v[(size_t)cy * p->cw + cx];
            c[cx * 2] = v_first(d->format) ? V : U;
            c[cx * 2 + 1] = v_first(d->format) ? U : V;
        }
    }
}

static int write_region(const dvpp_pic *d, dvpp_rect r, const planes *in, dvpp_resample how)
{
    uint32_t wd, hd;
    chroma_divs(d->format, &wd, &hd);
    planes out;
    if (planes_alloc(&out, r.width, r.height, r.width / wd, r.height / hd))
        return -1;
    resample(in->y, in->w, in->h, out.y, out.w, out.h, how);
    resample(in->u, in->cw, in->ch, out.u, out.cw, out.ch, how);
    resample(in->v, in->cw, in->ch, out.v, out.cw, out.ch, how);
    store(d, r, &out);
    planes_free(&out);
    return 0;
}

int dvpp_vpc_blit(const dvpp_pic *src, dvpp_rect src_rect, const dvpp_pic *dst, dvpp_rect dst_rect,
                  dvpp_resample how)
{
    planes in;
    if (read_region(src, src_rect, 1, &in))
        return -1;
    int rc = write_region(dst, dst_rect, &in, how);
    planes_free(&in);
    return rc;
}

/* ---- borders ------------------------------------------------------------------------------------- */

/* The source coordinate a border pixel takes (i < 0 or i >= n). */
static uint32_t border_index(long i, uint32_t n, acldvppBorderType type)
{
    long last = (long)n - 1;
    if (n == 1)
        return 0;
    while (i < 0 || i > last) {
        switch (type) {
        case BORDER_REPLICATE:
            i = i < 0 ? 0 : last;
            break;
        case BORDER_REFLECT:       /* fedcba|abcdef|fedcba */
            i = i < 0 ? -i - 1 : 2 * last - i + 1;
            break;
        default:                   /* BORDER_REFLECT_101: gfedcb|abcdefgh|gfedcba */
            i = i < 0 ? -i : 2 * last - i;
            break;
        }
    }
    return (uint32_t)i;
}

int dvpp_vpc_border(const dvpp_pic *src, const dvpp_pic *dst, const acldvppBorderConfig *b)
{
    planes in, out;
    if (read_region(src, (dvpp_rect){0, 0, src->width, src->height}, 0, &in))
        return -1;
    if (planes_alloc(&out, dst->width, dst->height, dst->width, dst->height)) {
        planes_free(&in);
        return -1;
    }
    uint8_t fill[3];
    int pos[4];
    if (rgb_layout(dst->format, pos))   /* constant values are in the output's channels: R, G, B */
        rgb_to_yuv(clamp_u8(b->value[0]), clamp_u8(b->value[1]), clamp_u8(b->value[2]), &fill[0], &fill[1], &fill[2]);
    else
        for (int i = 0; i < 3; i++)
            fill[i] = clamp_u8(b->value[i]);
    for (uint32_t y = 0; y < out.h; y++)
        for (uint32_t x = 0; x < out.w; x++) {
            long sx = (long)x - b->left, sy = (long)y - b->top;
            size_t o = (size_t)y * out.w + x;
            int inside = sx >= 0 && sy >= 0 && sx < (long)in.w && sy < (long)in.h;
            if (!inside && b->type == BORDER_CONSTANT) {
                out.y[o] = fill[0];
                out.u[o] = fill[1];
                out.v[o] = fill[2];
                continue;
            }
            size_t i = (size_t)border_index(sy, in.h, b->type) * in.w + border_index(sx, in.w, b->type);
            out.y[o] = in.y[i];
            out.u[o] = in.u[i];
            out.v[o] = in.v[i];
        }
    int rc = write_region(dst, (dvpp_rect){0, 0, dst->width, dst->height}, &out, DVPP_RESAMPLE_BILINEAR);
    planes_free(&in);
    planes_free(&out);
    return rc;
}

int dvpp_read_ycc(const dvpp_pic *src, uint8_t *ycc)
{
    planes in;
    if (read_region(src, (dvpp_rect){0, 0, src->width, src->height}, 0, &in))
        return -1;
    size_t n = (size_t)src->width * src->height;
    for (size_t i = 0; i < n; i++) {
        ycc[i * 3] = in.y[i];
        ycc[i * 3 + 1] = in.u[i];
        ycc[i * 3 + 2] = in.v[i];
    }
    planes_free(&in);
    return 0;
}
