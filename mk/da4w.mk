# mk/da4w.mk: the 8da4w kernels (kernels/gemm-qd8.h) must round every
# float step on its own, as XNNPACK's scalar ukernels do: no multiply-add
# contraction in the reference, the driver or the VNNI variant.
$(BUILD)/obj/kernels/ref/gemm-qd8.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/gemm-qd8.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/x86/gemm-qd8-vnni.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/x86/gemm-qd8-avx2.o: CFLAGS += -ffp-contract=off
