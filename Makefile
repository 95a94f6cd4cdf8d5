# qprobe build. `make` builds build/qprobe; see README.md for the rest.
#
# Sources are found by folder, so adding a file needs no edit here. Files
# named *-avx2.c, *-avx512.c, *-vnni.c and *-neon.c get their ISA flags
# from the pattern rules below and are only ever called after a run-time
# CPU check. Module-specific additions live in mk/*.mk.

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
CXX     ?= g++
OPT     ?= -O2
WERROR  ?= -Werror
SAN     ?=
V       ?= 0
Q       := $(if $(filter 1,$(V)),,@)

# gcc-only flags in mk/*.mk test this (make fuzz builds with clang)
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -qi clang && echo 1)

PKGS    := openblas lapacke hdf5 libcjson libzip libprotobuf-c
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
ifeq ($(SAN),fuzz)
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

CPPFLAGS += -I. -I$(BUILD)/gen $(PKG_CFLAGS) -D_GNU_SOURCE
# -ffp-contract=off: no multiply and add contracted into an FMA unless the
# code asks for one (gcc's default under -std=c11, not clang's), so fused
# and step-by-step float paths give the same bits under either compiler
CFLAGS   += -std=c11 -g $(OPT) -Wall -Wextra $(WERROR) -MMD -MP -pthread $(SANFLAGS) -ffp-contract=off
CXXFLAGS += -std=c++14 -g $(OPT) -Wall -Wextra $(WERROR) -MMD -MP -pthread $(SANFLAGS)
LDFLAGS  += -pthread $(SANFLAGS)
LDLIBS   += $(PKG_LIBS) -lcsv -lz -lm

LIB_DIRS  := core formats kernels kernels/ref kernels/x86 kernels/arm quant model analysis
LIB_SRCS  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
CLI_SRCS  := $(wildcard cli/*.c)
TEST_SRCS := tests/test.c $(wildcard tests/unit/*.c)
TEST_CXX_SRCS := $(wildcard tests/unit/*.cc)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz-*.c)
BENCH_SRCS := $(wildcard bench/bench-*.c)

# ONNX protobuf, generated from the onnx.proto that libonnx-dev installs.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
GEN_C := $(BUILD)/gen/onnx.pb-c.c
GEN_H := $(BUILD)/gen/onnx.pb-c.h

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJS  := $(call obj,$(LIB_SRCS)) $(BUILD)/obj/gen/onnx.pb-c.o
CLI_OBJS  := $(call obj,$(CLI_SRCS))
TEST_OBJS := $(call obj,$(TEST_SRCS)) $(patsubst %.cc,$(BUILD)/obj/%.o,$(TEST_CXX_SRCS))
LIB       := $(BUILD)/libqprobe.a
BIN       := $(BUILD)/qprobe
TEST_BIN  := $(BUILD)/qprobe-test
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
LIBFUZZER_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/libfuzzer/%,$(FUZZ_SRCS))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
TEST_LDLIBS ?=

.DEFAULT_GOAL := all
-include $(wildcard mk/*.mk)

.PHONY: all test check asan bench install demo clean deps fuzz
all: $(BIN)

deps:
	@sh scripts/deps.sh

$(GEN_C): $(ONNX_PROTO)
	@mkdir -p $(BUILD)/gen
	@$(if $(Q),echo "  PROTOC  $<")
	$(Q)cp $(ONNX_PROTO) $(BUILD)/gen/onnx.proto
	$(Q)cd $(BUILD)/gen && protoc-c --c_out=. onnx.proto

# one protoc-c run makes both files
$(GEN_H): $(GEN_C)

$(BUILD)/obj/gen/onnx.pb-c.o: $(GEN_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 -g $(OPT) -w $(SANFLAGS) -c $< -o $@

# every object may include the generated header
$(call obj,$(LIB_SRCS) $(CLI_SRCS) $(TEST_SRCS) $(FUZZ_SRCS) $(BENCH_SRCS)): | $(GEN_H)

$(BUILD)/obj/%-avx2.o:   XFLAGS := -mavx2 -mfma -mf16c
$(BUILD)/obj/%-avx512.o: XFLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/obj/%-vnni.o:   XFLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma
$(BUILD)/obj/%-avxvnni.o: XFLAGS := -mavx2 -mfma -mavxvnni

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(XFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(XFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	@$(if $(Q),echo "  AR      $@")
	$(Q)ar rcs $@ $^

$(BIN): $(CLI_OBJS) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)

$(TEST_BIN): $(TEST_OBJS) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(TEST_OBJS) $(LIB) $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(BUILD)/obj/tests/fuzz/driver.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj/tests/fuzz/driver.o $(LIB) $(LDLIBS)

# the same fuzz targets linked with libFuzzer (make fuzz)
$(BUILD)/libfuzzer/%: $(BUILD)/obj/tests/fuzz/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(BENCH_LDLIBS) $(LDLIBS)

# The README's test command. Installs missing packages first (as root).
test: deps
	@$(MAKE) --no-print-directory test-run

.PHONY: test-run
test-run: $(BIN) $(TEST_BIN) $(FUZZ_BINS)
	@sh tests/run.sh $(BUILD)

check: test

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT=-O1 test-run

# Coverage-guided fuzzing with clang's libFuzzer, ASan and UBSan: builds
# build-fuzz/libfuzzer/fuzz-NAME; run one with its seeds, e.g.
#   build-fuzz/libfuzzer/fuzz-npy tests/fuzz/seeds/npy -max_total_time=60
fuzz: deps
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang CXX=clang++ SAN=fuzz \
	    OPT=-O1 WERROR= LDLIBS="$(LDLIBS) -lstdc++" $(LIBFUZZER_BINS:$(BUILD)/%=build-fuzz/%)

bench: deps
	@$(MAKE) --no-print-directory $(BIN) $(BENCH_BINS)
	@sh bench/run.sh $(BUILD)

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc) $(BIN)
	@sh scripts/demo.sh $(BUILD)

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/qprobe

clean:
	rm -rf build build-asan build-fuzz

# keep intermediate objects (the fuzz driver)
.SECONDARY:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
