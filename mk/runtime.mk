# mk/runtime.mk: the model runtime (model/, kernels/blas.c, the float kernels).
#
# The float kernels and elementwise operators are plain loops written for
# the compiler to vectorize; GCC only does so at -O3 (-O2's cost model
# vectorizes almost nothing). -O3 keeps IEEE semantics (no -ffast-math;
# -std=c11 keeps floating-point contraction off), so results do not change.
RUNTIME_VEC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,\
    $(wildcard kernels/ref/*-f32.c kernels/conv-f32-gemm.c kernels/pool-f32.c) \
    $(wildcard model/op-*.c) \
    $(wildcard model/qexec.c))
$(RUNTIME_VEC_OBJS): XFLAGS := -O3
