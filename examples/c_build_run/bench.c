/* A blocked matrix multiply, the C build+run example of a Tuna search.
 *
 * Build-time: TILE (the block size, -DTILE=...) and the optimisation flags.
 * Run-time:   argv[1] = n (the matrix order, a multiple of TILE), argv[2] = reps.
 * Prints one JSON object of stats: seconds per multiply, GFLOP/s and a checksum.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef TILE
#define TILE 16
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N REPS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), reps = atoi(argv[2]);
    if (n <= 0 || reps <= 0 || n % TILE != 0) {
        fprintf(stderr, "n=%d must be a positive multiple of TILE=%d, reps=%d positive\n", n, TILE, reps);
        return 2;
    }
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    double *c = calloc((size_t)n * n, sizeof(double));
    if (!a || !b || !c) return 3;
    for (int i = 0; i < n * n; i++) {
        a[i] = (i % 7) * 0.5;
        b[i] = (i % 5) * 0.25;
    }
    double start = now();
    for (int r = 0; r < reps; r++)
        for (int ii = 0; ii < n; ii += TILE)
            for (int kk = 0; kk < n; kk += TILE)
                for (int jj = 0; jj < n; jj += TILE)
                    for (int i = ii; i < ii + TILE; i++)
                        for (int k = kk; k < kk + TILE; k++) {
                            double aik = a[i * n + k];
                            for (int j = jj; j < jj + TILE; j++) c[i * n + j] += aik * b[k * n + j];
                        }
    double seconds = (now() - start) / reps;
    double checksum = 0;
    for (int i = 0; i < n * n; i++) checksum += c[i];
    printf("{\"seconds\": %.9f, \"gflops\": %.4f, \"checksum\": %.1f, \"tile\": %d}\n", seconds,
           2.0 * n * n * n / seconds / 1e9, checksum / reps, TILE);
    free(a);
    free(b);
    free(c);
    return 0;
}
