# cuset — `make` builds train and gen; `make test` runs the test suite.
CC      ?= gcc
# the CPU it is built on: on x86-64 with 512-bit vectors where it has AVX-512; elsewhere
# (aarch64: Grace, Graviton) gcc's -mcpu=native (the x86 option would stop the build)
ARCH    ?= $(if $(filter x86_64,$(shell uname -m)),-march=native -mprefer-vector-width=512,-mcpu=native)
# glibc's checked string and printf functions, as Ubuntu's gcc turns them on by default: a
# bug they catch there (an overflow, a printf format that skips a numbered argument) stops
# the build's programs and tests here too
FORTIFY := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3
CFLAGS  ?= -O3 $(ARCH) -fopenmp -std=gnu11 -Wall -Wextra -Wno-unused-function $(FORTIFY)
LDLIBS  ?= -lm
PYTHON  ?= /usr/bin/python3
FUZZ_SECONDS ?= 180
# The GPU backend (cuset.cu) is built when nvcc is found (PATH, then /usr/local/cuda);
# train and gen then use the GPU when one answers (--device auto), else the CPU. Machine
# code for sm_80 and sm_90, and sm_90's PTX, which the driver compiles for a newer GPU; a
# toolkit older than CUDA 11.8 knows no sm_90: sm_80's code and PTX then.
# NVCCFLAGS="... -DCUSET_DEBUG" makes the check after every launch wait for the kernel.
NVCC    ?= $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
NVCC_HAS_SM90 := $(if $(NVCC),$(shell $(NVCC) --version 2>/dev/null | \
    awk '/release/ { split($$0, a, "release "); split(a[2], v, "."); if (v[1] > 11 || (v[1] == 11 && v[2] + 0 >= 8)) print "yes" }'))
SM90_CODE := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
SM80_PTX := -gencode arch=compute_80,code=compute_80
GENCODE := -gencode arch=compute_80,code=sm_80 $(if $(NVCC_HAS_SM90),$(SM90_CODE),$(SM80_PTX))
NVCCFLAGS ?= -O3 $(GENCODE) -Xptxas -warn-spills --std=c++17
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
ifneq ($(NVCC),)
CUDA_OBJ    = cuset_cuda.o
CUDA_LDLIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
endif

BINS = train gen
# the data side, each an stb-style header of its own
DATA_H = data/tokenizer.h data/annotate.h data/textdata.h data/gpt2.h data/json.h
TEST_BINS = test/oracle_case test/test_cuset test/test_tokenizer test/test_annotate test/test_data test/bench_tokenizer test/test_corpus test/test_eval test/test_confidence test/test_sandbox test/test_gpt2
FUZZERS = annotate tokenizer checkpoint jsonl data gpt2

all: $(BINS) emu/nvcc-emu emu/pch/cuemu.h.gch

# What the system must provide (Debian packages), checked before anything is built: the one
# list is test/deps.sh, which installs what is missing as root and else prints the apt-get line.
deps-build:
	@bash test/deps.sh build
deps-test deps-cudabench: deps-%: deps-build
	@PYTHON=$(PYTHON) bash test/deps.sh $*

train: train.c cuset.h $(DATA_H) $(CUDA_OBJ) | deps-build
	$(CC) $(CFLAGS) -o $@ train.c $(CUDA_OBJ) $(LDLIBS) $(CUDA_LDLIBS)

gen: gen.c cuset.h $(DATA_H) data/confidence.h emu/eval.h emu/sandbox.h $(CUDA_OBJ) | deps-build
	$(CC) $(CFLAGS) -o $@ gen.c $(CUDA_OBJ) $(LDLIBS) $(CUDA_LDLIBS)

cuset_cuda.o: cuset.cu cuset.h | deps-build
	$(NVCC) $(NVCCFLAGS) -c cuset.cu -o $@

# The GPU tests and benchmark (need nvcc and a GPU; test/gpu_check.sh runs all of it).
# Their host code, the CPU reference of cuset.h among it, gets the C programs' ARCH: without
# it x86-64's baseline has no FMA instruction and fmaf becomes a library call: the CPU
# reference's whole step at L=4, C=256, T=256, B=4 took 72 s so, against 1.1 s with it.
NVCC_HOST = -Xcompiler -fopenmp $(foreach f,$(ARCH),-Xcompiler $(f))
test/test_gpu test/test_gpu_attn_loss: test/%: test/%.cu cuset.cu cuset.h | deps-build
	$(NVCC) $(NVCCFLAGS) -I. $(NVCC_HOST) -o $@ $< cuset.cu -lgomp

test/bench_gpu: test/bench_gpu.cu cuset.cu cuset.h | deps-build
	$(NVCC) $(NVCCFLAGS) $(NVCC_HOST) -o $@ test/bench_gpu.cu cuset.cu -lgomp

test-gpu: test/test_gpu test/test_gpu_attn_loss
	./test/test_gpu && ./test/test_gpu_attn_loss

bench-gpu: train test/bench_gpu
	PYTHON=$(PYTHON) bash test/bench_gpu.sh

test/%: test/%.c cuset.h $(DATA_H) test/tok_testlib.h test/testlib.h | deps-build
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)
test/test_confidence: data/confidence.h
test/test_eval test/test_sandbox: emu/eval.h emu/sandbox.h

test: $(BINS) $(TEST_BINS) data/corpus emu/nvcc-emu emu/pch/cuemu.h.gch | deps-test
	PYTHON=$(PYTHON) bash test/run_tests.sh

# The CPU's FMA peak, cuset and PyTorch at three shapes (PROFILE=1: time per op too).
bench-cpu: train test/bench_cpu
	PYTHON=$(PYTHON) bash test/bench_cpu.sh

bench-tokenizer: test/bench_tokenizer
	./test/bench_tokenizer

# libFuzzer targets (clang; Debian: apt-get install clang libclang-rt-14-dev), each run
# for FUZZ_SECONDS with its corpus under test/fuzz/corpus/NAME.
fuzz: $(FUZZERS:%=fuzz-%)
fuzz-%: test/fuzz_%.c cuset.h $(DATA_H)
	mkdir -p test/fuzz/corpus/$*
	[ ! -d test/fuzz/seeds/$* ] || cp -n test/fuzz/seeds/$*/* test/fuzz/corpus/$*/
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o test/fuzz/fuzz_$* $< -lm
	CUSET_FUZZ_SEED_DIR=test/fuzz/corpus/$* ./test/fuzz/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=test/fuzz/ test/fuzz/corpus/$*

# The default corpus of CUDA tasks (data/corpus.c and its families), and the quick start.
# gcc whatever CC is: the kernel templates are raw string literals, R"(...)", which GNU C has
# and clang's C does not. No fused multiply-adds (-ffp-contract=off; aarch64 gcc makes them by
# default, x86-64 has none without -march), so a seed gives the same bytes on every machine.
data/corpus: data/corpus.c data/corpus.h data/annotate.h data/json.h $(wildcard data/families_*.c) | deps-build
	gcc -std=gnu11 -O2 -ffp-contract=off -Wall -Wextra $(FORTIFY) -o $@ data/corpus.c -lm

data: data/corpus
	./data/corpus --out data/default

# Running CUDA programs on the CPU: emu/nvcc-emu builds a .cu file against the emulator
# runtime emu/cuemu.h; `make cudabench` runs CUDABench's 255 tasks (../shared/cudabench) with it.
emu/nvcc-emu: emu/nvcc-emu.c | deps-build
	$(CC) -std=c11 -O2 -Wall -Wextra $(FORTIFY) -o $@ emu/nvcc-emu.c

# the emulator runtime precompiled once (builds of CUDA programs then skip parsing it)
emu/pch/cuemu.h.gch: emu/nvcc-emu emu/cuemu.h emu/pch/cuemu.h $(wildcard emu/include/* emu/include/*/*)
	./emu/nvcc-emu --build-pch

cudabench: emu/nvcc-emu emu/pch/cuemu.h.gch | deps-cudabench
	PYTHON=$(PYTHON) bash test/cudabench.sh

quickstart:
	bash data/quickstart.sh

# The paper's comparison in miniature (data/experiment.sh): PRESET=cpu|gpu|smoke (default:
# gpu with a GPU, else cpu), SEEDS=1,2,3, SET="BASE_STEPS=900 ..." (a preset's settings
# changed; data/experiment.sh lists them), RUN=DIR (default runs/experiment-PRESET, with SET
# runs/experiment-PRESET+SET), REUSE=DIR (a finished run whose stages with the same settings
# are linked in; a SET run in its default RUN reuses runs/experiment-PRESET). The names of
# make's command-line variables go along, so that one nothing reads (SEED=2) is refused.
experiment:
	PRESET="$(PRESET)" SEEDS="$(SEEDS)" RUN="$(RUN)" REUSE="$(REUSE)" SET="$(SET)" \
	MAKE_VARIABLES="$(strip $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))" \
	bash data/experiment.sh

compile-test-split: data
	bash data/compile_split.sh data/default test

clean:
	rm -f $(BINS) $(TEST_BINS) data/corpus emu/nvcc-emu emu/pch/cuemu.h.gch cuset_cuda.o test/test_gpu test/test_gpu_attn_loss test/bench_gpu
	rm -rf test/fuzz/fuzz_*

.PHONY: test-gpu bench-gpu
.PHONY: deps-build deps-test deps-cudabench
.PHONY: experiment
.PHONY: all test bench-cpu bench-tokenizer fuzz data quickstart compile-test-split clean cudabench
