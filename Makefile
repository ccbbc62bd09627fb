# cuset — `make` builds train and gen; `make test` runs the test suite.
CC      ?= gcc
ARCH    ?= -march=native -mprefer-vector-width=512
CFLAGS  ?= -O3 $(ARCH) -fopenmp -std=gnu11 -Wall -Wextra -Wno-unused-function
LDLIBS  ?= -lm
PYTHON  ?= /usr/bin/python3
FUZZ_SECONDS ?= 180

BINS = train gen
TEST_BINS = test/oracle_case test/test_cuset test/test_tokenizer test/test_annotate test/test_data test/bench_tokenizer test/test_corpus
FUZZERS = annotate tokenizer checkpoint jsonl data

all: $(BINS)

train: train.c cuset.h
	$(CC) $(CFLAGS) -o $@ train.c $(LDLIBS)

gen: gen.c cuset.h
	$(CC) $(CFLAGS) -o $@ gen.c $(LDLIBS)

test/%: test/%.c cuset.h test/tok_testlib.h
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

test: $(BINS) $(TEST_BINS) data/corpus
	PYTHON=$(PYTHON) bash test/run_tests.sh

bench-cpu: train
	PYTHON=$(PYTHON) bash test/bench_cpu.sh

bench-tokenizer: test/bench_tokenizer
	./test/bench_tokenizer

# libFuzzer targets (clang; Debian: apt-get install clang libclang-rt-14-dev), each run
# for FUZZ_SECONDS with its corpus under test/fuzz/corpus/NAME.
fuzz: $(FUZZERS:%=fuzz-%)
fuzz-%: test/fuzz_%.c cuset.h
	mkdir -p test/fuzz/corpus/$*
	[ ! -d test/fuzz/seeds/$* ] || cp -n test/fuzz/seeds/$*/* test/fuzz/corpus/$*/
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -o test/fuzz/fuzz_$* $< -lm
	CUSET_FUZZ_SEED_DIR=test/fuzz/corpus/$* ./test/fuzz/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=test/fuzz/ test/fuzz/corpus/$*

# The default corpus of CUDA tasks (data/corpus.c and its families), and the quick start.
data/corpus: data/corpus.c data/corpus.h $(wildcard data/families_*.c)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -o $@ data/corpus.c -lm

data: data/corpus
	./data/corpus --out data/default

quickstart:
	bash data/quickstart.sh

compile-test-split: data
	bash data/compile_split.sh data/default test

clean:
	rm -f $(BINS) $(TEST_BINS) data/corpus
	rm -rf test/fuzz/fuzz_*

.PHONY: all test bench-cpu bench-tokenizer fuzz data quickstart compile-test-split clean
