# mk/ggml.mk: build settings of ggml's block types (branch ggml).
#
# The quantizers and decoders of core/ggml-block.c, quant/ggml-quant.c and
# quant/ggml-kquant.c reproduce ggml's reference code bit for bit, which
# holds for ggml's plain build only: a multiply-add contracted into an FMA
# (what -march=native allows) rounds once instead of twice and changes
# some blocks (q4_0's x*id + 8.5f, the K types' least-squares sums). So
# these files never contract, whatever CFLAGS say.
GGML_EXACT_OBJS := $(BUILD)/obj/core/ggml-block.o \
    $(BUILD)/obj/quant/ggml-quant.o $(BUILD)/obj/quant/ggml-kquant.o
$(GGML_EXACT_OBJS): CFLAGS += -ffp-contract=off
