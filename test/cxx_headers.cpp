// The headers, implementations included, built as C++17 (g++): each is meant to be copied
// into other projects, C++ ones too. Beyond compiling and linking, a few calls run: a
// tokenizer trained, then text through encode and decode unchanged; the annotator's spans
// of a kernel and its launch; the command-line number parser. Prints OK, exits 0.
#define CUSET_IMPLEMENTATION
#define CUSET_TOKENIZER_IMPLEMENTATION
#define CUSET_ANNOTATE_IMPLEMENTATION
#define CUSET_TEXTDATA_IMPLEMENTATION
#define CUSET_EVAL_IMPLEMENTATION
#define CUSET_CONFIDENCE_IMPLEMENTATION
#define CUSET_GPT2_IMPLEMENTATION
#include "cuset.h"
#include "data/tokenizer.h"
#include "data/annotate.h"
#include "data/textdata.h"
#include "emu/eval.h"
#include "data/confidence.h"
#include "data/gpt2.h"
#include <string>

int main() {
    int bad = 0;
    const std::string src = "__global__ void scale(float *x, float a, int n) {\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n) x[i] *= a;\n}\n"
                            "int main() { scale<<<4, 256>>>(x, 2.0f, n); }\n";
    const char *texts[] = { src.c_str() };
    const size_t lens[] = { src.size() };
    CusetTokenizer tk = {};
    cuset_tok_init(&tk);
    cuset_tok_train(&tk, texts, lens, 1, 300, 0);
    int *ids = NULL;
    char *back = NULL;
    cuset_tok_encode(&tk, src.c_str(), src.size(), &ids);
    cuset_tok_decode(&tk, ids, arrlen(ids), &back);
    if (std::string(back, arrlen(back)) != src || arrlen(ids) >= (ptrdiff_t)src.size()) {
        printf("tokenizer: %d ids, the text did not come back\n", (int)arrlen(ids));
        bad++;
    }
    CusetSpan *spans = NULL;
    size_t nspans = cuset_annotate(src.c_str(), src.size(), &spans);
    int global = 0, launch = 0;
    for (size_t i = 0; i < nspans; i++) {
        global += spans[i].kind == CUSET_SPAN_GLOBAL_DEF;
        launch += spans[i].kind == CUSET_SPAN_LAUNCH;
    }
    if (global != 1 || launch != 1) {
        printf("annotate: %d __global__ spans, %d launches; want 1 and 1\n", global, launch);
        bad++;
    }
    double v = 0;
    char err[200] = "";
    if (cuset_parse_number("--steps", "12", 0, 100, 1, &v, err, sizeof err) || v != 12) {
        printf("parse: 12 gave %g (%s)\n", v, err);
        bad++;
    }
    if (!cuset_parse_number("--steps", "1.5", 0, 100, 1, &v, err, sizeof err)) {
        printf("parse: 1.5 taken as a count\n");
        bad++;
    }
    arrfree(ids);
    arrfree(back);
    arrfree(spans);
    cuset_tok_free(&tk);
    printf("%s\n", bad ? "FAIL" : "OK");
    return bad != 0;
}
