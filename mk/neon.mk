# mk/neon.mk: build settings of the aarch64 kernels (kernels/arm/).
#
# kernels/arm/*.c are compiled on every architecture (the Makefile finds
# sources by folder); each file's body is #if defined(__aarch64__). When
# the compiler targets aarch64 (`make` on an arm64 machine), the
# dot-product files get their -march (they only run after the
# HWCAP_ASIMDDP check in kernels/dispatch.c); plain NEON needs no flag. The requantization kernels must not
# contract a multiply and an add into a fused multiply-add (as
# mk/requant.mk says for the x86 ones).
A64_HOST := $(filter aarch64,$(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null))))

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
