/*
 * DB text-detection post-processing and greedy CTC, native (db_postprocess.h;
 * the definitions are those of docs/executor.md, "DB text boxes", which the
 * numpy reference in ascend_engine/steps/ocr.py follows operation for
 * operation, so that the two agree to the last bit of every coordinate).
 *
 * One map is read in three passes: the runs of text pixels of each row, the
 * regions they form (runs joined by a union-find, 8-connectivity), and per
 * region its convex hull (from the ends of its runs: the hull of a region's
 * pixel centres is the hull of those), the minimum-area rectangle of the hull,
 * the rectangle's score, the grown rectangle.
 */
#include "db_postprocess.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A pixel centre counts as inside a rectangle up to this distance outside it:
 * rectangles through pixel centres are computed in floating point. */
#define DB_INSIDE_EPS 1e-3

typedef struct db_run {
    int32_t y, x0, x1;   /* text pixels x0..x1 (both included) of row y */
    int32_t parent;      /* union-find: the root is the region's first run in raster order */
} db_run;

typedef struct db_point {
    int64_t x, y;
} db_point;

static int fail(char *message, size_t message_size, const char *name, const char *fmt, ...)
{
    if (message != NULL && message_size > 0) {
        int n = snprintf(message, message_size, "db_postprocess step '%s': ", name != NULL ? name : "");
        if (n >= 0 && (size_t)n < message_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(message + n, message_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int32_t find_root(db_run *runs, int32_t i)
{
    while (runs[i].parent != i) {
        runs[i].parent = runs[runs[i].parent].parent;   /* path halving */
        i = runs[i].parent;
    }
    return i;
}

static void join(db_run *runs, int32_t a, int32_t b)
{
    a = find_root(runs, a);
    b = find_root(runs, b);
    if (a < b)
        runs[b].parent = a;
    else if (b < a)
        runs[a].parent = b;
}

static int64_t cross(db_point o, db_point a, db_point b)
{
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

/* Andrew's monotone chain over points already in raster order (y, then x):
 * the hull's vertices into hull (room for 2 * n), collinear ones dropped;
 * returns their count (1 for a single point, 2 for a segment). */
static int64_t convex_hull(const db_point *pts, int64_t n, db_point *hull)
{
    int64_t k = 0;
    if (n <= 1) {
        if (n == 1)
            hull[0] = pts[0];
        return n;
    }
    for (int64_t i = 0; i < n; i++) {
        while (k >= 2 && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0)
            k--;
        hull[k++] = pts[i];
    }
    for (int64_t i = n - 2, lower = k + 1; i >= 0; i--) {
        while (k >= lower && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0)
            k--;
        hull[k++] = pts[i];
    }
    return k - 1;   /* the last point is the first again */
}

/* A rectangle: its axes u and v = u turned by 90 degrees, and its extent
 * along each, [a0, a1] x [b0, b1]; the point (a, b) is a*u + b*v. */
typedef struct db_rect {
    double ux, uy, vx, vy;
    double a0, a1, b0, b1;
} db_rect;

/* The minimum-area rectangle of a hull: over each edge in hull order, the
 * rectangle with u along the edge; the first of the smallest area. */
static db_rect min_area_rect(const db_point *hull, int64_t m)
{
    db_rect best = {1.0, 0.0, -0.0, 1.0, (double)hull[0].x, (double)hull[0].x, (double)hull[0].y,
                    (double)hull[0].y};
    double best_area = 0.0;
    for (int64_t i = 0; m > 1 && i < m; i++) {
        db_point p = hull[i], q = hull[(i + 1) % m];
        double dx = (double)(q.x - p.x), dy = (double)(q.y - p.y);
        double len = sqrt(dx * dx + dy * dy);
        db_rect r = best;
        r.ux = dx / len;
        r.uy = dy / len;
        r.vx = -r.uy;
        r.vy = r.ux;
        for (int64_t j = 0; j < m; j++) {
            double px = (double)hull[j].x, py = (double)hull[j].y;
            double a = px * r.ux + py * r.uy, b = px * r.vx + py * r.vy;
            if (j == 0) {
                r.a0 = r.a1 = a;
                r.b0 = r.b1 = b;
            }
            r.a0 = a < r.a0 ? a : r.a0;
            r.a1 = a > r.a1 ? a : r.a1;
            r.b0 = b < r.b0 ? b : r.b0;
            r.b1 = b > r.b1 ? b : r.b1;
        }
        double area = (r.a1 - r.a0) * (r.b1 - r.b0);
        if (i == 0 || area < best_area) {
            best = r;
            best_area = area;
        }
    }
    return best;
}

static void corner(const db_rect *r, double a, double b, double *x, double *y)
{
    *x = a * r->ux + b * r->vx;
    *y = a * r->uy + b * r->vy;
}

/* The mean probability of the pixels whose centres lie in the rectangle
 * (within DB_INSIDE_EPS), scanned over its bounding pixels in the map. */
static double rect_score(const db_rect *r, const float *map, int64_t h, int64_t w)
{
    double xs[4], ys[4];
    corner(r, r->a0, r->b0, &xs[0], &ys[0]);
    corner(r, r->a1, r->b0, &xs[1], &ys[1]);
    corner(r, r->a1, r->b1, &xs[2], &ys[2]);
    corner(r, r->a0, r->b1, &xs[3], &ys[3]);
    double lo_x = xs[0], hi_x = xs[0], lo_y = ys[0], hi_y = ys[0];
    for (int k = 1; k < 4; k++) {
        lo_x = fmin(lo_x, xs[k]);
        hi_x = fmax(hi_x, xs[k]);
        lo_y = fmin(lo_y, ys[k]);
        hi_y = fmax(hi_y, ys[k]);
    }
    int64_t x0 = (int64_t)fmax(0.0, fmin((double)(w - 1), floor(lo_x)));
    int64_t x1 = (int64_t)fmax(0.0, fmin((double)(w - 1), ceil(hi_x)));
    int64_t y0 = (int64_t)fmax(0.0, fmin((double)(h - 1), floor(lo_y)));
    int64_t y1 = (int64_t)fmax(0.0, fmin((double)(h - 1), ceil(hi_y)));
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t y = y0; y <= y1; y++) {
        for (int64_t x = x0; x <= x1; x++) {
            double px = (double)x, py = (double)y;
            double a = px * r->ux + py * r->uy, b = px * r->vx + py * r->vy;
            if (a >= r->a0 - DB_INSIDE_EPS && a <= r->a1 + DB_INSIDE_EPS && b >= r->b0 - DB_INSIDE_EPS &&
                b <= r->b1 + DB_INSIDE_EPS) {
                sum += (double)map[y * w + x];
                count++;
            }
        }
    }
    return count > 0 ? sum / (double)count : 0.0;
}

/* The corners in PP-OCR's order: sorted by x (then y), the upper of the two
 * left ones first, then the upper right one, the lower right, the lower left. */
static void ordered_corners(const db_rect *r, double out[8])
{
    double p[4][2];
    corner(r, r->a0, r->b0, &p[0][0], &p[0][1]);
    corner(r, r->a1, r->b0, &p[1][0], &p[1][1]);
    corner(r, r->a1, r->b1, &p[2][0], &p[2][1]);
    corner(r, r->a0, r->b1, &p[3][0], &p[3][1]);
    for (int i = 1; i < 4; i++) {   /* insertion sort: stable */
        for (int j = i; j > 0 && (p[j][0] < p[j - 1][0] || (p[j][0] == p[j - 1][0] && p[j][1] < p[j - 1][1]));
             j--) {
            double tx = p[j][0], ty = p[j][1];
            p[j][0] = p[j - 1][0];
            p[j][1] = p[j - 1][1];
            p[j - 1][0] = tx;
            p[j - 1][1] = ty;
        }
    }
    int tl = p[1][1] > p[0][1] ? 0 : 1, bl = 1 - tl;
    int tr = p[3][1] > p[2][1] ? 2 : 3, br = 5 - tr;
    const int order[4] = {tl, tr, br, bl};
    for (int k = 0; k < 4; k++) {
        out[2 * k] = p[order[k]][0];
        out[2 * k + 1] = p[order[k]][1];
    }
}

static int check_params(const ae_db_params *p, char *message, size_t message_size)
{
    if (p == NULL)
        return fail(message, message_size, "", "no parameters (a NULL context)");
    if (p->map_height < 1 || p->map_width < 1 || p->map_height > (1 << 20) || p->map_width > (1 << 20))
        return fail(message, message_size, p->name, "the map is %lld x %lld; each side must be 1 to %d",
                    (long long)p->map_height, (long long)p->map_width, 1 << 20);
    if (!(p->thresh == p->thresh) || !(p->box_thresh == p->box_thresh) || !(p->unclip_ratio >= 0.0) ||
        !(p->min_size >= 0.0) || p->max_candidates < 0)
        return fail(message, message_size, p->name,
                    "bad parameters: thresh %g, box_thresh %g, unclip_ratio %g (>= 0), min_size %g (>= 0), "
                    "max_candidates %lld (>= 0)",
                    p->thresh, p->box_thresh, p->unclip_ratio, p->min_size, (long long)p->max_candidates);
    return 0;
}

int ae_db_boxes(const ae_db_params *params, const float *map, const float *picture, float *boxes,
                float *scores, uint64_t max_out, uint64_t *count, char *message, size_t message_size)
{
    if (check_params(params, message, message_size) != 0)
        return -1;
    const char *name = params->name;
    const int64_t h = params->map_height, w = params->map_width;
    double pic_h = (double)h, pic_w = (double)w, ratio_h = 1.0, ratio_w = 1.0;
    if (picture != NULL) {
        pic_h = picture[0];
        pic_w = picture[1];
        ratio_h = picture[2];
        ratio_w = picture[3];
        if (!(pic_h > 0.0 && pic_w > 0.0 && ratio_h > 0.0 && ratio_w > 0.0) || isinf(pic_h) || isinf(pic_w) ||
            isinf(ratio_h) || isinf(ratio_w))
            return fail(message, message_size, name,
                        "the picture row (height, width, ratio_h, ratio_w) must be finite and above 0, "
                        "got (%g, %g, %g, %g)", pic_h, pic_w, ratio_h, ratio_w);
    }
    *count = 0;
    /* pass 1: refuse non-finite values, count the runs */
    int64_t n_runs = 0;
    for (int64_t y = 0; y < h; y++) {
        const float *row = map + y * w;
        int inside = 0;
        for (int64_t x = 0; x < w; x++) {
            float v = row[x];
            if (!isfinite(v))
                return fail(message, message_size, name, "the map holds %s at (y=%lld, x=%lld); "
                            "probabilities must be finite", isnan(v) ? "NaN" : "an infinity",
                            (long long)y, (long long)x);
            int text = (double)v > params->thresh;
            n_runs += text && !inside;
            inside = text;
        }
    }
    if (n_runs == 0 || params->max_candidates == 0)
        return 0;
    if (n_runs > INT32_MAX / 2)
        return fail(message, message_size, name, "the map has %lld runs of text pixels, more than %d",
                    (long long)n_runs, INT32_MAX / 2);
    db_run *runs = malloc((size_t)n_runs * sizeof *runs);
    int32_t *region_of = malloc((size_t)n_runs * sizeof *region_of);
    db_point *pts = malloc((size_t)n_runs * 2 * sizeof *pts);
    db_point *hull = malloc(((size_t)n_runs * 4 + 2) * sizeof *hull);
    int64_t *start = NULL;
    int rc = 0;
    if (runs == NULL || region_of == NULL || pts == NULL || hull == NULL) {
        rc = fail(message, message_size, name, "out of memory for %lld runs", (long long)n_runs);
        goto done;
    }
    /* pass 2: the runs, joined to the overlapping runs of the row above */
    int32_t k = 0, above = 0, above_end = 0;
    for (int64_t y = 0; y < h; y++) {
        const float *row = map + y * w;
        int32_t row_start = k;
        for (int64_t x = 0; x < w; x++) {
            if ((double)row[x] > params->thresh) {
                int64_t x1 = x;
                while (x1 + 1 < w && (double)row[x1 + 1] > params->thresh)
                    x1++;
                runs[k] = (db_run){(int32_t)y, (int32_t)x, (int32_t)x1, k};
                /* 8-connectivity: a run above touches when the columns overlap or meet at a corner */
                for (int32_t j = above; j < above_end; j++) {
                    if (runs[j].x1 + 1 < runs[k].x0)
                        continue;
                    if (runs[j].x0 > runs[k].x1 + 1)
                        break;
                    join(runs, j, k);
                }
                k++;
                x = x1;
            }
        }
        above = row_start;
        above_end = k;
    }
    /* the regions in raster order of their first run; only the first max_candidates count */
    int64_t n_regions = 0;
    for (int32_t i = 0; i < k; i++) {
        int32_t root = find_root(runs, i);
        region_of[i] = root == i ? (int32_t)(n_regions++) : region_of[root];
    }
    int64_t used = n_regions < params->max_candidates ? n_regions : params->max_candidates;
    start = calloc((size_t)used + 1, sizeof *start);
    if (start == NULL) {
        rc = fail(message, message_size, name, "out of memory for %lld regions", (long long)used);
        goto done;
    }
    for (int32_t i = 0; i < k; i++)
        if (region_of[i] < used)
            start[region_of[i] + 1] += runs[i].x1 > runs[i].x0 ? 2 : 1;
    for (int64_t r = 0; r < used; r++)
        start[r + 1] += start[r];
    int64_t *next = calloc((size_t)used + 1, sizeof *next);
    if (next == NULL) {
        rc = fail(message, message_size, name, "out of memory for %lld regions", (long long)used);
        goto done;
    }
    for (int32_t i = 0; i < k; i++) {   /* each region's points stay in raster order */
        int32_t r = region_of[i];
        if (r >= used)
            continue;
        int64_t at = start[r] + next[r];
        pts[at++] = (db_point){runs[i].x0, runs[i].y};
        if (runs[i].x1 > runs[i].x0)
            pts[at++] = (db_point){runs[i].x1, runs[i].y};
        next[r] = at - start[r];
    }
    free(next);
    /* pass 3: per region, its rectangle, score and grown rectangle */
    uint64_t out = 0;
    for (int64_t r = 0; r < used; r++) {
        int64_t m = convex_hull(pts + start[r], start[r + 1] - start[r], hull);
        db_rect rect = min_area_rect(hull, m);
        double bw = rect.a1 - rect.a0, bh = rect.b1 - rect.b0;
        if (fmin(bw, bh) < params->min_size)
            continue;
        double score = rect_score(&rect, map, h, w);
        if (score < params->box_thresh)
            continue;
        double perimeter = 2.0 * (bw + bh);
        double d = perimeter > 0.0 ? bw * bh * params->unclip_ratio / perimeter : 0.0;
        rect.a0 -= d;
        rect.a1 += d;
        rect.b0 -= d;
        rect.b1 += d;
        if (fmin(bw + 2.0 * d, bh + 2.0 * d) < params->min_size + 2.0)
            continue;
        if (out >= max_out) {
            rc = fail(message, message_size, name, "more than %llu boxes in one map: room for %llu",
                      (unsigned long long)max_out, (unsigned long long)max_out);
            goto done;
        }
        double c[8];
        ordered_corners(&rect, c);
        for (int j = 0; j < 4; j++) {
            boxes[out * 8 + 2 * j] = (float)fmin(pic_w, fmax(0.0, c[2 * j] / ratio_w));
            boxes[out * 8 + 2 * j + 1] = (float)fmin(pic_h, fmax(0.0, c[2 * j + 1] / ratio_h));
        }
        scores[out] = (float)score;
        out++;
    }
    *count = out;
done:
    free(start);
    free(hull);
    free(pts);
    free(region_of);
    free(runs);
    return rc;
}

int ae_db_postprocess(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                      ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                      size_t message_size)
{
    (void)request;
    const ae_db_params *p = ctx;
    if (check_params(p, message, message_size) != 0)
        return -1;
    int want_inputs = p->has_picture ? 2 : 1;
    if (n_inputs != want_inputs || n_outputs != 2)
        return fail(message, message_size, p->name, "takes %d input(s) and gives 2 outputs, got %d and %d",
                    want_inputs, n_inputs, n_outputs);
    size_t map_bytes = (size_t)p->map_height * (size_t)p->map_width * sizeof(float);
    if (inputs[0].row_bytes != map_bytes)
        return fail(message, message_size, p->name, "a map row holds %zu bytes, expected %zu (%lld x %lld "
                    "float32)", inputs[0].row_bytes, map_bytes, (long long)p->map_height,
                    (long long)p->map_width);
    if (p->has_picture && (inputs[1].row_bytes != 4 * sizeof(float) || inputs[1].rows != inputs[0].rows))
        return fail(message, message_size, p->name, "the picture input must hold one row of 4 float32 per map, "
                    "got %llu row(s) of %zu bytes for %llu map(s)", (unsigned long long)inputs[1].rows,
                    inputs[1].row_bytes, (unsigned long long)inputs[0].rows);
    if (outputs[0].row_bytes != 8 * sizeof(float) || outputs[1].row_bytes != sizeof(float))
        return fail(message, message_size, p->name, "outputs must be rows of 4 x 2 float32 corners and of one "
                    "float32 score, got rows of %zu and %zu bytes", outputs[0].row_bytes, outputs[1].row_bytes);
    *rows_out = 0;
    if (inputs[0].rows == 0)
        return 0;
    if (inputs[0].rows != 1)
        return fail(message, message_size, p->name, "takes one map per request, got %llu",
                    (unsigned long long)inputs[0].rows);
    uint64_t room = outputs[0].rows < outputs[1].rows ? outputs[0].rows : outputs[1].rows;
    return ae_db_boxes(p, inputs[0].data, p->has_picture ? inputs[1].data : NULL, outputs[0].data,
                       outputs[1].data, room, rows_out, message, message_size);
}

/* The first index of a row's largest value; *nan set when the row holds a NaN.
 * With SSE2 (every x86-64) four vectors of four lanes at a time, then a scan
 * for the first value equal to the largest; elsewhere the same in plain C. */
static int64_t row_argmax(const float *row, int64_t n, int *nan)
{
    float top = row[0];
    int bad = 0;
    int64_t c = 0;
#if defined(__SSE2__)
    if (n >= 16) {
        __m128 m0 = _mm_loadu_ps(row), m1 = m0, m2 = m0, m3 = m0;
        __m128 u = _mm_setzero_ps();
        for (; c + 16 <= n; c += 16) {
            __m128 v0 = _mm_loadu_ps(row + c), v1 = _mm_loadu_ps(row + c + 4);
            __m128 v2 = _mm_loadu_ps(row + c + 8), v3 = _mm_loadu_ps(row + c + 12);
            u = _mm_or_ps(u, _mm_or_ps(_mm_cmpunord_ps(v0, v1), _mm_cmpunord_ps(v2, v3)));
            m0 = _mm_max_ps(m0, v0);
            m1 = _mm_max_ps(m1, v1);
            m2 = _mm_max_ps(m2, v2);
            m3 = _mm_max_ps(m3, v3);
        }
        float lanes[4];
        _mm_storeu_ps(lanes, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
        top = lanes[0];
        for (int k = 1; k < 4; k++)
            top = lanes[k] > top ? lanes[k] : top;
        bad = _mm_movemask_ps(u) != 0;
    }
#endif
    for (; c < n; c++) {
        bad |= row[c] != row[c];
        top = row[c] > top ? row[c] : top;
    }
    *nan = bad;
    if (bad)
        return 0;
    c = 0;
#if defined(__SSE2__)
    __m128 t = _mm_set1_ps(top);
    for (; c + 4 <= n; c += 4) {
        int hit = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(row + c), t));
        if (hit)
            return c + __builtin_ctz((unsigned)hit);
    }
#endif
    for (; c < n; c++)
        if (row[c] == top)
            return c;
    return 0;
}

int64_t ae_ctc_greedy_line(const float *probs, int64_t columns, int64_t classes, int64_t blank, int32_t *out,
                           int64_t max_out, char *message, size_t message_size)
{
    if (classes < 1 || classes > INT32_MAX || columns < 0 || blank < 0 || blank >= classes || max_out < 0) {
        snprintf(message, message_size, "ctc: %lld columns of %lld classes with blank %lld: the blank must be "
                 "a class", (long long)columns, (long long)classes, (long long)blank);
        return -1;
    }
    int64_t n = 0, prev = -1;
    for (int64_t t = 0; t < columns; t++) {
        const float *row = probs + t * classes;
        int nan = 0;
        int64_t best = row_argmax(row, classes, &nan);
        if (nan) {
            int64_t c = 0;
            while (row[c] == row[c])
                c++;
            snprintf(message, message_size, "ctc: NaN at column %lld, class %lld", (long long)t, (long long)c);
            return -1;
        }
        if (best != blank && best != prev) {
            if (n >= max_out) {
                snprintf(message, message_size, "ctc: more than %lld characters in a line", (long long)max_out);
                return -1;
            }
            out[n++] = (int32_t)best;
        }
        prev = best;
    }
    for (int64_t i = n; i < max_out; i++)
        out[i] = -1;
    return n;
}
