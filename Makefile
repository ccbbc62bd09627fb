# cuset — `make` builds train and gen; `make test` runs the test suite.
CC      ?= gcc
ARCH    ?= -march=native -mprefer-vector-width=512
CFLAGS  ?= -O3 $(ARCH) -fopenmp -std=gnu11 -Wall -Wextra -Wno-unused-function
LDLIBS  ?= -lm
PYTHON  ?= /usr/bin/python3

BINS = train gen
TEST_BINS = test/oracle_case test/test_cuset

all: $(BINS)

train: train.c cuset.h
	$(CC) $(CFLAGS) -o $@ train.c $(LDLIBS)

gen: gen.c cuset.h
	$(CC) $(CFLAGS) -o $@ gen.c $(LDLIBS)

test/%: test/%.c cuset.h
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

test: $(BINS) $(TEST_BINS)
	PYTHON=$(PYTHON) bash test/run_tests.sh

bench-cpu: train
	PYTHON=$(PYTHON) bash test/bench_cpu.sh

clean:
	rm -f $(BINS) $(TEST_BINS)

.PHONY: all test bench-cpu clean
