# mk/kern.mk: build settings of the kernel files that left kernels/ref/
# (the dispatched entry points; branch kern): the same they had there
# (mk/requant.mk, mk/intmode.mk). The requantization and activation
# quantizer entry points must not contract a multiply and an add; the
# prepared quantized add's loops vectorize only at -O3.
$(BUILD)/obj/kernels/requant.o $(BUILD)/obj/kernels/quantize-act.o: \
    CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/add-s8.o $(BUILD)/obj/kernels/quantize-act.o: XFLAGS := -O3
