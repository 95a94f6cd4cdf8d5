# mk/perf.mk: the fp32 runtime's SIMD float kernels (kernels/x86/*-f32-*.c).
# Their loops are written for the compiler to vectorize, which GCC only
# does at -O3 (see mk/runtime.mk); -O3 keeps IEEE semantics.
PERF_F32_SIMD_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,\
    $(wildcard kernels/x86/*-f32-*.c))
$(PERF_F32_SIMD_OBJS): XFLAGS += -O3
