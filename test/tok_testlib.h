// tok_testlib.h - shared by test_tokenizer.c and bench_tokenizer.c: reads the CUDABench
// programs (the "bench.cu" field of each JSON line) and holds a small embedded CUDA
// program for when that file is absent. Include after stb_ds.h.
#ifndef TOK_TESTLIB_H
#define TOK_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOK_TEST_FN static __attribute__((unused)) // not every program uses every helper

// Used when ../shared/cudabench is absent.
static const char tok_test_snippet[] =
    "#include <cuda_runtime.h>\n"
    "#include <cstdio>\n"
    "\n"
    "// y = a*x + y over n floats, one thread per element\n"
    "__global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "\n"
    "// sum of n floats: each block reduces 256 values in shared memory\n"
    "__global__ void reduce_sum(const float *in, float *out, int n) {\n"
    "    __shared__ float buf[256];\n"
    "    int tid = threadIdx.x;\n"
    "    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;\n"
    "    float v = 0.0f;\n"
    "    if (i < n) v += in[i];\n"
    "    if (i + blockDim.x < n) v += in[i + blockDim.x];\n"
    "    buf[tid] = v;\n"
    "    __syncthreads();\n"
    "    for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (tid < s) buf[tid] += buf[tid + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (tid == 0) atomicAdd(out, buf[0]);\n"
    "}\n"
    "\n"
    "__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K) {\n"
    "    __shared__ float As[16][16];\n"
    "    __shared__ float Bs[16][16];\n"
    "    int row = blockIdx.y * 16 + threadIdx.y;\n"
    "    int col = blockIdx.x * 16 + threadIdx.x;\n"
    "    float acc = 0.0f;\n"
    "    for (int t = 0; t < (K + 15) / 16; ++t) {\n"
    "        As[threadIdx.y][threadIdx.x] = (row < M && t * 16 + threadIdx.x < K) ? A[row * K + t * 16 + threadIdx.x] : 0.0f;\n"
    "        Bs[threadIdx.y][threadIdx.x] = (col < N && t * 16 + threadIdx.y < K) ? B[(t * 16 + threadIdx.y) * N + col] : 0.0f;\n"
    "        __syncthreads();\n"
    "        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (row < M && col < N) C[row * N + col] = acc;\n"
    "}\n"
    "\n"
    "int main() {\n"
    "    const int n = 1 << 20;\n"
    "    float *d_x, *d_y, *d_out;\n"
    "    cudaMalloc(&d_x, n * sizeof(float));\n"
    "    cudaMalloc(&d_y, n * sizeof(float));\n"
    "    cudaMalloc(&d_out, sizeof(float));\n"
    "    cudaMemset(d_out, 0, sizeof(float));\n"
    "    int threads = 256;\n"
    "    int blocks = (n + threads - 1) / threads;\n"
    "    saxpy<<<blocks, threads>>>(n, 2.0f, d_x, d_y);\n"
    "    reduce_sum<<<(n + 511) / 512, 256>>>(d_y, d_out, n);\n"
    "    cudaError_t err = cudaGetLastError();\n"
    "    if (err != cudaSuccess) { printf(\"error: %s\\n\", cudaGetErrorString(err)); return 1; }\n"
    "    float h_out = 0.0f;\n"
    "    cudaMemcpy(&h_out, d_out, sizeof(float), cudaMemcpyDeviceToHost);\n"
    "    cudaDeviceSynchronize();\n"
    "    printf(\"sum = %f\\n\", h_out);\n"
    "    cudaFree(d_x); cudaFree(d_y); cudaFree(d_out);\n"
    "    return 0;\n"
    "}\n";

// Appends code point cp as UTF-8.
TOK_TEST_FN void tok_test_put_utf8(char **out, unsigned cp) {
    if (cp < 0x80) arrput(*out, (char)cp);
    else if (cp < 0x800) { arrput(*out, (char)(0xc0 | cp >> 6)); arrput(*out, (char)(0x80 | (cp & 63))); }
    else if (cp < 0x10000) {
        arrput(*out, (char)(0xe0 | cp >> 12)); arrput(*out, (char)(0x80 | ((cp >> 6) & 63)));
        arrput(*out, (char)(0x80 | (cp & 63)));
    } else {
        arrput(*out, (char)(0xf0 | cp >> 18)); arrput(*out, (char)(0x80 | ((cp >> 12) & 63)));
        arrput(*out, (char)(0x80 | ((cp >> 6) & 63))); arrput(*out, (char)(0x80 | (cp & 63)));
    }
}

TOK_TEST_FN int tok_test_hex4(const char *p, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return 0;
        *v = *v << 4 | (unsigned)d;
    }
    return 1;
}

// Decodes the JSON string whose opening quote is at p[-1] (so p points at its first
// character), up to end. Handles \n \t \r \b \f \" \\ \/ and \uXXXX (with surrogate pairs)
// to UTF-8. Returns a new stb_ds char array, or NULL on malformed input.
TOK_TEST_FN char *tok_test_json_string(const char *p, const char *end) {
    char *out = NULL;
    arrput(out, 0); arrsetlen(out, 0); // non-NULL even when empty
    while (p < end && *p != '"') {
        if (*p != '\\') { arrput(out, *p++); continue; }
        if (++p >= end) break;
        char c = *p++;
        switch (c) {
        case 'n': arrput(out, '\n'); break;
        case 't': arrput(out, '\t'); break;
        case 'r': arrput(out, '\r'); break;
        case 'b': arrput(out, '\b'); break;
        case 'f': arrput(out, '\f'); break;
        case '"': case '\\': case '/': arrput(out, c); break;
        case 'u': {
            unsigned cp, lo;
            if (end - p < 4 || !tok_test_hex4(p, &cp)) goto bad;
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                tok_test_hex4(p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
            tok_test_put_utf8(&out, cp);
            break;
        }
        default: goto bad;
        }
    }
    if (p >= end) goto bad;
    return out;
bad:
    arrfree(out);
    return NULL;
}

// Finds the string value of "key" in the JSON line [p, eol) and decodes it (NULL if absent).
TOK_TEST_FN char *tok_test_json_field(const char *p, const char *eol, const char *key) {
    size_t klen = strlen(key);
    for (const char *q = p; q + klen + 2 <= eol; q++) {
        if (q[0] != '"' || memcmp(q + 1, key, klen) != 0 || q[klen + 1] != '"') continue;
        const char *v = q + klen + 2;
        while (v < eol && (*v == ' ' || *v == ':')) v++;
        return v < eol && *v == '"' ? tok_test_json_string(v + 1, eol) : NULL;
    }
    return NULL;
}

// Reads the "bench.cu" field of each line of a JSONL file into an stb_ds array of stb_ds
// char arrays, and into *task (if not NULL) the index of each program's "task_name" in
// order of first appearance (programs of one task are variants of one another, so a fair
// held-out split is by task). Returns NULL when the file cannot be opened.
TOK_TEST_FN char **tok_test_load_cudabench(const char *path, int **task) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char **progs = NULL, *data = NULL, tmp[65536], **names = NULL;
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) memcpy(arraddnptr(data, got), tmp, got);
    fclose(f);
    const char *p = data, *end = data + arrlen(data);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        char *s = tok_test_json_field(p, eol, "bench.cu");
        if (s) {
            char *name = tok_test_json_field(p, eol, "task_name");
            int t = 0;
            if (name) arrput(name, 0);
            while (t < (int)arrlen(names) && !(name && names[t] && strcmp(names[t], name) == 0)) t++;
            if (t == (int)arrlen(names)) arrput(names, name); else arrfree(name);
            arrput(progs, s);
            if (task) arrput(*task, t);
        }
        p = eol + 1;
    }
    for (ptrdiff_t i = 0; i < arrlen(names); i++) arrfree(names[i]);
    arrfree(names);
    arrfree(data);
    return progs;
}

// Finds the CUDABench file: $CUSET_CUDABENCH, else the usual places relative to the
// repository root or to test/.
TOK_TEST_FN char **tok_test_find_cudabench(const char **where, int **task) {
    const char *cands[] = {getenv("CUSET_CUDABENCH"), "../shared/cudabench/cudabench-dev.jsonl",
                           "../../shared/cudabench/cudabench-dev.jsonl"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
        if (!cands[i]) continue;
        char **progs = tok_test_load_cudabench(cands[i], task);
        if (progs) { *where = cands[i]; return progs; }
    }
    *where = NULL;
    return NULL;
}

TOK_TEST_FN void tok_test_free_progs(char **progs) {
    for (ptrdiff_t i = 0; i < arrlen(progs); i++) arrfree(progs[i]);
    arrfree(progs);
}

// Reference encoder, straight from the definition: apply every merge in the order learned,
// left to right, to one piece of any length (reference_encode_piece), and to each chunk of
// a text (reference_encode).
#if defined(__clang__)
__attribute__((no_sanitize("coverage"))) // a checker, not code to explore
#endif
static void reference_encode_piece(const CusetTokenizer *tk, const unsigned char *u, int len, int **ids) {
    int *t = (int *)malloc((size_t)(len > 0 ? len : 1) * sizeof *t);
    for (int k = 0; k < len; k++) t[k] = u[k];
    for (int m = 0; m < (int)arrlen(tk->merges) / 2 && len > 1; m++) {
        int a = tk->merges[2 * m], b = tk->merges[2 * m + 1], j = 0;
        for (int k = 0; k < len; j++) {
            if (k + 1 < len && t[k] == a && t[k + 1] == b) { t[j] = CUSET_TOK_FIRST_MERGE + m; k += 2; }
            else t[j] = t[k++];
        }
        len = j;
    }
    for (int k = 0; k < len; k++) arrput(*ids, t[k]);
    free(t);
}
#if defined(__clang__)
__attribute__((no_sanitize("coverage")))
#endif
static void reference_encode(const CusetTokenizer *tk, const char *s, size_t n, int **ids) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, end; i < n; i = end) {
        end = cuset__tok_chunk_end(u, n, i);
        reference_encode_piece(tk, u + i, (int)(end - i), ids);
    }
}

#endif // TOK_TESTLIB_H
