// Compile-only stand-in for cublas_v2.h (the declarations bench.cu uses), for reading registers and spills on a
// machine without cuBLAS: nvcc -O3 -std=c++17 -arch=sm_90 -Inotes/dgemm/stub -c -Xptxas -v notes/dgemm/bench.cu
// -o /tmp/bench.o. run.sh does not use it (it links the real cuBLAS).
#pragma once
typedef struct cublasContext *cublasHandle_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef int cublasStatus_t;
cublasStatus_t cublasCreate(cublasHandle_t *);
cublasStatus_t cublasDgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double *,
                           const double *, int, const double *, int, const double *, double *, int);
