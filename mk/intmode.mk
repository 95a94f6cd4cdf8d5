# mk/intmode.mk: build settings of the int mode's kernels (branch intmode).
#
# The activation quantizer's SIMD rows must round exactly as the reference
# (no multiply-add contraction), and its loops and the integer helpers of
# the quantized runtime vectorize only at -O3 (GCC's -O2 cost model); so
# do the GEMM driver's packing loops (the widened A of the AVX2 kernel).
$(BUILD)/obj/kernels/x86/quantize-act-%.o: CFLAGS += -ffp-contract=off
INTMODE_VEC_OBJS := $(BUILD)/obj/kernels/ref/quantize-act.o \
    $(BUILD)/obj/kernels/conv-s8.o $(BUILD)/obj/kernels/ref/add-s8.o \
    $(BUILD)/obj/kernels/gemm-s8.o
$(INTMODE_VEC_OBJS): XFLAGS := -O3
# the byte lookup tables' AVX-512 variant needs VBMI (checked at run time)
$(BUILD)/obj/kernels/x86/lut-s8-avx512.o: CFLAGS += -mavx512vbmi
