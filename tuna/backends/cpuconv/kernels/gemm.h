/* The GEMM core of CpuIm2colGemm, CpuGemm1x1 and CpuWinograd2x3, specialised per candidate.
 *
 * Per inclusion: KNAME and the parameters
 *   GM_MR  rows of C per register tile
 *   GM_NV  vectors per register tile row (NN) / rows of B per register tile (NT)
 *   GM_VW  vector width in floats (GCC vector extension: the compiler picks the instructions)
 *   GM_KC  depth of a cache block of the reduction
 *   GM_LO  loop order over the register tiles of a cache block: 0 column tiles outside row
 *          tiles (a KC x NR slice of B stays in L1 while the whole M x KC panel of A streams
 *          past it once per column tile), 1 row tiles outside column tiles (an MR x KC slice
 *          of A stays in L1 while the KC x N panel of B, from L2, streams past it once per
 *          row tile): the better one when M is much larger than N (7x7 and 14x14 outputs)
 *   GM_PB  1: copy each KC x N panel of B into NR-wide column panels, zero-padded past N,
 *          before using it (gemm_nn only): the register tile reads B contiguously, and the
 *          last column tile runs the full vector code instead of the edge code
 * Row ranges [i0, i1) let callers split C between threads: in either order, each thread
 * has its own rows of A and C and reads all of B.
 */
#include "common.h"
#include <stdlib.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#if !defined(GM_LO) || !defined(GM_PB)
#error "gemm.h needs GM_LO and GM_PB"
#endif

typedef float FN(vf) __attribute__((vector_size(GM_VW * sizeof(float))));
#define GM_NR (GM_NV * GM_VW)

/* The register tiles (i, j) of rows [i0, i1) and columns [0, N) in steps of MR and nr, in the
 * order GM_LO: the one loop nest both GEMMs walk. */
#if GM_LO == 0
#define GM_FOR_TILES(i, j, i0, i1, N, nr)                   \
    for (long j = 0; j < (N); j += (nr))                    \
        for (long i = (i0); i < (i1); i += GM_MR)
#else
#define GM_FOR_TILES(i, j, i0, i1, N, nr)                   \
    for (long i = (i0); i < (i1); i += GM_MR)               \
        for (long j = 0; j < (N); j += (nr))
#endif

/* acc[MR][NR] = A(MR x kc) B(kc x NR), B rows contiguous; C = (first ? 0 : C) + acc. */
static inline __attribute__((always_inline)) void FN(mk_nn)(long kc, const float *restrict a,
                                                           long sam, long sak,
                                                           const float *restrict b, long ldb,
                                                           float *restrict c, long ldc, int first) {
    FN(vf) acc[GM_MR][GM_NV];
    for (int i = 0; i < GM_MR; i++)
        for (int v = 0; v < GM_NV; v++) acc[i][v] = (FN(vf)){0};
    for (long p = 0; p < kc; p++) {
        FN(vf) bv[GM_NV];
        for (int v = 0; v < GM_NV; v++) memcpy(&bv[v], b + p * ldb + v * GM_VW, sizeof bv[v]);
        for (int i = 0; i < GM_MR; i++) {
            const float s = a[i * sam + p * sak];
            for (int v = 0; v < GM_NV; v++) acc[i][v] += s * bv[v];
        }
    }
    for (int i = 0; i < GM_MR; i++)
        for (int v = 0; v < GM_NV; v++) {
            float *cp = c + i * ldc + v * GM_VW;
            if (!first) {
                FN(vf) old;
                memcpy(&old, cp, sizeof old);
                acc[i][v] += old;
            }
            memcpy(cp, &acc[i][v], sizeof acc[i][v]);
        }
}

/* An edge tile (mr <= MR rows, nr <= NR columns): one row at a time, its whole vectors in
 * registers and only the last nr % VW columns scalar. Rows are where a tile falls off most
 * often (M = 64 rows in tiles of 6 leave 4), and scalar rows cost as much as the rest. */
static void FN(mk_nn_edge)(long kc, const float *restrict a, long sam, long sak,
                           const float *restrict b, long ldb, float *restrict c, long ldc,
                           long mr, long nr, int first) {
    const long nvf = nr / GM_VW, j0 = nvf * GM_VW;
    for (long i = 0; i < mr; i++) {
        FN(vf) acc[GM_NV];
        float tail[GM_VW] = {0};
        for (int v = 0; v < GM_NV; v++) acc[v] = (FN(vf)){0};
        for (long p = 0; p < kc; p++) {
            const float s = a[i * sam + p * sak];
            const float *bp = b + p * ldb;
            for (int v = 0; v < GM_NV; v++)
                if (v < nvf) {
                    FN(vf) bv;
                    memcpy(&bv, bp + v * GM_VW, sizeof bv);
                    acc[v] += s * bv;
                }
            for (long j = j0; j < nr; j++) tail[j - j0] += s * bp[j];
        }
        float *cp = c + i * ldc;
        for (int v = 0; v < GM_NV; v++)
            if (v < nvf) {
                if (!first) {
                    FN(vf) old;
                    memcpy(&old, cp + v * GM_VW, sizeof old);
                    acc[v] += old;
                }
                memcpy(cp + v * GM_VW, &acc[v], sizeof acc[v]);
            }
        for (long j = j0; j < nr; j++) cp[j] = (first ? 0.0f : cp[j]) + tail[j - j0];
    }
}

/* B[0:kc, 0:N] (rows ldb apart) as NR-wide panels of kc x NR, zero-padded past N: the panel
 * of columns [j, j + NR) starts at pk + j kc. */
CV_UNUSED static void FN(pack_b)(long kc, long N, const float *restrict B, long ldb,
                                 float *restrict pk) {
    for (long j = 0; j < N; j += GM_NR) {
        const long nr = CV_MIN(GM_NR, N - j);
        float *dst = pk + j * kc;
        for (long p = 0; p < kc; p++, dst += GM_NR) {
            const float *src = B + p * ldb + j;
            long q = 0;
            for (; q < nr; q++) dst[q] = src[q];
            for (; q < GM_NR; q++) dst[q] = 0.0f;
        }
    }
}

/* One register tile (mr x nr at cp) of a cache block; B packed (ldb == NR, zeros past nr)
 * lets a tile of full rows run the vector code and keep its first nr columns, and A packed
 * (apacked: MR-row panels, zeros past the last row) lets a tile of full columns keep its
 * first mr rows. */
static inline __attribute__((always_inline)) void FN(tile_nn)(
    long kc, const float *restrict ap, long sam, long sak, const float *restrict bp, long ldb,
    float *restrict cp, long ldc, long mr, long nr, int first, int packed, int apacked) {
    if (mr == GM_MR && nr == GM_NR) {
        FN(mk_nn)(kc, ap, sam, sak, bp, ldb, cp, ldc, first);
    } else if ((packed || nr == GM_NR) && (apacked || mr == GM_MR)) {
        float t[GM_MR * GM_NR];
        FN(mk_nn)(kc, ap, sam, sak, bp, ldb, t, GM_NR, 1);
        for (long i = 0; i < mr; i++)
            for (long q = 0; q < nr; q++)
                cp[i * ldc + q] = (first ? 0.0f : cp[i * ldc + q]) + t[i * GM_NR + q];
    } else {
        FN(mk_nn_edge)(kc, ap, sam, sak, bp, ldb, cp, ldc, mr, nr, first);
    }
}

/* Columns that fill at most a quarter of a packed panel (GM_NR / 4: the 49th column of a 7x7
 * output in panels of 16) are cheaper as dot products along the reduction than as a whole
 * register tile: MR x nr x kc / VW vector FMAs instead of MR x kc x NV. */
#define GM_DOT_COLS (GM_NR / 4)

/* Columns [0, nr) of panel bp (rows NR apart) as nr rows of kc floats at e (e[q kc + p]). */
CV_UNUSED static void FN(edge_cols)(long kc, long nr, const float *restrict bp,
                                    float *restrict e) {
    for (long q = 0; q < nr; q++)
        for (long p = 0; p < kc; p++) e[q * kc + p] = bp[p * GM_NR + q];
}

/* C(mr x nr at c) = (first ? 0 : C) + A(mr x kc, rows sam apart, contiguous along the
 * reduction) times the columns e (edge_cols), each a dot product in vectors. */
static void FN(mk_dot)(long kc, const float *restrict a, long sam, const float *restrict e,
                       long nr, float *restrict c, long ldc, long mr, int first) {
    const long kv = kc - kc % GM_VW;
    for (long i = 0; i < mr; i++) {
        const float *ai = a + i * sam;
        FN(vf) acc[GM_DOT_COLS > 0 ? GM_DOT_COLS : 1];
        for (long q = 0; q < nr; q++) acc[q] = (FN(vf)){0};
        for (long p = 0; p < kv; p += GM_VW) {
            FN(vf) av, ev;
            memcpy(&av, ai + p, sizeof av);
            for (long q = 0; q < nr; q++) {
                memcpy(&ev, e + q * kc + p, sizeof ev);
                acc[q] += av * ev;
            }
        }
        for (long q = 0; q < nr; q++) {
            float sum = 0;
            for (int l = 0; l < GM_VW; l++) sum += acc[q][l];
            for (long p = kv; p < kc; p++) sum += ai[p] * e[q * kc + p];
            c[i * ldc + q] = (first ? 0.0f : c[i * ldc + q]) + sum;
        }
    }
}

/* mk_dot with A packed (an MR-row panel: A(i, p) at a[p MR + i]): each column's MR sums in
 * one vector across the panel's rows (MR rounded up to a power of two, the lanes past MR
 * zero), four steps of the reduction in flight: one chain of dependent FMAs ran at the FMA's
 * latency, not its rate, and plain arrays of sums were kept in memory by the compiler. */
#if GM_MR <= 4
#define GM_DOT_VW 4
#elif GM_MR <= 8
#define GM_DOT_VW 8
#else
#define GM_DOT_VW 16
#endif
typedef float FN(vd) __attribute__((vector_size(GM_DOT_VW * sizeof(float))));

/* The MR floats at a, zeros past them: a whole vector where MR fills one, else a masked load
 * (AVX-512; a copy through memory, which the compiler made of it, stalled the FMAs). */
static inline __attribute__((always_inline)) FN(vd) FN(panel_row)(const float *restrict a) {
    FN(vd) v = {0};
#if GM_MR == GM_DOT_VW
    memcpy(&v, a, sizeof v);
#elif defined(__AVX512F__) && defined(__AVX512VL__) && GM_DOT_VW == 16
    v = (FN(vd))_mm512_maskz_loadu_ps((__mmask16)((1u << GM_MR) - 1), a);
#elif defined(__AVX512F__) && defined(__AVX512VL__) && GM_DOT_VW == 8
    v = (FN(vd))_mm256_maskz_loadu_ps((__mmask8)((1u << GM_MR) - 1), a);
#elif defined(__AVX512F__) && defined(__AVX512VL__) && GM_DOT_VW == 4
    v = (FN(vd))_mm_maskz_loadu_ps((__mmask8)((1u << GM_MR) - 1), a);
#else
    memcpy(&v, a, GM_MR * sizeof(float));
#endif
    return v;
}

static void FN(mk_dot_pa)(long kc, const float *restrict a, const float *restrict e, long nr,
                          float *restrict c, long ldc, long mr, int first) {
    for (long q = 0; q < nr; q++) {
        FN(vd) s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        const float *eq = e + q * kc;
        long p = 0;
        for (; p + 4 <= kc; p += 4) {
            s0 += FN(panel_row)(a + p * GM_MR) * eq[p];
            s1 += FN(panel_row)(a + (p + 1) * GM_MR) * eq[p + 1];
            s2 += FN(panel_row)(a + (p + 2) * GM_MR) * eq[p + 2];
            s3 += FN(panel_row)(a + (p + 3) * GM_MR) * eq[p + 3];
        }
        for (; p < kc; p++) s0 += FN(panel_row)(a + p * GM_MR) * eq[p];
        const FN(vd) sum = (s0 + s1) + (s2 + s3);
        for (long i = 0; i < mr; i++) c[i * ldc + q] = (first ? 0.0f : c[i * ldc + q]) + sum[i];
    }
}

/* A (M x Kd, rows lda apart) as the MR-row panels gemm_nn takes with sak == 0, in the order
 * its tiles read them: per cache block of KC (kc in the last), the blocks of all row tiles one
 * after the other, Mpad = M rounded up to MR rows, zeros past M: row tile i's block at
 * pc at pa + pc Mpad + i kc, A(i + r, pc + p) at [p MR + r]. */
CV_UNUSED static void FN(pack_a)(long M, long Kd, const float *restrict A, long lda,
                                 float *restrict pa) {
    const long mpad = (M + GM_MR - 1) / GM_MR * GM_MR;
    for (long pc = 0; pc < Kd; pc += GM_KC) {
        const long kc = CV_MIN(GM_KC, Kd - pc);
        for (long i = 0; i < mpad; i += GM_MR) {
            float *dst = pa + pc * mpad + i * kc;
            for (long p = 0; p < kc; p++, dst += GM_MR)
                for (long r = 0; r < GM_MR; r++)
                    dst[r] = i + r < M ? A[(i + r) * lda + pc + p] : 0.0f;
        }
    }
}

/* C[i0:i1, :N] = (accumulate ? C : 0) + A B with A(i, p) at A[i sam + p sak], B(p, j) at
 * B[p ldb + j]; tiles in the order GM_LO, B packed per cache block when GM_PB (unpacked
 * if the panel cannot be allocated). ldb == 0: B is packed already, each cache block as
 * pack_b writes it, one after the other (the block of rows [pc, pc + kc) at B + pc Npad,
 * Npad = N rounded up to NR): CpuIm2colGemm unfolds its input straight into that layout,
 * once for all threads. A block's panels are contiguous, as in a block packed here.
 * sak == 0: A is packed already, as pack_a writes it, and sam is its Mpad (i0 a multiple of
 * MR). */
CV_UNUSED static void FN(gemm_nn)(long i0, long i1, long N, long Kd, const float *A, long sam,
                                  long sak, const float *B, long ldb, float *C, long ldc,
                                  int accumulate) {
    float *pk = NULL;
#if GM_PB
    if (ldb != 0) {
        const size_t bytes =
            (size_t)CV_MIN(GM_KC, Kd) * ((N + GM_NR - 1) / GM_NR * GM_NR) * sizeof(float);
        pk = aligned_alloc(64, (bytes + 63) / 64 * 64);
    }
#endif
    const int packed = pk != NULL || ldb == 0, apacked = sak == 0;
    const long npad = (N + GM_NR - 1) / GM_NR * GM_NR;
    /* The last panel as dot products when it holds a few columns and A's rows are
     * contiguous along the reduction (mk_dot); e holds its columns, once per cache block. */
    const long jlast = npad - GM_NR, nlast = N - jlast;
    float *e = NULL;
    if (packed && (sak == 1 || apacked) && nlast <= GM_DOT_COLS)
        e = aligned_alloc(64, ((size_t)nlast * CV_MIN(GM_KC, Kd) * sizeof(float) + 63) / 64 * 64);
    for (long pc = 0; pc < Kd; pc += GM_KC) {
        const long kc = CV_MIN(GM_KC, Kd - pc);
        const int first = pc == 0 && !accumulate;
        if (pk) FN(pack_b)(kc, N, B + pc * ldb, ldb, pk);
        /* Column j's panel of this cache block: packed here, packed already, or B itself. */
#define GM_NN_B(j) (pk ? pk + (j) * kc : ldb == 0 ? B + pc * npad + (j) * kc : B + pc * ldb + (j))
/* Row tile i's A in this cache block: its panel's block when packed, else A itself. */
#define GM_NN_A(i) (apacked ? A + pc * sam + (i) * kc : A + (i) * sam + pc * sak)
#define GM_NN_TILE(i, j)                                                                      \
    if (e && (j) == jlast && apacked)                                                         \
        FN(mk_dot_pa)(kc, GM_NN_A(i), e, nlast, C + (i) * ldc + (j), ldc,                      \
                      CV_MIN(GM_MR, i1 - (i)), first);                                       \
    else if (e && (j) == jlast)                                                               \
        FN(mk_dot)(kc, A + (i) * sam + pc, sam, e, nlast, C + (i) * ldc + (j), ldc,           \
                   CV_MIN(GM_MR, i1 - (i)), first);                                          \
    else                                                                                      \
        FN(tile_nn)(kc, GM_NN_A(i), apacked ? 1 : sam, apacked ? GM_MR : sak, GM_NN_B(j),      \
                    packed ? GM_NR : ldb, C + (i) * ldc + (j), ldc, CV_MIN(GM_MR, i1 - (i)),   \
                    CV_MIN(GM_NR, N - (j)), first, packed, apacked)
        if (e) FN(edge_cols)(kc, nlast, GM_NN_B(jlast), e);
        GM_FOR_TILES(i, j, i0, i1, N, GM_NR) GM_NN_TILE(i, j);
#undef GM_NN_TILE
#undef GM_NN_A
#undef GM_NN_B
    }
    free(e);
    free(pk);
}

/* acc[MR][NV] = A(MR x kc) B(NV x kc)^T, both rows contiguous along the reduction. */
static inline __attribute__((always_inline)) void FN(mk_nt)(long kc, const float *restrict a,
                                                           long lda, const float *restrict b,
                                                           long ldb, float *restrict c, long ldc,
                                                           int first) {
    FN(vf) acc[GM_MR][GM_NV];
    for (int i = 0; i < GM_MR; i++)
        for (int v = 0; v < GM_NV; v++) acc[i][v] = (FN(vf)){0};
    const long kv = kc - kc % GM_VW; /* the reduction in whole vectors; the rest below */
    for (long p = 0; p < kv; p += GM_VW) {
        FN(vf) av[GM_MR], bv[GM_NV];
        for (int i = 0; i < GM_MR; i++) memcpy(&av[i], a + i * lda + p, sizeof av[i]);
        for (int v = 0; v < GM_NV; v++) memcpy(&bv[v], b + v * ldb + p, sizeof bv[v]);
        for (int i = 0; i < GM_MR; i++)
            for (int v = 0; v < GM_NV; v++) acc[i][v] += av[i] * bv[v];
    }
    for (int i = 0; i < GM_MR; i++)
        for (int v = 0; v < GM_NV; v++) {
            float s = 0;
            for (int l = 0; l < GM_VW; l++) s += acc[i][v][l];
            for (long q = kv; q < kc; q++) s += a[i * lda + q] * b[v * ldb + q];
            c[i * ldc + v] = (first ? 0.0f : c[i * ldc + v]) + s;
        }
}

static void FN(mk_nt_edge)(long kc, const float *restrict a, long lda, const float *restrict b,
                           long ldb, float *restrict c, long ldc, long mr, long nb, int first) {
    for (long i = 0; i < mr; i++)
        for (long v = 0; v < nb; v++) {
            float s = 0;
            for (long q = 0; q < kc; q++) s += a[i * lda + q] * b[v * ldb + q];
            c[i * ldc + v] = (first ? 0.0f : c[i * ldc + v]) + s;
        }
}

/* C[i0:i1, :N] = (accumulate ? C : 0) + A B^T with A(i, p) at A[i lda + p], B(j, p) at
 * B[j ldb + p]; tiles in the order GM_LO. */
CV_UNUSED static void FN(gemm_nt)(long i0, long i1, long N, long Kd, const float *A, long lda,
                        const float *B, long ldb, float *C, long ldc, int accumulate) {
    for (long pc = 0; pc < Kd; pc += GM_KC) {
        const long kc = CV_MIN(GM_KC, Kd - pc);
        const int first = pc == 0 && !accumulate;
#define GM_NT_TILE(i, j)                                                                     \
    do {                                                                                     \
        const long mr = CV_MIN(GM_MR, i1 - (i)), nb = CV_MIN(GM_NV, N - (j));                \
        const float *ap = A + (i) * lda + pc, *bp = B + (j) * ldb + pc;                      \
        float *cp = C + (i) * ldc + (j);                                                     \
        if (mr == GM_MR && nb == GM_NV)                                                      \
            FN(mk_nt)(kc, ap, lda, bp, ldb, cp, ldc, first);                                 \
        else                                                                                 \
            FN(mk_nt_edge)(kc, ap, lda, bp, ldb, cp, ldc, mr, nb, first);                    \
    } while (0)
        GM_FOR_TILES(i, j, i0, i1, N, GM_NV) GM_NT_TILE(i, j);
#undef GM_NT_TILE
    }
}

/* Row blocks [r0, r1) of MR rows, of the problem numbered `job`, from a flat task range
 * over (jobs x row blocks). */
#define GM_FOR_ROW_BLOCKS(begin, end, rows, job, r0, r1)                                      \
    for (long gm_t = (begin), job, r0, r1, gm_nb = ((rows) + GM_MR - 1) / GM_MR;            \
         gm_t < (end) && ((job = gm_t / gm_nb), (r0 = gm_t % gm_nb),                         \
                          (r1 = CV_MIN(gm_nb, r0 + (end) - gm_t)), 1);                       \
         gm_t += r1 - r0)
