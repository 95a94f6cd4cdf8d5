# mk/neon.mk: the aarch64 kernels (kernels/arm/) and `make test-aarch64`.
#
# kernels/arm/*.c are compiled on every architecture (the Makefile finds
# sources by folder); each file's body is #if defined(__aarch64__). When
# the compiler targets aarch64 (`make` on an arm64 machine), the
# dot-product files get their -march (they only run after the
# HWCAP_ASIMDDP check in kernels/dispatch.c); plain NEON needs no flag.
# The requantization kernels must not contract a multiply and an add into
# a fused multiply-add (as mk/requant.mk says for the x86 ones).
A64_HOST := $(filter aarch64,\
    $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null))))

ifeq ($(A64_HOST),aarch64)
$(BUILD)/obj/kernels/arm/%-neondot.o: XFLAGS := -march=armv8.2-a+dotprod
# the x86 variants compile to empty units here, without their -m flags
# (which an aarch64 compiler rejects); a target-specific value beats the
# Makefile's patterns
A64_X86_OBJS := $(call obj,$(filter %-avx2.c %-avx512.c %-vnni.c \
    %-avxvnni.c,$(LIB_SRCS) $(CLI_SRCS) $(TEST_SRCS) $(BENCH_SRCS)))
$(A64_X86_OBJS): XFLAGS :=
endif
$(BUILD)/obj/kernels/arm/requant-%.o: CFLAGS += -ffp-contract=off

# ---- make test-aarch64 ---------------------------------------------------
#
# Cross-compiles the integer kernels and their tests for aarch64 and runs
# them under qemu-aarch64 (natively on an aarch64 machine): static test
# binaries from core/, kernels/ (minus kernels/blas.c and its OpenBLAS:
# tests/aarch64/blas-none.c stands in for the core choice), kernels/ref/,
# kernels/arm/, formats/npy.c, formats/json.c with cJSON compiled from the
# source of the installed libcjson-dev's Debian package
# (scripts/cjson-source.sh fetches it once into data/cache/), the kernel
# unit tests of tests/unit/ that need no other third-party library, and
# tests/aarch64/: one built as `make` builds (-O2), one with UBSan (-O1, as
# `make asan`; ASan does not run under qemu-user; cJSON itself is built
# without it, as the host's libcjson is). tests/aarch64/run.sh runs both on
# an emulated CPU with and without the dot product and prints "aarch64: N
# passed, N failed".
ifeq ($(A64_HOST),aarch64)
A64_CC   ?= $(CC)
A64_AR   ?= ar
A64_QEMU ?=
else
A64_CC   ?= aarch64-linux-gnu-gcc
A64_AR   ?= aarch64-linux-gnu-ar
A64_QEMU ?= qemu-aarch64
endif
A64      := $(BUILD)/aarch64
A64_CFLAGS := -std=c11 -g -Wall -Wextra $(WERROR) -MMD -MP -pthread \
              -ffp-contract=off
A64_UBSAN := -fsanitize=undefined -fno-sanitize-recover=undefined
A64_LIB_SRCS := $(filter-out kernels/blas.c,\
    $(wildcard core/*.c kernels/*.c kernels/ref/*.c kernels/arm/*.c)) \
    formats/npy.c formats/json.c
A64_TEST_SRCS := tests/test.c $(wildcard tests/aarch64/*.c) \
    $(addprefix tests/unit/,test-gemm.c test-conv.c test-requant-simd.c \
      test-requant-flavors.c test-requant-golden.c test-requant-derive.c \
      test-requant-act.c test-kernels-golden.c test-kernels-eltwise.c \
      test-requant-extremes.c test-kern-startup.c test-json.c)
# the objects of sources $(2) in variant $(1): obj (as `make`) or obj-ubsan
a64_objs = $(patsubst %.c,$(A64)/$(1)/%.o,$(2))
A64_BINS := $(A64)/qprobe-test-aarch64 $(A64)/qprobe-test-aarch64-ubsan

$(A64)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC64    $<")
	$(Q)$(A64_CC) -I. -D_GNU_SOURCE $(A64_CFLAGS) $(OPT) $(A64_XFLAGS) -c $< -o $@

$(A64)/obj-ubsan/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC64    $< (ubsan)")
	$(Q)$(A64_CC) -I. -D_GNU_SOURCE $(A64_CFLAGS) -O1 $(A64_UBSAN) \
	    $(A64_XFLAGS) -c $< -o $@

$(A64)/obj/kernels/arm/%-neondot.o $(A64)/obj-ubsan/kernels/arm/%-neondot.o: \
    A64_XFLAGS := -march=armv8.2-a+dotprod

# cJSON (A64_CJSON: the folder scripts/cjson-source.sh printed, passed
# down by test-aarch64); formats/json.c finds its header there
A64_CJSON_OBJ := $(A64)/cjson/cJSON.o
$(A64_CJSON_OBJ): $(if $(A64_CJSON),$(A64_CJSON)/cJSON.c)
	@test -n "$(A64_CJSON)" || { echo "test-aarch64: A64_CJSON is not" \
	    "set; run make test-aarch64" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC64    $<")
	$(Q)$(A64_CC) -std=c99 -g -O2 -w -c "$<" -o $@
$(A64)/obj/formats/json.o $(A64)/obj-ubsan/formats/json.o: \
    A64_XFLAGS := -I"$(A64_CJSON)"

$(A64)/%/libqprobe-kernels.a:
	@rm -f $@
	$(Q)$(A64_AR) rcs $@ $^

$(A64)/obj/libqprobe-kernels.a: $(call a64_objs,obj,$(A64_LIB_SRCS)) \
    $(A64_CJSON_OBJ)
$(A64)/obj-ubsan/libqprobe-kernels.a: \
    $(call a64_objs,obj-ubsan,$(A64_LIB_SRCS)) $(A64_CJSON_OBJ)

$(A64)/qprobe-test-aarch64: $(call a64_objs,obj,$(A64_TEST_SRCS)) \
    $(A64)/obj/libqprobe-kernels.a
$(A64)/qprobe-test-aarch64-ubsan: A64_LDFLAGS := $(A64_UBSAN)
$(A64)/qprobe-test-aarch64-ubsan: $(call a64_objs,obj-ubsan,$(A64_TEST_SRCS)) \
    $(A64)/obj-ubsan/libqprobe-kernels.a
$(A64_BINS):
	@$(if $(Q),echo "  LD64    $@")
	$(Q)$(A64_CC) -static -pthread $(A64_LDFLAGS) -o $@ $^ -lm

.PHONY: test-aarch64
test-aarch64:
	@sh tests/aarch64/run.sh --check "$(A64_CC)" "$(A64_QEMU)"
	@cjson=$$(sh scripts/cjson-source.sh) && \
	    $(MAKE) --no-print-directory A64_CJSON="$$cjson" $(A64_BINS)
	@sh tests/aarch64/run.sh "$(A64_QEMU)" $(A64_BINS)

-include $(wildcard $(foreach v,obj obj-ubsan,$(patsubst %.o,%.d,\
    $(call a64_objs,$(v),$(A64_LIB_SRCS) $(A64_TEST_SRCS)))))
