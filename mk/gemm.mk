# mk/gemm.mk: link flags of the integer kernels' oracle test and benchmark.
# tests/unit/test-oracle-xnnpack.c and bench/bench-gemm.c call XNNPACK's
# operator API (Debian libxnnpack-dev) with a pthreadpool.
TEST_LDLIBS += -lXNNPACK -lpthreadpool
BENCH_LDLIBS += -lXNNPACK -lpthreadpool
