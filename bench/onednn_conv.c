/* oneDNN's forward convolution, timed for bench/cpuconv.py (the optional "oneDNN" column).
 *
 * Built by bench/cpuconv.py when oneDNN's headers and library are installed (Debian:
 * `apt-get install libdnnl-dev`); never by Tuna or its tests. One call:
 *
 *   onednn_conv_ms(shape, x, w, y, threads, repeats, times, impl, impl_len) -> 0 or an error
 *
 * shape: N C K HI WI HO WO FY FX PH PW SH SW DH DW (one group). x, w: the NCHW / KCYX inputs;
 * y: the NCHW output, written by the last run (the caller checks it against its reference).
 * The convolution primitive picks its own layouts (format_tag any, as a framework lets it);
 * each timed run is what an NCHW caller pays: reorder x into the primitive's layout, the
 * convolution, reorder the result back to NCHW. The weights are reordered once beforehand
 * (a framework prepacks them). times[0]: the fastest run in ms, times[1]: the median,
 * times[2]: the fastest convolution alone (no reorders). impl: the implementation oneDNN
 * chose (e.g. "jit:avx2").
 */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        dnnl_status_t s_ = (call);                                                          \
        if (s_ != dnnl_success) return (int)s_ + 100;                                       \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int make_reorder(dnnl_engine_t eng, dnnl_memory_t from, dnnl_memory_t to,
                        dnnl_primitive_t *r) {
    const dnnl_memory_desc_t *fmd, *tmd;
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_memory_get_memory_desc(from, &fmd));
    CHECK(dnnl_memory_get_memory_desc(to, &tmd));
    CHECK(dnnl_reorder_primitive_desc_create(&pd, fmd, eng, tmd, eng, NULL));
    CHECK(dnnl_primitive_create(r, pd));
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

static int run2(dnnl_stream_t st, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    CHECK(dnnl_primitive_execute(r, st, 2, args));
    CHECK(dnnl_stream_wait(st));
    return 0;
}

int onednn_conv_ms(const int *s, float *x, float *w, float *y, int threads, int repeats,
                   double *times, char *impl, int impl_len) {
    const dnnl_dim_t n = s[0], c = s[1], k = s[2], hi = s[3], wi = s[4], ho = s[5], wo = s[6];
    const dnnl_dim_t fy = s[7], fx = s[8];
    dnnl_dims_t xd = {n, c, hi, wi}, wd = {k, c, fy, fx}, yd = {n, k, ho, wo};
    dnnl_dims_t stride = {s[11], s[12]}, dil = {s[13] - 1, s[14] - 1};
    dnnl_dims_t pl = {s[9], s[10]};
    dnnl_dims_t pr = {(ho - 1) * s[11] + (fy - 1) * s[13] + 1 - hi - s[9],
                      (wo - 1) * s[12] + (fx - 1) * s[14] + 1 - wi - s[10]};
    omp_set_num_threads(threads);

    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));

    dnnl_memory_desc_t x_user, w_user, y_user, x_any, w_any, y_any;
    CHECK(dnnl_memory_desc_init_by_tag(&x_user, 4, xd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&w_user, 4, wd, dnnl_f32, dnnl_oihw));
    CHECK(dnnl_memory_desc_init_by_tag(&y_user, 4, yd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&x_any, 4, xd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&y_any, 4, yd, dnnl_f32, dnnl_format_tag_any));

    dnnl_convolution_desc_t cd;
    CHECK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                     dnnl_convolution_direct, &x_any, &w_any,
                                                     NULL, &y_any, stride, dil, pl, pr));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL));
    const char *name = NULL;
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name));
    strncpy(impl, name ? name : "?", impl_len - 1);
    impl[impl_len - 1] = 0;

    dnnl_memory_t xu, wu, yu, xc, wc, yc;
    CHECK(dnnl_memory_create(&xu, &x_user, eng, x));
    CHECK(dnnl_memory_create(&wu, &w_user, eng, w));
    CHECK(dnnl_memory_create(&yu, &y_user, eng, y));
    CHECK(dnnl_memory_create(&xc, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng,
                             DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&wc, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                             eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&yc, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng,
                             DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_t conv;
    CHECK(dnnl_primitive_create(&conv, pd));
    dnnl_primitive_t rw, rx, ry;
    int err;
    if ((err = make_reorder(eng, wu, wc, &rw)) || (err = make_reorder(eng, xu, xc, &rx)) ||
        (err = make_reorder(eng, yc, yu, &ry)) || (err = run2(st, rw, wu, wc)))
        return err;

    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, xc}, {DNNL_ARG_WEIGHTS, wc}, {DNNL_ARG_DST, yc}};
    double *all = malloc(sizeof(double) * (repeats + 1));
    double conv_best = 1e300;
    for (int r = -1; r < repeats; r++) { /* r = -1: the warm-up */
        const double t0 = now_ms();
        if ((err = run2(st, rx, xu, xc))) return err;
        const double t1 = now_ms();
        CHECK(dnnl_primitive_execute(conv, st, 3, args));
        CHECK(dnnl_stream_wait(st));
        const double t2 = now_ms();
        if ((err = run2(st, ry, yc, yu))) return err;
        const double t3 = now_ms();
        if (r >= 0) {
            all[r] = t3 - t0;
            if (t2 - t1 < conv_best) conv_best = t2 - t1;
        }
    }
    qsort(all, repeats, sizeof(double), cmp);
    times[0] = all[0];
    times[1] = all[repeats / 2];
    times[2] = conv_best;
    free(all);
    dnnl_primitive_destroy(conv);
    dnnl_primitive_destroy(rw), dnnl_primitive_destroy(rx), dnnl_primitive_destroy(ry);
    dnnl_memory_destroy(xu), dnnl_memory_destroy(wu), dnnl_memory_destroy(yu);
    dnnl_memory_destroy(xc), dnnl_memory_destroy(wc), dnnl_memory_destroy(yc);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
