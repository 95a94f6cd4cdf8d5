# mk/requant.mk: build settings of the requantization kernels (branch
# requant).
#
# The float flavors (xnnpack-fp32, ort, onnx-ref) and the activation
# quantizers must round exactly as the runtimes do: a multiply followed by
# an add must not be contracted into a fused multiply-add, in the reference
# or in the SIMD variants (which are built with -mfma).
$(BUILD)/obj/kernels/ref/requant.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/ref/requant-%.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/ref/quantize-act.o: CFLAGS += -ffp-contract=off
$(BUILD)/obj/kernels/x86/requant-%.o: CFLAGS += -ffp-contract=off
